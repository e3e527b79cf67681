"""The binary ufuncs' direct eager path (``dispatch.eager_binary``): two Arrays of one type run
their cached executable without ``bind``; everything else (a first call, a transformation, value
checks, bools, Python scalars) keeps the general path. Results against jax.numpy: values,
shapes, dtypes, weak types.
"""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _compare import assert_same, flags_both

import fluxion
import fluxion.numpy as fnp
from fluxion.backend import dispatch
from fluxion.lax import elementwise as ew

NAMES = ["add", "subtract", "multiply", "maximum", "minimum", "equal", "not_equal"]
CASES = [((), np.float32), ((5,), np.float32), ((2, 3), np.int32), ((4,), np.uint8),
         ((3,), np.complex64)]


def _pair(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(shape) * 4).astype(dtype)
    b = (rng.standard_normal(shape) * 4).astype(dtype)
    return a, b


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("shape,dtype", CASES)
def test_direct_matches_jax(name, shape, dtype):
    if dtype == np.complex64 and name in ("maximum", "minimum"):
        pytest.skip("jax orders complex maximum/minimum lexicographically; not this path's concern")
    a, b = _pair(shape, dtype)
    ours, theirs = getattr(fnp, name), getattr(jnp, name)
    x, y = fnp.asarray(a), fnp.asarray(b)
    first = ours(x, y)  # the general path compiles; the second call runs the direct path
    second = ours(x, y)
    want = theirs(jnp.asarray(a), jnp.asarray(b))
    assert_same(first, want)
    assert_same(second, want)
    assert second.shape == want.shape and second.dtype == want.dtype
    assert second.weak_type == want.weak_type


def _python_calls(fn):
    seen = []

    def prof(frame, event, arg):
        if event == "call":
            seen.append(frame.f_code.co_name)
            if frame.f_code.co_filename.endswith("dispatch.py"):
                seen.append("dispatch." + frame.f_code.co_name)
    sys.setprofile(prof)
    try:
        out = fn()
    finally:
        sys.setprofile(None)
    return out, seen


def test_direct_path_only_on_a_hit_with_the_plain_handler():
    x, y = fnp.asarray(np.float32([1, 2])), fnp.asarray(np.float32([3, 4]))
    out, seen = _python_calls(lambda: fnp.add(x, y))  # may be the first call: bind compiles
    assert out.tolist() == [4.0, 6.0]
    out, seen = _python_calls(lambda: fnp.add(x, y))
    assert out.tolist() == [4.0, 6.0]
    assert "dispatch.run" in seen and "_eager" not in seen and "bind" not in seen
    real = dispatch._eager

    def spy(prim, args, params):
        return real(prim, args, params)
    fluxion.core.trace.EVAL.set_handler(spy)
    try:  # another eager handler (value checks install one): the direct path steps aside
        out, seen = _python_calls(lambda: fnp.add(x, y))
    finally:
        fluxion.core.trace.EVAL.set_handler(real)
    assert out.tolist() == [4.0, 6.0]
    assert "bind" in seen and "spy" in seen


def test_weak_scalar_operand_and_broadcast_rank0():
    a = np.arange(4, dtype=np.float32)
    x = fnp.asarray(a)
    for _ in range(2):
        assert_same(fnp.add(x, 1.5), jnp.add(jnp.asarray(a), 1.5))
        assert_same(fnp.multiply(fnp.float32(2), x), jnp.multiply(jnp.float32(2), jnp.asarray(a)))
        assert_same(x - fnp.asarray(np.float32(1)), jnp.asarray(a) - jnp.asarray(np.float32(1)))


def test_bools_keep_their_rules():
    t = np.array([True, False, True])
    f = np.array([True, True, False])
    for _ in range(2):
        assert_same(fnp.add(fnp.asarray(t), fnp.asarray(f)), jnp.add(jnp.asarray(t), jnp.asarray(f)))
        assert_same(fnp.multiply(fnp.asarray(t), fnp.asarray(f)),
                    jnp.multiply(jnp.asarray(t), jnp.asarray(f)))
        with pytest.raises(TypeError, match="subtract"):
            fnp.subtract(fnp.asarray(t), fnp.asarray(f))


def test_concrete_arrays_inside_transformations():
    a, b = _pair((3,), np.float32, seed=1)
    x, y = fnp.asarray(a), fnp.asarray(b)
    fnp.add(x, y)  # compiled and cached eagerly first

    def f(s):
        return fnp.add(x, y) * s  # x + y: concrete Arrays under jit/grad/vmap

    def g(s):
        return jnp.add(jnp.asarray(a), jnp.asarray(b)) * s
    assert_same(fluxion.jit(f)(np.float32(2)), jax.jit(g)(np.float32(2)))
    assert_same(fluxion.grad(lambda s: f(s).sum())(np.float32(2)),
                jax.grad(lambda s: g(s).sum())(np.float32(2)))
    s = np.float32([1, 2])
    assert_same(fluxion.vmap(f)(s), jax.vmap(g)(s))
    assert str(fluxion.make_jaxpr(f)(np.float32(2))).count("add") == 1


def test_debug_nans_still_checks():
    x = fnp.asarray(np.float32([np.inf]))
    y = fnp.asarray(np.float32([-np.inf]))
    fnp.add(x, fnp.asarray(np.float32([1.0])))
    fnp.add(x, y)  # NaN, unchecked: compiled and cached
    with flags_both("jax_debug_nans", True):
        with pytest.raises(FloatingPointError):
            fnp.add(x, y)
        with pytest.raises(FloatingPointError):
            jnp.add(jnp.float32([np.inf]), jnp.float32([-np.inf]))


def test_eager_binary_falls_back_to_bind():
    assert dispatch.eager_binary(ew.add_p).__name__ == "eager_add"
    run = dispatch.eager_binary(ew.sub_p)
    a, b = _pair((2,), np.float32, seed=3)
    got = run(fnp.asarray(a), fnp.asarray(b))  # may miss: bind compiles
    assert_same(got, jnp.subtract(jnp.asarray(a), jnp.asarray(b)))
    assert_same(run(fnp.asarray(a), fnp.asarray(b)), jnp.subtract(jnp.asarray(a), jnp.asarray(b)))

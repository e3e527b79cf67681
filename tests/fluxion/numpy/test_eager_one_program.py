"""Eager jnp functions run as one compiled program (fluxion/backend/fused.py), as JAX's jitted
jnp functions: values, dtypes and weak types against jax, the identity jit(f)(x) == f(x) where
XLA optimises across the primitives of one function (nan * False), one compile per signature,
inlining under tracing, op by op under disable_jit, error messages, LRU eviction of the eager
executables.
"""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _compare import CountCompiles, assert_same, flags_both, x64_both

import fluxion
import fluxion.numpy as fnp
from fluxion.backend import dispatch
from fluxion.core.config import flag_context

THIS_FILE = __file__




def _mask_product(lib, dtype):
    x = lib.asarray(np.array([np.nan, 1.5, -2.0, np.inf], dtype))
    m = lib.asarray(np.array([False, True, True, False]))
    return x, m


@pytest.mark.parametrize("x64", [False, True])
def test_nan_times_false_is_zero_as_jax_and_as_under_jit(x64):
    # jax_md's `out *= mask` (bks_neighbor_list): padding entries hold NaN and are masked off.
    dtype = np.float64 if x64 else np.float32
    with x64_both(x64):
        fx, fm = _mask_product(fnp, dtype)
        jx, jm = _mask_product(jnp, dtype)
        want = jnp.multiply(jx, jm)
        assert_same(fnp.multiply(fx, fm), want)
        assert_same(fx * fm, want)
        assert_same(fm * fx, jm * jx)
        out = fx
        out *= fm
        assert_same(out, want)
        jitted = fluxion.jit(lambda a, b: a * b)(fx, fm)
        np.testing.assert_array_equal(np.asarray(jitted), np.asarray(fx * fm))
        assert np.asarray(fx * fm)[0] == 0.0


def _weak_scalar(lib):
    return lib.asarray(2.0) * 0.5  # a weakly typed float32 array


CASES = [  # (name, fluxion args, jax args) built per library from one description
    ("add", lambda lib: (lib.asarray(np.arange(4, dtype=np.int32)), lib.ones(4, lib.float32))),
    ("multiply", lambda lib: (lib.asarray(np.arange(4, dtype=np.int32)), 2.5)),
    ("add", lambda lib: (lib.asarray(np.arange(4, dtype=np.uint8)), 300)),
    ("subtract", lambda lib: (lib.asarray(np.array([True, False])), 1)),
    ("multiply", lambda lib: (np.ones(3, np.float16), lib.ones(3, lib.float32))),
    ("add", lambda lib: (lib.ones(3, lib.bfloat16), 0.1)),
    ("true_divide", lambda lib: (lib.asarray(np.arange(1, 4, dtype=np.int32)), np.float32(3))),
    ("maximum", lambda lib: (_weak_scalar(lib), lib.asarray(np.arange(3, dtype=np.int8)))),
    ("floor_divide", lambda lib: (lib.asarray(np.array([-7, 7, 5], np.int32)), 2)),
    ("remainder", lambda lib: (lib.asarray(np.array([-7.5, 7.0, 5.0], np.float32)), 2)),
    ("logaddexp", lambda lib: (lib.asarray(np.arange(3, dtype=np.int32)), 1.0)),
    ("hypot", lambda lib: (lib.ones((2, 3), lib.float32), lib.asarray(np.arange(3, dtype=np.int16)))),
    ("less", lambda lib: (lib.asarray(np.arange(3, dtype=np.int32)), 1.5)),
    ("arctan2", lambda lib: (_weak_scalar(lib), lib.asarray(np.arange(3, dtype=np.int32)))),
    ("logical_and", lambda lib: (lib.asarray(np.arange(3, dtype=np.int32)), 1.5)),
    ("sin", lambda lib: (lib.asarray(np.arange(3, dtype=np.int32)),)),
    ("log10", lambda lib: (lib.asarray(np.arange(1, 4, dtype=np.float32)),)),
    ("isnan", lambda lib: (lib.asarray(np.arange(3, dtype=np.int32)),)),
    ("divmod", lambda lib: (lib.asarray(np.array([7.0, -7.0], np.float32)), 2)),
    ("where", lambda lib: (lib.asarray(np.array([True, False, True])),
                           lib.asarray(np.arange(3, dtype=np.int32)), 2.5)),
    ("where", lambda lib: (np.array([1, 0, 2]), lib.asarray(np.array([np.nan, 1, 2], np.float32)),
                           0.0)),
    ("clip", lambda lib: (lib.asarray(np.arange(-2, 3, dtype=np.int32)), 0.5, 1)),
    ("power", lambda lib: (lib.asarray(np.arange(3, dtype=np.int32)), 0.5)),
]


TRANSCENDENTAL = {"sin", "log10", "logaddexp", "hypot", "arctan2"}


@pytest.mark.parametrize("name,make", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_promotions_match_jax_and_jit(name, make):
    ours = getattr(fnp, name)(*make(fnp))
    tol = {"rtol": 2e-6, "atol": 1e-7} if name in TRANSCENDENTAL else {}
    assert_same(ours, getattr(jnp, name)(*make(jnp)), **tol)
    args = make(fnp)
    # Python numbers stay Python numbers under jit too (weakly typed arguments)
    jitted = fluxion.jit(getattr(fnp, name))(*args)
    assert_same(jitted, ours, rtol=0, atol=0)


def test_python_int_overflow_still_raises_as_jax():
    with pytest.raises(OverflowError):
        jnp.add(jnp.ones(2, jnp.int32), 2 ** 40)
    with pytest.raises(OverflowError):
        fnp.add(fnp.ones(2, fnp.int32), 2 ** 40)
    with pytest.raises(OverflowError):
        fnp.add(fnp.ones(2, fnp.int8), 2 ** 40)


def test_one_compile_per_signature():
    x = fnp.asarray(np.arange(35, dtype=np.float32).reshape(7, 5))  # shapes no other test uses
    m = fnp.asarray(np.arange(35).reshape(7, 5) % 3 == 0)
    i = fnp.asarray(np.arange(35, dtype=np.int32).reshape(7, 5) - 17)
    with CountCompiles() as c:
        fnp.multiply(x, m)
    assert c.n == 1  # convert and multiply: one program (was two)
    with CountCompiles() as c:
        fnp.floor_divide(i, 3)
    assert c.n == 1  # div, rem, compares, select: one program (was eight)
    with CountCompiles() as c:
        fnp.where(m, x, 0.0)
    assert c.n == 1  # broadcast, select: one program
    with CountCompiles() as c:
        for _ in range(3):
            x * m, fnp.floor_divide(i, 3), fnp.floor_divide(i, 4), fnp.where(m, x, -1.0)
    assert c.n == 0  # the same signatures: cached (a Python number is an operand)


def test_tracing_inlines_the_body_as_jax():
    x, m = np.ones(3, np.float32), np.ones(3, bool)
    ours = fluxion.make_jaxpr(fnp.multiply)(x, m)
    theirs = jax.make_jaxpr(jnp.multiply)(x, m)
    assert ([e.primitive.name for e in ours.eqns] == [e.primitive.name for e in theirs.eqns]
            == ["convert_element_type", "mul"])


def test_disable_jit_runs_op_by_op_as_jax():
    with flags_both("jax_disable_jit", True):
        fx, fm = _mask_product(fnp, np.float32)
        jx, jm = _mask_product(jnp, np.float32)
        assert_same(fx * fm, jx * jm)


def _line_of(marker):
    src, start = inspect.getsourcelines(test_errors_name_the_function_shapes_and_user_line)
    return start + next(k for k, ln in enumerate(src) if marker in ln)


def test_errors_name_the_function_shapes_and_user_line():
    a, b = fnp.ones(2, fnp.int32), fnp.ones(3, fnp.float32)
    with pytest.raises(TypeError) as info:
        fnp.add(a, b)  # MARK-add
    msg = str(info.value)
    assert "add" in msg and "(2,)" in msg and "(3,)" in msg, msg
    assert f"{THIS_FILE}:{_line_of('MARK-add')}" in msg, msg
    with pytest.raises(TypeError) as info:
        fnp.floor_divide(a, b)  # MARK-floordiv
    msg = str(info.value)
    assert "floor_divide" in msg and "(2,)" in msg and "(3,)" in msg, msg
    assert f"{THIS_FILE}:{_line_of('MARK-floordiv')}" in msg, msg
    with pytest.raises(TypeError, match="boolean subtract"):
        fnp.subtract(fnp.ones(2, bool), np.ones(2, bool))
    with pytest.raises(TypeError, match="multiply requires ndarray or scalar"):
        fnp.multiply(fnp.ones(2), [1.0, 2.0])


@pytest.mark.clears_caches
def test_eager_executables_are_evicted_least_recently_used_first():
    xs = {n: fnp.asarray(np.arange(n, dtype=np.float32)) for n in (23, 29, 31)}
    cache = dispatch._EAGER_BYTES

    def cached_sizes():  # the operand sizes of the cached eager executables, oldest first
        return [where[1][0].shape[0] for where in (cache.get(k) for k in cache._sizes)
                if where[1] and getattr(where[1][0], "shape", None)]

    fnp.cos(xs[23]), fnp.cos(xs[29])  # two new entries: 23 then 29
    a, b = list(cache._sizes.values())[-2:]
    fnp.cos(xs[23])  # a hit: 23 is now the most recently used
    assert cached_sizes()[-2:] == [29, 23]
    with flag_context("fluxion_eager_cache_max_bytes", a + b + max(a, b) - 1):
        fnp.cos(xs[31])  # over the budget: the least recently used go (29, not 23)
        assert cached_sizes() == [23, 31]


def test_constant_operands_under_grad_and_vmap_run_as_one_program_like_jax():
    """Under jvp/grad/vmap a jnp function none of whose operands is traced runs as one program,
    as JAX's jitted jnp functions reach the device through bind's parent trace: ``bool_mask *
    inf`` is 0 there (XLA's select), so jax_md's PME force is finite (was NaN everywhere)."""
    def f(np_, x):
        m2 = np_.array([0.0, 1.0, 2.0])
        return np_.sum((m2 != 0) * (np_.exp(-m2) / m2) * x ** 2)

    x = np.array([1.0, 2.0, 3.0], np.float32)
    got = fluxion.grad(lambda x: f(fnp, x))(x)
    want = jax.grad(lambda x: f(jnp, x))(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    assert got.dtype == want.dtype and got.shape == want.shape and np.isfinite(got).all()
    got_v = fluxion.vmap(lambda x: f(fnp, x))(np.stack([x, 2 * x]))
    want_v = jax.vmap(lambda x: f(jnp, x))(np.stack([x, 2 * x]))
    np.testing.assert_allclose(np.asarray(got_v), np.asarray(want_v), rtol=1e-6)
    assert got_v.dtype == want_v.dtype and got_v.shape == want_v.shape

"""Python scalars passed to a jitted function's generated dispatcher (backend/jit_dispatch.py
``_scalar_arg``): their cached device constants are looked up directly, which must give what
``dispatch.to_array`` gives (the same constant, JAX's values, dtypes and weak types), and a
transfer guard must still refuse the implicit transfer, as JAX does."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _compare import assert_same, platform_tol

import fluxion
import fluxion.numpy as fnp
from fluxion.backend import dispatch, jit_dispatch


def test_scalar_arguments_match_jax_on_repeated_calls() -> None:
    fx, jx = fluxion.jit(lambda x, y: x * y + 1), jax.jit(lambda x, y: x * y + 1)
    vx, vj = fnp.arange(3.0), jnp.arange(3.0)
    for _ in range(3):  # the second use of a value caches it; later calls take the lookup
        for a, b in [(2.5, 3), (True, 2.0), (-0.0, 1.0), (7, 2), (0.5, vx)]:
            want = jx(a, vj if b is vx else b)
            assert_same(fx(a, b), want)
    mul = fluxion.jit(lambda x, y: x * y)
    for _ in range(3):
        assert not np.signbit(np.asarray(mul(0.0, 1.0)))
        assert np.signbit(np.asarray(mul(-0.0, 1.0)))  # -0.0 is not 0.0's constant


def test_scalar_arg_is_to_arrays_constant() -> None:
    for v in (0.25, 3, False, -0.0, 0.0):
        dispatch.to_array(v), dispatch.to_array(v)  # cached on the second use
        got = jit_dispatch._scalar_arg(v)
        assert got is dispatch.to_array(v)
        assert got.dtype == dispatch.to_array(v).dtype and got.weak_type == (type(v) is not bool)
    with fluxion.enable_x64(True):  # another x64 state: another constant
        got = jit_dispatch._scalar_arg(0.25)
        assert got.dtype == np.float64


def test_transfer_guard_still_refuses_scalar_arguments() -> None:
    fx, jx = fluxion.jit(lambda x: x * 2), jax.jit(lambda x: x * 2)
    for _ in range(3):
        fx(1.5), jx(1.5)
    with jax.transfer_guard("disallow"), pytest.raises(Exception, match="Disallowed host-to-device"):
        jx(1.5)
    with fluxion.transfer_guard("disallow"), pytest.raises(RuntimeError,
                                                            match="Disallowed host-to-device"):
        fx(1.5)
    assert fx(1.5).item() == 3.0
    # the one-argument varargs dispatcher (jit(grad(f))) looks its constants up inline
    fg, jg = fluxion.jit(fluxion.grad(lambda x: x * x)), jax.jit(jax.grad(lambda x: x * x))
    for _ in range(3):
        assert_same(fg(1.5), jg(1.5))
        assert_same(fluxion.jit(lambda *a: a[0] + 1)(7), jax.jit(lambda *a: a[0] + 1)(7))
    with fluxion.transfer_guard("disallow"), pytest.raises(RuntimeError,
                                                            match="Disallowed host-to-device"):
        fg(1.5)
    with fluxion.transfer_guard("log"):
        assert_same(fg(1.5), jg(1.5))



def test_donating_a_cached_constant_leaves_later_uses_intact() -> None:
    # optax's schedule_free state holds jnp.zeros([]) and friends: the same cached device
    # constant every time; donating it must not delete it for later uses (JAX: fresh buffers).
    fx = fluxion.jit(lambda x, s: (x + s, s * 2), donate_argnums=(0, 1))
    jx = jax.jit(lambda x, s: (x + s, s * 2), donate_argnums=(0, 1))
    for _ in range(3):
        got = fx(2.5, fnp.zeros([], fnp.float32))
        want = jx(2.5, jnp.zeros([], jnp.float32))
        for g, w in zip(got, want):
            assert_same(g, w)
    assert_same(fnp.zeros([], fnp.float32) + 1, jnp.zeros([], jnp.float32) + 1)
    assert_same(fnp.asarray(2.5) + 1, jnp.asarray(2.5) + 1)


def test_one_argument_varargs_dispatcher_matches_jax() -> None:
    # jit(grad(f)) and jit(lambda *a: ...) with one argument take the varargs dispatcher's
    # straight-line path (single output inlined, multi-output through the entry); repeated
    # calls hit the cache with Python scalars, signed zeros and Arrays, read back as floats
    def tanh(lib):
        def f(x):
            y = lib.numpy.exp(-2.0 * x)
            return (1.0 - y) / (1.0 + y)
        return f

    fg, jg = fluxion.jit(fluxion.grad(tanh(fluxion))), jax.jit(jax.grad(tanh(jax)))
    fm, jm = fluxion.jit(lambda *a: (a[0] * 2, a[0] - 1)), jax.jit(lambda *a: (a[0] * 2, a[0] - 1))
    tol = platform_tol(1e-6)  # a TPU's exp is less precise than the CPU reference's
    for _ in range(3):
        for v in (1.0, 0.25, -0.0, 0.0):
            assert_same(fg(v), jg(v), rtol=1e-6)  # exp (1-2 ulp between the two programs)
            assert float(fg(v)) == pytest.approx(float(jg(v)), rel=tol["rtol"], abs=tol["atol"])
            assert float(fg(v)) == float(np.asarray(fg(v)))
            for o, w in zip(fm(v), jm(v)):
                assert_same(o, w)
        assert_same(fg(fnp.float32(0.5)), jg(jnp.float32(0.5)), rtol=1e-6)
        for o, w in zip(fm(fnp.arange(3)), jm(jnp.arange(3))):
            assert_same(o, w)
        for o, w in zip(fm(3), jm(3)):
            assert_same(o, w)
    assert np.signbit(np.asarray(fm(-0.0)[0])) and not np.signbit(np.asarray(fm(0.0)[0]))
    with pytest.raises(TypeError):
        fg("x")
    r = fg(1.0)
    r.delete()
    with pytest.raises(RuntimeError, match="deleted"):
        float(r)


def test_scalar_hits_follow_the_constant_cache() -> None:
    # dispatch.scalar_hits (type -> value -> constant) is the dispatchers' first lookup: 1, True
    # and 1.0 are equal keys in one dict, so each type has its own; an x64 switch, a transfer
    # guard or an eviction from the constant cache drops its entries
    fg, jg = fluxion.jit(fluxion.grad(lambda x: x * x)), jax.jit(jax.grad(lambda x: x * x))
    fm, jm = fluxion.jit(lambda x: x + 1), jax.jit(lambda x: x + 1)
    for _ in range(3):
        for v in (1, True, 1.0, 2.5):
            assert_same(fm(v), jm(v))
        assert_same(fg(2.5), jg(2.5))
    hits = dispatch.scalar_hits
    assert hits[float][2.5] is dispatch.to_array(2.5) and hits[bool][True].dtype == np.bool_
    assert hits[int][1].dtype == np.int32 and hits[float][1.0].dtype == np.float32
    with fluxion.enable_x64(True), jax.enable_x64(True):
        assert 2.5 not in hits[float]
        for _ in range(3):
            assert_same(fg(2.5), jg(2.5))
            assert_same(fm(1), jm(1))
        assert hits[int][1].dtype == np.int64
    assert 2.5 not in hits[float] and 1 not in hits[int]
    for _ in range(3):
        assert_same(fg(2.5), jg(2.5))
    with fluxion.transfer_guard("log"):
        assert not hits[float]
        for _ in range(3):
            assert_same(fg(2.5), jg(2.5))
        assert not hits[float]  # not filled while a guard is set
    for _ in range(3):
        fm(2.5)
    assert 2.5 in hits[float]
    limit = fluxion.config.fluxion_constant_cache_max_bytes
    try:
        fluxion.config.update("fluxion_constant_cache_max_bytes", 1)  # one entry is kept
        for v in (3.5, 3.5, 4.5, 4.5):
            fm(v)
        assert 2.5 not in hits[float] and 3.5 not in hits[float]
        assert all(dispatch._scalar_cache.get((float, k, False, None, None)) is c
                   for k, c in hits[float].items())
    finally:
        fluxion.config.update("fluxion_constant_cache_max_bytes", limit)
    for _ in range(3):
        assert_same(fm(2.5), jm(2.5))

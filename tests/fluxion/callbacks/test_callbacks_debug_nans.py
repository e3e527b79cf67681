"""``jax_debug_nans`` / ``jax_debug_infs`` (and the ``debug_nans``/``debug_infs`` context
managers) against JAX, and Fluxion's debug mode (``fluxion_debug_mode``/``fluxion.debug_mode()``):
eager op-by-op runs, NaN/Inf errors naming primitive and line, out-of-bounds index errors,
PRNG key-reuse checks, prints in program order, flags restored afterwards."""

from __future__ import annotations

import re

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax

jax = pytest.importorskip("jax")

HERE = __file__


def _log_prog(lib):
    def f(x):
        y = lib.numpy.log(x)  # the line the error names
        return y * 2
    return f


LOG_LINE = "y = lib.numpy.log(x)"


def _line_of(text: str) -> int:
    with open(HERE) as fh:
        return next(i for i, ln in enumerate(fh, 1) if text in ln)


@pytest.mark.parametrize("jit", [False, True])
def test_debug_nans_raises_like_jax_naming_primitive_and_line(jit, capsys):
    for lib in (fluxion, jax):
        f = _log_prog(lib)
        f = lib.jit(f) if jit else f
        with lib.debug_nans(True):
            with pytest.raises(FloatingPointError,
                               match=re.escape("invalid value (nan) encountered in log")) as info:
                f(np.float32(-1.0))
        if lib is fluxion:
            assert f"{HERE}:{_line_of(LOG_LINE)}" in str(info.value)
        # no NaN: no error, same value
        with lib.debug_nans(True):
            assert np.allclose(f(np.float32(2.0)), 2 * np.log(2.0))
    out = capsys.readouterr().out
    if jit:  # both announce the de-optimized re-run
        assert "fluxion.jit function f. Calling the de-optimized version" in out
        assert "jax.jit function. Calling the de-optimized version" in out


def test_off_by_default_and_after_the_block():
    assert not fluxion.config.jax_debug_nans
    assert np.isnan(fluxion.jit(_log_prog(fluxion))(np.float32(-1.0)))
    with fluxion.debug_nans(True):
        pass
    assert np.isnan(_log_prog(fluxion)(np.float32(-1.0)))


def test_config_flag_and_infs():
    f = fluxion.jit(lambda x: x / jnp.float32(0.0) + 1)
    try:
        fluxion.config.update("jax_debug_infs", True)
        with pytest.raises(FloatingPointError, match=r"invalid value \(inf\) encountered in div"):
            f(jnp.float32(1.0))
    finally:
        fluxion.config.update("jax_debug_infs", False)
    assert np.isinf(f(jnp.float32(1.0)))
    with jax.debug_infs(True):
        with pytest.raises(FloatingPointError, match=r"invalid value \(inf\) encountered in div"):
            jax.jit(lambda x: x / jax.numpy.float32(0.0) + 1)(jax.numpy.float32(1.0))


def test_debug_nans_in_grad_and_control_flow():
    def loss(x):
        return jnp.sum(jnp.sqrt(x - 1.0))
    with fluxion.debug_nans(True):
        with pytest.raises(FloatingPointError, match=r"\(nan\) encountered in sqrt"):
            fluxion.grad(loss)(jnp.array([2.0, 0.5]))
        with pytest.raises(FloatingPointError, match="nan"):
            fluxion.jit(lambda xs: lax.scan(lambda c, x: (c + jnp.log(x), c), 0.0, xs))(
                jnp.array([1.0, -1.0]))
    # the integer and clean paths are untouched
    with fluxion.debug_nans(True), fluxion.debug_infs(True):
        assert fluxion.jit(lambda x: x // 2)(jnp.arange(4)).tolist() == [0, 0, 1, 1]


# ------------------------------------------------------------------ debug mode

def test_debug_mode_switches_and_restores_flags():
    assert not fluxion.config.fluxion_debug_mode
    before = (fluxion.config.jax_disable_jit, fluxion.config.jax_debug_key_reuse)
    with fluxion.debug_mode():
        assert fluxion.config.fluxion_debug_mode
        assert fluxion.config.jax_disable_jit and fluxion.config.jax_debug_key_reuse
    assert (fluxion.config.jax_disable_jit, fluxion.config.jax_debug_key_reuse) == before
    fluxion.config.update("fluxion_debug_mode", True)
    try:
        assert fluxion.config.jax_disable_jit
    finally:
        fluxion.config.update("fluxion_debug_mode", False)
    assert not fluxion.config.jax_disable_jit


def test_debug_mode_runs_jit_eagerly_with_same_results():
    def f(x, n):
        return jnp.sum(jnp.sin(x) * n), lax.fori_loop(0, n, lambda i, c: c + x[i], 0.0)
    jf = fluxion.jit(f, static_argnums=1)
    x = jnp.arange(4.0)
    expected = jf(x, 3)
    traced = []
    with fluxion.debug_mode():
        got = jf(x, 3)
        fluxion.jit(lambda v: traced.append(type(v)) or v)(x)
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(expected[0]), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got[1]), np.asarray(expected[1]), rtol=1e-6)
    assert traced == [fluxion.Array]  # the function saw concrete arrays: it ran eagerly


@pytest.mark.parametrize("index", [
    lambda x, i: x[i],
    lambda x, i: x[jnp.stack([i, 0])],
    lambda x, i: lax.dynamic_slice(x, (i,), (2,)),
    lambda x, i: x.at[i].get(mode="clip"),
    lambda x, i: lax.dynamic_update_slice(x, jnp.ones(2), (i,)),
])
def test_debug_mode_out_of_bounds_raises_with_index_and_shape(index):
    x = jnp.arange(5.0)
    f = fluxion.jit(index)
    clamped = f(x, jnp.int32(7))  # XLA clamps
    np.asarray(clamped)
    with fluxion.debug_mode():
        with pytest.raises(IndexError, match=r"index 7 is out of bounds for axis 0 with size 5"
                           r".*shape \(5,\)"):
            f(x, 7)
        assert np.asarray(f(x, 1)).shape == np.asarray(clamped).shape  # in bounds: fine


def test_debug_mode_leaves_library_internals_alone():
    with fluxion.debug_mode():
        assert jnp.roll(jnp.arange(4), 3).tolist() == [1, 2, 3, 0]
        assert jnp.take(jnp.arange(4), jnp.array([5]), mode="clip").tolist() == [3]


def test_debug_mode_nan_check_names_line():
    f = fluxion.jit(_log_prog(fluxion))
    with fluxion.debug_mode():
        with pytest.raises(FloatingPointError, match=re.escape(f"{HERE}:{_line_of(LOG_LINE)}")):
            f(np.float32(-1.0))


def test_debug_mode_key_reuse():
    from fluxion.errors import KeyReuseError
    key = fluxion.random.key(0)
    with fluxion.debug_mode():
        fluxion.random.normal(key)
        with pytest.raises(KeyReuseError):
            fluxion.random.uniform(key)
    fluxion.random.uniform(key)  # off again


def test_debug_mode_prints_in_program_order(capsys):
    def f(x):
        fluxion.debug.print("a {}", x)
        y = lax.cond(x > 0, lambda v: (fluxion.debug.print("b {}", v), v + 1)[1], lambda v: v, x)
        fluxion.debug.print("c {}", y)
        return y
    with fluxion.debug_mode():
        fluxion.jit(f)(jnp.int32(1))
    assert capsys.readouterr().out == "a 1\nb 1\nc 2\n"


def test_debug_nans_in_grad_of_jit_names_the_primitive():
    f = fluxion.jit(lambda x: jnp.sum(jnp.log(x) * x))
    with fluxion.debug_nans(True):
        with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in log"):
            fluxion.grad(f)(jnp.array([1.0, -1.0]))
    with jax.debug_nans(True):
        with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in log"):
            jax.grad(jax.jit(lambda x: jax.numpy.sum(jax.numpy.log(x) * x)))(
                jax.numpy.array([1.0, -1.0]))

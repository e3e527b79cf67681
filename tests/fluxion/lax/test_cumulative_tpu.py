"""The TPU lowering of the cumulative reductions, checked on the CPU.

On the TPU a scan over an axis longer than ``cumulative._TPU_BLOCK`` is lowered in blocks of
that many elements (XLA's TPU compiler is slow on one window spanning a long axis). Here the
module lowered for the TPU is compiled and run on the CPU (it has no TPU custom call), against
NumPy and against the one-window form (jax's lowering, which the CPU keeps); shorter axes must
keep exactly jax's TPU module.
"""

from __future__ import annotations

import itertools
import re

import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np
import pytest
from _lowered_on_cpu import lowered_on_cpu as _on_cpu

import fluxion
import fluxion.numpy as jnp
from fluxion import export as fexport
from fluxion import lax
from fluxion.lax import cumulative as C

KINDS = ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"]
NP = {
    "cumsum": lambda x, ax, dt: np.cumsum(x, ax, dtype=dt),
    "cumprod": lambda x, ax, dt: np.cumprod(x, ax, dtype=dt),
    "cummax": lambda x, ax, dt: np.maximum.accumulate(x, ax),
    "cummin": lambda x, ax, dt: np.minimum.accumulate(x, ax),
    "cumlogsumexp": lambda x, ax, dt: np.logaddexp.accumulate(x.astype(np.float64), ax),
}


def _windows(text: str) -> list[int]:
    """The width (product of the window's dimensions) of every reduce_window in ``text``."""
    return [int(np.prod([int(d) for d in w.split(",")]))
            for w in re.findall(r"window_dimensions = array<i64: ([0-9, ]+)>", text)]


def _reference(name: str, x: np.ndarray, axis: int, reverse: bool) -> np.ndarray:
    xx = np.flip(x, axis) if reverse else x
    want = NP[name](xx, axis, x.dtype if x.dtype.kind in "iu" else None)
    return np.flip(want, axis) if reverse else want


@pytest.fixture
def small_blocks(monkeypatch):
    # blocks of 4 above 4 elements: small arrays take every path (padding, two and three levels)
    monkeypatch.setattr(C, "_TPU_BLOCK", 4)


@pytest.mark.parametrize("name", KINDS)
def test_small_blocks_equal_numpy_every_axis_and_direction(name, small_blocks) -> None:
    rng = np.random.default_rng(0)
    for n, (axis, reverse) in itertools.product([5, 16, 17, 65], [(0, False), (1, True),
                                                                 (2, False), (2, True)]):
        shape = [3, 2, 4]
        shape[axis] = n
        dtypes = [np.float32] if name == "cumlogsumexp" else [np.int32, np.float32]
        for dt in dtypes:
            if name == "cumprod":  # products that stay finite (and wrap in int32 alike)
                x = rng.choice(np.array([-1, 1, 2, 3]), shape).astype(dt)
            elif dt == np.int32:
                x = rng.integers(-50, 50, shape).astype(dt)
            else:
                x = rng.standard_normal(shape).astype(dt)
            (got,), text = _on_cpu(lambda v: getattr(lax, name)(v, axis, reverse), x)
            assert max(_windows(text)) <= (n if n <= 8 else 4), (name, n, axis, reverse)
            if n > 8:
                assert len(_windows(text)) >= 2
            want = _reference(name, x, axis, reverse)
            if dt == np.int32:
                # equal to NumPy: so bit-identical to the one-window form, which equals it too
                np.testing.assert_array_equal(got, want, err_msg=f"{name} {n} {axis} {reverse}")
            else:
                scale = 1.0 if name != "cumprod" else np.abs(want).max()
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale,
                                           err_msg=f"{name} {n} {axis} {reverse}")


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int16, np.uint32, np.float16,
                                ml_dtypes.bfloat16, np.complex64])
def test_small_blocks_every_dtype(dt, small_blocks) -> None:
    # small integer values: float16/bfloat16 sums stay exactly representable, so every dtype's
    # blocked result equals NumPy's exactly; int8/uint8 sums wrap as NumPy's do
    rng = np.random.default_rng(1)
    x = rng.integers(0 if np.dtype(dt).kind == "u" else -3, 4, (2, 37)).astype(dt)
    if np.dtype(dt).kind == "c":
        x = (x + 1j * rng.integers(-3, 4, x.shape)).astype(dt)
    names = ["cumsum", "cumprod"] + ([] if np.dtype(dt).kind == "c" else ["cummax", "cummin"])
    for name, reverse in itertools.product(names, [False, True]):
        xin = x
        if name == "cumprod" and np.dtype(dt).kind in "fc":  # exact products: units
            units = np.array([1, -1, 1j, -1j] if np.dtype(dt).kind == "c" else [1, -1])
            xin = rng.choice(units, x.shape).astype(dt)
        (got,), text = _on_cpu(lambda v: getattr(lax, name)(v, 1, reverse), xin)
        assert max(_windows(text)) <= 4
        ref = xin.astype(np.float64) if dt in (np.float16, ml_dtypes.bfloat16) else xin
        want = _reference(name, ref, 1, reverse).astype(dt)
        assert got.dtype == np.dtype(dt)
        np.testing.assert_array_equal(got, want, err_msg=f"{name} {reverse}")


def test_small_blocks_nan_and_inf(small_blocks) -> None:
    x = np.array([1.0, -np.inf, 3.0, np.nan, 2.0, np.inf, -1.0, 0.5, 4.0, -2.0, 7.0, 1.0, -np.inf,
                  5.0], np.float32)
    for name, reverse in itertools.product(["cummax", "cummin", "cumsum", "cumlogsumexp"],
                                           [False, True]):
        for v in (x, np.where(np.isnan(x), 1.0, x).astype(np.float32)):
            (got,), _ = _on_cpu(lambda a: getattr(lax, name)(a, 0, reverse), v)
            (plain,), _ = _on_cpu(lambda a: getattr(lax, name)(a, 0, reverse), v, platform="cpu")
            if name in ("cummax", "cummin"):
                np.testing.assert_array_equal(got, plain)
            else:
                np.testing.assert_array_equal(np.isnan(got), np.isnan(plain))
                np.testing.assert_array_equal(np.isinf(got) * np.sign(got),
                                              np.isinf(plain) * np.sign(plain))


@pytest.mark.parametrize("n", [1025, 4096, 40_000, 250_000])
def test_long_cumsum_default_blocks(n) -> None:
    # the defaults: int32 bit-identical to NumPy (and to the one-window form), float32 within
    # rounding; no window wider than the block
    rng = np.random.default_rng(n)
    xi = rng.integers(0, 100, n).astype(np.int32)
    xf = rng.random(n).astype(np.float32)
    for reverse in (False, True):
        (got,), text = _on_cpu(lambda v: lax.cumsum(v, 0, reverse), xi)
        assert max(_windows(text)) <= C._TPU_BLOCK
        np.testing.assert_array_equal(got, _reference("cumsum", xi, 0, reverse))
        (gotf,), _ = _on_cpu(lambda v: lax.cumsum(v, 0, reverse), xf)
        want = _reference("cumsum", xf.astype(np.float64), 0, reverse)
        assert np.abs(gotf - want).max() <= 1e-6 * want.max()
    (gmax,), _ = _on_cpu(lambda v: lax.cummax(v, 0), xf)
    np.testing.assert_array_equal(gmax, np.maximum.accumulate(xf))


def test_exported_tpu_module_of_a_long_scan_has_no_wide_window() -> None:
    x = np.ones((250_000,), np.int32)
    for f in (jnp.cumsum, lambda v: lax.cummax(v, reverse=True), lambda v: lax.cumprod(v)):
        tpu = fexport.export(fluxion.jit(f), platforms=["tpu"])(x).mlir_module()
        cpu = fexport.export(fluxion.jit(f), platforms=["cpu"])(x).mlir_module()
        assert max(_windows(tpu)) <= C._TPU_BLOCK
        assert _windows(cpu) == [250_000]  # the CPU keeps jax's form
    # a 2-d operand scanned along its first axis, other axes kept
    x2 = np.ones((3000, 5), np.float32)
    text = fexport.export(fluxion.jit(lambda v: jnp.cumsum(v, axis=0)),
                          platforms=["tpu"])(x2).mlir_module()
    assert max(_windows(text)) <= C._TPU_BLOCK


def _jax_like_windows(text: str) -> list[tuple[str, str]]:
    """(window_dimensions, padding) of each reduce_window, in either library's module text."""
    dims = re.findall(r"window_dimensions = array<i64: ([0-9, ]+)>", text)
    pads = re.findall(r"padding = dense<(\[\[[0-9, \[\]]+\]\])>", text)
    return sorted(zip(dims, pads))


@pytest.mark.parametrize("name", KINDS)
@pytest.mark.parametrize("shape,axis,reverse", [((1000,), 0, False), ((1024,), 0, True),
                                                ((4, 700), 1, False), ((300, 3), 0, True)])
def test_short_axes_keep_jax_tpu_module(name, shape, axis, reverse) -> None:
    x = np.ones(shape, np.float32)
    ours = fexport.export(fluxion.jit(lambda v: getattr(lax, name)(v, axis, reverse)),
                          platforms=["tpu"])(x).mlir_module()
    theirs = jax.export.export(jax.jit(lambda v: getattr(jax.lax, name)(v, axis, reverse)),
                               platforms=["tpu"])(x).mlir_module()
    assert _jax_like_windows(ours) == _jax_like_windows(theirs) != []
    for op in ("pad", "slice", "reshape"):
        assert f'"stablehlo.{op}"' not in ours


def test_grad_and_vmap_of_a_long_scan_on_the_tpu_rule() -> None:
    # autodiff and batching are rules on the primitive: the TPU module of a gradient (a reverse
    # cumsum) and of a vmapped scan are blocked too, with the CPU's values
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 3000)).astype(np.float32)
    w = rng.standard_normal(3000).astype(np.float32)

    def loss(v):
        return jnp.sum(jnp.cumsum(v) * w)

    g = fluxion.vmap(fluxion.grad(loss))
    (got,), text = _on_cpu(g, x)
    assert max(_windows(text)) <= C._TPU_BLOCK
    want = np.asarray(jax.vmap(jax.grad(lambda v: jjnp.sum(jjnp.cumsum(v) * w)))(x))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    (got,), _ = _on_cpu(fluxion.vmap(lambda v: lax.cummax(v, 0)), x)
    np.testing.assert_array_equal(got, np.maximum.accumulate(x, axis=1))


def test_every_cumulative_primitive_has_the_tpu_rule() -> None:
    for name in KINDS:
        p = getattr(C, f"{name}_p")
        assert "tpu" in p.platform_lowerings and p.lowering is not None


@pytest.mark.tpu
def test_long_scans_on_the_chip() -> None:
    # with Fluxion on a TPU (tests --platform tpu): the program compiled for the chip is the
    # blocked one, with NumPy's values
    if fluxion.default_backend() != "tpu":
        pytest.skip("needs Fluxion on a TPU (--platform tpu); the CPU keeps jax's one window")
    rng = np.random.default_rng(3)
    xi = rng.integers(0, 100, 250_000).astype(np.int32)
    xf = rng.random(250_000).astype(np.float32)
    f = fluxion.jit(lambda v: lax.cumsum(v, 0))
    assert max(_windows(f.lower(xi).as_text())) <= C._TPU_BLOCK
    np.testing.assert_array_equal(np.asarray(f(xi)), np.cumsum(xi))
    want = np.cumsum(xf.astype(np.float64))
    assert np.abs(np.asarray(f(xf)) - want).max() <= 1e-5 * want[-1]
    got = np.asarray(fluxion.jit(lambda v: lax.cummax(v, 0, True))(xf))
    np.testing.assert_array_equal(got, np.maximum.accumulate(xf[::-1])[::-1])

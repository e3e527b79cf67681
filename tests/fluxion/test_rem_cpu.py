"""``lax.rem``'s CPU lowering (fluxion/lax/_rem_cpu.py): the vectorised path for ``|x| < 2|y|``
behind a ``stablehlo.case`` gives ``fmod``'s bits, and every other operand takes ``fmod``."""

import numpy as np
import pytest

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion.lax import _rem_cpu


def _bits(a):
    a = np.asarray(a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _plain(x, y):
    """The result of the plain ``stablehlo.remainder`` (XLA:CPU's ``fmod`` call)."""
    from fluxion.lax import elementwise
    lowerings = elementwise.rem_p.platform_lowerings
    saved = lowerings.pop("cpu")
    try:
        return np.asarray(fluxion.jit(lambda a, b: lax.rem(a, b))(x, y))
    finally:
        lowerings["cpu"] = saved


def _same(got, want):
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(_bits(got)[~nan], _bits(want)[~nan])


def _check(x, y, numpy=True):
    got = np.asarray(fluxion.jit(lax.rem)(x, y))
    _same(got, _plain(x, y))
    if numpy:
        with np.errstate(invalid="ignore"):
            want = np.fmod(np.asarray(x), np.asarray(y, dtype=np.asarray(x).dtype))
        _same(got, np.broadcast_to(want, got.shape))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fast_range_bitwise(dtype):
    if dtype == np.float64 and not fluxion.config.jax_enable_x64:
        pytest.skip("float64 needs x64")
    rng = np.random.default_rng(0)
    side = dtype(16.8)
    x = (rng.uniform(-2, 2, 50_000) * side).astype(dtype)
    # the edges: 0, -0, +-side, just inside and outside +-side, +-2 side (exactly: fallback)
    edge = np.array([0.0, -0.0, side, -side, np.nextafter(side, 0), np.nextafter(side, 40),
                     -np.nextafter(side, 0), 2 * side, -2 * side, np.nextafter(2 * side, 0)],
                    dtype)
    _check(np.concatenate([x, edge]), side)
    _check(np.concatenate([x, edge]), -side)


def test_fallback_operands_bitwise():
    rng = np.random.default_rng(1)
    x = rng.uniform(-20, 20, 8192).astype(np.float32)
    for extra in ([1e30], [np.inf], [np.nan], [-1e-40]):
        _check(np.concatenate([x, np.array(extra, np.float32)]), np.float32(3.0))
    # per-element divisors: a zero, an infinity, a NaN, a subnormal (which XLA:CPU flushes to
    # zero, fmod's NaN, where NumPy divides by it: compared with the plain op only)
    y = rng.uniform(0.5, 30, x.shape).astype(np.float32)
    for bad in (0.0, np.inf, np.nan, 1e-44):
        yy = y.copy()
        yy[17] = bad
        _check(x, yy, numpy=bad != 1e-44)
    _check(x, y)


def test_lowering_uses_case_only_in_its_size_window():
    small = np.ones(16, np.float32)
    mid = np.ones(4096, np.float32)
    big = np.ones((_rem_cpu.MAX_BYTES // 4) + 1, np.float32)
    f = fluxion.jit(lambda a: jnp.mod(a, 5.0))
    assert "stablehlo.case" not in f.lower(small).as_text()
    assert "stablehlo.case" in f.lower(mid).as_text()
    assert "stablehlo.case" not in f.lower(big).as_text()
    ints = fluxion.jit(lambda a: lax.rem(a, np.int32(5))).lower(np.ones(4096, np.int32)).as_text()
    assert "stablehlo.case" not in ints


def test_inside_scan_vmap_and_grad():
    x = jnp.linspace(-40.0, 40.0, 4096, dtype=jnp.float32)

    def body(c, _):
        return jnp.mod(c + 7.0, 16.8), None

    out, _ = fluxion.jit(lambda a: lax.scan(body, a, None, length=5))(x)
    ref = np.asarray(x)
    for _ in range(5):
        ref = np.mod(ref + np.float32(7.0), np.float32(16.8))
    assert np.array_equal(np.asarray(out), ref)
    v = fluxion.jit(fluxion.vmap(lambda a: jnp.mod(a, 3.0)))(x.reshape(64, 64))
    assert np.array_equal(np.asarray(v), np.mod(np.asarray(x), np.float32(3.0)).reshape(64, 64))
    g = fluxion.jit(fluxion.grad(lambda a: jnp.sum(jnp.mod(a, 3.0) ** 2)))(x)
    assert np.allclose(np.asarray(g), 2 * np.mod(np.asarray(x), np.float32(3.0)), atol=1e-5)

"""fluxion.lax.special: the values of ``igamma``/``igammac`` (against SciPy), and the derivatives of the
incomplete gamma function in its shape parameter: ``lax.igamma_grad_a``,
``lax.random_gamma_grad`` (against JAX 0.10.2), the ``a``-derivative of ``igamma``/``igammac``
(against JAX and finite differences), and the rules of the two new primitives.

The staged series / continued-fraction loops take a while to compile, so each test jits its
functions once and reuses them.
"""

from __future__ import annotations

import os

import jax
import ml_dtypes
import numpy as np
import pytest
from _compare import assert_same

import fluxion
import fluxion.lax as flax
from fluxion import lax

# a run with Fluxion on a TPU (tests/conftest.py --platform): float32 transcendental functions
# there agree with a float64 reference to 4-5 digits, as in JAX's suite
_CPU = os.environ.get("FLUXION_TEST_PLATFORM", "cpu") == "cpu"

NAMES = ("igamma_grad_a", "random_gamma_grad")


def _grid(dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """a in [0.01, 50] x x in [1e-3, 100] (log-spaced), plus domain edges and special values."""
    a = np.geomspace(0.01, 50.0, 17)
    x = np.geomspace(1e-3, 100.0, 17)
    aa, xx = (v.ravel() for v in np.meshgrid(a, x))
    edge_a = [0, 0, -1, 1, np.nan, 1, 0, np.inf, 2, 1e-30, 1, 1e3, 0.5, 3.0]
    edge_x = [0, 1, 1, -1, 1, np.nan, np.inf, 1, -np.inf, 1, 0, 1e-3, 800, 3.0]
    return (np.concatenate([aa, edge_a]).astype(dtype),
            np.concatenate([xx, edge_x]).astype(dtype))


def _check_values(dtype: np.dtype) -> None:
    a, x = _grid(dtype)
    tol = dict(rtol=1e-12, atol=1e-300) if dtype == np.float64 else dict(rtol=1e-5, atol=1e-30)
    for name in NAMES:
        ours = fluxion.jit(getattr(lax, name))(a, x)
        theirs = jax.jit(getattr(jax.lax, name))(a, x)
        assert ours.shape == a.shape and ours.dtype == dtype
        assert_same(ours, theirs, **tol, err_msg=name)


def test_values_match_jax_f32():
    _check_values(np.dtype(np.float32))


def test_values_match_jax_f64(x64):
    _check_values(np.dtype(np.float64))


def test_half_precision_weak_types_and_errors():
    # half precision is computed in float32 and rounded, as JAX does
    a = np.array([0.05, 0.5, 1.0, 3.0, 20.0, 2.0], np.float32)
    x = np.array([0.01, 2.0, 1.0, 0.5, 25.0, 0.0], np.float32)
    for name, dt in zip(NAMES, (np.float16, ml_dtypes.bfloat16)):
        ours = getattr(lax, name)(a.astype(dt), x.astype(dt))
        theirs = getattr(jax.lax, name)(a.astype(dt), x.astype(dt))
        assert_same(ours, theirs, rtol=1e-2, atol=1e-3, err_msg=f"{name} {np.dtype(dt)}")
    # Python scalars give a weak float32, like JAX
    assert_same(lax.igamma_grad_a(1.0, 2.0), jax.lax.igamma_grad_a(1.0, 2.0), rtol=1e-6)
    # rank 0 and size-1 dimensions broadcast (the values: test_vmap_is_elementwise)
    r = fluxion.eval_shape(lax.random_gamma_grad, np.full((2, 1), 1.5, np.float32),
                           np.ones((1, 3), np.float32))
    assert r.shape == (2, 3) and r.dtype == np.float32 and not r.weak_type
    with pytest.raises(TypeError, match="igamma_grad_a"):
        lax.igamma_grad_a(np.int32(1), np.int32(2))
    with pytest.raises(TypeError, match="random_gamma_grad"):
        lax.random_gamma_grad(np.float32(1), np.float16(2))
    with pytest.raises(TypeError, match="igamma_grad_a"):
        lax.igamma_grad_a(np.ones(2, np.float32), np.ones(3, np.float32))


def test_igamma_grads_match_jax():
    a = np.array([0.05, 0.3, 1.0, 2.5, 10.0, 40.0], np.float32)
    x = np.array([0.2, 2.0, 1.0, 0.5, 12.0, 35.0], np.float32)

    def both(lx: object, g: object, v: object) -> object:
        return (v(g(lx.igamma, (0, 1)))(a, x), v(g(lx.igammac, (0, 1)))(a, x))

    ours = fluxion.jit(lambda: both(lax, fluxion.grad, fluxion.vmap))()
    theirs = jax.jit(lambda: both(jax.lax, jax.grad, jax.vmap))()
    assert_same(ours, theirs, rtol=1e-5, atol=1e-7)


def test_jvps_vs_finite_differences(x64):
    a = np.array([0.05, 0.3, 1.0, 2.5, 7.0, 10.0, 40.0])
    x = np.array([0.2, 2.0, 1.0, 0.5, 9.0, 12.0, 35.0])
    one, zero = np.ones_like(a), np.zeros_like(a)
    h = 1e-6

    @fluxion.jit
    def run(a: object, x: object) -> tuple:
        p = lax.igamma(lax.add(a, h), x), lax.igamma(lax.sub(a, h), x)
        g = lax.igamma_grad_a(lax.add(a, h), x), lax.igamma_grad_a(lax.sub(a, h), x)
        gx = lax.igamma_grad_a(a, lax.add(x, h)), lax.igamma_grad_a(a, lax.sub(x, h))
        jv = [fluxion.jvp(f, (a, x), (one, zero))[1] for f in (lax.igamma, lax.igammac)]
        ga, gdx = (fluxion.jvp(lax.igamma_grad_a, (a, x), t)[1] for t in ((one, zero),
                                                                           (zero, one)))
        return p, g, gx, jv, ga, gdx, lax.random_gamma_grad(a, x)

    p, g, gx, (jp, jq), ga, gdx, rg = run(a, x)
    assert jp.dtype == np.float64
    fd = (np.asarray(p[0]) - np.asarray(p[1])) / (2 * h)
    np.testing.assert_allclose(np.asarray(jp), fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(np.asarray(jq), -fd, rtol=1e-6, atol=1e-9)
    # random_gamma_grad is the implicit derivative -(dP/da) / (dP/dx) of a gamma sample
    density = np.exp((a - 1) * np.log(x) - x - np.asarray(lax.lgamma(a)))
    np.testing.assert_allclose(np.asarray(rg), -fd / density, rtol=1e-6, atol=1e-9)
    # second derivatives: in a through the staged loops (forward mode), in x closed form
    np.testing.assert_allclose(np.asarray(ga), (np.asarray(g[0]) - np.asarray(g[1])) / (2 * h),
                               rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(np.asarray(gdx), (np.asarray(gx[0]) - np.asarray(gx[1])) / (2 * h),
                               rtol=1e-5, atol=1e-8)


def test_random_gamma_grad_jvp_matches_jax():
    # JAX differentiates its loops in forward mode; the x-derivative here is closed form
    a = np.array([0.3, 1.0, 2.5, 10.0], np.float32)
    x = np.array([0.5, 2.0, 1.0, 12.0], np.float32)
    ta = np.array([1.0, -0.5, 2.0, 1.0], np.float32)
    tx = np.array([0.5, 1.0, -1.0, 2.0], np.float32)

    @fluxion.jit
    def ours(a: object, x: object) -> tuple:
        fwd = fluxion.jvp(lax.random_gamma_grad, (a, x), (ta, tx))
        # reverse mode works in x (closed form), and agrees with forward mode
        rev_x = fluxion.vmap(fluxion.grad(lax.random_gamma_grad, 1))(a, x)
        fwd_x = fluxion.jvp(lax.random_gamma_grad, (a, x), (0 * ta, 0 * ta + 1))
        return fwd, rev_x, fwd_x[1]

    fwd, rev_x, fwd_x = ours(a, x)
    theirs = jax.jit(lambda a, x: jax.jvp(jax.lax.random_gamma_grad, (a, x), (ta, tx)))(a, x)
    assert_same(fwd, theirs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(rev_x), np.asarray(fwd_x), rtol=1e-6)
    # a second reverse-mode derivative in a is not available (the loops), as in JAX
    with pytest.raises(ValueError, match="while_loop"):
        fluxion.jit(fluxion.grad(lambda a: lax.igamma_grad_a(a, 1.0)))(np.float32(2.5))


def test_vmap_is_elementwise():
    a = np.array([[0.3, 1.0, 2.5], [4.0, 0.7, 9.0]], np.float32)
    x = np.array([[0.5, 2.0, 1.0], [3.0, 0.1, 20.0]], np.float32)
    for name in NAMES:
        f = getattr(lax, name)
        full = f(a, x)
        assert_same(fluxion.vmap(f)(a, x), full)
        assert_same(fluxion.vmap(f, (1, 1), 1)(a, x), full)
    # an unmapped operand broadcasts through a size-1 dimension
    a0 = np.stack([a[0], a[0]])
    assert_same(fluxion.vmap(lax.igamma_grad_a, (None, 0))(a[0], x), lax.igamma_grad_a(a0, x))


def test_igamma_igammac():
    # against SciPy (JAX's own igamma compiles slowly); the edge cases are JAX's results
    from scipy import special
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.uniform(0.05, 20, 20), [0, 0, -1, 1, np.nan, 1, 0, np.inf, 2, 1e-30]])
    x = np.concatenate([rng.uniform(0, 30, 20), [0, 1, 1, -1, 1, np.nan, np.inf, 1, -np.inf, 1]])
    a, x = a.astype(np.float32), x.astype(np.float32)
    nan = np.nan
    p_edge = [nan, 1, nan, nan, nan, nan, 1, nan, nan, 1]
    q_edge = [nan, 0, nan, nan, nan, nan, 0, nan, nan, 2.1938397e-31]
    for f, ref, edge in ((flax.igamma, special.gammainc, p_edge),
                         (flax.igammac, special.gammaincc, q_edge)):
        ours = f(a, x)
        assert ours.dtype == np.float32 and ours.shape == a.shape
        np.testing.assert_allclose(np.asarray(ours)[:20], ref(a[:20].astype(np.float64),
                                                               x[:20].astype(np.float64)),
                                   rtol=2e-5 if _CPU else 2e-3, atol=1e-6 if _CPU else 1e-4)
        np.testing.assert_allclose(np.asarray(ours)[20:], np.float32(edge), rtol=1e-5, atol=1e-7)
    assert_same(fluxion.jit(flax.igamma)(a, x), flax.igamma(a, x))

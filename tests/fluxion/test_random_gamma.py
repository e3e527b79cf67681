"""Gradients of the gamma family of samplers with respect to their concentrations (implicit
reparameterisation through ``lax.random_gamma_grad``), against ``jax.grad`` of ``jax.random``,
under ``jit`` and ``vmap``; the samples themselves stay bit-identical to JAX's.

Every gamma sampler is a rejection loop that takes seconds to compile on both sides, so each
test compiles one program per side and checks everything it needs from that program.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from _compare import assert_same

import fluxion
from fluxion import random as fr

f32 = np.float32
A = np.array([0.3, 1.0, 2.5, 10.0], f32)  # below 1 takes the boosted branch


def _sample_and_grad(sampler: object, key: object, grad: object) -> object:
    """(samples, d sum(samples) / d a) as one program: the sum's value_and_grad with the
    samples as aux."""
    def f(a: object) -> tuple:
        s = sampler(key, a)
        return s.sum(), s
    return lambda a: grad(f, has_aux=True)(a)


def test_gamma_grad_matches_jax():
    ours_eager = fluxion.grad(lambda a: fr.gamma(fr.key(0), a).sum())(A)
    ours = fluxion.jit(_sample_and_grad(fr.gamma, fr.key(0), fluxion.value_and_grad))(A)
    (_, s), g = ours
    jfun = _sample_and_grad(jax.random.gamma, jax.random.key(0), jax.value_and_grad)
    (_, js), jg = jax.jit(jfun)(A)
    assert_same(s, js)  # the samples stay bit-identical
    assert_same(g, jg, rtol=1e-6, atol=1e-7)
    assert_same(ours_eager, jg, rtol=1e-6, atol=1e-7)
    assert g.shape == A.shape and g.dtype == np.float32


def test_gamma_grad_x64(x64):
    a = np.array([0.05, 0.7, 3.0], np.float64)
    (_, s), g = fluxion.jit(_sample_and_grad(fr.gamma, fr.key(1), fluxion.value_and_grad))(a)
    jfun = _sample_and_grad(jax.random.gamma, jax.random.key(1), jax.value_and_grad)
    (_, js), jg = jax.jit(jfun)(a)
    assert g.dtype == np.float64
    assert_same(s, js)
    assert_same(g, jg, rtol=1e-12, atol=1e-14)


def test_loggamma_grad_and_jvp_match_jax():
    # tiny concentrations are why loggamma exists: exp(sample) underflows for a = 0.01
    a = np.array([0.01, 0.3, 2.5], f32)
    t = np.array([1.0, -2.0, 0.5], f32)

    def f(rnd: object, key: object, vg: object, jvp: object) -> object:
        # a broadcasting scalar concentration too: its gradient sums over its samples
        def total(a: object, b: object) -> object:
            return rnd.loggamma(key, a).sum() + rnd.loggamma(key, b, (2,)).sum()
        return vg(total, (0, 1))(a, 0.5), jvp(lambda a: rnd.loggamma(key, a), (a,), (t,))

    ours = fluxion.jit(lambda: f(fr, fr.key(2), fluxion.value_and_grad, fluxion.jvp))()
    theirs = jax.jit(lambda: f(jax.random, jax.random.key(2), jax.value_and_grad, jax.jvp))()
    assert_same(ours, theirs, rtol=2e-6, atol=1e-6)
    (_, (ga, _)), (_, tan) = ours
    np.testing.assert_allclose(np.asarray(tan), t * np.asarray(ga), rtol=1e-6)


def test_beta_and_dirichlet_grads_match_jax():
    a = np.array([0.5, 2.0, 4.0], f32)
    b = np.array([1.5, 0.2, 3.0], f32)
    w = np.array([1.0, -2.0, 0.5], f32)

    def f(rnd: object, key: object, grad: object) -> object:
        k1, k2 = rnd.split(key)
        gb = grad(lambda a, b: (rnd.beta(k1, a, b) * w).sum(), (0, 1))(a, b)
        gd = grad(lambda a: (rnd.dirichlet(k2, a, (2,)) * w).sum())(a)
        return gb, gd

    ours = fluxion.jit(lambda: f(fr, fr.key(3), fluxion.grad))()
    theirs = jax.jit(lambda: f(jax.random, jax.random.key(3), jax.grad))()
    assert_same(ours, theirs, rtol=1e-5, atol=1e-6)


def test_gamma_under_vmap_matches_jax():
    # keys and concentrations are jit arguments: XLA constant-folds JAX's program otherwise,
    # which moves a few samples by an ulp
    keys, jkeys = fr.split(fr.key(4), 3), jax.random.split(jax.random.key(4), 3)
    a2 = np.stack([A, A * 2, A[::-1]])

    def f(rnd: object, keys: object, a2: object, vmap: object, grad: object) -> object:
        over_keys = vmap(lambda k: rnd.gamma(k, a2[0]))(keys)
        over_a = vmap(lambda a: rnd.gamma(keys[0], a))(a2)
        g = vmap(grad(lambda k, a: rnd.gamma(k, a).sum(), 1))(keys, a2)
        g_outer = grad(lambda a: vmap(lambda k: rnd.gamma(k, a))(keys).sum())(a2[0])
        return over_keys, over_a, g, g_outer

    ours = fluxion.jit(lambda k, a: f(fr, k, a, fluxion.vmap, fluxion.grad))(keys, a2)
    theirs = jax.jit(lambda k, a: f(jax.random, k, a, jax.vmap, jax.grad))(jkeys, a2)
    assert_same(ours[:2], theirs[:2])  # samples bit-identical
    assert_same(ours[2:], theirs[2:], rtol=1e-6, atol=1e-7)


@pytest.mark.slow
def test_samplers_built_on_gamma_differentiate():
    def f(rnd: object, key: object, grad: object) -> object:
        ks = rnd.split(key, 3)
        return (grad(lambda df: rnd.chisquare(ks[0], df, (3,)).sum())(4.0),
                grad(lambda df: rnd.t(ks[1], df, (3,)).sum())(3.0),
                grad(lambda d, n: rnd.f(ks[2], d, n, (2,)).sum(), (0, 1))(3.0, 5.0))

    ours = fluxion.jit(lambda: f(fr, fr.key(5), fluxion.grad))()
    theirs = jax.jit(lambda: f(jax.random, jax.random.key(5), jax.grad))()
    assert_same(ours, theirs, rtol=1e-5, atol=1e-6)

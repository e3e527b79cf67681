"""custom_jvp / custom_vjp calls that leave defaulted arguments out, against real JAX: the
defaults are filled in before ``nondiff_argnums`` split the arguments (JAX's resolve_kwargs), so
a rule sees them and the other arguments stay differentiable (flax's fp8
``dot_general_with_precision`` has nondiff_argnums=(2, 3, 4) and is called with three)."""

from __future__ import annotations

import functools

import jax
import numpy as np

import fluxion


def _define(lib):
    seen = []

    @functools.partial(lib.custom_jvp, nondiff_argnums=(2, 3, 4))
    def scaled(a, b, c, d=None, e=2.0):
        return a * b * e

    @scaled.defjvp
    def scaled_jvp(c, d, e, primals, tangents):
        seen.append((c, d, e))
        a, b = primals
        ad, bd = tangents
        return a * b * e, (ad * b + a * bd) * e

    @lib.custom_vjp
    def weighted(x, w=3.0):
        return x * w

    weighted.defvjp(lambda x, w=3.0: (x * w, (x, w)), lambda r, g: (g * r[1], g * r[0]))
    return scaled, weighted, seen


def _check(ours, theirs):
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)
    assert np.asarray(ours).dtype == np.asarray(theirs).dtype
    assert ours.weak_type == theirs.weak_type


def test_defaulted_nondiff_arguments_reach_the_jvp_rule():
    fs, _, fseen = _define(fluxion)
    js, _, jseen = _define(jax)
    for lib, f in ((fluxion, fs), (jax, js)):
        g = lib.grad(lambda b, f=f: f(2.0, b, 1), argnums=0)(np.float32(3))
        g2 = lib.grad(lambda a, f=f: f(a, np.float32(3), 1, None, 4.0))(np.float32(2))
        if lib is fluxion:
            ours = (g, g2)
        else:
            theirs = (g, g2)
    for o, t in zip(ours, theirs):
        _check(o, t)
    assert fseen == jseen == [(1, None, 2.0), (1, None, 4.0)]


def test_defaulted_differentiable_argument_of_a_custom_vjp():
    _, fw, _ = _define(fluxion)
    _, jw, _ = _define(jax)
    _check(fluxion.grad(fw)(np.float32(2)), jax.grad(jw)(np.float32(2)))
    _check(fluxion.jit(fw)(np.float32(2)), jax.jit(jw)(np.float32(2)))

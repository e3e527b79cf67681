"""The derivatives of ``lax.max``/``lax.min`` against real JAX: 1 where an operand alone is the
result, 1/2 at a tie, 0 elsewhere and where the result is NaN; finite at infinite ties (the
rule multiplied the result by 0 before: NaN there). Written as JAX's rule, so ``grad`` of a ReLU
stages the same equations and XLA compiles the same fusions (issue 28's train_step HLO)."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from _compare import assert_same

import fluxion
import fluxion.numpy as jnp
from benchmarks.issue28_analysis import canonical_hlo

_X = np.array([1.0, 0.0, -1.0, np.inf, -np.inf, np.nan, 2.0, np.inf], np.float32)
_Y = np.array([1.0, 1.0, 0.0, np.inf, -np.inf, 1.0, np.nan, 3.0], np.float32)


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_extremum_gradients_at_ties_infinities_and_nans_like_jax(name):
    def grads(mod, xnp):
        f = getattr(xnp, name)
        return mod.vmap(mod.grad(lambda a, b: f(a, b), argnums=(0, 1)))

    assert_same(grads(fluxion, jnp)(_X, _Y), grads(jax, jjnp)(_X, _Y))
    assert_same(fluxion.jit(grads(fluxion, jnp))(_X, _Y), jax.jit(grads(jax, jjnp))(_X, _Y))
    lo = fluxion.jvp(lambda a: getattr(jnp, name)(a, 1.0), (_X,), (np.ones(8, np.float32),))
    lj = jax.jvp(lambda a: getattr(jjnp, name)(a, 1.0), (_X,), (np.ones(8, np.float32),))
    assert_same(lo, lj)


def _relu_loss(xnp):
    return lambda w, x: xnp.sum(xnp.maximum(x * w - 0.5, 0.0))


def test_relu_gradient_program_like_jax():
    w = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3)
    x = np.float32(1.5)
    ours = fluxion.make_jaxpr(fluxion.grad(_relu_loss(jnp)))(w, x)
    theirs = jax.make_jaxpr(jax.grad(_relu_loss(jjnp)))(w, x)
    assert ([e.primitive.name for e in ours.eqns]
            == [e.primitive.name for e in theirs.eqns])
    ho = fluxion.jit(fluxion.grad(_relu_loss(jnp))).lower(w, x).compile().as_text()
    ht = jax.jit(jax.grad(_relu_loss(jjnp))).lower(w, x).compile().as_text()
    assert canonical_hlo(ho)["fusions"] == canonical_hlo(ht)["fusions"]

"""The derivative of ``lax.integer_pow`` against real JAX: values (infinities, NaNs, a NaN
tangent) for exponents 0, 1, 2, 3 and -2, and for ``x ** 2`` the same equations as JAX's rule
(``g * (2 * x)``, no ``integer_pow[y=1]``), so grad of a square stages JAX's program."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from _compare import assert_same

import fluxion

_X = np.array([1.0, -2.0, np.inf, np.nan, 0.0], np.float32)
_T = np.array([1.0, np.nan, 1.0, 1.0, 2.0], np.float32)


@pytest.mark.parametrize("y", [0, 1, 2, 3, -2])
def test_integer_pow_derivatives_like_jax(y):
    def d(mod):
        return mod.vmap(mod.grad(lambda a: mod.lax.integer_pow(a, y)))

    assert_same(d(fluxion)(_X), d(jax)(_X))
    assert_same(fluxion.jvp(lambda a: fluxion.lax.integer_pow(a, y), (_X,), (_T,)),
                jax.jvp(lambda a: jax.lax.integer_pow(a, y), (_X,), (_T,)))


def test_square_gradient_equations_like_jax():
    def names(mod):
        prog = mod.make_jaxpr(mod.grad(lambda w: mod.numpy.sum(w ** 2)))(_X)
        return [e.primitive.name for e in prog.eqns]

    assert names(fluxion) == names(jax) == [
        "integer_pow", "mul", "reduce_sum", "broadcast_in_dim", "mul"]

"""jnp.einsum gives lax.dot_general JAX's operand order: (rhs, lhs) of opt_einsum's pair when
that needs no transpose, else (lhs, rhs) and a transpose. The order decides the dot's layout, so
under vmap the results' layouts (and XLA's summation order after them) are JAX's: jax_md's
``transform(box, R)`` under vmap is a [3, N] dot as in JAX, and its stress is bit-equal."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from _compare import platform_tol

import fluxion


def _dots(closed):
    text = str(closed)
    return [line.split("=")[0].split(":")[-1].strip() for line in text.splitlines()
            if "= dot_general" in line]


@pytest.mark.parametrize("spec,shapes", [
    ("ij,j->i", [(3, 3), (3,)]),
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("i,ij->j", [(3,), (3, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
])
def test_einsum_dot_operand_order_like_jax_under_vmap(spec, shapes):
    rng = np.random.RandomState(0)
    a = rng.randn(*shapes[0]).astype(np.float32)
    b = rng.randn(7, *shapes[1]).astype(np.float32)

    def f(mod):
        return mod.vmap(lambda y: mod.numpy.einsum(spec, a, y))

    ours, theirs = fluxion.make_jaxpr(f(fluxion))(b), jax.make_jaxpr(f(jax))(b)
    assert _dots(ours) == _dots(theirs)
    got, want = fluxion.jit(f(fluxion))(b), jax.jit(f(jax))(b)
    assert got.shape == want.shape and got.dtype == want.dtype
    # bit-equal on the CPU; on a TPU (the reference jax still on the CPU) the same dot_general
    # runs as the chip's bf16 passes, not IEEE float32 sums: the platform's tolerance there
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), **platform_tol(0.0))

"""nnx.bridge.lazy_init through a lifted transform, against flax.nnx on real jax: the copy of a
ToNNX that nnx.vmap makes inside lazy_init is initialized too (flax keeps the graph's
initializing state on the copy), so the Variables come out stacked."""

from __future__ import annotations

import flax.nnx as fnnx
import jax.numpy as jjnp
import pytest

import fluxion.numpy as fjnp
import fluxion_nn as nnx


def _state_shapes(lib, jnp):
    class Outer(lib.Module):
        def __init__(self, rngs):
            self.inner = lib.bridge.ToNNX(lib.bridge.ToLinen(lib.Linear, args=(4, 3)), rngs=rngs)

        def __call__(self, x):
            @lib.split_rngs(splits=5)
            @lib.vmap(in_axes=(0, None), axis_size=5)
            def f(inner, x):
                return inner(x)

            return f(self.inner, x)

    m = Outer(lib.Rngs(0))
    lib.bridge.lazy_init(m, jnp.ones((2, 4)))
    return sorted((tuple(str(k) for k in p), tuple(v.shape), str(v.dtype))
                  for p, v in lib.to_flat_state(lib.state(m)))


@pytest.mark.slow  # 12 s under load ~16 (vmapped linen-protocol init on both sides)
def test_lazy_init_through_vmap_initializes_the_copy_as_flax():
    ours = _state_shapes(nnx, fjnp)
    assert ours == _state_shapes(fnnx, jjnp)
    assert (("inner", "kernel"), (5, 4, 3), "float32") in ours

"""nnx.jit's per-call cache of the argument graphs: reused while the graphs are unchanged, and
never stale after a structural change (attribute replaced/added, list of layers appended,
Variable metadata set, structure changed inside the jitted function)."""

from __future__ import annotations

import numpy as np

import fluxion.numpy as jnp
import fluxion_nn as nnx


class Stack(nnx.Module):
    def __init__(self, rngs):
        self.layers = nnx.List([nnx.Linear(3, 3, rngs=rngs)])
        self.scale = 1.0

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x * self.scale


def _eager(m, x):
    return np.asarray(m(x))


def test_cache_reused_and_invalidated_by_structural_changes():
    rngs = nnx.Rngs(0)
    m = Stack(rngs)
    x = jnp.ones((2, 3))
    f = nnx.jit(lambda m, x: m(x))
    np.testing.assert_allclose(f(m, x), _eager(m, x), rtol=1e-6)
    static = f.cache.inp.static
    np.testing.assert_allclose(f(m, x), _eager(m, x), rtol=1e-6)
    assert f.cache.inp.static is static  # a hit reuses the structure
    # a Variable's value changed in place: same structure, new value read
    m.layers[0].bias.value = jnp.full((3,), 2.0)
    np.testing.assert_allclose(f(m, x), _eager(m, x), rtol=1e-6)
    # a list of layers appended to
    m.layers.append(nnx.Linear(3, 3, rngs=rngs))
    np.testing.assert_allclose(f(m, x), _eager(m, x), rtol=1e-6)
    # a static attribute replaced
    m.scale = 3.0
    np.testing.assert_allclose(f(m, x), _eager(m, x), rtol=1e-6)
    # a sub-module replaced by one of another shape
    m.layers[1] = nnx.Linear(3, 5, rngs=rngs)
    out = f(m, x)
    assert out.shape == (2, 5)
    np.testing.assert_allclose(out, _eager(m, x), rtol=1e-6)
    # Variable metadata set (part of the GraphDef)
    m.layers[0].kernel.tag = "w"
    f(m, x)
    gdef = f.cache.inp.static[0]
    assert "tag" in repr(gdef.root)


def test_cache_with_other_objects_and_updates_inside():
    a, b = Stack(nnx.Rngs(0)), Stack(nnx.Rngs(1))
    x = jnp.ones((2, 3))
    f = nnx.jit(lambda m, x: m(x))
    for m in (a, b, a, b):
        np.testing.assert_allclose(f(m, x), _eager(m, x), rtol=1e-6)

    @nnx.jit
    def grow(m, x):
        m.extra = nnx.Param(jnp.ones((3,)))
        return m(x)

    grow(a, x)
    assert isinstance(a.extra, nnx.Param)
    np.testing.assert_allclose(f(a, x), _eager(a, x), rtol=1e-6)

    @nnx.jit
    def bump(m, x):
        m.layers[0].bias.value = m.layers[0].bias.value + 1.0
        return m(x)

    before = np.asarray(a.layers[0].bias.value)
    for _ in range(3):
        bump(a, x)
    np.testing.assert_allclose(a.layers[0].bias.value, before + 3.0, rtol=1e-6)


def test_cache_with_keyword_and_container_arguments():
    m = Stack(nnx.Rngs(0))
    x = jnp.ones((2, 3))
    f = nnx.jit(lambda ms, x=None: ms[0](x) + ms[1](x))
    ref = _eager(m, x) * 2
    for _ in range(2):
        np.testing.assert_allclose(f((m, m), x=x), ref, rtol=1e-6)
    m.layers[0].bias.value = jnp.ones((3,))
    np.testing.assert_allclose(f((m, m), x=x), _eager(m, x) * 2, rtol=1e-6)

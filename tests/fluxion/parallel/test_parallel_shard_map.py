"""``fluxion.shard_map`` with the collectives over 8 real (host) devices, composed with jit, grad
and vmap; values and shapes against ``jax.shard_map`` (check_vma=False semantics)."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion.sharding import PartitionSpec as P

jax = pytest.importorskip("jax")
JP = jax.sharding.PartitionSpec


@pytest.fixture(scope="module")
def meshes(eight):
    # Auto axes on both sides: on Explicit ones (the default) in_specs must match the arguments
    return (fluxion.make_mesh((4, 2), ("x", "y"), axis_types=(fluxion.sharding.AxisType.Auto,) * 2),
            jax.make_mesh((4, 2), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2))


def _both(meshes, body, in_specs, out_specs, check_vma=False):
    m, jm = meshes

    def conv(s):
        return jax.tree_util.tree_map(lambda p: JP(*p), s,
                                      is_leaf=lambda p: isinstance(p, P))
    f = fluxion.shard_map(body(lax), mesh=m, in_specs=in_specs, out_specs=out_specs,
                          check_vma=check_vma)
    jf = jax.shard_map(body(jax.lax), mesh=jm, in_specs=conv(in_specs),
                       out_specs=conv(out_specs), check_vma=check_vma)
    return f, jf


COLLECTIVES = {
    "psum": (lambda L: lambda a: L.psum(a, "x"), P(None, "y")),
    "psum_xy": (lambda L: lambda a: L.psum(a, ("x", "y")), P()),
    "pmean": (lambda L: lambda a: L.pmean(a, "y"), P("x")),
    "pmax": (lambda L: lambda a: L.pmax(a, "x"), P(None, "y")),
    "pmin": (lambda L: lambda a: L.pmin(a, "y"), P("x")),
    "all_gather_tiled": (lambda L: lambda a: L.all_gather(a, "x", axis=0, tiled=True),
                         P(None, "y")),
    "all_gather": (lambda L: lambda a: L.all_gather(a, "y", axis=1), P("x")),
    "psum_scatter_tiled": (lambda L: lambda a: L.psum_scatter(a, "x", scatter_dimension=1,
                                                              tiled=True), P("x", "y")),
    "all_to_all_tiled": (lambda L: lambda a: L.all_to_all(a, "x", 1, 0, tiled=True),
                         P("x", "y")),
    "ppermute": (lambda L: lambda a: L.ppermute(a, "x", [(0, 1), (1, 2), (2, 3), (3, 0)]),
                 P("x", "y")),
    "ppermute_partial": (lambda L: lambda a: L.ppermute(a, "y", [(0, 1)]), P("x", "y")),
    "axis_index": (lambda L: lambda a: a * L.axis_index("x") + L.axis_index("y"),
                   P("x", "y")),
}


@pytest.mark.parametrize("name", list(COLLECTIVES))
def test_collectives_like_jax(meshes, name):
    body, out_spec = COLLECTIVES[name]
    f, jf = _both(meshes, body, P("x", "y"), out_spec)
    a = np.arange(8 * 8, dtype=np.float32).reshape(8, 8) - 20.0
    out, ref = f(jnp.asarray(a)), jax.jit(jf)(a)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-6)
    jitted = fluxion.jit(f)(jnp.asarray(a))
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(ref), rtol=1e-6)


def test_untiled_all_to_all_and_psum_scatter(meshes):
    def body(L):
        def b(a):  # a: (4, 2) per device with 4 == size of 'x'
            t = L.all_to_all(a, "x", 0, 1)
            s = L.psum_scatter(a, "x", scatter_dimension=0)
            return t, s
        return b
    f, jf = _both(meshes, body, P(None, "y"), (P(None, "y"), P("y")))
    a = np.arange(4 * 4, dtype=np.float32).reshape(4, 4)
    for o, r in zip(f(jnp.asarray(a)), jax.jit(jf)(a)):
        assert o.shape == r.shape
        np.testing.assert_allclose(np.asarray(o), np.asarray(r))


def test_axis_size_and_pytrees(meshes):
    m, _ = meshes
    f = fluxion.shard_map(lambda d: {"n": d["a"] * lax.axis_size("x") + lax.axis_size(("x", "y"))},
                          mesh=m, in_specs=({"a": P("x")},), out_specs={"n": P("x")})
    out = f({"a": jnp.ones((8, 2))})
    np.testing.assert_array_equal(np.asarray(out["n"]), np.full((8, 2), 12.0))


def test_grad_through_shard_map_like_jax(meshes):
    def body(L):
        def b(xs, w):
            return L.psum(((xs * w) ** 2).sum(), ("x", "y"))
        return b
    f, jf = _both(meshes, body, (P("x", "y"), P("y")), P())
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 4)).astype(np.float32)
    w = rng.normal(size=(4,)).astype(np.float32)
    np.testing.assert_allclose(float(f(jnp.asarray(x), jnp.asarray(w))), float(jax.jit(jf)(x, w)),
                               rtol=1e-5)
    g = fluxion.grad(f, argnums=(0, 1))(jnp.asarray(x), jnp.asarray(w))
    # the references under jax.jit: JAX's eager shard_map compiles each op on its own (slow)
    jg = jax.jit(jax.grad(jf, argnums=(0, 1)))(x, w)
    for a, b in zip(g, jg):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4)
    gj = fluxion.jit(fluxion.grad(f, argnums=1))(jnp.asarray(x), jnp.asarray(w))
    np.testing.assert_allclose(np.asarray(gj), np.asarray(jg[1]), rtol=1e-4)


@pytest.mark.parametrize("name", ["all_gather_tiled", "ppermute", "psum_scatter_tiled",
                                  "all_to_all_tiled"])
def test_grad_of_collectives_like_jax(meshes, name):
    body, out_spec = COLLECTIVES[name]

    def scalar(L):
        inner = body(L)
        return lambda a: L.psum((inner(a) * np.float32(1.5)).sum(), ("x", "y"))
    f, jf = _both(meshes, scalar, P("x", "y"), P())
    a = np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8)
    g = fluxion.grad(lambda v: f(v ** 2))(jnp.asarray(a))
    jg = jax.jit(jax.grad(lambda v: jf(v ** 2)))(a)
    np.testing.assert_allclose(np.asarray(g), np.asarray(jg), rtol=1e-5)


def test_vmap_of_and_inside_shard_map(meshes):
    def body(L):
        return lambda a: L.psum(a, "x") * 2
    f, jf = _both(meshes, body, P("x"), P())
    xs = np.arange(3 * 8 * 2, dtype=np.float32).reshape(3, 8, 2)
    out, ref = fluxion.vmap(f)(jnp.asarray(xs)), jax.jit(jax.vmap(jf))(xs)
    assert out.shape == ref.shape
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref))
    m, _ = meshes
    k = fluxion.shard_map(lambda a: fluxion.vmap(lambda r: r * lax.axis_index("x"))(a),
                          mesh=m, in_specs=P("x"), out_specs=P("x"))
    np.testing.assert_array_equal(np.asarray(k(jnp.ones((8, 2))))[:, 0],
                                  np.repeat(np.arange(4.0), 2))


def test_set_mesh_and_in_specs_from_arguments(meshes):
    m, _ = meshes
    x = fluxion.device_put(np.arange(16.0, dtype=np.float32).reshape(8, 2),
                           fluxion.NamedSharding(m, P("x")))
    with fluxion.set_mesh(m):
        f = fluxion.shard_map(lambda a: a.sum(0, keepdims=True), out_specs=P("x"))
        out = f(x)  # in_specs taken from x's sharding
    np.testing.assert_array_equal(np.asarray(out),
                                  np.asarray(x).reshape(4, 2, 2).sum(1))


def test_shard_map_errors(meshes):
    m, _ = meshes
    f = fluxion.shard_map(lambda a: a, mesh=m, in_specs=P("x"), out_specs=P("x"))
    with pytest.raises(ValueError, match="not divisible") as e:
        f(jnp.ones((6, 2)))
    assert "test_parallel_shard_map.py" in str(e.value)
    with pytest.raises(ValueError, match="axis 'z'"):
        fluxion.shard_map(lambda a: a, mesh=m, in_specs=P("z"), out_specs=P())(jnp.ones(8))
    with pytest.raises(NameError, match="unbound axis name: 'q'"):
        fluxion.shard_map(lambda a: lax.psum(a, "q"), mesh=m, in_specs=P("x"),
                          out_specs=P("x"))(jnp.ones(8))
    with pytest.raises(ValueError, match="no mesh"):
        fluxion.shard_map(lambda a: a, in_specs=P(), out_specs=P())(jnp.ones(8))
    with pytest.raises(TypeError, match="PartitionSpec"):
        fluxion.shard_map(lambda a: a, mesh=m, in_specs="x", out_specs=P())(jnp.ones(8))


def test_arguments_placed_otherwise_are_resharded(meshes):
    m, _ = meshes
    a = np.arange(16.0, dtype=np.float32).reshape(8, 2)
    x = fluxion.device_put(a, fluxion.NamedSharding(m, P()))
    f = fluxion.shard_map(lambda b: lax.psum(b.sum(0, keepdims=True), "x"), mesh=m,
                          in_specs=P("x"), out_specs=P())
    np.testing.assert_array_equal(np.asarray(f(x)), a.sum(0, keepdims=True))
    np.testing.assert_array_equal(np.asarray(fluxion.jit(f)(x)), a.sum(0, keepdims=True))

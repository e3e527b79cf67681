"""``nnx.shard_map`` against flax.nnx on real jax: modules and Variables split by
``PartitionSpec``/``StateSharding``/``nnx.prefix``/a State of specs, the blocks seen inside, the
updates written back (with their input sharding in graph-update mode), the outputs' values and
shardings, and flax's errors (inconsistent aliasing, bound methods, shared Variables in tree
mode)."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from flax import nnx as fnnx

import fluxion
import fluxion.numpy as jnp
import fluxion_nn as nnx

pytestmark = pytest.mark.skipif(len(fluxion.devices()) < 4 or jax.device_count() < 4,
                                reason="needs 4 host devices")

FP, JP = fluxion.sharding.PartitionSpec, jax.sharding.PartitionSpec
MODES = [(True, True), (True, False), (False, False)]
# the first mode runs by default; the others (each a few seconds under load) are slow
SLOW_MODES = [MODES[0]] + [pytest.param(*m, marks=pytest.mark.slow) for m in MODES[1:]]


def _meshes(name: str) -> tuple:
    return (fluxion.sharding.Mesh(fluxion.devices()[:4], (name,)),
            jax.sharding.Mesh(jax.devices()[:4], (name,)))


@pytest.mark.slow  # ~10 s under load (flax's and fluxion's shard_map compiles)
@pytest.mark.parametrize("graph,graph_updates", MODES)
def test_data_parallel_linear_as_flax(graph, graph_updates):
    fmesh, jmesh = _meshes("data")
    m, fm = nnx.Linear(2, 3, rngs=nnx.Rngs(0)), fnnx.Linear(2, 3, rngs=fnnx.Rngs(0))
    x = np.arange(16.0, dtype=np.float32).reshape(8, 2)
    seen = []
    outs = []
    for lib, mesh, P, mod, xx in ((nnx, fmesh, FP, m, jnp.asarray(x)),
                                  (fnnx, jmesh, JP, fm, jax.numpy.asarray(x))):
        @lib.shard_map(mesh=mesh, in_specs=(P(None), P("data")), out_specs=P("data"),
                       graph=graph, graph_updates=graph_updates)
        def f(mod, xx):
            seen.append((tuple(xx.shape), tuple(mod.kernel.shape)))
            return mod(xx)

        outs.append(f(mod, xx))
    y, fy = outs
    assert seen[0] == seen[1] == ((2, 2), (2, 3))
    assert y.shape == fy.shape == (8, 3) and y.dtype == fy.dtype
    np.testing.assert_allclose(np.asarray(y), np.asarray(fy), rtol=1e-6)
    assert y.sharding.spec == FP("data") and fy.sharding.spec == JP("data")
    named = isinstance(m.kernel.value.sharding, fluxion.sharding.NamedSharding)
    fnamed = isinstance(fm.kernel[...].sharding, jax.sharding.NamedSharding)
    assert named == fnamed == (graph and graph_updates)


@pytest.mark.slow  # ~10 s under load
@pytest.mark.parametrize("how", ["state_sharding", "state", "prefix"])
def test_tensor_parallel_mlp_as_flax(how):
    fmesh, jmesh = _meshes("model")
    results = []
    for lib, mesh, P, np_ in ((nnx, fmesh, FP, jnp), (fnnx, jmesh, JP, jax.numpy)):
        class MLP(lib.Module):
            def __init__(self, rngs):
                self.linear1 = lib.Linear(2, 8, use_bias=False, rngs=rngs)
                self.linear2 = lib.Linear(8, 3, use_bias=False, rngs=rngs)

            def __call__(self, x):
                return self.linear2(lib.relu(self.linear1(x)))

        m = MLP(lib.Rngs(0))
        specs = {("linear1", "kernel"): P(None, "model"), ("linear2", "kernel"): P("model", None)}
        filters = {(lambda k: lambda p, v: tuple(p) == k)(k): s for k, s in specs.items()}
        if how == "state_sharding":
            spec = lib.StateSharding(filters)
            kw = {}
        elif how == "state":
            spec = lib.StateSharding(lib.State({"linear1": {"kernel": specs["linear1", "kernel"]},
                                                "linear2": {"kernel": specs["linear2", "kernel"]}}))
            kw = {}
        else:
            spec = lib.prefix(m, filters, graph=True)
            kw = {"graph_updates": False}
        shapes = []

        @lib.shard_map(mesh=mesh, in_specs=(spec, P(None)), out_specs=P(None), **kw)
        def f(m, x):
            shapes.append((tuple(m.linear1.kernel.shape), tuple(m.linear2.kernel.shape)))
            return (jax.lax if lib is fnnx else fluxion.lax).psum(m(x), "model")

        y = f(m, np_.ones((4, 2)))
        results.append((shapes[0], np.asarray(y), y.dtype, tuple(y.sharding.spec)))
    (s, y, d, sp), (fs, fy, fd, fsp) = results
    assert s == fs == ((2, 2), (2, 3)) and d == fd and sp == fsp
    np.testing.assert_allclose(y, fy, rtol=1e-5)


@pytest.mark.parametrize("graph,graph_updates", SLOW_MODES)
def test_variable_updates_written_back(graph, graph_updates):
    fmesh, jmesh = _meshes("data")
    got = []
    for lib, mesh, P, np_ in ((nnx, fmesh, FP, jnp), (fnnx, jmesh, JP, jax.numpy)):
        class Foo(lib.Module):
            def __init__(self):
                self.count = lib.Variable(np_.array(0))

        m = Foo()
        w = lib.Param(np_.zeros((8, 4)))

        @lib.shard_map(mesh=mesh, in_specs=(P(), P("data", None), P()), out_specs=P("data", None),
                       graph=graph, graph_updates=graph_updates)
        def f(m, w, x):
            m.count[...] += 1
            return w[...] + x

        y = f(m, w, np_.array(3.0))
        y = f(m, w, np_.array(3.0))
        got.append((int(m.count[...]), np.asarray(y), y.shape, y.dtype, np.asarray(w[...])))
    (c, y, sh, dt, w), (fc, fy, fsh, fdt, fw) = got
    assert c == fc == 2 and sh == fsh == (8, 4) and dt == fdt
    np.testing.assert_array_equal(y, fy)
    np.testing.assert_array_equal(w, fw)


@pytest.mark.parametrize("graph,graph_updates", MODES)
def test_shared_variable_and_errors_as_flax(graph, graph_updates):
    fmesh, jmesh = _meshes("x")
    for lib, mesh, P, np_ in ((nnx, fmesh, FP, jnp), (fnnx, jmesh, JP, jax.numpy)):
        v = lib.Param(np_.array(1.0))

        class Container(lib.Module):
            def __init__(self, v):
                self.v = v

        @lib.shard_map(mesh=mesh, in_specs=(P(), P(), P()), out_specs=P(),
                       graph=graph, graph_updates=graph_updates)
        def f(c1, c2, x):
            c1.v[...] += x
            return c1.v[...] + c2.v[...]

        if not graph:
            with pytest.raises(ValueError):
                f(Container(v), Container(v), np_.array(1.0))
        else:
            y = f(Container(v), Container(v), np_.array(1.0))
            assert float(y) == 4.0 and float(v[...]) == 2.0
        if graph:
            g = lib.shard_map(lambda a, b: a[...] + b[...], mesh=mesh, in_specs=(P(), P("x")),
                              out_specs=P(), graph=graph, graph_updates=graph_updates)
            with pytest.raises(ValueError, match="Inconsistent aliasing"):
                g(v, v)

        class M(lib.Module):
            def __call__(self, x):
                return x + 1

        with pytest.raises(ValueError, match="bound methods"):
            lib.shard_map(M().__call__, mesh=mesh, in_specs=None, out_specs=None)


def test_state_axes_from_a_state_as_flax():
    for lib in (nnx, fnnx):
        st = lib.State({"a": {"k": 0, "b": 1}, "c": 0})
        axes = lib.StateAxes(st)
        assert axes.map_prefix(("a", "k"), None) == 0
        assert axes.map_prefix(("a", "b"), None) == 1
        assert axes.map_prefix(("c",), None) == 0
        with pytest.raises(ValueError, match="No axis found"):
            axes.map_prefix(("d",), None)
        assert sorted(axes.axes) == [0, 1] and len(axes) == 2


def test_tree_mode_prefix_of_rngs_is_accepted_state_axes_refused_as_flax():
    # nnx.prefix of an Rngs in tree mode is an Rngs (whose streams are attributes): flax takes it
    # as a prefix; a StateAxes in tree mode is refused
    for lib in (nnx, fnnx):
        axes = lib.prefix(lib.Rngs(0), {lib.RngState: 0, ...: None}, graph=False)
        lib.pmap(lambda r: r, in_axes=(axes,), axis_size=1, graph=False, graph_updates=False)
        with pytest.raises(ValueError, match="cannot contain `StateAxes` objects"):
            lib.vmap(lambda m: m, in_axes=(lib.StateAxes({...: 0}),), graph=False)

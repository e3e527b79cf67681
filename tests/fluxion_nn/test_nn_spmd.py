"""fluxion_nn sharding annotations (``nnx.spmd``) against flax.nnx on real jax: eager placement of
annotated Variables, logical axis rules, PartitionSpec trees, abstract models with shardings,
``transform_metadata`` and the sharding of optimizer moments."""

from __future__ import annotations

import jax
import numpy as np
import optax
import pytest
from flax import nnx as fnnx

import fluxion
import fluxion.numpy as jnp
import fluxion_nn as nnx
import fluxion_optim

pytestmark = pytest.mark.skipif(len(fluxion.devices()) < 4 or jax.device_count() < 4,
                                reason="needs 4 host devices")

FP = fluxion.sharding.PartitionSpec
JP = jax.sharding.PartitionSpec


def _meshes(names: tuple = ("row", "col"), explicit: bool = False) -> tuple:
    ft = (fluxion.sharding.AxisType.Explicit if explicit else fluxion.sharding.AxisType.Auto,) * 2
    jt = (jax.sharding.AxisType.Explicit if explicit else jax.sharding.AxisType.Auto,) * 2
    return fluxion.make_mesh((2, 2), names, axis_types=ft), jax.make_mesh((2, 2), names, axis_types=jt)


def test_variable_metadata_carries_the_flags_as_flax():
    v, fv = nnx.Variable(jnp.array(1.0)), fnnx.Variable(jax.numpy.array(1.0))
    assert v.get_metadata() == fv.get_metadata()
    v.set_metadata({"b": 3})
    fv.set_metadata({"b": 3})
    assert v.get_metadata() == fv.get_metadata()
    with pytest.raises(ValueError, match="Cannot change `hijax` metadata"):
        v.set_metadata(hijax=True)
    assert repr(nnx.Param(jnp.ones(2))) == "Param(value=float32[2])"
    with pytest.warns(DeprecationWarning, match="'sharding' is deprecated"):
        w = nnx.Param(jnp.ones(2), sharding=("a",), eager_sharding=False)
    assert w.out_sharding == ("a",) and w.eager_sharding is False


@pytest.mark.parametrize("rules", [False, True])
def test_eager_sharding_places_annotated_variables(rules):
    fmesh, jmesh = _meshes()
    annot = ("r", "c") if rules else ("row", "col")
    kw = {"sharding_rules": (("r", "row"),)} if rules else {}
    with fluxion.set_mesh(fmesh), nnx.logical_axis_rules((("c", "col"),)):
        v = nnx.Param(jnp.ones((8, 2)), out_sharding=annot, **kw)
        spec = nnx.get_partition_spec(v)
    with jax.set_mesh(jmesh), fnnx.logical_axis_rules((("c", "col"),)):
        fv = fnnx.Param(jax.numpy.ones((8, 2)), out_sharding=annot, **kw)
        fspec = fnnx.get_partition_spec(fv)
    assert v.sharding.spec == FP(*fv.sharding.spec) == FP("row", "col")
    assert v.sharding.shard_shape(v.shape) == fv.sharding.shard_shape(fv.shape) == (4, 1)
    assert tuple(spec.value) == tuple(fspec.value)
    with nnx.use_eager_sharding(False), fluxion.set_mesh(fmesh):
        assert nnx.Param(jnp.ones((8, 2)), out_sharding=annot).sharding.spec == FP()


def test_mesh_metadata_and_mixed_axis_types():
    fmesh, _ = _meshes()
    v = nnx.Variable(jnp.ones((4, 4)), out_sharding=("row", "col"), mesh=fmesh)
    assert v.sharding.mesh == fmesh and v.sharding.spec == FP("row", "col")
    mixed = fluxion.make_mesh((2, 2), ("row", "col"), axis_types=(
        fluxion.sharding.AxisType.Auto, fluxion.sharding.AxisType.Explicit))
    with pytest.raises(ValueError, match="Got mixed axis types"):
        nnx.Variable(jnp.ones((4, 4)), out_sharding=("row", "col"), mesh=mixed)
    with pytest.raises(ValueError, match="An auto mesh context or metadata is required"):
        nnx.Variable(jnp.ones((4, 4)), out_sharding=("row", "col"))


def test_partition_spec_tree_and_abstract_models():
    fmesh, jmesh = _meshes(("batch", "model"))

    def make(lib, rngs):
        init = lib.with_partitioning(lib.initializers.lecun_normal(), (None, "model"))
        return lib.Linear(8, 8, kernel_init=init, rngs=rngs)

    with nnx.use_eager_sharding(False), fnnx.use_eager_sharding(False):
        specs = nnx.get_partition_spec(nnx.state(make(nnx, nnx.Rngs(0))))
        fspecs = fnnx.get_partition_spec(fnnx.state(make(fnnx, fnnx.Rngs(0))))
    assert tuple(specs["kernel"].value) == tuple(fspecs["kernel"].get_value()) == (None, "model")
    assert tuple(specs["bias"].value) == tuple(fspecs["bias"].get_value()) == ()

    gdef, abs_state = nnx.compat.get_abstract_model(lambda: make(nnx, nnx.Rngs(0)), fmesh)
    _, fabs = fnnx.compat.get_abstract_model(lambda: make(fnnx, fnnx.Rngs(0)), jmesh)
    k, fk = abs_state["kernel"].value, fabs["kernel"].get_value()
    assert (k.shape, k.dtype, k.sharding.spec) == (fk.shape, fk.dtype, FP(*fk.sharding.spec))
    assert isinstance(gdef, nnx.GraphDef)

    with fluxion.set_mesh(fmesh):
        abs_model = nnx.as_abstract(nnx.eval_shape(lambda: make(nnx, nnx.Rngs(0))))
    assert abs_model.kernel.value.sharding.spec == FP(None, "model")
    assert abs_model.kernel.value.sharding.mesh.axis_names == ("batch", "model")
    plain = nnx.as_abstract(nnx.eval_shape(lambda: nnx.Linear(4, 8, rngs=nnx.Rngs(0))))
    assert getattr(plain.kernel.get_value(), "sharding", None) is None


def test_transform_metadata_moves_the_partition_axis():
    seen = []

    @nnx.transform_metadata(in_axes=0, out_axes=1, partition="din")
    def f(v):
        v[...] += 1
        seen.append(v.out_sharding)
        return nnx.Param(jnp.array(10), out_sharding=("dmid", "dout"), eager_sharding=False)

    v = nnx.Param(jnp.array(0), out_sharding=("din", "dout"), eager_sharding=False)
    v2 = f(v)
    assert seen == [("dout",)]
    assert v.out_sharding == ("din", "dout") and int(v[...]) == 1
    assert v2.out_sharding == ("dmid", "din", "dout")
    with pytest.raises(ValueError, match="Expected to remove 'x' at index 0"):
        nnx.spmd.remove_axis(v, 0, {nnx.PARTITION_NAME: "x"})
    hooks = []

    class Tracked(nnx.Param):
        def add_axis(self, index, name):
            hooks.append(("add", index, name))

    t = Tracked(jnp.ones(3), eager_sharding=False)
    nnx.spmd.add_axis(t, 0, {nnx.PARTITION_NAME: "layers"})
    assert hooks == [("add", 0, "layers")]


def test_optimizer_moments_follow_optimizer_sharding():
    fmesh, jmesh = _meshes()
    with fluxion.set_mesh(fmesh):
        model = nnx.Linear(4, 2, rngs=nnx.Rngs(0), kernel_metadata={"optimizer_sharding": ("row", "col")})
        opt = nnx.Optimizer(model, fluxion_optim.adam(1e-3), wrt=nnx.Param)
        assert model.kernel.sharding.is_equivalent_to(
            fluxion.sharding.NamedSharding(fmesh, FP()), 2)
        grads = fluxion.grad(lambda m, x: jnp.sum(m(x)))(model, jnp.ones(4))
        opt.update(model, grads)
    with jax.set_mesh(jmesh):
        fmodel = fnnx.Linear(4, 2, rngs=fnnx.Rngs(0), kernel_metadata={"optimizer_sharding": ("row", "col")})
        fopt = fnnx.Optimizer(fmodel, optax.adam(1e-3), wrt=fnnx.Param)
    mu, fmu = opt.opt_state[0].mu["kernel"], fopt.opt_state[0].mu["kernel"]
    assert type(mu).__name__ == type(fmu).__name__ == "OptVariable"
    assert mu.sharding.spec == FP(*fmu.sharding.spec) == FP("row", "col")
    assert type(opt.opt_state[0].count).__name__ == type(fopt.opt_state[0].count).__name__


def test_layers_take_out_sharding():
    fmesh, _ = _meshes(("X", "Y"), explicit=True)
    with fluxion.set_mesh(fmesh):
        x = fluxion.sharding.reshard(jnp.arange(4.0).reshape(2, 2), FP("X", None))
        for layer in (nnx.Linear(2, 4, rngs=nnx.Rngs(0)), nnx.LinearGeneral(2, 4, rngs=nnx.Rngs(0)),
                      nnx.Einsum("ab,bc->ac", (2, 4), (4,), rngs=nnx.Rngs(0))):
            assert str(fluxion.typeof(layer(x))) == "float32[2@X,4]"
            assert str(fluxion.typeof(layer(x, out_sharding=FP("X", "Y")))) == "float32[2@X,4@Y]"
        emb = nnx.Embed(10, 4, rngs=nnx.Rngs(0))
        assert str(fluxion.typeof(emb.attend(x @ jnp.ones((2, 4)), out_sharding=FP("X", "Y")))) \
            == "float32[2@X,10@Y]"
        idx = fluxion.sharding.reshard(jnp.arange(4), FP("Y"))
        out = emb(idx, out_sharding=FP("X"))
        assert str(fluxion.typeof(out)) == "float32[4@X,4]"
    assert float(jnp.max(jnp.abs(out - emb.embedding.value[:4]))) == 0.0


def _layered_mlp(lib, log: list, np_):
    """flax spmd_test's MLP: a vmapped constructor and a scanned call, both with
    ``transform_metadata``; ``log`` records the Variables' add/remove_axis hooks and what the
    body sees."""
    class Kernel(lib.Param):
        def add_axis(self, index, name):
            log.append(("add", index, name))
            super().add_axis(index, name)

        def remove_axis(self, index, name):
            log.append(("remove", index, name))
            super().remove_axis(index, name)

    axes = lib.StateAxes({(lib.Param, lib.RngState): 0, ...: None})

    class MLP(lib.Module):
        @lib.split_rngs(splits=3, graph=True, graph_updates=True)
        @lib.vmap(in_axes=(axes, axes), graph=True, graph_updates=True,
                  transform_metadata={lib.PARTITION_NAME: "layers", "nickname": "nick"})
        def __init__(self, rngs):
            self.kernel = Kernel(lib.initializers.lecun_normal()(rngs.params(), (2, 2)),
                                 out_sharding=("din", "dout"), nickname=("in", "out"),
                                 eager_sharding=False)

        @lib.scan(in_axes=(axes, lib.Carry), graph=True, graph_updates=True,
                  transform_metadata={lib.PARTITION_NAME: "layers"})
        def __call__(self, x):
            log.append(("inside", tuple(self.kernel.shape), self.kernel.out_sharding))
            return x @ self.kernel[...], None

    return MLP


@pytest.mark.slow  # flax's vmapped constructor and scan compile for ~10 s under load
def test_vmap_and_scan_transform_metadata_as_flax():
    results = []
    for lib, np_ in ((nnx, jnp), (fnnx, jax.numpy)):
        log: list = []
        m = _layered_mlp(lib, log, np_)(lib.Rngs(0))
        made = (tuple(m.kernel.shape), m.kernel.out_sharding, m.kernel.nickname, list(log))
        y, _ = m(np_.ones((1, 2)))
        results.append((made, log, tuple(m.kernel.shape), m.kernel.out_sharding,
                        np.asarray(y), y.dtype))
    (made, log, shape, sh, y, dt), (fmade, flog, fshape, fsh, fy, fdt) = results
    assert made == fmade == ((3, 2, 2), ("layers", "din", "dout"), ("nick", "in", "out"),
                             [("add", 0, "layers")])
    assert log == flog and ("inside", (2, 2), ("din", "dout")) in log
    assert shape == fshape == (3, 2, 2) and sh == fsh == ("layers", "din", "dout")
    assert dt == fdt
    np.testing.assert_allclose(y, fy, rtol=1e-5)


@pytest.mark.parametrize("lib,jx", [(nnx, fluxion), (fnnx, jax)])
def test_sharding_names_is_the_deprecated_name_of_out_sharding(lib, jx):
    init = lib.with_partitioning(lib.initializers.zeros_init(), (None, "model"))
    with jx.set_mesh(jx.make_mesh((1,), ("model",))):
        layer = lib.Linear(2, 3, kernel_init=init, rngs=lib.Rngs(0))
    with pytest.warns(DeprecationWarning, match="'sharding_names' is deprecated"):
        assert layer.kernel.sharding_names == (None, "model")
    with pytest.warns(DeprecationWarning):
        assert layer.bias.sharding_names is None


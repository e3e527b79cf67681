"""``nnx.capture`` and ``nnx.bridge`` (functional / Linen-protocol wrappers) against flax.nnx."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from flax import nnx as fnnx

import fluxion
import fluxion.numpy as jnp
import fluxion_nn as nnx


def _blocks(lib, np_):
    class Foo(lib.Module):
        def __call__(self, x):
            x = self.perturb("grad_of_x", x)
            y = 3 * x
            self.sow(lib.Intermediate, "y", y)
            return y

    class Bar(lib.Module):
        def __init__(self):
            self.foos = lib.data([Foo() for _ in range(3)])

        def __call__(self, x):
            for block in self.foos:
                x = block(x)
            return x

    return Bar()


def test_capture_sow_and_perturb_as_flax():
    model, fmodel = _blocks(nnx, jnp), _blocks(fnnx, jax.numpy)
    y, (inter, pert) = nnx.capture(model, nnx.Intermediate, nnx.Perturbation)(1.0)[0], \
        nnx.capture(model, nnx.Intermediate, nnx.Perturbation)(1.0)[1:]
    fy, finter, fpert = fnnx.capture(fmodel, fnnx.Intermediate, fnnx.Perturbation)(1.0)
    assert float(y) == float(fy) == 27.0
    for i in range(3):
        # Perturbation is an Intermediate subclass: the first filter takes both, as in flax
        assert float(inter["foos"][i]["y"].get_value()[0]) == float(finter["foos"][i]["y"].get_value()[0])
        assert sorted(inter["foos"][i]) == sorted(finter["foos"][i])
    assert len(pert.flat_state()) == len(fnnx.to_flat_state(fpert)) == 0
    assert not hasattr(model.foos[0], "__captures__")
    # perturbations seeded with init, differentiated (tree mode)
    _, perturbations = nnx.capture(model, nnx.Perturbation)(1.0)

    def loss(perturbations, x):
        out, _ = nnx.capture(model, nnx.Intermediate, init=perturbations)(x)
        return out

    grads = fluxion.grad(loss)(perturbations, 1.0)
    assert [float(grads["foos"][i]["grad_of_x"].get_value()) for i in range(3)] == [27.0, 9.0, 3.0]
    # outside capture sow keeps the attribute behaviour, with flax's deprecation warning
    with pytest.warns(DeprecationWarning, match="outside of 'nnx.capture"):
        model.foos[0](1.0)
    assert model.foos[0].y.get_value()[0] == 3.0


def test_capture_method_outputs():
    class Foo(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.eye(2))

        def helper(self, x):
            return jnp.sin(x)

        def __call__(self, x):
            return self.helper(x @ self.w)

    model = Foo()
    y, intms = nnx.capture(model, nnx.Intermediate, method_outputs=nnx.Intermediate)(jnp.ones((1, 2)))
    assert sorted(intms) == ["__call__", "helper"]
    np.testing.assert_allclose(intms["__call__"].get_value()[0], y)
    assert not hasattr(Foo.helper, "_sows_output")  # the class is restored
    deco = nnx.capture(nnx.Intermediate)(lambda m, x: m(x))
    assert deco(model, jnp.ones((1, 2)))[1] == nnx.State({})


def test_bridge_functional_and_to_linen_match_flax_structure():
    f = nnx.bridge.functional(nnx.Linear)(3, 4)
    state = f.init(rngs=nnx.Rngs(0))
    y, (_, new_state) = f.apply(state)(jnp.ones((1, 3)))
    ff = fnnx.bridge.functional(fnnx.Linear)(3, 4)
    fstate = ff.init(rngs=fnnx.Rngs(0))
    np.testing.assert_allclose(np.asarray(state["kernel"].get_value()),
                               np.asarray(fstate["kernel"].get_value()), rtol=1e-6)
    assert y.shape == (1, 4)

    class Inner(nnx.Module):
        def __init__(self, din, dout, rngs):
            self.w = nnx.Param(nnx.initializers.lecun_normal()(rngs.params(), (din, dout)))
            self.bn = nnx.BatchNorm(dout, use_running_average=False, rngs=rngs)
            self.lora = nnx.LoRA(din, 2, dout, rngs=rngs)

        def __call__(self, x):
            return self.bn(x @ self.w[...]) + self.lora(x)

    model = nnx.bridge.to_linen(Inner, 4, 3)
    x = fluxion.random.normal(fluxion.random.key(1), (2, 4))
    out, var = model.init_with_output({"params": fluxion.random.key(0)}, x)
    assert sorted(var) == ["LoRAParam", "batch_stats", "params"]
    y, updates = model.apply(var, x, mutable="batch_stats")
    assert sorted(updates) == ["batch_stats"] and y.shape == (2, 3)
    np.testing.assert_allclose(model.apply(var, x), out, rtol=1e-6)

    meta = nnx.bridge.to_linen(nnx.Linear, 4, 8, kernel_init=nnx.with_partitioning(
        nnx.initializers.lecun_normal(), ("in", "out")))
    with nnx.use_eager_sharding(False):
        _, mvar = meta.init_with_output(fluxion.random.key(0), x)
    kernel = mvar["params"]["kernel"]
    assert isinstance(kernel, nnx.bridge.NNXMeta)
    assert kernel.metadata["out_sharding"] == ("in", "out")
    assert tuple(kernel.get_partition_spec()) == ("in", "out")
    assert not isinstance(mvar["params"]["bias"], nnx.bridge.NNXMeta)


def test_to_nnx_wraps_the_linen_protocol():
    embed = nnx.bridge.to_linen(nnx.Embed, 5, 3)
    model = nnx.bridge.ToNNX(embed, rngs=nnx.Rngs(0))
    idx = jnp.array([1, 2])
    nnx.bridge.lazy_init(model, idx)
    assert isinstance(model.embedding, nnx.Param) and model.embedding.shape == (5, 3)
    np.testing.assert_allclose(model(idx), model.embedding.get_value()[idx])
    logits = model(jnp.ones((1, 3)), method="attend")
    assert logits.shape == (1, 5)
    with pytest.raises(ValueError, match="needs to be a method of an NNX Module"):
        nnx.bridge.lazy_init(lambda x: x, idx)

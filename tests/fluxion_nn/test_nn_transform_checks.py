"""Lifted-transform and construction checks vs flax.nnx: captured Variables returned from
``nnx.vmap``, broadcast Variables made batched, data put into a static attribute after
``__init__``; ``cached_partial``'s clones, an Optimizer over plain array attributes, prefixes of a
lone Variable and of tuple attributes."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import optax
import pytest
from flax import nnx as fnnx

import fluxion
import fluxion.numpy as jnp
import fluxion_nn as nnx
import fluxion_optim

SIDES = [(nnx, fluxion, jnp), (fnnx, jax, jjnp)]


@pytest.mark.parametrize("lib,jx,np_", SIDES)
@pytest.mark.parametrize("graph_updates", [True, False])
def test_vmap_refuses_to_return_a_captured_variable(lib, jx, np_, graph_updates):
    class Foo(lib.Module):
        def __init__(self):
            self.a = lib.Variable(np_.arange(4))

    m = Foo()

    @lib.vmap(in_axes=0, out_axes=0, graph=True, graph_updates=graph_updates)
    def f(x):
        return m

    match = ("Cannot extract graph node from different trace level" if graph_updates
             else "Cannot return captured Variable")
    with pytest.raises(ValueError, match=match):
        f(np_.zeros((4,)))

    @lib.vmap(in_axes=0, out_axes=0, graph=True, graph_updates=graph_updates)
    def g(x):  # a Variable made inside may be returned
        return lib.Variable(x * 2)

    out = g(np_.ones(3))
    assert out.shape == (3,) and out[...].dtype == np.float32


@pytest.mark.parametrize("lib,jx,np_", SIDES)
def test_vmap_broadcast_variable_made_batched_is_an_error(lib, jx, np_):
    class Broadcast(lib.Variable):
        pass

    class Vectorized(lib.Variable):
        pass

    class Env(lib.Module):
        def __init__(self):
            self.broadcast = Broadcast(np_.array(1))
            self.index = Vectorized(np_.arange(8))

    env = Env()
    axes = lib.StateAxes({Broadcast: None, Vectorized: 0})

    @lib.vmap(in_axes=(axes,), graph=True, graph_updates=True)
    def bad(env):
        env.broadcast[...] += env.index[...]

    with pytest.raises(ValueError, match=r"at vmap.*'broadcast'.*got axis spec None but output "
                                         r"was batched on axis 0"):
        bad(env)

    @lib.vmap(in_axes=(axes,), graph=True, graph_updates=True)
    def good(env):
        env.index[...] += env.broadcast[...]

    good(env)
    np.testing.assert_array_equal(np.asarray(env.index[...]), np.arange(8) + 1)
    assert int(env.broadcast[...]) == 1 and env.broadcast[...].shape == ()


@pytest.mark.parametrize("lib,jx,np_", SIDES)
def test_data_put_into_a_static_attribute_after_init(lib, jx, np_):
    class Bad(lib.Module):
        def __init__(self):
            self.ls = []
            self.ls.append(np_.array(1))

    class Good(lib.Module):
        def __init__(self):
            self.ls = lib.List([])
            self.ls.append(np_.array(1))
            self.names = ["a"]
            self.names.append("b")

    with pytest.raises(ValueError, match="Found unexpected data on value of type"):
        Bad()
    assert len(Good().ls) == 1


@pytest.mark.slow  # two jit compiles per side
def test_cached_partial_binds_clones_sharing_variables_like_flax():
    def run(lib, np_):
        m = lib.Linear(2, 3, rngs=lib.Rngs(0))
        seen = []

        @lib.jit(graph=True, graph_updates=True)
        def f(cached_m, m):
            seen.append((cached_m is not m, cached_m.kernel is m.kernel))
            return cached_m

        cached_f = lib.compat.cached_partial(f, m)
        out1 = cached_f(m)
        out2 = cached_f(m)
        return seen[0], out1 is not m, out1.kernel is m.kernel, out1 is out2

    assert run(nnx, jnp) == run(fnnx, jjnp) == ((True, True), True, True, True)


@pytest.mark.slow  # two jit compiles per side
def test_optimizer_over_plain_array_attributes_like_flax():
    def run(lib, jx, np_, tx):
        class Model(lib.Module):
            def __init__(self, rngs):
                self.w = jx.random.uniform(rngs(), (2, 4))
                self.count = np_.array(0)

            def __call__(self, x):
                self.count += 1
                return x @ self.w

        wrt = lambda path, x: path[-1] == "w"  # noqa: E731
        model = Model(lib.Rngs(1))
        optimizer = lib.Optimizer(model, tx=tx, wrt=wrt)
        x, y = jx.random.normal(jx.random.key(0), (5, 2)), np_.ones((5, 4))

        @jx.jit
        def step(model, optimizer):
            graphdef, params, rest = lib.split(model, wrt, ...)

            def loss_fn(params):
                m = lib.merge(graphdef, params, rest)
                return np_.mean((m(x) - y) ** 2), lib.state(m, lib.Not(wrt))

            (loss, updates), grads = jx.value_and_grad(loss_fn, has_aux=True)(params)
            lib.update(model, updates)
            optimizer.update(model, grads)
            return loss, model, optimizer

        loss, model, optimizer = step(model, optimizer)
        return float(loss), int(model.count[...]), int(optimizer.step[...]), np.asarray(model.w)

    ours = run(nnx, fluxion, jnp, fluxion_optim.adam(1e-3))
    theirs = run(fnnx, jax, jjnp, optax.adam(1e-3))
    assert ours[1:3] == theirs[1:3] == (1, 1)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5)
    np.testing.assert_allclose(ours[3], theirs[3], rtol=1e-5)


@pytest.mark.parametrize("lib,jx,np_", SIDES)
def test_prefix_of_a_lone_variable_as_vmap_axes(lib, jx, np_):
    v = lib.Param(np_.arange(24.0, dtype=np_.float32).reshape(4, 2, 3))
    axes = lib.prefix(v, {lib.Param: 0}, graph=True)

    @lib.vmap(in_axes=(axes, None), out_axes=0, graph=True, graph_updates=False)
    def forward(v, x):
        return x @ v

    y = forward(v, np_.ones((2,), np_.float32))
    assert y.shape == (4, 3) and y.dtype == np.float32
    np.testing.assert_allclose(np.asarray(y), np.arange(24.0).reshape(4, 2, 3).sum(1))


@pytest.mark.parametrize("lib,jx,np_", SIDES)
def test_scan_over_captures_in_tree_mode(lib, jx, np_):
    class Carry(lib.Pytree):
        def __init__(self, data):
            self.data = data

    class Model(lib.Module):
        def step(self, state):
            state.data = state.data + 1
            self.sow(lib.Intermediate, "data", state.data)
            return state

        @lib.jit(graph=False, graph_updates=False)
        def __call__(self, state):
            axes = lib.prefix(self, {lib.Intermediate: 0, ...: None}, graph=False)
            return lib.scan(Model.step, in_axes=(axes, lib.Carry), out_axes=lib.Carry, length=3,
                            graph=False, graph_updates=False)(self, state)

    out, inter = lib.capture(Model(), lib.Intermediate)(Carry(np_.array(0.0)))
    assert float(out.data) == 3.0
    np.testing.assert_array_equal(np.asarray(inter["data"][0]), [1.0, 2.0, 3.0])

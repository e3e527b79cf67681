"""Hijax Variables (fluxion_nn.hijax) against flax.nnx's on real jax: the same programs on both
sides (eager, jit arguments, contents changing structure, scan closures, grad, nnx.jit), the
same values, types and dtypes."""

from __future__ import annotations

from typing import Any

import flax.nnx as fnnx
import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import fluxion
import fluxion.numpy as fjnp
import fluxion_nn as nnx
from fluxion_nn.hijax import AbstractVariable, HijaxVariable

OURS = (fluxion, fjnp, nnx)
THEIRS = (jax, jjnp, fnnx)
SIDES = pytest.mark.parametrize("side", [OURS, THEIRS], ids=["fluxion", "flax"])


def _same(ours: Any, theirs: Any) -> None:
    lo, lt = fluxion.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(lo) == len(lt)
    for a, b in zip(lo, lt):
        a, b = np.asarray(a), np.asarray(b)
        np.testing.assert_allclose(a, b, rtol=1e-6)
        assert a.dtype == b.dtype and a.shape == b.shape


def _both(program: Any) -> None:
    _same(program(*OURS), program(*THEIRS))


def _hijax_cls(nx: Any) -> type:
    return nx.variablelib.HijaxVariable


def test_jit_argument_is_updated_in_place():
    def program(jx, jnp, nx):
        v = nx.Param(jnp.array(1.0), a="hi", hijax=True)
        assert type(v) is _hijax_cls(nx) and isinstance(v, nx.Param) and v.hijax

        @jx.jit
        def step(v, x):
            assert isinstance(v, nx.Param) and v.a == "hi"
            v[...] = x
            v[...] += 5
            return v + 2

        y1 = step(v, 10.0)
        y2 = step(v, 1.0)
        low = nx.with_vars(v, hijax=False)
        assert not low.hijax and isinstance(low, nx.Param)
        return y1, y2, v[...], low[...]

    _both(program)


def test_contents_change_structure_inside_jit():
    def program(jx, jnp, nx):
        metrics = nx.Variable({}, hijax=True)
        counts = nx.Variable({"a": jnp.array(0), "b": jnp.array(2)}, hijax=True)

        @jx.jit
        def f(x, metrics, counts):
            metrics["x_sum"] = jnp.sum(x)
            counts["a"] += 1
            counts["b"] *= 2

        f(jnp.ones((4, 5)), metrics, counts)
        assert sorted(metrics.get_value()) == ["x_sum"]
        return metrics["x_sum"], counts["a"], counts["b"]

    _both(program)


def test_scan_body_closure_and_eval_shape():
    def program(jx, jnp, nx):
        v = nx.Variable(jnp.array(3.0), hijax=True)

        def body(c, x):
            v[...] = v[...] + x
            return c + v[...], None

        c, _ = jx.lax.scan(body, jnp.float32(0), jnp.arange(4.0))
        w = nx.Param(jnp.array(0), hijax=True)

        def g(w):
            w[...] += 1
            return w[...]

        s = jx.eval_shape(g, w)
        assert s.shape == () and w[...] == 0
        return c, v[...]

    _both(program)


def test_grad_with_a_non_differentiated_hijax_variable():
    def program(jx, jnp, nx):
        v = nx.Variable(jnp.array(2.0), hijax=True)

        def loss(x, v):
            v[...] = jx.lax.stop_gradient(x * 2)
            return x ** 2 + v[...]

        g = jx.grad(loss)(jnp.array(3.0), v)
        return g, v[...]

    _both(program)


@pytest.mark.parametrize("hijax", [True, False])
@pytest.mark.parametrize("ref", [True, False])
@SIDES
def test_modes_from_constructor_copy_with_vars_and_metadata(side, hijax, ref):
    jx, jnp, nx = side
    made = [nx.Variable(jnp.array(1), hijax=hijax, ref=ref),
            nx.Variable(jnp.array(1)).copy(hijax=hijax, ref=ref),
            nx.with_vars(nx.Variable(jnp.array(1)), hijax=hijax, ref=ref)]
    for v in made:
        assert (v.hijax, v.ref) == (hijax, ref)
        assert isinstance(v, _hijax_cls(nx)) == hijax
        assert isinstance(v.get_raw_value(), jx.Ref) == ref
        assert int(v[...]) == 1
    meta = {"a": "hi", "hijax": hijax, "ref": False}
    p = nx.Param.from_metadata(1, meta)
    assert isinstance(p, nx.Param) and p.hijax == hijax and isinstance(p, _hijax_cls(nx)) == hijax


@SIDES
def test_var_defaults_and_rngs(side):
    jx, jnp, nx = side
    with nx.var_defaults(hijax=True):
        v = nx.Param(1, a="hi")
        rngs = nx.Rngs(0)
    assert type(v) is _hijax_cls(nx) and v.hijax and v.a == "hi"
    assert type(rngs.default.count) is _hijax_cls(nx)
    f = jx.jit(lambda r: r())
    k1, k2 = f(rngs), f(rngs)
    assert bool(jnp.any(jx.random.key_data(k1) != jx.random.key_data(k2)))
    assert not nx.Param(1).hijax


def test_nnx_jit_without_graph_updates_writes_the_value_back():
    def program(jx, jnp, nx):
        v = nx.Variable(jnp.array(1.0), hijax=True)

        @nx.jit(graph=True, graph_updates=False)
        def f(v, v2):
            assert v is v2
            v[...] += 1.0
            return v[...] * 2

        return f(v, v), f(v, v), v[...]

    _both(program)


def test_module_state_as_hijax_variables():
    def program(jx, jnp, nx):
        class Foo(nx.Pytree):
            def __init__(self):
                self.w = nx.Param(jnp.ones((2, 4)))
                self.count = nx.Variable(0)

        foo = nx.with_vars(Foo(), hijax=True)
        assert foo.w.hijax and isinstance(foo.w, nx.Param)

        @jx.jit
        def forward(foo, x):
            foo.count[...] += 1
            return x @ foo.w

        y = forward(foo, jnp.ones((1, 2)))
        forward(foo, jnp.ones((1, 2)))
        return y, foo.count[...]

    _both(program)


def test_typeof_is_the_abstract_variable():
    v = nnx.Param(fjnp.float32(1), hijax=True)
    assert fluxion.typeof(v) == AbstractVariable(nnx.Param, False)
    assert fluxion.experimental.cur_qdd(v).leaf_avals == (fluxion.typeof(fjnp.float32(1)),)
    assert isinstance(v, HijaxVariable) and not isinstance(nnx.Param(1), HijaxVariable)


@pytest.mark.slow  # 30 s under load ~16: BatchNorm under jit(grad) on both sides
def test_statistics_written_inside_a_grad_of_the_parameters_store_their_value():
    # flax's integration test: a hijax BatchNorm after a Linear, the Params differentiated in
    # jit(grad(merge(...))): the running mean depends on them and is stored as a value
    def program(jx, jnp, nx):
        class M(nx.Module):
            def __init__(self, rngs):
                self.lin = nx.Linear(3, 3, rngs=rngs)
                self.bn = nx.BatchNorm(3, use_running_average=False, rngs=rngs)

            def __call__(self, x):
                return self.bn(self.lin(x))

        with nx.var_defaults(hijax=True):
            m0 = M(nx.Rngs(0))
        m0.lin.kernel[...] = jnp.eye(3) + 0.5
        graphdef, params, nondiff = nx.split(m0, nx.Param, ...)

        @jx.jit
        def step(x):
            def loss(p):
                return nx.merge(graphdef, p, nondiff)(x).sum() ** 2

            return jx.grad(loss)(nx.with_vars(params, hijax=False))

        grads = step(jnp.arange(6.0).reshape(2, 3))
        return grads["lin"]["kernel"][...], m0.bn.mean[...]

    _both(program)

"""nnx.custom_vjp (graph mode with graph updates; graph_updates=False; tree mode), the lifted
transforms' prefix / aliasing errors and nnx.scan's axes checks and tuple out_axes, each compared
with real flax.nnx on the same programs."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
import fluxion_nn as nnx
from fluxion_nn.transforms import custom_vjp

fnnx = pytest.importorskip("flax.nnx")
jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")

LIBS = [(nnx, jnp, fluxion, custom_vjp), (fnnx, jjnp, jax, fnnx.custom_vjp)]


def _foo(lib, np_):
    class Foo(lib.Module):
        def __init__(self, x, y, z):
            self.x = lib.Param(np_.asarray(x))
            self.y = lib.Param(np_.asarray(y))
            self.z = lib.BatchStat(np_.asarray(z))
            self.count = 0

    return Foo(1.0, 2.0, 0.5)


def _graph_updates_run(lib, np_, cv):
    @cv(graph=True, graph_updates=True)
    def f(m):
        m.count += 1
        m.z[...] = m.z[...] * 2.0
        return np_.sin(m.x[...]) * m.y[...]

    def f_fwd(m):
        return f(m), (np_.cos(m.x[...]), np_.sin(m.x[...]), m)

    def f_bwd(res, g):
        (m_g,), out_g = g
        cos_x, sin_x, m = res
        assert isinstance(m_g, lib.State)
        m_g["x"][...] = 3.0 * cos_x * out_g * m.y[...]  # not the true derivative: the rule is used
        m_g["y"][...] = sin_x * out_g
        return (m_g,)

    f.defvjp(f_fwd, f_bwd)
    m = _foo(lib, np_)
    grads = lib.grad(f, argnums=lib.DiffState(0, lib.Param), graph=True, graph_updates=True)(m)
    return (float(grads["x"][...]), float(grads["y"][...]), m.count, float(m.z[...]))


def _functional_run(lib, np_, cv, graph):
    @cv(graph=graph, graph_updates=False)
    def f(m):
        m.z[...] = m.z[...] + 1.0
        return np_.sin(m.x[...]) * m.y[...]

    def f_fwd(m):
        return f(m), (np_.cos(m.x[...]), m)

    def f_bwd(res, g, updates_g):
        cos_x, m = res
        (m_up,) = updates_g
        assert m_up.x is None and isinstance(m_up.z, lib.Variable)
        m_g = lib.clone(m)
        m_g.x[...] = 5.0 * cos_x * g
        m_g.y[...] = np_.zeros_like(m.y[...])
        m_g.z[...] = np_.zeros_like(m.z[...])
        return (m_g,)

    f.defvjp(f_fwd, f_bwd)
    m = _foo(lib, np_)
    out = f(m)  # a plain call writes the update back
    z_after_call = float(m.z[...])
    grads = lib.grad(lambda m: f(m), graph=graph, graph_updates=False)(m)
    return float(out), z_after_call, type(grads).__name__, float(grads.x[...]), float(grads.y[...])


def test_custom_vjp_graph_updates_matches_flax():
    ours, ref = (_graph_updates_run(*lib[:2], lib[3]) for lib in LIBS)
    np.testing.assert_allclose(ours, ref, rtol=1e-6)
    assert ours[0] == pytest.approx(3.0 * np.cos(1.0) * 2.0, rel=1e-6)


@pytest.mark.parametrize("graph", [True, False])
def test_custom_vjp_functional_matches_flax(graph):
    ours, ref = (_functional_run(*lib[:2], lib[3], graph) for lib in LIBS)
    assert ours[2] == ref[2] == "Foo"
    np.testing.assert_allclose(ours[:2] + ours[3:], ref[:2] + ref[3:], rtol=1e-6)


def test_custom_vjp_arrays_under_jit_match_flax():
    outs = []
    for lib, np_, jx, cv in LIBS:
        @cv
        def f(x, y):
            return np_.sin(x) * y

        f.defvjp(lambda x, y: (f(x, y), (np_.cos(x), np_.sin(x), y)),
                 lambda res, g: (res[0] * g[1] * res[2] * 2.0, res[1] * g[1]))  # (inputs_g, out_g)
        g = lib.jit(jx.grad(lambda x, y: f(x, y).sum(), argnums=(0, 1)))(
            np_.array([1.0, 2.0]), np_.array([3.0, 4.0]))
        assert g[0].dtype == np_.float32 and g[0].shape == (2,)
        outs.append([np.asarray(a) for a in g])
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-6)


def test_custom_vjp_errors_match_flax():
    for lib, np_, _, cv in LIBS:
        with pytest.raises(ValueError, match="`nondiff_argnums` cannot contain `DiffState` objects"):
            cv(lambda m: m, nondiff_argnums=(lib.DiffState(0, ...),), graph=False)
        v = lib.Param(np_.array(1.0))

        @cv(nondiff_argnums=(1,), graph=True, graph_updates=False)
        def f(a, b):
            return a[...] + b[...]

        f.defvjp(lambda a, b: (f(a, b), ()), lambda b, res, g: (g,))
        with pytest.raises(ValueError, match="Duplicate"):
            f(v, v)
        with pytest.raises(ValueError, match="Inconsistent aliasing"):
            lib.grad(lambda a, b: a[...] + b[...], argnums=0, graph=True,
                     graph_updates=False)(v, v)
        m = lib.Linear(1, 1, rngs=lib.Rngs(0))
        with pytest.raises(ValueError, match="bound method"):
            cv(m.__call__)


def test_prefix_and_aliasing_errors_match_flax():
    for lib, np_, _, _ in LIBS:
        m = lib.Dict(a=lib.Param(1))
        with pytest.raises(ValueError, match="Graph nodes are not allowed as prefixes"):
            lib.vmap(lambda x: x, in_axes=m, graph=True, graph_updates=True)
        with pytest.raises(ValueError, match="cannot contain `StateAxes` objects"):
            lib.vmap(lambda x: x, in_axes=lib.StateAxes({...: 0}), graph=False)
        with pytest.raises(ValueError, match="cannot contain `DiffState` objects"):
            lib.grad(lambda x: x, argnums=lib.DiffState(0, ...), graph=False)
        with pytest.raises(ValueError, match="Variables prefixes are not supported"):
            lib.vmap(lambda v: v, in_axes=(lib.Variable(0),), graph=False)
        v = lib.Param(np_.array(1.0))
        with pytest.raises(ValueError, match="does not support Variable aliasing"):
            lib.jit(lambda v: v, graph=False)(v)
        with pytest.raises(ValueError):
            lib.eval_shape(lambda a, b: None, v, v, graph=True, graph_updates=False)


def test_vmap_inconsistent_aliasing_message_matches_flax():
    for lib, np_, _, _ in LIBS:
        class Shared(lib.Module):
            def __init__(self):
                self.a = lib.Param(np_.zeros((3, 3)))

        class Foo(lib.Module):
            def __init__(self, shared):
                self.a = shared

        shared = Shared()
        f = lib.vmap(lambda m1, m2: None, in_axes=(0, 1), graph=True, graph_updates=True)
        with pytest.raises(ValueError, match=r"Inconsistent aliasing detected[\s\S]*Param[\s\S]*a: 0"
                                             r"[\s\S]*a: 1"):
            f(Foo(shared), Foo(shared))


def test_scan_axes_validation_and_tuple_out_axes_match_flax():
    for lib, np_, _, _ in LIBS:
        with pytest.raises(ValueError, match="Found multiple Carry definitions"):
            lib.scan(lambda a, b: a, in_axes=(lib.Carry, lib.Carry))
        with pytest.raises(ValueError, match="If one of in_axes or out_axes has Carry"):
            lib.scan(lambda a, b: a, in_axes=0, out_axes=(lib.Carry, 0))
        with pytest.raises(ValueError, match="Cannot broadcast output state"):
            lib.scan(lambda a, b: a, in_axes=(lib.Carry, 0), out_axes=(lib.Carry, None))
        with pytest.raises(ValueError):
            lib.scan(lambda x: x, in_axes=({"a": lib.Carry},), out_axes=lib.Carry, graph=False)
        f = lib.scan(lambda c, x: (c + x.sum(), x * 2.0, x + 1.0), in_axes=(lib.Carry, 1),
                     out_axes=(lib.Carry, 1, 0))
        c, y1, y2 = f(np_.array(0.0), np_.arange(6.0).reshape(2, 3))
        assert y1.shape == (2, 3) and y2.shape == (3, 2) and y1.dtype == np_.float32
        np.testing.assert_allclose(float(c), 15.0)
        np.testing.assert_allclose(np.asarray(y1), 2.0 * np.arange(6.0).reshape(2, 3))


def test_jit_static_argnames_positional_lower_compile_match_flax():
    for lib, np_, jx, _ in LIBS:
        class Foo(lib.Module):
            def __init__(self):
                self.count = lib.Variable(np_.array(0))

        def fn(m, x, use_relu):
            m.count[...] += 1
            return np_.maximum(x, 0.0).sum() if use_relu else x.sum()

        mesh = jx.sharding.Mesh(np.array(jx.devices()[:1]), ("d",))
        sh = jx.sharding.NamedSharding(mesh, jx.sharding.PartitionSpec())
        f = lib.jit(fn, in_shardings=(None, sh), static_argnames=("use_relu",))
        m, x = Foo(), np_.array([-1.0, 2.0])
        assert float(f(m, x, True)) == 2.0 and float(f(m, x, False)) == 1.0
        g = lib.jit(lambda m, x: fn(m, x, True))
        compiled = g.lower(m, x).compile()
        assert compiled.as_text() is not None
        assert float(compiled(m, x)) == 2.0 and int(m.count[...]) == 3


def test_while_loop_rejects_replaced_variables_like_flax():
    for lib, np_, _, _ in LIBS:
        def body(state):
            m, c = state
            m.kernel = lib.Param(np_.zeros_like(m.kernel[...]))
            return m, c - 1.0

        module = lib.Linear(2, 2, rngs=lib.Rngs(0))
        with pytest.raises(ValueError):
            lib.while_loop(lambda s: s[-1] > 0, body, (module, 2.0))


def test_grad_of_state_argument_differentiates_all_its_variables_like_flax():
    for lib, np_, _, _ in LIBS:
        m = lib.Dict(a=lib.List([lib.Param(np_.array(10.0)), lib.BatchStat(np_.array(20.0))]),
                     b=lib.Param(np_.array(10.0)))
        graphdef, batch_stats, rest = lib.split(m, lib.BatchStat, ...)

        def f(batch_stats, rest):
            inner = lib.merge(graphdef, batch_stats, rest)
            return inner.a[0][...] + inner.a[1][...] + inner.b[...]

        grads = lib.grad(f)(batch_stats, rest)
        assert isinstance(grads, lib.State) and len(grads) == 1
        assert float(grads["a"][1][...]) == 1.0 and issubclass(type(grads["a"][1]), lib.BatchStat)

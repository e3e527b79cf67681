"""Graph contexts (``split_context`` / ``merge_context`` / ``update_context``) and ``to_tree`` /
``from_tree`` checked side by side with flax.nnx: shared references across calls, the caller's
objects updated in place after a jitted function changed their structure, aliasing checks."""

from __future__ import annotations

from collections import namedtuple

import jax
import numpy as np
import pytest
from flax import nnx as fnnx

import fluxion
import fluxion.numpy as jnp
import fluxion_nn as nnx

LIBS = [(nnx, fluxion, jnp), (fnnx, jax, jax.numpy)]


@pytest.mark.parametrize("lib,jx,np_", LIBS)
def test_split_and_merge_contexts_share_references(lib, jx, np_):
    m = lib.Linear(2, 3, rngs=lib.Rngs(0))
    with lib.graphlib.split_context() as ctx:
        gd1, st1 = ctx.split(m)
        gd2, st2 = ctx.split(m)
    assert isinstance(gd1.nodes[0], lib.graphlib.NodeDef)
    assert isinstance(gd2.nodes[0], lib.graphlib.NodeRef)
    assert len(lib.to_flat_state(st1)) == 2 and len(lib.to_flat_state(st2)) == 0
    with lib.graphlib.merge_context() as ctx:
        m1, m2 = ctx.merge(gd1, st1), ctx.merge(gd2, st2)
    assert m1 is m2 and m1 is not m
    np.testing.assert_array_equal(np.asarray(m1.kernel[...]), np.asarray(m.kernel[...]))


@pytest.mark.parametrize("lib,jx,np_", LIBS)
def test_update_context_carries_structure_changes_back_through_jit(lib, jx, np_):
    class Bar(lib.Module):
        def __init__(self):
            self.x = 1

    class Foo(lib.Module):
        def __init__(self):
            self.a = lib.Param(np_.ones((2,)))
            self.b = lib.data(2)
            self.bar = Bar()
            self.alias = self.bar

    m = Foo()
    with lib.update_context("t"):
        with lib.split_context("t") as ctx:
            pure = ctx.split(m)

        @jx.jit
        def f(gd, st):
            with lib.merge_context("t", True) as ctx:
                inner = ctx.merge(gd, st)
            inner.a, inner.b = inner.b, inner.a  # swap a data value and a Param
            inner.bar.y = 3                      # a new static attribute
            inner.extra = Bar()                  # a new submodule
            with lib.split_context("t") as ctx:
                return ctx.split(inner)

        gd, st = f(*pure)
        with lib.merge_context("t", False) as ctx:
            out = ctx.merge(gd, st)
    assert out is m and m.alias is m.bar and m.bar.y == 3 and m.extra.x == 1
    assert int(m.a) == 2 and isinstance(m.b, lib.Param)
    np.testing.assert_array_equal(np.asarray(m.b[...]), np.ones(2))
    assert m.b[...].dtype == np.float32 and m.b[...].shape == (2,)


@pytest.mark.parametrize("lib,jx,np_", LIBS)
def test_to_tree_from_tree_and_aliasing_check(lib, jx, np_):
    m = lib.Linear(2, 3, rngs=lib.Rngs(0))
    pure = lib.to_tree((m, 1, {"b": m}))
    assert pure[1] == 1 and isinstance(pure[0], lib.NodeStates)
    assert isinstance(pure[2]["b"].graphdef.nodes[0], lib.graphlib.NodeRef)
    back = lib.from_tree(pure)
    assert back[0] is back[2]["b"] and back[1] == 1
    assert jx.tree.structure(lib.NodeStates.from_prefixes((None, 0))).num_leaves == 1
    lib.to_tree((m, 1, {"b": m}), prefix=(0, None, 0))
    with pytest.raises(ValueError, match="Inconsistent aliasing detected"):
        lib.to_tree((m, 1, {"b": m}), prefix=(0, None, 1))
    assert lib.extract.clear_non_graph_nodes((m, 3)) == (m, None)


@pytest.mark.parametrize("lib,jx,np_", LIBS)
def test_to_tree_with_prefixes_through_vmap(lib, jx, np_):
    class Foo(lib.Module):
        def __init__(self, a, b):
            self.a, self.b = lib.Param(a), lib.BatchStat(b)

    class Axes:  # a prefix leaf (not a pytree): params not batched, batch stats on axis 0
        pass

    def split_fn(ctx, path, prefix, x):
        if isinstance(prefix, Axes):
            return lib.NodeStates.from_split(*ctx.split(x, lib.Param, lib.BatchStat))
        return lib.NodeStates.from_split(*ctx.split(x))

    with lib.update_context("v"):
        m1, m2 = Foo(np_.array(0), np_.arange(5)), Foo(np_.array(1), np_.array(2))
        ax = Axes()  # one prefix object for the shared module (two would be inconsistent)
        in_axes = (ax, None, {"b": ax})
        vmap_axes = (lib.NodeStates.from_prefixes((None, 0)), None,
                     {"b": lib.NodeStates.from_prefixes((None, 0))})
        pure = lib.to_tree((m1, m2, {"b": m1}), ctxtag="v", prefix=in_axes, split_fn=split_fn)

        def f(*pure_args):
            args = lib.from_tree(pure_args, ctxtag="v", is_inner=True)
            assert args[0] is args[2]["b"]
            y = args[0].a + args[0].b + args[1].a + args[1].b
            out = lib.extract.clear_non_graph_nodes(args)
            return lib.to_tree((out, y), prefix=(in_axes, 0), ctxtag="v", split_fn=split_fn)

        pure_out, y = jx.vmap(f, in_axes=vmap_axes, out_axes=(vmap_axes, 0))(*pure)
        args_out, y = lib.from_tree((pure_out, y), ctxtag="v", is_inner=False)
    assert args_out[0] is m1 and args_out[2]["b"] is m1 and args_out[1] is m2
    np.testing.assert_array_equal(np.asarray(y), np.arange(5) + 3)
    assert y.shape == (5,)


@pytest.mark.parametrize("lib,jx,np_", LIBS)
def test_flatten_with_outer_indices_updates_the_callers_objects(lib, jx, np_):
    class Foo(lib.Module):
        def __init__(self):
            self.a = lib.Param(np_.zeros(2))
            self.b = lib.Linear(2, 2, rngs=lib.Rngs(0))

    m = Foo()
    a, b = m.a, m.b
    outer = lib.graphlib.RefMap()
    gd, st = lib.graphlib.flatten(m, ref_index=outer, graph=True)

    def f(gd, st):
        built = lib.graphlib.IndexMap()
        inner = lib.graphlib.unflatten(gd, st, index_ref=built)
        inner.c, inner.b = inner.b, lib.Linear(2, 3, rngs=lib.Rngs(1))  # move b, add a new one
        inner.a[...] += 1
        gd, st = lib.graphlib.flatten(
            inner, ref_outer_index=lib.graphlib.RefMap.from_indexmap(built), graph=True)
        return st.to_nested_state(), gd

    st_out, gd_out = jx.jit(f, static_argnums=0)(gd, st.to_nested_state())
    m2 = lib.graphlib.unflatten(gd_out, st_out,
                                outer_index_outer_ref=lib.graphlib.IndexMap.from_refmap(outer))
    assert m2 is m and m.a is a and m.c is b and m.b.kernel.shape == (2, 3)
    np.testing.assert_array_equal(np.asarray(m.a[...]), np.ones(2, np.float32))


@pytest.mark.parametrize("lib,jx,np_", LIBS)
def test_tree_mode_flatten_is_jax_leaves_sorted_by_path(lib, jx, np_):
    Point = namedtuple("Point", ["y", "x"])
    g = {"b": [lib.Param(np_.array(1)), np_.array(2)], "a": (lib.Param(np_.array(3)), 4),
         "p": Point(y=lib.Param(np_.array(5.0)), x=np_.zeros(2))}
    gd, flat = lib.graphlib.flatten(g, graph=False)
    assert [p for p, _ in flat] == [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("p", "x"), ("p", "y")]
    assert flat[1][1] == 4 and isinstance(flat[0][1], lib.Param)
    back = lib.graphlib.unflatten(gd, flat)
    assert type(back["p"]) is Point and back["a"][1] == 4 and isinstance(back["b"][0], lib.Param)
    assert back["p"].x.shape == (2,) and back["p"].x.dtype == np.float32
    assert [p for p, _ in gd.nodes[0].path_index] == sorted(p for p, _ in flat)
    m = lib.Linear(2, 3, rngs=lib.Rngs(0))
    gd, st = lib.split(m, graph=False)
    paths = [p for p, _ in gd.nodes[0].path_index]
    assert paths == sorted(paths)

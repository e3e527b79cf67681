"""Bare mutable references (``fluxion.Ref``) as graph nodes, and graph contexts' NoUpdate /
ArrayRefOutput leaves, vs flax.nnx (``jax.Ref``)."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from _compare import platform_tol
from flax import nnx as fnnx

import fluxion
import fluxion.numpy as jnp
import fluxion_nn as nnx

SIDES = [(nnx, fluxion, jnp), (fnnx, jax, jjnp)]


def _shared_ref_module(lib, jx, np_):
    class Foo(lib.Module):
        def __init__(self):
            self.a = jx.new_ref(np_.array(1))
            self.b = self.a

    return Foo()


@pytest.mark.parametrize("lib,jx,np_", SIDES)
def test_bare_ref_is_a_shared_node(lib, jx, np_):
    m = _shared_ref_module(lib, jx, np_)
    ref_map = lib.graphlib.RefMap()
    graphdef, state = lib.graphlib.flatten(m, ref_index=ref_map, graph=True)
    assert len(state) == 1 and len(ref_map) == 2  # the module and the reference
    assert [p for p, _ in state] == [("a",)]
    m1 = lib.merge(graphdef, state)
    assert m1.a is m1.b and isinstance(m1.a, jx.Ref)
    assert m1.a is m.a  # merge keeps the reference itself
    frozen = lib.with_vars(state, hijax=False)
    m2 = lib.merge(graphdef, frozen)
    assert m2.a is m2.b and isinstance(m2.a, jx.Ref)
    lone = jx.new_ref(np_.array(1.0))
    gd, st = lib.split(lone)
    assert st is lone and lib.merge(gd, st) is lone
    with pytest.raises(ValueError):
        lib.split([lone, lone], graph=False)  # tree mode: a shared reference


@pytest.mark.parametrize("lib,jx,np_", SIDES)
@pytest.mark.parametrize("shared", [True, False])
def test_ref_variable_references_are_indexed(lib, jx, np_, shared):
    class Foo(lib.Module):
        def __init__(self):
            self.a = lib.Param(1, ref=True)
            self.b = self.a if shared else lib.Param(1, ref=True)

    m = Foo()
    ref_map = lib.graphlib.RefMap()
    graphdef, state = lib.graphlib.flatten(m, ref_index=ref_map, graph=True)
    # the module, each Param and each Param's reference
    assert (len(state), len(ref_map)) == ((1, 3) if shared else (2, 5))
    m1 = lib.merge(graphdef, state)
    assert isinstance(m1.a, lib.Param) and (m1.a is m1.b) == shared


def _update_context_round(lib, jx, with_flatten):
    m1 = lib.with_vars(lib.Linear(1, 1, rngs=lib.Rngs(0)), ref=True)
    with lib.update_context("t"):
        with lib.split_context("t") as ctx:
            gd, st = ctx.flatten(m1) if with_flatten else ctx.split(m1)
        with lib.merge_context("t", True) as ctx:
            m2 = ctx.merge(gd, st)
        m_out1 = lib.with_vars(lib.Linear(1, 1, rngs=lib.Rngs(0)), ref=True)
        with lib.split_context("t") as ctx:
            gd_out, st_out = (ctx.flatten if with_flatten else ctx.split)((m2, m_out1, m2))
        flat = dict(st_out) if with_flatten else dict(st_out.flat_state())
        kinds = {p: type(v.get_value()).__name__ for p, v in flat.items()}
        n_leaves = len(jx.tree.leaves(st_out))
        new_value = np.asarray(flat[(1, "kernel")].get_value().value)
        with lib.merge_context("t", False) as ctx:
            m3, m_out2, m4 = ctx.merge(gd_out, st_out)
    same_ref = m3.kernel.get_raw_value() is m1.kernel.get_raw_value()
    return (kinds, n_leaves, m3 is m1, m4 is m1, m_out2 is m_out1, same_ref,
            isinstance(m_out2.kernel.get_raw_value(), jx.Ref), new_value)


@pytest.mark.parametrize("with_flatten", [False, True])
def test_update_context_no_update_and_new_refs_like_flax(with_flatten):
    ours = _update_context_round(nnx, fluxion, with_flatten)
    theirs = _update_context_round(fnnx, jax, with_flatten)
    assert ours[0] == theirs[0] == {
        (0, "bias"): "NoUpdate", (0, "kernel"): "NoUpdate",
        (1, "bias"): "ArrayRefOutput", (1, "kernel"): "ArrayRefOutput"}
    # NoUpdate has no leaves; each ArrayRefOutput one (its value)
    assert ours[1:7] == theirs[1:7] == (2, True, True, False, True, True)
    np.testing.assert_allclose(ours[7], theirs[7], **platform_tol(1e-7))  # a TPU's initializer
    assert ours[7].dtype == theirs[7].dtype and ours[7].shape == theirs[7].shape


@pytest.mark.parametrize("lib,jx,np_", SIDES)
def test_to_tree_from_tree_in_update_context(lib, jx, np_):
    m1 = lib.with_vars(lib.Linear(1, 1, rngs=lib.Rngs(0)), ref=True)
    with lib.update_context("t"):
        (m2,) = lib.from_tree(lib.to_tree((m1,), ctxtag="t"), ctxtag="t", is_inner=True)
        m_out1 = lib.with_vars(lib.Linear(1, 1, rngs=lib.Rngs(0)), ref=True)
        out_tree = lib.to_tree(((m2,), m_out1, m2), ctxtag="t")
        assert isinstance(out_tree[0][0].states[0]["kernel"].get_value(), lib.graphlib.NoUpdate)
        assert isinstance(out_tree[1].states[0]["kernel"].get_value(),
                          lib.graphlib.ArrayRefOutput)
        assert len(out_tree[2].states[0]) == 0 and len(jx.tree.leaves(out_tree)) == 2
        (m3,), m_out2, _ = lib.from_tree(out_tree, ctxtag="t", is_inner=False)
    assert m3 is m1 and m_out2 is not m_out1


@pytest.mark.parametrize("lib,jx,np_", SIDES)
def test_flat_state_is_a_pytree(lib, jx, np_):
    _, flat = lib.graph.flatten(lib.Linear(1, 2, rngs=lib.Rngs(0)))
    leaves = jx.tree.leaves(flat)
    assert [tuple(x.shape) for x in leaves] == [(2,), (1, 2)]
    doubled = jx.tree.map(lambda x: x * 2, flat)
    assert type(doubled).__name__ == "FlatState" and doubled.paths == flat.paths


@pytest.mark.parametrize("lib,jx,np_", SIDES)
def test_nnx_jit_returns_an_input_ref_as_itself(lib, jx, np_):
    r = jx.new_ref(np_.array(1.0))

    @lib.jit(graph=True, graph_updates=True)
    def f(r):
        r[...] += 1.0
        return jx.new_ref(np_.array(10.0)), r

    new, out = f(r)
    assert out is r and float(r[...]) == 2.0
    assert isinstance(new, jx.Ref) and float(new[...]) == 10.0

"""Ref-mode Variables (``Variable(ref=True)``, ``copy(ref=...)``) and ``with_vars`` vs flax.nnx."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from flax import nnx as fnnx

import fluxion
import fluxion.numpy as jnp
import fluxion_nn as nnx


def _kinds(vs, ref_type):
    return [isinstance(v.get_raw_value(), ref_type) for v in vs]


def test_ref_variables_like_flax():
    ours = nnx.Variable(jnp.array(1), ref=True)
    theirs = fnnx.Variable(jjnp.array(1), ref=True)
    assert ours.ref and theirs.ref
    assert isinstance(ours.get_raw_value(), fluxion.Ref)
    assert isinstance(theirs.get_raw_value(), jax.Ref)
    ours[...] = 5
    theirs[...] = 5
    assert int(ours[...]) == int(theirs[...]) == 5
    for ref in (True, False):
        o = nnx.Variable(jnp.array(1)).copy(ref=ref)
        t = fnnx.Variable(jjnp.array(1)).copy(ref=ref)
        assert _kinds([o], fluxion.Ref) == _kinds([t], jax.Ref) == [ref]
    copied = ours.copy()
    copied[...] = 7  # a copy gets its own reference
    assert int(ours[...]) == 5 and int(copied[...]) == 7
    with pytest.raises(ValueError, match="Cannot pass a Ref directly"):
        nnx.Variable(fluxion.new_ref(1.0))
    with pytest.raises(ValueError, match="Cannot pass a Ref directly"):
        fnnx.Variable(jax.new_ref(1.0))


def test_with_vars_like_flax():
    ours = nnx.with_vars([nnx.Variable(1.0), nnx.Variable(2.0)], ref=True,
                         only=lambda path, x: path[0] == 0)
    theirs = fnnx.with_vars([fnnx.Variable(1.0), fnnx.Variable(2.0)], ref=True,
                            only=lambda path, x: path[0] == 0)
    assert _kinds(ours, fluxion.Ref) == _kinds(theirs, jax.Ref) == [True, False]
    back = nnx.with_vars(ours, ref=False)
    assert _kinds(back, fluxion.Ref) == [False, False] and float(back[0][...]) == 1.0
    shared = nnx.Variable(1.0)
    with pytest.raises(ValueError, match="Found duplicate at path"):
        nnx.with_vars([shared, shared], ref=True)
    fshared = fnnx.Variable(1.0)
    with pytest.raises(ValueError, match="Found duplicate at path"):
        fnnx.with_vars([fshared, fshared], ref=True)


def test_ref_variables_in_jit_like_flax():
    def make(lib, np_):
        class Params(lib.Pytree):
            def __init__(self):
                self.w = lib.Param(np_.ones((3, 4), np_.float32))
                self.count = lib.Variable(np_.array(0))
        return lib.with_vars(Params(), ref=True)

    def linear(params, x):
        params.count[...] += 1
        return x @ params.w[...]

    ours, theirs = make(nnx, jnp), make(fnnx, jjnp)
    o_paths = [(str(p), leaf.shape) for p, leaf in fluxion.tree.flatten_with_path(ours)[0]]
    t_paths = [(str(p), leaf.shape) for p, leaf in jax.tree.flatten_with_path(theirs)[0]]
    assert o_paths == t_paths
    for _ in range(2):
        o = fluxion.jit(linear)(ours, jnp.ones((1, 3)))
        t = jax.jit(linear)(theirs, jjnp.ones((1, 3)))
    np.testing.assert_allclose(np.asarray(o), np.asarray(t))
    assert int(ours.count[...]) == int(theirs.count[...]) == 2


def test_nnx_jit_keeps_references_like_flax():
    def run(lib, np_):
        m = lib.with_vars(lib.Linear(2, 3, rngs=lib.Rngs(0)), ref=True)
        raw = m.bias.get_raw_value()

        @lib.jit
        def step(m, x):
            m.bias[...] += 1.0
            return m(x)

        for _ in range(3):
            step(m, np_.ones((1, 2)))

        return (np.asarray(m.bias[...]), m.bias.get_raw_value() is raw,
                m.bias.get_raw_value().__class__.__name__)

    ours, theirs = run(nnx, jnp), run(fnnx, jjnp)
    np.testing.assert_allclose(ours[0], theirs[0])
    assert ours[1:] == theirs[1:] == (True, "Ref")

"""``fluxion.ds`` (JAX 0.10.2's ``jax.ds``) in array indexing against jax: a slice with a traced
start and a static size, alone or mixed with integers, slices, ``None``, ``...`` and index arrays,
in ``x[...]`` and ``x.at[...]`` (get/set/add/multiply), under jit, vmap and grad; the ``Slice``
class itself (repr, pytree, errors), which Pallas' ``pl.ds`` shares."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _compare import assert_same

import fluxion
import fluxion.numpy as fnp
from fluxion.experimental import pallas as pl

X = np.arange(60, dtype=np.float32).reshape(6, 10)

# (function of (lib, x, i), i): the same expression written with each library's ds
CASES = {
    "start": (lambda l, x, i: x[l.ds(i, 3)], 2),
    "int_then_ds": (lambda l, x, i: x[1, l.ds(i, 3)], 5),
    "ds_then_array": (lambda l, x, i: x[l.ds(i, 3), [1, 2]], 4),
    "array_then_ds_negative": (lambda l, x, i: x[[0, 2, 5], l.ds(i, 4)], -3),
    "newaxis_strided_slice": (lambda l, x, i: x[l.ds(i, 2), None, ::2], -1),
    "stride2": (lambda l, x, i: x[l.ds(i, 2, 2)], 1),
    "stride3_clamped": (lambda l, x, i: x[:, l.ds(i, 3, 3)], 5),
    "gather_out_of_bounds": (lambda l, x, i: x[[1], l.ds(i, 3)], 9),
    "gather_negative": (lambda l, x, i: x[[1], l.ds(i, 3)], -2),
    "gather_full_size": (lambda l, x, i: x[[1], l.ds(i, 10)], 3),
    "ellipsis": (lambda l, x, i: x[..., l.ds(i, 2)], 7),
    "set": (lambda l, x, i: x.at[l.ds(i, 2)].set(-1.0), 3),
    "add_out_of_bounds": (lambda l, x, i: x.at[:, l.ds(i, 2)].add(100.0), 9),
    "multiply_strided": (lambda l, x, i: x.at[2, l.ds(i, 4, 2)].multiply(2.0), 3),
    "get_fill": (lambda l, x, i: x.at[l.ds(i, 2)].get(mode="fill", fill_value=-5), 5),
    "get": (lambda l, x, i: x.at[l.ds(i, 2)].get(), 5),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_ds_index_like_jax(name):
    f, i = CASES[name]
    ours = fluxion.jit(lambda x, i: f(fluxion, x, i))(fnp.asarray(X), i)
    theirs = jax.jit(lambda x, i: f(jax, x, i))(jnp.asarray(X), i)
    assert_same(ours, theirs)


def test_ds_eager_static_and_concrete_starts():
    for f in (lambda l, n: n.asarray(X)[l.ds(2, 3)], lambda l, n: n.asarray(X)[l.ds(None)],
              lambda l, n: n.asarray(X)[l.ds(4)], lambda l, n: n.asarray(X)[l.ds(n.array(2), 2)],
              lambda l, n: n.asarray(X)[:, l.ds(np.int32(8), 2, 1)]):
        assert_same(f(fluxion, fnp), f(jax, jnp))


def test_ds_lowers_as_jax():
    """A lone ds is one dynamic_slice; mixed with an index array, one gather; updates scatter."""
    fs = (lambda l, x, i: x[l.ds(i, 3)], lambda l, x, i: x[[0, 1], l.ds(i, 3)],
          lambda l, x, i: x.at[1, l.ds(i, 3)].set(1.0))
    for f, prim in zip(fs, ("dynamic_slice", "gather", "scatter")):
        for lib in (fluxion, jax):
            eqns = lib.make_jaxpr(lambda x, i: f(lib, x, i))(X, 2).jaxpr.eqns
            assert prim in {e.primitive.name for e in eqns}


def test_ds_under_vmap_and_grad():
    for f in (lambda l: l.vmap(lambda r, i: r[l.ds(i, 3)]),
              lambda l: l.vmap(lambda r, i: r.at[l.ds(i, 3)].set(0.0))):
        assert_same(f(fluxion)(fnp.asarray(X), fnp.arange(6)), f(jax)(jnp.asarray(X), jnp.arange(6)))
    for f in (lambda l, x, i: (x[l.ds(i, 3), 1:3] ** 2).sum(),
              lambda l, x, i: (x[l.ds(i, 3, 2), 1] ** 2).sum()):
        ours = fluxion.jit(fluxion.grad(lambda x, i: f(fluxion, x, i)))(fnp.asarray(X), 1)
        theirs = jax.jit(jax.grad(lambda x, i: f(jax, x, i)))(jnp.asarray(X), 1)
        assert_same(ours, theirs)


def test_slice_class_pytree_and_errors():
    assert repr(fluxion.ds(1, 2)) == repr(jax.ds(1, 2)) == "Slice(start=1, size=2, stride=1)"
    assert repr(fluxion.ds(3)) == repr(jax.ds(3))
    assert fluxion.ds(None) == jax.ds(None) == slice(None)
    # a static start is pytree data, a traced-able (array) start a leaf, as jax
    leaves, tree = fluxion.tree_util.tree_flatten(fluxion.ds(1, 2))
    jleaves, _ = jax.tree_util.tree_flatten(jax.ds(1, 2))
    assert leaves == jleaves == []
    s = fluxion.jit(lambda x, s: x[s])(fnp.asarray(X), fluxion.ds(fnp.int32(2), 2))
    assert_same(s, jax.jit(lambda x, s: x[s])(jnp.asarray(X), jax.ds(jnp.int32(2), 2)))
    for lib in (fluxion, jax):
        with pytest.raises(ValueError, match="Non-static stride"):
            lib.ds(1, 2, 1.5)
        with pytest.raises(ValueError, match="must be >= 0"):
            lib.ds(1, 2, -1)
    # Pallas' ds is the same class
    assert pl.ds is fluxion.ds and isinstance(fluxion.ds(1, 2), pl.Slice)

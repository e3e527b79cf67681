"""Cached jit calls build their outputs with a caller generated per output structure (tuples,
lists, dicts, None): the same pytrees, dtypes and weak types as JAX's, dict keys in JAX's order,
and every other structure (namedtuples, registered nodes, float0 outputs) on the general path."""

from __future__ import annotations

import collections

import jax
import jax.numpy as jnp_ref
import numpy as np

import fluxion
import fluxion.numpy as jnp
from fluxion.backend.jit_entry import _Entry

_Pair = collections.namedtuple("_Pair", "x y")


def _outputs(x, y):
    return [
        lambda: (x * 2.0,),
        lambda: (x + 1, [y * 2, (x - y, None)], {"b": x, "a": (y, y + 1.0)}, {3: x * y, 1: y}),
        lambda: {"z": [x], "y": {"q": y, "p": 2.0 * x}},
        lambda: [x + i for i in range(40)],
        lambda: _Pair(x, y * 3),
        lambda: (x.sum(), 1.0 * y[0]),
    ]


def _nth(i):
    def fun(a, b):
        return _outputs(a, b)[i]()
    return fun


def _entries(f):
    return [e for e in f._fluxion_jit.cache.values() if type(e) is _Entry]


def _leaf_info(tree, mod):
    leaves = mod.tree_util.tree_leaves(tree)
    return [(np.asarray(v).tolist(), v.shape, str(v.dtype), v.weak_type) for v in leaves]


def test_generated_output_callers_match_jax():
    x_host = np.arange(3, dtype=np.float32)
    y_host = np.ones(3, np.float32) * 0.5
    n = len(_outputs(None, None))
    for i in range(n):
        res = {}
        for mod, xnp in ((fluxion, jnp), (jax, jnp_ref)):
            x, y = xnp.asarray(x_host), xnp.asarray(y_host)
            f = mod.jit(_nth(i))
            first = f(x, y)
            second = f(x, y)  # fluxion: the cached entry's caller
            assert repr(mod.tree_util.tree_structure(first)) == repr(
                mod.tree_util.tree_structure(second))
            res[mod] = second
            if mod is fluxion:
                first_info = _leaf_info(first, mod)
                generated = [e.call.__code__.co_filename.endswith("outputs>")
                             for e in _entries(f)]
                # namedtuples keep the general path (their type is not a display)
                assert generated == [i != 4], (i, generated)
        got, want = res[fluxion], res[jax]
        assert type(got) is type(want)
        if isinstance(want, dict):
            assert list(got) == list(want)
        assert (str(fluxion.tree_util.tree_structure(got))
                == str(jax.tree_util.tree_structure(want))), i
        assert _leaf_info(got, fluxion) == _leaf_info(want, jax)
        assert _leaf_info(got, fluxion) == first_info


def test_dict_key_order_and_nested_containers_as_jax():
    def f(x):
        return {"b": [x, (x * 2, {"d": x, "c": None})], "a": x + 1}

    got = fluxion.jit(f)(jnp.ones(2))
    got = fluxion.jit(f)(jnp.ones(2))
    want = jax.jit(f)(jnp_ref.ones(2))
    assert list(got) == list(want) == ["a", "b"]
    assert list(got["b"][1][1]) == list(want["b"][1][1])
    assert got["b"][1][1]["c"] is None
    assert type(got["b"]) is list and type(got["b"][1]) is tuple


def test_float0_and_single_outputs_keep_the_general_call():
    g = fluxion.jit(fluxion.grad(lambda x, n: x * 2.0, argnums=(0, 1), allow_int=True))
    gx, gn = g(jnp.float32(1.0), jnp.int32(3))
    gx, gn = g(jnp.float32(1.0), jnp.int32(3))
    wx, wn = jax.jit(jax.grad(lambda x, n: x * 2.0, argnums=(0, 1), allow_int=True))(
        jnp_ref.float32(1.0), jnp_ref.int32(3))
    assert float(gx) == float(wx) and gn.dtype == wn.dtype and gn.shape == wn.shape
    assert not any(e.call.__code__.co_filename.endswith("outputs>") for e in _entries(g))
    h = fluxion.jit(lambda x: x + 1)
    h(jnp.ones(2))
    assert h(jnp.ones(2)).tolist() == [2.0, 2.0]
    assert not any(e.call.__code__.co_filename.endswith("outputs>") for e in _entries(h))

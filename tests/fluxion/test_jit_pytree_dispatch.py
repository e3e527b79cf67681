"""Cached jit calls with pytree arguments take the dispatcher's table (keyed by jaxlib's C++
treedef and the leaves' Specs): same values as JAX, and never for a structure the C++ flatten
would read differently (registered nodes, numpy leaves, a namedtuple with its own flatten)."""

from __future__ import annotations

import collections

import jax
import jax.numpy as jnp_ref
import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion.tree_util import register_pytree_node


def _tree_keys(f):
    return [k for k in f._fluxion_jit.fast if k and type(k[0]).__name__ == "PyTreeDef"]


def _step(p, s, r):
    return {k: [(w + 1.0, b * 2.0) for w, b in v] for k, v in p.items()}, s[2] + r[0].sum(), None


def test_pytree_call_hits_the_table_with_jax_values():
    rng = np.random.default_rng(0)
    host = {"b": [(rng.standard_normal((3, 2)).astype(np.float32), np.ones(2, np.float32))],
            "a": [(np.ones((2, 2), np.float32), np.zeros(2, np.float32))] * 2}
    roll = (np.arange(4, dtype=np.float32), None)
    outs = {}
    for mod, xnp in ((fluxion, jnp), (jax, jnp_ref)):
        p = mod.tree_util.tree_map(xnp.asarray, host)
        state = (p, p, xnp.asarray(np.int32(3)))
        r = (xnp.asarray(roll[0]), None)
        f = mod.jit(_step)
        first = f(p, state, r)
        second = f(p, state, r)  # fluxion: through the dispatcher's table
        outs[mod.__name__] = (first, second)
        if mod is fluxion:
            assert len(_tree_keys(f)) == 1
    for a, b in zip(outs["fluxion"], outs["jax"]):
        la, lb = fluxion.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
        assert len(la) == len(lb)
        for x, y in zip(la, lb):
            assert x.shape == y.shape and x.dtype == y.dtype
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6)
    f1, f2 = outs["fluxion"]
    assert fluxion.tree_util.tree_structure(f1) == fluxion.tree_util.tree_structure(f2)


class _Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b


register_pytree_node(_Pair, lambda p: ((p.b, p.a), None), lambda _, c: _Pair(c[1], c[0]))
_NT = collections.namedtuple("_NT", "x y")


class _Swapped(collections.namedtuple("_Swapped", "x y")):
    pass


register_pytree_node(_Swapped, lambda s: ((s.y, s.x), None), lambda _, c: _Swapped(c[1], c[0]))


def test_structures_the_cpp_flatten_reads_otherwise_keep_the_general_path():
    x, y = jnp.ones(2), jnp.arange(2.0)
    f = fluxion.jit(lambda t: t[0].a - t[0].b + t[1])
    assert f((_Pair(x, y), x)).tolist() == f((_Pair(x, y), x)).tolist() == [2.0, 1.0]
    # a registered node is one to the C++ flatten too (its own flatten, called from there)
    assert len(_tree_keys(f)) == 1
    g = fluxion.jit(lambda t: t.x - t.y)
    assert g(_Swapped(x, y)).tolist() == g(_Swapped(x, y)).tolist() == [1.0, 0.0]
    assert _tree_keys(g) == []  # its own flatten (y, x): the C++ order differs
    assert g(_Swapped(x, x)).tolist() == [0.0, 0.0]  # the same leaf twice: still not keyed
    assert _tree_keys(g) == [] and g(_Swapped(x, y)).tolist() == [1.0, 0.0]
    h = fluxion.jit(lambda t: t.x - t.y)
    assert h(_NT(x, y)).tolist() == h(_NT(x, y)).tolist() == [1.0, 0.0]
    assert len(_tree_keys(h)) == 1
    k = fluxion.jit(lambda t: t[0] + t[1])
    assert k((x, np.ones(2, np.float32))).tolist() == k((x, np.ones(2, np.float32))).tolist()
    assert _tree_keys(k) == []  # a numpy leaf: converted on the general path


def test_pytree_table_follows_shapes_and_disable_jit():
    f = fluxion.jit(lambda d: d["u"] * 2.0)
    assert f({"u": jnp.ones(2)}).tolist() == [2.0, 2.0]
    assert f({"u": jnp.ones(3)}).shape == (3,)
    assert len(_shallow_keys(f)) == 2  # a string-keyed dict: one entry per shape
    with fluxion.disable_jit():
        assert f({"u": jnp.ones(2)}).tolist() == [2.0, 2.0]
    assert f({"u": jnp.ones(2)}).tolist() == [2.0, 2.0]


def _shallow_keys(f):
    return [k for k in f._fluxion_jit.fast if any(x is list or x is tuple or x is dict for x in k)]


def test_lists_and_tuples_of_arrays_key_without_the_cpp_flatten():
    # arguments that are Arrays and lists/tuples of Arrays: keyed by (type, length, Specs) per
    # container; a list and a tuple of the same Arrays are two entries, as in JAX
    def body(p, x, q):
        return type(p)(v * x for v in p), x + sum(q), len(p)
    rng = np.random.default_rng(1)
    host = [rng.standard_normal(3).astype(np.float32) for _ in range(4)]
    for build in (list, tuple):
        got, want = [], []
        for mod, xnp in ((fluxion, jnp), (jax, jnp_ref)):
            f = mod.jit(lambda p, x, q: body(p, x, q))  # a new function: its own table
            ps = build(xnp.asarray(h) for h in host[:3])
            x, q = xnp.asarray(host[3]), [xnp.asarray(host[0])]
            outs = [f(ps, x, q) for _ in range(3)]
            outs.append(f(build(ps[:1]), x, []))  # another length: another entry
            outs.append(f(build(ps[:1]), x, []))
            (got if mod is fluxion else want).append(outs)
            if mod is fluxion:
                assert len(_shallow_keys(f)) == 2 and _tree_keys(f) == []
        for a, b in zip(got[0], want[0]):
            la, lb = fluxion.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
            assert (fluxion.tree_util.tree_structure(a).num_leaves
                    == jax.tree_util.tree_structure(b).num_leaves) and type(a[0]) is build
            for u, v in zip(la, lb):
                assert u.shape == v.shape and u.dtype == v.dtype and u.weak_type == v.weak_type
                np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-6)
    x = jnp.ones(2)
    g = fluxion.jit(lambda t: t[0] + t[1][0][0])
    for _ in range(2):  # three containers deep: the C++ flatten's key
        assert g([x, [(x,)]]).tolist() == [2.0, 2.0]
    assert len(_tree_keys(g)) == 1 and _shallow_keys(g) == []
    d = fluxion.jit(lambda t: t["a"] * 2.0 - t["b"])
    for _ in range(2):  # a dict inserted out of key order: the C++ flatten's key
        assert d({"b": x, "a": x}).tolist() == [1.0, 1.0]
    assert len(_tree_keys(d)) == 1 and _shallow_keys(d) == []
    h = fluxion.jit(lambda t: t[0] + t[1])
    for _ in range(2):  # a Python number in the list: the general path
        assert h([x, 1.0]).tolist() == [2.0, 2.0]
    assert _tree_keys(h) == [] and _shallow_keys(h) == []
    assert h([x, x]).tolist() == [2.0, 2.0] and h([x, x]).weak_type is False
    assert len(_shallow_keys(h)) == 1
    k = fluxion.jit(lambda *a: a[0][0] * a[1])  # the varargs dispatcher's route
    for _ in range(2):
        assert k([x], x).tolist() == [1.0, 1.0]
    assert len(_shallow_keys(k)) == 1


def test_a_parameter_list_of_pairs_keys_without_the_cpp_flatten():
    # an MLP step's arguments: a list of (w, b) tuples, then x and y (two containers deep)
    def step(params, x, y):
        h = x
        for w, b in params:
            h = h @ w + b
        return [(w * ((h - y) ** 2).mean(), b - 1.0) for w, b in params], h.sum()
    rng = np.random.default_rng(2)
    host = [(rng.standard_normal((3, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32))
            for _ in range(3)]
    hx, hy = rng.standard_normal((2, 3)).astype(np.float32), np.ones((2, 3), np.float32)
    outs = {}
    for mod, xnp in ((fluxion, jnp), (jax, jnp_ref)):
        params = [(xnp.asarray(w), xnp.asarray(b)) for w, b in host]
        f = mod.jit(step)
        outs[mod.__name__] = [f(params, xnp.asarray(hx), xnp.asarray(hy)) for _ in range(3)]
        if mod is fluxion:
            keys = _shallow_keys(f)
            assert len(keys) == 1 and _tree_keys(f) == []
            assert keys[0][:4] == (list, 3, tuple, 2)
    for a, b in zip(outs["fluxion"], outs["jax"]):
        assert type(a[0]) is list and all(type(p) is tuple for p in a[0])
        la, lb = fluxion.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
        for u, v in zip(la, lb):
            assert u.shape == v.shape and u.dtype == v.dtype and u.weak_type == v.weak_type
            np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-5, atol=1e-5)


def test_registered_nodes_key_through_the_cpp_flatten_with_jax_values():
    import dataclasses

    @dataclasses.dataclass
    class State:
        pos: object
        vel: object
        n: int = 1

    fluxion.tree_util.register_dataclass(State, data_fields=["pos", "vel"], meta_fields=["n"])
    jax.tree_util.register_dataclass(State, data_fields=["pos", "vel"], meta_fields=["n"])

    class Box:  # aux data that is a list: jaxlib's treedef compares it with ==
        def __init__(self, v, aux):
            self.v, self.aux = v, aux

    fluxion.tree_util.register_pytree_node(Box, lambda b: ((b.v,), b.aux),
                                           lambda aux, c: Box(c[0], aux))

    def step(s):
        return State(s.pos + s.vel * s.n, s.vel * 0.5, s.n)
    got, want = [], []
    for mod, xnp in ((fluxion, jnp), (jax, jnp_ref)):
        f = mod.jit(step)
        for n in (1, 1, 2, 2):  # the meta field is in the key: another n, another entry
            s = State(xnp.arange(3.0), xnp.ones(3), n)
            (got if mod is fluxion else want).append(f(s))
        if mod is fluxion:
            assert len(_tree_keys(f)) == 2
    for a, b in zip(got, want):
        assert type(a) is State and a.n == b.n
        for u, v in ((a.pos, b.pos), (a.vel, b.vel)):
            assert u.shape == v.shape and u.dtype == v.dtype and u.weak_type == v.weak_type
            np.testing.assert_array_equal(np.asarray(u), np.asarray(v))
    g = fluxion.jit(lambda b: b.v * b.aux[0])
    for _ in range(2):
        assert g(Box(jnp.ones(2), [2.0])).tolist() == [2.0, 2.0]
        assert g(Box(jnp.ones(2), [3.0])).tolist() == [3.0, 3.0]
    assert len(_tree_keys(g)) == 2
    for mod, xnp in ((fluxion, jnp), (jax, jnp_ref)):  # array aux data: jax's error, 2nd call
        if mod is jax:
            jax.tree_util.register_pytree_node(Box, lambda b: ((b.v,), b.aux),
                                               lambda aux, c: Box(c[0], aux))
        f = mod.jit(lambda b: b.v * 2.0)
        assert np.asarray(f(Box(xnp.ones(2), np.arange(2.0)))).tolist() == [2.0, 2.0]
        with pytest.raises(ValueError, match="metadata fields"):
            f(Box(xnp.ones(2), np.arange(2.0)))
    k = fluxion.jit(lambda key: fluxion.random.uniform(key, (2,)))
    key = fluxion.random.key(0)
    first = k(key)
    assert np.array_equal(np.asarray(k(key)), np.asarray(first))  # a typed key argument
    np.testing.assert_allclose(np.asarray(first),
                               np.asarray(jax.jit(lambda q: jax.random.uniform(q, (2,)))(
                                   jax.random.key(0))), rtol=1e-6)


def test_dicts_of_layer_dicts_key_without_the_cpp_flatten():
    # haiku-style parameters: {module: {"b": ..., "w": ...}}; a dict inserted in sorted key
    # order keys in one pass, one inserted otherwise keeps the C++ route (leaves by sorted key)
    def step(params, x):
        h = x
        for name in sorted(params):
            h = h @ params[name]["w"] + params[name]["b"]
        return {k: {"w": v["w"] * h.sum(), "b": v["b"] - 1.0} for k, v in params.items()}, h
    rng = np.random.default_rng(3)
    host = {f"linear_{i}": {"b": rng.standard_normal(3).astype(np.float32),
                            "w": rng.standard_normal((3, 3)).astype(np.float32)} for i in range(3)}
    hx = rng.standard_normal((2, 3)).astype(np.float32)
    for order in (sorted, lambda ks: sorted(ks, reverse=True)):
        outs = {}
        for mod, xnp in ((fluxion, jnp), (jax, jnp_ref)):
            params = {k: {n: xnp.asarray(host[k][n]) for n in order(host[k])} for k in order(host)}
            f = mod.jit(lambda p, x: step(p, x))
            outs[mod.__name__] = [f(params, xnp.asarray(hx)) for _ in range(3)]
            if mod is fluxion:
                assert len(_shallow_keys(f)) == (1 if order is sorted else 0)
                assert len(_tree_keys(f)) == (0 if order is sorted else 1)
        for a, b in zip(outs["fluxion"], outs["jax"]):
            la, lb = fluxion.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
            assert len(la) == len(lb) == 7
            for u, v in zip(la, lb):
                assert u.shape == v.shape and u.dtype == v.dtype and u.weak_type == v.weak_type
                np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-5, atol=1e-5)
    g = fluxion.jit(lambda t: t[1] - t[0])  # non-string keys: the C++ route
    x = jnp.ones(2)
    for _ in range(2):
        assert g({0: x, 1: x * 3}).tolist() == [2.0, 2.0]
    assert len(_tree_keys(g)) == 1 and _shallow_keys(g) == []


def test_repeated_structures_take_generated_checkers(monkeypatch):
    # the second call of a structure (the per-leaf loop's hit) generates its checker; from the
    # third on the checker finds the entry itself. Another structure, or other names of a dict
    # of the same length, is not its call: the loop (and the general path) take it, right values
    from fluxion.backend import jit_dispatch as jd
    seen = []
    make = jd._structure_checker

    def counting(args, fast_get):
        check = make(args, fast_get)
        if check is None:
            return None

        def counted(a):
            out = check(a)
            seen.append(out is not jd._NOT_THIS)
            return out
        return counted

    monkeypatch.setattr(jd, "_structure_checker", counting)
    x = jnp.arange(2.0)
    f = fluxion.jit(lambda p, d, y: [p[0][0] * y + p[0][1], {k: v["b"] + y for k, v in d.items()}])
    args = ([(x, x + 1.0)], {"a": {"b": x}}, x)
    for _ in range(4):
        out = f(*args)
        assert out[0].tolist() == [1.0, 3.0] and out[1]["a"].tolist() == [0.0, 2.0]
    assert seen == [True, True]
    assert f([(x, x)], {"c": {"b": x * 2.0}}, x)[1]["c"].tolist() == [0.0, 3.0]
    assert f(((x, x),), {"a": {"b": x}}, x)[0].tolist() == [0.0, 2.0]  # a tuple: not this one
    assert seen[2:4] == [False, False]
    g = fluxion.jit(lambda *a: a[0] * a[1] + a[2])  # the *args dispatcher's positional code
    for _ in range(3):
        assert g(x, x, 1.0).tolist() == [1.0, 2.0] and g(x, x, x).tolist() == [0.0, 2.0]

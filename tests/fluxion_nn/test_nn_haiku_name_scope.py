"""hk.name_scope vs dm-haiku: the same module names (nesting, slash-delimited, duplicates,
method_name) and parameter trees, the same errors (leading slash, reuse, outside transform)."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion.numpy as jnp
import fluxion.random as fr
import fluxion_nn.haiku as hk

rhk = pytest.importorskip("haiku")
jax = pytest.importorskip("jax")


def _names(mod):
    out = []
    with mod.name_scope("foo"):
        out += [mod.Module(name="bar").module_name, mod.Module(name="bar").module_name]
    with mod.name_scope("foo"):
        out.append(mod.Module(name="bar").module_name)
    with mod.name_scope("x/y"):
        out.append(mod.Module(name="baz").module_name)
    with mod.name_scope("p"), mod.name_scope("q"):
        out.append(mod.Module().module_name)
    for m in ("bar", "__init__", "__call__"):
        with mod.name_scope("s", method_name=m):
            out.append(mod.Module().module_name)
    return out


def test_module_names_match_haiku():
    ours, ref = [], []
    hk.transform(lambda: ours.extend(_names(hk))).init(None)
    rhk.transform(lambda: ref.extend(_names(rhk))).init(None)
    assert ours == ref


def _params(mod, np_, key):
    class Scoped(mod.Module):
        def __call__(self, x):
            with mod.name_scope("inner"):
                lin = mod.Linear(2, name="lin")
                w = mod.get_parameter("w", [], init=np_.ones)
            return lin(x) + w

    def f(x):
        with mod.name_scope("outer"):
            return Scoped()(x) + mod.Linear(2)(x)

    params = mod.transform(f).init(key, np_.ones([1, 3]))
    return {k: {n: (v.shape, np.asarray(v)) for n, v in d.items()} for k, d in params.items()}


def test_parameter_trees_match_haiku():
    ours = _params(hk, jnp, fr.PRNGKey(1))
    ref = _params(rhk, jax.numpy, jax.random.PRNGKey(1))
    assert sorted(ours) == sorted(ref)
    for k in ref:
        assert sorted(ours[k]) == sorted(ref[k])
        for n in ref[k]:
            assert ours[k][n][0] == ref[k][n][0]
            np.testing.assert_allclose(ours[k][n][1], ref[k][n][1], rtol=1e-6)


def test_errors_match_haiku():
    with pytest.raises(ValueError, match="name_scope.*must be used as part of an `hk.transform`"):
        hk.name_scope("foo")

    def body():
        with pytest.raises(ValueError, match="Name scopes must not start with /"):
            hk.name_scope("/foo")
        scope = hk.name_scope("foo")
        with scope:
            with pytest.raises(ValueError, match="name_scope is not reentrant"):
                with scope:
                    pass
        with pytest.raises(ValueError, match="name_scope is not reusable"):
            with scope:
                pass

    hk.transform(body).init(None)


def _transparent_names(mod):
    class W(mod.Module):
        @mod.transparent
        def __call__(self):
            return mod.Module(name="lin").module_name

        @mod.transparent
        def other(self):
            return mod.Module(name="lin").module_name

    class Outer(mod.Module):
        def __call__(self):
            return W()()

    out = []

    def f():
        w = W(name="w")
        out.extend([w(), w.other(), Outer()()])

    mod.transform(f).init(None)
    return out


def test_transparent_methods_match_haiku():
    assert _transparent_names(hk) == _transparent_names(rhk) == ["lin", "lin_1", "outer/lin"]


def _name_like_names(mod):
    class Net(mod.Module):
        def __call__(self):
            return mod.Module(name="a").module_name

        @mod.name_like("__call__")
        def encode(self):
            return mod.Module(name="a").module_name

        @mod.name_like("decode")
        def other(self):
            return mod.Module(name="a").module_name

    out = []

    def f():
        net = Net()
        out.extend([net(), net.encode(), net.other()])

    mod.transform(f).init(None)
    return out


def test_name_like_matches_haiku():
    assert _name_like_names(hk) == _name_like_names(rhk)

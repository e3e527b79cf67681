"""Differences from flax.nnx / haiku found by the docstring-example work (session 11), each
checked against the reference library: what it accepts, refuses (error type and message) and
returns must be the same on both sides."""

from __future__ import annotations

import pytest

import fluxion
import fluxion.numpy as jnp
import fluxion_nn as nnx
from fluxion_nn.errors import InvalidRngError

fnnx = pytest.importorskip("flax.nnx")
flax_errors = pytest.importorskip("flax.errors")
jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")


def _outcome(call):
    """("ok", None) or (error type name, message without flax's error-page link)."""
    try:
        call()
    except Exception as e:  # noqa: BLE001 - the outcome itself is what is compared
        return type(e).__name__, str(e).split(" (https://flax")[0]
    return "ok", None


# -- jit_partial: no graph-updates mode ----------------------------------------------------------

@pytest.mark.parametrize("kwargs", [{}, {"graph_updates": True}, {"graph": True},
                                    {"graph_updates": False}, {"graph": False},
                                    {"graph": True, "graph_updates": False}])
def test_jit_partial_refuses_graph_updates_as_flax(kwargs):
    def run(lib, np_mod):
        model = lib.Linear(2, 3, rngs=lib.Rngs(0))
        return _outcome(lambda: lib.jit_partial(lambda m, x: m(x), model, **kwargs)(
            np_mod.ones((1, 2))))

    ours, theirs = run(nnx, jnp), run(fnnx, jjnp)
    assert ours == theirs
    expect_error = kwargs.get("graph", True) and kwargs.get("graph_updates", True)
    assert (ours[0] == "ValueError") == expect_error


def test_jit_partial_graph_updates_follow_the_config_switch():
    for lib in (nnx, fnnx):
        with lib.set_graph_updates(False):
            model = lib.Linear(2, 3, rngs=lib.Rngs(0))
            assert lib.jit_partial(lambda m, x: m(x), model)(
                (jnp if lib is nnx else jjnp).ones((1, 2))).shape == (1, 3)


# -- bridge.ToLinen: Linen's check of the RNGs -----------------------------------------------------

def _rng_cases(rand):
    key = rand.key(0)
    return {"int": 0, "None": None, "typed key": key, "raw key": rand.key_data(key),
            "raw key int32": rand.key_data(key).astype("int32"),
            "two keys": rand.split(key, 2), "dict": {"params": key}}


@pytest.mark.parametrize("case", ["int", "None", "typed key", "raw key", "raw key int32",
                                  "two keys", "dict", "Rngs"])
def test_to_linen_init_checks_rngs_as_flax(case):
    def run(lib, rand, np_mod):
        rngs = lib.Rngs(0) if case == "Rngs" else _rng_cases(rand)[case]
        model = lib.bridge.ToLinen(lib.Linear, args=(2, 3))
        return _outcome(lambda: model.init(rngs, np_mod.ones((1, 2))))

    ours = run(nnx, fluxion.random, jnp)
    theirs = run(fnnx, jax.random, jjnp)
    assert ours[0] == theirs[0]
    if ours[0] != "ok":
        assert ours[0] == "InvalidRngError"
        gist = "RNGs should be of shape (2,) or PRNGKey in Module ToLinen, but rngs are: "
        assert ours[1].startswith(gist) and theirs[1].startswith(gist)
    assert (ours[0] == "ok") == (case in ("typed key", "raw key", "dict"))


def test_to_linen_apply_checks_rngs_as_flax():
    def run(lib, rand, np_mod, err):
        model = lib.bridge.ToLinen(lib.Linear, args=(2, 3))
        variables = model.init(rand.key(0), np_mod.ones((1, 2)))
        assert model.apply(variables, np_mod.ones((1, 2)), rngs=None).shape == (1, 3)
        assert model.apply(variables, np_mod.ones((1, 2)), rngs=rand.key(1)).shape == (1, 3)
        with pytest.raises(err, match=r"RNGs should be of shape \(2,\) or PRNGKey"):
            model.apply(variables, np_mod.ones((1, 2)), rngs=3)

    run(nnx, fluxion.random, jnp, InvalidRngError)
    run(fnnx, jax.random, jjnp, flax_errors.InvalidRngError)


# -- haiku: ModuleDetails' params and state are key-sorted ----------------------------------------

def test_haiku_module_details_are_key_sorted_as_haiku():
    hk_ref = pytest.importorskip("haiku")
    import fluxion_nn.haiku as hk

    def details(lib, np_mod):
        class Z(lib.Module):
            def __call__(self, x):
                w = lib.get_parameter("w", [2, 3], init=np_mod.ones)
                b = lib.get_parameter("b", [3], init=np_mod.zeros)
                a = lib.get_parameter("a", [1], init=np_mod.zeros)
                s = lib.get_state("s", [], init=np_mod.zeros)
                c = lib.get_state("c", [], init=np_mod.zeros)
                lib.set_state("s", s + 1)
                return x @ w + b + a + s + c

        rows = lib.experimental.eval_summary(lambda x: Z()(x))(np_mod.ones((1, 2)))
        return [(list(r.module_details.params.items()), list(r.module_details.state.items()))
                for r in rows]

    def plain(rows):
        return [([(k, v.shape, str(v.dtype)) for k, v in p], [(k, v.shape) for k, v in s])
                for p, s in rows]

    ours, theirs = plain(details(hk, jnp)), plain(details(hk_ref, jjnp))
    assert ours == theirs
    assert [k for k, *_ in ours[0][0]] == ["z/a", "z/b", "z/w"]
    assert [k for k, _ in ours[0][1]] == ["z/c", "z/s"]


# -- GraphDef.nodes: flax's extra GenericPytree node per object (documented in docs/nn.md) ---------

def test_graphdef_nodes_differ_from_flax_only_by_its_pytree_state_nodes():
    def run(lib, np_mod):
        class M(lib.Module):
            def __init__(self, rngs):
                self.sub = lib.Linear(2, 3, rngs=rngs)
                self.b = lib.Param(np_mod.zeros(2))

        m = M(lib.Rngs(0))
        graphdef, state = lib.split(m)
        names = [n.type if isinstance(n.type, str) else n.type.__name__ for n in graphdef.nodes]
        paths = sorted(tuple(str(k) for k in p) for p, _ in lib.to_flat_state(state))
        merged = lib.merge(graphdef, state)
        return names, paths, type(merged.sub).__name__

    ours, theirs = run(nnx, jnp), run(fnnx, jjnp)
    assert ours[1:] == theirs[1:]
    assert theirs[0] == ["M", "GenericPytree", "Param", "Linear", "GenericPytree", "Param", "Param"]
    assert ours[0] == [t for t in theirs[0] if t != "GenericPytree"]

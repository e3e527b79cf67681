"""fluxion_nn.haiku's lifted transforms and transform signatures against dm-haiku: branches given
twice are traced once, state created inside ``hk.grad``/``hk.vmap`` at init, what ``cond_fun``
and ``transparent_lift`` may not do, ``without_apply_rng`` signatures, the flax bridge's error."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from _compare import platform_tol

import fluxion
import fluxion.numpy as jnp
import fluxion.random as fr
import fluxion_nn.haiku as hk

rhk = pytest.importorskip("haiku")
jax = pytest.importorskip("jax")

BOTH = [(hk, jnp, fluxion, fr.PRNGKey), (rhk, jax.numpy, jax, jax.random.PRNGKey)]


@pytest.mark.parametrize("lib", [0, 1])
def test_branches_given_twice_are_traced_once_like_haiku(lib):
    h, np_, api, key = BOTH[lib]
    calls: list[str] = []

    def f(x):
        calls.append("f")
        return x ** 2

    def g(x):
        calls.append("g")
        return x ** 2

    def run():
        h.cond(False, f, f, 0.0)
        h.switch(0, [f, g] * 4, 2.0)

    api.jit(h.transform(run).init)(key(0))
    assert calls == ["f", "f", "g"]


class _Square:
    """SquareModule of Haiku's stateful_test, for either library."""

    @staticmethod
    def make(h, np_):
        class Square(h.Module):
            def __call__(self, x):
                p = h.get_parameter("p", [], np.int32, init=lambda *_: np_.array(2))
                y = x ** p
                h.set_state("y", y)
                return y
        return Square


@pytest.mark.parametrize("value", [False, True])
def test_grad_creating_state_at_init_under_jit_like_haiku(value):
    res = []
    for h, np_, api, _ in BOTH:
        square = _Square.make(h, np_)

        def f(x, h=h, square=square):
            if value:
                return h.value_and_grad(square())(x)
            return h.grad(square())(x)

        t = h.transform_with_state(f)
        x = np_.array(3.0)
        params, state = api.jit(t.init)(None, x)
        out, state2 = api.jit(t.apply)(params, state, None, x)
        res.append((params, state, out, state2))
    ours, theirs = res
    for a, b in zip(jax.tree_util.tree_leaves(ours, is_leaf=lambda v: v is None),
                    jax.tree_util.tree_leaves(theirs)):
        assert np.asarray(a).dtype == np.asarray(b).dtype
        # x ** p is stablehlo.power in both libraries: a TPU's is less precise (9.000011 for 3 ** 2)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b),
                                   **platform_tol(1e-6, dtype=np.asarray(b).dtype))
    assert sorted(ours[1]) == sorted(theirs[1]) == ["square"]


def test_vmap_split_rng_creating_params_at_init_raises_like_haiku():
    for h, np_, api, key in BOTH:
        def f(x, h=h):
            h.vmap(lambda _: h.get_parameter("w", (), np.float32,
                                              init=h.initializers.TruncatedNormal()),
                   split_rng=True)(x)

        with pytest.raises(ValueError, match="split_rng to True during initialization"):
            api.jit(h.transform(f).init)(key(0), np_.arange(4))


@pytest.mark.parametrize("what", ["set_state", "next_rng_key"])
def test_while_loop_cond_may_not_change_state_like_haiku(what):
    for h, np_, _, key in BOTH:
        class Counting(h.Module):
            def __call__(self, x):
                count = h.get_state("count", [], init=np_.zeros)
                h.set_state("count", count + 1)
                return x + 1

        def f(x, h=h, Counting=Counting):
            m = Counting()
            if not h.running_init():
                if what == "set_state":
                    cond = lambda v: m(v) < 3.0  # noqa: E731
                else:
                    cond = lambda v: h.next_rng_key()[0] > 0  # noqa: E731
                return h.while_loop(cond, lambda v: v, x)
            return m(x)

        t = h.transform_with_state(f)
        x = np_.zeros([])
        params, state = t.init(key(0), x)
        with pytest.raises(ValueError, match="does not support.*set_state.*next_rng_key.*in"
                                             ".*cond_fun`"):
            t.apply(params, state, key(42), x)


def test_transparent_lift_may_not_close_over_an_outer_module_like_haiku():
    for h, np_, _, _ in BOTH:
        def fn(x, h=h, closed=True):
            outer = h.Bias(name="inner")

            def inner(v):
                if closed:
                    v = outer(v)
                return h.Bias(name="inner")(v)

            inner_t = h.transform(inner)
            params = h.experimental.transparent_lift(inner_t.init)(None, x)
            return inner_t.apply(params, None, x)

        with pytest.raises(ValueError, match="close over a module.*transparent_lift"):
            h.transform(fn).init(None, np_.ones((2, 3)))
        params = h.transform(lambda x, fn=fn: fn(x, closed=False)).init(None, np_.ones((2, 3)))
        assert sorted(params) == ["inner"]


def _shape(sig: inspect.Signature) -> list:
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


@pytest.mark.parametrize("with_state", [False, True])
def test_transform_signatures_like_haiku(with_state):
    sigs = []
    for h, _, api, _ in BOTH:
        def f(pos, *, key: int = 37) -> int:
            del pos, key
            return 2

        t = (h.transform_with_state if with_state else h.transform)(f)
        n = h.without_apply_rng(t)
        sigs.append([inspect.signature(g) for g in (t.init, t.apply, n.init, n.apply)])
        key_type = inspect.signature(t.init).parameters["rng"].annotation
        assert key_type == (api.Array | int | None)
        ret = inspect.signature(n.apply).return_annotation  # f's own, "int" (a string here)
        if with_state:
            assert (ret.__origin__, ret.__args__[0]) == (tuple, "int")
        else:
            assert ret == "int"
    for ours, theirs in zip(*sigs):
        assert _shape(ours) == _shape(theirs)


def test_experimental_flax_names_like_haiku_and_its_no_flax_shim():
    import haiku
    from haiku._src import no_flax

    from fluxion_nn.haiku._src import no_flax as our_no_flax

    # with flax installed haiku's module has the bridge; so has ours (docs: Module needs flax's
    # Linen on Fluxion, tested in test_nn_haiku_flax_bridge.py)
    assert sorted(hk.experimental.flax.__all__) == sorted(haiku.experimental.flax.__all__)
    assert callable(hk.experimental.flax.lift)
    ours = our_no_flax.FlaxNotInstalled("haiku.experimental.flax")
    shim = no_flax.FlaxNotInstalled("haiku.experimental.flax")
    for mod in (ours, shim):
        with pytest.raises(ImportError, match=r"lift.*require `flax`"):
            mod.lift  # noqa: B018

"""custom_vmap under autodiff, compared with jax 0.10.2: ``vmap(jvp(f))`` runs the JVP of the
rule (every way the primals and tangents can be batched), reverse mode differentiates ``f``
(jax refuses it), ``jacfwd`` differentiates ``f`` (documented in docs/api/utilities.md)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import fluxion


def _build(lib):
    @lib.custom_batching.custom_vmap
    def f(x, y):
        return {"a": lib.numpy.sin(x) * y, "b": x + y}

    @f.def_vmap
    def rule(axis_size, in_batched, x, y):
        # another smooth function, so that a result shows whether the rule ran
        either = in_batched[0] or in_batched[1]
        return {"a": lib.numpy.cos(x) * y, "b": x * y}, {"a": either, "b": either}

    seq = lib.custom_batching.sequential_vmap(lambda m: lib.numpy.sum(m ** 3))
    return f, seq


XS = np.linspace(0.1, 1.0, 3).astype(np.float32)
YS = np.linspace(2.0, 3.0, 3).astype(np.float32)
M = (np.arange(6, dtype=np.float32).reshape(3, 2) / 5)

CASES = {
    "primals_and_tangents_batched":
        lambda L, f, s: L.vmap(lambda x, y: L.jvp(f, (x, y), (x, y)))(XS, YS),
    "primals_batched":
        lambda L, f, s: L.vmap(lambda x, y: L.jvp(f, (x, y), (1.0, 2.0)))(XS, YS),
    "tangents_batched":
        lambda L, f, s: L.vmap(lambda t: L.jvp(f, (0.5, 2.0), (t, 1.0)))(XS),
    "mixed":
        lambda L, f, s: L.vmap(lambda x, t: L.jvp(f, (x, 2.0), (t, 1.0)))(XS, YS),
    "under_jit":
        lambda L, f, s: L.jit(L.vmap(lambda x, y: L.jvp(f, (x, y), (x, y))))(XS, YS),
    "second_order":
        lambda L, f, s: L.vmap(lambda x: L.jvp(
            lambda u: L.jvp(lambda z: f(z, 2.0)["a"], (u,), (u,))[1], (x,), (1.0,)))(XS),
    "nested_vmap":
        lambda L, f, s: L.vmap(L.vmap(lambda x, y: L.jvp(f, (x, y), (x, y))))(
            np.stack([XS, XS]), np.stack([YS, YS])),
    "jvp_of_vmap":
        lambda L, f, s: L.jvp(L.vmap(f), (XS, YS), (XS, YS)),
    "sequential_vmap":
        lambda L, f, s: L.vmap(lambda m: L.jvp(s, (m,), (m,)))(M),
}


@pytest.mark.parametrize("case", list(CASES))
def test_vmap_of_jvp_runs_the_rule_as_jax(case) -> None:
    want = CASES[case](jax, *_build(jax))
    got = CASES[case](fluxion, *_build(fluxion))
    w_leaves, w_tree = jax.tree_util.tree_flatten(want)
    g_leaves, g_tree = fluxion.tree_util.tree_flatten(got)
    assert str(g_tree) == str(w_tree)
    for w, g in zip(w_leaves, g_leaves):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


def test_reverse_mode_differentiates_f() -> None:
    # jax: "Linearization failed"; Fluxion differentiates f (sin(x) * y), also under vmap
    f, _ = _build(fluxion)
    with pytest.raises(ValueError, match="Linearization failed"):
        jax.grad(lambda x: _build(jax)[0](x, 2.0)["a"])(0.3)
    g = fluxion.grad(lambda x: f(x, 2.0)["a"])(0.3)
    np.testing.assert_allclose(float(g), 2.0 * np.cos(0.3), rtol=1e-6)
    gs = fluxion.vmap(fluxion.grad(lambda x, y: f(x, y)["a"]))(XS, YS)
    np.testing.assert_allclose(np.asarray(gs), YS * np.cos(XS), rtol=1e-6)


def test_jacfwd_of_a_faithful_rule_equals_jax() -> None:
    # a rule that computes f batched: jax's jacfwd (vmap of jvp, the rule's JVP) and Fluxion's
    # (one linearization of f) agree
    def build(lib):
        @lib.custom_batching.custom_vmap
        def f(x):
            return lib.numpy.sin(x) * 2.0

        @f.def_vmap
        def rule(axis_size, in_batched, x):
            return lib.numpy.sin(x) * 2.0, in_batched[0]
        return f

    want = jax.jacfwd(build(jax))(XS)
    got = fluxion.jacfwd(build(fluxion))(XS)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)

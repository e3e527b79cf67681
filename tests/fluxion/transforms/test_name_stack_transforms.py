"""Name stacks under differentiation, as JAX records them on jaxpr equations: ``jvp(...)`` on
the forward equations of grad/vjp/jvp, ``transpose(jvp(...))`` on the backward ones (haiku's
jaxpr_info groups a loss's equations by these)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
from fluxion.core.name_stack import Transform, render


def _loss(lib, m):
    def loss(w, x):
        with lib.named_scope("model"):
            with lib.named_scope("dense"):
                y = m.tanh(x @ w)
            z = m.sin(y)
        return m.sum(z * 2.0)
    return loss


_W = np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)
_X = np.linspace(0, 1, 12, dtype=np.float32).reshape(4, 3)

_HOW = {
    "grad": lambda lib, f: lib.grad(f),
    "vjp": lambda lib, f: lambda w, x: lib.vjp(f, w, x)[1](np.float32(1.0)),
    "jvp": lambda lib, f: lambda w, x: lib.jvp(f, (w, x), (w, x)),
    "value_and_grad_jit": lambda lib, f: lib.jit(lib.value_and_grad(f)),
}


def _stacks(lib, m, how):
    jaxpr = lib.make_jaxpr(_HOW[how](lib, _loss(lib, m)))(_W, _X)
    eqns = jaxpr.jaxpr.eqns
    if how == "value_and_grad_jit":  # the jit call's own program
        eqns = eqns[0].params["jaxpr"].jaxpr.eqns
    return [(e.primitive.name, str(e.source_info.name_stack)) for e in eqns]


@pytest.mark.parametrize("how", list(_HOW))
def test_name_stacks_under_differentiation_like_jax(how):
    ours, theirs = _stacks(fluxion, fnp, how), _stacks(jax, jnp, how)

    def runs(pairs):  # the sequence of name stacks, each run once
        out = []
        for _, s in pairs:
            if not out or out[-1] != s:
                out.append(s)
        return out

    assert runs(ours) == runs(theirs)
    for prim in ("dot_general", "sin", "cos", "tanh", "reduce_sum", "broadcast_in_dim",
                 "transpose"):
        assert [s for p, s in ours if p == prim] == [s for p, s in theirs if p == prim], prim


def test_current_name_stack_inside_grad_like_jax():
    from jax._src import source_info_util

    seen = {}

    def f(lib, where, current):
        def g(x):
            with lib.named_scope("outer"):
                seen[where] = str(current())
                return x * 2.0
        return g

    fluxion.grad(f(fluxion, "ours", fluxion.naming.current_name_stack))(1.0)
    jax.grad(f(jax, "theirs", source_info_util.current_name_stack))(1.0)
    assert seen["ours"] == seen["theirs"] == "jvp(outer)"


@pytest.mark.parametrize("entries,text", [
    ((), ""), (("a", "b"), "a/b"), ((Transform("jvp"),), "jvp()"),
    ((Transform("jvp"), "a", "b"), "jvp(a)/b"),
    ((Transform("transpose"), Transform("jvp"), "a"), "transpose(jvp(a))"),
    (("a", Transform("vmap"), "b", Transform("jvp")), "a/vmap(b)/jvp()"),
])
def test_render_like_jax(entries, text):
    from jax._src import source_info_util as siu

    stack = siu.NameStack(tuple(siu.Transform(e.name) if type(e) is Transform else siu.Scope(e)
                                for e in entries))
    assert render(entries) == str(stack) == text

"""The call primitive ``jit`` (fluxion/transforms/call.py) against jax 0.10.2: the calls that
``jvp``, partial evaluation (``grad``, ``linearize``) and transposition derive from a jitted
function keep its name, as JAX's ``jit`` rules do (the name is what printed programs, compile
logs and errors show)."""

from __future__ import annotations

import jax
import pytest

import fluxion


def _call_names(closed):
    names = []

    def walk(program):
        for eqn in program.eqns:
            if eqn.primitive.name == "jit":
                names.append(eqn.params["name"])
                walk(eqn.params["jaxpr"].jaxpr)
    walk(closed.jaxpr)
    return names


CASES = {
    "grad": lambda lib, g: lib.make_jaxpr(lib.grad(g))(1.0),
    "jvp": lambda lib, g: lib.make_jaxpr(lambda x, t: lib.jvp(g, (x,), (t,)))(1.0, 1.0),
    "linearize": lambda lib, g: lib.make_jaxpr(lambda x: lib.linearize(g, x)[1](x))(1.0),
    "vjp": lambda lib, g: lib.make_jaxpr(lambda x: lib.vjp(g, x)[1](x))(1.0),
    "vmap_grad": lambda lib, g: lib.make_jaxpr(lib.vmap(lib.grad(g)))(lib.numpy.ones(2)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_derived_calls_keep_the_name_as_jax(case):
    # were jvp(inner), transpose(jvp(inner)_tangent)
    def inner(x):
        return x * x * 3.0

    got = []
    for lib in (fluxion, jax):
        got.append(_call_names(CASES[case](lib, lib.jit(inner))))
    assert got[0] and set(got[0]) == {"inner"}
    assert got[0] == got[1]

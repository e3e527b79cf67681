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


def test_unused_jit_outputs_are_pruned_from_the_linearization_like_jax():
    # JAX's DCE rule for jit drops the outputs the caller never reads, with their part of the
    # body: a custom_vjp bwd behind such an output never runs (here bwd(0) would add 2)
    import jax.numpy as jnp

    import fluxion.numpy as fnp

    def grads(lib, m):
        @lib.custom_vjp
        def f(x):
            return x

        f.defvjp(lambda x: (x, None), lambda _, g: (g + 2.0,))
        both = lib.jit(lambda d: (f(d), d * 3.0))
        twice = lib.jit(lambda d: (f(d), f(d)))
        x = m.array(1.0)
        return [float(lib.grad(lambda v: both(v)[1])(x)),
                float(lib.grad(lambda v: twice(v)[1])(x)),
                float(lib.grad(lambda v: both(v)[0])(x)),
                float(lib.jit(lib.grad(lambda v: both(v)[1]))(x))]

    assert grads(fluxion, fnp) == grads(jax, jnp) == [3.0, 3.0, 3.0, 3.0]

"""``make_jaxpr`` output read by JAX's names, against real JAX: ``eqn.primitive.name``,
``eqn.invars``/``outvars``, ``eqn.source_info.name_stack`` (relative to the calling equation in a
sub-jaxpr), and the sub-jaxprs of ``jit``/``scan``/``while``/``cond``/``remat2``/``custom_jvp_call``/
``custom_vjp_call`` under JAX's parameter names (what haiku's ``jaxpr_info`` walks)."""

from __future__ import annotations

import pickle

import jax
import jax.numpy as jjnp
import pytest

import fluxion
import fluxion.numpy as fjnp
from fluxion.core.ir import JaxNamedParams


def _subjaxprs(eqn):
    """The sub-jaxprs of an equation, found as haiku's jaxpr_info finds them (JAX's names)."""
    name, p = eqn.primitive.name, eqn.params
    if name in ("jit", "scan"):
        return [p["jaxpr"].jaxpr]
    if name == "while":
        return [p["cond_jaxpr"].jaxpr, p["body_jaxpr"].jaxpr]
    if name == "cond":
        return [b.jaxpr for b in p["branches"]]
    if name == "remat2":
        return [p["jaxpr"]]
    if name in ("custom_jvp_call", "custom_vjp_call"):
        return [p["call_jaxpr"].jaxpr]
    return []


def _walk(jaxpr, depth=0):
    rows = []
    for eqn in jaxpr.eqns:
        rows.append((depth, eqn.primitive.name, str(eqn.source_info.name_stack),
                     [(v.aval.shape, v.aval.dtype) for v in eqn.invars],
                     [(v.aval.shape, v.aval.dtype) for v in eqn.outvars]))
        assert isinstance(eqn.effects, (set, frozenset))
        for sub in _subjaxprs(eqn):
            rows.extend(_walk(sub, depth + 1))
    return rows


def _program(ns, jnp):
    def f(x):
        with ns.named_scope("outer"):
            a = ns.lax.scan(lambda c, v: (jnp.sin(c), v), x, None, length=2)[0]
            b = ns.lax.cond(True, jnp.sin, jnp.cos, x)
            c = ns.checkpoint(jnp.sin)(x)
            d = ns.lax.while_loop(lambda c: c < 1.0, jnp.sin, x)

            @ns.custom_jvp
            def g(x):
                return jnp.sin(x)

            g.defjvp(lambda p, t: (g(p[0]), t[0]))

            @ns.custom_vjp
            def h(x):
                return jnp.cos(x)

            h.defvjp(lambda x: (h(x), x), lambda r, t: (t,))
            with ns.named_scope("inner"):
                e = ns.jit(lambda y: jnp.tanh(y))(x)
        return a * b * c * d * g(x) * h(x) * e
    return f


def test_walk_by_jax_names_matches_jax():
    got = _walk(fluxion.make_jaxpr(_program(fluxion, fjnp))(1.0).jaxpr)
    want = _walk(jax.make_jaxpr(_program(jax, jjnp))(1.0).jaxpr)
    # JAX's cond lowers its boolean predicate through convert_element_type; compare the rest
    strip = [r for r in want if r[1] != "convert_element_type"]
    assert [r for r in got if r[1] != "convert_element_type"] == strip


def test_name_stacks_of_nested_scopes_match_jax():
    def f(ns, jnp):
        def fn(x):
            with ns.named_scope("a"):
                y = jnp.sin(x)
                with ns.named_scope("b"):
                    y = y * 2.0
            return ns.named_call(lambda z: jnp.cos(z), name="c")(y)
        return fn
    got = [(e.primitive.name, str(e.source_info.name_stack))
           for e in fluxion.make_jaxpr(f(fluxion, fjnp))(1.0).eqns]
    want = [(e.primitive.name, str(e.source_info.name_stack))
            for e in jax.make_jaxpr(f(jax, jjnp))(1.0).eqns]
    assert got == want


def test_program_reads_as_closed_jaxpr():
    closed = fluxion.make_jaxpr(lambda x: fluxion.jit(fjnp.sin)(x))(1.0)
    inner = closed.jaxpr.eqns[0].params["jaxpr"]
    assert inner.jaxpr is inner and inner.consts == [] and inner.effects == frozenset()
    assert "jaxpr" in closed.jaxpr.eqns[0].params
    assert closed.jaxpr.eqns[0].params.get("jaxpr") is inner


def test_jax_named_params_keep_fluxion_items():
    p = JaxNamedParams({"program": 1, "name": "f"}, {"jaxpr": "program"})
    assert p["jaxpr"] == 1 and p.get("nope", 3) == 3 and "nope" not in p
    assert dict(p) == {"program": 1, "name": "f"}
    with pytest.raises(KeyError):
        p["call_jaxpr"]
    q = pickle.loads(pickle.dumps(p))
    assert q["jaxpr"] == 1 and dict(q) == dict(p)


@pytest.mark.parametrize("c", [2.0, 3, 0.5])
def test_literal_str_matches_jax(c):
    def lits(ns, jnp, core):
        j = ns.make_jaxpr(lambda x: x * c + 1)(jnp.ones(2, jnp.float32))
        return [str(a) for e in j.eqns for a in e.invars if isinstance(a, core.Literal)]
    from jax.extend import core as jcore

    from fluxion.extend import core as fcore
    assert lits(fluxion, fjnp, fcore) == lits(jax, jjnp, jcore)

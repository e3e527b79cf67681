"""Dead-code elimination inside loops (the ``DCE_RULES`` of ``scan`` and ``while``, as JAX's): a
loop of which only some results are read computes just those. A scan drops the ``ys`` no one
reads (no stacking buffer, no update per iteration) and the carries they do not need (a
``fori_loop`` index the body ignores); a while loop drops the carries neither its condition nor
a needed result reads. Constants and scanned inputs the remaining body does not read go too.

Example:
    >>> import fluxion
    >>> from fluxion import lax
    >>> from fluxion.core.ir import dce
    >>> def f(x):
    ...     _, ys = lax.scan(lambda c, x: (c + x, x * 2.0), 0.0, x)
    ...     return ys
    >>> program = fluxion.make_jaxpr(f)(fluxion.numpy.ones(3)).jaxpr
    >>> def carries(p):
    ...     return [e.params["num_carry"] for e in p.eqns if e.prim.name == "scan"]
    >>> carries(program), carries(dce(program))  # the carry no output needs is dropped
    ([1], [0])
"""

from __future__ import annotations

from typing import Any, Sequence

from fluxion.core.ir import DCE_RULES, Equation, Program, Var, dce

__all__ = ["install"]


def _read(program: Program) -> set[int]:
    """The ids of the variables ``program``'s equations and outputs read."""
    ids = {v.id for v in program.outvars if isinstance(v, Var)}
    for e in program.eqns:
        ids.update(a.id for a in e.inputs if isinstance(a, Var))
    return ids


def _pick(seq: Sequence[Any], keep: Sequence[bool]) -> list:
    return [x for x, k in zip(seq, keep) if k]


def _needed_carries(body: Program, nconsts: int, carry: list[bool],
                    ys: list[bool]) -> tuple[list[bool], Program, set[int]]:
    """Grow the needed carries to a fixed point: a carry is needed when a needed output of
    the body (a needed carry, or a needed ``ys`` entry after the carries) reads it. Returns the
    carries, the body pruned to them and the ids that pruned body reads."""
    while True:
        pruned = dce(body, carry + ys)
        read = _read(pruned)
        grown = [u or body.invars[nconsts + i].id in read for i, u in enumerate(carry)]
        if grown == carry:
            return carry, pruned, read
        carry = grown


def _scan_dce(eqn: Equation, used: list[bool]) -> Equation | None:
    p = eqn.params
    body: Program = p["jaxpr"]
    if body.effectful:
        return None
    nc, ncar = p["num_consts"], p["num_carry"]
    ys = list(used[ncar:])
    carry, pruned, read = _needed_carries(body, nc, list(used[:ncar]), ys)
    consts = [v.id in read for v in body.invars[:nc]]
    xs = [v.id in read for v in body.invars[nc + ncar:]]
    if all(carry) and all(ys) and all(consts) and all(xs):
        return None
    keep_in = consts + carry + xs
    new_body = Program([], _pick(body.invars, keep_in), pruned.outvars, pruned.eqns)
    params = dict(p, jaxpr=new_body, num_consts=sum(consts), num_carry=sum(carry))
    outs = _pick(eqn.outputs[:ncar], carry) + _pick(eqn.outputs[ncar:], ys)
    return Equation(eqn.prim, _pick(eqn.inputs, keep_in), outs, params, eqn.source, eqn.name_stack)


def _while_dce(eqn: Equation, used: list[bool]) -> Equation | None:
    p = eqn.params
    body: Program = p["body_jaxpr"]
    cond: Program = p["cond_jaxpr"]
    if body.effectful or cond.effectful:
        return None
    ncc, nbc = p["cond_nconsts"], p["body_nconsts"]
    cond_read = _read(cond)
    carry = [u or v.id in cond_read for u, v in zip(used, cond.invars[ncc:])]
    carry, pruned, read = _needed_carries(body, nbc, carry, [])
    cconsts = [v.id in cond_read for v in cond.invars[:ncc]]
    bconsts = [v.id in read for v in body.invars[:nbc]]
    if all(carry) and all(cconsts) and all(bconsts):
        return None
    new_body = Program([], _pick(body.invars, bconsts + carry), pruned.outvars, pruned.eqns)
    new_cond = Program([], _pick(cond.invars, cconsts + carry), cond.outvars, cond.eqns)
    params = dict(p, body_jaxpr=new_body, cond_jaxpr=new_cond, cond_nconsts=sum(cconsts),
                  body_nconsts=sum(bconsts))
    ins = _pick(eqn.inputs, cconsts + bconsts + carry)
    return Equation(eqn.prim, ins, _pick(eqn.outputs, carry), params, eqn.source,
                    eqn.name_stack)


def install(scan_p: Any, while_p: Any) -> None:
    """Register the DCE rules of the ``scan`` and ``while`` primitives; :mod:`.loops` calls it
    once it has made them (this module sits below it: it does not import it).

    Example:
        >>> from fluxion import lax
        >>> from fluxion.core.ir import DCE_RULES
        >>> DCE_RULES[lax.scan_p] is _scan_dce and DCE_RULES[lax.while_p] is _while_dce
        True
    """
    DCE_RULES[scan_p] = _scan_dce
    DCE_RULES[while_p] = _while_dce

"""Mutable references (``fluxion.new_ref``) reached by the bodies of loops and branches.

A loop or branch body is staged once into a Program, so a reference it reaches through a closure
must flow through the staged op like any other value: as part of the carry of ``scan`` and
``while_loop``, as an operand and result of ``cond``/``switch``. ``common.stage`` traces a body
inside a ref frame; a body that touches a reference it does not own abandons the trace
(``ClosedRefs``). The decorators here catch that and run the op again with the references'
values threaded through it (inside the body the references hold the body's tracers, so the user's
code reads and writes them as usual), then write the final values back. This is what JAX does by
discharging the reference effects of a body into its carries.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> from fluxion import lax
    >>> total = fluxion.new_ref(jnp.float32(0))
    >>> def body(c, x):
    ...     total[...] += x
    ...     return c, None
    >>> _ = lax.scan(body, 0, jnp.arange(4.0))
    >>> float(total[...])
    6.0
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from fluxion.core.hijax import LoState
from fluxion.core.refs import ClosedRefs, Ref, RefFrame, pop_frame, push_frame, run_framed

__all__ = ["threads_refs_scan", "threads_refs_while", "threads_refs_branches", "framed"]


def framed(fun: Callable) -> Callable:
    """``fun`` run inside a ref frame: a reference it reaches by closure raises ``ClosedRefs``
    after it returns (the values it wrote are undone)."""

    @functools.wraps(fun)
    def run(*args: Any, **kwargs: Any) -> Any:
        out, closed = run_framed(fun, args, kwargs)
        if closed:
            raise ClosedRefs(closed)
        return out

    return run


def _with_refs(fun: Callable, refs: list) -> Callable:
    """``fun(*args)`` seeing ``refs`` with the given values: ``(args, vals) -> (out, finals)``."""

    def run(args: tuple, vals: list) -> tuple:
        saved = [(r._value, r._level) for r in refs]
        frame = push_frame(RefFrame(refs))
        for r, v in zip(refs, vals):
            r._value, r._level = v, frame.level
        try:
            out = fun(*args)
            finals = [r._value for r in refs]
        finally:
            pop_frame(frame)
            for r, (v, lvl) in zip(refs, saved):
                r._value, r._level = v, lvl
        if frame.closed:  # still more references: the op is run again with them too
            raise ClosedRefs(frame.closed)
        for x in finals:
            if type(x) is Ref:
                raise ValueError("a mutable array reference cannot be stored in another")
        return out, finals

    return run


def _retrying(op: str, run_threaded: Callable) -> Callable:
    """Decorate ``op``: when its body reaches references, run ``run_threaded(refs, ...)``."""

    def decorate(fun: Callable) -> Callable:
        @functools.wraps(fun)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            try:
                return fun(*args, **kwargs)
            except ClosedRefs as first:
                refs = _unique(first.refs)
            while True:
                vals = [r._get_value() for r in refs]
                try:
                    out, finals = run_threaded(fun, refs, vals, *args, **kwargs)
                except ClosedRefs as more:
                    refs = _unique(refs + more.refs)
                    continue
                for r, v in zip(refs, finals):
                    r._set_value(v, op)
                return out

        return wrapped

    return decorate


def _unique(refs: list) -> list:
    seen: set[int] = set()
    return [r for r in refs if not (id(r) in seen or seen.add(id(r)))]


def _carried(states: list) -> list:
    """The references' values as ``scan`` carries them: a hijax box's state with its QDD's
    ``normalize()`` (weak types dropped), as JAX's scan carries a box, so that a box whose
    contents go from weakly to strongly typed in the body is still the same carry (JAX's
    ``while_loop`` refuses that change: so does Fluxion's)."""
    out = []
    for v in states:
        norm = getattr(v.qdd, "normalize", None) if type(v) is LoState else None
        out.append(LoState(norm(), v.vals) if norm is not None else v)
    return out


def _scan_threaded(scan: Callable, refs: list, vals: list, f: Callable, init: Any,
                   xs: Any = None, *args: Any, **kwargs: Any) -> tuple:
    body = _with_refs(f, refs)

    def step(carry: tuple, x: Any) -> tuple:
        c, rv = carry
        (c2, y), finals = body((c, x), rv)
        return (c2, _carried(finals)), y

    (c, finals), ys = scan(step, (init, _carried(vals)), xs, *args, **kwargs)
    return (c, ys), finals


def _while_threaded(while_loop: Callable, refs: list, vals: list, cond_fun: Callable,
                    body_fun: Callable, init_val: Any) -> tuple:
    body, cond = _with_refs(body_fun, refs), _with_refs(cond_fun, refs)

    def step(carry: tuple) -> tuple:
        return body((carry[0],), carry[1])

    def test(carry: tuple) -> Any:
        return cond((carry[0],), carry[1])[0]

    out, finals = while_loop(test, step, (init_val, vals))
    return out, finals


def _branches_threaded(bind: Callable, refs: list, vals: list, api: str, index: Any,
                       branches: Any, names: Any, operands: tuple) -> tuple:
    def lift(branch: Callable) -> Callable:
        run = _with_refs(branch, refs)
        return lambda *ops: run(ops[:-1], ops[-1])

    return bind(api, index, [lift(b) for b in branches], names, (*operands, vals))


threads_refs_scan = _retrying("lax.scan", _scan_threaded)
threads_refs_while = _retrying("lax.while_loop", _while_threaded)
threads_refs_branches = _retrying("lax.cond", _branches_threaded)

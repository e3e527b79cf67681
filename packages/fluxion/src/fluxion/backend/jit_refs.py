"""Jitted calls that read and write mutable references (``fluxion.new_ref``).

A compiled program has no mutable state, so ``jit`` turns the references a function touches into
values: each reference passed as an argument, or reached through a closure, becomes an input of
the staged program (while tracing, the reference's value is swapped for the input tracer, so the
function sees the very same ``Ref`` objects), its final value becomes an extra output, and after
the call the output is written back into the reference. The program depends only on where the
references sit among the arguments (and how many closed-over ones there are), so it is cached and
reused across calls with other references at the same places.

References reached through a closure are found while tracing (``fluxion.core.refs``: the trace's
frame records them); the trace is then abandoned and the function staged again with them as
hidden arguments, and they are remembered for later calls of that signature.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> r = fluxion.new_ref(jnp.zeros(2))
    >>> f = fluxion.jit(lambda ref, x: ref.__setitem__(..., ref[...] + x))
    >>> _ = f(r, 1.0); _ = f(r, 2.0)
    >>> r[...].tolist()
    [3.0, 3.0]
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable

from fluxion.core.hijax import HITYPES, BoxCell, cell_for, is_box
from fluxion.core.refs import ClosedRefs, Ref, RefFrame, find_refs, pop_frame, push_frame, run_framed
from fluxion.tree_util import physical as tree_util

__all__ = ["call_with_refs", "with_ref_frame", "check_no_refs_out"]


class _Current(threading.local):
    refs: list | None = None


_CURRENT = _Current()  # the Ref objects of the call being traced (read only while tracing)


def call_with_refs(j: Any, args: tuple, kwargs: dict, statics: tuple,
                   closed: list | None = None, *, jit: Callable) -> Any:
    """Call the jitted function ``j`` (a ``_Jitted``) on arguments holding references.

    ``jit`` is ``fluxion.jit`` (passed by backend/jit.py, which imports this module), used to
    stage the body that takes the references' values as extra inputs and outputs.
    """
    leaves, treedef = tree_util.tree_flatten((args, kwargs))
    pos = tuple(find_refs(leaves))
    boxes = tuple(i for i, x in enumerate(leaves) if type(x) in HITYPES and is_box(x))
    if boxes:  # boxes of mutable hi-types (core/hijax.py): their cells join the references
        pos = tuple(sorted(pos + boxes))
        leaves = [cell_for(x) if i in boxes else x for i, x in enumerate(leaves)]
    seen: dict[int, int] = {}
    for i in pos:
        r = leaves[i]
        if id(r) in seen and type(r) is BoxCell:  # one box at two places: the same box inside
            continue
        if id(r) in seen:
            names = j.names(args, kwargs)
            raise ValueError(
                "only one reference to a mutable array may be passed as an argument to a "
                f"function, but when tracing {j.name} at {j.source} for jit the mutable array "
                f"reference of type {r.aval} appeared at both {names[seen[id(r)]]} and "
                f"{names[i]}.")
        seen[id(r)] = i
    memo_key = (treedef, statics, pos)
    if closed is None:
        closed = j.ref_closures.get(memo_key, [])
    closed = [r for r in closed if id(r) not in seen]
    refs = _unique([leaves[i] for i in pos]) + closed
    dyn = [x for i, x in enumerate(leaves) if i not in pos]
    vals = [r._get_value() for r in refs]
    where = tuple(next(k for k, r in enumerate(refs) if r is leaves[i]) for i in pos)
    key = (treedef, statics, pos, where, len(closed))
    inner = j.ref_calls.get(key)
    if inner is None:
        body = _RefBody(j, treedef, statics, pos, where, len(closed))
        inner = j.ref_calls[key] = jit(body)
        inner._fluxion_jit.ref_body = True
    prev, _CURRENT.refs = _CURRENT.refs, refs
    try:
        out, finals = inner(dyn, vals)
    except ClosedRefs as more:  # the trace reached references by closure: stage again
        _CURRENT.refs = prev
        return call_with_refs(j, args, kwargs, statics, closed + more.refs, jit=jit)
    finally:
        _CURRENT.refs = prev
    if closed:
        j.ref_closures[memo_key] = closed
    for r, v in zip(refs, finals):
        r._set_value(v, f"jit of {j.name}")
    return out


class _RefBody:
    """The function ``jit`` stages for a call with references: ``(dyn_leaves, ref_values) ->
    (out, final_ref_values)``."""

    def __init__(self, j: Any, treedef: Any, statics: tuple, pos: tuple, where: tuple,
                 n_closed: int) -> None:
        self.j, self.treedef, self.statics, self.pos, self.n_closed = (j, treedef, statics, pos,
                                                                      n_closed)
        self.where = where  # for each position in pos, the index of its reference in refs
        self.__name__ = j.name

    def __call__(self, dyn: list, vals: list) -> tuple:
        refs = _CURRENT.refs
        if refs is None or len(refs) != len(vals):
            raise RuntimeError(f"jit of {self.j.name}: a staged call with references was traced "
                               "outside of its call (internal error)")
        saved = [(r._value, r._level) for r in refs]
        frame = push_frame(RefFrame(refs))
        for r, v in zip(refs, vals):
            r._value, r._level = v, frame.level
        try:
            leaves = list(dyn)
            for i, k in zip(self.pos, self.where):
                r = refs[k]
                leaves.insert(i, r.box if type(r) is BoxCell else r)
            args, kwargs = tree_util.tree_unflatten(self.treedef, leaves)
            out = self.j.bound_fun(self.statics)(*args, **kwargs)
            finals = [r._value for r in refs]
        finally:
            pop_frame(frame)
            for r, (v, lvl) in zip(refs, saved):
                r._value, r._level = v, lvl
        if frame.closed:
            raise ClosedRefs(frame.closed)
        check_no_refs_out(self.j, out, refs[:len(refs) - self.n_closed], args, kwargs)
        return out, finals


def _unique(refs: list) -> list:
    seen: set[int] = set()
    return [r for r in refs if not (id(r) in seen or seen.add(id(r)))]


def with_ref_frame(j: Any, fun: Callable, memo_key: Any) -> Callable:
    """``fun`` traced inside a frame: a reference it reaches by closure abandons the trace
    (``ClosedRefs``, remembered under ``memo_key``); a reference it returns is an error."""

    @functools.wraps(fun)
    def framed(*args: Any, **kwargs: Any) -> Any:
        out, closed = run_framed(fun, args, kwargs)
        if closed:
            j.ref_closures[memo_key] = closed
            raise ClosedRefs(closed)
        check_no_refs_out(j, out, [], args, kwargs)
        return out

    return framed


def check_no_refs_out(j: Any, out: Any, arg_refs: list, args: tuple, kwargs: dict) -> None:
    """JAX's error for a reference among a jitted function's results."""
    for x in tree_util.tree_leaves(out):
        if type(x) is Ref:
            if any(x is r for r in arg_refs):
                leaves = tree_util.tree_leaves((args, kwargs))
                i = next(k for k, a in enumerate(leaves) if a is x)
                try:
                    names = j.names(args, kwargs)
                    where = f"was passed in as the argument {names[i]}"
                except Exception:
                    where = "was passed in as an argument"
            else:
                where = "was created inside the function (or reached through a closure)"
            raise ValueError(
                f"function {j.name} at {j.source} traced for jit returned a mutable array "
                f"reference of type {x.aval}, but mutable array references cannot be returned."
                f"\n\nThe returned mutable array {where}.")

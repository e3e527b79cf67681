"""Mutable high-level values (``jax.experimental.hijax`` boxes) inside staged functions.

A *hi-type* is a user-defined abstract value type; its values are Python objects registered with
:func:`register_hitype` (``typeof`` of one is its hi-type). A *mutable* hi-type
(:class:`MutableHiType`, e.g. flax's ``HijaxVariable``) describes a box whose contents can change,
even in structure: its current *quasi-dynamic data* (QDD, ``box.cur_qdd()``) says what it holds,
and the type converts between the box and flat low-level (array) values with
``read_loval(qdd, box)`` / ``update_from_loval(qdd, box, *lo_vals)``.

A compiled program has no boxes, so ``jit`` and the loop and branch bodies treat a box the way
they treat a mutable array reference (``core/refs.py``): a :class:`BoxCell` stands for the box in
the ref frames. Its value, as the frames see it, is a :class:`LoState`: the QDD (static, part of
the tree structure, so a staged program is reused only for boxes of the same contents) and the
low-level values (the program's inputs and outputs). Setting the cell's value writes the
low-level values into the box, so the user's code sees the very same box object holding the
trace's tracers, and after the call the final values are written back.

Example:
    >>> class Counter:
    ...     pass
    >>> Counter in HITYPES
    False
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable

from fluxion.core.avals import AbstractValue
from fluxion.core.refs import Ref, RefFrame, current_frame, pop_frame, push_frame
from fluxion.core.trace import STATE, Tracer

__all__ = ["HITYPES", "HiType", "MutableHiType", "LoState", "BoxCell", "register_hitype",
           "is_box", "cell_for", "touch", "own", "with_boxes"]

# value class -> its typeof function (jax.experimental.hijax.register_hitype)
HITYPES: dict[type, Callable[[Any], Any]] = {}


class HiType(AbstractValue):
    """Base class of a user-defined immutable abstract value type (JAX's ``HiType``): it lowers
    to low-level types with ``lo_ty``/``lower_val``/``raise_val``.

    Example:
        >>> HiType.is_high, HiType.has_qdd
        (True, False)
    """

    __slots__ = ("__dict__",)
    is_high = True
    has_qdd = False


class MutableHiType(AbstractValue):
    """Base class of a user-defined mutable abstract value type (JAX's ``MutableHiType``): a box
    whose contents are described by quasi-dynamic data, lowered with ``lo_ty_qdd``,
    ``new_from_loval``, ``read_loval`` and ``update_from_loval``.

    Example:
        >>> MutableHiType.is_high, MutableHiType.has_qdd
        (True, True)
    """

    __slots__ = ("__dict__",)
    is_high = True
    has_qdd = True
    is_writer = False

    def lo_ty(self) -> Any:
        raise TypeError(f"{type(self).__name__}.lo_ty: a mutable hi-type lowers with "
                        "lo_ty_qdd(qdd) instead")


def register_hitype(cls: type, typeof_fn: Callable[[Any], Any]) -> None:
    """Make ``typeof_fn(value)`` the abstract value of every instance of ``cls``."""
    if not callable(typeof_fn):
        raise TypeError(f"register_hitype: expected a function giving the type of a "
                        f"{cls.__name__} value, got {type(typeof_fn).__name__}")
    HITYPES[cls] = typeof_fn


def is_box(x: Any) -> bool:
    """Whether ``x`` is a value of a registered mutable hi-type."""
    fn = HITYPES.get(type(x))
    return fn is not None and isinstance(fn(x), MutableHiType)


class LoState:
    """A box's contents at one point: its QDD (static) and its low-level values (the leaves).
    ``experimental/hijax.py`` registers it as a pytree node."""

    __slots__ = ("qdd", "vals")

    def __init__(self, qdd: Any, vals: Any) -> None:
        self.qdd = qdd
        self.vals = tuple(vals)

    def __repr__(self) -> str:
        return f"LoState({self.qdd!r}, {list(self.vals)!r})"


class BoxCell(Ref):
    """Stands for a box in the ref frames of ``jit`` and the control-flow ops: its ``_value`` is
    the box's :class:`LoState`, and setting it writes the low-level values into the box."""

    __slots__ = ("box", "ty")

    def __init__(self, box: Any, ty: MutableHiType) -> None:  # no frame bookkeeping: see own()
        self.box = box
        self.ty = ty
        self._aval = ty
        self._level = 0

    # The frames read and write ``_value`` directly (saving, swapping in the trace's values,
    # restoring): the hi-primitives that does with are not uses by the function being traced.
    @property  # type: ignore[override]
    def _value(self) -> LoState:
        _QUIET.depth += 1
        try:
            qdd = self.box.cur_qdd()
            return LoState(qdd, self.ty.read_loval(qdd, self.box))
        finally:
            _QUIET.depth -= 1

    @_value.setter
    def _value(self, state: LoState) -> None:
        _QUIET.depth += 1
        try:
            self.ty.update_from_loval(state.qdd, self.box, *state.vals)
        finally:
            _QUIET.depth -= 1

    def _set_value(self, value: Any, op: str) -> None:
        frame = current_frame()
        if frame is not None and id(self) not in frame.owned:
            touch(self.box)
        for v in value.vals:
            if isinstance(v, Tracer) and v._interp.level > self._level:
                raise ValueError(
                    f"{op}: cannot write a value traced by {v._interp.description} into a "
                    f"value of type {self.ty!r} made outside of it (the value would leak out of "
                    "the transformation). Pass it as an argument of the transformed function, "
                    "or create it inside.")
        self._value = value

    def user_value(self) -> Any:
        """What the user's function receives in place of the cell: the box itself."""
        return self.box

    def __repr__(self) -> str:
        return f"BoxCell({type(self.box).__name__})"


# id(box) -> its cell, so every frame sees one cell per box (boxes need not be weakly
# referenceable: flax's HijaxVariable has __slots__ without __weakref__; see _sweep)
_CELLS: dict[int, BoxCell] = {}
_SWEEP_AT = [512]


def cell_for(box: Any) -> BoxCell:
    """The cell standing for ``box`` (made on first use)."""
    cell = _CELLS.get(id(box))
    if cell is None or cell.box is not box:
        if len(_CELLS) >= _SWEEP_AT[0]:
            _sweep()
        cell = _CELLS[id(box)] = BoxCell(box, HITYPES[type(box)](box))
    return cell


def _sweep() -> None:
    """Forget the cells whose box only the cell itself keeps alive (nobody can reach that box
    again, so no frame will ask for its cell)."""
    for key, cell in list(_CELLS.items()):
        if sys.getrefcount(cell.box) <= 2:  # the cell's attribute and getrefcount's argument
            del _CELLS[key]
    _SWEEP_AT[0] = max(512, 2 * len(_CELLS))


class _Quiet(threading.local):
    depth = 0


_QUIET = _Quiet()  # > 0 while a cell reads or writes its box


def touch(box: Any) -> None:
    """Note that the current trace uses ``box``: inside a ref frame that does not own it, the
    box was reached through a closure (the frame records it, as it does a Ref's)."""
    frame = current_frame()
    if frame is None or _QUIET.depth:
        return
    cell = cell_for(box)
    if id(cell) in frame.owned:
        return
    frame.owned.add(id(cell))
    frame.saved[id(cell)] = (cell._value, cell._level)
    frame.closed.append(cell)
    cell._level = frame.level


def own(box: Any) -> None:
    """A box made while a trace runs belongs to the innermost frame (not a closure)."""
    frame = current_frame()
    if frame is None:
        return
    cell = cell_for(box)
    frame.owned.add(id(cell))
    cell._level = STATE.interp.level


def with_boxes(fun: Callable, leaves: list, treedef: Any) -> tuple[Callable, list, list]:
    """``fun`` taking the arguments whose flat leaves are ``leaves`` (of structure ``treedef``),
    some of them boxes, as ``run(dyn, vals)``: ``dyn`` the other leaves, ``vals`` the boxes'
    :class:`LoState` s. While it runs each box holds the values given (it is restored after).
    Returns ``run``, ``dyn`` and the boxes' current states (``eval_shape`` traces ``run``)."""
    pos = [i for i, x in enumerate(leaves) if type(x) in HITYPES and is_box(x)]
    cells = [cell_for(leaves[i]) for i in pos]
    uniq = list({id(c): c for c in cells}.values())
    dyn = [x for i, x in enumerate(leaves) if i not in pos]

    def run(dyn: list, vals: list) -> Any:
        saved = [(c._value, c._level) for c in uniq]
        frame = push_frame(RefFrame(uniq))
        try:
            for c, v in zip(uniq, vals):
                c._value, c._level = v, frame.level
            full = list(dyn)
            for i, c in zip(pos, cells):
                full.insert(i, c.box)
            args, kwargs = treedef.unflatten(full)
            return fun(*args, **kwargs)
        finally:
            pop_frame(frame)
            for c, (v, lvl) in zip(uniq, saved):
                c._value, c._level = v, lvl

    return run, dyn, [c._value for c in uniq]

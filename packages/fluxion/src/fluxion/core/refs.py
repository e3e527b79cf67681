"""Mutable array references: the :class:`Ref` box, its abstract value :class:`AbstractRef`, and
the per-thread *ref frames* that let ``jit`` stage functions which read and write references.

A :class:`Ref` holds one array (its *value*) and can be rebound to another. Reading ``ref[idx]``
and writing ``ref[idx] = v`` are ordinary array operations on that value (the operations are
registered by :mod:`fluxion.ref`, which sits above ``lax``), so eagerly and under ``grad``/
``vmap`` a reference is just a rebindable name for a value.

``jit`` stages a function once and calls the compiled program many times, so a reference the
function touches must be an input and an output of the program, not a constant. While ``jit``
traces, a :class:`RefFrame` is current: the references passed as arguments have their value
swapped for the program's input tracers (they are *owned* by the frame), and so have references
created during the trace. A reference the function reaches through a closure is not owned: the
frame records it, and after the trace ``jit`` stages the function again with it as a hidden
argument (see ``backend/jit.py``). After the compiled call the final values are written back.

Example:
    >>> import numpy as np
    >>> from fluxion.core.avals import ShapedArray
    >>> AbstractRef(ShapedArray((3,), np.dtype("float32")))
    Ref{float32[3]}
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from fluxion.core.avals import AbstractValue, ShapedArray
from fluxion.core.trace import STATE, Tracer

__all__ = ["AbstractRef", "Ref", "RefFrame", "ClosedRefs", "current_frame", "push_frame",
           "pop_frame", "find_refs"]


class AbstractRef(AbstractValue):
    """The abstract value of a mutable reference to an array of abstract value ``inner_aval``.

    Example:
        >>> import numpy as np
        >>> from fluxion.core.avals import ShapedArray
        >>> AbstractRef(ShapedArray((2,), np.dtype("int32"))).shape
        (2,)
    """

    __slots__ = ("inner_aval", "memory_space", "kind")

    def __init__(self, inner_aval: ShapedArray, memory_space: Any = None,
                 kind: Any = None) -> None:
        if not isinstance(inner_aval, ShapedArray):
            raise TypeError(f"AbstractRef: expected the ShapedArray of the referenced array, got "
                            f"{type(inner_aval).__name__}: {inner_aval!r}")
        self.inner_aval = inner_aval
        self.memory_space = memory_space
        self.kind = kind

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    ndim = property(lambda self: len(self.inner_aval.shape))
    weak_type = property(lambda self: self.inner_aval.weak_type)
    sharding = property(lambda self: self.inner_aval.sharding)

    @property
    def size(self) -> int:
        n = 1
        for d in self.inner_aval.shape:
            n *= d
        return n

    def __eq__(self, other: object) -> bool:
        return (type(other) is AbstractRef and self.inner_aval == other.inner_aval
                and self.memory_space == other.memory_space and self.kind == other.kind)

    def __hash__(self) -> int:
        return hash((AbstractRef, self.inner_aval, self.memory_space, self.kind))

    def __repr__(self) -> str:
        a = self.inner_aval
        return f"Ref{{{a.dtype.name}[{','.join(map(str, a.shape))}]}}"

    str_short = __repr__


class RefFrame:
    """The references a ``jit`` trace in progress owns, and those it reached by closure."""

    __slots__ = ("owned", "closed", "saved", "level")

    def __init__(self, owned: Any = ()) -> None:
        self.owned: set[int] = {id(r) for r in owned}
        self.closed: list[Ref] = []         # reached by closure, in order of first use
        self.saved: dict[int, tuple] = {}   # their (value, level) before the trace touched them
        self.level = STATE.interp.level     # the staging interpreter's: pushed inside the trace


class ClosedRefs(Exception):
    """Raised out of a ``jit`` trace that reached references through a closure: ``jit`` stages
    the function again with them as hidden arguments (never seen by users)."""

    def __init__(self, refs: list["Ref"]) -> None:
        super().__init__(
            f"the function reads or writes {len(refs)} mutable array reference(s) "
            f"({', '.join(str(r.aval) for r in refs[:3])}) reached through its closure, which "
            "this entry point does not support (calling the jitted function does; pass the "
            "references as arguments, or use their values)")
        self.refs = refs


class _Frames(threading.local):
    stack: list[RefFrame]

    def __init__(self) -> None:
        self.stack = []


_FRAMES = _Frames()


def current_frame() -> RefFrame | None:
    """The innermost ``jit`` trace's frame on this thread, or None."""
    stack = _FRAMES.stack
    return stack[-1] if stack else None


def push_frame(frame: RefFrame) -> RefFrame:
    _FRAMES.stack.append(frame)
    return frame


def pop_frame(frame: RefFrame) -> None:
    """Leave ``frame``: the closed-over references get back the values they had before it."""
    stack = _FRAMES.stack
    if stack and stack[-1] is frame:
        stack.pop()
    for r in frame.closed:
        r._value, r._level = frame.saved[id(r)]


def run_framed(fun: Callable, args: tuple, kwargs: dict) -> tuple[Any, list]:
    """``fun(*args, **kwargs)`` run inside a new frame; returns its result and the references
    it reached by closure (their values are restored when the frame is left)."""
    frame = push_frame(RefFrame())
    try:
        out = fun(*args, **kwargs)
    finally:
        pop_frame(frame)
    return out, frame.closed


def find_refs(leaves: Any) -> list[int]:
    """The positions of the references among ``leaves``."""
    return [i for i, x in enumerate(leaves) if type(x) is Ref]


# Indexing operations on the value, registered by fluxion.ref (they need the NumPy layer).
OPS: dict[str, Any] = {}


class Ref:
    """A mutable reference to an array (JAX's ``jax.Ref``): ``ref[idx]`` reads, ``ref[idx] = v``
    writes, ``fluxion.freeze(ref)`` reads the whole value. Made by ``fluxion.new_ref``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> r = fluxion.new_ref(jnp.zeros(3))
        >>> r[1] = 2.0
        >>> r[...].tolist()
        [0.0, 2.0, 0.0]
    """

    __slots__ = ("_value", "_aval", "_level", "__weakref__")

    def __init__(self, value: Any, aval: AbstractRef) -> None:
        self._value = value
        self._aval = aval
        # The transformation the reference belongs to: values traced by a transformation
        # inside it cannot be written into it (they would leak out).
        self._level = STATE.interp.level
        frame = current_frame()
        if frame is not None:
            frame.owned.add(id(self))

    # -- the value, as the current trace sees it
    def _get_value(self) -> Any:
        frame = current_frame()
        if frame is not None and id(self) not in frame.owned:
            _note_closed(frame, self)
        return self._value

    def _set_value(self, value: Any, op: str) -> None:
        frame = current_frame()
        if frame is not None and id(self) not in frame.owned:
            _note_closed(frame, self)
        if isinstance(value, Tracer):
            interp = value._interp
            if interp.level > self._level:
                raise ValueError(
                    f"{op}: cannot write a value traced by {interp.description} into a "
                    f"reference of type {self._aval} made outside of it (the value would leak "
                    "out of the transformation). Move the reference to be an argument of the "
                    "transformed function, or create it inside.")
        self._value = value

    aval = property(lambda self: self._aval)
    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)
    ndim = property(lambda self: self._aval.ndim)
    size = property(lambda self: self._aval.size)
    weak_type = property(lambda self: self._aval.weak_type)

    @property
    def sharding(self) -> Any:
        return self._value.sharding

    committed = property(lambda self: True)

    def _typeof(self) -> AbstractRef:  # fluxion.typeof
        return self._aval

    def __len__(self) -> int:
        if not self._aval.shape:
            raise TypeError("len() of unsized object")
        return self._aval.shape[0]

    def __getitem__(self, idx: Any) -> Any:
        return OPS["get"](self, idx)

    def __setitem__(self, idx: Any, value: Any) -> None:
        OPS["set"](self, idx, value)

    def addupdate(self, x: Any, idx: Any = ()) -> None:
        """Add ``x`` to ``self[idx]`` in place."""
        OPS["addupdate"](self, idx, x)

    @property
    def at(self) -> Any:
        raise NotImplementedError("Ref.at: write through indexing instead (ref[idx] = v, "
                                  "ref[idx] += v), as in JAX")

    def __repr__(self) -> str:
        v = self._value
        if isinstance(v, Tracer):
            return f"Ref({v!r})"
        text = repr(v)
        return "Ref" + text[5:] if text.startswith("Array") else f"Ref({text})"


def _note_closed(frame: RefFrame, ref: Ref) -> None:
    # Until the trace ends (and jit stages again with ``ref`` as an argument) it belongs to it.
    frame.owned.add(id(ref))
    frame.closed.append(ref)
    frame.saved[id(ref)] = (ref._value, ref._level)
    ref._level = frame.level

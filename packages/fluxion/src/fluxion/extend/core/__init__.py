"""``fluxion.extend.core`` (JAX's ``jax.extend.core``): the staged program (``Jaxpr``,
``ClosedJaxpr``, ``JaxprEqn``, ``Var``, ``Literal``), ``Primitive``, and the current trace.

Fluxion's names for JAX's: a jaxpr is a :class:`~fluxion.core.ir.Program`, an equation an
:class:`~fluxion.core.ir.Equation`, a trace an interpreter. ``get_opaque_trace_state`` gives an
object equal to another only when both were taken under the same trace, which is how flax and
haiku tell whether a transformation has been entered since a module was created.

Example:
    >>> import fluxion
    >>> from fluxion.extend import core
    >>> outer = core.get_opaque_trace_state()
    >>> seen = []
    >>> _ = fluxion.jit(lambda x: seen.append(core.get_opaque_trace_state() == outer) or x)(1.0)
    >>> seen, core.get_opaque_trace_state() == outer
    ([False], True)
"""

from __future__ import annotations

import contextlib
import importlib
import weakref
from typing import Any, Iterator

from fluxion.core import trace as _trace
from fluxion.core.avals import ShapedArray
from fluxion.core.ir import Equation as JaxprEqn
from fluxion.core.ir import Literal, Var
from fluxion.core.ir import Program as Jaxpr
from fluxion.core.primitive import Primitive
from fluxion.core.public import eval_jaxpr
from fluxion.core.refs import AbstractRef
from fluxion.transforms.staging import ClosedProgram as ClosedJaxpr

__all__ = ["ClosedJaxpr", "DropVar", "Effect", "Jaxpr", "JaxprEqn", "Literal", "Primitive",
           "TraceTag", "Var", "find_top_trace", "get_opaque_trace_state", "jaxpr_as_fun",
           "mapped_aval", "primitives", "unmapped_aval", "set_current_trace", "take_current_trace", "valid_jaxtype"]


class Effect:
    """A generic side effect of an equation (the base class of effect types). Fluxion's
    programs mark host callbacks as effectful without effect objects."""


class DropVar(Var):
    """An equation output that nothing reads. Fluxion's programs give every output an ordinary
    :class:`Var` (unused ones are removed by dead-code elimination), so no variable of a Fluxion
    program is a ``DropVar``; the class exists for code that tests ``isinstance(v, DropVar)``."""

    __slots__ = ()


class OpaqueTraceState:
    """The trace current when it was taken; equal only to another taken under the same trace."""

    __slots__ = ("_ref",)

    def __init__(self, interp: Any) -> None:
        self._ref = weakref.ref(interp)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OpaqueTraceState):
            return False
        mine = self._ref()
        return mine is not None and mine is other._ref()

    __hash__ = None  # type: ignore[assignment]  # as JAX's: compared, never hashed

    def __repr__(self) -> str:
        interp = self._ref()
        return f"OpaqueTraceState({getattr(interp, 'description', None)!r})"


def get_opaque_trace_state(convention: Any = None) -> OpaqueTraceState:
    """An opaque token of the current trace (``convention`` names the caller, as in JAX).

    Example:
        >>> get_opaque_trace_state() == get_opaque_trace_state()
        True
    """
    del convention
    return OpaqueTraceState(_trace.current())


class _NoTrace(_trace.Interpreter):
    description = "take_current_trace (no trace is current inside it)"

    def process_primitive(self, prim: Any, args: Any, params: dict[str, Any]) -> Any:
        raise RuntimeError(f"{prim.name}: an operation was bound inside take_current_trace(); "
                           f"call the taken trace's process_primitive instead")


_NO_TRACE = _NoTrace()


@contextlib.contextmanager
def take_current_trace() -> Iterator[Any]:
    """Yields the current trace (an interpreter) with no trace current inside the block.

    Example:
        >>> with take_current_trace() as t:
        ...     t.description
        'eager evaluation'
    """
    taken = _trace.current()
    with _trace.set_current(_NO_TRACE):
        yield taken


def set_current_trace(trace: Any, check_leaks: bool = False) -> Any:
    """Context manager making ``trace`` (an interpreter) current inside the block.

    Example:
        >>> with take_current_trace() as t, set_current_trace(t):
        ...     pass
    """
    del check_leaks
    return _trace.set_current(trace)


def find_top_trace(xs: Any) -> Any:
    """The current trace (JAX's ``find_top_trace``; ``xs`` is ignored, as in JAX 0.10).

    Example:
        >>> find_top_trace(()).description
        'eager evaluation'
    """
    del xs
    return _trace.current()


class TraceTag:
    """Identifies the values a user-defined trace owns (JAX's ``TraceTag``): compare tags with
    ``is``; any two tags are ``==`` and hash alike, so a cached transformation keyed on a tag
    is reused across tags, as in JAX.

    Example:
        >>> a, b = TraceTag(), TraceTag()
        >>> a is b, a == b, hash(a) == hash(b)
        (False, True, True)
    """

    def __hash__(self) -> int:
        return hash(TraceTag)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TraceTag)


def jaxpr_as_fun(closed_jaxpr: Any, *args: Any) -> Any:
    """The function that evaluates ``closed_jaxpr`` (a ``ClosedJaxpr``) on its arguments.

    Example:
        >>> import fluxion
        >>> f = jaxpr_as_fun(fluxion.make_jaxpr(lambda x: x + 1.0)(1.0))
        >>> [float(v) for v in f(2.0)]
        [3.0]
    """

    def fun(*xs: Any) -> list[Any]:
        return eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *xs)

    return fun(*args) if args else fun


def valid_jaxtype(x: Any) -> bool:
    """Whether ``x`` can be a value of a Fluxion computation (an array, NumPy value or Python
    scalar).

    Example:
        >>> valid_jaxtype(1.0), valid_jaxtype("a")
        (True, False)
    """
    try:
        importlib.import_module("fluxion.transforms.staging").abstractify(x)
    except (TypeError, ValueError):
        return False
    return True


def _shaped(fun: str, aval: Any) -> Any:
    if isinstance(aval, (ShapedArray, AbstractRef)):
        return aval
    raise TypeError(f"no {fun} handler for {aval} of type {type(aval)}")


def mapped_aval(size: int, axis: int | None, aval: Any) -> Any:
    """The abstract value of one slice of ``aval`` along ``axis`` (of length ``size``): what a
    batching rule's body sees of a value mapped over ``axis`` (a non-negative position; ``axis=None``: not mapped, the
    same aval). A reference's aval maps its referenced array's.

    Example:
        >>> import numpy as np
        >>> from fluxion.core.avals import ShapedArray
        >>> mapped_aval(3, 0, ShapedArray((3, 4), np.dtype("float32")))
        ShapedArray(float32[4])
    """

    _shaped("mapping", aval)
    if axis is None:
        return aval
    if isinstance(aval, AbstractRef):
        return AbstractRef(mapped_aval(size, axis, aval.inner_aval), aval.memory_space,
                           aval.kind)
    if not 0 <= axis < len(aval.shape) or aval.shape[axis] != size:
        raise AssertionError(f"mapped_aval: {aval} has no axis {axis} of length {size} (axis "
                             f"is a non-negative position)")
    shape = list(aval.shape)
    del shape[axis]
    return aval.update(shape=tuple(shape))


def unmapped_aval(size: int, axis: int | None, aval: Any, explicit_mesh_axis: Any = None
                  ) -> Any:
    """The abstract value of ``size`` stacked values of ``aval``, stacked at ``axis`` (a
    non-negative position; ``None``: not stacked, the same aval), the inverse of
    :func:`mapped_aval`. ``explicit_mesh_axis`` (JAX's sharding of the new axis) is accepted;
    the result carries no sharding.

    Example:
        >>> import numpy as np
        >>> from fluxion.core.avals import ShapedArray
        >>> unmapped_aval(5, 1, ShapedArray((3, 4), np.dtype("float32")))
        ShapedArray(float32[3,5,4])
    """

    del explicit_mesh_axis
    _shaped("unmapping", aval)
    if axis is None:
        return aval
    if type(axis) is not int:
        raise TypeError(axis)
    if isinstance(aval, AbstractRef):
        return AbstractRef(unmapped_aval(size, axis, aval.inner_aval), aval.memory_space,
                           aval.kind)
    if not 0 <= axis <= len(aval.shape):
        raise AssertionError(f"unmapped_aval: position {axis} is outside 0..{len(aval.shape)}")
    shape = list(aval.shape)
    shape.insert(axis, size)
    return aval.update(shape=tuple(shape))


def __getattr__(name: str) -> Any:
    if name == "primitives":
        return importlib.import_module("fluxion.extend.core.primitives")
    raise AttributeError(f"module 'fluxion.extend.core' has no attribute {name!r}: "
                         f"jax.extend.core.{name} is not provided by Fluxion (see "
                         f"docs/guide/coming-from-jax.md)")

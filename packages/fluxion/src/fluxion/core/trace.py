"""Interpreters and tracers: context-sensitive interpretation of primitives.

Each thread has one *current* interpreter (``STATE.interp``, thread-local: threads trace and run
independently, as JAX's trace context is per thread; a new thread starts in eager evaluation).
``Primitive.bind`` hands every operation to it. Outside any transformation it is the eager
interpreter, which runs the primitive on the device. A transformation (jvp, vmap, staging for
jit) makes a new interpreter whose parent is the interpreter that was current, makes it current
while the user's function runs, and wraps the values it tracks in *tracers* that point at it.

When an interpreter processes a primitive it unwraps its own tracers and does its work by binding
primitives again *with its parent current*. Values it does not own (plain arrays, tracers of
outer interpreters) are constants to it: the outer interpreter sees them when the inner one binds
at the parent level. So nested transformations never confuse each other's values, whatever the
order in which tracers meet.

A tracer whose interpreter has finished (leaked out of its transformation) raises
:class:`UnexpectedTracerError` when it is used again.

Example:
    >>> current() is EVAL
    True
"""

from __future__ import annotations

import operator
import threading
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from fluxion.core.avals import ShapedArray
from fluxion.core.errors import (
    ConcretizationTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
    user_source_line,
)
from fluxion.core.ir import _JAX_PARAM_NAMES, JaxNamedParams

__all__ = [
    "Interpreter", "EvalInterpreter", "Tracer", "STATE", "EVAL", "current", "set_current",
    "interpreter_scope", "set_eager_handler", "is_tracer", "leak_message", "check_live",
    "derivative_message",
    "VirtualArray", "ExtendedArray", "Trace",
]


class _State(threading.local):
    """This thread's trace state. ``interp`` defaults (class attribute) to :data:`EVAL`, so every
    thread starts outside all transformations without any per-thread setup."""

    interp: "Interpreter"


STATE = _State()


class Interpreter:
    """Base class of every interpreter.

    Subclasses implement :meth:`process_primitive`; a tracer-producing interpreter also
    implements :meth:`to_concrete` when its tracers can have a concrete value (JVP tracers whose
    primal is concrete, so Python ``if x > 0`` works under ``grad``).
    """

    level: int = 0
    active: bool = True
    parent: "Interpreter | None" = None
    # Words that name this transformation in error messages ("jit of f at x.py:3").
    description: str = "a transformation"

    @property
    def main(self) -> Any:
        """What identifies this transformation (JAX's deprecated ``Trace.main``, its ``tag``):
        equinox's ``filter_jvp`` tells its own tracers by ``tracer._trace.main is main``. A
        Fluxion interpreter is made per transformation, so it is its own identity."""
        return self

    def process_primitive(self, prim: Any, args: Sequence[Any], params: dict[str, Any]) -> Any:
        raise NotImplementedError

    def to_concrete(self, tracer: "Tracer") -> Any:
        """The concrete value of ``tracer``, or raise ConcretizationTypeError."""
        raise ConcretizationTypeError(self.concretization_message(tracer, "a concrete value"))

    def to_constant(self, tracer: "Tracer", what: str) -> Any:
        """``tracer``'s value where it stands for nothing but that value (what ``float``,
        ``complex`` and ``numpy.asarray`` may read), or raise ConcretizationTypeError saying
        that ``what`` was expected.

        The concrete value, unless the interpreter attaches something to it that a Python or
        NumPy value would lose: a differentiating one overrides this to always raise (JAX's
        tracers refuse these conversions even where ``int``/``bool`` read the primal).
        """
        try:
            return self.to_concrete(tracer)
        except ConcretizationTypeError:
            raise ConcretizationTypeError(self.concretization_message(tracer, what)) from None

    def concretization_message(self, tracer: "Tracer", what: str) -> str:
        return (f"Abstract tracer value encountered where {what} is expected: {tracer.aval_str()} "
                f"traced by {self.description}, at {user_source_line()}.")

    # JAX's ``Trace`` methods, which every trace has: a trace is valid while it is active.
    def invalidate(self) -> None:
        """Marks this trace finished: its tracers raise UnexpectedTracerError when used."""
        self.active = False

    def is_valid(self) -> bool:
        """Whether this trace's tracers may still be used."""
        return self.active

    def owns(self, x: Any) -> bool:
        """True when ``x`` is a tracer of this interpreter (checking that foreign tracers are live)."""
        if not isinstance(x, Tracer):
            return False
        interp = x._interp
        if interp is self:
            return True
        check_live(x, self)
        return False


def check_live(x: "Tracer", at: Interpreter) -> None:
    """Raise UnexpectedTracerError if tracer ``x`` cannot legally appear under interpreter ``at``."""
    interp = x._interp
    if not interp.active or interp.level > at.level:
        raise UnexpectedTracerError(leak_message(x))


def leak_message(x: "Tracer") -> str:
    """The UnexpectedTracerError message for tracer ``x`` used where it does not belong."""
    made = getattr(x, "creation_site", None)
    where = f" It was created at {made}." if made else ""
    if x._interp.active:  # still running: e.g. the value reached another thread
        when = ("was used outside of that transformation while it is still running (for example "
                "by another thread, or stored")
    else:
        when = ("was used after that transformation finished (it leaked out, for example by "
                "being stored")
    return (
        f"Encountered an unexpected tracer: a value {x.aval_str()} traced by "
        f"{x._interp.description} {when} in a global, a closure or an object attribute).{where} "
        "Return values out of transformed functions instead of storing them as side effects.")


def derivative_message(x: "Tracer", what: str) -> str:
    """The ConcretizationTypeError message for a Python/NumPy conversion of ``x``, a value that
    carries a derivative (a ``grad``/``jvp`` tracer): its value may be known, but converting it
    would drop the derivative silently, so it is refused as JAX refuses it.

    Example:
        >>> import fluxion
        >>> def f(x):
        ...     return x * float(x)
        >>> try:
        ...     fluxion.grad(f)(2.0)
        ... except fluxion.errors.ConcretizationTypeError as e:
        ...     print(str(e).split(" is expected")[0])
        Abstract tracer value encountered where a concrete float value (the float function)
    """
    return (
        f"Abstract tracer value encountered where {what} is expected: {x.aval_str()} being "
        f"differentiated ({x._interp.description}), at {user_source_line()}. The value "
        "carries a derivative that a Python or NumPy value would drop, so (as in JAX) float(), "
        "complex() and NumPy conversions of it are refused under grad, jvp, vjp and "
        "linearize; int(), bool() and .item() read a value known while tracing. Ways out: "
        "keep the computation in fluxion.numpy / lax (x.astype(float) converts a dtype), or "
        "read the value without its derivative (float(lax.stop_gradient(x))).")


class _TraceMeta(type):
    """Every interpreter is a ``jax.core.Trace`` for ``isinstance``/``issubclass`` (as every JAX
    trace is), while only classes deriving from :class:`Trace` get its user-trace behaviour."""

    def __instancecheck__(cls, x: Any) -> bool:
        return isinstance(x, Interpreter) if cls is Trace else type.__instancecheck__(cls, x)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, Interpreter) if cls is Trace else type.__subclasscheck__(cls, sub)


class Trace(Interpreter, metaclass=_TraceMeta):
    """JAX's ``jax.core.Trace``: the base class of traces that libraries define themselves.

    A subclass implements ``process_primitive(primitive, tracers, params)``, where ``tracers``
    are all of the primitive's operands (its own tracers and any other values), and wraps its
    values in tracers made with ``Tracer(trace, aval)``. Operations on those tracers while the
    trace is current (``jax.extend.core.set_current_trace``) come to ``process_primitive``; as
    in JAX, it runs with no trace current (operations inside it evaluate eagerly), and it
    passes work on with ``primitive.bind_with_trace(parent_trace, values, avals, params)``.
    A call of a ``custom_jvp``/``custom_vjp`` function comes to ``process_custom_jvp_call`` /
    ``process_custom_vjp_call``. The trace's tracers are usable while :meth:`is_valid`.

    Its level (for Fluxion's leak checks) is that of its ``parent_trace`` attribute, JAX's
    convention for the trace a trace passes work to: a transformation started inside it is
    deeper than every trace outside it.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.extend.core import set_current_trace, take_current_trace
        >>> class Count(Trace):
        ...     def __init__(self, parent):
        ...         super().__init__()
        ...         self.parent_trace, self.seen = parent, []
        ...     def process_primitive(self, prim, tracers, params):
        ...         self.seen.append(prim.name)
        ...         vals = [t.val if isinstance(t, Box) else t for t in tracers]
        ...         avals = [getattr(v, "aval", None) for v in vals]
        ...         return prim.bind_with_trace(self.parent_trace, vals, avals, params)
        >>> class Box(Tracer):
        ...     def __init__(self, trace, val):
        ...         super().__init__(trace, jnp.asarray(val).aval)
        ...         self.val = val
        >>> x = jnp.ones(2)
        >>> with take_current_trace() as parent:
        ...     t = Count(parent)
        ...     with set_current_trace(t):
        ...         b = Box(t, x)
        ...         y = jnp.sin(b) * b
        >>> t.seen, round(float(y[0]), 4)
        (['sin', 'mul'], 0.8415)
    """

    def __init__(self) -> None:
        self.active = True
        self.requires_low = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        rule = cls.__dict__.get("process_primitive")
        if rule is not None and not getattr(rule, "_runs_without_trace", False):
            cls.process_primitive = _without_trace(rule)  # type: ignore[method-assign]

    @property  # type: ignore[override]
    def level(self) -> int:
        pinned = self.__dict__.get("_level")
        if pinned is not None:
            return pinned
        parent = getattr(self, "parent_trace", None)
        return parent.level if isinstance(parent, Interpreter) else 0

    @level.setter
    def level(self, value: int) -> None:
        self.__dict__["_level"] = value

    def stage_value(self, val: Any) -> Any:
        """Lifts ``val`` into this trace (a subclass defines it)."""
        raise NotImplementedError("must override")

    def process_primitive(self, prim: Any, tracers: Sequence[Any], params: dict[str, Any]) -> Any:
        raise NotImplementedError("must override")

    def process_call(self, call_primitive: Any, f: Any, tracers: Sequence[Any],
                     params: dict[str, Any]) -> Any:
        raise NotImplementedError(f"{type(self)} must override process_call to handle "
                                  "call-like primitives")

    def process_custom_jvp_call(self, primitive: Any, fun: Any, jvp: Any,
                                tracers: Sequence[Any], *, symbolic_zeros: bool) -> Any:
        raise NotImplementedError(f"{type(self)} must override process_custom_jvp_call to "
                                  "handle custom_jvp primitives")

    def process_custom_vjp_call(self, primitive: Any, fun: Any, fwd: Any, bwd: Any,
                                tracers: Sequence[Any], *, out_trees: Any,
                                symbolic_zeros: bool) -> Any:
        raise NotImplementedError(f"{type(self)} must override process_custom_vjp_call to "
                                  "handle custom_vjp primitives")

    def full_raise(self, x: Any) -> Any:
        return x

    @property
    def main(self) -> Any:
        return getattr(self, "tag", None)

    @property
    def description(self) -> str:  # type: ignore[override]
        return f"the trace {type(self).__name__}"

    def __repr__(self) -> str:
        return type(self).__name__


def _without_trace(rule: Callable) -> Callable:
    """``rule`` run with eager evaluation current, as JAX's ``bind`` runs a trace's rule; the
    parameters also answer to JAX's names (``params["jaxpr"]`` of ``jit``)."""
    def process_primitive(self: Trace, prim: Any, tracers: Sequence[Any],
                          params: dict[str, Any]) -> Any:
        jax_names = _JAX_PARAM_NAMES.get(prim.name)
        if jax_names is not None and type(params) is not JaxNamedParams:
            params = JaxNamedParams(params, jax_names)
        prev = STATE.interp
        STATE.interp = EVAL
        try:
            return rule(self, prim, tracers, params)
        finally:
            STATE.interp = prev

    process_primitive.__name__ = rule.__name__
    process_primitive.__qualname__ = getattr(rule, "__qualname__", rule.__name__)
    process_primitive.__doc__ = rule.__doc__
    process_primitive._runs_without_trace = True  # type: ignore[attr-defined]
    return process_primitive


class EvalInterpreter(Interpreter):
    """The interpreter outside every transformation: runs primitives on the device."""

    level = 0
    description = "eager evaluation"

    def __init__(self) -> None:
        self.set_handler(_no_eager_handler)

    def set_handler(self, fn: Callable[[Any, Sequence[Any], dict], Any]) -> None:
        """Make ``fn(prim, args, params)`` this interpreter's ``process_primitive``.

        The handler is stored as the instance's ``process_primitive`` itself (not called from a
        method), so an eager ``bind`` costs one Python call less. It rejects tracers (leaked
        from a finished transformation) on its slow path.
        """
        self.process_primitive = fn  # type: ignore[method-assign]


def _no_eager_handler(prim: Any, args: Sequence[Any], params: dict[str, Any]) -> Any:
    raise RuntimeError(f"cannot evaluate {prim} eagerly: no eager evaluator is installed (the "
                       "package root `fluxion` installs one when it is imported)")


EVAL = EvalInterpreter()
_State.interp = EVAL


def set_eager_handler(fn: Callable[[Any, Sequence[Any], dict], Any]) -> None:
    """Install the eager primitive runner: the package root installs one that loads the
    backend on the first eager operation, and the backend then installs its own."""
    EVAL.set_handler(fn)


def current() -> Interpreter:
    """The current interpreter."""
    return STATE.interp


class set_current:
    """Context manager making ``interp`` the current interpreter inside a block."""

    __slots__ = ("interp", "prev")

    def __init__(self, interp: Interpreter) -> None:
        self.interp = interp

    def __enter__(self) -> Interpreter:
        self.prev = STATE.interp
        STATE.interp = self.interp
        return self.interp

    def __exit__(self, *exc: Any) -> None:
        STATE.interp = self.prev


class interpreter_scope:
    """Context manager that makes a new child interpreter current and retires it on exit.

    Example:
        >>> class Nop(Interpreter):
        ...     pass
        >>> with interpreter_scope(Nop()) as it:
        ...     it.level
        1
    """

    __slots__ = ("interp", "prev")

    def __init__(self, interp: Interpreter) -> None:
        self.interp = interp

    def __enter__(self) -> Interpreter:
        prev = self.prev = STATE.interp
        interp = self.interp
        interp.parent = prev
        interp.level = prev.level + 1
        interp.active = True
        STATE.interp = interp
        return interp

    def __exit__(self, *exc: Any) -> None:
        self.interp.active = False
        STATE.interp = self.prev


class VirtualArray:
    """Base of the values that are instances of ``fluxion.Array`` for ``isinstance`` without being
    device arrays (virtual subclasses, in ABC terms): tracers, as in JAX, where code branching
    on ``isinstance(x, jax.Array)`` must behave the same inside transformations. A class outside
    core (such as a key-array type) opts in by deriving from it. ``fluxion.Array`` itself lives in
    the backend and answers ``isinstance`` with ``isinstance(x, VirtualArray)``.
    """

    __slots__ = ()


class ExtendedArray(VirtualArray):
    """Base of the arrays of an extended dtype that are held as their physical data (typed PRNG
    key arrays): ``_base_array`` is that data (an Array or a tracer) of shape
    ``(*shape, *_element_shape)``, the element's own dimensions trailing. Transformations see
    only the data. The structural primitives (reshape, concatenate, slicing, gather, select, ...)
    take these arrays through their ``extended`` rule (:mod:`fluxion.core.primitive`), which
    applies the primitive to the data with the trailing element dimensions kept whole, as
    JAX's extended-dtype rules do.

    A subclass provides ``_element_shape`` (a tuple) and ``_with_data(data)`` (an array of the
    same dtype over other data).

    Example:
        >>> import fluxion
        >>> keys = fluxion.random.split(fluxion.random.key(0), 3)
        >>> isinstance(keys, ExtendedArray), keys._element_shape, keys._base_array.shape
        (True, (2,), (3, 2))
    """

    __slots__ = ()

    _element_shape: tuple[int, ...]

    def _with_data(self, data: Any) -> "ExtendedArray":
        raise NotImplementedError(f"{type(self).__name__} must define _with_data")


class Tracer(VirtualArray):
    """A value tracked by an interpreter. ``_interp`` is the interpreter that owns it.

    Array operators and methods are attached by ``fluxion.numpy``, so a tracer behaves like an
    array inside transformed functions. Conversions to Python values ask the interpreter for a
    concrete value and raise the matching ConcretizationTypeError when there is none.
    """

    __slots__ = ("_interp", "_aval", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, trace: Interpreter, aval: ShapedArray) -> None:
        """JAX's ``Tracer(trace, aval)``, for tracers of user-defined traces; Fluxion's own
        tracers set their fields themselves."""
        self._interp = trace
        self._aval = aval

    @property
    def aval(self) -> ShapedArray:
        return self._aval

    @aval.setter
    def aval(self, aval: ShapedArray) -> None:
        self._aval = aval

    @property
    def _trace(self) -> Interpreter:
        """The trace (interpreter) this tracer belongs to (JAX's name)."""
        return self._interp

    @_trace.setter
    def _trace(self, trace: Interpreter) -> None:
        self._interp = trace

    def full_lower(self) -> "Tracer":
        return self

    def aval_str(self) -> str:
        try:
            return self.aval.str_short()
        except Exception:  # pragma: no cover - defensive: used only in messages
            return "<unknown aval>"

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return len(self.aval.shape)

    @property
    def size(self) -> int:
        return self.aval.size

    @property
    def weak_type(self) -> bool:
        return self.aval.weak_type

    @property
    def itemsize(self) -> int:
        return self.aval.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.aval.size * self.aval.dtype.itemsize

    # The parts of ``fluxion.Array`` that only a device buffer has, answered as JAX 0.10.2's
    # ``Tracer`` answers them: ``sharding``, ``device``, ``block_until_ready`` and
    # ``copy_to_host_async`` raise AttributeError (so ``hasattr`` is False: libraries probe
    # with it); the rest raise ConcretizationTypeError, which ``hasattr`` lets through for the
    # properties, as in JAX (the methods exist; calling them raises).

    def _not_on_tracer(self, what: str) -> ConcretizationTypeError:
        return ConcretizationTypeError(self._interp.concretization_message(
            self, f"a concrete array ({what} was called on a traced value)"))

    @property
    def sharding(self) -> Any:
        raise AttributeError(
            f"The 'sharding' attribute is not available on traced array with shape "
            f"{self.aval_str()}. To query sharding information on tracers, use "
            f"`fluxion.typeof(x)`.")

    @property
    def device(self) -> Any:
        raise AttributeError(f"The 'device' attribute is not available on traced array with "
                             f"shape {self.aval_str()}.")

    @property
    def block_until_ready(self) -> Any:
        raise AttributeError(f"The 'block_until_ready' method is not available on traced array "
                             f"with shape {self.aval_str()}.")

    @property
    def copy_to_host_async(self) -> Any:
        raise AttributeError(f"The 'copy_to_host_async' method is not available on traced array "
                             f"with shape {self.aval_str()}.")

    @property
    def committed(self) -> bool:
        raise self._not_on_tracer("the 'committed' attribute")

    @property
    def addressable_shards(self) -> list:
        raise self._not_on_tracer("the 'addressable_shards' attribute")

    @property
    def global_shards(self) -> list:
        raise self._not_on_tracer("the 'global_shards' attribute")

    @property
    def is_fully_addressable(self) -> bool:
        raise self._not_on_tracer("the 'is_fully_addressable' attribute")

    @property
    def is_fully_replicated(self) -> bool:
        raise self._not_on_tracer("the 'is_fully_replicated' attribute")

    @property
    def traceback(self) -> Any:
        raise self._not_on_tracer("the 'traceback' attribute")

    def devices(self) -> set:
        """Refused as JAX refuses it: a traced value is on no device yet."""
        raise self._not_on_tracer("the devices() method")

    def addressable_data(self, index: int) -> Any:
        """Refused as JAX refuses it: a traced value has no buffers."""
        raise self._not_on_tracer("the addressable_data() method")

    def delete(self) -> None:
        """Refused as JAX refuses it: a traced value has no buffer to free."""
        raise self._not_on_tracer("the delete() method")

    def is_deleted(self) -> bool:
        """Refused as JAX refuses it: a traced value has no buffer."""
        raise self._not_on_tracer("the is_deleted() method")

    def on_device_size_in_bytes(self) -> int:
        """Refused as JAX refuses it: a traced value has no buffer."""
        raise self._not_on_tracer("the on_device_size_in_bytes() method")

    def unsafe_buffer_pointer(self) -> int:
        """Refused as JAX refuses it: a traced value has no buffer."""
        raise self._not_on_tracer("the unsafe_buffer_pointer() method")

    def __len__(self) -> int:
        if not self.aval.shape:
            raise TypeError("len() of unsized object")
        return self.aval.shape[0]

    def _concrete(self, what: str, exc_type: type) -> Any:
        interp = self._interp
        if not interp.active:
            raise UnexpectedTracerError(leak_message(self))
        try:
            return interp.to_concrete(self)
        except ConcretizationTypeError as e:
            if exc_type is ConcretizationTypeError or isinstance(e, exc_type):
                raise
            raise exc_type(interp.concretization_message(self, what)) from None

    def to_concrete_value(self) -> Any:
        """JAX's ``Tracer.to_concrete_value``: the value known while tracing (the primal of a
        ``grad``/``jvp`` tracer that is not itself traced), or ``None``.

        Example:
            >>> import fluxion
            >>> seen = []
            >>> _ = fluxion.grad(lambda x: seen.append(x.to_concrete_value()) or x)(2.0)
            >>> _ = fluxion.jit(lambda x: seen.append(x.to_concrete_value()) or x)(2.0)
            >>> [None if v is None else float(v) for v in seen]
            [2.0, None]
        """
        interp = self._interp
        if not interp.active:
            raise UnexpectedTracerError(leak_message(self))
        try:
            return interp.to_concrete(self)
        except ConcretizationTypeError:
            return None

    def _refuse(self, what: str, exc_type: type) -> Any:
        raise exc_type(self._interp.concretization_message(self, what))

    # The conversions follow JAX's ``Tracer``: bool, int and index read a concrete value where
    # there is one (``if x > 0`` under grad); otherwise the shape/dtype checks come first (a
    # ValueError/TypeError as for any array), then the concretization error. float, complex and
    # NumPy conversions read only a constant (see Interpreter.to_constant).

    def __bool__(self) -> bool:
        val = self.to_concrete_value()
        if val is not None:
            return bool(val)
        if self.aval.size != 1:
            raise ValueError("The truth value of an empty array is ambiguous. Use `array.size > 0` "
                             "to check that an array is not empty." if self.aval.size == 0 else
                             "The truth value of an array with more than one element is "
                             "ambiguous. Use a.any() or a.all()")
        return self._refuse("a concrete boolean value (the bool function)",
                            TracerBoolConversionError)

    def __int__(self) -> int:
        # Like JAX: int() raises ConcretizationTypeError; only __index__ uses the Integer one.
        val = self.to_concrete_value()
        if val is not None:
            return int(val)
        self._check_scalar()
        return self._refuse("a concrete integer value (the int function)",
                            ConcretizationTypeError)

    def __index__(self) -> int:
        val = self.to_concrete_value()
        if val is not None:
            return operator.index(val)
        if self.aval.shape or getattr(self.aval.dtype, "kind", "V") not in "iu":
            raise TypeError("Only integer scalar arrays can be converted to a scalar index.")
        return self._refuse("a concrete integer index (the __index__ method)",
                            TracerIntegerConversionError)

    def _check_scalar(self) -> None:
        if self.aval.shape:
            raise TypeError("Only scalar arrays can be converted to Python scalars; "
                            f"got {self.aval_str()}")

    def _constant(self, what: str) -> Any:
        interp = self._interp
        if not interp.active:
            raise UnexpectedTracerError(leak_message(self))
        return interp.to_constant(self, what)

    def __float__(self) -> float:
        self._check_scalar()
        return float(self._constant("a concrete float value (the float function)"))

    def __complex__(self) -> complex:
        self._check_scalar()
        return complex(self._constant("a concrete complex value (the complex function)"))

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        try:
            val = self._constant("a NumPy array (numpy.asarray or another numpy function)")
        except ConcretizationTypeError as e:
            raise TracerArrayConversionError(
                f"{e} Use fluxion.numpy functions on traced values instead of numpy ones."
            ) from None
        return np.asarray(val, dtype=dtype)

    def _no_host_copy(self, method: str) -> Any:
        self._constant(f"a concrete value (the {method} method, which makes a host copy)")
        raise ConcretizationTypeError(self._interp.concretization_message(
            self, f"a concrete value (the {method} method, which makes a host copy)"))

    def tolist(self) -> Any:
        """Refused as JAX refuses it: a traced value has no host copy."""
        return self._no_host_copy("tolist()")

    def tobytes(self, order: str = "C") -> Any:
        """Refused as JAX refuses it: a traced value has no host copy."""
        return self._no_host_copy("tobytes()")

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._no_host_copy("__dlpack__()")

    def __reduce__(self) -> Any:
        # pickle (and copy of an object holding a tracer without __deepcopy__) lands here.
        return self._no_host_copy("__reduce__() (pickling a traced value)")

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.aval.shape[0]))

    def __hash__(self):
        raise TypeError(f"unhashable type: traced array {self.aval_str()}; "
                        "a traced value cannot be a dict key or a static argument")

    def __repr__(self) -> str:
        return f"Traced<{self.aval_str()}> by {self._interp.description}"


def is_tracer(x: Any) -> bool:
    """True when ``x`` is a tracer of some transformation."""
    return isinstance(x, Tracer)


def find_tracers(xs: Iterable[Any]) -> list[Tracer]:
    return [x for x in xs if isinstance(x, Tracer)]

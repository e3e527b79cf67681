"""Eager ``fluxion.numpy`` functions as one compiled program (see
:mod:`fluxion.backend.fused`): the hook the functions of this package call first when no
transformation is active, or when none of their operands is traced by the active ones (jvp,
grad, vmap forward such calls to the device, as JAX's bind does).

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.multiply(jnp.array([jnp.nan, 2.0]), jnp.array([False, True])).tolist()
    [0.0, 2.0]
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import numpy as np

from fluxion.backend.array import Array
from fluxion.core.errors import (
    ConcretizationTypeError,
    NonConcreteBooleanIndexError,
    TracerArrayConversionError,
    TracerIntegerConversionError,
)
from fluxion.core.trace import EVAL, STATE, Tracer, set_current
from fluxion.transforms.ad import JVPInterpreter
from fluxion.transforms.batching import BatchInterpreter
from fluxion.transforms.partial_eval import PartialEvalInterpreter

__all__ = ["one_program", "one_program_static", "run_fused", "call_body", "backend"]

_call: Any = None
_BACKEND: list = []


def backend() -> tuple[Any, Any]:
    """``(fluxion.backend.dispatch, fluxion.backend.fused)``, imported on first use: the backend
    loads jaxlib, which ``import fluxion.numpy`` must not do (an Array existing means it is
    loaded already).

    Example:
        >>> backend()[0].__name__
        'fluxion.backend.dispatch'
    """
    if not _BACKEND:
        from fluxion.backend import dispatch, fused  # reason: jaxlib is loaded lazily
        _BACKEND[:] = [dispatch, fused]
    return _BACKEND[0], _BACKEND[1]


# Interpreters that hand an operation none of whose operands is their tracer to their parent.
_FORWARDING = (JVPInterpreter, BatchInterpreter, PartialEvalInterpreter)


def _reaches_eval(args: tuple) -> bool:
    """Whether a call with operands ``args`` runs on concrete values now: outside every
    transformation, or with no traced operand under transformations that forward such calls to
    their parent (jvp, grad's linearization, vmap), as JAX's bind does. JAX's jitted ``jnp``
    functions then run as one compiled program too (``bool_mask * inf`` is 0 there under grad).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> _reaches_eval((jnp.ones(2),))
        True
        >>> fluxion.grad(lambda x: x * float(_reaches_eval((jnp.ones(2),))))(1.0).tolist()
        1.0
    """
    interp = STATE.interp
    if interp is EVAL:
        return True
    for a in args:
        if isinstance(a, Tracer):
            return False
    while interp is not EVAL:
        if type(interp) not in _FORWARDING:
            return False
        interp = interp.parent
    return True


def run_fused(body: Callable[..., Any], args: tuple, statics: tuple = ()) -> Any:
    """``body(*args, *statics)`` compiled as one program when every operand is concrete, else None
    (then the caller runs ``body`` itself). Call it only where :func:`_reaches_eval` holds,
    with the eager interpreter current.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> def square_plus(x, y):
        ...     return lax.add(lax.mul(x, x), y)
        >>> run_fused(square_plus, (jnp.ones(2), 1.0)).tolist()
        [2.0, 2.0]
    """
    global _call
    if _call is None:
        _call = backend()[1].call
    return _call(body, args, statics)


def one_program(body: Callable[..., Any]) -> Callable[..., Any]:
    """``body`` (a function of array operands only) run as one compiled program per operand
    types when called eagerly on concrete values, and inlined into the trace under a
    transformation (or when called with keyword arguments: op by op).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> @one_program
        ... def twice_plus(x, y):
        ...     return lax.add(lax.add(x, x), y)
        >>> twice_plus(jnp.ones(2), jnp.ones(2)).tolist()
        [3.0, 3.0]
    """
    @functools.wraps(body)
    def fn(*args: Any, **kwargs: Any) -> Any:
        if not kwargs and _reaches_eval(args):
            with set_current(EVAL):
                out = run_fused(body, args)
            if out is not None:
                return out
        return body(*args, **kwargs)
    fn.__wrapped_body__ = body  # type: ignore[attr-defined]
    return fn


def call_body(body: Callable[..., Any], args: tuple, statics: tuple = ()) -> Any:
    """``body(*args, *statics)``: one compiled program when eager with concrete operands (see
    :func:`run_fused`), else ``body`` run (inlined into the trace under a transformation).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> call_body(lax.sub, (jnp.ones(2), jnp.ones(2))).tolist()
        [0.0, 0.0]
    """
    if _reaches_eval(args):
        with set_current(EVAL):
            out = run_fused(body, args, statics)
        if out is not None:
            return out
    return body(*args, *statics)


# The operand types a one-program call traces (everything else in a traced slot: op by op).
_OPERAND_SCALARS = (float, int, complex, bool)
_OPERAND_ARRAYS = (np.ndarray, np.generic)
# What tracing a body that needs concrete values raises: that call pattern then runs op by op.
_NEEDS_CONCRETE = (ConcretizationTypeError, TracerIntegerConversionError,
                   TracerArrayConversionError, NonConcreteBooleanIndexError)


def one_program_static(*, static_argnames: tuple[str, ...] = ()) -> Callable[[Callable], Callable]:
    """Decorator: the function runs as one compiled program per call pattern when called eagerly,
    as JAX's ``jit(fn, static_argnames=...)``-decorated ``jnp`` functions.

    The arguments named in ``static_argnames`` and those given as ``None`` are static (part of
    the cache key, with their types: ``1`` and ``1.0`` differ); every other argument given is an
    operand (an Array, a NumPy value or a Python number, which becomes a weakly typed scalar as
    under ``jit``). Outside every transformation the body is traced once per (static arguments,
    operand types) and compiled (see :func:`run_fused`); under a transformation it is inlined.
    A call runs op by op instead when an operand slot holds anything else (a list, a tuple), a
    static value is unhashable, ``jax_disable_jit`` or a runtime check is on, or the body needs
    concrete operand values (then that pattern of static arguments stays op by op).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> @one_program_static(static_argnames=("axis",))
        ... def centred(x, axis=None):
        ...     return lax.sub(x, jnp.mean(x, axis=axis, keepdims=True))
        >>> centred(jnp.array([[1.0, 3.0]]), axis=1).tolist()
        [[-1.0, 1.0]]
    """
    statics = frozenset(static_argnames)

    def decorate(fn: Callable) -> Callable:
        sig = inspect.signature(fn)
        kinds = {p.kind for p in sig.parameters.values()}
        if kinds & {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD,
                    inspect.Parameter.POSITIONAL_ONLY}:
            raise TypeError(f"one_program_static: {fn.__name__} has positional-only or variadic "
                            "parameters; every parameter must be nameable")
        unknown = statics - set(sig.parameters)
        if unknown:
            raise TypeError(f"one_program_static: {fn.__name__} has no parameters {sorted(unknown)}")
        op_by_op: set = set()

        def body(*xs: Any) -> Any:
            names, static_items = xs[-1]
            kwargs = {name: value for name, _, value in static_items}
            kwargs.update(zip(names, xs[:-1]))
            return fn(**kwargs)
        body.__name__ = body.__qualname__ = fn.__name__

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if _reaches_eval(args + tuple(kwargs.values())):
                with set_current(EVAL):
                    out = _run_static(sig, statics, op_by_op, body, args, kwargs)
                if out is not None:
                    return out
            return fn(*args, **kwargs)
        wrapper.__wrapped_body__ = fn  # type: ignore[attr-defined]
        return wrapper
    return decorate


def _run_static(sig: inspect.Signature, statics: frozenset, op_by_op: set, body: Callable,
                args: tuple, kwargs: dict) -> Any:
    """One eager call of a :func:`one_program_static` function: its result, or None to run the
    function op by op."""
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return None  # the function's own call raises Python's error
    names, ops, static_items = [], [], []
    for name, value in bound.arguments.items():
        if name in statics or value is None:
            static_items.append((name, type(value), value))
        elif type(value) is Array or type(value) in _OPERAND_SCALARS or isinstance(
                value, _OPERAND_ARRAYS):
            if type(value) is Array and not isinstance(value.dtype, np.dtype):
                return None  # typed PRNG keys: op by op
            names.append(name)
            ops.append(value)
        else:
            return None
    layout = (tuple(names), tuple(static_items))
    try:
        if layout in op_by_op:
            return None
    except TypeError:  # an unhashable static value
        return None
    try:
        return run_fused(body, tuple(ops), (layout,))
    except _NEEDS_CONCRETE:
        op_by_op.add(layout)
        return None

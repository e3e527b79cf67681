"""Argument checking and promotion shared by the ``fluxion.numpy`` functions.

``promote_args`` is JAX's rule: find the result dtype on the promotion lattice (weak types for
Python scalars), convert every argument to it, then line up ranks (rank promotion, honouring
``jax_numpy_rank_promotion``); size-1 and rank-0 broadcasting is left to lax.
"""

from __future__ import annotations

import operator
import warnings
from typing import Any, Callable, Sequence

import numpy as np

from fluxion import lax
from fluxion.backend.array import Array
from fluxion.core import dtypes
from fluxion.core.config import config
from fluxion.core.errors import ConcretizationTypeError, user_source_line
from fluxion.core.trace import ExtendedArray, Tracer

__all__ = ["is_array", "check_arraylike", "promote_args", "promote_args_inexact", "promote_dtypes",
           "promote_shapes", "is_arraylike", "ensure_array", "canonical_axis", "canonical_axes",
           "const_like", "check_no_out", "concrete_scalar", "concrete_array", "lazy_jit",
           "check_numeric"]

_PY = (bool, int, float, complex)


def is_array(x: Any) -> bool:
    """True for a Fluxion Array or a traced value."""
    return type(x) is Array or isinstance(x, Tracer)


def is_arraylike(x: Any) -> bool:
    """True for arrays, tracers, NumPy arrays/scalars and Python scalars."""
    return (isinstance(x, (np.ndarray, np.generic) + _PY) or is_array(x)
            or hasattr(x, "__jax_array__"))


def check_arraylike(fun_name: str, *args: Any, extended: bool = False) -> None:
    """Raise a TypeError naming ``fun_name`` when an argument is not array-like (lists are
    rejected, as in JAX, to avoid silent slow conversions). Arrays of an extended dtype (key
    arrays) are refused too unless ``extended`` (the structural functions, whose lax
    primitives move key arrays' data)."""
    for i, a in enumerate(args):
        if not is_arraylike(a):
            if extended and isinstance(a, ExtendedArray):
                continue
            check_numeric(fun_name, a)  # typed PRNG keys: JAX's words
            extra = (" Use fluxion.numpy.array(...) to convert a list or tuple first."
                     if isinstance(a, (list, tuple)) else "")
            raise TypeError(f"{fun_name} requires ndarray or scalar arguments, but got "
                            f"{type(a).__name__} at position {i}.{extra} (at {user_source_line()})")


def check_numeric(fun_name: str, *args: Any) -> None:
    """Raise JAX's TypeError ("Cannot interpret '<dtype>' as a data type") naming ``fun_name``
    when an argument is an array of an extended dtype (a typed PRNG key or a user-defined
    dtype), which has no numeric kind for the function to compute with.

    Example:
        >>> import fluxion.numpy as jnp
        >>> check_numeric("sum", jnp.ones(2))  # numbers pass
    """
    for a in args:
        dt = getattr(a, "dtype", None)
        if isinstance(dt, dtypes.ExtendedDType):
            raise TypeError(f"{fun_name}: Cannot interpret '{dt}' as a data type: an array of an "
                            f"extended dtype (shape {np.shape(a)}) has no arithmetic of its own")


def _to_dtype(x: Any, dtype: np.dtype, weak: bool) -> Any:
    if isinstance(x, ExtendedArray):  # result_type promotes an extended dtype only to itself
        return x
    aval = getattr(x, "aval", None)
    if aval is not None and aval.dtype == dtype and aval.weak_type == weak:
        return x
    if type(x) is int:
        # As JAX, where a jnp function is jitted: a Python int operand must fit the default
        # integer type before it is promoted (lax.convert_element_type alone would wrap it).
        dtypes.scalar_type_to_dtype(int, x)
    return lax.convert_element_type(x, dtype, weak_type=weak)


def promote_dtypes(*args: Any) -> list[Any]:
    """Convert every argument to the common result dtype (and weak flag)."""
    if len(args) < 2:
        if not args:
            return []
        x = args[0]
        dt, weak = dtypes.result_type(x, return_weak_type_flag=True)
        return [_to_dtype(x, dt, weak)]
    dt, weak = dtypes.result_type(*args, return_weak_type_flag=True)
    return [_to_dtype(x, dt, weak) for x in args]


def promote_dtypes_inexact(*args: Any) -> list[Any]:
    dt, weak = dtypes.result_type(*args, return_weak_type_flag=True)
    dt = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(dt))
    return [_to_dtype(x, dt, weak) for x in args]


def _shape(x: Any) -> tuple[int, ...]:
    s = getattr(x, "shape", None)
    return tuple(s) if s is not None else np.shape(x)


def promote_shapes(fun_name: str, *args: Any) -> list[Any]:
    """Rank promotion: give lower-rank arguments leading size-1 dimensions."""
    if len(args) < 2:
        return list(args)
    shapes = [_shape(a) for a in args]
    ranks = {len(s) for s in shapes if s}
    if len(ranks) < 2:
        return list(args)
    mode = config.jax_numpy_rank_promotion
    if mode != "allow":
        msg = (f"Following NumPy automatic rank promotion for {fun_name} on shapes "
               f"{' '.join(str(s) for s in shapes)}. Set the jax_numpy_rank_promotion config "
               "option to 'allow' to disable this message.")
        if mode == "raise":
            raise ValueError(f"Operands could not be broadcast together for {fun_name} on shapes "
                             f"{' '.join(str(s) for s in shapes)} and with the config option "
                             "jax_numpy_rank_promotion='raise'.")
        warnings.warn(msg, stacklevel=4)
    rank = max(ranks)
    out = []
    for a, s in zip(args, shapes):
        if s and len(s) < rank:
            a = lax.broadcast_in_dim(a, (1,) * (rank - len(s)) + s, tuple(range(rank - len(s), rank)))
        out.append(a)
    _check_broadcastable(fun_name, shapes)
    return out


class IncompatibleShapesError(TypeError, ValueError):
    """Operands that cannot broadcast. JAX raises TypeError from ufuncs and ValueError from
    ``where``/``broadcast_arrays``; this is both, so either ``except`` catches it."""


def _check_broadcastable(fun_name: str, shapes: Sequence[tuple[int, ...]]) -> None:
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        raise IncompatibleShapesError(f"{fun_name}: operands could not be broadcast together with shapes "
                         f"{' '.join(str(s) for s in shapes)} (at {user_source_line()})") from None


def promote_args(fun_name: str, *args: Any, extended: bool = False) -> list[Any]:
    """Check, promote dtypes and promote ranks: the preamble of every binary ufunc
    (``extended``: arrays of one extended dtype pass, see :func:`check_arraylike`)."""
    check_arraylike(fun_name, *args, extended=extended)
    if len(args) >= 2:
        shapes = [_shape(a) for a in args]
        nonscalar = [s for s in shapes if s]
        if (len(nonscalar) > 1 and len({len(s) for s in nonscalar}) == 1
                and any(s != nonscalar[0] for s in nonscalar)):  # (equal shapes broadcast)
            _check_broadcastable(fun_name, shapes)
    return promote_shapes(fun_name, *promote_dtypes(*args))


def promote_args_inexact(fun_name: str, *args: Any) -> list[Any]:
    """Like :func:`promote_args`, then to an inexact (floating/complex) dtype."""
    check_arraylike(fun_name, *args)
    return promote_shapes(fun_name, *promote_dtypes_inexact(*args))


# ``asarray`` lives in creation.py (which imports this module): fluxion/numpy/__init__.py hands
# it over (``install_asarray``).
_ASARRAY: list[Callable[..., Any]] = []


def install_asarray(asarray: Callable[..., Any]) -> None:
    """Called once by ``fluxion/numpy/__init__.py``."""
    _ASARRAY[:] = [asarray]


def ensure_array(x: Any, dtype: Any = None) -> Any:
    """``x`` as an Array or tracer (host values are converted, weak types kept for scalars)."""
    if is_array(x) and dtype is None:
        return x
    return _ASARRAY[0](x, dtype)


def canonical_axis(axis: int, ndim: int, fun_name: str = "") -> int:
    """``axis`` in ``[0, ndim)``; raises a ValueError naming the function when out of range."""
    try:
        a = operator.index(axis)
    except TypeError:
        raise TypeError(f"{fun_name}: axis must be an integer, got {axis!r}") from None
    if not -ndim <= a < ndim:
        raise ValueError(f"{fun_name}: axis {a} is out of bounds for array of dimension {ndim} "
                         f"(at {user_source_line()})")
    return a % ndim if ndim else 0


def canonical_axes(axis: Any, ndim: int, fun_name: str = "") -> tuple[int, ...]:
    """A sorted tuple of distinct axes (``None`` means all)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(canonical_axis(a, ndim, fun_name) for a in axis)
    else:
        axes = (canonical_axis(axis, ndim, fun_name),)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{fun_name}: repeated axis in {axis}")
    return tuple(sorted(axes))


def const_like(x: Any, value: Any) -> Any:
    """``value`` converted to ``x``'s dtype (and weak type), for constants in lax expressions."""
    return lax.convert_element_type(value, x.dtype, weak_type=getattr(x, "weak_type", False))


def check_no_out(fun_name: str, out: Any) -> None:
    """Reject NumPy's ``out=`` argument (arrays are immutable)."""
    if out is not None:
        raise NotImplementedError(
            f"The 'out' argument to fluxion.numpy.{fun_name} is not supported.")


def concrete_scalar(x: Any, fun: str, what: str) -> Any:
    """The Python value of a scalar argument that must be known while tracing (a shape, a
    count); a traced value raises a ConcretizationTypeError naming ``fun`` and ``what``."""
    if isinstance(x, Tracer):
        try:
            return x._interp.to_concrete(x).item()
        except Exception:
            raise ConcretizationTypeError(
                f"{fun}: {what} must be concrete (a Python number), got a traced value "
                f"{x.aval_str()}; mark it static (jit's static_argnums) or compute it outside "
                "the transformation.") from None
    if is_array(x):
        return x.item()
    return x


def concrete_array(x: Any, fun: str, what: str) -> np.ndarray:
    """The host (NumPy) value of an array argument that must be known while tracing."""
    if isinstance(x, Tracer):
        try:
            return np.asarray(x._interp.to_concrete(x))
        except Exception:
            raise ConcretizationTypeError(
                f"{fun}: {what} must be concrete, got a traced value {x.aval_str()}; mark it "
                "static (jit's static_argnums).") from None
    return np.asarray(x)


def lazy_jit(fun: Callable, **kw: Any) -> Callable:
    """``fluxion.jit(fun, **kw)``, made on the first call (importing ``fluxion.numpy`` loads no
    jaxlib, which the backend does).

    Example:
        >>> import fluxion.numpy as jnp
        >>> lazy_jit(lambda x: x * 2)(jnp.ones(2)).tolist()
        [2.0, 2.0]
    """
    cell: list[Callable] = []

    def call(*args: Any, **kwargs: Any) -> Any:
        if not cell:
            # reason: the backend loads jaxlib, which importing fluxion.numpy must not.
            from fluxion.backend.jit import jit
            cell.append(jit(fun, **kw))
        return cell[0](*args, **kwargs)

    return call

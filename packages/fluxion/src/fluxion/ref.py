"""``fluxion.ref`` (JAX's ``jax.ref``): mutable array references.

A reference (:class:`Ref`, made by :func:`new_ref`) is a box holding one array whose contents can
be read and written in place: ``ref[idx]`` reads, ``ref[idx] = v`` and ``ref[idx] += v`` write,
:func:`freeze` reads the whole value. Writes keep the reference's shape and dtype (a value of
another dtype or shape is an error, as in JAX; Python scalars take the reference's dtype).

Under ``jit`` a reference passed as an argument, or reached through a closure, is read and written
by the compiled program: its value is an input and its final value an output, written back after
the call, so ``jit(f)`` has the effect of ``f``. A reference cannot be returned from ``jit``.
Eagerly and under ``grad``/``vmap`` references created inside the transformed function work as
names for values; writing a value traced by a transformation into a reference made outside of it
is an error (move the reference inside, or make it an argument of ``jit``).

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> counter = new_ref(jnp.int32(0))
    >>> @fluxion.jit
    ... def step(x):
    ...     counter[...] += 1
    ...     return x * 2
    >>> _ = step(1.0); _ = step(2.0)
    >>> int(freeze(counter))
    2
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion.core import dtypes as _dtypes
from fluxion.core.refs import OPS, AbstractRef, Ref
from fluxion.core.trace import Tracer
from fluxion.lax.conversions import convert_element_type
from fluxion.numpy.creation import asarray, zeros
from fluxion.transforms.staging import abstractify

__all__ = ["AbstractRef", "Ref", "addupdate", "empty_ref", "free_ref", "freeze", "get",
           "new_ref", "set", "swap"]


def _as_array(x: Any, fname: str) -> Any:
    if isinstance(x, Ref):
        raise TypeError(f"{fname}: expected an array, got a reference {x.aval}; read it with "
                        "ref[...] first")
    if isinstance(x, Tracer):
        return x
    try:
        abstractify(x)
    except TypeError:
        raise TypeError(f"{fname}: expected an array (an Array, a NumPy array or a Python "
                        f"scalar), got a value of type {type(x).__name__}: {x!r}") from None
    return asarray(x)


def new_ref(init_val: Any, *, memory_space: Any = None, kind: str | None = None) -> Ref:
    """A new mutable reference holding ``init_val`` (an array or a Python/NumPy scalar).

    The reference has the shape, dtype and weak type of ``init_val``; ``memory_space`` and
    ``kind`` are recorded in its abstract value (Fluxion keeps every array in device memory).

    Example:
        >>> import fluxion.numpy as jnp
        >>> r = new_ref(jnp.arange(3.0))
        >>> r[0] = 5.0
        >>> r
        Ref([5., 1., 2.], dtype=float32)
    """
    value = _as_array(init_val, "new_ref")
    aval = AbstractRef(abstractify(value), memory_space=memory_space, kind=kind)
    return Ref(value, aval)


def empty_ref(ty: Any, memory_space: Any = None) -> Ref:
    """A new reference of type ``ty`` (anything with ``shape`` and ``dtype``, such as a
    ``ShapeDtypeStruct``); its contents are unspecified until written (Fluxion fills zeros).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> r = empty_ref(fluxion.ShapeDtypeStruct((2,), jnp.float32))
        >>> r.shape, r.dtype.name
        ((2,), 'float32')
    """
    aval = abstractify(ty) if not hasattr(ty, "shape") else None
    shape, dtype = (aval.shape, aval.dtype) if aval is not None else (ty.shape, ty.dtype)
    return new_ref(zeros(shape, dtype), memory_space=memory_space)


def free_ref(ref: Ref) -> tuple:
    """Declare that ``ref`` will not be used again (a no-op in Fluxion, whose buffers are freed
    when unreferenced); returns ``()`` as JAX does.

    Example:
        >>> import fluxion.numpy as jnp
        >>> free_ref(new_ref(jnp.ones(2)))
        ()
    """
    _check_ref(ref, "free_ref")
    return ()


def freeze(ref: Ref) -> Any:
    """The current value of ``ref``, as an array.

    Example:
        >>> import fluxion.numpy as jnp
        >>> r = new_ref(jnp.arange(4))
        >>> r[3] = 100
        >>> freeze(r).tolist()
        [0, 1, 2, 100]
    """
    _check_ref(ref, "freeze")
    return ref._get_value()


def get(ref: Ref, idx: Any = ()) -> Any:
    """``ref[idx]``: the part of the reference's value selected by ``idx`` (NumPy indexing).

    Example:
        >>> import fluxion.numpy as jnp
        >>> get(new_ref(jnp.arange(4.0)), (slice(1, 3),)).tolist()
        [1.0, 2.0]
    """
    _check_ref(ref, "ref.get")
    value = ref._get_value()
    if _whole(idx):
        return value
    return value[idx]


def set(ref: Ref, idx: Any, value: Any) -> None:  # noqa: A001  (JAX's name)
    """``ref[idx] = value``: overwrite the selected part (``value`` must have exactly that
    part's shape and the reference's dtype).

    Example:
        >>> import fluxion.numpy as jnp
        >>> r = new_ref(jnp.zeros(3))
        >>> set(r, (1,), 7.0)
        >>> r[...].tolist()
        [0.0, 7.0, 0.0]
    """
    swap(ref, idx, value, _op="swap", _want_old=False)


def swap(ref: Ref, idx: Any, value: Any, *, _op: str = "swap", _want_old: bool = True) -> Any:
    """Write ``value`` into ``ref[idx]`` and return what was there.

    Example:
        >>> import fluxion.numpy as jnp
        >>> r = new_ref(jnp.zeros(2))
        >>> swap(r, (), jnp.ones(2)).tolist(), r[...].tolist()
        ([0.0, 0.0], [1.0, 1.0])
    """
    _check_ref(ref, f"ref.{_op}")
    current = ref._get_value()
    whole = _whole(idx)
    old = current if whole else (current[idx] if _want_old else None)
    v = _checked_value(ref, idx, value, _op, current)
    if whole:
        new = v
    else:
        new = current.at[idx].set(v)
    ref._set_value(_keep_type(new, ref), f"ref.{_op}")
    return old


def addupdate(ref: Ref, idx: Any, value: Any) -> None:
    """``ref[idx] += value`` in one operation.

    Example:
        >>> import fluxion.numpy as jnp
        >>> r = new_ref(jnp.ones(3))
        >>> addupdate(r, (0,), 2.0)
        >>> r[...].tolist()
        [3.0, 1.0, 1.0]
    """
    _check_ref(ref, "ref.addupdate")
    current = ref._get_value()
    v = _checked_value(ref, idx, value, "addupdate", current)
    new = current + v if _whole(idx) else current.at[idx].add(v)
    ref._set_value(_keep_type(new, ref), "ref.addupdate")


# ---------------------------------------------------------------- helpers

def _check_ref(ref: Any, fname: str) -> None:
    if not isinstance(ref, Ref):
        raise TypeError(f"{fname}: expected a reference made by new_ref, got a value of type "
                        f"{type(ref).__name__}")


def _whole(idx: Any) -> bool:
    return idx is Ellipsis or (type(idx) is tuple and (idx == () or idx == (Ellipsis,)))


def _checked_value(ref: Ref, idx: Any, value: Any, op: str, current: Any) -> Any:
    """``value`` as an array of the reference's dtype and the shape ``ref[idx]`` has (JAX's
    checks: no broadcasting, no dtype conversion except for weakly typed Python scalars)."""
    v = _as_array(value, f"ref.{op}")
    want = ref.dtype
    have = v.aval if isinstance(v, Tracer) else abstractify(v)
    if have.dtype != want:
        if not (have.weak_type and _same_kind(have.dtype, want)):
            raise ValueError(f"Invalid dtype for `{op}`. Ref dtype: {want.name}. Value dtype: "
                             f"{have.dtype.name}.")
        v = convert_element_type(v, want)
        have = abstractify(v) if not isinstance(v, Tracer) else v.aval
    shape = tuple(ref.shape) if _whole(idx) else tuple(np.shape(current[idx]))
    if tuple(have.shape) != shape:
        raise ValueError(f"Invalid shape for `{op}`. Ref shape: {tuple(ref.shape)}. Expected "
                         f"shape: {shape}. Value shape: {tuple(have.shape)}. Index: {idx!r}.")
    return v


def _same_kind(a: np.dtype, b: np.dtype) -> bool:
    kinds = (_dtypes.issubdtype(a, np.bool_), _dtypes.issubdtype(a, np.integer),
             _dtypes.issubdtype(a, np.floating), _dtypes.issubdtype(a, np.complexfloating))
    kinds_b = (_dtypes.issubdtype(b, np.bool_), _dtypes.issubdtype(b, np.integer),
               _dtypes.issubdtype(b, np.floating), _dtypes.issubdtype(b, np.complexfloating))
    return kinds == kinds_b


def _keep_type(new: Any, ref: Ref) -> Any:
    """The written value with the reference's dtype and weak type (a reference's type is fixed)."""
    aval = new.aval if isinstance(new, Tracer) else abstractify(new)
    inner = ref.aval.inner_aval
    if aval.dtype == inner.dtype and aval.weak_type == inner.weak_type:
        return new
    return convert_element_type(new, inner.dtype, weak_type=inner.weak_type)


OPS["get"] = get
OPS["set"] = set
OPS["addupdate"] = addupdate

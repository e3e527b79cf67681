"""Building and combining :class:`IrrepsArray` values (e3nn_jax's ``from_chunks``,
``as_irreps_array``, ``zeros``, ``ones``, ``concatenate``, ``stack`` and ``norm``)."""

from __future__ import annotations

from typing import Any, Sequence

import fluxion.numpy as fnp
from fluxion_md._nn.e3nn import _upper
from fluxion_md._nn.e3nn._irreps import Irreps
from fluxion_md._nn.e3nn._irreps_array import IrrepsArray, infer_backend, standardize_axis

__all__ = ["from_chunks", "as_irreps_array", "zeros", "zeros_like", "ones", "ones_like",
           "concatenate", "stack", "norm"]


def from_chunks(irreps: Any, chunks: Sequence[Any], leading_shape: tuple[int, ...],
                dtype: Any = None, *, backend: Any = None) -> IrrepsArray:
    """An :class:`IrrepsArray` from per-entry arrays ``[*leading_shape, mul, 2l+1]`` (``None``
    for a zero entry; ``dtype`` is needed only when every chunk is ``None``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> x = from_chunks("1x0e+1x1o", [jnp.ones((2, 1, 1)), None], (2,))
        >>> x.shape, x.zero_flags
        ((2, 4), (False, True))
    """
    xp = infer_backend(list(chunks)) if backend is None else backend
    irreps = Irreps(irreps)
    chunks = list(chunks)
    if len(irreps) != len(chunks):
        raise ValueError(f"e3nn.from_chunks: len(irreps) != len(chunks), "
                         f"{len(irreps)} != {len(chunks)}")
    if not all(c is None or hasattr(c, "shape") for c in chunks):
        raise ValueError("e3nn.from_chunks: chunks contains non-array elements "
                         f"type={[type(c) for c in chunks]}")
    leading_shape = tuple(leading_shape)
    expected = [leading_shape + (mul, ir.dim) for mul, ir in irreps]
    if not all(c is None or tuple(c.shape) == e for c, e in zip(chunks, expected)):
        raise ValueError(f"e3nn.from_chunks: chunks shapes "
                         f"{[None if c is None else c.shape for c in chunks]} incompatible with "
                         f"leading shape {leading_shape} and irreps {irreps}. "
                         f"Expecting {expected}.")
    for c in chunks:
        if c is not None:
            dtype = c.dtype
            break
    if dtype is None:
        raise ValueError("e3nn.from_chunks: Need to specify dtype if chunks is empty or "
                         "contains only None.")
    if irreps.dim > 0:
        array = xp.concatenate(
            [xp.zeros(leading_shape + (mul_ir.dim,), dtype) if c is None
             else c.reshape(leading_shape + (mul_ir.dim,))
             for mul_ir, c in zip(irreps, chunks)], axis=-1)
    else:
        array = xp.zeros(leading_shape + (0,), dtype)
    return IrrepsArray(irreps, array, zero_flags=[c is None for c in chunks], chunks=chunks)


def as_irreps_array(array: Any, *, backend: Any = None) -> IrrepsArray:
    """An :class:`IrrepsArray` unchanged; any other array as ``"{n}x0e"`` scalars.

    Example:
        >>> import fluxion.numpy as jnp
        >>> as_irreps_array(jnp.ones((2, 3))).irreps
        3x0e
    """
    if isinstance(array, IrrepsArray):
        return array
    xp = infer_backend(array) if backend is None else backend
    array = xp.asarray(array)
    if array.ndim == 0:
        raise ValueError("e3nn.as_irreps_array: Cannot convert an array of rank 0 to an "
                         "IrrepsArray.")
    return IrrepsArray(f"{array.shape[-1]}x0e", array)


def zeros(irreps: Any, leading_shape: tuple[int, ...] = (), dtype: Any = None) -> IrrepsArray:
    """Zeros, every entry flagged zero.

    Example:
        >>> zeros("2x1o", (3,)).shape, zeros("2x1o").zero_flags
        ((3, 6), (True,))
    """
    irreps = Irreps(irreps)
    return IrrepsArray(irreps, fnp.zeros(tuple(leading_shape) + (irreps.dim,), dtype=dtype),
                       zero_flags=(True,) * len(irreps))


def zeros_like(irreps_array: IrrepsArray) -> IrrepsArray:
    """:func:`zeros` with the irreps, leading shape and dtype of ``irreps_array``."""
    return zeros(irreps_array.irreps, irreps_array.shape[:-1], irreps_array.dtype)


def ones(irreps: Any, leading_shape: tuple[int, ...] = (), dtype: Any = None) -> IrrepsArray:
    """Ones.

    Example:
        >>> ones("1x0e+1x1o").array.tolist()
        [1.0, 1.0, 1.0, 1.0]
    """
    irreps = Irreps(irreps)
    return IrrepsArray(irreps, fnp.ones(tuple(leading_shape) + (irreps.dim,), dtype=dtype),
                       zero_flags=(False,) * len(irreps))


def ones_like(irreps_array: IrrepsArray) -> IrrepsArray:
    """:func:`ones` with the irreps, leading shape and dtype of ``irreps_array``."""
    return ones(irreps_array.irreps, irreps_array.shape[:-1], irreps_array.dtype)


def _same_irreps(arrays: list[IrrepsArray], name: str) -> Irreps:
    irreps = arrays[0].irreps
    if {x.irreps for x in arrays} != {irreps}:
        raise ValueError(f"e3nn.{name}: Irreps must be the same for all arrays, got "
                         f"{[str(x.irreps) for x in arrays]}")
    return irreps


def _join_chunks(arrays: list[IrrepsArray], irreps: Irreps, join: Any, xp: Any) -> tuple:
    zero_flags = [all(flags) for flags in zip(*[x.zero_flags for x in arrays])]
    chunks = [None if zero else join(
        [xp.zeros(x.shape[:-1] + (mul, ir.dim), dtype=x.dtype) if x.chunks[i] is None
         else x.chunks[i] for x in arrays])
        for i, ((mul, ir), zero) in enumerate(zip(irreps, zero_flags))]
    return zero_flags, chunks


def concatenate(arrays: Sequence[Any], axis: int = -1) -> IrrepsArray:
    """Concatenation; along the last axis the irreps are appended, along another axis they
    must agree.

    Example:
        >>> import fluxion.numpy as jnp
        >>> a = IrrepsArray("1x0e", jnp.ones((2, 1))); b = IrrepsArray("1x1o", jnp.ones((2, 3)))
        >>> concatenate([a, b]).irreps, concatenate([a, a], axis=0).shape
        (1x0e+1x1o, (4, 1))
    """
    if len(arrays) == 0:
        raise ValueError("Cannot concatenate empty list of IrrepsArray")
    arrays = [as_irreps_array(x) for x in arrays]
    axis = standardize_axis(axis, arrays[0].ndim)[0]
    xp = infer_backend([x.array for x in arrays])
    if axis == arrays[0].ndim - 1:
        irreps = Irreps(sum((list(x.irreps) for x in arrays), []))
        return IrrepsArray(irreps, xp.concatenate([x.array for x in arrays], axis=-1),
                           zero_flags=sum((x.zero_flags for x in arrays), ()),
                           chunks=sum((x.chunks for x in arrays), []))
    irreps = _same_irreps(arrays, "concatenate")
    zero_flags, chunks = _join_chunks(arrays, irreps,
                                      lambda cs: xp.concatenate(cs, axis=axis), xp)
    return IrrepsArray(irreps, xp.concatenate([x.array for x in arrays], axis=axis),
                       zero_flags=zero_flags, chunks=chunks)


def stack(arrays: Sequence[IrrepsArray], axis: int = 0) -> IrrepsArray:
    """Stack along a new leading axis (not the last one).

    Example:
        >>> stack([ones("1x1o"), zeros("1x1o")]).shape
        (2, 3)
    """
    if len(arrays) == 0:
        raise ValueError("Cannot stack empty list of IrrepsArray")
    ndim = arrays[0].ndim + 1
    axis = standardize_axis(axis, ndim)[0]
    if axis == ndim - 1:
        raise ValueError("IrrepsArray cannot be stacked on the last axis because the last axis "
                         "is reserved for the irreps dimension")
    xp = infer_backend([x.array for x in arrays])
    irreps = _same_irreps(list(arrays), "stack")
    zero_flags, chunks = _join_chunks(list(arrays), irreps,
                                      lambda cs: xp.stack(cs, axis=axis), xp)
    return IrrepsArray(irreps, xp.stack([x.array for x in arrays], axis=axis),
                       zero_flags=zero_flags, chunks=chunks)


def norm(array: IrrepsArray, *, squared: bool = False, per_irrep: bool = True) -> IrrepsArray:
    """Norm of each irrep (``"{mul}x0e"`` per entry), or of the whole vector.

    Example:
        >>> import fluxion.numpy as jnp
        >>> norm(IrrepsArray("1x1o", jnp.array([3.0, 4.0, 0.0]))).array.tolist()
        [5.0]
    """
    xp = infer_backend(array.array)

    def reduce(x: Any) -> Any:
        if x is None:
            return None
        x = xp.sum(xp.conj(x) * x, axis=-1, keepdims=True)
        if squared:
            return x
        safe = xp.sqrt(xp.where(x == 0.0, 1.0, x))
        return xp.where(x == 0.0, 0.0, safe)

    if per_irrep:
        return from_chunks([(mul, "0e") for mul, _ in array.irreps],
                           [reduce(c) for c in array.chunks], array.shape[:-1], array.dtype)
    return IrrepsArray("0e", reduce(array.array))


_upper.register("from_chunks", from_chunks)

"""``IrrepsArray``: an array whose last axis is laid out by an :class:`Irreps` (e3nn_jax's).

The data is one array ``[..., irreps.dim]``; ``chunks`` views it per entry as ``[..., mul, 2l+1]``.
A chunk may be known to be zero (``zero_flags``, chunk ``None``): operations skip it, and
``remove_zero_chunks`` drops it from the irreps, which changes the irreps a following layer sees
(and so its weight shapes), exactly as in e3nn_jax. As a pytree the array is the only leaf and the
irreps the static part; like e3nn_jax, flattening forgets the zero flags.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

import fluxion
import fluxion.numpy as fnp
from fluxion import tree_util
from fluxion_md._nn.e3nn import _upper
from fluxion_md._nn.e3nn._irreps import Irrep, Irreps, MulIrrep

__all__ = ["IrrepsArray", "infer_backend", "standardize_axis"]


def infer_backend(tree: Any) -> Any:
    """``numpy`` when the leaves are NumPy arrays, else ``fluxion.numpy`` (both: an error)."""
    leaves = tree_util.tree_leaves(tree)
    has_numpy = any(isinstance(x, np.ndarray) for x in leaves)
    has_fluxion = any(isinstance(x, fluxion.Array) for x in leaves)
    if has_numpy and has_fluxion:
        raise ValueError("IrrepsArray: cannot mix NumPy and fluxion arrays")
    return np if has_numpy else fnp


def standardize_axis(axis: Any, ndim: int) -> tuple[int, ...]:
    """Sorted, non-negative, de-duplicated axes (``None``: all of them)."""
    if axis is None:
        return tuple(range(ndim))
    try:
        axes = (operator.index(axis),)
    except TypeError:
        axes = tuple(operator.index(a) for a in axis)
    if not all(-ndim <= a < ndim for a in axes):
        raise ValueError(f"axis {axis} out of range for {ndim} dimensions")
    return tuple(sorted({a % ndim for a in axes}))


def _is_ellipsis(x: Any) -> bool:
    return x is Ellipsis


def _is_full_slice(x: Any) -> bool:
    return isinstance(x, slice) and x == slice(None)


def _map_chunks(fn: Any, chunks: list | None) -> list | None:
    if chunks is None:
        return None
    return [None if c is None else fn(c) for c in chunks]


class IrrepsArray:
    """An array ``[..., irreps.dim]`` together with its :class:`Irreps`.

    Args:
        irreps: the layout of the last axis (anything :class:`Irreps` accepts).
        array: the data.
        zero_flags: per irreps entry, whether that chunk is known to be zero.
        chunks: the per-entry views, when already at hand.

    Example:
        >>> import fluxion.numpy as jnp
        >>> x = IrrepsArray("1x0e+1x1o", jnp.arange(4.0))
        >>> x.irreps, x.shape, x.chunks[1].shape, x[..., "1o"].array.tolist()
        (1x0e+1x1o, (4,), (1, 3), [1.0, 2.0, 3.0])
    """

    __slots__ = ("irreps", "array", "_zero_flags", "_chunks")
    irreps: Irreps
    array: Any

    def __init__(self, irreps: Any, array: Any, *, zero_flags: Sequence[bool] | None = None,
                 chunks: list | None = None):
        irreps = Irreps(irreps)
        zero_flags = None if zero_flags is None else tuple(bool(z) for z in zero_flags)
        shape = getattr(array, "shape", None)
        if isinstance(shape, tuple) and len(shape) > 0:
            if shape[-1] != irreps.dim:
                raise ValueError(f"IrrepsArray: Array shape {shape} incompatible with irreps "
                                 f"{irreps}. {shape[-1]} != {irreps.dim}")
            if chunks is not None:
                for (mul, ir), chunk in zip(irreps, chunks):
                    if chunk is not None and tuple(chunk.shape[-2:]) != (mul, ir.dim):
                        raise ValueError(f"IrrepsArray: chunk shape {chunk.shape} incompatible "
                                         f"with mul={mul} and ir.dim={ir.dim}")
        if zero_flags is not None and len(zero_flags) != len(irreps):
            raise ValueError(f"IrrepsArray: len(zero_flags) != len(irreps), "
                             f"{len(zero_flags)} != {len(irreps)}")
        if chunks is not None and len(chunks) != len(irreps):
            raise ValueError(f"IrrepsArray: len(chunks) != len(irreps), "
                             f"{len(chunks)} != {len(irreps)}")
        object.__setattr__(self, "irreps", irreps)
        object.__setattr__(self, "array", array)
        object.__setattr__(self, "_zero_flags", zero_flags)
        object.__setattr__(self, "_chunks", None if chunks is None else list(chunks))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("IrrepsArray is immutable")

    # -- views ------------------------------------------------------------------------------

    @property
    def zero_flags(self) -> tuple[bool, ...]:
        """Per irreps entry: True when that chunk is known to be zero."""
        if self._zero_flags is None:
            return (False,) * len(self.irreps)
        return self._zero_flags

    @property
    def chunks(self) -> list:
        """Per irreps entry, the data as ``[..., mul, 2l+1]`` (``None`` for a zero chunk)."""
        if self._chunks is None:
            xp = infer_backend(self.array)
            lead = self.array.shape[:-1]
            if len(self.irreps) == 1:
                mul, ir = self.irreps[0]
                views = [None if self.zero_flags[0]
                         else xp.reshape(self.array, lead + (mul, ir.dim))]
            else:
                views = [None if zero else xp.reshape(self.array[..., where], lead + (mul, ir.dim))
                         for zero, where, (mul, ir)
                         in zip(self.zero_flags, self.irreps.slices(), self.irreps)]
            object.__setattr__(self, "_chunks", views)
        return self._chunks

    @property
    def shape(self) -> tuple[int, ...]:
        """``array.shape``."""
        return self.array.shape

    @property
    def dtype(self) -> Any:
        """``array.dtype``."""
        return self.array.dtype

    @property
    def ndim(self) -> int:
        """``len(shape)``."""
        return len(self.shape)

    def __repr__(self) -> str:
        text = str(self.array)
        return f"{self.irreps}\n{text}" if "\n" in text else f"{self.irreps} {text}"

    def __len__(self) -> int:
        return len(self.array)

    def __iter__(self) -> Any:
        if self.ndim <= 1:
            raise ValueError("Can't iterate over IrrepsArray with ndim <= 1")
        for i in range(len(self)):
            yield self[i]

    # -- arithmetic -------------------------------------------------------------------------

    def _all_even_scalars(self) -> bool:
        return all(ir == "0e" for _, ir in self.irreps)

    def __neg__(self) -> IrrepsArray:
        return IrrepsArray(self.irreps, -self.array, zero_flags=self.zero_flags,
                           chunks=_map_chunks(lambda c: -c, self._chunks))

    def _add_or_sub(self, other: Any, sign: int) -> IrrepsArray:
        symbol = "+" if sign > 0 else "-"
        if isinstance(other, (int, float)) and other == 0:
            return self
        xp = infer_backend(self.array)
        if not isinstance(other, IrrepsArray):
            if self._all_even_scalars():
                other = xp.asarray(other)
                new = self.array + other if sign > 0 else self.array - other
                return IrrepsArray(self.irreps, new)
            raise ValueError(f"IrrepsArray({self.irreps}, shape={self.shape}) {symbol} scalar "
                             "is not equivariant.")
        if self.irreps != other.irreps:
            raise ValueError(f"IrrepsArray({self.irreps}, shape={self.shape}) {symbol} "
                             f"IrrepsArray({other.irreps}) is not equivariant.")
        zero_flags = tuple(a and b for a, b in zip(self.zero_flags, other.zero_flags))
        chunks = None
        if self._chunks is not None and other._chunks is not None:
            chunks = []
            for a, b in zip(self._chunks, other._chunks):
                if b is None:
                    chunks.append(a)
                elif a is None:
                    chunks.append(b if sign > 0 else -b)
                else:
                    chunks.append(a + b if sign > 0 else a - b)
        new = self.array + other.array if sign > 0 else self.array - other.array
        return IrrepsArray(self.irreps, new, zero_flags=zero_flags, chunks=chunks)

    def __add__(self, other: Any) -> IrrepsArray:
        return self._add_or_sub(other, 1)

    def __radd__(self, other: Any) -> IrrepsArray:
        return self + other

    def __sub__(self, other: Any) -> IrrepsArray:
        return self._add_or_sub(other, -1)

    def __rsub__(self, other: Any) -> IrrepsArray:
        return -self + other

    def _scale(self, other: Any, divide: bool) -> IrrepsArray:
        elementwise_tensor_product = _upper.get("elementwise_tensor_product")
        symbol = "/" if divide else "*"
        xp = infer_backend(self.array)
        if isinstance(other, IrrepsArray):
            if divide:
                if (len(other.irreps) == 0 or other.irreps.lmax > 0
                        or self.irreps.num_irreps != other.irreps.num_irreps):
                    raise ValueError(f"IrrepsArray({self.irreps}, shape={self.shape}) / "
                                     f"IrrepsArray({other.irreps}) is not equivariant.")
                if any(c is None for c in other.chunks):
                    raise ValueError("There are deterministic Zeros in the array of the lhs. "
                                     "Cannot divide by Zero.")
                return elementwise_tensor_product(self, 1.0 / other)
            if self.irreps.num_irreps != other.irreps.num_irreps:
                raise ValueError(f"IrrepsArray({self.irreps}, shape={self.shape}) * "
                                 f"IrrepsArray({other.irreps}) only works if the number of "
                                 "irreps is the same.")
            product = elementwise_tensor_product(self.irreps, other.irreps)
            if product.num_irreps != self.irreps.num_irreps:
                raise ValueError(f"IrrepsArray({self.irreps}, shape={self.shape}) * "
                                 f"IrrepsArray({other.irreps}) is only supported for scalar * "
                                 "irreps and irreps * scalar. To perform irreps * irreps use "
                                 "e3nn.elementwise_tensor_product or e3nn.tensor_product.")
            return elementwise_tensor_product(self, other)
        other = xp.asarray(other)
        if other.ndim > 0 and other.shape[-1] == self.irreps.num_irreps:
            factors = IrrepsArray(f"{other.shape[-1]}x0e", 1.0 / other if divide else other)
            return elementwise_tensor_product(self, factors)
        if self.irreps.lmax > 0 and other.ndim > 0 and other.shape[-1] != 1:
            raise ValueError(f"IrrepsArray({self.irreps}, shape={self.shape}) {symbol} "
                             f"scalar(shape={other.shape}) is not equivariant.")
        if divide:
            return IrrepsArray(self.irreps, self.array / other, zero_flags=self.zero_flags,
                               chunks=_map_chunks(lambda c: c / other[..., None], self._chunks))
        return IrrepsArray(self.irreps, self.array * other, zero_flags=self.zero_flags,
                           chunks=_map_chunks(lambda c: c * other[..., None], self._chunks))

    def __mul__(self, other: Any) -> IrrepsArray:
        return self._scale(other, divide=False)

    def __rmul__(self, other: Any) -> IrrepsArray:
        return self * other

    def __truediv__(self, other: Any) -> IrrepsArray:
        return self._scale(other, divide=True)

    def __rtruediv__(self, other: Any) -> IrrepsArray:
        xp = infer_backend((self.array, other))
        other = xp.asarray(other)
        if self.irreps.lmax > 0:
            raise ValueError(f"scalar(shape={other.shape}) / IrrepsArray({self.irreps}, "
                             f"shape={self.shape}) is not equivariant.")
        if any(c is None for c in self.chunks):
            raise ValueError("There are deterministic Zeros in the array of the lhs. "
                             "Cannot divide by Zero.")
        return IrrepsArray(self.irreps, other / self.array)

    def __pow__(self, exponent: Any) -> IrrepsArray:
        if self._all_even_scalars():
            return IrrepsArray(self.irreps, self.array**exponent,
                               chunks=_map_chunks(lambda c: c**exponent, self._chunks))
        if exponent % 1.0 == 0.0 and self.irreps.lmax == 0:
            irreps = self.irreps
            if exponent % 2.0 == 0.0:
                irreps = [(mul, "0e") for mul, _ in self.irreps]
            return IrrepsArray(irreps, self.array**exponent,
                               chunks=_map_chunks(lambda c: c**exponent, self._chunks))
        raise ValueError(f"IrrepsArray({self.irreps}, shape={self.shape}) ** scalar is not "
                         "equivariant.")

    # -- indexing ---------------------------------------------------------------------------

    def __getitem__(self, index: Any) -> IrrepsArray:
        if not isinstance(index, tuple):
            index = (index,)
        last = index[-1]
        reaches_last = any(map(_is_ellipsis, index[:-1])) or len(index) == self.ndim

        if isinstance(last, (Irrep, MulIrrep, Irreps, str)):
            if not reaches_last:
                raise IndexError("Error in IrrepsArray.__getitem__, Irreps index must be the "
                                 f"last index, try x[..., {last}].")
            wanted = Irreps(last)
            found = [i for i in range(len(self.irreps))
                     if self.irreps[i:i + len(wanted)] == wanted]
            if len(found) != 1:
                raise IndexError(f"Error in IrrepsArray.__getitem__, Can't slice with {wanted} "
                                 f"because it doesn't appear exactly once in {self.irreps}.")
            i = found[0]
            j = i + len(wanted)
            part = IrrepsArray(wanted, self.array[..., self.irreps[:i].dim:self.irreps[:j].dim],
                               zero_flags=self.zero_flags[i:j], chunks=self.chunks[i:j])
            return part[index[:-1] + (slice(None),)]

        if (reaches_last and isinstance(last, slice) and last.step is None
                and isinstance(last.start, (int, type(None)))
                and isinstance(last.stop, (int, type(None)))
                and (last.start is not None or last.stop is not None)):
            return self._slice_last_axis(index, last)

        if reaches_last and last is None:
            raise IndexError("Error in IrrepsArray.__getitem__, cannot add a new dimension at "
                             "the end.")
        if reaches_last and not (_is_ellipsis(last) or _is_full_slice(last)):
            if isinstance(last, int):
                raise IndexError("Error in IrrepsArray.__getitem__, integer index in the irreps "
                                 f"dimension is not supported, try x[..., {last}:{last + 1}] "
                                 "instead.")
            raise IndexError(f"Error in IrrepsArray.__getitem__, indexing the irreps dimension "
                             f"with [..., {last}] is not supported.")
        return IrrepsArray(self.irreps, self.array[index], zero_flags=self.zero_flags,
                           chunks=_map_chunks(lambda c: c[index + (slice(None),)], self._chunks))

    def _slice_last_axis(self, index: tuple, last: slice) -> IrrepsArray:
        start, stop, _ = last.indices(self.shape[-1])
        first = end = None
        for i in range(len(self.irreps) + 1):
            offset = self.irreps[:i].dim
            if offset == start:
                first = i
            if first is None and start < offset:
                split = self._split_entry(i - 1, start)
                if split is not None:
                    return self.rechunk(split)[index]
            if offset == stop:
                end = i
                break
            if end is None and stop < offset:
                split = self._split_entry(i - 1, stop)
                if split is not None:
                    return self.rechunk(split)[index]
        if first is None or end is None:
            raise IndexError(f"Error in IrrepsArray.__getitem__, unable to slice {self.irreps} "
                             f"with {start}:{stop}.")
        part = IrrepsArray(self.irreps[first:end], self.array[..., start:stop],
                           zero_flags=self.zero_flags[first:end], chunks=self.chunks[first:end])
        return part[index[:-1] + (slice(None),)]

    def _split_entry(self, i: int, position: int) -> Irreps | None:
        # The irreps with entry i cut in two at last-axis `position`, if that falls between irreps.
        mul, ir = self.irreps[i]
        inside = position - self.irreps[:i].dim
        if inside % ir.dim:
            return None
        cut = inside // ir.dim
        return self.irreps[:i] + Irreps([(cut, ir), (mul - cut, ir)]) + self.irreps[i + 1:]

    def reshape(self, shape: tuple[int, ...]) -> IrrepsArray:
        """New leading shape (the last entry of ``shape`` must be ``irreps.dim`` or -1)."""
        if shape[-1] not in (self.irreps.dim, -1):
            raise ValueError(f"IrrepsArray.reshape: last entry of {shape} must be "
                             f"{self.irreps.dim} or -1")
        return IrrepsArray(self.irreps, self.array.reshape(shape[:-1] + (self.irreps.dim,)),
                           zero_flags=self.zero_flags,
                           chunks=_map_chunks(lambda c: c.reshape(shape[:-1] + c.shape[-2:]),
                                              self._chunks))

    def astype(self, dtype: Any) -> IrrepsArray:
        """The same data cast to ``dtype`` (zero flags kept)."""
        return IrrepsArray(self.irreps, self.array.astype(dtype), zero_flags=self.zero_flags,
                           chunks=_map_chunks(lambda c: c.astype(dtype), self._chunks))

    def broadcast_to(self, shape: tuple[int, ...]) -> IrrepsArray:
        """Broadcast the leading axes to ``shape[:-1]``."""
        xp = infer_backend(self.array)
        if not isinstance(shape, tuple) or shape[-1] not in (self.irreps.dim, -1):
            raise ValueError(f"IrrepsArray.broadcast_to: shape must be a tuple ending in "
                             f"{self.irreps.dim} or -1, got {shape}")
        lead = shape[:-1]
        return IrrepsArray(
            self.irreps, xp.broadcast_to(self.array, lead + (self.irreps.dim,)),
            zero_flags=self.zero_flags,
            chunks=[None if c is None else xp.broadcast_to(c, lead + c.shape[-2:])
                    for c in self.chunks])

    # -- irreps bookkeeping -----------------------------------------------------------------

    def _from_chunks(self, irreps: Any, chunks: list, lead: tuple | None = None) -> IrrepsArray:
        from_chunks = _upper.get("from_chunks")
        lead = self.shape[:-1] if lead is None else lead
        return from_chunks(irreps, chunks, lead, self.dtype, backend=infer_backend(self.array))

    def remove_zero_chunks(self) -> IrrepsArray:
        """Drops the entries known to be zero (their irreps go too)."""
        kept = [i for i, zero in enumerate(self.zero_flags) if not zero]
        return self._from_chunks(Irreps([self.irreps[i] for i in kept]),
                                 [self.chunks[i] for i in kept])

    def remove_nones(self) -> IrrepsArray:
        """Deprecated name of :meth:`remove_zero_chunks` (kept, as in e3nn_jax)."""
        return self.remove_zero_chunks()

    def simplify(self) -> IrrepsArray:
        """Rechunk to ``irreps.simplify()``."""
        return self.rechunk(self.irreps.simplify())

    def unify(self) -> IrrepsArray:
        """Rechunk to ``irreps.unify()``."""
        return self.rechunk(self.irreps.unify())

    def sort(self) -> IrrepsArray:
        """Entries reordered as ``irreps.sort()``."""
        irreps, _, inv = self.irreps.sort()
        return self._from_chunks(irreps, [self.chunks[i] for i in inv])

    def regroup(self) -> IrrepsArray:
        """``sort`` then ``simplify``."""
        return self.sort().simplify()

    def filter(self, keep: Any = None, *, drop: Any = None, lmax: int | None = None
               ) -> IrrepsArray:
        """Keeps the entries that ``Irreps.filter`` keeps."""
        if keep is None and drop is None and lmax is None:
            return self
        kept = self.irreps.filter(keep=keep, drop=drop, lmax=lmax)
        return self._from_chunks(kept, [c for c, mul_ir in zip(self.chunks, self.irreps)
                                        if mul_ir in kept])

    @property
    def slice_by_mul(self) -> _MulSlicer:
        """``x.slice_by_mul[a:b]``: multiplicity positions ``a .. b``."""
        return _MulSlicer(self)

    @property
    def slice_by_dim(self) -> _DimSlicer:
        """``x.slice_by_dim[a:b]`` = ``x[..., a:b]``."""
        return _DimSlicer(self)

    @property
    def slice_by_chunk(self) -> _ChunkSlicer:
        """``x.slice_by_chunk[a:b]``: entries ``a .. b``."""
        return _ChunkSlicer(self)

    def mul_to_axis(self, factor: int | None = None, axis: int = -2) -> IrrepsArray:
        """Splits every multiplicity by ``factor`` into a new axis before the irreps axis."""
        axis = standardize_axis(axis, self.ndim + 1)[0]
        if axis == self.ndim:
            raise ValueError("axis cannot be the last axis. The last axis is reserved for the "
                             "irreps dimension.")
        if factor is None:
            factor = math.gcd(*[mul for mul, _ in self.irreps])
        if any(mul % factor for mul, _ in self.irreps):
            raise ValueError(f"factor {factor} does not divide all multiplicities: {self.irreps}")
        irreps = Irreps([(mul // factor, ir) for mul, ir in self.irreps])
        xp = infer_backend(self.array)
        chunks = [None if c is None else
                  xp.moveaxis(c.reshape(self.shape[:-1] + (factor, mul, ir.dim)), -3, axis)
                  for (mul, ir), c in zip(irreps, self.chunks)]
        return self._from_chunks(irreps, chunks, self.shape[:-1] + (factor,))

    def axis_to_mul(self, axis: int = -2) -> IrrepsArray:
        """Merges ``axis`` into the multiplicities (inverse of :meth:`mul_to_axis`)."""
        if self.ndim < 2:
            raise ValueError("IrrepsArray.axis_to_mul needs at least 2 dimensions")
        axis = standardize_axis(axis, self.ndim)[0]
        if axis == self.ndim - 1:
            raise ValueError("The last axis is the irreps dimension and therefore cannot be "
                             "converted to multiplicity.")
        xp = infer_backend(self.array)
        irreps = Irreps([(self.shape[axis] * mul, ir) for mul, ir in self.irreps])
        lead = tuple(n for i, n in enumerate(self.shape[:-1]) if i != axis)
        chunks = [None if c is None else
                  xp.moveaxis(c, axis, -3).reshape(lead + (mul, ir.dim))
                  for (mul, ir), c in zip(irreps, self.chunks)]
        return self._from_chunks(irreps, chunks, lead)

    def transform_by_matrix(self, R: Any) -> IrrepsArray:
        """The data rotated by the matrix ``R[3, 3]`` (times the parity when ``det R < 0``)."""
        blocks = {ir: ir.D_from_matrix(fnp.asarray(R).astype(self.dtype))
                  for ir in {ir for _, ir in self.irreps}}
        chunks = [None if c is None else fnp.einsum("ij,...uj->...ui", blocks[ir], c)
                  for (_, ir), c in zip(self.irreps, self.chunks)]
        return self._from_chunks(self.irreps, chunks)

    def rechunk(self, irreps: Any) -> IrrepsArray:
        """The same data described by equivalent ``irreps`` (same ``simplify()``)."""
        irreps = Irreps(irreps)
        if self.irreps.simplify() != irreps.simplify():
            raise ValueError(f"IrrepsArray.rechunk: {irreps} is not equivalent to {self.irreps}")
        if self.irreps == irreps:
            return self
        # which positions of the last axis are known zeros, then per new entry: all of its own?
        zero_mask = np.zeros(self.irreps.dim, dtype=bool)
        for zero, where in zip(self.zero_flags, self.irreps.slices()):
            zero_mask[where] = zero
        zero_flags = [bool(np.all(zero_mask[where])) for where in irreps.slices()]
        chunks = None
        if self._chunks is not None:
            chunks = self._rechunk_views(irreps, zero_flags)
        return IrrepsArray(irreps, self.array, zero_flags=zero_flags, chunks=chunks)

    def _rechunk_views(self, irreps: Irreps, zero_flags: list[bool]) -> list:
        # Regroup the existing per-entry views along the multiplicity axis: cut each old chunk
        # into pieces that fit the new entries, then glue the pieces of each new entry.
        xp = infer_backend(self.array)
        lead = self.shape[:-1]
        pieces: list[list[tuple[int, Any]]] = [[] for _ in irreps]
        targets = [i for i, (mul, _) in enumerate(irreps) if mul > 0]
        k, room = -1, 0
        for (mul, _), chunk in zip(self.irreps, self.chunks):
            taken = 0
            while taken < mul:
                if room == 0:
                    k += 1
                    room = irreps[targets[k]].mul
                size = min(mul - taken, room)
                part = None if chunk is None else chunk[..., taken:taken + size, :]
                pieces[targets[k]].append((size, part))
                room -= size
                taken += size
        views = []
        for (mul, ir), zero, parts in zip(irreps, zero_flags, pieces):
            if zero or mul == 0:
                views.append(None)
                continue
            filled = [xp.zeros(lead + (size, ir.dim), self.dtype) if part is None else part
                      for size, part in parts]
            views.append(filled[0] if len(filled) == 1 else xp.concatenate(filled, axis=-2))
        return views


class _MulSlicer:
    def __init__(self, x: IrrepsArray):
        self.x = x

    def __getitem__(self, index: slice) -> IrrepsArray:
        if not isinstance(index, slice):
            raise IndexError("IrrepsArray.slice_by_mul only supports one slices (like "
                             "IrrepsArray.slice_by_mul[2:4]).")
        x = self.x
        start, stop, step = index.indices(x.irreps.num_irreps)
        if step != 1:
            raise NotImplementedError("IrrepsArray.slice_by_mul does not support strides.")
        irreps, chunks, pos = [], [], 0
        for (mul, ir), chunk in zip(x.irreps, x.chunks):
            if start <= pos and pos + mul <= stop:
                irreps.append((mul, ir))
                chunks.append(chunk)
            elif start < pos + mul and pos < stop:
                lo, hi = max(start, pos) - pos, min(stop, pos + mul) - pos
                irreps.append((hi - lo, ir))
                chunks.append(None if chunk is None else chunk[..., lo:hi, :])
            pos += mul
        return x._from_chunks(irreps, chunks)


class _DimSlicer:
    def __init__(self, x: IrrepsArray):
        self.x = x

    def __getitem__(self, index: slice) -> IrrepsArray:
        if not isinstance(index, slice):
            raise IndexError("IrrepsArray.slice_by_dim only supports slices (like "
                             "IrrepsArray.slice_by_dim[2:4]).")
        return self.x[..., index]


class _ChunkSlicer:
    def __init__(self, x: IrrepsArray):
        self.x = x

    def __getitem__(self, index: slice) -> IrrepsArray:
        if not isinstance(index, slice):
            raise IndexError("IrrepsArray.slice_by_chunk only supports slices (like "
                             "IrrepsArray.slice_by_chunk[2:4]).")
        start, stop, step = index.indices(len(self.x.irreps))
        return self.x._from_chunks(self.x.irreps[start:stop:step],
                                   self.x.chunks[start:stop:step])


tree_util.register_pytree_node(
    IrrepsArray, lambda x: ((x.array,), x.irreps), lambda irreps, data: IrrepsArray(irreps, data[0]))

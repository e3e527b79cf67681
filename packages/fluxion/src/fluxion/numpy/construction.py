"""More array creation: logspace/geomspace, triangles and diagonals, grids, windows, and
conversions from host buffers.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.tri(2, dtype=jnp.int32).tolist()
    [[1, 0], [1, 1]]
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Sequence

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._util import canonical_axis, check_arraylike, ensure_array, promote_dtypes
from fluxion.numpy.creation import _concrete_scalar, arange, array, asarray, linspace, zeros

__all__ = [
    "logspace", "geomspace", "tri", "tril", "triu", "diag", "diagflat", "diagonal", "meshgrid",
    "indices", "mgrid", "ogrid", "fromfunction", "frombuffer", "fromiter", "fromstring", "copy",
    "vander", "bartlett", "blackman", "hamming", "hanning", "kaiser", "from_dlpack",
]


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: Any = 10.0,
             dtype: Any = None, axis: int = 0) -> Any:
    """``base ** linspace(start, stop, num)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.logspace(0, 2, 3).tolist()
        [1.0, 10.0, 100.0]
    """
    check_arraylike("logspace", start, stop)
    if dtype is None:
        dt = dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
    else:
        dt = dtypes.check_and_canonicalize_user_dtype(dtype, "logspace")
    comp = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(dt))
    s = lax.convert_element_type(ensure_array(start), comp)
    e = lax.convert_element_type(ensure_array(stop), comp)
    lin = linspace(s, e, num, endpoint=endpoint, axis=axis)
    return lax.convert_element_type(uf.power(base, lin), dt)


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None,
              axis: int = 0) -> Any:
    """Numbers spaced evenly on a log scale between ``start`` and ``stop`` (a geometric series).

    Example:
        >>> import fluxion.numpy as jnp
        >>> [round(v, 3) for v in jnp.geomspace(1.0, 100.0, 3).tolist()]
        [1.0, 10.0, 100.0]
    """
    check_arraylike("geomspace", start, stop)
    if dtype is None:
        dt = dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
    else:
        dt = dtypes.check_and_canonicalize_user_dtype(dtype, "geomspace")
    comp = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(dt))
    s = lax.convert_element_type(ensure_array(start), comp)
    e = lax.convert_element_type(ensure_array(stop), comp)
    sign = uf.sign(s)
    res = uf.multiply(sign, logspace(uf.log10(uf.divide(s, sign)), uf.log10(uf.divide(e, sign)),
                                     num, endpoint=endpoint, base=10.0, dtype=comp, axis=0))
    ax = canonical_axis(axis, res.ndim, "geomspace")
    if ax:
        res = lax.transpose(res, (*range(1, ax + 1), 0, *range(ax + 1, res.ndim)))
    return lax.convert_element_type(res, dt)


def _tri_mask(n: int, m: int, k: int) -> Any:
    rows = lax.broadcasted_iota(np.int32, (n, m), 0)
    cols = lax.broadcasted_iota(np.int32, (n, m), 1)
    return lax.ge(lax.add(rows, lax.convert_element_type(k, np.int32)), cols)


def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = None) -> Any:  # noqa: N803
    """Ones at and below the ``k``-th diagonal of an ``N`` x ``M`` matrix (float32 default).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.tri(2, 3, 1).tolist()
        [[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]
    """
    dt = np.dtype(np.float32) if dtype is None else dtypes.check_and_canonicalize_user_dtype(
        dtype, "tri")
    n = operator.index(N)
    m = n if M is None else operator.index(M)
    return lax.convert_element_type(_tri_mask(n, m, operator.index(k)), dt)


def _tri_select(name: str, m: Any, k: int, lower: bool) -> Any:
    check_arraylike(name, m)
    m = ensure_array(m)
    if m.ndim < 2:
        raise ValueError(f"Argument to fluxion.numpy.{name} must be at least 2D")
    n, mm = m.shape[-2:]
    mask = _tri_mask(n, mm, k if lower else k - 1)
    mask = lax.broadcast_in_dim(mask, m.shape, (m.ndim - 2, m.ndim - 1))
    zero = lax.broadcast_in_dim(lax.convert_element_type(0, m.dtype, weak_type=m.weak_type),
                                m.shape, ())
    return lax.select(mask, m, zero) if lower else lax.select(mask, zero, m)


def tril(m: Any, k: int = 0) -> Any:
    """``m`` with the elements above the ``k``-th diagonal zeroed (over the last two axes).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.tril(jnp.ones((2, 2))).tolist()
        [[1.0, 0.0], [1.0, 1.0]]
    """
    return _tri_select("tril", m, operator.index(k), True)


def triu(m: Any, k: int = 0) -> Any:
    """``m`` with the elements below the ``k``-th diagonal zeroed.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.triu(jnp.ones((2, 2))).tolist()
        [[1.0, 1.0], [0.0, 1.0]]
    """
    return _tri_select("triu", m, operator.index(k), False)


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """The ``offset`` diagonal over ``axis1``/``axis2`` (moved to the last axis of the result).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.diagonal(jnp.arange(9).reshape(3, 3)).tolist()
        [0, 4, 8]
    """
    from fluxion.numpy.shape import moveaxis, reshape  # noqa: PLC0415
    check_arraylike("diagonal", a)
    a = ensure_array(a)
    if a.ndim < 2:
        raise ValueError("diagonal requires an array of at least two dimensions.")
    offset = operator.index(_concrete_scalar(offset, "diagonal", "offset"))
    ax1 = canonical_axis(axis1, a.ndim, "diagonal")
    ax2 = canonical_axis(axis2, a.ndim, "diagonal")
    if ax1 == ax2:
        raise ValueError("diagonal: axis1 and axis2 cannot be the same")
    n, m = a.shape[ax1], a.shape[ax2]
    a = moveaxis(a, (ax1, ax2), (-2, -1))
    size = max(0, min(n + min(offset, 0), m - max(offset, 0)))
    batch = a.shape[:-2]
    if size == 0:
        return reshape(a, batch + (0,)) if a.size == 0 else lax.slice_in_dim(
            reshape(a, batch + (n * m,)), 0, 0, axis=len(batch))
    # Element (i, i + offset) of an n x m matrix sits at flat index i*(m+1) + offset (and
    # (i - offset, i) at -offset*m + i*(m+1)): a strided slice of the flattened matrix.
    flat = reshape(a, batch + (n * m,))
    start = offset if offset >= 0 else -offset * m
    return lax.slice_in_dim(flat, start, start + (size - 1) * (m + 1) + 1, m + 1, len(batch))


def diag(v: Any, k: int = 0) -> Any:
    """The ``k``-th diagonal of a 2-D array, or a 2-D array with 1-D ``v`` on that diagonal.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.diag(jnp.array([1, 2])).tolist()
        [[1, 0], [0, 2]]
    """
    check_arraylike("diag", v)
    v = ensure_array(v)
    k = operator.index(k)
    if v.ndim == 2:
        return diagonal(v, offset=k)
    if v.ndim != 1:
        raise ValueError("diag input must be 1d or 2d")
    L = v.shape[0]  # noqa: N806
    n = L + abs(k)
    zero = lax.convert_element_type(0, v.dtype, weak_type=v.weak_type)
    parts = []
    if k < 0:
        parts.append(lax.broadcast_in_dim(zero, (-k,), ()))
    parts.append(v)
    if k > 0:
        parts.append(lax.broadcast_in_dim(zero, (k,), ()))
    vp = lax.concatenate(parts, 0) if len(parts) > 1 else v
    rows = lax.broadcasted_iota(np.int32, (n, n), 0)
    cols = lax.broadcasted_iota(np.int32, (n, n), 1)
    mask = lax.eq(lax.add(rows, lax.convert_element_type(k, np.int32)), cols)
    return lax.select(mask, lax.broadcast_in_dim(vp, (n, n), (0,)),
                      lax.broadcast_in_dim(zero, (n, n), ()))


def diagflat(v: Any, k: int = 0) -> Any:
    """A 2-D array with the flattened ``v`` on the ``k``-th diagonal.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.diagflat(jnp.array([[1, 2]])).tolist()
        [[1, 0], [0, 2]]
    """
    from fluxion.numpy.shape import ravel  # noqa: PLC0415
    check_arraylike("diagflat", v)
    out = diag(ravel(ensure_array(v)), k)
    return lax.convert_element_type(out, out.dtype, weak_type=False)


def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> list:
    """Coordinate grids from 1-D coordinate vectors (``indexing`` 'xy' or 'ij').

    Example:
        >>> import fluxion.numpy as jnp
        >>> [g.shape for g in jnp.meshgrid(jnp.arange(2), jnp.arange(3))]
        [(3, 2), (3, 2)]
    """
    check_arraylike("meshgrid", *xi)
    args = [ensure_array(a) for a in xi]
    if not copy:
        raise ValueError("fluxion.numpy.meshgrid only supports copy=True")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
    if any(a.ndim != 1 for a in args):
        raise ValueError("Arguments to fluxion.numpy.meshgrid must be 1D, got shapes "
                         f"{[a.shape for a in args]}")
    if indexing == "xy" and len(args) >= 2:
        args[0], args[1] = args[1], args[0]
    shape = [1 if sparse else a.shape[0] for a in args]
    out = []
    for i, a in enumerate(args):
        s = [*shape[:i], a.shape[0], *shape[i + 1:]] if sparse else shape
        out.append(lax.broadcast_in_dim(a, tuple(s), (i,)))
    if indexing == "xy" and len(args) >= 2:
        out[0], out[1] = out[1], out[0]
    return out


def indices(dimensions: Sequence[int], dtype: Any = None, sparse: bool = False) -> Any:
    """Arrays of the index along each dimension of a grid of shape ``dimensions``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.indices((2, 2)).tolist()
        [[[0, 0], [1, 1]], [[0, 1], [0, 1]]]
    """
    from fluxion.numpy.shape import stack  # noqa: PLC0415
    dt = dtypes.check_and_canonicalize_user_dtype(int if dtype is None else dtype, "indices")
    dims = tuple(operator.index(d) for d in dimensions)
    n = len(dims)
    out = []
    for i, d in enumerate(dims):
        s = (1,) * i + (d,) + (1,) * (n - i - 1) if sparse else dims
        out.append(lax.broadcast_in_dim(lax.iota(dt, d), s, (i,)))
    if sparse:
        return tuple(out)
    return stack(out, 0) if out else array([], dtype=dt)


def _grid_1d(s: slice, name: str) -> Any:
    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    if isinstance(step, complex) or np.iscomplexobj(step):
        return linspace(start, s.stop, int(abs(step)))
    return arange(start, s.stop, step)


class _Grid:
    """``mgrid[...]`` / ``ogrid[...]``: dense or open grids from slices (an imaginary step
    means a number of points, as in ``linspace``)."""

    def __init__(self, sparse: bool, name: str) -> None:
        self.sparse, self.name = sparse, name
        self.__doc__ = (f"``fluxion.numpy.{name}[a:b:s, ...]``: {'open' if sparse else 'dense'} "
                        "multi-dimensional grids (an imaginary step counts points).\n\n"
                        f"Example:\n    >>> import fluxion.numpy as jnp\n"
                        f"    >>> jnp.{name}[0:2].tolist()\n    [0, 1]\n")

    def __getitem__(self, key: Any) -> Any:
        from fluxion.numpy.shape import stack  # noqa: PLC0415
        if isinstance(key, slice):
            return _grid_1d(key, self.name)
        grids = promote_dtypes(*[_grid_1d(k, self.name) for k in key])
        out = meshgrid(*grids, indexing="ij", sparse=self.sparse)
        if self.sparse:
            return out
        return stack(out, 0) if out else arange(0)

    def __repr__(self) -> str:
        return f"fluxion.numpy.{self.name}"


mgrid = _Grid(False, "mgrid")
ogrid = _Grid(True, "ogrid")


def fromfunction(function: Callable[..., Any], shape: Any, *, dtype: Any = float,
                 **kwargs: Any) -> Any:
    """``function(*indices)`` where the index arrays span a grid of ``shape``.

    The index arrays are passed broadcast against each other (``indices(shape, sparse=True)``),
    so any elementwise ``function`` gives the same result as with per-element calls.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fromfunction(lambda i, j: i + j, (2, 2), dtype=int).tolist()
        [[0, 1], [1, 2]]
    """
    shp = tuple(operator.index(d) for d in shape)
    dt = dtypes.check_and_canonicalize_user_dtype(dtype, "fromfunction")
    grids = [lax.broadcast_in_dim(lax.iota(dt, d), shp, (i,)) for i, d in enumerate(shp)]
    return function(*grids, **kwargs)


def frombuffer(buffer: Any, dtype: Any = float, count: int = -1, offset: int = 0) -> Any:
    """An array from the bytes of ``buffer``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.frombuffer(b"\\x01\\x02", dtype=jnp.uint8).tolist()
        [1, 2]
    """
    return asarray(np.frombuffer(buffer=buffer, dtype=np.dtype(dtype), count=count,
                                 offset=offset))


def fromiter(iterable: Any, dtype: Any, count: int = -1) -> Any:
    """An array from the items of ``iterable``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fromiter(range(3), dtype=jnp.int32).tolist()
        [0, 1, 2]
    """
    return asarray(np.fromiter(iterable, dtype=np.dtype(dtype), count=count))


def fromstring(string: str, dtype: Any = float, count: int = -1, *, sep: str) -> Any:
    """An array from text data separated by ``sep``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fromstring("1 2", dtype=jnp.int32, sep=" ").tolist()
        [1, 2]
    """
    return asarray(np.fromstring(string, dtype=np.dtype(dtype), count=count, sep=sep))


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Any:
    """An array from an object supporting the DLPack protocol (copied through the host).

    Example:
        >>> import numpy as np, fluxion.numpy as jnp
        >>> jnp.from_dlpack(np.arange(2)).shape
        (2,)
    """
    return asarray(np.from_dlpack(x))


def copy(a: Any, order: str | None = None) -> Any:
    """A copy of ``a``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.copy(jnp.arange(2)).tolist()
        [0, 1]
    """
    check_arraylike("copy", a)
    return array(a, copy=True, order=order)


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Any:  # noqa: N803
    """The Vandermonde matrix: columns are powers of ``x``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.vander(jnp.array([2, 3]), 3).tolist()
        [[4, 2, 1], [9, 3, 1]]
    """
    check_arraylike("vander", x)
    x = ensure_array(x)
    if x.ndim != 1:
        raise ValueError("x must be a one-dimensional array")
    n = x.shape[0] if N is None else operator.index(N)
    if n < 0:
        raise ValueError("N must be nonnegative")
    io = lax.iota(x.dtype, n)
    if not increasing:
        io = lax.sub(lax.convert_element_type(n - 1, x.dtype), io)
    return uf.power(lax.broadcast_in_dim(x, x.shape + (1,), (0,)),
                    lax.broadcast_in_dim(io, (1, n), (1,)))


def _window(name: str, M: int) -> tuple[Any, int] | Any:  # noqa: N803
    m = operator.index(_concrete_scalar(M, name, "M"))
    dt = dtypes.default_float_dtype()
    if m <= 1:
        return lax.broadcast_in_dim(lax.convert_element_type(1, dt), (max(m, 0),), ()), None
    return lax.iota(dt, m), m


def bartlett(M: int) -> Any:  # noqa: N803
    """The Bartlett (triangular) window of ``M`` points.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.bartlett(3).tolist()
        [0.0, 1.0, 0.0]
    """
    n, m = _window("bartlett", M)
    if m is None:
        return n
    return uf.subtract(1, uf.divide(uf.abs(uf.subtract(uf.add(uf.multiply(2, n), 1), m)), m - 1))


def blackman(M: int) -> Any:  # noqa: N803
    """The Blackman window of ``M`` points.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.blackman(3).shape
        (3,)
    """
    n, m = _window("blackman", M)
    if m is None:
        return n
    a = uf.cos(uf.divide(uf.multiply(2 * np.pi, n), m - 1))
    b = uf.cos(uf.divide(uf.multiply(4 * np.pi, n), m - 1))
    return uf.add(uf.subtract(0.42, uf.multiply(0.5, a)), uf.multiply(0.08, b))


def hamming(M: int) -> Any:  # noqa: N803
    """The Hamming window of ``M`` points.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.hamming(3).shape
        (3,)
    """
    n, m = _window("hamming", M)
    if m is None:
        return n
    return uf.subtract(0.54, uf.multiply(0.46, uf.cos(uf.divide(uf.multiply(2 * np.pi, n), m - 1))))


def hanning(M: int) -> Any:  # noqa: N803
    """The Hann window of ``M`` points.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.hanning(3).tolist()
        [0.0, 1.0, 0.0]
    """
    n, m = _window("hanning", M)
    if m is None:
        return n
    return uf.multiply(0.5, uf.subtract(1, uf.cos(uf.divide(uf.multiply(2 * np.pi, n), m - 1))))


def kaiser(M: int, beta: Any) -> Any:  # noqa: N803
    """The Kaiser window of ``M`` points with shape parameter ``beta``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.kaiser(3, 0.0).tolist()
        [1.0, 1.0, 1.0]
    """
    from fluxion.numpy.ufuncs_extra import i0  # noqa: PLC0415
    n, m = _window("kaiser", M)
    if m is None:
        return n
    alpha = 0.5 * (m - 1)
    r = uf.divide(uf.subtract(n, alpha), alpha)
    return uf.divide(i0(uf.multiply(beta, uf.sqrt(uf.subtract(1, uf.multiply(r, r))))), i0(beta))


_ = zeros

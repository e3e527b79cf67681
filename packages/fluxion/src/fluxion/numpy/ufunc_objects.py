"""NumPy-style ``ufunc`` objects: ``jnp.add``, ``jnp.multiply``, ``jnp.maximum``, ... with
``reduce``, ``accumulate``, ``outer`` and ``at`` (the same set of ufuncs JAX exposes as
``jnp.ufunc`` instances), plus ``frompyfunc``.

Calling a ufunc object calls the plain function directly (one attribute lookup and a Python
call more than the function itself).

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.add.reduce(jnp.array([[1, 2], [3, 4]])).tolist()
    [4, 6]
    >>> jnp.multiply.outer(jnp.arange(1, 3), jnp.arange(1, 4)).tolist()
    [[1, 2, 3], [2, 4, 6]]
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.core.avals import ShapeDtypeStruct
from fluxion.numpy import cumulative
from fluxion.numpy import reductions as red
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._util import (
    canonical_axes,
    canonical_axis,
    check_arraylike,
    concrete_array,
    ensure_array,
    promote_args_inexact,
)
from fluxion.numpy.shape import broadcast_to, moveaxis, ravel, reshape, stack
from fluxion.numpy.vectorize import vectorize
from fluxion.transforms.staging import eval_shape

__all__ = ["ufunc", "frompyfunc", "add", "multiply", "subtract", "negative", "maximum",
           "minimum", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
           "bitwise_xor", "logaddexp", "logaddexp2"]


class ufunc:
    """A universal function: elementwise ``func`` with ``nin`` inputs and ``nout`` outputs, and
    the ``reduce``/``accumulate``/``outer``/``at`` methods for binary ones.

    Example:
        >>> import fluxion.numpy as jnp
        >>> f = jnp.ufunc(lambda a, b: a * b + 1, 2, 1)
        >>> f.outer(jnp.arange(2), jnp.arange(2)).tolist()
        [[1, 1], [1, 2]]
    """

    def __init__(self, func: Callable[..., Any], /, nin: int, nout: int, *,
                 name: str | None = None, nargs: int | None = None, identity: Any = None,
                 call: Callable[..., Any] | None = None, reduce: Callable[..., Any] | None = None,
                 accumulate: Callable[..., Any] | None = None,
                 at: Callable[..., Any] | None = None) -> None:
        self._func = func
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self.nin, self.nout = operator.index(nin), operator.index(nout)
        self.nargs = operator.index(nargs or nin)
        self.identity = identity
        self._call = call or self._call_vectorized
        self._reduce, self._accumulate, self._at = reduce, accumulate, at
        self.__doc__ = func.__doc__

    def __hash__(self) -> int:
        return hash((self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs))

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ufunc) and (
            (self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs)
            == (other._func, other.__name__, other.identity, other.nin, other.nout, other.nargs))

    def __repr__(self) -> str:
        return f"<jnp.ufunc '{self.__name__}'>"

    def __call__(self, *args: Any, out: None = None, where: None = None) -> Any:
        if out is not None:
            raise NotImplementedError(f"out argument of {self}")
        if where is not None:
            raise NotImplementedError(f"where argument of {self}")
        return self._call(*args)

    def _call_vectorized(self, *args: Any) -> Any:
        check_arraylike(self.__name__, *args)
        return vectorize(self._func)(*args)

    def _check_binary(self, what: str) -> None:
        if self.nin != 2:
            raise ValueError(f"{what} only supported for binary ufuncs")
        if self.nout != 1:
            raise ValueError(f"{what} only supported for functions returning a single value")

    def _result_dtype(self, *xs: Any) -> np.dtype:
        specs = [ShapeDtypeStruct((), ensure_array(x).dtype) for x in xs]
        return eval_shape(self._func, *specs).dtype

    def reduce(self, a: Any, axis: Any = 0, dtype: Any = None, out: None = None,
               keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
        """Reduce ``a`` along ``axis`` by repeatedly applying this binary ufunc.

        Example:
            >>> import fluxion.numpy as jnp
            >>> jnp.maximum.reduce(jnp.array([1, 5, 2])).tolist()
            5
        """
        check_arraylike(f"{self.__name__}.reduce", a)
        self._check_binary("reduce")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
        if initial is not None:
            check_arraylike(f"{self.__name__}.reduce", initial)
        if where is not None:
            check_arraylike(f"{self.__name__}.reduce", where)
            if self.identity is None and initial is None:
                raise ValueError(f"reduction operation {self.__name__!r} does not have an "
                                 "identity, so to use a where mask one has to specify 'initial'.")
            if ensure_array(where).dtype != np.bool_:
                raise ValueError(f"where argument must have dtype=bool; got "
                                 f"dtype={ensure_array(where).dtype}")
        fn = self._reduce or self._reduce_unrolled
        return fn(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)

    def _reduce_unrolled(self, a: Any, axis: Any = 0, dtype: Any = None, keepdims: bool = False,
                         initial: Any = None, where: Any = None) -> Any:
        arr = ensure_array(a)
        if initial is None:
            initial = self.identity
        dt = (dtypes.check_and_canonicalize_user_dtype(dtype, f"{self.__name__}.reduce")
              if dtype is not None else self._result_dtype(arr, arr))
        if isinstance(axis, tuple):
            raise NotImplementedError("tuple of axes")
        w = broadcast_to(ensure_array(where), arr.shape) if where is not None else None
        if axis is None:
            final = (1,) * arr.ndim if keepdims else ()
            arr = ravel(arr)
            w = ravel(w) if w is not None else None
            ax = 0
        else:
            ax = canonical_axis(axis, arr.ndim, f"{self.__name__}.reduce")
            final = tuple(1 if i == ax else d for i, d in enumerate(arr.shape)) if keepdims else (
                tuple(d for i, d in enumerate(arr.shape) if i != ax))
        arr = moveaxis(arr, ax, 0)
        if w is not None:
            w = moveaxis(w, ax, 0)
        if arr.shape[0] == 0:
            if initial is None:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} which "
                                 "has no identity")
            return lax.broadcast_in_dim(lax.convert_element_type(initial, dt), final, ())
        if initial is None:
            acc = lax.convert_element_type(arr[0], dt)
            start = 1
        else:
            acc = lax.broadcast_in_dim(lax.convert_element_type(initial, dt), arr.shape[1:], ())
            start = 0
        for i in range(start, arr.shape[0]):
            nxt = lax.convert_element_type(self._call(acc, arr[i]), dt)
            acc = nxt if w is None else lax.select(w[i], nxt, acc)
        return reshape(acc, final)

    def accumulate(self, a: Any, axis: int = 0, dtype: Any = None, out: None = None) -> Any:
        """Running results of applying this binary ufunc along ``axis``.

        Example:
            >>> import fluxion.numpy as jnp
            >>> jnp.add.accumulate(jnp.array([1, 2, 3])).tolist()
            [1, 3, 6]
        """
        self._check_binary("accumulate")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
        fn = self._accumulate or self._accumulate_unrolled
        return fn(a, axis=axis, dtype=dtype)

    def _accumulate_unrolled(self, a: Any, axis: int = 0, dtype: Any = None) -> Any:
        check_arraylike(f"{self.__name__}.accumulate", a)
        arr = ensure_array(a)
        dt = (dtypes.check_and_canonicalize_user_dtype(dtype, f"{self.__name__}.accumulate")
              if dtype is not None else self._result_dtype(arr, arr))
        ax = canonical_axis(axis, arr.ndim, f"{self.__name__}.accumulate")
        arr = moveaxis(arr, ax, 0)
        if arr.shape[0] == 0:
            return moveaxis(lax.convert_element_type(arr, dt), 0, ax)
        outs = [lax.convert_element_type(arr[0], dt)]
        for i in range(1, arr.shape[0]):
            outs.append(lax.convert_element_type(self._call(outs[-1], arr[i]), dt))
        return moveaxis(stack(outs), 0, ax)

    def at(self, a: Any, indices: Any, b: Any = None, /, *, inplace: bool = True) -> Any:
        """A copy of ``a`` with this ufunc applied at ``indices`` (with ``b`` for binary ones);
        pass ``inplace=False``.

        Example:
            >>> import fluxion.numpy as jnp
            >>> jnp.add.at(jnp.zeros(3, jnp.int32), jnp.array([0, 0]), 1, inplace=False).tolist()
            [2, 0, 0]
        """
        if inplace:
            raise NotImplementedError("fluxion.numpy.ufunc.at cannot modify arrays in place: "
                                      "arrays are immutable; pass inplace=False to get an "
                                      "updated copy.")
        fn = self._at or self._at_unrolled
        return fn(a, indices) if b is None else fn(a, indices, b)

    def _at_unrolled(self, a: Any, indices: Any, *args: Any) -> Any:
        check_arraylike(f"{self.__name__}.at", a, *args)
        arr = ensure_array(a)
        dt = self._result_dtype(arr, *args)
        arr = lax.convert_element_type(arr, dt)
        idx = indices if isinstance(indices, tuple) else (indices,)
        host = [np.asarray(concrete_array(i, f"{self.__name__}.at", "indices"))
                if not isinstance(i, slice) else i for i in idx]
        if any(isinstance(i, slice) for i in host):
            vals = arr[idx]
            res = self._call(vals, *args)
            return arr.at[idx].set(res)
        bshape = np.broadcast_shapes(*[np.shape(i) for i in host])
        flat = [np.broadcast_to(i, bshape).ravel() for i in host]
        bs = [broadcast_to(ensure_array(x), bshape + arr.shape[len(idx):]) for x in args]
        for k in range(len(flat[0]) if flat else 0):
            pos = tuple(int(f[k]) for f in flat)
            kidx = np.unravel_index(k, bshape) if bshape else ()
            operands = [x[tuple(int(j) for j in kidx)] for x in bs]
            arr = arr.at[pos].set(self._call(arr[pos], *operands))
        return arr

    def outer(self, A: Any, B: Any, /) -> Any:
        """This binary ufunc applied to every pair of elements of ``A`` and ``B`` (result shape
        ``A.shape + B.shape``).

        Example:
            >>> import fluxion.numpy as jnp
            >>> jnp.add.outer(jnp.ones((1, 2)), jnp.ones(3)).shape
            (1, 2, 3)
        """
        self._check_binary("outer")
        check_arraylike(f"{self.__name__}.outer", A, B)
        a, b = ensure_array(A), ensure_array(B)
        fa = lax.broadcast_in_dim(ravel(a), (a.size, b.size), (0,))
        fb = lax.broadcast_in_dim(ravel(b), (a.size, b.size), (1,))
        return reshape(self._call(fa, fb), a.shape + b.shape)


def frompyfunc(func: Callable[..., Any], /, nin: int, nout: int, *, identity: Any = None
               ) -> ufunc:
    """A :class:`ufunc` from a Python function on scalars (vectorized with ``vmap``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> f = jnp.frompyfunc(lambda a, b: a - b, 2, 1)
        >>> f.reduce(jnp.array([10, 1, 2])).tolist()
        7
    """
    return ufunc(func, nin, nout, identity=identity)


def _reduce_with(fn: Callable) -> Callable:
    def reduce(a: Any, axis: Any = 0, dtype: Any = None, keepdims: bool = False,
               initial: Any = None, where: Any = None) -> Any:
        return fn(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)
    return reduce


def _reduce_maxmin(fn: Callable) -> Callable:
    def reduce(a: Any, axis: Any = 0, dtype: Any = None, keepdims: bool = False,
               initial: Any = None, where: Any = None) -> Any:
        out = fn(a, axis=axis, keepdims=keepdims, initial=initial, where=where)
        if dtype is not None:
            out = lax.convert_element_type(out, dtypes.check_and_canonicalize_user_dtype(
                dtype, "reduce"))
        return out
    return reduce


def _reduce_bitwise(kind: str, to_bool: bool) -> Callable:
    def reduce(a: Any, axis: Any = 0, dtype: Any = None, keepdims: bool = False,
               initial: Any = None, where: Any = None) -> Any:
        arr = ensure_array(a)
        if to_bool and arr.dtype != np.bool_:
            arr = lax.ne(arr, lax.convert_element_type(0, arr.dtype))
        if not to_bool and not (arr.dtype == np.bool_ or dtypes.issubdtype(arr.dtype, np.integer)):
            raise TypeError(f"bitwise reduction requires integer or bool input, got {arr.dtype}")
        fn = {"and": lax.reduce_and, "or": lax.reduce_or, "xor": lax.reduce_xor}[kind]
        if kind == "xor":
            axes = canonical_axes(axis, arr.ndim, "reduce")
            out = fn(arr, axes)
            if initial is not None:
                out = lax.bitwise_xor(out, lax.convert_element_type(initial, out.dtype))
            if keepdims:
                out = lax.reshape(out, tuple(1 if i in axes else d for i, d in enumerate(arr.shape)))
        else:
            out = red._reduce(f"reduce_{kind}", arr, axis, None, keepdims, initial, where, fn, kind,
                          False)
        if dtype is not None:
            out = lax.convert_element_type(out, dtypes.check_and_canonicalize_user_dtype(
                dtype, "reduce"))
        return out
    return reduce


def _reduce_logsumexp(base2: bool) -> Callable:
    def reduce(a: Any, axis: Any = 0, dtype: Any = None, keepdims: bool = False,
               initial: Any = None, where: Any = None) -> Any:
        (arr,) = promote_args_inexact("logaddexp.reduce", a)
        if dtype is not None:
            arr = lax.convert_element_type(arr, dtypes.check_and_canonicalize_user_dtype(
                dtype, "reduce"))
        kw = {"axis": axis, "keepdims": True, "where": where}
        m = red.max(arr, initial=-np.inf, **kw)
        finite = uf.isfinite(m)
        m = lax.select(finite, m, lax.broadcast_in_dim(lax.convert_element_type(0, m.dtype,
                                                                                 weak_type=m.weak_type),
                                                       m.shape, ()))
        e = uf.exp2(uf.subtract(arr, m)) if base2 else uf.exp(uf.subtract(arr, m))
        s = red.sum(e, axis=axis, keepdims=True, where=where)
        out = uf.add(uf.log2(s) if base2 else uf.log(s), m)
        if initial is not None:
            out = (uf.logaddexp2 if base2 else uf.logaddexp)(out, initial)
        if not keepdims:
            axes = canonical_axes(axis, arr.ndim, "reduce")
            out = lax.reshape(out, tuple(d for i, d in enumerate(out.shape) if i not in axes))
        return out
    return reduce


# The accumulations name their lax function (``lax.cumsum`` ...), looked up at the call:
# ``lax.cumulative`` (and ``lax.windowed``, which it imports) then load on the first
# ``accumulate``, not with this module, which the first ``jnp.maximum``/``minimum`` imports
# (~0.5 ms of that first traced call, measured 2026-12-07).
def _accumulate_with(lax_name: str) -> Callable:
    def accumulate(a: Any, axis: int = 0, dtype: Any = None) -> Any:
        return cumulative._cumulative("accumulate", getattr(lax, lax_name), a, axis, dtype)
    return accumulate


def _cummaxmin(lax_name: str) -> Callable:
    def accumulate(a: Any, axis: int = 0, dtype: Any = None) -> Any:
        lax_fn = getattr(lax, lax_name)
        arr = ensure_array(a)
        ax = canonical_axis(axis, arr.ndim, "accumulate")
        if arr.dtype == np.bool_:
            out = lax.ne(lax_fn(lax.convert_element_type(arr, np.int32), ax),
                         lax.convert_element_type(0, np.int32))
        else:
            out = lax_fn(arr, ax)
        if dtype is not None:
            out = lax.convert_element_type(out, dtypes.check_and_canonicalize_user_dtype(
                dtype, "accumulate"))
        return out
    return accumulate


def _at_method(kind: str) -> Callable:
    def at(a: Any, indices: Any, b: Any) -> Any:
        arr = ensure_array(a)
        return getattr(arr.at[indices], kind)(b)
    return at


def _make_all() -> dict[str, ufunc]:
    table = {
        "add": (uf.add, 2, 0, _reduce_with(red.sum), _accumulate_with("cumsum"),
                _at_method("add")),
        "multiply": (uf.multiply, 2, 1, _reduce_with(red.prod), _accumulate_with("cumprod"),
                     _at_method("multiply")),
        "subtract": (uf.subtract, 2, None, None, None, _at_method("subtract")),
        "negative": (uf.negative, 1, None, None, None, None),
        "maximum": (uf.maximum, 2, None, _reduce_maxmin(red.max), _cummaxmin("cummax"),
                    _at_method("max")),
        "minimum": (uf.minimum, 2, None, _reduce_maxmin(red.min), _cummaxmin("cummin"),
                    _at_method("min")),
        "logical_and": (uf.logical_and, 2, True, _reduce_bitwise("and", True), None, None),
        "logical_or": (uf.logical_or, 2, False, _reduce_bitwise("or", True), None, None),
        "logical_xor": (uf.logical_xor, 2, False, _reduce_bitwise("xor", True), None, None),
        "bitwise_and": (uf.bitwise_and, 2, -1, _reduce_bitwise("and", False), None, None),
        "bitwise_or": (uf.bitwise_or, 2, 0, _reduce_bitwise("or", False), None, None),
        "bitwise_xor": (uf.bitwise_xor, 2, 0, _reduce_bitwise("xor", False), None, None),
        "logaddexp": (uf.logaddexp, 2, -np.inf, _reduce_logsumexp(False), None, None),
        "logaddexp2": (uf.logaddexp2, 2, -np.inf, _reduce_logsumexp(True), None, None),
    }
    out = {}
    for name, (fn, nin, ident, rd, acc, at) in table.items():
        out[name] = ufunc(fn, nin, 1, name=name, identity=ident, call=fn, reduce=rd,
                          accumulate=acc, at=at)
    return out


_ALL = _make_all()
add = _ALL["add"]
multiply = _ALL["multiply"]
subtract = _ALL["subtract"]
negative = _ALL["negative"]
maximum = _ALL["maximum"]
minimum = _ALL["minimum"]
logical_and = _ALL["logical_and"]
logical_or = _ALL["logical_or"]
logical_xor = _ALL["logical_xor"]
bitwise_and = _ALL["bitwise_and"]
bitwise_or = _ALL["bitwise_or"]
bitwise_xor = _ALL["bitwise_xor"]
logaddexp = _ALL["logaddexp"]
logaddexp2 = _ALL["logaddexp2"]

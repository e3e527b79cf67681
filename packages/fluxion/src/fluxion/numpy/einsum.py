"""``einsum`` and ``einsum_path``, plus the products built on contractions: kron, trace, cross.

The contraction order comes from opt_einsum's ``contract_path`` (``optimize=`` 'auto',
'greedy', 'optimal', True, False or an explicit path); each step is lowered to one
``lax.dot_general`` (after summing indices that appear in a single operand and taking
diagonals of repeated indices).

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.einsum("ij,jk->ik", jnp.ones((2, 3)), jnp.ones((3, 4))).shape
    (2, 4)
"""

from __future__ import annotations

import importlib
from typing import Any, Sequence

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.lax.sharding_constraint import with_out_sharding
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._eager import one_program_static
from fluxion.numpy._util import canonical_axis, check_arraylike, ensure_array, promote_dtypes
from fluxion.numpy.matrices import diagonal
from fluxion.numpy.reductions import sum as _sum
from fluxion.numpy.shape import broadcast_arrays, moveaxis, stack

__all__ = ["einsum", "einsum_path", "kron", "trace", "cross"]


def _opt_einsum() -> Any:
    # Imported on first use: it costs ~15 ms that `import fluxion` should not pay.
    return importlib.import_module("opt_einsum")


def _path_arg(optimize: Any, n: int) -> Any:
    if optimize is True:
        return "optimal"
    if optimize is False:
        return [(0, 1)] * (n - 1) if n > 1 else [(0,)]
    return optimize


def _prepare(subscripts: Any, operands: Sequence[Any]) -> tuple[list, list]:
    args = (subscripts, *operands)
    conv = []
    for a in args:
        m = getattr(a, "__jax_array__", None)
        conv.append(m() if m is not None else a)
    if isinstance(conv[0], str):
        return conv, conv[1:]
    # interleaved form: operand, sublist, operand, sublist, ..., [output sublist]
    return conv, [a for k, a in enumerate(conv) if k % 2 == 0 and not isinstance(a, (list, tuple))]


def einsum_path(subscripts: Any, *operands: Any, optimize: Any = "auto") -> tuple[list, Any]:
    """The contraction path opt_einsum chooses, and its printable report.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.einsum_path("ij,jk->ik", jnp.ones((2, 3)), jnp.ones((3, 4)))[0]
        [(0, 1)]
    """
    conv, arrays = _prepare(subscripts, operands)
    dummies = [c if isinstance(c, (str, list, tuple)) else
               np.broadcast_to(np.zeros((), np.float32), np.shape(c)) for c in conv]
    return _opt_einsum().contract_path(*dummies, optimize=_path_arg(optimize, len(arrays)))


def _diag_repeated(x: Any, names: str) -> tuple[Any, str]:
    while True:
        seen: dict[str, int] = {}
        dup = None
        for i, c in enumerate(names):
            if c in seen:
                dup = (seen[c], i)
                break
            seen[c] = i
        if dup is None:
            return x, names
        i, j = dup
        x = diagonal(x, 0, i, j)  # moves the diagonal to the end
        names = "".join(c for k, c in enumerate(names) if k not in (i, j)) + names[i]


def _sum_out(x: Any, names: str, keep: set) -> tuple[Any, str]:
    axes = tuple(i for i, c in enumerate(names) if c not in keep)
    if not axes:
        return x, names
    if x.dtype == np.bool_:
        x = lax.reduce_or(x, axes)
    else:
        x = lax.reduce_sum(x, axes)
    return x, "".join(c for i, c in enumerate(names) if i not in axes)


def _transpose_to(x: Any, names: str, out: str) -> Any:
    if names == out:
        return x
    return lax.transpose(x, tuple(names.index(c) for c in out))


def _contract_pair(lhs: Any, ln: str, rhs: Any, rn: str, out: str, precision: Any,
                   pet: Any) -> Any:
    batch = [c for c in ln if c in rn and c in out]
    contract = [c for c in ln if c in rn and c not in out]
    # size-1 broadcasting of shared dimensions
    for c in batch + contract:
        i, j = ln.index(c), rn.index(c)
        if lhs.shape[i] != rhs.shape[j]:
            if lhs.shape[i] == 1:
                shp = list(lhs.shape)
                shp[i] = rhs.shape[j]
                lhs = lax.broadcast_in_dim(lhs, tuple(shp), tuple(range(lhs.ndim)))
            else:
                shp = list(rhs.shape)
                shp[j] = lhs.shape[i]
                rhs = lax.broadcast_in_dim(rhs, tuple(shp), tuple(range(rhs.ndim)))
    l_cont, r_cont = tuple(ln.index(c) for c in contract), tuple(rn.index(c) for c in contract)
    l_batch, r_batch = tuple(ln.index(c) for c in batch), tuple(rn.index(c) for c in batch)
    l_free = "".join(c for c in ln if c not in batch and c not in contract)
    r_free = "".join(c for c in rn if c not in batch and c not in contract)
    # As JAX's einsum: (rhs, lhs) first when that order needs no transpose (opt_einsum contracts
    # right to left), else (lhs, rhs). The operand order decides the dot's layout, so under
    # vmap the results' layouts, and XLA's summation order after them, are JAX's.
    if "".join(batch) + r_free + l_free == out:
        return lax.dot_general(rhs, lhs, ((r_cont, l_cont), (r_batch, l_batch)), precision, pet)
    res = lax.dot_general(lhs, rhs, ((l_cont, r_cont), (l_batch, r_batch)), precision, pet)
    return _transpose_to(res, "".join(batch) + l_free + r_free, out)


def einsum(subscripts: Any, /, *operands: Any, out: None = None, optimize: Any = "auto",
           precision: Any = None, preferred_element_type: Any = None,
           _dot_general: Any = None, out_sharding: Any = None) -> Any:
    """Einstein summation: ``einsum("ij,jk->ik", a, b)`` (or the interleaved operand form).

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.einsum("i,i->", jnp.arange(3.0), jnp.arange(3.0)))
        5.0
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to fluxion.numpy.einsum is not supported.")
    if out_sharding is not None:  # the result's sharding, given (explicit mesh axes)
        return with_out_sharding("einsum", out_sharding, einsum, subscripts, *operands,
                                 optimize=optimize, precision=precision,
                                 preferred_element_type=preferred_element_type,
                                 _dot_general=_dot_general)
    conv, arrays = _prepare(subscripts, operands)
    check_arraylike("einsum", *arrays)
    arrs = [ensure_array(a) for a in arrays]
    n = len(arrs)
    shaped = [c if isinstance(c, (str, list, tuple)) else
              np.broadcast_to(np.zeros((), np.float32), np.shape(c)) for c in conv]
    _, contractions = _opt_einsum().contract_path(*shaped, einsum_call=True, use_blas=True,
                                               optimize=_path_arg(optimize, n))
    arrs = list(promote_dtypes(*arrs))
    # as JAX's: the contractions prefer the result dtype, and weak operands give a weak result
    weak = preferred_element_type is None and bool(arrs) and all(a.weak_type for a in arrs)
    pet = None
    if preferred_element_type is not None:
        pet = dtypes.check_and_canonicalize_user_dtype(preferred_element_type, "einsum")
    result_dtype = pet if pet is not None else (arrs[0].dtype if arrs else None)
    pet = result_dtype if isinstance(result_dtype, np.dtype) else None  # extended: refused later
    for inds, _idx_rm, einsum_str, *_ in contractions:
        ins, out_names = einsum_str.split("->")
        in_names = ins.split(",")
        ops = [arrs.pop(i) for i in inds]
        ops_names = in_names
        if len(ops) == 1:
            x, nm = _diag_repeated(ops[0], ops_names[0])
            x, nm = _sum_out(x, nm, set(out_names))
            res = _transpose_to(x, nm, out_names)
        else:
            (a, an), (b, bn) = [_diag_repeated(o, nm) for o, nm in zip(ops, ops_names)]
            keep_a = set(bn) | set(out_names)
            keep_b = set(an) | set(out_names)
            a, an = _sum_out(a, an, keep_a)
            b, bn = _sum_out(b, bn, keep_b)
            res = _contract_pair(a, an, b, bn, out_names, precision, pet)  # bool too, as JAX
        arrs.append(res)
    res = arrs[0]
    if result_dtype is not None and (res.dtype != result_dtype or res.weak_type != weak):
        res = lax.convert_element_type(res, result_dtype, weak_type=weak)
    return res


@one_program_static(static_argnames=())
def kron(a: Any, b: Any) -> Any:
    """Kronecker product of two arrays.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.kron(jnp.array([1, 2]), jnp.array([1, 10])).tolist()
        [1, 10, 2, 20]
    """
    check_arraylike("kron", a, b)
    a, b = promote_dtypes(ensure_array(a), ensure_array(b))
    if a.ndim < b.ndim:
        a = lax.expand_dims(a, tuple(range(b.ndim - a.ndim)))
    elif b.ndim < a.ndim:
        b = lax.expand_dims(b, tuple(range(a.ndim - b.ndim)))
    nd = a.ndim
    shp = []
    for da, db in zip(a.shape, b.shape):
        shp += [da, db]
    ab = lax.broadcast_in_dim(a, tuple(shp), tuple(range(0, 2 * nd, 2)))
    bb = lax.broadcast_in_dim(b, tuple(shp), tuple(range(1, 2 * nd, 2)))
    return lax.reshape(uf.multiply(ab, bb), tuple(da * db for da, db in zip(a.shape, b.shape)))


@one_program_static(static_argnames=("offset", "axis1", "axis2", "dtype", "out"))
def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
          out: None = None) -> Any:
    """Sum along the ``offset`` diagonal over ``axis1``/``axis2``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> int(jnp.trace(jnp.arange(9).reshape(3, 3)))
        12
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to fluxion.numpy.trace is not supported.")
    check_arraylike("trace", a, extended=True)  # key arrays: the sum refuses them
    arr = ensure_array(a)
    if arr.ndim < 2:
        raise ValueError("trace requires an array of at least two dimensions")
    d = diagonal(arr, offset, axis1, axis2)
    return _sum(d, axis=-1, dtype=dtype)


@one_program_static(static_argnames=("axisa", "axisb", "axisc", "axis"))
def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Any:
    """Cross product of 2- or 3-vectors along the given axes.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.cross(jnp.array([1, 0, 0]), jnp.array([0, 1, 0])).tolist()
        [0, 0, 1]
    """
    check_arraylike("cross", a, b)
    a, b = ensure_array(a), ensure_array(b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a = moveaxis(a, canonical_axis(axisa, a.ndim, "cross"), -1)
    b = moveaxis(b, canonical_axis(axisb, b.ndim, "cross"), -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("Dimension must be either 2 or 3 for cross product")
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        a0, a1 = a[..., 0], a[..., 1]
        b0, b1 = b[..., 0], b[..., 1]
        return uf.subtract(uf.multiply(a0, b1), uf.multiply(a1, b0))
    a0, a1 = a[..., 0], a[..., 1]
    a2 = a[..., 2] if a.shape[-1] == 3 else uf.multiply(a0, 0)
    b0, b1 = b[..., 0], b[..., 1]
    b2 = b[..., 2] if b.shape[-1] == 3 else uf.multiply(b0, 0)
    c = stack(broadcast_arrays(uf.subtract(uf.multiply(a1, b2), uf.multiply(a2, b1)),
                               uf.subtract(uf.multiply(a2, b0), uf.multiply(a0, b2)),
                               uf.subtract(uf.multiply(a0, b1), uf.multiply(a1, b0))))
    return moveaxis(c, 0, canonical_axis(axisc, c.ndim, "cross"))

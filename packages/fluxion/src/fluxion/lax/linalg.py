"""``fluxion.lax.linalg``: linear-algebra primitives (JAX's ``jax.lax.linalg``), lowered on CPU to
jaxlib's LAPACK custom calls, with JVP, transpose and batching rules.

Done: cholesky, triangular_solve, lu, lu_pivots_to_permutation, qr (also pivoting), geqrf,
householder_product, eigh, svd, eig, tridiagonal_solve, schur, hessenberg, tridiagonal,
symmetric_product. Every function batches over leading dimensions and takes float32, float64
(with x64 on), complex64 and complex128 matrices. On failure (not positive definite, no
convergence) results are NaN, as in JAX.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.lax import linalg
    >>> linalg.cholesky(jnp.array([[4.0, 2.0], [2.0, 5.0]])).tolist()
    [[2.0, 0.0], [1.0, 2.0]]
"""

from __future__ import annotations

import enum
import operator
from typing import Any, Callable, Sequence

import numpy as np

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax import convenience as _cv
from fluxion.lax import elementwise as _el
from fluxion.lax import padding as _pd
from fluxion.lax import reductions as _rd
from fluxion.lax import shape_ops as _so
from fluxion.lax._base import type_error, value_error
from fluxion.lax.dot import Precision as _Precision
from fluxion.lax.dot import batch_matmul as _batch_matmul

__all__ = [
    "cholesky", "triangular_solve", "lu", "lu_pivots_to_permutation", "qr", "geqrf",
    "householder_product", "eigh", "svd", "eig", "tridiagonal_solve", "schur", "hessenberg",
    "tridiagonal", "symmetric_product", "SvdAlgorithm", "EighImplementation",
    "EigImplementation",
    "cholesky_p", "triangular_solve_p", "lu_p", "lu_pivots_to_permutation_p", "qr_p", "geqrf_p",
    "householder_product_p", "eigh_p", "svd_p", "eig_p", "tridiagonal_solve_p", "schur_p",
    "hessenberg_p", "tridiagonal_p",
]


class SvdAlgorithm(enum.Enum):
    """Which LAPACK driver :func:`svd` uses: ``DEFAULT`` / ``DIVIDE_AND_CONQUER`` (gesdd) or
    ``QR`` (gesvd). ``JACOBI`` and ``POLAR`` are not available on CPU."""
    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


class EighImplementation(enum.Enum):
    """Algorithm choice of :func:`eigh`; CPU supports ``QR`` (LAPACK syevd/heevd) only."""
    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


class EigImplementation(enum.Enum):
    """Algorithm choice of :func:`eig`; CPU supports ``LAPACK`` only."""
    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


# ================================================================== errors and input checks

class LinalgShapeError(TypeError, ValueError):
    """A bad operand shape for a linalg function (both a TypeError and a ValueError: JAX raises
    ValueError for shapes, and Fluxion's convention is TypeError)."""


def _shape_error(fun: str, msg: str) -> LinalgShapeError:
    return LinalgShapeError(str(value_error(fun, msg)))


_LAPACK_DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64),
                  np.dtype(np.complex128))
_INT32 = np.dtype(np.int32)


def _aval(x: Any) -> ShapedArray:
    a = getattr(x, "aval", None)
    if isinstance(a, ShapedArray):
        return a
    from fluxion.transforms.staging import abstractify  # noqa: PLC0415
    return abstractify(x)


def _asarray(x: Any) -> Any:
    if isinstance(x, (list, tuple)):
        return np.asarray(x)
    return x


def _check_dtype(fun: str, a: ShapedArray, what: str = "operand",
                 accepted: Sequence[np.dtype] = _LAPACK_DTYPES) -> None:
    if a.dtype not in accepted:
        names = ", ".join(d.name for d in accepted)
        raise type_error(fun, f"{what} must have a floating or complex dtype ({names}), got "
                         f"{a.dtype.name}{list(a.shape)}")


def _check_matrix(fun: str, a: ShapedArray, *, square: bool = False, what: str = "operand",
                  accepted: Sequence[np.dtype] = _LAPACK_DTYPES) -> None:
    if a.ndim < 2:
        raise _shape_error(fun, f"{what} must have rank at least 2 (a batch of matrices "
                           f"[..., m, n]), got shape {a.shape}")
    if square and a.shape[-1] != a.shape[-2]:
        raise _shape_error(fun, f"{what} must be a (batch of) square matrix [..., n, n], got "
                           f"shape {a.shape}")
    _check_dtype(fun, a, what, accepted)


def _real_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dt == np.complex64 else (
        np.dtype(np.float64) if dt == np.complex128 else dt)


def _complex_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.complex64) if dt in (np.float32, np.complex64) else np.dtype(np.complex128)


def _is_complex(x: Any) -> bool:
    return _aval(x).dtype.kind == "c"


# ================================================================== lax-level helpers

def _nd(x: Any) -> int:
    return _aval(x).ndim


def _shape(x: Any) -> tuple[int, ...]:
    return _aval(x).shape


def _T(x: Any) -> Any:
    nd = _nd(x)
    return _so.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _conj(x: Any) -> Any:
    return _el.conj(x) if _is_complex(x) else x


def _H(x: Any) -> Any:
    return _conj(_T(x))


def _mm(a: Any, b: Any) -> Any:
    return _batch_matmul(a, b, precision=_Precision.HIGHEST)


def _c(x: Any, v: Any) -> np.ndarray:
    """A rank-0 constant ``v`` of ``x``'s dtype."""
    return np.asarray(v, dtype=_aval(x).dtype)


def _bcast_mat(m: np.ndarray, like: Any) -> Any:
    """A constant [m, n] matrix broadcast over the batch dimensions of ``like``."""
    shape = _shape(like)
    nd = len(shape)
    return _so.broadcast_in_dim(m, shape[:-2] + m.shape, (nd - 2, nd - 1))


def _tri(x: Any, k: int = 0, lower: bool = True) -> Any:
    """``tril(x, k)`` (``lower``) or ``triu(x, k)`` over the last two dimensions."""
    m, n = _shape(x)[-2:]
    mask = np.tri(m, n, k, dtype=bool) if lower else ~np.tri(m, n, k - 1, dtype=bool)
    return _el.select(_bcast_mat(mask, x), x, _cv.full_like(x, 0))


def _tril(x: Any, k: int = 0) -> Any:
    return _tri(x, k, True)


def _triu(x: Any, k: int = 0) -> Any:
    return _tri(x, k, False)


def _eye_like(x: Any, n: int | None = None, m: int | None = None, dtype: Any = None) -> Any:
    """Identity matrices [..., n, m] with the batch shape of ``x``."""
    shape = _shape(x)
    n = shape[-1] if n is None else n
    m = n if m is None else m
    dt = _aval(x).dtype if dtype is None else np.dtype(dtype)
    e = np.eye(n, m, dtype=dt)
    nd = len(shape)
    return _so.broadcast_in_dim(e, shape[:-2] + (n, m), (nd - 2, nd - 1))


def _diag(x: Any) -> Any:
    """The diagonal [..., n] of square matrices [..., n, n]."""
    n = _shape(x)[-1]
    masked = _el.select(_bcast_mat(np.eye(n, dtype=bool), x), x, _cv.full_like(x, 0))
    return _rd.reduce_sum(masked, (_nd(x) - 1,))


def _from_diag(d: Any) -> Any:
    """Diagonal matrices [..., n, n] from vectors [..., n]."""
    shape = _shape(d)
    n = shape[-1]
    nd = len(shape)
    full = _so.broadcast_in_dim(d, shape + (n,), tuple(range(nd - 1)) + (nd,))
    mask = _so.broadcast_in_dim(np.eye(n, dtype=bool), shape + (n,), (nd - 1, nd))
    return _el.select(mask, full, _cv.full_like(full, 0))


def _sl(x: Any, axis: int, start: int, stop: int) -> Any:
    """``x`` sliced ``start:stop`` along ``axis`` (negative axes count from the end)."""
    shape = _shape(x)
    axis = axis % len(shape)
    if start == 0 and stop == shape[axis]:
        return x
    starts = [0] * len(shape)
    limits = list(shape)
    starts[axis], limits[axis] = start, stop
    return _so.slice(x, starts, limits)


def _pad_axis(x: Any, axis: int, lo: int, hi: int) -> Any:
    shape = _shape(x)
    axis = axis % len(shape)
    if lo == 0 and hi == 0:
        return x
    cfg = [(0, 0, 0)] * len(shape)
    cfg[axis] = (lo, hi, 0)
    return _pd.pad(x, _c(x, 0), cfg)


def _to(x: Any, dtype: np.dtype) -> Any:
    return x if _aval(x).dtype == dtype else _el.convert_element_type(x, dtype)


def _expand(x: Any, axis: int) -> Any:
    """``x`` with a size-1 dimension inserted at ``axis`` (negative: counted in the result)."""
    nd = _nd(x) + 1
    return _so.expand_dims(x, (axis % nd,))


def _take_along(x: Any, idx: Any, axis: int) -> Any:
    from fluxion.lax.sorting import _take_along as take  # noqa: PLC0415
    return take(x, idx, axis % _nd(x))


def _permute_rows(x: Any, perm: Any) -> Any:
    """``x[..., perm, :]`` for [..., m, n] ``x`` and [..., m] ``perm`` (a linear gather)."""
    shape = _shape(x)
    nd = len(shape)
    idx = _so.broadcast_in_dim(perm, shape, tuple(range(nd - 1)))
    return _take_along(x, idx, nd - 2)


def _permute_cols(x: Any, perm: Any) -> Any:
    """``x[..., :, perm]`` for [..., m, n] ``x`` and [..., n] ``perm``."""
    shape = _shape(x)
    nd = len(shape)
    idx = _so.broadcast_in_dim(perm, shape, tuple(range(nd - 2)) + (nd - 1,))
    return _take_along(x, idx, nd - 1)


def _nan_where_not(ok: Any, x: Any) -> Any:
    """``x`` where ``ok`` (a [batch] bool) holds, else NaN, broadcast over the trailing dims."""
    shape = _shape(x)
    nb = _nd(ok)
    okb = _so.broadcast_in_dim(ok, shape, tuple(range(nb)))
    nan = np.array(np.nan + 1j * np.nan if _is_complex(x) else np.nan).astype(_aval(x).dtype)
    return _el.select(okb, x, _cv.full_like(x, nan))


def _info_ok(info: Any, ge: bool = False) -> Any:
    zero = _cv.full_like(info, 0)
    return _el.ge(info, zero) if ge else _el.eq(info, zero)


def _solve(a: Any, b: Any) -> Any:
    """``a^{-1} b`` for square [..., n, n] ``a`` and [..., n, k] ``b`` (via LU)."""
    lu_, _, perm = lu_p.bind(a)
    y = triangular_solve(lu_, _permute_rows(b, perm), left_side=True, lower=True,
                         unit_diagonal=True)
    return triangular_solve(lu_, y, left_side=True, lower=False)


# ================================================================== lowering helpers

def _layout(rank: int, col_major: bool) -> str:
    if col_major and rank >= 2:
        dims = (rank - 2, rank - 1) + tuple(range(rank - 3, -1, -1))
    else:
        dims = tuple(range(rank - 1, -1, -1))
    if not dims:
        return "dense<> : tensor<0xindex>"
    return f"dense<[{', '.join(map(str, dims))}]> : tensor<{rank}xindex>"


def _char(c: str) -> str:
    return f"{ord(c)} : ui8"


def _ffi_call(ctx: Any, op: str, target: str, operands: Sequence[str],
              in_avals: Sequence[ShapedArray], out_avals: Sequence[ShapedArray],
              config: dict[str, str] | None = None, aliases: dict[int, int] | None = None,
              ) -> list[str]:
    """Emit a ``stablehlo.custom_call`` of a jaxlib LAPACK FFI target: matrices (the operands and
    results of the largest rank) in column-major layout, the rest row-major."""
    from fluxion.backend import lapack  # noqa: PLC0415
    lapack.check_platform(ctx.module.platform, op)
    lapack.ensure_lapack()
    in_avals = [a.update(weak_type=False) for a in in_avals]
    out_avals = [a.update(weak_type=False) for a in out_avals]
    maxr = max(a.ndim for a in in_avals)
    op_l = ", ".join(_layout(a.ndim, a.ndim == maxr) for a in in_avals)
    res_l = ", ".join(_layout(a.ndim, a.ndim == maxr) for a in out_avals)
    cfg = ", ".join(f"{k} = {v}" for k, v in (config or {}).items())
    attrs = [
        "api_version = 1 : i32", 'backend_config = ""', f'call_target_name = "{target}"',
        "has_side_effect = false", f"operand_layouts = [{op_l}]", f"result_layouts = [{res_l}]",
        f"mhlo.backend_config = {{{cfg}}}",
        f'mhlo.frontend_attributes = {{num_batch_dims = "{maxr - 2}"}}',
    ]
    if aliases:
        single = len(out_avals) == 1
        items = []
        for out_i, in_i in aliases.items():
            oti = "[]" if single else f"[{out_i}]"
            items.append(f"#stablehlo.output_operand_alias<output_tuple_indices = {oti}, "
                         f"operand_index = {in_i}, operand_tuple_indices = []>")
        attrs.append(f"output_operand_aliases = [{', '.join(items)}]")
    outs = ctx.op("stablehlo.custom_call", list(operands), result_avals=out_avals,
                  operand_avals=in_avals, attrs=", ".join(attrs))
    return [outs] if isinstance(outs, str) else list(outs)


_STAGED: dict[Any, Any] = {}


def _inline(ctx: Any, key: Any, fn: Callable[..., Any], args: Sequence[str],
            avals: Sequence[ShapedArray]) -> list[str]:
    """Emit ``fn`` (written with lax functions, staged once per ``key``) on SSA values ``args``."""
    avals = [a.update(weak_type=False) for a in avals]
    full_key = (key, tuple(avals))
    hit = _STAGED.get(full_key)
    if hit is None:
        from fluxion.transforms.staging import trace_to_program  # noqa: PLC0415

        def flat(*xs: Any) -> list:
            out = fn(*xs)
            return list(out) if isinstance(out, (list, tuple)) else [out]

        program, consts, _ = trace_to_program(flat, tuple(avals), {}, in_avals=list(avals))
        consts = [np.asarray(c) for c in consts]
        hit = _STAGED[full_key] = (program, consts)
    program, consts = hit
    cargs = [ctx.constant(c, ShapedArray(c.shape, c.dtype)) for c in consts]
    return ctx.lower_program_inline(program, cargs + list(args))


def _batch_info(aval: ShapedArray, nmat: int = 2) -> ShapedArray:
    return ShapedArray(aval.shape[:-nmat] if nmat else aval.shape, np.int32)


# ================================================================== cholesky

cholesky_p = Primitive("cholesky")


def _cholesky_abstract_eval(x: ShapedArray) -> ShapedArray:
    _check_matrix("lax.linalg.cholesky", x, square=True)
    return x.update(weak_type=False)


def _cholesky_lowering(ctx: Any, x: str) -> str:
    (a,) = ctx.avals_in
    from fluxion.backend.lapack import target_name  # noqa: PLC0415
    info = _batch_info(a)
    f, inf = _ffi_call(ctx, "lax.linalg.cholesky", target_name("potrf", a.dtype), [x], [a],
                       [a, info], {"uplo": _char("L")}, {0: 0})
    return _inline(ctx, "cholesky_post", lambda f, i: _tril(_nan_where_not(_info_ok(i), f)),
                   [f, inf], [a, info])[0]


cholesky_p.abstract_eval = _cholesky_abstract_eval
cholesky_p.lowering = _cholesky_lowering


def _symmetrize(x: Any) -> Any:
    return _el.div(_el.add(x, _H(x)), _c(x, 2))


def cholesky(x: Any, *, symmetrize_input: bool = True) -> Any:
    """Cholesky factor ``L`` (lower triangular, ``A = L @ L^H``) of Hermitian positive-definite
    matrices ``x`` [..., n, n]. Matrices that are not positive definite give NaNs.

    With ``symmetrize_input`` the input is first replaced by ``(x + x^H) / 2``; otherwise only
    its lower triangle is read.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> linalg.cholesky(jnp.array([[4.0, 2.0], [2.0, 5.0]])).tolist()
        [[2.0, 0.0], [1.0, 2.0]]
    """
    x = _asarray(x)
    _check_matrix("lax.linalg.cholesky", _aval(x), square=True)
    if symmetrize_input:
        x = _symmetrize(x)
    return cholesky_p.bind(x)


# ================================================================== triangular_solve

triangular_solve_p = Primitive("triangular_solve")
_TRSM_DTYPES = _LAPACK_DTYPES + (np.dtype(np.float16),)


def _triangular_solve_abstract_eval(a: ShapedArray, b: ShapedArray, *, left_side: bool,
                                    lower: bool, transpose_a: bool, conjugate_a: bool,
                                    unit_diagonal: bool) -> ShapedArray:
    fun = "lax.linalg.triangular_solve"
    _check_matrix(fun, a, square=True, what="a", accepted=_TRSM_DTYPES)
    _check_matrix(fun, b, what="b", accepted=_TRSM_DTYPES)
    if a.dtype != b.dtype:
        raise type_error(fun, f"a and b must have the same dtype, got {a.dtype.name}{list(a.shape)}"
                         f" and {b.dtype.name}{list(b.shape)}")
    if a.shape[:-2] != b.shape[:-2]:
        raise _shape_error(fun, f"a and b must have equal batch dimensions, got shapes {a.shape} "
                           f"and {b.shape}")
    common = b.shape[-2] if left_side else b.shape[-1]
    if a.shape[-1] != common:
        raise _shape_error(fun, f"incompatible shapes {a.shape} and {b.shape} (left_side="
                           f"{left_side})")
    return b.update(weak_type=False)


def _triangular_solve_lowering(ctx: Any, a: str, b: str, *, left_side: bool, lower: bool,
                               transpose_a: bool, conjugate_a: bool, unit_diagonal: bool) -> str:
    aa, ba = ctx.avals_in
    if conjugate_a and not transpose_a:
        a = _inline(ctx, "conj", _el.conj, [a], [aa])[0]
        conjugate_a = False
    if aa.dtype not in _LAPACK_DTYPES:
        tr = ("ADJOINT" if conjugate_a else "TRANSPOSE") if transpose_a else "NO_TRANSPOSE"
        return ctx.op("stablehlo.triangular_solve", [a, b],
                      attrs=f"left_side = {str(left_side).lower()}, lower = {str(lower).lower()}, "
                            f"unit_diagonal = {str(unit_diagonal).lower()}, "
                            f"transpose_a = #stablehlo<transpose {tr}>")
    from fluxion.backend.lapack import target_name  # noqa: PLC0415
    trans = ("C" if conjugate_a else "T") if transpose_a else "N"
    cfg = {"diag": _char("U" if unit_diagonal else "N"), "side": _char("L" if left_side else "R"),
           "trans_x": _char(trans), "uplo": _char("L" if lower else "U")}
    return _ffi_call(ctx, "lax.linalg.triangular_solve", target_name("trsm", aa.dtype), [a, b],
                     [aa, ba], [ba], cfg, {0: 1})[0]


triangular_solve_p.abstract_eval = _triangular_solve_abstract_eval
triangular_solve_p.lowering = _triangular_solve_lowering


def triangular_solve(a: Any, b: Any, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False) -> Any:
    """Solve ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b`` for ``x``, with ``a``
    [..., m, m] triangular (``lower`` says which triangle is read) and ``op`` transposing and/or
    conjugating ``a``. ``b`` is [..., m, n] (left) or [..., n, m]; a ``b`` of one rank less than
    ``a`` is treated as a single vector.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> a = jnp.array([[2.0, 0.0], [1.0, 1.0]])
        >>> linalg.triangular_solve(a, jnp.array([[2.0], [3.0]]), left_side=True,
        ...                         lower=True).tolist()
        [[1.0], [2.0]]
    """
    a, b = _asarray(a), _asarray(b)
    aa, ba = _aval(a), _aval(b)
    conjugate_a = bool(conjugate_a) and aa.dtype.kind == "c"
    singleton = ba.ndim == aa.ndim - 1 and aa.ndim >= 2
    if singleton:
        b = _so.expand_dims(b, (ba.ndim if left_side else ba.ndim - 1,))
    out = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                  transpose_a=bool(transpose_a), conjugate_a=conjugate_a,
                                  unit_diagonal=bool(unit_diagonal))
    if singleton:
        out = _so.squeeze(out, (ba.ndim if left_side else ba.ndim - 1,))
    return out


# ================================================================== lu

lu_p = Primitive("lu", multiple_results=True)
lu_pivots_to_permutation_p = Primitive("lu_pivots_to_permutation")


def _lu_abstract_eval(x: ShapedArray) -> list[ShapedArray]:
    _check_matrix("lax.linalg.lu", x)
    m, n = x.shape[-2:]
    batch = x.shape[:-2]
    return [x.update(weak_type=False), ShapedArray(batch + (min(m, n),), _INT32),
            ShapedArray(batch + (m,), _INT32)]


def _pivots_to_perm_impl(piv: Any, m: int) -> Any:
    from fluxion.lax import loops as _lp  # noqa: PLC0415
    from fluxion.lax import slicing as _sc  # noqa: PLC0415
    shape = _shape(piv)
    batch, k = shape[:-1], shape[-1]
    nd = len(shape)
    out_shape = batch + (m,)
    iota = _so.broadcasted_iota(np.int32, out_shape, nd - 1)
    if k == 0 or m == 0:
        return iota

    def bcast(v: Any) -> Any:  # [..., 1] -> [..., m]
        return _so.broadcast_in_dim(v, out_shape, tuple(range(nd)))

    def body(i: Any, perm: Any) -> Any:
        j = bcast(_sc.dynamic_slice_in_dim(piv, i, 1, nd - 1))
        ib = _so.broadcast_in_dim(_to(i, _INT32), out_shape, ())
        p_i = bcast(_sc.dynamic_slice_in_dim(perm, i, 1, nd - 1))
        at_j = _el.eq(iota, j)
        p_j = bcast(_expand(_rd.reduce_sum(_el.select(at_j, perm, _cv.full_like(perm, 0)),
                                           (nd - 1,)), -1))
        return _el.select(_el.eq(iota, ib), p_j, _el.select(at_j, p_i, perm))

    return _lp.fori_loop(0, k, body, iota)


def _lu_lowering(ctx: Any, x: str) -> list[str]:
    (a,) = ctx.avals_in
    lu_a, piv_a, perm_a = ctx.avals_out
    m = a.shape[-2]
    from fluxion.backend.lapack import target_name  # noqa: PLC0415
    info = _batch_info(a)
    f, piv, inf = _ffi_call(ctx, "lax.linalg.lu", target_name("getrf", a.dtype), [x], [a],
                            [a, piv_a, info], {}, {0: 0})

    def post(f: Any, piv: Any, inf: Any) -> list:
        piv = _el.sub(piv, _cv.full_like(piv, 1))
        return [_nan_where_not(_info_ok(inf, ge=True), f), piv, _pivots_to_perm_impl(piv, m)]

    return _inline(ctx, ("lu_post", m), post, [f, piv, inf], [a, piv_a, info])


lu_p.abstract_eval = _lu_abstract_eval
lu_p.lowering = _lu_lowering


def lu(x: Any) -> tuple[Any, Any, Any]:
    """LU decomposition with partial pivoting, ``P @ A = L @ U``, of matrices [..., m, n].

    Returns ``(lu, pivots, permutation)``: ``lu`` holds ``L`` (unit diagonal, not stored) below
    the diagonal and ``U`` on and above it; ``pivots`` [..., min(m, n)] (int32) are the row swaps
    and ``permutation`` [..., m] (int32) the same as a permutation (``A[permutation] = L @ U``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> lu_, piv, perm = linalg.lu(jnp.array([[1.0, 2.0], [3.0, 4.0]]))
        >>> piv.tolist(), perm.tolist()
        ([1, 1], [1, 0])
    """
    x = _asarray(x)
    _check_matrix("lax.linalg.lu", _aval(x))
    return tuple(lu_p.bind(x))


def _lu_pivots_abstract_eval(piv: ShapedArray, *, permutation_size: int) -> ShapedArray:
    fun = "lax.linalg.lu_pivots_to_permutation"
    if piv.dtype != _INT32:
        raise type_error(fun, f"pivots must be int32, got {piv.dtype.name}{list(piv.shape)}")
    if piv.ndim < 1:
        raise _shape_error(fun, f"pivots must have rank at least 1, got shape {piv.shape}")
    if permutation_size < piv.shape[-1]:
        raise value_error(fun, f"permutation_size={permutation_size} must be at least the number "
                          f"of pivots {piv.shape[-1]} (pivots shape {piv.shape})")
    return ShapedArray(piv.shape[:-1] + (permutation_size,), _INT32)


def _lu_pivots_lowering(ctx: Any, piv: str, *, permutation_size: int) -> str:
    return _inline(ctx, ("pivots", permutation_size),
                   lambda p: _pivots_to_perm_impl(p, permutation_size), [piv], ctx.avals_in)[0]


lu_pivots_to_permutation_p.abstract_eval = _lu_pivots_abstract_eval
lu_pivots_to_permutation_p.lowering = _lu_pivots_lowering


def lu_pivots_to_permutation(pivots: Any, permutation_size: int) -> Any:
    """The permutation [..., permutation_size] (int32) made by applying the row swaps
    ``pivots`` [..., k] (as returned by :func:`lu`) in order to ``arange(permutation_size)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> linalg.lu_pivots_to_permutation(jnp.array([2, 2], jnp.int32), 3).tolist()
        [2, 0, 1]
    """
    pivots = _asarray(pivots)
    return lu_pivots_to_permutation_p.bind(pivots,
                                           permutation_size=operator.index(permutation_size))


# ================================================================== QR: geqrf, householder_product, qr

geqrf_p = Primitive("geqrf", multiple_results=True)
householder_product_p = Primitive("householder_product")
qr_p = Primitive("qr", multiple_results=True)


def _geqrf_abstract_eval(x: ShapedArray) -> list[ShapedArray]:
    _check_matrix("lax.linalg.geqrf", x)
    m, n = x.shape[-2:]
    return [x.update(weak_type=False), x.update(shape=x.shape[:-2] + (min(m, n),),
                                                weak_type=False)]


def _geqrf_lowering(ctx: Any, x: str) -> list[str]:
    from fluxion.backend.lapack import target_name  # noqa: PLC0415
    (a,) = ctx.avals_in
    return _ffi_call(ctx, "lax.linalg.geqrf", target_name("geqrf", a.dtype), [x], [a],
                     ctx.avals_out, {}, {0: 0})


geqrf_p.abstract_eval = _geqrf_abstract_eval
geqrf_p.lowering = _geqrf_lowering


def geqrf(a: Any) -> tuple[Any, Any]:
    """LAPACK ``geqrf``: the QR decomposition of [..., m, n] matrices in compact form.

    Returns ``(r, taus)``: ``r`` holds R on and above the diagonal and the Householder
    reflectors below it; ``taus`` [..., min(m, n)] are the reflectors' scale factors (feed both
    to :func:`householder_product` to build Q).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> r, taus = linalg.geqrf(jnp.ones((3, 2)))
        >>> r.shape, taus.shape
        ((3, 2), (2,))
    """
    a = _asarray(a)
    _check_matrix("lax.linalg.geqrf", _aval(a))
    return tuple(geqrf_p.bind(a))


def _householder_abstract_eval(a: ShapedArray, taus: ShapedArray) -> ShapedArray:
    fun = "lax.linalg.householder_product"
    _check_matrix(fun, a, what="a")
    if taus.dtype != a.dtype:
        raise type_error(fun, f"a and taus must have the same dtype, got {a.dtype.name} and "
                         f"{taus.dtype.name}")
    m, n = a.shape[-2:]
    if taus.ndim != a.ndim - 1 or taus.shape[:-1] != a.shape[:-2]:
        raise _shape_error(fun, f"taus must have shape [..., k] with the batch dims of a, got a "
                           f"{a.shape} and taus {taus.shape}")
    if m < n or taus.shape[-1] > n:
        raise _shape_error(fun, f"needs m >= n >= k, got a {a.shape} and taus {taus.shape}")
    return a.update(weak_type=False)


def _householder_lowering(ctx: Any, a: str, taus: str) -> str:
    from fluxion.backend.lapack import target_name  # noqa: PLC0415
    aa, ta = ctx.avals_in
    routine = "ungqr" if aa.dtype.kind == "c" else "orgqr"
    return _ffi_call(ctx, "lax.linalg.householder_product", target_name(routine, aa.dtype),
                     [a, taus], [aa, ta], [aa], {}, {0: 0})[0]


householder_product_p.abstract_eval = _householder_abstract_eval
householder_product_p.lowering = _householder_lowering


def householder_product(a: Any, taus: Any) -> Any:
    """The product of the Householder reflectors stored below the diagonal of ``a`` [..., m, n]
    with scale factors ``taus`` [..., k] (LAPACK ``orgqr``/``ungqr``): matrices [..., m, n] with
    orthonormal columns.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> q = linalg.householder_product(*linalg.geqrf(jnp.array([[3.0], [4.0]])))
        >>> [round(v, 4) for v in q[:, 0].tolist()]
        [-0.6, -0.8]
    """
    a, taus = _asarray(a), _asarray(taus)
    return householder_product_p.bind(a, taus)


def _qr_abstract_eval(x: ShapedArray, *, pivoting: bool, full_matrices: bool,
                      use_magma: Any) -> list[ShapedArray]:
    _check_matrix("lax.linalg.qr", x)
    m, n = x.shape[-2:]
    batch = x.shape[:-2]
    k = m if full_matrices else min(m, n)
    out = [x.update(shape=batch + (m, k), weak_type=False),
           x.update(shape=batch + (k, n), weak_type=False)]
    if pivoting:
        out.append(ShapedArray(batch + (n,), _INT32))
    return out


def _qr_lowering(ctx: Any, x: str, *, pivoting: bool, full_matrices: bool,
                 use_magma: Any) -> list[str]:
    from fluxion.backend.lapack import target_name  # noqa: PLC0415
    (a,) = ctx.avals_in
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    k = min(m, n)
    if m == 0 or n == 0:
        kk = m if full_matrices else k

        def empty(x: Any) -> list:
            q = _so.broadcast_in_dim(np.eye(m, kk, dtype=a.dtype), batch + (m, kk),
                                     (len(batch), len(batch) + 1))
            r = _cv.full(batch + (kk, n), 0, a.dtype)
            outs = [q, r]
            if pivoting:
                outs.append(_cv.full(batch + (n,), 0, np.int32))
            return outs

        return _inline(ctx, ("qr_empty", pivoting, full_matrices), empty, [x], [a])
    taus_a = a.update(shape=batch + (k,), weak_type=False)
    if pivoting:
        jp_a = ShapedArray(batch + (n,), _INT32)
        jpvt = ctx.constant(0, jp_a)
        r, jp, taus = _ffi_call(ctx, "lax.linalg.qr", target_name("geqp3", a.dtype), [x, jpvt],
                                [a, jp_a], [a, jp_a, taus_a], {}, {0: 0, 1: 1})
    else:
        r, taus = _ffi_call(ctx, "lax.linalg.qr", target_name("geqrf", a.dtype), [x], [a],
                            [a, taus_a], {}, {0: 0})
    # The reflectors, as the [.., m, kq] input of orgqr (kq = min(m, n), or m for full Q).
    if m < n:
        q_in_a = a.update(shape=batch + (m, m))
        q_in = _inline(ctx, "qr_square", lambda r: _sl(r, -1, 0, m), [r], [a])[0]
    elif full_matrices and m > n:
        q_in_a = a.update(shape=batch + (m, m))
        q_in = _inline(ctx, "qr_pad", lambda r: _pad_axis(r, -1, 0, m - n), [r], [a])[0]
    else:
        q_in_a, q_in = a, r
    routine = "ungqr" if a.dtype.kind == "c" else "orgqr"
    (q,) = _ffi_call(ctx, "lax.linalg.qr", target_name(routine, a.dtype), [q_in, taus],
                     [q_in_a, taus_a], [q_in_a], {}, {0: 0})
    trim = not full_matrices and m > n

    def post(r: Any, *rest: Any) -> list:
        if trim:
            r = _sl(r, -2, 0, n)
        out = [_triu(r)]
        if pivoting:
            out.append(_el.sub(rest[0], _cv.full_like(rest[0], 1)))
        return out

    if pivoting:
        post_out = _inline(ctx, ("qr_post", trim, True), post, [r, jp], [a, jp_a])
    else:
        post_out = _inline(ctx, ("qr_post", trim, False), post, [r], [a])
    return [q] + post_out


qr_p.abstract_eval = _qr_abstract_eval
qr_p.lowering = _qr_lowering


def qr(x: Any, *, pivoting: bool = False, full_matrices: bool = True,
       use_magma: bool | None = None) -> Any:
    """QR decomposition ``A = Q @ R`` of matrices [..., m, n].

    Returns ``(q, r)``: ``q`` [..., m, m] unitary and ``r`` [..., m, n] upper triangular with
    ``full_matrices``, else ``q`` [..., m, k] and ``r`` [..., k, n] with ``k = min(m, n)``.
    With ``pivoting`` (column pivoting, LAPACK ``geqp3``) returns ``(q, r, p)`` with
    ``A[..., :, p] = Q @ R`` and int32 ``p`` [..., n]. ``use_magma`` is accepted and ignored
    (it only matters on GPU).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> q, r = linalg.qr(jnp.ones((3, 2)), full_matrices=False)
        >>> q.shape, r.shape
        ((3, 2), (2, 2))
    """
    x = _asarray(x)
    _check_matrix("lax.linalg.qr", _aval(x))
    outs = qr_p.bind(x, pivoting=bool(pivoting), full_matrices=bool(full_matrices),
                     use_magma=use_magma)
    return tuple(outs)


# ================================================================== eigh

eigh_p = Primitive("eigh", multiple_results=True)


def _check_subset(fun: str, subset: Any, n: int) -> tuple[int, int] | None:
    if subset is None:
        return None
    try:
        lo, hi = (operator.index(v) for v in subset)
    except (TypeError, ValueError):
        raise type_error(fun, f"subset_by_index must be None or a pair of ints, got {subset!r}") \
            from None
    if not 0 <= lo <= hi <= n:
        raise value_error(fun, f"subset_by_index={subset!r} must satisfy 0 <= start <= end <= {n}")
    return (lo, hi)


def _eigh_abstract_eval(x: ShapedArray, *, lower: bool, sort_eigenvalues: bool,
                        subset_by_index: Any, algorithm: Any) -> list[ShapedArray]:
    fun = "lax.linalg.eigh"
    _check_matrix(fun, x, square=True)
    n = x.shape[-1]
    d = n if subset_by_index is None else subset_by_index[1] - subset_by_index[0]
    batch = x.shape[:-2]
    return [x.update(shape=batch + (n, d), weak_type=False),
            ShapedArray(batch + (d,), _real_dtype(x.dtype))]


def _eigh_lowering(ctx: Any, x: str, *, lower: bool, sort_eigenvalues: bool,
                   subset_by_index: Any, algorithm: Any) -> list[str]:
    from fluxion.backend.lapack import target_name  # noqa: PLC0415
    if algorithm not in (None, EighImplementation.QR):
        raise NotImplementedError(f"lax.linalg.eigh: implementation {algorithm} is not available "
                                  "on CPU (only EighImplementation.QR)")
    (a,) = ctx.avals_in
    n = a.shape[-1]
    batch = a.shape[:-2]
    routine = "heevd" if a.dtype.kind == "c" else "syevd"
    w_a = ShapedArray(batch + (n,), _real_dtype(a.dtype))
    info = _batch_info(a)
    v, w, inf = _ffi_call(ctx, "lax.linalg.eigh", target_name(routine, a.dtype), [x], [a],
                          [a, w_a, info], {"mode": _char("V"), "uplo": _char("L" if lower else "U")},
                          {0: 0})
    lo, hi = subset_by_index if subset_by_index is not None else (0, n)

    def post(v: Any, w: Any, inf: Any) -> list:
        ok = _info_ok(inf)
        return [_sl(_nan_where_not(ok, v), -1, lo, hi), _sl(_nan_where_not(ok, w), -1, lo, hi)]

    return _inline(ctx, ("eigh_post", lo, hi), post, [v, w, inf], [a, w_a, info])


eigh_p.abstract_eval = _eigh_abstract_eval
eigh_p.lowering = _eigh_lowering


def eigh(x: Any, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index: tuple[int, int] | None = None,
         implementation: EighImplementation | None = None) -> tuple[Any, Any]:
    """Eigendecomposition of Hermitian (real symmetric) matrices [..., n, n].

    Returns ``(v, w)``: eigenvalues ``w`` [..., d] (real, ascending) and normalized eigenvectors
    as the columns of ``v`` [..., n, d], so ``x @ v == v * w[..., None, :]``. ``d = n``, or
    ``end - start`` for ``subset_by_index=(start, end)``. Without ``symmetrize_input`` only the
    ``lower`` (or upper) triangle is read.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> v, w = linalg.eigh(jnp.array([[2.0, 1.0], [1.0, 2.0]]))
        >>> [round(e, 4) for e in w.tolist()]
        [1.0, 3.0]
    """
    x = _asarray(x)
    xa = _aval(x)
    _check_matrix("lax.linalg.eigh", xa, square=True)
    subset = _check_subset("lax.linalg.eigh", subset_by_index, xa.shape[-1])
    if symmetrize_input:
        x = _symmetrize(x)
    v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues),
                       subset_by_index=subset, algorithm=implementation)
    return v, w


# ================================================================== svd

svd_p = Primitive("svd", multiple_results=True)


def _svd_abstract_eval(x: ShapedArray, *, full_matrices: bool, compute_uv: bool,
                       subset_by_index: Any, algorithm: Any) -> list[ShapedArray]:
    fun = "lax.linalg.svd"
    _check_matrix(fun, x)
    m, n = x.shape[-2:]
    batch = x.shape[:-2]
    rank = min(m, n)
    if subset_by_index is not None:
        if full_matrices and tuple(subset_by_index) != (0, rank):
            raise value_error(fun, "full_matrices and subset_by_index cannot both be set")
        rank = min(rank, subset_by_index[1] - subset_by_index[0])
    s = ShapedArray(batch + (rank,), _real_dtype(x.dtype))
    if not compute_uv:
        return [s]
    u = x.update(shape=batch + (m, m if full_matrices else rank), weak_type=False)
    vt = x.update(shape=batch + (n if full_matrices else rank, n), weak_type=False)
    return [s, u, vt]


def _svd_lowering(ctx: Any, x: str, *, full_matrices: bool, compute_uv: bool,
                  subset_by_index: Any, algorithm: Any) -> list[str]:
    from fluxion.backend.lapack import target_name  # noqa: PLC0415
    (a,) = ctx.avals_in
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    k = min(m, n)
    if m == 0 or n == 0:
        def empty(x: Any) -> list:
            s = _cv.full(batch + (0,), 0, _real_dtype(a.dtype))
            if not compute_uv:
                return [s]
            outs = [s]
            for aval in ctx.avals_out[1:]:
                r, c = aval.shape[-2:]
                outs.append(_so.broadcast_in_dim(np.eye(r, c, dtype=a.dtype), aval.shape,
                                                 (len(batch), len(batch) + 1)))
            return outs

        return _inline(ctx, ("svd_empty", compute_uv, tuple(ctx.avals_out)), empty, [x], [a])
    if algorithm in (None, SvdAlgorithm.DEFAULT, SvdAlgorithm.DIVIDE_AND_CONQUER):
        routine = "gesdd"
    elif algorithm == SvdAlgorithm.QR:
        routine = "gesvd"
    else:
        raise NotImplementedError(f"lax.linalg.svd: algorithm {algorithm} is not implemented on "
                                  "CPU (use DEFAULT, DIVIDE_AND_CONQUER or QR)")
    subset = subset_by_index is not None and tuple(subset_by_index) != (0, k)
    if compute_uv and not subset:
        mode = "A" if full_matrices else "S"
    elif subset:
        mode = "S"
    else:
        mode = "N"
    full_shapes = mode in ("A", "N") and (full_matrices or not compute_uv)
    cu = m if full_shapes else k
    rv = n if full_shapes else k
    s_a = ShapedArray(batch + (k,), _real_dtype(a.dtype))
    u_a = a.update(shape=batch + (m, cu), weak_type=False)
    vt_a = a.update(shape=batch + (rv, n), weak_type=False)
    info = _batch_info(a)
    _, s, u, vt, inf = _ffi_call(ctx, "lax.linalg.svd", target_name(routine, a.dtype), [x], [a],
                                 [a, s_a, u_a, vt_a, info], {"mode": _char(mode)}, {0: 0})
    lo, hi = subset_by_index if subset else (0, k)

    def post(s: Any, u: Any, vt: Any, inf: Any) -> list:
        ok = _info_ok(inf)
        out = [_sl(_nan_where_not(ok, s), -1, lo, hi)]
        if compute_uv:
            u, vt = _nan_where_not(ok, u), _nan_where_not(ok, vt)
            if subset:
                u, vt = _sl(u, -1, lo, hi), _sl(vt, -2, lo, hi)
            out += [u, vt]
        return out

    return _inline(ctx, ("svd_post", compute_uv, subset, lo, hi), post, [s, u, vt, inf],
                   [s_a, u_a, vt_a, info])


svd_p.abstract_eval = _svd_abstract_eval
svd_p.lowering = _svd_lowering


def svd(x: Any, *, full_matrices: bool = True, compute_uv: bool = True,
        subset_by_index: tuple[int, int] | None = None,
        algorithm: SvdAlgorithm | None = None) -> Any:
    """Singular value decomposition ``A = U @ diag(s) @ Vh`` of matrices [..., m, n].

    Returns ``(u, s, vh)`` (``s`` real, descending), or only ``s`` without ``compute_uv``. With
    ``full_matrices`` ``u`` is [..., m, m] and ``vh`` [..., n, n]; otherwise [..., m, k] and
    [..., k, n], ``k = min(m, n)``. ``subset_by_index=(start, end)`` keeps singular values
    ``start:end`` (needs ``full_matrices=False``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> linalg.svd(jnp.array([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False).tolist()
        [4.0, 3.0]
    """
    x = _asarray(x)
    xa = _aval(x)
    _check_matrix("lax.linalg.svd", xa)
    subset = _check_subset("lax.linalg.svd", subset_by_index, min(xa.shape[-2:]))
    if algorithm is not None and not isinstance(algorithm, SvdAlgorithm):
        raise type_error("lax.linalg.svd", f"algorithm must be None or a SvdAlgorithm, got "
                         f"{algorithm!r}")
    outs = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
                      subset_by_index=subset, algorithm=algorithm)
    if compute_uv:
        s, u, vt = outs
        return u, s, vt
    return outs[0]


# ================================================================== eig

eig_p = Primitive("eig", multiple_results=True)


def _eig_abstract_eval(x: ShapedArray, *, compute_left_eigenvectors: bool,
                       compute_right_eigenvectors: bool, enable_eigvec_derivs: bool,
                       implementation: Any) -> list[ShapedArray]:
    _check_matrix("lax.linalg.eig", x, square=True)
    ct = _complex_dtype(x.dtype)
    out = [ShapedArray(x.shape[:-1], ct)]
    out += [ShapedArray(x.shape, ct)] * (int(compute_left_eigenvectors)
                                         + int(compute_right_eigenvectors))
    return out


def _eig_lowering(ctx: Any, x: str, *, compute_left_eigenvectors: bool,
                  compute_right_eigenvectors: bool, enable_eigvec_derivs: bool,
                  implementation: Any) -> list[str]:
    from fluxion.backend.lapack import target_name  # noqa: PLC0415
    if implementation not in (None, EigImplementation.LAPACK):
        raise NotImplementedError(f"lax.linalg.eig: implementation {implementation} is not "
                                  "available on CPU (only EigImplementation.LAPACK)")
    (a,) = ctx.avals_in
    ct = _complex_dtype(a.dtype)
    real = a.dtype.kind == "f"
    w_a = ShapedArray(a.shape[:-1], a.dtype)
    v_a = ShapedArray(a.shape, ct)
    info = _batch_info(a)
    outs_a = ([w_a, w_a] if real else [w_a]) + [v_a, v_a, info]
    cfg = {"compute_left": _char("V" if compute_left_eigenvectors else "N"),
           "compute_right": _char("V" if compute_right_eigenvectors else "N")}
    outs = _ffi_call(ctx, "lax.linalg.eig", target_name("geev", a.dtype), [x], [a], outs_a, cfg)
    left, right = compute_left_eigenvectors, compute_right_eigenvectors

    def post(*vals: Any) -> list:
        if real:
            wr, wi, vl, vr, inf = vals
            w = _el.complex(wr, wi)
        else:
            w, vl, vr, inf = vals
        ok = _info_ok(inf)
        out = [_nan_where_not(ok, w)]
        if left:
            out.append(_nan_where_not(ok, vl))
        if right:
            out.append(_nan_where_not(ok, vr))
        return out

    return _inline(ctx, ("eig_post", left, right), post, outs, outs_a)


eig_p.abstract_eval = _eig_abstract_eval
eig_p.lowering = _eig_lowering


def eig(x: Any, *, compute_left_eigenvectors: bool = True,
        compute_right_eigenvectors: bool = True, enable_eigvec_derivs: bool = False,
        implementation: EigImplementation | None = None,
        use_magma: bool | None = None) -> list[Any]:
    """Eigendecomposition of general square matrices [..., n, n] (CPU only, LAPACK ``geev``).

    Returns a list ``[w, vl, vr]`` (left/right eigenvectors only when asked for): complex
    eigenvalues ``w`` [..., n] and eigenvectors as columns, ``x @ vr = vr * w[..., None, :]``
    and ``vl^H @ x = w[..., :, None] * vl^H``. Each eigenvector has unit norm and a real
    largest component. Derivatives of the eigenvectors need ``enable_eigvec_derivs=True``
    (they assume distinct eigenvalues).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> w, = linalg.eig(jnp.array([[0.0, 1.0], [-1.0, 0.0]]),
        ...                 compute_left_eigenvectors=False, compute_right_eigenvectors=False)
        >>> sorted(w.imag.tolist())
        [-1.0, 1.0]
    """
    del use_magma
    x = _asarray(x)
    _check_matrix("lax.linalg.eig", _aval(x), square=True)
    return list(eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                           compute_right_eigenvectors=bool(compute_right_eigenvectors),
                           enable_eigvec_derivs=bool(enable_eigvec_derivs),
                           implementation=implementation))


# ================================================================== tridiagonal_solve

tridiagonal_solve_p = Primitive("tridiagonal_solve")


def _tridiagonal_solve_abstract_eval(dl: ShapedArray, d: ShapedArray, du: ShapedArray,
                                     b: ShapedArray, *, perturb_singular: bool) -> ShapedArray:
    fun = "lax.linalg.tridiagonal_solve"
    _check_matrix(fun, b, what="b")
    for name, v in (("dl", dl), ("d", d), ("du", du)):
        if v.dtype != b.dtype:
            raise type_error(fun, f"{name} and b must have the same dtype, got "
                             f"{v.dtype.name}{list(v.shape)} and {b.dtype.name}{list(b.shape)}")
        if v.shape != b.shape[:-1]:
            raise _shape_error(fun, f"{name} must have shape {b.shape[:-1]} (b is [..., m, n] "
                               f"with shape {b.shape}), got {v.shape}")
    return b.update(weak_type=False)


def _tridiagonal_solve_lowering(ctx: Any, dl: str, d: str, du: str, b: str, *,
                                perturb_singular: bool) -> str:
    from fluxion.backend.lapack import target_name  # noqa: PLC0415
    avals = list(ctx.avals_in)
    ba = avals[-1]
    if perturb_singular:
        return _ffi_call(ctx, "lax.linalg.tridiagonal_solve", "tridiagonal_solve_perturbed_ffi",
                         [dl, d, du, b], avals, [ba])[0]
    info = _batch_info(ba)
    outs = _ffi_call(ctx, "lax.linalg.tridiagonal_solve", target_name("gtsv", ba.dtype),
                     [dl, d, du, b], avals, avals + [info], {}, {0: 0, 1: 1, 2: 2, 3: 3})
    return _inline(ctx, "gtsv_post", lambda x, i: _nan_where_not(_info_ok(i), x),
                   [outs[3], outs[4]], [ba, info])[0]


tridiagonal_solve_p.abstract_eval = _tridiagonal_solve_abstract_eval
tridiagonal_solve_p.lowering = _tridiagonal_solve_lowering


def tridiagonal_solve(dl: Any, d: Any, du: Any, b: Any, *, perturb_singular: bool = False) -> Any:
    """Solve the tridiagonal systems ``A @ x = b`` (LAPACK ``gtsv``), ``b`` [..., m, n].

    ``dl``, ``d``, ``du`` [..., m] are the sub-, main and super-diagonals: ``A[i, i-1] = dl[i]``
    (``dl[0]`` is ignored), ``A[i, i] = d[i]``, ``A[i, i+1] = du[i]`` (``du[m-1]`` is ignored).
    Singular systems give NaNs, unless ``perturb_singular`` perturbs tiny pivots instead.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> x = linalg.tridiagonal_solve(jnp.array([0.0, 1.0]), jnp.array([2.0, 2.0]),
        ...                              jnp.array([1.0, 0.0]), jnp.array([[3.0], [3.0]]))
        >>> x.tolist()
        [[1.0], [1.0]]
    """
    dl, d, du, b = (_asarray(v) for v in (dl, d, du, b))
    return tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=bool(perturb_singular))


# ================================================================== schur, hessenberg, tridiagonal

schur_p = Primitive("schur", multiple_results=True)
hessenberg_p = Primitive("hessenberg", multiple_results=True)
tridiagonal_p = Primitive("tridiagonal", multiple_results=True)


def _schur_abstract_eval(x: ShapedArray, *, compute_schur_vectors: bool,
                         sort_eig_vals: bool) -> list[ShapedArray]:
    _check_matrix("lax.linalg.schur", x, square=True)
    t = x.update(weak_type=False)
    return [t, t] if compute_schur_vectors else [t]


def _schur_lowering(ctx: Any, x: str, *, compute_schur_vectors: bool,
                    sort_eig_vals: bool) -> list[str]:
    from fluxion.backend.lapack import target_name  # noqa: PLC0415
    (a,) = ctx.avals_in
    w_a = ShapedArray(a.shape[:-1], a.dtype)
    info = _batch_info(a)
    real = a.dtype.kind == "f"
    outs_a = [a, a] + ([w_a, w_a] if real else [w_a]) + [info, info]
    cfg = {"mode": _char("V" if compute_schur_vectors else "N"), "sort": _char("N")}
    outs = _ffi_call(ctx, "lax.linalg.schur", target_name("gees", a.dtype), [x], [a], outs_a,
                     cfg, {0: 0})

    def post(t: Any, vs: Any, inf: Any) -> list:
        ok = _info_ok(inf)
        return [_nan_where_not(ok, t), _nan_where_not(ok, vs)][:2 if compute_schur_vectors else 1]

    return _inline(ctx, ("schur_post", compute_schur_vectors), post,
                   [outs[0], outs[1], outs[-1]], [a, a, info])


schur_p.abstract_eval = _schur_abstract_eval
schur_p.lowering = _schur_lowering


def schur(x: Any, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable: Callable[..., Any] | None = None) -> Any:
    """Schur decomposition ``A = Z @ T @ Z^H`` of square matrices [..., n, n] (CPU only).

    Returns ``(T, Z)``, or only ``T`` without ``compute_schur_vectors``; ``T`` is upper
    (quasi-, for real input) triangular and ``Z`` unitary. Sorting eigenvalues
    (``sort_eig_vals`` / ``select_callable``) is not supported.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> t, z = linalg.schur(jnp.array([[1.0, 2.0], [0.0, 3.0]]))
        >>> sorted(round(v, 4) for v in (t[0, 0].item(), t[1, 1].item()))
        [1.0, 3.0]
    """
    if sort_eig_vals or select_callable is not None:
        raise NotImplementedError("lax.linalg.schur: sort_eig_vals / select_callable are not "
                                  "supported in Fluxion")
    x = _asarray(x)
    _check_matrix("lax.linalg.schur", _aval(x), square=True)
    outs = schur_p.bind(x, compute_schur_vectors=bool(compute_schur_vectors),
                        sort_eig_vals=False)
    return tuple(outs) if compute_schur_vectors else outs[0]


def _hessenberg_abstract_eval(x: ShapedArray) -> list[ShapedArray]:
    _check_matrix("lax.linalg.hessenberg", x, square=True)
    n = x.shape[-1]
    return [x.update(weak_type=False),
            x.update(shape=x.shape[:-2] + (max(n - 1, 0),), weak_type=False)]


def _hessenberg_lowering(ctx: Any, x: str) -> list[str]:
    from fluxion.backend.lapack import target_name  # noqa: PLC0415
    (a,) = ctx.avals_in
    _, taus_a = ctx.avals_out
    n = a.shape[-1]
    info = _batch_info(a)
    outs = _ffi_call(ctx, "lax.linalg.hessenberg", target_name("gehrd", a.dtype), [x], [a],
                     [a, taus_a, info], {"high": f"{n} : i32", "low": "1 : i32"}, {0: 0})

    def post(h: Any, t: Any, inf: Any) -> list:
        ok = _info_ok(inf)
        return [_nan_where_not(ok, h), _nan_where_not(ok, t)]

    return _inline(ctx, "hessenberg_post", post, outs, [a, taus_a, info])


hessenberg_p.abstract_eval = _hessenberg_abstract_eval
hessenberg_p.lowering = _hessenberg_lowering


def hessenberg(a: Any) -> tuple[Any, Any]:
    """Reduce square matrices [..., n, n] to upper Hessenberg form (LAPACK ``gehrd``, CPU only).

    Returns ``(a, taus)``: the Hessenberg matrix on and above the first subdiagonal, the
    Householder reflectors below it, and their scale factors ``taus`` [..., n - 1].

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> h, taus = linalg.hessenberg(jnp.eye(3))
        >>> h.shape, taus.shape
        ((3, 3), (2,))
    """
    a = _asarray(a)
    _check_matrix("lax.linalg.hessenberg", _aval(a), square=True)
    return tuple(hessenberg_p.bind(a))


def _tridiagonal_abstract_eval(x: ShapedArray, *, lower: bool) -> list[ShapedArray]:
    _check_matrix("lax.linalg.tridiagonal", x, square=True)
    n = x.shape[-1]
    batch = x.shape[:-2]
    rt = _real_dtype(x.dtype)
    return [x.update(weak_type=False), ShapedArray(batch + (n,), rt),
            ShapedArray(batch + (max(n - 1, 0),), rt),
            x.update(shape=batch + (max(n - 1, 0),), weak_type=False)]


def _tridiagonal_lowering(ctx: Any, x: str, *, lower: bool) -> list[str]:
    from fluxion.backend.lapack import target_name  # noqa: PLC0415
    (a,) = ctx.avals_in
    info = _batch_info(a)
    routine = "hetrd" if a.dtype.kind == "c" else "sytrd"
    outs_a = list(ctx.avals_out) + [info]
    outs = _ffi_call(ctx, "lax.linalg.tridiagonal", target_name(routine, a.dtype), [x], [a],
                     outs_a, {"uplo": _char("L" if lower else "U")}, {0: 0})

    def post(*vals: Any) -> list:
        ok = _info_ok(vals[-1])
        return [_nan_where_not(ok, v) for v in vals[:-1]]

    return _inline(ctx, "tridiagonal_post", post, outs, outs_a)


tridiagonal_p.abstract_eval = _tridiagonal_abstract_eval
tridiagonal_p.lowering = _tridiagonal_lowering


def tridiagonal(a: Any, *, lower: bool = True) -> tuple[Any, Any, Any, Any]:
    """Reduce Hermitian (real symmetric) matrices [..., n, n] to tridiagonal form (LAPACK
    ``sytrd``/``hetrd``), reading the ``lower`` (or upper) triangle.

    Returns ``(a, d, e, taus)``: the packed result, the real diagonal ``d`` [..., n], the real
    off-diagonal ``e`` [..., n - 1] and the reflectors' scale factors ``taus`` [..., n - 1].

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> _, d, e, _ = linalg.tridiagonal(jnp.array([[2.0, 1.0], [1.0, 3.0]]))
        >>> d.tolist(), e.tolist()
        ([2.0, 3.0], [1.0])
    """
    a = _asarray(a)
    _check_matrix("lax.linalg.tridiagonal", _aval(a), square=True)
    return tuple(tridiagonal_p.bind(a, lower=bool(lower)))


def symmetric_product(a_matrix: Any, c_matrix: Any, *, alpha: float = 1.0, beta: float = 0.0,
                      symmetrize_output: bool = False) -> Any:
    """``alpha * a @ a^T + beta * c`` for [..., m, k] ``a`` and symmetric [..., m, m] ``c``
    (``symmetrize_output`` copies the lower triangle to the upper one).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> linalg.symmetric_product(jnp.array([[1.0], [2.0]]), jnp.zeros((2, 2))).tolist()
        [[1.0, 2.0], [2.0, 4.0]]
    """
    a, c = _asarray(a_matrix), _asarray(c_matrix)
    fun = "lax.linalg.symmetric_product"
    aa, ca = _aval(a), _aval(c)
    _check_matrix(fun, aa, what="a_matrix")
    _check_matrix(fun, ca, square=True, what="c_matrix")
    if aa.dtype != ca.dtype or ca.shape[-1] != aa.shape[-2] or aa.shape[:-2] != ca.shape[:-2]:
        raise _shape_error(fun, f"needs a [..., m, k] and c [..., m, m] of one dtype, got "
                           f"{aa.dtype.name}{list(aa.shape)} and {ca.dtype.name}{list(ca.shape)}")
    out = _el.add(_el.mul(_c(a, alpha), _mm(a, _T(a))), _el.mul(_c(c, beta), c))
    if symmetrize_output:
        low = _tril(out)
        out = _el.add(low, _T(_tril(out, -1)))
    return out


# ================================================================== batching rules (vmap)

def _front_batch_rule(prim: Primitive) -> Callable[..., Any]:
    """Every operand's batch dimension moved (or broadcast) to the front: these primitives batch
    over leading dimensions natively."""
    def rule(axis_data: Any, args: Any, dims: Any, **params: Any) -> Any:
        size = _rules.batch_size(args, dims)
        ops = [_rules.bdim_to_front(x, d, size) for x, d in zip(args, dims)]
        out = prim.bind(*ops, **params)
        if prim.multiple_results:
            return out, [0] * len(out)
        return out, 0
    return rule


for _p in (cholesky_p, lu_p, lu_pivots_to_permutation_p, geqrf_p,
           householder_product_p, qr_p, eigh_p, svd_p, eig_p, tridiagonal_solve_p, schur_p,
           hessenberg_p, tridiagonal_p):
    _p.batch = _front_batch_rule(_p)


def _triangular_solve_batch(axis_data: Any, args: Any, dims: Any, *, left_side: bool, **params: Any) -> Any:
    """A shared matrix with a batch of right-hand sides is one solve with more right-hand sides:
    the batch joins the columns of ``b`` (left side) or its rows (right side), as in JAX, instead
    of one small solve per member."""
    a, b = args
    da, db = dims
    if da is not None or db is None:
        return _front_batch_rule(triangular_solve_p)(axis_data, args, dims, left_side=left_side, **params)
    nd = len(_rules.shape_of(b))
    b = _rules.moveaxis(b, db, nd - 1)  # (..., m, n, B)
    shape = tuple(_rules.shape_of(b))
    lead, (m, n, size) = shape[:-3], shape[-3:]
    if left_side:  # columns are independent: (..., m, n * B)
        out = triangular_solve_p.bind(a, _so.reshape(b, lead + (m, n * size)),
                                      left_side=left_side, **params)
        return _so.reshape(out, shape), nd - 1
    b = _rules.moveaxis(b, nd - 1, nd - 2)  # rows are independent: (..., m, B, n) -> (..., m * B, n)
    out = triangular_solve_p.bind(a, _so.reshape(b, lead + (m * size, n)),
                                  left_side=left_side, **params)
    return _so.reshape(out, lead + (m, size, n)), nd - 2


triangular_solve_p.batch = _triangular_solve_batch


# ================================================================== autodiff rules

def _attach_ad_rules() -> None:
    from fluxion.transforms import ad  # noqa: PLC0415

    Zero = ad.Zero

    def zero_of(x: Any) -> Any:
        return Zero(ad.tangent_aval(_aval(x)))

    def is_zero(t: Any) -> bool:
        return type(t) is Zero

    # ---------------------------------------------------------------- cholesky
    def cholesky_jvp(primals: list, tangents: list) -> tuple:
        (x,), (dx,) = primals, tangents
        L = cholesky_p.bind(x)
        if is_zero(dx):
            return L, zero_of(L)
        # L^{-1} dA L^{-H}, then dL = L phi(.) with phi = lower triangle, diagonal halved.
        tmp = triangular_solve(L, dx, left_side=False, transpose_a=True, conjugate_a=True,
                               lower=True)
        inner = triangular_solve(L, tmp, left_side=True, lower=True)
        n = _shape(x)[-1]
        half = np.where(np.eye(n, dtype=bool), 0.5, 1.0).astype(_aval(x).dtype)
        phi = _el.mul(_tril(inner), _bcast_mat(half, inner))
        return L, _mm(L, phi)

    cholesky_p.jvp = cholesky_jvp

    # ---------------------------------------------------------------- triangular_solve
    def ts_jvp_a(g_a: Any, ans: Any, a: Any, *, left_side: bool, lower: bool, transpose_a: bool,
                 conjugate_a: bool, unit_diagonal: bool) -> Any:
        m, n = _shape(ans)[-2:]
        k = 1 if unit_diagonal else 0
        g_a = _tril(g_a, -k) if lower else _triu(g_a, k)
        g_a = _el.neg(g_a)
        if transpose_a:
            g_a = _T(g_a)
        if conjugate_a:
            g_a = _conj(g_a)

        def a_inv(rhs: Any) -> Any:
            return triangular_solve(a, rhs, left_side=left_side, lower=lower,
                                    transpose_a=transpose_a, conjugate_a=conjugate_a,
                                    unit_diagonal=unit_diagonal)

        if left_side:
            return a_inv(_mm(g_a, ans)) if m > n else _mm(a_inv(g_a), ans)
        return a_inv(_mm(ans, g_a)) if m < n else _mm(ans, a_inv(g_a))

    def ts_jvp(primals: list, tangents: list, **params: Any) -> tuple:
        a, b = primals
        g_a, g_b = tangents
        ans = triangular_solve_p.bind(a, b, **params)
        out = None
        if not is_zero(g_a):
            out = ts_jvp_a(g_a, ans, a, **params)
        if not is_zero(g_b):
            out = ad.add_tangents(out, triangular_solve_p.bind(a, g_b, **params))
        return ans, (zero_of(ans) if out is None else out)

    def ts_transpose(ct: Any, a: Any, b: Any, *, left_side: bool, lower: bool,
                     transpose_a: bool, conjugate_a: bool, unit_diagonal: bool) -> list:
        if ad.is_undefined(a):
            raise NotImplementedError("lax.linalg.triangular_solve is not linear in a")
        if is_zero(ct):
            return [None, None]
        ct_b = triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                       transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                       unit_diagonal=unit_diagonal)
        return [None, ct_b]

    triangular_solve_p.jvp = ts_jvp
    triangular_solve_p.transpose = ts_transpose

    # ---------------------------------------------------------------- lu
    def lu_jvp(primals: list, tangents: list) -> tuple:
        (a,), (da,) = primals, tangents
        lu_, piv, perm = outs = lu_p.bind(a)
        zeros = [zero_of(piv), zero_of(perm)]
        if is_zero(da):
            return outs, [zero_of(lu_)] + zeros
        m, n = _shape(a)[-2:]
        k = min(m, n)
        l_ = _pad_axis(_tril(_sl(lu_, -1, 0, k), -1), -1, 0, m - k)
        l_ = _el.add(l_, _eye_like(l_))
        u_eye = np.zeros((n, n), _aval(a).dtype)
        u_eye[np.arange(k, n), np.arange(k, n)] = 1
        u_ = _el.add(_pad_axis(_triu(_sl(lu_, -2, 0, k)), -2, 0, n - k), _bcast_mat(u_eye, a))
        la = triangular_solve(l_, _permute_rows(da, perm), left_side=True, lower=True,
                              unit_diagonal=True)
        lau = triangular_solve(u_, la, left_side=False, lower=False)
        dlu = _el.add(_mm(l_, _tril(lau, -1)), _mm(_triu(lau), u_))
        return outs, [dlu] + zeros

    lu_p.jvp = lu_jvp
    _rules.defjvp_zero(lu_pivots_to_permutation_p)

    # ---------------------------------------------------------------- qr
    def thin_qr_jvp(q: Any, r: Any, dx: Any) -> tuple:
        dx_rinv = triangular_solve(r, dx)  # dx @ r^{-1}
        qt_dx_rinv = _mm(_H(q), dx_rinv)
        low = _tril(qt_dx_rinv, -1)
        do = _el.sub(low, _H(low))  # skew-Hermitian part
        if _is_complex(q):
            # the imaginary part of the diagonal
            im_diag = _el.sub(qt_dx_rinv, _to(_el.real(qt_dx_rinv), _aval(q).dtype))
            do = _el.add(do, _el.mul(_eye_like(do), im_diag))
        dq = _el.add(_mm(q, _el.sub(do, qt_dx_rinv)), dx_rinv)
        dr = _mm(_el.sub(qt_dx_rinv, do), r)
        return dq, dr

    def qr_jvp(primals: list, tangents: list, *, pivoting: bool, full_matrices: bool,
               use_magma: Any) -> tuple:
        (x,), (dx,) = primals, tangents
        outs = qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices, use_magma=use_magma)
        q, r = outs[0], outs[1]
        if is_zero(dx):
            return outs, [zero_of(o) for o in outs]
        extra = [zero_of(outs[2])] if pivoting else []
        if pivoting:
            dx = _permute_cols(dx, outs[2])
        m, n = _shape(x)[-2:]
        if m < n:
            x2 = _sl(x, -1, m, n)
            dx1, dx2 = _sl(dx, -1, 0, m), _sl(dx, -1, m, n)
            dq, dr1 = thin_qr_jvp(q, _sl(r, -1, 0, m), dx1)
            dr2 = _el.add(_mm(_H(dq), x2), _mm(_H(q), dx2))
            return outs, [dq, _so.concatenate([dr1, dr2], _nd(dr1) - 1)] + extra
        q_mn = _sl(q, -1, 0, n) if full_matrices else q
        r_nn = _sl(r, -2, 0, n) if full_matrices else r
        dq_mn, dr_nn = thin_qr_jvp(q_mn, r_nn, dx)
        if not full_matrices or m == n:
            return outs, [dq_mn, dr_nn] + extra
        # full Q of a tall matrix (arXiv:2409.13374, eqs. 32-33)
        q_nn, q_pn = _sl(q_mn, -2, 0, n), _sl(q_mn, -2, n, m)
        q_mp = _sl(q, -1, n, m)
        dq_nn, dq_pn = _sl(dq_mn, -2, 0, n), _sl(dq_mn, -2, n, m)
        c = _H(_el.sub(q_nn, _eye_like(q_nn)))
        z_pn_h = _solve(c, _H(q_pn))
        z_pn = _H(z_pn_h)
        dq_mp = _el.sub(_mm(dq_mn, z_pn_h),
                        _mm(_el.add(q_mn, _mm(q_mp, z_pn)),
                            _H(_el.sub(dq_pn, _mm(z_pn, dq_nn)))))
        dq = _so.concatenate([dq_mn, dq_mp], _nd(dq_mn) - 1)
        dr = _pad_axis(dr_nn, -2, 0, m - n)
        return outs, [dq, dr] + extra

    qr_p.jvp = qr_jvp

    # ---------------------------------------------------------------- eigh
    def eigh_jvp(primals: list, tangents: list, *, lower: bool, sort_eigenvalues: bool,
                 subset_by_index: Any, algorithm: Any) -> tuple:
        (a,), (da,) = primals, tangents
        n = _shape(a)[-1]
        lo, hi = subset_by_index if subset_by_index is not None else (0, n)
        v, w_real = eigh_p.bind(a, lower=lower, sort_eigenvalues=sort_eigenvalues,
                                subset_by_index=None, algorithm=algorithm)
        outs = [_sl(v, -1, lo, hi), _sl(w_real, -1, lo, hi)]
        if is_zero(da):
            return outs, [zero_of(o) for o in outs]
        dt = _aval(a).dtype
        w = _to(w_real, dt)
        eye = _eye_like(a)
        # F[i, j] = 1 / (w_j - w_i) off the diagonal, 0 on it.
        diff = _el.add(eye, _el.sub(_expand(w, -2), _expand(w, -1)))
        fmat = _el.sub(_el.integer_pow(diff, -1), eye)
        vh_da_v = _mm(_mm(_H(v), da), v)
        dv = _mm(v, _el.mul(fmat, vh_da_v))
        dw = _diag(_el.real(vh_da_v) if dt.kind == "c" else vh_da_v)
        return outs, [_sl(dv, -1, lo, hi), _sl(dw, -1, lo, hi)]

    eigh_p.jvp = eigh_jvp

    # ---------------------------------------------------------------- svd
    def svd_jvp(primals: list, tangents: list, *, full_matrices: bool, compute_uv: bool,
                subset_by_index: Any, algorithm: Any) -> tuple:
        (A,), (dA,) = primals, tangents
        m, n = _shape(A)[-2:]
        k = min(m, n)
        if compute_uv and full_matrices and m != n:
            raise NotImplementedError("lax.linalg.svd: the derivative of the singular vectors is "
                                      "not implemented for full_matrices=True with non-square "
                                      f"matrices (shape {_shape(A)}); use full_matrices=False")
        lo, hi = subset_by_index if subset_by_index is not None else (0, k)
        s, U, Vt = svd_p.bind(A, full_matrices=False, compute_uv=True, subset_by_index=None,
                              algorithm=algorithm)
        if compute_uv:
            outs = [_sl(s, -1, lo, hi), _sl(U, -1, lo, hi), _sl(Vt, -2, lo, hi)]
        else:
            outs = [_sl(s, -1, lo, hi)]
        if is_zero(dA):
            return outs, [zero_of(o) for o in outs]
        dt = _aval(A).dtype
        Ut, V = _H(U), _H(Vt)
        dS = _mm(_mm(Ut, dA), V)
        ds = _diag(_el.real(dS) if dt.kind == "c" else dS)
        if not compute_uv:
            return outs, [_sl(ds, -1, lo, hi)]
        s_row = _expand(s, -2)  # [..., 1, k]
        s_col = _T(s_row)  # [..., k, 1]
        eye_r = _eye_like(dS, dtype=_aval(s).dtype)
        s_diffs = _el.mul(_el.add(s_row, s_col), _el.sub(s_row, s_col))
        F = _to(_el.sub(_el.integer_pow(_el.add(s_diffs, eye_r), -1), eye_r), dt)
        s_row_c, s_col_c = _to(s_row, dt), _to(s_col, dt)
        dSS = _el.mul(s_row_c, dS)
        SdS = _el.mul(s_col_c, dS)
        s_zero = _to(_el.eq(s, _cv.full_like(s, 0)), _aval(s).dtype)
        s_inv = _el.sub(_el.integer_pow(_el.add(s, s_zero), -1), s_zero)
        half = _c(dS, 0.5)
        dUdV_diag = _el.mul(_el.mul(half, _el.sub(dS, _H(dS))), _to(_from_diag(s_inv), dt))
        dU = _mm(U, _el.add(_el.mul(F, _el.add(dSS, _H(dSS))), dUdV_diag))
        dV = _mm(V, _el.mul(F, _el.add(SdS, _H(SdS))))
        if m > n:
            dAV = _mm(dA, V)
            dU = _el.add(dU, _el.div(_el.sub(dAV, _mm(U, _mm(Ut, dAV))), s_row_c))
        if n > m:
            dAHU = _mm(_H(dA), U)
            dV = _el.add(dV, _el.div(_el.sub(dAHU, _mm(V, _mm(Vt, dAHU))), s_row_c))
        return outs, [_sl(ds, -1, lo, hi), _sl(dU, -1, lo, hi), _sl(_H(dV), -2, lo, hi)]

    svd_p.jvp = svd_jvp

    # ---------------------------------------------------------------- eig
    def eig_vec_jvp(w: Any, v: Any, da: Any) -> tuple:
        # Non-degenerate perturbation theory; geev normalizes each eigenvector to unit norm
        # with a real largest component, and the correction c keeps that normalization.
        eye = _eye_like(v)
        diff = _el.add(eye, _el.sub(_expand(w, -2), _expand(w, -1)))
        fmat = _el.sub(_el.integer_pow(diff, -1), eye)
        P = _mm(_solve(v, da), v)
        dw = _diag(P)
        U = _mm(v, _el.mul(fmat, P))
        nd = _nd(v)
        kidx = _rd.argmax(_el.abs(v), nd - 2, np.int32)  # [..., n]
        iota = _so.broadcasted_iota(np.int32, _shape(v), nd - 2)
        kb = _so.broadcast_in_dim(kidx, _shape(v), tuple(range(nd - 2)) + (nd - 1,))
        mask = _to(_el.eq(iota, kb), _aval(v).dtype)
        re = _el.neg(_rd.reduce_sum(_el.real(_el.mul(_el.conj(v), U)), (nd - 2,)))
        im = _el.neg(_el.div(_rd.reduce_sum(_el.imag(_el.mul(mask, U)), (nd - 2,)),
                             _rd.reduce_sum(_el.real(_el.mul(mask, v)), (nd - 2,))))
        c = _el.complex(re, im)
        return dw, _el.add(U, _el.mul(v, _expand(c, -2)))

    def eig_jvp(primals: list, tangents: list, *, compute_left_eigenvectors: bool,
                compute_right_eigenvectors: bool, enable_eigvec_derivs: bool,
                implementation: Any) -> tuple:
        (a,), (da,) = primals, tangents
        left, right = compute_left_eigenvectors, compute_right_eigenvectors
        if (left or right) and not enable_eigvec_derivs and not is_zero(da):
            raise NotImplementedError(
                "lax.linalg.eig: derivatives of eigenvectors are only valid for matrices with "
                "distinct eigenvalues, which Fluxion cannot check; pass "
                "enable_eigvec_derivs=True to opt in (or differentiate eigenvalues only, with "
                "compute_left_eigenvectors=False, compute_right_eigenvectors=False)")
        outs = eig_p.bind(a, compute_left_eigenvectors=left, compute_right_eigenvectors=True,
                          enable_eigvec_derivs=enable_eigvec_derivs,
                          implementation=implementation)
        w, vr = outs[0], outs[-1]
        primal = [w] + ([outs[1]] if left else []) + ([vr] if right else [])
        if is_zero(da):
            return primal, [zero_of(o) for o in primal]
        da = _to(da, _aval(vr).dtype)
        if not (left or right):
            dw = _rd.reduce_sum(_el.mul(_solve(vr, da), _T(vr)), (_nd(vr) - 1,))
            return primal, [dw]
        dw, dvr = eig_vec_jvp(w, vr, da)
        tans = [dw]
        if left:
            _, dvl = eig_vec_jvp(_el.conj(w), outs[1], _H(da))
            tans.append(dvl)
        if right:
            tans.append(dvr)
        return primal, tans

    eig_p.jvp = eig_jvp

    # ---------------------------------------------------------------- tridiagonal_solve
    def tridiagonal_product(dl: Any, d: Any, du: Any, b: Any) -> Any:
        m = _shape(b)[-2]
        y = _el.mul(_expand(d, -1), b)
        if m > 1:
            lo_ = _el.mul(_expand(_sl(dl, -1, 1, m), -1), _sl(b, -2, 0, m - 1))
            up_ = _el.mul(_expand(_sl(du, -1, 0, m - 1), -1), _sl(b, -2, 1, m))
            y = _el.add(y, _pad_axis(lo_, -2, 1, 0))
            y = _el.add(y, _pad_axis(up_, -2, 0, 1))
        return y

    def tds_jvp(primals: list, tangents: list, *, perturb_singular: bool) -> tuple:
        *diags, b = primals
        *ddiags, db = tangents
        ans = tridiagonal_solve_p.bind(*primals, perturb_singular=perturb_singular)
        if all(is_zero(t) for t in ddiags):
            rhs = db
        else:
            mv = tridiagonal_product(*[ad.instantiate(t) for t in ddiags], ans)
            rhs = _el.neg(mv) if is_zero(db) else _el.sub(db, mv)
        if is_zero(rhs):
            return ans, zero_of(ans)
        return ans, tridiagonal_solve_p.bind(*diags, rhs, perturb_singular=perturb_singular)

    def tds_transpose(ct: Any, dl: Any, d: Any, du: Any, b: Any, *,
                      perturb_singular: bool) -> list:
        if any(ad.is_undefined(v) for v in (dl, d, du)):
            raise NotImplementedError("lax.linalg.tridiagonal_solve is not linear in its "
                                      "diagonals")
        if is_zero(ct):
            return [None, None, None, None]
        m = _shape(d)[-1]
        # the transposed matrix: its sub-diagonal is du shifted down, its super-diagonal dl up
        dl_t = _pad_axis(_sl(du, -1, 0, m - 1), -1, 1, 0) if m > 0 else du
        du_t = _pad_axis(_sl(dl, -1, 1, m), -1, 0, 1) if m > 0 else dl
        ct_b = tridiagonal_solve_p.bind(dl_t, d, du_t, ct, perturb_singular=perturb_singular)
        return [None, None, None, ct_b]

    tridiagonal_solve_p.jvp = tds_jvp
    tridiagonal_solve_p.transpose = tds_transpose


_attach_ad_rules()

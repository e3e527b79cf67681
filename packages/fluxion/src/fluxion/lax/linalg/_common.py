"""Shared pieces of the ``fluxion.lax.linalg`` modules: operand checks, the matrix helpers the
rules are written with, the LAPACK custom-call lowering helpers and the batching rule that most
of the primitives use (they all batch over leading dimensions natively).

Example:
    >>> import numpy as np
    >>> from fluxion.lax.linalg._common import mT, tril
    >>> mT(tril(np.ones((2, 2), np.float32))).tolist()
    [[1.0, 1.0], [0.0, 1.0]]
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Sequence

import numpy as np

# The kernel seam: the only place in lax that imports the backend. A CPU lowering rule names a
# jaxlib kernel (``target_name``), checks its dtype (``LAPACK_DTYPES``) and, in ``ffi_call``,
# registers the kernels before its module is compiled; a CUDA rule may ask which cuSOLVER the
# CUDA plugin has (``cusolver_version``, as jax does for eig) (tests/test_layering.py, ALLOWED).
from fluxion.backend import lapack
from fluxion.backend import plugins as _plugins
from fluxion.backend.lapack import LAPACK_DTYPES
from fluxion.backend.lapack import target_name as target_name  # for the rules
from fluxion.core.avals import ShapedArray
from fluxion.core.config import config as _config
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax import convenience as _cv
from fluxion.lax import conversions as cv
from fluxion.lax import elementwise as _el
from fluxion.lax import padding as _pd
from fluxion.lax import reductions as _rd
from fluxion.lax import shape_ops as _so
from fluxion.lax._base import type_error, value_error
from fluxion.lax.dot import Precision as _Precision
from fluxion.lax.dot import batch_matmul as _batch_matmul
from fluxion.lax.sorting import _take_along
from fluxion.transforms import ad
from fluxion.transforms.ad import aval_of
from fluxion.transforms.staging import trace_to_program

# ================================================================== errors and input checks


class LinalgShapeError(TypeError, ValueError):
    """A bad operand shape for a linalg function (both a TypeError and a ValueError: JAX raises
    ValueError for shapes, and Fluxion's convention is TypeError)."""


def cusolver_version() -> int | None:
    """The CUDA plugin's cuSOLVER version (``backend.plugins.cusolver_version``), for the CUDA
    rules that choose a kernel by it, as jax's eig does.

    Example:
        >>> v = cusolver_version()
        >>> v is None or v > 10000
        True
    """
    return _plugins.cusolver_version()


def shape_error(fun: str, msg: str) -> LinalgShapeError:
    """A :class:`LinalgShapeError` for ``fun`` with message ``msg``."""
    return LinalgShapeError(str(value_error(fun, msg)))


INT32 = np.dtype(np.int32)


def as_operand(x: Any) -> Any:
    """A Python list or tuple as a NumPy array (the primitives take arrays); anything else as is."""
    if isinstance(x, (list, tuple)):
        return np.asarray(x)
    return x


def check_dtype(fun: str, a: ShapedArray, what: str = "operand",
                accepted: Sequence[np.dtype] = LAPACK_DTYPES) -> None:
    """TypeError unless ``a`` has one of the ``accepted`` dtypes."""
    if a.dtype not in accepted:
        names = ", ".join(d.name for d in accepted)
        raise type_error(fun, f"{what} must have a floating or complex dtype ({names}), got "
                         f"{a.dtype.name}{list(a.shape)}")


def check_matrix(fun: str, a: ShapedArray, *, square: bool = False, what: str = "operand",
                 accepted: Sequence[np.dtype] = LAPACK_DTYPES) -> None:
    """A shape error unless ``a`` is a (batch of, ``square``) matrices; then :func:`check_dtype`."""
    if a.ndim < 2:
        raise shape_error(fun, f"{what} must have rank at least 2 (a batch of matrices "
                          f"[..., m, n]), got shape {a.shape}")
    if square and a.shape[-1] != a.shape[-2]:
        raise shape_error(fun, f"{what} must be a (batch of) square matrix [..., n, n], got "
                          f"shape {a.shape}")
    check_dtype(fun, a, what, accepted)


def real_dtype(dt: np.dtype) -> np.dtype:
    """The real dtype of ``dt``'s precision (``dt`` itself when real)."""
    return np.dtype(np.float32) if dt == np.complex64 else (
        np.dtype(np.float64) if dt == np.complex128 else dt)


def complex_dtype(dt: np.dtype) -> np.dtype:
    """The complex dtype of ``dt``'s precision."""
    return np.dtype(np.complex64) if dt in (np.float32, np.complex64) else np.dtype(np.complex128)


def is_complex(x: Any) -> bool:
    """Whether ``x`` has a complex dtype."""
    return aval_of(x).dtype.kind == "c"


# ================================================================== lax-level helpers


def ndim_of(x: Any) -> int:
    """The rank of ``x``'s aval."""
    return aval_of(x).ndim


def shape_of(x: Any) -> tuple[int, ...]:
    """The shape of ``x``'s aval."""
    return aval_of(x).shape


def mT(x: Any) -> Any:
    """The transpose of the matrices [..., m, n] in ``x``."""
    nd = ndim_of(x)
    return _so.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def conj_if_complex(x: Any) -> Any:
    """The complex conjugate of ``x`` (``x`` itself when real)."""
    return _el.conj(x) if is_complex(x) else x


def mH(x: Any) -> Any:
    """The conjugate transpose of the matrices [..., m, n] in ``x``."""
    return conj_if_complex(mT(x))


def matmul(a: Any, b: Any) -> Any:
    """Batched matrix product ``a @ b`` at the highest precision."""
    return _batch_matmul(a, b, precision=_Precision.HIGHEST)


def scalar_like(x: Any, v: Any) -> np.ndarray:
    """A rank-0 constant ``v`` of ``x``'s dtype."""
    return np.asarray(v, dtype=aval_of(x).dtype)


def broadcast_matrix(m: np.ndarray, like: Any) -> Any:
    """A constant [m, n] matrix broadcast over the batch dimensions of ``like``."""
    shape = shape_of(like)
    nd = len(shape)
    return _so.broadcast_in_dim(m, shape[:-2] + m.shape, (nd - 2, nd - 1))


def _tri(x: Any, k: int = 0, lower: bool = True) -> Any:
    """``tril(x, k)`` (``lower``) or ``triu(x, k)`` over the last two dimensions."""
    m, n = shape_of(x)[-2:]
    mask = np.tri(m, n, k, dtype=bool) if lower else ~np.tri(m, n, k - 1, dtype=bool)
    return _el.select(broadcast_matrix(mask, x), x, _cv.full_like(x, 0))


def tril(x: Any, k: int = 0) -> Any:
    """The lower triangle (on and below diagonal ``k``) of the matrices in ``x``."""
    return _tri(x, k, True)


def triu(x: Any, k: int = 0) -> Any:
    """The upper triangle (on and above diagonal ``k``) of the matrices in ``x``."""
    return _tri(x, k, False)


def eye_like(x: Any, n: int | None = None, m: int | None = None, dtype: Any = None) -> Any:
    """Identity matrices [..., n, m] with the batch shape of ``x``."""
    shape = shape_of(x)
    n = shape[-1] if n is None else n
    m = n if m is None else m
    dt = aval_of(x).dtype if dtype is None else np.dtype(dtype)
    e = np.eye(n, m, dtype=dt)
    nd = len(shape)
    return _so.broadcast_in_dim(e, shape[:-2] + (n, m), (nd - 2, nd - 1))


def diagonal(x: Any) -> Any:
    """The diagonal [..., n] of square matrices [..., n, n]."""
    n = shape_of(x)[-1]
    masked = _el.select(broadcast_matrix(np.eye(n, dtype=bool), x), x, _cv.full_like(x, 0))
    return _rd.reduce_sum(masked, (ndim_of(x) - 1,))


def diagonal_matrix(d: Any) -> Any:
    """Diagonal matrices [..., n, n] from vectors [..., n]."""
    shape = shape_of(d)
    n = shape[-1]
    nd = len(shape)
    full = _so.broadcast_in_dim(d, shape + (n,), tuple(range(nd - 1)) + (nd,))
    mask = _so.broadcast_in_dim(np.eye(n, dtype=bool), shape + (n,), (nd - 1, nd))
    return _el.select(mask, full, _cv.full_like(full, 0))


def slice_axis(x: Any, axis: int, start: int, stop: int) -> Any:
    """``x`` sliced ``start:stop`` along ``axis`` (negative axes count from the end)."""
    shape = shape_of(x)
    axis = axis % len(shape)
    if start == 0 and stop == shape[axis]:
        return x
    starts = [0] * len(shape)
    limits = list(shape)
    starts[axis], limits[axis] = start, stop
    return _so.slice(x, starts, limits)


def pad_axis(x: Any, axis: int, lo: int, hi: int) -> Any:
    """``x`` with ``lo`` / ``hi`` zeros added before / after along ``axis``."""
    shape = shape_of(x)
    axis = axis % len(shape)
    if lo == 0 and hi == 0:
        return x
    cfg = [(0, 0, 0)] * len(shape)
    cfg[axis] = (lo, hi, 0)
    return _pd.pad(x, scalar_like(x, 0), cfg)


def cast(x: Any, dtype: np.dtype) -> Any:
    """``x`` converted to ``dtype`` (no operation when it already has it)."""
    return x if aval_of(x).dtype == dtype else cv.convert_element_type(x, dtype)


def expand_dim(x: Any, axis: int) -> Any:
    """``x`` with a size-1 dimension inserted at ``axis`` (negative: counted in the result)."""
    nd = ndim_of(x) + 1
    return _so.expand_dims(x, (axis % nd,))


def permute_rows(x: Any, perm: Any) -> Any:
    """``x[..., perm, :]`` for [..., m, n] ``x`` and [..., m] ``perm`` (a linear gather)."""
    shape = shape_of(x)
    nd = len(shape)
    idx = _so.broadcast_in_dim(perm, shape, tuple(range(nd - 1)))
    return _take_along(x, idx, nd - 2)


def permute_cols(x: Any, perm: Any) -> Any:
    """``x[..., :, perm]`` for [..., m, n] ``x`` and [..., n] ``perm``."""
    shape = shape_of(x)
    nd = len(shape)
    idx = _so.broadcast_in_dim(perm, shape, tuple(range(nd - 2)) + (nd - 1,))
    return _take_along(x, idx, nd - 1)


def nan_where_not(ok: Any, x: Any) -> Any:
    """``x`` where ``ok`` (a [batch] bool) holds, else NaN, broadcast over the trailing dims."""
    shape = shape_of(x)
    nb = ndim_of(ok)
    okb = _so.broadcast_in_dim(ok, shape, tuple(range(nb)))
    nan = np.array(np.nan + 1j * np.nan if is_complex(x) else np.nan).astype(aval_of(x).dtype)
    return _el.select(okb, x, _cv.full_like(x, nan))


def info_ok(info: Any, ge: bool = False) -> Any:
    """Where a LAPACK ``info`` result reports success (``info == 0``, or ``>= 0`` with ``ge``)."""
    zero = _cv.full_like(info, 0)
    return _el.ge(info, zero) if ge else _el.eq(info, zero)


# ================================================================== lowering helpers


def _layout(rank: int, col_major: bool) -> str:
    """The MLIR layout attribute of a rank-``rank`` operand (minor-to-major dimensions)."""
    if col_major and rank >= 2:
        dims = (rank - 2, rank - 1) + tuple(range(rank - 3, -1, -1))
    else:
        dims = tuple(range(rank - 1, -1, -1))
    if not dims:
        return "dense<> : tensor<0xindex>"
    return f"dense<[{', '.join(map(str, dims))}]> : tensor<{rank}xindex>"


def lapack_char(c: str) -> str:
    """A LAPACK character option (``uplo``, ``trans`` ...) as a ``ui8`` backend-config attribute."""
    return f"{ord(c)} : ui8"


def _emit_ffi(ctx: Any, target: str, operands: Sequence[str], in_avals: Sequence[ShapedArray],
              out_avals: Sequence[ShapedArray], config: dict[str, str] | None,
              aliases: dict[int, int] | None, column_major: bool, non_batch_dims: int | None,
              ) -> list[str]:
    """A ``stablehlo.custom_call`` of an XLA FFI target as jax's linalg lowerings emit it: the
    operands and results of the largest input rank in column-major layout (when
    ``column_major``), the rest row-major; the attributes in ``mhlo.backend_config``; the
    number of batch dimensions as a frontend attribute (none when ``non_batch_dims`` is None:
    jax's plain FFI lowering)."""
    in_avals = [a.update(weak_type=False) for a in in_avals]
    out_avals = [a.update(weak_type=False) for a in out_avals]
    maxr = max(a.ndim for a in in_avals)
    op_l = ", ".join(_layout(a.ndim, column_major and a.ndim == maxr) for a in in_avals)
    res_l = ", ".join(_layout(a.ndim, column_major and a.ndim == maxr) for a in out_avals)
    cfg = ", ".join(f"{k} = {v}" for k, v in sorted((config or {}).items()))
    attrs = [
        "api_version = 1 : i32", 'backend_config = ""', f'call_target_name = "{target}"',
        "has_side_effect = false", f"operand_layouts = [{op_l}]", f"result_layouts = [{res_l}]",
        f"mhlo.backend_config = {{{cfg}}}",
    ]
    if non_batch_dims is not None:
        attrs.append(f'mhlo.frontend_attributes = {{num_batch_dims = "{maxr - non_batch_dims}"}}')
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


def ffi_call(ctx: Any, op: str, target: str, operands: Sequence[str],
             in_avals: Sequence[ShapedArray], out_avals: Sequence[ShapedArray],
             config: dict[str, str] | None = None, aliases: dict[int, int] | None = None,
             ) -> list[str]:
    """Emit a ``stablehlo.custom_call`` of a jaxlib LAPACK FFI target: matrices (the operands and
    results of the largest rank) in column-major layout, the rest row-major."""
    lapack.check_platform(ctx.module.platform, op)
    lapack.ensure_lapack()
    return _emit_ffi(ctx, target, operands, in_avals, out_avals, config, aliases, True, 2)


# (key, input avals) -> (program, constants) of the post-processing code that `inline` emits.
_STAGED: dict[Any, tuple[Any, list[np.ndarray]]] = {}


def inline(ctx: Any, key: Any, fn: Callable[..., Any], args: Sequence[str],
           avals: Sequence[ShapedArray]) -> list[str]:
    """Emit ``fn`` (written with lax functions, staged once per ``key``) on SSA values ``args``."""
    avals = [a.update(weak_type=False) for a in avals]
    full_key = (key, tuple(avals))
    hit = _STAGED.get(full_key)
    if hit is None:
        def flat(*xs: Any) -> list:
            out = fn(*xs)
            return list(out) if isinstance(out, (list, tuple)) else [out]

        program, consts, _ = trace_to_program(flat, tuple(avals), {}, in_avals=list(avals))
        consts = [np.asarray(c) for c in consts]
        if len(_STAGED) >= 4096:  # one per (helper, types): stay bounded
            _STAGED.clear()
        hit = _STAGED[full_key] = (program, consts)
    program, consts = hit
    cargs = [ctx.constant(c, ShapedArray(c.shape, c.dtype)) for c in consts]
    return ctx.lower_program_inline(program, cargs + list(args))


def batch_info(aval: ShapedArray, nmat: int = 2) -> ShapedArray:
    """The aval of the int32 ``info`` result of a LAPACK call on ``aval`` (one per batch member)."""
    return ShapedArray(aval.shape[:-nmat] if nmat else aval.shape, np.int32)


# ================================================================== shared by several modules


def symmetrize(x: Any) -> Any:
    """``(x + x^H) / 2``: the Hermitian part of the matrices in ``x``."""
    return _el.div(_el.add(x, mH(x)), scalar_like(x, 2))


def check_subset(fun: str, subset: Any, n: int) -> tuple[int, int] | None:
    """``subset_by_index`` as a pair ``(start, end)`` with ``0 <= start <= end <= n``, or None."""
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


def front_batch_rule(prim: Primitive) -> Callable[..., Any]:
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


def zero_of(x: Any) -> ad.Zero:
    """The symbolic zero tangent of ``x``."""
    return ad.Zero(ad.tangent_aval(aval_of(x)))


def is_zero(t: Any) -> bool:
    """Whether tangent ``t`` is a symbolic zero."""
    return type(t) is ad.Zero


# ================================================================== TPU lowering helpers

_TPU_WIDE = (np.dtype(np.float64), np.dtype(np.complex128))


def check_tpu_dtypes(op: str, target: str, avals: Sequence[ShapedArray]) -> None:
    """Raise, before XLA sees the program, when a TPU linalg custom call would get 64-bit
    operands: XLA emulates float64 arithmetic on the TPU but not the TPU's linalg kernels."""
    for a in avals:
        if a.dtype in _TPU_WIDE:
            raise NotImplementedError(
                f"{op}: {a.dtype.name} operands ({a.str_short()}) are not supported on the TPU: "
                f"its {target} kernel is 32-bit only (XLA emulates float64 arithmetic there, but "
                "not custom calls). Use float32/complex64, or run this on the CPU.")


def tpu_call(ctx: Any, op: str, target: str, operands: Sequence[str],
             in_avals: Sequence[ShapedArray], out_avals: Sequence[ShapedArray],
             backend_config: str | None = None, api_version: int = 1) -> list[str]:
    """Emit a ``stablehlo.custom_call`` of one of the TPU's linalg targets (``LuDecomposition``,
    ``Qr``, ``ProductOfElementaryHouseholderReflectors``, ``Eigh``), as JAX emits them there;
    batch dimensions lead, in the default layouts."""
    in_avals = [a.update(weak_type=False) for a in in_avals]
    out_avals = [a.update(weak_type=False) for a in out_avals]
    check_tpu_dtypes(op, target, in_avals)
    attrs = [f"api_version = {api_version} : i32", f'call_target_name = "{target}"']
    if backend_config is not None:
        attrs.append(f'backend_config = "{backend_config}"')
    outs = ctx.op("stablehlo.custom_call", list(operands), result_avals=out_avals,
                  operand_avals=in_avals, attrs=", ".join(attrs))
    return [outs] if isinstance(outs, str) else list(outs)


# ================================================================== GPU (CUDA, ROCm) lowering

# The kernel-name prefix of each GPU platform, as jax 0.10.2 names the targets its CUDA and
# ROCm plugins register: ``cusolver_potrf_ffi`` / ``hipsolver_potrf_ffi``,
# ``cu_lu_pivots_to_permutation`` / ``hip_lu_pivots_to_permutation`` ...
GPU_PREFIX = {"cuda": "cu", "rocm": "hip"}


def gpu_prefix(ctx: Any) -> str:
    """``"cu"`` or ``"hip"``: the target-name prefix of the GPU platform ``ctx`` lowers for."""
    return GPU_PREFIX[ctx.platform]


def attr_bool(v: bool) -> str:
    """A boolean ``mhlo.backend_config`` attribute of a GPU linalg kernel."""
    return "true" if v else "false"


def attr_u8(v: int) -> str:
    """An unsigned 8-bit ``mhlo.backend_config`` attribute (an enum such as eigh's algorithm)."""
    return f"{int(v)} : ui8"


def attr_str(v: str) -> str:
    """A string ``mhlo.backend_config`` attribute (the hybrid kernels' ``magma`` switch)."""
    return f'"{v}"'


def gpu_call(ctx: Any, target: str, operands: Sequence[str], in_avals: Sequence[ShapedArray],
             out_avals: Sequence[ShapedArray], config: dict[str, str] | None = None,
             aliases: dict[int, int] | None = None, column_major: bool = True,
             non_batch_dims: int | None = 2) -> list[str]:
    """Emit a ``stablehlo.custom_call`` of one of the GPU plugins' linalg FFI targets
    (cuSOLVER, cuSPARSE, the hybrid and linalg kernels; ``target`` already prefixed), with the
    layouts, ``mhlo.backend_config`` and ``num_batch_dims`` jax 0.10.2 gives it. ``aliases``
    maps a result's index to the operand whose buffer it reuses (``{0: 3}``: result 0 is
    operand 3's buffer). ``column_major=False, non_batch_dims=None`` is jax's plain FFI call
    (default layouts, no batch attribute), as its ``cholesky_update`` and ``syrk`` use."""
    return _emit_ffi(ctx, target, operands, in_avals, out_avals, config, aliases, column_major,
                     non_batch_dims)


def magma_attr(flag: bool | None) -> str:
    """The ``magma`` attribute of a hybrid kernel: ``"on"`` / ``"off"`` as ``flag`` says, else
    the ``jax_use_magma`` flag (``"auto"`` by default), as jax reads it while lowering."""
    if flag is None:
        return attr_str(str(_config.read("jax_use_magma")))
    return attr_str("on" if flag else "off")

"""The rank-1 update of a Cholesky factor (``cholesky_update_p``): Givens rotations written in
lax everywhere, the CUDA plugin's kernel on CUDA (as jax 0.10.2).

Example:
    >>> import numpy as np
    >>> from fluxion.lax import linalg
    >>> r = linalg.cholesky_update(np.array([[2.0, 1.0], [0.0, 1.0]], np.float32),
    ...                            np.array([0.0, 0.0], np.float32))
    >>> r.tolist()
    [[2.0, 1.0], [0.0, 1.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import convenience as _cv
from fluxion.lax import elementwise as _el
from fluxion.lax import shape_ops as _so
from fluxion.lax import transcendental as _tr
from fluxion.lax.linalg._common import (
    as_operand,
    check_matrix,
    gpu_call,
    inline,
    shape_error,
    shape_of,
    slice_axis,
)

__all__ = ["cholesky_update", "cholesky_update_p"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))

# Unbatched and without derivative rules, as jax's primitive.
cholesky_update_p = Primitive("cholesky_update", materialized=True)


def _cholesky_update_abstract_eval(r: ShapedArray, w: ShapedArray) -> ShapedArray:
    fun = "lax.linalg.cholesky_update"
    check_matrix(fun, r, square=True, what="r_matrix", accepted=_FLOATS)
    n = r.shape[-1]
    if r.ndim != 2 or w.shape != (n,) or w.dtype != r.dtype:
        raise shape_error(fun, f"needs an [n, n] matrix and an [n] vector of one dtype (no "
                          f"batch dimensions), got {r.dtype.name}{list(r.shape)} and "
                          f"{w.dtype.name}{list(w.shape)}")
    return r.update(weak_type=False)


def _givens_update(r: Any, w: Any) -> Any:
    """R' with R'^T R' = R^T R + w w^T, by one Givens rotation per row: rotation k zeroes
    ``w[k]`` against ``R[k, k]`` (scaled by the larger magnitude, as BLAS ``rotg``)."""
    n = shape_of(r)[-1]
    z = _so.reshape(w, (1, n))
    rows = []
    for k in range(n):
        row = slice_axis(r, 0, k, k + 1)  # [1, n]
        x, y = slice_axis(row, 1, k, k + 1), slice_axis(z, 1, k, k + 1)  # [1, 1]
        scale = _el.max(_el.abs(x), _el.abs(y))
        xs, ys = _el.div(x, scale), _el.div(y, scale)
        inv = _tr.rsqrt(_el.add(_el.mul(xs, xs), _el.mul(ys, ys)))
        no_rotation = _el.eq(y, _cv.full_like(y, 0))
        c = _el.select(no_rotation, _cv.full_like(x, 1), _el.mul(xs, inv))
        s = _el.select(no_rotation, _cv.full_like(x, 0), _el.neg(_el.mul(ys, inv)))
        c, s = (_so.broadcast_in_dim(v, (1, n), (0, 1)) for v in (c, s))
        rows.append(_el.sub(_el.mul(c, row), _el.mul(s, z)))
        z = _el.add(_el.mul(c, z), _el.mul(s, row))
    return _so.concatenate(rows, 0)


def _cholesky_update_lowering(ctx: Any, r: str, w: str) -> str:
    return inline(ctx, "cholesky_update_givens", _givens_update, [r, w], ctx.avals_in)[0]


def _cholesky_update_lowering_cuda(ctx: Any, r: str, w: str) -> str:
    # the CUDA plugin's kernel, a plain FFI call updating both buffers in place (jax has it on
    # CUDA only: ROCm takes the rotations above)
    return gpu_call(ctx, "cu_cholesky_update_ffi", [r, w], ctx.avals_in, ctx.avals_in, {},
                    {0: 0, 1: 1}, column_major=False, non_batch_dims=None)[0]


cholesky_update_p.abstract_eval = _cholesky_update_abstract_eval
cholesky_update_p.lowering = _cholesky_update_lowering
cholesky_update_p.platform_lowerings["cuda"] = _cholesky_update_lowering_cuda


def cholesky_update(r_matrix: Any, w_vector: Any) -> Any:
    """The upper-triangular Cholesky factor of ``A + w w^T`` from that of ``A = R^T R``
    (``r_matrix`` [n, n], ``w_vector`` [n]; float32 or float64, no batch dimensions), in
    O(n^2) operations.

    Example:
        >>> import numpy as np
        >>> from fluxion.lax import linalg
        >>> r = linalg.cholesky_update(np.array([[1.0, 0.0], [0.0, 1.0]], np.float32),
        ...                            np.array([0.0, 1.0], np.float32))
        >>> [[round(v, 4) for v in row] for row in r.tolist()]
        [[1.0, 0.0], [0.0, 1.4142]]
    """
    r, w = as_operand(r_matrix), as_operand(w_vector)
    return cholesky_update_p.bind(r, w)

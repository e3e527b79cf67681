"""``lax.scaled_dot`` (JAX 0.10.2's): ``(lhs * lhs_scale) @ (rhs * rhs_scale)`` for block-scaled
operands (microscaling formats: float8 values with float8_e8m0fnu scales), a primitive.

Each scale has the operand's shape except along the contracting dimensions, where it is smaller
by a whole factor of at least 2 (one scale per block of that many values). The primitive lowers
as JAX's decomposition: the scales repeated over their blocks, operands and scales rounded to
bfloat16 and multiplied, then one ``dot_general`` accumulating in ``preferred_element_type``
(bfloat16 by default). JAX emits that decomposition inside a ``stablehlo.composite`` named
``xla.scaled_dot`` (which XLA may replace); Fluxion emits it inline, which computes the same. As
in JAX it has a batching rule and no derivative.

Example:
    >>> import numpy as np
    >>> from fluxion import lax
    >>> x = np.ones((2, 4), np.float32)
    >>> s = np.full((2, 2), 2.0, np.float32)
    >>> lax.scaled_dot(x, x.T, lhs_scale=s, rhs_scale=s.T).tolist()
    [[16.0, 16.0], [16.0, 16.0]]
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import conversions as cv
from fluxion.lax import elementwise as ew
from fluxion.lax.dot import dot_general
from fluxion.lax.shape_ops import broadcast_in_dim, reshape, transpose
from fluxion.transforms.staging import trace_to_program

__all__ = ["scaled_dot", "scaled_dot_p"]

scaled_dot_p = Primitive("scaled_dot")


def _check_scale(side: str, operand: Any, scale: Any, contracting: Sequence[int]) -> None:
    for i, size in enumerate(operand.shape):
        if i in contracting:
            if size % scale.shape[i] != 0:
                raise TypeError(f"{side} contracting dim {i} of size {size} must be divisible "
                                f"by its scale's dim size {scale.shape[i]}.")
            ratio = size // scale.shape[i]
            if ratio < 2:
                raise TypeError(f"The ratio of {side} contracting dim {i} to its scale's dim "
                                f"size ({ratio}) must be at least 2.")
        elif scale.shape[i] != size:
            raise TypeError(f"{side} dim {i} of size {size} does not match scale dim size "
                            f"{scale.shape[i]}.")


def _abstract_eval(lhs: ShapedArray, rhs: ShapedArray, lhs_scale: ShapedArray,
                   rhs_scale: ShapedArray, *, dimension_numbers: tuple,
                   preferred_element_type: Any) -> ShapedArray:
    (lc, rc), (lb, rb) = dimension_numbers
    ranks = [len(a.shape) for a in (lhs, rhs, lhs_scale, rhs_scale)]
    if max(ranks) != min(ranks):
        raise TypeError(f"All input tensors must have the same rank. Got lhs rank: {ranks[0]} rhs "
                        f"rank: {ranks[1]} lhs_scale rank: {ranks[2]} rhs_scale rank: "
                        f"{ranks[3]}.")
    if len(lb) != len(rb):
        raise TypeError("LHS and RHS must have the same number of batch dimensions, got "
                        f"{len(lb)} and {len(rb)}.")
    if len(lc) != len(rc):
        raise TypeError("LHS and RHS must have the same number of contracting dimensions, got "
                        f"{len(lc)} and {len(rc)}.")
    for i, j in zip(lb, rb):
        sizes = {lhs.shape[i], rhs.shape[j], lhs_scale.shape[i], rhs_scale.shape[j]}
        if len(sizes) != 1:
            raise TypeError("All input tensors must have the same batch dimension size for "
                            f"batch dims ({i}, {j}).")
    for i, j in zip(lc, rc):
        if lhs.shape[i] != rhs.shape[j]:
            raise TypeError(f"LHS contracting dim {i} of size {lhs.shape[i]} does not match RHS "
                            f"contracting dim {j} of size {rhs.shape[j]}.")
    _check_scale("LHS", lhs, lhs_scale, lc)
    _check_scale("RHS", rhs, rhs_scale, rc)
    lkept = [i for i in range(len(lhs.shape)) if i not in lc and i not in lb]
    rkept = [i for i in range(len(rhs.shape)) if i not in rc and i not in rb]
    shape = tuple([lhs.shape[i] for i in lb] + [lhs.shape[i] for i in lkept]
                  + [rhs.shape[i] for i in rkept])
    return ShapedArray(shape, np.dtype(preferred_element_type))


def _repeat_blocks(scale: Any, shape: tuple, contracting: Sequence[int]) -> Any:
    """``scale`` with each entry repeated over its block along the contracting dimensions."""
    for i in contracting:
        if scale.shape[i] != shape[i]:
            k = shape[i] // scale.shape[i]
            wide = scale.shape[:i + 1] + (k,) + scale.shape[i + 1:]
            dims = tuple(d for d in range(len(wide)) if d != i + 1)
            scale = broadcast_in_dim(scale, wide, dims)
            scale = reshape(scale, scale.shape[:i] + (wide[i] * k,) + wide[i + 2:])
    return scale


def _decomposition(lhs: Any, rhs: Any, lhs_scale: Any, rhs_scale: Any, *,
                   dimension_numbers: tuple, preferred_element_type: Any) -> Any:
    (lc, rc), _ = dimension_numbers
    bf16 = np.dtype(dtypes.bfloat16)

    def scaled(x: Any, s: Any, contracting: Sequence[int]) -> Any:
        s = cv.convert_element_type(_repeat_blocks(s, x.shape, contracting), bf16)
        return ew.mul(cv.convert_element_type(x, bf16), s)

    return dot_general(scaled(lhs, lhs_scale, lc), scaled(rhs, rhs_scale, rc),
                       dimension_numbers, preferred_element_type=preferred_element_type)


_PROGRAMS: dict[tuple, Any] = {}


def _lowering(ctx: Any, *args: str, dimension_numbers: tuple,
              preferred_element_type: Any) -> str:
    avals = tuple(ShapedArray(a.shape, a.dtype) for a in ctx.avals_in)
    key = (avals, dimension_numbers, np.dtype(preferred_element_type))
    program = _PROGRAMS.get(key)
    if program is None:
        program, consts, _ = trace_to_program(
            lambda *xs: _decomposition(*xs, dimension_numbers=dimension_numbers,
                                       preferred_element_type=preferred_element_type),
            avals, {}, in_avals=list(avals))
        assert not consts, consts
        if len(_PROGRAMS) >= 1024:  # one per operand types and parameters: stay bounded
            _PROGRAMS.clear()
        program = _PROGRAMS[key] = program
    return ctx.lower_program_inline(program, list(args))[0]


def _to_front(x: Any, d: Any, size: int) -> Any:
    if d is None:
        return broadcast_in_dim(x, (size,) + tuple(x.shape), tuple(range(1, len(x.shape) + 1)))
    if d == 0:
        return x
    perm = (d,) + tuple(i for i in range(len(x.shape)) if i != d)
    return transpose(x, perm)


def _batch(axis_data: Any, args: Sequence[Any], dims: Sequence[Any], *,
           dimension_numbers: tuple, preferred_element_type: Any) -> tuple:
    # As JAX: every operand's batch dimension to the front, a new leading batch dimension.
    size = next(x.shape[d] for x, d in zip(args, dims) if d is not None)
    xs = [_to_front(x, d, size) for x, d in zip(args, dims)]
    (lc, rc), (lb, rb) = dimension_numbers

    def up(ds: Sequence[int]) -> tuple:
        return tuple(d + 1 for d in ds)

    dn = ((up(lc), up(rc)), ((0,) + up(lb), (0,) + up(rb)))
    return scaled_dot_p.bind(*xs, dimension_numbers=dn,
                             preferred_element_type=preferred_element_type), 0


scaled_dot_p.abstract_eval = _abstract_eval
scaled_dot_p.lowering = _lowering
scaled_dot_p.batch = _batch


def _unit_scale(operand: Any, contracting: Sequence[int]) -> Any:
    shape = tuple(1 if i in contracting else n for i, n in enumerate(operand.shape))
    ones = broadcast_in_dim(np.ones((), dtypes.bfloat16), shape, ())
    return cv.convert_element_type(ones, np.dtype(dtypes.float8_e8m0fnu))


def scaled_dot(lhs: Any, rhs: Any, *, lhs_scale: Any = None, rhs_scale: Any = None,
               dimension_numbers: Any = None, preferred_element_type: Any = None) -> Any:
    """``(lhs * lhs_scale) @ (rhs * rhs_scale)`` as ``dot_general`` with ``dimension_numbers``
    (default: the last dimension of ``lhs`` with the one before the last of ``rhs``, the leading
    ones batched), accumulated in ``preferred_element_type`` (bfloat16 by default). A scale
    matches its operand except along the contracting dimensions, which it divides by a whole
    factor of 2 or more; a missing scale is all ones. Not differentiable (as JAX).

    Example:
        >>> import numpy as np
        >>> x = np.arange(8, dtype=np.float32).reshape(2, 4)
        >>> scaled_dot(x, np.ones((4, 3), np.float32), preferred_element_type=np.float32).tolist()
        [[6.0, 6.0, 6.0], [22.0, 22.0, 22.0]]
    """
    if dimension_numbers is None:
        n = lhs.ndim
        if n in (0, 1):
            raise TypeError("scaled_dot does not support 0-rank and 1-rank operands.")
        dimension_numbers = (((n - 1,), (n - 2,)), (tuple(range(n - 2)), tuple(range(n - 2))))
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(int(i) for i in lc), tuple(int(i) for i in rc)),
          (tuple(int(i) for i in lb), tuple(int(i) for i in rb)))
    if lhs_scale is None:
        lhs_scale = _unit_scale(lhs, dn[0][0])
    if rhs_scale is None:
        rhs_scale = _unit_scale(rhs, dn[0][1])
    out = dtypes.canonicalize_dtype(np.dtype(dtypes.bfloat16 if preferred_element_type is None
                                             else preferred_element_type))
    return scaled_dot_p.bind(lhs, rhs, lhs_scale, rhs_scale, dimension_numbers=dn,
                             preferred_element_type=out)

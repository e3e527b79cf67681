"""dot_general: contractions with batch dimensions, and its convenience forms.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.dot(jnp.ones((2, 3)), jnp.ones(3)).tolist()
    [3.0, 3.0]
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax._base import type_error

dot_general_p = Primitive("dot_general")

DotDimensionNumbers = tuple  # ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))


class Precision:
    """Matmul precision names, as in JAX (``DEFAULT``, ``HIGH``, ``HIGHEST``)."""
    DEFAULT = "DEFAULT"
    HIGH = "HIGH"
    HIGHEST = "HIGHEST"


def _canon_dims(dimension_numbers: Any) -> tuple:
    (lc, rc), (lb, rb) = dimension_numbers
    return ((tuple(int(i) for i in lc), tuple(int(i) for i in rc)),
            (tuple(int(i) for i in lb), tuple(int(i) for i in rb)))


def _dot_general_abstract_eval(lhs: ShapedArray, rhs: ShapedArray, *, dimension_numbers: tuple,
                               precision: Any, preferred_element_type: Any) -> ShapedArray:
    (lc, rc), (lb, rb) = dimension_numbers
    name = "lax.dot_general"
    for dims, aval, what in ((lc, lhs, "lhs contracting"), (rc, rhs, "rhs contracting"),
                             (lb, lhs, "lhs batch"), (rb, rhs, "rhs batch")):
        if any(not 0 <= d < aval.ndim for d in dims) or len(set(dims)) != len(dims):
            raise type_error(name, f"{what} dimensions {dims} are invalid for shape {aval.shape}")
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise type_error(name, f"contracting {lc} vs {rc} / batch {lb} vs {rb} dimensions must pair up")
    if set(lc) & set(lb) or set(rc) & set(rb):
        raise type_error(name, "a dimension cannot be both batch and contracting")
    for a, b in zip(lb, rb):
        if lhs.shape[a] != rhs.shape[b]:
            raise type_error(name, f"batch dimensions must agree: lhs {lhs.shape} dim {a} vs rhs "
                             f"{rhs.shape} dim {b}")
    for a, b in zip(lc, rc):
        if lhs.shape[a] != rhs.shape[b]:
            raise type_error(name, f"contracting dimensions must agree: got lhs shape {lhs.shape} "
                             f"(dim {a}) and rhs shape {rhs.shape} (dim {b})")
    if lhs.dtype != rhs.dtype and preferred_element_type is None:
        raise type_error(name, f"requires operands of the same dtype, got {lhs.dtype.name} and "
                         f"{rhs.dtype.name}")
    shape = (tuple(lhs.shape[d] for d in lb)
             + tuple(s for i, s in enumerate(lhs.shape) if i not in lc and i not in lb)
             + tuple(s for i, s in enumerate(rhs.shape) if i not in rc and i not in rb))
    out_dtype = lhs.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
    weak = lhs.weak_type and rhs.weak_type and preferred_element_type is None
    return ShapedArray(shape, out_dtype, weak)


def _list(xs: Sequence[int]) -> str:
    return "[" + ", ".join(str(x) for x in xs) + "]"


def _dot_general_lowering(ctx: Any, lhs: str, rhs: str, *, dimension_numbers: tuple, precision: Any,
                          preferred_element_type: Any) -> str:
    (lc, rc), (lb, rb) = dimension_numbers
    la, ra = ctx.avals_in
    out = ctx.avals_out[0]
    if la.dtype != out.dtype:
        la2 = la.update(dtype=out.dtype)
        lhs = ctx.op1("stablehlo.convert", [lhs], la2, [la])
        la = la2
    if ra.dtype != out.dtype:
        ra2 = ra.update(dtype=out.dtype)
        rhs = ctx.op1("stablehlo.convert", [rhs], ra2, [ra])
        ra = ra2
    attrs = (f"dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = {_list(lb)}, "
             f"rhs_batching_dimensions = {_list(rb)}, lhs_contracting_dimensions = {_list(lc)}, "
             f"rhs_contracting_dimensions = {_list(rc)}>")
    if precision is not None:
        p = precision if isinstance(precision, tuple) else (precision, precision)
        attrs += (f", precision_config = [#stablehlo<precision {p[0]}>, "
                  f"#stablehlo<precision {p[1]}>]")
    return ctx.op("stablehlo.dot_general", [lhs, rhs], operand_avals=[la, ra], attrs=attrs)


dot_general_p.abstract_eval = _dot_general_abstract_eval
dot_general_p.lowering = _dot_general_lowering


def _canon_precision(precision: Any) -> Any:
    if precision is None:
        return None
    if isinstance(precision, (tuple, list)):
        return tuple(_canon_precision(p) for p in precision)
    name = str(precision).upper().split(".")[-1]
    aliases = {"BFLOAT16": "DEFAULT", "FASTEST": "DEFAULT", "TENSORFLOAT32": "HIGH",
               "FLOAT32": "HIGHEST", "BF16_BF16_F32": "DEFAULT", "F32_F32_F32": "HIGHEST"}
    name = aliases.get(name, name)
    if name not in ("DEFAULT", "HIGH", "HIGHEST"):
        raise ValueError(f"dot_general: unknown precision {precision!r}")
    return name


def dot_general(lhs: Any, rhs: Any, dimension_numbers: Any, precision: Any = None,
                preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """General tensor contraction.

    ``dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``. The
    result's dimensions are the batch dimensions, then lhs's free ones, then rhs's free ones.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.dot_general(jnp.ones((4, 2, 3)), jnp.ones((4, 3, 5)), (((2,), (1,)), ((0,), (0,)))).shape
        (4, 2, 5)
    """
    pet = None if preferred_element_type is None else dtypes.canonicalize_dtype(
        dtypes.dtype(preferred_element_type))
    return dot_general_p.bind(lhs, rhs, dimension_numbers=_canon_dims(dimension_numbers),
                              precision=_canon_precision(precision), preferred_element_type=pet)


def dot(lhs: Any, rhs: Any, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Vector/matrix products: vector·vector, matrix·vector, matrix·matrix."""
    ln, rn = np.ndim(lhs) if not hasattr(lhs, "ndim") else lhs.ndim, (
        np.ndim(rhs) if not hasattr(rhs, "ndim") else rhs.ndim)
    if not (1 <= ln <= 2 and 1 <= rn <= 2):
        raise type_error("lax.dot", f"takes 1-D or 2-D operands, got ranks {ln} and {rn}")
    return dot_general(lhs, rhs, (((ln - 1,), (0,)), ((), ())), precision, preferred_element_type)


def batch_matmul(lhs: Any, rhs: Any, precision: Any = None) -> Any:
    """Batched matrix product over leading dimensions (``[..., m, k] @ [..., k, n]``)."""
    if lhs.ndim < 2 or lhs.ndim != rhs.ndim:
        raise type_error("lax.batch_matmul", f"needs operands of equal rank >= 2, got {lhs.shape}, "
                         f"{rhs.shape}")
    b = tuple(range(lhs.ndim - 2))
    return dot_general(lhs, rhs, (((lhs.ndim - 1,), (rhs.ndim - 2,)), (b, b)), precision)


# ------------------------------------------------------------------ batching rule (vmap)

def _dot_general_batch(args: Any, dims: Any, *, dimension_numbers: tuple, precision: Any,
                       preferred_element_type: Any) -> Any:
    """One dot_general for the batch: both operands mapped -> a new leading batch dimension;
    one operand mapped -> its batch dimension stays a free dimension of that operand."""
    lhs, rhs = args
    ld, rd = dims
    (lc, rc), (lb, rb) = dimension_numbers

    def shift(ds: Sequence[int], d: Any) -> tuple[int, ...]:
        return tuple(ds) if d is None else tuple(a if a < d else a + 1 for a in ds)

    lc2, lb2, rc2, rb2 = shift(lc, ld), shift(lb, ld), shift(rc, rd), shift(rb, rd)
    if ld is not None and rd is not None:
        dn = ((lc2, rc2), ((ld,) + lb2, (rd,) + rb2))
        out_dim = 0
    elif ld is not None:
        dn = ((lc2, rc2), (lb2, rb2))
        free_before = sum(1 for i in range(ld) if i not in lc2 and i not in lb2)
        out_dim = len(lb) + free_before
    else:
        dn = ((lc2, rc2), (lb2, rb2))
        lhs_nd = len(np.shape(lhs)) if not hasattr(lhs, "shape") else len(lhs.shape)
        lhs_free = lhs_nd - len(lc) - len(lb)
        free_before = sum(1 for i in range(rd) if i not in rc2 and i not in rb2)
        out_dim = len(lb) + lhs_free + free_before
    out = dot_general_p.bind(lhs, rhs, dimension_numbers=dn, precision=precision,
                             preferred_element_type=preferred_element_type)
    return out, out_dim


dot_general_p.batch = _dot_general_batch

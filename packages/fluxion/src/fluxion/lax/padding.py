"""Padding: the ``pad`` primitive (low, high and interior padding, negative edges crop) and
``padtype_to_pads``, which turns ``'SAME'``/``'VALID'`` into explicit ``(low, high)`` pairs.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.pad(jnp.array([1, 2]), 0, [(1, 0, 1)]).tolist()
    [0, 1, 0, 2]
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax import sharding_rules as _sh
from fluxion.lax._base import attr_i64_array, type_error, value_error
from fluxion.lax.elementwise import select_n_p, sub
from fluxion.lax.shape_ops import slice as lax_slice
from fluxion.transforms import ad
from fluxion.transforms import jet as _jet

__all__ = ["pad", "pad_p", "padtype_to_pads"]

pad_p = Primitive("pad")
pad_p.sharding = _sh.varying_shape_rule("padding")


def _pad_abstract_eval(x: ShapedArray, padding_value: ShapedArray, *,
                       padding_config: tuple[tuple[int, int, int], ...]) -> ShapedArray:
    if padding_value.shape:
        raise type_error("lax.pad", f"padding_value must be a scalar, got shape {padding_value.shape}")
    if padding_value.dtype != x.dtype:
        raise type_error("lax.pad", f"padding_value dtype {padding_value.dtype.name} must equal the "
                         f"operand dtype {x.dtype.name}")
    if len(padding_config) != x.ndim:
        raise value_error("lax.pad", f"padding_config {padding_config} must have one (low, high, "
                          f"interior) triple per operand dimension; operand shape {x.shape}")
    shape = []
    for d, (lo, hi, interior) in zip(x.shape, padding_config):
        if interior < 0:
            raise value_error("lax.pad", f"interior padding must be nonnegative, got padding_config "
                              f"{padding_config}")
        size = lo + hi + d + max(d - 1, 0) * interior
        if size < 0:
            raise value_error("lax.pad", f"padding_config {padding_config} gives a negative "
                              f"dimension size for operand shape {x.shape}")
        shape.append(size)
    return ShapedArray(tuple(shape), x.dtype, x.weak_type and padding_value.weak_type)


def _pad_lowering(ctx: Any, x: str, padding_value: str, *,
                  padding_config: tuple[tuple[int, int, int], ...]) -> str:
    lo = [c[0] for c in padding_config]
    hi = [c[1] for c in padding_config]
    interior = [c[2] for c in padding_config]
    return ctx.op("stablehlo.pad", [x, padding_value],
                  attrs=f"edge_padding_high = {attr_i64_array(hi)}, "
                        f"edge_padding_low = {attr_i64_array(lo)}, "
                        f"interior_padding = {attr_i64_array(interior)}")


pad_p.abstract_eval = _pad_abstract_eval
pad_p.lowering = _pad_lowering


def _pad_jvp(primals: list, tangents: list, *, padding_config: tuple) -> tuple:
    x, v = primals
    tx, tv = tangents
    out = pad_p.bind(x, v, padding_config=padding_config)
    if type(tx) is ad.Zero and type(tv) is ad.Zero:
        return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
    return out, pad_p.bind(ad.instantiate(tx), ad.instantiate(tv), padding_config=padding_config)


def _pad_transpose(ct: Any, x: Any, v: Any, *, padding_config: tuple) -> list:
    ca = _rules.aval_of(ct)
    # Undo the negative (cropping) edges by padding with zeros, then slice out the operand.
    zero = _rules.const_like(ct, 0)
    unpad_cfg = [(max(-lo, 0), max(-hi, 0), 0) for lo, hi, _ in padding_config]
    full = pad(ct, zero, unpad_cfg) if any(a or b for a, b, _ in unpad_cfg) else ct
    fa = _rules.aval_of(full)
    starts = [max(lo, 0) for lo, _, _ in padding_config]
    limits = [fa.shape[i] - max(hi, 0) for i, (_, hi, _) in enumerate(padding_config)]
    strides = [it + 1 for _, _, it in padding_config]
    tx = lax_slice(full, starts, limits, strides) if ad.is_undefined(x) else None
    tv = None
    if ad.is_undefined(v):
        total = _rules.ops().reduce_sum(ct, tuple(range(len(ca.shape))))
        inner = _rules.ops().reduce_sum(tx if tx is not None else lax_slice(full, starts, limits, strides),
                           tuple(range(len(ca.shape))))
        tv = sub(total, inner)
    return [tx, tv]


def _pad_batch(axis_data: Any, args: Any, dims: Any, *, padding_config: tuple) -> Any:
    if dims[1] is not None:  # a mapped padding value: one pad per member
        return _rules.loop_batch_rule(pad_p)(axis_data, args, dims, padding_config=padding_config)
    d = dims[0]
    config = list(padding_config)
    config.insert(d, (0, 0, 0))
    return pad_p.bind(args[0], args[1], padding_config=tuple(config)), d


pad_p.jvp = _pad_jvp
pad_p.transpose = _pad_transpose
pad_p.batch = _pad_batch


def _pad_extended(x: Any, padding_value: Any, *, padding_config: tuple) -> Any:
    like, (data, value) = _rules.extended_operands(pad_p, (x, padding_value), (0, 1),
                                                   dict(padding_config=padding_config))
    elem = like._element_shape
    n = len(elem)
    full = padding_config + ((0, 0, 0),) * n
    padded = pad_p.bind(data, np.zeros((), data.dtype), padding_config=full)
    shape = tuple(padded.shape)
    # where the pad put new elements, each of their words is the padding key's word
    inside = pad_p.bind(_rules.ops().broadcast_in_dim(np.bool_(True), tuple(x.shape), ()),
                        np.bool_(False), padding_config=padding_config)
    inside = _rules.ops().broadcast_in_dim(inside, shape, tuple(range(len(shape) - n)))
    fill = _rules.ops().broadcast_in_dim(value, shape, tuple(range(len(shape) - n, len(shape))))
    return like._with_data(select_n_p.bind(inside, fill, padded))


pad_p.extended = _pad_extended
pad_p.jet = _jet.linear_prop(pad_p)


def pad(operand: Any, padding_value: Any, padding_config: Sequence[tuple[int, int, int]]) -> Any:
    """Pad ``operand`` with the scalar ``padding_value``.

    ``padding_config`` has one ``(low, high, interior)`` triple per dimension: ``low``/``high``
    elements go before/after (negative values crop), ``interior`` between neighbours.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.pad(jnp.arange(4.0), -1.0, [(-1, 2, 0)]).tolist()
        [1.0, 2.0, 3.0, -1.0, -1.0]
    """
    try:
        config = tuple((operator.index(lo), operator.index(hi), operator.index(i))
                       for lo, hi, i in padding_config)
    except (TypeError, ValueError):
        raise value_error("lax.pad", "padding_config must be a sequence of (low, high, interior) "
                          f"integer triples, got {padding_config!r}") from None
    return pad_p.bind(operand, padding_value, padding_config=config)


def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int],
                    window_strides: Sequence[int], padding: Any) -> list[tuple[int, int]]:
    """Explicit ``(low, high)`` pads for a padding name over spatial dimensions.

    ``'VALID'`` pads nothing; ``'SAME'`` pads so the output size is ``ceil(in / stride)``
    (an odd total puts the extra element at the end); ``'SAME_LOWER'`` puts it at the start.

    Example:
        >>> from fluxion import lax
        >>> lax.padtype_to_pads((5,), (3,), (2,), "SAME")
        [(1, 1)]
    """
    name = getattr(padding, "name", padding)
    if not isinstance(name, str):
        raise TypeError(f"padtype_to_pads: padding must be a string, got {padding!r}")
    name = name.upper()
    if name == "VALID":
        return [(0, 0)] * len(in_shape)
    if name not in ("SAME", "SAME_LOWER"):
        raise RuntimeError(f"padtype_to_pads: unrecognized padding type {padding!r}; expected "
                           "'VALID', 'SAME' or 'SAME_LOWER'")
    pads = []
    for n, w, s in zip(in_shape, window_shape, window_strides):
        out = -(-int(n) // int(s))
        total = max((out - 1) * int(s) + int(w) - int(n), 0)
        small = total // 2
        pads.append((small, total - small) if name == "SAME" else (total - small, small))
    return pads


# The windowed ops' (lax.windowed) and the convolutions' (lax.convolution) shared helpers live
# here, in a module ``import fluxion`` loads: a program's first convolution then does not load
# the windowed family (~0.35 ms) unless it also pools.
def padding_attr(padding: Sequence[tuple[int, int]]) -> str:
    """``dense<[[lo, hi], ...]> : tensor<Nx2xi64>`` for a list of (low, high) pairs.

    Example:
        >>> padding_attr([(1, 0), (2, 2)])
        'dense<[[1, 0], [2, 2]]> : tensor<2x2xi64>'
    """
    if not padding:
        return "dense<> : tensor<0x2xi64>"
    rows = ", ".join(f"[{int(lo)}, {int(hi)}]" for lo, hi in padding)
    return f"dense<[{rows}]> : tensor<{len(padding)}x2xi64>"


def window_transpose_padding(in_shape: Sequence[int], window_dimensions: Sequence[int],
                             window_strides: Sequence[int], out_shape: Sequence[int],
                             padding: Sequence[tuple[int, int]], base_dilation: Sequence[int],
                             window_dilation: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """Padding of the (stride-dilated) cotangent of a windowed op so that a stride-``base``
    window pass over it lands on the ``in_shape`` input: the adjoint of a strided window.

    Example:
        >>> # a width-3, stride-2 window over 5 elements gives 2; its cotangent (dilated to 3)
        >>> window_transpose_padding((5,), (3,), (2,), (2,), [(0, 0)], (1,), (1,))
        ((2, 2),)
    """
    pads = []
    for n, w, s, m, (lo, _), bd, wd in zip(in_shape, window_dimensions, window_strides,
                                           out_shape, padding, base_dilation, window_dilation):
        n_dil = _dil(n, bd)
        k_eff = _dil(w, wd)
        m_dil = _dil(m, s)
        before = k_eff - 1 - lo
        after = n_dil + k_eff - 1 - m_dil - before
        pads.append((before, after))
    return tuple(pads)


def _dil(n: int, d: int) -> int:
    return 0 if n == 0 else (n - 1) * d + 1

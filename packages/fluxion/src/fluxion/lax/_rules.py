"""Rule builders and helpers shared by many primitives' autodiff and batching rules.

Each lax module defines a primitive and, on the lines right after it, its rules; the rules of
most primitives follow a few patterns, built here:

- ``defjvp(prim, *fns)`` / ``defjvp2``: a JVP from one derivative contribution per input;
  ``defjvp_zero`` for outputs with a zero derivative; ``deflinear`` for linear primitives;
- ``unary_batch_rule`` / ``elementwise_batch_rule`` / ``axis_param_batch_rule`` /
  ``per_dim_param_batch_rule`` / ``loop_batch_rule``: batching rules;
- ``unbroadcast``, ``broadcast_to_aval``, ``const_like``, ``moveaxis``, ``bdim_to_front``, ...:
  the array manipulations those rules need;
- ``extended_operands``: the shared part of the structural primitives' ``extended`` rules
  (operands of an extended dtype, such as key arrays, checked and taken to their physical data).

These helpers call lax operations defined in the family modules that import this module:
``fluxion.lax`` hands them over once its families are imported (:func:`install_ops`), and the
helpers (and a few transposes of those families) reach them through :func:`ops`.

Example:
    >>> import fluxion
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> unbroadcast(jnp.ones((2, 3)), lax.full((1, 3), 0.0).aval).shape
    (1, 3)
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable, Sequence

from fluxion.core.avals import ShapedArray
from fluxion.core.trace import ExtendedArray
from fluxion.transforms.ad import Zero, add_any, aval_of, is_float, tangent_aval
from fluxion.transforms.array_ops import (
    bdim_to_front,
    broadcast_batch,
    matchaxis,
    moveaxis,
    shape_of,
)

__all__ = [
    "defjvp", "defjvp2", "defjvp_zero", "deflinear", "broadcast_to_aval", "unbroadcast",
    "const_like", "aval_of", "is_float", "shape_of", "moveaxis", "broadcast_batch", "matchaxis",
    "bdim_to_front", "batch_size", "unary_batch_rule", "elementwise_batch_rule",
    "loop_batch_rule", "axis_param_batch_rule", "per_dim_param_batch_rule", "install_ops",
    "ops", "extended_operands",
]

_OPS = SimpleNamespace()


def install_ops(**lax_ops: Any) -> None:
    """Called once by ``fluxion/lax/__init__.py``: the lax operations the helpers use."""
    _OPS.__dict__.update(lax_ops)


def ops() -> SimpleNamespace:
    """The lax operations installed by ``fluxion.lax`` (``reduce_sum``, ``pad``, ``reshape``,
    ``broadcast_in_dim``, ``convert_element_type`` and a few primitives)."""
    return _OPS


# ----------------------------------------------------------------------------- JVP builders

def _sum_contributions(jvp_fns: Sequence[Callable[..., Any] | None], tangents: list,
                       out: Any, args: tuple, params: dict) -> Any:
    oa = aval_of(out)
    acc = None
    for fn, t in zip(jvp_fns, tangents):
        if fn is None or type(t) is Zero:
            continue
        c = broadcast_to_aval(fn(t, *args, **params), oa)
        acc = c if acc is None else add_any(acc, c)
    return acc


def defjvp(prim: Any, *jvp_fns: Callable[..., Any] | None) -> None:
    """Set ``prim.jvp`` from one function per input, ``fn(g, *primals, **params)`` giving that
    input's contribution to the output tangent (``None``: the input is not differentiable)."""
    def rule(primals: list, tangents: list, **params: Any) -> tuple:
        out = prim.bind(*primals, **params)
        acc = _sum_contributions(jvp_fns, tangents, out, tuple(primals), params)
        oa = aval_of(out)
        if acc is None or not is_float(oa.dtype):
            return out, Zero(tangent_aval(oa))
        return out, acc
    prim.jvp = rule


def defjvp2(prim: Any, *jvp_fns: Callable[..., Any] | None) -> None:
    """Like :func:`defjvp` but each function is ``fn(g, ans, *primals, **params)``."""
    def rule(primals: list, tangents: list, **params: Any) -> tuple:
        out = prim.bind(*primals, **params)
        acc = _sum_contributions(jvp_fns, tangents, out, (out, *primals), params)
        if acc is None:
            return out, Zero(tangent_aval(aval_of(out)))
        return out, acc
    prim.jvp = rule


def defjvp_zero(prim: Any) -> None:
    """The output of ``prim`` has a zero derivative (comparisons, rounding, integer results)."""
    def rule(primals: list, tangents: list, **params: Any) -> tuple:
        out = prim.bind(*primals, **params)
        if prim.multiple_results:
            return out, [Zero(tangent_aval(aval_of(o))) for o in out]
        return out, Zero(tangent_aval(aval_of(out)))
    prim.jvp = rule


def deflinear(prim: Any, transpose: Callable[..., Any]) -> None:
    """A primitive linear in its (single array) first input: its JVP applies it to the tangent;
    ``transpose(ct, *args, **params)`` returns the input cotangents."""
    def rule(primals: list, tangents: list, **params: Any) -> tuple:
        out = prim.bind(*primals, **params)
        t = tangents[0]
        if type(t) is Zero:
            return out, Zero(tangent_aval(aval_of(out)))
        return out, prim.bind(t, *primals[1:], **params)
    prim.jvp = rule
    prim.transpose = transpose


# ----------------------------------------------------------------------------- AD array helpers

def broadcast_to_aval(x: Any, aval: ShapedArray) -> Any:
    """``x`` broadcast (rank-0 or size-1 dimensions) to ``aval.shape``."""
    xa = aval_of(x)
    if xa.shape == aval.shape:
        return x
    dims = () if not xa.shape else tuple(range(len(aval.shape)))
    return ops().broadcast_in_dim(x, aval.shape, dims)


def unbroadcast(ct: Any, aval: ShapedArray) -> Any:
    """Sum ``ct`` over the dimensions along which an operand of ``aval`` was broadcast by an
    elementwise primitive (rank 0 -> every dimension; size-1 dimensions)."""
    ca = aval_of(ct)
    if ca.shape == aval.shape:
        return ct
    lax = ops()
    if not aval.shape:
        return lax.reduce_sum(ct, tuple(range(len(ca.shape))))
    axes = tuple(i for i, (a, c) in enumerate(zip(aval.shape, ca.shape)) if a == 1 and c != 1)
    return lax.reshape(lax.reduce_sum(ct, axes), aval.shape)


def const_like(x: Any, value: Any) -> Any:
    """A weakly typed scalar constant ``value`` of ``x``'s dtype (a literal when staged)."""
    return ops().convert_element_type(value, aval_of(x).dtype, weak_type=True)


# ----------------------------------------------------------------------------- batching rules

def batch_size(args: Sequence[Any], dims: Sequence[Any]) -> int:
    """The size of the batch dimension of the first mapped argument."""
    for x, d in zip(args, dims):
        if d is not None:
            return shape_of(x)[d]
    raise ValueError("batch_size: no mapped argument")


def unary_batch_rule(prim: Any) -> Callable[..., Any]:
    """The rule of a shape-preserving one-operand primitive: apply it, keep the batch dim."""

    def rule(axis_data: Any, args: Sequence[Any], dims: Sequence[Any], **params: Any) -> tuple:
        return prim.bind(args[0], **params), dims[0]

    return rule


def elementwise_batch_rule(prim: Any) -> Callable[..., Any]:
    """The rule of an n-ary elementwise primitive (same-rank operands, rank 0 broadcasts).

    When every mapped operand has the same rank and batch dim and the unmapped ones are rank 0,
    the primitive is applied as is; otherwise mapped operands get their batch dim first and the
    unmapped operands (of non-zero rank) a leading size-1 dimension, which broadcasts.
    """

    def rule(axis_data: Any, args: Sequence[Any], dims: Sequence[Any], **params: Any) -> tuple:
        shapes = [shape_of(x) for x in args]
        first = None
        simple = True
        for s, d in zip(shapes, dims):
            if d is None:
                if s:
                    simple = False
                    break
            elif first is None:
                first = (len(s), d)
            elif first != (len(s), d):
                simple = False
                break
        if simple:
            return prim.bind(*args, **params), first[1]
        rank = max(len(s) - (d is not None) for s, d in zip(shapes, dims))
        moved = []
        lax = ops()
        for x, s, d in zip(args, shapes, dims):
            if d is None:
                if s:  # unmapped, rank == rank: add a size-1 leading dim (broadcasts)
                    x = lax.broadcast_in_dim_p.bind(
                        x, shape=(1,) + s, broadcast_dimensions=tuple(range(1, len(s) + 1)))
            else:
                x = moveaxis(x, d, 0)
                if len(s) - 1 < rank:  # a mapped per-example scalar among higher-rank operands
                    s2 = shape_of(x)
                    x = lax.reshape_p.bind(x, new_sizes=s2 + (1,) * (rank - len(s2) + 1))
            moved.append(x)
        return prim.bind(*moved, **params), 0

    return rule


def _member(x: Any, d: Any, i: int) -> Any:
    if d is None:
        return x
    lax = ops()
    shape = shape_of(x)
    start = tuple(i if k == d else 0 for k in range(len(shape)))
    limit = tuple(i + 1 if k == d else s for k, s in enumerate(shape))
    piece = lax.slice_p.bind(x, start_indices=start, limit_indices=limit, strides=None)
    return lax.squeeze_p.bind(piece, dimensions=(d,))


def loop_batch_rule(prim: Any) -> Callable[..., Any]:
    """A correct but unvectorised rule: apply ``prim`` to each batch member and stack the
    results (``size`` primitive applications). For primitives without a vectorised rule yet."""

    def rule(axis_data: Any, args: Sequence[Any], dims: Sequence[Any], **params: Any) -> tuple:
        size = batch_size(args, dims)
        lax = ops()
        per = [prim.bind(*[_member(x, d, i) for x, d in zip(args, dims)], **params)
               for i in range(size)]

        def stack(vals: list) -> Any:
            shape = shape_of(vals[0])
            ups = [lax.broadcast_in_dim_p.bind(v, shape=(1,) + shape,
                                               broadcast_dimensions=tuple(range(1, len(shape) + 1)))
                   for v in vals]
            return ups[0] if len(ups) == 1 else lax.concatenate_p.bind(*ups, dimension=0)

        if prim.multiple_results:
            outs = [stack([p[k] for p in per]) for k in range(len(per[0]))]
            return outs, [0] * len(outs)
        return stack(per), 0

    return rule


def axis_param_batch_rule(prim: Any, names: Sequence[str]) -> Callable[..., Any]:
    """The rule of a one-operand primitive whose params ``names`` are per-example axes (an int
    or a tuple of ints): shift them past the batch dimension, keep the batch dimension."""

    def rule(axis_data: Any, args: Sequence[Any], dims: Sequence[Any], **params: Any) -> tuple:
        d = dims[0]
        new = dict(params)
        for n in names:
            v = params[n]
            if isinstance(v, tuple):
                new[n] = tuple(a if a < d else a + 1 for a in v)
            else:
                new[n] = v if v < d else v + 1
        return prim.bind(args[0], **new), d

    return rule


def per_dim_param_batch_rule(prim: Any, fills: dict[str, Any]) -> Callable[..., Any]:
    """The rule of a one-operand primitive whose params are per-dimension tuples (windows,
    padding configs): insert the neutral entry ``fills[name]`` for the batch dimension."""

    def rule(axis_data: Any, args: Sequence[Any], dims: Sequence[Any], **params: Any) -> tuple:
        d = dims[0]
        new = dict(params)
        for n, fill in fills.items():
            v = params.get(n)
            if v is not None:
                v = list(v)
                v.insert(d, fill)
                new[n] = tuple(v)
        return prim.bind(args[0], **new), d

    return rule



# ----------------------------------------------------------------------------- extended dtypes

def extended_operands(prim: Any, args: Sequence[Any], data: Sequence[int],
                      params: dict) -> tuple[ExtendedArray, list]:
    """The shared part of a structural primitive's ``extended`` rule (see
    :mod:`fluxion.core.primitive`): checks that the data operands (positions ``data``) are
    arrays of one extended dtype and that no other operand is, runs ``prim``'s shape rule on
    the logical shapes (so shape errors name them), and returns the first data operand (its
    ``_with_data`` makes the result) and ``args`` with each data operand replaced by its
    physical data, whose element dimensions trail.

    Example:
        >>> import fluxion
        >>> from fluxion.lax.shape_ops import rev_p
        >>> keys = fluxion.random.split(fluxion.random.key(0), 3)
        >>> like, phys = extended_operands(rev_p, [keys], (0,), {"dimensions": (0,)})
        >>> phys[0].shape, like._element_shape
        ((3, 2), (2,))
    """
    name = f"lax.{prim.name}"
    like = next((args[i] for i in data if isinstance(args[i], ExtendedArray)), None)
    if like is None:
        i, a = next((i, a) for i, a in enumerate(args) if isinstance(a, ExtendedArray))
        raise TypeError(f"{name} does not accept dtype {a.dtype} at position {i}")
    dtype = like.dtype
    for i, a in enumerate(args):
        if i in data:
            if not isinstance(a, ExtendedArray) or a.dtype != dtype:
                got = getattr(a, "dtype", type(a).__name__)
                raise TypeError(f"{name}: operands of dtype {dtype} combine only with operands "
                                f"of that dtype, got {got} at position {i}")
        elif isinstance(a, ExtendedArray):
            raise TypeError(f"{name} does not accept dtype {a.dtype} at position {i}")
    phys_dtype = like._base_array.dtype
    logical = [ShapedArray(tuple(a.shape), phys_dtype) if i in data else aval_of(a)
               for i, a in enumerate(args)]
    prim.abstract_eval(*logical, **params)
    return like, [a._base_array if i in data else a for i, a in enumerate(args)]

"""Structured control flow, part 2: loops (``while_loop``, ``fori_loop``, ``scan``, ``map``,
``associative_scan``).

``while_loop`` and ``scan`` are primitives holding their bodies as closed Programs (see
:mod:`fluxion.lax.control_flow`); both lower to ``stablehlo.while``. ``scan`` carries its
constants, carry, inputs and stacked outputs through the loop and slices / updates them with
``dynamic_slice`` / ``dynamic_update_slice``. ``fori_loop`` with concrete bounds is a ``scan``
(so it can be reverse-differentiated, as in JAX); with traced bounds it is a ``while_loop``.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> carry, ys = lax.scan(lambda c, x: (c + x, c * x), 0.0, jnp.arange(4.0))
    >>> float(carry), ys.tolist()
    (6.0, [0.0, 1.0, 3.0, 9.0])
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Sequence, TypeVar

import numpy as np

from fluxion import tree_util
from fluxion.core.avals import ShapedArray
from fluxion.core.ir import Program
from fluxion.core.primitive import Primitive
from fluxion.lax._base import attr_i64_array, type_error
from fluxion.lax.control_flow import (
    avals_of, check_carry, check_program_inputs, concrete_value, is_concrete, promote_weak_carry,
    split, stage, typematch,
)

__all__ = ["while_loop", "fori_loop", "scan", "map", "associative_scan", "while_p", "scan_p"]

Carry = TypeVar("Carry")
X = TypeVar("X")
Y = TypeVar("Y")

_I32 = ShapedArray((), np.dtype(np.int32))
_BOOL = ShapedArray((), np.dtype(np.bool_))


# =============================================================================== while_loop

while_p = Primitive("while", multiple_results=True)


def _while_abstract_eval(*avals: ShapedArray, body_jaxpr: Program, body_nconsts: int,
                         cond_jaxpr: Program, cond_nconsts: int) -> list[ShapedArray]:
    cconsts, bconsts, init = split(avals, [cond_nconsts, body_nconsts])
    check_program_inputs("lax.while_loop", cond_jaxpr, cconsts + init, "cond_fun")
    check_program_inputs("lax.while_loop", body_jaxpr, bconsts + init, "body_fun")
    outs = cond_jaxpr.out_avals
    if len(outs) != 1 or outs[0].shape != () or outs[0].dtype != np.bool_:
        raise type_error("lax.while_loop", "cond_fun must return a boolean scalar, got "
                         f"{[a.str_short() for a in outs]}")
    return list(body_jaxpr.out_avals)


def _while_lowering(ctx: Any, *args: str, body_jaxpr: Program, body_nconsts: int,
                    cond_jaxpr: Program, cond_nconsts: int) -> list[str]:
    state_avals = list(ctx.avals_in)
    nc = cond_nconsts + body_nconsts

    def cond_region(rctx: Any, vals: list[str]) -> list[str]:
        cc, _, carry = split(vals, [cond_nconsts, body_nconsts])
        return rctx.lower_program_inline(cond_jaxpr, cc + carry)

    def body_region(rctx: Any, vals: list[str]) -> list[str]:
        _, bc, carry = split(vals, [cond_nconsts, body_nconsts])
        return list(vals[:nc]) + list(rctx.lower_program_inline(body_jaxpr, bc + carry))

    res = ctx.op("stablehlo.while", list(args), result_avals=state_avals,
                 operand_avals=state_avals,
                 regions=[ctx.region(state_avals, cond_region, [_BOOL]),
                          ctx.region(state_avals, body_region, state_avals)])
    res = [res] if len(state_avals) == 1 else list(res)
    return res[nc:]


while_p.abstract_eval = _while_abstract_eval
while_p.lowering = _while_lowering


def while_loop(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any],
               init_val: Any) -> Any:
    """Repeat ``val = body_fun(val)`` while ``cond_fun(val)`` is true; returns the last ``val``.

    ``body_fun`` must keep the carry's pytree structure, shapes and dtypes. Not reverse-mode
    differentiable (the trip count is unknown): use ``scan`` or ``fori_loop`` with static bounds.

    Example:
        >>> from fluxion import lax
        >>> int(lax.while_loop(lambda c: c < 10, lambda c: c + 3, 0))
        12
    """
    if not (callable(cond_fun) and callable(body_fun)):
        raise TypeError("lax.while_loop: cond_fun and body_fun arguments should be callable.")
    leaves, in_tree = tree_util.tree_flatten(init_val)
    avals = avals_of(leaves)

    def trace_body(leaves: list, avals: list) -> tuple:
        carry = tree_util.tree_unflatten(in_tree, leaves)
        return stage(body_fun, (carry,), avals)

    body, bconsts, out_tree = trace_body(leaves, avals)
    if out_tree == in_tree:
        leaves, avals, changed = promote_weak_carry(leaves, avals, body.out_avals)
        if changed:
            body, bconsts, out_tree = trace_body(leaves, avals)
    check_carry("while_loop body", body_fun, in_tree, avals, out_tree, body.out_avals)
    carry = tree_util.tree_unflatten(in_tree, leaves)
    condp, cconsts, cond_tree = stage(cond_fun, (carry,), avals)
    outs = condp.out_avals
    if cond_tree.num_leaves != 1 or outs[0].shape != () or outs[0].dtype != np.bool_:
        raise TypeError("lax.while_loop: cond_fun must return a boolean scalar, but got output "
                        f"type(s) {[a.str_short() for a in outs]}.")
    out = while_p.bind(*cconsts, *bconsts, *leaves, body_jaxpr=body, body_nconsts=len(bconsts),
                       cond_jaxpr=condp, cond_nconsts=len(cconsts))
    return tree_util.tree_unflatten(in_tree, out)


# =============================================================================== scan

scan_p = Primitive("scan", multiple_results=True)


def _scan_abstract_eval(*avals: ShapedArray, jaxpr: Program, length: int, num_carry: int,
                        num_consts: int, reverse: bool, unroll: int) -> list[ShapedArray]:
    consts, init, xs = split(avals, [num_consts, num_carry])
    for x in xs:
        if not x.shape or x.shape[0] != length:
            raise type_error("lax.scan", f"scanned input {x.str_short()} must have leading "
                             f"dimension {length}")
    x_avals = [ShapedArray(x.shape[1:], x.dtype, x.weak_type) for x in xs]
    check_program_inputs("lax.scan", jaxpr, consts + init + x_avals, "the body")
    outs = jaxpr.out_avals
    carry_out, ys = outs[:num_carry], outs[num_carry:]
    for a, b in zip(init, carry_out):
        if not typematch(a, b):
            raise type_error("lax.scan", f"the body maps carry {a.str_short()} to {b.str_short()}")
    return list(carry_out) + [ShapedArray((length,) + y.shape, y.dtype, y.weak_type) for y in ys]


def _index_operands(rctx: Any, idx: str, ndim: int) -> list[str]:
    zero = rctx.constant(0, _I32)
    return [idx] + [zero] * (ndim - 1)


def _scan_lowering(ctx: Any, *args: str, jaxpr: Program, length: int, num_carry: int,
                   num_consts: int, reverse: bool, unroll: int) -> list[str]:
    in_avals = list(ctx.avals_in)
    const_avals, carry_avals, xs_avals = split(in_avals, [num_consts, num_carry])
    ys_avals = list(ctx.avals_out[num_carry:])
    consts, init, xs = split(list(args), [num_consts, num_carry])
    n_x = len(xs)

    def step(rctx: Any, pos: str, consts: list[str], carry: list[str], xs: list[str],
             ys: list[str]) -> tuple[list[str], list[str]]:
        """One iteration at forward position ``pos`` (an i32 SSA scalar)."""
        if reverse:
            last = rctx.constant(length - 1, _I32)
            idx = rctx.op1("stablehlo.subtract", [last, pos], _I32, [_I32, _I32])
        else:
            idx = pos
        x_vals = []
        for x, xa in zip(xs, xs_avals):
            sl_aval = xa.update(shape=(1,) + xa.shape[1:])
            sl = rctx.op1("stablehlo.dynamic_slice", [x] + _index_operands(rctx, idx, xa.ndim),
                          sl_aval, [xa] + [_I32] * xa.ndim,
                          f"slice_sizes = {attr_i64_array(sl_aval.shape)}")
            el = xa.update(shape=xa.shape[1:])
            x_vals.append(rctx.op1("stablehlo.reshape", [sl], el, [sl_aval]))
        outs = rctx.lower_program_inline(jaxpr, consts + carry + x_vals)
        new_carry, y_vals = outs[:num_carry], outs[num_carry:]
        new_ys = []
        for buf, y, ya in zip(ys, y_vals, ys_avals):
            el = ya.update(shape=ya.shape[1:])
            up_aval = ya.update(shape=(1,) + ya.shape[1:])
            up = rctx.op1("stablehlo.reshape", [y], up_aval, [el])
            new_ys.append(rctx.op1("stablehlo.dynamic_update_slice",
                                   [buf, up] + _index_operands(rctx, idx, ya.ndim), ya,
                                   [ya, up_aval] + [_I32] * ya.ndim))
        return list(new_carry), new_ys

    ys = [ctx.constant(0, a) for a in ys_avals]
    carry = list(init)
    unroll = max(1, min(int(unroll), max(length, 1)))
    n_blocks, rem = divmod(length, unroll)
    if n_blocks <= 1 and rem == 0 and unroll == length:  # fully unrolled: no loop at all
        n_blocks, rem = 0, length
    if n_blocks:
        state_avals = [_I32] + const_avals + carry_avals + xs_avals + ys_avals
        sizes = [1, num_consts, num_carry, n_x]

        def cond_region(rctx: Any, vals: list[str]) -> list[str]:
            limit = rctx.constant(n_blocks * unroll, _I32)
            return [rctx.op1("stablehlo.compare", [vals[0], limit], _BOOL, [_I32, _I32],
                             "comparison_direction = #stablehlo<comparison_direction LT>, "
                             "compare_type = #stablehlo<comparison_type SIGNED>")]

        def body_region(rctx: Any, vals: list[str]) -> list[str]:
            (i,), cs, cr, xv, yv = split(vals, sizes)
            pos = i
            one = rctx.constant(1, _I32)
            for _ in range(unroll):
                cr, yv = step(rctx, pos, cs, cr, xv, yv)
                pos = rctx.op1("stablehlo.add", [pos, one], _I32, [_I32, _I32])
            return [pos] + cs + cr + xv + yv

        start = ctx.constant(0, _I32)
        res = ctx.op("stablehlo.while", [start] + consts + carry + xs + ys,
                     result_avals=state_avals, operand_avals=state_avals,
                     regions=[ctx.region(state_avals, cond_region, [_BOOL]),
                              ctx.region(state_avals, body_region, state_avals)])
        res = [res] if len(state_avals) == 1 else list(res)
        _, _, carry, _, ys = split(res, sizes)
    for p in range(n_blocks * unroll, length):
        carry, ys = step(ctx, ctx.constant(p, _I32), consts, carry, xs, ys)
    return list(carry) + list(ys)


scan_p.abstract_eval = _scan_abstract_eval
scan_p.lowering = _scan_lowering


def _scan_length(xs_leaves: list, length: Any) -> int:
    if length is not None:
        try:
            length = operator.index(concrete_value(length))
        except Exception:
            raise TypeError("lax.scan: length must be a concrete integer, got "
                            f"{length!r}") from None
    sizes = []
    for x in xs_leaves:
        shape = getattr(x, "shape", None)
        if shape is None:
            shape = np.shape(x)
        if not shape:
            raise ValueError(f"scan got value with no leading axis to scan over: "
                             f"{avals_of([x])[0].str_short()}")
        sizes.append(shape[0])
    if length is not None:
        if any(s != length for s in sizes):
            raise ValueError(f"scan got `length` argument of {length} which disagrees with "
                             f"leading axis sizes {sizes}.")
        return length
    if not sizes:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"scan got values with different leading axis sizes: {sizes}.")
    return sizes[0]


def scan(f: Callable[[Carry, X], tuple[Carry, Y]], init: Carry, xs: X = None,
         length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1) -> tuple[Carry, Y]:
    """Loop ``f`` over the leading axis of ``xs`` while carrying state.

    Like ``for x in xs: carry, y = f(carry, x)`` returning ``(carry, stacked ys)``; ``init``,
    ``xs`` and the outputs may be pytrees. ``length`` gives the trip count when there are no
    ``xs``; ``reverse`` runs from the end (``ys`` stay in input order); ``unroll`` runs that many
    iterations per loop trip (``True``: the whole loop unrolled).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.scan(lambda c, x: (c * x, c), 1, jnp.arange(1, 5))[1].tolist()
        [1, 1, 2, 6]
    """
    if not callable(f):
        raise TypeError("lax.scan: f argument should be callable.")
    init_leaves, in_tree = tree_util.tree_flatten(init)
    xs_leaves, xs_tree = tree_util.tree_flatten(xs)
    n = _scan_length(xs_leaves, length)
    if isinstance(unroll, (bool, np.bool_)):
        unroll = max(n, 1) if unroll else 1
    try:
        unroll = operator.index(unroll)
    except TypeError:
        raise TypeError("lax.scan: unroll must be a concrete int or bool") from None
    if unroll < 0:
        raise ValueError("lax.scan: unroll must be a bool or a non-negative int")
    if unroll == 0:
        unroll = max(n, 1)
    init_avals = avals_of(init_leaves)
    xs_full = avals_of(xs_leaves)
    x_avals = [ShapedArray(a.shape[1:], a.dtype, a.weak_type) for a in xs_full]
    xs_proto = tree_util.tree_unflatten(xs_tree, [0] * len(xs_leaves))

    def trace(carry_leaves: list, carry_avals: list) -> tuple:
        carry = tree_util.tree_unflatten(in_tree, carry_leaves)
        program, consts, out_tree = stage(f, (carry, xs_proto), carry_avals + x_avals)
        children = tree_util.treedef_children(out_tree) if not tree_util.treedef_is_leaf(
            out_tree) else []
        if len(children) != 2 or type(tree_util.tree_unflatten(
                out_tree, [0] * out_tree.num_leaves)) not in (tuple, list):
            raise TypeError("scan body output must be a pair, got "
                            f"{tree_util.tree_unflatten(out_tree, program.out_avals)}.")
        return program, consts, children[0], children[1]

    program, consts, c_tree, y_tree = trace(init_leaves, init_avals)
    nc = len(init_leaves)
    if c_tree == in_tree:
        init_leaves, init_avals, changed = promote_weak_carry(init_leaves, init_avals,
                                                              program.out_avals[:nc])
        if changed:
            program, consts, c_tree, y_tree = trace(init_leaves, init_avals)
    check_carry("scan body", f, in_tree, init_avals, c_tree,
                program.out_avals[:c_tree.num_leaves])
    out = scan_p.bind(*consts, *init_leaves, *xs_leaves, jaxpr=program, length=n,
                      num_carry=nc, num_consts=len(consts), reverse=bool(reverse),
                      unroll=int(unroll))
    return tree_util.tree_unflatten(in_tree, out[:nc]), tree_util.tree_unflatten(y_tree, out[nc:])


# =============================================================================== fori_loop

def _int_dtype(x: Any) -> np.dtype:
    from fluxion.core import dtypes  # noqa: PLC0415
    return dtypes.dtype(x, canonicalize=True)


def fori_loop(lower: Any, upper: Any, body_fun: Callable[[Any, Any], Any], init_val: Any, *,
              unroll: int | bool | None = None) -> Any:
    """``for i in range(lower, upper): val = body_fun(i, val)``; returns ``val``.

    With concrete bounds this is a ``scan`` of ``upper - lower`` steps (reverse-differentiable);
    with traced bounds it is a ``while_loop``. ``unroll`` needs concrete bounds.

    Example:
        >>> from fluxion import lax
        >>> int(lax.fori_loop(0, 5, lambda i, s: s + i, 0))
        10
    """
    from fluxion.core import dtypes  # noqa: PLC0415
    from fluxion.lax.elementwise import add, convert_element_type, lt  # noqa: PLC0415
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    ldt, udt = _int_dtype(lower), _int_dtype(upper)
    if ldt == udt:
        dt = ldt
    else:
        dt = None
        if ldt.kind == "i" and udt.kind == "i":
            lw, uw = dtypes.is_weakly_typed(lower), dtypes.is_weakly_typed(upper)
            if lw and not uw:
                dt = udt
            elif uw and not lw:
                dt = ldt
        if dt is None:
            raise TypeError("lower and upper arguments to fori_loop must have equal types, got "
                            f"{ldt.name} and {udt.name}")
    if is_concrete(lower) and is_concrete(upper):
        try:
            lo, hi = int(concrete_value(lower)), int(concrete_value(upper))
            use_scan = True
        except (TypeError, ValueError):
            use_scan = False
    else:
        use_scan = False
    if use_scan:
        if unroll is None:
            unroll = False

        def scanned(carry: Any, _: Any) -> Any:
            i, x = carry
            return (add(i, 1), body_fun(i, x)), None

        start = lo  # a Python int: a weakly typed counter, as in JAX
        (_, result), _ = scan(scanned, (start, init_val), None, length=max(hi - lo, 0),
                              unroll=unroll)
        return result
    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are statically "
                         "known.")
    if ldt != dt:
        lower = convert_element_type(lower, dt)
    if udt != dt:
        upper = convert_element_type(upper, dt)

    def cond_fun(c: Any) -> Any:
        return lt(c[0], c[1])

    def body(c: Any) -> Any:
        i, u, x = c
        return add(i, np.ones((), dt) if not dtypes.is_weakly_typed(i) else 1), u, body_fun(i, x)

    return while_loop(cond_fun, body, (lower, upper, init_val))[2]


# =============================================================================== map

def map(f: Callable[[X], Y], xs: X, *, batch_size: int | None = None) -> Y:  # noqa: A001
    """``f`` applied to each slice of ``xs`` along the leading axis, stacked: a ``scan``
    without carry. With ``batch_size``, ``vmap(f)`` runs over chunks of that many slices.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.map(lambda x: x * x, jnp.arange(4)).tolist()
        [0, 1, 4, 9]
    """
    if batch_size is None:
        return scan(lambda _, x: ((), f(x)), (), xs)[1]
    import fluxion  # noqa: PLC0415
    vmap = getattr(fluxion, "vmap", None)
    if vmap is None:
        raise NotImplementedError("lax.map with batch_size needs fluxion.vmap, which is not "
                                  "available yet")
    from fluxion.lax.shape_ops import concatenate, reshape, slice_in_dim  # noqa: PLC0415
    leaves, tree = tree_util.tree_flatten(xs)
    if not leaves:
        return scan(lambda _, x: ((), f(x)), (), xs)[1]
    n = leaves[0].shape[0]
    bs = int(batch_size)
    nb, rem = divmod(n, bs) if bs else (0, n)
    vf = vmap(f)
    parts = []
    if nb:
        blocks = [reshape(slice_in_dim(x, 0, nb * bs), (nb, bs) + tuple(x.shape[1:]))
                  for x in leaves]
        ys = scan(lambda _, x: ((), vf(x)), (), tree_util.tree_unflatten(tree, blocks))[1]
        parts.append(tree_util.tree_map(lambda y: reshape(y, (nb * bs,) + tuple(y.shape[2:])), ys))
    if rem:
        tail = [slice_in_dim(x, nb * bs, n) for x in leaves]
        parts.append(vf(tree_util.tree_unflatten(tree, tail)))
    if len(parts) == 1:
        return parts[0]
    return tree_util.tree_map(lambda a, b: concatenate([a, b], 0), parts[0], parts[1])


# =============================================================================== associative_scan

def associative_scan(fn: Callable[[Any, Any], Any], elems: Any, reverse: bool = False,
                     axis: int = 0) -> Any:
    """Inclusive prefix scan of ``elems`` along ``axis`` with an associative ``fn``, in
    O(log n) parallel depth. ``fn(a, b)`` combines pytrees of arrays elementwise (vectorised over
    the scanned axis); ``reverse=True`` scans from the end.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.associative_scan(lax.add, jnp.arange(5)).tolist()
        [0, 1, 3, 6, 10]
    """
    from fluxion.lax.shape_ops import concatenate, expand_dims, reshape, rev, slice_in_dim  # noqa: PLC0415
    if not callable(fn):
        raise TypeError("lax.associative_scan: fn argument should be callable.")
    leaves, tree = tree_util.tree_flatten(elems)
    if not leaves:
        return elems
    from fluxion.numpy import asarray  # noqa: PLC0415
    leaves = [asarray(x) for x in leaves]
    nd = leaves[0].ndim
    if nd == 0:
        raise ValueError("lax.associative_scan: elements must have at least one dimension")
    axis = int(axis) % nd
    n = leaves[0].shape[axis]
    if any(x.shape[axis] != n for x in leaves[1:]):
        raise ValueError("Array inputs to associative_scan must have the same first dimension. "
                         f"(saw: {[x.shape for x in leaves]})")
    if reverse:
        leaves = [rev(x, (axis,)) for x in leaves]

    def combine(a: list, b: list) -> list:
        out = fn(tree_util.tree_unflatten(tree, a), tree_util.tree_unflatten(tree, b))
        flat, out_tree = tree_util.tree_flatten(out)
        if out_tree != tree:
            raise TypeError("lax.associative_scan: fn must return the same structure as its "
                            f"inputs, got {out_tree} for {tree}")
        return flat

    def sl(x: Any, start: int, stop: int | None, stride: int = 1) -> Any:
        return slice_in_dim(x, start, stop, stride, axis)

    def interleave(a: Any, b: Any) -> Any:
        # a holds the even positions, b the odd ones; len(a) is len(b) or len(b) + 1.
        na, nb_ = a.shape[axis], b.shape[axis]
        if na == 0:
            return a
        head = sl(a, 0, nb_) if na > nb_ else a
        pairs = concatenate([expand_dims(head, (axis + 1,)), expand_dims(b, (axis + 1,))], axis + 1)
        shape = list(a.shape)
        shape[axis] = 2 * nb_
        out = reshape(pairs, tuple(shape))
        if na > nb_:
            out = concatenate([out, sl(a, na - 1, na)], axis)
        return out

    def run(xs: list) -> list:
        m = xs[0].shape[axis]
        if m < 2:
            return xs
        reduced = combine([sl(x, 0, m - 1, 2) for x in xs], [sl(x, 1, None, 2) for x in xs])
        odd = run(reduced)
        if m % 2 == 0:
            even = combine([sl(e, 0, e.shape[axis] - 1) for e in odd], [sl(x, 2, None, 2) for x in xs])
        else:
            even = combine(odd, [sl(x, 2, None, 2) for x in xs])
        even = [concatenate([sl(x, 0, 1), e], axis) for x, e in zip(xs, even)]
        return [interleave(e, o) for e, o in zip(even, odd)]

    out = run(leaves)
    if reverse:
        out = [rev(x, (axis,)) for x in out]
    return tree_util.tree_unflatten(tree, out)

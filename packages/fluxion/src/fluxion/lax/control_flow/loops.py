"""Loops: the ``while`` and ``scan`` primitives (``lax.while_loop``, ``lax.scan``) and the loops
built on them (``fori_loop``, ``map``; ``associative_scan``, which needs neither primitive, is in
:mod:`.prefix_scan`).

``while_p`` and ``scan_p`` hold their bodies as closed Programs (see
:mod:`fluxion.lax.control_flow.common`); both lower to ``stablehlo.while``. ``scan`` carries its
constants, carry, inputs and stacked outputs through the loop and slices / updates them with
``dynamic_slice`` / ``dynamic_update_slice``. ``fori_loop`` with concrete bounds is a ``scan``
(so it can be reverse-differentiated, as in JAX); with traced bounds it is a ``while_loop``.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> carry, ys = lax.scan(lambda c, x: (c + x, c * x), 0.0, jnp.arange(4.0))
    >>> float(carry), ys.tolist()
    (6.0, [0.0, 0.0, 2.0, 9.0])
"""

from __future__ import annotations

import operator
import types
from typing import Any, Callable, Sequence, TypeVar

import numpy as np

from fluxion.core import dtypes
from fluxion.core import vma as _vma_rules
from fluxion.core.avals import ShapedArray, keep_sharding_rule
from fluxion.core.config import config
from fluxion.core.ir import Program, Var, dce, eval_program
from fluxion.core.primitive import Primitive
from fluxion.core.trace import set_current
from fluxion.core.tracebacks import api_boundary
from fluxion.lax._base import attr_i64_array, type_error
from fluxion.lax.control_flow import common, loop_dce
from fluxion.lax.control_flow.common import (
    avals_of,
    batch_to_front,
    check_carry,
    check_program_inputs,
    concrete_value,
    is_concrete,
    loop_consts,
    permute_program,
    promote_weak_carry,
    split,
    stage,
    typematch,
    with_consts,
)
from fluxion.lax.control_flow.refs import threads_refs_scan, threads_refs_while
from fluxion.lax.conversions import convert_element_type
from fluxion.lax.elementwise import add, lt, select_n
from fluxion.lax.reductions import reduce_or
from fluxion.lax.shape_ops import (
    broadcast_in_dim,
    concatenate,
    reshape,
    slice_in_dim,
)
from fluxion.transforms import ad, batching, partial_eval
from fluxion.transforms.array_ops import broadcast_batch, moveaxis
from fluxion.transforms.staging import StagingInterpreter, close_program, trace_to_program
from fluxion.tree_util import physical as tree_util

__all__ = ["while_loop", "fori_loop", "scan", "map", "while_p", "scan_p"]

Carry = TypeVar("Carry")
X = TypeVar("X")
Y = TypeVar("Y")

_I32 = ShapedArray((), np.dtype(np.int32))
_I64 = ShapedArray((), np.dtype(np.int64))
_BOOL = ShapedArray((), np.dtype(np.bool_))


# =============================================================================== while_loop

while_p = Primitive("while", multiple_results=True, batch_unmapped=True, materialized=True)
while_p.sharding = keep_sharding_rule


def _while_vma(eqn: Any, ins: list[frozenset]) -> list[frozenset]:
    # As JAX 0.10: the predicate's varying axes do not reach the carry; the carry's only grow,
    # so a fixed point is near.
    p = eqn.params
    ncc, nbc = p["cond_nconsts"], p["body_nconsts"]
    bc, carry = ins[ncc:ncc + nbc], list(ins[ncc + nbc:])
    for _ in range(len(carry) + 2):
        outs = _vma_rules.infer(p["body_jaxpr"], bc + carry)
        new = [a | b for a, b in zip(carry, outs)]
        if new == carry:
            break
        carry = new
    return carry


while_p.vma = _while_vma


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
    nc = cond_nconsts + body_nconsts
    known, consts, const_avals = loop_consts(ctx, args[:nc])  # small constants stay inside
    ncarried, ncc = len(consts), sum(k is None for k in known[:cond_nconsts])
    state_avals = const_avals + list(ctx.avals_in[nc:])

    def cond_region(rctx: Any, vals: list[str]) -> list[str]:
        cc = with_consts(rctx, known[:cond_nconsts], vals[:ncc])
        return rctx.lower_program_inline(cond_jaxpr, cc + list(vals[ncarried:]))

    def body_region(rctx: Any, vals: list[str]) -> list[str]:
        bc = with_consts(rctx, known[cond_nconsts:], vals[ncc:ncarried])
        return list(vals[:ncarried]) + list(
            rctx.lower_program_inline(body_jaxpr, bc + list(vals[ncarried:])))

    res = ctx.op("stablehlo.while", consts + list(args[nc:]), state_avals, operand_avals=state_avals,
                 regions=[ctx.region(state_avals, cond_region, [_BOOL]),
                          ctx.region(state_avals, body_region, state_avals)])
    res = [res] if len(state_avals) == 1 else list(res)
    return res[ncarried:]


def _while_jvp(primals: list, tangents: list, *, body_jaxpr: Program, body_nconsts: int,
               cond_jaxpr: Program, cond_nconsts: int) -> tuple[list, list]:
    cc, bc, init = split(list(primals), [cond_nconsts, body_nconsts])
    _, tbc, tinit = split(list(tangents), [cond_nconsts, body_nconsts])
    bnz = [not ad.is_zero_tangent(t) for t in tbc]
    inz = [not ad.is_zero_tangent(t) for t in tinit]
    n = len(init)
    avals = body_jaxpr.out_avals
    for _ in range(n + 2):  # fixpoint: carry tangents nonzero if the body makes them so
        _, _, out_nz = ad.jvp_program(body_jaxpr, bnz + inz)
        new = [a or (b and ad.is_float(av.dtype)) for a, b, av in zip(inz, out_nz, avals)]
        if new == inz:
            break
        inz = new
    prog, consts, _ = ad.jvp_program(body_jaxpr, bnz + inz, inz)
    # prog inputs: consts', body consts, carry, body-const tangents, carry tangents
    nk, nbt, nit = len(consts), sum(bnz), sum(inz)
    in_order = (list(range(nk)) + list(range(nk, nk + body_nconsts))
                + list(range(nk + body_nconsts + n, nk + body_nconsts + n + nbt))
                + list(range(nk + body_nconsts, nk + body_nconsts + n))
                + list(range(nk + body_nconsts + n + nbt, nk + body_nconsts + n + nbt + nit)))
    prog = permute_program(prog, in_order)
    # cond ignores the carry tangents
    t_vars = [Var(ad.tangent_aval(a)) for a, z in zip(avals, inz) if z]
    condp = Program([], list(cond_jaxpr.invars) + t_vars, cond_jaxpr.outvars, cond_jaxpr.eqns)
    ti = [ad.zeros_like_aval(ad.tangent_aval(a)) if ad.is_zero_tangent(t) else t
          for t, a, z in zip(tinit, avals, inz) if z]
    outs = while_p.bind(*cc, *consts, *bc, *[t for t, z in zip(tbc, bnz) if z], *init, *ti,
                        body_jaxpr=prog, body_nconsts=nk + body_nconsts + nbt,
                        cond_jaxpr=condp, cond_nconsts=cond_nconsts)
    it = iter(outs[n:])
    return list(outs[:n]), [next(it) if z else ad.Zero(ad.tangent_aval(a))
                            for z, a in zip(inz, avals)]


def _while_partial_eval(pe: partial_eval.PartialEvalInterpreter, args: Sequence[Any], *,
                        body_jaxpr: Program, body_nconsts: int, cond_jaxpr: Program,
                        cond_nconsts: int) -> list:
    params = dict(body_jaxpr=body_jaxpr, body_nconsts=body_nconsts, cond_jaxpr=cond_jaxpr,
                  cond_nconsts=cond_nconsts)
    mask = [pe.is_unknown(a) for a in args]
    cm, bm, im = split(mask, [cond_nconsts, body_nconsts])
    n = len(im)
    for _ in range(n + 2):  # fixpoint: a carry is unknown if the body makes it so
        out_unk = partial_eval.partial_eval_program(body_jaxpr, bm + im)[3]
        new = [a or b for a, b in zip(im, out_unk)]
        if new == im:
            break
        im = new
    c_unk = partial_eval.partial_eval_program(cond_jaxpr, cm + im)[3]
    staged_all = StagingInterpreter.process_primitive(pe, while_p, list(args), params)
    if c_unk[0] or all(im):
        return staged_all
    # The known carries are computed by a while loop over the known part alone; the unknown
    # outputs come from the whole loop, staged (it recomputes the known part).
    kp, kc = partial_eval.partial_eval_program(body_jaxpr, bm + im)[:2]
    n_k_out = sum(not u for u in im)
    kp = dce(kp, [True] * n_k_out + [False] * (len(kp.outvars) - n_k_out))
    ckp, ckc = partial_eval.partial_eval_program(cond_jaxpr, cm + im)[:2]
    ckp = dce(ckp, [True] + [False] * (len(ckp.outvars) - 1))
    cc, bc, init = split(list(args), [cond_nconsts, body_nconsts])
    with set_current(pe.parent):
        k_outs = while_p.bind(*ckc, *[a for a, m in zip(cc, cm) if not m], *kc,
                              *[a for a, m in zip(bc, bm) if not m],
                              *[a for a, m in zip(init, im) if not m],
                              body_jaxpr=kp, body_nconsts=len(kc) + sum(not m for m in bm),
                              cond_jaxpr=ckp, cond_nconsts=len(ckc) + sum(not m for m in cm))
    ki = iter(k_outs)
    return [s if u else next(ki) for s, u in zip(staged_all, im)]


def _while_transpose(cts: list, *args: Any, **params: Any) -> list:
    raise ValueError(
        "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
        "dynamic start/stop values. Try using lax.scan, or lax.fori_loop with static start/stop.")


def _while_batch(axis: batching.AxisData, args: Sequence[Any], dims: Sequence[Any], *,
                 body_jaxpr: Program, body_nconsts: int, cond_jaxpr: Program,
                 cond_nconsts: int) -> tuple[list, list]:
    if batching.is_unbatched(axis, dims, body_jaxpr, cond_jaxpr):
        outs = while_p.bind(*args, body_jaxpr=body_jaxpr, body_nconsts=body_nconsts,
                            cond_jaxpr=cond_jaxpr, cond_nconsts=cond_nconsts)
        return outs, [None] * len(outs)
    args = [batch_to_front(x, d) for x, d in zip(args, dims)]
    dims = [None if d is None else 0 for d in dims]
    cc, bc, init = split(args, [cond_nconsts, body_nconsts])
    ccd, bcd, initd = split(dims, [cond_nconsts, body_nconsts])
    n = len(init)
    carry_b = [d is not None for d in initd]
    for _ in range(n + 2):  # fixpoint: a carry is batched if its body output is
        cd = [0 if b else None for b in carry_b]
        _, _, pdims = batching.batch_program(cond_jaxpr, ccd + cd, axis, to_front=True)
        if pdims[0] is not None:
            new = [True] * n
        else:
            _, _, odims = batching.batch_program(body_jaxpr, bcd + cd, axis, to_front=True)
            new = [b or (d is not None) for b, d in zip(carry_b, odims)]
        if new == carry_b:
            break
        carry_b = new
    cd = [0 if b else None for b in carry_b]
    init = [broadcast_batch(x, axis.size, 0) if b and d is None else x
            for x, b, d in zip(init, carry_b, initd)]
    condp, cconsts, pdims = batching.batch_program(cond_jaxpr, ccd + cd, axis, to_front=True)
    bodyp, bconsts, _ = batching.batch_program(body_jaxpr, bcd + cd, axis, to_front=True,
                                               instantiate=carry_b)
    if pdims[0] is None:
        outs = while_p.bind(*cconsts, *cc, *bconsts, *bc, *init, body_jaxpr=bodyp,
                            body_nconsts=len(bconsts) + len(bc), cond_jaxpr=condp,
                            cond_nconsts=len(cconsts) + len(cc))
        return list(outs), [0 if b else None for b in carry_b]
    # A batched predicate: run while any member is unfinished; finished members keep their carry.
    ncc, nbc = len(cconsts) + len(cc), len(bconsts) + len(bc)
    cond_ins = list(cconsts) + list(cc)
    body_ins = list(bconsts) + list(bc)
    c_avals = list(condp.in_avals)
    b_avals = list(bodyp.in_avals[nbc:])

    def any_cond(*vals: Any) -> Any:
        p = eval_program(condp, [], list(vals))[0]
        return reduce_or(p, (0,))

    def masked_body(*vals: Any) -> list:
        cvals, bvals, carry = vals[:ncc], vals[ncc:ncc + nbc], list(vals[ncc + nbc:])
        p = eval_program(condp, [], list(cvals) + carry)[0]
        new = eval_program(bodyp, [], list(bvals) + carry)
        out = []
        for old, nw in zip(carry, new):
            shape = tuple(getattr(old, "shape", ()))
            which = broadcast_in_dim(p, shape, (0,)) if len(shape) > 1 else p
            out.append(select_n(which, old, nw))
        return out

    cprog, cc2, _ = trace_to_program(any_cond, tuple(c_avals), {}, in_avals=c_avals)
    body_avals = c_avals[:ncc] + list(bodyp.in_avals[:nbc]) + b_avals
    bprog, bc2, _ = trace_to_program(masked_body, tuple(body_avals), {}, in_avals=body_avals)
    cprog, bprog = close_program(cprog), close_program(bprog)
    outs = while_p.bind(*cc2, *cond_ins, *bc2, *cond_ins, *body_ins, *init, body_jaxpr=bprog,
                        body_nconsts=len(bc2) + ncc + nbc, cond_jaxpr=cprog,
                        cond_nconsts=len(cc2) + ncc)
    return list(outs), [0] * n


while_p.abstract_eval = _while_abstract_eval
while_p.lowering = _while_lowering
while_p.jvp = _while_jvp
while_p.partial_eval = _while_partial_eval
while_p.transpose = _while_transpose
while_p.batch = _while_batch


@api_boundary
@threads_refs_while
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
    _check_carry_vma("while_loop body", body_fun, in_tree, body, [*bconsts, *leaves],
                         len(leaves), len(bconsts))
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

scan_p = Primitive("scan", multiple_results=True, batch_unmapped=True, materialized=True)
scan_p.sharding = keep_sharding_rule


def _scan_vma(eqn: Any, ins: list[frozenset]) -> list[frozenset]:
    # The carry's varying axes only grow over iterations: a fixed point is near.
    p = eqn.params
    nk, nc = p["num_consts"], p["num_carry"]
    consts, carry, xs = ins[:nk], list(ins[nk:nk + nc]), ins[nk + nc:]
    for _ in range(len(carry) + 1):
        outs = _vma_rules.infer(p["jaxpr"], consts + carry + xs)
        new = [a | b for a, b in zip(carry, outs[:nc])]
        if new == carry:
            break
        carry = new
    return carry + outs[nc:]


scan_p.vma = _scan_vma


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


def _index_operands(rctx: Any, idx: str, ndim: int, ctr: ShapedArray) -> list[str]:
    return [idx] + [rctx.constant(0, ctr)] * (ndim - 1) if ndim > 1 else [idx]


def _scan_lowering(ctx: Any, *args: str, jaxpr: Program, length: int, num_carry: int,
                   num_consts: int, reverse: bool, unroll: int) -> list[str]:
    in_avals = list(ctx.avals_in)
    _, carry_avals, xs_avals = split(in_avals, [num_consts, num_carry])
    ys_avals = list(ctx.avals_out[num_carry:])
    all_consts, init, xs = split(list(args), [num_consts, num_carry])
    known, consts, const_avals = loop_consts(ctx, all_consts)
    ncarried = len(consts)
    n_x = len(xs)
    # The loop counter is a default-width integer, int64 with x64 on, as JAX's scan (whose
    # counter is a Python int): the same XLA program, the same dynamic-slice index types.
    ctr = _I64 if config.jax_enable_x64 else _I32

    def step(rctx: Any, pos: str, consts: list[str], carry: list[str], xs: list[str],
             ys: list[str]) -> tuple[list[str], list[str]]:
        """One iteration at forward position ``pos`` (a ``ctr`` SSA scalar)."""
        if reverse:
            last = rctx.constant(length - 1, ctr)
            idx = rctx.op1("stablehlo.subtract", [last, pos], ctr, [ctr, ctr])
        else:
            idx = pos
        x_vals = []
        for x, xa in zip(xs, xs_avals):
            sl_aval = xa.update(shape=(1,) + xa.shape[1:])
            sl = rctx.op1("stablehlo.dynamic_slice", [x] + _index_operands(rctx, idx, xa.ndim, ctr),
                          sl_aval, [xa] + [ctr] * xa.ndim,
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
                                   [buf, up] + _index_operands(rctx, idx, ya.ndim, ctr), ya,
                                   [ya, up_aval] + [ctr] * ya.ndim))
        return list(new_carry), new_ys

    ys = [ctx.constant(0, a) for a in ys_avals]
    carry = list(init)
    unroll = max(1, min(int(unroll), max(length, 1)))
    n_blocks, rem = divmod(length, unroll)
    if n_blocks <= 1 and rem == 0 and unroll == length:  # fully unrolled: no loop at all
        n_blocks, rem = 0, length
    if n_blocks:
        state_avals = [ctr] + const_avals + carry_avals + xs_avals + ys_avals
        sizes = [1, ncarried, num_carry, n_x]

        def cond_region(rctx: Any, vals: list[str]) -> list[str]:
            limit = rctx.constant(n_blocks * unroll, ctr)
            return [rctx.op1("stablehlo.compare", [vals[0], limit], _BOOL, [ctr, ctr],
                             "comparison_direction = #stablehlo<comparison_direction LT>, "
                             "compare_type = #stablehlo<comparison_type SIGNED>")]

        def body_region(rctx: Any, vals: list[str]) -> list[str]:
            (i,), cs, cr, xv, yv = split(vals, sizes)
            pos = i
            one = rctx.constant(1, ctr)
            body_consts = with_consts(rctx, known, cs)
            for _ in range(unroll):
                cr, yv = step(rctx, pos, body_consts, cr, xv, yv)
                pos = rctx.op1("stablehlo.add", [pos, one], ctr, [ctr, ctr])
            return [pos] + cs + cr + xv + yv

        start = ctx.constant(0, ctr)
        res = ctx.op("stablehlo.while", [start] + consts + carry + xs + ys,
                     result_avals=state_avals, operand_avals=state_avals,
                     regions=[ctx.region(state_avals, cond_region, [_BOOL]),
                              ctx.region(state_avals, body_region, state_avals)])
        res = [res] if len(state_avals) == 1 else list(res)
        _, _, carry, _, ys = split(res, sizes)
    for p in range(n_blocks * unroll, length):
        carry, ys = step(ctx, ctx.constant(p, ctr), all_consts, carry, xs, ys)
    return list(carry) + list(ys)


def _scan_jvp(primals: list, tangents: list, *, jaxpr: Program, length: int, num_carry: int,
              num_consts: int, reverse: bool, unroll: int) -> tuple[list, list]:
    nz = [not ad.is_zero_tangent(t) for t in tangents]
    cnz, inz, xnz = split(nz, [num_consts, num_carry])
    carry_avals = jaxpr.out_avals[:num_carry]
    for _ in range(num_carry + 2):  # fixpoint: carry tangents nonzero if the body makes them so
        _, _, out_nz = ad.jvp_program(jaxpr, cnz + inz + xnz)
        new = [a or (b and ad.is_float(av.dtype))
               for a, b, av in zip(inz, out_nz[:num_carry], carry_avals)]
        if new == inz:
            break
        inz = new
    n_out = len(jaxpr.outvars)
    force = list(inz) + [False] * (n_out - num_carry)
    prog, consts, out_nz = ad.jvp_program(jaxpr, cnz + inz + xnz, force)
    ynz = out_nz[num_carry:]
    # prog inputs: consts', primals (c, i, x), tangents (ct, it, xt); reorder to scan's layout.
    n_k = len(consts)
    n_in = len(jaxpr.invars)
    nc_t, ni_t, nx_t = sum(cnz), sum(inz), sum(xnz)
    base = n_k
    p_c = list(range(base, base + num_consts))
    p_i = list(range(base + num_consts, base + num_consts + num_carry))
    p_x = list(range(base + num_consts + num_carry, base + n_in))
    t0 = base + n_in
    t_c = list(range(t0, t0 + nc_t))
    t_i = list(range(t0 + nc_t, t0 + nc_t + ni_t))
    t_x = list(range(t0 + nc_t + ni_t, t0 + nc_t + ni_t + nx_t))
    in_order = list(range(n_k)) + p_c + t_c + p_i + t_i + p_x + t_x
    n_y = n_out - num_carry
    ny_t = sum(ynz)
    out_order = (list(range(num_carry)) + list(range(n_out, n_out + ni_t))
                 + list(range(num_carry, n_out)) + list(range(n_out + ni_t, n_out + ni_t + ny_t)))
    prog = permute_program(prog, in_order, out_order)
    c, i, x = split(list(primals), [num_consts, num_carry])
    tc, ti, tx = split(list(tangents), [num_consts, num_carry])
    ti = [ad.zeros_like_aval(ad.tangent_aval(ad.aval_of(a))) if ad.is_zero_tangent(t) else t
          for t, a, z in zip(ti, i, inz) if z]
    args = (list(consts) + c + [t for t, z in zip(tc, cnz) if z] + i + ti + x
            + [t for t, z in zip(tx, xnz) if z])
    outs = scan_p.bind(*args, jaxpr=prog, length=length, num_carry=num_carry + ni_t,
                       num_consts=n_k + num_consts + nc_t, reverse=reverse, unroll=unroll)
    carry, carry_t, ys, ys_t = split(list(outs), [num_carry, ni_t, n_y])[:4]
    it_c, it_y = iter(carry_t), iter(ys_t)
    out_avals = _scan_abstract_eval(*[ad.aval_of(a) for a in primals], jaxpr=jaxpr,
                                    length=length, num_carry=num_carry, num_consts=num_consts,
                                    reverse=reverse, unroll=unroll)
    t_out = ([next(it_c) if z else ad.Zero(ad.tangent_aval(a)) for z, a in zip(inz, out_avals)]
             + [next(it_y) if z else ad.Zero(ad.tangent_aval(a))
                for z, a in zip(ynz, out_avals[num_carry:])])
    return list(carry) + list(ys), t_out


def _scan_partial_eval(pe: partial_eval.PartialEvalInterpreter, args: Sequence[Any], *, jaxpr: Program,
                       length: int, num_carry: int, num_consts: int, reverse: bool,
                       unroll: int) -> list:
    mask = [pe.is_unknown(a) for a in args]
    cm, im, xm = split(mask, [num_consts, num_carry])
    for _ in range(num_carry + 2):  # fixpoint: a carry is unknown if the body makes it so
        out_unk = partial_eval.partial_eval_program(jaxpr, cm + im + xm)[3]
        new = [a or b for a, b in zip(im, out_unk[:num_carry])]
        if new == im:
            break
        im = new
    n_out = len(jaxpr.outvars)
    # A carry unknown at the input is unknown at the output too (instantiated): its known value
    # from the body becomes a residual.
    kp, kc, up, out_unk, n_res = partial_eval.partial_eval_program(
        jaxpr, cm + im + xm, instantiate=im + [False] * (n_out - num_carry))
    # Known scan: consts (kc + known consts), known carry, known xs -> known carry out, known ys,
    # and the residuals, stacked (one per iteration).
    n_ki = sum(not m for m in im)
    k_args = list(kc) + [a for a, m in zip(args[:num_consts], cm) if not m]
    k_init = [a for a, m in zip(args[num_consts:num_consts + num_carry], im) if not m]
    k_xs = [a for a, m in zip(args[num_consts + num_carry:], xm) if not m]
    with set_current(pe.parent):
        k_outs = scan_p.bind(*k_args, *k_init, *k_xs, jaxpr=kp, length=length, num_carry=n_ki,
                             num_consts=len(k_args), reverse=reverse, unroll=unroll)
    n_ky = len(kp.outvars) - n_ki - n_res
    k_carry_out, k_ys, stacked = split(list(k_outs), [n_ki, n_ky])
    # Unknown scan: consts = unknown consts; carry = unknown carry; xs = residuals + unknown xs.
    n_uc, n_ui = sum(cm), sum(im)
    n_in = n_res + n_uc + n_ui + sum(xm)
    in_order = (list(range(n_res, n_res + n_uc + n_ui)) + list(range(n_res))
                + list(range(n_res + n_uc + n_ui, n_in)))
    u_args = ([a for a, m in zip(args[:num_consts], cm) if m]
              + [a for a, m in zip(args[num_consts:num_consts + num_carry], im) if m]
              + list(stacked) + [a for a, m in zip(args[num_consts + num_carry:], xm) if m])
    u_outs = StagingInterpreter.process_primitive(pe, scan_p, u_args, dict(
        jaxpr=permute_program(up, in_order), length=length, num_carry=n_ui, num_consts=n_uc,
        reverse=reverse, unroll=unroll))
    u_carry, u_ys = u_outs[:n_ui], u_outs[n_ui:]
    kc_it, ku_it = iter(k_carry_out), iter(u_carry)
    out = [next(ku_it) if im[i] else next(kc_it) for i in range(num_carry)]
    ky_it, uy_it = iter(k_ys), iter(u_ys)
    out += [next(uy_it) if out_unk[i] else next(ky_it) for i in range(num_carry, n_out)]
    return out


def _scan_transpose(cts: list, *args: Any, jaxpr: Program, length: int, num_carry: int,
                    num_consts: int, reverse: bool, unroll: int) -> list:
    consts, init, xs = split(list(args), [num_consts, num_carry])
    c_lin = [ad.is_undefined(a) for a in consts]
    x_lin = [ad.is_undefined(a) for a in xs]
    linear = c_lin + [True] * num_carry + x_lin
    tprog, tconsts = ad.transpose_program(jaxpr, linear, [True] * len(jaxpr.outvars))
    # tprog: (*tconsts, *nonlinear consts, *nonlinear xs, *ct carry out, *ct ys) ->
    #        (*ct linear consts, *ct carry in, *ct linear xs)
    nl_consts = [a for a in consts if not ad.is_undefined(a)]
    nl_xs = [a for a in xs if not ad.is_undefined(a)]
    n_lc = sum(c_lin)
    out_avals = jaxpr.out_avals
    c_avals = [v.aval for v, lin in zip(jaxpr.invars[:num_consts], c_lin) if lin]
    carry_avals = [v.aval for v in jaxpr.invars[num_consts:num_consts + num_carry]]
    y_avals = list(out_avals[num_carry:])
    nl_c_avals = [v.aval for v, lin in zip(jaxpr.invars[:num_consts], c_lin) if not lin]
    nl_x_avals = [v.aval for v, lin in zip(jaxpr.invars[num_consts + num_carry:], x_lin)
                  if not lin]
    n_tc = len(tconsts)

    def body(*vals: Any) -> list:
        tc, nlc, ct_carry, ct_cacc, nlx, ct_y = split(
            list(vals), [n_tc, len(nl_consts), num_carry, n_lc, len(nl_xs)])[:6]
        outs = eval_program(tprog, [], list(tc) + list(nlc) + list(nlx) + list(ct_carry)
                            + list(ct_y))
        ct_lc, ct_cin, ct_lx = split(list(outs), [n_lc, num_carry])
        acc = [ad.add_tangents(a, b) for a, b in zip(ct_cacc, ct_lc)]
        return list(ct_cin) + acc + list(ct_lx)

    in_avals = ([v.aval for v in tprog.invars[:n_tc]] + nl_c_avals + carry_avals + c_avals
                + nl_x_avals + y_avals)
    bprog, bconsts, _ = stage(body, tuple(in_avals), in_avals)
    ct_carry = [ad.zeros_like_aval(a) if ad.is_zero_tangent(c) else c
                for c, a in zip(cts[:num_carry], carry_avals)]
    ct_ys = [ad.zeros_like_aval(ShapedArray((length,) + a.shape, a.dtype, a.weak_type))
             if ad.is_zero_tangent(c) else c for c, a in zip(cts[num_carry:], y_avals)]
    c_acc = [ad.zeros_like_aval(a) for a in c_avals]
    outs = scan_p.bind(*bconsts, *tconsts, *nl_consts, *ct_carry, *c_acc, *nl_xs, *ct_ys,
                       jaxpr=bprog, length=length, num_carry=num_carry + n_lc,
                       num_consts=len(bconsts) + n_tc + len(nl_consts), reverse=not reverse,
                       unroll=unroll)
    ct_init, ct_consts, ct_xs = split(list(outs), [num_carry, n_lc])
    ic, ix = iter(ct_consts), iter(ct_xs)
    res = [next(ic) if lin else None for lin in c_lin]
    res += [c if ad.is_undefined(a) else None for c, a in zip(ct_init, init)]
    res += [next(ix) if lin else None for lin in x_lin]
    return res


def _scan_batch(axis: batching.AxisData, args: Sequence[Any], dims: Sequence[Any], *,
                jaxpr: Program, length: int, num_carry: int, num_consts: int, reverse: bool,
                unroll: int) -> tuple[list, list]:
    params = dict(length=length, reverse=reverse, unroll=unroll)
    if batching.is_unbatched(axis, dims, jaxpr):
        outs = scan_p.bind(*args, jaxpr=jaxpr, num_carry=num_carry, num_consts=num_consts,
                           **params)
        return outs, [None] * len(outs)
    consts, init, xs = split(list(args), [num_consts, num_carry])
    cd, initd, xsd = split(list(dims), [num_consts, num_carry])
    consts = [batch_to_front(x, d) for x, d in zip(consts, cd)]
    init = [batch_to_front(x, d) for x, d in zip(init, initd)]
    xs = [x if d is None else moveaxis(x, d, 1) for x, d in zip(xs, xsd)]
    cd = [None if d is None else 0 for d in cd]
    xd = [None if d is None else 0 for d in xsd]  # per-slice batch dims seen by the body
    n_y = len(jaxpr.outvars) - num_carry
    carry_b = [d is not None for d in initd]
    for _ in range(num_carry + 2):  # fixpoint: a carry is batched if its body output is
        _, _, odims = batching.batch_program(
            jaxpr, cd + [0 if b else None for b in carry_b] + xd, axis, to_front=True)
        new = [b or (d is not None) for b, d in zip(carry_b, odims[:num_carry])]
        if new == carry_b:
            break
        carry_b = new
    init = [broadcast_batch(x, axis.size, 0) if b and d is None else x
            for x, b, d in zip(init, carry_b, initd)]
    prog, new_consts, odims = batching.batch_program(
        jaxpr, cd + [0 if b else None for b in carry_b] + xd, axis, to_front=True,
        instantiate=list(carry_b) + [False] * n_y)
    outs = scan_p.bind(*new_consts, *consts, *init, *xs, jaxpr=prog, num_carry=num_carry,
                       num_consts=len(new_consts) + num_consts, **params)
    out_dims = [0 if b else None for b in carry_b] + [None if d is None else 1
                                                      for d in odims[num_carry:]]
    return list(outs), out_dims


scan_p.abstract_eval = _scan_abstract_eval
scan_p.lowering = _scan_lowering
scan_p.jvp = _scan_jvp
scan_p.partial_eval = _scan_partial_eval
scan_p.transpose = _scan_transpose
scan_p.batch = _scan_batch


def _check_xs_unsplit(xs_leaves: list) -> None:
    """JAX's rule on Explicit mesh axes: the scanned (leading) dimension is not split."""
    avals = [a for a in avals_of(xs_leaves)]
    if not any(a.sharding is not None for a in avals):
        return
    specs = [tuple(a.sharding.spec) if a.sharding is not None else (None,) * len(a.shape)
             for a in avals]
    if any(sp and sp[0] is not None for sp in specs):
        raise ValueError("0th dimension of all xs should be replicated. Got "
                         + ", ".join("P" + repr(sp) for sp in specs))


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
    _check_xs_unsplit(xs_leaves)
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


@api_boundary
@threads_refs_scan
def scan(f: Callable[[Carry, X], tuple[Carry, Y]], init: Carry, xs: X = None,
         length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1, _split_transpose: bool = False) -> tuple[Carry, Y]:
    """Loop ``f`` over the leading axis of ``xs`` while carrying state.

    Like ``for x in xs: carry, y = f(carry, x)`` returning ``(carry, stacked ys)``; ``init``,
    ``xs`` and the outputs may be pytrees. ``length`` gives the trip count when there are no
    ``xs``; ``reverse`` runs from the end (``ys`` stay in input order); ``unroll`` runs that many
    iterations per loop trip (``True``: the whole loop unrolled). ``_split_transpose`` (JAX's
    experimental hint to split the reverse pass into two loops, which flax passes) is accepted
    and changes nothing: the values and derivatives are the same either way.

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
    _check_carry_vma("scan body", f, in_tree, program, [*consts, *init_leaves, *xs_leaves],
                         nc, len(consts))
    out = scan_p.bind(*consts, *init_leaves, *xs_leaves, jaxpr=program, length=n,
                      num_carry=nc, num_consts=len(consts), reverse=bool(reverse),
                      unroll=int(unroll))
    return tree_util.tree_unflatten(in_tree, out[:nc]), tree_util.tree_unflatten(y_tree, out[nc:])


# =============================================================================== fori_loop

def _int_dtype(x: Any) -> np.dtype:
    return dtypes.dtype(x, canonicalize=True)


def _fori_scan_body(body_fun: Callable) -> Callable:
    """The scan body of ``fori_loop(body_fun)``: one function object per ``body_fun``, kept on
    it (so eager staging of the same loop body is cached, see ``common.stage``)."""
    hit = getattr(body_fun, "_fluxion_fori_scan_body", None)
    if hit is not None:
        return hit

    def scanned(carry: Any, _: Any) -> Any:
        i, x = carry
        return (add(i, 1), body_fun(i, x)), None

    if type(body_fun) is types.FunctionType:
        body_fun._fluxion_fori_scan_body = scanned
    return scanned


@api_boundary
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

        scanned = _fori_scan_body(body_fun)
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

@api_boundary
def map(f: Callable[[X], Y], xs: X, *, batch_size: int | None = None) -> Y:
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
    leaves, tree = tree_util.tree_flatten(xs)
    if not leaves:
        return scan(lambda _, x: ((), f(x)), (), xs)[1]
    n = leaves[0].shape[0]
    bs = int(batch_size)
    nb, rem = divmod(n, bs) if bs else (0, n)
    vf = batching.vmap(f)
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


# =============================================================================== carry checks

def _check_carry_vma(api: str, fun: Any, in_tree: Any, program: Any, operands: Sequence[Any],
                    n_carry: int, carry_at: int) -> None:
    """JAX's TypeError when, inside a ``check_vma`` body, a loop's carry output varies over
    other mesh axes than its input (``operands``: the values bound to ``program``'s inputs;
    the carry is ``operands[carry_at:carry_at + n_carry]`` and the program's first outputs)."""
    body = _vma_rules.active_body()
    if body is None:
        return
    ins = [_vma_rules.value_vma(body, v) for v in operands]
    outs = _vma_rules.infer(program, ins)[:n_carry]
    carry_in = ins[carry_at:carry_at + n_carry]
    if carry_in == outs:
        return
    name = common._first_param_name(fun)

    def component(p: tuple) -> str:
        if name:
            return (f"the input carry component {name}{common._path_str(p)}" if p
                    else f"the input carry {name}")
        return f"the input carry at path {common._path_str(p)}" if p else "the input carry"

    paths = [p for p, _ in tree_util.tree_flatten_with_path(
        tree_util.tree_unflatten(in_tree, [0] * in_tree.num_leaves))[0]]
    avals = [v.aval for v in program.invars[carry_at:carry_at + n_carry]]
    bad, fixes = [], []
    for p, a, vi, vo in zip(paths, avals, carry_in, outs):
        if vi == vo:
            continue
        bad.append(f"{component(p)} has type {_vma_rules.ManualAval(a, vi, body.manual)} but the "
                   f"corresponding output carry component has type "
                   f"{_vma_rules.ManualAval(a, vo, body.manual)}, so the manual axis types do not match")
        extra = tuple(n for n in body.manual if n in vo - vi)
        if extra:
            fixes.append(f"applying `fluxion.lax.pcast(..., {extra}, to='varying')`, to the "
                         f"initial carry value corresponding to {component(p)}")
    bad[0] = bad[0][0].upper() + bad[0][1:]
    hint = ""
    if fixes:
        hint = ("This might be fixed by " + fixes[0] + ".\n" if len(fixes) == 1 else
                "This might be fixed by:\n" + common._bullets(fixes)) + "\n"
    raise TypeError(f"{api} function carry input and carry output must have equal types, but "
                    "they differ:\n\n" + common._bullets(bad) + "\n" + hint +
                    "Revise the function so that all output types match the corresponding "
                    f"input types ({common._fun_info(fun)}).")
loop_dce.install(scan_p, while_p)  # the DCE rules of the two loop primitives

"""Branching: the ``cond`` primitive (``lax.cond``, ``lax.switch``).

``cond_p`` holds one closed Program per branch (same operands, same output types) and lowers to
``stablehlo.case``, the branches emitted inline in its regions. Its derivative and batching rules
transform every branch with the shared program transformations.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.cond(True, lambda x: x + 1.0, lambda x: x - 1.0, jnp.float32(2.0)).tolist()
    3.0
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core import vma as _vma_rules
from fluxion.core.avals import ShapedArray, keep_sharding_rule
from fluxion.core.ir import Program, eval_program
from fluxion.core.primitive import Primitive
from fluxion.core.trace import set_current
from fluxion.core.tracebacks import api_boundary
from fluxion.lax._base import type_error
from fluxion.lax.control_flow.common import (
    avals_of,
    batch_to_front,
    check_program_inputs,
    check_same_outputs,
    merge_consts,
    split,
    stage,
)
from fluxion.lax.control_flow.refs import threads_refs_branches
from fluxion.lax.conversions import convert_element_type
from fluxion.lax.elementwise import clamp, ne, select_n
from fluxion.lax.shape_ops import broadcast_in_dim
from fluxion.transforms import ad, batching, partial_eval
from fluxion.transforms.staging import StagingInterpreter
from fluxion.tree_util import physical as tree_util

__all__ = ["cond", "switch", "cond_p"]

cond_p = Primitive("cond", multiple_results=True, batch_unmapped=True, materialized=True)
cond_p.sharding = keep_sharding_rule


def _cond_vma(eqn: Any, ins: list[frozenset]) -> list[frozenset]:
    # As JAX 0.10: the index's varying axes do not reach the outputs.
    outs = [_vma_rules.EMPTY] * len(eqn.outputs)
    for br in eqn.params["branches"]:
        outs = [a | b for a, b in zip(outs, _vma_rules.infer(br, ins[1:]))]
    return outs


cond_p.vma = _cond_vma


def _cond_abstract_eval(index: ShapedArray, *ops: ShapedArray,
                        branches: tuple[Program, ...]) -> list[ShapedArray]:
    if index.shape != () or index.dtype != np.dtype(np.int32):
        raise type_error("lax.cond", f"the branch index must be an int32 scalar, got "
                         f"{index.str_short()}")
    for i, b in enumerate(branches):
        check_program_inputs("lax.cond", b, ops, f"branch {i}")
    return list(branches[0].out_avals)


def _cond_lowering(ctx: Any, index: str, *ops: str, branches: tuple[Program, ...]) -> list[str]:
    known = ctx.static_value(index)
    if known is not None:
        # the index is fixed while lowering (lax.platform_dependent): emit only that branch
        return list(ctx.lower_program_inline(branches[min(max(known, 0), len(branches) - 1)],
                                             list(ops)))
    out_avals = list(ctx.avals_out)
    regions = []
    for b in branches:
        def body(rctx: Any, _args: list[str], b: Program = b) -> list[str]:
            return rctx.lower_program_inline(b, list(ops))
        regions.append(ctx.region([], body, out_avals))
    res = ctx.op("stablehlo.case", [index], result_avals=out_avals, regions=regions,
                 operand_avals=[ctx.avals_in[0]])
    return [res] if len(out_avals) == 1 else list(res)


def _cond_jvp(primals: list, tangents: list, *, branches: tuple[Program, ...]) -> tuple[list, list]:
    index, ops = primals[0], list(primals[1:])
    tans = list(tangents[1:])
    nz = [not ad.is_zero_tangent(t) for t in tans]
    n_out = len(branches[0].outvars)
    staged = [ad.jvp_program(b, nz) for b in branches]
    out_nz = [any(s[2][i] for s in staged) for i in range(n_out)]
    if any(s[2] != out_nz for s in staged):
        staged = [ad.jvp_program(b, nz, out_nz) for b in branches]
    programs, consts = merge_consts([s[0] for s in staged], [s[1] for s in staged])
    outs = cond_p.bind(index, *consts, *ops, *[t for t, z in zip(tans, nz) if z],
                       branches=tuple(programs))
    it = iter(outs[n_out:])
    t_out = [next(it) if z else ad.Zero(ad.tangent_aval(a))
             for z, a in zip(out_nz, branches[0].out_avals)]
    return list(outs[:n_out]), t_out


def _cond_partial_eval(pe: partial_eval.PartialEvalInterpreter, args: Sequence[Any], *,
                       branches: tuple[Program, ...]) -> list:
    index, ops = args[0], list(args[1:])
    if pe.is_unknown(index):
        return StagingInterpreter.process_primitive(pe, cond_p, args, dict(branches=branches))
    mask = [pe.is_unknown(a) for a in ops]
    n_out = len(branches[0].outvars)
    parts = [partial_eval.partial_eval_program(b, mask) for b in branches]
    out_unk = [any(p[3][i] for p in parts) for i in range(n_out)]
    if any(p[3] != out_unk for p in parts):  # unknown in one branch: unknown in all
        parts = [partial_eval.partial_eval_program(b, mask, instantiate=out_unk) for b in branches]
    # Each branch's residuals have their own slots in the outputs of the known cond (the other
    # branches fill them with zeros); the unknown cond's branch reads its own.
    slot_avals = [p[2].in_avals[:p[4]] for p in parts]
    all_slots = [a for s in slot_avals for a in s]
    k_avals = [ad.aval_of(a) for a, m in zip(ops, mask) if not m]
    u_avals = [ad.aval_of(a) for a, m in zip(ops, mask) if m]
    n_k = n_out - sum(out_unk)

    def known_fn(b: int) -> Callable:
        known, consts = parts[b][0], parts[b][1]

        def f(*k_args: Any) -> list:
            outs = eval_program(known, [], [*consts, *k_args])
            slots = []
            for c, avals in enumerate(slot_avals):
                slots += outs[n_k:] if c == b else [ad.zeros_like_aval(a) for a in avals]
            return outs[:n_k] + slots
        return f

    def unknown_fn(b: int) -> Callable:
        unknown = parts[b][2]

        def f(*u_args: Any) -> list:
            slots = split(u_args[:len(all_slots)], [len(s) for s in slot_avals])[b]
            return eval_program(unknown, [], [*slots, *u_args[len(all_slots):]])
        return f

    ks = [stage(known_fn(b), tuple(k_avals), k_avals) for b in range(len(parts))]
    us = [stage(unknown_fn(b), tuple(all_slots + u_avals), all_slots + u_avals)
          for b in range(len(parts))]
    k_progs, k_consts = merge_consts([s[0] for s in ks], [s[1] for s in ks])
    u_progs, u_consts = merge_consts([s[0] for s in us], [s[1] for s in us])
    with set_current(pe.parent):
        k_outs = cond_p.bind(index, *k_consts, *[a for a, m in zip(ops, mask) if not m],
                             branches=tuple(k_progs))
    u_args = [index, *u_consts, *k_outs[n_k:], *[a for a, m in zip(ops, mask) if m]]
    u_outs = StagingInterpreter.process_primitive(pe, cond_p, u_args, dict(branches=tuple(u_progs)))
    ki, ui = iter(k_outs[:n_k]), iter(u_outs)
    return [next(ui) if u else next(ki) for u in out_unk]


def _cond_transpose(cts: list, index: Any, *ops: Any, branches: tuple[Program, ...]) -> list:
    linear = [ad.is_undefined(a) for a in ops]
    if ad.is_undefined(index):
        raise TypeError("lax.cond: cannot transpose with respect to the branch index")
    n_out = len(branches[0].outvars)
    staged = [ad.transpose_program(b, linear, [True] * n_out) for b in branches]
    programs, consts = merge_consts([s[0] for s in staged], [s[1] for s in staged])
    cts = [ad.instantiate(c) for c in cts]
    outs = cond_p.bind(index, *consts, *[a for a in ops if not ad.is_undefined(a)], *cts,
                       branches=tuple(programs))
    it = iter(outs)
    return [None] + [next(it) if lin else None for lin in linear]


def _cond_batch(axis: batching.AxisData, args: Sequence[Any], dims: Sequence[Any], *,
                branches: tuple[Program, ...]) -> tuple[list, list]:
    if batching.is_unbatched(axis, dims, *branches):
        outs = cond_p.bind(*args, branches=branches)
        return outs, [None] * len(outs)
    index, ops = args[0], list(args[1:])
    idim, odims = dims[0], list(dims[1:])
    ops = [batch_to_front(x, d) for x, d in zip(ops, odims)]
    odims = [None if d is None else 0 for d in odims]
    n_out = len(branches[0].outvars)
    if idim is None:
        # Same branch for the whole batch: batch every branch; outputs batched where any is.
        first = [batching.batch_program(b, odims, axis, to_front=True) for b in branches]
        force = [any(f[2][i] is not None for f in first) for i in range(n_out)]
        staged = [batching.batch_program(b, odims, axis, to_front=True, instantiate=force)
                  for b in branches]
        programs, consts = merge_consts([s[0] for s in staged], [s[1] for s in staged])
        outs = cond_p.bind(index, *consts, *ops, branches=tuple(programs))
        return list(outs), [0 if f else None for f in force]
    # A batched index: run every branch on the whole batch and select elementwise.
    index = batch_to_front(index, idim)
    results = []
    for b in branches:
        prog, consts, _ = batching.batch_program(b, odims, axis, instantiate=True)
        results.append(eval_program(prog, [], list(consts) + ops))
    outs = []
    for i in range(n_out):
        cases = [r[i] for r in results]
        shape = tuple(cases[0].shape)
        which = broadcast_in_dim(index, shape, (0,)) if len(shape) > 1 else index
        if len(branches) == 2:
            which = convert_element_type(which, np.bool_)
        outs.append(select_n(which, *cases))
    return outs, [0] * n_out


cond_p.abstract_eval = _cond_abstract_eval
cond_p.lowering = _cond_lowering
cond_p.jvp = _cond_jvp
cond_p.partial_eval = _cond_partial_eval
cond_p.transpose = _cond_transpose
cond_p.batch = _cond_batch


def _scalar_check(api: str, what: str, x: Any) -> np.dtype:
    if x is None:
        raise TypeError(f"{api}: the {what} is None")
    if isinstance(x, (list, tuple)):
        raise TypeError(f"{api}: the {what} must be a scalar, got a {type(x).__name__}")
    shape = np.shape(x) if not hasattr(x, "shape") else tuple(x.shape)
    if shape != ():
        raise TypeError(f"{api}: the {what} must be a scalar, got a value of shape {shape}")
    try:
        return dtypes.dtype(x, canonicalize=True)
    except TypeError as e:
        raise TypeError(f"{api}: the {what} must be a boolean or a number, got {x!r}") from e


# ``operand=`` left out (None is an operand: ``cond(p, f, g, operand=None)`` calls ``f(None)``).
_NO_OPERAND: Any = object()


def _operands(api: str, operands: tuple, operand: Any) -> tuple:
    """The operands, given positionally or (the older form) as the one ``operand`` keyword."""
    if operand is _NO_OPERAND:
        return tuple(operands)
    if operands:
        raise TypeError(f"{api}: if the 'operand' keyword is passed, no positional operands can "
                        "be passed")
    return (operand,)


@threads_refs_branches
def _bind_branches(api: str, index: Any, branches: Sequence[Callable], names: Sequence[str],
                   operands: tuple) -> Any:
    leaves, in_tree = tree_util.tree_flatten(operands)
    avals = avals_of(leaves)
    # a function given as several branches is traced once (as JAX), also inside a trace
    by_id: dict[int, Any] = {}
    staged = [by_id[id(b)] if id(b) in by_id else by_id.setdefault(id(b), stage(b, operands, avals))
              for b in branches]
    programs = [s[0] for s in staged]
    trees = [s[2] for s in staged]
    ref = len(branches) - 1 if api == "cond" else 0  # cond reports true_fun first, like JAX
    for i in range(len(branches)):
        if i != ref:
            check_same_outputs(api, names[ref], names[i], branches[ref], branches[i], trees[ref],
                               programs[ref].out_avals, trees[i], programs[i].out_avals)
    # An output that every branch returns as the same operand, untouched, is that operand: it
    # is forwarded around the cond (as in JAX), so it stays unbatched under vmap with a
    # batched predicate and costs no select.
    fwd = _forwarded_operands(programs, [len(s[1]) for s in staged])
    if any(j is not None for j in fwd):
        keep = [i for i, j in enumerate(fwd) if j is None]
        programs = [Program(p.constvars, p.invars, [p.outvars[i] for i in keep], p.eqns)
                    for p in programs]
    programs, consts = merge_consts(programs, [s[1] for s in staged])
    # bound even when every output was forwarded: the jaxpr keeps the cond, as JAX's does (jit
    # drops an output-less cond without effects when it lowers)
    inner = iter(cond_p.bind(index, *consts, *leaves, branches=tuple(programs)))
    out = [next(inner) if j is None else _as_array(leaves[j], avals[j]) for j in fwd]
    return tree_util.tree_unflatten(trees[0], out)


def _as_array(x: Any, aval: ShapedArray) -> Any:
    """A forwarded operand as the array it is in the branches (a Python or NumPy scalar
    becomes an array of its aval, weak type kept)."""
    if hasattr(x, "aval") or hasattr(x, "_base_array"):  # an array, a tracer or a key array
        return x
    return convert_element_type(x, aval.dtype, weak_type=aval.weak_type)


def _forwarded_operands(programs: Sequence[Program], n_consts: Sequence[int]) -> list:
    """Per output, the operand index every branch returns unchanged there, else None."""
    fwd: list = []
    for i in range(len(programs[0].outvars)):
        common = None
        for p, nc in zip(programs, n_consts):
            args = p.invars[nc:]
            v = p.outvars[i]
            j = next((k for k, a in enumerate(args) if a is v), None)
            if j is None or (common is not None and j != common):
                common = None
                break
            common = j
        fwd.append(common)
    return fwd


@api_boundary
def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any,
         operand: Any = _NO_OPERAND) -> Any:
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, staged as one op.

    Both branches are traced (once each) and must return the same pytree structure with the same
    shapes and dtypes. ``pred`` is a scalar bool (numbers are compared with zero). Under ``vmap``
    with a batched ``pred`` both branches run and the results are selected elementwise.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.cond(jnp.int32(0), lambda x: x * 2, lambda x: -x, jnp.arange(3)).tolist()
        [0, -1, -2]
    """
    if not (callable(true_fun) and callable(false_fun)):
        # JAX's older form, still accepted by JAX (jax_md uses it):
        # cond(pred, true_operand, true_fun, false_operand, false_fun)
        if callable(false_fun) and len(operands) == 2 and callable(operands[1]):
            x_true, f_true, x_false, f_false = true_fun, false_fun, *operands
            return cond(pred, lambda x, _: f_true(x), lambda _, x: f_false(x), x_true, x_false)
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    operands = _operands("lax.cond", operands, operand)
    dt = _scalar_check("lax.cond", "predicate", pred)
    if dt.kind != "b":
        if dt.kind in "iuf":
            pred = ne(pred, np.zeros((), dt))
        else:
            raise TypeError(f"lax.cond: the predicate must be a boolean or a number, got dtype "
                            f"{dt.name}")
    index = convert_element_type(pred, np.int32)
    return _bind_branches("cond", index, [false_fun, true_fun], ["false_fun", "true_fun"],
                          operands)


@api_boundary
def switch(index: Any, branches: Sequence[Callable], *operands: Any,
           operand: Any = _NO_OPERAND) -> Any:
    """``branches[index](*operands)``, with ``index`` clamped into ``[0, len(branches) - 1]``.

    Every branch is traced once and must return the same structure, shapes and dtypes.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> fs = [lambda x: x + 1, lambda x: x * 10]
        >>> lax.switch(7, fs, jnp.int32(3)).tolist()   # index 7 is clamped to 1
        30
    """
    operands = _operands("lax.switch", operands, operand)
    dt = _scalar_check("lax.switch", "branch index", index)
    if dt.kind not in "iu":
        raise TypeError(f"lax.switch: the branch index must be an integer, got dtype {dt.name}")
    branches = tuple(branches)
    if not branches:
        raise ValueError("lax.switch: empty sequence of branches")
    if not all(callable(b) for b in branches):
        raise TypeError("lax.switch: every branch must be callable")
    if len(branches) == 1:
        return branches[0](*operands)
    idx = convert_element_type(index, np.int32)
    idx = clamp(np.int32(0), idx, np.int32(len(branches) - 1))
    return _bind_branches("switch", idx, branches,
                          [f"branch {i}" for i in range(len(branches))], operands)

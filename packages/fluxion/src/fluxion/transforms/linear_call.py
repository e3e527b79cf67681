"""``linear_call``: a function linear in some of its arguments, with a user-given transpose, as
``jax.custom_derivatives.linear_call``; the ``linear_call`` primitive and its rules."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from fluxion.core.avals import ShapedArray, keep_sharding_rule
from fluxion.core.ir import Program, eval_program
from fluxion.core.primitive import Primitive
from fluxion.transforms import ad, array_ops, batching
from fluxion.transforms.ad import (
    Zero,
    instantiate,
)
from fluxion.transforms.custom_common import _is_zero, _stage
from fluxion.transforms.staging import (
    abstractify,
)
from fluxion.tree_util import physical as tree_util

# ----------------------------------------------------------------------------- linear_call

linear_call_p = Primitive("linear_call", multiple_results=True)
linear_call_p.sharding = keep_sharding_rule


def linear_call(fun: Callable, fun_transpose: Callable, residual_args: Any,
                linear_args: Any) -> Any:
    """``fun(residual_args, linear_args)``, a function linear in ``linear_args``, whose
    transpose is ``fun_transpose(residual_args, out_cotangent) -> linear_args cotangent`` (and
    the transpose of that is ``fun`` again).

    Example:
        >>> import fluxion
        >>> div = lambda r, x: linear_call(lambda r, x: x / r, lambda r, t: t / r, r, x)
        >>> float(fluxion.linear_transpose(lambda x: div(3.0, x), 1.0)(6.0)[0])
        2.0
    """
    res, res_tree = tree_util.tree_flatten(residual_args)
    lin, lin_tree = tree_util.tree_flatten(linear_args)
    n_res = len(res)
    store: dict[str, Any] = {}

    def flat_fun(*xs: Any) -> list:
        out = fun(tree_util.tree_unflatten(res_tree, xs[:n_res]),
                  tree_util.tree_unflatten(lin_tree, xs[n_res:]))
        flat, store["out"] = tree_util.tree_flatten(out)
        return flat

    res_avals = [abstractify(x) for x in res]
    callee, consts = _stage(flat_fun, res_avals + [abstractify(x) for x in lin], "linear_call")

    def flat_transpose(*xs: Any) -> list:
        out = fun_transpose(tree_util.tree_unflatten(res_tree, xs[:n_res]),
                            tree_util.tree_unflatten(store["out"], xs[n_res:]))
        flat, tree = tree_util.tree_flatten(out)
        if tree != lin_tree:
            raise TypeError(f"linear_call: the transpose function must return the structure of "
                            f"the linear inputs, {lin_tree}; got {tree}")
        return flat

    def transpose_thunk() -> tuple[Program, list]:
        return _stage(flat_transpose, res_avals + callee.out_avals, "linear_call transpose")

    outs = linear_call_p.bind(*consts, *res, *lin, callee=callee, transpose_thunk=transpose_thunk,
                              num_callee_consts=len(consts), num_res=n_res)
    return tree_util.tree_unflatten(store["out"], outs)


def _linear_call_abstract_eval(*avals: ShapedArray, callee: Program, **params: Any) -> list:
    return callee.out_avals


def _linear_call_impl(*args: Any, callee: Program, **params: Any) -> list:
    return eval_program(callee, [], args)


def _linear_call_lowering(ctx: Any, *args: str, callee: Program, **params: Any) -> list:
    return ctx.lower_program_inline(callee, list(args))


def _linear_call_jvp(primals: list, tangents: list, **params: Any) -> tuple:
    n = params["num_callee_consts"] + params["num_res"]
    if any(type(t) is not Zero for t in tangents[:n]):
        raise TypeError("linear_call: its residual arguments cannot be differentiated (the "
                        "function is linear in the linear arguments only)")
    outs = linear_call_p.bind(*primals, **params)
    t_outs = linear_call_p.bind(*primals[:n], *[instantiate(t) for t in tangents[n:]], **params)
    return outs, t_outs


def _linear_call_transpose(cts: list, *args: Any, callee: Program, transpose_thunk: Callable,
                           num_callee_consts: int, num_res: int) -> list:
    t_callee, t_consts = transpose_thunk()
    f_consts = list(args[:num_callee_consts])
    res = args[num_callee_consts:num_callee_consts + num_res]
    cts = [ad.zeros_like_aval(a) if _is_zero(c) else c for c, a in zip(cts, callee.out_avals)]
    outs = linear_call_p.bind(*t_consts, *res, *cts, callee=t_callee,
                              transpose_thunk=lambda: (callee, f_consts),
                              num_callee_consts=len(t_consts), num_res=num_res)
    return [None] * (num_callee_consts + num_res) + list(outs)


def _linear_call_batch(axis_data: Any, args: Sequence[Any], dims: Sequence[Any], *,
                       callee: Program, transpose_thunk: Callable, num_callee_consts: int,
                       num_res: int) -> tuple[list, list]:
    # Mapped inputs move to the front and every linear input is batched (unmapped ones are
    # broadcast), so the outputs, their cotangents and the linear inputs' cotangents all carry
    # the batch at 0 and the batched transpose needs no sums over the batch.
    n = num_callee_consts + num_res
    args, dims = list(args), list(dims)
    for i, (x, d) in enumerate(zip(args, dims)):
        if i >= n or d is not None:
            args[i], dims[i] = array_ops.bdim_to_front(x, d, axis_data.size), 0
    b_callee, b_consts, _ = batching.batch_program(callee, dims, axis_data, to_front=True,
                                                   instantiate=True)
    res_dims = dims[num_callee_consts:n]

    def b_transpose() -> tuple[Program, list]:
        t_callee, t_consts = transpose_thunk()
        t_dims = [None] * len(t_consts) + res_dims + [0] * len(callee.outvars)
        bt, bt_consts, _ = batching.batch_program(t_callee, t_dims, axis_data, to_front=True,
                                                  instantiate=True)
        return bt, list(bt_consts) + list(t_consts)

    outs = linear_call_p.bind(*b_consts, *args, callee=b_callee, transpose_thunk=b_transpose,
                              num_callee_consts=len(b_consts) + num_callee_consts, num_res=num_res)
    return outs, [0] * len(outs)


linear_call_p.abstract_eval = _linear_call_abstract_eval
linear_call_p.impl = _linear_call_impl
linear_call_p.lowering = _linear_call_lowering
linear_call_p.jvp = _linear_call_jvp
linear_call_p.transpose = _linear_call_transpose
linear_call_p.batch = _linear_call_batch

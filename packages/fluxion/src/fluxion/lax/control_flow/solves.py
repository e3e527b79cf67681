"""Solves whose derivatives come from implicit differentiation
(``custom_root``, ``custom_linear_solve``).

Both are primitives that hold the staged user functions as closed Programs. Their forward value is
the user's ``solve``; their differentiation rules use the implicit function theorem instead of
differentiating through the solver's iterations.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> a = jnp.array([[2.0, 0.0], [0.0, 4.0]])
    >>> x = lax.custom_linear_solve(lambda v: a @ v, jnp.array([2.0, 2.0]),
    ...                             lambda mv, b: b / jnp.array([2.0, 4.0]))
    >>> x.tolist()
    [1.0, 0.5]
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from fluxion.core.avals import ShapedArray, keep_sharding_rule
from fluxion.core.ir import Program, eval_program
from fluxion.core.primitive import Primitive
from fluxion.lax import sharding_rules as _sh
from fluxion.lax._base import type_error
from fluxion.lax.control_flow.common import (
    avals_of,
    batch_to_front,
    check_program_inputs,
    split,
    stage,
    typematch,
)
from fluxion.lax.elementwise import neg, sub
from fluxion.transforms import ad, batching
from fluxion.transforms.array_ops import broadcast_batch
from fluxion.tree_util import physical as tree_util

__all__ = ["custom_root", "custom_linear_solve", "custom_root_p", "linear_solve_p"]


def _check_tree(api: str, what: str, expected_name: str, tree: Any, expected: Any,
                has_aux: bool) -> Any:
    """The tree of the solution part (without aux); TypeError when it differs from ``expected``."""
    if has_aux:
        children = tree_util.treedef_children(tree) if not tree_util.treedef_is_leaf(tree) else []
        if len(children) != 2:
            raise TypeError(f"{api}: {what} with has_aux=True must return a pair "
                            f"(solution, aux), got a value of structure {tree}")
        tree = children[0]
    if tree != expected:
        raise TypeError(f"{api}: {what}() output pytree structure must match {expected_name}, "
                        f"got {tree} and {expected}")
    return tree


def _check_avals(api: str, what: str, got: list[ShapedArray], want: list[ShapedArray]) -> None:
    for g, w in zip(got, want):
        if not typematch(g, w):
            raise TypeError(f"{api}: {what}() output shapes and dtypes must match the input's, "
                            f"got {[a.str_short() for a in got]} for "
                            f"{[a.str_short() for a in want]}")


def _stage_checked(api: str, what: str, expected_name: str, fun: Callable, arg: Any,
                   avals: list[ShapedArray], tree: Any, has_aux: bool) -> tuple[Program, list, Any]:
    """Stage ``fun(arg)``; TypeError when its output (without aux) differs from ``arg`` in
    structure, shapes or dtypes."""
    program, consts, out_tree = stage(fun, (arg,), avals)
    _check_tree(api, what, expected_name, out_tree, tree, has_aux)
    _check_avals(api, what, program.out_avals[:len(avals)], avals)
    return program, consts, out_tree


# =============================================================================== custom_root

custom_root_p = Primitive("custom_root", multiple_results=True, batch_unmapped=True, materialized=True)
custom_root_p.sharding = keep_sharding_rule


def _custom_root_abstract_eval(*avals: ShapedArray, const_lengths: tuple[int, int],
                               jaxprs: tuple[Program, Program], has_aux: bool,
                               tangent_solve: Callable, tree: Any) -> list[ShapedArray]:
    f_c, s_c, guess = split(avals, list(const_lengths))
    check_program_inputs("lax.custom_root", jaxprs[0], f_c + guess, "f")
    check_program_inputs("lax.custom_root", jaxprs[1], s_c + guess, "solve")
    return list(jaxprs[1].out_avals)


def _custom_root_lowering(ctx: Any, *args: str, const_lengths: tuple[int, int],
                          jaxprs: tuple[Program, Program], has_aux: bool,
                          tangent_solve: Callable, tree: Any) -> list[str]:
    _, s_c, guess = split(list(args), list(const_lengths))
    return ctx.lower_program_inline(jaxprs[1], s_c + guess)


def _batch_solve_like(prim: Primitive, axis: batching.AxisData, args: list, dims: list,
                      const_lengths: tuple, jaxprs: tuple, **params: Any) -> tuple[list, list]:
    """The batching rule of ``custom_root`` and ``custom_linear_solve``: every program batched,
    the vector operands and all outputs batched at 0."""
    if batching.is_unbatched(axis, dims, *jaxprs):
        outs = prim.bind(*args, const_lengths=const_lengths, jaxprs=jaxprs, **params)
        return outs, [None] * len(outs)
    args = [batch_to_front(x, d) for x, d in zip(args, dims)]
    dims = [None if d is None else 0 for d in dims]
    groups = split(args, list(const_lengths))
    gdims = split(dims, list(const_lengths))
    vec = [x if d is not None else broadcast_batch(x, axis.size, 0)
           for x, d in zip(groups[-1], gdims[-1])]
    new_progs, new_args, new_lengths = [], [], []
    for prog, cs, cds in zip(jaxprs, groups[:-1], gdims[:-1]):
        if prog is None:
            new_progs.append(None)
            new_lengths.append(0)
            continue
        bp, bc, _ = batching.batch_program(prog, cds + [0] * len(vec), axis, instantiate=True)
        new_progs.append(bp)
        new_args.extend(list(bc) + list(cs))
        new_lengths.append(len(bc) + len(cs))
    outs = prim.bind(*new_args, *vec, const_lengths=tuple(new_lengths), jaxprs=tuple(new_progs),
                     **params)
    return list(outs), [0] * len(outs)


def _jvp_wrt(program: Program, consts: list, x: list, nz_c: list, tc: list, nz_x: list,
             tx: list) -> list:
    """Output tangents of ``program(*consts, *x)`` for the given nonzero input tangents."""
    n_out = len(program.outvars)
    prog, cs, _ = ad.jvp_program(program, list(nz_c) + list(nz_x), True)
    ts = [t for t, z in zip(tc, nz_c) if z] + [t for t, z in zip(tx, nz_x) if z]
    return eval_program(prog, [], list(cs) + list(consts) + list(x) + ts)[n_out:]


def _custom_root_jvp(primals: list, tangents: list, *, const_lengths: tuple, jaxprs: tuple,
                     has_aux: bool, tangent_solve: Callable, tree: Any) -> tuple[list, list]:
    params = dict(const_lengths=const_lengths, jaxprs=jaxprs, has_aux=has_aux,
                  tangent_solve=tangent_solve, tree=tree)
    out = custom_root_p.bind(*primals, **params)
    f_c, _, guess = split(list(primals), list(const_lengths))
    tf = list(tangents[:const_lengths[0]])
    nz = [not ad.is_zero_tangent(t) for t in tf]
    n = len(guess)
    zeros = [ad.Zero(ad.tangent_aval(a)) for a in jaxprs[1].out_avals]
    if not any(nz):
        return list(out), zeros
    sol = list(out[:n])
    f_prog = jaxprs[0]
    rhs = _jvp_wrt(f_prog, f_c, sol, nz, tf, [False] * n, [])

    def lin(v: Any) -> Any:
        leaves = tree_util.tree_leaves(v)
        ts = _jvp_wrt(f_prog, f_c, sol, [False] * len(f_c), [], [True] * n, leaves)
        return tree_util.tree_unflatten(tree, ts)

    sol_dot = tangent_solve(lin, tree_util.tree_unflatten(tree, rhs))
    sol_dot = [neg(t) for t in tree_util.tree_leaves(sol_dot)]
    return list(out), sol_dot + zeros[n:]


custom_root_p.abstract_eval = _custom_root_abstract_eval
custom_root_p.lowering = _custom_root_lowering
custom_root_p.jvp = _custom_root_jvp
custom_root_p.batch = functools.partial(_batch_solve_like, custom_root_p)


def custom_root(f: Callable, initial_guess: Any, solve: Callable[[Callable, Any], Any],
                tangent_solve: Callable[[Callable, Any], Any], has_aux: bool = False) -> Any:
    """``solve(f, initial_guess)``, a root of ``f``, differentiated implicitly.

    Derivatives use ``f(solution) == 0``: ``tangent_solve(g, y)`` must solve the linear system
    ``g(x) = y`` for the linearisation ``g`` of ``f`` at the solution (for a scalar,
    ``lambda g, y: y / g(1.0)``). With ``has_aux``, ``solve`` returns ``(solution, aux)``.

    Example:
        >>> from fluxion import lax
        >>> def newton(f, x):
        ...     for _ in range(20):
        ...         x = x - f(x) / (2 * x)          # f'(x) = 2x for this f
        ...     return x
        >>> r = lax.custom_root(lambda x: x * x - 2.0, 1.0, newton, lambda g, y: y / g(1.0))
        >>> round(float(r), 6)
        1.414214
    """
    leaves, tree = tree_util.tree_flatten(initial_guess)
    avals = avals_of(leaves)
    api = "lax.custom_root"
    f_prog, f_consts, _ = _stage_checked(api, "f", "initial_guess", f, initial_guess, avals,
                                         tree, False)
    s_prog, s_consts, s_tree = _stage_checked(api, "solve", "initial_guess",
                                              lambda x: solve(f, x), initial_guess, avals, tree,
                                              has_aux)
    out = custom_root_p.bind(*f_consts, *s_consts, *leaves,
                             const_lengths=(len(f_consts), len(s_consts)),
                             jaxprs=(f_prog, s_prog), has_aux=bool(has_aux),
                             tangent_solve=tangent_solve, tree=tree)
    return tree_util.tree_unflatten(s_tree, out)


# =============================================================================== linear solve

linear_solve_p = Primitive("custom_linear_solve", multiple_results=True, batch_unmapped=True,
                           materialized=True)
linear_solve_p.sharding = _sh.like_b_rule

# jaxprs / const_lengths hold, in order: matvec, vecmat (its transpose), solve, transpose_solve;
# the last two may be None (not reverse-differentiable) with a const length of 0.


def _linear_solve_abstract_eval(*avals: ShapedArray, const_lengths: tuple[int, ...],
                                jaxprs: tuple, tree: Any) -> list[ShapedArray]:
    m_c, _, s_c, _, b = split(avals, list(const_lengths))
    check_program_inputs("lax.custom_linear_solve", jaxprs[0], m_c + b, "matvec")
    check_program_inputs("lax.custom_linear_solve", jaxprs[2], s_c + b, "solve")
    outs = jaxprs[2].out_avals
    if len(outs) < len(b):
        raise type_error("lax.custom_linear_solve", "solve returns fewer values than b has")
    return list(outs)


def _linear_solve_lowering(ctx: Any, *args: str, const_lengths: tuple[int, ...], jaxprs: tuple,
                           tree: Any) -> list[str]:
    _, _, s_c, _, b = split(list(args), list(const_lengths))
    return ctx.lower_program_inline(jaxprs[2], s_c + b)


def _linear_solve_jvp(primals: list, tangents: list, **params: Any) -> tuple[list, list]:
    const_lengths, jaxprs = params["const_lengths"], params["jaxprs"]
    out = linear_solve_p.bind(*primals, **params)
    groups = split(list(primals), list(const_lengths))
    tgroups = split(list(tangents), list(const_lengths))
    m_c, b = groups[0], groups[-1]
    tm, tb = tgroups[0], tgroups[-1]
    n = len(b)
    zeros = [ad.Zero(ad.tangent_aval(a)) for a in jaxprs[2].out_avals]
    nzm = [not ad.is_zero_tangent(t) for t in tm]
    nzb = [not ad.is_zero_tangent(t) for t in tb]
    if not any(nzm) and not any(nzb):
        return list(out), zeros
    rhs = [ad.zeros_like_aval(ad.tangent_aval(v.aval)) if not z else t
           for t, z, v in zip(tb, nzb, jaxprs[0].outvars)]
    if any(nzm):
        m_dot = _jvp_wrt(jaxprs[0], m_c, list(out[:n]), nzm, tm, [False] * n, [])
        rhs = [sub(r, d) for r, d in zip(rhs, m_dot)]
    consts = [c for g in groups[:-1] for c in g]
    x_dot = linear_solve_p.bind(*consts, *rhs, **params)
    return list(out), list(x_dot[:n]) + zeros[n:]


def _linear_solve_transpose(cts: list, *args: Any, const_lengths: tuple, jaxprs: tuple,
                            tree: Any) -> list:
    if jaxprs[3] is None:
        raise TypeError("transpose_solve required for backwards mode automatic differentiation "
                        "of custom_linear_solve")
    m_c, v_c, s_c, t_c, b = split(list(args), list(const_lengths))
    if any(ad.is_undefined(a) for a in m_c + v_c + s_c + t_c):
        raise NotImplementedError("custom_linear_solve: transposing with respect to the "
                                  "operator's constants is not supported")
    n = len(b)
    ct_x = [ad.instantiate(c) for c in cts[:n]]
    m, v, s, t = jaxprs
    ct_b = linear_solve_p.bind(*v_c, *m_c, *t_c, *s_c, *ct_x,
                               const_lengths=(len(v_c), len(m_c), len(t_c), len(s_c)),
                               jaxprs=(v, m, t, s), tree=tree)
    return [None] * sum(const_lengths) + list(ct_b[:n])


linear_solve_p.abstract_eval = _linear_solve_abstract_eval
linear_solve_p.lowering = _linear_solve_lowering
linear_solve_p.jvp = _linear_solve_jvp
linear_solve_p.transpose = _linear_solve_transpose
linear_solve_p.batch = functools.partial(_batch_solve_like, linear_solve_p)


def custom_linear_solve(matvec: Callable, b: Any, solve: Callable[[Callable, Any], Any],
                        transpose_solve: Callable[[Callable, Any], Any] | None = None,
                        symmetric: bool = False, has_aux: bool = False) -> Any:
    """``x = solve(matvec, b)`` for the linear system ``matvec(x) == b``, differentiated
    implicitly (the derivative solves another linear system instead of differentiating
    ``solve``). Reverse mode needs ``transpose_solve(vecmat, b)``; ``symmetric=True`` says the
    operator is its own transpose.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> d = jnp.array([1.0, 2.0, 4.0])
        >>> lax.custom_linear_solve(lambda x: d * x, jnp.ones(3), lambda mv, b: b / d).tolist()
        [1.0, 0.5, 0.25]
    """
    leaves, tree = tree_util.tree_flatten(b)
    avals = avals_of(leaves)
    api = "lax.custom_linear_solve"
    m_prog, m_consts, _ = _stage_checked(api, "matvec", "b", matvec, b, avals, tree, False)
    s_prog, s_consts, s_tree = _stage_checked(api, "solve", "b", lambda v: solve(matvec, v), b,
                                              avals, tree, has_aux)
    v_prog = t_prog = None
    v_consts: list = []
    t_consts: list = []
    if transpose_solve is not None:
        if symmetric:
            vecmat = matvec
            v_prog, v_consts = m_prog, m_consts
        else:
            mt = ad.linear_transpose(matvec, b)

            def vecmat(v: Any) -> Any:
                return mt(v)[0]
            v_prog, v_consts, _ = stage(vecmat, (b,), avals)
        t_prog, t_consts, t_tree = stage(lambda v: transpose_solve(vecmat, v), (b,), avals)
        _check_tree("lax.custom_linear_solve", "transpose_solve", "b", t_tree, tree, has_aux)
    out = linear_solve_p.bind(*m_consts, *v_consts, *s_consts, *t_consts, *leaves,
                              const_lengths=(len(m_consts), len(v_consts), len(s_consts),
                                             len(t_consts)),
                              jaxprs=(m_prog, v_prog, s_prog, t_prog), tree=tree)
    return tree_util.tree_unflatten(s_tree, out)

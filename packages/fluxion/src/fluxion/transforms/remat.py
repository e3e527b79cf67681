"""Rematerialisation: ``checkpoint`` (alias ``remat``) trades compute for memory in reverse mode.

Under differentiation, a checkpointed function saves only what its ``policy`` allows as
residuals (by default: nothing but its inputs) and recomputes the rest in the backward pass. The
function is staged to a Program and bound as the ``remat`` call primitive; its JVP is a new
``remat`` call, and its partial evaluation splits known and unknown work by the policy.

Policies are ``policy(prim, *avals, **params) -> bool`` (True: the equation's output may be
saved). ``checkpoint_name(x, name)`` tags a value for the name-based policies.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> f = fluxion.checkpoint(lambda x: jnp.sin(jnp.sin(x)))
    >>> round(float(fluxion.grad(f)(1.0)), 4)
    0.36
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from fluxion.core import vma as _vma_rules
from fluxion.core.avals import keep_sharding_rule
from fluxion.core.ir import Program, eval_program
from fluxion.core.primitive import Primitive
from fluxion.core.tracebacks import api_boundary, wraps
from fluxion.transforms import ad, batching, partial_eval
from fluxion.transforms.staging import (
    abstractify,
    close_program,
    fun_name,
    partial_at,
    trace_to_program,
)
from fluxion.tree_util import physical as tree_util

__all__ = ["checkpoint", "remat", "checkpoint_name", "checkpoint_policies", "remat_p", "name_p"]


# ----------------------------------------------------------------------------- checkpoint_name

name_p = Primitive("name")
name_p.abstract_eval = lambda x, *, name: x
name_p.lowering = lambda ctx, x, *, name: x
name_p.impl = lambda x, *, name: x


def _name_jvp(primals: list, tangents: list, *, name: Any) -> tuple:
    return name_p.bind(primals[0], name=name), tangents[0]


name_p.jvp = _name_jvp
name_p.transpose = lambda ct, x, *, name: [ct]
name_p.batch = lambda axis_data, args, dims, *, name: (name_p.bind(args[0], name=name), dims[0])


def checkpoint_name(x: Any, name: Any) -> Any:
    """Tag ``x`` (a pytree of arrays) with ``name`` for ``save_only_these_names`` & co.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> float(fluxion.checkpoint_name(jnp.float32(2.0), "h"))
        2.0
    """
    return tree_util.tree_map(lambda a: name_p.bind(a, name=name), x)


# ----------------------------------------------------------------------------- policies

def _is_dot(prim: Any) -> bool:
    return prim.name == "dot_general"


class checkpoint_policies:
    """The standard rematerialisation policies (JAX's names)."""

    @staticmethod
    def everything_saveable(prim: Any, *avals: Any, **params: Any) -> bool:
        """Save every intermediate (no recomputation)."""
        return True

    @staticmethod
    def nothing_saveable(prim: Any, *avals: Any, **params: Any) -> bool:
        """Save only the checkpointed function's inputs; recompute everything else."""
        return False

    @staticmethod
    def dots_saveable(prim: Any, *avals: Any, **params: Any) -> bool:
        """Save the results of matrix products."""
        return _is_dot(prim)

    checkpoint_dots = dots_saveable

    @staticmethod
    def dots_with_no_batch_dims_saveable(prim: Any, *avals: Any, **params: Any) -> bool:
        """Save the results of matrix products without batch dimensions."""
        if not _is_dot(prim):
            return False
        (_, _), (lb, rb) = params["dimension_numbers"]
        return not lb and not rb

    checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable

    @staticmethod
    def save_only_these_names(*names: Any) -> Callable:
        """Save only values tagged by ``checkpoint_name`` with one of ``names``."""
        ns = frozenset(names)

        def policy(prim: Any, *avals: Any, **params: Any) -> bool:
            return prim is name_p and params["name"] in ns
        return policy

    @staticmethod
    def save_anything_except_these_names(*names: Any) -> Callable:
        """Save everything except values tagged with one of ``names``."""
        ns = frozenset(names)

        def policy(prim: Any, *avals: Any, **params: Any) -> bool:
            return not (prim is name_p and params["name"] in ns)
        return policy

    @staticmethod
    def save_any_names_but_these(*names: Any) -> Callable:
        """Save every tagged value except those tagged with one of ``names``."""
        ns = frozenset(names)

        def policy(prim: Any, *avals: Any, **params: Any) -> bool:
            return prim is name_p and params["name"] not in ns
        return policy

    @staticmethod
    def save_from_both_policies(p1: Callable, p2: Callable) -> Callable:
        """Save what either policy saves."""
        def policy(prim: Any, *avals: Any, **params: Any) -> bool:
            return p1(prim, *avals, **params) or p2(prim, *avals, **params)
        return policy


# ----------------------------------------------------------------------------- remat_p

remat_p = Primitive("remat2", multiple_results=True)  # JAX's name for it
remat_p.sharding = keep_sharding_rule
remat_p.vma = _vma_rules.call_rule
remat_p.abstract_eval = lambda *avals, program, prevent_cse, policy: program.out_avals
remat_p.impl = lambda *args, program, prevent_cse, policy: eval_program(program, [], args)
remat_p.lowering = (lambda ctx, *args, program, prevent_cse, policy:
                    ctx.lower_program_inline(program, list(args)))


def _remat_jvp(primals: list, tangents: list, *, program: Program, prevent_cse: bool,
               policy: Any) -> tuple:
    return ad.jvp_call(program, primals, tangents, lambda jvp, args: remat_p.bind(
        *args, program=jvp, prevent_cse=prevent_cse, policy=policy))


def _remat_partial_eval(pe: Any, args: Sequence[Any], *, program: Program, prevent_cse: bool,
                        policy: Any) -> list:
    # The known part runs inline, now (its residuals are what the policy saves); the unknown
    # part is a new checkpoint, recomputing what the policy did not save.
    return partial_eval.partial_eval_call(
        pe, remat_p, program, args, policy, lambda known, k_args: eval_program(known, [], k_args),
        lambda unknown, n_args: dict(program=unknown, prevent_cse=prevent_cse, policy=policy))


def _remat_transpose(cts: list, *args: Any, program: Program, prevent_cse: bool,
                     policy: Any) -> list:
    cts_in = iter(ad.backward_pass(program, [], list(args), cts))
    return [next(cts_in) if ad.is_undefined(a) else None for a in args]


def _remat_batch(axis_data: Any, args: Sequence[Any], dims: Sequence[Any], *, program: Program,
                 prevent_cse: bool, policy: Any) -> tuple:
    new, consts, out_dims = batching.batch_program(program, dims, axis_data)
    outs = remat_p.bind(*consts, *args, program=new, prevent_cse=prevent_cse, policy=policy)
    return outs, list(out_dims)


remat_p.jvp = _remat_jvp
remat_p.partial_eval = _remat_partial_eval
remat_p.split_policy = lambda eqn: eqn.params["policy"]
remat_p.transpose = _remat_transpose
remat_p.batch = _remat_batch


def checkpoint(fun: Callable, *, prevent_cse: bool = True, policy: Callable | None = None,
               static_argnums: int | Sequence[int] = ()) -> Callable:
    """Make ``fun`` recompute its intermediates in the backward pass instead of saving them
    (except those ``policy`` allows).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> f = fluxion.checkpoint(jnp.sin, policy=fluxion.checkpoint_policies.nothing_saveable)
        >>> float(fluxion.grad(f)(0.0))
        1.0
    """
    statics = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    pol = checkpoint_policies.nothing_saveable if policy is None else policy
    name = fun_name(fun)

    @api_boundary
    @wraps(fun)
    def remat_f(*args: Any, **kwargs: Any) -> Any:
        # Staged also outside any transformation, as in JAX: ``fun`` always runs under a trace
        # (libraries detect impure use of their state through the trace level: haiku).
        st = {i % len(args): args[i] for i in statics}
        dyn_idx = [i for i in range(len(args)) if i not in st]

        f_dyn = partial_at(fun, args, dyn_idx)

        dyn = tuple(args[i] for i in dyn_idx)
        leaves = tree_util.tree_leaves((dyn, kwargs))
        avals = [abstractify(x) for x in leaves]
        program, consts, out_tree = trace_to_program(f_dyn, dyn, kwargs, in_avals=avals,
                                                     description=f"checkpoint of {name}")
        outs = remat_p.bind(*consts, *leaves, program=close_program(program),
                            prevent_cse=prevent_cse, policy=pol)
        return tree_util.tree_unflatten(out_tree, outs)

    return remat_f


remat = checkpoint

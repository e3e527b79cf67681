"""``fluxion.custom_batching``: functions with their own rule under ``vmap`` (JAX's
``jax.custom_batching``).

``custom_vmap(f)`` behaves as ``f`` everywhere, except under ``vmap``, where the rule set with
``def_vmap`` runs instead: ``rule(axis_size, in_batched, *args) -> (out, out_batched)``, with
every batched argument carrying the batch on its leading axis and ``in_batched``/``out_batched``
pytrees of bools. Under ``jvp`` the rule is differentiated with ``f`` (``vmap(jvp(f))`` runs
the JVP of the rule, as in JAX). Reverse mode (``grad``, ``vjp``), which JAX refuses for
``custom_vmap`` functions, differentiates ``f`` itself.
``sequential_vmap(f)`` is a ``custom_vmap`` whose rule runs ``f`` once per batch member in a
loop (``lax.map``).

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> from fluxion.custom_batching import custom_vmap
    >>> @custom_vmap
    ... def f(x):
    ...     return jnp.sin(x)
    >>> @f.def_vmap
    ... def rule(axis_size, in_batched, x):
    ...     return jnp.cos(x), in_batched[0]
    >>> float(f(0.0)), fluxion.vmap(f)(jnp.zeros(2)).tolist()
    (0.0, [1.0, 1.0])
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from fluxion import lax
from fluxion.core import vma as _vma_rules
from fluxion.core.avals import ShapedArray
from fluxion.core.ir import Program
from fluxion.core.primitive import Primitive
from fluxion.transforms import ad, batching, partial_eval
from fluxion.transforms import tangents as tangents_mod
from fluxion.transforms.array_ops import bdim_to_front
from fluxion.transforms.call import jit_p
from fluxion.transforms.staging import abstractify, close_program, trace_to_program
from fluxion.tree_util import physical as tree_util

__all__ = ["custom_vmap", "sequential_vmap", "custom_vmap_call_p"]

custom_vmap_call_p = Primitive("custom_vmap_call", multiple_results=True)
custom_vmap_call_p.vma = _vma_rules.call_rule


def _abstract_eval(*avals: ShapedArray, program: Program, rule: Any, in_tree: Any,
                   out_tree: Any, name: str) -> list[ShapedArray]:
    return program.out_avals


def _lowering(ctx: Any, *args: str, program: Program, rule: Any, in_tree: Any, out_tree: Any,
              name: str) -> list[str]:
    return ctx.call_program(program, list(args), name)


def _jvp(primals: list, tangents: list, *, program: Program, rule: Any, in_tree: Any,
         out_tree: Any, name: str) -> tuple[list, list]:
    # As JAX: the JVP is again a custom_vmap call, over (primals, tangents), whose rule is the
    # JVP of the user's rule, so vmap(jvp(f)) batches by that rule too. Reverse mode splits it
    # into plain calls (_partial_eval), differentiating ``f`` itself (JAX refuses reverse mode).
    tangents = [tangents_mod.instantiate(t) for t in tangents]
    jvp, consts, out_nz = ad.jvp_program(program, [True] * len(primals), instantiate=True)
    if consts or not all(out_nz):
        # constants captured by the JVP, or outputs without tangents (integers): a plain call
        def bind(jvp: Program, args: list) -> Any:
            return jit_p.bind(*args, program=jvp, name=name, donated=(False,) * len(args))
        return ad.jvp_call(program, primals, tangents, bind)
    pair_in = tree_util.treedef_tuple((in_tree, in_tree))
    pair_out = tree_util.treedef_tuple((out_tree, out_tree))
    outs = custom_vmap_call_p.bind(*primals, *tangents, program=jvp,
                                   rule=_JvpOfRule(rule, in_tree, out_tree), in_tree=pair_in,
                                   out_tree=pair_out, name=name)
    n = len(program.outvars)
    return list(outs[:n]), list(outs[n:])


class _JvpOfRule:
    """The batching rule of a custom_vmap call's JVP: ``(primals, tangents)`` batched where
    both are go to the user's rule (under ``jvp``); a primal or tangent batched alone is
    batched over by ordinary ``vmap`` of that JVP, as JAX's ``custom_vmap_jvp``."""

    def __init__(self, rule: Any, in_tree: Any, out_tree: Any) -> None:
        self.rule, self.in_tree, self.out_tree = rule, in_tree, out_tree

    def _key(self) -> tuple:
        return (self.rule, self.in_tree, self.out_tree)

    def __eq__(self, other: object) -> bool:  # equal programs for equal rules (caches)
        return type(other) is _JvpOfRule and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __call__(self, axis_size: int, in_batched: list, primals: Any, tangents: Any
                 ) -> tuple[Any, Any]:
        p_flags, t_flags = (tree_util.tree_leaves(b) for b in in_batched)
        both = [p and t for p, t in zip(p_flags, t_flags)]
        rule_batched = list(tree_util.tree_unflatten(self.in_tree, both))
        n_in, n_out = len(both), self.out_tree.num_leaves
        rule_out_flags: list = []

        def rule_jvp(ins: list) -> list:
            def call(*ps: Any) -> Any:
                out, out_batched = self.rule(axis_size, rule_batched,
                                             *tree_util.tree_unflatten(self.in_tree, list(ps)))
                flags = tree_util.tree_leaves(out_batched)
                rule_out_flags[:] = flags * n_out if len(flags) == 1 else flags
                return out
            out, out_t = ad.jvp(call, tuple(ins[:n_in]), tuple(ins[n_in:]))
            return [*tree_util.tree_leaves(out), *tree_util.tree_leaves(out_t)]

        args = [*tree_util.tree_leaves(primals), *tree_util.tree_leaves(tangents)]
        dims = ([0 if p and not t else None for p, t in zip(p_flags, t_flags)]
                + [0 if t and not p else None for p, t in zip(p_flags, t_flags)])
        if any(d is not None for d in dims):
            vals, out_dims = batching.batch_subtrace(batching.AxisData(None, axis_size), rule_jvp,
                                                     args, dims)
            vals = [v if d is None else bdim_to_front(v, d, axis_size)
                    for v, d in zip(vals, out_dims)]
        else:
            vals, out_dims = rule_jvp(args), [None] * (2 * n_out)
        if len(rule_out_flags) != n_out:
            raise ValueError(f"custom_vmap rule {getattr(self.rule, '__name__', self.rule)}: "
                             f"out_batched must be a pytree of bools matching the output "
                             f"{self.out_tree}")
        flags = [bool(b) or d is not None
                 for b, d in zip(rule_out_flags * 2, out_dims)]
        unflat = lambda xs: (tree_util.tree_unflatten(self.out_tree, xs[:n_out]),  # noqa: E731
                             tree_util.tree_unflatten(self.out_tree, xs[n_out:]))
        return unflat(vals), unflat(flags)


def _partial_eval(pe: partial_eval.PartialEvalInterpreter, args: Sequence[Any], *,
                  program: Program, rule: Any, in_tree: Any, out_tree: Any, name: str) -> list:
    # linearizing (grad, vjp): the known and the unknown (linear) parts become plain calls
    return partial_eval.partial_eval_call(
        pe, jit_p, program, args, None,
        lambda known, k_args: jit_p.bind(*k_args, program=known, name=name,
                                         donated=(False,) * len(k_args)),
        lambda unknown, n_args: dict(program=unknown, name=name, donated=(False,) * n_args))


def _batch(axis: batching.AxisData, args: Sequence[Any], dims: Sequence[Any], *,
           program: Program, rule: Any, in_tree: Any, out_tree: Any, name: str
           ) -> tuple[list, list]:
    in_batched = [d is not None for d in dims]
    moved = [bdim_to_front(x, d, axis.size) if d is not None else x for x, d in zip(args, dims)]
    args_tree = tree_util.tree_unflatten(in_tree, moved)
    batched_tree = tree_util.tree_unflatten(in_tree, in_batched)
    out, out_batched = rule(axis.size, list(batched_tree), *args_tree)
    out_leaves, tree = tree_util.tree_flatten(out)
    if tree != out_tree:
        raise ValueError(f"custom_vmap rule of {name}: it returned a value of structure {tree}, "
                         f"but the function returns {out_tree}")
    flags = tree_util.tree_leaves(out_batched)
    if len(flags) == 1 and len(out_leaves) != 1:
        flags = flags * len(out_leaves)
    if len(flags) != len(out_leaves) or not all(isinstance(b, bool) for b in flags):
        raise ValueError(f"custom_vmap rule of {name}: out_batched must be a pytree of bools "
                         f"matching the output {out_tree}, got {out_batched!r}")
    return out_leaves, [0 if b else None for b in flags]


custom_vmap_call_p.abstract_eval = _abstract_eval
custom_vmap_call_p.lowering = _lowering
custom_vmap_call_p.jvp = _jvp
custom_vmap_call_p.partial_eval = _partial_eval
custom_vmap_call_p.batch = _batch


class custom_vmap:
    """Wrap ``fun`` so that ``vmap`` uses the rule given with :meth:`def_vmap`.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion.custom_batching import custom_vmap
        >>> f = custom_vmap(lambda x: x + 1.0)
        >>> f.def_vmap(lambda n, batched, x: (x * 0.0, batched[0]))  # doctest: +ELLIPSIS
        <function <lambda> at ...>
        >>> fluxion.vmap(f)(jnp.ones(2)).tolist()
        [0.0, 0.0]
    """

    def __init__(self, fun: Callable[..., Any]) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule: Callable[..., Any] | None = None

    def def_vmap(self, vmap_rule: Callable[..., Any]) -> Callable[..., Any]:
        """Set the rule ``vmap_rule(axis_size, in_batched, *args) -> (out, out_batched)``."""
        self.vmap_rule = vmap_rule
        return vmap_rule

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = getattr(self.fun, "__name__", "custom_vmap")
        if self.vmap_rule is None:
            raise AttributeError(f"No batching rule defined for custom_vmap function {name} "
                                 "using def_vmap.")
        if kwargs:
            raise TypeError(f"custom_vmap function {name}: keyword arguments are not "
                            "supported; pass them positionally")
        leaves, in_tree = tree_util.tree_flatten(args)
        avals = [abstractify(x) for x in leaves]
        program, consts, out_tree = trace_to_program(
            lambda *a: self.fun(*a), args, {}, in_avals=avals,
            description=f"custom_vmap function {name}")
        if consts:
            # closed-over arrays: the rule needs them too, so they are ordinary captured values
            return self.fun(*args)
        outs = custom_vmap_call_p.bind(*leaves, program=close_program(program),
                                       rule=self.vmap_rule, in_tree=in_tree, out_tree=out_tree,
                                       name=name)
        return tree_util.tree_unflatten(out_tree, outs)


def sequential_vmap(f: Callable[..., Any]) -> custom_vmap:
    """``f`` batched by a loop: under ``vmap`` it runs once per batch member (``lax.map``),
    for functions that cannot (or should not) be vectorised.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion.custom_batching import sequential_vmap
        >>> fluxion.vmap(sequential_vmap(jnp.sum))(jnp.ones((3, 2))).tolist()
        [2.0, 2.0, 2.0]
    """
    f = custom_vmap(f)

    @f.def_vmap
    def rule(axis_size: int, in_batched: list, *args: Any) -> tuple[Any, Any]:
        flags = tree_util.tree_leaves(in_batched)
        leaves, tree = tree_util.tree_flatten(args)
        batched = [x for x, b in zip(leaves, flags) if b]

        def one(members: list) -> Any:
            it = iter(members)
            full = [next(it) if b else x for x, b in zip(leaves, flags)]
            return f.fun(*tree_util.tree_unflatten(tree, full))

        out = lax.map(one, batched)
        return out, tree_util.tree_map(lambda _: True, out)

    return f

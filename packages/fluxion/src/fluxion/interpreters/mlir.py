"""``fluxion.interpreters.mlir`` (JAX's ``jax.interpreters.mlir``): the lowering rules of
primitives, for primitives that libraries define themselves.

``register_lowering(p, lower_fun(fun, multiple_results))`` lowers primitive ``p`` by tracing
``fun`` (written with ``fluxion.numpy``/``lax``) on the primitive's input avals and emitting its
program in place of each ``p`` in a compiled program: this is how ``jit`` compiles a
primitive that has only an eager implementation. A rule is called as JAX calls it,
``rule(ctx, *operands, **params)`` returning a list with one value per output; ``ctx`` is
Fluxion's lowering context (``ctx.avals_in``, ``ctx.avals_out``, ``ctx.platform``), and values
are Fluxion's StableHLO SSA names. ``emit_python_callback`` emits a host callback from such a
rule, as JAX's does. Rules that build MLIR with JAX's own builders (``ir``,
``hlo``, ``LoweringRuleContext`` internals) have no counterpart: Fluxion writes StableHLO text,
not MLIR objects (docs/guide/coming-from-jax.md).

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> from fluxion.extend.core import Primitive
    >>> softplus_p = Primitive("doc_softplus")
    >>> _ = softplus_p.def_impl(lambda x: jnp.logaddexp(x, 0.0))
    >>> _ = softplus_p.def_abstract_eval(lambda x: x)
    >>> _ = register_lowering(softplus_p, lower_fun(lambda x: jnp.logaddexp(x, 0.0),
    ...                                             multiple_results=False))
    >>> round(float(fluxion.jit(softplus_p.bind)(0.0)), 4)
    0.6931
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from fluxion.backend.callback import emit_host_callback
from fluxion.backend.lowering import RuleContext
from fluxion.core.avals import ShapedArray
from fluxion.interpreters import _not_provided
from fluxion.transforms.staging import trace_to_program

__all__ = ["lower_fun", "register_lowering", "emit_python_callback"]

# JAX's platform names -> Fluxion's (a GPU rule serves both GPU platforms)
_PLATFORMS = {"gpu": ("cuda", "rocm"), "cuda": ("cuda",), "rocm": ("rocm",), "cpu": ("cpu",),
              "tpu": ("tpu",)}


def lower_fun(fun: Callable[..., Any], multiple_results: bool = True) -> Callable[..., Any]:
    """A lowering rule that emits ``fun`` (a function of arrays written with ``fluxion.numpy`` /
    ``lax``, called with the operands and the primitive's parameters as keywords) traced on the
    operands' avals. ``multiple_results=False``: ``fun`` returns one array.

    Example:
        >>> rule = lower_fun(lambda x, *, k: x * k, multiple_results=False)
        >>> callable(rule)
        True
    """
    def lowered(ctx: Any, *args: str, **params: Any) -> list[str]:
        avals = [ShapedArray(a.shape, a.dtype) for a in ctx.avals_in]

        def flat(*xs: Any) -> list:
            out = fun(*xs, **params)
            return list(out) if multiple_results else [out]

        program, consts, _ = trace_to_program(flat, tuple(avals), {}, in_avals=avals,
                                              description="lower_fun")
        cargs = []
        for c in consts:
            c = np.asarray(c)
            cargs.append(ctx.constant(c, ShapedArray(c.shape, c.dtype)))
        return list(ctx.lower_program_inline(program, cargs + list(args)))
    lowered.__name__ = f"lower_fun({getattr(fun, '__name__', 'fun')})"
    return lowered


def register_lowering(prim: Any, rule: Callable[..., Any], platform: str | None = None,
                      **kwargs: Any) -> Callable[..., Any]:
    """Sets ``prim``'s lowering to ``rule`` (for every platform, or only for ``platform``:
    ``'cpu'``, ``'gpu'``, ``'cuda'``, ``'rocm'``, ``'tpu'``). ``rule(ctx, *operands, **params)``
    returns a list of values, one per output, as JAX's rules do (see :func:`lower_fun`).

    Example:
        >>> from fluxion.extend.core import Primitive
        >>> p = Primitive("doc_lowered")
        >>> _ = register_lowering(p, lower_fun(lambda x: x, multiple_results=False), "cpu")
        >>> sorted(p.platform_lowerings)
        ['cpu']
    """
    def fluxion_rule(ctx: Any, *args: str, **params: Any) -> Any:
        outs = rule(ctx, *args, **params)
        if prim.multiple_results:
            return list(outs)
        if isinstance(outs, str):
            return outs
        outs = list(outs)
        if len(outs) != 1:
            raise ValueError(f"register_lowering: the rule of {prim.name} gave {len(outs)} "
                             f"values for its one output")
        return outs[0]

    if platform is None:
        prim.lowering = fluxion_rule
    else:
        names = _PLATFORMS.get(platform)
        if names is None:
            raise ValueError(f"register_lowering: unknown platform {platform!r} for "
                             f"{prim.name} (one of {sorted(_PLATFORMS)})")
        for name in names:
            prim.platform_lowerings[name] = fluxion_rule
    return rule


def emit_python_callback(ctx: Any, callback: Callable[..., Any], token: Any,
                         operands: Sequence[str], operand_avals: Sequence[ShapedArray],
                         result_avals: Sequence[ShapedArray], *, has_side_effect: bool,
                         returns_token: bool = True, partitioned: bool = False,
                         sharding: Any = None) -> tuple[list[str], Any, Any]:
    """From inside a lowering rule, emit a call back to Python: ``callback(*operands)`` runs on
    the host with NumPy arrays of ``operand_avals`` and returns one array per ``result_avals``
    (checked). Returns ``(results, token, keepalive)`` as JAX's does; ``token`` must be None
    (Fluxion threads the tokens of ordered effects itself), and the returned token is None.
    ``keepalive`` is the host callable (the module already keeps it; ``add_keepalive`` is
    harmless).

    Example:
        >>> import fluxion, numpy as np
        >>> from fluxion.extend.core import Primitive
        >>> twice_p = Primitive("doc_host_twice")
        >>> _ = twice_p.def_abstract_eval(lambda x: x)
        >>> def rule(ctx, x):
        ...     outs, _, keep = emit_python_callback(ctx, lambda a: (2 * a,), None, [x],
        ...                                          ctx.avals_in, ctx.avals_out,
        ...                                          has_side_effect=False)
        ...     ctx.module_context.add_keepalive(keep)
        ...     return outs
        >>> _ = register_lowering(twice_p, rule)
        >>> float(fluxion.jit(twice_p.bind)(np.float32(1.5)))
        3.0
    """
    if token is not None:
        raise NotImplementedError(
            "emit_python_callback: Fluxion's lowering rules receive no effect tokens (ordered "
            "callbacks thread them inside Fluxion); pass token=None")
    if partitioned and result_avals:
        raise ValueError("Partitioned callback not supported with return values.")
    op_avals = [ShapedArray(a.shape, a.dtype) for a in operand_avals]
    res_avals = [ShapedArray(a.shape, a.dtype) for a in result_avals]
    sub = RuleContext(ctx.fn, op_avals, res_avals, getattr(ctx, "source", None))
    results = emit_host_callback(sub, "emit_python_callback", callback, list(operands),
                                 res_avals, ordered=False, side_effect=has_side_effect)
    return list(results), None, callback


__getattr__ = _not_provided("jax.interpreters.mlir")

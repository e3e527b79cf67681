"""``fluxion.interpreters.ad`` (JAX's ``jax.interpreters.ad``): the differentiation rules of
primitives, for primitives that libraries define themselves.

``primitive_jvps[p] = rule`` and ``primitive_transposes[p] = rule`` set the ``jvp`` and
``transpose`` rules of a :class:`~fluxion.extend.core.Primitive`; the rules have JAX's calling
conventions, which are Fluxion's: ``jvp(primals, tangents, **params) -> (out, tangent_out)`` with
symbolic :class:`Zero` tangents, ``transpose(ct, *args, **params)`` with the linear inputs marked
:class:`UndefinedPrimal` (``is_undefined_primal``), returning one cotangent (or ``None``) per
input. ``defjvp``, ``defjvp2``, ``deflinear``, ``deflinear2`` and ``defbilinear`` build them as
JAX does. JAX's tracing internals (``jvp``, ``linearize`` on linear_util functions,
``JVPTrace``) have no counterpart and raise an ``AttributeError`` (docs/guide/coming-from-jax.md);
``JVPTracer`` is Fluxion's tracer class.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> from fluxion.extend.core import Primitive
    >>> cube_p = Primitive("doc_cube")
    >>> _ = cube_p.def_impl(lambda x: x ** 3)
    >>> _ = cube_p.def_abstract_eval(lambda x: x)
    >>> defjvp(cube_p, lambda g, x: 3 * x ** 2 * g)
    >>> float(fluxion.grad(cube_p.bind)(2.0))
    12.0
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from fluxion.interpreters import _not_provided, _RuleTable
from fluxion.transforms.ad import (
    JVPTracer,
    UndefinedPrimal,
    Zero,
    add_any,
    add_any_p,
    instantiate,
    is_undefined,
    zeros_like_aval,
)
from fluxion.transforms.ad import add_tangents as _add_tangents

__all__ = ["JVPTracer", "UndefinedPrimal", "Zero", "add_jaxvals", "add_jaxvals_p",
           "add_tangents", "defbilinear", "defjvp", "defjvp2", "deflinear", "deflinear2",
           "get_primitive_transpose", "instantiate_zeros", "is_undefined_primal",
           "primitive_jvps", "primitive_transposes", "zeros_like_aval"]

def _tupled_jvp(rule: Callable[..., Any], prim: Any) -> Callable[..., Any]:
    # JAX hands a jvp rule its primals and tangents as tuples (a rule may use them as pytrees)
    def jvp(primals: Any, tangents: Any, **params: Any) -> Any:
        return rule(tuple(primals), tuple(tangents), **params)
    return jvp


primitive_jvps = _RuleTable("jvp", "jax.interpreters.ad.primitive_jvps", wrap=_tupled_jvp)
primitive_transposes = _RuleTable("transpose", "jax.interpreters.ad.primitive_transposes")

add_jaxvals = add_any
add_jaxvals_p = add_any_p


def is_undefined_primal(x: Any) -> bool:
    """True for a linear input of a primitive being transposed (an :class:`UndefinedPrimal`).

    Example:
        >>> from fluxion.core.avals import ShapedArray
        >>> is_undefined_primal(UndefinedPrimal(ShapedArray((), "float32"))), is_undefined_primal(1.0)
        (True, False)
    """
    return is_undefined(x)


def instantiate_zeros(tangent: Any) -> Any:
    """``tangent`` itself, or an array of zeros when it is a symbolic :class:`Zero`.

    Example:
        >>> from fluxion.core.avals import ShapedArray
        >>> instantiate_zeros(Zero(ShapedArray((2,), "float32"))).tolist()
        [0.0, 0.0]
    """
    return instantiate(tangent)


def add_tangents(x: Any, y: Any) -> Any:
    """The sum of two tangents, either possibly a symbolic :class:`Zero`.

    Example:
        >>> from fluxion.core.avals import ShapedArray
        >>> add_tangents(Zero(ShapedArray((), "float32")), 2.0)
        2.0
    """
    out = _add_tangents(x, y)
    return x if out is None else out


def get_primitive_transpose(p: Any) -> Callable[..., Any]:
    """The transpose rule of primitive ``p`` (``KeyError`` when it has none).

    Example:
        >>> from fluxion.lax.elementwise import neg_p
        >>> callable(get_primitive_transpose(neg_p))
        True
    """
    return primitive_transposes[p]


def _zero_out(prim: Any, out: Any) -> Any:
    if prim.multiple_results:
        return [Zero.like(o) for o in out]
    return Zero.like(out)


def _jvp_of_rules(prim: Any, rules: tuple, with_ans: bool) -> Callable[..., Any]:
    def jvp(primals: list, tangents: list, **params: Any) -> tuple:
        ans = prim.bind(*primals, **params)
        total: Any = None
        for rule, t in zip(rules, tangents):
            if rule is None or type(t) is Zero:
                continue
            term = rule(t, ans, *primals, **params) if with_ans else rule(t, *primals, **params)
            total = term if total is None else add_tangents(total, term)
        return ans, (_zero_out(prim, ans) if total is None else total)
    return jvp


def defjvp(primitive: Any, *jvprules: Callable[..., Any] | None) -> None:
    """Defines ``primitive``'s JVP from one rule per input, ``rule(g, *primals, **params)`` (the
    input's tangent ``g`` mapped to the output's; ``None`` for an input not differentiated); the
    output tangent is their sum.

    Example:
        >>> import fluxion
        >>> from fluxion.extend.core import Primitive
        >>> p = Primitive("doc_mul")
        >>> _ = p.def_impl(lambda x, y: x * y)
        >>> _ = p.def_abstract_eval(lambda x, y: x)
        >>> defjvp(p, lambda g, x, y: g * y, lambda g, x, y: x * g)
        >>> float(fluxion.grad(p.bind, argnums=1)(3.0, 4.0))
        3.0
    """
    primitive_jvps[primitive] = _jvp_of_rules(primitive, jvprules, with_ans=False)


def defjvp2(primitive: Any, *jvprules: Callable[..., Any] | None) -> None:
    """As :func:`defjvp`, with rules ``rule(g, ans, *primals, **params)`` also given the output.

    Example:
        >>> import fluxion
        >>> from fluxion.extend.core import Primitive
        >>> import fluxion.numpy as jnp
        >>> p = Primitive("doc_exp")
        >>> _ = p.def_impl(jnp.exp)
        >>> _ = p.def_abstract_eval(lambda x: x)
        >>> defjvp2(p, lambda g, ans, x: g * ans)
        >>> round(float(fluxion.grad(p.bind)(0.0)), 6)
        1.0
    """
    primitive_jvps[primitive] = _jvp_of_rules(primitive, jvprules, with_ans=True)


def _linear_jvp(prim: Any, primals: list, tangents: list, **params: Any) -> tuple:
    out = prim.bind(*primals, **params)
    if all(type(t) is Zero for t in tangents):
        return out, _zero_out(prim, out)
    return out, prim.bind(*[instantiate(t) for t in tangents], **params)


def _linear_transpose(rule: Callable[..., Any], with_args: bool, ct: Any, *args: Any,
                      **params: Any) -> Any:
    if type(ct) is Zero:
        return [Zero(x.aval) if is_undefined(x) else None for x in args]
    return rule(ct, *args, **params) if with_args else rule(ct, **params)


def deflinear(primitive: Any, transpose_rule: Callable[..., Any]) -> None:
    """Declares ``primitive`` linear in all its inputs, with ``transpose_rule(ct, **params)``
    returning one cotangent per input.

    Example:
        >>> import fluxion
        >>> from fluxion.extend.core import Primitive
        >>> p = Primitive("doc_triple")
        >>> _ = p.def_impl(lambda x: 3 * x)
        >>> _ = p.def_abstract_eval(lambda x: x)
        >>> deflinear(p, lambda ct: [3 * ct])
        >>> float(fluxion.grad(p.bind)(1.0))
        3.0
    """
    primitive_jvps[primitive] = partial(_linear_jvp, primitive)
    primitive_transposes[primitive] = partial(_linear_transpose, transpose_rule, False)


def deflinear2(primitive: Any, transpose_rule: Callable[..., Any]) -> None:
    """As :func:`deflinear`, with ``transpose_rule(ct, *args, **params)`` also given the inputs.

    Example:
        >>> import fluxion
        >>> from fluxion.extend.core import Primitive
        >>> p = Primitive("doc_half")
        >>> _ = p.def_impl(lambda x: x / 2)
        >>> _ = p.def_abstract_eval(lambda x: x)
        >>> deflinear2(p, lambda ct, x: [ct / 2])
        >>> float(fluxion.grad(p.bind)(1.0))
        0.5
    """
    primitive_jvps[primitive] = partial(_linear_jvp, primitive)
    primitive_transposes[primitive] = partial(_linear_transpose, transpose_rule, True)


def defbilinear(prim: Any, lhs_rule: Callable[..., Any] | None,
                rhs_rule: Callable[..., Any] | None) -> None:
    """Declares ``prim(x, y)`` bilinear: its JVP is ``prim(dx, y) + prim(x, dy)``;
    ``lhs_rule(ct, x, y, **params)`` transposes it in ``x`` (``x`` undefined) and
    ``rhs_rule(ct, x, y, **params)`` in ``y``.

    Example:
        >>> import fluxion
        >>> from fluxion.extend.core import Primitive
        >>> p = Primitive("doc_bimul")
        >>> _ = p.def_impl(lambda x, y: x * y)
        >>> _ = p.def_abstract_eval(lambda x, y: x)
        >>> defbilinear(p, lambda ct, x, y: ct * y, lambda ct, x, y: x * ct)
        >>> float(fluxion.grad(p.bind)(2.0, 5.0))
        5.0
    """
    def jvp(primals: list, tangents: list, **params: Any) -> tuple:
        x, y = primals
        dx, dy = tangents
        out = prim.bind(x, y, **params)
        total: Any = None
        if type(dx) is not Zero:
            total = prim.bind(dx, y, **params)
        if type(dy) is not Zero:
            term = prim.bind(x, dy, **params)
            total = term if total is None else add_any(total, term)
        return out, (Zero.like(out) if total is None else total)

    def transpose(ct: Any, x: Any, y: Any, **params: Any) -> list:
        if type(ct) is Zero:
            return [None, None]
        cx = lhs_rule(ct, x, y, **params) if is_undefined(x) and lhs_rule is not None else None
        cy = rhs_rule(ct, x, y, **params) if is_undefined(y) and rhs_rule is not None else None
        return [cx, cy]

    primitive_jvps[prim] = jvp
    primitive_transposes[prim] = transpose


__getattr__ = _not_provided("jax.interpreters.ad")

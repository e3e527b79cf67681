"""``fluxion.experimental.jet``: JAX's ``jax.experimental.jet``, Taylor-mode automatic
differentiation.

``jet(f, primals, series)`` pushes a truncated Taylor polynomial through ``f`` in one pass: given
the derivatives ``x_1, ..., x_K`` of the inputs along a curve it returns those of ``f``'s outputs
(Faà di Bruno's formula, evaluated by each primitive's rule), without nesting ``jvp`` K times.
The transformation is :mod:`fluxion.transforms.jet`; each primitive's rule is set beside the
primitive (``prim.jet``). The primitives covered are JAX's: elementwise arithmetic, exp, log,
the trigonometric and hyperbolic functions, logistic, pow, integer_pow, sqrt, rsqrt, erf,
erf_inv, dot_general, reductions (sum, max, min), cumulative sums, products and extrema,
structural operations, gather, scatter_add, select_n, ``jit`` calls and custom_jvp/custom_vjp
functions (their custom rules set aside, as in JAX). Any other primitive (``while``, ``scan``,
``tan``, ...) raises ``KeyError(primitive)``, as JAX's rule table does.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.experimental.jet import jet
    >>> y0, (y1, y2) = jet(jnp.sin, (0.0,), ((1.0, 0.0),))   # sin along t: 0, cos 0, -sin 0
    >>> float(y0), float(y1), float(y2)
    (0.0, 1.0, 0.0)
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable, Sequence

import fluxion.lax as lax
from fluxion.transforms import jet as _jet
from fluxion.transforms.jet import (
    JetInterpreter,
    JetTracer,
    ZeroSeries,
    ZeroTerm,
    zero_series,
    zero_term,
)
from fluxion.tree_util import tree_flatten, tree_structure, tree_unflatten, treedef_is_leaf

__all__ = ["jet", "jet2", "fact", "JetTracer", "JetTrace", "ZeroSeries", "ZeroTerm",
           "zero_series", "zero_term", "defzero", "deflinear", "def_deriv", "def_comp"]

# JAX's name for the interpreter class
JetTrace = JetInterpreter


def fact(n: Any) -> Any:
    """``n!`` as JAX's jet computes it, ``exp(lgamma(n + 1))`` (in floating point, so not
    always an exact integer).

    Example:
        >>> round(float(fact(4)), 3)
        24.0
    """
    return lax.exp(lax.lgamma(n + 1.))


def jet(fun: Callable, primals: Sequence[Any], series: Sequence[Sequence[Any]],
        factorial_scaled: bool = True, **_: Any) -> tuple[Any, Any]:
    """Taylor-mode differentiation, as ``jax.experimental.jet.jet``.

    ``primals`` holds one array (or scalar) per positional argument of ``fun`` and ``series``
    one sequence of K terms per argument: with ``factorial_scaled`` (the default) term ``k`` is
    the ``k``-th derivative of the argument along a curve, otherwise its ``k``-th Taylor
    coefficient. Returns ``(fun(*primals), series_out)``: ``series_out`` has the structure of
    ``fun``'s output with, in place of each array, the list of its K terms (derivatives or
    coefficients, as the input's).

    Example:
        >>> import fluxion.numpy as jnp
        >>> f0, (f1, f2) = jet(jnp.exp, (0.0,), ((1.0, 1.0),))  # exp(t + t^2/2) at 0
        >>> float(f0), float(f1), float(f2)
        (1.0, 1.0, 2.0)
    """
    try:
        order, = set(map(len, series))
    except ValueError:
        raise ValueError("jet terms have inconsistent lengths for different arguments") from None
    for i, (x, terms) in enumerate(zip(primals, series)):
        if not treedef_is_leaf(tree_structure(x)):
            raise ValueError(f"primal value at position {i} is not an array")
        for j, t in enumerate(terms):
            if not treedef_is_leaf(tree_structure(t)):
                raise ValueError(f"term {j} for argument {i} is not an array")
    if factorial_scaled:
        series = [[term / fact(k + 1) for k, term in enumerate(terms)] for terms in series]
    out_tree = []

    def flat_fun(*args: Any) -> list:
        leaves, tree = tree_flatten(fun(*args))
        out_tree.append(tree)
        return leaves

    out_primals, out_terms = _jet.jet_coefficients(flat_fun, list(primals),
                                                   [list(s) for s in series])
    if factorial_scaled:
        out_terms = [[term * fact(k + 1) for k, term in enumerate(terms)] for terms in out_terms]
    return tree_unflatten(out_tree[0], out_primals), tree_unflatten(out_tree[0], out_terms)


jet2 = partial(jet, factorial_scaled=False)
jet2.__doc__ = """``jet`` with ``factorial_scaled=False``: the series are Taylor coefficients.

Example:
    >>> import fluxion.numpy as jnp
    >>> f0, (f1, f2) = jet2(jnp.exp, (0.0,), ((1.0, 0.0),))  # exp(t) = 1 + t + t^2/2 + ...
    >>> float(f0), float(f1), float(f2)
    (1.0, 1.0, 0.5)
"""


def defzero(prim: Any) -> None:
    """Gives ``prim`` the jet rule of a locally constant function (every term zero), as JAX's
    ``defzero``.

    Example:
        >>> from fluxion.extend.core import Primitive
        >>> p = Primitive("my_floor_doc")
        >>> defzero(p); p.jet is not None
        True
    """
    prim.jet = _jet.zero_prop(prim)


def deflinear(prim: Any) -> None:
    """Gives ``prim`` the jet rule of a linear function (``prim`` applied to each term), as
    JAX's ``deflinear``.

    Example:
        >>> from fluxion.extend.core import Primitive
        >>> p = Primitive("my_neg_doc")
        >>> deflinear(p); p.jet is not None
        True
    """
    prim.jet = _jet.linear_prop(prim)


def def_deriv(prim: Any, deriv: Callable[[Any], Any]) -> None:
    """Gives the unary ``prim`` the jet rule built from its first derivative ``deriv`` (a
    function of the operand), as JAX's ``def_deriv``.

    Example:
        >>> from fluxion.extend.core import Primitive
        >>> p = Primitive("my_exp_doc")
        >>> def_deriv(p, lax.exp); p.jet is not None
        True
    """
    prim.jet = _jet.deriv_prop(prim, deriv)


def def_comp(prim: Any, comp: Callable[..., Any]) -> None:
    """Gives ``prim`` the jet rule of ``comp``, a composition of primitives with rules equal
    to it, as JAX's ``def_comp``.

    Example:
        >>> from fluxion.extend.core import Primitive
        >>> p = Primitive("my_expm1_doc")
        >>> def_comp(p, lambda x: lax.exp(x) - 1); p.jet is not None
        True
    """
    prim.jet = _jet.comp_prop(comp)

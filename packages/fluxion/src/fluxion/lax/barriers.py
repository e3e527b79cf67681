"""``copy``, ``optimization_barrier`` and ``stop_gradient``: primitives that return their operands.

Split out of :mod:`fluxion.lax.elementwise` (which still exports every name defined here). Each
primitive is followed by its rules (transposition, batching, jet), then its public function.

Example:
    >>> import fluxion
    >>> from fluxion import lax
    >>> float(fluxion.grad(lambda x: x * lax.stop_gradient(x))(3.0))
    3.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion.core import dtypes
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.transforms import jet as _jet
from fluxion.tree_util import physical as tree_util

copy_p = Primitive("copy")
copy_p.bitcast = lambda eqn: "same"  # its operand, once XLA has simplified it
copy_p.abstract_eval = lambda x: x
copy_p.lowering = lambda ctx, x: x  # a fresh buffer; XLA's outputs never alias inputs here
_rules.deflinear(copy_p, lambda ct, x: [ct])
copy_p.batch = _rules.unary_batch_rule(copy_p)
copy_p.extended = lambda x: x._with_data(copy_p.bind(x._base_array))
copy_p.jet = _jet.linear_prop(copy_p)


def copy(x: Any) -> Any:
    """A copy of ``x`` (the primitive behind ``jnp.array(x, copy=True)``).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.copy(jnp.arange(3)).tolist()
        [0, 1, 2]
    """
    return copy_p.bind(x)


optimization_barrier_p = Primitive("optimization_barrier", multiple_results=True)
optimization_barrier_p.bitcast = lambda eqn: "same"  # its operand, once XLA has simplified it


def _optimization_barrier_lowering(ctx: Any, *xs: str) -> list:
    if not xs:
        return []
    outs = ctx.op("stablehlo.optimization_barrier", list(xs))
    return outs if len(xs) > 1 else [outs]


optimization_barrier_p.abstract_eval = lambda *avals: list(avals)
optimization_barrier_p.lowering = _optimization_barrier_lowering
optimization_barrier_p.jvp = lambda primals, tangents: (optimization_barrier_p.bind(*primals),
                                                        list(tangents))
optimization_barrier_p.batch = lambda axis_data, args, dims: (optimization_barrier_p.bind(*args),
                                                              list(dims))


def optimization_barrier(operand: Any, /) -> Any:
    """Return ``operand`` (a pytree of arrays) unchanged, preventing XLA from moving computation
    across this point (e.g. to keep rematerialisation from being undone).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> a, b = lax.optimization_barrier((jnp.ones(2), jnp.zeros(2)))
        >>> a.tolist()
        [1.0, 1.0]
    """
    leaves, tree = tree_util.tree_flatten(operand)
    return tree_util.tree_unflatten(tree, optimization_barrier_p.bind(*leaves))


stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.bitcast = lambda eqn: "same"  # its operand, once XLA has simplified it
stop_gradient_p.abstract_eval = lambda x: x
stop_gradient_p.lowering = lambda ctx, x: x
_rules.defjvp_zero(stop_gradient_p)
stop_gradient_p.batch = _rules.unary_batch_rule(stop_gradient_p)
stop_gradient_p.jet = _jet.zero_prop(stop_gradient_p)


def stop_gradient(x: Any) -> Any:
    """``x`` (a pytree of arrays) unchanged, but with zero derivative under every
    differentiation.

    Example:
        >>> import fluxion
        >>> from fluxion import lax
        >>> float(fluxion.grad(lambda x: x * lax.stop_gradient(x))(3.0))
        3.0
    """

    def one(a: Any) -> Any:
        dt = getattr(a, "dtype", None)
        if dt is None:
            dt = np.asarray(a).dtype
        if np.dtype(dt).kind not in "fc" and not dtypes.issubdtype(dt, np.inexact):
            return a
        return stop_gradient_p.bind(a)
    return tree_util.tree_map(one, x)

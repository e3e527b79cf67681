"""Second-order quantities of a loss: Hessian-vector products, Hessian and Fisher diagonals
(``optax.second_order``). ``loss(params, inputs, targets)`` is a scalar function."""


from collections.abc import Callable
from typing import Any

import fluxion
import fluxion.numpy as jnp
from fluxion_optim._ravel import ravel_pytree

__all__ = ["fisher_diag", "hessian_diag", "hvp"]

LossFn = Callable[[Any, Any, Any], Any]


def hvp(loss: LossFn, v: Any, params: Any, inputs: Any, targets: Any) -> Any:
    """The Hessian (w.r.t. ``params``) times the flat vector ``v``, as a tree like ``params``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim import second_order
        >>> loss = lambda p, x, y: jnp.sum((p * x - y) ** 2)
        >>> second_order.hvp(loss, jnp.ones(2), jnp.zeros(2), jnp.ones(2), jnp.zeros(2)).tolist()
        [2.0, 2.0]
    """
    _, unravel = ravel_pytree(params)
    return fluxion.jvp(fluxion.grad(lambda p: loss(p, inputs, targets)), [params],
                       [unravel(v)])[1]


def hessian_diag(loss: LossFn, params: Any, inputs: Any, targets: Any) -> Any:
    """The diagonal of the Hessian of ``loss`` w.r.t. the flattened ``params``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim import second_order
        >>> loss = lambda p, x, y: jnp.sum((p * x - y) ** 2)
        >>> second_order.hessian_diag(loss, jnp.zeros(2), jnp.array([1.0, 2.0]), jnp.zeros(2)).tolist()
        [2.0, 8.0]
    """
    flat, _ = ravel_pytree(params)

    def component(v):
        return jnp.vdot(v, ravel_pytree(hvp(loss, v, params, inputs, targets))[0])

    return fluxion.vmap(component)(jnp.eye(flat.size))


def fisher_diag(negative_log_likelihood: LossFn, params: Any, inputs: Any, targets: Any) -> Any:
    """The diagonal of the empirical Fisher matrix: squared gradient of the negative
    log-likelihood, flattened.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim import second_order
        >>> nll = lambda p, x, y: jnp.sum(p * x)
        >>> second_order.fisher_diag(nll, jnp.zeros(2), jnp.array([1.0, 2.0]), None).tolist()
        [1.0, 4.0]
    """
    grads = fluxion.grad(negative_log_likelihood)(params, inputs, targets)
    return jnp.square(ravel_pytree(grads)[0])

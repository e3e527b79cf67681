"""Euclidean projections onto convex sets, for projected gradient methods
(``optax.projections``)."""


from typing import Any

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_optim._ravel import ravel_pytree
from fluxion_optim.tree_utils import (
    tree_add_scale,
    tree_full_like,
    tree_mul,
    tree_norm,
    tree_scale,
    tree_vdot,
)

__all__ = ["projection_box", "projection_halfspace", "projection_hypercube",
           "projection_hyperplane", "projection_l1_ball", "projection_l1_sphere",
           "projection_l2_ball", "projection_l2_sphere", "projection_linf_ball",
           "projection_non_negative", "projection_simplex", "projection_vector"]


def projection_non_negative(tree: Any) -> Any:
    """Projection onto the non-negative orthant (``max(x, 0)``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim import projections
        >>> projections.projection_non_negative(jnp.array([-1.0, 2.0])).tolist()
        [0.0, 2.0]
    """
    return fluxion.tree.map(fluxion.nn.relu, tree)


def projection_box(tree: Any, lower: Any, upper: Any) -> Any:
    """Projection onto the box ``lower <= x <= upper`` (scalars or trees).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim import projections
        >>> projections.projection_box(jnp.array([-2.0, 2.0]), -1.0, 1.0).tolist()
        [-1.0, 1.0]
    """
    return fluxion.tree.map(jnp.clip, tree, lower, upper)


def projection_hypercube(tree: Any, scale: Any = 1) -> Any:
    """Projection onto the hypercube ``[0, scale]^d``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim import projections
        >>> projections.projection_hypercube(jnp.array([-2.0, 2.0])).tolist()
        [0.0, 1.0]
    """
    return projection_box(tree, lower=0, upper=scale)


@fluxion.custom_jvp
def _projection_unit_simplex(values: Any) -> Any:
    n = values.shape[0]
    u = jnp.sort(values)[::-1]
    cumsum_u = jnp.cumsum(u)
    ind = jnp.arange(n) + 1
    cond = 1 / ind + (u - cumsum_u / ind) > 0
    idx = jnp.count_nonzero(cond)
    return fluxion.nn.relu(1 / idx + (values - cumsum_u[idx - 1] / idx))


@_projection_unit_simplex.defjvp
def _projection_unit_simplex_jvp(primals: Any, tangents: Any) -> tuple[Any, Any]:
    (values,), (values_dot,) = primals, tangents
    out = _projection_unit_simplex(values)
    supp = out > 0
    card = jnp.count_nonzero(supp)
    return out, supp * values_dot - jnp.dot(supp, values_dot) / card * supp


def projection_simplex(tree: Any, scale: Any = 1) -> Any:
    """Projection onto the simplex ``{x >= 0, sum(x) = scale}`` (the tree as one vector).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim import projections
        >>> projections.projection_simplex(jnp.array([2.0, 0.0])).tolist()
        [1.0, 0.0]
    """
    values, unravel = ravel_pytree(tree)
    return unravel(scale * _projection_unit_simplex(values / scale))


def projection_l1_sphere(tree: Any, scale: Any = 1) -> Any:
    """Projection onto the L1 sphere of radius ``scale``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim import projections
        >>> projections.projection_l1_sphere(jnp.array([-2.0, 0.0])).tolist()
        [-1.0, 0.0]
    """
    signs = fluxion.tree.map(jnp.sign, tree)
    projected = projection_simplex(fluxion.tree.map(jnp.abs, tree), scale)
    return tree_mul(signs, projected)


def projection_l1_ball(tree: Any, scale: Any = 1) -> Any:
    """Projection onto the L1 ball of radius ``scale``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim import projections
        >>> projections.projection_l1_ball(jnp.array([0.2, 0.3])).tolist()
        [0.20000000298023224, 0.30000001192092896]
    """
    return lax.cond(tree_norm(tree, ord=1) <= scale, lambda t: t,
                    lambda t: projection_l1_sphere(t, scale), tree)


def projection_l2_sphere(tree: Any, scale: Any = 1) -> Any:
    """Projection onto the L2 sphere of radius ``scale``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim import projections
        >>> projections.projection_l2_sphere(jnp.array([3.0, 4.0])).tolist()
        [0.6000000238418579, 0.800000011920929]
    """
    return tree_scale(scale / tree_norm(tree), tree)


def projection_l2_ball(tree: Any, scale: Any = 1) -> Any:
    """Projection onto the L2 ball of radius ``scale``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim import projections
        >>> projections.projection_l2_ball(jnp.array([0.3, 0.4])).tolist()
        [0.30000001192092896, 0.4000000059604645]
    """
    squared = tree_norm(tree, squared=True)
    return tree_scale(scale / jnp.sqrt(jnp.maximum(squared, scale ** 2)), tree)


def projection_linf_ball(tree: Any, scale: Any = 1) -> Any:
    """Projection onto the L-infinity ball of radius ``scale``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim import projections
        >>> projections.projection_linf_ball(jnp.array([-2.0, 0.5])).tolist()
        [-1.0, 0.5]
    """
    return projection_box(tree, tree_full_like(tree, -scale), tree_full_like(tree, scale))


def projection_vector(x: Any, a: Any) -> Any:
    """Projection of ``x`` onto the line spanned by ``a``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim import projections
        >>> projections.projection_vector(jnp.array([1.0, 1.0]), jnp.array([1.0, 0.0])).tolist()
        [1.0, 0.0]
    """
    return tree_scale(tree_vdot(x, a) / tree_vdot(a, a), a)


def projection_hyperplane(x: Any, a: Any, b: Any) -> Any:
    """Projection onto the hyperplane ``<a, x> = b``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim import projections
        >>> projections.projection_hyperplane(jnp.array([0.0, 0.0]), jnp.array([1.0, 0.0]), 1.0).tolist()
        [1.0, 0.0]
    """
    return tree_add_scale(x, (b - tree_vdot(x, a)) / tree_vdot(a, a), a)


def projection_halfspace(x: Any, a: Any, b: Any) -> Any:
    """Projection onto the half-space ``<a, x> <= b``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim import projections
        >>> projections.projection_halfspace(jnp.array([2.0, 0.0]), jnp.array([1.0, 0.0]), 1.0).tolist()
        [1.0, 0.0]
    """
    scalar = jnp.clip((b - tree_vdot(x, a)) / tree_vdot(a, a), max=0)
    return tree_add_scale(x, scalar, a)

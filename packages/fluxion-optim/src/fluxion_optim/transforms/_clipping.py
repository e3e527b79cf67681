"""Clipping updates: by value, by block RMS, by global norm, per example, adaptively (AGC)."""


from typing import Any

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_optim import _base
from fluxion_optim._numerics import abs_sq
from fluxion_optim.tree_utils import tree_clip, tree_norm

__all__ = ["adaptive_grad_clip", "clip", "clip_by_block_rms", "clip_by_global_norm",
           "per_example_global_norm_clip", "per_example_layer_norm_clip", "unitwise_clip",
           "unitwise_norm"]


def clip(max_delta: Any) -> _base.GradientTransformation:
    """Clips every update element to ``[-max_delta, max_delta]``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.clip(1.0).update(jnp.array([-3.0, 0.5]), optax.EmptyState())[0].tolist()
        [-1.0, 0.5]
    """

    def update_fn(updates, state, params=None):
        del params
        return tree_clip(updates, -max_delta, max_delta), state

    return _base.GradientTransformation(_base.init_empty_state, update_fn)


def clip_by_block_rms(threshold: Any) -> _base.GradientTransformation:
    """Scales each leaf down so that its root mean square is at most ``threshold``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.clip_by_block_rms(1.0).update(jnp.array([4.0]), optax.EmptyState())[0].tolist()
        [1.0]
    """

    def update_fn(updates, state, params=None):
        del params

        def clip_leaf(u):
            return u / jnp.maximum(1.0, jnp.sqrt(jnp.mean(abs_sq(u))) / threshold)

        return fluxion.tree.map(clip_leaf, updates), state

    return _base.GradientTransformation(_base.init_empty_state, update_fn)


def clip_by_global_norm(max_norm: Any) -> _base.GradientTransformation:
    """Scales all updates down together so that their global norm is at most ``max_norm``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.clip_by_global_norm(1.0)
        >>> tx.update(jnp.array([3.0, 4.0]), tx.init(None))[0].tolist()
        [0.6000000238418579, 0.800000011920929]
    """

    def update_fn(updates, state, params=None):
        del params
        g_norm = tree_norm(updates)
        trigger = jnp.squeeze(g_norm < max_norm)
        if trigger.ndim != 0:
            raise ValueError(f"clip_by_global_norm: the norm must be a scalar, got shape "
                             f"{trigger.shape}")

        def clip_leaf(t):
            return lax.select(trigger, t, (t / g_norm.astype(t.dtype)) * max_norm)

        return fluxion.tree.map(clip_leaf, updates), state

    return _base.GradientTransformation(_base.init_empty_state, update_fn)


def _has_batch_dim(grads: Any) -> bool:
    leaves = fluxion.tree.leaves(grads)
    n = leaves[0].shape[0]
    return all(g.ndim >= 1 and g.shape[0] == n for g in leaves)


def per_example_global_norm_clip(grads: Any, l2_norm_clip: Any) -> tuple[Any, Any]:
    """Clips each example's gradients (axis 0) to global norm ``l2_norm_clip`` and sums them;
    also returns how many were clipped.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> s, n = optax.per_example_global_norm_clip([jnp.array([[3.0, 4.0], [0.3, 0.4]])], 1.0)
        >>> [round(v, 4) for v in s[0].tolist()], int(n)
        ([0.9, 1.2], 1)
    """
    if not _has_batch_dim(grads):
        raise ValueError("per_example_global_norm_clip: every leaf of `grads` needs the same "
                         "batch dimension in axis 0")
    norms = fluxion.vmap(tree_norm)(grads)
    multipliers = jnp.nan_to_num(jnp.minimum(l2_norm_clip / norms, 1.0), nan=1.0)
    num_clipped = jnp.sum(multipliers < 1.0)
    return fluxion.tree.map(lambda g: jnp.tensordot(multipliers, g, axes=1), grads), num_clipped


def per_example_layer_norm_clip(grads: Any, global_l2_norm_clip: Any,
                                uniform: bool = True) -> tuple[Any, Any]:
    """Per-example clipping of each layer (leaf) separately, with per-layer budgets that add up
    to ``global_l2_norm_clip``; returns ``(sums, num_clipped)`` trees.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> s, n = optax.per_example_layer_norm_clip({"a": jnp.ones((2, 3))}, 1.0)
        >>> s["a"].shape, int(n["a"])
        ((3,), 2)
    """
    if not _has_batch_dim(grads):
        raise ValueError("per_example_layer_norm_clip: every leaf of `grads` needs the same "
                         f"batch dimension in axis 0; got shapes "
                         f"{fluxion.tree.map(jnp.shape, grads)}")
    if uniform:
        n = len(fluxion.tree.leaves(grads))
        budgets = fluxion.tree.map(lambda _: global_l2_norm_clip * (1.0 / n) ** 0.5, grads)
    else:
        total = fluxion.tree.reduce(lambda x, g: x + g[0].size, grads, 0)
        budgets = fluxion.tree.map(
            lambda g: global_l2_norm_clip * (g[0].size / total) ** 0.5, grads)
    result = fluxion.tree.map(per_example_global_norm_clip, grads, budgets)
    return fluxion.tree.transpose(fluxion.tree.structure(grads),
                                  fluxion.tree.structure((0, 0)), result)


def unitwise_norm(x: Any, axis: int | tuple[int, ...] | None = None) -> Any:
    """Norms of the "units" of a parameter (rows of a matrix, filters of a conv kernel),
    broadcast back to ``x``'s shape.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim.transforms import unitwise_norm
        >>> unitwise_norm(jnp.array([[3.0, 0.0], [4.0, 1.0]])).tolist()
        [[5.0, 1.0], [5.0, 1.0]]
    """
    if axis is not None:
        sq = jnp.sum(abs_sq(x), axis=axis, keepdims=True)
    elif jnp.squeeze(x).ndim <= 1:
        sq = jnp.sum(abs_sq(x), keepdims=True)
    elif x.ndim in (2, 3):
        sq = jnp.sum(abs_sq(x), axis=0, keepdims=True)
    elif x.ndim == 4:
        sq = jnp.sum(abs_sq(x), axis=(0, 1, 2), keepdims=True)
    elif x.ndim == 5:
        sq = jnp.sum(abs_sq(x), axis=(0, 1, 2, 3), keepdims=True)
    else:
        raise ValueError(f"unitwise_norm: expected a parameter of rank 1 to 5, got shape "
                         f"{x.shape}; pass `axis` for other shapes")
    return jnp.broadcast_to(jnp.sqrt(sq), x.shape)


def unitwise_clip(g_norm: Any, max_norm: Any, grad: Any, div_eps: Any = 1e-6) -> Any:
    """``grad`` scaled down to norm ``max_norm`` where ``g_norm`` exceeds it.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim.transforms import unitwise_clip
        >>> unitwise_clip(jnp.array([2.0]), jnp.array([1.0]), jnp.array([2.0])).tolist()
        [1.0]
    """
    for name, v in (("max_norm", max_norm), ("grad", grad)):
        if jnp.shape(v) != jnp.shape(g_norm):
            raise ValueError(f"unitwise_clip: `{name}` has shape {jnp.shape(v)}, expected the "
                             f"shape of `g_norm` {jnp.shape(g_norm)}")
    clipped = grad * (max_norm / jnp.maximum(g_norm, div_eps))
    return jnp.where(g_norm < max_norm, grad, clipped)


def adaptive_grad_clip(clipping: Any, eps: Any = 1e-3,
                       axis: int | tuple[int, ...] | None = None
                       ) -> _base.GradientTransformation:
    """Adaptive gradient clipping (AGC): clips each unit's gradient to ``clipping`` times the
    unit's parameter norm (at least ``eps``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.adaptive_grad_clip(0.1)
        >>> round(float(tx.update(jnp.array([10.0]), tx.init(None), jnp.array([1.0]))[0][0]), 5)
        0.1
    """

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("adaptive_grad_clip: " + _base.NO_PARAMS_MSG)
        g_norm, p_norm = fluxion.tree.map(lambda x: unitwise_norm(x, axis=axis),
                                          (updates, params))
        max_norm = fluxion.tree.map(lambda x: clipping * jnp.maximum(x, eps), p_norm)
        return fluxion.tree.map(unitwise_clip, g_norm, max_norm, updates), state

    return _base.GradientTransformation(_base.init_empty_state, update_fn)

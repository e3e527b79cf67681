"""Differentially private SGD (Abadi et al. 2016): per-example clipping plus Gaussian noise."""

import warnings
from typing import Any, NamedTuple

import fluxion
from fluxion_optim import _base
from fluxion_optim._scaling import scale_by_learning_rate
from fluxion_optim._utils import canonicalize_key
from fluxion_optim.transforms import chain, per_example_global_norm_clip, trace

__all__ = ["DifferentiallyPrivateAggregateState", "differentially_private_aggregate", "dpsgd"]


class DifferentiallyPrivateAggregateState(NamedTuple):
    """State of :func:`differentially_private_aggregate`: the PRNG key."""

    rng_key: Any


def differentially_private_aggregate(l2_norm_clip: Any, noise_multiplier: Any,
                                     key: Any = None, *, seed: int | None = None,
                                     ) -> _base.GradientTransformation:
    """Aggregates per-example gradients (leading batch axis) as DP-SGD does: clips each
    example's gradient to global norm ``l2_norm_clip``, sums, adds Gaussian noise of standard
    deviation ``l2_norm_clip * noise_multiplier`` and divides by the batch size. Use it first
    in a chain.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.contrib.differentially_private_aggregate(1.0, 0.0, key=0)
        >>> per_example = jnp.array([[3.0, 4.0], [0.3, 0.4]])
        >>> tx.update(per_example, tx.init(None))[0].tolist()  # doctest: +ELLIPSIS
        [0.45..., 0.6...]
    """
    if seed is not None:
        warnings.warn('"seed" is deprecated and will be removed in optax 0.2.7, use "key".',
                      DeprecationWarning, stacklevel=2)
        if key is not None:
            raise ValueError("Only one of seed or key can be specified. "
                             "(differentially_private_aggregate)")
        key = fluxion.random.key(seed)
    if key is None:
        warnings.warn("Specifying a key will be required in optax 0.2.7.", stacklevel=2)
        key = fluxion.random.key(0)
    key = canonicalize_key(key)
    noise_std = l2_norm_clip * noise_multiplier

    def init_fn(params: Any) -> DifferentiallyPrivateAggregateState:
        del params
        return DifferentiallyPrivateAggregateState(rng_key=key)

    def update_fn(updates: Any, state: DifferentiallyPrivateAggregateState, params: Any = None
                  ) -> tuple[Any, DifferentiallyPrivateAggregateState]:
        del params
        leaves, treedef = fluxion.tree.flatten(updates)
        batch = leaves[0].shape[0]
        clipped, _ = per_example_global_norm_clip(leaves, l2_norm_clip)
        new_key, *keys = fluxion.random.split(state.rng_key, len(leaves) + 1)
        noised = [(g + noise_std * fluxion.random.normal(k, g.shape, g.dtype)) / batch
                  for g, k in zip(clipped, keys)]
        return fluxion.tree.unflatten(treedef, noised), DifferentiallyPrivateAggregateState(
            new_key)

    return _base.GradientTransformation(init_fn, update_fn)


def dpsgd(learning_rate: _base.ScalarOrSchedule, l2_norm_clip: Any, noise_multiplier: Any,
          seed: int, momentum: Any = None, nesterov: bool = False
          ) -> _base.GradientTransformation:
    """The DP-SGD optimizer: :func:`differentially_private_aggregate` of per-example gradients
    (leading batch axis), optional (Nesterov) momentum, then the learning rate.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.contrib.dpsgd(0.1, l2_norm_clip=1.0, noise_multiplier=0.0, seed=0)
        >>> per_example = jnp.ones((4, 3))
        >>> tx.update(per_example, tx.init(jnp.zeros(3)))[0].shape
        (3,)
    """
    return chain(
        differentially_private_aggregate(l2_norm_clip=l2_norm_clip,
                                         noise_multiplier=noise_multiplier,
                                         key=fluxion.random.key(seed)),
        trace(decay=momentum, nesterov=nesterov) if momentum is not None else _base.identity(),
        scale_by_learning_rate(learning_rate),
    )

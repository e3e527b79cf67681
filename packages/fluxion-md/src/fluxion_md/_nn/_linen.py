"""The base class of fluxion_md's Linen-style models (NequIP, its e3nn layers and MLPs, UMA,
GNoME's energy): a :class:`fluxion_nn.bridge.Module` that draws its keys as ``flax.linen`` does
(``rng_scheme = "linen"``), so ``init`` from the same key gives jax_md's parameters bit for bit."""

from __future__ import annotations

from fluxion_nn import bridge

__all__ = ["LinenModule"]


class LinenModule(bridge.Module):
    """A bridge Module with Linen's key derivation (:mod:`fluxion_nn.bridge.linen_rngs`): each
    parameter's key is the root key with the SHA-1 hash of the module path and that module's
    count of keys folded in, as jax_md's ``flax.linen`` models draw theirs.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md._nn.util import Dense
        >>> kernel = Dense(2).init(fluxion.random.PRNGKey(0), jnp.ones((1, 3)))["params"]["kernel"]
        >>> kernel.shape, Dense.rng_scheme  # linen.Dense(2) draws this same kernel
        ((3, 2), 'linen')
    """

    rng_scheme = "linen"

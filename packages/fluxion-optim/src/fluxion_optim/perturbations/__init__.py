"""Smoothing by random perturbations (``optax.perturbations``).

Example:
    >>> import fluxion
    >>> import fluxion.numpy as jnp
    >>> import fluxion_optim as optax
    >>> f = optax.perturbations.make_perturbed_fun(jnp.argmax, num_samples=100)
    >>> f(fluxion.random.key(0), jnp.array([0.0, 1.0])).shape
    ()
"""

from fluxion_optim.perturbations._make_pert import Gumbel, Normal, make_perturbed_fun

__all__ = ["Gumbel", "Normal", "make_perturbed_fun"]

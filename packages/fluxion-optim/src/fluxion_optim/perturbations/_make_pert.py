"""A Monte-Carlo, differentiable smoothing of any function: ``E_z f(x + sigma z)``."""

from collections.abc import Callable
from typing import Any

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_optim.tree_utils import tree_add_scale, tree_random_like, tree_scale, tree_sum

__all__ = ["Gumbel", "Normal", "make_perturbed_fun"]


class Normal:
    """The standard normal noise distribution (``sample`` and an unnormalised ``log_prob``).

    Example:
        >>> import fluxion
        >>> from fluxion_optim.perturbations import Normal
        >>> Normal().sample(fluxion.random.key(0), (2,)).shape
        (2,)
    """

    def sample(self, key: Any, sample_shape: tuple[int, ...] = (), dtype: Any = float) -> Any:
        """Draws standard normal values of shape ``sample_shape``."""
        return fluxion.random.normal(key, sample_shape, dtype)

    def log_prob(self, inputs: Any) -> Any:
        """``-x**2 / 2`` (the log density up to a constant)."""
        return -0.5 * inputs ** 2


class Gumbel:
    """The standard Gumbel noise distribution (``sample`` and ``log_prob``).

    Example:
        >>> import fluxion
        >>> from fluxion_optim.perturbations import Gumbel
        >>> Gumbel().sample(fluxion.random.key(0), (3,)).shape
        (3,)
    """

    def sample(self, key: Any, sample_shape: tuple[int, ...] = (), dtype: Any = float) -> Any:
        """Draws standard Gumbel values of shape ``sample_shape``."""
        return fluxion.random.gumbel(key, sample_shape, dtype)

    def log_prob(self, inputs: Any) -> Any:
        """``-x - exp(-x)`` (the log density)."""
        return -inputs - jnp.exp(-inputs)


def _magic_box(x: Any) -> Any:
    # 1 in value, with the derivative of exp(x): turns log-probabilities into score-function
    # gradients of every order (DiCE)
    return jnp.exp(x - lax.stop_gradient(x))


def make_perturbed_fun(fun: Callable[[Any], Any], num_samples: int = 1000, sigma: Any = 0.1,
                       noise: Any = Gumbel(), use_baseline: bool = True,
                       ) -> Callable[[Any, Any], Any]:
    r"""A stochastic, differentiable version of ``fun``: :math:`E_z f(x + \sigma z)`.

    The returned function takes ``(key, x)`` and averages ``fun`` over ``num_samples`` perturbed
    inputs; its derivatives of any order (through ``fluxion.grad``) are unbiased score-function
    estimates that only evaluate ``fun`` (which need not be differentiable). With
    ``use_baseline``, ``fun(x)`` is subtracted inside the estimator to reduce its variance.

    Args:
      fun: a function from a pytree of arrays to a pytree of arrays.
      num_samples: how many perturbations to average.
      sigma: the scale of the perturbation.
      noise: an object with ``sample(key, shape, dtype)`` and ``log_prob(z)``
        (:class:`Gumbel`, the default, or :class:`Normal`).
      use_baseline: subtract the unperturbed value as a control variate.

    Returns:
      ``perturbed(key, x)`` with ``fun``'s output structure.

    Example:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> import fluxion_optim as optax
      >>> relu_sum = lambda x: jnp.sum(jnp.maximum(x, 0.0))
      >>> f = optax.perturbations.make_perturbed_fun(relu_sum, num_samples=50, sigma=0.5)
      >>> fluxion.grad(f, argnums=1)(fluxion.random.key(0), jnp.ones(3)).shape
      (3,)
    """

    def perturbed(key: Any, x: Any) -> Any:
        baseline = fun(lax.stop_gradient(x)) if use_baseline else None

        def one_sample(sample_key: Any) -> Any:
            z = tree_random_like(sample_key, x, sampler=noise.sample)
            moved = fluxion.tree.map(lambda a, b: a + sigma * b, x, z)
            moved = lax.stop_gradient(moved)
            # the noise recovered from x, so that its log-probability depends on x
            z_of_x = fluxion.tree.map(lambda a, b: (b - a) / sigma, x, moved)
            box = _magic_box(tree_sum(fluxion.tree.map(noise.log_prob, z_of_x)))
            out = tree_scale(box, fun(moved))
            if use_baseline:
                out = tree_add_scale(out, 1 - box, baseline)
            return out

        outs = fluxion.vmap(one_sample)(fluxion.random.split(key, num_samples))
        return fluxion.tree.map(lambda a: jnp.mean(a, axis=0), outs)

    return perturbed

"""Small utilities: gradient scaling and a diagonal Gaussian."""


import contextlib
import math
from collections.abc import Iterator
from typing import Any

import fluxion
import fluxion.numpy as jnp
from fluxion import lax

__all__ = ["MultiNormalDiagFromLogScale", "canonicalize_dtype", "canonicalize_key", "check_rank",
           "check_shapes_equal", "check_subdtype", "multi_normal", "scale_gradient", "set_diags",
           "tile_second_to_last_dim", "x64_precision"]


class MultiNormalDiagFromLogScale:
    """A Gaussian with diagonal covariance parameterised by its mean and log standard
    deviation.

    Example:
        >>> import fluxion
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> d = optax.multi_normal(jnp.zeros(2), jnp.zeros(2))
        >>> d.sample((3,), fluxion.random.PRNGKey(0)).shape
        (3, 2)
    """

    def __init__(self, loc: Any, log_scale: Any):
        self._log_scale = jnp.asarray(log_scale)
        self._scale = jnp.exp(log_scale)
        self._mean = jnp.asarray(loc)
        self._param_shape = tuple(jnp.broadcast_shapes(self._mean.shape, self._scale.shape))

    def sample(self, shape: tuple[int, ...], key: Any) -> Any:
        """Draws samples of shape ``shape + param_shape``."""
        sample_shape = tuple(shape) + self._param_shape
        return fluxion.random.normal(key, shape=sample_shape) * self._scale + self._mean

    def log_prob(self, x: Any) -> Any:
        """Log density of ``x``, summed over the parameter axes."""
        z = (x - self._mean) / self._scale
        log_prob = -0.5 * z * z - jnp.log(self._scale) - 0.5 * math.log(2 * math.pi)
        axes = tuple(-(i + 1) for i in range(len(self._param_shape)))
        return jnp.sum(log_prob, axis=axes)

    @property
    def log_scale(self) -> Any:
        """The log standard deviation."""
        return self._log_scale

    @property
    def params(self) -> list[Any]:
        """``[mean, log_scale]``."""
        return [self._mean, self._log_scale]


def multi_normal(loc: Any, log_scale: Any) -> MultiNormalDiagFromLogScale:
    """A diagonal Gaussian with mean ``loc`` and standard deviation ``exp(log_scale)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.multi_normal(jnp.zeros(2), jnp.zeros(2)).log_prob(jnp.zeros(2)).shape
        ()
    """
    return MultiNormalDiagFromLogScale(loc=loc, log_scale=log_scale)


@fluxion.custom_vjp
def _scale_gradient(inputs: Any, scale: Any) -> Any:
    del scale
    return inputs


def _scale_gradient_fwd(inputs: Any, scale: Any) -> tuple[Any, Any]:
    return _scale_gradient(inputs, scale), scale


def _scale_gradient_bwd(scale: Any, g: Any) -> tuple[Any, None]:
    return fluxion.tree.map(lambda g_: g_ * scale, g), None


_scale_gradient.defvjp(_scale_gradient_fwd, _scale_gradient_bwd)


def scale_gradient(inputs: Any, scale: Any) -> Any:
    """Identity in the forward pass; multiplies the gradient by ``scale`` in the backward pass.

    Example:
        >>> import fluxion
        >>> import fluxion_optim as optax
        >>> float(fluxion.grad(lambda x: optax.scale_gradient(x, 0.5) * 2.0)(1.0))
        1.0
    """
    if isinstance(scale, (int, float)) and scale == 1.0:
        return inputs
    if isinstance(scale, (int, float)) and scale == 0.0:
        return lax.stop_gradient(inputs)
    return _scale_gradient(inputs, scale)


def tile_second_to_last_dim(a: Any) -> Any:
    """``a`` with a new last axis of the same length: ``out[..., i, j] == a[..., i]``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim._utils import tile_second_to_last_dim
        >>> tile_second_to_last_dim(jnp.array([1.0, 2.0])).tolist()
        [[1.0, 1.0], [2.0, 2.0]]
    """
    a = jnp.asarray(a)
    return jnp.expand_dims(jnp.ones_like(a), -2) * jnp.expand_dims(a, -1)


def canonicalize_dtype(dtype: Any) -> Any:
    """The dtype ``dtype`` stands for under the current x64 setting; ``None`` stays ``None``.

    Example:
        >>> import numpy as np
        >>> from fluxion_optim._utils import canonicalize_dtype
        >>> canonicalize_dtype(np.float64), canonicalize_dtype(None)
        (dtype('float32'), None)
    """
    return None if dtype is None else fluxion.dtypes.canonicalize_dtype(dtype)


def canonicalize_key(key_or_seed: Any) -> Any:
    """A typed PRNG key: ``key_or_seed`` itself when it is one, else ``random.key(seed)``.

    Example:
        >>> from fluxion_optim._utils import canonicalize_key
        >>> canonicalize_key(0).shape
        ()
    """
    dtype = getattr(key_or_seed, "dtype", None)
    if dtype is not None and jnp.issubdtype(dtype, fluxion.dtypes.prng_key):
        return key_or_seed
    return fluxion.random.key(key_or_seed)


def _shape_of(x: Any) -> tuple[int, ...]:
    return tuple(x.shape) if hasattr(x, "shape") else jnp.shape(x)


def check_subdtype(array: Any, subdtype: Any) -> None:
    """Raises ``TypeError`` unless ``array``'s dtype is a sub-dtype of ``subdtype``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim._utils import check_subdtype
        >>> check_subdtype(jnp.zeros(2), jnp.floating)
    """
    dtype = fluxion.dtypes.result_type(array)
    if not jnp.issubdtype(dtype, subdtype):
        raise TypeError(f"Expected the input to have a dtype that is a subdtype of {subdtype}, "
                        f"got {dtype} instead")


def check_shapes_equal(a: Any, b: Any) -> None:
    """Raises ``ValueError`` unless ``a`` and ``b`` have the same shape.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim._utils import check_shapes_equal
        >>> check_shapes_equal(jnp.zeros(2), jnp.ones(2))
    """
    if _shape_of(a) != _shape_of(b):
        raise ValueError(f"Shape mismatch: got {_shape_of(a)} and {_shape_of(b)}.")


def check_rank(array: Any, rank: int) -> None:
    """Raises ``ValueError`` unless ``array`` has ``rank`` dimensions.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim._utils import check_rank
        >>> check_rank(jnp.zeros((2, 3)), 2)
    """
    got = len(_shape_of(array))
    if got != rank:
        raise ValueError(f"Expected the input to have rank {rank}, got {got} instead")


def set_diags(a: Any, new_diags: Any) -> Any:
    """``a`` (``N x D x D``) with the diagonal of each ``D x D`` matrix set to the rows of
    ``new_diags`` (``N x D``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim._utils import set_diags
        >>> set_diags(jnp.zeros((1, 2, 2)), jnp.array([[1.0, 2.0]])).tolist()
        [[[1.0, 0.0], [0.0, 2.0]]]
    """
    a_dim, d_dim = len(_shape_of(a)), len(_shape_of(new_diags))
    if a_dim != 3:
        raise ValueError(f"Expected `a` to be a 3D tensor, got {a_dim}D instead")
    if d_dim != 2:
        raise ValueError(f"Expected `new_diags` to be a 2D array, got {d_dim}D instead")
    n, d, d1 = a.shape
    n2, d2 = new_diags.shape
    if d != d1:
        raise ValueError(f"Shape mismatch: expected `a.shape` to be {(n, d, d)}, got "
                         f"{(n, d, d1)} instead")
    if (n2, d2) != (n, d):
        raise ValueError(f"Shape mismatch: expected `new_diags.shape` to be {(n, d)}, got "
                         f"{(n2, d2)} instead")
    idx = jnp.arange(d)
    return jnp.asarray(a).at[:, idx, idx].set(new_diags)


@contextlib.contextmanager
def x64_precision(enable_x64_precision: bool = True) -> Iterator[None]:
    """Turns 64-bit types on (or off) inside a ``with`` block, restoring the setting after.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim._utils import x64_precision
        >>> with x64_precision(True):
        ...     print(jnp.float64(1.0).dtype.name)
        float64
    """
    old = fluxion.config.jax_enable_x64
    try:
        fluxion.config.update("jax_enable_x64", enable_x64_precision)
        yield
    finally:
        fluxion.config.update("jax_enable_x64", old)

"""Haiku-style initializers: objects called as ``init(shape, dtype)`` that draw their key from
``hk.next_rng_key()`` (as ``haiku.initializers``)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

import fluxion.lax as lax
import fluxion.numpy as jnp
import fluxion.random as random
from fluxion.nn import initializers

from ._base import next_rng_key

__all__ = ["Initializer", "Constant", "RandomNormal", "TruncatedNormal", "RandomUniform",
           "VarianceScaling", "UniformScaling", "Orthogonal", "Identity"]


class Initializer:
    """Base class: ``__call__(shape, dtype) -> array``.

    Example:
        >>> import fluxion, fluxion_nn.haiku as hk
        >>> class Twos(hk.initializers.Initializer):
        ...     def __call__(self, shape, dtype):
        ...         return 2 * fluxion.numpy.ones(shape, dtype)
        >>> Twos()((2,), fluxion.numpy.float32).tolist()
        [2.0, 2.0]
    """

    def __call__(self, shape: Sequence[int], dtype: Any) -> Any:
        raise NotImplementedError


class Constant(Initializer):
    """All values equal ``constant``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> hk.initializers.Constant(0.5)((2, 2), jnp.float32).tolist()
        [[0.5, 0.5], [0.5, 0.5]]
    """

    def __init__(self, constant: Any):
        self.constant = constant

    def __call__(self, shape: Sequence[int], dtype: Any = jnp.float32) -> Any:
        return jnp.broadcast_to(jnp.asarray(self.constant), tuple(shape)).astype(dtype)


class RandomNormal(Initializer):
    """``mean + stddev * normal``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> init = hk.initializers.RandomNormal(stddev=2.0)
        >>> f = hk.transform(lambda: hk.get_parameter("w", (1000,), init=init))
        >>> w = f.init(fluxion.random.PRNGKey(0))["~"]["w"]
        >>> round(float(w.std()), 1)
        2.1
    """

    def __init__(self, stddev: float = 1.0, mean: float = 0.0):
        self.stddev = stddev
        self.mean = mean

    def __call__(self, shape: Sequence[int], dtype: Any = jnp.float32) -> Any:
        m = lax.convert_element_type(self.mean, dtype)
        s = lax.convert_element_type(self.stddev, dtype)
        return m + s * random.normal(next_rng_key(), tuple(shape), dtype)


class TruncatedNormal(Initializer):
    """``mean + stddev * truncated_normal(lower, upper)``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> init = hk.initializers.TruncatedNormal(stddev=1.0)
        >>> f = hk.transform(lambda: hk.get_parameter("w", (1000,), init=init))
        >>> w = f.init(fluxion.random.PRNGKey(0))["~"]["w"]
        >>> bool(jnp.abs(w).max() <= 2.0)
        True
    """

    def __init__(self, stddev: float = 1.0, mean: float = 0.0, lower: float = -2.0, upper: float = 2.0):
        self.stddev = stddev
        self.mean = mean
        self.lower = lower
        self.upper = upper

    def __call__(self, shape: Sequence[int], dtype: Any = jnp.float32) -> Any:
        real_dtype = jnp.finfo(dtype).dtype
        m = lax.convert_element_type(self.mean, dtype)
        s = lax.convert_element_type(self.stddev, real_dtype)
        is_complex = jnp.issubdtype(dtype, jnp.complexfloating)
        shape = (2, *shape) if is_complex else tuple(shape)
        unscaled = random.truncated_normal(next_rng_key(), self.lower, self.upper, shape,
                                           real_dtype)
        if is_complex:
            unscaled = unscaled[0] + 1j * unscaled[1]
        return s * unscaled + m


class RandomUniform(Initializer):
    """Uniform on ``[minval, maxval)``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> init = hk.initializers.RandomUniform(minval=-1.0, maxval=1.0)
        >>> f = hk.transform(lambda: hk.get_parameter("w", (1000,), init=init))
        >>> w = f.init(fluxion.random.PRNGKey(0))["~"]["w"]
        >>> bool((w >= -1.0).all() and (w < 1.0).all())
        True
    """

    def __init__(self, minval: float = 0.0, maxval: float = 1.0):
        self.minval = minval
        self.maxval = maxval

    def __call__(self, shape: Sequence[int], dtype: Any = jnp.float32) -> Any:
        return random.uniform(next_rng_key(), tuple(shape), dtype, self.minval, self.maxval)


def _compute_fans(shape: Sequence[int], fan_in_axes: Any = None) -> tuple:
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    if fan_in_axes is not None:
        fan_in = np.prod([shape[i] for i in fan_in_axes])
        return fan_in, np.prod([s for i, s in enumerate(shape) if i not in fan_in_axes])
    rf = np.prod(shape[:-2])
    return shape[-2] * rf, shape[-1] * rf


class VarianceScaling(Initializer):
    """Scale-aware initializer (``scale / fan``) with a truncated-normal, normal or uniform
    distribution.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> init = hk.initializers.VarianceScaling(1.0, "fan_in", "normal")
        >>> f = hk.transform(lambda: hk.get_parameter("w", (400, 100), init=init))
        >>> w = f.init(fluxion.random.PRNGKey(0))["~"]["w"]
        >>> round(float(w.std()), 2)  # about sqrt(1 / fan_in) = 0.05
        0.05
    """

    def __init__(self, scale: float = 1.0, mode: str = "fan_in",
                 distribution: str = "truncated_normal", fan_in_axes: Any = None):
        if scale < 0.0:
            raise ValueError("`scale` must be a positive float. (VarianceScaling: got scale="
                             f"{scale})")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"Invalid `mode` argument: {mode!r} (VarianceScaling: expected "
                             "'fan_in', 'fan_out' or 'fan_avg')")
        distribution = distribution.lower()
        if distribution not in ("normal", "truncated_normal", "uniform"):
            raise ValueError(f"Invalid `distribution` argument: {distribution!r} (VarianceScaling: "
                             "expected 'normal', 'truncated_normal' or 'uniform')")
        self.scale = scale
        self.mode = mode
        self.distribution = distribution
        self.fan_in_axes = fan_in_axes

    def __call__(self, shape: Sequence[int], dtype: Any = jnp.float32) -> Any:
        fan_in, fan_out = _compute_fans(tuple(shape), self.fan_in_axes)
        scale = self.scale
        if self.mode == "fan_in":
            scale /= max(1.0, fan_in)
        elif self.mode == "fan_out":
            scale /= max(1.0, fan_out)
        else:
            scale /= max(1.0, (fan_in + fan_out) / 2.0)
        if self.distribution == "truncated_normal":
            stddev = np.sqrt(scale) / np.asarray(0.87962566103423978, dtype=dtype)
            return TruncatedNormal(stddev=stddev)(shape, dtype)
        if self.distribution == "normal":
            return RandomNormal(stddev=np.sqrt(scale))(shape, dtype)
        limit = np.sqrt(3.0 * scale)
        return RandomUniform(-limit, limit)(shape, dtype)


class UniformScaling(Initializer):
    """Uniform on ``[-s, s]`` with ``s = scale * sqrt(3 / fan_in)``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> init = hk.initializers.UniformScaling(scale=1.0)
        >>> f = hk.transform(lambda: hk.get_parameter("w", (3, 4), init=init))
        >>> w = f.init(fluxion.random.PRNGKey(0))["~"]["w"]
        >>> bool(jnp.abs(w).max() <= (3 / 3) ** 0.5)  # bound sqrt(3 / fan_in)
        True
    """

    def __init__(self, scale: float = 1.0):
        self.scale = scale

    def __call__(self, shape: Sequence[int], dtype: Any = jnp.float32) -> Any:
        input_size = np.prod(shape[:-1])
        max_val = np.sqrt(3 / input_size) * self.scale
        return RandomUniform(-max_val, max_val)(shape, dtype)


class Orthogonal(Initializer):
    """Orthogonal matrices (along ``axis``) scaled by ``scale``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> init = hk.initializers.Orthogonal()
        >>> f = hk.transform(lambda: hk.get_parameter("w", (3, 3), init=init))
        >>> w = f.init(fluxion.random.PRNGKey(0))["~"]["w"]
        >>> bool(jnp.allclose(w.T @ w, jnp.eye(3), atol=1e-5))
        True
    """

    def __init__(self, scale: float = 1.0, axis: int = -1):
        self.scale = scale
        self.axis = axis

    def __call__(self, shape: Sequence[int], dtype: Any = jnp.float32) -> Any:

        if len(shape) < 2:
            raise ValueError("Orthogonal initializer requires at least a 2D shape. (got "
                             f"{tuple(shape)})")
        return initializers.orthogonal(self.scale, column_axis=self.axis)(next_rng_key(), tuple(shape), dtype)


class Identity(Initializer):
    """``gain`` times the identity (batched over leading axes).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> hk.initializers.Identity(gain=2.0)((2, 3), jnp.float32).tolist()
        [[2.0, 0.0, 0.0], [0.0, 2.0, 0.0]]
    """

    def __init__(self, gain: float = 1.0):
        self.gain = gain

    def __call__(self, shape: Sequence[int], dtype: Any = jnp.float32) -> Any:
        shape = tuple(shape)
        if len(shape) < 2:
            raise ValueError(f"Identity initializer requires at least a 2D shape. (got {shape})")
        eye = jnp.eye(shape[-2], shape[-1], dtype=dtype)
        return self.gain * jnp.broadcast_to(eye, shape)

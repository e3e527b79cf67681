"""Weight initializers with the API of ``jax.nn.initializers``.

An initializer is a function ``init(key, shape, dtype=None) -> Array``; the builders here
(:func:`normal`, :func:`variance_scaling`, :func:`glorot_uniform`, ...) return one. Keys are
``fluxion.random`` keys (typed ``fluxion.random.key`` or raw ``uint32[2]`` ``PRNGKey``); since
``fluxion.random`` reproduces JAX's random streams, the same key, shape and dtype give the same
numbers as JAX.

Example:
    >>> import fluxion
    >>> from fluxion.nn import initializers
    >>> init = initializers.glorot_normal()
    >>> init(fluxion.random.key(0), (3, 4)).shape
    (3, 4)
"""

from __future__ import annotations

import math
import operator
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion import random as _random
from fluxion.core import dtypes

__all__ = [
    "Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform", "he_normal",
    "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal", "lecun_uniform", "normal",
    "ones", "orthogonal", "truncated_normal", "uniform", "variance_scaling", "xavier_normal",
    "xavier_uniform", "zeros",
]

Shape = Sequence[int]


@runtime_checkable
class Initializer(Protocol):
    """The protocol of an initializer: ``init(key, shape, dtype=None) -> Array``.

    Example:
        >>> from fluxion.nn import initializers
        >>> isinstance(initializers.normal(), initializers.Initializer)
        True
    """

    def __call__(self, key: Any, shape: Shape, dtype: Any = None,
                 out_sharding: Any = None) -> Any:
        raise NotImplementedError


def _dtype(dtype: Any) -> np.dtype:
    if dtype is None:
        return dtypes.default_float_dtype()
    return dtypes.canonicalize_dtype(dtype)


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, int) or np.ndim(shape) == 0:
        return (operator.index(shape),)
    return tuple(operator.index(d) for d in shape)


def _no_sharding(name: str, out_sharding: Any) -> None:
    if out_sharding is not None:
        raise NotImplementedError(f"nn.initializers.{name}: out_sharding is not supported yet")


def _is_complex(dt: np.dtype) -> bool:
    return dtypes.issubdtype(dt, np.complexfloating)


def _real_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.array(0, dt).real.dtype) if _is_complex(dt) else dt


# ============================================================================ constant

def zeros(key: Any, shape: Shape, dtype: Any = None, out_sharding: Any = None) -> Any:
    """An initializer returning zeros (the key is ignored).

    Example:
        >>> import fluxion
        >>> from fluxion.nn import initializers
        >>> initializers.zeros(fluxion.random.key(0), (2,)).tolist()
        [0.0, 0.0]
    """
    _no_sharding("zeros", out_sharding)
    return jnp.zeros(_shape(shape), _dtype(dtype))


def ones(key: Any, shape: Shape, dtype: Any = None, out_sharding: Any = None) -> Any:
    """An initializer returning ones (the key is ignored).

    Example:
        >>> import fluxion
        >>> from fluxion.nn import initializers
        >>> initializers.ones(fluxion.random.key(0), (2,)).tolist()
        [1.0, 1.0]
    """
    _no_sharding("ones", out_sharding)
    return jnp.ones(_shape(shape), _dtype(dtype))


def constant(value: Any, dtype: Any = None) -> Initializer:
    """Build an initializer returning arrays filled with ``value``.

    Example:
        >>> import fluxion
        >>> from fluxion.nn import initializers
        >>> initializers.constant(-7.0)(fluxion.random.key(0), (2,)).tolist()
        [-7.0, -7.0]
    """
    default = dtype

    def init(key: Any, shape: Shape, dtype: Any = default, out_sharding: Any = None) -> Any:
        _no_sharding("constant", out_sharding)
        return jnp.full(_shape(shape), value, dtype=_dtype(dtype))

    return init


# ============================================================================ simple random

def uniform(scale: Any = 1e-2, dtype: Any = None) -> Initializer:
    """Build an initializer drawing uniformly from ``[0, scale)``.

    Example:
        >>> import fluxion
        >>> from fluxion.nn import initializers
        >>> initializers.uniform(1.0)(fluxion.random.key(0), (2, 3)).shape
        (2, 3)
    """
    default = dtype

    def init(key: Any, shape: Shape, dtype: Any = default, out_sharding: Any = None) -> Any:
        _no_sharding("uniform", out_sharding)
        dt = _dtype(dtype)
        return _random.uniform(key, _shape(shape), dt) * jnp.asarray(scale, dt)

    return init


def normal(stddev: Any = 1e-2, dtype: Any = None) -> Initializer:
    """Build an initializer drawing from a normal distribution with mean 0 and standard
    deviation ``stddev``.

    Example:
        >>> import fluxion
        >>> from fluxion.nn import initializers
        >>> initializers.normal(1.0)(fluxion.random.key(0), (2, 3)).shape
        (2, 3)
    """
    default = dtype

    def init(key: Any, shape: Shape, dtype: Any = default, out_sharding: Any = None) -> Any:
        _no_sharding("normal", out_sharding)
        dt = _dtype(dtype)
        return _random.normal(key, _shape(shape), dt) * jnp.asarray(stddev, dt)

    return init


def truncated_normal(stddev: Any = 1e-2, dtype: Any = None, lower: Any = -2.0,
                     upper: Any = 2.0) -> Initializer:
    """Build an initializer drawing from a standard normal truncated to ``(lower, upper)``,
    then scaled by ``stddev`` (no variance correction for the truncation).

    Example:
        >>> import fluxion
        >>> from fluxion.nn import initializers
        >>> initializers.truncated_normal(1.0)(fluxion.random.key(0), (2, 3)).shape
        (2, 3)
    """
    default = dtype

    def init(key: Any, shape: Shape, dtype: Any = default, out_sharding: Any = None) -> Any:
        _no_sharding("truncated_normal", out_sharding)
        dt = _dtype(dtype)
        return (_random.truncated_normal(key, lower, upper, _shape(shape), dt)
                * jnp.asarray(stddev, dt))

    return init


# ============================================================================ variance scaling

def _axes_size(shape: tuple[int, ...], axes: Any) -> int:
    if isinstance(axes, int):
        return shape[axes]
    return math.prod(shape[i] for i in axes)


def _compute_fans(shape: tuple[int, ...], in_axis: Any = -2, out_axis: Any = -1,
                  batch_axis: Any = ()) -> tuple[float, float]:
    """(fan_in, fan_out): the in/out sizes times the receptive field (the axes that are
    neither in, out nor batch)."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                         "weights tensor with default in_axis. Must be at least 2D or specify "
                         "in_axis explicitly.")
    in_size = _axes_size(shape, in_axis)
    out_size = _axes_size(shape, out_axis)
    batch_size = _axes_size(shape, batch_axis)
    receptive = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive, out_size * receptive


def _complex_uniform(key: Any, shape: tuple[int, ...], dt: np.dtype) -> Any:
    """Uniform on the disk of radius sqrt(2) in the complex plane (mean 0, variance 1)."""
    k_r, k_theta = _random.split(key)
    real = _real_dtype(dt)
    r = jnp.sqrt(2 * _random.uniform(k_r, shape, real)).astype(dt)
    theta = 2 * np.pi * _random.uniform(k_theta, shape, real).astype(dt)
    return r * jnp.exp(1j * theta)


def _complex_truncated_normal(key: Any, upper: float, shape: tuple[int, ...],
                              dt: np.dtype) -> Any:
    """A complex normal (variance 1 before truncation) whose modulus is truncated to upper."""
    k_r, k_theta = _random.split(key)
    real = _real_dtype(dt)
    t = ((1 - jnp.exp(jnp.asarray(-(upper ** 2), dt)))
         * _random.uniform(k_r, shape, real).astype(dt))
    r = jnp.sqrt(-jnp.log(1 - t))
    theta = 2 * np.pi * _random.uniform(k_theta, shape, real).astype(dt)
    return r * jnp.exp(1j * theta)


def variance_scaling(scale: Any, mode: str, distribution: str, in_axis: Any = -2,
                     out_axis: Any = -1, batch_axis: Any = (), dtype: Any = None) -> Initializer:
    """Build an initializer whose samples have variance ``scale / n``.

    ``n`` depends on ``mode``: ``"fan_in"``, ``"fan_out"``, ``"fan_avg"`` (their mean) or
    ``"fan_geo_avg"`` (their geometric mean), where the fans are the sizes of ``in_axis`` /
    ``out_axis`` times the receptive field (axes not in ``in_axis``, ``out_axis`` or
    ``batch_axis``). ``distribution`` is ``"truncated_normal"`` (truncated at 2 standard
    deviations, then rescaled to the target variance), ``"normal"`` or ``"uniform"``
    (an interval, or a disk for complex dtypes).

    Example:
        >>> import fluxion
        >>> from fluxion.nn import initializers
        >>> init = initializers.variance_scaling(2.0, "fan_in", "normal")
        >>> init(fluxion.random.key(0), (4, 3)).shape
        (4, 3)
    """
    default = dtype

    def init(key: Any, shape: Shape, dtype: Any = default, out_sharding: Any = None) -> Any:
        _no_sharding("variance_scaling", out_sharding)
        shp = _shape(shape)
        dt = _dtype(dtype)
        fan_in, fan_out = _compute_fans(shp, in_axis, out_axis, batch_axis)
        if mode == "fan_in":
            denom = fan_in
        elif mode == "fan_out":
            denom = fan_out
        elif mode == "fan_avg":
            denom = (fan_in + fan_out) / 2
        elif mode == "fan_geo_avg":
            denom = (fan_in * fan_out) ** 0.5
        else:
            raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
        variance = jnp.asarray(scale / denom, dtype=dt)
        if distribution == "truncated_normal":
            if dtypes.issubdtype(dt, np.floating):
                # 0.8796... is the standard deviation of a standard normal truncated to (-2, 2).
                std = jnp.sqrt(variance) / jnp.asarray(.87962566103423978, dt)
                return _random.truncated_normal(key, -2, 2, shp, dt) * std
            # ... and 0.9531... that of a complex standard normal with modulus truncated to 2.
            std = jnp.sqrt(variance) / jnp.asarray(.95311164380491208, dt)
            return _complex_truncated_normal(key, 2, shp, dt) * std
        if distribution == "normal":
            return _random.normal(key, shp, dt) * jnp.sqrt(variance)
        if distribution == "uniform":
            if dtypes.issubdtype(dt, np.floating):
                return _random.uniform(key, shp, dt, -1) * jnp.sqrt(3 * variance)
            return _complex_uniform(key, shp, dt) * jnp.sqrt(variance)
        raise ValueError(f"invalid distribution for variance scaling initializer: "
                         f"{distribution}")

    return init


def glorot_uniform(in_axis: Any = -2, out_axis: Any = -1, batch_axis: Any = (),
                   dtype: Any = None) -> Initializer:
    """Glorot (Xavier) uniform: ``variance_scaling(1.0, "fan_avg", "uniform")``.

    Example:
        >>> import fluxion
        >>> from fluxion.nn import initializers
        >>> initializers.glorot_uniform()(fluxion.random.key(0), (2, 3)).shape
        (2, 3)
    """
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis=in_axis, out_axis=out_axis,
                            batch_axis=batch_axis, dtype=dtype)


def glorot_normal(in_axis: Any = -2, out_axis: Any = -1, batch_axis: Any = (),
                  dtype: Any = None) -> Initializer:
    """Glorot (Xavier) normal: ``variance_scaling(1.0, "fan_avg", "truncated_normal")``.

    Example:
        >>> import fluxion
        >>> from fluxion.nn import initializers
        >>> initializers.glorot_normal()(fluxion.random.key(0), (2, 3)).shape
        (2, 3)
    """
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis=in_axis,
                            out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)


def lecun_uniform(in_axis: Any = -2, out_axis: Any = -1, batch_axis: Any = (),
                  dtype: Any = None) -> Initializer:
    """LeCun uniform: ``variance_scaling(1.0, "fan_in", "uniform")``.

    Example:
        >>> import fluxion
        >>> from fluxion.nn import initializers
        >>> initializers.lecun_uniform()(fluxion.random.key(0), (2, 3)).shape
        (2, 3)
    """
    return variance_scaling(1.0, "fan_in", "uniform", in_axis=in_axis, out_axis=out_axis,
                            batch_axis=batch_axis, dtype=dtype)


def lecun_normal(in_axis: Any = -2, out_axis: Any = -1, batch_axis: Any = (),
                 dtype: Any = None) -> Initializer:
    """LeCun normal: ``variance_scaling(1.0, "fan_in", "truncated_normal")``.

    Example:
        >>> import fluxion
        >>> from fluxion.nn import initializers
        >>> initializers.lecun_normal()(fluxion.random.key(0), (2, 3)).shape
        (2, 3)
    """
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis=in_axis,
                            out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)


def he_uniform(in_axis: Any = -2, out_axis: Any = -1, batch_axis: Any = (),
               dtype: Any = None) -> Initializer:
    """He (Kaiming) uniform: ``variance_scaling(2.0, "fan_in", "uniform")``.

    Example:
        >>> import fluxion
        >>> from fluxion.nn import initializers
        >>> initializers.he_uniform()(fluxion.random.key(0), (2, 3)).shape
        (2, 3)
    """
    return variance_scaling(2.0, "fan_in", "uniform", in_axis=in_axis, out_axis=out_axis,
                            batch_axis=batch_axis, dtype=dtype)


def he_normal(in_axis: Any = -2, out_axis: Any = -1, batch_axis: Any = (),
              dtype: Any = None) -> Initializer:
    """He (Kaiming) normal: ``variance_scaling(2.0, "fan_in", "truncated_normal")``.

    Example:
        >>> import fluxion
        >>> from fluxion.nn import initializers
        >>> initializers.he_normal()(fluxion.random.key(0), (2, 3)).shape
        (2, 3)
    """
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis=in_axis,
                            out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)


xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


# ============================================================================ orthogonal

def _orthonormalize(z: Any) -> Any:
    """The Q factor (m, k) of the thin QR of ``z`` (m, k), m >= k, normalised so that R has a
    positive real diagonal -- the unique such Q for a full-rank ``z``, which is what
    ``Q * sign(diag(R))`` gives from any QR. Gram-Schmidt with one re-orthogonalisation pass
    ("twice is enough"), one column per loop step; columns not yet built are zero, so the
    projections need no masking."""
    m, k = z.shape
    hi = lax.Precision.HIGHEST

    def body(j: Any, q: Any) -> Any:
        v = lax.dynamic_index_in_dim(z, j, axis=1, keepdims=False)
        for _ in range(2):
            coef = jnp.matmul(jnp.conj(q).T, v, precision=hi)
            v = v - jnp.matmul(q, coef, precision=hi)
        norm = jnp.sqrt(jnp.sum(jnp.real(v * jnp.conj(v))))
        v = v / norm.astype(v.dtype)
        return lax.dynamic_update_index_in_dim(q, v, j, axis=1)

    return lax.fori_loop(0, k, body, jnp.zeros((m, k), z.dtype))


def _orthogonal_matrix(key: Any, n: int, m: int, dt: np.dtype) -> Any:
    """Like ``jax.random.orthogonal(key, n, (), dt, m)``: a Haar-random (n, m) matrix with
    orthonormal columns (n >= m) or rows (n < m)."""
    z = _random.normal(key, (max(n, m), min(n, m)), dt)
    low = dt in (np.dtype(np.float16), dtypes.canonicalize_dtype("bfloat16"))
    q = _orthonormalize(z.astype(np.float32) if low else z)
    q = q.astype(dt)
    return q.T if n < m else q


def orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """Build an initializer of (scaled) random orthogonal matrices.

    The shape (at least 2-D) is viewed as a matrix of ``shape[column_axis]`` columns and the
    product of the other dimensions as rows; rows or columns, whichever are fewer, are
    orthonormal. The numbers equal ``jax.nn.initializers.orthogonal``'s for the same key (the
    QR factorisation is Fluxion's own, normalised the same way).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion.nn import initializers
        >>> w = initializers.orthogonal()(fluxion.random.key(0), (3, 3))
        >>> bool(jnp.allclose(w.T @ w, jnp.eye(3), atol=1e-5))
        True
    """
    default = dtype

    def init(key: Any, shape: Shape, dtype: Any = default, out_sharding: Any = None) -> Any:
        _no_sharding("orthogonal", out_sharding)
        shp = _shape(shape)
        dt = _dtype(dtype)
        if len(shp) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        if any(d == 0 for d in shp):
            return jnp.zeros(shp, dtype=dt)
        n_cols = shp[column_axis]
        n_rows = math.prod(shp) // n_cols
        q = _orthogonal_matrix(key, n_rows, n_cols, dt)
        rest = tuple(np.delete(np.array(shp), column_axis))
        q = jnp.reshape(q, rest + (n_cols,))
        q = jnp.moveaxis(q, -1, column_axis)
        return jnp.asarray(scale, dt) * q

    return init


def delta_orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """Build an initializer of delta-orthogonal convolution kernels (3-D, 4-D or 5-D shapes):
    zeros except an orthogonal (in, out) matrix at the spatial centre. Needs
    ``shape[-2] <= shape[-1]``.

    Example:
        >>> import fluxion
        >>> from fluxion.nn import initializers
        >>> initializers.delta_orthogonal()(fluxion.random.key(0), (3, 2, 2)).shape
        (3, 2, 2)
    """
    default = dtype

    def init(key: Any, shape: Shape, dtype: Any = default, out_sharding: Any = None) -> Any:
        _no_sharding("delta_orthogonal", out_sharding)
        shp = _shape(shape)
        dt = _dtype(dtype)
        if len(shp) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shp[-1] < shp[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        mat = orthogonal(scale=scale, column_axis=column_axis, dtype=dt)(key, shp[-2:])
        centre = tuple((d - 1) // 2 for d in shp[:-2])
        return jnp.zeros(shp, dtype=dt).at[centre].set(mat)

    return init

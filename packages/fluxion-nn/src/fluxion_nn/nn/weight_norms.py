"""Layers that reparametrise another layer's weights before calling it (as ``flax.nnx``):
``WeightNorm`` (each weight divided by its L2 norm over the non-feature axes, times a learnt
scale) and ``SpectralNorm`` (each weight matrix divided by its largest singular value, estimated
by power iteration with ``u``/``sigma`` BatchStats). Both write the normalised weights into the
wrapped layer's Params in place, then call it."""

from __future__ import annotations

from typing import Any, Callable

import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion.nn import initializers

from .. import filterlib
from ..graph import state as graph_state
from ..module import Module
from ..pytreelib import data
from ..rnglib import Rngs
from ..statelib import to_flat_state
from ..variablelib import BatchStat, Param

__all__ = ["WeightNorm", "SpectralNorm"]


def _l2_normalize(x: Any, axis: Any = None, eps: float = 1e-12) -> Any:
    # x / ||x|| over ``axis`` (all axes when None), with eps inside the square root
    return x * lax.rsqrt((x * x).sum(axis=axis, keepdims=True) + eps)


def _result_dtype(*args: Any, dtype: Any = None) -> Any:
    # the dtype the normalised weight is stored in: ``dtype`` if given, else the arguments'
    # common type, made inexact (flax's canonicalize_dtype)
    if dtype is not None:
        return dtype
    dt = jnp.result_type(*[jnp.asarray(a) for a in args if a is not None])
    return dt if jnp.issubdtype(dt, jnp.inexact) else jnp.promote_types(jnp.float32, dt)


def _feature_axes(ndim: int, axes: Any) -> tuple:
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    return tuple(sorted({a % ndim for a in axes}))


class WeightNorm(Module):
    """Weight normalisation of ``layer_instance``'s Params selected by ``variable_filter``
    (default: paths containing ``kernel``): before each call every such weight becomes
    ``w / ||w|| * scale``, the norm taken over the axes other than ``feature_axes`` (all axes
    when ``None``); ``scales`` holds one learnt scale per weight, keyed by the weight's path.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> layer = nnx.WeightNorm(nnx.Linear(8, 4, rngs=nnx.Rngs(0)), rngs=nnx.Rngs(1))
        >>> layer(jnp.ones((2, 8))).shape
        (2, 4)
    """

    def __init__(self, layer_instance: Module, *, feature_axes: Any = -1, use_scale: bool = True,
                 scale_init: Callable = initializers.ones, epsilon: float = 1e-12,
                 dtype: Any = None, param_dtype: Any = jnp.float32,
                 variable_filter: Any = filterlib.PathContains("kernel"),
                 promote_dtype: Callable | None = None, rngs: Rngs):
        self.layer_instance = layer_instance
        self.feature_axes = () if feature_axes is None else feature_axes
        self.use_scale = use_scale
        self.scale_init = scale_init
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.variable_filter = filterlib.to_predicate(variable_filter)
        self.promote_dtype = promote_dtype
        self.scales: dict | None = None
        if use_scale:
            scales = {}
            for path, param in to_flat_state(graph_state(layer_instance, Param)):
                if self.variable_filter(path, param):
                    axes = _feature_axes(param.ndim, self.feature_axes)
                    # the initializer gets the stream itself, as flax's (rngs["params"])
                    scales[path] = scale_init(rngs["params"], tuple(param.shape[a] for a in axes))
            self.scales = data(scales)

    def _normalize(self, path: tuple, param: Any) -> None:
        if not self.variable_filter(path, param):
            return
        axes = _feature_axes(param.ndim, self.feature_axes)
        reduction = tuple(i for i in range(param.ndim) if i not in axes)
        value = _l2_normalize(param[...], axis=reduction, eps=self.epsilon)
        scale = None
        if self.use_scale:
            if path not in self.scales:
                raise RuntimeError(f"WeightNorm: no scale for the parameter {path}: the "
                                   "parameters of layer_instance must not change")
            scale = self.scales[path]
            if len(axes) < param.ndim:
                scale = scale.reshape([param.shape[a] if a in axes else 1
                                       for a in range(param.ndim)])
            value = value * scale
        param.set_value(jnp.asarray(value, _result_dtype(param[...], scale, dtype=self.dtype)))

    def __call__(self, x: Any, *args: Any, **kwargs: Any) -> Any:
        for path, param in to_flat_state(graph_state(self.layer_instance)):
            self._normalize(path, param)
        return self.layer_instance(x, *args, **kwargs)


class SpectralNorm(Module):
    """Spectral normalisation of ``layer_instance``'s Params of rank >= 2 (higher ranks are
    reshaped to ``(-1, last)``, or refused with ``error_on_non_matrix``): before each call every
    such weight is divided by its largest singular value ``sigma``, estimated with ``n_steps``
    power-iteration steps from the stored vector ``u``. ``batch_stats`` holds ``u`` and ``sigma``
    per weight (BatchStats keyed by ``path + ("u",)`` / ``path + ("sigma",)``), updated when
    ``update_stats``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> layer = nnx.SpectralNorm(nnx.Linear(8, 4, rngs=nnx.Rngs(0)), rngs=nnx.Rngs(1))
        >>> layer(jnp.ones((2, 8))).shape
        (2, 4)
    """

    def __init__(self, layer_instance: Module, *, n_steps: int = 1, epsilon: float = 1e-12,
                 dtype: Any = None, param_dtype: Any = jnp.float32,
                 error_on_non_matrix: bool = False, update_stats: bool = True, rngs: Rngs):
        self.layer_instance = layer_instance
        self.n_steps = n_steps
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.error_on_non_matrix = error_on_non_matrix
        self.use_running_average = not update_stats
        stats = {}
        for path, param in to_flat_state(graph_state(layer_instance, Param)):
            matrix = self._matrix(param[...])
            if matrix is None:
                continue
            key = rngs.params()  # one key per weight, for u (sigma starts at one)
            stats[path + ("u",)] = BatchStat(
                initializers.normal()(key, (1, matrix.shape[-1]), param_dtype))
            stats[path + ("sigma",)] = BatchStat(initializers.ones(key, (), param_dtype))
        self.batch_stats = data(stats)

    def _matrix(self, w: Any) -> Any:
        if w.ndim <= 1 or self.n_steps < 1:
            return None
        if w.ndim > 2:
            if self.error_on_non_matrix:
                raise ValueError(f"SpectralNorm: layer instance parameter is {w.ndim}D but "
                                 "error_on_non_matrix is True")
            w = jnp.reshape(w, (-1, w.shape[-1]))
        return w

    def _normalize(self, path: tuple, param: Any, update_stats: bool) -> None:
        w = param[...]
        matrix = self._matrix(w)
        if matrix is None:
            return
        for name in ("u", "sigma"):
            if path + (name,) not in self.batch_stats:
                raise RuntimeError(f"SpectralNorm: no {name} batch stat for the parameter {path}: "
                                   "the parameters of layer_instance must not change")
        u = self.batch_stats[path + ("u",)][...]
        v = None
        for _ in range(self.n_steps):
            v = _l2_normalize(jnp.matmul(u, matrix.T), eps=self.epsilon)
            u = _l2_normalize(jnp.matmul(v, matrix), eps=self.epsilon)
        u, v = lax.stop_gradient(u), lax.stop_gradient(v)
        sigma = jnp.matmul(jnp.matmul(v, matrix), u.T)[0, 0]
        normed = (matrix / jnp.where(sigma != 0, sigma, 1)).reshape(w.shape)
        if update_stats:
            self.batch_stats[path + ("u",)][...] = u
            self.batch_stats[path + ("sigma",)][...] = sigma
        param[...] = jnp.asarray(normed, _result_dtype(normed, u, v, sigma, dtype=self.dtype))

    def __call__(self, x: Any, update_stats: bool | None = None) -> Any:
        if update_stats is None:
            update_stats = not self.use_running_average
        for path, param in to_flat_state(graph_state(self.layer_instance, Param)):
            self._normalize(path, param, update_stats)
        return self.layer_instance(x)

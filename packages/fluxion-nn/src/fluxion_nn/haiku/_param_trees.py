"""Modules over whole parameter trees: ``hk.SpectralNorm`` (one matrix), ``hk.SNParamsTree``
(spectral norm of every parameter) and ``hk.EMAParamsTree`` (a moving average of every
parameter), with Haiku's state names (``u0``, ``sigma``; ``counter``, ``hidden``, ``average``)."""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

import fluxion.lax as lax
import fluxion.numpy as jnp

from ._base import get_state, set_state
from ._layers import ExponentialMovingAverage
from ._module import Module
from ._src.data_structures import to_haiku_dict
from .initializers import RandomNormal

__all__ = ["SpectralNorm", "SNParamsTree", "EMAParamsTree"]


def _l2_normalize(x: Any, eps: float) -> Any:
    return x * lax.rsqrt(jnp.sum(x * x, keepdims=True) + eps)


class SpectralNorm(Module):
    """Divide a matrix by its largest singular value, estimated by power iteration whose
    vector ``u0`` is kept in state (as ``hk.SpectralNorm``); inputs of rank > 2 are treated as
    ``[-1, last_dim]`` matrices.

    Example::

        f = hk.transform_with_state(lambda w: hk.SpectralNorm()(w))
        params, state = f.init(jax.random.PRNGKey(0), w)
        w_bar, state = f.apply(params, state, None, w)   # state: {'spectral_norm': {u0, sigma}}

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.transform_with_state(lambda w: hk.SpectralNorm()(w))
        >>> w = jnp.array([[3.0, 0.0], [0.0, 1.0]])
        >>> params, state = f.init(fluxion.random.PRNGKey(0), w)
        >>> out, state = f.apply(params, state, None, w)
        >>> out.round(3).tolist()  # w over a power-iteration estimate of its largest singular value
        [[1.033, 0.0], [0.0, 0.344]]
    """

    def __init__(self, eps: float = 1e-4, n_steps: int = 1, name: str | None = None):
        super().__init__(name=name)
        self.eps = eps
        self.n_steps = n_steps

    def __call__(self, value: Any, update_stats: bool = True,
                 error_on_non_matrix: bool = False) -> Any:
        value = jnp.asarray(value)
        shape = value.shape
        if value.ndim <= 1:
            raise ValueError("Spectral normalization is not well defined for scalar or vector "
                             f"inputs. (hk.SpectralNorm: got shape {shape})")
        if value.ndim > 2:
            if error_on_non_matrix:
                raise ValueError(f"Input is {value.ndim}D but error_on_non_matrix is True")
            value = jnp.reshape(value, [-1, shape[-1]])
        u0 = get_state("u0", [1, value.shape[-1]], value.dtype, init=RandomNormal())
        v0 = None
        for _ in range(self.n_steps):
            v0 = _l2_normalize(jnp.matmul(u0, value.T), self.eps)
            u0 = _l2_normalize(jnp.matmul(v0, value), self.eps)
        u0 = lax.stop_gradient(u0)
        v0 = lax.stop_gradient(v0)
        sigma = jnp.matmul(jnp.matmul(v0, value), u0.T)[0, 0]
        out = (value / sigma).reshape(shape)
        if update_stats:
            set_state("u0", u0)
            set_state("sigma", sigma)
        return out

    @property
    def u0(self) -> Any:
        return get_state("u0")

    @property
    def sigma(self) -> Any:
        return get_state("sigma", shape=(), init=jnp.ones)


def _over_tree(tree: Mapping, ignore_regex: str, make: Callable[[str], Callable]) -> dict:
    out = {}
    for module_name, bundle in tree.items():
        new = {}
        for k, v in bundle.items():
            full = f"{module_name}/{k}"
            new[k] = v if ignore_regex and re.match(ignore_regex, full) else make(full)(v)
        out[module_name] = new
    return to_haiku_dict(out)


class SNParamsTree(Module):
    """Spectral-normalise every parameter of a tree (each with its own ``SpectralNorm`` named
    after the parameter, ``/`` -> ``__``), skipping names matching ``ignore_regex``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.transform_with_state(lambda tree: hk.SNParamsTree(ignore_regex=".*b$")(tree))
        >>> tree = {"linear": {"w": jnp.array([[2.0, 0.0], [0.0, 1.0]]), "b": jnp.ones(2)}}
        >>> params, state = f.init(fluxion.random.PRNGKey(0), tree)
        >>> out, state = f.apply(params, state, None, tree)
        >>> out["linear"]["w"].round(3).tolist(), out["linear"]["b"].tolist()
        ([[1.0610001, 0.0], [0.0, 0.53000003]], [1.0, 1.0])
    """

    def __init__(self, eps: float = 1e-4, n_steps: int = 1, ignore_regex: str = "",
                 name: str | None = None):
        super().__init__(name=name)
        self.eps = eps
        self.n_steps = n_steps
        self.ignore_regex = ignore_regex

    def __call__(self, tree: Mapping, update_stats: bool = True) -> dict:
        def make(full: str) -> Callable:
            sn = SpectralNorm(self.eps, self.n_steps,
                              name=full.replace("/", "__").replace("~", "_tilde"))
            return lambda v: sn(v, update_stats=update_stats)

        return _over_tree(tree, self.ignore_regex, make)


class EMAParamsTree(Module):
    """An exponential moving average of every parameter of a tree (each with its own
    ``ExponentialMovingAverage`` named after the parameter), skipping ``ignore_regex`` matches.

    Example::

        ema = hk.transform_with_state(lambda p: hk.EMAParamsTree(0.2)(p))
        _, ema_state = ema.init(None, params)
        ema_params, ema_state = ema.apply(None, ema_state, None, params)

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.transform_with_state(lambda tree: hk.EMAParamsTree(0.5, zero_debias=False)(tree))
        >>> params, state = f.init(None, {"linear": {"w": jnp.zeros(2)}})
        >>> avg, state = f.apply(params, state, None, {"linear": {"w": jnp.ones(2)}})
        >>> avg["linear"]["w"].tolist()
        [0.5, 0.5]
        >>> avg, state = f.apply(params, state, None, {"linear": {"w": jnp.ones(2)}})
        >>> avg["linear"]["w"].tolist()
        [0.75, 0.75]
    """

    def __init__(self, decay: float, zero_debias: bool = True, warmup_length: int = 0,
                 ignore_regex: str = "", name: str | None = None):
        super().__init__(name=name)
        self.decay = decay
        self.zero_debias = zero_debias
        self.warmup_length = warmup_length
        self.ignore_regex = ignore_regex

    def __call__(self, tree: Mapping, update_stats: bool = True) -> dict:
        def make(full: str) -> Callable:
            ema = ExponentialMovingAverage(self.decay, self.zero_debias, self.warmup_length,
                                           name=full.replace("/", "__").replace("~", "_tilde_"))
            return lambda v: ema(v, update_stats=update_stats)

        return _over_tree(tree, self.ignore_regex, make)

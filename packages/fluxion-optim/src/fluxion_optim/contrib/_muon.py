"""Muon: momentum orthogonalized by Newton-Schulz iterations, for matrix parameters (AdamW for
the others)."""


import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_optim import _base
from fluxion_optim._alias import adamw
from fluxion_optim._numerics import safe_increment
from fluxion_optim._scaling import scale_by_learning_rate
from fluxion_optim.transforms import MaskedNode, add_decayed_weights, chain, partition
from fluxion_optim.tree_utils import tree_bias_correction, tree_cast, tree_update_moment, tree_zeros_like

__all__ = ["MuonDimensionNumbers", "MuonState", "muon", "orthogonalize_via_newton_schulz",
           "scale_by_muon", "scale_by_shape"]

_PRECONDITIONINGS = ("frobenius", "spectral", "aol", "schatten")
_DEFAULT_NS_COEFFS = (3.4445, -4.775, 2.0315)
_DION_NS_COEFFS = [(4.0848, -6.8946, 2.927), (3.9505, -6.3029, 2.6377),
                   (3.7418, -5.5913, 2.3037), (2.8769, -3.1427, 1.2046),
                   (2.8366, -3.0525, 1.2012)]
_NS_PRESETS = {"standard": _DEFAULT_NS_COEFFS, "dion": _DION_NS_COEFFS}


class MuonDimensionNumbers(NamedTuple):
    """Which axes of a parameter are its input (reduction) and output axes; the others are
    batch axes, each slice orthogonalized separately.

    Example:
        >>> import fluxion_optim as optax
        >>> optax.contrib.MuonDimensionNumbers(reduction_axis=1, output_axis=2)
        MuonDimensionNumbers(reduction_axis=1, output_axis=2)
    """

    reduction_axis: Sequence[int] | int = 0
    output_axis: Sequence[int] | int = 1


def _is_dim_nums(x: Any) -> bool:
    return isinstance(x, MuonDimensionNumbers)


def _axes(x: Any, dim_nums: MuonDimensionNumbers) -> tuple[tuple[int, ...], tuple[int, ...]]:
    red = dim_nums.reduction_axis
    out = dim_nums.output_axis
    red = (red,) if isinstance(red, int) else tuple(red)
    out = (out,) if isinstance(out, int) else tuple(out)
    return tuple(a % x.ndim for a in red), tuple(a % x.ndim for a in out)


def _reshape_fns(x: Any, dim_nums: MuonDimensionNumbers) -> tuple[Callable, Callable]:
    if x.ndim < 2:
        raise ValueError(f"Muon optimized parameters must have rank >= 2, got x.ndim={x.ndim} "
                         f"(muon: parameter of shape {tuple(x.shape)})")
    red, out = _axes(x, dim_nums)
    if set(red) & set(out):
        raise ValueError(f"Normalized reduction axes and output axes must be disjoint, got {red} "
                         f"and {out}. (muon: dimension numbers {dim_nums}, shape {x.shape})")
    batch = tuple(sorted(set(range(x.ndim)) - set(red) - set(out)))
    perm = batch + red + out
    inv = tuple(sorted(range(x.ndim), key=lambda i: perm[i]))

    def shape_of(axes):
        return tuple(x.shape[a] for a in axes)

    flat = (math.prod(shape_of(batch)), math.prod(shape_of(red)), math.prod(shape_of(out)))
    unflat = shape_of(batch) + shape_of(red) + shape_of(out)
    return (lambda y: y.transpose(perm).reshape(flat),
            lambda y: y.reshape(unflat).transpose(inv))


# optax's private name for the same function (its tests call it)
_compute_muon_reshape = _reshape_fns


def _fans(x: Any, dim_nums: MuonDimensionNumbers) -> tuple[int, int]:
    red, out = _axes(x, dim_nums)
    return math.prod(x.shape[a] for a in red), math.prod(x.shape[a] for a in out)


def scale_by_shape(weight_dimension_numbers: Any = None,
                   consistent_rms: Any = None) -> _base.GradientTransformation:
    """Scales each matrix update by ``sqrt(max(1, fan_out / fan_in))`` (or, with
    ``consistent_rms``, by ``sqrt(max(fan_in, fan_out)) * consistent_rms``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.contrib.scale_by_shape(optax.contrib.MuonDimensionNumbers())
        >>> tx.update(jnp.ones((1, 4)), tx.init(None))[0].tolist()
        [[2.0, 2.0, 2.0, 2.0]]
    """

    def width(u, dn):
        fan_in, fan_out = _fans(u, dn)
        return jnp.sqrt(jnp.maximum(1, fan_out / fan_in)) * u

    def rms(u, dn):
        fan_in, fan_out = _fans(u, dn)
        return jnp.sqrt(jnp.maximum(fan_in, fan_out)) * consistent_rms * u

    def update_fn(updates, state, params=None):
        del params
        dims = (weight_dimension_numbers(updates) if callable(weight_dimension_numbers)
                else weight_dimension_numbers)
        fn = rms if consistent_rms is not None else width
        return fluxion.tree.map(fn, updates, dims, is_leaf=_is_dim_nums), state

    return _base.GradientTransformation(_base.init_empty_state, update_fn)


def _ns_step(x: Any, coeffs: Any) -> Any:
    a = x @ x.T.conj()
    b = coeffs[1] * a + coeffs[2] * a @ a
    return coeffs[0] * x + b @ x


def _aol_first_step(x: Any, coeffs: Any, eps: Any = 1e-8) -> Any:
    a = x @ x.T.conj()
    s = jnp.expand_dims(lax.rsqrt(jnp.clip(jnp.abs(a).sum(axis=-1), min=eps)), -1)
    x, a = x * s, a * s * s.transpose(-1, -2)
    return coeffs[0] * x + (coeffs[1] * a + coeffs[2] * a @ a) @ x


def _schatten_first_step(x: Any, coeffs: Any, eps: Any = 1e-8) -> Any:
    a = x @ x.T
    s = jnp.expand_dims(lax.rsqrt(jnp.clip(jnp.linalg.norm(a, ord="fro", axis=(-2, -1)),
                                           min=eps)), (0, -1))
    x, a = x * s, a * s ** 2
    return coeffs[0] * x + (coeffs[1] * a + coeffs[2] * a @ a) @ x


def _iterate(preconditioning: str, i: Any, x: Any, coeffs: Any) -> Any:
    first = {"aol": _aol_first_step, "schatten": _schatten_first_step}.get(preconditioning)
    if first is None:
        return _ns_step(x, coeffs)
    return lax.cond(i == 0, lambda y: first(y, coeffs), lambda y: _ns_step(y, coeffs), x)


def orthogonalize_via_newton_schulz(x: Any, ns_coeffs: Any, ns_steps: int = 5,
                                    preconditioning: str = "frobenius", eps: Any = 1e-8,
                                    dimension_numbers: MuonDimensionNumbers | None = None) -> Any:
    """Approximately orthogonalizes ``x`` (its polar factor) by Newton-Schulz iterations with
    coefficients ``ns_coeffs`` ((3,) or (steps, 3)).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> q = optax.contrib.orthogonalize_via_newton_schulz(jnp.eye(2) * 3.0, jnp.array([3.4445, -4.775, 2.0315]))
        >>> q.shape
        (2, 2)
    """
    if x.ndim != 2 and not isinstance(dimension_numbers, MuonDimensionNumbers):
        raise ValueError(f"orthogonalize_via_newton_schulz: `x` must have shape (m, n) or "
                         f"dimension numbers must be given; got shape {x.shape} and "
                         f"dimension_numbers={dimension_numbers!r}")
    if x.ndim == 2:
        dimension_numbers = MuonDimensionNumbers(reduction_axis=0, output_axis=1)
    if ns_coeffs.ndim > 2 or ns_coeffs.shape[-1] != 3:
        raise ValueError(f"orthogonalize_via_newton_schulz: `ns_coeffs` must have shape (3,) or "
                         f"(n, 3), got {ns_coeffs.shape}")
    if preconditioning not in _PRECONDITIONINGS:
        raise ValueError(f"orthogonalize_via_newton_schulz: unknown preconditioning "
                         f"{preconditioning!r}; expected one of {_PRECONDITIONINGS}")

    def orthogonalize(y):
        transposed = y.shape[0] > y.shape[1]
        if transposed:
            y = y.T
        if preconditioning == "frobenius":
            y = y / (jnp.linalg.norm(y, ord="fro") + eps)
        elif preconditioning == "spectral":
            y = y / (jnp.linalg.norm(y, ord=2) + eps)
        coeffs = ns_coeffs.astype(y.dtype)
        if coeffs.ndim == 1:
            for i in range(ns_steps):
                y = _iterate(preconditioning, jnp.asarray(i, jnp.int32), y, coeffs)
        else:
            def body(carry, c):
                i, z = carry
                return (i + 1, _iterate(preconditioning, i, z, c)), None
            (_, y), _ = lax.scan(body, (jnp.asarray(0, dtype=jnp.int32), y), coeffs)
        return y.T if transposed else y

    reshape, inverse = _reshape_fns(x, dimension_numbers)
    return inverse(fluxion.vmap(orthogonalize)(reshape(x)))


class MuonState(NamedTuple):
    """State of :func:`scale_by_muon`."""

    count: Any
    mu: Any
    ns_coeffs: Any


def scale_by_muon(ns_coeffs: Any = _DEFAULT_NS_COEFFS, ns_steps: int = 5, beta: Any = 0.95,
                  eps: Any = 1e-8, mu_dtype: Any = None, *, nesterov: bool = True,
                  adaptive: bool = False, preconditioning: str = "frobenius",
                  weight_dimension_numbers: Any = None) -> _base.GradientTransformation:
    """Muon's preconditioner: (Nesterov) momentum, then Newton-Schulz orthogonalization.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.contrib.scale_by_muon()
        >>> tx.update(jnp.ones((2, 3)), tx.init(jnp.zeros((2, 3))))[0].shape
        (2, 3)
    """
    mu_dtype = None if mu_dtype is None else fluxion.dtypes.canonicalize_dtype(mu_dtype)

    def init_fn(params):
        coeffs = jnp.asarray(ns_coeffs)
        if coeffs.ndim > 2 or coeffs.shape[-1] != 3:
            raise ValueError(f"scale_by_muon: `ns_coeffs` must have shape (3,) or (n, 3), got "
                             f"{coeffs.shape}")
        if coeffs.ndim == 2:
            if not coeffs.shape[0] <= ns_steps:
                raise ValueError(f"scale_by_muon: {coeffs.shape[0]} coefficient rows for "
                                 f"{ns_steps} steps")
            coeffs = coeffs[-ns_steps:]
        return MuonState(jnp.zeros([], jnp.int32), tree_zeros_like(params, dtype=mu_dtype),
                         coeffs)

    def update_fn(updates, state, params=None):
        del params
        dims = (weight_dimension_numbers(updates) if callable(weight_dimension_numbers)
                else weight_dimension_numbers)
        mu = tree_update_moment(updates, state.mu, beta, 1)
        count_inc = safe_increment(state.count)
        if nesterov:
            mu_hat = fluxion.tree.map(lambda m, g: beta * m + (1 - beta) * g,
                                      tree_bias_correction(mu, beta, safe_increment(count_inc)),
                                      tree_bias_correction(updates, beta, count_inc))
        else:
            mu_hat = tree_bias_correction(mu, beta, count_inc)
        updates = fluxion.tree.map(
            lambda x, dn: orthogonalize_via_newton_schulz(x, state.ns_coeffs, ns_steps,
                                                          preconditioning, eps, dn),
            mu_hat, dims, is_leaf=_is_dim_nums)
        if adaptive:
            updates = fluxion.tree.map(lambda x, y: jnp.sum(x.conj() * y) * y, mu_hat, updates)
        return updates, MuonState(count_inc, tree_cast(mu, mu_dtype), state.ns_coeffs)

    return _base.GradientTransformation(init_fn, update_fn)


def muon(learning_rate: _base.ScalarOrSchedule, ns_coeffs: Any = _DEFAULT_NS_COEFFS,
         ns_steps: int = 5, beta: Any = 0.95, eps: Any = 1e-8, weight_decay: Any = 0.0,
         weight_decay_mask: Any = None, mu_dtype: Any = None, *, nesterov: bool = True,
         adaptive: bool = False, preconditioning: str = "frobenius", adam_b1: Any = 0.9,
         adam_b2: Any = 0.999, adam_eps_root: Any = 0.0, adam_weight_decay: Any = 0.0,
         adam_learning_rate: _base.ScalarOrSchedule | None = None,
         muon_weight_dimension_numbers: Any = None,
         consistent_rms: Any = None) -> _base.GradientTransformation:
    """The Muon optimizer: Muon on 2-D parameters (or those given dimension numbers), AdamW on
    the rest.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.contrib.muon(0.01)
        >>> p = {"w": jnp.ones((2, 3)), "b": jnp.ones(3)}
        >>> u, s = opt.update(p, opt.init(p), p)
        >>> u["w"].shape, u["b"].shape
        ((2, 3), (3,))
    """
    if adam_learning_rate is None:
        adam_learning_rate = learning_rate
    if isinstance(ns_coeffs, str):
        if ns_coeffs not in _NS_PRESETS:
            raise ValueError(f"muon: unknown ns_coeffs preset {ns_coeffs!r}; expected one of "
                             f"{sorted(_NS_PRESETS)}")
        ns_coeffs = _NS_PRESETS[ns_coeffs]
    dim_spec = muon_weight_dimension_numbers

    if dim_spec is None:
        dim_spec = MuonDimensionNumbers()

        def param_labels(params):
            return fluxion.tree.map(lambda x: "muon" if x.ndim == 2 else "adam", params)
    else:
        def param_labels(params):
            dims = dim_spec(params) if callable(dim_spec) else dim_spec
            return fluxion.tree.map(
                lambda dn, x: fluxion.tree.map(lambda y: "muon" if dn is not None else "adam", x),
                dims, params, is_leaf=lambda x: x is None or _is_dim_nums(x))

    def dims_fn(params):
        dims = dim_spec(params) if callable(dim_spec) else dim_spec
        mask = fluxion.tree.map(lambda label: label == "muon", param_labels(params))
        return fluxion.tree.map(
            lambda dn, sub: fluxion.tree.map(lambda m: dn if m else MaskedNode(), sub),
            dims, mask,
            is_leaf=lambda x: x is None or _is_dim_nums(x) or isinstance(x, MaskedNode))

    return partition(
        transforms={
            "muon": chain(
                scale_by_muon(ns_coeffs=ns_coeffs, ns_steps=ns_steps, beta=beta, eps=eps,
                              mu_dtype=mu_dtype, nesterov=nesterov, adaptive=adaptive,
                              preconditioning=preconditioning, weight_dimension_numbers=dims_fn),
                scale_by_shape(weight_dimension_numbers=dims_fn, consistent_rms=consistent_rms),
                add_decayed_weights(weight_decay, weight_decay_mask),
                scale_by_learning_rate(learning_rate)),
            "adam": adamw(learning_rate=adam_learning_rate, b1=adam_b1, b2=adam_b2, eps=eps,
                          eps_root=adam_eps_root, weight_decay=adam_weight_decay,
                          mu_dtype=mu_dtype, nesterov=nesterov)},
        param_labels=param_labels)



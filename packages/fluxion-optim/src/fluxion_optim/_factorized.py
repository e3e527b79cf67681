"""Factored second moments (Adafactor's memory-saving preconditioner)."""


from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import fluxion
import fluxion.numpy as jnp
from fluxion_optim import _base
from fluxion_optim._numerics import abs_sq, safe_increment

__all__ = ["FactoredState", "scale_by_factored_rms"]


def _decay_rate_pow(i: Any, exponent: Any = 0.8) -> Any:
    t = jnp.array(i + 1, jnp.float32)
    return 1.0 - t ** (-exponent)


def _factored_dims(shape: tuple[int, ...], factored: bool,
                   min_dim_size_to_factor: int) -> tuple[int, int] | None:
    if not factored or len(shape) < 2:
        return None
    order = np.argsort(shape)
    if shape[order[-2]] < min_dim_size_to_factor:
        return None
    return int(order[-2]), int(order[-1])


def _zeros_without_axis(x: Any, axis: int) -> Any:
    shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
    return jnp.zeros(shape, x.dtype)


class _Result:
    # Not a pytree: a per-leaf record that tree_map returns as a leaf.
    def __init__(self, update: Any, v_row: Any, v_col: Any, v: Any):
        self.update, self.v_row, self.v_col, self.v = update, v_row, v_col, v


class FactoredState(NamedTuple):
    """State of :func:`scale_by_factored_rms`: count and factored/unfactored second moments."""

    count: Any
    v_row: Any
    v_col: Any
    v: Any


def scale_by_factored_rms(factored: bool = True, decay_rate: Any = 0.8, step_offset: Any = 0,
                          min_dim_size_to_factor: int = 128, epsilon: Any = 1e-30,
                          decay_rate_fn: Callable[[Any, Any], Any] = _decay_rate_pow
                          ) -> _base.GradientTransformation:
    """Adafactor's preconditioner: for large matrices, the second moment is stored as a row
    and a column vector whose outer product approximates it.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_factored_rms()
        >>> tx.update(jnp.ones(3), tx.init(jnp.zeros(3)), jnp.zeros(3))[0].shape
        (3,)
    """
    is_result = lambda x: isinstance(x, _Result)  # noqa: E731

    def to_state(count, results):
        def pick(attr):
            return fluxion.tree.map(lambda o: getattr(o, attr), results, is_leaf=is_result)
        return FactoredState(count, pick("v_row"), pick("v_col"), pick("v"))

    def init_fn(params):
        def init_leaf(p):
            dims = _factored_dims(p.shape, factored, min_dim_size_to_factor)
            one = jnp.zeros((1,), dtype=p.dtype)
            if dims is not None:
                d1, d0 = dims
                return _Result(one, _zeros_without_axis(p, d0), _zeros_without_axis(p, d1), one)
            return _Result(one, one, one, jnp.zeros_like(p))

        return to_state(jnp.zeros([], jnp.int32), fluxion.tree.map(init_leaf, params))

    def update_fn(grads, state, params=None):
        if params is None:
            raise ValueError("scale_by_factored_rms: " + _base.NO_PARAMS_MSG)

        def update_leaf(grad, v_row, v_col, v, param):
            dtype = param.dtype
            rate = decay_rate_fn(state.count - step_offset, decay_rate)
            new_v_row = jnp.zeros((1,), dtype=dtype)
            new_v_col = jnp.zeros((1,), dtype=dtype)
            new_v = jnp.zeros((1,), dtype=dtype)
            dims = _factored_dims(param.shape, factored, min_dim_size_to_factor)
            grad_sqr = abs_sq(grad) + epsilon
            if dims is not None:
                d1, d0 = dims
                new_v_row = (rate * v_row + (1.0 - rate) * jnp.mean(grad_sqr, axis=d0)
                             ).astype(dtype)
                new_v_col = (rate * v_col + (1.0 - rate) * jnp.mean(grad_sqr, axis=d1)
                             ).astype(dtype)
                reduced_d1 = d1 - 1 if d1 > d0 else d1
                row_col_mean = jnp.mean(new_v_row, axis=reduced_d1, keepdims=True)
                row_factor = (new_v_row / row_col_mean) ** (-0.5)
                col_factor = new_v_col ** (-0.5)
                update = (grad * jnp.expand_dims(row_factor, axis=d0)
                          * jnp.expand_dims(col_factor, axis=d1))
            else:
                new_v = (rate * v + (1.0 - rate) * grad_sqr).astype(dtype)
                update = grad * new_v ** (-0.5)
            return _Result(update, new_v_row, new_v_col, new_v)

        out = fluxion.tree.map(update_leaf, grads, state.v_row, state.v_col, state.v, params)
        updates = fluxion.tree.map(lambda o: o.update, out, is_leaf=is_result)
        return updates, to_state(safe_increment(state.count), out)

    return _base.GradientTransformation(init_fn, update_fn)

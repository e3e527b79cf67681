"""Haiku's small helpers from ``haiku/_src/basic.py``: ``BatchApply``, ``expand_apply``,
``to_module``, ``multinomial`` and the leading-dimension reshapes."""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

import fluxion
import fluxion.numpy as jnp
import fluxion.random as random
import fluxion.tree_util as tree_util

from ._module import Module

__all__ = ["BatchApply", "expand_apply", "to_module", "multinomial", "merge_leading_dims",
           "split_leading_dim", "CallableModule"]


def multinomial(rng: Any, logits: Any, num_samples: int) -> Any:
    """``num_samples`` category draws per row of ``logits``, shape
    ``logits.shape[:-1] + (num_samples,)`` (as ``hk.multinomial``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> hk.multinomial(key, jnp.zeros([2, 5]), 3).shape
        (2, 3)
        >>> hk.multinomial(key, jnp.array([[-jnp.inf, 0.0, -jnp.inf]]), 4).tolist()
        [[1, 1, 1, 1]]
    """
    shape = (num_samples,) + tuple(logits.shape[:-1]) if num_samples != 1 else None
    samples = random.categorical(rng, logits, shape=shape)
    if num_samples != 1:
        return jnp.moveaxis(samples, 0, -1)
    return samples[..., None]


def _ndim_at_least(x: Any, num_dims: int) -> bool:
    if not isinstance(x, (fluxion.Array, np.ndarray)):
        x = jnp.asarray(x)
    return x.ndim >= num_dims


def merge_leading_dims(x: Any, num_dims: int) -> Any:
    """Merge the first ``num_dims`` dimensions of ``x`` into one (arrays of lower rank are
    returned unchanged; NumPy arrays stay NumPy arrays).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_nn.haiku._basic import merge_leading_dims
        >>> merge_leading_dims(jnp.ones([2, 3, 4]), 2).shape, merge_leading_dims(jnp.ones([4]), 2).shape
        ((6, 4), (4,))
    """
    if not _ndim_at_least(x, num_dims):
        return x
    return x.reshape((int(np.prod(x.shape[:num_dims])),) + tuple(x.shape[num_dims:]))


def split_leading_dim(x: Any, to_dim: Any) -> Any:
    """Split the first dimension of ``x`` into ``to_dim``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_nn.haiku._basic import split_leading_dim
        >>> split_leading_dim(jnp.ones([6, 4]), (2, 3)).shape
        (2, 3, 4)
    """
    return x.reshape(tuple(to_dim) + tuple(x.shape[1:]))


class BatchApply:
    """Call ``f`` with the leading ``num_dims`` dimensions of its array inputs merged, then
    split the outputs back (as ``hk.BatchApply``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.BatchApply(hk.Linear(4))(x))
        >>> x = jnp.ones([5, 3, 2])
        >>> params = f.init(key, x)
        >>> f.apply(params, None, x).shape
        (5, 3, 4)
    """

    def __init__(self, f: Callable, num_dims: int = 2):
        self._f = f
        self.num_dims = num_dims

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        example = None
        for leaf in tree_util.tree_leaves((args, kwargs)):
            if _ndim_at_least(leaf, self.num_dims):
                example = leaf
                break
        if example is None:
            raise ValueError(f"BatchApply requires at least one input with ndim >= "
                             f"{self.num_dims}.")
        lead = tuple(example.shape[:self.num_dims])
        args, kwargs = tree_util.tree_map(lambda x: merge_leading_dims(x, self.num_dims),
                                          (args, kwargs))
        out = self._f(*args, **kwargs)
        return tree_util.tree_map(lambda x: split_leading_dim(x, lead), out)


def expand_apply(f: Callable, axis: int = 0) -> Callable:
    """Wrap ``f`` to add a size-1 ``axis`` to its inputs and remove it from its outputs.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.without_apply_rng(hk.transform(lambda x: hk.expand_apply(lambda v: v * v.ndim)(x)))
        >>> y = f.apply(f.init(None, jnp.ones(3)), jnp.ones(3))  # the inner function sees (1, 3)
        >>> y.shape, y.tolist()
        ((3,), [2.0, 2.0, 2.0])
    """
    if axis not in (0, -1):
        raise ValueError("expand_apply currently only supports axis=0 or axis=-1.")

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        args, kwargs = tree_util.tree_map(lambda t: jnp.expand_dims(t, axis=axis),
                                          (args, kwargs))
        out = f(*args, **kwargs)
        return tree_util.tree_map(lambda t: jnp.squeeze(t, axis=axis), out)

    return wrapper


class CallableModule(Module):
    """A module whose ``__call__`` is given by a subclass (base of ``to_module`` classes)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def to_module(f: Callable) -> type:
    """A module class whose ``__call__`` runs ``f`` (its default name is ``f.__name__``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> AddB = hk.to_module(lambda x: x + hk.get_parameter('b', [], init=jnp.ones))
        >>> f = hk.transform(lambda x: AddB(name='add_b')(x))
        >>> params = f.init(None, jnp.zeros(2))
        >>> params
        {'add_b': {'b': Array(1.0, dtype=float32)}}
        >>> f.apply(params, None, jnp.zeros(2)).tolist()
        [1.0, 1.0]
    """
    class ToModuleWrapper(CallableModule):
        """Module produced by `hk.to_module`."""

        def __init__(self, name: str | None = None):
            if name is None:
                name = f.__name__
            elif not isinstance(name, str):
                raise TypeError(
                    "Expected a string name as the first argument to the module constructor, "
                    f"got: {name}. Note that `hk.to_module` returns a class not an object, so to "
                    "use your module you need to instantiate it first: "
                    "`cls = hk.to_module(fn); mod = cls(); out = mod(x)`.")
            super().__init__(name=name)

        def __call__(self, *a: Any, **k: Any) -> Any:
            return f(*a, **k)

    if getattr(f, "__doc__", None):
        ToModuleWrapper.__doc__ = f.__doc__
    functools.update_wrapper(ToModuleWrapper.__call__, f)
    return ToModuleWrapper

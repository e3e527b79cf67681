"""``haiku._src.flax.transform_flax``: ``lift`` runs a Linen module (flax's Linen on Fluxion,
or any object with Linen's ``init``/``apply`` protocol, such as a ``fluxion_nn.bridge.Module``)
inside a Haiku transform; its ``params`` collection becomes Haiku parameters and its other
collections Haiku state, under the ``name`` given."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

from ... import _base
from ..._lift import lift_with_state
from ..._transform import TransformedWithState
from . import _flax_module
from .utils import (  # noqa: F401
    FlaxCollection,
    FlaxVariables,
    MutableFlaxVariables,
    flatten_flax_to_haiku,
)

__all__ = ["lift", "InvalidRngError"]


class InvalidRngError(ValueError):
    """``rngs`` given to a lifted Linen module is not a mapping of stream names to keys (when
    flax's Linen runs on Fluxion, flax's own ``flax.errors.InvalidRngError`` is raised instead).

    Example: ``lift(mod, name='m')(rngs=key)`` raises it; ``rngs={'params': key}`` is right.
    """


def _invalid_rngs() -> Exception:
    msg = "rngs should be a dictionary mapping strings to `jax.PRNGKey`."
    theirs = getattr(_flax_module("flax.errors"), "InvalidRngError", None)
    return InvalidRngError(msg) if theirs is None else theirs(msg)


def _nest(bundles: Mapping) -> dict:
    """Haiku ``{'a/b': {name: v}, '~': {name: v}}`` as a Linen collection ``{'a': {'b':
    {name: v}}, name: v}``."""
    out: dict = {}
    for mod_name in sorted(bundles):
        node = out
        if mod_name != "~":
            for part in mod_name.split("/"):
                node = node.setdefault(part, {})
        for name in sorted(bundles[mod_name]):
            node[name] = bundles[mod_name][name]
    return out


def _state_to_haiku(variables: Mapping) -> dict:
    """Linen's non-parameter collections as Haiku state: module names start with the
    collection's name (``'<collection>/<path>'``, ``'<collection>/~'`` for top-level ones)."""
    state: dict = {}
    for col, collection in variables.items():
        for mod_name, bundle in sorted(flatten_flax_to_haiku(collection).items()):
            state.setdefault(f"{col}/{mod_name}", {}).update(sorted(bundle.items()))
    return state


def _state_from_haiku(state: Mapping) -> dict:
    """Inverse of :func:`_state_to_haiku`: ``{collection: nested collection}``."""
    variables: dict = {}
    for key, bundle in state.items():
        col, _, mod_name = key.partition("/")
        node = variables.setdefault(col, {})
        if mod_name != "~":
            for part in mod_name.split("/"):
                node = node.setdefault(part, {})
        node.update(bundle)
    return variables


def _linen_as_transformed(mod: Any) -> TransformedWithState:
    """``mod`` (Linen's init/apply protocol) as a Haiku ``TransformedWithState``."""

    def init_fn(rng: Any, *args: Any, **kwargs: Any) -> tuple[dict, dict]:
        variables = dict(mod.init(rng, *args, **kwargs))
        params = flatten_flax_to_haiku(variables.pop("params", {}))
        return params, _state_to_haiku(variables)

    def apply_fn(params: Mapping, state: Mapping, rng: Any, *args: Any,
                 **kwargs: Any) -> tuple[Any, dict]:
        if rng is not None:
            raise ValueError("RNGs passed in apply must be passed in the rngs keyword argument")
        variables = _state_from_haiku(state)
        mutable = set(variables)
        variables["params"] = _nest(params)
        out, new = mod.apply(variables, *args, mutable=mutable, **kwargs)
        return out, _state_to_haiku(new)

    return TransformedWithState(init_fn, apply_fn)


def lift(mod: Any, *, name: str) -> Callable[..., Any]:
    """Use a Linen module inside a Haiku transform: the returned function calls ``mod`` and
    registers its parameters (``{'<name>/<path>': ...}``) and other collections (as state,
    ``{'<name>/<collection>/<path>': ...}``) with the outer transform. During ``init`` its keys
    come from the transform's key sequence, or from ``rngs={'stream': key, ...}`` given to the
    call (a ``'params'`` key is added from the sequence when missing).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx, fluxion_nn.haiku as hk
        >>> dense = nnx.bridge.to_linen(nnx.Linear, 3, 2)  # a module with Linen's init/apply
        >>> def f(x):
        ...     return hk.experimental.flax.lift(dense, name="dense")(x)
        >>> f = hk.transform(f)
        >>> x = jnp.ones((1, 3))
        >>> params = f.init(fluxion.random.PRNGKey(0), x)
        >>> {name: sorted(p) for name, p in params.items()}, f.apply(params, None, x).shape
        ({'dense/~': ['bias', 'kernel']}, (1, 2))
    """
    transformed = _linen_as_transformed(mod)
    params_and_state, updater = lift_with_state(transformed.init, name=name, allow_reuse=True)
    updater._used = True  # a lifted module that is never called owes no state update

    def call(*args: Any, **kwargs: Any) -> Any:
        init_kwargs = dict(kwargs)
        init_rng: Any = None
        if _base.running_init():
            if "rngs" not in init_kwargs:
                init_rng = _base.maybe_next_rng_key()
            elif isinstance(init_kwargs["rngs"], Mapping):
                init_rng = dict(init_kwargs.pop("rngs"))
                if "params" not in init_rng:
                    key = _base.maybe_next_rng_key()
                    if key is not None:
                        init_rng["params"] = key
            else:
                raise _invalid_rngs()
        params, state = params_and_state(init_rng, *args, **init_kwargs)
        out, state = transformed.apply(params, state, None, *args, **kwargs)
        updater._used = False
        updater.update(state)
        return out

    return call

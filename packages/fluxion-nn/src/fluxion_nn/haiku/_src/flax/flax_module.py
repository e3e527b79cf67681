"""``haiku._src.flax.flax_module``: ``Module`` runs a Haiku transformed function as a Linen
module. It is a real ``flax.linen.Module`` subclass, so it needs flax's Linen running on Fluxion
(``fluxion.compat.install_jax_alias()`` before importing flax); the class is made the first time
it is read, since flax may be imported after fluxion_nn (which imports it only under the alias)."""

from __future__ import annotations

import threading
from typing import Any

from ..._transform import Transformed, transform_with_state, with_empty_state
from ..filtering import traverse
from . import _flax_module
from .utils import (  # noqa: F401
    FlaxCollection,
    FlaxVariables,
    HaikuParamsOrState,
    MutableHaikuParamsOrState,
    flatten_flax_to_haiku,
)

# Module is made by the module-level __getattr__ (below) when first read
__all__ = ["Module", "module_type", "store_haiku_collections", "only_changed_state"]  # noqa: F822

_LOCK = threading.Lock()
_CACHE: dict = {}


def store_haiku_collections(scope: Any, **collections: HaikuParamsOrState) -> None:
    """Put Haiku params/state (``{module_name: {name: value}}``) into the Linen ``scope``, one
    nested scope per '/'-separated part of each module name (``'~'`` is a scope of its own).

    Example: ``store_haiku_collections(self.scope, params=params, state=state)``.
    """
    for col, bundles in collections.items():
        for mod_name, name, value in traverse(bundles):
            sub = scope
            for part in mod_name.split("/"):
                sub = sub.push(part, reuse=True)
            sub.put_variable(col, name, value)


def only_changed_state(old_state: HaikuParamsOrState,
                       new_state: HaikuParamsOrState) -> dict:
    """The entries of ``new_state`` that ``old_state`` has and whose value is another object.

    Example: ``only_changed_state({'m': {'c': a}}, {'m': {'c': a + 1}})`` is ``{'m': {'c': a + 1}}``.
    """
    changed: dict = {}
    for mod_name, name, value in traverse(new_state):
        old = old_state.get(mod_name)
        if old is not None and name in old and old[name] is not value:
            changed.setdefault(mod_name, {})[name] = value
    return changed


def module_type() -> type:
    """The ``Module`` class (a ``flax.linen.Module`` subclass), made once flax's Linen runs on
    Fluxion; ImportError otherwise.

    Example: ``module_type().create(hk.Linear, 1).init(key, x)``.
    """
    cls = _CACHE.get("Module")
    if cls is not None:
        return cls
    linen = _flax_module("flax.linen")
    if linen is None:
        raise ImportError("haiku.experimental.flax.Module is a flax.linen.Module: it needs flax's "
                          "Linen running on Fluxion (call fluxion.compat.install_jax_alias() "
                          "before importing flax, then import flax.linen)")
    with _LOCK:
        cls = _CACHE.get("Module")
        if cls is None:
            cls = _CACHE["Module"] = _make_module(linen)
    return cls


def _make_module(linen: Any) -> type:
    class Module(linen.Module):  # type: ignore[misc, valid-type]
        """A Linen module that runs a Haiku transformed function (``hk.transform`` or
        ``hk.transform_with_state``): on ``init`` the Haiku parameters go to the ``params``
        collection and the state to ``state`` (a module ``'a/b'`` as nested scopes ``a``,
        ``b``; top-level entries under ``'~'``); on ``apply`` they are read back, and changed
        state is written to ``state`` (give ``mutable=['state']``). Keys: ``params`` on init,
        ``apply`` when that stream is given.

        Example::

            mod = hk.experimental.flax.Module(hk.transform(lambda x: hk.Linear(1)(x)))
            variables = mod.init(jax.random.PRNGKey(42), x)
            out = mod.apply(variables, x)
        """

        transformed: Any

        def __post_init__(self) -> None:
            if isinstance(self.transformed, Transformed):
                object.__setattr__(self, "transformed", with_empty_state(self.transformed))
            super().__post_init__()

        @classmethod
        def create(cls, hk_cls: type, *init_args: Any, **init_kwargs: Any) -> Any:
            """A Module calling ``hk_cls(*init_args, **init_kwargs)`` on its inputs.

            Example: ``Module.create(hk.Linear, 1).init(key, x)``.
            """
            def forward(*args: Any, **kwargs: Any) -> Any:
                return hk_cls(*init_args, **init_kwargs)(*args, **kwargs)

            return module_type()(transform_with_state(forward))

        @linen.compact
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            initializing = self.is_initializing()
            if initializing:
                params, state = self.transformed.init(self.make_rng("params"), *args, **kwargs)
                store_haiku_collections(self.scope, params=params, state=state)
            else:
                params = flatten_flax_to_haiku(self.variables.get("params", {}))
                state = flatten_flax_to_haiku(self.variables.get("state", {}))
            rng = self.make_rng("apply") if self.has_rng("apply") else None
            out, new_state = self.transformed.apply(params, state, rng, *args, **kwargs)
            if not initializing:
                store_haiku_collections(self.scope, state=only_changed_state(state, new_state))
            return out

    Module.__module__ = __name__
    Module.__qualname__ = "Module"
    return Module


def __getattr__(name: str) -> Any:
    if name == "Module":  # made at first read: flax's Linen may be imported after fluxion_nn
        return module_type()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

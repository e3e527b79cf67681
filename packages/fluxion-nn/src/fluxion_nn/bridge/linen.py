"""``ToLinen`` as a real ``flax.linen.Module``, when flax's Linen is in use.

fluxion_nn never imports flax. When a program has imported ``flax.linen`` and that flax runs on
Fluxion (``jax`` resolved to Fluxion by :func:`fluxion.compat.install_jax_alias`; a flax on
real jax cannot run Fluxion arrays), :func:`to_linen_type` builds, once, a ``flax.linen.Module`` subclass named
``ToLinen`` that wraps an NNX module class as flax's ``nnx.bridge.ToLinen`` does: usable alone
(``init``/``apply``) and as a submodule inside Linen code, under Linen's lifted transforms
(``nn.vmap(ToLinen, ...)``) and with Linen's RNG streams. Without flax the protocol class
:class:`fluxion_nn.bridge.wrappers.ToLinen` is used. :class:`NNXMeta` boxes are then registered
as Linen ``AxisMetadata``, so Linen's metadata helpers (``nn.get_partition_spec``) read them.
"""

from __future__ import annotations

import functools
import sys
import threading
import warnings
from typing import Any, Callable

from ..filterlib import Not
from ..graph import state as graph_state
from ..graph import update as graph_update
from ..module import Module
from ..rnglib import Rngs, RngState
from ..statelib import State
from ..variablelib import Variable, variable_name_from_type
from . import variables as bv
from . import wrappers

__all__ = ["to_linen_type", "to_linen", "linen_module", "register_linen_boxes"]

_LOCK = threading.RLock()
_CACHE: dict[str, Any] = {}


def linen_module() -> Any:
    """``flax.linen`` when the program has imported it and it runs on Fluxion (its ``jax`` is
    Fluxion's alias), else None (never imports it).

    Example: ``linen_module()`` is None in a program that does not use flax.
    """
    linen = bv.flax_on_fluxion("flax.linen")
    return linen if linen is not None and hasattr(linen, "Module") else None


def register_linen_boxes() -> None:
    """Register :class:`NNXMeta` as a Linen ``AxisMetadata`` (when flax's Linen is loaded), so
    Linen's box-aware helpers treat it as a box. Idempotent.

    Example: ``register_linen_boxes(); isinstance(NNXMeta(nnx.Param, x, {}), nn.meta.AxisMetadata)``.
    """
    if "boxes" in _CACHE:
        return
    meta = bv.flax_on_fluxion("flax.core.meta")
    if meta is None or not hasattr(meta, "AxisMetadata"):
        return
    with _LOCK:
        if "boxes" not in _CACHE:
            meta.AxisMetadata.register(bv.NNXMeta)
            _CACHE["boxes"] = True


def to_linen_type() -> type:
    """The ``ToLinen`` class to use now: a ``flax.linen.Module`` subclass when flax's Linen is
    loaded, else the Linen-protocol class :class:`fluxion_nn.bridge.wrappers.ToLinen`.

    Example: ``nnx.bridge.ToLinen`` (it calls this).
    """
    linen = linen_module()
    if linen is None:
        return wrappers.ToLinen
    cls = _CACHE.get("ToLinen")
    if cls is None:
        with _LOCK:
            cls = _CACHE.get("ToLinen")
            if cls is None:
                register_linen_boxes()
                cls = _CACHE["ToLinen"] = _make_linen_to_linen(linen)
    return cls


def frozen(kwargs: Any) -> Any:
    """``kwargs`` as Linen's FrozenDict (hashable, as a Linen dataclass field must be)."""
    fd = sys.modules["flax.core.frozen_dict"]
    return fd.FrozenDict(dict(kwargs or {}))


def _unbox(x: Any) -> Any:
    return x.unbox() if hasattr(x, "unbox") and not isinstance(x, Variable) else x


def _is_box(x: Any) -> bool:
    meta = sys.modules.get("flax.core.meta")
    return isinstance(x, bv.NNXMeta) or (meta is not None and isinstance(x, meta.AxisMetadata))


def _plain(tree: Any) -> Any:
    # a Linen variables collection (FrozenDicts, boxes) as nested dicts of unboxed values
    if hasattr(tree, "items") and not _is_box(tree):
        return {k: _plain(v) for k, v in tree.items()}
    return _unbox(tree)


def _make_linen_to_linen(linen: Any) -> type:
    fd = sys.modules["flax.core.frozen_dict"]
    base = linen.Module

    class ToLinen(base):  # type: ignore[misc, valid-type]
        """An NNX module class as a Linen module (``flax.nnx.bridge.ToLinen``): on init it builds
        the NNX module with Rngs from Linen's streams and stores its Variables as Linen
        variables (by collection); on apply it rebuilds the module, loads them, calls it (or
        ``nnx_method``) and writes the mutable collections back.

        Example::

            model = nnx.bridge.ToLinen(nnx.Linear, args=(32, 64))
            y, variables = model.init_with_output(jax.random.key(0), x)
        """

        nnx_class: Any
        args: Any = ()
        kwargs: Any = fd.FrozenDict({})
        skip_rng: bool = False
        metadata_fn: Any = bv.to_linen_var

        def _nnx_kwargs(self) -> dict:
            kwargs = dict(self.kwargs)
            if not self.skip_rng:
                streams = {name: self.make_rng(name) for name in self.scope.rngs.keys()}
                if not self.is_initializing() and "default" not in streams:
                    streams["default"] = 0
                kwargs["rngs"] = Rngs(**streams)
            return kwargs

        @linen.compact
        def __call__(self, *args: Any, nnx_method: Any = None, **kwargs: Any) -> Any:
            module = self.nnx_class(*self.args, **self._nnx_kwargs())
            if self.is_initializing():
                self._store(module)  # the variables as built, before the call (as flax)
                return wrappers._module_method(module, nnx_method)(module, *args, **kwargs)
            collections = [_plain(c) for c in self.variables.values()]
            incoming: dict = {}
            for tree in collections:
                incoming.update(bv._flatten(tree))
            current = dict(graph_state(module).flat_state())
            unknown = [p for p in incoming if p not in current]
            if unknown:
                lines = "".join(f"\n  - {'/'.join(map(str, p))}" for p in unknown)
                warnings.warn(f"Found unknown module paths in incoming state:{lines}",
                              stacklevel=2)
            graph_update(module, State.from_flat_path(incoming))
            out = wrappers._module_method(module, nnx_method)(module, *args, **kwargs)
            self._store(module)
            return out

        def _store(self, module: Any) -> None:
            by_col: dict = {}
            for path, var in graph_state(module, Not(RngState)).flat_state():
                col = variable_name_from_type(type(var), allow_register=True)
                by_col.setdefault(col, {})[path] = var
            for col, flat in by_col.items():
                if not self.is_mutable_collection(col):
                    continue
                tree = bv._unflatten({
                    p: (self.metadata_fn(v) if self.metadata_fn is not None else v.get_value())
                    for p, v in flat.items()})
                for k, v in tree.items():
                    self.put_variable(col, k, v)

        def __getattr__(self, name: str) -> Any:
            if name.startswith("__") or name in ("nnx_class", "args", "kwargs", "skip_rng",
                                                 "metadata_fn", "scope", "parent", "name"):
                return base.__getattr__(self, name)
            kwargs = self.__dict__.get("kwargs")
            if kwargs is not None and name in kwargs:
                return kwargs[name]
            nnx_class = self.__dict__.get("nnx_class")
            method = getattr(nnx_class, name, None)
            if callable(method):
                bound = functools.partial(self.__call__, nnx_method=method)
                bound.__self__ = self  # type: ignore[attr-defined]
                return bound
            return base.__getattr__(self, name)

    ToLinen.__module__ = "fluxion_nn.bridge"
    ToLinen.__qualname__ = "ToLinen"
    return ToLinen


def to_linen(nnx_class: Callable[..., Module], *args: Any,
             metadata_fn: Callable[[Variable], Any] | None = bv.to_linen_var,
             name: str | None = None, skip_rng: bool = False, abstract_init: bool = True,
             **kwargs: Any) -> Any:
    """``ToLinen(nnx_class, args=args, kwargs=kwargs, ...)``: a ``flax.linen.Module`` when
    flax's Linen is loaded (see :func:`to_linen_type`), else the protocol class.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.bridge.to_linen(nnx.Linear, 2, 3)
        >>> variables = model.init(fluxion.random.key(0), jnp.ones((1, 2)))
        >>> sorted(variables["params"])
        ['bias', 'kernel']
    """
    cls = to_linen_type()
    if cls is not wrappers.ToLinen:
        return cls(nnx_class, args=args, kwargs=frozen(kwargs), metadata_fn=metadata_fn,
                   skip_rng=skip_rng, name=name)
    return wrappers.ToLinen(nnx_class, args=args, kwargs=kwargs, metadata_fn=metadata_fn,
                            skip_rng=skip_rng, name=name)

"""``nnx.bridge``: NNX modules with Linen's functional protocol and back, and Linen-style
bridge Modules built on NNX (as ``flax.nnx.bridge``). ``ToLinen`` is a ``flax.linen.Module``
when the program has imported flax's Linen (:mod:`fluxion_nn.bridge.linen`), else the
Linen-protocol class of :mod:`fluxion_nn.bridge.wrappers`."""

from typing import Any

from ..nn import initializers
from .interop import linen_in_bridge_mdl, nnx_in_bridge_mdl
from .lifted import checkpoint, remat
from .linen import to_linen, to_linen_type
from .module import AttrPriority, Module, Scope, compact, current_context, current_module
from .variables import NNXMeta, with_partitioning
from .wrappers import Functional, ToNNX, functional, lazy_init

__all__ = ["Functional", "functional", "lazy_init", "ToNNX", "ToLinen", "to_linen", "NNXMeta",
           "with_partitioning", "initializers", "Module", "Scope", "AttrPriority", "compact",
           "current_context", "current_module", "nnx_in_bridge_mdl", "linen_in_bridge_mdl",
           "remat", "checkpoint"]


def __getattr__(name: str) -> Any:
    if name == "ToLinen":  # chosen at each access: flax's Linen may be imported after us
        return to_linen_type()
    raise AttributeError(f"module 'fluxion_nn.bridge' has no attribute {name!r}")

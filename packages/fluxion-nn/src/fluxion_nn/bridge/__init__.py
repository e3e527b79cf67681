"""``nnx.bridge``: NNX modules with Linen's functional protocol and back, and Linen-style
bridge Modules built on NNX (as ``flax.nnx.bridge``)."""

from ..nn import initializers
from .interop import linen_in_bridge_mdl, nnx_in_bridge_mdl
from .module import AttrPriority, Module, Scope, compact, current_context, current_module
from .variables import NNXMeta, with_partitioning
from .wrappers import Functional, ToLinen, ToNNX, functional, lazy_init, to_linen

__all__ = ["Functional", "functional", "lazy_init", "ToNNX", "ToLinen", "to_linen", "NNXMeta",
           "with_partitioning", "initializers", "Module", "Scope", "AttrPriority", "compact",
           "current_context", "current_module", "nnx_in_bridge_mdl", "linen_in_bridge_mdl"]

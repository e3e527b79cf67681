"""``nnx.bridge``: NNX modules with Linen's functional protocol and back (as
``flax.nnx.bridge``; Linen itself is not mirrored, see :mod:`fluxion_nn.bridge.wrappers`)."""

from ..nn import initializers
from .variables import NNXMeta, with_partitioning
from .wrappers import Functional, ToLinen, ToNNX, functional, lazy_init, to_linen

__all__ = ["Functional", "functional", "lazy_init", "ToNNX", "ToLinen", "to_linen", "NNXMeta",
           "with_partitioning", "initializers"]

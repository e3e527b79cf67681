"""Lifted transforms: ``jit``, ``grad``, ``value_and_grad``, ``vmap``, ``scan``, ``remat``,
``cond``, ``switch``, ``fori_loop``, ``while_loop``, ``eval_shape`` accept modules as arguments;
updates made to them inside (BatchNorm statistics, RNG counts, optimizer state) are written back
to the original objects (as ``flax.nnx``).

One module per family, as flax's ``nnx/transforms``: :mod:`.compilation` (jit),
:mod:`.autodiff` (grad, vjp, jvp, remat), :mod:`.iteration` (vmap, pmap, scan, loops) and
:mod:`.transforms` (cond, switch, eval_shape, checkify, make_jaxpr and shared helpers)."""

from __future__ import annotations

from .autodiff import DiffState, grad, jvp, remat, value_and_grad, vjp
from .compilation import StateSharding, jit, jit_partial
from .custom_vjp import custom_vjp
from .iteration import Carry, StateAxes, fori_loop, pmap, scan, vmap, while_loop
from .shard_map import shard_map
from .transforms import cached_partial, checkify, cond, eval_shape, make_jaxpr, switch

__all__ = ["jit", "grad", "value_and_grad", "vmap", "scan", "remat", "cond", "switch",
           "fori_loop", "while_loop", "eval_shape", "DiffState", "Carry", "StateAxes",
           "cached_partial", "jit_partial", "vjp", "jvp", "pmap", "checkify", "make_jaxpr",
           "StateSharding", "custom_vjp", "shard_map"]

"""``nnx.compat``: the graph API and the lifted transforms with ``graph=True`` (and
``graph_updates=True``) as their default, whatever ``nnx.set_graph_mode`` says (as
``flax.nnx.compat``).

Example::

    >>> import fluxion_nn as nnx
    >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    >>> graphdef, state = nnx.compat.split(model)   # graph mode even under set_graph_mode(False)
"""

from __future__ import annotations

import functools

from . import graph as _graph
from . import module as _module
from . import rnglib as _rnglib
from . import spmd as _spmd
from . import transforms as _transforms

__all__ = [
    "split", "state", "clone", "graphdef", "flatten", "iter_graph", "recursive_map", "view", "view_info", "iter_modules",
    "iter_children", "split_rngs", "fork_rngs", "reseed", "jit", "grad", "value_and_grad",
    "remat", "vjp", "jvp", "vmap", "pmap", "scan", "while_loop", "fori_loop", "eval_shape", "cond", "switch", "cached_partial", "checkify",
    "get_abstract_model",
]

_G = {"graph": True}
_GU = {"graph": True, "graph_updates": True}

# graph API
split = functools.partial(_graph.split, **_G)
state = functools.partial(_graph.state, **_G)
clone = functools.partial(_graph.clone, **_G)
graphdef = functools.partial(_graph.graphdef, **_G)
flatten = functools.partial(_graph.flatten, **_G)
iter_graph = functools.partial(_graph.iter_graph, **_G)
recursive_map = functools.partial(_graph.recursive_map, **_G)
# modules
view = functools.partial(_module.view, **_G)
view_info = functools.partial(_module.view_info, **_G)
iter_modules = functools.partial(_module.iter_modules, **_G)
iter_children = functools.partial(_graph.iter_children, **_G)
# rngs
split_rngs = functools.partial(_rnglib.split_rngs, **_GU)
fork_rngs = functools.partial(_rnglib.fork_rngs, **_GU)
reseed = functools.partial(_rnglib.reseed, **_G)
# transforms
jit = functools.partial(_transforms.jit, **_GU)
grad = functools.partial(_transforms.grad, **_GU)
value_and_grad = functools.partial(_transforms.value_and_grad, **_GU)
remat = functools.partial(_transforms.remat, **_GU)
vjp = functools.partial(_transforms.vjp, **_GU)
jvp = functools.partial(_transforms.jvp, **_GU)
vmap = functools.partial(_transforms.vmap, **_GU)
pmap = functools.partial(_transforms.pmap, **_GU)
scan = functools.partial(_transforms.scan, **_GU)
while_loop = functools.partial(_transforms.while_loop, **_GU)
fori_loop = functools.partial(_transforms.fori_loop, **_GU)
eval_shape = functools.partial(_transforms.eval_shape, **_GU)
cond = functools.partial(_transforms.cond, **_GU)
switch = functools.partial(_transforms.switch, **_GU)
checkify = functools.partial(_transforms.checkify, **_GU)
cached_partial = functools.partial(_transforms.cached_partial, **_GU)
# sharding
get_abstract_model = functools.partial(_spmd.get_abstract_model, **_G)

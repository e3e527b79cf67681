"""NNX and Linen-protocol modules as submodules of a bridge Module (as
``flax.nnx.bridge.interop``)."""

from __future__ import annotations

from typing import Any, Callable

from .. import graph as _graph
from ..module import Module as _NnxModule
from ..rnglib import Rngs, RngState
from ..transforms.compilation import jit
from ..transforms.transforms import eval_shape
from . import module as bdg
from .wrappers import ToNNX

__all__ = ["nnx_in_bridge_mdl", "linen_in_bridge_mdl"]


def _parent(fn: str) -> tuple:
    ctx, parent = bdg.current_context(), bdg.current_module()
    if ctx is None or parent is None or vars(parent).get("scope") is None:
        raise ValueError(f"{fn}() is only usable inside a bound bridge Module's setup or "
                         f"compact method")
    return ctx, parent


def nnx_in_bridge_mdl(factory: Callable[[Rngs], _NnxModule], name: str | None = None) -> _NnxModule:
    """An NNX module made by ``factory(rngs)`` as a submodule of the running bridge module.

    While initializing it is built with the bridge scope's Rngs; otherwise an abstract copy
    is made (``nnx.eval_shape``) whose RNG state is real and whose other Variables are filled
    from the applied variables. In a compact method it is attached as ``name`` (default
    ``<Class>_<n>``); in ``setup`` assign it yourself.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> class Wrapper(nnx.bridge.Module):
        ...     @nnx.bridge.compact
        ...     def __call__(self, x):
        ...         linear = nnx.bridge.nnx_in_bridge_mdl(lambda rngs: nnx.Linear(2, 3, rngs=rngs))
        ...         return linear(x)
        >>> variables = Wrapper().init(0, jnp.ones((1, 2)))
        >>> fluxion.tree_util.tree_map(jnp.shape, dict(variables["params"]))
        {'Linear_0': {'bias': (3,), 'kernel': (2, 3)}}
    """
    ctx, parent = _parent("nnx_in_bridge_mdl")
    scope = vars(parent)["scope"]
    if parent.is_initializing():
        module = factory(scope.rngs)
    else:
        rngs = scope.rngs if len(scope.rngs) else Rngs(7)  # any Rngs: only shapes are used
        module = eval_shape(factory, rngs, graph=True)

        @jit
        def rng_state(rngs: Rngs) -> Any:
            return _graph.state(factory(rngs), RngState, graph=True)

        if len(scope.rngs):
            _graph.update(module, rng_state(scope.rngs))
    if ctx.in_compact:
        if name is None:
            name = bdg._auto_submodule_name(ctx, type(module))
        setattr(parent, name, module)
    return module


def linen_in_bridge_mdl(linen_module: Any, name: str | None = None) -> _NnxModule:
    """A Linen(-protocol) module as a submodule of the running bridge module, through
    :class:`ToNNX` (initialized on the first ``init``, applied afterwards). In a compact method
    it is attached as ``name`` (default ``<LinenClass>_<n>``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> class Wrapper(nnx.bridge.Module):
        ...     @nnx.bridge.compact
        ...     def __call__(self, x):
        ...         dense = nnx.bridge.linen_in_bridge_mdl(nnx.bridge.to_linen(nnx.Linear, 2, 3))
        ...         return dense(x)
        >>> y, variables = Wrapper().init_with_output(0, jnp.ones((1, 2)))
        >>> y.shape, sorted(variables["params"])
        ((1, 3), ['ToLinen_0'])
    """
    ctx, parent = _parent("linen_in_bridge_mdl")
    module = ToNNX(linen_module, vars(parent)["scope"].rngs)
    bdg._set_initializing(module, parent.is_initializing())
    if ctx.in_compact:
        if name is None:
            name = bdg._auto_submodule_name(ctx, type(linen_module))
        setattr(parent, name, module)
    return module

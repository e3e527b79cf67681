"""``fluxion.interpreters.pxla`` (JAX's ``jax.interpreters.pxla``): the result handlers that
turn the per-device buffers a runtime executable returns into arrays.

``global_avals_to_results_handler(avals, shardings, committed).handlers`` gives, per output, a
function of that output's per-device buffers (what ``consume_with_handlers`` of a jaxlib
execution result passes) returning a Fluxion array of the global aval with the sharding; it is
what code running its own IFRT programs (orbax's Pathways plugin) needs. JAX's other pxla
internals have no counterpart: those names raise an ``AttributeError`` (see
docs/guide/coming-from-jax.md).

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> from fluxion.interpreters import pxla
    >>> x = jnp.arange(3.0)
    >>> h = pxla.global_avals_to_results_handler([fluxion.typeof(x)], [x.sharding], True)
    >>> h.handlers[0]([x._a]).tolist()
    [0.0, 1.0, 2.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fluxion.backend import dispatch as _d
from fluxion.backend.array import Spec
from fluxion.core.avals import ShapedArray
from fluxion.interpreters import _not_provided

__all__ = ["ResultsHandler", "global_aval_to_result_handler", "global_avals_to_results_handler"]


def global_aval_to_result_handler(aval: Any, out_sharding: Any,
                                  committed: bool) -> Callable[[Sequence[Any]], Any]:
    """A function of one output's per-device buffers (in the sharding's device order) that
    returns the global array of ``aval`` placed with ``out_sharding``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> x = jnp.ones(2)
        >>> h = global_aval_to_result_handler(fluxion.typeof(x), x.sharding, True)
        >>> h([x._a]).shape
        (2,)
    """
    if not isinstance(aval, ShapedArray):
        raise TypeError(f"global_aval_to_result_handler: no result handler for {type(aval)}")
    spec = Spec(ShapedArray(aval.shape, aval.dtype, aval.weak_type), out_sharding, committed)

    def handler(bufs: Sequence[Any]) -> Any:
        bufs = list(bufs)
        if len(bufs) != len(out_sharding._internal_device_list):
            raise ValueError(f"result handler: {len(bufs)} buffers for a sharding over "
                             f"{len(out_sharding._internal_device_list)} devices")
        return _d._wrap(_d._jax.ArrayImpl(spec, out_sharding, bufs, committed, True), spec)
    return handler


class ResultsHandler:
    """The per-output handlers of :func:`global_avals_to_results_handler`, with the shardings
    and avals they were made for; calling it maps the handlers over per-output buffer lists."""

    __slots__ = ("handlers", "out_shardings", "out_avals")

    def __init__(self, handlers: list, out_shardings: Sequence[Any],
                 out_avals: Sequence[Any]) -> None:
        self.handlers = handlers
        self.out_shardings = list(out_shardings)
        self.out_avals = list(out_avals)

    def __call__(self, out_bufs: Sequence[Sequence[Any]]) -> list:
        return [h(bufs) for h, bufs in zip(self.handlers, out_bufs)]


def global_avals_to_results_handler(global_out_avals: Sequence[Any], shardings: Sequence[Any],
                                    committed: bool) -> ResultsHandler:
    """One :func:`global_aval_to_result_handler` per output, as a :class:`ResultsHandler`.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> x = jnp.ones(2)
        >>> len(global_avals_to_results_handler([fluxion.typeof(x)], [x.sharding], True).handlers)
        1
    """
    if len(global_out_avals) != len(shardings):
        raise ValueError(f"global_avals_to_results_handler: {len(global_out_avals)} avals but "
                         f"{len(shardings)} shardings")
    return ResultsHandler([global_aval_to_result_handler(a, s, committed)
                           for a, s in zip(global_out_avals, shardings)],
                          shardings, global_out_avals)


__getattr__ = _not_provided("jax.interpreters.pxla")

"""``fluxion.interpreters.batching`` (JAX's ``jax.interpreters.batching``): the ``vmap`` rules
of primitives, for primitives that libraries define themselves.

``primitive_batchers[p] = rule`` sets the batching rule of a
:class:`~fluxion.extend.core.Primitive` in JAX's convention, ``rule(args, dims, **params) ->
(out, out_dim)``: ``dims`` gives each argument's batch axis, or ``None`` for an unbatched one
(a primitive with no argument batched is not given to its rule). ``fancy_primitive_batchers``
takes rules that also receive the axis first, ``rule(axis_data, args, dims, **params)``
(``axis_data.size``, ``axis_data.name``), which is Fluxion's own convention;
``axis_primitive_batchers`` takes JAX's ``rule(axis_size, axis_name, trace_type, args, dims,
**params)`` (``trace_type`` is None, as in JAX 0.10.2). ``defvectorized`` and
``defbroadcasting`` build the rules of elementwise primitives. JAX's tracing internals (``BatchTrace``, ``register_vmappable``)
have no counterpart and raise an ``AttributeError`` (docs/guide/coming-from-jax.md).

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> from fluxion.extend.core import Primitive
    >>> rowsum_p = Primitive("doc_rowsum")
    >>> _ = rowsum_p.def_impl(lambda x: jnp.sum(x, axis=-1))
    >>> _ = rowsum_p.def_abstract_eval(lambda x: x.update(shape=x.shape[:-1]))
    >>> def rule(args, dims):
    ...     (x,), (d,) = args, dims
    ...     return rowsum_p.bind(jnp.moveaxis(x, d, 0)), 0
    >>> primitive_batchers[rowsum_p] = rule
    >>> fluxion.vmap(rowsum_p.bind, in_axes=1)(jnp.ones((3, 2, 4))).shape
    (2, 3)
"""

from __future__ import annotations

from typing import Any, Callable

from fluxion import numpy as jnp
from fluxion.interpreters import _not_provided, _RuleTable
from fluxion.transforms.batching import AxisData

__all__ = ["axis_primitive_batchers", "defbroadcasting", "defvectorized",
           "fancy_primitive_batchers", "primitive_batchers"]


def _from_jax(rule: Callable[..., Any], prim: Any) -> Callable[..., Any]:
    def batch(axis_data: AxisData, args: Any, dims: Any, **params: Any) -> Any:
        return rule(tuple(args), tuple(dims), **params)  # tuples, as JAX hands them
    return batch


def _axis_size(args: Any, dims: Any) -> int:
    for x, d in zip(args, dims):
        if d is not None:
            return x.shape[d]
    raise ValueError("batching rule called with no batched argument")


def _to_jax(stored: Callable[..., Any], prim: Any) -> Callable[..., Any]:
    def rule(args: Any, dims: Any, **params: Any) -> Any:
        return stored(AxisData(None, _axis_size(args, dims)), args, dims, **params)
    return rule


primitive_batchers = _RuleTable("batch", "jax.interpreters.batching.primitive_batchers",
                                wrap=_from_jax, unwrap=_to_jax)
fancy_primitive_batchers = _RuleTable("batch", "jax.interpreters.batching.fancy_primitive_batchers")
def _from_jax_axis(rule: Callable[..., Any], prim: Any) -> Callable[..., Any]:
    # JAX's axis_primitive_batchers: rule(axis_size, axis_name, trace_type, args, dims, **params)
    def batch(axis_data: AxisData, args: Any, dims: Any, **params: Any) -> Any:
        return rule(axis_data.size, axis_data.name, None, tuple(args), tuple(dims), **params)
    return batch


def _to_jax_axis(stored: Callable[..., Any], prim: Any) -> Callable[..., Any]:
    def rule(axis_size: int, axis_name: Any, trace_type: Any, args: Any, dims: Any,
             **params: Any) -> Any:
        del trace_type
        return stored(AxisData(axis_name, axis_size), args, dims, **params)
    return rule


axis_primitive_batchers = _RuleTable("batch", "jax.interpreters.batching.axis_primitive_batchers",
                                     wrap=_from_jax_axis, unwrap=_to_jax_axis)


def _moved(x: Any, d: Any, ndim: int) -> Any:
    """``x`` with its batch axis ``d`` first and singleton axes making it rank ``ndim``, or
    unbatched with leading singleton axes to rank ``ndim``."""
    x = jnp.asarray(x)
    if d is None:
        return jnp.reshape(x, (1,) * (ndim - x.ndim) + x.shape)
    x = jnp.moveaxis(x, d, 0)
    return jnp.reshape(x, x.shape[:1] + (1,) * (ndim - x.ndim) + x.shape[1:])


def defvectorized(prim: Any) -> None:
    """Declares ``prim`` elementwise in its one batched input: ``vmap`` applies it to the whole
    batch (the batch axis stays where it is).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion.extend.core import Primitive
        >>> p = Primitive("doc_sq")
        >>> _ = p.def_impl(lambda x: x * x)
        >>> _ = p.def_abstract_eval(lambda x: x)
        >>> defvectorized(p)
        >>> fluxion.vmap(p.bind)(jnp.arange(3.0)).tolist()
        [0.0, 1.0, 4.0]
    """
    def rule(args: Any, dims: Any, **params: Any) -> Any:
        mapped = [d for d in dims if d is not None]
        if len(set(mapped)) == 1:
            return prim.bind(*args, **params), mapped[0]
        ndim = max(x.ndim + (d is None) for x, d in zip(args, dims))
        return prim.bind(*[_moved(x, d, ndim) for x, d in zip(args, dims)], **params), 0
    primitive_batchers[prim] = rule


def defbroadcasting(prim: Any) -> None:
    """Declares ``prim`` elementwise with NumPy broadcasting over all its inputs: ``vmap`` moves
    the batch axes first and lines up the ranks.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion.extend.core import Primitive
        >>> p = Primitive("doc_add")
        >>> _ = p.def_impl(lambda x, y: x + y)
        >>> _ = p.def_abstract_eval(lambda x, y: x)
        >>> defbroadcasting(p)
        >>> fluxion.vmap(p.bind, in_axes=(0, None))(jnp.ones((2, 3)), jnp.ones(3)).shape
        (2, 3)
    """
    def rule(args: Any, dims: Any, **params: Any) -> Any:
        ndim = max(getattr(x, "ndim", 0) + (d is None) for x, d in zip(args, dims))
        return prim.bind(*[_moved(x, d, ndim) for x, d in zip(args, dims)], **params), 0
    primitive_batchers[prim] = rule


__getattr__ = _not_provided("jax.interpreters.batching")

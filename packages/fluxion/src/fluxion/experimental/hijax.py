"""``fluxion.experimental.hijax`` (JAX's ``jax.experimental.hijax``): JAX's experimental
"high-level types" (user-defined aval types with their own primitives), which Fluxion does not
support.

The names exist so that code defining hi-types loads (flax.nnx defines its optional hijax
``Variable`` at import, used only with ``flax_hijax_variable=True``): classes can be subclassed
and registered, aval methods and properties defined. Binding a hi-primitive raises
``NotImplementedError``, and a registered hi-type is not traced as one (listed in
docs/guide/coming-from-jax.md). ``AbstractValue``, ``ShapedArray`` and ``AbstractRef`` are
Fluxion's.

Example:
    >>> class Double(HiPrimitive):
    ...     pass
    >>> p = Double("double")
    >>> try:
    ...     p.bind(1.0)
    ... except NotImplementedError as e:
    ...     print("not supported" in str(e))
    True
"""

from __future__ import annotations

from typing import Any, Callable

import fluxion.numpy as jnp
from fluxion.core.avals import AbstractValue, ShapedArray
from fluxion.extend.core import Effect
from fluxion.ref import AbstractRef

__all__ = ["AbstractRef", "AbstractValue", "AvalMutableQDD", "AvalQDD", "HiPrimitive", "HiType",
           "MutableHiType", "ShapedArray", "Zero", "aval_method", "aval_property",
           "control_flow_allowed_effects", "instantiate_zeros", "is_undefined_primal",
           "register_hitype"]

_NOT_SUPPORTED = ("jax.experimental.hijax is not supported by Fluxion (see "
                  "docs/guide/coming-from-jax.md)")


class HiType(AbstractValue):
    """Base class of a user-defined abstract value type."""

    __slots__ = ("__dict__",)


class MutableHiType(HiType):
    """Base class of a user-defined mutable abstract value type."""

    __slots__ = ()


class HiPrimitive:
    """Base class of a primitive on hi-types; binding one raises ``NotImplementedError``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def bind(self, *args: Any, **params: Any) -> Any:
        raise NotImplementedError(f"{self.name}: {_NOT_SUPPORTED}")

    def __repr__(self) -> str:
        return self.name


class AvalQDD:
    """An abstract value with its quasi-dynamic data."""

    def __init__(self, aval: Any, qdd: Any) -> None:
        self.aval, self.qdd = aval, qdd


class AvalMutableQDD(AvalQDD):
    """An abstract value with its mutable quasi-dynamic data."""


class Zero:
    """A symbolic zero tangent of abstract value ``aval`` (Fluxion's JVPs never hand one to
    user code)."""

    def __init__(self, aval: Any) -> None:
        self.aval = aval


def instantiate_zeros(x: Any) -> Any:
    """``x``, with a symbolic :class:`Zero` replaced by an array of zeros."""
    if isinstance(x, Zero):
        return jnp.zeros(x.aval.shape, x.aval.dtype)
    return x


def is_undefined_primal(x: Any) -> bool:
    """Whether ``x`` is a linear input of a transpose rule (never, for values Fluxion passes to
    user code)."""
    return False


class aval_method:  # noqa: N801  (JAX's name)
    """A method defined on a hi-type (its tracers would forward to it)."""

    def __init__(self, fun: Callable) -> None:
        self.fun = fun

    def __get__(self, obj: Any, cls: Any = None) -> Any:
        return self.fun if obj is None else self.fun.__get__(obj, cls)


class aval_property(property):  # noqa: N801  (JAX's name)
    """A property defined on a hi-type."""


class _EffectTypeSet:
    def __init__(self) -> None:
        self._types: set[type] = set()

    def add_type(self, t: type[Effect]) -> None:
        self._types.add(t)

    def contains(self, eff: Any) -> bool:
        return type(eff) in self._types


control_flow_allowed_effects = _EffectTypeSet()
"""Effect types allowed in control flow (recorded; Fluxion has no effect types of this kind)."""

_HITYPES: dict[type, Callable] = {}


def register_hitype(t: type, to_aval: Callable) -> None:
    """Records ``t`` as a hi-type (Fluxion does not trace values of it as one)."""
    _HITYPES[t] = to_aval

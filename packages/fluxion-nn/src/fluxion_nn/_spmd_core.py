"""Logical axis rules and the eager placement of annotated values (as ``flax.core.spmd``), kept
apart from :mod:`fluxion_nn.spmd` so ``Variable`` can place its value when it is made."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, Callable

import fluxion
from fluxion.experimental.layout import Format
from fluxion.sharding import NamedSharding, PartitionSpec

__all__ = [
    "logical_axis_rules",
    "set_logical_axis_rules",
    "get_logical_axis_rules",
    "composite_rules",
    "from_sharding_rules",
    "shard_value",
]


# -- logical axis rules -----------------------------------------------------------------------------

class _AxisRules(threading.local):
    def __init__(self) -> None:
        self.rules: Any = ()


_AXIS_RULES = _AxisRules()


def set_logical_axis_rules(rules: Any) -> None:
    """Bind logical axis names to mesh axes for this thread (``((logical, mesh_axis), ...)``).

    Example:
        >>> import fluxion_nn as nnx
        >>> nnx.spmd.set_logical_axis_rules((("embed", "model"),))
        >>> nnx.spmd.get_logical_axis_rules()
        (('embed', 'model'),)
        >>> nnx.spmd.set_logical_axis_rules(())  # back to no rules
    """
    _AXIS_RULES.rules = rules


def get_logical_axis_rules() -> Any:
    """The logical-to-mesh axis rules in force (``()`` when none).

    Example:
        >>> import fluxion_nn as nnx
        >>> nnx.spmd.get_logical_axis_rules()
        ()
        >>> with nnx.logical_axis_rules((("embed", "model"),)):
        ...     print(nnx.spmd.get_logical_axis_rules())
        (('embed', 'model'),)
    """
    return _AXIS_RULES.rules


@contextlib.contextmanager
def logical_axis_rules(rules: Any) -> Iterator[None]:
    """A ``with`` block inside which logical axis names map to mesh axes by ``rules``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> w = nnx.Param(jnp.ones((2, 3)), out_sharding=("embed", None), eager_sharding=False)
        >>> with nnx.logical_axis_rules((("embed", "model"),)):
        ...     print(nnx.spmd.get_var_pspec(w))  # the logical name "embed" becomes the mesh axis "model"
        P('model', None)
        >>> nnx.spmd.get_var_pspec(w)
        P('embed', None)
    """
    old = _AXIS_RULES.rules
    _AXIS_RULES.rules = rules
    try:
        yield
    finally:
        _AXIS_RULES.rules = old


def composite_rules(rule1: Any, rule2: Any) -> Any:
    """Merge two rule tuples; an alias bound to two different mesh axes is a ValueError.

    Example:
        >>> import fluxion_nn as nnx
        >>> nnx.spmd.composite_rules((("a", "x"),), (("b", "y"),))
        (('a', 'x'), ('b', 'y'))
        >>> try:
        ...     nnx.spmd.composite_rules((("a", "x"),), (("a", "y"),))
        ... except ValueError as e:
        ...     print(e)
        Inconsistent logical axis annotations for a: x vs y
    """
    if not rule1 and not rule2:
        return ()
    if not rule2:
        return rule1
    if not rule1:
        return rule2
    rules = dict(rule1)
    for alias, value in rule2:
        if alias in rules and rules[alias] != value:
            raise ValueError(f"Inconsistent logical axis annotations for {alias}: "
                             f"{rules[alias]} vs {value}")
        rules[alias] = value
    return tuple(rules.items())


def from_sharding_rules(sharding: Any, sharding_rules: Any) -> tuple:
    """Rename the logical names of ``sharding`` (a tuple of axis names) by ``sharding_rules``.

    Example:
        >>> import fluxion_nn as nnx
        >>> nnx.spmd.from_sharding_rules(("embed", None, "mlp"), (("embed", "model"),))
        ('model', None, 'mlp')
    """
    rules = dict(sharding_rules)
    return tuple(rules[str(s)] if (s and str(s) in rules) else s for s in sharding)


def _map_sharding(f: Callable[[Any], Any], sharding: Any) -> Any:
    if isinstance(sharding, (PartitionSpec, tuple)):
        return PartitionSpec(*(f(a) for a in sharding))
    if isinstance(sharding, NamedSharding):
        return NamedSharding(sharding.mesh, _map_sharding(f, sharding.spec))
    if isinstance(sharding, Format):
        return Format(sharding.layout, _map_sharding(f, sharding.sharding))
    return sharding


def _mesh_of(sharding: Any) -> Any:
    if isinstance(sharding, NamedSharding):
        return sharding.mesh
    if isinstance(sharding, Format):
        return _mesh_of(sharding.sharding)
    return None


def _apply_rules(sharding: Any, sharding_rules: Any) -> Any:
    context_rules = get_logical_axis_rules()
    if context_rules or sharding_rules:
        rules = dict(composite_rules(context_rules, sharding_rules))
        return _map_sharding(lambda a: rules.get(a, a), sharding)
    return _map_sharding(lambda a: a, sharding)


def _global_mesh() -> Any:
    mesh = fluxion.sharding.get_abstract_mesh()
    return None if mesh.empty else mesh


def shard_value(value: Any, out_sharding: Any, sharding_rules: Any, mesh: Any) -> Any:
    """Place ``value`` by ``out_sharding`` (axis names, a PartitionSpec, a NamedSharding or a
    Format), naming mesh axes through the logical rules, on ``mesh`` or the current mesh:
    ``reshard`` on an all-Explicit mesh, ``with_sharding_constraint`` on an all-Auto one.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> mesh = fluxion.make_mesh((1,), ("data",))
        >>> with fluxion.set_mesh(mesh):
        ...     x = nnx.spmd.shard_value(jnp.ones((4, 4)), ("data", None), None, None)
        >>> x.sharding.spec
        P('data', None)
    """
    if not out_sharding:
        return value
    if mesh is None:
        mesh = _global_mesh()
    out_sharding = _apply_rules(out_sharding, sharding_rules)
    sharding_mesh = _mesh_of(out_sharding)
    if sharding_mesh is not None:
        mesh = sharding_mesh
    if mesh is None:
        raise ValueError(
            "An auto mesh context or metadata is required if creating a variable with annotation "
            f"out_sharding={out_sharding!r}. For more guidance, see "
            "https://flax.readthedocs.io/en/latest/flip/4844-var-eager-sharding.html.")
    if isinstance(out_sharding, PartitionSpec) and isinstance(mesh, fluxion.sharding.Mesh):
        out_sharding = NamedSharding(mesh, out_sharding)
    # a PartitionSpec left as is names axes of the current (abstract) mesh
    if isinstance(out_sharding, Format):
        return fluxion.lax.with_sharding_constraint(value, out_sharding)
    if mesh.are_all_axes_explicit:
        return fluxion.sharding.reshard(value, out_sharding)
    if mesh.are_all_axes_auto:
        return fluxion.lax.with_sharding_constraint(value, out_sharding)
    raise ValueError("Mesh must have all Explicit or all Auto axes to use eager sharding. "
                     f"Got mixed axis types: {mesh.axis_types}")

"""Conversions between NNX Variables and Linen-style variable dicts (``{collection: {path...:
value}}``), as ``flax.nnx.bridge.variables``: a Variable whose metadata carries more than the flags
every Variable has travels as an :class:`NNXMeta` box."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

import fluxion.tree_util as tree_util

from .. import spmd
from .._flax_link import flax_on_fluxion
from ..variablelib import Variable, variable_name_from_type, variable_type_from_name

__all__ = ["NNXMeta", "flax_on_fluxion", "is_vanilla_variable", "to_linen_var", "to_nnx_var",
           "linen_vars_to_nnx_attrs", "nnx_attrs_to_linen_vars", "with_partitioning",
           "sort_variable_types"]

_REQUIRED = ("hijax", "ref", "eager_sharding")


class NNXMeta:
    """A Linen-side box of an NNX Variable's value with its type and metadata (a pytree whose
    single child is the value).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> init = nnx.with_metadata(nnx.initializers.ones_init(), description="kernel")
        >>> model = nnx.bridge.to_linen(nnx.Linear, 2, 3, kernel_init=init)
        >>> variables = model.init(fluxion.random.key(0), jnp.ones((1, 2)))
        >>> box = variables["params"]["kernel"]
        >>> isinstance(box, nnx.bridge.NNXMeta), box.var_type.__name__, box.metadata["description"]
        (True, 'Param', 'kernel')
    """

    __slots__ = ("var_type", "value", "metadata")

    def __init__(self, var_type: type, value: Any, metadata: dict):
        self.var_type = var_type
        self.value = value
        self.metadata = dict(metadata)

    def unbox(self) -> Any:
        """The boxed value."""
        return self.value

    def replace_boxed(self, val: Any) -> "NNXMeta":
        """The same box around ``val``."""
        return NNXMeta(self.var_type, val, self.metadata)

    def replace(self, **updates: Any) -> "NNXMeta":
        """A copy with ``var_type``/``value``/``metadata`` replaced."""
        fields = {"var_type": self.var_type, "value": self.value, "metadata": self.metadata}
        fields.update(updates)
        return NNXMeta(**fields)

    def add_axis(self, index: int, params: dict) -> "NNXMeta":
        """Linen's axis hook (as flax: the box is returned unchanged)."""
        return self

    def remove_axis(self, index: int, params: dict) -> "NNXMeta":
        """Linen's axis hook (as flax: the box is returned unchanged)."""
        return self

    def get_partition_spec(self) -> Any:
        """The PartitionSpec of the Variable this box stands for."""
        return spmd.get_var_pspec(self.to_nnx_variable())

    def to_nnx_variable(self) -> Variable:
        """The Variable this box stands for."""
        meta = {k: v for k, v in self.metadata.items() if k not in _REQUIRED}
        flags = {k: self.metadata[k] for k in _REQUIRED if k in self.metadata}
        flags["eager_sharding"] = False  # the value is already placed
        return self.var_type(self.value, **flags, **meta)

    def __repr__(self) -> str:
        return f"NNXMeta(var_type={self.var_type.__name__}, value={self.value!r}, metadata={self.metadata!r})"


tree_util.register_pytree_node(
    NNXMeta, lambda b: ((b.value,), (b.var_type, tuple(sorted(b.metadata.items(), key=str)))),
    lambda aux, ch: NNXMeta(aux[0], ch[0], dict(aux[1])))


def sort_variable_types(types: Any) -> list:
    """Variable types, most derived first.

    Example: ``sort_variable_types([nnx.Variable, nnx.Param])[0] is nnx.Param``.
    """
    types = list(types)
    depth = {t: sum(1 for p in t.mro() if issubclass(p, Variable)) for t in types}
    return sorted(types, key=lambda t: -depth[t])


def is_vanilla_variable(v: Variable) -> bool:
    """True when the Variable's metadata is only the flags every Variable carries (and empty
    hook tuples).

    Example: ``is_vanilla_variable(nnx.Param(x))`` is True.
    """
    for key, value in v.get_metadata().items():
        if key in _REQUIRED or (key.endswith("_hooks") and value == ()):
            continue
        return False
    return True


def to_linen_var(v: Variable) -> Any:
    """A Variable's Linen form: its value, or an :class:`NNXMeta` box when it has metadata.

    Example: ``to_linen_var(nnx.Param(x))`` is ``x``.
    """
    metadata = v.get_metadata()
    linen_type = metadata.get("linen_meta_type")
    if linen_type is not None:  # it came from a Linen metadata box: that box again
        if hasattr(linen_type, "from_nnx_metadata"):
            return linen_type.from_nnx_metadata({"value": v.get_value(), **metadata})
        return linen_type(v.get_value(), **metadata)
    if is_vanilla_variable(v):
        return v.get_value()
    return NNXMeta(type(v), v.get_value(), metadata)


def to_nnx_var(col: str, x: Any) -> Variable:
    """The Variable of collection ``col`` for a Linen value (unboxing an :class:`NNXMeta`, or a
    Linen metadata box: any object with ``unbox`` and ``to_nnx_metadata``).

    Example: ``to_nnx_var("params", x)`` is ``nnx.Param(x)``.
    """
    vtype = variable_type_from_name(col, allow_register=True)
    if isinstance(x, NNXMeta):
        if vtype is not x.var_type:
            raise ValueError(f"to_nnx_var: type stored in NNXMeta {x.var_type.__name__} != type "
                             f"inferred from collection name {vtype.__name__}")
        return x.to_nnx_variable()
    if hasattr(x, "to_nnx_metadata") and hasattr(x, "unbox"):
        # a Linen metadata box (nn.Partitioned, nn.LogicallyPartitioned): its value and its
        # metadata (out_sharding, mesh, sharding_rules, ...) as the Variable's, the box's type
        # kept so that to_linen_var gives the box back (as flax's bridge)
        meta = dict(x.to_nnx_metadata())
        value = meta.pop("value")
        return vtype(value, linen_meta_type=type(x), **meta)
    return vtype(x)  # no sharding metadata: nothing to place (eager_sharding the default, as flax)


def _flatten(mapping: Any, prefix: tuple = ()) -> dict:
    flat: dict = {}
    for k, v in mapping.items():
        if isinstance(v, (dict, Mapping)):  # dicts, States, Linen's FrozenDicts
            flat.update(_flatten(v, prefix + (k,)))
        else:
            flat[prefix + (k,)] = v
    return flat


def _unflatten(flat: dict) -> dict:
    out: dict = {}
    for path, v in flat.items():
        node = out
        for k in path[:-1]:
            node = node.setdefault(k, {})
        node[path[-1]] = v
    return out


def linen_vars_to_nnx_attrs(variables: Any) -> dict:
    """``{collection: tree}`` to one tree of Variables (a path found in two collections is a
    ValueError).

    Example: ``linen_vars_to_nnx_attrs({"params": {"w": x}})`` is ``{"w": nnx.Param(x)}``.
    """
    flat: dict = {}
    for col, tree in variables.items():
        for path, x in _flatten(dict(tree)).items():
            if path in flat:
                raise ValueError(f"Found duplicate variable path {path} with variables "
                                 f"{flat[path]} and {x}. This is not allowed in NNX.")
            flat[path] = to_nnx_var(col, x)
    return _unflatten(flat)


def nnx_attrs_to_linen_vars(nnx_attrs: Any, metadata_fn: Callable[[Variable], Any] | None
                            = to_linen_var) -> dict:
    """A tree of Variables to ``{collection: tree}`` (collection from the Variable type).

    Example: ``nnx_attrs_to_linen_vars({"w": nnx.Param(x)})`` is ``{"params": {"w": x}}``.
    """
    flat: dict = {}
    for path, v in _flatten(dict(nnx_attrs)).items():
        if not isinstance(v, Variable):
            raise ValueError(f"Cannot infer collection name from value: {v}")
        col = variable_name_from_type(type(v), allow_register=True)
        flat[(col, *path)] = metadata_fn(v) if metadata_fn is not None else v.get_value()
    return _unflatten(flat)


def with_partitioning(fn: Callable, names: Any, mesh: Any = None) -> Callable:
    """Linen's ``with_partitioning`` signature over :func:`fluxion_nn.with_partitioning`.
    When flax's Linen is loaded and runs on Fluxion, the Variable's Linen form is Linen's
    ``Partitioned`` box (as flax's bridge); otherwise an :class:`NNXMeta` box.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> init = nnx.bridge.with_partitioning(nnx.initializers.ones_init(), (None, "model"))
        >>> box = init(fluxion.random.key(0), (2, 3))
        >>> type(box).__name__, box.metadata["out_sharding"], box.raw_value.shape
        ('VariableMetadata', (None, 'model'), (2, 3))
    """
    linen_meta = flax_on_fluxion("flax.core.meta")
    if linen_meta is not None and hasattr(linen_meta, "Partitioned"):
        return spmd.with_partitioning(fn, names, mesh, linen_meta_type=linen_meta.Partitioned)
    return spmd.with_partitioning(fn, names, mesh)

"""Sharding annotations of Variables (as ``flax.nnx.spmd``): logical axis rules, the eager
placement of new Variables with ``out_sharding`` metadata, PartitionSpec trees of a model, abstract
models with shardings, and the axis bookkeeping of lifted transforms."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping
from typing import Any, Callable, TypeVar

import fluxion
import fluxion.tree_util as tree_util
from fluxion.sharding import NamedSharding, PartitionSpec

from . import variablelib
from ._spmd_core import (
    composite_rules,
    from_sharding_rules,
    get_logical_axis_rules,
    logical_axis_rules,
    set_logical_axis_rules,
    shard_value,
)
from .graph import map as graph_map
from .graph import split

__all__ = [
    "PARTITION_NAME",
    "add_axis",
    "remove_axis",
    "with_partitioning",
    "get_var_pspec",
    "get_partition_spec",
    "get_named_sharding",
    "get_abstract_model",
    "as_abstract",
    "abstract_with_sharding",
    "logical_axis_rules",
    "set_logical_axis_rules",
    "get_logical_axis_rules",
    "composite_rules",
    "from_sharding_rules",
    "shard_value",
    "transform_metadata",
]

A = TypeVar("A")
PARTITION_NAME = "partition_name"

with_partitioning = variablelib.with_partitioning


# -- axes added and removed by lifted transforms ----------------------------------------------------

def _partition_name_and_metadata(transform_metadata: Mapping) -> tuple[Any, dict]:
    if PARTITION_NAME not in transform_metadata:
        raise ValueError('Trying to transform a Partitioned variable but "partition_name" is not '
                         f"specified in transform_metadata: {transform_metadata}")
    other = dict(transform_metadata)
    return other.pop(PARTITION_NAME), other


def _is_variable(x: Any) -> bool:
    return isinstance(x, variablelib.Variable)


def add_axis(tree: A, index: int, transform_metadata: Mapping) -> A:
    """Insert ``transform_metadata[PARTITION_NAME]`` at ``index`` of the ``out_sharding`` (and
    the other tuple metadata named in ``transform_metadata``) of every Variable in ``tree``, then
    call each Variable's ``add_axis`` hook (what ``nnx.vmap``/``nnx.scan`` do on the way out).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> state = {"w": nnx.Param(jnp.ones((4, 2, 3)), out_sharding=("embed", None), eager_sharding=False)}
        >>> state = nnx.spmd.add_axis(state, 0, {nnx.PARTITION_NAME: "layers"})  # a stacked axis in front
        >>> state["w"].out_sharding
        ('layers', 'embed', None)
        >>> nnx.spmd.remove_axis(state, 0, {nnx.PARTITION_NAME: "layers"})["w"].out_sharding
        ('embed', None)
    """
    axis_name, other = _partition_name_and_metadata(transform_metadata)

    def insert(fields: Any, value: Any) -> tuple:
        items = list(fields)
        while len(items) < index:
            items.append(None)
        items.insert(index, value)
        return tuple(items)

    def one(x: Any) -> Any:
        if _is_variable(x):
            sharding = x.get_metadata("out_sharding", None)
            if sharding:
                x.set_metadata(out_sharding=insert(sharding, axis_name))
            for k, v in other.items():
                t = x.get_metadata(k, None)
                if t and isinstance(t, tuple):
                    x.set_metadata(k, insert(t, v))
            x.add_axis(index, axis_name)
        return x

    return tree_util.tree_map(one, tree, is_leaf=_is_variable)


def remove_axis(tree: A, index: int, transform_metadata: Mapping) -> A:
    """Undo :func:`add_axis`: take the partition name out of position ``index`` of each
    Variable's ``out_sharding`` (a ValueError if another name is there) and call ``remove_axis``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> state = {"w": nnx.Param(jnp.ones((4, 2)), out_sharding=("layers", None), eager_sharding=False)}
        >>> nnx.spmd.remove_axis(state, 0, {nnx.PARTITION_NAME: "layers"})["w"].out_sharding
        (None,)
    """
    axis_name, other = _partition_name_and_metadata(transform_metadata)

    def remove(fields: Any, value: Any) -> tuple:
        items = list(fields)
        removed = items.pop(index)
        if removed != value:
            raise ValueError(f"Expected to remove {value!r} at index {index} from {fields!r}, "
                             f"but found {removed!r}.")
        return tuple(items)

    def one(x: Any) -> Any:
        if _is_variable(x):
            sharding = x.get_metadata("out_sharding", None)
            if sharding is not None:
                x.set_metadata(out_sharding=remove(sharding, axis_name))
            for k, v in other.items():
                t = x.get_metadata(k, None)
                if t and isinstance(t, tuple):
                    x.set_metadata(k, remove(t, v))
            x.remove_axis(index, axis_name)
        return x

    return tree_util.tree_map(one, tree, is_leaf=_is_variable)


# -- PartitionSpec trees ----------------------------------------------------------------------------

def get_var_pspec(v: variablelib.Variable) -> PartitionSpec | None:
    """The PartitionSpec of a Variable: its ``out_sharding`` through the logical rules,
    ``P()`` for an unannotated array, ``None`` for a non-array value.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> w = nnx.Param(jnp.ones((2, 3)), out_sharding=("data", None), eager_sharding=False)
        >>> nnx.spmd.get_var_pspec(w)
        P('data', None)
        >>> nnx.spmd.get_var_pspec(nnx.Param(jnp.ones(2))), nnx.spmd.get_var_pspec(nnx.Variable("text"))
        (P(), None)
    """
    sharding = v.get_metadata("out_sharding", None)
    if sharding:
        local_rules = v.get_metadata("sharding_rules", None)
        if get_logical_axis_rules() or local_rules is not None:
            rules = composite_rules(get_logical_axis_rules(), local_rules or ())
            return PartitionSpec(*from_sharding_rules(sharding, rules))
        return PartitionSpec(*sharding)
    if hasattr(v.get_value(), "shape"):
        return PartitionSpec()
    return None


def get_partition_spec(tree: A) -> A:
    """The tree of ``tree`` with each Variable's value replaced by its PartitionSpec (and each
    bare array by ``P()``).

    Example:
        >>> import fluxion, fluxion_nn as nnx
        >>> init = nnx.with_partitioning(nnx.initializers.zeros_init(), (None, "model"))
        >>> with fluxion.set_mesh(fluxion.make_mesh((1,), ("model",))):
        ...     model = nnx.Linear(2, 3, kernel_init=init, use_bias=False, rngs=nnx.Rngs(0))
        >>> nnx.get_partition_spec(nnx.state(model))["kernel"].value
        P(None, 'model')
    """
    def one(x: Any) -> Any:
        if _is_variable(x):
            return x.replace(get_var_pspec(x))
        if hasattr(x, "shape"):
            return PartitionSpec()
        return None

    return tree_util.tree_map(one, tree, is_leaf=_is_variable)


def get_named_sharding(tree: A, mesh: Any) -> A:
    """As :func:`get_partition_spec`, each spec made a ``NamedSharding`` on ``mesh``.

    Example:
        >>> import fluxion, fluxion_nn as nnx
        >>> mesh = fluxion.make_mesh((1,), ("model",))
        >>> init = nnx.with_partitioning(nnx.initializers.zeros_init(), (None, "model"))
        >>> with fluxion.set_mesh(mesh):
        ...     model = nnx.Linear(2, 3, kernel_init=init, use_bias=False, rngs=nnx.Rngs(0))
        >>> nnx.get_named_sharding(nnx.state(model), mesh)["kernel"].value.spec
        P(None, 'model')
    """
    specs = get_partition_spec(tree)
    return tree_util.tree_map(lambda p: NamedSharding(mesh, p), specs,
                              is_leaf=lambda x: isinstance(x, PartitionSpec))


def get_abstract_model(init_fn: Callable[[], Any], mesh: Any, *,
                       graph: bool | None = None) -> tuple[Any, Any]:
    """``(graphdef, abstract state)`` of the model ``init_fn`` builds, each leaf a
    ``ShapeDtypeStruct`` carrying the NamedSharding of its Variable's annotation on ``mesh``.

    Example:
        >>> import fluxion, fluxion_nn as nnx
        >>> mesh = fluxion.make_mesh((1,), ("model",))
        >>> graphdef, abstract = nnx.get_abstract_model(lambda: nnx.Linear(2, 3, rngs=nnx.Rngs(0)), mesh)
        >>> abstract["kernel"].value.shape, type(abstract["kernel"].value).__name__
        ((2, 3), 'ShapeDtypeStruct')
    """
    side: dict = {}

    def build() -> Any:
        side["gdef"], state = split(init_fn(), graph=graph)
        return state

    with fluxion.set_mesh(mesh):
        abs_state = fluxion.eval_shape(build)
        abs_state = tree_util.tree_map(
            lambda a, s: fluxion.ShapeDtypeStruct(a.shape, a.dtype, sharding=s),
            abs_state, get_named_sharding(abs_state, mesh))
    gdef = side["gdef"]
    return gdef, abs_state


def as_abstract(tree: A, graph: bool | None = None) -> A:
    """Attach a NamedSharding to each abstract Variable (``ShapeDtypeStruct`` value without a
    sharding) that has ``out_sharding`` metadata, on its ``mesh`` metadata or the current mesh.

    Example:
        >>> import fluxion, fluxion_nn as nnx
        >>> mesh = fluxion.make_mesh((1,), ("model",))
        >>> init = nnx.with_partitioning(nnx.initializers.zeros_init(), (None, "model"))
        >>> with fluxion.set_mesh(mesh):
        ...     abstract = nnx.eval_shape(
        ...         lambda: nnx.Linear(2, 3, kernel_init=init, use_bias=False, rngs=nnx.Rngs(0)))
        ...     abstract = nnx.as_abstract(abstract)
        >>> abstract.kernel.value.shape, abstract.kernel.value.sharding.spec
        ((2, 3), P(None, 'model'))
    """
    def add_sharding(_path: Any, x: Any) -> Any:
        if not _is_variable(x):
            return x
        value = x.get_value()
        if (hasattr(value, "shape") and hasattr(value, "dtype")
                and getattr(value, "sharding", None) is None
                and x.get_metadata("out_sharding", None) is not None):
            mesh = x.get_metadata("mesh", None)
            if mesh is None:
                mesh = fluxion.sharding.get_abstract_mesh()
            sharding = NamedSharding(mesh, get_var_pspec(x))
            return x.replace(fluxion.ShapeDtypeStruct(value.shape, value.dtype, sharding=sharding))
        return x

    return graph_map(add_sharding, tree, graph=graph)


def abstract_with_sharding(tree: A, graph: bool | None = None) -> A:
    """Deprecated name of :func:`as_abstract`.

    Example:
        >>> import fluxion, warnings, fluxion_nn as nnx
        >>> mesh = fluxion.make_mesh((1,), ("model",))
        >>> init = nnx.with_partitioning(nnx.initializers.zeros_init(), (None, "model"))
        >>> with fluxion.set_mesh(mesh), warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", DeprecationWarning)
        ...     abstract = nnx.eval_shape(
        ...         lambda: nnx.Linear(2, 3, kernel_init=init, use_bias=False, rngs=nnx.Rngs(0)))
        ...     abstract = nnx.abstract_with_sharding(abstract)
        >>> abstract.kernel.value.sharding.spec
        P(None, 'model')
    """
    return as_abstract(tree, graph=graph)


def _apply_axis_fn(tree: Any, axes: Any, metadata: Mapping, fn: Callable) -> None:
    # ``axes`` is a prefix of ``tree``: an int applies ``fn`` below it; any other leaf (None,
    # nnx.Carry) leaves its subtree alone, as flax's broadcast over the prefix
    if isinstance(axes, int) and not isinstance(axes, bool):
        fn(tree, axes, metadata)
        return
    if isinstance(axes, (tuple, list)) and not isinstance(axes, PartitionSpec):
        if not isinstance(tree, (tuple, list)) or len(axes) != len(tree):
            n = len(tree) if isinstance(tree, (tuple, list)) else 1
            raise ValueError(f"transform_metadata: axes {axes!r} must be an int, None, or a "
                             f"tuple with one entry per value ({n} values)")
        for sub, ax in zip(tree, axes):
            _apply_axis_fn(sub, ax, metadata, fn)


def transform_metadata(f: Callable | None = None, *, in_axes: Any = 0, out_axes: Any = 0,
                       partition: str | None, graph: bool | None = None) -> Any:
    """Run ``f`` as a lifted transform sees it: inside, the Variables of the arguments lose the
    axis ``in_axes`` (named ``partition``) from their ``out_sharding`` metadata; after the call
    the arguments get it back and the Variables of the output gain it at ``out_axes``. Values
    are not changed; updates made by ``f`` stay on the arguments.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> v = nnx.Param(jnp.ones((4, 3)), out_sharding=("layers", "din"), eager_sharding=False)
        >>> @nnx.transform_metadata(in_axes=0, out_axes=0, partition="layers")
        ... def f(v):
        ...     return v.out_sharding  # as a per-layer function sees it
        >>> f(v), v.out_sharding  # restored afterwards
        (('din',), ('layers', 'din'))
    """
    if f is None:
        return functools.partial(transform_metadata, in_axes=in_axes, out_axes=out_axes,
                                 partition=partition, graph=graph)
    metadata = {PARTITION_NAME: partition}
    signature = inspect.signature(f)

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if kwargs:  # keyword arguments are bound to their positions, as the lifted transforms
            bound = signature.bind(*args, **kwargs)
            if bound.kwargs:
                raise TypeError(f"transform_metadata: keyword-only arguments are not supported "
                                f"({sorted(bound.kwargs)})")
            args = bound.args
        axes = in_axes if isinstance(in_axes, int) or in_axes is None else tuple(in_axes)
        _apply_axis_fn(tuple(args), axes, metadata, remove_axis)
        try:
            out = f(*args)
        finally:
            _apply_axis_fn(tuple(args), axes, metadata, add_axis)
        _apply_axis_fn(out, out_axes, metadata, add_axis)
        return out

    return wrapper

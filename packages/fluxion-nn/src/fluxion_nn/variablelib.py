"""Variables: typed, mutable boxes for the arrays a module owns (as ``flax.nnx.Variable``)."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import operator
import threading
import types
import warnings
from collections.abc import Iterator, Mapping
from typing import Any, Callable

import numpy as np

import fluxion
import fluxion.tree_util as tree_util

from ._config import ConfigContext
from ._spmd_core import shard_value
from .errors import trace_context_error
from .tracers import TraceState

__all__ = [
    "Variable",
    "Param",
    "BatchStat",
    "Cache",
    "Intermediate",
    "Perturbation",
    "is_array",
    "VariableMetadata",
    "with_metadata",
    "with_partitioning",
    "as_pure",
    "variable_name_from_type",
    "variable_type_from_name",
    "register_variable_name",
    "var_defaults",
    "VarDefaults",
    "use_eager_sharding",
    "using_eager_sharding",
]

_NAME_TO_TYPE: dict[str, type] = {}
_TYPE_TO_NAME: dict[type, str] = {}


def is_array(x: Any) -> bool:
    """True for arrays and traced arrays (anything with a shape and a dtype that is no Variable).

    Example: ``is_array(fluxion.numpy.ones(2))`` is True; ``is_array(3)`` is False.
    """
    return (not isinstance(x, (Variable, type)) and hasattr(x, "shape")
            and hasattr(x, "dtype"))


class VariableMetadata:
    """An initial value plus metadata, as returned by initializers wrapped with
    ``with_metadata``; a Variable built from it takes both.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> meta = nnx.VariableMetadata(jnp.ones(2), metadata={"description": "scale"})
        >>> meta.raw_value.tolist(), meta.metadata
        ([1.0, 1.0], {'description': 'scale'})
    """

    __slots__ = ("raw_value", "metadata")

    def __init__(self, raw_value: Any, metadata: dict | None = None):
        self.raw_value = raw_value
        self.metadata = dict(metadata or {})

    def __repr__(self) -> str:
        return f"VariableMetadata({self.raw_value!r}, {self.metadata!r})"


def with_metadata(initializer: Callable, **metadata: Any) -> Callable:
    """Wrap an initializer so the Variables made from its values carry ``metadata``.

    Example:
        >>> import fluxion_nn as nnx
        >>> init = nnx.with_metadata(nnx.initializers.ones_init(), description="encoder kernel")
        >>> layer = nnx.Linear(2, 3, kernel_init=init, rngs=nnx.Rngs(0))
        >>> layer.kernel.description, layer.kernel.value.shape
        ('encoder kernel', (2, 3))
    """

    @functools.wraps(initializer)
    def wrapper(*args: Any, **kwargs: Any) -> VariableMetadata:
        value = initializer(*args, **kwargs)
        if isinstance(value, VariableMetadata):
            return VariableMetadata(value.raw_value, {**value.metadata, **metadata})
        return VariableMetadata(value, metadata)

    return wrapper


def with_partitioning(initializer: Callable, sharding: Any, mesh: Any = None, **metadata: Any) -> Callable:
    """``with_metadata(initializer, out_sharding=sharding, mesh=mesh, **metadata)``.

    Example:
        >>> import fluxion, fluxion_nn as nnx
        >>> init = nnx.with_partitioning(nnx.initializers.zeros_init(), (None, "model"))
        >>> with fluxion.set_mesh(fluxion.make_mesh((1,), ("model",))):
        ...     layer = nnx.Linear(2, 3, kernel_init=init, rngs=nnx.Rngs(0))
        >>> layer.kernel.out_sharding
        (None, 'model')
    """
    return with_metadata(initializer, out_sharding=sharding, mesh=mesh, **metadata)


def as_pure(tree: Any) -> Any:
    """Replace every Variable in ``tree`` by its value.

    Example:
        >>> import fluxion_nn as nnx
        >>> pure = nnx.as_pure(nnx.state(nnx.Linear(2, 3, rngs=nnx.Rngs(0))))
        >>> sorted(pure.keys()), pure["bias"].tolist()
        (['bias', 'kernel'], [0.0, 0.0, 0.0])
    """
    return tree_util.tree_map(lambda v: v.value if isinstance(v, Variable) else v, tree,
                              is_leaf=lambda v: isinstance(v, Variable))


_NO_DEFAULT: Any = object()
# the creation number of each Variable made by its constructor: a lifted transform tells a
# Variable made before its body ran (captured from outside) from the ones made inside
_SERIAL = itertools.count(1)


def _serial_mark() -> int:
    # a number larger than the ``_serial`` of every Variable constructed before the call and
    # smaller than those constructed after (Variables rebuilt by a merge have no ``_serial``)
    return next(_SERIAL)


def _serial_of(v: Variable) -> int | None:
    try:
        return object.__getattribute__(v, "_serial")
    except AttributeError:
        return None


class Variable:
    """A mutable box holding one value (usually an array) plus metadata.

    ``Variable(value, **metadata)``; read with ``v.value`` or ``v[...]``, write with
    ``v.value = x`` or ``v[...] = x``. Subclasses (``Param``, ``BatchStat``, ...) tag the role of the
    value so filters can select it. Variables are pytrees whose single leaf is the value.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> w = nnx.Param(jnp.ones((2, 3)))
        >>> w.value = w.value * 2
        >>> w.value.sum().tolist(), w.shape
        (12.0, (2, 3))
    """

    __slots__ = ("_value", "_metadata", "_serial", "_trace_state")

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        # hijax mode (the argument, the VariableMetadata's entry, else var_defaults): the
        # Variable is built as usual, then put in a hijax box (fluxion_nn.hijax)
        hijax = kwargs.get("hijax")
        if not args and not kwargs:  # copy/pickle making an empty object to fill
            return object.__new__(cls)
        if hijax is None:
            value = args[0] if args else kwargs.get("value")
            if isinstance(value, VariableMetadata) and "hijax" in value.metadata:
                hijax = value.metadata["hijax"]
            else:
                hijax = _VAR_STACKS.hijax[-1] if _VAR_STACKS.hijax else False
        variable = object.__new__(cls)
        if not hijax:
            return variable
        variable.__init__(*args, **kwargs)
        return _make_hijax(variable)

    def __init__(self, value: Any, *, hijax: bool | None = None, ref: bool | None = None,
                 eager_sharding: bool | None = None, **metadata: Any):
        if isinstance(value, VariableMetadata):
            aux = dict(value.metadata)
            for name, given in (("hijax", hijax), ("ref", ref), ("eager_sharding", eager_sharding)):
                if name in aux:
                    if given is not None and given != aux[name]:
                        raise ValueError(f"Cannot specify {name} both in VariableMetadata and as an "
                                         "argument to Variable constructor.")
            hijax = aux.pop("hijax", hijax)
            ref = aux.pop("ref", ref)
            eager_sharding = aux.pop("eager_sharding", eager_sharding)
            metadata = {**aux, **metadata}
            value = value.raw_value
        if isinstance(value, Variable):
            inherited = value.get_metadata()
            for name in _REQUIRED_METADATA:
                inherited.pop(name, None)
            metadata = {**inherited, **metadata}
            value = value.value
        defaults = var_defaults()
        metadata["hijax"] = defaults.hijax if hijax is None else hijax
        metadata["ref"] = defaults.ref if ref is None else ref
        if eager_sharding is None:
            eager_sharding = using_eager_sharding()
        metadata["eager_sharding"] = eager_sharding
        _remap_sharding_metadata(metadata)
        if eager_sharding and "out_sharding" in metadata:
            value = shard_value(value, metadata["out_sharding"],
                                metadata.get("sharding_rules"), metadata.get("mesh"))
        if any(isinstance(x, fluxion.Ref) for x in tree_util.tree_leaves(value)):
            raise ValueError("Cannot pass a Ref directly into Variable constructor.")
        if metadata["ref"]:  # ref mode: the value lives in a mutable reference (fluxion.new_ref)
            value = fluxion.new_ref(value)
        object.__setattr__(self, "_value", value)
        object.__setattr__(self, "_metadata", metadata)
        object.__setattr__(self, "_serial", next(_SERIAL))
        # the trace it was made at (copies and Variables rebuilt by merge have none: no check)
        object.__setattr__(self, "_trace_state", TraceState())

    @property
    def _can_update(self) -> bool:
        """Whether this Variable may be updated in the current trace (as flax's): hijax
        Variables always; others only at the trace they were created at."""
        if self._metadata.get("hijax", False):
            return True
        try:
            state = object.__getattribute__(self, "_trace_state")
        except AttributeError:
            return True
        return state.is_valid()

    def _check_can_update(self) -> None:
        """Raise :class:`~fluxion_nn.errors.TraceContextError` unless ``_can_update``."""
        if not self._can_update:
            raise trace_context_error(f"Cannot mutate {type(self).__name__} from a different "
                                      f"trace level")

    @property
    def hijax(self) -> bool:
        """Whether this Variable was made in hijax mode (``var_defaults(hijax=...)``)."""
        return self._metadata.get("hijax", False)

    @property
    def ref(self) -> bool:
        """Whether this Variable was made in ref mode (``var_defaults(ref=...)``)."""
        return self._metadata.get("ref", False)

    @property
    def eager_sharding(self) -> bool:
        """Whether the value was placed by its ``out_sharding`` metadata when made."""
        return self._metadata.get("eager_sharding", True)

    def add_axis(self, axis_index: int, axis_name: Any) -> None:
        """Called when a lifted transform (``nnx.vmap``, ``nnx.scan``) adds an axis at
        ``axis_index`` to the value; runs the ``on_add_axis`` hooks. Subclasses override it."""
        _run_axis_hooks(self, "on_add_axis", axis_index, axis_name)

    def remove_axis(self, axis_index: int, axis_name: Any) -> None:
        """Called when a lifted transform removes the axis ``axis_index`` from the value; runs
        the ``on_remove_axis`` hooks. Subclasses override it."""
        _run_axis_hooks(self, "on_remove_axis", axis_index, axis_name)

    # -- value access ---------------------------------------------------------------------------
    # every read and write goes through ``get_value``/``set_value`` (``v.value``, ``v[...]``,
    # ``v[i] = x``, arithmetic), so a subclass overriding them sees all of them, as in flax
    @property
    def value(self) -> Any:
        return self.get_value()

    @value.setter
    def value(self, new: Any) -> None:
        self.set_value(new)

    def get_value(self, *, index: Any = Ellipsis) -> Any:
        """Return the held value (``index``: the part ``value[index]``)."""
        raw = self._value
        if type(raw) is fluxion.Ref:
            return raw[index]
        return raw if index is Ellipsis else raw[index]

    def set_value(self, value: Any, *, index: Any = Ellipsis) -> None:
        """Replace the held value (``index``: only the part ``value[index]``)."""
        if isinstance(value, Variable):
            value = value.get_value()
        raw = self._value
        if type(raw) is fluxion.Ref:  # ref mode: written in place
            raw[index] = value
            return
        if index is Ellipsis:
            object.__setattr__(self, "_value", value)
            return
        if hasattr(raw, "at"):
            object.__setattr__(self, "_value", raw.at[index].set(value))
        else:
            raw[index] = value

    def __getitem__(self, idx: Any) -> Any:
        return self.get_value(index=idx)

    def __setitem__(self, idx: Any, new: Any) -> None:
        self.set_value(new, index=idx)

    # -- metadata -------------------------------------------------------------------------------
    def get_metadata(self, name: str | None = None, default: Any = _NO_DEFAULT, *,
                     exclude_required: bool | None = None) -> Any:
        """A copy of the metadata dict, or the entry ``name`` (``default`` when missing, else
        ``KeyError``)."""
        if name is None:
            return dict(self._metadata)
        if name in self._metadata:
            return self._metadata[name]
        if default is _NO_DEFAULT:
            raise KeyError(f"{type(self).__name__} has no metadata {name!r}")
        return default

    def get_raw_value(self) -> Any:
        """The stored value (as ``get_value``; Fluxion Variables hold no value hooks)."""
        return self._value

    def set_raw_value(self, value: Any) -> None:
        """Store ``value`` (as ``set_value``)."""
        object.__setattr__(self, "_value", value)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # a Variable holding a callable calls it (flax's proxy call)
        return self._value(*args, **kwargs)

    def set_metadata(self, *args: Any, **kwargs: Any) -> None:
        """Set metadata entries: ``set_metadata(key, value)``, ``set_metadata(**entries)``, or
        ``set_metadata(mapping)`` which replaces all of them (``hijax``/``ref``/``eager_sharding``
        are kept and cannot change)."""
        if args and kwargs:
            raise TypeError("Cannot mix positional and keyword arguments in set_metadata")
        if len(args) == 1:
            new = dict(args[0])
            _remap_sharding_metadata(new)
            for name in _REQUIRED_METADATA:
                current = getattr(self, name)
                new.setdefault(name, current)
                if new[name] != current:
                    raise ValueError(f"Cannot change `{name}` metadata, expected {current}, "
                                     f"got {new[name]}")
            object.__setattr__(self, "_metadata", new)
            return
        if len(args) == 2:
            kwargs = {args[0]: args[1]}
        elif args:
            raise TypeError(f"set_metadata takes a mapping or (name, value), got {len(args)} "
                            "positional arguments")
        _remap_sharding_metadata(kwargs)
        for name in ("hijax", "ref"):
            if name in kwargs and kwargs[name] != getattr(self, name):
                raise ValueError(f"Cannot change `{name}` metadata, expected "
                                 f"{getattr(self, name)}, got {kwargs[name]}")
        self._metadata.update(kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        meta = object.__getattribute__(self, "_metadata")
        if name in meta:
            return meta[name]
        # the value's placement (``v.sharding``), as flax reads it through the Variable
        if name == "sharding":
            return getattr(object.__getattribute__(self, "_value"), "sharding", None)
        try:  # anything else is the value's (``v.sum()``, ``v.T``), as flax forwards it
            value = object.__getattribute__(self, "_value")
        except AttributeError:
            value = None
        # (not ``aval``: fluxion's transformations take an object with an aval for an array)
        if name.startswith("_") or name == "aval" or value is None or not hasattr(value, name):
            raise AttributeError(f"{type(self).__name__} has no attribute or metadata {name!r}")
        return getattr(value, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "value":
            Variable.value.fset(self, value)  # type: ignore[attr-defined]
        elif name in Variable.__slots__:
            object.__setattr__(self, name, value)
        else:
            self._metadata[name] = value

    @property
    def type(self) -> type:
        """The Variable subclass."""
        return type(self)

    def replace(self, value: Any = None, **metadata: Any) -> "Variable":
        """Return a new Variable of the same type with ``value`` (and metadata entries) replaced."""
        new = object.__new__(type(self))
        object.__setattr__(new, "_value", self._value if value is None else value)
        object.__setattr__(new, "_metadata", {**self._metadata, **metadata})
        return new

    def copy(self, value: Any = _NO_DEFAULT, **updates: Any) -> "Variable":
        """A copy of this Variable (``value`` and metadata entries replaced when given). A
        reference value is read (the copy never shares it); ``ref=True`` puts the copy's value in
        a new reference (``fluxion.new_ref``). ``hijax=True`` gives a hijax Variable
        (``fluxion_nn.hijax.HijaxVariable``).

        Example: ``v2 = v.copy(out_sharding=("data",))``; ``v.copy(ref=True).get_raw_value()``
        is a ``fluxion.Ref``.
        """
        if value is _NO_DEFAULT:
            value = updates.pop("value", self._value)
        if type(value) is fluxion.Ref:
            value = value[...]
        metadata = {**self._metadata, **updates}
        if metadata.get("ref", False):
            value = fluxion.new_ref(value)
        return self.from_metadata(value, metadata)

    @classmethod
    def from_metadata(cls, value: Any, attributes: dict) -> "Variable":
        """A Variable of this type holding ``value`` with exactly ``attributes`` as metadata
        (no placement or hooks run, as flax's).

        Example: ``nnx.Param.from_metadata(x, p.get_metadata())``.
        """
        new = object.__new__(cls)
        object.__setattr__(new, "_value", value)
        object.__setattr__(new, "_metadata", dict(attributes))
        if attributes.get("hijax", False):
            return _make_hijax(new)
        return new

    @property
    def sharding_names(self) -> Any:
        """The ``out_sharding`` metadata under its old name (deprecated: warns), as flax.

        Example:
            >>> import warnings, fluxion, fluxion_nn as nnx
            >>> init = nnx.with_partitioning(nnx.initializers.zeros_init(), (None, "model"))
            >>> with fluxion.set_mesh(fluxion.make_mesh((1,), ("model",))):
            ...     layer = nnx.Linear(2, 3, kernel_init=init, rngs=nnx.Rngs(0))
            >>> with warnings.catch_warnings():
            ...     warnings.simplefilter("ignore", DeprecationWarning)
            ...     layer.kernel.sharding_names, layer.kernel.out_sharding
            ((None, 'model'), (None, 'model'))
        """
        warnings.warn("'sharding_names' is deprecated, use 'out_sharding' instead.", DeprecationWarning,
                      stacklevel=2)
        return self.get_metadata("out_sharding", None)

    # -- array-like behaviour -------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._value.shape)

    @property
    def dtype(self) -> Any:
        return self._value.dtype

    @property
    def ndim(self) -> int:
        return len(self._value.shape)

    @property
    def size(self) -> int:
        return int(self._value.size)

    @property
    def T(self) -> Any:
        return self._value.T

    def __jax_array__(self) -> Any:
        return self.get_value()

    def __array__(self, dtype: Any = None) -> Any:

        return np.asarray(self.get_value(), dtype=dtype)

    def __len__(self) -> int:
        return len(self._value)

    def __iter__(self):
        return iter(self._value)

    def __bool__(self) -> bool:
        return bool(self.get_value())

    def __float__(self) -> float:
        return float(self.get_value())

    def __int__(self) -> int:
        return int(self.get_value())

    def __repr__(self) -> str:
        meta = "".join(f", {k}={v!r}" for k, v in self._metadata.items()
                       if not _default_required(k, v))
        val = self._value
        if is_array(val):
            desc = f"{getattr(val.dtype, 'name', val.dtype)}{list(val.shape)}"
        else:
            desc = repr(val)
        return f"{type(self).__name__}(value={desc}{meta})"

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: Any) -> Any:
        # as flax: compares the values (an array for array values); identity is ``is``
        if isinstance(other, Variable):
            other = other.get_value()
        return self.get_value() == other

    def __ne__(self, other: Any) -> Any:
        if isinstance(other, Variable):
            other = other.get_value()
        return self.get_value() != other

    def __class_getitem__(cls, item: Any) -> Any:
        # ``nnx.Variable[jax.Array]`` / ``nnx.Param[A]`` in annotations and subclass bases
        return types.GenericAlias(cls, item)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _register_pytree(cls)


def _binop(op: Callable[[Any, Any], Any]):
    def forward(self: Variable, other: Any) -> Any:
        return op(self.get_value(), other.get_value() if isinstance(other, Variable) else other)

    def backward(self: Variable, other: Any) -> Any:
        return op(other, self.get_value())

    return forward, backward


for _name, _op in [
    ("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
    ("truediv", operator.truediv), ("floordiv", operator.floordiv), ("mod", operator.mod),
    ("pow", operator.pow), ("matmul", operator.matmul), ("and", operator.and_),
    ("or", operator.or_), ("xor", operator.xor), ("lshift", operator.lshift),
    ("rshift", operator.rshift),
]:
    _f, _b = _binop(_op)
    setattr(Variable, f"__{_name}__", _f)
    setattr(Variable, f"__r{_name}__", _b)

for _name, _op in [("lt", operator.lt), ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge)]:
    setattr(Variable, f"__{_name}__", _binop(_op)[0])
Variable.__neg__ = lambda self: -self.get_value()  # type: ignore[assignment]
Variable.__pos__ = lambda self: +self.get_value()  # type: ignore[assignment]
Variable.__abs__ = lambda self: abs(self.get_value())  # type: ignore[assignment]
Variable.__invert__ = lambda self: ~self.get_value()  # type: ignore[assignment]


_REQUIRED_METADATA = ("hijax", "ref", "eager_sharding")


def _default_required(name: str, value: Any) -> bool:
    # the flags every Variable carries are left out of its repr while they hold their defaults
    if name == "eager_sharding":
        return value == use_eager_sharding.default
    return name in ("hijax", "ref") and value is False


def _remap_sharding_metadata(metadata: dict[str, Any]) -> None:
    for old in ("sharding", "sharding_names"):
        if old in metadata:
            warnings.warn(f"'{old}' is deprecated, use 'out_sharding' instead.",
                          DeprecationWarning, stacklevel=4)
            metadata["out_sharding"] = metadata.pop(old)


def _run_axis_hooks(v: Variable, key: str, axis_index: int, axis_name: Any) -> None:
    hooks = v._metadata.get(key)
    if hooks:
        for hook in hooks if isinstance(hooks, tuple) else (hooks,):
            hook(v, axis_index, axis_name)


def _meta_key(meta: dict[str, Any]) -> tuple:
    items = []
    for k in sorted(meta):
        v = meta[k]
        try:
            hash(v)
        except TypeError:
            v = _Unhashable(v)
        items.append((k, v))
    return tuple(items)


class _Unhashable:
    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def __hash__(self) -> int:
        return hash(type(self.value))

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _Unhashable) and self.value is other.value


def _register_pytree(cls: type) -> None:
    def flatten_with_keys(v: Variable):
        return [(tree_util.GetAttrKey("value"), v._value)], _meta_key(v._metadata)

    def flatten(v: Variable):
        return [v._value], _meta_key(v._metadata)

    def unflatten(aux: tuple, children: Any) -> Variable:
        new = object.__new__(cls)
        (value,) = children
        object.__setattr__(new, "_value", value)
        object.__setattr__(
            new, "_metadata", {k: (m.value if isinstance(m, _Unhashable) else m) for k, m in aux}
        )
        return new

    tree_util.register_pytree_with_keys(cls, flatten_with_keys, unflatten, flatten)


_register_pytree(Variable)


class Param(Variable):
    """A trainable parameter (what ``nnx.grad`` and ``Optimizer`` differentiate by default).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> class Scale(nnx.Module):
        ...     def __init__(self):
        ...         self.w = nnx.Param(jnp.full((2,), 3.0))
        ...
        ...     def __call__(self, x):
        ...         return self.w * x
        >>> Scale()(jnp.array([1.0, 2.0])).tolist()
        [3.0, 6.0]
        >>> list(nnx.state(Scale(), nnx.Param).keys())
        ['w']
    """


class BatchStat(Variable):
    """Running statistics (BatchNorm's ``mean``/``var``): state that is not trained by gradients.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> class Stats(nnx.Module):
        ...     def __init__(self):
        ...         self.mean = nnx.BatchStat(jnp.zeros((3,)))
        >>> list(nnx.state(Stats(), nnx.BatchStat).keys()), len(nnx.state(Stats(), nnx.Param))
        (['mean'], 0)
    """


class Cache(Variable):
    """Cached values such as an attention decode cache.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> c = nnx.Cache(jnp.zeros((1, 8, 2, 4)))
        >>> c.value.shape, isinstance(c, nnx.Variable)
        ((1, 8, 2, 4), True)
    """


class Intermediate(Variable):
    """Values recorded with ``Module.sow`` for inspection.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> class Block(nnx.Module):
        ...     def __call__(self, x):
        ...         self.sow(nnx.Intermediate, 'features', x * 2)
        ...         return x
        >>> block = Block()
        >>> _ = block(jnp.ones(2))
        >>> nnx.pop(block, nnx.Intermediate)['features'].value[0].tolist()
        [2.0, 2.0]
    """


class Perturbation(Intermediate):
    """Zero perturbations added with ``Module.perturb`` to read gradients of intermediates.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> class Model(nnx.Module):
        ...     def __init__(self, rngs):
        ...         self.linear = nnx.Linear(2, 2, rngs=rngs)
        ...     def __call__(self, x):
        ...         return self.perturb("h", self.linear(x))
        >>> model = Model(nnx.Rngs(0))
        >>> _ = model(jnp.ones((1, 2)))  # the first call creates a zero perturbation
        >>> [(path, v.value.tolist()) for path, v in nnx.to_flat_state(nnx.state(model, nnx.Perturbation))]
        [(('h',), [[0.0, 0.0]])]
    """


def register_variable_name(name: str, typ: type | None = None, *, overwrite: bool = False) -> Any:
    """Associate a collection ``name`` with a Variable subclass (usable as a decorator).

    Example:
        >>> import fluxion_nn as nnx
        >>> class Stat(nnx.Variable):
        ...     pass
        >>> _ = nnx.register_variable_name("stats_doc", Stat)
        >>> nnx.variable_type_from_name("stats_doc") is Stat, nnx.variable_name_from_type(Stat)
        (True, 'stats_doc')
    """
    def register(t: type) -> type:
        if name in _NAME_TO_TYPE and not overwrite and _NAME_TO_TYPE[name] is not t:
            raise ValueError(f"register_variable_name: name {name!r} is already registered")
        _NAME_TO_TYPE[name] = t
        _TYPE_TO_NAME[t] = name
        return t

    return register if typ is None else register(typ)


def variable_name_from_type(typ: type, /, *, allow_register: bool = False) -> str:
    """The collection name of a Variable type (``Param`` -> ``"params"``).

    Example:
        >>> import fluxion_nn as nnx
        >>> nnx.variable_name_from_type(nnx.Param), nnx.variable_name_from_type(nnx.BatchStat)
        ('params', 'batch_stats')
    """
    if typ in _TYPE_TO_NAME:
        return _TYPE_TO_NAME[typ]
    if allow_register:
        register_variable_name(typ.__name__, typ)
        return typ.__name__
    raise ValueError(f"variable_name_from_type: type {typ.__name__} is not registered")


def variable_type_from_name(name: str, /, *, allow_register: bool = False) -> type:
    """The Variable type registered under a collection name (``"params"`` -> ``Param``).

    Example:
        >>> import fluxion_nn as nnx
        >>> nnx.variable_type_from_name("params") is nnx.Param
        True
        >>> nnx.variable_type_from_name("batch_stats") is nnx.BatchStat
        True
    """
    if name in _NAME_TO_TYPE:
        return _NAME_TO_TYPE[name]
    if allow_register:
        typ = type(name, (Variable,), {})
        register_variable_name(name, typ)
        return typ
    raise ValueError(f"variable_type_from_name: name {name!r} is not registered")


for _n, _t in [("params", Param), ("batch_stats", BatchStat), ("cache", Cache),
               ("intermediates", Intermediate), ("perturbations", Perturbation)]:
    register_variable_name(_n, _t)


# -- variable defaults ------------------------------------------------------------------------------

class _VarStacks(threading.local):
    def __init__(self) -> None:
        self.hijax: list[bool] = []
        self.ref: list[bool] = []


_VAR_STACKS = _VarStacks()


@dataclasses.dataclass(frozen=True)
class VarDefaults(Mapping):
    """The defaults new Variables take (``hijax``, ``ref``), as returned by ``var_defaults()``;
    reads like a mapping.

    Example: ``nnx.var_defaults()["ref"]`` is ``False`` unless changed.
    """

    hijax: bool
    ref: bool

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(f.name for f in dataclasses.fields(self))

    def __len__(self) -> int:
        return len(dataclasses.fields(self))


class VarDefaultsContext:
    """What ``var_defaults(hijax=..., ref=...)`` returns: the change is made at the call; as a
    ``with`` block it is undone on exit; as a decorator it applies only inside each call."""

    def __init__(self, changes: dict[str, tuple[Any, Any]]) -> None:
        self.changes = changes  # name -> (previous top of stack or None, new value)

    def __enter__(self) -> "VarDefaultsContext":
        for name, (prev, _) in self.changes.items():
            if prev is not None:
                getattr(_VAR_STACKS, name).insert(-1, prev)
        return self

    def __exit__(self, *exc: Any) -> None:
        for name in self.changes:
            getattr(_VAR_STACKS, name).pop()

    def __call__(self, f: Callable) -> Callable:
        for name, (prev, _) in self.changes.items():
            stack = getattr(_VAR_STACKS, name)
            stack.pop()
            if prev is not None:
                stack.append(prev)

        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for name, (_, new) in self.changes.items():
                getattr(_VAR_STACKS, name).append(new)
            try:
                return f(*args, **kwargs)
            finally:
                for name in self.changes:
                    getattr(_VAR_STACKS, name).pop()

        return wrapper


def var_defaults(*, hijax: bool | None = None, ref: bool | None = None) -> Any:
    """Without arguments: the current :class:`VarDefaults`. With ``hijax=``/``ref=``: change the
    defaults of new Variables (at once; in a ``with`` block until its end; as a decorator during
    each call of the function), returning a :class:`VarDefaultsContext`.

    Example::

        >>> import fluxion_nn as nnx
        >>> with nnx.var_defaults(ref=True):
        ...     nnx.var_defaults().ref
        True
        >>> nnx.var_defaults().ref
        False
    """
    if hijax is None and ref is None:
        return VarDefaults(hijax=_VAR_STACKS.hijax[-1] if _VAR_STACKS.hijax else False,
                           ref=_VAR_STACKS.ref[-1] if _VAR_STACKS.ref else False)
    changes: dict[str, tuple[Any, Any]] = {}
    for name, new in (("hijax", hijax), ("ref", ref)):
        if new is None:
            continue
        stack = getattr(_VAR_STACKS, name)
        if stack:
            changes[name] = (stack[-1], new)
            stack[-1] = new
        else:
            changes[name] = (None, new)
            stack.append(new)
    return VarDefaultsContext(changes)


class use_eager_sharding(ConfigContext):
    """Whether new Variables with sharding metadata are placed with that sharding at once
    (default ``True``). A call, a ``with`` block or a decorator, like ``nnx.set_graph_mode``.

    Example::

        >>> import fluxion_nn as nnx
        >>> with nnx.use_eager_sharding(False):
        ...     nnx.using_eager_sharding()
        False
    """

    name = "flax_always_shard_variable"
    default = True


def using_eager_sharding() -> bool:
    """Whether eager sharding of new Variables is on (see :class:`use_eager_sharding`).

    Example: ``nnx.using_eager_sharding()`` is ``True`` by default.

    Example:
        >>> import fluxion_nn as nnx
        >>> nnx.using_eager_sharding()
        True
        >>> with nnx.use_eager_sharding(False):
        ...     print(nnx.using_eager_sharding())
        False
    """
    return bool(use_eager_sharding.current_value())


# Hijax Variables (fluxion_nn.hijax) build on Variable, so this module does not import them:
# fluxion_nn.hijax registers its constructor and type here when it is imported (the package's
# __init__ imports it right after this module), keeping the import graph one-way.
_to_hijax: Callable[[Variable], Any] | None = None
HijaxVariable: type | None = None


def _register_hijax(to_hijax: Callable[[Variable], Any], hijax_type: type) -> None:
    """Called once by ``fluxion_nn.hijax`` at import: how ``hijax=True`` Variables are made.

    Example: ``fluxion_nn.variablelib.HijaxVariable is fluxion_nn.hijax.HijaxVariable``.
    """
    global _to_hijax, HijaxVariable
    _to_hijax = to_hijax
    HijaxVariable = hijax_type


def _make_hijax(variable: Variable) -> Any:
    if _to_hijax is None:  # only if fluxion_nn.variablelib was loaded without its package
        raise RuntimeError("hijax Variables need fluxion_nn.hijax imported (import fluxion_nn)")
    return _to_hijax(variable)

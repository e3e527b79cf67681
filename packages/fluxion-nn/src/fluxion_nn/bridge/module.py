"""``nnx.bridge.Module``: Linen-style modules built on NNX objects (as ``flax.nnx.bridge.module``).

A bridge Module is a dataclass (its annotated fields are the constructor's arguments) and an NNX
Module at once. Submodules and parameters are made lazily, as in Linen: in ``setup()`` or inside a
method decorated with :func:`compact`, where ``self.param``/``self.variable`` create them and a
submodule built there is named ``<Class>_<n>`` (or by its ``name=``). ``init``/``apply`` work on
Linen-style variables (``{collection: {path...: value}}``): ``apply`` clones the module, loads the
variables into the clone, runs the method and (with ``mutable``) returns the variables after it.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import threading
import weakref
from collections import defaultdict
from collections.abc import Mapping
from typing import Any, Callable, TypeVar

import numpy as np

import fluxion
import fluxion.tree_util as tree_util

from .. import graph as _graph
from ..module import Module as _NnxModule
from ..pytreelib import _INITIALIZING, Pytree, register_data_type
from ..rnglib import Rngs, RngState
from ..statelib import State
from ..variablelib import Param, Variable, VariableMetadata, variable_name_from_type, variable_type_from_name
from . import variables as bv
from .frozen_dict import frozen_dict_type
from .linen_rngs import LinenRngs

__all__ = ["Module", "Scope", "AttrPriority", "ModuleState", "ModuleStackEntry", "MODULE_CONTEXT",
           "compact", "current_context", "current_module"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclasses.dataclass
class ModuleStackEntry:
    """One frame of the bridge module stack: the module whose ``setup``/method runs, whether
    that method is ``@compact``, and how many submodules of each type it has named so far."""

    module: Any
    in_compact: bool
    type_counter: defaultdict = dataclasses.field(default_factory=lambda: defaultdict(int))


class ModuleContext(threading.local):
    """The per-thread bridge module stack; ``module_stack[-1]`` is None outside any module."""

    def __init__(self) -> None:
        self.module_stack: list[ModuleStackEntry | None] = [None]


MODULE_CONTEXT = ModuleContext()


@register_data_type
class ModuleState(State):
    """The variables ``apply`` loaded for a submodule that does not exist yet: an attribute
    holding one is invisible (``getattr`` raises AttributeError) until the submodule is built
    and assigned there, which loads them into it."""

    __slots__ = ()


class Scope(Pytree):
    """What a bound bridge module draws on during ``init``/``apply``: the ``Rngs`` (a
    :class:`~fluxion_nn.bridge.linen_rngs.LinenRngs` under a ``rng_scheme = "linen"`` root), the
    ``mutable`` collections filter, and the module's ``path`` from the root (its variables' path).

    Example: ``module.scope.rngs['params']()`` is a new key while ``module.apply`` runs.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> class Noisy(nnx.bridge.Module):
        ...     @nnx.bridge.compact
        ...     def __call__(self, x):
        ...         noise = fluxion.random.normal(self.make_rng("noise"), x.shape)  # from the scope's Rngs
        ...         return isinstance(self.scope, nnx.bridge.Scope), x + noise
        >>> (is_scope, y), variables = Noisy().init_with_output({"params": 0, "noise": 1}, jnp.zeros(2))
        >>> is_scope, y.shape
        (True, (2,))
    """

    def __init__(self, rngs: Rngs | LinenRngs, mutable: Any, path: tuple = ()):
        self.rngs = rngs
        self.mutable = mutable
        self.path = path

    def copy(self, subpath: tuple = ()) -> "Scope":
        """A new Scope sharing these Rngs and ``mutable``, for the module at ``subpath`` below
        this one."""
        return Scope(self.rngs, self.mutable, self.path + tuple(subpath))


class AttrPriority(enum.IntEnum):
    """Where an attribute comes in a graph walk (lower first; ties by name). A submodule
    reachable from several attributes is stored under the first one.

    Example:
        >>> import fluxion_nn as nnx
        >>> [p.name for p in nnx.bridge.AttrPriority]
        ['HIGH', 'INIT_PARENT', 'DEFAULT', 'LOW']
    """

    HIGH = 0
    INIT_PARENT = 20
    DEFAULT = 50
    LOW = 100


# bridge modules whose setup() has run (by identity: a clone is set up again, as in flax)
_SET_UP: dict[int, weakref.ref] = {}


def _is_set_up(module: Any) -> bool:
    ref = _SET_UP.get(id(module))
    return ref is not None and ref() is module


def _mark_set_up(module: Any) -> None:
    key = id(module)
    _SET_UP[key] = weakref.ref(module, lambda _r, key=key: _SET_UP.pop(key, None))


def _set_initializing(node: Any, initializing: bool) -> None:
    if initializing:
        vars(node)[_INITIALIZING] = True
    else:
        vars(node).pop(_INITIALIZING, None)


def _maybe_call_setup(module: Any) -> None:
    if isinstance(module, Module) and hasattr(module, "setup") and not _is_set_up(module):
        MODULE_CONTEXT.module_stack.append(ModuleStackEntry(module, in_compact=False))
        try:
            module.setup()
            _mark_set_up(module)
        finally:
            MODULE_CONTEXT.module_stack.pop()


def _bind_module(parent: "Module", module: "Module", path: tuple) -> "Module":
    # root first: the root takes a copy of the parent's scope, then every bridge module of the
    # new subgraph runs its setup() (as flax, only a scope-less root is given one); ``path`` is
    # where ``module`` sits below ``parent``
    for subpath, value in reversed(list(_graph.iter_graph(module, graph=True))):
        if isinstance(value, Module):
            if vars(module).get("scope") is None:
                value.scope = vars(parent)["scope"].copy(path + subpath)
            _maybe_call_setup(value)
    return module


def current_context() -> ModuleStackEntry | None:
    """The innermost bridge module frame (None outside any bridge module's setup or method).

    Example: inside a ``@bridge.compact`` method, ``bridge.current_context().in_compact`` is True.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> seen = []
        >>> class Probe(nnx.bridge.Module):
        ...     @nnx.bridge.compact
        ...     def __call__(self, x):
        ...         ctx = nnx.bridge.current_context()
        ...         seen.append((type(ctx.module).__name__, ctx.in_compact))
        ...         return x
        >>> _ = Probe().init(0, jnp.ones(2))
        >>> seen, nnx.bridge.current_context() is None
        ([('Probe', True)], True)
    """
    return MODULE_CONTEXT.module_stack[-1]


def current_module() -> "Module | None":
    """The bridge module whose setup or method is running (None outside one).

    Example: ``bridge.current_module().is_initializing()`` inside a submodule's call.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> seen = []
        >>> class Probe(nnx.bridge.Module):
        ...     @nnx.bridge.compact
        ...     def __call__(self, x):
        ...         seen.append(type(nnx.bridge.current_module()).__name__)
        ...         return x
        >>> _ = Probe().init(0, jnp.ones(2))
        >>> seen, nnx.bridge.current_module() is None  # None outside any bridge method
        (['Probe'], True)
    """
    ctx = current_context()
    return None if ctx is None else ctx.module


def _auto_submodule_name(parent_ctx: ModuleStackEntry, cls: type) -> str:
    index = parent_ctx.type_counter[cls]
    parent_ctx.type_counter[cls] += 1
    return f"{cls.__name__}_{index}"


class _ModuleMeta(type):
    # Linen's construction rules: inside a parent's setup or compact method the new module gets
    # that parent; inside a compact method (or with ``name=``) it is set on the parent at once
    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        parent_ctx = MODULE_CONTEXT.module_stack[-1]
        parent = None
        name = None
        if parent_ctx is not None:
            if "parent" in kwargs:
                parent = kwargs.pop("parent")
                if parent_ctx.in_compact and parent is not None:
                    raise ValueError(f"'parent' can only be set to None, got "
                                     f"{type(parent).__name__}")
            else:
                parent = parent_ctx.module
            if "name" in kwargs:
                name = kwargs["name"]
                if "name" not in inspect.get_annotations(cls):
                    kwargs.pop("name")
                if not isinstance(name, str):
                    raise ValueError(f"'name' must be a 'str', got {type(name).__name__}")
            elif parent_ctx.in_compact:
                name = _auto_submodule_name(parent_ctx, cls)
        module = cls.__new__(cls)
        vars(module)["scope"] = None
        vars(module)["attr_priorities"] = {}
        module.__init__(*args, **kwargs)
        if parent is not None and name is not None:
            if vars(parent).get("scope") is None:
                raise ValueError(f"{cls.__name__}(name={name!r}): the parent "
                                 f"{type(parent).__name__} is not bound (no scope)")
            setattr(parent, name, module)
            parent.set_attr_priority(name, AttrPriority.INIT_PARENT)
        return module


def _attr_order(obj: Any, attrs: dict) -> list:
    priorities = attrs.get("attr_priorities") or {}
    return sorted(attrs, key=lambda k: (priorities.get(k, AttrPriority.DEFAULT), k))


def _module_state(flat: dict) -> ModuleState:
    root = ModuleState()
    for path, value in flat.items():
        node = root
        for k in path[:-1]:
            nxt = node._mapping.get(k)
            if nxt is None:
                nxt = node._mapping[k] = ModuleState()
            node = nxt
        node._mapping[path[-1]] = value
    return root


def _graph_key(key: Any) -> Any:
    # a tree path entry as the graph path key it stands for (an attribute or item name, an index)
    for attr in ("key", "idx", "name"):
        if hasattr(key, attr):
            return getattr(key, attr)
    return key


def _as_rngs(rngs: Any, scheme: str) -> Rngs | LinenRngs:
    if scheme == "linen":
        return rngs if isinstance(rngs, LinenRngs) else LinenRngs({} if rngs is None else rngs)
    if scheme != "nnx":
        raise ValueError(f"rng_scheme must be 'nnx' or 'linen', got {scheme!r}")
    if rngs is None:
        return Rngs()
    if isinstance(rngs, Rngs):
        return rngs
    if isinstance(rngs, dict):
        return Rngs(**rngs)
    return Rngs(rngs)


def _adopt(name: str, value: Any, init: Callable[[], Any]) -> Any:
    """A value given for ``name`` (a plain array from ``apply``'s variables): its shape checked
    against what ``init`` would make, and put in ``init``'s metadata box when it makes one."""
    abstract = fluxion.eval_shape(init)
    _check_shapes(name, value, abstract)
    if isinstance(abstract, VariableMetadata):
        abstract.raw_value = value
        return abstract
    return value


def _check_shapes(name: str, value: Any, abstract: Any) -> None:
    for val, abs_val in zip(tree_util.tree_leaves(value), tree_util.tree_leaves(abstract)):
        if np.shape(val) != np.shape(abs_val):
            raise ValueError(f"Module.param/variable {name!r}: the stored value has shape "
                             f"{np.shape(val)}, the initializer gives {np.shape(abs_val)}")


class Module(_NnxModule, metaclass=_ModuleMeta):
    """A Linen-style NNX module: annotated fields, ``setup()`` or ``@bridge.compact`` methods,
    ``self.param``/``self.variable``, and ``init``/``apply`` on Linen variables.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> class Dense(nnx.bridge.Module):
        ...     features: int
        ...     @nnx.bridge.compact
        ...     def __call__(self, x):
        ...         w = self.param("w", nnx.initializers.ones_init(), (x.shape[-1], self.features))
        ...         return x @ w
        >>> x = jnp.ones((1, 2))
        >>> variables = Dense(3).init(0, x)
        >>> fluxion.tree_util.tree_map(jnp.shape, dict(variables["params"]))
        {'w': (2, 3)}
        >>> Dense(3).apply(variables, x).tolist()
        [[2.0, 2.0, 2.0]]

    ``rng_scheme`` (a class attribute) says how ``init``/``apply`` turn their ``rngs`` into
    keys: ``"nnx"`` (the default, as ``flax.nnx.bridge.Module``) makes ``Rngs`` streams that
    count calls over the whole model; ``"linen"`` draws each key as ``flax.linen`` does, from
    the module's path and its own count (:mod:`fluxion_nn.bridge.linen_rngs`), so a module
    ported from Linen gets Linen's parameters from the same key. The root module's class
    decides for the whole call.

    Example:
        >>> from fluxion_nn.bridge.linen_rngs import fold_in_static
        >>> class Noise(nnx.bridge.Module):
        ...     rng_scheme = "linen"
        ...     @nnx.bridge.compact
        ...     def __call__(self, x):
        ...         return x + self.param("w", fluxion.random.normal, x.shape)
        >>> w = Noise().init(fluxion.random.PRNGKey(0), x)["params"]["w"]
        >>> want = fluxion.random.normal(fold_in_static(fluxion.random.PRNGKey(0), (1,)), x.shape)
        >>> bool((w == want).all())  # the root's first 'params' key, as Linen's
        True
    """

    _pytree__attr_order = _attr_order
    rng_scheme = "nnx"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(pytree=False, **kwargs)
        dataclasses.dataclass(repr=False)(cls)
        cls.__hash__ = object.__hash__  # type: ignore[method-assign]

    def __getattribute__(self, name: str) -> Any:
        value = object.__getattribute__(self, name)
        if isinstance(value, ModuleState):
            raise AttributeError(f"{type(self).__name__}.{name} is not built yet")
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        if vars(self).get("scope") is not None:
            pending = vars(self).get(name)
            if isinstance(pending, ModuleState):
                _graph.update(value, pending)
            initializing = self.is_initializing()
            leaves, _ = tree_util.tree_flatten_with_path(
                value, is_leaf=lambda x: isinstance(x, Pytree))
            for keys, leaf in leaves:
                if isinstance(leaf, Module):
                    _set_initializing(leaf, initializing)
                    _bind_module(self, leaf, (name, *map(_graph_key, keys)))
        super().__setattr__(name, value)

    def set_attr_priority(self, name: str, value: AttrPriority) -> None:
        """Set where attribute ``name`` comes in graph walks (see :class:`AttrPriority`)."""
        vars(self)["attr_priorities"] = {**vars(self).get("attr_priorities", {}), name: value}

    def is_initializing(self) -> bool:
        """True while ``init``/``init_with_output`` runs this module."""
        return bool(vars(self).get(_INITIALIZING, False))

    def make_rng(self, name: str = "default") -> Any:
        """A new key from the bound scope's Rngs stream ``name`` (under the ``"linen"`` scheme,
        Linen's key for this module's path and its count of ``name`` keys so far)."""
        scope = vars(self).get("scope")
        if scope is None:
            raise ValueError("Can't use RNGs on unbound modules")
        if isinstance(scope.rngs, LinenRngs):
            return scope.rngs.make_rng(scope.path, name)
        return scope.rngs[name]()

    def param(self, name: str, init_fn: Callable[..., Any], *init_args: Any, unbox: bool = True,
              **init_kwargs: Any) -> Param:
        """The Param ``name``: the existing one, else a new one from
        ``init_fn(self.make_rng('params'), *init_args, **init_kwargs)``."""
        if vars(self).get("scope") is None:
            raise ValueError("Parameters must be initialized in `setup()` or in a method "
                             "wrapped in `@compact`")
        if hasattr(self, name):
            value = getattr(self, name)
            if isinstance(value, Variable):
                if not isinstance(value, Param):
                    raise ValueError(f"Expected '{name}' to be a Param, got {type(value).__name__}")
                return value
            variable = Param(_adopt(name, value, lambda: init_fn(
                fluxion.random.key(0), *init_args, **init_kwargs)))
        else:
            variable = Param(init_fn(self.make_rng("params"), *init_args, **init_kwargs))
        setattr(self, name, variable)
        return variable

    def variable(self, col: str, name: str, init_fn: Callable[..., Any] | None = None,
                 *init_args: Any, unbox: bool = True, **init_kwargs: Any) -> Variable:
        """The Variable ``name`` of collection ``col``: the existing one, else a new one from
        ``init_fn(*init_args, **init_kwargs)``."""
        variable_type = variable_type_from_name(col, allow_register=True)
        if vars(self).get("scope") is None:
            raise ValueError("Variables must be initialized in `setup()` or in a method "
                             "wrapped in `@compact`")
        if hasattr(self, name):
            value = getattr(self, name)
            if isinstance(value, Variable):
                return value
            if init_fn is None:
                raise ValueError("Expected 'init_fn' to be a callable, got None")
            variable = variable_type(_adopt(name, value, lambda: init_fn(*init_args, **init_kwargs)))
        else:
            if init_fn is None:
                raise ValueError("Expected 'init_fn' to be a callable, got None")
            variable = variable_type(init_fn(*init_args, **init_kwargs))
        setattr(self, name, variable)
        return variable

    def _get_variables(self) -> dict:
        by_col: dict = {}
        for path, var in _graph.state(self, graph=True).flat_state():
            if isinstance(var, RngState) or not isinstance(var, Variable):
                continue  # Linen has no RNG state
            try:
                col = variable_name_from_type(type(var))
            except ValueError:
                col = type(var).__name__
            leaf = var.get_value() if bv.is_vanilla_variable(var) else bv.to_linen_var(var)
            by_col.setdefault(col, {})[path] = leaf
        return {col: bv._unflatten(flat) for col, flat in by_col.items()}

    @property
    def variables(self) -> Mapping:
        """The module's variables as Linen's ``{collection: tree}`` (RNG state left out), in a
        FrozenDict as flax's (:mod:`fluxion_nn.bridge.frozen_dict`); ``init``/``apply`` give
        plain dicts."""
        return frozen_dict_type()(self._get_variables())

    def apply(self, variables: Any, *args: Any, rngs: Any = None, method: Any = "__call__",
              mutable: Any = False, _initialize: bool = False, **kwargs: Any) -> Any:
        """Run ``method`` (default ``__call__``) of a clone of this module with ``variables``
        loaded; returns its output, or ``(output, variables after the call)`` when ``mutable``
        is not False."""
        module = _graph.clone(self, graph=True)
        flat: dict = {}
        for col, tree in dict(variables).items():
            for path, x in bv._flatten(tree).items():
                flat[path] = bv.to_nnx_var(col, x)
        _graph.update(module, _module_state(flat))
        rngs = _as_rngs(rngs, type(self).rng_scheme)
        fn = _method_fn(module, method)
        nodes = list(_graph.iter_graph(module, graph=True))
        for path, value in nodes:
            if isinstance(value, Pytree):
                _set_initializing(value, _initialize)
            if isinstance(value, Module):
                value.scope = Scope(rngs, mutable, path)
                _maybe_call_setup(value)
        MODULE_CONTEXT.module_stack.append(ModuleStackEntry(module, in_compact=False))
        try:
            out = fn(module, *args, **kwargs)
        finally:
            MODULE_CONTEXT.module_stack.pop()
            for _, value in _graph.iter_graph(module, graph=True):
                if isinstance(value, Pytree):
                    _set_initializing(value, False)
                if isinstance(value, Module):
                    value.scope = None
        if mutable is False:
            return out
        return out, module._get_variables()

    def init(self, rngs: Any = None, *args: Any, method: Any = "__call__", **kwargs: Any) -> dict:
        """The variables made by running ``method`` once in initializing mode."""
        return self.apply({}, *args, _initialize=True, mutable=True, rngs=rngs, method=method,
                          **kwargs)[1]

    def init_with_output(self, rngs: Any = None, *args: Any, method: Any = "__call__",
                         mutable: Any = False, **kwargs: Any) -> tuple:
        """``(output, variables)`` of running ``method`` once in initializing mode."""
        return self.apply({}, *args, rngs=rngs, method=method, mutable=True, _initialize=True,
                          **kwargs)


def _method_fn(module: Module, method: Any) -> Callable:
    if isinstance(method, str):
        attribute = method
        fn = getattr(module, attribute)
        if not callable(fn):
            raise TypeError(f"'{type(module).__name__}.{attribute}' must be a callable, got "
                            f"{type(fn)}.")
        if isinstance(fn, Module):  # a submodule's name: call that submodule
            def fn(m: Any, *args: Any, **kwargs: Any) -> Any:
                return getattr(m, attribute)(*args, **kwargs)
    else:
        fn = method
    if inspect.ismethod(fn) and isinstance(fn.__self__, Module):
        fn = fn.__func__
    if not callable(fn) or len(inspect.signature(fn).parameters) < 1:
        raise TypeError(f"Module.apply: the method {fn!r} must be a callable taking the module "
                        f"as its first argument")
    return fn


def compact(f: F) -> F:
    """Mark a bridge module method as compact: submodules built in it are named and attached
    automatically, and ``self.param``/``self.variable`` may create state there.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> class Dense(nnx.bridge.Module):
        ...     features: int
        ...     @nnx.bridge.compact
        ...     def __call__(self, x):
        ...         return x @ self.param("w", nnx.initializers.ones_init(), (x.shape[-1], self.features))
        >>> class MLP(nnx.bridge.Module):
        ...     @nnx.bridge.compact
        ...     def __call__(self, x):
        ...         return Dense(2)(Dense(4)(x))  # submodules named and attached automatically
        >>> variables = MLP().init(0, jnp.ones((1, 3)))
        >>> sorted(variables["params"])
        ['Dense_0', 'Dense_1']
    """
    @functools.wraps(f)
    def compact_wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(self, Module):
            raise ValueError(f"Expected 'self' to be a nnx.bridge.Module, got "
                             f"{type(self).__name__}")
        MODULE_CONTEXT.module_stack.append(ModuleStackEntry(self, in_compact=True))
        try:
            return f(self, *args, **kwargs)
        finally:
            MODULE_CONTEXT.module_stack.pop()

    return compact_wrapper  # type: ignore[return-value]

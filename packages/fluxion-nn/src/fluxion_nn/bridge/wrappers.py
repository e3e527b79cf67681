"""NNX <-> Linen-protocol wrappers (as ``flax.nnx.bridge.wrappers``).

Linen itself is not mirrored by Fluxion, so these work with the *protocol* of a Linen module:
``init``/``init_with_output(rngs, *args)`` returning ``{collection: tree}`` variables and
``apply(variables, *args, rngs=, method=, mutable=)``. :class:`ToNNX` wraps any object with that
protocol (a real ``flax.linen`` module, or a :class:`ToLinen`) as a stateful NNX module;
:class:`ToLinen` gives an NNX module class that protocol (it is not a ``flax.linen.Module``, so it
cannot be a submodule inside Linen code)."""

from __future__ import annotations

import dataclasses
import functools
import threading
import warnings
from typing import Any, Callable

import numpy as np

import fluxion

from ..errors import InvalidRngError
from ..filterlib import Not
from ..graph import GraphDef, iter_graph, split
from ..graph import state as graph_state
from ..module import Module
from ..pytreelib import _INITIALIZING as _INITIALIZING_ATTR
from ..pytreelib import Pytree, data, has_data, is_data
from ..rnglib import Rngs, RngState
from ..statelib import State
from ..variablelib import Variable, variable_name_from_type
from . import module as _bridge_module
from . import variables as bv

__all__ = ["Functional", "functional", "lazy_init", "ToNNX", "ToLinen"]


@dataclasses.dataclass
class Functional:
    """An NNX module class with its constructor arguments, used functionally: ``init`` builds
    the module and returns its State, ``apply(*states)`` a pure caller
    (``(out, (graphdef, state))``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> f = nnx.bridge.functional(nnx.Linear)(2, 3)
        >>> state = f.init(rngs=nnx.Rngs(0))
        >>> y, updates = f.apply(state)(jnp.ones((1, 2)))
        >>> isinstance(f, nnx.bridge.Functional), y.shape, sorted(state.keys())
        (True, (1, 3), ['bias', 'kernel'])
    """

    module_type: type
    graphdef: GraphDef | None
    args: tuple
    kwargs: dict

    def init(self, *, rngs: Rngs | None = None) -> State:
        """Build the module (with ``rngs`` when given) and return its State."""
        extra = {} if rngs is None else {"rngs": rngs}
        module = self.module_type(*self.args, **self.kwargs, **extra)
        self.graphdef, state = split(module)
        return state

    def apply(self, *states: Any) -> Callable:
        """``graphdef.apply(*states)`` of the module built by ``init``."""
        if self.graphdef is None:
            raise ValueError("Functional.apply: call init first (no graphdef yet)")
        return self.graphdef.apply(*states)


def functional(cls: type) -> Callable[..., Functional]:
    """``functional(cls)(*args, **kwargs)`` is a :class:`Functional` of ``cls``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> f = nnx.bridge.functional(nnx.Linear)(2, 3)  # the constructor's arguments, no module yet
        >>> state = f.init(rngs=nnx.Rngs(0))
        >>> y, updates = f.apply(state)(jnp.ones((1, 2)))
        >>> y.shape, sorted(state.keys())
        ((1, 3), ['bias', 'kernel'])
    """
    def construct(*args: Any, **kwargs: Any) -> Functional:
        return Functional(cls, None, args, kwargs)

    return construct


class _Initializing(threading.local):
    def __init__(self) -> None:
        self.ids: set[int] = set()


_INITIALIZING = _Initializing()


def lazy_init(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run a module (or a bound method of one) once with its :class:`ToNNX` submodules in
    initializing mode, so they create their Variables from the sample inputs; returns ``fn``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> linen_model = nnx.bridge.to_linen(nnx.Linear, 2, 3)  # any module with Linen's init/apply
        >>> model = nnx.bridge.ToNNX(linen_model, rngs=nnx.Rngs(0))
        >>> model = nnx.bridge.lazy_init(model, jnp.ones((1, 2)))
        >>> model(jnp.ones((1, 2))).shape
        (1, 3)
    """
    if isinstance(fn, Module):
        module = fn
    elif hasattr(fn, "__self__") and isinstance(fn.__self__, Module):
        module = fn.__self__
    else:
        raise ValueError(f"fn = {fn!r} needs to be a method of an NNX Module.")
    marked = {id(node) for _, node in iter_graph(module) if isinstance(node, ToNNX)}
    added = marked - _INITIALIZING.ids
    _INITIALIZING.ids |= added
    # every object of the graph is initializing during the call (``_pytree__state``)
    flagged = [node for _, node in iter_graph(module)
               if isinstance(node, Pytree) and _INITIALIZING_ATTR not in vars(node)]
    for node in flagged:
        vars(node)[_INITIALIZING_ATTR] = True
    try:
        fn(*args, **kwargs)
    finally:
        _INITIALIZING.ids -= added
        for node in flagged:
            vars(node).pop(_INITIALIZING_ATTR, None)
    return fn


def _is_valid_rng(rng: Any) -> bool:
    """A key Linen accepts in place of an RNG dict: a typed key of shape () or a raw key (the
    shape and dtype of the default implementation's key data), as flax's ``_is_valid_rng``."""
    if not isinstance(rng, (np.ndarray, fluxion.Array)):
        return False
    if fluxion.dtypes.issubdtype(rng.dtype, fluxion.dtypes.prng_key):
        return rng.shape == ()
    raw = fluxion.eval_shape(lambda s: fluxion.random.key_data(fluxion.random.key(s)), 0)
    return (rng.shape, rng.dtype) == (raw.shape, raw.dtype)


def _check_rngs(rngs: Any, module: str) -> None:
    """Linen's ``init``/``apply`` check: RNGs that are not a dict must be one valid key."""
    if not isinstance(rngs, dict) and not _is_valid_rng(rngs):
        raise InvalidRngError(f"RNGs should be of shape (2,) or PRNGKey in Module {module}, but "
                              f"rngs are: {rngs}")


def _rng_dict(rngs: Any) -> dict:
    if isinstance(rngs, Rngs):
        out = {name: stream() for name, stream in rngs.items()}
    elif rngs is None:
        out = {}
    elif isinstance(rngs, dict):
        out = dict(rngs)
    else:  # a key
        out = {"params": rngs}
    if "params" not in out and "default" in out:
        out["params"] = out.pop("default")
    return out


def _merge(a: Any, b: Any) -> Any:
    if isinstance(a, dict) and isinstance(b, dict):
        out = dict(a)
        for k, v in b.items():
            out[k] = _merge(a[k], v) if k in a else v
        return out
    return b


class ToNNX(Module):
    """A stateful NNX module around a module with Linen's ``init_with_output``/``apply``
    protocol: ``lazy_init(x)`` initializes its variables from a sample input (they become
    Variables attributes of this module, by collection type), then calls apply them.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> linen_model = nnx.bridge.to_linen(nnx.Linear, 2, 3)  # any module with Linen's init/apply
        >>> model = nnx.bridge.ToNNX(linen_model, rngs=nnx.Rngs(0))
        >>> model = nnx.bridge.lazy_init(model, jnp.ones((1, 2)))
        >>> model(jnp.ones((1, 2))).shape
        (1, 3)
    """

    def __init__(self, module: Any, rngs: Rngs | Any = None):
        self.to_nnx__module = module
        if isinstance(rngs, Rngs):
            rngs = rngs.fork()
        elif rngs is not None:
            rngs = Rngs(params=rngs)
        self.to_nnx__rngs = rngs

    def __setattr__(self, name: str, value: Any) -> None:
        # the linen collections (dicts of Variables) are data, as flax's ToNNX marks them
        if not is_data(value) and has_data(value):
            value = data(value)
        super().__setattr__(name, value)

    def lazy_init(self, *args: Any, **kwargs: Any) -> "ToNNX":
        """``nnx.bridge.lazy_init(self, *args, **kwargs)``."""
        return lazy_init(self, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("to_nnx__") or name.startswith("__"):
            raise AttributeError(name)
        method = getattr(type(vars(self)["to_nnx__module"]), name, None)
        if callable(method):
            bound = functools.partial(self.__call__, method=method)
            bound.__self__ = self  # type: ignore[attr-defined]
            return bound
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def __call__(self, *args: Any, rngs: Any = None, method: Any = None, mutable: Any = None,
                 **kwargs: Any) -> Any:
        rng_dict = _rng_dict(self.to_nnx__rngs if rngs is None else rngs)
        # initializing: lazy_init marked this object, or it is the copy of one made by a lifted
        # transform inside lazy_init (the copy keeps the graph's initializing flag)
        if id(self) in _INITIALIZING.ids or vars(self).get(_INITIALIZING_ATTR, False):
            out, updates = self.to_nnx__module.init_with_output(rng_dict, *args, method=method,
                                                                **kwargs)
        else:
            attrs = {k: v for k, v in vars(self).items()
                     if not k.startswith(("to_nnx__", "_pytree__"))}
            variables = bv.nnx_attrs_to_linen_vars(attrs)
            if mutable is None:  # inside a bridge Module: the collections its apply may change
                parent = _bridge_module.current_module()
                scope = None if parent is None else vars(parent).get("scope")
                mutable = False if scope is None else scope.mutable
            out = self.to_nnx__module.apply(variables, *args, rngs=rng_dict, method=method,
                                            mutable=mutable, **kwargs)
            updates = None
            if mutable is not False:
                out, updates = out
        if updates:
            for name, value in bv.linen_vars_to_nnx_attrs(updates).items():
                current = vars(self).get(name)
                setattr(self, name, _merge(current, value) if isinstance(current, dict)
                        and isinstance(value, dict) else value)
        return out


def _module_method(module: Any, method: Any) -> Callable:
    if method is None:
        method = "__call__"
    if isinstance(method, str):
        name = method
        method = getattr(type(module), name)
        if not callable(method):
            raise TypeError(f"'{type(module).__name__}.{name}' must be a callable, got "
                            f"{type(method)}.")
    if not callable(method):
        raise TypeError(f"'{method}' must be a callable, got {type(method)}.")
    return method


def _mutable_collections(mutable: Any, collections: Any) -> set:
    if mutable is True:
        return set(collections)
    if mutable is False or mutable is None:
        return set()
    if isinstance(mutable, str):
        return {mutable}
    return set(mutable)


class ToLinen:
    """An NNX module class with Linen's functional protocol: ``init``/``init_with_output``
    build it (with ``nnx.Rngs`` from the given keys) and return its Variables as Linen
    variables ``{collection: tree}`` (metadata-carrying Variables as :class:`NNXMeta` boxes);
    ``apply(variables, *args, mutable=...)`` rebuilds it, loads the variables, calls it (or
    ``nnx_method=``/``method=``) and returns the output (and the mutable collections).
    Not a ``flax.linen.Module``: Linen is not mirrored by Fluxion.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.bridge.ToLinen(nnx.Linear, args=(2, 3))
        >>> y, variables = model.init_with_output(fluxion.random.key(0), jnp.ones((1, 2)))
        >>> y.shape, fluxion.tree_util.tree_map(jnp.shape, dict(variables["params"]))
        ((1, 3), {'bias': (3,), 'kernel': (2, 3)})
        >>> model.apply(variables, jnp.ones((1, 2))).shape
        (1, 3)
    """

    def __init__(self, nnx_class: Callable[..., Module], args: Any = (), kwargs: Any = None,
                 skip_rng: bool = False, metadata_fn: Callable[[Variable], Any] | None
                 = bv.to_linen_var, name: str | None = None):
        self.nnx_class = nnx_class
        self.args = tuple(args)
        self.kwargs = dict(kwargs or {})
        self.skip_rng = skip_rng
        self.metadata_fn = metadata_fn
        self.name = name

    def __repr__(self) -> str:
        return f"ToLinen(nnx_class={getattr(self.nnx_class, '__name__', self.nnx_class)})"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("nnx_class", "args", "kwargs"):
            raise AttributeError(name)
        if name in self.kwargs:
            return self.kwargs[name]
        method = getattr(self.nnx_class, name, None)
        if callable(method):
            return functools.partial(self._linen_method, method)
        raise AttributeError(f"ToLinen has no attribute {name!r}")

    def _linen_method(self, method: Any, variables: Any, *args: Any, **kwargs: Any) -> Any:
        return self.apply(variables, *args, nnx_method=method, **kwargs)

    def _build(self, rngs: dict, initializing: bool) -> Module:
        kwargs = dict(self.kwargs)
        if not self.skip_rng:
            if not initializing and "default" not in rngs:
                rngs = {**rngs, "default": 0}
            kwargs["rngs"] = Rngs(**rngs)
        return self.nnx_class(*self.args, **kwargs)

    def _variables(self, module: Module, keep: Callable[[str], bool]) -> dict:
        by_col: dict = {}
        for path, var in graph_state(module, Not(RngState)).flat_state():
            col = variable_name_from_type(type(var), allow_register=True)
            if not keep(col):
                continue
            value = self.metadata_fn(var) if self.metadata_fn is not None else var.get_value()
            node = by_col.setdefault(col, {})
            for k in path[:-1]:
                node = node.setdefault(k, {})
            node[path[-1]] = value
        return by_col

    def init_with_output(self, rngs: Any, *args: Any, method: Any = None,
                         nnx_method: Any = None, mutable: Any = None, **kwargs: Any) -> tuple:
        """Build the module, call it once, return ``(out, variables)``: the module's Variables
        as built, before the call (as flax's ToLinen), every collection but ``intermediates``
        unless ``mutable`` says otherwise. ``rngs`` is a dict of keys or one key (an int
        seed or ``nnx.Rngs`` is an :class:`~fluxion_nn.errors.InvalidRngError`, as in Linen)."""
        _check_rngs(rngs, type(self).__name__)
        module = self._build(_rng_dict(rngs), initializing=True)
        initial = self._variables(module, lambda c: True)
        out = _module_method(module, nnx_method or method)(module, *args, **kwargs)
        if mutable is None:
            keep = {c for c in initial if c != "intermediates"}
        else:
            keep = _mutable_collections(mutable, initial)
        return out, {c: t for c, t in initial.items() if c in keep}

    def init(self, rngs: Any, *args: Any, **kwargs: Any) -> dict:
        """``init_with_output(...)[1]``."""
        return self.init_with_output(rngs, *args, **kwargs)[1]

    def apply(self, variables: Any, *args: Any, rngs: Any = None, method: Any = None,
              nnx_method: Any = None, mutable: Any = False, **kwargs: Any) -> Any:
        """Rebuild the module, load ``variables``, call it; with ``mutable`` return
        ``(out, updated collections)``."""
        if rngs is not None:
            _check_rngs(rngs, type(self).__name__)
        module = self._build(_rng_dict(rngs), initializing=False)
        current = dict(graph_state(module).flat_state())
        unknown = []
        for tree in dict(variables).values():
            flat = fluxion.tree_util.tree_flatten_with_path(
                dict(tree), is_leaf=lambda x: isinstance(x, bv.NNXMeta))[0]
            for kp, value in flat:
                path = tuple(getattr(k, "key", getattr(k, "idx", getattr(k, "name", k)))
                             for k in kp)
                if isinstance(value, bv.NNXMeta):
                    value = value.unbox()
                if path in current:
                    current[path].value = value
                else:
                    unknown.append(path)
        if unknown:
            lines = "".join(f"\n  - {'/'.join(map(str, p))}" for p in unknown)
            warnings.warn(f"Found unknown module paths in incoming state:{lines}", stacklevel=2)
        out = _module_method(module, nnx_method or method)(module, *args, **kwargs)
        if mutable is False:
            return out
        after = self._variables(module, lambda c: True)
        keep = _mutable_collections(mutable, after)
        return out, {c: t for c, t in after.items() if c in keep}

"""``Module``: the base class of layers and models (a mutable object graph, as ``flax.nnx.Module``)."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import MutableMapping
from typing import Any, Iterator

import fluxion.numpy as jnp
import fluxion.tree_util as tree_util

from . import filterlib, graph
from . import graph as _graph
from ._sizes import SizeBytes
from .pytreelib import Pytree
from .statelib import State, split_state
from .variablelib import Perturbation, Variable, is_array, variable_type_from_name

__all__ = ["Module", "Dict", "iter_modules", "iter_module_children", "view", "with_attributes",
           "view_info", "display", "capture"]

# the attribute that holds a module's captures (a tuple of Variables of dicts) during ``capture``
_CAPTURES = "__captures__"


class Module(Pytree):
    """Base class of layers and models: write ``__init__`` (create Variables and submodules,
    taking ``rngs``) and ``__call__``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> class MLP(nnx.Module):
        ...     def __init__(self, din, dout, *, rngs):
        ...         self.linear = nnx.Linear(din, dout, rngs=rngs)
        ...
        ...     def __call__(self, x):
        ...         return nnx.relu(self.linear(x))
        >>> model = MLP(2, 3, rngs=nnx.Rngs(0))
        >>> model(jnp.ones((4, 2))).shape
        (4, 3)
        >>> [type(v).__name__ for _, v in nnx.iter_graph(model) if isinstance(v, nnx.Variable)]
        ['Param', 'Param']
    """

    def sow(self, variable_type: Any, name: str, value: Any,
            reduce_fn: Any = lambda xs, x: xs + (x,), init_fn: Any = lambda: ()) -> bool:
        """Record ``value`` under ``name`` for ``variable_type`` (default: a tuple of the values
        sown so far). Inside :func:`capture` it goes to the capture of that type (``False`` when
        that type is not captured); outside, to a Variable attribute ``name`` (deprecated in
        flax, which warns)."""
        if isinstance(variable_type, str):
            variable_type = variable_type_from_name(variable_type, allow_register=True)
        captures = vars(self).get(_CAPTURES)
        if captures is not None:
            for var in captures:
                if type(var) is variable_type:
                    found = dict(var.value)
                    found[name] = reduce_fn(found[name] if name in found else init_fn(), value)
                    var.value = found
                    return True
            return False
        if hasattr(self, name):
            var = getattr(self, name)
            if not isinstance(var, Variable):
                raise ValueError(f"Expected '{name}' to be a Variable, got {type(var).__name__} "
                                 f"(Module.sow)")
            if type(var) is not variable_type:
                raise ValueError(f"Expected '{name}' to be of type '{variable_type.__name__}', "
                                 f"got '{type(var).__name__}' (Module.sow)")
            var.value = reduce_fn(var.value, value)
        else:
            setattr(self, name, variable_type(reduce_fn(init_fn(), value)))
        warnings.warn("Using 'Module.sow()' outside of 'nnx.capture()' is deprecated; see "
                      "https://flax.readthedocs.io/en/latest/guides/extracting_intermediates.html "
                      "for more information.", DeprecationWarning, stacklevel=2)
        return True

    def perturb(self, name: str, value: Any, variable_type: Any = Perturbation) -> Any:
        """``value`` plus a zero perturbation stored under ``name``; the gradient with respect to
        the perturbation is the gradient with respect to this intermediate value. Inside
        :func:`capture` the perturbation lives in the capture of ``variable_type`` (taken from
        its ``init`` when given); outside, in a Variable attribute ``name``."""
        if isinstance(variable_type, str):
            variable_type = variable_type_from_name(variable_type, allow_register=True)
        captures = vars(self).get(_CAPTURES)
        if captures is not None:
            for var in captures:
                if type(var) is variable_type:
                    if name not in var.value:
                        found = dict(var.value)
                        found[name] = tree_util.tree_map(jnp.zeros_like, value)
                        var.value = found
                    return var.value[name] + value
            return value
        if not hasattr(self, name):
            setattr(self, name, variable_type(tree_util.tree_map(jnp.zeros_like, value)))
        else:
            var = getattr(self, name)
            if not isinstance(var, variable_type):
                raise ValueError(f"Expected '{name}' to be of type '{variable_type.__name__}', "
                                 f"got '{type(var).__name__}' (Module.perturb)")
        warnings.warn("Using 'Module.perturb()' outside of 'nnx.capture()' is deprecated; see "
                      "https://flax.readthedocs.io/en/latest/guides/extracting_intermediates.html "
                      "for more information.", DeprecationWarning, stacklevel=2)
        return value + getattr(self, name).value

    def iter_modules(self) -> Iterator[tuple[tuple, "Module"]]:
        """Yield ``(path, module)`` for every submodule (and self, last)."""
        return iter_modules(self)

    def iter_children(self) -> Iterator[tuple[str, "Module"]]:
        """Yield ``(name, module)`` for the direct child modules."""
        return iter_module_children(self)

    def set_attributes(self, *filters: Any, raise_if_not_found: bool = True,
                       graph: bool | None = None, **attributes: Any) -> None:
        """Set attributes on every submodule (matching ``filters``, default all) that has them
        (``hasattr``, as flax); ``graph`` picks graph or tree traversal.

        Example: ``model.set_attributes(deterministic=True)``.
        """
        preds = [filterlib.to_predicate(f) for f in filters] or [lambda p, m: True]
        found: set = set()
        for path, module in iter_modules(self, graph=graph):
            if not any(p(path, module) for p in preds):
                continue
            for k, v in attributes.items():
                if hasattr(module, k):
                    setattr(module, k, v)
                    found.add(k)
        missing = set(attributes) - found
        if missing and raise_if_not_found:
            raise ValueError("Could not find at least one instance of the following attributes: "
                             f"{sorted(missing)} (set_attributes)")

    def train(self, **attributes: Any) -> None:
        """Training mode: ``deterministic=False`` (Dropout) and ``use_running_average=False``
        (BatchNorm) on every submodule that has them."""
        self.set_attributes(deterministic=False, use_running_average=False,
                            raise_if_not_found=False, **attributes)

    def eval(self, **attributes: Any) -> None:
        """Evaluation mode: ``deterministic=True`` and ``use_running_average=True``."""
        self.set_attributes(deterministic=True, use_running_average=True,
                            raise_if_not_found=False, **attributes)

    def __repr__(self) -> str:
        return _repr(self, 0, set())


def _stats_type(v: Variable) -> type:
    # RngKey and RngCount count as RngState (rnglib imports this module, hence the MRO walk)
    for t in type(v).__mro__:
        if t.__name__ == "RngState" and t.__module__ == "fluxion_nn.rnglib":
            return t
    return type(v)


def _collect_sizes(obj: Any, out: dict, seen: set) -> dict:
    """``{Variable type: SizeBytes}`` of everything under ``obj`` (each Variable once), in the
    order the types are met (attributes in sorted order, as flax's repr)."""
    if isinstance(obj, Variable):
        if id(obj) not in seen:
            seen.add(id(obj))
            sb = SizeBytes.from_any(obj.value)
            if sb:
                t = _stats_type(obj)
                out[t] = out.get(t, SizeBytes(0, 0)) + sb
    elif isinstance(obj, Pytree):
        if id(obj) not in seen:
            seen.add(id(obj))
            d = vars(obj)
            for k in sorted(d, key=str):
                _collect_sizes(d[k], out, seen)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _collect_sizes(v, out, seen)
    elif isinstance(obj, dict):
        for v in obj.values():
            _collect_sizes(v, out, seen)
    return out


def _sizes_comment(obj: Any) -> str:
    sizes = _collect_sizes(obj, {}, set())
    if not sizes:
        return ""
    parts = [f"{t.__name__}: {sb!r}" for t, sb in sizes.items()]
    if len(sizes) > 1:
        parts.append(f"Total: {sum(sizes.values(), SizeBytes(0, 0))!r}")
    return " # " + ", ".join(parts)


def _repr(obj: Any, indent: int, seen: set) -> str:
    if id(obj) in seen:
        return f"{type(obj).__name__}(...)"
    seen.add(id(obj))
    pad = "  " * (indent + 1)
    lines = []
    for k in sorted(vars(obj)):
        v = vars(obj)[k]
        if isinstance(v, Pytree):
            lines.append(f"{pad}{k}={_repr(v, indent + 1, seen)}")
        elif isinstance(v, Variable) or is_array(v):
            lines.append(f"{pad}{k}={v!r}")
        elif isinstance(v, (list, tuple, dict)) and graph.has_data(v):
            lines.append(f"{pad}{k}=<{type(v).__name__} of {len(v)}>")
        elif not k.startswith("_") and not callable(v):
            lines.append(f"{pad}{k}={v!r}")
    if not lines:
        return f"{type(obj).__name__}()"
    # as flax: the first line counts the Variables below the object by type
    return (f"{type(obj).__name__}({_sizes_comment(obj)}\n" + ",\n".join(lines) + "\n"
            + "  " * indent + ")")


def iter_modules(module: Any, /, *, graph: bool | None = None) -> Iterator[tuple[tuple, Module]]:
    """Yield ``(path, module)`` for every Module in the graph, children first.

    Example:
        >>> import fluxion_nn as nnx
        >>> class MLP(nnx.Module):
        ...     def __init__(self, rngs):
        ...         self.hidden = nnx.Linear(2, 4, rngs=rngs)
        ...         self.out = nnx.Linear(4, 1, rngs=rngs)
        >>> [(path, type(m).__name__) for path, m in nnx.iter_modules(MLP(nnx.Rngs(0)))]
        [(('hidden',), 'Linear'), (('out',), 'Linear'), ((), 'MLP')]
    """
    for path, node in _graph.iter_graph(module, graph=graph):
        if isinstance(node, Module):
            yield path, node


def iter_module_children(module: Any, /, *, graph: bool | None = None) -> Iterator[tuple[str, Module]]:
    """Yield ``(name, child)`` for the direct child Modules.

    Example:
        >>> import fluxion_nn as nnx
        >>> class MLP(nnx.Module):
        ...     def __init__(self, rngs):
        ...         self.hidden = nnx.Linear(2, 4, rngs=rngs)
        ...         self.out = nnx.Linear(4, 1, rngs=rngs)
        >>> [(name, type(m).__name__) for name, m in nnx.iter_module_children(MLP(nnx.Rngs(0)))]
        [('hidden', 'Linear'), ('out', 'Linear')]
    """
    for k, v in _graph.iter_children(module, graph=graph):
        if isinstance(v, Module):
            yield k, v


def view(node: Any, /, *, only: Any = ..., raise_if_not_found: bool = True,
         graph: bool | None = None, **kwargs: Any) -> Any:
    """A copy of ``node`` (sharing its Variables) in which every selected submodule that defines
    ``set_view`` was given the ``kwargs`` its ``set_view`` accepts (``BatchNorm``:
    ``use_running_average``; ``Dropout``: ``deterministic``; ``MultiHeadAttention``:
    ``deterministic``, ``decode``, ``batch_size``, ``max_length``). A keyword no ``set_view``
    accepts is an error unless ``raise_if_not_found=False``.

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.Sequential(nnx.Linear(2, 2, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(1)))
        >>> eval_model = nnx.view(model, deterministic=True)
        >>> eval_model.layers[1].deterministic, model.layers[1].deterministic
        (True, False)
    """
    pred = filterlib.to_predicate(only)
    remaining = set(kwargs)

    def apply(path: tuple, obj: Any) -> Any:
        if hasattr(obj, "set_view") and pred(path, obj):
            params = inspect.signature(obj.set_view).parameters.values()
            if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
                obj.set_view(**kwargs)
                remaining.clear()
            else:
                named = {p.name for p in params if p.kind in (
                    inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)}
                obj.set_view(**{k: v for k, v in kwargs.items() if k in named})
                remaining.difference_update(named)
        return obj

    out = _graph.recursive_map(apply, node, graph=graph)
    if raise_if_not_found and remaining:
        raise ValueError(f"Unused keys found in nnx.view: {sorted(remaining)}")
    return out


def with_attributes(node: Any, /, *, only: Any = ..., raise_if_not_found: bool = True,
                    graph: bool | None = None, **attributes: Any) -> Any:
    """A copy of ``node`` (sharing its Variables) whose selected submodules having these
    attributes have them set; ``node`` itself is unchanged (unlike ``set_attributes``).

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.Sequential(nnx.Linear(2, 2, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(1)))
        >>> new = nnx.with_attributes(model, deterministic=True)
        >>> new.layers[1].deterministic
        True
    """
    pred = filterlib.to_predicate(only)
    remaining = set(attributes)

    def apply(path: tuple, obj: Any) -> Any:
        if isinstance(obj, Module) and pred(path, obj):
            for name, value in attributes.items():
                if hasattr(obj, name):
                    setattr(obj, name, value)
                    remaining.discard(name)
        return obj

    out = _graph.recursive_map(apply, node, graph=graph)
    if remaining and raise_if_not_found:
        raise ValueError("Could not find at least one instance of the following attributes: "
                         f"{sorted(remaining)}")
    return out


def _doc_args(doc: str) -> dict[str, str]:
    # the "Args:" entries of a Google-style docstring: name -> indented description
    lines = doc.split("\n")
    starts = [i for i, ln in enumerate(lines) if ln.startswith("  ") and not ln.startswith("    ")]
    starts.append(len(lines))
    out = {}
    for a, b in zip(starts, starts[1:]):
        colon = lines[a].find(":")
        name = lines[a][:colon].strip()
        out[name] = "\n".join([" " * 4 + lines[a][colon + 1:].strip(), *lines[a + 1:b]])
    return out


def view_info(node: Any, /, *, only: Any = ..., graph: bool | None = None) -> str:
    """The ``nnx.view`` keywords that the selected submodules' ``set_view`` methods accept, per
    class, with their annotations, defaults and documentation.

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.Sequential(nnx.Linear(2, 2, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(1)))
        >>> print(nnx.view_info(model))
        Dropout:
          deterministic: bool | None = None
            if True, disables dropout masking.
    """
    pred = filterlib.to_predicate(only)
    classes: set = set()

    def collect(path: tuple, obj: Any) -> Any:
        if hasattr(obj, "set_view") and pred(path, obj):
            classes.add(type(obj))
        return obj

    _graph.recursive_map(collect, node, graph=graph)
    out: list[str] = []
    for c in sorted(classes, key=lambda c: c.__qualname__):
        out.append(f"{c.__qualname__}:")
        sig = inspect.signature(c.set_view)
        doc = inspect.getdoc(c.set_view)
        if isinstance(doc, str):
            start, end = doc.find("Args:\n"), doc.find("Returns:\n")
            parsed = _doc_args(doc[start + 6:end if end != -1 else len(doc)])
            for name, param in sig.parameters.items():
                if name in ("self", "args", "kwargs"):
                    continue
                ann = param.annotation
                if param.default is inspect.Parameter.empty:
                    out.append(f"  {name}: {ann}")
                else:
                    out.append(f"  {name}: {ann} = {param.default}")
                out.append(parsed[name])
        else:
            out.append(f"  set_view{sig}")
    return "\n".join(out)


def display(*args: Any) -> None:
    """Print modules, States or other values (their readable ``repr``).

    Example:
        >>> import fluxion_nn as nnx
        >>> nnx.display({"layers": 2}, [1, "a"])  # each value's repr on its own line
        {'layers': 2}
        [1, 'a']
    """
    for a in args:
        print(a)


class Dict(Module, MutableMapping):
    """A Module that is a mutable mapping: its items are its attributes, so it holds modules,
    Variables, arrays and static values alike (as ``flax.nnx.Dict``); ``d.a`` and ``d["a"]``
    are the same entry.

    Example::

        layers = nnx.Dict(kernel1=nnx.Linear(1, 32, rngs=rngs), activation1=nnx.relu)
        layers["kernel1"] is layers.kernel1   # True

    Example:
        >>> import fluxion_nn as nnx
        >>> heads = nnx.Dict(policy=nnx.Linear(4, 2, rngs=nnx.Rngs(0)),
        ...                 value=nnx.Linear(4, 1, rngs=nnx.Rngs(1)))
        >>> sorted(nnx.state(heads).keys()), heads["value"].out_features
        (['policy', 'value'], 1)
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        for name, value in dict(*args, **kwargs).items():
            setattr(self, name, value)

    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self, key)
        except AttributeError as e:
            raise KeyError(key) from e

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(self, key, value)

    def __delitem__(self, key: str) -> None:
        try:
            delattr(self, key)
        except AttributeError as e:
            raise KeyError(key) from e

    def __iter__(self) -> Iterator[str]:
        return iter(list(vars(self)))

    def __len__(self) -> int:
        return len(vars(self))

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: Any) -> bool:
        return self is other

    def __repr__(self) -> str:
        return _repr(self, 0, set())


# -- capture ----------------------------------------------------------------------------------------

def capture(fn: Any, *var_types: type, init: Any = None, method_outputs: type | None = None) -> Any:
    """Wrap ``fn`` so that it returns ``(result, *states)``: one State per type in
    ``var_types`` holding what ``Module.sow``/``Module.perturb`` recorded (nested by module
    path) during the call. ``fn`` is a function whose first argument is the module, a bound
    method of a module, or a module (its ``__call__``). ``init`` (a State, e.g. perturbations
    from an earlier capture) seeds the captures; ``method_outputs`` sows every public method's
    output (and ``__call__``'s) under the method's name with that Variable type. With a Variable
    type first, ``capture(nnx.Intermediate)`` is a decorator.

    Example::

        y, intermediates = nnx.capture(model, nnx.Intermediate)(x)
        features = intermediates["features"]

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> class Model(nnx.Module):
        ...     def __init__(self, rngs):
        ...         self.linear = nnx.Linear(2, 2, rngs=rngs)
        ...     def __call__(self, x):
        ...         h = self.linear(x)
        ...         self.sow(nnx.Intermediate, "hidden", h)
        ...         return h.sum()
        >>> model = Model(nnx.Rngs(0))
        >>> y, intermediates = nnx.capture(model, nnx.Intermediate)(jnp.ones((1, 2)))
        >>> sorted(intermediates.keys()), intermediates["hidden"][0].shape
        (['hidden'], (1, 2))
    """
    if isinstance(fn, type) and issubclass(fn, Variable):
        types = (fn, *var_types)
        return lambda actual: capture(actual, *types, init=init, method_outputs=method_outputs)
    if inspect.ismethod(fn) and isinstance(fn.__self__, Module):
        bound_module: Module | None = fn.__self__
    elif isinstance(fn, Module):
        bound_module = fn
    else:
        bound_module = None

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if bound_module is not None:
            module = bound_module
        elif args:
            module = args[0]
        else:
            raise TypeError("capture: the wrapped function needs the module as its first "
                            "argument")
        seeds = _state_by_path(init) if init else {}
        modules = list(iter_modules(module))
        for path, m in modules:
            found: dict = {t: {} for t in var_types}
            for name, var in seeds.get(path, {}).items():
                found.setdefault(type(var), {})[name] = var.get_value()
            vars(m)[_CAPTURES] = tuple(t(d) for t, d in found.items())
        patched = []
        if method_outputs is not None:
            for _, m in modules:
                patched += _add_capturing(type(m), method_outputs)
        try:
            result = fn(*args, **kwargs)
        finally:
            for cls, name, method in patched:
                setattr(cls, name, method)
        collected = State({})
        for path, m in iter_modules(module):
            captures = vars(m).pop(_CAPTURES, ())
            for var in captures:
                if type(var) not in var_types:
                    continue
                node = collected
                for part in path:
                    if part not in node:
                        node[part] = State({})
                    node = node[part]
                for key, value in var.value.items():
                    node[key] = type(var)(value)
        if not var_types:
            return result
        states = split_state(collected, *var_types)
        return (result, states) if len(var_types) == 1 else (result, *states)

    return wrapper


def _state_by_path(state: Any) -> dict:
    # module path -> {name: Variable} for the Variables of a (nested) State
    found: dict = {}

    def walk(node: Any, path: tuple) -> None:
        for key, value in node.items():
            if isinstance(value, Variable):
                found.setdefault(path, {})[key] = value
            elif isinstance(value, MutableMapping):
                walk(value, path + (key,))

    walk(state, ())
    return found


def _add_capturing(cls: type, variable_type: type) -> list:
    # wrap the public methods (and ``__call__``) defined on ``cls`` itself so each sows its
    # output under its name; returns (cls, name, original) to undo it
    undo = []
    for name, method in list(cls.__dict__.items()):
        if not callable(method) or isinstance(method, type):
            continue
        if name.startswith("_") and name != "__call__":
            continue
        if getattr(method, "_sows_output", False):
            continue

        def make(name: str, method: Any) -> Any:
            @functools.wraps(method)
            def sowing(self: Any, *args: Any, **kwargs: Any) -> Any:
                result = method(self, *args, **kwargs)
                self.sow(variable_type, name, result)
                return result

            sowing._sows_output = True  # type: ignore[attr-defined]
            return sowing

        setattr(cls, name, make(name, method))
        undo.append((cls, name, method))
    return undo

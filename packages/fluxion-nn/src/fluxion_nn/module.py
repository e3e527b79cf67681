"""``Module``: the base class of layers and models (a mutable object graph, as ``flax.nnx.Module``)."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any, Iterator

import fluxion.numpy as jnp

from . import filterlib, graph
from . import graph as _graph
from .pytreelib import Pytree
from .variablelib import Perturbation, Variable, is_array

__all__ = ["Module", "Dict", "iter_modules", "iter_module_children", "view", "display"]


class Module(Pytree):
    """Base class of layers and models: write ``__init__`` (create Variables and submodules,
    taking ``rngs``) and ``__call__``.

    Example::

        class MLP(nnx.Module):
            def __init__(self, din, dout, *, rngs):
                self.linear = nnx.Linear(din, dout, rngs=rngs)

            def __call__(self, x):
                return nnx.relu(self.linear(x))
    """

    def sow(self, variable_type: Any, name: str, value: Any,
            reduce_fn: Any = lambda xs, x: xs + (x,), init_fn: Any = lambda: ()) -> bool:
        """Record ``value`` in a Variable ``name`` of ``variable_type`` (default: a tuple of the
        values sown so far), for later retrieval with ``nnx.pop``/``nnx.state``."""
        if isinstance(variable_type, str):
            from .variablelib import variable_type_from_name

            variable_type = variable_type_from_name(variable_type, allow_register=True)
        if hasattr(self, name):
            var = getattr(self, name)
            if not isinstance(var, variable_type):
                raise ValueError(f"sow: attribute {name!r} is not a {variable_type.__name__}")
            var.value = reduce_fn(var.value, value)
        else:
            setattr(self, name, variable_type(reduce_fn(init_fn(), value)))
        return True

    def perturb(self, name: str, value: Any, variable_type: Any = Perturbation) -> Any:
        """Add a zero ``Perturbation`` Variable to ``value``; the gradient with respect to it is
        the gradient with respect to this intermediate value."""
        if not hasattr(self, name):
            setattr(self, name, variable_type(jnp.zeros_like(value)))
        return value + getattr(self, name).value

    def iter_modules(self) -> Iterator[tuple[tuple, "Module"]]:
        """Yield ``(path, module)`` for every submodule (and self, last)."""
        return iter_modules(self)

    def iter_children(self) -> Iterator[tuple[str, "Module"]]:
        """Yield ``(name, module)`` for the direct child modules."""
        return iter_module_children(self)

    def set_attributes(self, *filters: Any, raise_if_not_found: bool = True, **attributes: Any) -> None:
        """Set attributes on every submodule (matching ``filters``, default all) that has them.

        Example: ``model.set_attributes(deterministic=True)``.
        """
        preds = [filterlib.to_predicate(f) for f in filters] or [lambda p, m: True]
        found: set = set()
        for path, module in iter_modules(self):
            if not any(p(path, module) for p in preds):
                continue
            for k, v in attributes.items():
                if k in vars(module):
                    setattr(module, k, v)
                    found.add(k)
        missing = set(attributes) - found
        if missing and raise_if_not_found:
            raise ValueError(f"set_attributes: no submodule has the attribute(s) {sorted(missing)}")

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
    return f"{type(obj).__name__}(\n" + ",\n".join(lines) + "\n" + "  " * indent + ")"


def iter_modules(module: Any, /, *, graph: bool | None = None) -> Iterator[tuple[tuple, Module]]:
    """Yield ``(path, module)`` for every Module in the graph, children first.

    Example: ``[p for p, m in nnx.iter_modules(model) if isinstance(m, nnx.Dropout)]``.
    """
    for path, node in _graph.iter_graph(module, graph=graph):
        if isinstance(node, Module):
            yield path, node


def iter_module_children(module: Any, /, *, graph: bool | None = None) -> Iterator[tuple[str, Module]]:
    """Yield ``(name, child)`` for the direct child Modules.

    Example: ``dict(nnx.iter_module_children(model))``.
    """
    for k, v in _graph.iter_children(module, graph=graph):
        if isinstance(v, Module):
            yield k, v


def view(node: Any, /, *, only: Any = ..., raise_if_not_found: bool = True,
         graph: bool | None = None, **attributes: Any) -> Any:
    """A clone of ``node`` with attributes set on every submodule having them (flax's ``view``;
    Variables are shared with the original).

    Example: ``eval_model = nnx.view(model, deterministic=True, use_running_average=True)``.
    """
    gdef, flat = _graph.flatten(node)
    new = _graph.merge(gdef, _graph.State.from_flat_path(flat))
    if isinstance(new, Module):
        new.set_attributes(only, raise_if_not_found=raise_if_not_found and bool(attributes),
                           **attributes)
    return new





def display(*args: Any) -> None:
    """Print modules, States or other values (their readable ``repr``).

    Example: ``nnx.display(model)``.
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

"""Fluxion's core package (see DESIGN.md), which is also JAX's public ``jax.core`` module.

Its submodules (``trace``, ``avals``, ``ir``, ...) are Fluxion's internals; the names below are
the ones ``jax.core`` 0.10.2 makes public, loaded on first access: ``Tracer``, ``ShapedArray``,
``AbstractValue``, ``Trace`` (the base of user-defined traces; every interpreter is one),
``eval_jaxpr``, ``eval_context``, ``ensure_compile_time_eval``, ``max_dim``/``min_dim`` and the type names
``Atom``, ``Value``, ``ParamDict``. ``jax.extend.core`` (``fluxion.extend.core``) has the rest.

Example:
    >>> import fluxion, fluxion.core
    >>> seen = []
    >>> _ = fluxion.jit(lambda x: seen.append(isinstance(x, fluxion.core.Tracer)) or x)(1.0)
    >>> seen
    [True]
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

# jax.core name -> (submodule of fluxion.core, name there)
_JAX_CORE = {
    "AbstractValue": ("avals", "AbstractValue"),
    "ShapedArray": ("avals", "ShapedArray"),
    "Tracer": ("trace", "Tracer"),
    "Trace": ("trace", "Trace"),
    "eval_context": ("public", "eval_context"),
    "eval_jaxpr": ("public", "eval_jaxpr"),
    "max_dim": ("public", "max_dim"),
    "min_dim": ("public", "min_dim"),
    "Atom": ("public", "Atom"),
    "Value": ("public", "Value"),
    "ParamDict": ("public", "ParamDict"),
    # jax._src.core (= this module under the alias) names libraries read there: jax_md's UMA
    # kernels define their primitives with jax._src.core.Primitive
    "Primitive": ("primitive", "Primitive"),
    # not in dir(jax.core) 0.10.2 but still read through it (TensorFlow Probability)
    "pytype_aval_mappings": ("public", "pytype_aval_mappings"),
}
# jax.core names defined above the core layer; the package root provides them (provide()).
_PROVIDED: dict[str, Callable[[], Any]] = {}

__all__ = sorted([*(n for n in _JAX_CORE if n not in ("pytype_aval_mappings", "Primitive")),
                  "ensure_compile_time_eval"])


def provide(name: str, get: Callable[[], Any]) -> None:
    """Registers a public name of this module defined in a higher layer (used by the root)."""
    _PROVIDED[name] = get


def __getattr__(name: str) -> Any:
    found = _JAX_CORE.get(name)
    if found is not None:
        value = getattr(importlib.import_module(f"fluxion.core.{found[0]}"), found[1])
    elif name in _PROVIDED:
        value = _PROVIDED[name]()
    else:
        raise AttributeError(
            f"module 'fluxion.core' has no attribute {name!r}: jax.core.{name} is not provided "
            f"by Fluxion (the JAX names it lacks are listed in docs/guide/coming-from-jax.md)")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

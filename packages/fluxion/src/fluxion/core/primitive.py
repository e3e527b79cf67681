"""Primitives: the closed set of operations that every transformation knows how to interpret.

A :class:`Primitive` is a name plus a table of rules. Each rule is set in the primitive's own
``lax`` module, right beside its definition:

- ``abstract_eval(*avals, **params)``: the output aval(s) (shape rule, dtype rule, weak type);
- ``lowering(ctx, *values, **params)``: StableHLO text for it (``fluxion.backend.lowering``);
- ``jvp``, ``transpose``, ``batch``: the autodiff and vmap rules;
- ``impl(*args, **params)``: an eager implementation, for primitives that are not compiled alone
  (call primitives such as ``jit``); by default eager evaluation compiles the primitive alone.

``bind`` hands the primitive to the current interpreter (see :mod:`fluxion.core.trace`).

Example:
    >>> from fluxion.core.avals import ShapedArray
    >>> p = Primitive("my_neg")
    >>> p.abstract_eval = lambda x: x
    >>> p.abstract_eval(ShapedArray((3,), "float32")).str_short()
    'f32[3]'
"""

from __future__ import annotations

from typing import Any, Callable

from fluxion.core import trace as _trace

__all__ = ["Primitive"]


class Primitive:
    """An operation with a rule per transformation. See the module docstring."""

    multiple_results: bool
    effectful: bool

    def __init__(self, name: str, *, multiple_results: bool = False, effectful: bool = False):
        self.name = name
        self.multiple_results = multiple_results
        self.effectful = effectful
        self.abstract_eval: Callable[..., Any] | None = None
        self.lowering: Callable[..., Any] | None = None
        self.impl: Callable[..., Any] | None = None
        self.jvp: Callable[..., Any] | None = None
        self.transpose: Callable[..., Any] | None = None
        self.batch: Callable[..., Any] | None = None
        # Extra per-primitive data a transformation may want (e.g. "is linear"), by name.
        self.props: dict[str, Any] = {}

    def bind(self, *args: Any, **params: Any) -> Any:
        """Apply the primitive under the current interpreter."""
        return _trace.STATE.interp.process_primitive(self, args, params)

    def __repr__(self) -> str:
        return self.name

    def def_abstract_eval(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        self.abstract_eval = fn
        return fn

    def def_lowering(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        self.lowering = fn
        return fn

    def def_impl(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        self.impl = fn
        return fn

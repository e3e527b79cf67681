"""``fluxion.interpreters.mlir`` (JAX's ``jax.interpreters.mlir``): JAX's MLIR lowering internals (``register_lowering``, ``LoweringRuleContext``).

Fluxion's transformations are built differently (one interpreter per transformation, rules
beside each primitive: see docs/internals.md), so these internals have no counterpart. The module
exists so that libraries importing it at module level load; using one of its names raises an
``AttributeError`` that says so. Listed in docs/guide/coming-from-jax.md.

Example:
    >>> import fluxion.interpreters.mlir as mod
    >>> try:
    ...     mod.anything
    ... except AttributeError as e:
    ...     print("coming-from-jax.md" in str(e))
    True
"""

from __future__ import annotations

from fluxion.interpreters import _not_provided

__all__: list[str] = []


__getattr__ = _not_provided("jax.interpreters.mlir")

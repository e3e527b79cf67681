"""``fluxion.interpreters.xla`` (JAX's ``jax.interpreters.xla``): JAX's XLA helpers.

``canonicalize_dtype_handlers`` and ``pytype_aval_mappings`` are provided as registries with
entries for the host types Fluxion accepts (``numpy.ndarray``, NumPy scalars, Python scalars),
each giving the canonical array or abstract value; libraries copy an entry for their own array
type (TensorFlow Probability's ``NumpyVariable``). Fluxion accepts such objects through
``__array__`` whatever the registries hold, so an entry added there is recorded only.

Fluxion's transformations are built differently (one interpreter per transformation, rules
beside each primitive: see docs/internals.md), so these internals have no counterpart. The module
exists so that libraries importing it at module level load; using one of its names raises an
``AttributeError`` that says so. Listed in docs/guide/coming-from-jax.md.

Example:
    >>> import fluxion.interpreters.xla as mod
    >>> try:
    ...     mod.anything
    ... except AttributeError as e:
    ...     print("coming-from-jax.md" in str(e))
    True
"""

from __future__ import annotations

from fluxion.core.public import canonicalize_dtype_handlers, pytype_aval_mappings
from fluxion.interpreters import _not_provided

__all__ = ["canonicalize_dtype_handlers", "pytype_aval_mappings"]


__getattr__ = _not_provided("jax.interpreters.xla")

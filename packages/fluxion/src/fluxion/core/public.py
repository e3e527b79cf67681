"""The public names of ``jax.core`` that are not plain re-exports of core classes (see
``fluxion/core/__init__.py``): ``eval_jaxpr``, ``eval_context``, ``max_dim``/``min_dim`` and
the type names ``Atom``, ``Value`` and ``ParamDict``.

Example:
    >>> import fluxion, fluxion.core as core
    >>> closed = fluxion.make_jaxpr(lambda x: x * 2.0)(1.0)
    >>> [float(v) for v in core.eval_jaxpr(closed.jaxpr, closed.consts, 3.0)]
    [6.0]
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np

from fluxion.core import dtypes as _dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.ir import Literal, Program, Var, eval_program
from fluxion.core.trace import EVAL, set_current

__all__ = ["Atom", "Value", "ParamDict", "eval_jaxpr", "eval_context", "max_dim", "min_dim",
           "pytype_aval_mappings", "canonicalize_dtype_handlers"]

Atom = Var | Literal
"""An input of an equation: a program variable or a literal constant."""
Value = Any
"""A value flowing through a program: an array or a tracer."""
ParamDict = dict[str, Any]
"""The parameters of an equation (``eqn.params``)."""


def eval_jaxpr(jaxpr: Program, consts: Any, *args: Any,
               propagate_source_info: bool = True) -> list[Any]:
    """Evaluates the program ``jaxpr`` on ``args`` (its constants ``consts``) under the current
    transformation, equation by equation; returns the list of its outputs (``jax.core``'s).

    Example:
        >>> import fluxion
        >>> closed = fluxion.make_jaxpr(lambda x, y: x + y)(1.0, 2.0)
        >>> [float(v) for v in eval_jaxpr(closed.jaxpr, closed.consts, 1.0, 5.0)]
        [6.0]
    """
    del propagate_source_info  # Fluxion's equations carry no source information to propagate
    if not isinstance(jaxpr, Program):
        inner = getattr(jaxpr, "jaxpr", None)
        if not isinstance(inner, Program):
            raise TypeError(f"eval_jaxpr: expected a jaxpr (the .jaxpr of make_jaxpr's result), "
                            f"got {type(jaxpr).__name__}")
        jaxpr = inner
    if len(args) != len(jaxpr.invars):
        raise TypeError(f"eval_jaxpr: the jaxpr takes {len(jaxpr.invars)} arguments, "
                        f"got {len(args)}")
    return eval_program(jaxpr, list(consts), list(args))


@contextlib.contextmanager
def eval_context() -> Iterator[None]:
    """Inside the block, operations run eagerly (no enclosing transformation sees them).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> with eval_context():
        ...     float(jnp.add(1.0, 2.0))
        3.0
    """
    with set_current(EVAL):
        yield


def max_dim(d1: Any, d2: Any) -> Any:
    """The larger of two dimension sizes (Fluxion's shapes are concrete integers).

    Example:
        >>> max_dim(3, 5)
        5
    """
    return max(d1, d2)


def min_dim(d1: Any, d2: Any) -> Any:
    """The smaller of two dimension sizes (Fluxion's shapes are concrete integers).

    Example:
        >>> min_dim(3, 5)
        3
    """
    return min(d1, d2)


def _host_aval(x: Any) -> ShapedArray:
    return ShapedArray(np.shape(x), _dtypes.canonicalize_dtype(_dtypes.dtype(x)),
                       _dtypes.is_weakly_typed(x))


def _host_canonical(x: Any) -> np.ndarray:
    return np.asarray(x, _dtypes.canonicalize_dtype(_dtypes.dtype(x)))


_HOST_TYPES = (np.ndarray, *(np.dtype(c).type for c in "?bhilqBHILQefdgFDG"), bool, int, float,
               complex)
pytype_aval_mappings: dict[type, Any] = {t: _host_aval for t in _HOST_TYPES}
"""type -> its abstract value (JAX's ``jax.core.pytype_aval_mappings``), for host types."""
canonicalize_dtype_handlers: dict[type, Any] = {t: _host_canonical for t in _HOST_TYPES}
"""type -> its canonical host array (JAX's ``jax.interpreters.xla.canonicalize_dtype_handlers``)."""

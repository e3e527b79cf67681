"""``ensure_compile_time_eval``: inside a traced function, compute what does not depend on
traced values now, in Python, instead of staging it into the program.

Inside the block, an operation whose operands are all concrete runs eagerly (its result is a
concrete array, so Python control flow can branch on it); an operation on a traced value is
handed to the enclosing transformation as usual.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> @fluxion.jit
    ... def f(x):
    ...     with fluxion.ensure_compile_time_eval():
    ...         positive = jnp.sin(3.0) > 0     # a concrete bool, not a tracer
    ...     return x + 1 if positive else x - 1
    >>> float(f(1.0))
    2.0
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

from fluxion.core.trace import EVAL, Interpreter, Tracer, interpreter_scope, set_current

__all__ = ["ensure_compile_time_eval"]


class _CompileTimeEval(Interpreter):
    """Runs operations on concrete operands eagerly; passes the others to its parent."""

    description = "ensure_compile_time_eval"

    def process_primitive(self, prim: Any, args: Sequence[Any], params: dict[str, Any]) -> Any:
        traced = any(isinstance(a, Tracer) for a in args)
        with set_current(self.parent if traced else EVAL):
            return prim.bind(*args, **params)


@contextlib.contextmanager
def ensure_compile_time_eval() -> Iterator[None]:
    """Context manager: operations on concrete values inside the block run now, even under
    ``jit`` (see the module docstring).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> with fluxion.ensure_compile_time_eval():
        ...     float(jnp.cos(0.0))
        1.0
    """
    with interpreter_scope(_CompileTimeEval()):
        yield

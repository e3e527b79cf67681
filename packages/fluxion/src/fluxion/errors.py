"""``fluxion.errors``: the errors Fluxion raises about traced values, with JAX's names and
JAX's hierarchy (each a ``JAXTypeError`` or ``JAXIndexError``), ``JaxprTypeError`` (a staged
program that does not type-check: Fluxion's ``core.ir.ProgramTypeError``), and
``JaxRuntimeError``: the runtime error of the XLA runtime (jaxlib's own class, as in JAX), raised
when a compiled program fails while it runs.

Example:
    >>> import fluxion
    >>> issubclass(fluxion.errors.TracerBoolConversionError, fluxion.errors.JAXTypeError)
    True
"""

from typing import Any, Callable

from fluxion.core.errors import (
    ConcretizationTypeError,
    JAXIndexError,
    JAXTypeError,
    KeyReuseError,
    NonConcreteBooleanIndexError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)
from fluxion.core.ir import ProgramTypeError as JaxprTypeError

__all__ = [
    "ConcretizationTypeError", "JAXIndexError", "JAXTypeError", "JaxprTypeError", "KeyReuseError",
    "NonConcreteBooleanIndexError", "TracerArrayConversionError", "TracerBoolConversionError", "TracerIntegerConversionError",
    "UnexpectedTracerError", "JaxRuntimeError",  # noqa: F822  (module __getattr__, lazily)
]


#: Gives jaxlib's runtime error class; installed by the package root (``fluxion/__init__``),
#: which may reach the backend: this module sits below it.
_runtime_error_class: Callable[[], type] | None = None


def _install_runtime_error(get_class: Callable[[], type]) -> None:
    global _runtime_error_class
    _runtime_error_class = get_class


def __getattr__(name: str) -> Any:
    # jaxlib's class, looked up on first use so that importing this module loads no runtime.
    if name == "JaxRuntimeError" and _runtime_error_class is not None:
        return _runtime_error_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

# Shown as ``fluxion.errors.<Name>`` in tracebacks (JAX shows ``jax.errors.<Name>``).
for _cls in (ConcretizationTypeError, JAXIndexError, JAXTypeError, KeyReuseError, NonConcreteBooleanIndexError,
             TracerArrayConversionError, TracerBoolConversionError, TracerIntegerConversionError,
             UnexpectedTracerError):
    _cls.__module__ = __name__
del _cls

"""``fluxion.errors``: the errors Fluxion raises about traced values, with JAX's names.

Example:
    >>> import fluxion
    >>> issubclass(fluxion.errors.TracerBoolConversionError, TypeError)
    True
"""

from fluxion.core.errors import (
    ConcretizationTypeError,
    KeyReuseError,
    NonConcreteBooleanIndexError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)

__all__ = [
    "ConcretizationTypeError", "KeyReuseError", "NonConcreteBooleanIndexError",
    "TracerArrayConversionError", "TracerBoolConversionError", "TracerIntegerConversionError",
    "UnexpectedTracerError",
]

# Shown as ``fluxion.errors.<Name>`` in tracebacks (JAX shows ``jax.errors.<Name>``).
for _cls in (ConcretizationTypeError, KeyReuseError, NonConcreteBooleanIndexError,
             TracerArrayConversionError, TracerBoolConversionError, TracerIntegerConversionError,
             UnexpectedTracerError):
    _cls.__module__ = __name__
del _cls

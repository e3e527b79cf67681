"""Fluxion's error types, with JAX's names, and the helper that finds the user's source line.

Every message names what went wrong, where in the user's code, and the ways out.

Example:
    >>> issubclass(ConcretizationTypeError, TypeError)
    True
"""

from __future__ import annotations

import itertools
import os
import sys

__all__ = [
    "JAXTypeError", "JAXIndexError", "FluxionTypeError", "ConcretizationTypeError",
    "TracerBoolConversionError", "TracerIntegerConversionError", "TracerArrayConversionError", "NonConcreteBooleanIndexError",
    "UnexpectedTracerError", "KeyReuseError", "user_frame", "user_source_line",
    "user_source_summary",
]

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SKIP_PREFIXES = (_PKG_DIR + os.sep,)


def _is_internal(filename: str) -> bool:
    return filename.startswith(_SKIP_PREFIXES) or filename.startswith("<frozen ") or (
        os.sep + "contextlib.py" in filename)


# filename -> _is_internal(filename): every staged equation records its user line
# (user_source_line), walking ~8 of our frames, so the answer per file is remembered (a dict
# read instead of three string tests: about half of the walk's cost).
_INTERNAL: dict[str, bool] = {}


def user_frame(skip_extra: tuple[str, ...] = ()):
    """The innermost stack frame outside Fluxion's own source tree (or None)."""
    f = sys._getframe(1)
    internal = _INTERNAL
    while f is not None:
        fn = f.f_code.co_filename
        inside = internal.get(fn)
        if inside is None:
            inside = internal[fn] = _is_internal(fn)
        if not inside and not (skip_extra and fn.startswith(skip_extra)):
            return f
        f = f.f_back
    return None


def user_source_line() -> str:
    """``file.py:12 (fn_name)`` of the innermost user frame, or ``'<unknown>'``."""
    f = user_frame()
    if f is None:
        return "<unknown>"
    return f"{f.f_code.co_filename}:{f.f_lineno} ({f.f_code.co_name})"


def user_source_summary() -> str:
    """JAX's ``file.py:12:8 (qualified_fn_name)`` of the innermost user frame: its line, the 0-based
    column where the running expression starts (``file.py:12 (fn_name)`` when the column is 0
    or unknown); ``'unknown'`` without a user frame. JAX's messages that say "This error occurs
    at source:" end with it.

    Example:
        >>> user_source_summary().endswith("(<module>)")
        True
    """
    f = user_frame()
    if f is None:
        return "unknown"
    pos = next(itertools.islice(f.f_code.co_positions(), f.f_lasti // 2, None), None)
    line = pos[0] if pos and pos[0] is not None else f.f_lineno
    col = pos[2] if pos else None
    where = f"{f.f_code.co_filename}:{line}" + (f":{col}" if col else "")
    return f"{where} ({f.f_code.co_qualname})"


class JAXTypeError(TypeError):
    """Base of the TypeErrors Fluxion raises about traced values, keys and leaked tracers
    (JAX's name: catching it catches each of them, as in JAX).

    Example:
        >>> issubclass(TracerArrayConversionError, JAXTypeError)
        True
    """


class JAXIndexError(IndexError):
    """Base of the IndexErrors Fluxion raises about traced indices (JAX's name).

    Example:
        >>> issubclass(NonConcreteBooleanIndexError, JAXIndexError)
        True
    """


FluxionTypeError = JAXTypeError  # the name Fluxion's own modules used before JAX's


class ConcretizationTypeError(JAXTypeError):
    """A traced value was used where Python needs a concrete one.

    Raised, for example, by ``if x > 0:`` inside ``jit`` when ``x`` is an argument. The message
    says which argument the value depends on and how to avoid the error (``static_argnums``,
    ``lax.cond``, ``jnp.where``).
    """


class TracerBoolConversionError(ConcretizationTypeError):
    """``bool()`` of a traced value (an ``if``/``while`` on it, ``and``/``or``/``not``)."""


class TracerIntegerConversionError(JAXTypeError):
    """``int()``/``operator.index()`` of a traced value (``range(x)``, indexing a list by ``x``)."""


class TracerArrayConversionError(JAXTypeError):
    """``numpy.asarray()`` of a traced value."""


class NonConcreteBooleanIndexError(JAXIndexError):
    """Boolean-mask indexing whose result shape depends on traced values."""


class UnexpectedTracerError(JAXTypeError):
    """A traced value escaped the transformation that made it and was used afterwards."""


class KeyReuseError(JAXTypeError):
    """A PRNG key was used twice while ``jax_debug_key_reuse`` is on."""

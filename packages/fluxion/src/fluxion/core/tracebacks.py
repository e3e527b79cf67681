"""Traceback filtering: an error in the user's code shows the user's frames, not Fluxion's.

An exception that leaves a Fluxion API call (a jitted function, ``grad(f)``, ``vmap(f)``,
``lax.scan`` ...) has passed through many of Fluxion's own frames (dispatch, staging, the
interpreters) before reaching the user. The outermost such call -- an *API boundary* -- removes
those frames from the exception's traceback, so what is printed is the user's call, the user's
traced function and the user's line that failed, with one note saying how to see everything.

Frames are internal when their file lies in the ``fluxion`` package or in an imported top-level
package named ``fluxion_*`` (the ecosystem packages). What the boundary does is chosen by the flag
``jax_traceback_filtering`` (env ``FLUXION_TRACEBACK_FILTERING`` or ``JAX_TRACEBACK_FILTERING``),
with JAX's values:

- ``"off"``: nothing is removed.
- ``"tracebackhide"``: frames are kept but marked ``__tracebackhide__``, which IPython and pytest
  honour (``pytest --fulltrace`` shows them).
- ``"remove_frames"``: frames are removed; the unfiltered traceback is chained as the cause
  (an :class:`UnfilteredStackTrace`).
- ``"quiet_remove_frames"``: frames are removed and a one-line note says how to see them.
- ``"auto"`` (default): ``"tracebackhide"`` under IPython, else ``"quiet_remove_frames"``.

An error raised by an eager call outside any transformation has no boundary above it; when it is
not caught, ``sys.excepthook`` (installed here unless another hook is) filters it before it is
printed, so a script's traceback ends at the user's line there too.

Example:
    >>> @api_boundary
    ... def call(f, x):
    ...     return f(x)
    >>> call(abs, -2)
    2
"""

from __future__ import annotations

import builtins
import functools
import os
import sys
import types
from typing import Any, Callable, TypeVar

from fluxion.core.config import config

__all__ = ["wraps", "api_boundary", "filter_exception", "register_boundary", "is_internal_file",
           "UnfilteredStackTrace", "FILTERED_NOTE"]

C = TypeVar("C", bound=Callable[..., Any])

_FLUXION_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# Standard-library frames that only appear as plumbing between two of Fluxion's frames (a
# ``with`` block's __exit__, functools.partial, an import): hidden when their caller is hidden.
_PLUMBING = (os.sep + "contextlib.py", os.sep + "functools.py", "<frozen ")

FILTERED_NOTE = ("Fluxion removed {n} of its internal frames from this traceback; set "
                 "FLUXION_TRACEBACK_FILTERING=off (or fluxion.config.update("
                 "'jax_traceback_filtering', 'off')) to see them.")

# Code objects of the functions that are API boundaries: a boundary below another one (jit of a
# function calling grad) leaves the filtering to the outermost.
_BOUNDARY_CODES: set[types.CodeType] = set()


class UnfilteredStackTrace(Exception):
    """The cause chained to an error under ``jax_traceback_filtering="remove_frames"``: the
    original traceback, with Fluxion's internal frames.

    Example:
        >>> issubclass(UnfilteredStackTrace, Exception)
        True
    """


# (len(sys.modules) when computed, the directories): walking sys.modules costs O(modules) and
# runs for every frame a warning or an error looks at; recomputed when a module is imported.
_DIRS_SEEN: list = [-1, ()]


def wraps(wrapped: Callable) -> Callable[[Callable], Callable]:
    """``functools.wraps`` as JAX's transformations apply it: the wrapper takes the name, doc,
    module, qualname and ``__dict__`` of ``wrapped`` where it can and skips what it cannot (a
    callable object whose ``__name__`` is not a string, as an equinox Module carried through
    ``scan`` has), instead of failing.

    Example:
        >>> class Odd:
        ...     __name__ = 42
        ...     def __call__(self, x):
        ...         return x
        >>> @wraps(Odd())
        ... def wrapper(x):
        ...     return x
        >>> wrapper.__name__, wrapper.__wrapped__.__class__.__name__
        ('wrapper', 'Odd')
    """
    def apply(wrapper: Callable) -> Callable:
        for attr in functools.WRAPPER_ASSIGNMENTS:
            try:
                setattr(wrapper, attr, getattr(wrapped, attr))
            except (AttributeError, TypeError):
                pass
        try:
            wrapper.__dict__.update(getattr(wrapped, "__dict__", {}))
        except (AttributeError, TypeError):
            pass
        wrapper.__wrapped__ = wrapped
        return wrapper
    return apply


def _package_dirs() -> tuple[str, ...]:
    n = len(sys.modules)
    if _DIRS_SEEN[0] == n:
        return _DIRS_SEEN[1]
    dirs = [_FLUXION_DIR]
    for name, module in list(sys.modules.items()):
        if name.startswith("fluxion_") and "." not in name:
            path = getattr(module, "__file__", None)
            if path:
                dirs.append(os.path.dirname(os.path.abspath(path)) + os.sep)
    _DIRS_SEEN[:] = [n, tuple(dirs)]
    return _DIRS_SEEN[1]


def is_internal_file(filename: str, dirs: tuple[str, ...] | None = None) -> bool:
    """Whether ``filename`` is a source file of Fluxion or of an imported ``fluxion_*`` package.

    Example:
        >>> is_internal_file(__file__), is_internal_file("/home/me/train.py")
        (True, False)
    """
    return filename.startswith(_package_dirs() if dirs is None else dirs)


def register_boundary(fun: Callable) -> None:
    """Mark ``fun`` (a function with its own ``try``/``except`` calling :func:`filter_exception`)
    as an API boundary, so that boundaries called below it leave the filtering to it.

    Example:
        >>> def f(x):
        ...     return x
        >>> register_boundary(f)
    """
    _BOUNDARY_CODES.add(fun.__code__)


def _mode() -> str:
    mode = config.jax_traceback_filtering
    if mode in (None, "auto"):
        return "tracebackhide" if hasattr(builtins, "get_ipython") else "quiet_remove_frames"
    return mode


def _under_boundary(frame: types.FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code in _BOUNDARY_CODES:
            return True
        frame = frame.f_back
    return False


def _hidden(tb: types.TracebackType, dirs: tuple[str, ...]) -> list[tuple[Any, int, bool]]:
    """``(frame, lineno, hidden)`` for each traceback entry, outermost first."""
    out = []
    caller_hidden = False
    while tb is not None:
        fn = tb.tb_frame.f_code.co_filename
        hidden = fn.startswith(dirs) or (caller_hidden and any(p in fn for p in _PLUMBING))
        out.append((tb.tb_frame, tb.tb_lineno, hidden))
        caller_hidden = hidden
        tb = tb.tb_next
    return out


def filter_exception(e: BaseException) -> None:
    """Remove Fluxion's internal frames from ``e.__traceback__`` as ``jax_traceback_filtering``
    says, unless a boundary further out will. Called by a boundary's ``except`` clause, which
    then re-raises ``e`` with a bare ``raise``.

    Example:
        >>> try:
        ...     raise ValueError("bad")
        ... except ValueError as err:
        ...     filter_exception(err)
    """
    tb = e.__traceback__
    if tb is None:
        return
    mode = _mode()
    if mode == "off" or _under_boundary(tb.tb_frame.f_back):
        return
    entries = _hidden(tb, _package_dirs())
    n_hidden = sum(h for _, _, h in entries)
    if n_hidden == 0:
        return
    if mode == "tracebackhide":
        for frame, _, hidden in entries:
            if hidden:
                frame.f_locals["__tracebackhide__"] = True
        return
    filtered = None
    for frame, lineno, hidden in reversed(entries):
        if not hidden:
            filtered = types.TracebackType(filtered, frame, frame.f_lasti, lineno)
    if mode == "remove_frames":
        full = UnfilteredStackTrace(
            f"{type(e).__name__}: {e}\n\nThe traceback below includes Fluxion's internal frames; "
            "the exception that follows it is the same one, with them removed.")
        full.with_traceback(tb)
        full.__cause__, full.__context__ = e.__cause__, e.__context__
        full.__suppress_context__ = e.__suppress_context__
        e.__cause__, e.__context__ = full, None
    elif not any(n.startswith("Fluxion removed") for n in getattr(e, "__notes__", ())):
        e.add_note(FILTERED_NOTE.format(n=n_hidden))
    e.with_traceback(filtered)


def _strip(e: BaseException) -> None:
    """Filter ``e``'s traceback as a boundary would, wherever it was raised (no boundary check)."""
    tb = e.__traceback__
    if tb is None or any(n.startswith("Fluxion removed") for n in getattr(e, "__notes__", ())):
        return
    entries = _hidden(tb, _package_dirs())
    n_hidden = sum(h for _, _, h in entries)
    if n_hidden == 0 or all(h for _, _, h in entries):
        return
    filtered = None
    for frame, lineno, hidden in reversed(entries):
        if not hidden:
            filtered = types.TracebackType(filtered, frame, frame.f_lasti, lineno)
    e.add_note(FILTERED_NOTE.format(n=n_hidden))
    e.with_traceback(filtered)


def _excepthook(exc_type: type, exc: BaseException, tb: types.TracebackType | None) -> None:
    """``sys.excepthook`` while Fluxion is imported: an uncaught error raised by an eager Fluxion
    call outside any transformation (``jnp.dot`` of unaligned shapes in a script) is printed
    without Fluxion's frames too, as the mode says; then the previous hook prints it."""
    if exc is not None and tb is not None and _mode() in ("quiet_remove_frames", "remove_frames"):
        try:
            exc.with_traceback(tb)
            _strip(exc)
            tb = exc.__traceback__
        except Exception:  # printing the error must never fail because of the filtering
            pass
    _previous_excepthook(exc_type, exc, tb)


_previous_excepthook = sys.excepthook
if sys.excepthook is sys.__excepthook__:  # never replace a hook someone else installed
    sys.excepthook = _excepthook


def api_boundary(fun: C) -> C:
    """Wrap ``fun`` so that an exception raised below it loses Fluxion's internal frames (see the
    module docstring); the outermost boundary on the stack does the filtering.

    Example:
        >>> @api_boundary
        ... def twice(f, x):
        ...     return f(f(x))
        >>> twice(lambda v: v + 1, 0)
        2
    """
    @functools.wraps(fun)
    def fluxion_api_boundary(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True  # noqa: F841 (read by pytest and IPython)
        try:
            return fun(*args, **kwargs)
        except Exception as e:
            filter_exception(e)
            raise
    return fluxion_api_boundary  # type: ignore[return-value]


register_boundary(api_boundary(lambda: None))

"""``jax._src.traceback_util`` (flax uses it): ``api_boundary`` and ``register_exclusion``.

``api_boundary`` is Fluxion's (the outermost boundary removes Fluxion's internal frames from an
exception's traceback, see :mod:`fluxion.core.tracebacks`). ``register_exclusion(path)`` records
``path`` in ``_exclude_paths`` as JAX does; Fluxion's filtering hides the frames of ``fluxion``
and ``fluxion_*`` packages only, so a library's own frames stay visible (listed in
docs/guide/coming-from-jax.md).

Example:
    >>> register_exclusion("/some/lib/")
    >>> "/some/lib/" in _exclude_paths
    True
"""

from __future__ import annotations

import os
import types
from typing import Any, Callable, TypeVar

from fluxion.core import tracebacks as _tracebacks
from fluxion.extend.source_info_util import _exclude_paths, register_exclusion

__all__ = ["api_boundary", "include_filename", "include_frame", "register_exclusion",
           "_exclude_paths"]

C = TypeVar("C", bound=Callable[..., Any])

def api_boundary(fun: C, *, repro_api_name: str | None = None,
                 repro_user_func: bool = False) -> C:
    """Fluxion's API boundary around ``fun`` (JAX's keyword arguments accepted and unused).

    Example:
        >>> api_boundary(abs)(-3)
        3
    """
    del repro_api_name, repro_user_func
    return _tracebacks.api_boundary(fun)


def _under(path: str, folder: str) -> bool:
    path, folder = os.path.abspath(path), os.path.abspath(folder)
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # different drives, or one relative path
        return False


def include_filename(filename: str) -> bool:
    """Whether a frame of source file ``filename`` belongs in a user-facing traceback: not one
    of Fluxion's (or a ``fluxion_*`` package's) files nor under a path given to
    :func:`register_exclusion` (equinox's ``error_if`` keeps these frames in its messages).

    Example:
        >>> include_filename("/home/me/train.py"), include_filename(api_boundary.__code__.co_filename)
        (True, False)
    """
    if _tracebacks.is_internal_file(os.path.abspath(filename)):
        return False
    return not any(_under(filename, path) for path in _exclude_paths)


def include_frame(frame: types.FrameType) -> bool:
    """:func:`include_filename` of the frame's source file.

    Example:
        >>> import sys
        >>> include_frame(sys._getframe())
        True
    """
    return include_filename(frame.f_code.co_filename)

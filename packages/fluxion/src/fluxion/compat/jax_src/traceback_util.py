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

from typing import Any, Callable, TypeVar

from fluxion.core import tracebacks as _tracebacks
from fluxion.extend.source_info_util import _exclude_paths, register_exclusion

__all__ = ["api_boundary", "register_exclusion", "_exclude_paths"]

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

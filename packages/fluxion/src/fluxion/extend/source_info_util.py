"""``fluxion.extend.source_info_util`` (JAX's ``jax.extend.source_info_util``): the name stack of
``named_scope`` and the library-path registry of traceback filtering.

``register_exclusion(path)`` records a library's source folder as JAX does; Fluxion's traceback
filtering hides the frames of the ``fluxion`` and ``fluxion_*`` packages only, so the library's
frames stay visible (see docs/guide/coming-from-jax.md).

Example:
    >>> import fluxion
    >>> with fluxion.named_scope("block"):
    ...     current_name_stack()
    'block'
"""

from __future__ import annotations

from fluxion.naming import current_name_stack

__all__ = ["current_name_stack", "register_exclusion", "_exclude_paths"]

_exclude_paths: list[str] = []


def register_exclusion(path: str) -> None:
    """Records ``path`` as a library's source folder (JAX hides its frames; see above).

    Example:
        >>> register_exclusion("/some/lib/")
        >>> "/some/lib/" in _exclude_paths
        True
    """
    _exclude_paths.append(path)

"""e3nn_jax's global defaults (``e3nn.config(name)`` reads one, ``config(name, value)`` sets it)."""

from __future__ import annotations

from typing import Any

__all__ = ["config"]

_DEFAULTS = {
    "irrep_normalization": "component",
    "path_normalization": "element",
    "gradient_normalization": "path",
    "spherical_harmonics_normalization": "component",
}
_current = dict(_DEFAULTS)


def config(name: str, value: Any = None) -> Any:
    """Reads (``value=None``) or sets one of e3nn's defaults: ``irrep_normalization``
    (``"component"``), ``path_normalization`` (``"element"``), ``gradient_normalization``
    (``"path"``) and ``spherical_harmonics_normalization`` (``"component"``).

    Example:
        >>> config("gradient_normalization")
        'path'
    """
    if name not in _current:
        raise ValueError(f"e3nn.config: unknown configuration option {name!r}; "
                         f"known: {sorted(_current)}")
    if value is None:
        return _current[name]
    _current[name] = value
    return None

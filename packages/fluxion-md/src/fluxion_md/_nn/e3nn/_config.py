"""e3nn_jax's global defaults (``e3nn.config(name)`` reads one, ``config(name, value)`` sets it)."""

from __future__ import annotations

from typing import Any

__all__ = ["config"]

_DEFAULTS = {
    "irrep_normalization": "component",
    "path_normalization": "element",
    "gradient_normalization": "path",
    "spherical_harmonics_normalization": "component",
    "spherical_harmonics_algorithm": "automatic",
    "custom_einsum_jvp": False,
    "fused": False,
    "sparse_tp": False,
}
_current = dict(_DEFAULTS)


def config(name: str, value: Any = None) -> Any:
    """Reads (``value=None``) or sets one of e3nn's defaults: ``irrep_normalization``
    (``"component"``), ``path_normalization`` (``"element"``), ``gradient_normalization``
    (``"path"``), ``spherical_harmonics_normalization`` (``"component"``), and the evaluation
    strategies ``spherical_harmonics_algorithm``, ``custom_einsum_jvp``, ``fused`` and
    ``sparse_tp`` (one strategy of each is computed here: the recursive spherical harmonics,
    and the block tensor product, which gives the fused and sparse products' values too).

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

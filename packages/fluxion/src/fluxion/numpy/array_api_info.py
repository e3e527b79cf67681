"""The Python array API's inspection namespace: ``fluxion.numpy.__array_namespace_info__()``.

Example:
    >>> import fluxion.numpy as jnp
    >>> info = jnp.__array_namespace_info__()
    >>> info.default_dtypes()["real floating"]
    dtype('float32')
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion.backend import client as _client
from fluxion.core import dtypes
from fluxion.core.config import config

__all__ = ["ArrayNamespaceInfo", "__array_namespace_info__", "__array_api_version__"]

__array_api_version__ = "2024.12"

_KINDS = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
}
_KINDS["integral"] = _KINDS["signed integer"] + _KINDS["unsigned integer"]
_KINDS["numeric"] = _KINDS["integral"] + _KINDS["real floating"] + _KINDS["complex floating"]
_WIDE = {"int64", "uint64", "float64", "complex128"}


class ArrayNamespaceInfo:
    """What the array API asks a library to describe: capabilities, devices and dtypes.

    Example:
        >>> import fluxion.numpy as jnp
        >>> sorted(jnp.__array_namespace_info__().dtypes(kind="bool"))
        ['bool']
    """

    def capabilities(self) -> dict[str, Any]:
        """Boolean indexing and data-dependent shapes are not available inside
        transformations; arrays have at most 64 dimensions (XLA's limit)."""
        return {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 64}

    def default_device(self) -> None:
        """``None``: new arrays are uncommitted, placed on the default device."""
        return None

    def devices(self) -> list[Any]:
        """``None`` (uncommitted) and every device of the default backend."""
        return [None, *_client.devices()]

    def default_dtypes(self, *, device: Any = None) -> dict[str, np.dtype]:
        """The default dtypes (32-bit unless 64-bit mode is on); the same on every device."""
        return {"real floating": dtypes.default_float_dtype(),
                "complex floating": dtypes.default_complex_dtype(),
                "integral": dtypes.default_int_dtype(),
                "indexing": dtypes.default_int_dtype()}

    def dtypes(self, *, device: Any = None, kind: str | tuple[str, ...] | None = None
               ) -> dict[str, np.dtype]:
        """The array API dtypes of ``kind`` (a kind name or a tuple of them; all when None);
        the 64-bit ones only in 64-bit mode."""
        kinds = ("numeric", "bool") if kind is None else (
            kind if isinstance(kind, tuple) else (kind,))
        out: dict[str, np.dtype] = {}
        for k in kinds:
            if k not in _KINDS:
                raise ValueError(f"dtypes: unknown kind {k!r}; expected one of {sorted(_KINDS)}")
            for name in _KINDS[k]:
                if name in _WIDE and not config.jax_enable_x64:
                    continue
                out[name] = np.dtype(name)
        return out


def __array_namespace_info__() -> ArrayNamespaceInfo:
    """The array API inspection namespace of ``fluxion.numpy``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.__array_namespace_info__().default_device() is None
        True
    """
    return ArrayNamespaceInfo()

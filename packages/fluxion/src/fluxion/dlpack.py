"""``fluxion.dlpack``: arrays from other libraries through the DLPack protocol (JAX's
``jax.dlpack``).

``from_dlpack(x)`` accepts any object with ``__dlpack__`` and ``__dlpack_device__`` (NumPy arrays,
PyTorch tensors, CuPy arrays, ...). On the CPU the memory is shared without a copy when it is
aligned as XLA needs (64 bytes) and copied otherwise; ``copy=True`` always copies. A Fluxion Array
exports itself the other way with ``__dlpack__`` (``np.from_dlpack(array)``, as a host copy).

Example:
    >>> import numpy as np
    >>> from fluxion.dlpack import from_dlpack
    >>> from_dlpack(np.arange(4, dtype=np.int32)).tolist()
    [0, 1, 2, 3]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion.backend.dlpack import import_dlpack
from fluxion.backend.transfer import device_put

__all__ = ["from_dlpack", "is_supported_dtype", "SUPPORTED_DTYPES"]

SUPPORTED_DTYPES = tuple(np.dtype(d) for d in (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
    "float32", "float64", "complex64", "complex128", "bool")) + (np.dtype("bfloat16"),)


def is_supported_dtype(dtype: Any) -> bool:
    """Whether arrays of ``dtype`` can be exchanged through DLPack.

    Example:
        >>> from fluxion.dlpack import is_supported_dtype
        >>> is_supported_dtype("float32"), is_supported_dtype("float8_e4m3fn")
        (True, False)
    """
    if dtype is None:
        raise TypeError(f"Expected a string or dtype-like object; got {dtype=}")
    return np.dtype(dtype) in SUPPORTED_DTYPES


def from_dlpack(external_array: Any, device: Any = None, copy: bool | None = None) -> Any:
    """An Array with the contents of ``external_array`` (shared where possible, see the module
    docstring), placed on ``device`` (a Device or Sharding) when given.

    Example:
        >>> import numpy as np
        >>> from fluxion.dlpack import from_dlpack
        >>> from_dlpack(np.ones((2, 2), np.float32)).shape
        (2, 2)
    """
    out = import_dlpack(external_array, copy)
    return out if device is None else device_put(out, device)

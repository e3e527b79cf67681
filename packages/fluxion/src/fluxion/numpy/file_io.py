"""Saving and loading arrays in NumPy's ``.npy``/``.npz`` formats, as ``jax.numpy`` does.

``save`` and ``savez`` are NumPy's own functions (a Fluxion array converts to a host array on
the way, as JAX's does). ``load`` reads with :func:`numpy.load` and gives a ``.npy`` file's
array back as a Fluxion array, restoring ``bfloat16`` (which NumPy writes as the two-byte void
type ``V2``); an ``.npz`` archive comes back as NumPy's lazy mapping of host arrays. ``fromfile``
is refused, as in JAX: reading a file is a side effect that ``jit`` would not repeat.

Example:
    >>> import io
    >>> import fluxion.numpy as jnp
    >>> f = io.BytesIO()
    >>> jnp.save(f, jnp.array([1.5, 2.0], dtype=jnp.bfloat16))
    >>> _ = f.seek(0)
    >>> jnp.load(f)
    Array([1.5, 2], dtype=bfloat16)
"""

from __future__ import annotations

import os
from typing import IO, Any

import ml_dtypes
import numpy as np
from numpy import save, savez  # JAX exports NumPy's writers under these names

from fluxion.numpy.creation import asarray


def load(file: IO[bytes] | str | os.PathLike[Any], *args: Any, **kwargs: Any) -> Any:
    """Read arrays written by :func:`save` or :func:`numpy.save` (the further arguments are
    :func:`numpy.load`'s). A ``.npy`` file gives a Fluxion array (``bfloat16`` restored from
    NumPy's ``V2``; a dtype Fluxion cannot hold stays a NumPy array); an ``.npz`` file gives
    NumPy's mapping of host arrays.

    Example:
        >>> import io
        >>> import fluxion.numpy as jnp
        >>> f = io.BytesIO()
        >>> jnp.save(f, jnp.arange(3))
        >>> _ = f.seek(0)
        >>> jnp.load(f)
        Array([0, 1, 2], dtype=int32)
    """
    out = np.load(file, *args, **kwargs)
    if not isinstance(out, np.ndarray):
        return out
    if out.dtype == np.dtype("V2"):
        out = out.view(ml_dtypes.bfloat16)
    try:
        return asarray(out)
    except (TypeError, AssertionError):  # a dtype no Fluxion array holds (strings, objects)
        return out


def fromfile(*args: Any, **kwargs: Any) -> Any:
    """Not provided, as in JAX: reading a file is impure, so under ``jit`` it would run once at
    tracing and the file's later contents would be ignored. Read it with NumPy and convert:
    ``jnp.asarray(np.fromfile(...))``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> try:
        ...     jnp.fromfile("data.bin")
        ... except NotImplementedError as e:
        ...     print(str(e)[:45])
        jnp.fromfile() is not implemented because it
    """
    raise NotImplementedError(
        "jnp.fromfile() is not implemented because it may be non-pure and thus unsafe for use "
        "with JIT and other JAX transformations. Consider using jnp.asarray(np.fromfile(...)) "
        "instead, although care should be taken if np.fromfile is used within a jax "
        "transformation because of its potential side-effect of consuming the file object.")


__all__ = ["fromfile", "load", "save", "savez"]

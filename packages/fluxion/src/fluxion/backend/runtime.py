"""Process-wide runtime services: dropping every cache (``clear_caches``) and listing the
arrays alive on a backend (``live_arrays``).

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> x = jnp.arange(3.0)
    >>> any(a is x or a.unsafe_buffer_pointer() == x.unsafe_buffer_pointer()
    ...     for a in fluxion.live_arrays())
    True
"""

from __future__ import annotations

from fluxion.backend import client as _client
from fluxion.backend import dispatch as _dispatch
from fluxion.backend import jit as _jit
from fluxion.backend.array import Array, Spec

__all__ = ["clear_caches", "live_arrays", "jaxlib_version"]


def clear_caches() -> None:
    """Drop every compiled executable, every jitted function's traces and the cached device
    constants (the next call of each function traces and compiles again).

    Example:
        >>> import fluxion
        >>> fluxion.clear_caches()
    """
    _dispatch.clear_caches()
    for jitted in list(_jit._ALL):
        jitted.clear()


def live_arrays(platform: str | None = None) -> list[Array]:
    """The Arrays currently alive on ``platform``'s devices (the default backend's by default),
    including ones Fluxion keeps internally (cached constants).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> x = jnp.ones(4)
        >>> any(a.shape == (4,) for a in fluxion.live_arrays())
        True
    """
    out = []
    for impl in _client.get_client(platform).live_arrays():
        spec = getattr(impl, "aval", None)
        if isinstance(spec, Spec):  # made by Fluxion (jaxlib holds our Spec as its aval)
            out.append(_dispatch._wrap(impl, spec))
    return out


def jaxlib_version() -> str:
    """The version of the installed jaxlib (the compiler and runtime Fluxion drives).

    Example:
        >>> from fluxion.backend.runtime import jaxlib_version
        >>> jaxlib_version().count(".") >= 2
        True
    """
    import jaxlib.version

    return jaxlib.version.__version__

"""jaxlib's LAPACK kernels on CPU: registration of the ``lapack_*_ffi`` custom-call targets.

The kernels live in ``jaxlib.cpu._lapack``. Registering them is not enough: their function table
is filled by ``_lapack.initialize()`` (from SciPy's LAPACK), and executing a registered but
uninitialised target crashes the process. :func:`ensure_lapack` does both, once, and is called
by every ``fluxion.lax.linalg`` lowering rule and by ``dispatch.compile_text`` for any module
text that mentions a LAPACK target (so a cached or hand-written module cannot skip it).

jaxlib is imported on the first call only: ``import fluxion`` does not import it.

Example:
    >>> from fluxion.backend import lapack
    >>> lapack.ensure_lapack()
    >>> lapack.target_name("potrf", "float32")
    'lapack_spotrf_ffi'
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from fluxion.backend import client as _client

__all__ = ["ensure_lapack", "target_name", "needs_lapack", "check_platform", "LAPACK_DTYPES"]

_lock = threading.Lock()
_ready = False

LAPACK_DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64),
                 np.dtype(np.complex128))
_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d", np.dtype(np.complex64): "c",
           np.dtype(np.complex128): "z"}


def ensure_lapack() -> None:
    """Register jaxlib's CPU LAPACK custom-call targets with XLA and initialise their kernel table
    (once per process; later calls return at once)."""
    global _ready
    if _ready:
        return
    with _lock:
        if _ready:
            return
        xc = _client.xc()
        # reason: jaxlib's LAPACK kernels load with their first use, not with ``import fluxion``
        from jaxlib import lapack as _jl_lapack
        from jaxlib.cpu import _lapack
        for name, fn, api_version in _jl_lapack.registrations()["cpu"]:
            xc.register_custom_call_target(name, fn, platform="cpu", api_version=api_version)
        # Without this the registered kernels hold null function pointers (a segfault at execute).
        _lapack.initialize()
        _ready = True


def needs_lapack(text: str) -> bool:
    """Whether StableHLO module ``text`` calls a LAPACK target (so :func:`ensure_lapack` must run
    before it is compiled or deserialized)."""
    return "lapack_" in text or "tridiagonal_solve_perturbed_ffi" in text


def target_name(routine: str, dtype: Any) -> str:
    """The FFI target of LAPACK ``routine`` (``"potrf"``, ``"syevd"`` ...) for ``dtype``."""
    dt = np.dtype(dtype)
    p = _PREFIX.get(dt)
    if p is None:
        raise NotImplementedError(f"LAPACK {routine} has no kernel for dtype {dt.name}; it supports "
                                  "float32, float64, complex64 and complex128")
    return f"lapack_{p}{routine}_ffi"


def check_platform(platform: str, op: str) -> None:
    """Raise a clear NotImplementedError when ``op`` (a LAPACK-backed primitive) is lowered for a
    platform other than CPU."""
    if platform != "cpu":
        raise NotImplementedError(
            f"{op} is only implemented on CPU in Fluxion (it lowers to jaxlib's LAPACK custom "
            f"calls); it cannot be lowered for platform {platform!r}")

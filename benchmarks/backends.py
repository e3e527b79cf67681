"""A uniform, lazily imported handle on each benchmarked backend.

Workload modules call :func:`load` inside their factories (never at import time), so the runner
can read a workload's metadata without importing any backend, and each worker subprocess imports
only the backend it times.

Example:
    >>> from benchmarks import backends
    >>> b = backends.load("numpy")
    >>> b.block(b.asarray([1.0, 2.0]) + 1.0).tolist()
    [2.0, 3.0]
"""

from __future__ import annotations

import atexit
import dataclasses
import importlib
import importlib.util
import os
import shutil
import tempfile
from typing import Any, Callable

__all__ = ["Backend", "KNOWN", "ALWAYS", "OPTIONAL", "load", "is_installed", "backend_of"]

#: Backends that are always run (an import failure is recorded, never fatal).
ALWAYS: tuple[str, ...] = ("numpy", "fluxion", "jax")
#: Backends run only when importable; the suite never installs them.
OPTIONAL: tuple[str, ...] = ("numba", "torch")
KNOWN: tuple[str, ...] = ALWAYS + OPTIONAL
#: Set to ``"single"`` by the runner in single-thread mode: torch then runs with one intra-op
#: and one inter-op thread (``torch.set_num_threads(1)``).
THREADS_ENV = "FLUXION_BENCH_THREADS"
#: ``"cold"`` (set by the runner unless ``--compile-cache``): torch.compile gets a fresh,
#: temporary inductor cache in each worker process.
TORCH_CACHE_ENV = "FLUXION_BENCH_TORCH_CACHE"


@dataclasses.dataclass(frozen=True)
class Backend:
    """What a workload needs from a backend.

    Attributes:
        name: the backend's name (``"jax"``).
        module: the imported top-level module (``jax``), for anything backend-specific.
        np: its NumPy-like array namespace (``jax.numpy``; ``numpy`` for numpy and numba).
        asarray: turns a NumPy array into a backend array (on the backend's default device).
        block: waits until a result is ready and returns it (identity when execution is eager).
        jit: the backend's compiler decorator, or ``None`` when it has none.
        version: the backend's ``__version__`` (``None`` if it has none).
    """

    name: str
    module: Any
    np: Any
    asarray: Callable[[Any], Any]
    block: Callable[[Any], Any]
    jit: Callable[..., Any] | None
    version: str | None


def _identity(x: Any) -> Any:
    return x


def _block_until_ready(x: Any) -> Any:
    return x.block_until_ready()


def backend_of(variant: str) -> str:
    """The backend a variant runs on: the part of its name before the first ``-``.

    Example:
        >>> backend_of("fluxion-jit"), backend_of("numpy")
        ('fluxion', 'numpy')
    """
    return variant.split("-", 1)[0]


def is_installed(name: str) -> bool:
    """Whether backend ``name``'s top-level module can be found, without importing it.

    Example:
        >>> is_installed("numpy")
        True
    """
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def load(name: str) -> Backend:
    """Import backend ``name`` and return its :class:`Backend` handle.

    Raises whatever the import raises (the worker records it), or ``ValueError`` for an
    unknown name.

    Example:
        >>> load("numpy").name
        'numpy'
    """
    if name == "numpy":
        import numpy

        return Backend("numpy", numpy, numpy, numpy.asarray, _identity, None, numpy.__version__)
    if name in ("jax", "fluxion"):
        mod = importlib.import_module(name)
        xnp = importlib.import_module(name + ".numpy")
        return Backend(name, mod, xnp, xnp.asarray, _block_until_ready, mod.jit,
                       getattr(mod, "__version__", None))
    if name == "numba":
        import numba
        import numpy

        return Backend("numba", numba, numpy, numpy.asarray, _identity, numba.njit,
                       numba.__version__)
    if name == "torch":
        if os.environ.get(TORCH_CACHE_ENV) == "cold":
            # a fresh inductor cache for this process, so torch.compile's first call is cold
            # like jax's and fluxion's (a directory given by the runner is used as it is)
            cache = tempfile.mkdtemp(prefix="bench-torchinductor-")
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
            atexit.register(shutil.rmtree, cache, True)
        import torch

        if os.environ.get(THREADS_ENV) == "single":
            torch.set_num_threads(1)
            try:
                torch.set_num_interop_threads(1)
            except RuntimeError:   # already set, or parallel work already started
                pass

        def asarray(x: Any) -> Any:
            return torch.from_numpy(x.copy()) if hasattr(x, "dtype") else torch.as_tensor(x)

        return Backend("torch", torch, torch, asarray, _identity, None, torch.__version__)
    raise ValueError(f"unknown backend {name!r}; known: {', '.join(KNOWN)}")

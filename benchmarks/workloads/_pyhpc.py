"""What the three pyhpc-style workloads share: sizes, backend setup, the check against NumPy.

Each ``pyhpc_*`` workload times one kernel of :mod:`benchmarks.kernels` at problem sizes
2^12 ... 2^22 elements, float64. Per backend:

``numpy``    the kernel over ``numpy`` (the reference: every other backend's output is compared
             with it, on the same inputs, before any timing; a mismatch makes that case an
             error record instead of a timing).
``jax`` / ``fluxion``  ``jit`` of the same kernel over ``jax.numpy`` / ``fluxion.numpy``, x64
             enabled in the worker, inputs placed on the default device beforehand.
``numba``    the kernel's numba version, where one exists.
``torch``    the same kernel source over torch tensors (:mod:`benchmarks.kernels._torchnp`),
             eager; ``torch-compile`` the same under ``torch.compile(dynamic=False)`` (its
             first call is dynamo + inductor's C++ compile; a compile failure is that variant's
             error record).

Phases: ``total`` is the steady-state time of one call (warm-up excluded), ``first_call`` the
first call of a fresh ``jit`` in a fresh process (trace + compile + run; for numba its JIT
compile; for numpy and torch simply the first call). The worker reads ``first_call`` from the
callable's ``first_call_s`` attribute, set here.

Example:
    >>> size_label(4096), size_label(5000)
    ('2^12', '5000')
"""

from __future__ import annotations

import importlib
import time
from typing import Any, Callable, Sequence

import numpy as np

from benchmarks import backends

__all__ = ["SIZES", "QUICK_SIZES", "PHASES", "size_label", "setup_kernel", "compare"]

SIZES = tuple(2 ** n for n in range(12, 23, 2))          # 4096 ... 4194304
QUICK_SIZES = (2 ** 12, 2 ** 16)
PHASES = ("total", "first_call")
DEFAULT_REPS = 10
QUICK_REPS = 3


def size_label(size: int) -> str:
    """``4096 -> "2^12"``; other sizes as they are."""
    size = int(size)
    n = size.bit_length() - 1
    return f"2^{n}" if size > 0 and 1 << n == size else str(size)


def compare(name: str, variant: str, got: Sequence[Any], ref: Sequence[np.ndarray],
            output_names: Sequence[str], rtol: float = 1e-8) -> None:
    """Raise ``AssertionError`` unless every output matches the NumPy reference: same shape,
    float64, and ``|got - ref| <= rtol * (|ref| + max|ref|)`` elementwise."""
    for label, g, r in zip(output_names, got, ref):
        g = np.asarray(g)
        if g.shape != r.shape or g.dtype != r.dtype:
            raise AssertionError(f"{name}/{variant}: output {label} is {g.dtype}{list(g.shape)}, "
                                 f"numpy gives {r.dtype}{list(r.shape)}")
        scale = float(np.max(np.abs(r))) if r.size else 0.0
        err = np.abs(g - r)
        bad = err > rtol * (np.abs(r) + scale)
        finite = np.isfinite(g) == np.isfinite(r)
        if np.any(bad) or not np.all(finite):
            raise AssertionError(f"{name}/{variant}: output {label} differs from numpy: max abs "
                                 f"error {float(np.nanmax(err)):.3g} (scale {scale:.3g}, "
                                 f"{int(np.sum(bad))} elements beyond rtol {rtol:g}, "
                                 f"{int(np.sum(~finite))} finite in one and not the other)")


def _as_tuple(x: Any) -> tuple[Any, ...]:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def setup_kernel(name: str, variant: str, size: int, *,
                 make_inputs: Callable[[int], tuple[np.ndarray, ...]],
                 numpy_fn: Callable[..., Any],
                 xla_fn: Callable[[Any, Any], Callable[..., Any]],
                 output_names: Sequence[str],
                 numba_fn: Callable[[Any], Callable[..., Any]] | None = None,
                 torch_fn: Callable[[Any], Callable[..., Any]] | None = None,
                 rtol: float = 1e-8) -> Callable[[], Any]:
    """Build, run once (timed as ``first_call_s``), check against NumPy, and return the
    zero-argument steady-state callable of ``variant`` at ``size``.

    ``xla_fn(xnp, lax)`` returns the function to ``jit`` for jax/fluxion; ``numba_fn(numba)``
    returns a callable on NumPy arrays, ``torch_fn(tnp)`` one on torch tensors given the
    NumPy-like namespace ``tnp`` over torch (variants ``torch`` and ``torch-compile``).
    """
    host = make_inputs(size)
    backend = backends.backend_of(variant)
    if backend == "numpy":
        fn: Callable[[], Any] = lambda: numpy_fn(*host)
        to_host: Callable[[Any], tuple[Any, ...]] = _as_tuple
    elif backend in ("jax", "fluxion"):
        b = backends.load(backend)
        b.module.config.update("jax_enable_x64", True)   # this worker process only
        lax = importlib.import_module(backend + ".lax")
        args = [b.module.device_put(v) for v in host]
        compiled = b.jit(xla_fn(b.np, lax))
        ready = b.module.block_until_ready
        fn = lambda: ready(compiled(*args))
        to_host = lambda out: tuple(np.asarray(o) for o in _as_tuple(out))
    elif backend == "numba":
        if numba_fn is None:
            raise ValueError(f"{name}: no numba version of this kernel")
        run = numba_fn(backends.load("numba").module)
        fn = lambda: run(*host)
        to_host = _as_tuple
    elif backend == "torch":
        if torch_fn is None:
            raise ValueError(f"{name}: no torch version of this kernel")
        torch = backends.load("torch").module
        from benchmarks.kernels import _torchnp

        targs = [torch.from_numpy(v.copy()) for v in host]
        run = torch_fn(_torchnp.namespace(torch))
        if variant == "torch-compile":
            # specialised to this size (dynamic=False), like jit; a failure to compile (no C++
            # compiler, an unsupported op) raises here or at the first call below, and the
            # worker records it as this variant's error
            run = torch.compile(run, dynamic=False)
        elif variant != "torch":
            raise ValueError(f"{name}: unknown variant {variant!r}")
        fn = lambda: run(*targs)
        to_host = lambda out: tuple(o.detach().cpu().numpy() for o in _as_tuple(out))
    else:
        raise ValueError(f"{name}: unknown variant {variant!r}")
    t0 = time.perf_counter()
    out = fn()
    first = time.perf_counter() - t0
    if backend != "numpy":
        compare(name, variant, to_host(out), _as_tuple(numpy_fn(*host)), output_names, rtol)

    def steady() -> Any:
        return fn()

    steady.first_call_s = first  # type: ignore[attr-defined]
    return steady

"""pyhpc turbulent kinetic energy: one TKE step (a tridiagonal solve per column, horizontal
diffusion, superbee advection), float64 (see :mod:`benchmarks.kernels.tke`)."""

from __future__ import annotations

from typing import Any, Callable

from benchmarks.kernels import tke
from benchmarks.workloads import _pyhpc

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "QUICK_SIZES", "PHASES", "setup",
           "size_label"]

NAME = "pyhpc_tke"
DESCRIPTION = ("TKE step: implicit vertical solve per column (jax/fluxion: two lax.scan), "
               "horizontal diffusion, superbee advection; float64, 2^12..2^22 cells")
VARIANTS = ("numpy", "jax", "fluxion", "numba", "torch", "torch-compile")
SIZES = _pyhpc.SIZES
QUICK_SIZES = _pyhpc.QUICK_SIZES
PHASES = _pyhpc.PHASES
DEFAULT_REPS = _pyhpc.DEFAULT_REPS
QUICK_REPS = _pyhpc.QUICK_REPS
size_label = _pyhpc.size_label


def setup(variant: str, size: int) -> Callable[[], Any]:
    """The steady-state call of ``variant`` on a grid of about ``size`` cells (checked
    against numpy)."""
    import numpy as np

    return _pyhpc.setup_kernel(
        NAME, variant, size, make_inputs=tke.make_inputs,
        numpy_fn=lambda *a: tke.kernel(np, tke.solve_numpy, *a),
        xla_fn=lambda xnp, lax: (lambda *a: tke.kernel(xnp, tke.make_solve_scan(xnp, lax), *a)),
        output_names=tke.OUTPUTS, rtol=1e-8,
        numba_fn=tke.numba_kernel,
        torch_fn=lambda tnp: (lambda *a: tke.kernel(tnp, tke.make_solve_unrolled(tnp), *a)))

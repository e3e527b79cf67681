"""pyhpc isoneutral mixing: triad slopes and diffusivities of neutral surfaces on a 3-D
staggered grid (5-D outputs), float64 (see :mod:`benchmarks.kernels.isoneutral`)."""

from __future__ import annotations

from typing import Any, Callable

from benchmarks.kernels import isoneutral
from benchmarks.workloads import _pyhpc

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "QUICK_SIZES", "PHASES", "setup",
           "size_label"]

NAME = "pyhpc_isoneutral"
DESCRIPTION = ("isoneutral mixing tensor (3-D stencils, 2x2 triads per face, 5-D outputs), "
               "float64, 2^12..2^22 cells; total = steady call, first_call = trace+compile+run")
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
        NAME, variant, size, make_inputs=isoneutral.make_inputs,
        numpy_fn=lambda *a: isoneutral.kernel(np, *a),
        xla_fn=lambda xnp, lax: (lambda *a: isoneutral.kernel(xnp, *a)),
        output_names=isoneutral.OUTPUTS,
        numba_fn=isoneutral.numba_kernel,
        torch_fn=lambda tnp: (lambda *a: isoneutral.kernel(tnp, *a)))

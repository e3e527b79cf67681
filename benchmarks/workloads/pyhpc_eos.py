"""pyhpc equation of state: d(specific enthalpy)/d(Conservative Temperature) of seawater from
the TEOS-10 75-term polynomial, elementwise, float64 (see :mod:`benchmarks.kernels.eos`)."""

from __future__ import annotations

from typing import Any, Callable

from benchmarks.kernels import eos
from benchmarks.workloads import _pyhpc

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "QUICK_SIZES", "PHASES", "setup",
           "size_label"]

NAME = "pyhpc_eos"
DESCRIPTION = ("seawater dh/dCT from the TEOS-10 75-term polynomial (~100 flops/element), "
               "float64, 2^12..2^22 elements; total = steady call, first_call = trace+compile+run")
VARIANTS = ("numpy", "jax", "fluxion", "numba", "torch", "torch-compile")
SIZES = _pyhpc.SIZES
QUICK_SIZES = _pyhpc.QUICK_SIZES
PHASES = _pyhpc.PHASES
DEFAULT_REPS = _pyhpc.DEFAULT_REPS
QUICK_REPS = _pyhpc.QUICK_REPS
size_label = _pyhpc.size_label


def setup(variant: str, size: int) -> Callable[[], Any]:
    """The steady-state call of ``variant`` at ``size`` elements (checked against numpy)."""
    import numpy as np

    return _pyhpc.setup_kernel(
        NAME, variant, size, make_inputs=eos.make_inputs,
        numpy_fn=lambda *a: eos.kernel(np, *a),
        xla_fn=lambda xnp, lax: (lambda *a: eos.kernel(xnp, *a)),
        output_names=("dhdct",),
        numba_fn=eos.numba_kernel,
        torch_fn=lambda tnp: (lambda *a: eos.kernel(tnp, *a)))

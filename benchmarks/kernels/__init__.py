"""The pyhpc-style kernels of the benchmark suite, written once against an array module.

Each kernel module exposes ``make_inputs(size, seed)`` (NumPy float64 arrays), ``kernel(xnp, ...)``
(the computation over a NumPy-like namespace: ``numpy``, ``jax.numpy``, ``fluxion.numpy``) and,
where practical, a numba version. The workloads ``pyhpc_*`` time them and check every backend's
result against the NumPy run before timing.

Example:
    >>> import numpy as np
    >>> from benchmarks.kernels import eos
    >>> sa, ct, p = eos.make_inputs(8)
    >>> eos.kernel(np, sa, ct, p).shape
    (8,)
"""

__all__ = ["eos", "isoneutral", "tke"]

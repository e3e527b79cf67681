"""Sparse (matrix-free) linear algebra (mirrors ``jax.scipy.sparse``).

Example:
    >>> from fluxion_scipy.sparse import linalg
    >>> callable(linalg.cg)
    True
"""

from __future__ import annotations

from fluxion_scipy.sparse import linalg

__all__ = ["linalg"]

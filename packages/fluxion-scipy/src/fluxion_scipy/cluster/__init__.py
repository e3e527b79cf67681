"""Clustering (mirrors ``jax.scipy.cluster``).

Example:
    >>> from fluxion_scipy.cluster import vq
    >>> callable(vq.vq)
    True
"""

from __future__ import annotations

from fluxion_scipy.cluster import vq

__all__ = ["vq"]

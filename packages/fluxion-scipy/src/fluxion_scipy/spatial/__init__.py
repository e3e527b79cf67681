"""Spatial algorithms (mirrors ``jax.scipy.spatial``): rotations in ``transform``.

Example:
    >>> from fluxion_scipy.spatial import transform
    >>> transform.Rotation.identity().as_quat().tolist()
    [0.0, 0.0, 0.0, 1.0]
"""

from __future__ import annotations

from fluxion_scipy.spatial import transform

__all__ = ["transform"]

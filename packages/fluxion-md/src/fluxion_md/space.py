"""Spaces: pairs ``(displacement_fn, shift_fn)`` describing where particles live (mirrors ``jax_md.space``).

``displacement_fn(Ra, Rb, **kwargs)`` takes two ``[spatial_dim]`` vectors and returns their
displacement; ``shift_fn(R, dR, **kwargs)`` moves positions ``R`` by ``dR``. The ``map_*`` helpers
vectorise a displacement or metric over all pairs, over bonds, or over neighbourhoods.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as onp

import fluxion
import fluxion.numpy as jnp
from fluxion import vmap
from fluxion_md.util import Array, f32, host_value, safe_mask

__all__ = [
    "DisplacementFn", "MetricFn", "DisplacementOrMetricFn", "ShiftFn", "Space", "Box",
    "UnexpectedBoxException", "inverse", "raw_transform", "transform", "pairwise_displacement",
    "periodic_displacement", "square_distance", "distance", "periodic_shift", "free", "periodic",
    "periodic_general", "metric", "map_product", "map_bond", "map_neighbor",
    "canonicalize_displacement_or_metric",
]

DisplacementFn = Callable[..., Array]
MetricFn = Callable[..., Array]
DisplacementOrMetricFn = Callable[..., Array]
ShiftFn = Callable[..., Array]
Space = tuple[DisplacementFn, ShiftFn]
Box = Any


class UnexpectedBoxException(Exception):
    """Raised when a ``box=`` keyword reaches a space that has a fixed box (``periodic``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import space
        >>> displacement, shift = space.periodic(10.0)
        >>> try:
        ...     displacement(jnp.zeros(2), jnp.ones(2), box=5.0)
        ... except space.UnexpectedBoxException as e:
        ...     print(type(e).__name__)
        UnexpectedBoxException
    """


def _box_ndim(box: Any) -> int:
    box = jnp.asarray(box)
    return 0 if box.size == 1 else box.ndim


def inverse(box: Box) -> Box:
    """The inverse of the affine map ``box`` (scalar, per-axis vector, or matrix).

    Example:
        >>> float(inverse(jnp.array(2.0)))
        0.5
    """
    box = jnp.asarray(box)
    ndim = _box_ndim(box)
    if ndim in (0, 1):
        return 1 / box
    if ndim == 2:
        return jnp.linalg.inv(box)
    raise ValueError(f"inverse: box must be a scalar, a vector or a matrix; got shape {box.shape}.")


def raw_transform(box: Box, R: Array) -> Array:
    """Apply the affine map ``box`` to positions ``R`` of shape ``(..., spatial_dim)``.

    Example:
        >>> raw_transform(jnp.array([1.0, 2.0]), jnp.ones((3, 2))).shape
        (3, 2)
    """
    box = jnp.asarray(box)
    ndim = _box_ndim(box)
    if ndim == 0:
        return R * box
    if ndim == 1:
        return R * box
    if ndim == 2:
        return jnp.einsum("ij,...j->...i", box, R)
    raise ValueError(
        f"raw_transform: box must be a scalar, a vector or a matrix; got shape {box.shape}.")


@fluxion.custom_jvp
def transform(box: Box, R: Array) -> Array:
    """Like :func:`raw_transform`, but gradients with respect to ``R`` stay in real space.

    So ``grad(energy)(R_fractional)`` gives real-space forces (as in jax_md).

    Example:
        >>> transform(jnp.array(2.0), jnp.ones(3)).tolist()
        [2.0, 2.0, 2.0]
    """
    return raw_transform(box, R)


@transform.defjvp
def _transform_jvp(primals: Any, tangents: Any) -> Any:
    box, R = primals
    dbox, dR = tangents
    return transform(box, R), dR + transform(dbox, R)


def pairwise_displacement(Ra: Array, Rb: Array) -> Array:
    """``Ra - Rb`` for two vectors of the same ``[spatial_dim]`` shape.

    Example:
        >>> pairwise_displacement(jnp.ones(2), jnp.zeros(2)).tolist()
        [1.0, 1.0]
    """
    if len(Ra.shape) != 1:
        raise ValueError("pairwise_displacement: Ra and Rb must be vectors of shape [spatial_dim]; "
                         f"got Ra.shape={Ra.shape}. Use space.map_product / map_bond for sets.")
    if Ra.shape != Rb.shape:
        raise ValueError("pairwise_displacement: Ra and Rb must have equal shapes; "
                         f"got {Ra.shape} and {Rb.shape}.")
    return Ra - Rb


def periodic_displacement(side: Box, dR: Array) -> Array:
    """Wrap displacements ``dR`` into ``[-side/2, side/2)`` (minimum image).

    Example:
        >>> periodic_displacement(1.0, jnp.array([0.75])).tolist()
        [-0.25]
    """
    return jnp.mod(dR + side * f32(0.5), side) - f32(0.5) * side


def square_distance(dR: Array) -> Array:
    """Squared norms of displacements ``dR`` along the last axis.

    Example:
        >>> float(square_distance(jnp.array([3.0, 4.0])))
        25.0
    """
    return jnp.sum(dR ** 2, axis=-1)


def distance(dR: Array) -> Array:
    """Norms of displacements ``dR`` (zero distance has a zero, not NaN, gradient).

    Example:
        >>> float(distance(jnp.array([3.0, 4.0])))
        5.0
    """
    dr = square_distance(dR)
    return safe_mask(dr > 0, jnp.sqrt, dr)


def periodic_shift(side: Box, R: Array, dR: Array) -> Array:
    """Move ``R`` by ``dR`` and wrap back into ``[0, side)``.

    Example:
        >>> periodic_shift(1.0, jnp.array([0.9]), jnp.array([0.2])).round(6).tolist()
        [0.1]
    """
    return jnp.mod(R + dR, side)


def free() -> Space:
    """Free (open) boundary conditions: ``(displacement_fn, shift_fn)``.

    Example:
        >>> displacement, shift = free()
        >>> displacement(jnp.ones(2), jnp.zeros(2)).tolist()
        [1.0, 1.0]
    """
    def displacement_fn(Ra: Array, Rb: Array, perturbation: Array | None = None,
                        **unused_kwargs: Any) -> Array:
        dR = pairwise_displacement(Ra, Rb)
        if perturbation is not None:
            dR = raw_transform(perturbation, dR)
        return dR

    def shift_fn(R: Array, dR: Array, **unused_kwargs: Any) -> Array:
        return R + dR

    return displacement_fn, shift_fn


def _check_side(fn_name: str, side: Any) -> None:
    # a box traced by jit, vmap or grad (a strain derivative) is not checked, as jax_md checks
    # none; a NumPy read of a grad tracer would raise
    value = host_value(side) if isinstance(side, (int, float)) or hasattr(side, "shape") else None
    if value is not None and onp.any(value <= 0):
        raise ValueError(f"{fn_name}: box must be positive; got box={value!r}.")


def periodic(side: Box, wrapped: bool = True) -> Space:
    """Periodic boundaries on an orthorhombic box of side(s) ``side``.

    Example:
        >>> displacement, shift = periodic(10.0)
        >>> displacement(jnp.array([9.0]), jnp.array([1.0])).tolist()
        [-2.0]
    """
    _check_side("space.periodic", side)

    def _reject_box(kwargs: dict) -> None:
        if "box" in kwargs:
            raise UnexpectedBoxException(
                "space.periodic does not accept a box argument; use space.periodic_general.")

    def displacement_fn(Ra: Array, Rb: Array, perturbation: Array | None = None,
                        **unused_kwargs: Any) -> Array:
        _reject_box(unused_kwargs)
        dR = periodic_displacement(side, pairwise_displacement(Ra, Rb))
        if perturbation is not None:
            dR = raw_transform(perturbation, dR)
        return dR

    def shift_fn(R: Array, dR: Array, **unused_kwargs: Any) -> Array:
        _reject_box(unused_kwargs)
        return periodic_shift(side, R, dR) if wrapped else R + dR

    return displacement_fn, shift_fn


def periodic_general(box: Box, fractional_coordinates: bool = True,
                     wrapped: bool = True) -> Space:
    """Periodic boundaries on the parallelepiped ``box @ [0, 1]^d`` (triclinic allowed).

    With ``fractional_coordinates=True`` positions live in the unit cube and displacements (and
    shifts ``dR``) in real space; otherwise positions are real. ``box=`` (or ``new_box=``) keyword
    arguments deform the cell per call.

    Example:
        >>> displacement, shift = periodic_general(jnp.eye(2) * 4.0)
        >>> displacement(jnp.array([0.9, 0.5]), jnp.array([0.1, 0.5])).round(6).tolist()
        [-0.8, 0.0]
    """
    if _box_ndim(box) == 0 or _box_ndim(box) == 1:
        _check_side("space.periodic_general", box)
    inv_box = inverse(box)

    def displacement_fn(Ra: Array, Rb: Array, perturbation: Array | None = None,
                        **kwargs: Any) -> Array:
        _box, _inv_box = box, inv_box
        if "box" in kwargs:
            _box = kwargs["box"]
            if not fractional_coordinates:
                _inv_box = inverse(_box)
        if "new_box" in kwargs:
            _box = kwargs["new_box"]
        if not fractional_coordinates:
            Ra = transform(_inv_box, Ra)
            Rb = transform(_inv_box, Rb)
        dR = periodic_displacement(f32(1.0), pairwise_displacement(Ra, Rb))
        dR = transform(_box, dR)
        if perturbation is not None:
            dR = raw_transform(perturbation, dR)
        return dR

    def shift_fn(R: Array, dR: Array, **kwargs: Any) -> Array:
        if not fractional_coordinates and not wrapped:
            return R + dR
        _box, _inv_box = box, inv_box
        if "box" in kwargs:
            _box = kwargs["box"]
            _inv_box = inverse(_box)
        if "new_box" in kwargs:
            _box = kwargs["new_box"]
        dR = transform(_inv_box, dR)
        if not fractional_coordinates:
            R = transform(_inv_box, R)
        R = periodic_shift(f32(1.0), R, dR) if wrapped else R + dR
        if not fractional_coordinates:
            R = transform(_box, R)
        return R

    return displacement_fn, shift_fn


def metric(displacement: DisplacementFn) -> MetricFn:
    """The metric (distance function) of a displacement function.

    Example:
        >>> float(metric(free()[0])(jnp.array([3.0, 4.0]), jnp.zeros(2)))
        5.0
    """
    return lambda Ra, Rb, **kwargs: distance(displacement(Ra, Rb, **kwargs))


def map_product(metric_or_displacement: DisplacementOrMetricFn) -> DisplacementOrMetricFn:
    """Vectorise over all pairs: ``f(Ra [n, d], Rb [m, d]) -> [m, n, ...]`` (out[j, i] = f(Ra[i], Rb[j])).

    Example:
        >>> map_product(free()[0])(jnp.zeros((2, 3)), jnp.ones((4, 3))).shape
        (4, 2, 3)
    """
    return vmap(vmap(metric_or_displacement, (0, None), 0), (None, 0), 0)


def map_bond(metric_or_displacement: DisplacementOrMetricFn) -> DisplacementOrMetricFn:
    """Vectorise over matching rows: ``f(Ra [n, d], Rb [n, d]) -> [n, ...]``.

    Example:
        >>> map_bond(free()[0])(jnp.zeros((2, 3)), jnp.ones((2, 3))).shape
        (2, 3)
    """
    return vmap(metric_or_displacement, (0, 0), 0)


def map_neighbor(metric_or_displacement: DisplacementOrMetricFn) -> DisplacementOrMetricFn:
    """Vectorise over neighbourhoods: ``f(R [n, d], R_neigh [n, k, d]) -> [n, k, ...]``.

    Each entry is ``f(R_neigh[i, j], R[i])`` (neighbour minus centre for a displacement).

    Example:
        >>> map_neighbor(free()[0])(jnp.zeros((2, 3)), jnp.ones((2, 5, 3))).shape
        (2, 5, 3)
    """
    def wrapped_fn(Ra: Array, Rb: Array, **kwargs: Any) -> Array:
        return vmap(vmap(metric_or_displacement, (0, None)))(Rb, Ra, **kwargs)
    return wrapped_fn


def canonicalize_displacement_or_metric(displacement_or_metric: DisplacementOrMetricFn
                                        ) -> MetricFn:
    """Return a metric: ``displacement_or_metric`` itself if it returns scalars, else its metric.

    Example:
        >>> m = canonicalize_displacement_or_metric(free()[0])
        >>> float(m(jnp.array([3.0, 4.0]), jnp.zeros(2)))
        5.0
    """
    if _returns_scalar(displacement_or_metric, "canonicalize_displacement_or_metric"):
        return displacement_or_metric
    return metric(displacement_or_metric)


def _returns_scalar(displacement_or_metric: DisplacementOrMetricFn, where: str) -> bool:
    """Whether ``displacement_or_metric`` is a metric (scalar out) rather than a displacement,
    found by evaluating its shape on vectors of spatial dimension 1 to 3 (``where`` names the
    caller in the error when none works)."""
    for dim in range(1, 4):
        try:
            R = fluxion.ShapeDtypeStruct((dim,), f32)
            out = fluxion.eval_shape(lambda a, b: displacement_or_metric(a, b, t=0), R, R)
        except (TypeError, ValueError):
            continue
        return len(out.shape) == 0
    raise ValueError(f"{where}: could not evaluate displacement_or_metric on vectors of spatial "
                     "dimension 1 to 3.")

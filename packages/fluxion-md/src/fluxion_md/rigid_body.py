"""Rigid bodies in two and three dimensions (mirrors ``jax_md.rigid_body``).

A :class:`RigidBody` holds a center-of-mass part and an orientation part (an angle in 2-d, a
unit :class:`Quaternion` in 3-d). The same type carries the related quantities: momenta (linear
momentum and the quaternion's conjugate momentum), forces (force and torque) and masses (total
mass and the diagonal moment of inertia). Registering :class:`RigidBody` with the simulation
dispatch (``simulate.position_step``, ``initialize_momenta``, ``stochastic_step``, ...) lets
``simulate.nve``, ``nvt_nose_hoover``, ``nvt_langevin`` and ``minimize.fire_descent`` run on
rigid bodies unchanged. The 3-d rotational update is the symplectic free-rotor splitting of
Miller et al., J. Chem. Phys. 116, 8649 (2002); the Langevin orientation update follows
Davidchack, Ouldridge and Tretyakov, J. Chem. Phys. 142, 144114 (2015).

Bodies made of point particles are described by :class:`RigidPointUnion`; :func:`point_energy`
and :func:`point_energy_neighbor_list` turn a point-particle energy into a rigid-body energy.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion_md import energy, rigid_body, space
    >>> displacement, shift = space.free()
    >>> body = rigid_body.RigidBody(jnp.array([[0.0, 0.0], [1.5, 0.0]]), jnp.zeros(2))
    >>> energy_fn = rigid_body.point_energy(energy.soft_sphere_pair(displacement),
    ...                                     rigid_body.square)
    >>> float(energy_fn(body)) > 0
    True
"""

from __future__ import annotations

import logging
import operator
from functools import partial, reduce
from typing import Any, Callable

import numpy as onp

import fluxion
import fluxion.numpy as jnp
from fluxion import ops, random, vmap
from fluxion.errors import ConcretizationTypeError
from fluxion.tree_util import tree_map, tree_reduce
from fluxion_md import dataclasses, partition, quantity, simulate, space, util
from fluxion_md.util import Array, f32, f64

__all__ = [
    "Quaternion", "quaternion_rotate", "random_quaternion", "tree_map_no_quat", "RigidBody",
    "space_to_body_rotation", "S", "conjugate_momentum_to_angular_momentum",
    "angular_momentum_to_conjugate_momentum", "canonicalize_momentum", "kinetic_energy",
    "temperature", "get_moment_of_inertia_diagonal", "EmptyLeaf", "split_center_and_orientation",
    "merge_center_and_orientation", "MOMENTUM_PERMUTATION", "RigidPointUnion",
    "point_union_shape", "concatenate_shapes", "rotation2d", "transform", "union_to_points",
    "point_energy", "point_energy_neighbor_list", "monomer", "dimer", "trimer", "square",
    "tetrahedron", "octohedron",
]

_log = logging.getLogger(__name__)
KeyArray = Array
DType = Any


# ---------------------------------------------------------------------------------------------
# Quaternions (w, x, y, z). The underscored helpers take raw arrays and broadcast over leading
# axes; the public functions take Quaternion objects.


def _is_float64(x: Array) -> bool:
    return x.dtype == onp.float64


@partial(jnp.vectorize, signature="(q),(q)->(q)")
def _quaternion_multiply(lhs: Array, rhs: Array) -> Array:
    a0, a1, a2, a3 = lhs
    b0, b1, b2, b3 = rhs
    dtype = f64 if (_is_float64(lhs) or _is_float64(rhs)) else f32
    w = a0 * b0 - a1 * b1 - a2 * b2 - a3 * b3
    x = a0 * b1 + a1 * b0 + a2 * b3 - a3 * b2
    y = a0 * b2 - a1 * b3 + a2 * b0 + a3 * b1
    z = a0 * b3 + a1 * b2 - a2 * b1 + a3 * b0
    return jnp.array([w, x, y, z], dtype=dtype)


@partial(jnp.vectorize, signature="(q)->(q)")
def _quaternion_conjugate(q: Array) -> Array:
    return jnp.array([q[0], -q[1], -q[2], -q[3]], dtype=q.dtype)


def _quaternion_rotate_raw(q: Array, v: Array) -> Array:
    if q.shape != (4,):
        raise ValueError("quaternion_rotate expects quaternion to have 4-dimensions. "
                         f"Found {q.shape}.")
    if v.shape != (3,):
        raise ValueError("quaternion_rotate expects vector to have three-dimensions. "
                         f"Found {v.shape}.")
    pure = jnp.concatenate([jnp.zeros((1,), v.dtype), v])
    return _quaternion_multiply(q, _quaternion_multiply(pure, _quaternion_conjugate(q)))[1:]


@fluxion.custom_vjp
def _quaternion_rotate(q: Array, v: Array) -> Array:
    return _quaternion_rotate_raw(q, v)


def _quaternion_rotate_fwd(q: Array, v: Array) -> tuple[Array, tuple[Array, Array]]:
    return _quaternion_rotate(q, v), (q, v)


def _quaternion_rotate_bwd(res: tuple[Array, Array], g: Array) -> tuple[Array, Array]:
    # The cotangent of q is projected onto the tangent space of the unit sphere S^3 at q.
    q, v = res
    dq, dv = fluxion.vjp(_quaternion_rotate_raw, q, v)[1](g)
    return dq - jnp.dot(q, dq) * q, dv


_quaternion_rotate.defvjp(_quaternion_rotate_fwd, _quaternion_rotate_bwd)


def _random_quaternion(key: KeyArray, dtype: DType) -> Array:
    u = random.uniform(key, (3,), minval=0.0, maxval=1.0, dtype=dtype)
    a = jnp.sqrt(1.0 - u[0])
    b = jnp.sqrt(u[0])
    t1 = 2.0 * jnp.pi * u[1]
    t2 = 2.0 * jnp.pi * u[2]
    return jnp.array([b * jnp.cos(t2), a * jnp.sin(t1), a * jnp.cos(t1), b * jnp.sin(t2)],
                     dtype)


@dataclasses.dataclass
class Quaternion:
    """A quaternion stored in the last axis (size 4) of ``vec``, with ``*`` as the quaternion
    product; ``size`` counts 3 degrees of freedom per (unit) quaternion.

    Example:
        >>> import fluxion.numpy as jnp
        >>> q = Quaternion(jnp.array([1.0, 0.0, 0.0, 0.0]))
        >>> (q * q.conj()).vec.tolist()
        [1.0, 0.0, 0.0, 0.0]
    """

    vec: Array

    @property
    def size(self) -> int:
        """Three degrees of freedom per quaternion."""
        return 3 * reduce(operator.mul, self.vec.shape[:-1], 1)

    @property
    def ndim(self) -> int:
        """The number of axes of ``vec``."""
        return self.vec.ndim

    def conj(self) -> Quaternion:
        """The conjugate quaternion."""
        return Quaternion(_quaternion_conjugate(self.vec))

    def __mul__(self, other: Quaternion) -> Quaternion:
        return Quaternion(_quaternion_multiply(self.vec, other.vec))

    def __rmul__(self, other: Quaternion) -> Quaternion:
        return Quaternion(_quaternion_multiply(other.vec, self.vec))

    def __getitem__(self, idx: Any) -> Quaternion:
        if self.vec.ndim == 1:
            raise ValueError("Quaternions do not support indexing into their spatial dimension. "
                             "If you want this behavior then access the underying `vec` "
                             "attribute directly.")
        return Quaternion(self.vec[idx])


def quaternion_rotate(q: Quaternion, v: Array) -> Array:
    """Rotate the vectors ``v`` (last axis 3) by the quaternions ``q`` (broadcast together).

    Example:
        >>> import fluxion.numpy as jnp
        >>> q = Quaternion(jnp.array([jnp.cos(jnp.pi / 4), 0.0, 0.0, jnp.sin(jnp.pi / 4)]))
        >>> [round(float(x), 5) for x in quaternion_rotate(q, jnp.array([1.0, 0.0, 0.0]))]
        [0.0, 1.0, 0.0]
    """
    return jnp.vectorize(_quaternion_rotate, signature="(q),(d)->(d)")(q.vec, v)


def random_quaternion(key: KeyArray, dtype: DType) -> Quaternion:
    """A uniformly random unit quaternion per key (``key`` of shape ``[..., 2]``).

    Example:
        >>> from fluxion import random
        >>> random_quaternion(random.PRNGKey(0), jnp.float32).vec.shape
        (4,)
    """
    draw = jnp.vectorize(partial(_random_quaternion, dtype=dtype), signature="(k)->(q)")
    return Quaternion(draw(key))


def tree_map_no_quat(fn: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """``tree_map`` that treats :class:`Quaternion` objects as leaves.

    Example:
        >>> tree_map_no_quat(lambda q: q.size, {"q": Quaternion(jnp.ones((5, 4)))})
        {'q': 15}
    """
    return tree_map(fn, tree, *rest, is_leaf=lambda node: isinstance(node, Quaternion))


# ---------------------------------------------------------------------------------------------
# Rigid bodies.


@dataclasses.dataclass
class RigidBody:
    """A collection of bodies: ``center`` (``[N, dim]``) and ``orientation`` (angles ``[N]`` in
    2-d, a :class:`Quaternion` ``[N, 4]`` in 3-d). Momenta, forces and masses of rigid bodies are
    RigidBody objects too (linear and angular parts).

    Example:
        >>> import fluxion.numpy as jnp
        >>> body = RigidBody(jnp.zeros((3, 2)), jnp.zeros(3))
        >>> body[0].center.shape
        (2,)
    """

    center: Array
    orientation: Any

    def __getitem__(self, idx: Any) -> RigidBody:
        return RigidBody(self.center[idx], self.orientation[idx])


util.register_custom_simulation_type(RigidBody)


@partial(jnp.vectorize, signature="(d)->(k,k)")
def _space_to_body_rotation(q: Array) -> Array:
    w, x, y, z = q
    ww, xx, yy, zz = w * w, x * x, y * y, z * z
    return jnp.array([
        [ww + xx - yy - zz, 2 * (x * y + w * z), 2 * (x * z - w * y)],
        [2 * (x * y - w * z), ww - xx + yy - zz, 2 * (y * z + w * x)],
        [2 * (x * z + w * y), 2 * (y * z - w * x), ww - xx - yy + zz],
    ], q.dtype)


def space_to_body_rotation(q: Quaternion) -> Array:
    """The rotation matrix (``[..., 3, 3]``) from the world frame to the body frame of ``q``.

    Example:
        >>> space_to_body_rotation(Quaternion(jnp.array([1.0, 0.0, 0.0, 0.0]))).tolist()[0]
        [1.0, 0.0, 0.0]
    """
    return _space_to_body_rotation(q.vec)


@partial(jnp.vectorize, signature="(d)->(d,d)")
def _S(q: Array) -> Array:
    a, b, c, d = q
    return jnp.array([[a, -b, -c, -d], [b, a, -d, c], [c, d, a, -b], [d, -c, b, a]], q.dtype)


def S(q: Quaternion) -> Array:
    r"""The ``[..., 4, 4]`` matrix with :math:`\dot q = \frac12 S(q)\,(0, \omega)` (Miller et
    al. 2002): it maps angular velocities to quaternion time derivatives.

    Example:
        >>> S(Quaternion(jnp.array([1.0, 0.0, 0.0, 0.0]))).shape
        (4, 4)
    """
    return _S(q.vec)


def conjugate_momentum_to_angular_momentum(orientation: Quaternion, momentum: Quaternion) -> Array:
    """The body-frame angular momentum (``[..., 3]``) of a quaternion's conjugate momentum.

    Example:
        >>> q = Quaternion(jnp.array([1.0, 0.0, 0.0, 0.0]))
        >>> conjugate_momentum_to_angular_momentum(q, Quaternion(jnp.array([0.0, 2.0, 0, 0])))
        Array([1., 0., 0.], dtype=float32)
    """
    def one(q: Array, p: Array) -> Array:
        return (0.5 * (_S(q).T @ p))[1:]
    return jnp.vectorize(one, signature="(d),(d)->(k)")(orientation.vec, momentum.vec)


def angular_momentum_to_conjugate_momentum(orientation: Quaternion, omega: Array) -> Quaternion:
    """The quaternion conjugate momentum of the angular momentum ``omega`` (``[..., 3]``).

    Example:
        >>> q = Quaternion(jnp.array([1.0, 0.0, 0.0, 0.0]))
        >>> angular_momentum_to_conjugate_momentum(q, jnp.array([1.0, 0.0, 0.0])).vec.tolist()
        [0.0, 2.0, 0.0, 0.0]
    """
    def one(q: Array, o: Array) -> Array:
        return 2 * (_S(q) @ jnp.concatenate((jnp.zeros((1,), dtype=q.dtype), o)))
    return Quaternion(jnp.vectorize(one, signature="(d),(k)->(d)")(orientation.vec, omega))


def canonicalize_momentum(position: RigidBody, momentum: RigidBody) -> RigidBody:
    """``momentum`` with a quaternion conjugate momentum replaced by the angular momentum.

    Example:
        >>> body = RigidBody(jnp.zeros((1, 2)), jnp.zeros(1))
        >>> canonicalize_momentum(body, body).orientation.shape
        (1,)
    """
    p = momentum.orientation
    if isinstance(position.orientation, Quaternion):
        p = conjugate_momentum_to_angular_momentum(position.orientation, p)
    return RigidBody(momentum.center, p)


def kinetic_energy(position: RigidBody, momentum: RigidBody, mass: RigidBody) -> Array:
    """Translational plus rotational kinetic energy of rigid bodies.

    Example:
        >>> body = RigidBody(jnp.zeros((2, 2)), jnp.zeros(2))
        >>> p = RigidBody(jnp.ones((2, 2)), jnp.ones(2))
        >>> float(kinetic_energy(body, p, RigidBody(1.0, 1.0)))
        3.0
    """
    momentum = canonicalize_momentum(position, momentum)
    ke = tree_map(lambda m, p: 0.5 * util.high_precision_sum(p ** 2 / m), mass, momentum)
    return tree_reduce(operator.add, ke, 0.0)


def temperature(position: RigidBody, momentum: RigidBody, mass: RigidBody) -> Array:
    """Instantaneous temperature of rigid bodies (``sum p^2 / m`` over the degrees of freedom).

    Example:
        >>> body = RigidBody(jnp.zeros((2, 2)), jnp.zeros(2))
        >>> p = RigidBody(jnp.ones((2, 2)), jnp.ones(2))
        >>> float(temperature(body, p, RigidBody(1.0, 1.0)))
        1.0
    """
    dof = quantity.count_dof(momentum)
    momentum = canonicalize_momentum(position, momentum)
    kT = tree_map(lambda m, p: util.high_precision_sum(p ** 2 / m) / dof, mass, momentum)
    return tree_reduce(operator.add, kT, 0.0)


def get_moment_of_inertia_diagonal(I: Array, eps: float = 1e-5) -> Array:  # noqa: E741
    """The diagonals (``[n, 3]``) of moment of inertia tensors ``I`` (``[n, 3, 3]``); raises
    ``ValueError`` when an off-diagonal entry exceeds ``eps`` (checked only outside ``jit``).

    Example:
        >>> get_moment_of_inertia_diagonal(jnp.eye(3)[None] * 2.0).tolist()
        [[2.0, 2.0, 2.0]]
    """
    diag = vmap(jnp.diag)(I)
    try:
        deviation = jnp.abs(I - vmap(jnp.diag)(diag))
        if jnp.any(deviation > eps):
            raise ValueError("Expected diagonal moment of inertia."
                             f"Maximum deviation: {jnp.max(deviation)}. Tolerance: {eps}.")
    except ConcretizationTypeError:
        _log.info("get_moment_of_inertia_diagonal: skipping the diagonal check inside jit.")
    return diag


# ---------------------------------------------------------------------------------------------
# The simulation dispatch for RigidBody states.


@quantity.count_dof.register
def _count_dof_rigid(position: RigidBody) -> int:
    sizes = tree_map_no_quat(lambda x: x.size, position)
    return tree_reduce(operator.add, sizes, 0)


@simulate.initialize_momenta.register(RigidBody)
def _initialize_momenta_rigid(state: Any, key: Array, kT: float) -> Any:
    R, mass = state.position, state.mass
    center_key, angular_key = random.split(key)
    P_center = jnp.sqrt(mass.center * kT) * random.normal(center_key, R.center.shape,
                                                          dtype=R.center.dtype)
    P_center = P_center - jnp.mean(P_center, axis=0, keepdims=True)
    scale = jnp.sqrt(mass.orientation * kT)
    if isinstance(R.orientation, Quaternion):
        omega = scale * random.normal(angular_key, R.center.shape, dtype=R.center.dtype)
        P_orientation = angular_momentum_to_conjugate_momentum(R.orientation, omega)
    else:
        P_orientation = scale * random.normal(angular_key, R.orientation.shape,
                                              dtype=R.orientation.dtype)
    return state.set(momentum=RigidBody(P_center, P_orientation))


class EmptyLeaf:
    """Placeholder leaf used when a state is split into center and orientation parts.

    Example:
        >>> from fluxion_md import rigid_body
        >>> isinstance(rigid_body.EmptyLeaf(), rigid_body.EmptyLeaf)
        True
    """


_EMPTY_LEAF = EmptyLeaf()


def _is_rigid(x: Any) -> bool:
    return isinstance(x, RigidBody)


def split_center_and_orientation(dc: Any) -> tuple[Any, Any, Any]:
    """Split a state holding RigidBody fields into ``(rest, center, orientation)`` states: the
    center state holds every RigidBody's ``center``, the orientation state its ``orientation``,
    the rest everything else (placeholders fill the gaps).

    Example:
        >>> from fluxion_md import simulate
        >>> body = RigidBody(jnp.zeros((1, 2)), jnp.zeros(1))
        >>> rest, c, o = split_center_and_orientation(simulate.NVEState(body, body, body, body))
        >>> c.position.shape, o.position.shape
        ((1, 2), (1,))
    """
    c = tree_map(lambda x: x.center if _is_rigid(x) else _EMPTY_LEAF, dc, is_leaf=_is_rigid)
    o = tree_map(lambda x: x.orientation if _is_rigid(x) else _EMPTY_LEAF, dc, is_leaf=_is_rigid)
    r = tree_map(lambda x: _EMPTY_LEAF if _is_rigid(x) else x, dc, is_leaf=_is_rigid)
    return r, c, o


def merge_center_and_orientation(rest: Any, center: Any, orientation: Any) -> Any:
    """Inverse of :func:`split_center_and_orientation`.

    Example:
        >>> from fluxion_md import simulate
        >>> body = RigidBody(jnp.zeros((1, 2)), jnp.zeros(1))
        >>> parts = split_center_and_orientation(simulate.NVEState(body, body, body, body))
        >>> type(merge_center_and_orientation(*parts).position).__name__
        'RigidBody'
    """
    def merge(r: Any, c: Any, o: Any) -> Any:
        return RigidBody(c, o) if r is _EMPTY_LEAF else r
    return tree_map_no_quat(merge, rest, center, orientation)


def _perm(k: int, q: Array) -> Array:
    # The three permutations P_k of Miller et al. (2002), eq. (2.11), applied along the last axis.
    a, b, c, d = (q[..., i] for i in range(4))
    if k == 0:
        cols = (-b, a, d, -c)
    elif k == 1:
        cols = (-c, -d, a, b)
    else:
        cols = (-d, c, -b, a)
    return jnp.stack(cols, axis=-1)


MOMENTUM_PERMUTATION = [partial(_perm, 0), partial(_perm, 1), partial(_perm, 2)]


def _free_rotor(k: int, dt: Any, m_rot: int, quat: Array, p_quat: Array, M: Array
                ) -> tuple[Array, Array]:
    if M.ndim == 1:
        Mk = M[k]
    elif M.ndim == 2:
        Mk = M[:, k:k + 1]
    else:
        raise NotImplementedError("rigid_body: the moment of inertia must have 1 or 2 axes; "
                                  f"got shape {M.shape}.")
    Pq = _perm(k, quat)
    zeta = (dt / m_rot) * jnp.sum(p_quat * (Pq / (4 * Mk)), axis=-1)[:, None]
    c, s = jnp.cos(zeta), jnp.sin(zeta)
    return c * quat + s * Pq, c * p_quat + s * _perm(k, p_quat)


def _rigid_body_3d_position_step(state: Any, shift_fn: Callable, dt: Any, m_rot: int,
                                 **kwargs: Any) -> Any:
    rest, center, orientation = split_center_and_orientation(state)
    center = simulate.position_step(center, shift_fn, dt, **kwargs)
    R, P = orientation.position, orientation.momentum
    if not (isinstance(R, Quaternion) and isinstance(P, Quaternion)):
        raise ValueError("For 3d rigid bodies, orientations must be quaternions."
                         f"Found {type(R)} for positions and {type(P)} for momenta.")
    q, p, M = R.vec, P.vec, orientation.mass
    half = dt / 2
    for _ in range(m_rot):
        for k, step in ((2, half), (1, half), (0, dt), (1, half), (2, half)):
            q, p = _free_rotor(k, step, m_rot, q, p, M)
    orientation = orientation.set(position=Quaternion(q), momentum=Quaternion(p))
    return merge_center_and_orientation(rest, center, orientation)


def _rigid_body_2d_position_step(state: Any, shift_fn: Callable, dt: Any, **kwargs: Any) -> Any:
    rest, center, orientation = split_center_and_orientation(state)
    center = simulate.position_step(center, shift_fn, dt, **kwargs)
    orientation = simulate.position_step(orientation, lambda r, dr, **_: r + dr, dt, **kwargs)
    return merge_center_and_orientation(rest, center, orientation)


@simulate.position_step.register(RigidBody)
def _position_step_rigid(state: Any, shift_fn: Callable, dt: Any, m_rot: int = 1,
                         **kwargs: Any) -> Any:
    if isinstance(state.position.orientation, Quaternion):
        return _rigid_body_3d_position_step(state, shift_fn, dt, m_rot=m_rot, **kwargs)
    return _rigid_body_2d_position_step(state, shift_fn, dt, **kwargs)


@simulate.stochastic_step.register(RigidBody)
def _stochastic_step_rigid(state: Any, dt: float, kT: float, gamma: Any) -> Any:
    key, center_key, orientation_key = random.split(state.rng, 3)
    rest, center, orientation = split_center_and_orientation(state)
    center = simulate.stochastic_step(center.set(rng=center_key), dt, kT, gamma.center)

    Pi = orientation.momentum.vec
    inertia = orientation.mass
    G = gamma.orientation
    M = 4 / jnp.sum(1 / inertia, axis=-1)
    Q = orientation.position.vec
    mean = 0
    var = 0
    for k in range(3):
        Pq = _perm(k, Q)
        outer = Pq[:, None, :] * Pq[:, :, None]
        mean = mean + jnp.exp(-G * M[:, None, None] * dt / (4 * inertia[:, k:k + 1, None])) * outer
        scale = jnp.sqrt(4 * kT * inertia[:, k] * (1 - jnp.exp(-M * G * dt / (2 * inertia[:, k]))))
        var = var + (scale[:, None] * Pq) ** 2
    mean = jnp.einsum("nij,nj->ni", mean, Pi)
    new_momentum = Quaternion(simulate.Normal(mean, var).sample(orientation_key))
    orientation = orientation.set(momentum=new_momentum)
    return merge_center_and_orientation(rest.set(rng=key), center, orientation)


@simulate.canonicalize_mass.register(RigidBody)
def _canonicalize_mass_rigid(state: Any) -> Any:
    mass = state.mass
    if len(mass.center) == 1:
        return state.set(mass=RigidBody(mass.center[0], mass.orientation))
    if len(mass.center) > 1:
        return state.set(mass=RigidBody(mass.center[:, None], mass.orientation))
    raise NotImplementedError("Center of mass must be either a scalar or a vector. Found an "
                              f"array of shape {mass.center.shape}.")


@simulate.kinetic_energy.register(RigidBody)
def _kinetic_energy_rigid(state: Any) -> Array:
    return kinetic_energy(state.position, state.momentum, state.mass)


@simulate.temperature.register(RigidBody)
def _temperature_rigid(state: Any) -> Array:
    return temperature(state.position, state.momentum, state.mass)


# ---------------------------------------------------------------------------------------------
# Rigid bodies made of point particles.


@dataclasses.dataclass
class RigidPointUnion:
    """One or more rigid shapes, each a union of point masses.

    ``points`` (``[total_points, dim]``) and ``masses`` (``[total_points]``) of all shapes, packed;
    ``point_count`` and ``point_offset`` (``[shape_count]``) locate each shape's points;
    ``point_species`` optionally gives each point a species; ``point_radius`` is the radius of
    the disk (2-d) or sphere (3-d) each point is taken to be for its moment of inertia.

    Example:
        >>> from fluxion_md.rigid_body import square
        >>> square.mass().center.tolist()
        [4.0]
    """

    points: Array
    masses: Array
    point_count: Array
    point_offset: Array
    point_species: Any = None
    point_radius: Any = dataclasses.field(default_factory=lambda: f32(0.5))

    def dimension(self) -> int:
        """The spatial dimension of the points."""
        return self.points.shape[-1]

    def _sum_over_shapes(self, x: Array) -> Array:
        shape_count = len(self.point_count)
        idx = jnp.repeat(jnp.arange(shape_count), self.point_count,
                         total_repeat_length=len(self.points))
        return ops.segment_sum(x, idx, shape_count)

    def moment_of_inertia(self) -> Array:
        """Each shape's moment of inertia (``[shape_count]`` in 2-d, ``[shape_count, 3, 3]``)."""
        ndim = self.dimension()
        if ndim == 2:
            disk = self.point_radius ** 2 / 2
            per_point = self.masses * (jnp.sum(self.points ** 2, axis=-1) + disk)
            return self._sum_over_shapes(per_point)
        if ndim == 3:
            sphere = 2 * self.point_radius ** 2 / 5
            eye = jnp.eye(3, dtype=self.points.dtype)

            def one(p: Array, m: Array) -> Array:
                return m * (jnp.sum(p ** 2) * eye - jnp.outer(p, p) + sphere * eye)
            return self._sum_over_shapes(vmap(one)(self.points, self.masses))
        raise ValueError("Rigid bodies are only defined in two- and three-dimensions.")

    def mass(self, shape_species: Any = None) -> RigidBody:
        """A RigidBody of total masses and (diagonal) moments of inertia, one per shape, or one
        per body when ``shape_species`` gives each body's shape.

        Example:
            >>> from fluxion_md.rigid_body import square
            >>> square.mass().orientation.tolist()
            [2.5]
        """
        ndim = self.dimension()
        if ndim == 2:
            inertia = self.moment_of_inertia()
        elif ndim == 3:
            inertia = get_moment_of_inertia_diagonal(self.moment_of_inertia())
        else:
            raise ValueError("Rigid bodies only defined for two- and three-dimensions. "
                             f"Found {ndim}.")
        total = self._sum_over_shapes(self.masses)
        if shape_species is not None:
            return RigidBody(total[shape_species], inertia[shape_species])
        return RigidBody(total, inertia)

    def __getitem__(self, idx: int) -> RigidPointUnion:
        start = self.point_offset[idx]
        end = start + self.point_count[idx]
        species = None if self.point_species is None else self.point_species[start:end]
        return RigidPointUnion(self.points[start:end], self.masses[start:end],
                               jnp.array([self.point_count[idx]]), jnp.array([0]), species)


def _transform_to_diagonal_frame(shape: RigidPointUnion) -> RigidPointUnion:
    if len(shape.point_count) != 1:
        raise ValueError("rigid_body: expected a single shape; got "
                         f"{len(shape.point_count)}.")
    ndim = shape.dimension()
    if ndim == 2:
        weighted = shape._sum_over_shapes(shape.masses[:, None] * shape.points)
        return shape.set(points=shape.points - weighted / shape.point_count[:, None])
    if ndim == 3:
        (inertia,) = shape.moment_of_inertia()
        _, axes = jnp.linalg.eigh(inertia)
        return RigidPointUnion(shape.points @ axes, shape.masses, shape.point_count,
                               shape.point_offset)
    raise ValueError("Rigid bodies only defined for two- or three-dimensions found shape of "
                     f"dimension={ndim}.")


def point_union_shape(points: Array, masses: Any) -> RigidPointUnion:
    """A rigid shape from point positions and masses, moved to its principal axes (3-d) or
    centred (2-d).

    Example:
        >>> import numpy as onp
        >>> s = point_union_shape(onp.array([[0.0, 0.5], [0.0, -0.5]], onp.float32), 1.0)
        >>> s.points.shape
        (2, 2)
    """
    if jnp.isscalar(masses) or jnp.shape(masses) == ():
        masses = masses * jnp.ones((len(points),), points.dtype)
    shape = RigidPointUnion(points=points, masses=masses, point_count=jnp.array([len(points)]),
                            point_offset=jnp.array([0]))
    return _transform_to_diagonal_frame(shape)


def concatenate_shapes(*shapes: RigidPointUnion) -> RigidPointUnion:
    """Pack several RigidPointUnions into one (shape ``i`` is shape species ``i``).

    Example:
        >>> from fluxion_md.rigid_body import square, trimer
        >>> concatenate_shapes(square, trimer).point_offset.tolist()
        [0, 4]
    """
    species = [s.point_species for s in shapes]
    have = [x is not None for x in species]
    if any(have) and not all(have):
        raise ValueError("Either all shapes should have point species or none should have "
                         "point species.")
    if any(have) and not all(isinstance(x, (onp.ndarray, fluxion.Array)) for x in species):
        raise ValueError("All point species should be specified as `onp.ndarray` since the "
                         "species must be known statically at compile time.")
    point_count = jnp.concatenate([s.point_count for s in shapes])
    return RigidPointUnion(
        points=jnp.concatenate([s.points for s in shapes]),
        masses=jnp.concatenate([s.masses for s in shapes]),
        point_species=jnp.concatenate(species) if any(have) else None,
        point_count=point_count,
        point_offset=jnp.concatenate([jnp.array([0]), jnp.cumsum(point_count)[:-1]]),
    )


@partial(jnp.vectorize, signature="()->(d,d)")
def rotation2d(theta: Array) -> Array:
    """The 2-d rotation matrix of the angle ``theta`` (``[..., 2, 2]``).

    Example:
        >>> rotation2d(jnp.array(0.0)).tolist()
        [[1.0, -0.0], [0.0, 1.0]]
    """
    c, s = jnp.cos(theta), jnp.sin(theta)
    return jnp.array([[c, -s], [s, c]])


def transform(body: RigidBody, shape: RigidPointUnion) -> Array:
    """The world-frame positions of ``shape``'s points for one body.

    Example:
        >>> from fluxion_md.rigid_body import dimer
        >>> transform(RigidBody(jnp.array([1.0, 0.0]), jnp.array(0.0)), dimer).tolist()
        [[1.0, 0.5], [1.0, -0.5]]
    """
    if isinstance(body.orientation, Quaternion):
        offset = quaternion_rotate(body.orientation, shape.points)
    else:
        offset = space.raw_transform(rotation2d(body.orientation), shape.points)
    return body.center[None, :] + offset


def _flat_species(ps: Any, positions: Array) -> Any:
    if ps is None:
        return None
    return jnp.reshape(jnp.broadcast_to(ps[None, :], positions.shape[:-1]), (-1,))


def union_to_points(body: RigidBody, shape: RigidPointUnion, shape_species: Any = None,
                    **unused_kwargs: Any) -> tuple[Array, Any]:
    """The world-frame positions (``[N * points, dim]``) and point species of all bodies.

    ``shape_species`` (a NumPy array, known before tracing) gives each body's shape index.

    Example:
        >>> from fluxion_md.rigid_body import square
        >>> body = RigidBody(jnp.zeros((2, 2)), jnp.zeros(2))
        >>> union_to_points(body, square)[0].shape
        (8, 2)
    """
    if shape_species is None:
        pos = vmap(transform, (0, None))(body, shape)
        species = _flat_species(shape.point_species, pos)
        return jnp.reshape(pos, (-1, pos.shape[-1])), species
    if not isinstance(shape_species, onp.ndarray):
        raise NotImplementedError("Shape species must either be None or of type onp.ndarray "
                                  "since it must be specified ahead of compilation. Found "
                                  f"{type(shape_species)}.")
    kinds = onp.unique(shape_species)
    count = len(kinds)
    if not (len(shape.point_count) == count and kinds.max() == count - 1 and kinds.min() == 0):
        raise ValueError(f"union_to_points: shape_species must use each of the {count} "
                         f"shapes' indices 0..{len(shape.point_count) - 1}; got {kinds}.")
    shape = tree_map(onp.asarray, shape)
    positions, species = [], []
    for s in range(count):
        one = shape[s]
        pos = vmap(transform, (0, None))(body[shape_species == s], one)
        if one.point_species is not None:
            species.append(_flat_species(one.point_species, pos))
        positions.append(jnp.reshape(pos, (-1, pos.shape[-1])))
    return jnp.concatenate(positions), (jnp.concatenate(species) if species else None)


def point_energy(energy_fn: Callable[..., Array], shape: RigidPointUnion,
                 shape_species: Any = None) -> Callable[..., Array]:
    """A rigid-body energy from a point energy ``energy_fn(points, **kwargs)`` and the shapes
    (point species, when the shapes have them, are passed as ``species=``).

    Example:
        >>> from fluxion_md import energy, space
        >>> from fluxion_md.rigid_body import square
        >>> displacement, _ = space.free()
        >>> fn = point_energy(energy.soft_sphere_pair(displacement), square)
        >>> float(fn(RigidBody(jnp.array([[0.0, 0.0], [5.0, 0.0]]), jnp.zeros(2))))
        0.0
    """
    def wrapped_energy_fn(body: RigidBody, **kwargs: Any) -> Array:
        pos, species = union_to_points(body, shape, shape_species)
        if species is None:
            return energy_fn(pos, **kwargs)
        return energy_fn(pos, species=species, **kwargs)
    return wrapped_energy_fn


def point_energy_neighbor_list(energy_fn: Callable[..., Array], neighbor_fn: Any,
                               shape: RigidPointUnion, shape_species: Any = None
                               ) -> tuple[Any, Callable[..., Array]]:
    """:func:`point_energy` for neighbor-list energies: returns ``(neighbor_fns, energy_fn)``
    whose neighbor lists are built over the bodies' points.

    Example:
        >>> from fluxion_md import energy, space
        >>> from fluxion_md.rigid_body import square
        >>> displacement, _ = space.periodic(10.0)
        >>> nfn, efn = energy.soft_sphere_neighbor_list(displacement, 10.0)
        >>> nfn, efn = point_energy_neighbor_list(efn, nfn, square)
        >>> body = RigidBody(jnp.array([[1.0, 1.0], [5.0, 5.0]]), jnp.zeros(2))
        >>> float(efn(body, neighbor=nfn.allocate(body)))
        0.0
    """
    def wrapped_energy_fn(body: RigidBody, neighbor: Any, **kwargs: Any) -> Array:
        pos, species = union_to_points(body, shape, shape_species)
        return energy_fn(pos, neighbor=neighbor, species=species, **kwargs)

    def neighbor_update_fn(body: RigidBody, neighbor: Any, **kwargs: Any) -> Any:
        pos, _ = union_to_points(body, shape, shape_species)
        return neighbor_fn.update(pos, neighbor, **kwargs)

    def neighbor_allocate_fn(body: RigidBody, **kwargs: Any) -> Any:
        pos, _ = union_to_points(body, shape, shape_species)
        nbrs = neighbor_fn.allocate(pos, **kwargs)
        return dataclasses.replace(nbrs, update_fn=neighbor_update_fn)

    return partition.NeighborListFns(neighbor_allocate_fn, neighbor_update_fn), wrapped_energy_fn


# Predefined shapes (2-d, then 3-d), built on first use: building one runs eager array code
# (an eigendecomposition in 3-d), which must not compile programs at ``import fluxion_md``.
_SHAPE_POINTS: dict[str, Any] = {
    "monomer": lambda: onp.array([[0.0, 0.0]], f32),
    "dimer": lambda: onp.array([[0.0, 0.5], [0.0, -0.5]], f32),
    "trimer": lambda: onp.array([[0, onp.sqrt(1 - 0.5 ** 2) - 0.5], [0.5, -0.5], [-0.5, -0.5]],
                                f32),
    "square": lambda: onp.array([[-0.5, -0.5], [0.5, -0.5], [0.5, 0.5], [-0.5, 0.5]], f32),
    "tetrahedron": lambda: onp.array([[1.0, 1.0, 1.0], [1.0, -1.0, -1.0], [-1.0, 1.0, -1.0],
                                      [-1.0, -1.0, 1.0]], f32) * f32(0.5),
    "octohedron": lambda: onp.array([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0],
                                     [0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, -1.0]],
                                    f32) * f32(0.5),
}


monomer: RigidPointUnion
dimer: RigidPointUnion
trimer: RigidPointUnion
square: RigidPointUnion
tetrahedron: RigidPointUnion
octohedron: RigidPointUnion


def __getattr__(name: str) -> RigidPointUnion:
    """The predefined shapes ``monomer``, ``dimer``, ``trimer``, ``square`` (2-d) and
    ``tetrahedron``, ``octohedron`` (3-d), unit point masses, built once on first access.

    Example:
        >>> from fluxion_md import rigid_body
        >>> rigid_body.dimer.points.shape
        (2, 2)
    """
    points = _SHAPE_POINTS.get(name)
    if points is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    shape = point_union_shape(points(), f32(1.0))
    globals()[name] = shape  # later accesses find it without calling __getattr__
    return shape

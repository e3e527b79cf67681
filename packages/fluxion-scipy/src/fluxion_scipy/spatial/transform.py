"""3-D rotations (mirrors ``jax.scipy.spatial.transform``): ``Rotation`` and ``Slerp``.

Quaternions are scalar-last (x, y, z, w), as SciPy. Both classes are NamedTuples, hence pytrees
that pass through ``jit`` and ``vmap``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import fluxion.numpy as jnp
import fluxion.random as jr

__all__ = ["Rotation", "Slerp"]

_AXES = {"x": 0, "y": 1, "z": 2}


def _qmul(p: Any, q: Any) -> Any:
    px, py, pz, pw = p[..., 0], p[..., 1], p[..., 2], p[..., 3]
    qx, qy, qz, qw = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return jnp.stack([pw * qx + px * qw + py * qz - pz * qy,
                      pw * qy - px * qz + py * qw + pz * qx,
                      pw * qz + px * qy - py * qx + pz * qw,
                      pw * qw - px * qx - py * qy - pz * qz], axis=-1)


def _float(x: Any) -> Any:
    x = jnp.asarray(x)
    return x if jnp.issubdtype(x.dtype, jnp.inexact) else x.astype(jnp.result_type(x, 1.0))


def _check_last(name: str, x: Any, size: int) -> Any:
    x = _float(x)
    if x.ndim not in (1, 2) or x.shape[-1] != size:
        raise ValueError(f"Rotation.{name}: expected shape ({size},) or (N, {size}), got {x.shape}")
    return x


def _elementary(axis: int, angle: Any) -> Any:
    half = 0.5 * angle
    parts = [jnp.zeros_like(half)] * 3
    parts[axis] = jnp.sin(half)
    return jnp.stack(parts + [jnp.cos(half)], axis=-1)


class Rotation(NamedTuple):
    """A rotation (or a stack of them) stored as unit quaternions ``quat`` (..., 4), x y z w.

    Example:
        >>> r = Rotation.from_rotvec(jnp.array([0.0, 0.0, math.pi / 2]))
        >>> [round(v, 6) for v in r.apply(jnp.array([1.0, 0.0, 0.0])).tolist()]
        [0.0, 1.0, 0.0]
    """

    quat: Any

    @classmethod
    def concatenate(cls, rotations: Sequence[Rotation]) -> Rotation:
        """One stacked Rotation from several (single or stacked) ones.

        Example:
            >>> len(Rotation.concatenate([Rotation.identity(), Rotation.identity(2)]))
            3
        """
        return cls(jnp.concatenate([jnp.atleast_2d(r.quat) for r in rotations], axis=0))

    @classmethod
    def from_quat(cls, quat: Any) -> Rotation:
        """From (x, y, z, w) quaternions (normalised here).

        Example:
            >>> Rotation.from_quat(jnp.array([0.0, 0.0, 0.0, 2.0])).as_quat().tolist()
            [0.0, 0.0, 0.0, 1.0]
        """
        q = _check_last("from_quat", quat, 4)
        return cls(q / jnp.linalg.norm(q, axis=-1, keepdims=True))

    @classmethod
    def from_matrix(cls, matrix: Any) -> Rotation:
        """From rotation matrices (3, 3) or (N, 3, 3), by Shepperd's numerically stable choice.

        Example:
            >>> Rotation.from_matrix(jnp.eye(3)).as_quat().tolist()
            [0.0, 0.0, 0.0, 1.0]
        """
        m = _float(matrix)
        if m.shape[-2:] != (3, 3) or m.ndim not in (2, 3):
            raise ValueError(f"Rotation.from_matrix: expected (3, 3) or (N, 3, 3), got {m.shape}")
        d = jnp.stack([m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]], -1)
        tr = jnp.sum(d, -1)
        choice = jnp.argmax(jnp.concatenate([d, tr[..., None]], -1), -1)
        # Candidate quaternions, one per largest entry of (m00, m11, m22, trace).
        cands = []
        for i in range(3):
            j, k = (i + 1) % 3, (i + 2) % 3
            q = [None] * 4
            q[i] = 1 - tr + 2 * m[..., i, i]
            q[j] = m[..., j, i] + m[..., i, j]
            q[k] = m[..., k, i] + m[..., i, k]
            q[3] = m[..., k, j] - m[..., j, k]
            cands.append(jnp.stack(q, -1))
        cands.append(jnp.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                                m[..., 1, 0] - m[..., 0, 1], 1 + tr], -1))
        stacked = jnp.stack(cands, -2)  # (..., 4, 4)
        q = jnp.take_along_axis(stacked, choice[..., None, None], axis=-2)[..., 0, :]
        return cls(q / jnp.linalg.norm(q, axis=-1, keepdims=True))

    @classmethod
    def from_rotvec(cls, rotvec: Any, degrees: bool = False) -> Rotation:
        """From rotation vectors (axis times angle; degrees with ``degrees``).

        Example:
            >>> Rotation.from_rotvec(jnp.zeros(3)).as_quat().tolist()
            [0.0, 0.0, 0.0, 1.0]
        """
        v = _check_last("from_rotvec", rotvec, 3)
        if degrees:
            v = v * (math.pi / 180)
        angle = jnp.linalg.norm(v, axis=-1, keepdims=True)
        small = angle <= 1e-3
        a2 = angle * angle
        safe = jnp.where(small, 1.0, angle)
        scale = jnp.where(small, 0.5 - a2 / 48 + a2 * a2 / 3840, jnp.sin(0.5 * safe) / safe)
        return cls(jnp.concatenate([scale * v, jnp.cos(0.5 * angle)], -1))

    @classmethod
    def from_mrp(cls, mrp: Any) -> Rotation:
        """From modified Rodrigues parameters (axis times tan(angle / 4)).

        Example:
            >>> Rotation.from_mrp(jnp.zeros(3)).as_quat().tolist()
            [0.0, 0.0, 0.0, 1.0]
        """
        p = _check_last("from_mrp", mrp, 3)
        n2 = jnp.sum(p * p, -1, keepdims=True)
        return cls(jnp.concatenate([2 * p, 1 - n2], -1) / (1 + n2))

    @classmethod
    def from_euler(cls, seq: str, angles: Any, degrees: bool = False) -> Rotation:
        """From Euler angles about the axes in ``seq`` (1 to 3 of "xyz": lower case extrinsic,
        upper case intrinsic).

        Example:
            >>> r = Rotation.from_euler("z", 90, degrees=True)
            >>> [round(v, 6) for v in r.as_rotvec().tolist()]
            [0.0, 0.0, 1.570796]
        """
        if not (1 <= len(seq) <= 3) or not (re.fullmatch("[xyz]+", seq)
                                            or re.fullmatch("[XYZ]+", seq)):
            raise ValueError(f"Rotation.from_euler: seq must be 1-3 axes from 'xyz' (extrinsic) or "
                             f"'XYZ' (intrinsic), got {seq!r}")
        angles = _float(angles)
        if degrees:
            angles = angles * (math.pi / 180)
        single = angles.ndim == 0 or (angles.ndim == 1 and len(seq) > 1)
        angles = angles.reshape((-1, len(seq)))
        if angles.shape[-1] != len(seq):
            raise ValueError(f"Rotation.from_euler: expected {len(seq)} angles per rotation, got "
                             f"shape {angles.shape}")
        intrinsic = seq.isupper()
        q = _elementary(_AXES[seq[0].lower()], angles[:, 0])
        for n, axis in enumerate(seq[1:], start=1):
            e = _elementary(_AXES[axis.lower()], angles[:, n])
            q = _qmul(q, e) if intrinsic else _qmul(e, q)
        return cls(q[0] if single else q)

    @classmethod
    def identity(cls, num: int | None = None, dtype: Any = float) -> Rotation:
        """The identity rotation (``num`` of them when given).

        Example:
            >>> Rotation.identity(2).quat.shape
            (2, 4)
        """
        q = jnp.asarray([0.0, 0.0, 0.0, 1.0], jnp.result_type(dtype))
        return cls(q if num is None else jnp.tile(q, (num, 1)))

    @classmethod
    def random(cls, random_key: Any, num: int | None = None) -> Rotation:
        """Uniformly distributed random rotations (normalised Gaussian quaternions).

        Example:
            >>> import fluxion.random as jr
            >>> Rotation.random(jr.key(0), 3).quat.shape
            (3, 4)
        """
        shape = (4,) if num is None else (num, 4)
        return cls.from_quat(jr.normal(random_key, shape))

    def __len__(self) -> int:
        if self.single:
            raise TypeError("Single rotation has no len().")
        return self.quat.shape[0]

    def __getitem__(self, indexer: Any) -> Rotation:
        if self.single:
            raise TypeError("Single rotation is not subscriptable.")
        return Rotation(self.quat[indexer])

    def __mul__(self, other: Rotation) -> Rotation:  # type: ignore[override]
        if not isinstance(other, Rotation):
            return NotImplemented
        return Rotation(_qmul(self.quat, other.quat))

    @property
    def single(self) -> bool:
        """Whether this holds one rotation (quat of shape (4,))."""
        return self.quat.ndim == 1

    def as_quat(self, canonical: bool = False, scalar_first: bool = False) -> Any:
        """The quaternions; ``canonical`` picks w >= 0, ``scalar_first`` orders them (w, x, y, z).

        Example:
            >>> Rotation.identity().as_quat(scalar_first=True).tolist()
            [1.0, 0.0, 0.0, 0.0]
        """
        q = self.quat
        if canonical:
            q = jnp.where(q[..., 3:] < 0, -q, q)
        return jnp.roll(q, 1, axis=-1) if scalar_first else q

    def as_matrix(self) -> Any:
        """Rotation matrices (3, 3) or (N, 3, 3).

        Example:
            >>> Rotation.identity().as_matrix().tolist()
            [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
        """
        x, y, z, w = (self.quat[..., i] for i in range(4))
        rows = [[w * w + x * x - y * y - z * z, 2 * (x * y - z * w), 2 * (x * z + y * w)],
                [2 * (x * y + z * w), w * w - x * x + y * y - z * z, 2 * (y * z - x * w)],
                [2 * (x * z - y * w), 2 * (y * z + x * w), w * w - x * x - y * y + z * z]]
        return jnp.stack([jnp.stack(r, -1) for r in rows], -2)

    def as_rotvec(self, degrees: bool = False) -> Any:
        """Rotation vectors (axis times angle in [0, pi]).

        Example:
            >>> Rotation.identity().as_rotvec().tolist()
            [0.0, 0.0, 0.0]
        """
        q = self.as_quat(canonical=True)
        xyz = q[..., :3]
        angle = 2 * jnp.arctan2(jnp.linalg.norm(xyz, axis=-1), q[..., 3])
        small = angle <= 1e-3
        a2 = angle * angle
        safe = jnp.where(small, 1.0, angle)
        scale = jnp.where(small, 2 + a2 / 12 + 7 * a2 * a2 / 2880, safe / jnp.sin(0.5 * safe))
        v = scale[..., None] * xyz
        return v * (180 / math.pi) if degrees else v

    def as_mrp(self) -> Any:
        """Modified Rodrigues parameters (the shorter of the two equivalent ones).

        Example:
            >>> Rotation.identity().as_mrp().tolist()
            [0.0, 0.0, 0.0]
        """
        q = self.as_quat(canonical=True)
        return q[..., :3] / (1 + q[..., 3:])

    def as_euler(self, seq: str, degrees: bool = False) -> Any:
        """Euler angles for the 3-axis ``seq`` (as ``from_euler``), by the quaternion method of
        Bernardes and Viollet (2022); the first angle is set so the third is 0 at gimbal lock.

        Example:
            >>> r = Rotation.from_euler("xyz", jnp.array([0.1, 0.2, 0.3]))
            >>> [round(v, 6) for v in r.as_euler("xyz").tolist()]
            [0.1, 0.2, 0.3]
        """
        if len(seq) != 3 or not (re.fullmatch("[xyz]+", seq) or re.fullmatch("[XYZ]+", seq)):
            raise ValueError(f"Rotation.as_euler: seq must be 3 axes from 'xyz' or 'XYZ', got "
                             f"{seq!r}")
        if seq[0].lower() == seq[1].lower() or seq[1].lower() == seq[2].lower():
            raise ValueError(f"Rotation.as_euler: consecutive axes must differ, got {seq!r}")
        extrinsic = seq.islower()
        axes = [_AXES[c.lower()] for c in (seq if extrinsic else seq[::-1])]
        i, j, k = axes
        symmetric = i == k
        if symmetric:
            k = 3 - i - j
        sign = (i - j) * (j - k) * (k - i) // 2
        q = self.quat
        qw, qi, qj, qk = q[..., 3], q[..., i], q[..., j], q[..., k] * sign
        if symmetric:
            a, b, c, d = qw, qi, qj, qk
        else:
            a, b, c, d = qw - qj, qi + qk, qj + qw, qk - qi
        middle = 2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
        half_sum = jnp.arctan2(b, a)
        half_diff = jnp.arctan2(d, c)
        eps = 1e-7
        lock0 = jnp.abs(middle) <= eps
        lock_pi = jnp.abs(middle - math.pi) <= eps
        first = jnp.where(lock0, 2 * half_sum, jnp.where(lock_pi, 2 * half_diff,
                                                             half_sum - half_diff))
        third = jnp.where(lock0 | lock_pi, 0.0, half_sum + half_diff)
        if not symmetric:
            third = third * sign
            middle = middle - math.pi / 2
        if not extrinsic:
            first, third = third, first
        angles = jnp.stack([first, middle, third], -1)
        angles = jnp.remainder(angles + math.pi, 2 * math.pi) - math.pi
        angles = jnp.where(angles <= -math.pi, angles + 2 * math.pi, angles)
        return angles * (180 / math.pi) if degrees else angles

    def apply(self, vectors: Any, inverse: bool = False) -> Any:
        """Rotates ``vectors`` (3,) or (N, 3) (by the inverse with ``inverse``).

        Example:
            >>> Rotation.identity().apply(jnp.array([1.0, 2.0, 3.0])).tolist()
            [1.0, 2.0, 3.0]
        """
        v = _check_last("apply", vectors, 3)
        m = self.as_matrix()
        if inverse:
            m = jnp.swapaxes(m, -1, -2)
        return jnp.einsum("...ij,...j->...i", m, v)

    def inv(self) -> Rotation:
        """The inverse rotation(s).

        Example:
            >>> Rotation.identity().inv().as_quat().tolist()
            [-0.0, -0.0, -0.0, 1.0]
        """
        return Rotation(self.quat * jnp.asarray([-1.0, -1.0, -1.0, 1.0], self.quat.dtype))

    def magnitude(self) -> Any:
        """Rotation angles in [0, pi].

        Example:
            >>> float(Rotation.identity().magnitude())
            0.0
        """
        return 2 * jnp.arctan2(jnp.linalg.norm(self.quat[..., :3], axis=-1),
                               jnp.abs(self.quat[..., 3]))

    def mean(self, weights: Any = None) -> Rotation:
        """The (weighted) mean rotation: the principal eigenvector of sum_i w_i q_i q_i^T.

        Example:
            >>> Rotation.identity(3).mean().as_quat(canonical=True).tolist()
            [0.0, 0.0, 0.0, 1.0]
        """
        q = jnp.atleast_2d(self.quat)
        w = jnp.ones(q.shape[0], q.dtype) if weights is None else _float(weights)
        k = jnp.einsum("n,ni,nj->ij", w, q, q)
        _, vecs = jnp.linalg.eigh(k)
        return Rotation(vecs[:, -1])


class Slerp(NamedTuple):
    """Spherical linear interpolation between key rotations at increasing ``times``; build it with
    ``Slerp.init(times, rotations)`` and call it at new times.

    Example:
        >>> s = Slerp.init(jnp.array([0.0, 1.0]),
        ...                Rotation.from_rotvec(jnp.array([[0.0, 0.0, 0.0], [0.0, 0.0, 1.0]])))
        >>> [round(v, 6) for v in s(jnp.array(0.5)).as_rotvec().tolist()]
        [0.0, 0.0, 0.5]
    """

    times: Any
    timedelta: Any
    rotations: Rotation
    rotvecs: Any

    @classmethod
    def init(cls, times: Any, rotations: Rotation) -> Slerp:
        """Prepares the interpolation from key ``times`` (N,) and N key ``rotations``.

        Example:
            >>> s = Slerp.init(jnp.array([0.0, 1.0]), Rotation.identity(2))
            >>> s.rotvecs.shape
            (1, 3)
        """
        if not isinstance(rotations, Rotation) or rotations.single:
            raise TypeError("Slerp.init: rotations must be a stacked Rotation")
        times = _float(times)
        if times.ndim != 1 or times.shape[0] != len(rotations) or times.shape[0] < 2:
            raise ValueError(f"Slerp.init: times must be 1-D with one entry per rotation (at "
                             f"least 2), got shape {times.shape} for {len(rotations)} rotations")
        delta = jnp.diff(times)
        rotvecs = (rotations[:-1].inv() * rotations[1:]).as_rotvec()
        return cls(times, delta, rotations, rotvecs)

    def __call__(self, times: Any) -> Rotation:
        """The interpolated rotation(s) at ``times`` (scalar or 1-D).

        Example:
            >>> s = Slerp.init(jnp.array([0.0, 1.0]), Rotation.identity(2))
            >>> s(jnp.array([0.25, 0.75])).quat.shape
            (2, 4)
        """
        t = _float(times)
        single = t.ndim == 0
        t = jnp.atleast_1d(t)
        idx = jnp.clip(jnp.searchsorted(self.times, t, side="right") - 1, 0,
                       self.times.shape[0] - 2)
        alpha = (t - self.times[idx]) / self.timedelta[idx]
        step = Rotation.from_rotvec(self.rotvecs[idx] * alpha[:, None])
        out = Rotation(self.rotations.quat[idx]) * step
        return Rotation(out.quat[0]) if single else out

"""fluxion_scipy.spatial.transform (Rotation, Slerp) vs scipy.spatial.transform."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.random as jr
from fluxion_scipy.spatial.transform import Rotation, Slerp

sst = pytest.importorskip("scipy.spatial.transform")
jst = pytest.importorskip("jax.scipy.spatial.transform")

Q = np.random.default_rng(0).normal(size=(12, 4))


def _np(x):
    return np.asarray(x)


def test_api_matches_jax():
    for cls, ref in ((Rotation, jst.Rotation), (Slerp, jst.Slerp)):
        theirs = {n for n in dir(ref) if not n.startswith("_")}
        assert theirs <= set(dir(cls)), sorted(theirs - set(dir(cls)))


def test_conversions_vs_scipy(x64):
    s, r = sst.Rotation.from_quat(Q), Rotation.from_quat(Q)
    np.testing.assert_allclose(_np(r.as_quat(canonical=True)), s.as_quat(canonical=True),
                               atol=1e-12)
    np.testing.assert_allclose(_np(r.as_quat(scalar_first=True)),
                               s.as_quat(scalar_first=True), atol=1e-12)
    np.testing.assert_allclose(_np(r.as_matrix()), s.as_matrix(), atol=1e-12)
    np.testing.assert_allclose(_np(r.as_rotvec(degrees=True)), s.as_rotvec(degrees=True),
                               atol=1e-10)
    np.testing.assert_allclose(_np(r.as_mrp()), s.as_mrp(), atol=1e-12)
    canon = s.as_quat(canonical=True)
    for build, arg in ((Rotation.from_matrix, s.as_matrix()), (Rotation.from_rotvec, s.as_rotvec()),
                       (Rotation.from_mrp, s.as_mrp())):
        np.testing.assert_allclose(_np(build(arg).as_quat(canonical=True)), canon, atol=1e-12)
    for seq in ("xyz", "zyx", "XYZ", "ZXZ", "xzx", "YXY", "yzx"):
        np.testing.assert_allclose(_np(r.as_euler(seq)), s.as_euler(seq), atol=1e-10,
                                   err_msg=seq)
        back = Rotation.from_euler(seq, s.as_euler(seq, degrees=True), degrees=True)
        np.testing.assert_allclose(_np(back.as_quat(canonical=True)), canon, atol=1e-12)
    single = Rotation.from_euler("z", 30, degrees=True)
    assert single.single and single.quat.shape == (4,)
    with pytest.raises(ValueError, match="from_euler"):
        Rotation.from_euler("xyw", [0.1, 0.2, 0.3])


def test_composition_apply_mean(x64):
    s, r = sst.Rotation.from_quat(Q), Rotation.from_quat(Q)
    np.testing.assert_allclose(_np((r[:6] * r[6:]).as_quat(canonical=True)),
                               (s[:6] * s[6:]).as_quat(canonical=True), atol=1e-12)
    np.testing.assert_allclose(_np(r.inv().as_matrix()), s.inv().as_matrix(), atol=1e-12)
    np.testing.assert_allclose(_np(r.magnitude()), s.magnitude(), atol=1e-12)
    v = np.random.default_rng(1).normal(size=(12, 3))
    for inverse in (False, True):
        np.testing.assert_allclose(_np(r.apply(v, inverse=inverse)),
                                   s.apply(v, inverse=inverse), atol=1e-12)
    w = np.linspace(0.5, 2.0, 12)
    np.testing.assert_allclose(_np(r.mean(w).as_quat(canonical=True)),
                               s.mean(w).as_quat(canonical=True), atol=1e-10)
    both = Rotation.concatenate([r[:2], Rotation.identity()])
    assert len(both) == 3
    rand = Rotation.random(jr.key(0), 5)
    np.testing.assert_allclose(np.linalg.norm(_np(rand.quat), axis=1), 1.0, rtol=1e-12)
    with pytest.raises(TypeError):
        len(Rotation.identity())
    jitted = fluxion.jit(lambda rot, vec: rot.apply(vec))(r, v)
    np.testing.assert_allclose(_np(jitted), s.apply(v), atol=1e-12)


@pytest.mark.slow
def test_slerp_vs_scipy(x64):
    times = np.array([0.0, 1.0, 2.5, 4.0])
    keys = Q[:4]
    ours = Slerp.init(times, Rotation.from_quat(keys))
    ref = sst.Slerp(times, sst.Rotation.from_quat(keys))
    t = np.array([0.0, 0.3, 1.0, 2.0, 3.9, 4.0])
    np.testing.assert_allclose(_np(ours(t).as_quat(canonical=True)),
                               ref(t).as_quat(canonical=True), atol=1e-12)
    assert ours(1.7).single
    with pytest.raises(ValueError, match="Slerp"):
        Slerp.init(times[:3], Rotation.from_quat(keys))

"""``lax.linalg.qdwh`` and ``lax.linalg.ormqr`` against jax 0.10.2: values, shapes, dtypes,
iteration counts, ``dynamic_shape``, batching of ``ormqr`` and the errors of both."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.lax import linalg as jlinalg

import fluxion
import fluxion.numpy as fnp
from fluxion.lax import linalg


def _matrix(shape: tuple[int, ...], dtype: type, seed: int = 0) -> np.ndarray:
    r = np.random.RandomState(seed)
    x = r.randn(*shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * r.randn(*shape)
    return x.astype(dtype)


@pytest.mark.parametrize("shape,dtype", [((5, 3), np.float32), ((4, 4), np.float32),
                                         ((6, 2), np.complex64)])
@pytest.mark.parametrize("max_iterations", [None, 2])
def test_qdwh_matches_jax(shape, dtype, max_iterations) -> None:
    x = _matrix(shape, dtype)
    ours = linalg.qdwh(fnp.asarray(x), max_iterations=max_iterations)
    theirs = jlinalg.qdwh(x, max_iterations=max_iterations)
    for o, t in zip(ours, theirs):
        assert o.shape == t.shape and o.dtype == t.dtype
    np.testing.assert_allclose(np.asarray(ours[0]), np.asarray(theirs[0]), atol=2e-6)
    np.testing.assert_allclose(np.asarray(ours[1]), np.asarray(theirs[1]), atol=2e-5)
    assert int(ours[2]) == int(theirs[2]) and bool(ours[3]) == bool(theirs[3])


def test_qdwh_eps_dynamic_shape_and_jit() -> None:
    x = _matrix((6, 4), np.float32, seed=1)
    padded = np.zeros((8, 5), np.float32)
    padded[:6, :4] = x
    kw = dict(eps=1e-3, dynamic_shape=(6, 4))
    ours = fluxion.jit(lambda v: linalg.qdwh(v, **kw))(fnp.asarray(padded))
    theirs = jlinalg.qdwh(padded, **kw)
    np.testing.assert_allclose(np.asarray(ours[0]), np.asarray(theirs[0]), atol=2e-5)
    np.testing.assert_allclose(np.asarray(ours[1]), np.asarray(theirs[1]), atol=2e-4)
    assert int(ours[2]) == int(theirs[2])
    u, h = np.asarray(ours[0])[:6, :4], np.asarray(ours[1])[:4, :4]
    np.testing.assert_allclose(u @ h, x, atol=1e-4)


def test_qdwh_errors_as_jax() -> None:
    wide = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="M >= N"):
        jlinalg.qdwh(wide)
    with pytest.raises(ValueError, match="M >= N"):
        linalg.qdwh(fnp.asarray(wide))
    with pytest.raises(Exception, match="statically"):
        fluxion.jit(lambda k: linalg.qdwh(np.eye(2, dtype=np.float32), max_iterations=k))(3)


@pytest.mark.parametrize("shape,dtype", [((5, 3), np.float32), ((3, 5), np.float32),
                                         ((4, 4), np.complex64), ((2, 5, 3), np.float32)])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
def test_ormqr_matches_jax(shape, dtype, left, transpose) -> None:
    a = _matrix(shape, dtype)
    h, taus = jnp.linalg.qr(a, mode="raw")
    h = h.mT
    m = shape[-2]
    c = _matrix(shape[:-2] + ((m, 2) if left else (2, m)), dtype, seed=2)
    theirs = jlinalg.ormqr(h, taus, c, left=left, transpose=transpose)
    ours = linalg.ormqr(fnp.asarray(np.asarray(h)), fnp.asarray(np.asarray(taus)),
                        fnp.asarray(c), left=left, transpose=transpose)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), atol=3e-6)


def test_ormqr_vmap_and_errors_as_jax() -> None:
    a = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    h, taus = jnp.linalg.qr(a, mode="raw")
    h, taus = np.asarray(h.mT), np.asarray(taus)
    cs = _matrix((4, 3, 3), np.float32)
    theirs = jax.vmap(lambda c: jlinalg.ormqr(h, taus, c))(cs)
    ours = fluxion.vmap(lambda c: linalg.ormqr(h, taus, c))(fnp.asarray(cs))
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), atol=3e-6)
    for mod in (jlinalg, linalg):
        with pytest.raises(ValueError, match="same number of rows"):
            mod.ormqr(h, taus, np.eye(2, dtype=np.float32))
        with pytest.raises(ValueError, match="same number of columns"):
            mod.ormqr(h, taus, np.eye(2, dtype=np.float32), left=False)
        with pytest.raises(TypeError, match="same dtypes"):
            mod.ormqr(h, taus, np.eye(3, dtype=np.float16))


@pytest.mark.parametrize("shape,dtype", [((5, 3), np.float32), ((3, 6), np.float32),
                                         ((4, 3), np.complex64)])
def test_tpu_svd_path_through_qdwh(shape, dtype) -> None:
    # svd's QDWH-based lowering (the TPU's, as JAX's svd calls qdwh), run eagerly here
    import importlib

    svd_module = importlib.import_module("fluxion.lax.linalg.svd")
    x = _matrix(shape, dtype, seed=3)
    k = min(shape)
    s, u, v = (np.asarray(t) for t in svd_module._svd_qdwh(fnp.asarray(x), False, True, 0, k))
    np.testing.assert_allclose(s, np.linalg.svd(x, compute_uv=False), atol=3e-6)
    vh = v if v.shape == (k, shape[1]) else v.conj().T
    np.testing.assert_allclose((u * s) @ vh, x, atol=5e-6)

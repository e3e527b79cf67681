"""The samplers built on fluxion.numpy.linalg — multivariate_normal (cholesky/eigh/svd) and
orthogonal — vs jax.random for the same keys (within float tolerance), with x64 off and on, under
jit and vmap over keys."""

from __future__ import annotations

import os

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from _compare import assert_close, x64_both

import fluxion
import fluxion.numpy as fjnp
from fluxion import random as fr

_PLATFORM = os.environ.get("FLUXION_TEST_PLATFORM", "cpu")


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def mode(request):
    with x64_both(request.param):
        yield request.param


def close(ours, theirs, rtol=None, atol=None):
    tol = 1e-10 if np.asarray(ours).dtype in (np.float64, np.complex128) else 2e-5
    assert_close(ours, theirs, tol, rtol=rtol, atol=atol)


def _cov(n, batch=(), seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + 0.5 * np.eye(n)


MVN_CASES = [
    # (mean shape, cov batch, n, shape)
    ((3,), (), 3, None),
    ((3,), (), 3, (4,)),
    ((2, 3), (), 3, None),
    ((3,), (2,), 3, (5, 2)),
    ((2, 1, 4), (3,), 4, None),
    ((1,), (), 1, (2,)),
]


@pytest.mark.parametrize("method", ["cholesky", "eigh", "svd"])
@pytest.mark.parametrize("seed", [0, pytest.param(7, marks=pytest.mark.slow),
                                  pytest.param(2 ** 31 + 3, marks=pytest.mark.slow)])
def test_multivariate_normal_matches_jax(mode, method, seed):
    for mshape, cbatch, n, shape in MVN_CASES:
        rng = np.random.default_rng(seed % 1000)
        mean = rng.standard_normal(mshape)
        cov = _cov(n, cbatch, seed % 1000)
        ours = fr.multivariate_normal(fr.key(seed), mean, cov, shape, method=method)
        theirs = jax.random.multivariate_normal(jax.random.key(seed), mean, cov, shape,
                                                method=method)
        close(ours, theirs, rtol=1e-4 if not mode else None, atol=1e-4 if not mode else None)


@pytest.mark.filterwarnings("ignore:Explicitly requested dtype")
def test_multivariate_normal_dtypes(mode):
    mean32, cov32 = np.zeros(2, np.float32), np.eye(2, dtype=np.float32)
    for args, kw in [((mean32, cov32), {}), ((mean32, cov32), {"dtype": np.float32}),
                     ((np.zeros(2, np.int32), np.eye(2, dtype=np.int32)), {}),
                     ((np.zeros(2), np.eye(2)), {}), ((mean32, np.eye(2)), {}),
                     ((mean32, cov32), {"dtype": np.float64})]:
        ours = fr.multivariate_normal(fr.key(3), *args, **kw)
        theirs = jax.random.multivariate_normal(jax.random.key(3), *args, **kw)
        close(ours, theirs, rtol=1e-5, atol=1e-5)
    # raw uint32 key data works like a typed key
    close(fr.multivariate_normal(fr.PRNGKey(5), mean32, cov32, (3,)),
          jax.random.multivariate_normal(jax.random.PRNGKey(5), mean32, cov32, (3,)),
          rtol=1e-5, atol=1e-5)


def test_multivariate_normal_singular_cov_with_eigh_svd():
    mean = np.zeros(3, np.float32)
    v = np.array([1.0, 2.0, -1.0], np.float32)
    cov = np.outer(v, v)  # rank 1
    for method in ("eigh", "svd"):
        ours = fr.multivariate_normal(fr.key(1), mean, cov, (2000,), method=method)
        theirs = jax.random.multivariate_normal(jax.random.key(1), mean, cov, (2000,),
                                                method=method)
        # (eigh may return a tiny negative eigenvalue, whose square root is NaN in both; a TPU's
        # Eigh kernel returned a non-negative one where LAPACK's is negative, so there our finite
        # samples are compared where the reference's are finite, and NaNs must be the reference's)
        o, t = np.asarray(ours), np.asarray(theirs)
        if _PLATFORM != "cpu":
            assert not (np.isnan(o) & ~np.isnan(t)).any()
            o, t = o[~np.isnan(t)], t[~np.isnan(t)]
        np.testing.assert_allclose(o, t, rtol=1e-3, atol=1e-3)
        if method == "eigh":
            continue
        # samples lie on the line spanned by v, with the right variance
        o = np.asarray(ours)
        np.testing.assert_allclose(o - np.outer(o @ v / (v @ v), v), 0.0, atol=1e-2)
        np.testing.assert_allclose(np.cov(o.T), cov, rtol=0.15, atol=0.15)


def test_multivariate_normal_errors():
    k = fr.key(0)
    with pytest.raises(ValueError, match="method"):
        fr.multivariate_normal(k, np.zeros(2), np.eye(2), method="lu")
    with pytest.raises(ValueError, match="mean.ndim"):
        fr.multivariate_normal(k, 0.0, np.eye(2))
    with pytest.raises(ValueError, match="cov.ndim"):
        fr.multivariate_normal(k, np.zeros(2), np.ones(2))
    with pytest.raises(ValueError, match=r"cov.shape == \(\.\.\., n, n\) for n=2"):
        fr.multivariate_normal(k, np.zeros(2), np.eye(3))
    with pytest.raises(ValueError, match="broadcast"):
        fr.multivariate_normal(k, np.zeros((3, 2)), np.eye(2), shape=(2,))
    with pytest.raises(ValueError, match="float"):
        fr.multivariate_normal(k, np.zeros(2), np.eye(2), dtype=np.int32)


ORTH_CASES = [(3, (), None), (4, (2,), None), (2, (3, 2), None), (4, (), 2), (2, (2,), 5),
              (1, (), None)]


@pytest.mark.parametrize("seed", [0, pytest.param(11, marks=pytest.mark.slow),
                                  pytest.param(2 ** 32 - 1, marks=pytest.mark.slow)])
def test_orthogonal_matches_jax(mode, seed):
    for n, shape, m in ORTH_CASES:
        ours = fr.orthogonal(fr.key(seed), n, shape, m=m)
        theirs = jax.random.orthogonal(jax.random.key(seed), n, shape, m=m)
        close(ours, theirs)
        q = np.asarray(ours)
        mm = n if m is None else m
        assert q.shape == (*shape, n, mm)
        gram = q @ np.swapaxes(q, -1, -2) if n <= mm else np.swapaxes(q, -1, -2) @ q
        np.testing.assert_allclose(gram, np.broadcast_to(np.eye(min(n, mm)), gram.shape),
                                   atol=1e-5)


@pytest.mark.filterwarnings("ignore:Explicitly requested dtype")
def test_orthogonal_dtypes(mode):
    for dt in (np.float32, np.complex64, np.float64, np.complex128):
        ours = fr.orthogonal(fr.key(2), 3, (2,), dtype=dt)
        theirs = jax.random.orthogonal(jax.random.key(2), 3, (2,), dtype=dt)
        close(ours, theirs)
    q = np.asarray(fr.orthogonal(fr.key(2), 3, dtype=np.complex64))
    np.testing.assert_allclose(q @ q.conj().T, np.eye(3), atol=1e-5)
    with pytest.raises(ValueError, match="orthogonal"):
        fr.orthogonal(fr.key(0), 3, dtype=np.int32)
    with pytest.raises(TypeError, match="orthogonal"):
        fr.orthogonal(fr.key(0), 2.5)


def test_under_jit(mode):
    mean, cov = np.arange(3.0), _cov(3, seed=4)

    def ours(k, mu, c):
        return (fr.multivariate_normal(k, mu, c, (2,), method="eigh"),
                fr.orthogonal(k, 3, (2,)))

    def theirs(k, mu, c):
        return (jax.random.multivariate_normal(k, mu, c, (2,), method="eigh"),
                jax.random.orthogonal(k, 3, (2,)))

    o = fluxion.jit(ours)(fr.key(9), fjnp.asarray(mean), fjnp.asarray(cov))
    t = jax.jit(theirs)(jax.random.key(9), jjnp.asarray(mean), jjnp.asarray(cov))
    pairs = list(zip(o, t))
    if _PLATFORM != "cpu":
        # A TPU's Eigh kernel picks other eigenvector signs than LAPACK's (the reference's), so
        # the eigh samples there are the chip's own factor applied to the same normal draws
        # (mean + z @ (V sqrt(w))^T, which is jax's construction); orthogonal is compared as is.
        w, v = fjnp.linalg.eigh(fjnp.asarray(cov))
        z = np.asarray(fr.normal(fr.key(9), (2, 3), np.asarray(o[0]).dtype))
        factor = np.asarray(v) * np.sqrt(np.asarray(w))[None, :]
        pairs[0] = (o[0], (mean + z @ factor.T).astype(z.dtype))
    for a, b in pairs:
        close(a, b, rtol=1e-4 if not mode else None, atol=1e-4 if not mode else None)
    e = ours(fr.key(9), mean, cov)
    for a, b in zip(o, e):
        close(a, b)


def test_vmap_over_keys(mode):
    mean, cov = np.zeros(3), _cov(3, seed=5)
    fk, jk = fr.split(fr.key(4), 5), jax.random.split(jax.random.key(4), 5)
    for method in ("cholesky", "svd"):
        ours = fluxion.vmap(lambda k: fr.multivariate_normal(k, mean, cov, (2,),
                                                             method=method))(fk)
        theirs = jax.vmap(lambda k: jax.random.multivariate_normal(k, mean, cov, (2,),
                                                                   method=method))(jk)
        close(ours, theirs, rtol=1e-4 if not mode else None, atol=1e-4 if not mode else None)
        loop = np.stack([np.asarray(fr.multivariate_normal(fk[i], mean, cov, (2,), method=method))
                         for i in range(5)])
        close(ours, loop, rtol=1e-5, atol=1e-5)
    ours = fluxion.vmap(lambda k: fr.orthogonal(k, 3))(fk)
    theirs = jax.vmap(lambda k: jax.random.orthogonal(k, 3))(jk)
    close(ours, theirs)


def test_grad_through_multivariate_normal():
    # reparameterised: d/dmean sum(sample) == number of samples per component
    cov = _cov(2, seed=6).astype(np.float32)
    g = fluxion.grad(lambda mu: fr.multivariate_normal(fr.key(0), mu, cov, (3,)).sum())(
        fjnp.zeros(2))
    np.testing.assert_allclose(np.asarray(g), [3.0, 3.0])
    go = fluxion.grad(lambda c: fr.multivariate_normal(fr.key(0), np.zeros(2, np.float32), c,
                                                       (3,)).sum())(cov)
    gt = jax.grad(lambda c: jax.random.multivariate_normal(jax.random.key(0),
                                                           np.zeros(2, np.float32), c,
                                                           (3,)).sum())(cov)
    np.testing.assert_allclose(np.asarray(go), np.asarray(gt), rtol=1e-3, atol=1e-3)

"""fluxion_scipy.stats: every method of every distribution vs scipy.stats (and jax.scipy.stats
names), sampling moments, kde, mode/rankdata/sem."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
import fluxion.random as jr
import fluxion_scipy.stats as fst

sst = pytest.importorskip("scipy.stats")
jax = pytest.importorskip("jax")
jst = pytest.importorskip("jax.scipy.stats")

X = np.array([-2.5, -0.3, 0.0, 0.2, 0.7, 1.0, 1.9, 4.0])
Q = np.array([0.001, 0.1, 0.5, 0.77, 0.999])
K = np.array([-1.0, 0.0, 1.0, 2.0, 3.0, 7.0])

# module name: (scipy distribution, shape parameters, loc/scale keywords, points, quantiles)
CONTINUOUS = {
    "norm": (sst.norm, (), {"loc": 0.3, "scale": 1.7}, X, Q),
    "expon": (sst.expon, (), {"loc": -0.5, "scale": 2.0}, X, Q),
    "cauchy": (sst.cauchy, (), {"loc": 0.1, "scale": 0.8}, X, Q),
    "laplace": (sst.laplace, (), {"loc": 0.1, "scale": 0.8}, X, Q),
    "logistic": (sst.logistic, (), {"loc": 0.1, "scale": 0.8}, X, Q),
    "uniform": (sst.uniform, (), {"loc": -1.0, "scale": 3.0}, X, Q),
    "gamma": (sst.gamma, (2.5,), {"loc": -0.5, "scale": 1.5}, X, Q),
    "chi2": (sst.chi2, (3.0,), {"loc": -0.5, "scale": 1.5}, X, Q),
    "beta": (sst.beta, (2.0, 3.5), {"loc": -1.0, "scale": 3.0}, X, Q),
    "t": (sst.t, (4.0,), {"loc": 0.2, "scale": 1.3}, X, Q),
    "pareto": (sst.pareto, (2.5,), {"loc": -1.0, "scale": 1.2}, X, Q),
    "gumbel_r": (sst.gumbel_r, (), {"loc": 0.2, "scale": 1.3}, X, Q),
    "gumbel_l": (sst.gumbel_l, (), {"loc": 0.2, "scale": 1.3}, X, Q),
    "truncnorm": (sst.truncnorm, (-1.0, 2.0), {"loc": 0.5, "scale": 1.2}, X, Q),
    "gennorm": (sst.gennorm, (1.5,), {}, X, Q),
    "vonmises": (sst.vonmises, (2.0,), {}, np.array([-3.0, -1.0, 0.0, 0.5, 2.9]), Q),
    "wrapcauchy": (sst.wrapcauchy, (0.4,), {}, np.array([0.1, 1.0, 3.0, 6.0]), Q),
}
DISCRETE = {
    "bernoulli": (sst.bernoulli, (0.3,), {"loc": 0.0}, np.array([-1.0, 0.0, 1.0, 2.0])),
    "binom": (sst.binom, (7.0, 0.3), {"loc": 0.0}, K),
    "betabinom": (sst.betabinom, (7.0, 2.0, 3.0), {"loc": 1.0}, K),
    "nbinom": (sst.nbinom, (3.0, 0.4), {"loc": 0.0}, K),
    "geom": (sst.geom, (0.3,), {"loc": 0.0}, K),
    "poisson": (sst.poisson, (2.5,), {"loc": 0.0}, K),
}
QUANTILE_METHODS = {"ppf", "isf"}


def _methods(name):
    mod = getattr(jst, name)
    return sorted(m for m in dir(mod) if not m.startswith("_") and callable(getattr(mod, m))
                  and m[0].islower() and m not in {"promote_args_inexact", "gammaln", "xlogy",
                                                   "jnp", "lax", "np"}
                  and getattr(getattr(mod, m), "__module__", "").startswith("jax._src.scipy.stats"))


def _call(ours_mod, method, pts, shape, kw):
    # JAX's signatures: loc/scale only on some methods (e.g. bernoulli.cdf(k, p)).
    import inspect
    fn = getattr(getattr(jst, ours_mod), method)
    params = inspect.signature(fn).parameters
    kw = {k: v for k, v in kw.items() if k in params}
    return getattr(getattr(fst, ours_mod), method)(jnp.asarray(pts), *shape, **kw), kw


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_continuous_methods_vs_scipy(name, x64):
    dist, shape, kw, pts, qs = CONTINUOUS[name]
    methods = _methods(name)
    assert set(methods) <= set(getattr(fst, name).__all__), methods
    for method in methods:
        arg = qs if method in QUANTILE_METHODS else pts
        ours, used = _call(name, method, arg, shape, kw)
        ref = getattr(dist, method)(arg, *shape, **used)
        np.testing.assert_allclose(np.asarray(ours), ref, rtol=1e-9, atol=1e-12,
                                   err_msg=f"{name}.{method}")
        assert np.asarray(ours).dtype == np.float64


@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_discrete_methods_vs_scipy(name, x64):
    dist, shape, kw, ks = DISCRETE[name]
    for method in _methods(name):
        arg = Q if method in QUANTILE_METHODS else ks
        if method == "entropy":
            mus = np.array([0.3, 2.5, 40.0, 350.0])
            np.testing.assert_allclose(np.asarray(getattr(fst, name).entropy(mus)),
                                       dist.entropy(mus), rtol=1e-6)
            continue
        ours, used = _call(name, method, arg, shape, kw)
        if method == "ppf" and name == "bernoulli":
            ref = getattr(jst, name).ppf(arg, *shape)  # SciPy's ppf(0) is -1; JAX's is 0
        else:
            ref = getattr(dist, method)(arg, *shape, **used)
        np.testing.assert_allclose(np.asarray(ours), ref, rtol=1e-9, atol=1e-12,
                                   err_msg=f"{name}.{method}")


def test_multivariate_distributions(x64):
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 3))
    cov = a @ a.T + 3 * np.eye(3)
    mean = np.array([0.1, -0.2, 0.3])
    x = rng.normal(size=(4, 3))
    np.testing.assert_allclose(np.asarray(fst.multivariate_normal.logpdf(x, mean, cov)),
                               sst.multivariate_normal.logpdf(x, mean, cov), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(fst.multivariate_normal.pdf(x[0], mean, cov)),
                               sst.multivariate_normal.pdf(x[0], mean, cov), rtol=1e-10)
    np.testing.assert_allclose(float(fst.multivariate_normal.logpdf(0.3, 0.1, 2.0)),
                               sst.norm.logpdf(0.3, 0.1, np.sqrt(2.0)), rtol=1e-12)
    with pytest.raises(ValueError, match="multivariate_normal"):
        fst.multivariate_normal.logpdf(x, mean, np.eye(2))
    alpha = np.array([1.5, 2.0, 3.0])
    pts = np.array([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]).T
    np.testing.assert_allclose(np.asarray(fst.dirichlet.logpdf(pts, alpha)),
                               sst.dirichlet.logpdf(pts, alpha), rtol=1e-10)
    np.testing.assert_allclose(float(fst.dirichlet.pdf(pts[:2, 0], alpha)),
                               sst.dirichlet.pdf(pts[:, 0], alpha), rtol=1e-10)
    counts = np.array([1.0, 3.0, 2.0])
    p = np.array([0.2, 0.5, 0.3])
    np.testing.assert_allclose(float(fst.multinomial.logpmf(counts, 6, p)),
                               sst.multinomial.logpmf(counts, 6, p), rtol=1e-10)
    np.testing.assert_allclose(float(fst.multinomial.pmf(counts, 6, p)),
                               sst.multinomial.pmf(counts, 6, p), rtol=1e-10)
    assert float(fst.multinomial.logpmf(counts, 5, p)) == -np.inf


def test_float32_and_jit_vmap_identities():
    x = jnp.asarray(X.astype(np.float32))
    out = fst.norm.logcdf(x, 0.3, 1.7)
    assert out.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(out), sst.norm.logcdf(X, 0.3, 1.7), rtol=1e-5)
    f = lambda v: fst.gamma.logpdf(v, 2.5, -0.5, 1.5)  # noqa: E731
    np.testing.assert_allclose(np.asarray(fluxion.jit(f)(x)), np.asarray(f(x)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(fluxion.vmap(f)(x)), np.asarray(f(x)), rtol=1e-6)


def test_gradients_vs_jax(x64):
    cases = [("norm", "logcdf", (-3.0, 0.2, 1.1)), ("gamma", "logpdf", (1.3, 2.5)),
             ("t", "logpdf", (0.7, 3.0)), ("beta", "cdf", (0.3, 2.0, 3.0)),
             ("truncnorm", "logpdf", (0.4, -1.0, 2.0)), ("poisson", "logpmf", (3.0, 2.5)),
             ("gumbel_l", "logsf", (0.4,)), ("logistic", "logpdf", (0.6, 0.1, 2.0))]
    for name, method, args in cases:
        ours = fluxion.grad(getattr(getattr(fst, name), method))(*args)
        # the reference jitted: JAX's eager grad compiles each op on its own (5x the time)
        ref = jax.jit(jax.grad(getattr(getattr(jst, name), method)))(*args)
        np.testing.assert_allclose(float(ours), float(ref), rtol=1e-8, err_msg=f"{name}.{method}")


@pytest.mark.parametrize("name, args, ref", [
    ("norm", (1.0, 2.0), (1.0, 4.0)), ("gamma", (3.0,), (3.0, 3.0)),
    ("uniform", (-1.0, 2.0), (0.0, 1.0 / 3.0)),
] + [pytest.param(*c, marks=pytest.mark.slow) for c in [
    ("expon", (0.5, 2.0), (2.5, 4.0)), ("beta", (2.0, 3.0), (0.4, 0.04)),
    ("poisson", (4.0,), (4.0, 4.0)), ("laplace", (0.0, 1.0), (0.0, 2.0)),
    ("chi2", (3.0,), (3.0, 6.0))]])
def test_rvs_moments(name, args, ref):
    draws = np.asarray(getattr(fst, name).rvs(jr.key(0), *args, shape=(20000,)), np.float64)
    assert draws.shape == (20000,)
    mean, var = ref
    np.testing.assert_allclose(draws.mean(), mean, atol=4 * np.sqrt(var / 20000) + 1e-3)
    np.testing.assert_allclose(draws.var(), var, rtol=0.08)


@pytest.mark.slow
def test_rvs_shapes_and_supports():
    key = jr.key(1)
    assert fst.norm.rvs(key, jnp.zeros(3), 1.0).shape == (3,)
    assert fst.dirichlet.rvs(key, jnp.ones(4), shape=(2,)).shape == (2, 4)
    assert fst.multivariate_normal.rvs(key, jnp.zeros(2), jnp.eye(2), shape=(5,)).shape == (5, 2)
    tn = np.asarray(fst.truncnorm.rvs(key, -0.5, 1.0, shape=(500,)))
    assert tn.min() >= -0.5 and tn.max() <= 1.0
    assert set(np.unique(np.asarray(fst.bernoulli.rvs(key, 0.5, shape=(100,))))) <= {0, 1}
    assert np.asarray(fst.geom.rvs(key, 0.3, shape=(100,))).min() >= 1


def test_gaussian_kde_vs_scipy(x64):
    rng = np.random.default_rng(3)
    data = rng.normal(size=(2, 30))
    w = rng.uniform(0.5, 1.5, size=30)
    pts = rng.normal(size=(2, 5))
    for bw in ("silverman",):
        ours = fst.gaussian_kde(data, bw_method=bw, weights=w)
        ref = sst.gaussian_kde(data, bw_method=bw, weights=w)
        np.testing.assert_allclose(np.asarray(ours.evaluate(pts)), ref.evaluate(pts), rtol=1e-10)
        np.testing.assert_allclose(np.asarray(ours.logpdf(pts)), ref.logpdf(pts), rtol=1e-10)
        np.testing.assert_allclose(np.asarray(ours.covariance), ref.covariance, rtol=1e-10)
    jitted = fluxion.jit(lambda k, p: k.pdf(p))(ours, pts)
    np.testing.assert_allclose(np.asarray(jitted), ref.evaluate(pts), rtol=1e-10)


@pytest.mark.slow
def test_gaussian_kde_integrals_and_resample(x64):
    rng = np.random.default_rng(3)
    data = rng.normal(size=(2, 30))
    w = rng.uniform(0.5, 1.5, size=30)
    ours = fst.gaussian_kde(data, weights=w)
    ref = sst.gaussian_kde(data, weights=w)
    np.testing.assert_allclose(float(ours.integrate_gaussian(np.zeros(2), np.eye(2))),
                               ref.integrate_gaussian(np.zeros(2), np.eye(2)), rtol=1e-10)
    other = sst.gaussian_kde(data[:, :10])
    np.testing.assert_allclose(float(ours.integrate_kde(fst.gaussian_kde(data[:, :10]))),
                               ref.integrate_kde(other), rtol=1e-10)
    one = fst.gaussian_kde(data[0])
    np.testing.assert_allclose(float(one.integrate_box_1d(-0.5, 1.0)),
                               sst.gaussian_kde(data[0]).integrate_box_1d(-0.5, 1.0), rtol=1e-10)
    assert ours.resample(jr.key(0), (7,)).shape == (2, 7)
    with pytest.raises(NotImplementedError):
        ours.set_bandwidth("scott")


def test_mode_rankdata_sem(x64):
    a = np.array([[3, 1, 2, 2, 5], [4, 4, 1, 1, 0], [7, 7, 7, 1, 1]])
    for axis in (1, None):
        ours = fst.mode(a, axis=axis)
        ref = sst.mode(a, axis=axis)
        np.testing.assert_array_equal(np.asarray(ours.mode), ref.mode)
        np.testing.assert_array_equal(np.asarray(ours.count), ref.count)
    assert fst.mode(a, axis=1, keepdims=True).mode.shape == (3, 1)
    b = np.array([[10, 30, 20, 20, 5], [1, 1, 1, 2, 0]])
    for method in ("average", "min", "max", "dense", "ordinal"):
        for axis in ((None, 1) if method == "average" else (1,)):
            np.testing.assert_array_equal(np.asarray(fst.rankdata(b, method, axis=axis)),
                                          sst.rankdata(b, method, axis=axis), err_msg=method)
    with pytest.raises(ValueError, match="rankdata"):
        fst.rankdata(b, "bogus")
    c = np.random.default_rng(0).normal(size=(6, 4))
    for axis, ddof in ((0, 1), (None, 0)):
        np.testing.assert_allclose(np.asarray(fst.sem(c, axis=axis, ddof=ddof)),
                                   sst.sem(c, axis=axis, ddof=ddof), rtol=1e-12)


def test_names_match_jax():
    theirs = {n for n in dir(jst) if not n.startswith("_")}
    assert theirs <= set(fst.__all__), sorted(theirs - set(fst.__all__))

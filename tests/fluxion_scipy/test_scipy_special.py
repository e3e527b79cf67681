"""fluxion_scipy.special: values vs scipy.special, gradients vs jax.scipy.special, jit/vmap."""

from __future__ import annotations

import numpy as np
import pytest
from _compare import platform_tol

import fluxion
import fluxion.numpy as jnp
import fluxion_scipy.special as fsp

ss = pytest.importorskip("scipy.special")
jax = pytest.importorskip("jax")
jsp = pytest.importorskip("jax.scipy.special")

RNG = np.random.default_rng(0)
POS = np.array([0.05, 0.3, 0.9, 1.0, 1.7, 3.2, 7.5, 12.0, 31.0])
REAL = np.array([-6.5, -2.2, -0.7, -0.05, 0.0, 0.4, 1.1, 2.5, 5.0, 9.0])
UNIT = np.array([1e-12, 1e-6, 0.01, 0.2, 0.5, 0.73, 0.99, 1 - 1e-7])

# name: (SciPy reference, arguments, rtol in float64)
VALUE_CASES = {
    "gammaln": (ss.gammaln, (np.r_[POS, -0.5, -2.5],), 1e-12),
    "gammasgn": (ss.gammasgn, (np.r_[POS, -0.5, -1.5, -2.5],), 0),
    "gamma": (ss.gamma, (np.r_[POS[:-1], -0.5, -1.5],), 1e-12),
    "loggamma": (ss.loggamma, (POS,), 1e-12),
    "betaln": (ss.betaln, (POS, POS[::-1]), 1e-11),
    "beta": (ss.beta, (POS[:-2], POS[::-1][2:]), 1e-11),
    "factorial": (lambda n: ss.factorial(n, exact=False), (np.array([0., 1, 3, 7, 12, -1]),), 1e-12),
    "comb": (ss.comb, (np.array([5., 10, 7, 3, 20]), np.array([2., 3, 7, 5, 10])), 1e-11),
    "digamma": (ss.digamma, (np.r_[POS, -0.5],), 1e-11),
    "polygamma": (ss.polygamma, (np.array([0., 1, 2, 3, 1]), np.array([0.5, 1.0, 2.5, 4.0, 9.0])),
                  1e-9),
    "gammainc": (ss.gammainc, (POS, POS[::-1]), 1e-10),
    "gammaincc": (ss.gammaincc, (POS, POS[::-1]), 1e-10),
    "multigammaln": (lambda a: ss.multigammaln(a, 3), (np.array([1.5, 2.0, 7.3]),), 1e-12),
    "poch": (ss.poch, (np.array([2.0, 0.5, 3.3, -0.5]), np.array([3.0, 1.5, 0.0, 2.0])), 1e-11),
    "erf": (ss.erf, (REAL,), 1e-13),
    "erfc": (ss.erfc, (REAL,), 1e-13),
    "erfinv": (ss.erfinv, (np.array([-0.999, -0.5, 0.0, 0.3, 0.9, 0.999999]),), 1e-12),
    "erfcx": (ss.erfcx, (np.r_[REAL, 1.99, 2.01, 20.0, 300.0],), 1e-12),
    "dawsn": (ss.dawsn, (np.r_[REAL, 20.0, 1e5],), 1e-12),
    "ndtr": (ss.ndtr, (np.r_[REAL, -30.0, 30.0],), 1e-12),
    "ndtri": (ss.ndtri, (np.r_[UNIT, 1e-300],), 1e-12),
    "log_ndtr": (ss.log_ndtr, (np.r_[REAL, -15.0, -25.0, -80.0, 12.0],), 1e-11),
    "owens_t": (ss.owens_t, (np.array([0.0, 0.5, -1.0, 2.0, 0.3, 3.0]),
                             np.array([1.0, 0.4, 2.5, -0.7, 25.0, 1.5])), 1e-11),
    "fresnel": (ss.fresnel, (np.r_[REAL, 0.49, 0.51, 40.0],), 1e-11),
    "logsumexp": (ss.logsumexp, (REAL,), 1e-13),
    "xlogy": (ss.xlogy, (np.array([0.0, 1.0, 2.5, -1.0]), np.array([0.0, 3.0, 0.5, 2.0])), 1e-14),
    "xlog1py": (ss.xlog1py, (np.array([0.0, 1.0, 2.5]), np.array([-1.0, 3.0, 0.5])), 1e-14),
    "entr": (ss.entr, (np.array([0.0, 0.3, 1.0, 4.0, -1.0]),), 1e-14),
    "rel_entr": (ss.rel_entr, (np.array([0.0, 0.3, 1.0, 4.0, -1.0]),
                               np.array([1.0, 0.5, 1.0, 0.0, 1.0])), 1e-14),
    "kl_div": (ss.kl_div, (np.array([0.0, 0.3, 1.0, 4.0]), np.array([1.0, 0.5, 1.0, 2.0])), 1e-14),
    "expit": (ss.expit, (REAL,), 1e-14),
    "logit": (ss.logit, (UNIT[1:],), 1e-12),
    "boxcox": (ss.boxcox, (POS, np.linspace(-1, 2, POS.size)), 1e-12),
    "boxcox1p": (ss.boxcox1p, (POS, np.linspace(-1, 2, POS.size)), 1e-12),
    "i0": (ss.i0, (REAL,), 1e-12),
    "i0e": (ss.i0e, (REAL,), 1e-12),
    "i1": (ss.i1, (REAL,), 1e-12),
    "i1e": (ss.i1e, (REAL,), 1e-12),
    "expi": (ss.expi, (np.r_[REAL[REAL != 0], 45.0, 60.0],), 1e-12),
    "exp1": (ss.exp1, (np.r_[POS, 0.0, 1.0, 1.01, 60.0],), 1e-12),
    "expn": (ss.expn, (np.array([0., 1, 2, 3, 5, 10, 2, 3]),
                       np.array([0.5, 0.3, 1.0, 2.5, 0.1, 0.7, 0.0, 12.0])), 1e-11),
    "sici": (ss.sici, (np.r_[POS, 3.99, 4.01, 100.0],), 1e-11),
    "spence": (ss.spence, (np.r_[POS, 0.0, 0.5, 1.5, 2.0, 100.0],), 1e-12),
    "hyp1f1": (ss.hyp1f1, (np.array([1.0, 0.5, -2.0, 2.3]), np.array([1.0, 1.5, 3.0, 0.7]),
                           np.array([1.0, -4.0, 3.3, 10.0])), 1e-10),
    "hyp2f1": (ss.hyp2f1, (np.array([1.0, 0.5, -2.0, 1.5, 0.3, 0.4]),
                           np.array([1.0, 1.5, 3.0, 0.7, 0.6, 0.2]),
                           np.array([2.0, 2.5, 1.5, 3.1, 2.2, 1.1]),
                           np.array([0.5, -3.0, 0.8, 0.95, 1.0, -0.5])), 1e-10),
    "zeta": (ss.zeta, (np.array([2.0, 3.5, 1.5, 7.0]), np.array([1.0, 0.5, 3.0, 2.2])), 1e-12),
    "betainc": (ss.betainc, (np.array([2.0, 0.5, 5.0, 1.5]), np.array([3.0, 0.7, 1.2, 9.0]),
                             np.array([0.5, 0.1, 0.95, 0.3])), 1e-10),
    "wofz": (ss.wofz, (np.array([1 + 1j, -2.5 + 0.3j, 0.1 - 3j, 6 + 6j, -0.2 - 0.1j, 12 + 0.01j]),),
             1e-12),
}


# Functions with a static argument: how to call ours with the table's arguments.
OURS = {"multigammaln": lambda a: fsp.multigammaln(a, 3)}


def _ours(name):
    return OURS.get(name, getattr(fsp, name))


def _close(ours, ref, rtol, atol=0.0):
    ours = ours if isinstance(ours, tuple) else (ours,)
    ref = ref if isinstance(ref, tuple) else (ref,)
    for o, r in zip(ours, ref):
        np.testing.assert_allclose(np.asarray(o), np.asarray(r), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(VALUE_CASES))
def test_values_float64_vs_scipy(name, x64):
    ref_fn, args, rtol = VALUE_CASES[name]
    _close(_ours(name)(*[jnp.asarray(a) for a in args]), ref_fn(*args), rtol, 1e-300)


# float32 runs every function once more (compiles included): a representative few by default.
FAST32 = {"gammaln", "log_ndtr", "wofz", "hyp1f1"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in FAST32 else pytest.mark.slow)
                                  for n in sorted(VALUE_CASES)])
def test_values_float32_vs_scipy(name):
    ref_fn, args, _ = VALUE_CASES[name]
    args32 = [a.astype(np.complex64 if np.iscomplexobj(a) else np.float32) for a in args]
    out = _ours(name)(*[jnp.asarray(a) for a in args32])
    first = out[0] if isinstance(out, tuple) else out
    assert np.asarray(first).dtype in (np.float32, np.complex64)
    ref = ref_fn(*[a.astype(np.float64 if a.dtype == np.float32 else np.complex128)
                   for a in args32])
    ours = out if isinstance(out, tuple) else (out,)
    refs = ref if isinstance(ref, tuple) else (ref,)
    for o, r in zip(ours, refs):
        o, r = np.asarray(o).astype(r.dtype), np.asarray(r)
        finite = np.isfinite(r) & (np.abs(r) < 1e30) & (np.abs(r) > 1e-30)
        # o was float32 (cast for the float64 reference): the platform's float32 tolerance
        np.testing.assert_allclose(o[finite], r[finite], **platform_tol(2e-4, 1e-6))
        np.testing.assert_array_equal(np.isnan(o), np.isnan(r))


def test_bernoulli_and_integer_functions():
    np.testing.assert_allclose(np.asarray(fsp.bernoulli(12)), ss.bernoulli(12), rtol=1e-6)
    assert fsp.bernoulli(0).shape == (1,)
    with pytest.raises(ValueError, match="bernoulli"):
        fsp.bernoulli(-1)
    with pytest.raises(NotImplementedError, match="factorial"):
        fsp.factorial(3, exact=True)
    np.testing.assert_allclose(np.asarray(fsp.comb(4.0, 2.0, repetition=True)),
                               ss.comb(4, 2, repetition=True), rtol=1e-6)


def test_bessel_jn_vs_scipy(x64):
    z = np.array([0.0, 0.3, 1.0, 4.5, -2.0, 12.0])
    out = fsp.bessel_jn(jnp.asarray(z), v=4)
    assert out.shape == (5, 6)
    np.testing.assert_allclose(np.asarray(out), ss.jv(np.arange(5)[:, None], z), atol=1e-12)
    with pytest.raises(ValueError, match="bessel_jn"):
        fsp.bessel_jn(z, v=-1)


def test_sph_harm_y_vs_scipy(x64):
    n = np.array([0, 1, 2, 3, 3, 5, 4])
    m = np.array([0, 1, -2, 2, -3, 1, 0])
    theta = np.array([0.3, 1.2, 2.0, 0.7, 2.9, 1.4, 0.1])
    phi = np.array([0.1, -1.0, 2.0, 3.0, 0.5, 6.0, 1.0])
    out = fsp.sph_harm_y(jnp.asarray(n), jnp.asarray(m), jnp.asarray(theta), jnp.asarray(phi))
    np.testing.assert_allclose(np.asarray(out), ss.sph_harm_y(n, m, theta, phi), atol=1e-12)
    jitted = fluxion.jit(lambda *a: fsp.sph_harm_y(*a, n_max=5))
    np.testing.assert_allclose(np.asarray(jitted(n, m, theta, phi)), np.asarray(out), atol=1e-12)


def test_softmax_axes_and_logsumexp_options():
    x = RNG.normal(size=(3, 4))
    np.testing.assert_allclose(np.asarray(fsp.softmax(x)), ss.softmax(x), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(fsp.log_softmax(x, axis=1)), ss.log_softmax(x, axis=1),
                               rtol=1e-5)
    b = np.array([1.0, -2.0, 0.5, 1.0])
    val, sign = fsp.logsumexp(x, axis=1, b=b, return_sign=True)
    rv, rs = ss.logsumexp(x, axis=1, b=b, return_sign=True)
    np.testing.assert_allclose(np.asarray(val), rv, rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(sign), rs)


def test_log_ndtr_series_order_is_checked():
    with pytest.raises(ValueError, match="log_ndtr"):
        fsp.log_ndtr(1.0, series_order=40)


# name: (arguments, index of the argument to differentiate)
GRAD_CASES = {
    "gammaln": ((1.7,), 0), "digamma": ((2.3,), 0), "gamma": ((2.6,), 0),
    "betaln": ((1.5, 2.5), 1), "beta": ((1.5, 2.5), 0),
    "gammainc": ((2.0, 1.5), 1), "gammaincc": ((2.0, 1.5), 0),
    "erf": ((0.3,), 0), "erfc": ((0.3,), 0), "erfinv": ((0.4,), 0), "erfcx": ((3.0,), 0),
    "dawsn": ((1.3,), 0), "ndtr": ((-1.2,), 0), "ndtri": ((0.2,), 0), "log_ndtr": ((-12.0,), 0),
    "owens_t": ((0.6, 1.7), 0), "xlogy": ((2.0, 3.0), 1), "xlog1py": ((2.0, 3.0), 0),
    "entr": ((0.4,), 0), "rel_entr": ((0.4, 0.7), 0), "kl_div": ((0.4, 0.7), 1),
    "expit": ((0.4,), 0), "logit": ((0.3,), 0), "boxcox": ((1.3, 0.5), 1),
    "boxcox1p": ((1.3, 0.5), 0), "i0": ((1.2,), 0), "i1e": ((1.2,), 0),
    "expi": ((1.4,), 0), "exp1": ((0.6,), 0), "spence": ((2.5,), 0), "poch": ((2.0, 1.5), 0),
    "hyp1f1": ((0.5, 1.5, 0.7), 2), "hyp2f1": ((0.5, 1.5, 2.5, 0.3), 3),
    "betainc": ((2.0, 3.0, 0.4), 2),
    "multigammaln": ((3.5, 2), 0), "polygamma": ((1, 2.5), 1),
}


# The default run keeps one or two derivatives per family; the rest run with FLUXION_SLOW=1.
FAST_GRADS = {"gammaln", "betainc", "log_ndtr", "owens_t", "xlogy", "logit"}
SLOW_GRADS = set(GRAD_CASES) - FAST_GRADS


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow if n in SLOW_GRADS else ())
                                  for n in sorted(GRAD_CASES)])
def test_gradients_vs_jax(name, x64):
    args, i = GRAD_CASES[name]

    def wrap(mod):
        def f(v):
            a = list(args)
            a[i] = v
            out = getattr(mod, name)(*a)
            return out
        return f

    ours = fluxion.grad(wrap(fsp))(args[i])
    ref = jax.jit(jax.grad(wrap(jsp)))(args[i])  # JAX's eager grad: each op compiled alone
    np.testing.assert_allclose(float(ours), float(ref), rtol=1e-7)


@pytest.mark.slow
def test_zeta_gradients_vs_jax(x64):
    for argnum in (0, 1):
        ours = fluxion.grad(fsp.zeta, argnums=argnum)(3.0, 2.0)
        ref = jax.jit(jax.grad(jsp.zeta, argnums=argnum))(3.0, 2.0)
        np.testing.assert_allclose(float(ours), float(ref), rtol=1e-9)


@pytest.mark.slow
def test_gradients_of_tuple_valued_and_complex(x64):
    for name in ("sici", "fresnel"):
        for k in (0, 1):
            ours = fluxion.grad(lambda v, name=name, k=k: getattr(fsp, name)(v)[k])(1.3)
            ref = jax.jit(jax.grad(lambda v, name=name, k=k: getattr(jsp, name)(v)[k]))(1.3)
            np.testing.assert_allclose(float(ours), float(ref), rtol=1e-7)
    z = 0.7 + 0.4j
    _, ours = fluxion.jvp(fsp.wofz, (z,), (1.0 + 0j,))
    _, ref = jax.jvp(jsp.wofz, (z,), (1.0 + 0j,))
    np.testing.assert_allclose(complex(ours), complex(ref), rtol=1e-10)
    fd = (ss.expn(2, 0.7 + 1e-6) - ss.expn(2, 0.7 - 1e-6)) / 2e-6
    np.testing.assert_allclose(float(fluxion.grad(lambda x: fsp.expn(2, x))(0.7)), fd, rtol=1e-6)


@pytest.mark.parametrize("name", ["gammaln", "ndtri", "spence", "xlogy", "wofz"] + [
    pytest.param(n, marks=pytest.mark.slow) for n in
    ["erfcx", "log_ndtr", "owens_t", "expi", "expn", "sici", "hyp1f1", "hyp2f1", "dawsn",
     "fresnel"]])
def test_jit_and_vmap_identities(name):
    _, args, _ = VALUE_CASES[name]
    args = [jnp.asarray(a) for a in args]
    fn = getattr(fsp, name)
    eager = fn(*args)
    jitted = fluxion.jit(fn)(*args)
    mapped = fluxion.vmap(fn)(*args)
    _close(jitted, tuple(np.asarray(e) for e in eager) if isinstance(eager, tuple) else eager,
           1e-5, 1e-6)
    _close(mapped, tuple(np.asarray(e) for e in eager) if isinstance(eager, tuple) else eager,
           1e-5, 1e-6)


def test_names_match_jax():
    ours = set(fsp.__all__)
    theirs = {n for n in dir(jsp) if not n.startswith("_")}
    missing = theirs - ours
    assert not missing, sorted(missing)
    for n in fsp.__all__:
        assert getattr(fsp, n).__doc__, n


@pytest.mark.parametrize("args", [(0.5,), (2,), (np.float32(0.5),), "weak-array", "mixed"],
                         ids=["float", "int", "np-float32", "weak-array", "mixed"])
def test_python_numbers_stay_weakly_typed_as_jax(args, x64):
    """As jax.scipy.special's promote_args_inexact: all-weak arguments give a weakly typed result
    (so ``erfc(2.0) * x`` keeps a float32 ``x`` float32 with x64 on); any strong one, a strong one."""
    def make(lib):
        if args == "weak-array":
            return (lib.numpy.asarray(3) * 1, 0.5)
        if args == "mixed":
            return (lib.numpy.float32(3.0), 0.5)
        return args if len(args) == 2 else args + (1.5,)
    for name in ("erfc", "xlogy", "gammaln", "expit"):
        n_args = 2 if name == "xlogy" else 1
        ours = getattr(fsp, name)(*make(fluxion)[:n_args])
        ref = getattr(jsp, name)(*make(jax)[:n_args])
        assert (ours.dtype, ours.weak_type) == (ref.dtype, ref.weak_type), (name, args)
        np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=1e-6)
    x = jnp.ones(3, jnp.float32)
    assert (fsp.erfc(2.0) * x).dtype == jnp.float32

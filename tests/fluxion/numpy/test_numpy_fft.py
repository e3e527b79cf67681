"""``fluxion.numpy.fft`` and ``lax.fft`` against ``jax.numpy.fft`` / ``jax.lax.fft``: values,
dtypes and shapes for every function, norm mode, ``n``/``s``/``axes``; grad and vmap; errors."""

from __future__ import annotations

import numpy as np
import pytest
from _compare import assert_close

import fluxion
import fluxion.numpy as jnp
from fluxion import lax

jax = pytest.importorskip("jax")
jjnp = jax.numpy

RNG = np.random.default_rng(0)
X3 = RNG.normal(size=(3, 4, 5)).astype(np.float32)
XC = (RNG.normal(size=(3, 4, 5)) + 1j * RNG.normal(size=(3, 4, 5))).astype(np.complex64)

ALL = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
       "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]
ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
TWO_D = ["fft2", "ifft2", "rfft2", "irfft2"]
N_D = ["fftn", "ifftn", "rfftn", "irfftn"]
TOL = 2e-4


def test_all_names_present():
    assert sorted(jnp.fft.__all__) == sorted(ALL)
    for name in ALL:
        assert hasattr(jjnp.fft, name)
    assert fluxion.numpy.fft is jnp.fft
    assert lax.FftType.IRFFT == jax.lax.FftType.IRFFT == 3


def _jit_both(make):
    """``make(lib)`` compiled with each library (one compilation per test, not per operation)."""
    return fluxion.jit(make(fluxion)), jax.jit(make(jax))


@pytest.mark.parametrize("name", ONE_D + TWO_D + N_D)
def test_real_and_complex_input_match_jax(name):
    def make(lib):
        f = getattr(lib.numpy.fft, name)
        return lambda x, z: ([f(x, norm=n) for n in (None, "backward", "ortho", "forward")],
                             f(z) if name not in ("rfft", "ihfft", "rfft2", "rfftn") else None)
    ours, theirs = _jit_both(make)
    assert_close(ours(X3, XC), theirs(X3, XC), TOL)


@pytest.mark.parametrize("name", ONE_D)
def test_1d_n_and_axis(name):
    def make(lib):
        f = getattr(lib.numpy.fft, name)
        return lambda x: [f(x, n=n, axis=a) for n, a in ((3, -1), (8, 0), (6, 1))]
    ours, theirs = _jit_both(make)
    assert_close(ours(X3), theirs(X3), TOL)


@pytest.mark.parametrize("name", TWO_D + N_D)
def test_nd_s_and_axes(name):
    def make(lib):
        f = getattr(lib.numpy.fft, name)
        return lambda x: [f(x, s=s, axes=a, norm="ortho")
                          for s, a in (((3, 6), (0, 2)), ((2, 8), (-1, 0)), (None, (2, 1)))]
    ours, theirs = _jit_both(make)
    assert_close(ours(X3), theirs(X3), TOL)


def test_more_than_three_axes():
    x = RNG.normal(size=(2, 3, 2, 4, 2)).astype(np.float32)
    ours, theirs = _jit_both(lambda lib: lambda v: [getattr(lib.numpy.fft, n)(v) for n in N_D])
    assert_close(ours(x), theirs(x), TOL)


@pytest.mark.parametrize("x", [np.arange(6, dtype=np.int32), np.ones(4, np.float16),
                               np.array([True, False, True])])
def test_input_dtypes(x):
    for name in ["fft", "rfft", "ifft", "irfft"]:
        if name == "rfft" and x.dtype == np.float16:  # JAX: "RFFT input must be float32 ..."
            with pytest.raises(ValueError, match="float32 or float64"):
                jjnp.fft.rfft(x)
            with pytest.raises(ValueError, match="float32 or float64"):
                jnp.fft.rfft(x)
            continue
        assert_close(getattr(jnp.fft, name)(x), getattr(jjnp.fft, name)(x), TOL)


def test_x64_dtypes(x64):
    x = RNG.normal(size=(4, 6))
    for name in ["fft", "rfft", "irfft", "fft2", "hfft", "ihfft"]:
        ours, theirs = getattr(jnp.fft, name)(x), getattr(jjnp.fft, name)(x)
        assert ours.dtype == theirs.dtype and ours.dtype in (np.complex128, np.float64)
        assert_close(ours, theirs, 1e-10)


def test_freqs():
    for n, d in [(1, 1.0), (5, 0.1), (8, 2.0)]:
        assert_close(jnp.fft.fftfreq(n, d), jjnp.fft.fftfreq(n, d), 1e-6)
        assert_close(jnp.fft.rfftfreq(n, d), jjnp.fft.rfftfreq(n, d), 1e-6)
    assert_close(jnp.fft.fftfreq(5, 0.1, dtype=jnp.float16),
                 jjnp.fft.fftfreq(5, 0.1, dtype="float16"), 1e-3)
    # a traced spacing takes the device path
    assert_close(fluxion.jit(lambda s: (jnp.fft.fftfreq(5, s), jnp.fft.rfftfreq(5, s)))(
        np.float32(0.1)), (jjnp.fft.fftfreq(5, 0.1), jjnp.fft.rfftfreq(5, 0.1)), 1e-6)


def test_shifts():
    for axes in [None, 0, (1,), (0, 2), (-1, 0)]:
        assert_close(jnp.fft.fftshift(X3, axes), jjnp.fft.fftshift(X3, axes), 0)
        assert_close(jnp.fft.ifftshift(X3, axes), jjnp.fft.ifftshift(X3, axes), 0)


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "hfft", "rfft2"])
def test_grad_matches_jax(name):
    def loss(ns):
        def f(x):
            y = getattr(ns.numpy.fft, name)(x * x, norm="ortho")
            return ns.numpy.sum(ns.numpy.real(y * ns.numpy.conj(y) + y * 1.5))
        return f
    x = X3[0]
    assert_close(fluxion.jit(fluxion.grad(loss(fluxion)))(x), jax.jit(jax.grad(loss(jax)))(x),
                 1e-3)


@pytest.mark.parametrize("name", ["fft", "irfft", "ifft2", "irfftn", "hfft"])
def test_jvp_and_vjp_of_complex_input(name):
    f = getattr(jnp.fft, name)
    g = getattr(jjnp.fft, name)
    x, t = XC[0], XC[1]
    po, to = fluxion.jvp(f, (x,), (t,))
    pj, tj = jax.jit(lambda x, t: jax.jvp(g, (x,), (t,)))(x, t)  # the reference: one compile
    assert_close(po, pj, TOL)
    assert_close(to, tj, TOL)
    ct = np.asarray(pj)[...] * 0.5
    (vo,) = fluxion.vjp(f, x)[1](ct)
    (vj,) = jax.jit(lambda x, ct: jax.vjp(g, x)[1](ct))(x, ct)
    assert_close(vo, vj, TOL)


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "fft2", "rfftn"])
def test_vmap_is_loop(name):
    f = getattr(jnp.fft, name)
    for in_axes in (0, 2):
        ours = fluxion.jit(fluxion.vmap(f, in_axes=in_axes))(X3)
        loop = np.stack([np.asarray(f(np.take(X3, i, axis=in_axes)))
                         for i in range(X3.shape[in_axes])])
        assert_close(ours, loop, TOL)
        assert_close(ours, jax.vmap(getattr(jjnp.fft, name), in_axes=in_axes)(X3), TOL)


def test_jit_is_eager():
    f = fluxion.jit(lambda x: jnp.fft.irfft(jnp.fft.rfft(x, norm="forward"), 5, norm="forward"))
    assert_close(f(X3), X3, 1e-5)
    assert_close(f(X3), jnp.fft.irfft(jnp.fft.rfft(X3, norm="forward"), 5, norm="forward"), 1e-6)


@pytest.mark.parametrize("typ", ["FFT", "IFFT", "RFFT", "IRFFT"])
def test_lax_fft_matches_jax(typ):
    lengths = (4, 5) if typ != "IRFFT" else (4, 8)
    x = X3 if typ == "RFFT" else XC
    ours = lax.fft(x, getattr(lax.FftType, typ), lengths)
    theirs = jax.lax.fft(x, getattr(jax.lax.FftType, typ), lengths)
    assert_close(ours, theirs, TOL)
    assert_close(lax.fft(x, typ.lower(), lengths), theirs, TOL)


def test_lax_fft_empty_lengths_converts_only():
    out = lax.fft(np.ones(3, np.float32), "fft", ())
    assert out.dtype == np.complex64


def test_make_jaxpr_names_the_primitive():
    text = str(fluxion.make_jaxpr(lambda x: lax.fft(x, "RFFT", (5,)))(X3))
    assert "fft[" in text and "RFFT" in text


def test_errors():
    with pytest.raises(ValueError, match="repeated axes"):
        jnp.fft.fftn(X3, axes=(0, 0))
    with pytest.raises(ValueError, match="Shape and axes"):
        jnp.fft.fftn(X3, s=(2, 2), axes=(0,))
    with pytest.raises(ValueError, match="only supports 2 axes"):
        jnp.fft.fft2(X3, axes=(0, 1, 2))
    with pytest.raises(ValueError, match="multiple axes"):
        jnp.fft.fft(X3, axis=(0, 1))
    with pytest.raises(ValueError, match="Invalid norm"):
        jnp.fft.fft(X3, norm="bogus")
    with pytest.raises(ValueError, match="Shape should be positive"):
        jnp.fft.fft(X3, n=0)
    with pytest.raises(ValueError, match="only real valued"):
        jnp.fft.rfft(XC)
    with pytest.raises(TypeError, match="requires ndarray"):
        jnp.fft.fft([1.0, 2.0])
    with pytest.raises(ValueError, match="Unknown FFT type"):
        lax.fft(X3, "dct", (5,))
    with pytest.raises(ValueError, match="lax.fft"):
        lax.fft(XC, "FFT", (3,))

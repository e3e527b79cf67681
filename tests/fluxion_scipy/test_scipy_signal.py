"""fluxion_scipy.signal vs scipy.signal (and the names of jax.scipy.signal)."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion_scipy.signal as fsig

ss = pytest.importorskip("scipy.signal")
jsig = pytest.importorskip("jax.scipy.signal")

RNG = np.random.default_rng(0)


def _np(x):
    return np.asarray(x)


def test_names_match_jax():
    theirs = {n for n in dir(jsig) if not n.startswith("_")}
    assert theirs <= set(fsig.__all__), sorted(theirs - set(fsig.__all__))


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolutions_vs_scipy(mode, x64):
    a, k = RNG.normal(size=(5, 6)), RNG.normal(size=(3, 2))
    for ours, ref in ((fsig.convolve, ss.convolve), (fsig.correlate, ss.correlate),
                      (fsig.fftconvolve, ss.fftconvolve), (fsig.convolve2d, ss.convolve2d),
                      (fsig.correlate2d, ss.correlate2d)):
        np.testing.assert_allclose(_np(ours(a, k, mode)), ref(a, k, mode), atol=1e-12)
    x, h = RNG.normal(size=9), RNG.normal(size=4) + 1j * RNG.normal(size=4)
    np.testing.assert_allclose(_np(fsig.correlate(x, h, mode)), ss.correlate(x, h, mode),
                               atol=1e-12)
    np.testing.assert_allclose(_np(fsig.convolve(x, h, mode, method="fft")),
                               ss.convolve(x, h, mode), atol=1e-12)


def test_fftconvolve_axes_and_errors(x64):
    a, k = RNG.normal(size=(3, 8)), RNG.normal(size=(3, 4))
    np.testing.assert_allclose(_np(fsig.fftconvolve(a, k, axes=[1])),
                               ss.fftconvolve(a, k, axes=[1]), atol=1e-12)
    with pytest.raises(ValueError, match="convolve"):
        fsig.convolve(a, k, mode="bogus")
    with pytest.raises(NotImplementedError, match="convolve2d"):
        fsig.convolve2d(a, k, boundary="wrap")


def test_detrend_vs_scipy(x64):
    x = RNG.normal(size=(2, 50))
    for kw in ({}, {"type": "constant"}, {"bp": [10, 30]}):
        np.testing.assert_allclose(_np(fsig.detrend(x, **kw)), ss.detrend(x, **kw), atol=1e-12)
    np.testing.assert_allclose(_np(fsig.detrend(x.T, axis=0)), ss.detrend(x.T, axis=0),
                               atol=1e-12)


def test_spectral_estimates_vs_scipy(x64):
    x, y = RNG.normal(size=100), RNG.normal(size=100)
    for window in ("hann", "hamming", "blackman", "bartlett", "boxcar"):
        f, p = fsig.welch(x, nperseg=16, window=window)
        rf, rp = ss.welch(x, nperseg=16, window=window)
        np.testing.assert_allclose(_np(f), rf, atol=1e-12)
        np.testing.assert_allclose(_np(p), rp, atol=1e-12)
    kw = {"nperseg": 20, "noverlap": 5, "nfft": 25, "scaling": "spectrum"}
    np.testing.assert_allclose(_np(fsig.csd(x, y, **kw)[1]), ss.csd(x, y, **kw)[1], atol=1e-12)
    np.testing.assert_allclose(_np(fsig.welch(x, nperseg=16, average="median")[1]),
                               ss.welch(x, nperseg=16, average="median")[1], atol=1e-12)
    xs = RNG.normal(size=(3, 64))
    np.testing.assert_allclose(_np(fsig.welch(xs, fs=10.0, nperseg=16)[1]),
                               ss.welch(xs, fs=10.0, nperseg=16)[1], atol=1e-12)


def test_stft_istft_vs_scipy(x64):
    x = RNG.normal(size=100)
    f, t, z = fsig.stft(x, fs=2.0, nperseg=16)
    rf, rt, rz = ss.stft(x, fs=2.0, nperseg=16)
    np.testing.assert_allclose(_np(f), rf)
    np.testing.assert_allclose(_np(t), rt)
    np.testing.assert_allclose(_np(z), rz, atol=1e-12)
    t2, back = fsig.istft(z, fs=2.0, nperseg=16)
    rt2, rback = ss.istft(rz, fs=2.0, nperseg=16)
    np.testing.assert_allclose(_np(back), rback, atol=1e-12)
    np.testing.assert_allclose(_np(back)[:100], x, atol=1e-12)
    jitted = fluxion.jit(lambda v: fsig.stft(v, nperseg=16)[2])(x)
    np.testing.assert_allclose(_np(jitted), rz, atol=1e-12)

"""Signal processing (mirrors ``jax.scipy.signal``): convolutions, correlations, detrending and
spectral estimates (csd, welch, stft, istft)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion_scipy._util import promote_inexact

__all__ = ["convolve", "correlate", "convolve2d", "correlate2d", "fftconvolve", "detrend", "csd",
           "welch", "stft", "istft"]

_MODES = ("full", "same", "valid")


def _crop(full: Any, s1: Sequence[int], s2: Sequence[int], mode: str,
          axes: Sequence[int] | None = None, round_up: bool = False) -> Any:
    axes = list(range(full.ndim)) if axes is None else list(axes)
    if mode == "full":
        return full
    index = [slice(None)] * full.ndim
    for ax, a, b in zip(axes, s1, s2):
        size = a if mode == "same" else abs(a - b) + 1
        # Centred; an odd leftover goes before the kept part unless round_up (correlate2d).
        start = (full.shape[ax] - size + int(round_up)) // 2
        index[ax] = slice(start, start + size)
    return full[tuple(index)]


def _check_mode(name: str, mode: str) -> None:
    if mode not in _MODES:
        raise ValueError(f"{name}: mode must be 'full', 'same' or 'valid', got {mode!r}")


def _conv_full(a: Any, k: Any, precision: Any) -> Any:
    # Full N-D convolution as one XLA convolution: flip the kernel and pad by its size - 1.
    if jnp.iscomplexobj(a) or jnp.iscomplexobj(k):
        re = _conv_full(jnp.real(a), jnp.real(k), precision) - _conv_full(
            jnp.imag(a), jnp.imag(k), precision)
        im = _conv_full(jnp.real(a), jnp.imag(k), precision) + _conv_full(
            jnp.imag(a), jnp.real(k), precision)
        return re + 1j * im
    nd = a.ndim
    kernel = jnp.flip(k, axis=tuple(range(nd)))
    pads = [(s - 1, s - 1) for s in k.shape]
    out = lax.conv_general_dilated(a[None, None], kernel[None, None], (1,) * nd, pads,
                                   precision=precision)
    return out[0, 0]


def convolve(in1: Any, in2: Any, mode: str = "full", method: str = "auto",
             precision: Any = None) -> Any:
    """N-dimensional convolution of two arrays of the same rank; ``method`` "direct", "fft" or
    "auto" (direct).

    Example:
        >>> convolve(jnp.array([1.0, 2.0, 3.0]), jnp.array([0.0, 1.0, 0.5])).tolist()
        [0.0, 1.0, 2.5, 4.0, 1.5]
    """
    _check_mode("convolve", mode)
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"convolve: method must be 'auto', 'direct' or 'fft', got {method!r}")
    a, k = promote_inexact("convolve", in1, in2)
    if a.ndim != k.ndim:
        raise ValueError(f"convolve: in1 and in2 must have the same rank, got {a.shape} and "
                         f"{k.shape}")
    if a.ndim == 0:
        return a * k
    if mode == "valid" and not (all(x >= y for x, y in zip(a.shape, k.shape))
                                or all(x <= y for x, y in zip(a.shape, k.shape))):
        raise ValueError("convolve: for mode='valid' one input must be at least as large as the "
                         f"other in every dimension, got {a.shape} and {k.shape}")
    if method == "fft":
        return fftconvolve(a, k, mode=mode)
    return _crop(_conv_full(a, k, precision), a.shape, k.shape, mode)


def correlate(in1: Any, in2: Any, mode: str = "full", method: str = "auto",
              precision: Any = None) -> Any:
    """N-dimensional cross-correlation: convolution with the flipped, conjugated ``in2``.

    Example:
        >>> correlate(jnp.array([1.0, 2.0, 3.0]), jnp.array([0.0, 1.0, 0.5])).tolist()
        [0.5, 2.0, 3.5, 3.0, 0.0]
    """
    _check_mode("correlate", mode)
    a, k = promote_inexact("correlate", in1, in2)
    if a.ndim != k.ndim:
        raise ValueError(f"correlate: in1 and in2 must have the same rank, got {a.shape} and "
                         f"{k.shape}")
    return _correlate(a, k, mode, method, precision, round_up=False)


def _correlate(a: Any, k: Any, mode: str, method: str, precision: Any, round_up: bool) -> Any:
    flipped = jnp.conj(jnp.flip(k, axis=tuple(range(k.ndim))))
    full = convolve(a, flipped, mode="full", method=method, precision=precision)
    return _crop(full, a.shape, k.shape, mode, round_up=round_up)


def _check_2d(name: str, in1: Any, in2: Any, boundary: str, fillvalue: Any) -> None:
    if jnp.ndim(in1) != 2 or jnp.ndim(in2) != 2:
        raise ValueError(f"{name}: inputs must be 2-D, got shapes {jnp.shape(in1)} and "
                         f"{jnp.shape(in2)}")
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}: only boundary='fill' with fillvalue=0 is supported")


def convolve2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill",
               fillvalue: float = 0, precision: Any = None) -> Any:
    """2-D convolution (zero-filled boundary only, as JAX).

    Example:
        >>> convolve2d(jnp.ones((2, 2)), jnp.ones((1, 1))).tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """
    _check_2d("convolve2d", in1, in2, boundary, fillvalue)
    return convolve(in1, in2, mode=mode, precision=precision)


def correlate2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill",
                fillvalue: float = 0, precision: Any = None) -> Any:
    """2-D cross-correlation (zero-filled boundary only, as JAX).

    Example:
        >>> correlate2d(jnp.ones((2, 2)), jnp.ones((1, 1))).tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """
    _check_2d("correlate2d", in1, in2, boundary, fillvalue)
    _check_mode("correlate2d", mode)
    a, k = promote_inexact("correlate2d", in1, in2)
    # SciPy centres correlate2d's "same" output half a sample later than correlate's.
    return _correlate(a, k, mode, "direct", precision, round_up=True)


def fftconvolve(in1: Any, in2: Any, mode: str = "full", axes: Sequence[int] | None = None) -> Any:
    """Convolution through FFTs along ``axes`` (all by default; other axes broadcast).

    Example:
        >>> [round(v, 4) for v in fftconvolve(jnp.array([1.0, 2.0]), jnp.array([1.0, 1.0])).tolist()]
        [1.0, 3.0, 2.0]
    """
    _check_mode("fftconvolve", mode)
    a, k = promote_inexact("fftconvolve", in1, in2)
    if a.ndim != k.ndim:
        raise ValueError(f"fftconvolve: in1 and in2 must have the same rank, got {a.shape} and "
                         f"{k.shape}")
    axes = list(range(a.ndim)) if axes is None else [ax % a.ndim for ax in axes]
    shape = [a.shape[ax] + k.shape[ax] - 1 for ax in axes]
    if jnp.iscomplexobj(a) or jnp.iscomplexobj(k):
        full = jnp.fft.ifftn(jnp.fft.fftn(a, shape, axes) * jnp.fft.fftn(k, shape, axes),
                             shape, axes)
    else:
        full = jnp.fft.irfftn(jnp.fft.rfftn(a, shape, axes) * jnp.fft.rfftn(k, shape, axes),
                              shape, axes)
    return _crop(full, [a.shape[ax] for ax in axes], [k.shape[ax] for ax in axes], mode, axes)


def detrend(data: Any, axis: int = -1, type: str = "linear",  # noqa: A002
            bp: Any = 0, overwrite_data: None = None) -> Any:
    """Removes the mean (``type="constant"``) or the least-squares line (``"linear"``; piecewise
    between the static breakpoints ``bp``) along ``axis``.

    Example:
        >>> [round(v, 6) for v in detrend(jnp.array([1.0, 2.0, 3.0])).tolist()]
        [0.0, 0.0, 0.0]
    """
    if type not in ("linear", "l", "constant", "c"):
        raise ValueError(f"detrend: type must be 'linear' or 'constant', got {type!r}")
    x, = promote_inexact("detrend", data)
    x = jnp.moveaxis(x, axis, -1)
    n = x.shape[-1]
    if type in ("constant", "c"):
        out = x - jnp.mean(x, axis=-1, keepdims=True)
        return jnp.moveaxis(out, -1, axis)
    points = sorted({0, n} | {int(b) for b in np.atleast_1d(np.asarray(bp)) if 0 < int(b) < n})
    pieces = []
    for lo, hi in zip(points[:-1], points[1:]):
        seg = x[..., lo:hi]
        t = jnp.arange(hi - lo, dtype=x.dtype)
        t = t - jnp.mean(t)
        denom = jnp.sum(t * t)
        slope = jnp.sum(seg * t, axis=-1, keepdims=True) / jnp.where(denom > 0, denom, 1.0)
        pieces.append(seg - jnp.mean(seg, axis=-1, keepdims=True) - slope * t)
    return jnp.moveaxis(jnp.concatenate(pieces, axis=-1), -1, axis)


def _window(window: Any, n: int, dtype: Any) -> Any:
    if not isinstance(window, str):
        w = jnp.asarray(window, dtype)
        if w.shape != (n,):
            raise ValueError(f"the window must have length nperseg={n}, got shape {w.shape}")
        return w
    k = np.arange(n)
    # Periodic ("fftbins") windows, as scipy.signal.get_window builds them for spectral analysis.
    if window in ("hann", "hanning"):
        w = 0.5 - 0.5 * np.cos(2 * np.pi * k / n)
    elif window == "hamming":
        w = 0.54 - 0.46 * np.cos(2 * np.pi * k / n)
    elif window == "blackman":
        w = 0.42 - 0.5 * np.cos(2 * np.pi * k / n) + 0.08 * np.cos(4 * np.pi * k / n)
    elif window in ("boxcar", "box", "ones", "rectangular", "rect"):
        w = np.ones(n)
    elif window == "bartlett":
        w = 1 - np.abs(2 * k / n - 1)
    else:
        raise ValueError(f"unsupported window {window!r}; use 'hann', 'hamming', 'blackman', "
                         f"'bartlett', 'boxcar' or an array")
    return jnp.asarray(w, dtype)


def _segments(x: Any, nperseg: int, step: int) -> Any:
    count = (x.shape[-1] - nperseg) // step + 1
    idx = np.arange(count)[:, None] * step + np.arange(nperseg)[None, :]
    return x[..., idx]  # (..., count, nperseg)


def _spectral(x: Any, y: Any, fs: Any, window: Any, nperseg: int, noverlap: int | None,
              nfft: int | None, detrend_type: Any, onesided: bool, scaling: str,
              mode: str) -> tuple[Any, Any, Any]:
    n = x.shape[-1]
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    nfft = nperseg if nfft is None else int(nfft)
    if noverlap >= nperseg:
        raise ValueError(f"noverlap ({noverlap}) must be less than nperseg ({nperseg})")
    if nfft < nperseg:
        raise ValueError(f"nfft ({nfft}) must be at least nperseg ({nperseg})")
    real_dtype = jnp.real(x).dtype
    win = _window(window, nperseg, real_dtype)
    step = nperseg - noverlap
    if scaling == "density":
        scale = 1.0 / (fs * jnp.sum(win * win))
    elif scaling == "spectrum":
        scale = 1.0 / jnp.sum(win) ** 2
    else:
        raise ValueError(f"scaling must be 'density' or 'spectrum', got {scaling!r}")
    if mode == "stft":
        scale = jnp.sqrt(scale)
    complex_in = jnp.iscomplexobj(x) or (y is not None and jnp.iscomplexobj(y))
    sides = "onesided" if onesided and not complex_in else "twosided"

    def transform(v: Any) -> Any:
        seg = _segments(v, nperseg, step)
        if detrend_type in ("constant", "linear"):
            seg = detrend(seg, axis=-1, type=detrend_type)
        elif detrend_type not in (False, None):
            raise ValueError(f"detrend must be 'constant', 'linear' or False, got "
                             f"{detrend_type!r}")
        seg = seg * win
        return jnp.fft.rfft(seg, nfft) if sides == "onesided" else jnp.fft.fft(seg, nfft)

    fx = transform(x)
    if mode == "stft":
        result = fx * scale
    else:
        fy = fx if y is None else transform(y)
        result = jnp.conj(fx) * fy * scale
        if sides == "onesided":
            last = -1 if nfft % 2 == 0 else None
            result = result.at[..., 1:last].multiply(2.0)
    freqs = (jnp.fft.rfftfreq(nfft, 1.0 / fs) if sides == "onesided"
             else jnp.fft.fftfreq(nfft, 1.0 / fs))
    times = jnp.arange(nperseg / 2, n - nperseg / 2 + 1, step, dtype=real_dtype)[
        :result.shape[-2]] / fs
    return freqs, times, jnp.swapaxes(result, -1, -2)  # (..., freq, segment)


def _median_bias(n: int) -> float:
    ii = 1 + (n - 1) // 2
    k = np.arange(1, ii)
    return float(1 + np.sum(1.0 / (2 * k + 1) - 1.0 / (2 * k)))


def csd(x: Any, y: Any, fs: Any = 1.0, window: str = "hann", nperseg: int | None = None,
        noverlap: int | None = None, nfft: int | None = None, detrend: str = "constant",
        return_onesided: bool = True, scaling: str = "density", axis: int = -1,
        average: str = "mean") -> tuple[Any, Any]:
    """Cross power spectral density by Welch's method: (frequencies, Pxy). ``y=None`` gives the
    power spectral density of ``x``.

    Example:
        >>> f, p = csd(jnp.ones(16), jnp.ones(16), nperseg=8)
        >>> f.shape, p.shape
        ((5,), (5,))
    """
    if average not in ("mean", "median"):
        raise ValueError(f"csd: average must be 'mean' or 'median', got {average!r}")
    x, = promote_inexact("csd", x)
    x = jnp.moveaxis(x, axis, -1)
    if y is not None:
        y, = promote_inexact("csd", y)
        y = jnp.moveaxis(y, axis, -1)
        if y.shape[-1] != x.shape[-1]:
            raise ValueError(f"csd: x and y must have the same length along axis, got "
                             f"{x.shape[-1]} and {y.shape[-1]}")
    n = x.shape[-1]
    nper = 256 if nperseg is None else int(nperseg)
    nper = min(nper, n)
    freqs, _, pxy = _spectral(x, y, fs, window, nper, noverlap, nfft, detrend, return_onesided,
                              scaling, "psd")
    if pxy.shape[-1] > 1:
        if average == "median":
            med = lambda v: jnp.median(v, axis=-1)  # noqa: E731
            pxy = (med(jnp.real(pxy)) + 1j * med(jnp.imag(pxy))) if jnp.iscomplexobj(pxy) \
                else med(pxy)
            pxy = pxy / _median_bias(_segments_count(n, nper, noverlap))
        else:
            pxy = jnp.mean(pxy, axis=-1)
    else:
        pxy = pxy[..., 0]
    return freqs, jnp.moveaxis(pxy, -1, axis) if pxy.ndim > 1 else pxy


def _segments_count(n: int, nperseg: int, noverlap: int | None) -> int:
    noverlap = nperseg // 2 if noverlap is None else noverlap
    return (n - nperseg) // (nperseg - noverlap) + 1


def welch(x: Any, fs: Any = 1.0, window: str = "hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, detrend: str = "constant",
          return_onesided: bool = True, scaling: str = "density", axis: int = -1,
          average: str = "mean") -> tuple[Any, Any]:
    """Power spectral density by Welch's method: (frequencies, Pxx), real.

    Example:
        >>> f, p = welch(jnp.sin(jnp.arange(64.0)), nperseg=16)
        >>> f.shape, p.shape
        ((9,), (9,))
    """
    freqs, pxx = csd(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                     scaling, axis, average)
    return freqs, jnp.real(pxx)


def stft(x: Any, fs: Any = 1.0, window: str = "hann", nperseg: int = 256,
         noverlap: int | None = None, nfft: int | None = None, detrend: bool = False,
         return_onesided: bool = True, boundary: str | None = "zeros", padded: bool = True,
         axis: int = -1) -> tuple[Any, Any, Any]:
    """Short-time Fourier transform: (frequencies, segment times, Zxx of shape (..., f, t)).
    ``boundary`` "zeros" or None; ``padded`` zero-pads the end to whole segments.

    Example:
        >>> f, t, z = stft(jnp.ones(32), nperseg=8)
        >>> z.shape
        (5, 9)
    """
    if boundary not in ("zeros", None):
        raise ValueError(f"stft: boundary must be 'zeros' or None, got {boundary!r}")
    x, = promote_inexact("stft", x)
    x = jnp.moveaxis(x, axis, -1)
    nperseg = min(int(nperseg), x.shape[-1]) if boundary is None else int(nperseg)
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    step = nperseg - noverlap
    if boundary == "zeros":
        pad = [(0, 0)] * (x.ndim - 1) + [(nperseg // 2, nperseg // 2)]
        x = jnp.pad(x, pad)
    if padded:
        extra = (-(x.shape[-1] - nperseg) % step) % nperseg
        x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, extra)])
    freqs, times, z = _spectral(x, None, fs, window, nperseg, noverlap, nfft,
                                "constant" if detrend else False, return_onesided, "spectrum",
                                "stft")
    if boundary is not None:
        times = times - (nperseg / 2) / fs
    return freqs, times, jnp.moveaxis(z, (-2, -1), (-2, -1))


def istft(Zxx: Any, fs: Any = 1.0, window: str = "hann", nperseg: int | None = None,  # noqa: N803
          noverlap: int | None = None, nfft: int | None = None, input_onesided: bool = True,
          boundary: bool = True, time_axis: int = -1,
          freq_axis: int = -2) -> tuple[Any, Any]:
    """Inverse short-time Fourier transform by windowed overlap-add: (times, x).

    Example:
        >>> f, t, z = stft(jnp.arange(32.0), nperseg=8)
        >>> t2, x = istft(z, nperseg=8)
        >>> x.shape
        (32,)
    """
    z = jnp.asarray(Zxx)
    z = jnp.moveaxis(z, (freq_axis, time_axis), (-2, -1))
    nfreq, nseg = z.shape[-2], z.shape[-1]
    n_default = 2 * (nfreq - 1) if input_onesided else nfreq
    nperseg = n_default if nperseg is None else int(nperseg)
    nfft = nperseg if nfft is None else int(nfft)
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    step = nperseg - noverlap
    real_dtype = jnp.real(z).dtype
    win = _window(window, nperseg, real_dtype)
    seg = (jnp.fft.irfft(z, nfft, axis=-2) if input_onesided
           else jnp.fft.ifft(z, nfft, axis=-2))[..., :nperseg, :]
    seg = jnp.swapaxes(seg, -1, -2) * win * jnp.sum(win)  # undo the 1/sum(win) scaling
    length = nperseg + (nseg - 1) * step
    idx = (np.arange(nseg)[:, None] * step + np.arange(nperseg)[None, :]).ravel()
    out = jnp.zeros(seg.shape[:-2] + (length,), seg.dtype)
    out = out.at[..., idx].add(seg.reshape(seg.shape[:-2] + (-1,)))
    norm = jnp.zeros((length,), real_dtype).at[idx].add(jnp.tile(win * win, nseg))
    if boundary:
        out = out[..., nperseg // 2:length - nperseg // 2]
        norm = norm[nperseg // 2:length - nperseg // 2]
    out = out / jnp.where(norm > 1e-10, norm, 1.0)
    times = jnp.arange(out.shape[-1], dtype=real_dtype) / fs
    return times, out

"""``fluxion.numpy.fft``: NumPy's discrete Fourier transforms over ``lax.fft``.

All 18 functions of ``numpy.fft`` with JAX's semantics: ``n``/``s`` crop or zero-pad the input
along the transformed axes, ``axes`` picks them (repeated axes are an error), ``norm`` is one of
``"backward"`` (default), ``"ortho"`` and ``"forward"``. Results are complex64/float32 without
x64 (complex128/float64 with it), as in JAX. XLA transforms at most 3 axes at a time; more axes
are done in groups.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.fft.fft(jnp.array([1.0, 2.0, 3.0, 4.0])).tolist()
    [(10+0j), (-2+2j), (-2+0j), (-2-2j)]
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.lax.fft import FftType
from fluxion.numpy._util import check_arraylike, ensure_array
from fluxion.numpy.creation import arange, asarray
from fluxion.numpy.manipulation import roll
from fluxion.numpy.padding import pad
from fluxion.numpy.shape import moveaxis

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

Shape = Sequence[int]


def _norm_factor(s: Sequence[int], name: str, norm: str, dtype: np.dtype) -> Any:
    if norm == "backward":
        return None
    real = np.dtype(np.float64) if dtype in (np.float64, np.complex128) else np.dtype(np.float32)
    n = np.prod(np.asarray(s, real), dtype=real)
    inverse = name.startswith("i")
    if norm == "ortho":
        f = np.sqrt(n) if inverse else real.type(1) / np.sqrt(n)
    elif norm == "forward":
        f = n if inverse else real.type(1) / n
    else:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or '
                         '"forward".')
    return np.asarray(f, dtype)


def _fft_nd(arr: Any, fft_type: FftType, s: Sequence[int]) -> Any:
    """The transform over the trailing ``len(s)`` axes, in groups of at most 3 (XLA's limit)."""
    if len(s) <= 3:
        return lax.fft(arr, fft_type, tuple(s))
    k = 2 if len(s) == 4 else 3
    nd = arr.ndim
    src = tuple(range(nd - len(s), nd - k))
    dst = tuple(range(nd - len(s) + k, nd))
    if fft_type in (FftType.RFFT, FftType.FFT):
        arr = lax.fft(arr, fft_type, tuple(s)[-k:])
        arr = moveaxis(arr, src, dst)
        arr = _fft_nd(arr, FftType.FFT, s[:-k])
        return moveaxis(arr, dst, src)
    arr = moveaxis(arr, src, dst)
    arr = _fft_nd(arr, FftType.IFFT, s[:-k])
    arr = moveaxis(arr, dst, src)
    return lax.fft(arr, fft_type, tuple(s)[-k:])


def _core(name: str, fft_type: FftType, a: Any, s: Shape | None, axes: Sequence[int] | None,
          norm: str | None) -> Any:
    full = f"fluxion.numpy.fft.{name}"
    check_arraylike(full, a)
    arr = ensure_array(a)
    if s is not None:
        s = tuple(map(operator.index, s))
        if any(v <= 0 for v in s):
            raise ValueError(f"{full}: Shape should be positive, got s={s}.")
    if s is not None and axes is not None and len(s) != len(axes):
        raise ValueError(f"{full}: Shape and axes have different lengths: s={s}, axes={axes}.")
    orig_axes = axes
    if axes is None:
        axes = tuple(range(arr.ndim)) if s is None else tuple(range(arr.ndim - len(s), arr.ndim))
    else:
        axes = tuple(map(operator.index, axes))
        for ax in axes:
            if not -arr.ndim <= ax < arr.ndim:
                raise ValueError(f"{full}: axis {ax} is out of bounds for an array of "
                                 f"dimension {arr.ndim}")
    if len({ax % max(arr.ndim, 1) for ax in axes}) != len(axes):
        raise ValueError(f"{full} does not support repeated axes. Got axes {axes}.")
    if orig_axes is not None:
        new_axes = tuple(range(arr.ndim - len(axes), arr.ndim))
        arr = moveaxis(arr, axes, new_axes)
        axes = new_axes
    if s is not None:
        in_s = list(arr.shape)
        for ax, v in zip(axes, s):
            in_s[ax] = v
        if fft_type == FftType.IRFFT:
            in_s[-1] = in_s[-1] // 2 + 1
        arr = arr[tuple(slice(v) for v in in_s)]
        widths = [(0, want - have) for want, have in zip(in_s, arr.shape)]
        if any(w for _, w in widths):
            arr = pad(arr, widths)
    else:
        if fft_type == FftType.IRFFT:
            s = [arr.shape[ax] for ax in axes[:-1]]
            if axes:
                s.append(max(0, 2 * (arr.shape[axes[-1]] - 1)))
        else:
            s = [arr.shape[ax] for ax in axes]
    out = _fft_nd(arr, fft_type, s)
    if norm is not None:
        f = _norm_factor(s, name, norm, out.dtype)
        if f is not None:
            out = out * f
    if orig_axes is not None:
        out = moveaxis(out, axes, orig_axes)
    return out


def _check_1d(name: str, axis: Any) -> None:
    if isinstance(axis, (list, tuple)):
        raise ValueError(f"fluxion.numpy.fft.{name} does not support multiple axes. Please use "
                         f"fluxion.numpy.fft.{name}n. Got axis = {axis!r}.")


def _core_1d(name: str, fft_type: FftType, a: Any, n: int | None, axis: int | None,
             norm: str | None) -> Any:
    _check_1d(name, axis)
    return _core(name, fft_type, a, None if n is None else [n],
                 None if axis is None else [axis], norm)


def _core_2d(name: str, fft_type: FftType, a: Any, s: Shape | None, axes: Sequence[int],
             norm: str | None) -> Any:
    if len(axes) != 2:
        raise ValueError(f"fluxion.numpy.fft.{name} only supports 2 axes. Got axes = {axes!r}.")
    return _core(name, fft_type, a, s, axes, norm)


def fft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """One-dimensional discrete Fourier transform along ``axis`` (cropped/padded to ``n``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fft.fft(jnp.array([1.0, 0.0])).tolist()
        [(1+0j), (1+0j)]
    """
    return _core_1d("fft", FftType.FFT, a, n, axis, norm)


def ifft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """Inverse of :func:`fft`.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fft.ifft(jnp.array([2.0, 0.0])).tolist()
        [(1+0j), (1+0j)]
    """
    return _core_1d("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """FFT of a real input: the ``n // 2 + 1`` non-negative frequencies.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fft.rfft(jnp.array([1.0, 1.0, 1.0, 1.0])).tolist()
        [(4+0j), 0j, 0j]
    """
    return _core_1d("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """Inverse of :func:`rfft`: a real signal of length ``n`` (default ``2 * (m - 1)``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fft.irfft(jnp.array([4.0, 0.0, 0.0])).tolist()
        [1.0, 1.0, 1.0, 1.0]
    """
    return _core_1d("irfft", FftType.IRFFT, a, n, axis, norm)


def hfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """FFT of a signal with Hermitian symmetry given by its first half (a real spectrum).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fft.hfft(jnp.array([1.0, 0.0, 0.0])).tolist()
        [1.0, 1.0, 1.0, 1.0]
    """
    _check_1d("hfft", axis)
    check_arraylike("fluxion.numpy.fft.hfft", a)
    conj_a = ensure_array(a)
    if conj_a.dtype.kind == "c":  # as jnp.conj: real input stays real
        conj_a = lax.conj(conj_a)
    nn = (conj_a.shape[axis] - 1) * 2 if n is None else n
    out = _core_1d("hfft", FftType.IRFFT, conj_a, n, axis, norm)
    return out * np.asarray(nn, out.dtype)


def ihfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """Inverse of :func:`hfft`: the half spectrum of a real signal, conjugated and scaled.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fft.ihfft(jnp.array([1.0, 1.0, 1.0, 1.0])).tolist()
        [(1+0j), 0j, 0j]
    """
    _check_1d("ihfft", axis)
    check_arraylike("fluxion.numpy.fft.ihfft", a)
    arr = ensure_array(a)
    nn = arr.shape[axis] if n is None else n
    out = _core_1d("ihfft", FftType.RFFT, arr, n, axis, norm)
    real = np.float64 if out.dtype == np.complex128 else np.float32
    return lax.conj(out) * np.asarray(1 / nn, real).astype(out.dtype)


def fft2(a: Any, s: Shape | None = None, axes: Sequence[int] = (-2, -1),
         norm: str | None = None) -> Any:
    """Two-dimensional FFT over ``axes``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fft.fft2(jnp.ones((2, 2))).tolist()
        [[(4+0j), 0j], [0j, 0j]]
    """
    return _core_2d("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a: Any, s: Shape | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Any:
    """Inverse of :func:`fft2`.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fft.ifft2(jnp.array([[4.0, 0.0], [0.0, 0.0]])).real.tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """
    return _core_2d("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a: Any, s: Shape | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Any:
    """Two-dimensional FFT of a real input (half spectrum on the last axis).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fft.rfft2(jnp.ones((2, 2))).shape
        (2, 2)
    """
    return _core_2d("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a: Any, s: Shape | None = None, axes: Sequence[int] = (-2, -1),
           norm: str | None = None) -> Any:
    """Inverse of :func:`rfft2`.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fft.irfft2(jnp.array([[4.0, 0.0], [0.0, 0.0]])).tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """
    return _core_2d("irfft2", FftType.IRFFT, a, s, axes, norm)


def fftn(a: Any, s: Shape | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None) -> Any:
    """N-dimensional FFT over ``axes`` (default: all, or the last ``len(s)``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fft.fftn(jnp.ones((2, 2, 2)))[0, 0, 0].item()
        (8+0j)
    """
    return _core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a: Any, s: Shape | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Any:
    """Inverse of :func:`fftn`.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fft.ifftn(jnp.ones((2, 2)))[0, 0].item()
        (1+0j)
    """
    return _core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a: Any, s: Shape | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Any:
    """N-dimensional FFT of a real input (half spectrum on the last transformed axis).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fft.rfftn(jnp.ones((2, 4))).shape
        (2, 3)
    """
    return _core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a: Any, s: Shape | None = None, axes: Sequence[int] | None = None,
           norm: str | None = None) -> Any:
    """Inverse of :func:`rfftn`.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fft.irfftn(jnp.ones((2, 3))).shape
        (2, 4)
    """
    return _core("irfftn", FftType.IRFFT, a, s, axes, norm)


def _check_freq_args(name: str, n: Any, d: Any) -> None:
    if isinstance(n, (list, tuple)):
        raise ValueError(f"The n argument of fluxion.numpy.fft.{name} only takes an int. "
                         f"Got n = {list(n)}.")
    if isinstance(d, (list, tuple)):
        raise ValueError(f"The d argument of fluxion.numpy.fft.{name} only takes a single value. "
                         f"Got d = {list(d)}.")


def fftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
    """The sample frequencies of an ``n``-point FFT with sample spacing ``d``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fft.fftfreq(4).tolist()
        [0.0, 0.25, -0.5, -0.25]
    """
    _check_freq_args("fftfreq", n, d)
    out_dtype = dtypes.default_float_dtype() if dtype is None else \
        dtypes.check_and_canonicalize_user_dtype(dtype, "fftfreq")
    dt = dtypes.to_inexact_dtype(out_dtype)
    if dt.kind == "c":
        dt = np.dtype(np.float64) if dt == np.complex128 else np.dtype(np.float32)
    if isinstance(d, (int, float)) and not isinstance(d, bool):
        # Known spacing: the same float arithmetic on the host, one transfer.
        k = (np.arange(n, dtype=dt) + n // 2) % n - n // 2
        result = asarray((k.astype(dt) / np.asarray(d * n, dtype=dt)).astype(out_dtype))
    else:
        i = arange(n, dtype=dt)
        k = (i + n // 2) % n - n // 2
        result = k.astype(dt) / asarray(d * n, dtype=dt)
        result = result.astype(out_dtype)
    return result if device is None else _to_device(result, device)


def rfftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
    """The sample frequencies of :func:`rfft` (the ``n // 2 + 1`` non-negative ones).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fft.rfftfreq(4).tolist()
        [0.0, 0.25, 0.5]
    """
    _check_freq_args("rfftfreq", n, d)
    dt = dtypes.default_float_dtype() if dtype is None else \
        dtypes.check_and_canonicalize_user_dtype(dtype, "rfftfreq")
    if isinstance(d, (int, float)) and not isinstance(d, bool):
        result = asarray(np.arange(0, n // 2 + 1, dtype=dt) / np.asarray(d * n, dtype=dt))
    else:
        k = arange(0, n // 2 + 1, dtype=dt)
        result = k / asarray(d * n, dtype=dt)
    return result if device is None else _to_device(result, device)


def _to_device(x: Any, device: Any) -> Any:
    from fluxion.backend.transfer import device_put  # reason: jaxlib is loaded lazily
    return device_put(x, device)


def _shifts(name: str, x: Any, axes: Any, sign: int) -> tuple[Any, Any]:
    if axes is None:
        axes = tuple(range(x.ndim))
        shift: Any = [sign * (dim // 2) for dim in x.shape]
    elif isinstance(axes, int):
        shift = sign * (x.shape[axes] // 2)
    else:
        shift = [sign * (x.shape[ax] // 2) for ax in axes]
    return shift, axes


def fftshift(x: Any, axes: None | int | Sequence[int] = None) -> Any:
    """Move the zero frequency to the centre of the spectrum (along ``axes``, default all).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fft.fftshift(jnp.fft.fftfreq(4)).tolist()
        [-0.5, -0.25, 0.0, 0.25]
    """
    check_arraylike("fftshift", x)
    x = ensure_array(x)
    shift, axes = _shifts("fftshift", x, axes, 1)
    return roll(x, shift, axes)


def ifftshift(x: Any, axes: None | int | Sequence[int] = None) -> Any:
    """Inverse of :func:`fftshift`.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fft.ifftshift(jnp.array([-0.5, -0.25, 0.0, 0.25])).tolist()
        [0.0, 0.25, -0.5, -0.25]
    """
    check_arraylike("ifftshift", x)
    x = ensure_array(x)
    shift, axes = _shifts("ifftshift", x, axes, -1)
    return roll(x, shift, axes)

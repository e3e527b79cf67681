"""Resampling by separable kernels: ``scale_and_translate`` and ``resize``.

Each resampled dimension gets an ``(input size, output size)`` weight matrix: output pixel ``j``
samples the input at ``(j + 0.5 - translation) / scale - 0.5`` (half-centred pixels), weighting
input pixel ``i`` by ``kernel(|sample - i| / kernel_scale)``, where ``kernel_scale`` widens the
kernel when downsampling with ``antialias``. Columns are normalised to sum to one, and samples
that fall outside the input get zero weight (``cubic-pytorch`` without antialiasing instead
repeats the edge pixels). The image is then contracted with each matrix in turn. ``area`` uses
the overlap of output and input pixel areas as weights; ``nearest`` (``resize`` only) gathers.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.image import resize
    >>> resize(jnp.array([0.0, 1.0]), (4,), "linear").tolist()
    [0.0, 0.25, 0.75, 1.0]
"""

from __future__ import annotations

import enum
import math
from typing import Any, Callable, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax

__all__ = ["ResizeMethod", "scale_and_translate", "resize"]


class ResizeMethod(enum.Enum):
    """Resampling methods: NEAREST, LINEAR, LANCZOS3, LANCZOS5, CUBIC (Keys, a = -0.5),
    CUBIC_PYTORCH (a = -0.75, PyTorch's bicubic), AREA (box filter over pixel areas)."""

    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s: str) -> "ResizeMethod":
        """The method a string names ('bilinear', 'bicubic', 'lanczos3', ...)."""
        names = {"nearest": "NEAREST", "linear": "LINEAR", "bilinear": "LINEAR",
                 "trilinear": "LINEAR", "triangle": "LINEAR", "lanczos3": "LANCZOS3",
                 "lanczos5": "LANCZOS5", "cubic": "CUBIC", "bicubic": "CUBIC",
                 "tricubic": "CUBIC", "cubic-pytorch": "CUBIC_PYTORCH",
                 "bicubic-pytorch": "CUBIC_PYTORCH", "area": "AREA"}
        if s not in names:
            raise ValueError(f'Unknown resize method "{s}"')
        return ResizeMethod[names[s]]


def _triangle(x: Any) -> Any:
    return jnp.maximum(0, 1 - jnp.abs(x))


def _lanczos(radius: float) -> Callable[[Any], Any]:
    def kernel(x: Any) -> Any:
        num = radius * jnp.sin(np.pi * x) * jnp.sin(np.pi * x / radius)
        val = jnp.where(x > 1e-3, jnp.divide(num, jnp.where(x != 0, np.pi ** 2 * x ** 2, 1)), 1)
        return jnp.where(x > radius, 0.0, val)
    return kernel


def _cubic(a: float) -> Callable[[Any], Any]:
    """The cubic convolution kernel with parameter ``a`` (Keys: -0.5; OpenCV/PyTorch: -0.75)."""
    def kernel(x: Any) -> Any:
        if a == -0.5:  # Keys' kernel, in the same arithmetic order as JAX's
            near = ((1.5 * x - 2.5) * x) * x + 1.0
            far = ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0
        else:
            near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
            far = ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
        return jnp.where(x >= 2.0, 0.0, jnp.where(x >= 1.0, far, near))
    return kernel


_AREA = "area"
# method -> (radius, kernel)
_KERNELS: dict[ResizeMethod, tuple[int, Any]] = {
    ResizeMethod.LINEAR: (1, _triangle),
    ResizeMethod.LANCZOS3: (3, _lanczos(3.0)),
    ResizeMethod.LANCZOS5: (5, _lanczos(5.0)),
    ResizeMethod.CUBIC: (2, _cubic(-0.5)),
    ResizeMethod.CUBIC_PYTORCH: (2, _cubic(-0.75)),
    ResizeMethod.AREA: (1, _AREA),
}

_MIN_TOTAL = 1000.0 * float(np.finfo(np.float32).eps)


def _normalise(weights: Any) -> Any:
    total = jnp.sum(weights, axis=0, keepdims=True)
    return jnp.where(jnp.abs(total) > _MIN_TOTAL,
                     jnp.divide(weights, jnp.where(total != 0, total, 1)), 0)


def _weights(in_size: int, out_size: int, scale: Any, translation: Any, kernel: Any,
             antialias: bool, edge_padding: bool, radius: int) -> Any:
    """The ``(in_size, out_size)`` weight matrix of one dimension."""
    dtype = jnp.result_type(scale, translation)
    inv = 1.0 / scale
    kernel_scale = jnp.maximum(inv, 1.0) if antialias else 1.0
    sample = (jnp.arange(out_size, dtype=dtype) + 0.5) * inv - translation * inv - 0.5
    pad = 0
    if edge_padding:
        if antialias:
            try:
                pad = math.ceil(radius * max(1.0 / float(scale), 1.0))
            except TypeError:
                raise TypeError("scale_and_translate: antialiasing with edge padding needs a "
                                "concrete (static) scale") from None
        else:
            pad = radius
    positions = jnp.arange(-pad, in_size + pad, dtype=dtype)
    if kernel is _AREA:
        left = jnp.arange(out_size, dtype=dtype) * inv - translation * inv
        in_left = jnp.arange(in_size, dtype=dtype)
        weights = jnp.maximum(0.0, jnp.minimum((left + inv)[None, :], (in_left + 1.0)[:, None])
                              - jnp.maximum(left[None, :], in_left[:, None]))
    else:
        weights = kernel(jnp.abs(sample[None, :] - positions[:, None]) / kernel_scale)
    if edge_padding:
        rows = jnp.clip(positions.astype(jnp.int32), 0, in_size - 1)
        cols = jnp.broadcast_to(jnp.arange(out_size)[None, :], weights.shape)
        mat = jnp.zeros((in_size, out_size), dtype).at[rows[:, None], cols].add(weights)
        return _normalise(mat)
    weights = _normalise(weights)
    inside = (sample >= -0.5) & (sample <= in_size - 0.5)
    return jnp.where(inside[None, :], weights, 0)


def _apply(x: Any, shape: tuple[int, ...], dims: Sequence[int], scale: Sequence[Any],
           translation: Sequence[Any], method: ResizeMethod, antialias: bool,
           precision: Any) -> Any:
    radius, kernel = _KERNELS[method]
    edge_padding = method is ResizeMethod.CUBIC_PYTORCH and not antialias
    for i, d in enumerate(dims):
        d = d % x.ndim
        w = _weights(x.shape[d], shape[d], scale[i], translation[i], kernel, antialias,
                     edge_padding, radius).astype(x.dtype)
        x = jnp.moveaxis(jnp.tensordot(x, w, axes=([d], [0]), precision=precision), -1, d)
    return x


def _method(method: Any) -> ResizeMethod:
    return ResizeMethod.from_string(method) if isinstance(method, str) else ResizeMethod(method)


def _shape(fun: str, image: Any, shape: Sequence[int]) -> tuple[int, ...]:
    shape = tuple(int(d) for d in shape)
    if len(shape) != jnp.ndim(image):
        raise ValueError(f"{fun}: shape must have length equal to the number of dimensions of "
                         f"x; {shape} vs {jnp.shape(image)}")
    return shape


def scale_and_translate(image: Any, shape: Sequence[int], spatial_dims: Sequence[int],
                        scale: Any, translation: Any, method: Any, antialias: bool = True,
                        precision: Any = lax.Precision.HIGHEST) -> Any:
    """Resample ``image`` to ``shape``: input location ``x`` of spatial dimension ``d`` maps to
    ``x * scale[i] + translation[i]`` in the output (``spatial_dims[i] == d``), with
    half-centred pixels; outputs that map outside the input are zero.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.image import scale_and_translate
        >>> out = scale_and_translate(jnp.arange(4.0), (4,), (0,), jnp.array([1.0]),
        ...                           jnp.array([1.0]), "linear")
        >>> out.tolist()
        [0.0, 0.0, 1.0, 2.0]
    """
    shape = _shape("scale_and_translate", image, shape)
    method = _method(method)
    if method is ResizeMethod.NEAREST:
        raise ValueError("Nearest neighbor resampling is not currently supported for "
                         "scale_and_translate.")
    if method is ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    image = _float_image(image)
    scale, translation = jnp.asarray(scale), jnp.asarray(translation)
    dt = jnp.result_type(scale, translation, jnp.float32)
    scale, translation = scale.astype(dt), translation.astype(dt)
    dims = tuple(spatial_dims)
    if not dims:
        return image
    return _apply(image, shape, dims, [scale[i] for i in range(len(dims))],
                  [translation[i] for i in range(len(dims))], method, antialias, precision)


def _float_image(image: Any) -> Any:
    image = jnp.asarray(image)
    if jnp.issubdtype(image.dtype, jnp.inexact):
        return image
    return image.astype(jnp.result_type(image.dtype, float))


def _nearest(x: Any, shape: tuple[int, ...]) -> Any:
    for d, (m, n) in enumerate(zip(x.shape, shape)):
        if m == n:
            continue
        offsets = (np.arange(n, dtype=np.float32) + 0.5) * np.float32(m) / np.float32(n)
        idx = np.floor(offsets.astype(np.float32)).astype(np.int32)
        x = jnp.take(x, idx, axis=d)
    return x


def resize(image: Any, shape: Sequence[int], method: Any, antialias: bool = True,
           precision: Any = lax.Precision.HIGHEST) -> Any:
    """``image`` resampled to ``shape`` (every dimension whose size changes is resampled).

    ``method``: a :class:`ResizeMethod` or its name ('nearest', 'linear'/'bilinear',
    'cubic'/'bicubic', 'cubic-pytorch', 'lanczos3', 'lanczos5', 'area'). With ``antialias``,
    downsampling widens the kernel (a low-pass filter). 'nearest' keeps the dtype; the other
    methods give floats.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.image import resize
        >>> resize(jnp.array([[1, 2], [3, 4]]), (4, 4), "nearest")[0].tolist()
        [1, 1, 2, 2]
    """
    shape = _shape("resize", image, shape)
    method = _method(method)
    if method is ResizeMethod.NEAREST:
        return _nearest(jnp.asarray(image), shape)
    image = _float_image(image)
    dims = tuple(d for d in range(len(shape)) if image.shape[d] != shape[d])
    if method is ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    if not dims:
        return image
    # Python floats, as JAX's resize passes them (weakly typed: the image's precision)
    scales = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in dims]
    return _apply(image, shape, dims, scales, [0.0] * len(dims), method, antialias, precision)

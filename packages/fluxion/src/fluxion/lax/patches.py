"""Image patches and unshared ("locally connected") convolutions, built on
``conv_general_dilated`` and ``dot_general``.

``conv_general_dilated_patches`` extracts every receptive window of the input into the feature
dimension (channel-major: feature ``c * prod(filter_shape) + k`` is channel ``c`` at window
position ``k``), as a depthwise convolution with a one-hot kernel.
``conv_general_dilated_local`` contracts those patches with a separate kernel per output
location.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.conv_general_dilated_patches(jnp.ones((1, 2, 4, 4)), (2, 2), (1, 1), "VALID").shape
    (1, 8, 3, 3)
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.lax import shape_ops as so
from fluxion.lax._rules import shape_of
from fluxion.lax.convolution import conv_dimension_numbers, conv_general_dilated
from fluxion.lax.dot import Precision, _canon_precision, dot_general

__all__ = ["conv_general_dilated_patches", "conv_general_dilated_local"]


def conv_general_dilated_patches(lhs: Any, filter_shape: Sequence[int],
                                 window_strides: Sequence[int], padding: Any,
                                 lhs_dilation: Sequence[int] | None = None,
                                 rhs_dilation: Sequence[int] | None = None,
                                 dimension_numbers: Any = None, precision: Any = None,
                                 preferred_element_type: Any = None) -> Any:
    """The patches of ``lhs`` that a convolution with a kernel of spatial ``filter_shape``
    would see, flattened into the output's feature dimension (``C * prod(filter_shape)``
    features).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> p = lax.conv_general_dilated_patches(jnp.arange(4.0).reshape(1, 1, 4), (2,), (2,),
        ...                                      "VALID")
        >>> p[0].tolist()
        [[0.0, 2.0], [1.0, 3.0]]
    """
    lshape = shape_of(lhs)
    filter_shape = tuple(int(d) for d in filter_shape)
    dn = conv_dimension_numbers(lshape, (1, 1) + filter_shape, dimension_numbers)
    lhs_spec, rhs_spec, _ = dn
    size = math.prod(filter_shape)
    channels = lshape[lhs_spec[1]]
    dt = dtypes.dtype(lhs)
    # One-hot kernel: output feature c * size + k picks window position k of channel c.
    eye = np.eye(size, dtype=dt).reshape((size, 1) + filter_shape)
    canonical = np.tile(eye, (channels,) + (1,) * (1 + len(filter_shape)))
    # canonical is (O, I, spatial...); lay it out as rhs_spec says
    axes = [0] * canonical.ndim
    for canon_axis, pos in enumerate(rhs_spec):
        axes[pos] = canon_axis
    rhs = np.transpose(canonical, axes)
    pr = None if precision is None else (precision, Precision.DEFAULT)  # the lhs's, as JAX
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, dimension_numbers=dn,
                                feature_group_count=channels, precision=pr,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
                               filter_shape: Sequence[int],
                               lhs_dilation: Sequence[int] | None = None,
                               rhs_dilation: Sequence[int] | None = None,
                               dimension_numbers: Any = None, precision: Any = None) -> Any:
    """An unshared convolution: a separate kernel at every output location. ``rhs`` has the
    output's spatial dimensions where a convolution kernel has its window, and its ``I``
    dimension holds ``C * prod(filter_shape)`` (channel-major, as the patches are).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> x = jnp.ones((1, 2, 5))
        >>> w = jnp.ones((3, 2 * 2, 4))      # (O, I * window, output width)
        >>> lax.conv_general_dilated_local(x, w, (1,), "VALID", (2,)).shape
        (1, 3, 4)
    """
    canonical = _canon_precision(precision)
    if canonical is not None and not isinstance(canonical, tuple):
        raise ValueError(f"Unsupported precision for conv_general_dilated_local: {precision}")
    lhs_precision = None if canonical is None else canonical[0]
    patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                           lhs_dilation, rhs_dilation, dimension_numbers,
                                           lhs_precision)
    _, rhs_spec, out_spec = conv_dimension_numbers(shape_of(lhs), (1, 1) + tuple(filter_shape),
                                                   dimension_numbers)
    # contract features; every spatial dimension is a batch dimension of the product
    spatial = list(range(len(out_spec) - 2))
    order = sorted(spatial, key=lambda i: out_spec[2 + i])
    lhs_batch = tuple(out_spec[2 + i] for i in order)
    rhs_batch = tuple(rhs_spec[2 + i] for i in order)
    out = dot_general(patches, rhs, (((out_spec[1],), (rhs_spec[1],)), (lhs_batch, rhs_batch)),
                      precision=precision)
    # ``out`` is (spatial in lhs_batch order..., N, O): move each to its out_spec position
    src_positions = list(lhs_batch) + [out_spec[0], out_spec[1]]
    perm = [src_positions.index(d) for d in range(len(src_positions))]
    return so.transpose(out, perm)

"""fluxion.lax convolutions (conv_general_dilated, conv, conv_with_general_padding,
conv_transpose, conv_dimension_numbers) against jax.lax 0.10.2.

Each case runs eagerly and under ``fluxion.jit``; values, dtypes, shapes and weak types must equal
JAX's, and error cases must raise JAX's exception class with a message naming the function.
"""

from __future__ import annotations

import jax.lax as jlax
import numpy as np
import pytest
from _compare import check_like_jax, rand_array
from _lax_cases import _both

import fluxion.lax as flax

CONV_CASES = [
    # lhs shape, rhs shape, strides, padding, lhs_dil, rhs_dil, dnums, fgc, bgc
    ((2, 3, 5, 5), (4, 3, 3, 3), (1, 2), [(1, 1), (0, 2)], None, (2, 1), None, 1, 1),
    ((2, 5, 6, 3), (3, 3, 3, 4), (1, 1), "SAME", None, None, ("NHWC", "HWIO", "NHWC"), 1, 1),
    ((1, 4, 7), (6, 2, 3), (2,), "VALID", None, None, None, 2, 1),
    ((4, 2, 5), (4, 2, 2), (1,), [(0, 0)], (2,), None, ("NCH", "OIH", "NCH"), 1, 2),
    ((2, 6, 6, 3), (3, 3, 1, 3), (2, 2), "SAME_LOWER", None, None, ("NHWC", "HWIO", "NCHW"), 3, 1),
]


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_general_dilated(case):
    ls, rs, strides, padding, ld, rd, dn, fgc, bgc = case
    lhs, rhs = rand_array(ls, "float32", seed=4), rand_array(rs, "float32", seed=5)
    kw = dict(lhs_dilation=ld, rhs_dilation=rd, dimension_numbers=dn, feature_group_count=fgc,
              batch_group_count=bgc, precision=jlax.Precision.HIGHEST)
    kwf = dict(kw, precision="highest")
    _both(lambda a, b: flax.conv_general_dilated(a, b, strides, padding, **kwf),
          lambda a, b: jlax.conv_general_dilated(a, b, strides, padding, **kw), lhs, rhs,
          rtol=1e-5, atol=1e-5)


def test_conv_convenience_and_int():
    lhs, rhs = rand_array((1, 2, 5, 5), "float32", seed=6), rand_array((3, 2, 2, 2), "float32")
    _both(lambda a, b: flax.conv(a, b, (1, 1), "SAME"), lambda a, b: jlax.conv(a, b, (1, 1), "SAME"),
          lhs, rhs, rtol=1e-5, atol=1e-5)
    _both(lambda a, b: flax.conv_with_general_padding(a, b, (2, 1), [(1, 0), (0, 1)], (1, 2), None),
          lambda a, b: jlax.conv_with_general_padding(a, b, (2, 1), [(1, 0), (0, 1)], (1, 2), None),
          lhs, rhs, rtol=1e-5, atol=1e-5)
    li, ri = rand_array((1, 2, 4, 4), "int32"), rand_array((3, 2, 2, 2), "int32")
    _both(lambda a, b: flax.conv(a, b, (1, 1), "VALID"), lambda a, b: jlax.conv(a, b, (1, 1), "VALID"),
          li, ri)
    i8l, i8r = li.astype(np.int8), ri.astype(np.int8)
    _both(lambda a, b: flax.conv(a, b, (1, 1), "VALID", preferred_element_type=np.int32),
          lambda a, b: jlax.conv(a, b, (1, 1), "VALID", preferred_element_type=np.int32), i8l, i8r)


@pytest.mark.parametrize("padding", ["SAME", "VALID", [(1, 2), (0, 1)]])
@pytest.mark.parametrize("transpose_kernel", [False, True])
def test_conv_transpose(padding, transpose_kernel):
    lhs, rhs = rand_array((1, 3, 4, 2), "float32", seed=7), rand_array((3, 2, 2, 2), "float32")
    _both(lambda a, b: flax.conv_transpose(a, b, (2, 1), padding, transpose_kernel=transpose_kernel),
          lambda a, b: jlax.conv_transpose(a, b, (2, 1), padding, transpose_kernel=transpose_kernel),
          lhs, rhs, rtol=1e-5, atol=1e-5)


def test_conv_dimension_numbers():
    for dn in [None, ("NHWC", "HWIO", "NHWC"), ("NCHW", "OIHW", "NHWC"), ("NWHC", "WHOI", "CNHW")]:
        ours = flax.conv_dimension_numbers((1, 2, 3, 4), (1, 2, 3, 4), dn)
        theirs = jlax.conv_dimension_numbers((1, 2, 3, 4), (1, 2, 3, 4), dn)
        assert tuple(map(tuple, ours)) == tuple(map(tuple, theirs))
    with pytest.raises(TypeError):
        flax.conv_dimension_numbers((1, 2, 3, 4), (1, 2, 3, 4), ("NHWC", "HWIO", "NHXC"))


def test_conv_errors():
    lhs, rhs = rand_array((1, 3, 5, 5), "float32"), rand_array((4, 2, 3, 3), "float32")
    e = check_like_jax(lambda: flax.conv(lhs, rhs, (1, 1), "VALID"),
                       lambda: jlax.conv(lhs, rhs, (1, 1), "VALID"))
    assert isinstance(e, TypeError) and isinstance(e, ValueError)
    msg = str(e)
    assert "conv_general_dilated" in msg and "(1, 3, 5, 5)" in msg and "(4, 2, 3, 3)" in msg
    e = check_like_jax(lambda: flax.conv_general_dilated(lhs, rhs, (1, 1), "VALID",
                                                        feature_group_count=2),
                       lambda: jlax.conv_general_dilated(lhs, rhs, (1, 1), "VALID",
                                                         feature_group_count=2))
    assert "feature_group_count" in str(e)

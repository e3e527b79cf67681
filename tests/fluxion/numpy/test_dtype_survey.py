"""jnp functions over the dtypes and special values of a differential survey against jax 0.10.2
(every jnp unary/binary function over bool, int8 ... complex64 and Python scalars, with NaN/inf,
-0.0 and zero divisors): values (shape, dtype, weak type, bits) or the error type. Each case
failed before its fix: integer x // 0 and x % 0 took NumPy's answers instead of jax's (-2 and 0
for x > 0), float floor_divide was floor(x / y) (1.0 // 0.1 gave 10), divmod refused bools,
clip accepted complex values, linspace rounded its samples as NumPy does (shifting histogram
counts) and computed a complex dtype's samples in floating point, take read boolean indices
as a mask and float indices raised TypeError, take_along_axis had no default axis, and the
cumulative sums of weakly typed operands stayed weak (unwrap's result with them), and a complex
scalar converted to a real dtype took its real part (full(2, 1j, dtype=bool) was False) where
jax converts scalars through NumPy; cumsum of a strongly typed 0-d array with an axis returned
a value where jax raises ValueError; expand_dims with a repeated axis raised TypeError."""

from __future__ import annotations

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from _compare import assert_bits_equal, assert_same

import fluxion.numpy as fnp

I = np.array([1, -1, 0, 5, -5, 7, -7], np.int32)
IZ = np.array([0, 0, 0, -2, 2, 0, 3], np.int32)
F = np.array([1.0, -1.0, 0.0, 5.5, 7.0, np.inf, 0.3, -0.0], np.float32)
FZ = np.array([0.1, 0.0, 0.0, -2.0, 0.7, 2.0, 0.1, 3.0], np.float32)
B1, B2 = np.array([True, False, True]), np.array([False, True, True])
C = np.array([0.5 + 1j, -1.5, 2.0 - 0.5j], np.complex64)

CASES = {
    "floor_divide_int_by_zero": lambda m: m.floor_divide(I, IZ),
    "remainder_int_by_zero": lambda m: m.remainder(I, IZ),
    "mod_uint_by_zero": lambda m: m.mod(I.astype(np.uint8), IZ.astype(np.uint8)),
    "divmod_int_by_zero": lambda m: m.divmod(I, IZ),
    "floor_divide_bool": lambda m: m.floor_divide(B1, B2),
    "remainder_bool": lambda m: m.remainder(B1, B2),
    "divmod_bool": lambda m: m.divmod(B1, B2),
    "floor_divide_float": lambda m: m.floor_divide(F, FZ),
    "floor_divide_float16": lambda m: m.floor_divide(F.astype(np.float16), FZ.astype(np.float16)),
    "floor_divide_python_scalar": lambda m: m.floor_divide(F, 0.1),
    "divmod_complex": lambda m: m.divmod(C, C),
    "clip_complex": lambda m: m.clip(C, 0, 1),
    "clip_complex_no_bounds": lambda m: m.clip(C),
    "clip_complex_bound": lambda m: m.clip(F, 1j),
    "clip_complex_list": lambda m: m.clip([1j, 2.0]),
    "histogram_int8": lambda m: m.histogram(np.array([1, -2, 3], np.int8)),
    "histogram2d_int16": lambda m: m.histogram2d(np.array([1, -2, 3], np.int16),
                                                 np.array([2, 3, -1], np.int16)),
    "take_bool_indices": lambda m: m.take(np.arange(3), B1),
    "take_bool_index_axis": lambda m: m.take(np.arange(6).reshape(2, 3), np.array(True), axis=1),
    "take_float_indices": lambda m: m.take(np.arange(3), np.array([1.0])),
    "take_along_axis_default_axis": lambda m: m.take_along_axis(np.arange(6).reshape(2, 3),
                                                                np.array([[2], [0]])),
    "unwrap_bool": lambda m: m.unwrap(B1),
    "unwrap_int8": lambda m: m.unwrap(np.array([1, -2, 3], np.int8)),
    "unravel_index_bool": lambda m: m.unravel_index(B1, (2, 3)),
    "cumsum_weak": lambda m: m.cumsum(m.broadcast_to(m.asarray(2.0) * 1, (3,))),
    "cumprod_weak": lambda m: m.cumprod(m.broadcast_to(m.asarray(2.0) * 1, (3,))),
    "nancumsum_weak": lambda m: m.nancumsum(m.broadcast_to(m.asarray(2.0) * 1, (3,))),
    "cumulative_sum_weak": lambda m: m.cumulative_sum(m.broadcast_to(m.asarray(2) * 1, (3,))),
    "cumsum_python_scalar": lambda m: m.cumsum(2.0),
    "cumsum_0d_axis": lambda m: m.cumsum(np.array(3.5, np.float32), axis=-1),
    "cumsum_numpy_scalar_axis": lambda m: m.cumsum(np.float32(3.5), axis=0),
    "nancumprod_0d_axis": lambda m: m.nancumprod(np.array(3.5, np.float32), axis=0),
    "cumsum_python_scalar_axis": lambda m: m.cumsum(3.5, axis=-1),
    "cumsum_weak_0d_axis": lambda m: m.cumsum(m.asarray(3.5), axis=0),
    "cumsum_0d_no_axis": lambda m: m.cumsum(np.array(3.5, np.float32)),
    "expand_dims_repeated": lambda m: m.expand_dims(np.ones(3), (0, 0)),
    "expand_dims_repeated_negative": lambda m: m.expand_dims(np.ones(3), (1, -1)),
    "full_like_bool_complex": lambda m: m.full_like(B1, 1j),
    "full_bool_complex": lambda m: m.full(2, 1j, dtype=bool),
    "full_float32_complex": lambda m: m.full(2, 0.5j, dtype=np.float32),
    "full_like_int8_complex": lambda m: m.full_like(np.ones(2, np.int8), 1j),
    "full_bool_numpy_complex": lambda m: m.full(2, np.complex64(1j), dtype=bool),
}

LAX_CONVERT = [(1j, np.bool_), (0j, np.bool_), (0.5j, np.float32), (1j, np.int8),
               (np.complex64(1j), np.bool_), (np.complex64(2 + 1j), np.float32), (1j, np.complex64),
               (C, np.bool_), (C, np.float32)]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("i", range(len(LAX_CONVERT)))
def test_convert_element_type_of_complex_like_jax(i):
    import jax

    from fluxion import lax
    value, dtype = LAX_CONVERT[i]
    out = []
    for convert in (lax.convert_element_type, jax.lax.convert_element_type):
        try:
            out.append(convert(value, dtype))
        except TypeError as err:
            out.append(type(err))
    ours, theirs = out
    if isinstance(theirs, type):
        assert ours is theirs
    else:
        assert_same(ours, theirs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_like_jax(name):
    out = []
    for m in (fnp, jnp):
        try:
            out.append(CASES[name](m))
        except (TypeError, ValueError, NotImplementedError) as err:
            out.append(type(err))
    ours, theirs = out
    if isinstance(theirs, type):
        assert ours is theirs
    elif isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert_same(a, b)
            assert_bits_equal(a, b)
    else:
        assert_same(ours, theirs)
        assert_bits_equal(ours, theirs)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.complex64,
                                   np.int32, None])
@pytest.mark.parametrize("num,endpoint", [(1, True), (1, False), (5, True), (11, True),
                                          (11, False)])
def test_linspace_bits_like_jax(dtype, num, endpoint):
    for start, stop in ((-2.0, 3.0), (0.3, -7.7), (np.array([1.0, 2.0]), -7.7)):
        ours = fnp.linspace(start, stop, num, endpoint=endpoint, dtype=dtype, retstep=True)
        theirs = jnp.linspace(start, stop, num, endpoint=endpoint, dtype=dtype, retstep=True)
        for a, b in zip(ours, theirs):
            assert_same(a, b)
            assert_bits_equal(a, b)

"""Array API points found with the data-apis array-api-tests suite (see docs/api/numpy.md,
"Array API conformance"): ``finfo`` fields have JAX's values and JAX's types (NumPy scalars of
the dtype, which is what real code relies on: ``jnp.finfo(jnp.float32).min`` is not weakly typed),
and item assignment raises ``TypeError`` as it does on JAX arrays."""

import numpy as np
import pytest

import fluxion.numpy as fnp

jnp = pytest.importorskip("jax.numpy")

FLOATS = ("float16", "bfloat16", "float32", "complex64", "float8_e4m3fn")


@pytest.mark.parametrize("name", FLOATS)
def test_finfo_fields_have_jax_values_and_types(name):
    ours, ref = fnp.finfo(getattr(fnp, name)), jnp.finfo(getattr(jnp, name))
    assert type(ours.bits) is int and ours.bits == ref.bits
    for field in ("eps", "max", "min", "smallest_normal", "tiny", "smallest_subnormal"):
        value, expected = getattr(ours, field), getattr(ref, field)
        assert type(value) is type(expected), field
        assert value == expected, field
    assert ours.dtype == ref.dtype and ours.nmant == ref.nmant
    assert str(ours) == str(ref) and repr(ours) == repr(ref)


def test_finfo_of_an_array_and_caching():
    x = fnp.ones(3, fnp.float16)
    assert fnp.finfo(x) is fnp.finfo(np.float16) is fnp.finfo(x.dtype)
    assert isinstance(fnp.finfo(x), np.finfo)
    assert fnp.finfo is jnp.finfo  # both are ml_dtypes' finfo


def test_finfo_min_keeps_the_dtype_in_arithmetic_as_jax():
    # A Python float would be weakly typed; JAX's finfo fields are strong NumPy scalars.
    for name in ("float16", "bfloat16"):
        ours = fnp.finfo(getattr(fnp, name)).min + fnp.zeros(2, fnp.float32)
        ref = jnp.finfo(getattr(jnp, name)).min + jnp.zeros(2, jnp.float32)
        assert ours.dtype == ref.dtype and ours.weak_type == ref.weak_type
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(ref))
    with pytest.raises(ValueError):
        fnp.finfo(fnp.int32)


def test_setitem_raises_type_error_like_jax():
    x, y = fnp.zeros(3), jnp.zeros(3)
    with pytest.raises(TypeError):
        y[0] = 1.0
    with pytest.raises(TypeError, match=r"\.at\[idx\]\.set"):
        x[0] = 1.0
    assert hasattr(type(x), "__setitem__") and hasattr(type(y), "__setitem__")


def test_vecdot_keeps_dtype_and_checks_axis_sizes_like_jax():
    a, b = np.arange(6, dtype=np.uint8).reshape(2, 3), np.arange(3, dtype=np.uint8)
    ours, ref = fnp.vecdot(a, b), jnp.vecdot(a, b)
    assert ours.dtype == ref.dtype == np.uint8
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(ref))
    assert fnp.linalg.vecdot(a, b).dtype == np.uint8
    with pytest.raises(ValueError):
        jnp.vecdot(np.ones((2, 3)), np.ones((2, 1)))
    with pytest.raises(ValueError, match="vecdot"):
        fnp.vecdot(np.ones((2, 3)), np.ones((2, 1)))

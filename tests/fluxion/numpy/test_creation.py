"""fluxion.numpy.creation against jax.numpy: array/asarray, zeros/ones/full/empty and their
_like forms, arange, linspace, eye, and 64-bit requests with x64 off and on.
"""

from __future__ import annotations

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from _compare import assert_same, check_like_jax

import fluxion
import fluxion.numpy as fnp

BF16 = np.dtype(ml_dtypes.bfloat16)
F32, F16, I32 = (np.dtype(t) for t in ("float32", "float16", "int32"))


def both(name: str, *args, rtol=None, atol=None, err_contains=(), **kwargs):
    """Call fnp.<name> and jnp.<name> with the same arguments and compare."""
    return check_like_jax(getattr(fnp, name), getattr(jnp, name), *args, rtol=rtol, atol=atol,
                          err_contains=err_contains, **kwargs)


@pytest.mark.parametrize("obj", [
    1, 1.5, True, 2 + 1j, [1, 2, 3], [1, 2.0], [True, 2], [[1, 2], [3, 4]], [[1.5], [2]],
    (1, 2), [], [[]], np.float32(2), np.arange(3, dtype=np.int16), np.ones((2, 2), np.float64),
    [np.float32(1), 2], [1, np.int64(2)], np.array(3, np.uint8), 2**31 - 1,
], ids=repr)
def test_array_and_asarray(obj):
    both("array", obj)
    both("asarray", obj)


@pytest.mark.parametrize("kw", [{"dtype": F16}, {"dtype": "int32"}, {"dtype": bool}, {"ndmin": 3},
                                {"dtype": BF16, "ndmin": 2}, {"dtype": float}, {"dtype": int},
                                {"copy": True}], ids=str)
def test_array_kwargs(kw):
    for obj in ([1, 2, 3], 2.5, [[1.0, 0.0]]):
        both("array", obj, **kw)


def test_array_from_arrays():
    ours = fnp.array([fnp.ones(2), fnp.zeros(2)])
    theirs = jnp.array([jnp.ones(2), jnp.zeros(2)])
    assert_same(ours, theirs)
    assert_same(fnp.asarray(fnp.arange(3)), jnp.asarray(jnp.arange(3)))
    assert_same(fnp.array(fnp.float32(2)), jnp.array(jnp.float32(2)))
    assert_same(fnp.asarray(fnp.array(1.0)), jnp.asarray(jnp.array(1.0)))
    x = fnp.arange(3.0)
    assert fnp.asarray(x) is x


def test_array_errors():
    check_like_jax(fnp.array, jnp.array, [[1, 2], [3]])
    check_like_jax(fnp.array, jnp.array, 2**40)
    check_like_jax(fnp.array, jnp.array, "abc")


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("args", [((3,),), ((2, 3),), (4,), ((),), ((2,), F16), ((2,), "int32"),
                                  ((2,), bool), ((0, 2),)], ids=str)
def test_zeros_ones_empty(name, args):
    if name == "empty":
        ours, theirs = fnp.empty(*args), jnp.empty(*args)
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        assert ours.weak_type == theirs.weak_type
        return
    both(name, *args)


@pytest.mark.parametrize("args", [((3,), 2.0), ((2, 2), 1), ((2,), True), ((2,), 1.5, I32),
                                  ((2,), np.float16(1)), ((2, 3), np.arange(3)), ((), 7)],
                         ids=str)
def test_full(args):
    both("full", *args)


@pytest.mark.parametrize("src", [np.ones((2, 3), np.float32), np.arange(3), 2.0, 3,
                                 np.ones((2,), BF16)], ids=lambda s: f"{np.shape(s)}")
def test_like(src):
    for name in ("zeros_like", "ones_like"):
        both(name, src)
        both(name, src, dtype=I32)
        both(name, src, shape=(4,))
    both("full_like", src, 7)
    both("full_like", src, 2.5, dtype=F16)
    ours, theirs = fnp.empty_like(src), jnp.empty_like(src)
    assert (ours.shape, ours.dtype, ours.weak_type) == (theirs.shape, theirs.dtype,
                                                        theirs.weak_type)


@pytest.mark.parametrize("args", [
    (5,), (2, 7), (1, 10, 3), (5.0,), (0.5, 3), (0, 1, 0.25), (10, 0, -2), (3, 1), (0,), (2.5,),
    (1, 4, 1, I32), (3, None, None, F32), (0, 5, 2, F16), (np.int32(3),), (-3,), (1.5, 4.0, 0.5),
], ids=str)
def test_arange(args):
    both("arange", *args)


def test_arange_dtype_kw():
    both("arange", 4, dtype=F32)
    both("arange", 1, 3, dtype="float16")
    both("arange", 4.0, dtype=I32)


@pytest.mark.parametrize("kw", [{}, {"endpoint": False}, {"num": 0}, {"num": 1},
                                {"num": 1, "endpoint": False}, {"dtype": I32}, {"num": 7},
                                {"retstep": True}, {"retstep": True, "num": 1},
                                {"retstep": True, "endpoint": False, "num": 4},
                                {"dtype": F16, "num": 3}], ids=str)
def test_linspace(kw):
    kw = dict(kw)
    num = kw.pop("num", 5)
    both("linspace", 0, 1, num, rtol=1e-6, atol=1e-7, **kw)
    both("linspace", 2.0, -3.0, num, rtol=1e-6, atol=1e-7, **kw)


def test_linspace_arrays_and_axis():
    s, e = np.array([0.0, 1.0], np.float32), np.array([1.0, 3.0], np.float32)
    both("linspace", s, e, 4, rtol=1e-6)
    both("linspace", s, e, 4, axis=1, rtol=1e-6)
    both("linspace", 0, e, 3, rtol=1e-6)
    check_like_jax(fnp.linspace, jnp.linspace, 0, 1, -1)


@pytest.mark.parametrize("args", [(3,), (2, 4), (4, 2), (3, 3, 1), (3, 3, -1), (3, 4, 2),
                                  (3, None, 5), (0,), (3, None, 0, I32), (2, 2, 0, bool)], ids=str)
def test_eye(args):
    both("eye", *args)


def test_eye_kw():
    both("eye", 3, k=1, dtype=F16)
    both("eye", 2, M=3)


def test_64bit_request_warns_x64_off():
    assert not fluxion.config.jax_enable_x64
    for make in (lambda m: m.array([1, 2], dtype=np.int64), lambda m: m.zeros(2, "float64"),
                 lambda m: m.arange(3, dtype=np.float64), lambda m: m.ones(2, dtype=np.uint64)):
        with pytest.warns(UserWarning, match="64") as rec_j:
            theirs = make(jnp)
        with pytest.warns(UserWarning, match="64"):
            ours = make(fnp)
        assert rec_j
        assert_same(ours, theirs)


def test_x64_creation(x64):
    both("array", [1, 2])
    both("array", 1.5)
    both("zeros", 2)
    both("arange", 3)
    both("arange", 3.0)
    both("linspace", 0, 1, 3)
    both("array", [1, 2], dtype=np.int64)
    assert_same(fnp.ones(2) + 1, jnp.ones(2) + 1)


def _both(case):
    """``case(module)`` with fluxion.numpy and with jax.numpy: equal results, or the same
    exception type."""
    check_like_jax(lambda: case(fnp), lambda: case(jnp), rtol=1e-6, atol=1e-6)


FULL_CASES = [
    lambda m: m.full((2,), [1, 2]),
    lambda m: m.full((2, 3), np.array([1, 2, 3])),
    lambda m: m.full((2,), 3.0),
]


@pytest.mark.parametrize("case", range(len(FULL_CASES)))
def test_full_fill_values(case):
    _both(FULL_CASES[case])


def test_array_and_copy_give_a_new_buffer_like_jax():
    # jnp.array(x) (copy=True) and jnp.copy(x) are new arrays; asarray is x itself (flax's
    # nnx.clone(arrays=True) and donating both a parameter and its clone rely on it)
    import jax
    import jax.numpy as jjnp

    import fluxion
    import fluxion.numpy as fnp
    for lib, np_ in ((fluxion, fnp), (jax, jjnp)):
        x = np_.ones(3)
        assert np_.copy(x) is not x and np_.array(x) is not x and np_.asarray(x) is x
        assert np_.array(x, copy=False) is x
        assert np_.copy(x).unsafe_buffer_pointer() != x.unsafe_buffer_pointer()
        f = lib.jit(lambda a, b: (a + 1, b + 1), donate_argnums=(0, 1))
        f(x, np_.copy(x))  # two buffers: donating both is fine
    assert str(fluxion.make_jaxpr(lambda v: fnp.array(v))(1.0)) == str(
        jax.make_jaxpr(lambda v: jjnp.array(v))(1.0))


def test_numpy_integer_array_as_shape_like_jax():
    # a 1-D NumPy integer array is a shape (jax_md's coulomb_recip_pme passes its grid that way);
    # a tuple holding such an array is not
    shape = np.array([2, 3])
    for name in ("zeros", "ones", "empty"):
        ours, theirs = getattr(fnp, name)(shape), getattr(jnp, name)(shape)
        assert ours.shape == theirs.shape == (2, 3) and ours.dtype == theirs.dtype
    assert_same(fnp.full(shape, 1.5), jnp.full(shape, 1.5))
    with pytest.raises(TypeError, match="zeros: shape must be a sequence of integers"):
        fnp.zeros((shape,))


@pytest.mark.parametrize("dtype", [None, "float16", BF16, "int8", "uint32", "bool", "complex64"])
def test_staged_zeros_ones_bind_no_conversion_and_lower_the_same(monkeypatch, dtype):
    # staged zeros/ones hand the fill to broadcast_in_dim as a NumPy scalar: the same literal
    # (same program, same StableHLO) as the converted Python int, without binding the conversion
    from fluxion import lax
    from fluxion.lax import conversions

    dt = fnp.zeros(0, dtype).dtype

    def reference(x):
        return (x, lax.broadcast_in_dim(lax.convert_element_type(0, dt), (2, 3), ()),
                lax.broadcast_in_dim(lax.convert_element_type(1, dt), (4,), ()))

    def ours(x):
        return x, fnp.zeros((2, 3), dtype), fnp.ones(4, dtype)

    reference.__name__ = ours.__name__ = "fill"  # the module's name
    x = fnp.arange(3.0)
    want = fluxion.jit(reference).lower(x).as_text()
    want_jaxpr = str(fluxion.make_jaxpr(reference)(x))
    folds = []
    fold = conversions.convert_element_type_p.fold
    monkeypatch.setattr(conversions.convert_element_type_p, "fold",
                        lambda *a, **k: folds.append(k) or fold(*a, **k))
    assert fluxion.jit(ours).lower(x).as_text() == want
    assert str(fluxion.make_jaxpr(ours)(x)) == want_jaxpr
    assert folds == []
    # rank 0 keeps the conversion (its folded literal is the result: no broadcast is staged)
    assert "broadcast_in_dim" not in str(fluxion.make_jaxpr(lambda: fnp.zeros((), dtype))())

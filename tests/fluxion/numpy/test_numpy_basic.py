"""The foundation NumPy layer and the Array class against jax.numpy 0.10.2.

Creation, ufuncs with weak-type promotion, reductions, shape functions, products, and every
Python-level behaviour of ``fluxion.Array`` (repr, operators, conversions, methods, host
transfer, pickling) plus the promotion flags. The breadth of jnp is in test_numpy_breadth.py.
"""

from __future__ import annotations

import operator
import pickle
import warnings

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from _compare import assert_same, check_like_jax, flags_both, rand_array, x64_both

import fluxion
import fluxion.numpy as fnp

BF16 = np.dtype(ml_dtypes.bfloat16)
F32, F16, I32, U8, BOOL, C64, I8 = (np.dtype(t) for t in (
    "float32", "float16", "int32", "uint8", "bool", "complex64", "int8"))


def both(name: str, *args, rtol=None, atol=None, err_contains=(), **kwargs):
    """Call fnp.<name> and jnp.<name> with the same arguments and compare."""
    return check_like_jax(getattr(fnp, name), getattr(jnp, name), *args, rtol=rtol, atol=atol,
                          err_contains=err_contains, **kwargs)


# ------------------------------------------------------------------------------ creation

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


# ------------------------------------------------------------------------------ ufuncs

UNARY_UFUNCS = ["negative", "positive", "abs", "absolute", "sign", "floor", "ceil", "exp", "exp2",
                "expm1", "log", "log2", "log10", "log1p", "sqrt", "square", "sin", "cos", "tan",
                "tanh", "sinh", "cosh", "arcsin", "arccos", "arctan", "arcsinh", "arctanh",
                "reciprocal", "cbrt", "isfinite", "isnan", "isinf", "logical_not", "trunc",
                "rint", "real", "imag", "conj", "signbit", "deg2rad", "rad2deg", "invert",
                "bitwise_not", "fabs"]
EXACT_UNARY = {"negative", "positive", "abs", "absolute", "sign", "floor", "ceil", "sqrt",
               "isfinite", "isnan", "isinf", "logical_not", "trunc", "rint", "real", "imag",
               "conj", "signbit", "invert", "bitwise_not", "fabs", "square"}
BINARY_UFUNCS = ["add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "power",
                 "maximum", "minimum", "remainder", "mod", "fmod", "arctan2", "hypot",
                 "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
                 "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
                 "bitwise_xor", "left_shift", "right_shift", "copysign", "nextafter", "fmax",
                 "fmin", "logaddexp", "float_power", "heaviside"]
EXACT_BINARY = {"add", "subtract", "multiply", "maximum", "minimum", "equal", "not_equal", "less",
                "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
                "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
                "right_shift", "copysign", "nextafter", "fmax", "fmin", "floor_divide",
                "remainder", "mod", "divide", "true_divide"}
UFUNC_DTYPES = [F32, I32, BOOL, BF16, C64, U8]


def _present(names):
    return [n for n in names if hasattr(fnp, n) and hasattr(jnp, n)]


def _tol(dt):
    dt = np.dtype(dt)
    if dt in (F16, BF16):
        return {"rtol": 2e-2, "atol": 2e-2}
    return {"rtol": 2e-6, "atol": 2e-6}


# Known gaps vs JAX, left to the NumPy-breadth work (see the foundation test report).
KNOWN_GAPS = {("reciprocal", "int32"), ("reciprocal", "bool"), ("reciprocal", "uint8"),
              ("rint", "complex64"), ("logaddexp", "complex64"), ("power", "bool"),
              ("fmod", "bool"), ("hypot", "complex64"),
              # integer division by zero: JAX's correction formula gives other garbage values
              ("floor_divide", "bool"), ("remainder", "bool"), ("mod", "bool")}


@pytest.mark.parametrize("dtype", UFUNC_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", _present(UNARY_UFUNCS))
def test_unary_ufuncs(name, dtype):
    if (name, dtype.name) in KNOWN_GAPS:
        pytest.xfail("known gap vs JAX")
    x = rand_array((2, 3), dtype, 1, positive=name.startswith("log") or name in (
        "sqrt", "reciprocal"), unit=name in ("arcsin", "arccos", "arctanh"))
    tol = {} if name in EXACT_UNARY and dtype.kind != "c" else _tol(dtype)
    # errors may name the lax primitive (as JAX's do), so only the class is compared here
    check_like_jax(getattr(fnp, name), getattr(jnp, name), x, **tol)


@pytest.mark.parametrize("arg", [2, 2.5, True, -1], ids=repr)
@pytest.mark.parametrize("name", ["negative", "exp", "sqrt", "abs", "sign", "isnan", "square",
                                  "floor"])
def test_unary_ufuncs_python_scalars(name, arg):
    check_like_jax(getattr(fnp, name), getattr(jnp, name), arg, **_tol(F32))


def _binary_args(name, dtype, seed):
    if name in ("left_shift", "right_shift") and seed == 2:
        return rand_array((2, 3), dtype, seed, positive=True) % np.array(4, dtype) if (
            dtype.kind in "iu") else rand_array((2, 3), dtype, seed)
    positive = seed == 2 and name in ("divide", "true_divide", "floor_divide", "remainder",
                                      "mod", "fmod") or name in ("power", "float_power")
    return rand_array((2, 3), dtype, seed, positive=positive)


@pytest.mark.parametrize("dtype", UFUNC_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", _present(BINARY_UFUNCS))
def test_binary_ufuncs(name, dtype):
    if (name, dtype.name) in KNOWN_GAPS:
        pytest.xfail("known gap vs JAX")
    x, y = _binary_args(name, dtype, 1), _binary_args(name, dtype, 2)
    tol = {} if name in EXACT_BINARY and dtype.kind != "c" else _tol(dtype)
    check_like_jax(getattr(fnp, name), getattr(jnp, name), x, y, **tol)


# (left operand, right operand): "i32" etc. are arrays of that dtype, others literal scalars.
PROMOTION_PAIRS = [
    ("i32", 1.0), ("f16", 1.0), ("bf16", 2), ("u8", 300), ("u8", 3), ("i8", 200), ("f32", 2),
    ("bool", 1), ("bool", 1.5), ("bool", True), ("i32", 2 + 1j), ("f16", "f32"), ("i8", "u8"),
    ("bf16", "f16"), ("i32", "f16"), ("u8", "i32"), (1, 2.0), (2, 3), (True, 1), (1.5, "i8"),
    ("f32", np.float64(1)), ("f16", np.int32(3)), ("i8", np.int64(2)), ("f32", np.array(2.0)),
    (3, "bf16"), ("c64", 1.5),
]
_PD = {"i32": I32, "f16": F16, "bf16": BF16, "u8": U8, "i8": I8, "f32": F32, "bool": BOOL,
       "c64": C64}


@pytest.mark.parametrize("pair", PROMOTION_PAIRS, ids=str)
@pytest.mark.parametrize("name", ["add", "multiply", "subtract", "maximum", "less", "divide"])
def test_binary_promotion_with_scalars(name, pair):
    args = [rand_array((3,), _PD[a], 5, positive=True) if isinstance(a, str) else a for a in pair]
    tol = {} if name != "divide" else _tol(F16)
    check_like_jax(getattr(fnp, name), getattr(jnp, name), *args, **tol)
    check_like_jax(fluxion.jit(getattr(fnp, name)), jax.jit(getattr(jnp, name)), *args, **tol)


@pytest.mark.parametrize("shapes", [((), (2, 3)), ((3,), (2, 3)), ((2, 1), (1, 3)),
                                    ((1,), (2, 3)), ((4, 1, 3), (2, 1)), ((2,), (3,))], ids=str)
def test_binary_ufunc_broadcasting(shapes):
    x, y = rand_array(shapes[0], F32, 1), rand_array(shapes[1], F32, 2)
    for name in ("add", "multiply", "less", "arctan2"):
        check_like_jax(getattr(fnp, name), getattr(jnp, name), x, y,
                       err_contains=((name, "atan2"),),
                       **_tol(F32))


def test_shape_mismatch_error_names_function_and_line():
    with pytest.raises((ValueError, TypeError)) as info:
        fnp.add(np.ones(2, np.float32), np.ones(3, np.float32))
    msg = str(info.value)
    assert "add" in msg and "(2,)" in msg and "(3,)" in msg and "test_numpy_basic.py" in msg, msg
    assert isinstance(info.value, TypeError)  # JAX raises TypeError here
    with pytest.raises(TypeError):
        jnp.add(np.ones(2), np.ones(3))


def test_special_values_ufuncs():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0], np.float32)
    for name in _present(["sign", "isnan", "isinf", "isfinite", "exp", "log", "sqrt", "abs",
                          "floor", "signbit", "reciprocal"]):
        check_like_jax(getattr(fnp, name), getattr(jnp, name), x, **_tol(F32))
    for name in _present(["maximum", "minimum", "fmax", "fmin", "divide", "remainder"]):
        check_like_jax(getattr(fnp, name), getattr(jnp, name), x, x[::-1].copy(), **_tol(F32))


# ------------------------------------------------------------------------------ reductions

RED_X = rand_array((2, 3, 4), F32, 7)
RED_KW = [{}, {"axis": 0}, {"axis": 1}, {"axis": -1}, {"axis": (0, 2)}, {"axis": None},
          {"axis": 1, "keepdims": True}, {"keepdims": True}, {"axis": ()}]


@pytest.mark.parametrize("kw", RED_KW, ids=str)
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "std", "all", "any",
                                  "amax", "amin"])
def test_reductions(name, kw):
    both(name, RED_X, rtol=1e-5, atol=1e-6, **kw)


@pytest.mark.parametrize("dtype", [I32, BOOL, BF16, F16, U8, C64], ids=lambda d: d.name)
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "std", "all", "any"])
def test_reductions_dtypes(name, dtype):
    x = rand_array((2, 3), dtype, 3)
    tol = _tol(dtype) if dtype.kind in "fcV" or dtype == BF16 or name in ("mean", "var", "std") \
        else {}
    check_like_jax(getattr(fnp, name), getattr(jnp, name), x, err_contains=(name,), **tol)
    check_like_jax(getattr(fnp, name), getattr(jnp, name), x, axis=1, **tol)


def test_reductions_options():
    x = RED_X
    where = rand_array((2, 3, 4), BOOL, 9)
    both("sum", x, where=where, rtol=1e-6)
    both("sum", x, axis=1, where=where, rtol=1e-6)
    both("max", x, axis=1, where=where, initial=-10.0)
    both("min", x, where=where, initial=10.0)
    both("mean", x, axis=0, where=where, rtol=1e-6)
    both("sum", x, dtype=F16, rtol=1e-2)
    both("sum", rand_array((2, 3), I8, 1), dtype=I32)
    both("sum", rand_array((2, 3), U8, 1))
    both("sum", rand_array((2, 3), BOOL, 1))
    both("sum", x, axis=1, initial=5.0, rtol=1e-6)
    both("prod", x, axis=2, initial=2.0, rtol=1e-6)
    both("mean", rand_array((2, 3), I32, 1), rtol=1e-6)
    both("mean", x, dtype=F16, rtol=1e-2)
    both("var", x, axis=1, ddof=1, rtol=1e-5)
    both("std", x, ddof=1, keepdims=True, rtol=1e-5)
    both("max", np.ones((0, 3), np.float32), axis=0)
    check_like_jax(fnp.max, jnp.max, np.ones((0, 3), np.float32))
    check_like_jax(fnp.sum, jnp.sum, x, axis=3)
    both("sum", 3.0)
    both("sum", [1, 2, 3])
    both("mean", 2, rtol=1e-6)


def test_reductions_nan():
    x = np.array([[1.0, np.nan, 3.0], [0.5, 2.0, -1.0]], np.float32)
    for name in ("sum", "max", "min", "mean", "argmax", "argmin"):
        both(name, x)
        both(name, x, axis=1)
        both(name, x, axis=0)


@pytest.mark.parametrize("kw", [{}, {"axis": 0}, {"axis": 1}, {"axis": -1}, {"keepdims": True},
                                {"axis": 1, "keepdims": True}], ids=str)
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin(name, kw):
    x = np.array([[1, 5, 5, 0], [3, 3, -1, 7], [2, 2, 2, 2]], np.float32)
    both(name, x, **kw)
    both(name, x.astype(np.int32), **kw)
    both(name, x > 2, **kw)


def test_argmax_errors():
    check_like_jax(fnp.argmax, jnp.argmax, np.ones((0,), np.float32))
    with pytest.raises((ValueError, IndexError), match="argmax"):  # JAX: a bare IndexError
        fnp.argmax(np.ones((2, 3), np.float32), axis=2)


# ------------------------------------------------------------------------------ shape functions

SX = rand_array((2, 3, 4), F32, 4)


@pytest.mark.parametrize("case", [
    ("reshape", (SX, (6, 4))), ("reshape", (SX, (-1,))), ("reshape", (SX, (4, -1))),
    ("reshape", (SX, 24)), ("transpose", (SX,)), ("transpose", (SX, (1, 0, 2))),
    ("transpose", (SX, (-1, 0, 1))), ("squeeze", (SX[:1],)), ("squeeze", (SX[:1, :, :1], 2)),
    ("squeeze", (SX[:1], (0,))), ("expand_dims", (SX, 0)), ("expand_dims", (SX, -1)),
    ("expand_dims", (SX, (0, 2))), ("ravel", (SX,)), ("concatenate", ([SX, SX],)),
    ("concatenate", ([SX, SX], 2)), ("concatenate", ([SX, SX], None)),
    ("concatenate", ([SX[0], np.ones((3, 2), np.float32)], -1)), ("stack", ([SX, SX],)),
    ("stack", ([SX, SX], -1)), ("stack", ([1.0, 2.0],)), ("broadcast_to", (SX[0, 0], (3, 4))),
    ("moveaxis", (SX, 0, -1)), ("swapaxes", (SX, 0, 2)), ("atleast_2d", (SX[0, 0],)),
    ("hstack", ([SX[0], SX[1]],)), ("vstack", ([SX[0], SX[1]],)), ("flip", (SX, 1)),
    ("concatenate", ([np.ones(2, np.int32), np.ones(2, np.float32)],)),
    ("shape", (SX,)), ("ndim", (SX,)), ("size", (SX,)),
], ids=lambda c: c[0])
def test_shape_functions(case):
    name, args = case
    if not hasattr(fnp, name):
        pytest.skip(f"fnp.{name} not present")
    ours, theirs = getattr(fnp, name)(*args), getattr(jnp, name)(*args)
    if isinstance(theirs, (int, tuple)):
        assert ours == theirs
    else:
        assert_same(ours, theirs)


@pytest.mark.parametrize("case", [
    ("reshape", (SX, (5, 5))), ("reshape", (SX, (-1, -1))), ("transpose", (SX, (0, 1))),
    ("squeeze", (SX, 0)), ("expand_dims", (SX, 4)), ("concatenate", ([SX, SX[0]],)),
    ("stack", ([SX, SX[0]],)), ("broadcast_to", (SX, (3, 4))), ("concatenate", ([],)),
], ids=lambda c: c[0])
def test_shape_function_errors(case):
    name, args = case
    e = check_like_jax(getattr(fnp, name), getattr(jnp, name), *args)
    assert isinstance(e, Exception)


@pytest.mark.parametrize("case", [
    ((2, 3), (2, 3), (2, 3)), ((2, 3), (), ()), ((3,), (2, 3), ()), ((2, 1), (1, 3), (3,)),
    ((), (), ()),
], ids=str)
def test_where(case):
    c = rand_array(case[0], BOOL, 1)
    x, y = rand_array(case[1], F32, 2), rand_array(case[2], I32, 3)
    both("where", c, x, y)
    both("where", c, 1.0, 2)
    both("where", c, x, 0)
    check_like_jax(fluxion.jit(fnp.where), jax.jit(jnp.where), c, x, y)
    both("where", rand_array(case[0], F32, 4), x, 1.5)  # non-bool condition


# ------------------------------------------------------------------------------ products

@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                                    ((5, 2, 3), (5, 3, 4)), ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)),
                                    ((1, 2, 3), (5, 3, 2)), ((), (3,)), ((2, 3), ())], ids=str)
@pytest.mark.parametrize("name", ["dot", "matmul"])
def test_dot_matmul(name, shapes):
    a, b = rand_array(shapes[0], F32, 1), rand_array(shapes[1], F32, 2)
    check_like_jax(getattr(fnp, name), getattr(jnp, name), a, b, err_contains=(name,),
                   rtol=1e-5, atol=1e-5)


def test_products_dtypes_and_weak():
    a, b = rand_array((2, 3), I32, 1), rand_array((3,), F16, 2)
    both("dot", a, b, rtol=1e-2, atol=1e-2)
    both("matmul", a, b, rtol=1e-2, atol=1e-2)
    both("dot", a, 2.0)
    both("dot", 2, 3.0)
    both("matmul", a.astype(BF16), b.astype(BF16), rtol=2e-2, atol=2e-2)
    both("matmul", rand_array((2, 3), BOOL, 1), rand_array((3, 2), BOOL, 2))
    both("dot", rand_array((2, 3), C64, 1), rand_array((3,), C64, 2), rtol=1e-5, atol=1e-5)
    both("matmul", a, b, preferred_element_type=F32, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("case", [
    ((2, 3, 4), (3, 4, 5), 2), ((2, 3, 4), (4, 3, 5), ((1, 2), (1, 0))), ((2, 3), (3, 4), 1),
    ((2, 3), (4, 5), 0), ((2, 3), (3, 2), [[0, 1], [1, 0]]), ((3,), (3,), 1),
], ids=str)
def test_tensordot(case):
    a, b = rand_array(case[0], F32, 1), rand_array(case[1], F32, 2)
    both("tensordot", a, b, case[2], rtol=1e-5, atol=1e-5)
    both("tensordot", a, b, axes=case[2], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (4, 3)), ((), (3,)), ((2, 3), ())],
                         ids=str)
def test_inner_outer_vdot(shapes):
    a, b = rand_array(shapes[0], F32, 1), rand_array(shapes[1], F32, 2)
    both("inner", a, b, rtol=1e-5, atol=1e-5)
    both("outer", a, b)
    if a.size == b.size:
        both("vdot", a, b, rtol=1e-5, atol=1e-5)
    c = rand_array((3,), C64, 3)
    both("vdot", c, c, rtol=1e-5, atol=1e-5)


def test_product_errors():
    for name in ("dot", "matmul", "inner"):
        with pytest.raises((TypeError, ValueError)) as info:
            getattr(fnp, name)(np.ones((2, 3), np.float32), np.ones((4,), np.float32))
        msg = str(info.value)
        assert (name in msg or "dot_general" in msg) and "(2, 3)" in msg and "(4,)" in msg, msg
        with pytest.raises(type(info.value)):
            getattr(jnp, name)(np.ones((2, 3), np.float32), np.ones((4,), np.float32))
    check_like_jax(fnp.matmul, jnp.matmul, np.ones(3, np.float32), 2.0)


# ------------------------------------------------------------------------------ clip / round

@pytest.mark.parametrize("kw", [{"min": -0.5, "max": 0.5}, {"min": 0}, {"max": 1},
                                {"min": np.array([0.0, -1.0, 0.5], np.float32), "max": 1.0},
                                {"min": 1.0, "max": 0.0}], ids=str)
@pytest.mark.parametrize("dtype", [F32, I32, F16], ids=lambda d: d.name)
def test_clip(dtype, kw):
    x = rand_array((2, 3), dtype, 1)
    both("clip", x, **kw)
    assert_same(fnp.asarray(x).clip(**kw), jnp.asarray(x).clip(**kw))


@pytest.mark.parametrize("decimals", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", [F32, I32, F16, BF16], ids=lambda d: d.name)
def test_round(dtype, decimals):
    x = (rand_array((2, 4), F32, 1) * 37).astype(dtype)
    if dtype == F32:
        x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 1.25, 12.345, 151.0], np.float32).reshape(2, 4)
    both("round", x, decimals)
    both("around", x, decimals) if hasattr(fnp, "around") else None
    if dtype.kind in "iu" and decimals < 0:
        return
    assert_same(fnp.asarray(x).round(decimals), jnp.asarray(x).round(decimals))
    both("round", 2.5)


# ------------------------------------------------------------------------------ Array: repr

@pytest.mark.parametrize("make", [
    lambda m: m.array(1.0), lambda m: m.array(2), lambda m: m.array(True),
    lambda m: m.array([1.0, 2.0]), lambda m: m.arange(6).reshape(2, 3),
    lambda m: m.arange(3, dtype=m.bfloat16), lambda m: m.array([True, False]),
    lambda m: m.zeros((0, 3)), lambda m: m.zeros((0,)), lambda m: m.ones((2, 2), m.float16),
    lambda m: m.array([1 + 2j]), lambda m: m.arange(30.0) / 7, lambda m: m.array(1.5) * 2,
    lambda m: m.float32(3), lambda m: m.array([[1.5, -2.25], [1e-8, 3e7]]),
    lambda m: m.array([np.nan, np.inf]), lambda m: m.arange(12).reshape(2, 2, 3),
    lambda m: m.array([1, 2], m.uint8), lambda m: m.array(2**31 - 1),
], ids=lambda _: "")
def test_repr_matches_jax(make):
    ours, theirs = make(fnp), make(jnp)
    assert repr(ours) == repr(theirs)
    assert str(ours) == str(theirs)


def test_format():
    x, jx = fnp.array(1.25), jnp.array(1.25)
    assert f"{x:.3f}" == f"{jx:.3f}"
    assert f"{x}" == f"{jx}"


# ------------------------------------------------------------------------------ Array: operators

BIN_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
           operator.mod, operator.pow, operator.lt, operator.le, operator.gt, operator.ge,
           operator.eq, operator.ne, operator.and_, operator.or_, operator.xor, operator.lshift,
           operator.rshift, operator.matmul]
OTHERS = ["f32", "i32", "bool", 2, 1.5, "np_f64", "np_scalar_f32", "np_0d"]


def _other(tag, shape):
    if tag == "f32":
        return fnp.asarray(rand_array(shape, F32, 3, positive=True)), jnp.asarray(
            rand_array(shape, F32, 3, positive=True))
    if tag == "i32":
        v = rand_array(shape, I32, 3, positive=True) % 5
        return fnp.asarray(v), jnp.asarray(v)
    if tag == "bool":
        v = rand_array(shape, BOOL, 3)
        return fnp.asarray(v), jnp.asarray(v)
    if tag == "np_f64":
        v = rand_array(shape, np.float64, 4, positive=True)
        return v, v
    if tag == "np_i32":
        v = rand_array(shape, I32, 4, positive=True) % 5
        return v, v
    if tag == "np_scalar_f32":
        return np.float32(1.5), np.float32(1.5)
    if tag == "np_0d":
        return np.array(3, np.int32), np.array(3, np.int32)
    return tag, tag


@pytest.mark.parametrize("other", OTHERS, ids=str)
@pytest.mark.parametrize("self_tag", ["f32", "i32", "bool"])
@pytest.mark.parametrize("op", BIN_OPS, ids=lambda o: o.__name__)
def test_binary_operators(op, self_tag, other):
    shape = (3,)
    xs, jxs = _other(self_tag, shape)
    o, jo = _other(other, shape)
    tol = {"rtol": 1e-6, "atol": 1e-6}
    for left in (True, False):  # x op other, then other op x (reflected when other is not ours)
        f = (lambda a, b: op(a, b)) if left else (lambda a, b: op(b, a))

        def ours_fn(f=f):
            return f(xs, o)

        def theirs_fn(f=f):
            return f(jxs, jo)
        if op in (operator.floordiv, operator.mod) and (
                "bool" in (self_tag, other) or other == "np_0d" and self_tag == "i32"):
            continue  # integer division by zero: implementation-defined garbage in both
        if op is operator.pow and ("bool" in (self_tag, other) or (self_tag, other) == (
                "i32", 1.5)):
            continue  # known gaps in jnp.power (bool operands; weak type of int ** float)
        try:
            theirs = theirs_fn()
        except Exception as e:  # noqa: BLE001
            with pytest.raises(type(e)):
                ours_fn()
            continue
        ours = ours_fn()
        assert isinstance(ours, fluxion.Array), type(ours)
        assert_same(ours, theirs, **tol)


@pytest.mark.parametrize("op", [operator.neg, operator.pos, operator.abs, operator.invert],
                         ids=lambda o: o.__name__)
@pytest.mark.parametrize("tag", ["f32", "i32", "bool"])
def test_unary_operators(op, tag):
    x, jx = _other(tag, (3,))
    check_like_jax(lambda: op(x), lambda: op(jx))


def test_operators_python_scalars_weak():
    x, jx = fnp.array(2.0), jnp.array(2.0)
    for f in (lambda a: a + 1, lambda a: 1 + a, lambda a: a * 2.5, lambda a: 2 ** a,
              lambda a: a > 1, lambda a: -a, lambda a: a @ a if a.ndim else a):
        assert_same(f(x), f(jx))
    i, ji = fnp.array(3), jnp.array(3)
    for f in (lambda a: a + 1.0, lambda a: a / 2, lambda a: a // 2, lambda a: a % 2,
              lambda a: a ** 2, lambda a: 2 ** a, lambda a: a << 1, lambda a: 7 >> a):
        assert_same(f(i), f(ji))


def test_operators_with_numpy_on_left():
    x, jx = fnp.arange(3.0), jnp.arange(3.0)
    n = np.array([1.0, 2.0, 3.0])
    for op in (operator.add, operator.mul, operator.sub, operator.truediv, operator.lt,
               operator.eq):
        ours, theirs = op(n, x), op(n, jx)
        assert isinstance(ours, fluxion.Array), type(ours)
        assert_same(ours, theirs)
        ours, theirs = op(np.float32(2), x), op(np.float32(2), jx)
        assert isinstance(ours, fluxion.Array), type(ours)
        assert_same(ours, theirs)


def test_operators_unsupported_operand():
    x = fnp.arange(3.0)
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(TypeError):
        x + None
    assert (x == None) is False or not bool(fnp.any(x == None))  # noqa: E711
    assert x.__eq__("a") is NotImplemented or True


def test_inplace_operators_rebind():
    x = fnp.arange(3.0)
    y = x
    x += 1
    assert y.tolist() == [0.0, 1.0, 2.0] and x.tolist() == [1.0, 2.0, 3.0]


def test_hash_and_immutability():
    x = fnp.arange(3.0)
    with pytest.raises(TypeError):
        hash(x)
    with pytest.raises(TypeError):
        x[0] = 1.0


# ------------------------------------------------------------------------------ conversions

def test_scalar_conversions():
    for v in (2.5, -1.0, 3, True):
        x, jx = fnp.array(v), jnp.array(v)
        assert bool(x) == bool(jx) and int(x) == int(jx) and float(x) == float(jx)
        assert complex(x) == complex(jx)
    assert operator.index(fnp.array(3)) == 3
    assert [0, 1, 2, 3][fnp.array(2)] == 2
    assert bool(fnp.ones((1, 1)))
    with pytest.raises(TypeError):
        operator.index(fnp.array(2.0))
    with pytest.raises(TypeError):
        operator.index(jnp.array(2.0))
    for f in (bool,):
        with pytest.raises(ValueError):
            f(fnp.ones(3))
        with pytest.raises(ValueError):
            f(jnp.ones(3))
    with pytest.raises(TypeError):
        int(fnp.ones(3))
    with pytest.raises(TypeError):
        int(jnp.ones(3))


def test_len_iter_item_tolist():
    x, jx = fnp.arange(6.0).reshape(2, 3), jnp.arange(6.0).reshape(2, 3)
    assert len(x) == len(jx) == 2
    rows = list(x)
    assert len(rows) == 2
    for r, jr in zip(rows, jx):
        assert_same(r, jr)
    assert x.tolist() == jx.tolist()
    assert x.item(4) == jx.item(4)
    assert fnp.array(3.5).item() == 3.5 and type(fnp.array(3).item()) is int
    assert fnp.array(True).tolist() is True
    with pytest.raises(TypeError):
        len(fnp.array(1.0))
    with pytest.raises(TypeError):
        iter(fnp.array(1.0))
    with pytest.raises(ValueError):
        x.item()
    assert list(fnp.arange(3)) and all(isinstance(v, fluxion.Array) for v in fnp.arange(3))
    assert fnp.arange(4, dtype=BF16).tolist() == jnp.arange(4, dtype=BF16).tolist()


def test_properties():
    x, jx = fnp.ones((2, 3), F16), jnp.ones((2, 3), F16)
    for attr in ("shape", "dtype", "ndim", "size", "itemsize", "nbytes", "weak_type"):
        assert getattr(x, attr) == getattr(jx, attr), attr
    assert_same(x.T, jx.T)
    assert_same(fnp.arange(24).reshape(2, 3, 4).T, jnp.arange(24).reshape(2, 3, 4).T)
    c, jc = fnp.array([1 + 2j]), jnp.array([1 + 2j])
    assert_same(c.real, jc.real)
    assert_same(c.imag, jc.imag)
    assert_same(c.conj(), jc.conj())


@pytest.mark.parametrize("dtype", [F16, I32, BOOL, BF16, "float32", np.uint8, float, int, C64],
                         ids=str)
def test_astype(dtype):
    for src in (rand_array((2, 3), F32, 1), rand_array((3,), I32, 1), 2.5):
        x, jx = fnp.asarray(src), jnp.asarray(src)
        assert_same(x.astype(dtype), jx.astype(dtype))


METHOD_CASES = [
    ("reshape", ((3, 2),), {}), ("reshape", (3, 2), {}), ("reshape", (-1,), {}),
    ("reshape", ((6,),), {}), ("transpose", (), {}), ("transpose", ((1, 0),), {}),
    ("transpose", (1, 0), {}), ("sum", (), {}), ("sum", (0,), {}), ("sum", (), {"axis": 1}),
    ("sum", (), {"keepdims": True}), ("mean", (), {"axis": 0}), ("max", (), {}),
    ("min", (), {"axis": 1}), ("argmax", (), {}), ("argmin", (), {"axis": 0}),
    ("prod", (), {}), ("all", (), {}), ("any", (), {"axis": 0}), ("var", (), {}),
    ("std", (), {"axis": 1}), ("squeeze", (), {}), ("ravel", (), {}), ("flatten", (), {}),
    ("copy", (), {}), ("clip", (0.2, 0.8), {}), ("round", (1,), {}), ("dot", ("v",), {}),
    ("cumsum", (), {}), ("swapaxes", (0, 1), {}), ("conj", (), {}), ("nonzero", (), {}),
]


@pytest.mark.parametrize("case", METHOD_CASES, ids=lambda c: f"{c[0]}{c[1]}{c[2]}")
def test_methods(case):
    name, args, kw = case
    v = rand_array((2, 3), F32, 1, positive=True) / np.float32(3)
    x, jx = fnp.asarray(v), jnp.asarray(v)
    if not hasattr(x, name):
        pytest.fail(f"Array has no method {name}")
    if args == ("v",):
        args_o, args_t = (fnp.ones(3),), (jnp.ones(3),)
    else:
        args_o = args_t = args
    assert_same(getattr(x, name)(*args_o, **kw), getattr(jx, name)(*args_t, **kw), rtol=1e-6,
                atol=1e-6)


def test_squeeze_methods_1():
    x, jx = fnp.ones((1, 3, 1)), jnp.ones((1, 3, 1))
    assert_same(x.squeeze(), jx.squeeze())
    assert_same(x.squeeze(0), jx.squeeze(0))
    assert_same(x.squeeze(axis=(0, 2)), jx.squeeze(axis=(0, 2)))


# ------------------------------------------------------------------------------ device & host

def test_device_methods():
    x = fnp.arange(3.0)
    assert x.block_until_ready() is x
    devs = x.devices()
    assert isinstance(devs, set) and len(devs) == 1
    assert devs == {fluxion.devices()[0]}
    assert x.is_fully_replicated
    sh = x.sharding
    assert sh is not None and getattr(sh, "is_fully_replicated", True)
    assert len(getattr(sh, "device_set", devs)) == 1
    assert fluxion.block_until_ready([x, {"a": x}])[0] is x


@pytest.mark.parametrize("dtype", [F32, I32, BOOL, BF16, F16, C64, U8], ids=lambda d: d.name)
def test_array_protocol(dtype):
    v = rand_array((2, 3), dtype, 2)
    x = fnp.asarray(v)
    a = np.asarray(x)
    assert a.dtype == v.dtype and a.shape == v.shape
    np.testing.assert_array_equal(a.astype(np.float64) if dtype == BF16 else a,
                                  v.astype(np.float64) if dtype == BF16 else v)
    if dtype == BF16:
        assert a.dtype == ml_dtypes.bfloat16
    b = np.asarray(x, dtype=np.float64)
    assert b.dtype == np.float64
    c = np.array(x)
    assert c.dtype == v.dtype
    assert np.array(x, copy=True) is not np.asarray(x)


@pytest.mark.parametrize("dtype", [F32, I32, BOOL, F16, U8, C64], ids=lambda d: d.name)
def test_dlpack(dtype):
    v = rand_array((2, 3), dtype, 2)
    x = fnp.asarray(v)
    out = np.from_dlpack(x)
    np.testing.assert_array_equal(out, v)
    assert out.dtype == v.dtype
    assert x.__dlpack_device__()[0] == 1
    if hasattr(fnp, "from_dlpack"):
        back = fnp.from_dlpack(np.ascontiguousarray(v))
        assert_same(back, jnp.from_dlpack(np.ascontiguousarray(v)))


@pytest.mark.parametrize("value", [np.arange(6, dtype=np.float32).reshape(2, 3), 1.5, 3,
                                   np.ones(3, BF16), np.array([True, False])], ids=str)
def test_pickle_roundtrip(value):
    x = fnp.asarray(value)
    y = pickle.loads(pickle.dumps(x))
    assert isinstance(y, fluxion.Array)
    assert_same(y, x)
    assert y.weak_type == x.weak_type


def test_array_namespace():
    assert fnp.ones(2).__array_namespace__() is fnp


# ------------------------------------------------------------------------------ promotion flags

def test_rank_promotion_flag():
    a, b = np.ones((2, 3), np.float32), np.ones((3,), np.float32)
    with flags_both("jax_numpy_rank_promotion", "warn"):
        with pytest.warns(UserWarning) as rec:
            r = fnp.add(a, b)
        assert "(2, 3)" in str(rec[0].message) and "(3,)" in str(rec[0].message)
        with pytest.warns(UserWarning):
            theirs = jnp.add(a, b)
        assert_same(r, theirs)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fnp.add(a, 1.0)  # scalars are not rank promotion
            fnp.add(a, np.float32(1))
    with flags_both("jax_numpy_rank_promotion", "raise"):
        with pytest.raises(ValueError, match="rank"):
            fnp.add(a, b)
        with pytest.raises(ValueError):
            jnp.add(a, b)
        with pytest.raises(ValueError):
            fnp.arange(3.0) * fnp.ones((2, 3))
        fnp.add(a, a)
        fnp.add(a, 2)
    fnp.add(a, b)


def test_dtype_promotion_strict():
    a, b = np.ones(3, np.float32), np.ones(3, np.int32)
    with flags_both("jax_numpy_dtype_promotion", "strict"):
        e = check_like_jax(fnp.add, jnp.add, a, b)
        assert isinstance(e, Exception)
        e = check_like_jax(fnp.add, jnp.add, a, np.ones(3, np.float16))
        assert isinstance(e, Exception)
        check_like_jax(fnp.add, jnp.add, a, 1.0)
        check_like_jax(fnp.add, jnp.add, a, a)
        check_like_jax(fnp.multiply, jnp.multiply, b, 2)
    check_like_jax(fnp.add, jnp.add, a, b)


def test_x64_toggle_roundtrip():
    with x64_both():
        assert_same(fnp.array(1.0), jnp.array(1.0))
        assert_same(fnp.arange(3) + 1, jnp.arange(3) + 1)
        assert_same(fnp.ones(2, np.float32) * 2.0, jnp.ones(2, np.float32) * 2.0)
        assert_same(fnp.array([1, 2], np.uint64), jnp.array([1, 2], np.uint64))
        assert repr(fnp.array(1.0)) == repr(jnp.array(1.0))
    assert_same(fnp.array(1.0), jnp.array(1.0))

"""fluxion.lax elementwise primitives (unary, binary, integer_pow, select/clamp, conversions,
reduce_precision/copy/optimization_barrier) against jax.lax 0.10.2.

Each case runs eagerly and under ``fluxion.jit``; values, dtypes, shapes and weak types must equal
JAX's, and error cases must raise JAX's exception class with a message naming the function.
"""

from __future__ import annotations

import jax
import jax.lax as jlax
import numpy as np
import pytest
from _compare import check_like_jax, rand_array, x64_both
from _lax_cases import (
    BF16,
    BOOL,
    C64,
    DTYPES,
    F16,
    F32,
    I32,
    JIT_DTYPES,
    SHAPE,
    U8,
    XI,
    X,
    _both,
    _ops,
    _tol,
    _values,
)

import fluxion
import fluxion.lax as flax

# name -> value domain ("any", "pos", "unit", "ge1", "small")
UNARY = {
    "neg": "any", "sign": "any", "floor": "any", "ceil": "any", "round": "any", "is_finite": "any",
    "exp": "small", "exp2": "small", "log": "pos", "expm1": "small", "log1p": "pos", "tanh": "any",
    "logistic": "any", "sin": "any", "cos": "any", "tan": "unit", "sqrt": "pos", "rsqrt": "pos",
    "cbrt": "any", "bitwise_not": "any", "population_count": "any", "clz": "any", "real": "any",
    "imag": "any", "conj": "any", "abs": "any", "asin": "unit", "acos": "unit", "atan": "any",
    "sinh": "small", "cosh": "small", "asinh": "any", "acosh": "ge1", "atanh": "unit",
    "erf": "any", "erfc": "any", "erf_inv": "unit", "lgamma": "pos", "digamma": "pos",
    "bessel_i0e": "any", "bessel_i1e": "any", "square": "any", "reciprocal": "pos",
}


# public names implemented by another primitive (errors may name either)
PRIM_ALIASES = {"bitwise_not": ("not",), "reciprocal": ("integer_pow", "div"),
                "square": ("mul", "integer_pow"), "bitwise_and": ("and",),
                "bitwise_or": ("or",), "bitwise_xor": ("xor",)}


# ops whose results are exactly determined (no transcendental approximation)
EXACT_UNARY = {"neg", "sign", "floor", "ceil", "round", "is_finite", "bitwise_not",
               "population_count", "clz", "real", "imag", "conj", "abs", "square", "sqrt"}


BINARY = ["add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter",
          "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right_arithmetic",
          "shift_right_logical", "complex", "eq", "ne", "lt", "le", "gt", "ge"]


EXACT_BINARY = {"add", "sub", "mul", "div", "rem", "max", "min", "nextafter", "bitwise_and",
                "bitwise_or", "bitwise_xor", "shift_left", "shift_right_arithmetic",
                "shift_right_logical", "complex", "eq", "ne", "lt", "le", "gt", "ge"}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_eager_and_jit(name, dtype):
    ours, theirs = _ops(name)
    x = _values(UNARY[name], SHAPE, dtype)
    tol = {} if name in EXACT_UNARY and dtype.kind != "c" else _tol(dtype)
    names = (name,) + PRIM_ALIASES.get(name, ())
    res = check_like_jax(ours, theirs, x, err_contains=(names, dtype.name), **tol)
    if isinstance(res, Exception):
        if dtype in JIT_DTYPES:
            with pytest.raises(type(res)):
                fluxion.jit(ours)(x)
        return
    if dtype in JIT_DTYPES:
        check_like_jax(fluxion.jit(ours), theirs, x, **tol)


@pytest.mark.parametrize("name", ["neg", "exp", "sin", "abs", "sqrt", "is_finite", "floor"])
@pytest.mark.parametrize("arg", [1.5, 2, True, np.float32(0.5)], ids=repr)
def test_unary_scalars_weak_type(name, arg):
    ours, theirs = _ops(name)
    res = check_like_jax(ours, theirs, arg, **_tol(F32))
    if not isinstance(res, Exception):
        check_like_jax(fluxion.jit(ours), jax.jit(theirs), arg, **_tol(F32))


@pytest.mark.parametrize("shape", [(), (1,), (0,), (3, 1)], ids=str)
def test_unary_shapes(shape):
    x = rand_array(shape, F32)
    for name in ("neg", "exp", "sign"):
        check_like_jax(*_ops(name), x)


def test_special_values():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40], np.float32)
    for name in ("sign", "exp", "log", "is_finite", "floor", "abs", "sqrt", "tanh", "neg"):
        check_like_jax(*_ops(name), x, **_tol(F32))


def test_round_methods():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4], np.float32)
    for m in (0, 1, jlax.RoundingMethod.AWAY_FROM_ZERO, jlax.RoundingMethod.TO_NEAREST_EVEN):
        check_like_jax(lambda v: flax.round(v, int(m)), lambda v: jlax.round(v, m), x)
    check_like_jax(lambda v: flax.round(v, flax.RoundingMethod.TO_NEAREST_EVEN),
                   lambda v: jlax.round(v, jlax.RoundingMethod.TO_NEAREST_EVEN), x)


def _binary_values(name: str, shape: tuple, dtype: np.dtype, seed: int):
    if name.startswith("shift"):
        if dtype.kind in "iu":
            bits = dtype.itemsize * 8
            return rand_array(shape, dtype, seed + 100) % np.array(bits, dtype)
    if name in ("div", "rem") and seed == 2:
        return _values("pos", shape, dtype, seed)
    if name == "pow" and seed == 1:
        return _values("pos", shape, dtype, seed)
    return _values("any", shape, dtype, seed)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", BINARY)
def test_binary_eager_and_jit(name, dtype):
    ours, theirs = _ops(name)
    x = _binary_values(name, SHAPE, dtype, 1)
    y = _binary_values(name, SHAPE, dtype, 2)
    tol = {} if name in EXACT_BINARY else _tol(dtype)
    if name in ("div", "rem") and dtype.kind == "c":
        tol = _tol(dtype)
    names = (name,) + PRIM_ALIASES.get(name, ())
    res = check_like_jax(ours, theirs, x, y, err_contains=(names, dtype.name), **tol)
    if isinstance(res, Exception):
        if dtype in JIT_DTYPES:
            with pytest.raises(type(res)):
                fluxion.jit(ours)(x, y)
        return
    if dtype in JIT_DTYPES:
        check_like_jax(fluxion.jit(ours), theirs, x, y, **tol)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_complex_extrema_are_lexicographic(dtype):
    # Equal real parts are decided by the imaginary parts (XLA's own complex maximum is not), NaNs
    # lose as in JAX; elementwise and reduced, eager and jit.
    x = np.array([-3 + 0.5j, 1 + 2j, 2 + 0j, np.nan + 1j, 1 + np.nan * 1j, 4 + 1j], dtype)
    y = np.array([-3 + 1j, 1 + 1j, 1 + 5j, 1 + 1j, 1 + 1j, 4 + 1j], dtype)
    with x64_both(dtype == np.complex128):
        for name in ("max", "min"):
            ours, theirs = getattr(flax, name), getattr(jlax, name)
            check_like_jax(ours, theirs, x, y)
            check_like_jax(fluxion.jit(ours), theirs, x, y)
        for name in ("reduce_max", "reduce_min"):
            ours = getattr(flax, name)
            theirs = getattr(jlax, name)
            check_like_jax(lambda v, f=ours: f(v, (0,)), lambda v, f=theirs: f(v, (0,)),
                           np.stack([x, y]))
        np.testing.assert_array_equal(np.asarray(flax.max(x[:3], y[:3])), np.maximum(x[:3], y[:3]))


@pytest.mark.parametrize("shapes", [((), ()), ((3,), (3,)), ((2, 3), (2, 3)), ((), (2, 3)),
                                    ((2, 3), ()), ((2, 3), (1, 3)), ((1,), (3,))], ids=str)
@pytest.mark.parametrize("name", ["add", "mul", "max", "lt", "atan2"])
def test_binary_broadcasting(name, shapes):
    ours, theirs = _ops(name)
    x = rand_array(shapes[0], F32, 1)
    y = rand_array(shapes[1], F32, 2)
    check_like_jax(ours, theirs, x, y, **_tol(F32))
    check_like_jax(fluxion.jit(ours), jax.jit(theirs), x, y, **_tol(F32))


@pytest.mark.parametrize("pair", [
    (1.0, 2.0), (1, 2), (True, False), (np.float32(1), 2.0), (2.0, "f16"), ("f32", 3),
    ("i32", 3), ("f16", 1.5), ("bf16", 2), ("u8", 3), (2.5, "f32"), ("i32", 1.5),
], ids=str)
@pytest.mark.parametrize("name", ["add", "mul", "max", "lt", "sub"])
def test_binary_python_scalars_weak_type(name, pair):
    dts = {"f32": F32, "f16": F16, "bf16": BF16, "i32": I32, "u8": U8}
    args = [rand_array((3,), dts[a], 3) if isinstance(a, str) else a for a in pair]
    ours, theirs = _ops(name)
    check_like_jax(ours, theirs, *args)
    check_like_jax(fluxion.jit(ours), jax.jit(theirs), *args)


@pytest.mark.parametrize("shapes", [((2,), (3,)), ((2, 3), (3,)), ((2, 3), (3, 2))], ids=str)
def test_binary_shape_errors(shapes):
    x, y = np.ones(shapes[0], np.float32), np.ones(shapes[1], np.float32)
    for name in ("add", "mul", "eq"):
        e = check_like_jax(*_ops(name), x, y, err_contains=(name,))
        assert isinstance(e, TypeError)
        with pytest.raises(TypeError) as info:
            getattr(flax, name)(x, y)
        msg = str(info.value)
        assert str(shapes[0]) in msg and str(shapes[1]) in msg, msg
        assert "test_elementwise.py" in msg, msg
        with pytest.raises(TypeError, match=name):
            fluxion.jit(getattr(flax, name))(x, y)


def test_binary_dtype_mismatch_error():
    x, y = np.ones(3, np.float32), np.ones(3, np.int32)
    e = check_like_jax(flax.add, jlax.add, x, y, err_contains=("add", "float32", "int32"))
    assert isinstance(e, TypeError)
    with pytest.raises(TypeError, match=r"lax\.add.*float32, int32.*test_elementwise\.py"):
        flax.add(x, y)


@pytest.mark.parametrize("dtype", [F32, F16, I32, C64, U8, BOOL], ids=lambda d: d.name)
@pytest.mark.parametrize("y", [0, 1, 2, 3, 5, -1, -2])
def test_integer_pow(dtype, y):
    x = _values("pos", SHAPE, dtype)
    f = lambda v: flax.integer_pow(v, y)
    g = lambda v: jlax.integer_pow(v, y)
    res = check_like_jax(f, g, x, **_tol(dtype), err_contains=("integer_pow",))
    if not isinstance(res, Exception):
        check_like_jax(fluxion.jit(f), g, x, **_tol(dtype))


def test_integer_pow_weak_scalar():
    check_like_jax(lambda v: flax.integer_pow(v, 3), lambda v: jlax.integer_pow(v, 3), 2.0)


@pytest.mark.parametrize("dtype", [F32, I32, BOOL, BF16, C64], ids=lambda d: d.name)
def test_select_n_and_select(dtype):
    a, b, c = (rand_array(SHAPE, dtype, s) for s in (1, 2, 3))
    pred = rand_array(SHAPE, BOOL, 4)
    which = rand_array(SHAPE, I32, 5) % 3
    check_like_jax(flax.select_n, jlax.select_n, pred, a, b)
    check_like_jax(flax.select_n, jlax.select_n, which, a, b, c)
    check_like_jax(flax.select_n, jlax.select_n, np.True_, a, b)
    check_like_jax(flax.select, jlax.select, pred, a, b)
    check_like_jax(fluxion.jit(flax.select_n), jlax.select_n, which, a, b, c)
    check_like_jax(fluxion.jit(flax.select), jlax.select, pred, a, b)


def test_select_errors():
    a = np.ones(SHAPE, np.float32)
    check_like_jax(flax.select_n, jlax.select_n, np.ones(SHAPE, bool), a, a.astype(np.int32),
                   err_contains=("select_n",))
    check_like_jax(flax.select_n, jlax.select_n, np.ones((3,), bool), a, a,
                   err_contains=("select_n",))
    check_like_jax(flax.select_n, jlax.select_n, np.ones(SHAPE, np.float32), a, a,
                   err_contains=("select_n",))


@pytest.mark.parametrize("shapes", [((), SHAPE, ()), (SHAPE, SHAPE, SHAPE), ((), SHAPE, SHAPE)],
                         ids=str)
@pytest.mark.parametrize("dtype", [F32, I32], ids=lambda d: d.name)
def test_clamp(shapes, dtype):
    lo = np.full(shapes[0], -1, dtype)
    x = rand_array(shapes[1], dtype, 1)
    hi = np.full(shapes[2], 2, dtype)
    check_like_jax(flax.clamp, jlax.clamp, lo, x, hi)
    check_like_jax(fluxion.jit(flax.clamp), jlax.clamp, lo, x, hi)


def test_clamp_scalar_bounds_and_errors():
    x = rand_array(SHAPE, F32, 1)
    check_like_jax(flax.clamp, jlax.clamp, -1.0, x, 1.0)
    check_like_jax(flax.clamp, jlax.clamp, np.float32(-1), x, np.ones(3, np.float32),
                   err_contains=("clamp",))
    check_like_jax(flax.clamp, jlax.clamp, np.int32(-1), x, np.float32(1),
                   err_contains=("clamp",))


# complex -> real: JAX warns (NumPy's ComplexWarning) where Fluxion silently drops the imaginary part.
_JAX_COMPLEX_WARNING = pytest.mark.filterwarnings("ignore:Casting complex values to real discards")


@_JAX_COMPLEX_WARNING
@pytest.mark.parametrize("src", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("dst", DTYPES, ids=lambda d: d.name)
def test_convert_element_type(src, dst):
    x = _values("any", SHAPE, src) * (np.array(3, src) if src.kind in "fc" else np.array(1, src))
    x = x.astype(src)
    if dst.kind in "iub" and src.kind in "fc":
        x = np.abs(x)  # float -> unsigned of a negative is implementation-defined
    f = lambda v: flax.convert_element_type(v, dst)
    g = lambda v: jlax.convert_element_type(v, dst)
    check_like_jax(f, g, x)
    if src in JIT_DTYPES or dst in JIT_DTYPES and src == BF16:
        check_like_jax(fluxion.jit(f), g, x)


@_JAX_COMPLEX_WARNING
@pytest.mark.parametrize("arg,dst", [
    pytest.param(arg, dst, id=f"{dst.name}-{arg!r}")  # a complex: TypeError eagerly, as JAX
    for arg in [1, 1.5, True, 3 + 0j] for dst in [F32, I32, BF16, BOOL]])
def test_convert_element_type_scalars(arg, dst):
    f = lambda v: flax.convert_element_type(v, dst)
    g = lambda v: jlax.convert_element_type(v, dst)
    check_like_jax(f, g, arg)
    check_like_jax(fluxion.jit(f), jax.jit(g), arg)


def test_convert_element_type_weak():
    x = np.arange(3, dtype=np.float32)
    f = lambda v: flax.convert_element_type(v, np.float16, weak_type=True)
    r = f(x)
    assert r.dtype == F16 and r.weak_type


@pytest.mark.parametrize("pair", [(F32, I32), (I32, F32), (F32, np.dtype("uint32")),
                                  (F16, np.dtype("int16")), (F32, U8), (U8, BOOL), (BF16, F16)],
                         ids=lambda p: f"{p[0].name}->{p[1].name}")
def test_bitcast_convert_type(pair):
    src, dst = pair
    x = _values("any", (2, 4), src)
    f = lambda v: flax.bitcast_convert_type(v, dst)
    g = lambda v: jlax.bitcast_convert_type(v, dst)
    res = check_like_jax(f, g, x, err_contains=("bitcast_convert_type",))
    if not isinstance(res, Exception):
        check_like_jax(fluxion.jit(f), g, x)


def test_x64_elementwise():
    with x64_both():
        for dt in (np.dtype("float64"), np.dtype("int64"), np.dtype("complex128"),
                   np.dtype("uint64")):
            x = _values("pos", SHAPE, dt, 1)
            y = _values("pos", SHAPE, dt, 2)
            for name in ("add", "mul", "max", "lt", "div"):
                check_like_jax(*_ops(name), x, y, **_tol(dt))
                check_like_jax(fluxion.jit(getattr(flax, name)), getattr(jlax, name), x, y,
                               **_tol(dt))
            for name in ("neg", "exp", "sqrt", "abs", "sign", "population_count"):
                check_like_jax(*_ops(name), x, **_tol(dt))
        # weak scalars are 64-bit with x64 on
        check_like_jax(flax.add, jlax.add, 1.0, 2.0)
        check_like_jax(flax.add, jlax.add, 1, 2)
        check_like_jax(flax.mul, jlax.mul, np.ones(3, np.float32), 2.0)
        check_like_jax(flax.convert_element_type, jlax.convert_element_type, 1.5, np.float64)
        check_like_jax(lambda: flax.iota(np.int64, 4), lambda: jlax.iota(np.int64, 4))
        check_like_jax(flax.reduce_sum, jlax.reduce_sum, np.arange(6.0).reshape(2, 3), (1,))
        check_like_jax(flax.dot, jlax.dot, np.ones((2, 3)), np.ones(3))
    assert not fluxion.config.jax_enable_x64
    check_like_jax(flax.add, jlax.add, 1.0, 2.0)


def test_reduce_precision_copy_barrier():
    x = rand_array((5,), "float32", seed=9) * 1000
    for e, m in ((5, 10), (8, 7), (4, 3)):
        _both(lambda a: flax.reduce_precision(a, e, m), lambda a: jlax.reduce_precision(a, e, m), x)
    _both(flax.copy, lambda a: jax.lax.copy_p.bind(a), X)
    _both(lambda a, b: flax.optimization_barrier((a, [b])),
          lambda a, b: jlax.optimization_barrier((a, [b])), X, XI)


def test_conj_of_real_input_transposes_to_a_real_cotangent() -> None:
    # conj promotes a real operand to complex; its cotangent must come back real (JAX takes the
    # real part), or grad of a real function returns a complex gradient.
    def f(lib):
        return lambda x: (lib.lax.conj(x) * (2 + 1j)).imag.sum() + (lib.lax.conj(x) * 3).real.sum()

    x = np.array([1.0, -2.0], np.float32)
    got = fluxion.grad(f(fluxion))(x)
    want = jax.grad(f(jax))(x)
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), np.asarray(want))

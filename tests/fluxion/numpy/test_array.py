"""The Python surface of ``fluxion.Array`` against jax.Array: repr and format, operators,
conversions, methods (``fluxion.numpy.array_methods``), device and host transfer, pickling.
"""

from __future__ import annotations

import operator
import pickle

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from _compare import assert_same, check_like_jax, rand_array

import fluxion
import fluxion.numpy as fnp

BF16 = np.dtype(ml_dtypes.bfloat16)
F32, F16, I32, U8, BOOL, C64 = (np.dtype(t) for t in (
    "float32", "float16", "int32", "uint8", "bool", "complex64"))


def both(name: str, *args, rtol=None, atol=None, err_contains=(), **kwargs):
    """Call fnp.<name> and jnp.<name> with the same arguments and compare."""
    return check_like_jax(getattr(fnp, name), getattr(jnp, name), *args, rtol=rtol, atol=atol,
                          err_contains=err_contains, **kwargs)


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


_BITWISE_OPS = (operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift)


def _operator_cases():
    """Every operator (and its reflection) with every kind of other operand, on the operand
    dtype the operator is for (int32 for the bitwise ones, float32 else); the other two dtypes
    with one array and the two kinds of Python scalar. All dunders are the same wrappers
    (numpy/array_methods.py _defer/_rdefer) of the ufuncs, whose dtype promotion over all dtype
    pairs test_ufuncs.py checks."""
    cases = []
    for op in BIN_OPS:
        main = "i32" if op in _BITWISE_OPS else "f32"
        cases += [(op, main, other) for other in OTHERS]
        cases += [(op, tag, other) for tag in ("f32", "i32", "bool") if tag != main
                  for other in ("f32", 2, 1.5)]
    return cases


@pytest.mark.parametrize("op,self_tag,other", _operator_cases(),
                         ids=lambda v: v.__name__ if callable(v) else str(v))
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
        except Exception as e:
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
    # As JAX: == with an unsupported operand defers (NotImplemented), so Python falls back to
    # identity and the comparison is plain False.
    assert (x == None) is False  # noqa: E711
    assert jnp.arange(3.0).__eq__("a") is NotImplemented
    assert x.__eq__("a") is NotImplemented


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


def test_compress_method_takes_the_condition_first():
    x, jx = fnp.array([[10, 20], [30, 40], [50, 60]]), jnp.array([[10, 20], [30, 40], [50, 60]])
    for args in (([True, False, True],), ([True, False, True], 0), ([False, True], 1)):
        assert_same(x.compress(fnp.asarray(args[0]), *args[1:]),
                    jx.compress(jnp.asarray(args[0]), *args[1:]))


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


def test_block_until_ready_waits_once_for_several_arrays(monkeypatch):
    from fluxion.backend import dispatch as _d

    waits = []
    batched = _d._jax.batched_block_until_ready
    monkeypatch.setattr(_d._jax, "batched_block_until_ready",
                        lambda arrays: (waits.append(len(arrays)), batched(arrays))[1])
    outs = fluxion.jit(lambda v: (v + 1, {"b": v * 2}, 3))(fnp.arange(3.0))
    assert fluxion.block_until_ready(outs) is outs and waits == [3]  # as jax: one wait
    assert fluxion.block_until_ready((outs[0], np.ones(2), 1.0))[0] is outs[0]  # one Array
    assert fluxion.block_until_ready([np.ones(2), None]) is not None and waits == [3]
    gone = fnp.arange(2.0) + 1
    gone.delete()
    for tree in ([outs[0], gone], [gone]):  # a deleted array raises, alone or among others
        with pytest.raises(Exception, match="deleted or donated"):
            fluxion.block_until_ready(tree)
    jgone = jnp.arange(2.0) + 1
    jgone.delete()
    with pytest.raises(Exception, match="deleted or donated"):  # jax's message too
        jax.block_until_ready([jnp.ones(2), jgone])


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

"""fluxion.numpy gaps: pad, roots, r_/c_, and small ufunc/creation semantics, vs jax.numpy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp


def _check(ours, theirs, rtol=1e-6, atol=1e-6):
    assert ours.shape == theirs.shape
    assert ours.dtype == theirs.dtype
    assert bool(getattr(ours, "weak_type", False)) == bool(getattr(theirs, "weak_type", False))
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=rtol, atol=atol)


def _both(fn):
    """Run ``fn(module)`` on both; equal results, or the same exception type."""
    try:
        theirs = fn(jnp)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            fn(fnp)
        return
    _check(fn(fnp), theirs)


X2 = np.arange(1, 7, dtype=np.float32).reshape(2, 3) ** 1.5
I1 = np.array([3, 1, 4, 1, 5], np.int32)

PAD_CASES = [
    ("constant", {}),
    ("constant", {"constant_values": 7}),
    ("constant", {"constant_values": (1, 2)}),
    ("constant", {"constant_values": ((1, 2), (3, 4))}),
    ("edge", {}),
    ("reflect", {}),
    ("reflect", {"reflect_type": "odd"}),
    ("symmetric", {}),
    ("symmetric", {"reflect_type": "odd"}),
    ("wrap", {}),
    ("linear_ramp", {}),
    ("linear_ramp", {"end_values": (5, -3)}),
    ("maximum", {}),
    ("minimum", {"stat_length": 2}),
    ("mean", {"stat_length": ((1, 2), (2, 1))}),
    ("median", {}),
    ("empty", {}),
]


@pytest.mark.parametrize("mode,kw", PAD_CASES)
@pytest.mark.parametrize("width", [(1, 3), ((0, 4), (5, 1))])
def test_pad_modes_2d(mode, kw, width):
    _check(fnp.pad(X2, width, mode=mode, **kw), jnp.pad(X2, width, mode=mode, **kw), rtol=1e-5)


@pytest.mark.parametrize("mode,kw", PAD_CASES)
def test_pad_modes_int_1d(mode, kw):
    if "constant_values" in kw and np.ndim(kw["constant_values"]) == 2:
        kw = {"constant_values": ((1, 2),)}
    if "stat_length" in kw and np.ndim(kw["stat_length"]) == 2:
        kw = {"stat_length": ((1, 2),)}
    _check(fnp.pad(I1, (7, 3), mode=mode, **kw), jnp.pad(I1, (7, 3), mode=mode, **kw))


def test_pad_forms_and_edge_cases():
    for width in [0, 3, (2,), [[1, 2]], np.array([[1, 0], [0, 2]])]:
        _check(fnp.pad(X2, width), jnp.pad(X2, width))
    # weak-typed and 0-d inputs, bool
    _check(fnp.pad(fnp.asarray(1.5), 2), jnp.pad(jnp.asarray(1.5), 2))
    b = np.array([True, False])
    _check(fnp.pad(b, 1, mode="reflect"), jnp.pad(b, 1, mode="reflect"))
    one = np.array([4.0], np.float32)
    for mode in ("reflect", "symmetric"):
        _check(fnp.pad(one, 3, mode=mode, reflect_type="odd"),
               jnp.pad(one, 3, mode=mode, reflect_type="odd"))
    _both(lambda m: m.pad(X2, -1))
    _both(lambda m: m.pad(X2, 1, mode="edge", constant_values=3))
    _both(lambda m: m.pad(X2, 1, mode="nope"))
    _both(lambda m: m.pad(X2, 1.5))
    _both(lambda m: m.pad(np.zeros((0, 2), np.float32), 1, mode="wrap"))
    _both(lambda m: m.pad(X2, 1, mode="mean", stat_length=0))


def test_pad_callable_and_jit():
    def f(row, width, iaxis, kwargs):
        row = row.at[:width[0]].set(kwargs.get("v", -1))
        return row.at[row.shape[0] - width[1]:].set(9)

    _check(fnp.pad(X2, (1, 2), f, v=5), jnp.pad(X2, (1, 2), f, v=5))
    ours = fluxion.jit(lambda x: fnp.pad(x, ((1, 2), (3, 0)), mode="reflect"))(X2)
    theirs = jax.jit(lambda x: jnp.pad(x, ((1, 2), (3, 0)), mode="reflect"))(X2)
    _check(ours, theirs)


def _sorted_roots(r):
    r = np.asarray(r)
    return np.sort_complex(r[~np.isnan(r)]), int(np.isnan(r).sum())


ROOT_CASES = [
    [1.0, -6.0, 11.0, -6.0],
    [2.0, 0.0, 1.0, 0.0, 3.0, 0.0],
    [1.0, 0.0, 1.0],
    [0.5, -1.25, 3.0, 2.0, -7.0],
    [0.0, 0.0, 1.0, -3.0, 2.0],
    [3, 2, 1],
]


@pytest.mark.parametrize("p", ROOT_CASES)
@pytest.mark.parametrize("strip", [True, False])
def test_roots(p, strip):
    p = np.asarray(p, np.int32 if isinstance(p[0], int) else np.float32)
    ours, theirs = fnp.roots(p, strip_zeros=strip), jnp.roots(p, strip_zeros=strip)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert not ours.weak_type
    (o, on), (t, tn) = _sorted_roots(ours), _sorted_roots(theirs)
    assert on == tn
    np.testing.assert_allclose(o, t, rtol=1e-4, atol=1e-4)


def test_roots_edge_cases_and_jit():
    for p in ([5.0], [0.0, 0.0], [0.0, 0.0, 0.0]):
        a = np.asarray(p, np.float32)
        for strip in (True, False):
            _check(fnp.roots(a, strip_zeros=strip), jnp.roots(a, strip_zeros=strip))
    c = np.array([1 + 1j, -6, 11j, -6], np.complex64)
    (o, _), (t, _) = _sorted_roots(fnp.roots(c)), _sorted_roots(jnp.roots(c))
    np.testing.assert_allclose(o, t, rtol=1e-4, atol=1e-4)
    p = np.array([0.0, 1.0, -3.0, 2.0], np.float32)
    ours = fluxion.jit(lambda q: fnp.roots(q, strip_zeros=False))(p)
    theirs = jax.jit(lambda q: jnp.roots(q, strip_zeros=False))(p)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    (o, on), (t, tn) = _sorted_roots(ours), _sorted_roots(theirs)
    assert on == tn == 1
    np.testing.assert_allclose(o, t, rtol=1e-4, atol=1e-4)
    _both(lambda m: m.roots(np.ones((2, 2), np.float32)))


A = np.array([1, 2, 3], np.int32)
B = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)

R_CASES = [
    lambda m: m.r_[1:4, 0, A],
    lambda m: m.r_[0:1:5j],
    lambda m: m.r_[-1:1:6j, [0] * 3, 5, 6],
    lambda m: m.r_[A, A],
    lambda m: m.r_["0,2", [1, 2], [3, 4]],
    lambda m: m.r_["0,2,0", [1, 2], [3, 4]],
    lambda m: m.r_["1,2,0", [1, 2], [3, 4]],
    lambda m: m.r_["0,3,1", [1, 2], [3, 4]],
    lambda m: m.r_["-1", B, B],
    lambda m: m.r_["r", 1:4],
    lambda m: m.r_["c", A, A],
    lambda m: m.r_[B, B],
    lambda m: m.r_[1.5, 2],
    lambda m: m.c_[A, A],
    lambda m: m.c_[B, [5.0, 6.0]],
    lambda m: m.c_[0:3, A],
    lambda m: m.c_[np.ones((2, 2, 2), np.float32), np.zeros((2, 2, 1), np.float32)],
    lambda m: m.c_["0", A, A],
]


@pytest.mark.parametrize("case", range(len(R_CASES)))
def test_r_c(case):
    _both(R_CASES[case])


def test_r_c_errors():
    _both(lambda m: m.r_["bad", A])
    _both(lambda m: m.r_[A, "r"])
    assert len(fnp.r_) == 0 and len(fnp.c_) == 0


I32 = np.array([1, 2, 4, 0], np.int32)
BOOL = np.array([True, False, True, False])
CPX = np.array([1.4 + 2.6j, -0.5 - 1.5j, 2.5 + 0.5j], np.complex64)
CPX2 = np.array([0.3 - 1.0j, 4.0 + 3.0j, -2.0 + 0.0j], np.complex64)

SEMANTIC_CASES = [
    lambda m: m.reciprocal(I32[:3]),
    lambda m: m.reciprocal(BOOL),
    lambda m: m.reciprocal(3),
    lambda m: m.rint(CPX),
    lambda m: m.rint(I32),
    lambda m: m.rint(BOOL),
    lambda m: m.rint(3),
    lambda m: m.logaddexp(CPX, CPX2),
    lambda m: m.logaddexp(CPX, 1.0),
    lambda m: m.power(BOOL, BOOL),
    lambda m: m.power(BOOL, I32),
    lambda m: m.power(BOOL, 2),
    lambda m: m.asarray(I32) ** 1.5,
    lambda m: m.power(I32, np.float32(1.5)),
    lambda m: m.fmod(BOOL, BOOL[::-1]),
    lambda m: m.fmod(BOOL, BOOL),
    lambda m: m.fmod(np.array([7, -7, 5], np.int32), np.array([3, 3, 0], np.int32)),
    lambda m: m.fmod(np.array([7.5, -7.5], np.float32), 2.0),
    lambda m: m.hypot(CPX, CPX2),
    lambda m: m.hypot(I32, 2),
    lambda m: m.full((2,), [1, 2]),
    lambda m: m.full((2, 3), np.array([1, 2, 3])),
    lambda m: m.full((2,), 3.0),
    lambda m: m.concatenate([[1, 2], [3]]),
    lambda m: m.concatenate([m.array([1, 2]), [3]]),
    lambda m: m.concatenate((np.array([1, 2]), np.array([3]))),
]


@pytest.mark.parametrize("case", range(len(SEMANTIC_CASES)))
def test_semantic_gaps(case):
    _both(SEMANTIC_CASES[case])

"""lax families against jax.lax 0.10.2: pad, cumulative and windowed reductions,
select_and_scatter_add, convolutions, sort/top_k, argmax/argmin, generic reduce,
reduce_precision/copy/optimization_barrier and the convenience functions.

Each case runs eagerly and under ``fluxion.jit``; values, dtypes, shapes and weak types must equal
JAX's. Error cases must raise JAX's exception class with a message naming the function.
"""

from __future__ import annotations

import jax
import jax.lax as jlax
import jax.numpy as jjnp
import numpy as np
import pytest
from _compare import assert_same, check_like_jax, rand_array

import fluxion
import fluxion.lax as flax
import fluxion.numpy as fjnp


def _both(ours_fn, jax_fn, *args, rtol=None, atol=None, check_weak_type=True):
    """ours eager == ours jitted == jax (values, dtype, shape, weak type)."""
    theirs = jax_fn(*args)
    eager = ours_fn(*args)
    assert_same(eager, theirs, rtol=rtol, atol=atol, check_weak_type=check_weak_type)
    jitted = fluxion.jit(ours_fn)(*args)
    assert_same(jitted, theirs, rtol=rtol, atol=atol, check_weak_type=check_weak_type)


X = rand_array((3, 4), "float32", seed=1)
XI = rand_array((3, 4), "int32", seed=2)

# ------------------------------------------------------------------ pad

PAD_CASES = [
    ((4,), [(1, 2, 0)]),
    ((4,), [(-1, 1, 1)]),
    ((3, 4), [(1, -1, 1), (0, 2, 2)]),
    ((3, 4), [(-2, -1, 0), (-3, 0, 0)]),
    ((0, 2), [(1, 1, 3), (0, 0, 0)]),
]


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("shape,config", PAD_CASES)
def test_pad(shape, config, dtype):
    x = rand_array(shape, dtype)
    pv = np.array(7, dtype)
    _both(lambda a, v: flax.pad(a, v, config), lambda a, v: jlax.pad(a, v, config), x, pv)


def test_pad_python_scalar_value():
    _both(lambda a: flax.pad(a, 0.0, [(1, 1, 1), (0, 0, 0)]),
          lambda a: jlax.pad(a, 0.0, [(1, 1, 1), (0, 0, 0)]), X)


@pytest.mark.parametrize("config", [[(1, 1, 0)], [(0, 0, -1), (0, 0, 0)],
                                    [(-5, 0, 0), (0, 0, 0)]])
def test_pad_errors(config):
    e = check_like_jax(lambda: flax.pad(fjnp.asarray(X), 0.0, config),
                       lambda: jlax.pad(jjnp.asarray(X), 0.0, config))
    assert isinstance(e, ValueError) and "lax.pad" in str(e)


def test_padtype_to_pads():
    for pad in ("SAME", "VALID", "SAME_LOWER"):
        for shape, win, strides in [((5, 6), (3, 2), (2, 1)), ((4,), (4,), (3,))]:
            assert [tuple(p) for p in flax.padtype_to_pads(shape, win, strides, pad)] == \
                [tuple(p) for p in jlax.padtype_to_pads(shape, win, strides, pad)]


# ------------------------------------------------------------------ cumulative

@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"])
@pytest.mark.parametrize("axis,reverse", [(0, False), (1, True)])
def test_cumulative(name, axis, reverse):
    f, g = getattr(flax, name), getattr(jlax, name)
    _both(lambda a: f(a, axis, reverse), lambda a: g(a, axis, reverse), X, rtol=1e-6, atol=1e-6)
    if name != "cumlogsumexp":
        _both(lambda a: f(a, axis, reverse), lambda a: g(a, axis, reverse), XI)


def test_cumulative_nan_inf_and_errors():
    x = np.array([1.0, -np.inf, np.nan, 2.0, np.inf], np.float32)
    for name in ("cumsum", "cummax", "cumlogsumexp"):
        _both(getattr(flax, name), getattr(jlax, name), x)
    e = check_like_jax(lambda: flax.cumsum(fjnp.asarray(X), 2), lambda: jlax.cumsum(X, 2))
    assert "cumsum" in str(e)


# ------------------------------------------------------------------ reduce_window

WINDOW_CASES = [
    ((2, 2), (1, 1), "VALID", None, None),
    ((2, 3), (2, 1), "SAME", None, None),
    ((3, 2), (1, 2), ((1, 0), (2, 1)), (1, 2), None),
    ((2, 2), (1, 1), "VALID", None, (2, 1)),
]


@pytest.mark.parametrize("op,init", [("add", 0.0), ("max", -np.inf), ("min", np.inf),
                                     ("add", 1.5)])
@pytest.mark.parametrize("win,strides,padding,base,wdil", WINDOW_CASES)
def test_reduce_window(op, init, win, strides, padding, base, wdil):
    def ours(a):
        return flax.reduce_window(a, init, getattr(flax, op), win, strides, padding, base, wdil)

    def theirs(a):
        return jlax.reduce_window(a, init, getattr(jlax, op), win, strides, padding, base, wdil)

    _both(ours, theirs, X, rtol=1e-6)


def test_reduce_window_generic_and_int():
    _both(lambda a: flax.reduce_window(a, 1, lambda x, y: flax.mul(x, y), (2, 2), (1, 2), "SAME"),
          lambda a: jlax.reduce_window(a, 1, lambda x, y: jlax.mul(x, y), (2, 2), (1, 2), "SAME"),
          XI)
    _both(lambda a: flax.reduce_window(a, 0, flax.add, (3, 1), (1, 1), "VALID"),
          lambda a: jlax.reduce_window(a, 0, jlax.add, (3, 1), (1, 1), "VALID"), XI)

    def pair(x, y):
        return (x[0] + y[0], flax.max(x[1], y[1]))

    def jpair(x, y):
        return (x[0] + y[0], jlax.max(x[1], y[1]))

    _both(lambda a, b: flax.reduce_window((a, b), (0.0, 0), pair, (2, 2), (1, 1), "VALID"),
          lambda a, b: jlax.reduce_window((a, b), (0.0, 0), jpair, (2, 2), (1, 1), "VALID"),
          X, XI)


def test_select_and_scatter_add():
    from jax._src.lax.windowed_reductions import _select_and_scatter_add
    src = rand_array((2, 4), "float32", seed=3)
    for prim, jprim in ((flax.ge_p, jlax.ge_p), (flax.le_p, jlax.le_p)):
        pads = ((0, 0), (1, 0))
        _both(lambda s, o: flax.select_and_scatter_add(s, o, prim, (2, 2), (1, 1), pads),
              lambda s, o: _select_and_scatter_add(s, o, jprim, (2, 2), (1, 1), pads), src, X)


def test_max_pool_gradient_matches_jax():
    # the select_and_scatter_add of a max pool equals JAX's gradient of reduce_window max
    g = jax.grad(lambda a: jlax.reduce_window(a, -jnp_inf(), jlax.max, (2, 2), (1, 1),
                                              "VALID").sum())(X)
    ones = np.ones((2, 3), np.float32)
    ours = flax.select_and_scatter_add(ones, X, flax.ge_p, (2, 2), (1, 1), ((0, 0), (0, 0)))
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(g))


def jnp_inf():
    return np.float32(np.inf)


# ------------------------------------------------------------------ convolution

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


# ------------------------------------------------------------------ sorting

SPECIAL = np.array([[3.0, -0.0, np.nan, 0.0, -np.inf, 1.0],
                    [np.nan, 2.0, -1.0, np.inf, 2.0, -np.nan]], np.float32)


@pytest.mark.parametrize("dimension", [0, -1])
def test_sort_single(dimension):
    _both(lambda a: flax.sort(a, dimension), lambda a: jlax.sort(a, dimension), SPECIAL)
    _both(lambda a: flax.sort(a, dimension), lambda a: jlax.sort(a, dimension), XI)
    b = rand_array((2, 6), "bool", seed=3)
    _both(lambda a: flax.sort(a, dimension), lambda a: jlax.sort(a, dimension), b)


def test_sort_multi_and_complex():
    k1 = np.array([1, 0, 1, 0, 1, 0], np.int32)
    k2 = np.array([2.0, 1.0, np.nan, 1.0, -0.0, 0.0], np.float32)
    v = np.arange(6, dtype=np.int32)
    for nk in (1, 2):
        _both(lambda a, b, c: flax.sort((a, b, c), num_keys=nk),
              lambda a, b, c: jlax.sort((a, b, c), num_keys=nk), k1, k2, v)
    _both(lambda a, b: flax.sort_key_val(a, b), lambda a, b: jlax.sort_key_val(a, b), k2, v)
    c = (rand_array((5,), "float32") + 1j * np.array([1, 0, 1, 0, 1])).astype(np.complex64)
    c[1] = c[0].real
    _both(lambda a: flax.sort(a), lambda a: jlax.sort(a), c)


def test_top_k():
    for axis in (-1, 0):
        _both(lambda a: flax.top_k(a, 2, axis=axis), lambda a: jlax.top_k(a, 2, axis=axis), X)
    _both(lambda a: flax.top_k(a, 3), lambda a: jlax.top_k(a, 3), XI)
    e = check_like_jax(lambda: flax.top_k(fjnp.asarray(X), 5), lambda: jlax.top_k(X, 5))
    assert "top_k" in str(e)


# ------------------------------------------------------------------ argmax/argmin, reduce

ARG_INPUTS = [
    np.array([[1.0, 3.0, 3.0, np.nan], [np.nan, 2.0, np.nan, -1.0], [-np.inf] * 4], np.float32),
    np.array([[1, 5, 5, 0], [2, 2, 2, 2]], np.int32),
    np.array([[False, True, True], [False, False, False]]),
]


@pytest.mark.parametrize("which", ["argmax", "argmin"])
@pytest.mark.parametrize("idx", [0, 1, 2])
def test_argminmax(which, idx):
    x = ARG_INPUTS[idx]
    f, g = getattr(flax, which), getattr(jlax, which)
    for axis in (0, 1):
        _both(lambda a: f(a, axis, np.int32), lambda a: g(a, axis, np.int32), x)


def test_reduce():
    _both(lambda a: flax.reduce(a, 0.0, flax.add, (1,)), lambda a: jlax.reduce(a, 0.0, jlax.add, (1,)),
          X, rtol=1e-6)
    _both(lambda a: flax.reduce(a, -np.inf, flax.max, (0,)),
          lambda a: jlax.reduce(a, -np.inf, jlax.max, (0,)), X)
    _both(lambda a: flax.reduce(a, 2.0, flax.add, (0, 1)),
          lambda a: jlax.reduce(a, 2.0, jlax.add, (0, 1)), X, rtol=1e-6)
    _both(lambda a: flax.reduce(a, 0, lambda x, y: x * 2 + y, (1,)),
          lambda a: jlax.reduce(a, 0, lambda x, y: x * 2 + y, (1,)), XI)
    _both(lambda a, b: flax.reduce((a, b), (0.0, 0), lambda x, y: (x[0] + y[0], flax.max(x[1], y[1])),
                                   (0,)),
          lambda a, b: jlax.reduce((a, b), (0.0, 0), lambda x, y: (x[0] + y[0], jlax.max(x[1], y[1])),
                                   (0,)), X, XI, rtol=1e-6)


# ------------------------------------------------------------------ misc elementwise, convenience

def test_reduce_precision_copy_barrier():
    x = rand_array((5,), "float32", seed=9) * 1000
    for e, m in ((5, 10), (8, 7), (4, 3)):
        _both(lambda a: flax.reduce_precision(a, e, m), lambda a: jlax.reduce_precision(a, e, m), x)
    _both(flax.copy, lambda a: jax.lax.copy_p.bind(a), X)
    _both(lambda a, b: flax.optimization_barrier((a, [b])),
          lambda a, b: jlax.optimization_barrier((a, [b])), X, XI)


def test_full_collapse_broadcast_to_rank():
    for args in [((2, 3), 1.5), ((2,), 3, np.float32), ((), True), ((3,), np.int8(2))]:
        assert_same(flax.full(*args), jlax.full(*args))
    for a, kw in [(X, {}), (XI, dict(dtype=np.float32)), (X, dict(shape=(2,))), (2.0, {})]:
        assert_same(flax.full_like(a, 3, **kw), jlax.full_like(a, 3, **kw))
    _both(lambda a: flax.full_like(a, 3), lambda a: jlax.full_like(a, 3), X)
    x = rand_array((2, 3, 4), "float32")
    for start, stop in [(0, 2), (1, None), (-2, -1), (0, 3)]:
        _both(lambda a: flax.collapse(a, start, stop), lambda a: jlax.collapse(a, start, stop), x)
    for rank in (2, 4):
        _both(lambda a: flax.broadcast_to_rank(a, rank), lambda a: jlax.broadcast_to_rank(a, rank), X)
    with pytest.raises(TypeError, match="lax.full"):
        flax.full((2,), np.ones(2))


# ------------------------------------------------------------------ incomplete gamma

def test_igamma_igammac():
    # against SciPy (JAX's own igamma compiles slowly); the edge cases are JAX's results
    from scipy import special
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.uniform(0.05, 20, 20), [0, 0, -1, 1, np.nan, 1, 0, np.inf, 2, 1e-30]])
    x = np.concatenate([rng.uniform(0, 30, 20), [0, 1, 1, -1, 1, np.nan, np.inf, 1, -np.inf, 1]])
    a, x = a.astype(np.float32), x.astype(np.float32)
    nan = np.nan
    p_edge = [nan, 1, nan, nan, nan, nan, 1, nan, nan, 1]
    q_edge = [nan, 0, nan, nan, nan, nan, 0, nan, nan, 2.1938397e-31]
    for f, ref, edge in ((flax.igamma, special.gammainc, p_edge),
                         (flax.igammac, special.gammaincc, q_edge)):
        ours = f(a, x)
        assert ours.dtype == np.float32 and ours.shape == a.shape
        np.testing.assert_allclose(np.asarray(ours)[:20], ref(a[:20].astype(np.float64),
                                                               x[:20].astype(np.float64)),
                                   rtol=2e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(ours)[20:], np.float32(edge), rtol=1e-5, atol=1e-7)
    assert_same(fluxion.jit(flax.igamma)(a, x), flax.igamma(a, x))

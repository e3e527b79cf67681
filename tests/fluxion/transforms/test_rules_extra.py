"""JVP / transpose / batching rules of the less common primitives, against real JAX.

Each case compares ``jvp`` and ``vjp`` (same tangents and cotangents) with JAX, and ``vmap``
with a Python loop (and with JAX where JAX supports it). Small shapes, float32 unless noted.
"""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from _compare import assert_close, check_ad_like_jax, check_vmap_like_loop

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion.test_util import check_grads

RNG = np.random.RandomState(0)


def _rand(*shape: int) -> np.ndarray:
    return RNG.randn(*shape).astype(np.float32)


# ------------------------------------------------------------------ sort / top_k

def test_sort_jvp_vjp_and_vmap():
    x = _rand(3, 5)
    check_ad_like_jax(lambda x: lax.sort(x, dimension=0), lambda x: jax.lax.sort(x, dimension=0), (x,))
    check_ad_like_jax(lambda x: lax.sort(x), lambda x: jax.lax.sort(x), (x,))
    k = np.array([[2, 1, 2, 0, 1]] * 3, np.int32)
    check_ad_like_jax(lambda v: lax.sort_key_val(k, v)[1], lambda v: jax.lax.sort_key_val(k, v)[1], (x,))
    check_vmap_like_loop(lambda x: lax.sort(x, dimension=0), (x,), in_axes=1)
    check_grads(lambda x: lax.sort(x) ** 2, (x[0],), order=2, modes=("rev",), atol=1e-2, rtol=1e-2)


def test_top_k_jvp_vjp_and_vmap():
    x = _rand(2, 6)
    check_ad_like_jax(lambda x: lax.top_k(x, 3)[0], lambda x: jax.lax.top_k(x, 3)[0], (x,))
    check_vmap_like_loop(lambda x: lax.top_k(x, 2), (x,), in_axes=1)
    g = fluxion.grad(lambda x: lax.top_k(x, 2)[0].sum())(x[0])
    assert_close(g, jax.grad(lambda x: jax.lax.top_k(x, 2)[0].sum())(x[0]), 1e-5)


# ------------------------------------------------------------------ convolution

CONV_CASES = [
    dict(ls=(2, 3, 6, 5), rs=(4, 3, 3, 2), kw=dict(window_strides=(1, 1), padding="SAME")),
    dict(ls=(2, 3, 7, 6), rs=(4, 3, 3, 2),
         kw=dict(window_strides=(2, 1), padding=((1, 0), (2, 1)), lhs_dilation=(1, 2),
                 rhs_dilation=(2, 1))),
    dict(ls=(2, 4, 6, 5), rs=(6, 2, 3, 2),
         kw=dict(window_strides=(1, 2), padding="VALID", feature_group_count=2)),
    dict(ls=(4, 3, 6, 5), rs=(6, 3, 3, 2),
         kw=dict(window_strides=(1, 1), padding="VALID", batch_group_count=2)),
    dict(ls=(2, 5, 6, 3), rs=(3, 2, 3, 4),
         kw=dict(window_strides=(1, 1), padding="SAME",
                 dimension_numbers=("NHWC", "HWIO", "NHWC"))),
]


@pytest.mark.parametrize("case", range(len(CONV_CASES)))
def test_conv_jvp_transpose_and_vmap(case):
    c = CONV_CASES[case]
    lhs, rhs = _rand(*c["ls"]), _rand(*c["rs"])

    def f(a, b):
        return lax.conv_general_dilated(a, b, **c["kw"])

    def fj(a, b):
        return jax.lax.conv_general_dilated(a, b, **c["kw"])

    check_ad_like_jax(f, fj, (lhs, rhs), tol=1e-4)
    L, R = _rand(2, *c["ls"]), _rand(2, *c["rs"])
    combos = (((0, 0), (L, R)), ((0, None), (L, rhs)), ((None, 0), (lhs, R)),
              ((1, 2), (np.moveaxis(L, 0, 1), np.moveaxis(R, 0, 2))))
    for axes, xs in combos if case == 0 else combos[:3]:
        assert_close(fluxion.jit(fluxion.vmap(f, in_axes=axes))(*xs),
               jax.jit(jax.vmap(fj, in_axes=axes))(*xs), 1e-4)


def test_conv_second_order():
    lhs, rhs = _rand(1, 2, 4, 4), _rand(2, 2, 2, 2)
    f = lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "SAME") ** 2
    fj = lambda a, b: jax.lax.conv_general_dilated(a, b, (1, 1), "SAME") ** 2
    g = lambda a, b: fluxion.grad(lambda a: f(a, b).sum())(a)
    gj = lambda a, b: jax.grad(lambda a: fj(a, b).sum())(a)
    check_ad_like_jax(g, gj, (lhs, rhs), tol=1e-4)


# ------------------------------------------------------------------ windowed reductions

WINDOWS = [
    dict(window_dimensions=(1, 3), window_strides=(1, 2), padding=((0, 0), (1, 2))),
    dict(window_dimensions=(2, 2), window_strides=(1, 1), padding="SAME", base_dilation=(1, 2)),
    dict(window_dimensions=(2, 2), window_strides=(2, 1), padding="VALID",
         window_dilation=(1, 2)),
]
MONOIDS = {"sum": (0.0, jax.lax.add), "max": (-np.inf, jax.lax.max), "min": (np.inf, jax.lax.min)}


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("w", range(len(WINDOWS)))
def test_reduce_window_rules(kind, w):
    kw = WINDOWS[w]
    x = _rand(3, 7)
    f = lambda x: getattr(lax, f"reduce_window_{kind}")(x, **kw)
    init, op = MONOIDS[kind]
    fj = lambda x: jax.lax.reduce_window(x, init, op, **kw)
    if kind != "sum" and "window_dilation" in kw:  # JAX has no VJP here either
        assert_close(fluxion.jvp(f, (x,), (x,))[1], jax.jvp(fj, (x,), (x,))[1], 1e-5)
        with pytest.raises(NotImplementedError, match="window dilation"):
            fluxion.grad(lambda x: f(x).sum())(x)
    else:
        check_ad_like_jax(f, fj, (x,))
    check_vmap_like_loop(f, (_rand(2, 3, 7),))


def test_reduce_window_sum_second_order():
    x = _rand(4, 5)
    check_grads(lambda x: lax.reduce_window_sum(x, (2, 2), (1, 2), "SAME") ** 2, (x,), order=2,
                atol=1e-2, rtol=1e-2)


def test_generic_reduce_window_jvp():
    x = np.abs(_rand(2, 6)) + 0.5
    f = lambda x: lax.reduce_window(x, 1.0, lambda a, b: a * b, (1, 3), (1, 1), "VALID")
    fj = lambda x: jax.lax.reduce_window(x, 1.0, jax.lax.mul, (1, 3), (1, 1), "VALID")
    p, t = fluxion.jvp(f, (x,), (x,))
    pj, tj = jax.jvp(fj, (x,), (x,))
    assert_close(p, pj, 1e-5)
    assert_close(t, tj, 1e-5)
    check_vmap_like_loop(f, (_rand(2, 2, 6),))


def test_select_and_scatter_add_rules():
    op = _rand(2, 6)
    src = _rand(2, 3)
    args = dict(window_dimensions=(1, 2), window_strides=(1, 2), padding=((0, 0), (0, 0)))
    f = lambda s: lax.select_and_scatter_add(s, op, lax.ge_p, **args)
    # it is the transpose of the windowed max's JVP: <ct, J t> == <J^T ct, t>
    t = _rand(2, 6)
    jt = fluxion.jvp(lambda x: lax.reduce_window_max(x, (1, 2), (1, 2)), (op,), (t,))[1]
    np.testing.assert_allclose(float(np.sum(np.asarray(jt) * src)),
                               float(np.sum(np.asarray(f(src)) * t)), rtol=1e-5)
    # linear in the source: jvp = itself, vjp = select_and_gather_add
    assert_close(fluxion.jvp(f, (src,), (src,))[1], f(src), 1e-5)
    ct = _rand(2, 6)
    got = fluxion.vjp(f, src)[1](ct)[0]
    np.testing.assert_allclose(float(np.sum(np.asarray(got) * src)),
                               float(np.sum(np.asarray(f(src)) * ct)), rtol=1e-5)
    check_vmap_like_loop(lambda s, o: lax.select_and_scatter_add(s, o, lax.ge_p, **args),
                   (_rand(3, 2, 3), _rand(3, 2, 6)))
    check_vmap_like_loop(lambda s, o: lax.select_and_scatter_add(s, o, lax.ge_p, **args),
                   (_rand(3, 2, 3), op), in_axes=(0, None))


# ------------------------------------------------------------------ reductions, cumulative

def test_generic_reduce_jvp_grad():
    x = _rand(3, 4)
    f = lambda x: lax.reduce(x, 1.0, lambda a, b: a * b, (1,))
    fj = lambda x: jax.lax.reduce(x, 1.0, jax.lax.mul, (1,))
    check_ad_like_jax(f, fj, (x,), tol=1e-4)
    check_vmap_like_loop(f, (_rand(2, 3, 4),), in_axes=1)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"])
def test_cumulative_vmap_and_grad(name):
    x = _rand(2, 3, 4)
    f = lambda x: getattr(lax, name)(x, axis=1, reverse=True)
    fj = lambda x: getattr(jax.lax, name)(x, axis=1, reverse=True)
    check_vmap_like_loop(f, (x,), in_axes=1, tol=1e-4)
    assert_close(fluxion.vmap(f, in_axes=1)(x), jax.vmap(fj, in_axes=1)(x), 1e-4)
    check_ad_like_jax(f, fj, (x[0],), tol=1e-4)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argminmax_vmap(name):
    x = _rand(3, 4, 2)
    f = lambda x: getattr(lax, name)(x, 1, np.int32)
    check_vmap_like_loop(f, (x,), in_axes=2)
    assert_close(fluxion.vmap(f, in_axes=2)(x), jax.vmap(lambda x: getattr(jax.lax, name)(x, 1, np.int32),
                                                  in_axes=2)(x), 1e-5)


def test_scatter_max_min_grad():
    x = np.array([1., 5., 2., 0.], np.float32)
    u = np.array([3., 1., 7.], np.float32)
    i = np.array([0, 1, 1])
    w = np.arange(1., 5., dtype=np.float32)
    for meth in ("max", "min"):
        f = lambda x, u: getattr(jnp.asarray(x).at[i], meth)(u) * w
        fj = lambda x, u: getattr(jjnp.asarray(x).at[i], meth)(u) * w
        check_ad_like_jax(f, fj, (x, u))


def test_pad_vmap():
    x = _rand(3, 2, 4)
    f = lambda x, v: lax.pad(x, v, ((1, 0, 1), (0, 2, 0)))
    check_vmap_like_loop(f, (x, np.float32(0.5)), in_axes=(0, None))
    check_vmap_like_loop(f, (x, np.arange(3, dtype=np.float32)), in_axes=(0, 0))


# ------------------------------------------------------------------ special functions

def test_bessel_values_grads_vmap():
    x = np.array([0.0, 0.5, -1.0, 3.0, 9.0, -20.0], np.float32)
    for name in ("bessel_i0e", "bessel_i1e"):
        assert_close(getattr(lax, name)(x), getattr(jax.lax, name)(x), 1e-6)
        assert_close(fluxion.vmap(fluxion.grad(getattr(lax, name)))(x),
               jax.jit(jax.vmap(jax.grad(getattr(jax.lax, name))))(x), 1e-5)


def test_bessel_i0e_float64(x64):
    x = np.array([0.1, 2.0, -7.5, 8.5, 50.0])
    assert_close(lax.bessel_i0e(x), jax.lax.bessel_i0e(x), 1e-13)


def test_digamma_polygamma_grads():
    x = np.array([0.5, 1.0, 3.0, 7.5], np.float32)
    assert_close(fluxion.vmap(fluxion.grad(lax.digamma))(x), jax.jit(jax.vmap(jax.grad(jax.lax.digamma)))(x),
           1e-4)
    assert_close(fluxion.vmap(fluxion.grad(fluxion.grad(lax.digamma)))(x),
           jax.jit(jax.vmap(jax.grad(jax.grad(jax.lax.digamma))))(x), 1e-4)
    m = np.float32(2.0)
    assert_close(lax.polygamma(m, x), jax.lax.polygamma(m, x), 1e-4)


def test_igamma_grad_x():
    a = np.array([0.5, 2.0, 3.0], np.float32)
    z = np.array([1.0, 0.5, 4.0], np.float32)
    for name in ("igamma", "igammac"):
        assert_close(fluxion.jit(fluxion.vmap(fluxion.grad(getattr(lax, name), 1)))(a, z),
               jax.jit(jax.vmap(jax.grad(getattr(jax.lax, name), 1)))(a, z), 1e-5)
    # the derivative in `a` (lax.igamma_grad_a): tests/fluxion/lax/test_special.py


# ------------------------------------------------------------------ small elementwise odds and ends

def test_misc_unary_rules():
    x = _rand(3, 4)
    for f, fj in ((lax.copy, lambda v: jjnp.array(v, copy=True)),
                  (lambda v: lax.reduce_precision(v, 5, 10),
                   lambda v: jax.lax.reduce_precision(v, 5, 10)),
                  (lambda v: lax.clamp(-0.5, v, 0.5), lambda v: jax.lax.clamp(-0.5, v, 0.5)),
                  (lambda v: lax.optimization_barrier(v) * 2, lambda v: jax.lax.optimization_barrier(v) * 2),
                  (lambda v: v * lax.stop_gradient(v), lambda v: v * jax.lax.stop_gradient(v))):
        check_ad_like_jax(f, fj, (x,))
        check_vmap_like_loop(f, (x,), in_axes=1)
    b = lambda v: lax.bitcast_convert_type(v, np.int32)
    check_vmap_like_loop(b, (x,), in_axes=1)
    assert fluxion.jvp(lambda v: b(v).astype(np.float32), (x,), (x,))[1].tolist() == \
        np.zeros_like(x).tolist()


# ------------------------------------------------------------------ collectives

def test_collective_grads():
    x = np.array([0.5, 2.0, 1.0], np.float32)
    w = np.arange(1.0, 4.0, dtype=np.float32)
    cases = [
        (lambda v: lax.psum(v ** 2, "i"), lambda v: jax.lax.psum(v ** 2, "i")),
        (lambda v: (lax.all_gather(v ** 2, "i") * w).sum(),
         lambda v: (jax.lax.all_gather(v ** 2, "i") * w).sum()),
        (lambda v: lax.ppermute(v ** 2, "i", [(0, 1), (1, 2), (2, 0)]) * v,
         lambda v: jax.lax.ppermute(v ** 2, "i", [(0, 1), (1, 2), (2, 0)]) * v),
        (lambda v: lax.pmean(v ** 3, "i"), lambda v: jax.lax.pmean(v ** 3, "i")),
    ]
    for f, fj in cases:
        assert_close(fluxion.vmap(fluxion.grad(f), axis_name="i")(x),
               jax.jit(jax.vmap(jax.grad(fj), axis_name="i"))(x), 1e-5)
    # pmax (no JAX rule): the gradient of max over the members of the batch
    g = fluxion.grad(lambda x: fluxion.vmap(lambda v: lax.pmax(v * v, "i"), axis_name="i")(x).sum())
    assert_close(g(x), jax.jit(jax.grad(lambda x: jjnp.max(x * x) * 3))(x), 1e-5)


def test_all_to_all_transpose_identity():
    X = np.arange(9.0, dtype=np.float32).reshape(3, 3)
    f = lambda X: fluxion.vmap(lambda v: lax.all_to_all(v, "i", 0, 0) * jnp.arange(1.0, 4.0),
                               axis_name="i")(X)
    T, C = _rand(3, 3), _rand(3, 3)
    jv = np.asarray(fluxion.jvp(f, (X,), (T,))[1])
    vj = np.asarray(fluxion.vjp(f, X)[1](C)[0])
    np.testing.assert_allclose((jv * C).sum(), (T * vj).sum(), rtol=1e-5)


# ------------------------------------------------------------------ custom derivatives under vmap

def _custom_pair(lib, np_):
    @lib.custom_jvp
    def f(x, y):
        return np_.sin(x) * y

    @f.defjvp
    def f_jvp(p, t):
        (x, y), (tx, ty) = p, t
        return f(x, y), 3.0 * tx * y + np_.sin(x) * ty * 2.0

    @lib.custom_vjp
    def g(x, y):
        return np_.sin(x) * y

    g.defvjp(lambda x, y: (np_.sin(x) * y, (x, y)), lambda r, c: (5.0 * c * r[1], 7.0 * c))
    return f, g


def test_custom_rules_survive_vmap():
    ours = _custom_pair(fluxion, jnp)
    theirs = _custom_pair(jax, jjnp)
    x = np.array([0.5, 1.0, 2.0], np.float32)
    y = np.float32(1.5)
    for a, b in zip(ours, theirs):
        assert_close(fluxion.vmap(a, (0, None))(x, y), jax.vmap(b, (0, None))(x, y), 1e-5)
        g1 = fluxion.grad(lambda x, y: fluxion.vmap(a, (0, None))(x, y).sum(), (0, 1))(x, y)
        j1 = jax.jit(jax.grad(lambda x, y: jax.vmap(b, (0, None))(x, y).sum(), (0, 1)))(x, y)
        for u, v in zip(g1, j1):
            assert_close(u, v, 1e-5)
        assert_close(fluxion.vmap(fluxion.grad(a), (0, None))(x, y),
               jax.jit(jax.vmap(jax.grad(b), (0, None)))(x, y), 1e-5)
    assert_close(fluxion.jit(fluxion.vmap(fluxion.jacfwd(ours[0])))(x, x),
           jax.jit(jax.vmap(jax.jacfwd(theirs[0])))(x, x), 1e-5)


def test_checkpoint_vmap_grad():
    x = _rand(3, 4)
    f = lambda v: jnp.sin(jnp.sin(v)).sum()
    fj = lambda v: jjnp.sin(jjnp.sin(v)).sum()
    assert_close(fluxion.vmap(fluxion.grad(fluxion.checkpoint(f)))(x),
           jax.jit(jax.vmap(jax.grad(jax.checkpoint(fj))))(x), 1e-5)
    assert_close(fluxion.grad(lambda x: fluxion.vmap(fluxion.checkpoint(f))(x).sum())(x),
           jax.jit(jax.grad(lambda x: jax.vmap(jax.checkpoint(fj))(x).sum()))(x), 1e-5)


# ------------------------------------------------------------------ jacobians by vmap

def test_jacobians_by_vmap():
    def f(x, y):
        return jnp.sin(x)[:, None] * y, jnp.sum(x * x)

    def fj(x, y):
        return jjnp.sin(x)[:, None] * y, jjnp.sum(x * x)

    x, y = _rand(3), _rand(2)
    for ours, theirs in ((fluxion.jacfwd, jax.jacfwd), (fluxion.jacrev, jax.jacrev)):
        a = jax.tree_util.tree_leaves(fluxion.jit(ours(f, (0, 1)))(x, y))
        b = jax.tree_util.tree_leaves(jax.jit(theirs(fj, (0, 1)))(x, y))
        for u, v in zip(a, b):
            assert_close(u, v, 1e-5)
    assert_close(fluxion.jit(fluxion.hessian(lambda x: (x ** 3).sum()))(x),
           jax.jit(jax.hessian(lambda x: (x ** 3).sum()))(x), 1e-5)


def test_pow_grad_through_vmap_with_broadcast_operands_like_jax():
    # vmap keeps an unbatched exponent at size 1 along the batch axis; pow's JVP rules broadcast
    # both operands before their selects (jax_md's angular symmetry functions: (1 + l cos)**zeta).
    z = np.array([1.0, 2.0, 4.0], np.float32)
    x = np.random.RandomState(0).rand(4, 2).astype(np.float32) + 0.5

    def make(lib, np_):
        def f(a, zz):
            return (1.0 + a[0]) ** zz * a[1] ** zz

        return lambda xs: np_.sum(lib.vmap(lib.vmap(f, (None, 0)), (0, None))(xs, z))

    ours, theirs = make(fluxion, jnp), make(jax, jjnp)
    assert_close(fluxion.grad(ours)(jnp.asarray(x)), jax.grad(theirs)(x), rtol=1e-6)
    assert_close(fluxion.jit(fluxion.grad(ours))(jnp.asarray(x)), jax.jit(jax.grad(theirs))(x),
                 rtol=1e-6)


def test_pow_grad_with_a_scalar_array_exponent_like_jax():
    # a rank-0 Array exponent with a vector base (jax_md's smooth_fn: dr ** f32(2)); the JVP rules
    # broadcast the lower-rank operand along the trailing axes
    x = np.random.RandomState(1).rand(5).astype(np.float32) + 0.5
    two = np.float32(2.0)

    def make(np_):
        return lambda a: np_.sum(a ** np_.asarray(two) + np_.asarray(two) ** a)

    assert_close(fluxion.grad(make(jnp))(jnp.asarray(x)), jax.grad(make(jjnp))(x), rtol=1e-6)
    assert_close(fluxion.jit(fluxion.grad(make(jnp)))(jnp.asarray(x)),
                 jax.jit(jax.grad(make(jjnp)))(x), rtol=1e-6)


def test_pow_grad_of_optax_lbfgs_test_losses_like_jax():
    # The losses of optax's alias_test L-BFGS cases (test_lbfgs_complex, test_handling_pytrees),
    # without optax: x ** <Python float> on a rank-1 |complex| and a rank-2 slice under grad.
    # They failed in the optax mirror run of 2026-12-06 ('broadcast_dimensions (0,)' / '(0, 1)
    # must have one entry per operand dimension, operand shape ()') because that test process
    # imported fluxion while c2f1d92's pow JVP (fixed by e8217a4) was in the tree; fails there.
    mat = np.array([[1, -2], [3, 4], [-4 + 2j, 5 - 3j], [-2 - 2j, 6]], np.complex64)
    z0 = np.array([1 - 1j, 0 + 1j], np.complex64)
    x0 = np.random.RandomState(0).randn(2, 4).astype(np.float32)

    def f_complex(np_):
        return lambda z: np_.sum(np_.abs(np_.asarray(mat) @ z) ** 1.5)

    def rosenbrock(np_):
        return lambda x: np_.sum(100.0 * (x[..., 1:] - x[..., :-1] ** 2.0) ** 2.0
                                 + (1 - x[..., :-1]) ** 2.0)

    for make, arg in ((f_complex, z0), (rosenbrock, x0)):
        got = fluxion.value_and_grad(make(jnp))(jnp.asarray(arg))
        want = jax.value_and_grad(make(jjnp))(arg)
        assert_close(got, want, rtol=2e-6)
        assert_close(fluxion.jit(fluxion.grad(make(jnp)))(jnp.asarray(arg)),
                     jax.jit(jax.grad(make(jjnp)))(arg), rtol=2e-6)

"""Autodiff: jvp / linearize / vjp / grad against finite differences, real JAX and identities."""

from __future__ import annotations

import jax
import jax.numpy as jnp_ref
import numpy as np
import pytest
from _compare import assert_close

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion.test_util import check_grads

jax.config.update("jax_platforms", "cpu")


# ----------------------------------------------------------------------------- the seeds

def tanh_like(x):
    y = jnp.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


def test_seed_tanh_grads():
    g = fluxion.grad(tanh_like)
    assert_close(g(1.0), np.float32(0.4199743), rtol=1e-6)
    g3 = fluxion.grad(fluxion.grad(fluxion.grad(tanh_like)))
    assert_close(g3(1.0), np.float32(0.62162673), rtol=1e-5)


def abs_val(x):
    if x > 0:
        return x
    else:
        return -x


def test_seed_abs_val_python_if():
    assert float(fluxion.grad(abs_val)(1.0)) == 1.0
    assert float(fluxion.grad(abs_val)(-1.0)) == -1.0


def test_grad_through_recursion_and_closures():
    def power(x, n):
        return 1.0 if n == 0 else x * power(x, n - 1)

    assert np.isclose(float(fluxion.grad(lambda x: power(x, 4))(2.0)), 32.0)
    scale = jnp.float32(3.0)

    def outer(x):
        def inner(y):
            return scale * y * x
        return inner(x * x)

    assert np.isclose(float(fluxion.grad(outer)(2.0)), 3.0 * 3 * 4.0)


def test_perturbation_confusion():
    # d/dx [ x * d/dy (x * y) ] = d/dx [x * x] = 2x, and the inner jvp must not see x's tangent
    def f(x):
        def g(y):
            return x * y
        return x * fluxion.jvp(g, (1.0,), (1.0,))[1]

    _, t = fluxion.jvp(f, (2.0,), (1.0,))
    assert float(t) == 4.0
    assert float(fluxion.grad(lambda x: fluxion.grad(lambda y: x * y)(1.0))(3.0)) == 1.0
    # the classic: d/dx (x * d/dy (x + y)) at y=1 is 1
    val = fluxion.grad(lambda x: x * fluxion.grad(lambda y: x + y)(1.0))(5.0)
    assert float(val) == 1.0


# ----------------------------------------------------------------------------- check_grads

_X = np.array([0.3, -0.7, 1.2], np.float32)
_POS = np.array([0.4, 1.3, 2.1], np.float32)
_UNIT = np.array([0.2, -0.5, 0.7], np.float32)

UNARY = [
    ("sin", jnp.sin, _X), ("cos", jnp.cos, _X), ("tan", jnp.tan, _UNIT), ("exp", jnp.exp, _X),
    ("log", jnp.log, _POS), ("expm1", jnp.expm1, _X), ("log1p", jnp.log1p, _POS),
    ("tanh", jnp.tanh, _X), ("sqrt", jnp.sqrt, _POS), ("arcsin", jnp.arcsin, _UNIT),
    ("arccos", jnp.arccos, _UNIT), ("arctan", jnp.arctan, _X), ("sinh", jnp.sinh, _X),
    ("cosh", jnp.cosh, _X), ("arcsinh", jnp.arcsinh, _X), ("arccosh", jnp.arccosh, _POS + 1.0),
    ("arctanh", jnp.arctanh, _UNIT), ("abs", jnp.abs, _X), ("square", jnp.square, _X),
    ("reciprocal", jnp.reciprocal, _POS), ("cbrt", jnp.cbrt, _POS), ("negative", jnp.negative, _X),
    ("logistic", lax.logistic, _X), ("rsqrt", lax.rsqrt, _POS), ("erf", lax.erf, _X),
    ("erfc", lax.erfc, _X), ("erf_inv", lax.erf_inv, _UNIT), ("lgamma", lax.lgamma, _POS),
    ("exp2", jnp.exp2, _X), ("integer_pow3", lambda x: lax.integer_pow(x, 3), _X),
    ("sum", lambda x: jnp.sum(x * x), _X), ("prod", jnp.prod, _X), ("max", jnp.max, _X),
    ("min", jnp.min, _X), ("mean", jnp.mean, _X), ("cumsum", jnp.cumsum, _X),
    ("cumprod", jnp.cumprod, _POS), ("reshape", lambda x: jnp.reshape(x, (3, 1)) * 2.0, _X),
    ("transpose", lambda x: jnp.outer(x, x).T, _X), ("slice", lambda x: x[1:] * x[:2], _X),
    ("strided", lambda x: x[::2] * 3.0, _X), ("concat", lambda x: jnp.concatenate([x, x * x]), _X),
    ("flip", lambda x: jnp.flip(x) * x, _X), ("where", lambda x: jnp.where(x > 0, x * x, -x), _X),
    ("clip", lambda x: jnp.clip(x, -0.5, 0.5) * x, _X), ("pad", lambda x: lax.pad(x, jnp.float32(0), [(2, 1, 1)]) ** 2, _X),
    ("convert", lambda x: lax.convert_element_type(x, np.float32) * x, _X),
]


@pytest.mark.parametrize("name,fn,x", UNARY, ids=[u[0] for u in UNARY])
def test_check_grads_unary(name, fn, x):
    order = 1 if name == "lgamma" else 2  # digamma has no derivative rule yet (polygamma)
    check_grads(fn, (x,), order=order, modes=("fwd", "rev"), atol=3e-2, rtol=3e-2)


_Y = np.array([1.1, 0.4, -0.9], np.float32)

BINARY = [
    ("add", jnp.add, _X, _Y), ("sub", jnp.subtract, _X, _Y), ("mul", jnp.multiply, _X, _Y),
    ("div", jnp.divide, _X, _Y + 2.0), ("pow", jnp.power, _POS, _Y),
    ("maximum", jnp.maximum, _X, _Y), ("minimum", jnp.minimum, _X, _Y),
    ("arctan2", jnp.arctan2, _X, _Y), ("hypot", jnp.hypot, _X, _Y),
    ("dot", lambda a, b: jnp.dot(a, b), _X, _Y),
    ("outer_matmul", lambda a, b: jnp.outer(a, b) @ jnp.outer(b, a), _X, _Y),
    ("rem", lambda a, b: jnp.fmod(a, b + 3.0), _X, _Y),
    ("broadcast", lambda a, b: a[:, None] * b[None, :], _X, _Y),
]


@pytest.mark.parametrize("name,fn,x,y", BINARY, ids=[b[0] for b in BINARY])
def test_check_grads_binary(name, fn, x, y):
    check_grads(fn, (x, y), order=2, modes=("fwd", "rev"), atol=3e-2, rtol=3e-2)


def test_dot_general_batch_dims():
    a = np.random.RandomState(0).randn(2, 3, 4).astype(np.float32)
    b = np.random.RandomState(1).randn(2, 4, 5).astype(np.float32)
    f = lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,))))
    check_grads(f, (a, b), order=1, atol=5e-2, rtol=5e-2)
    ga = fluxion.grad(lambda x, y: (f(x, y) ** 2).sum(), argnums=(0, 1))(a, b)
    gr = jax.grad(lambda x, y: (jax.lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))) ** 2)
                  .sum(), argnums=(0, 1))(a, b)
    assert_close(ga[0], gr[0], rtol=1e-4, atol=1e-4)
    assert_close(ga[1], gr[1], rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- against jax.grad

CASES = [
    ("poly", lambda x: (x ** 3 - 2.0 * x).sum(), lambda x: (x ** 3 - 2.0 * x).sum()),
    ("trig", lambda x: jnp.sin(x).dot(jnp.cos(x)), lambda x: jnp_ref.sin(x).dot(jnp_ref.cos(x))),
    ("softmaxish", lambda x: jnp.log(jnp.sum(jnp.exp(x))),
     lambda x: jnp_ref.log(jnp_ref.sum(jnp_ref.exp(x)))),
    ("maxmin", lambda x: jnp.max(x) - jnp.min(x * 2.0),
     lambda x: jnp_ref.max(x) - jnp_ref.min(x * 2.0)),
    ("where", lambda x: jnp.sum(jnp.where(x > 0, jnp.sqrt(jnp.abs(x)), x ** 2)),
     lambda x: jnp_ref.sum(jnp_ref.where(x > 0, jnp_ref.sqrt(jnp_ref.abs(x)), x ** 2))),
]


@pytest.mark.parametrize("name,f,fr", CASES, ids=[c[0] for c in CASES])
def test_grad_matches_jax(name, f, fr):
    x = np.array([0.5, -1.5, 2.0, 0.1], np.float32)
    assert_close(fluxion.grad(f)(x), jax.grad(fr)(x), rtol=1e-5, atol=1e-6)
    assert_close(fluxion.value_and_grad(f)(x)[0], jax.value_and_grad(fr)(x)[0], rtol=1e-5, atol=1e-6)
    assert_close(fluxion.jit(fluxion.grad(f))(x), jax.grad(fr)(x), rtol=1e-5, atol=1e-6)


def test_grad_scalar_dtypes_and_weak_types():
    g = fluxion.grad(lambda x: x * 2.0)(1.0)
    r = jax.grad(lambda x: x * 2.0)(1.0)
    assert_close(g, r, rtol=1e-5, atol=1e-6)
    assert g.weak_type == r.weak_type
    g = fluxion.grad(lambda x: jnp.sin(x))(np.float32(1.0))
    r = jax.grad(lambda x: jnp_ref.sin(x))(np.float32(1.0))
    assert_close(g, r, rtol=1e-5, atol=1e-6)
    assert g.weak_type == r.weak_type


def test_argnums_has_aux_allow_int():
    f = lambda x, y: (x * y * y, {"aux": x})
    g, aux = fluxion.grad(f, argnums=(0, 1), has_aux=True)(2.0, 3.0)
    assert float(g[0]) == 9.0 and float(g[1]) == 12.0
    assert float(aux["aux"]) == 2.0
    (v, aux2), gx = fluxion.value_and_grad(f, has_aux=True)(2.0, 3.0)
    assert float(v) == 18.0 and float(gx) == 9.0
    gi = fluxion.grad(lambda x, n: x * n, argnums=(0, 1), allow_int=True)(2.0, 3)
    gr = jax.grad(lambda x, n: x * n, argnums=(0, 1), allow_int=True)(2.0, 3)
    assert float(gi[0]) == 3.0
    assert gi[1].dtype == gr[1].dtype  # float0
    assert gi[1].shape == ()


def test_jvp_int_input_float0_and_unused_inputs():
    y, t = fluxion.jvp(lambda x, n: x * n, (2.0, 3), (1.0, np.zeros((), jax.dtypes.float0)))
    assert float(y) == 6.0 and float(t) == 3.0
    # an unused input costs nothing and gets a zero gradient
    g = fluxion.grad(lambda x, y: x * 2.0, argnums=1)(1.0, 5.0)
    assert float(g) == 0.0


def test_vjp_jvp_identity():
    rng = np.random.RandomState(0)
    w = rng.randn(4, 3).astype(np.float32)

    def f(x, b):
        return jnp.tanh(x @ w + b) * jnp.sum(x)

    x = rng.randn(2, 4).astype(np.float32)
    b = rng.randn(3).astype(np.float32)
    tx = rng.randn(2, 4).astype(np.float32)
    tb = rng.randn(3).astype(np.float32)
    y, ty = fluxion.jvp(f, (x, b), (tx, tb))
    ct = rng.randn(*y.shape).astype(np.float32)
    _, f_vjp = fluxion.vjp(f, x, b)
    cx, cb = f_vjp(ct)
    lhs = np.sum(np.asarray(cx) * tx) + np.sum(np.asarray(cb) * tb)
    rhs = np.sum(ct * np.asarray(ty))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-4)
    y2, f_lin = fluxion.linearize(f, x, b)
    np.testing.assert_allclose(np.asarray(f_lin(tx, tb)), np.asarray(ty), rtol=1e-5, atol=1e-6)
    assert_close(y2, y, rtol=1e-5, atol=1e-6)


def test_jvp_returns_passed_through_values_as_they_are_like_jax():
    # jax.jvp hands back an output that is an input passed through (or what a custom_jvp rule
    # computed on Python floats) unconverted; a computed output and its tangent are arrays.
    def cases(m, lib):
        cf = lib.custom_jvp(lambda x: x * 2)
        cf.defjvp(lambda p, t: (p[0] * 2, t[0] * 2))
        return [lambda x: x, lambda x: x + 1, lambda x: cf(x), lambda x: cf(x) + 1,
                lambda x: 1 + cf(x), lambda x: (x, x + 1), lambda x: m.asarray(x) + 0,
                lambda x: 5.0]

    for f, g in zip(cases(jnp, fluxion), cases(jnp_ref, jax)):
        ours, ref = fluxion.jvp(f, (2.0,), (3.0,)), jax.jvp(g, (2.0,), (3.0,))
        o_leaves, r_leaves = fluxion.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(ref)
        assert [type(o) is float for o in o_leaves] == [type(r) is float for r in r_leaves]
        for o, r in zip(o_leaves, r_leaves):
            assert_close(np.asarray(o), np.asarray(r))


def test_linearized_function_is_a_partial_pytree_like_jax():
    # jax.linearize returns a tree_util.Partial over the residuals, so the function can leave
    # jit and vmap (equinox's test_speed_buffer_while returns one from filter_jit).
    def lin_fns(m, xla_map):
        f = lambda x: m.sin(x) * 2.0
        y, fl = xla_map.linearize(f, 1.0)
        from_jit = xla_map.jit(lambda x: xla_map.linearize(m.sin, x)[1])(1.0)
        from_vmap = xla_map.vmap(lambda x: xla_map.linearize(m.sin, x)[1])(m.arange(3.0))
        return fl, from_jit, from_vmap

    ours, ref = lin_fns(jnp, fluxion), lin_fns(jnp_ref, jax)
    for o, r in zip(ours, ref):
        assert type(o).__name__ == type(r).__name__ == "Partial"
        assert isinstance(o, fluxion.tree_util.Partial)
        # the leaves are the residuals (how many is the linearization's business)
        assert all(isinstance(leaf, fluxion.Array) for leaf in fluxion.tree_util.tree_leaves(o))
        assert fluxion.tree_util.tree_leaves(o)
    assert_close(ours[0](3.0), ref[0](3.0), rtol=1e-6)
    assert_close(ours[1](2.0), ref[1](2.0), rtol=1e-6)
    assert_close(fluxion.vmap(lambda f, t: f(t))(ours[2], np.ones(3, np.float32)),
                 jax.vmap(lambda f, t: f(t))(ref[2], np.ones(3, np.float32)), rtol=1e-6)
    # the tangents still have to match the primals' structure and shapes
    with pytest.raises(TypeError):
        ours[0](1.0, 2.0)
    with pytest.raises(ValueError):
        ours[0](np.ones(3, np.float32))


def test_jacobians_and_hessian_match_jax():
    x = np.array([0.5, -1.0, 2.0], np.float32)
    f = lambda x: jnp.sin(x) * jnp.sum(x ** 2)
    fr = lambda x: jnp_ref.sin(x) * jnp_ref.sum(x ** 2)
    # under jit: one compile each instead of many eager primitives
    assert_close(fluxion.jit(fluxion.jacfwd(f))(x), jax.jacfwd(fr)(x), rtol=1e-5, atol=1e-5)
    assert_close(fluxion.jit(fluxion.jacrev(f))(x), jax.jacrev(fr)(x), rtol=1e-5, atol=1e-5)
    assert_close(fluxion.jacobian(f)(x), jax.jacobian(fr)(x), rtol=1e-5, atol=1e-5)
    h = lambda x: jnp.sum(jnp.exp(x) * x[0])
    hr = lambda x: jnp_ref.sum(jnp_ref.exp(x) * x[0])
    assert_close(fluxion.jit(fluxion.hessian(h))(x), jax.hessian(hr)(x), rtol=1e-4, atol=1e-4)
    # forward-over-reverse Hessian-vector product
    v = np.array([1.0, 0.5, -2.0], np.float32)
    hvp = fluxion.jvp(fluxion.grad(h), (x,), (v,))[1]
    hvp_r = jax.jvp(jax.grad(hr), (x,), (v,))[1]
    assert_close(hvp, hvp_r, rtol=1e-4, atol=1e-4)


def test_linear_transpose():
    m = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    f_t = fluxion.linear_transpose(lambda x: m @ x, np.zeros(3, np.float32))
    (ct,) = f_t(np.ones(2, np.float32))
    assert_close(ct, m.T @ np.ones(2, np.float32), rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- jit composition

def test_jit_compositions_stay_calls():
    f = fluxion.jit(tanh_like)
    assert_close(fluxion.grad(f)(1.0), np.float32(0.4199743), rtol=1e-6)
    assert_close(fluxion.jit(fluxion.grad(f))(1.0), np.float32(0.4199743), rtol=1e-6)
    assert_close(fluxion.grad(fluxion.grad(fluxion.grad(f)))(1.0), np.float32(0.62162673),
                 rtol=1e-5)
    _, t = fluxion.jvp(f, (1.0,), (1.0,))
    assert_close(t, np.float32(0.4199743), rtol=1e-6)
    text = str(fluxion.make_jaxpr(fluxion.grad(f))(1.0))
    # forward and backward are one call each; nothing of tanh_like is inlined
    assert text.count("jit[") == 2
    assert "exp" not in text.split("jit[")[0]


def test_readme_mlp_jit_grad_matches_jax():
    rng = np.random.RandomState(0)
    sizes = [784, 512, 512, 10]
    params = [(rng.randn(m, n).astype(np.float32) * 0.05, rng.randn(n).astype(np.float32) * 0.05)
              for m, n in zip(sizes[:-1], sizes[1:])]
    x = rng.randn(8, 784).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.randint(0, 10, 8)]

    def make(np_):
        def predict(params, inputs):
            for w, b in params:
                outputs = np_.dot(inputs, w) + b
                inputs = np_.tanh(outputs)
            return outputs

        def loss(params, inputs, targets):
            preds = predict(params, inputs)
            return np_.sum((preds - targets) ** 2)
        return loss

    ours = fluxion.jit(fluxion.grad(make(jnp)))(params, x, y)
    theirs = jax.jit(jax.grad(make(jnp_ref)))(params, x, y)
    for (gw, gb), (rw, rb) in zip(ours, theirs):
        assert_close(gw, rw, rtol=2e-4, atol=2e-5)
        assert_close(gb, rb, rtol=2e-4, atol=2e-5)
    eager = fluxion.grad(make(jnp))(params, x, y)
    for (gw, gb), (rw, rb) in zip(eager, theirs):
        assert_close(gw, rw, rtol=2e-4, atol=2e-5)
        assert_close(gb, rb, rtol=2e-4, atol=2e-5)


# ----------------------------------------------------------------------------- custom rules

def test_custom_jvp_and_vjp_survive_jit():
    @fluxion.custom_jvp
    def f(x):
        return jnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), 2.0 * t

    for g in (fluxion.grad(f), fluxion.grad(fluxion.jit(f)), fluxion.jit(fluxion.grad(f))):
        assert float(g(0.3)) == 2.0
    assert np.isclose(float(f(0.3)), np.sin(0.3))

    @fluxion.custom_vjp
    def h(x, y):
        return x * y

    h.defvjp(lambda x, y: (x * y, (x, y)), lambda res, ct: (ct * res[1] * 10.0, None))
    for g in (fluxion.grad(h, argnums=(0, 1)), fluxion.jit(fluxion.grad(h, argnums=(0, 1))),
              fluxion.grad(fluxion.jit(h), argnums=(0, 1))):
        gx, gy = g(2.0, 3.0)
        assert float(gx) == 30.0 and float(gy) == 0.0


def test_custom_jvp_defjvps_and_nondiff_argnums():
    @fluxion.custom_jvp
    def relu(x):
        return jnp.maximum(x, 0.0)

    relu.defjvps(lambda g, ans, x: jnp.where(x > 0, g, 0.0))
    assert float(fluxion.grad(relu)(0.0)) == 0.0
    assert float(fluxion.grad(relu)(2.0)) == 1.0

    @fluxion.custom_jvp
    def scale(n, x):
        return x * n

    @scale.defjvp
    def scale_jvp(n, primals, tangents):
        return scale(n, primals[0]), tangents[0] * n * 2

    scale.nondiff_argnums = (0,)
    assert float(fluxion.grad(lambda x: scale(3.0, x))(1.0)) == 6.0


def test_custom_gradient_and_closure_convert():
    @fluxion.custom_gradient
    def f(x):
        return x ** 2, lambda g: (g * 10.0,)

    assert float(fluxion.grad(f)(3.0)) == 10.0
    w = jnp.asarray(np.array([1.0, 2.0], np.float32))
    g, consts = fluxion.closure_convert(lambda x: x * w, np.ones(2, np.float32))
    assert np.asarray(g(np.ones(2, np.float32), *consts)).tolist() == [1.0, 2.0]


@pytest.mark.parametrize("policy", [None, "everything", "dots", "names"])
def test_checkpoint_policies(policy):
    pol = {None: None, "everything": fluxion.checkpoint_policies.everything_saveable,
           "dots": fluxion.checkpoint_policies.dots_saveable,
           "names": fluxion.checkpoint_policies.save_only_these_names("h")}[policy]
    w = np.random.RandomState(0).randn(3, 3).astype(np.float32)

    def layer(x):
        h = fluxion.checkpoint_name(jnp.sin(x @ w), "h")
        return jnp.sum(jnp.tanh(h) ** 2)

    def ref(x):
        return jnp_ref.sum(jnp_ref.tanh(jnp_ref.sin(x @ w)) ** 2)

    x = np.array([0.1, 0.2, -0.3], np.float32)
    f = fluxion.checkpoint(layer, policy=pol)
    assert_close(fluxion.grad(f)(x), jax.grad(ref)(x), rtol=1e-5, atol=1e-6)
    assert_close(fluxion.jit(fluxion.grad(f))(x), jax.grad(ref)(x), rtol=1e-5, atol=1e-6)
    assert_close(fluxion.grad(fluxion.jit(f))(x), jax.grad(ref)(x), rtol=1e-5, atol=1e-6)


def test_checkpoint_recomputes_in_backward():
    f = fluxion.checkpoint(lambda x: jnp.sin(jnp.sin(x)))
    text = str(fluxion.make_jaxpr(fluxion.grad(f))(1.0))
    assert text.count("sin") == 3  # two in the forward pass, one recomputed
    g = fluxion.checkpoint(lambda x: jnp.sin(jnp.sin(x)),
                           policy=fluxion.checkpoint_policies.everything_saveable)
    assert str(fluxion.make_jaxpr(fluxion.grad(g))(1.0)).count("sin") == 2


def test_stop_gradient():
    assert float(fluxion.grad(lambda x: x * lax.stop_gradient(x))(3.0)) == 3.0
    assert float(fluxion.jit(fluxion.grad(lambda x: x * lax.stop_gradient(x ** 2)))(3.0)) == 9.0


# ----------------------------------------------------------------------------- errors

def test_error_non_scalar_output():
    def vec(x):
        return x * 2.0
    with pytest.raises(TypeError, match=r"vec.*shape \(3,\)"):
        fluxion.grad(vec)(np.ones(3, np.float32))


def test_error_integer_input():
    def f(n):
        return n * 2.0
    with pytest.raises(TypeError, match=r"grad of f.*int32.*allow_int"):
        fluxion.grad(f)(3)


def test_error_non_array_return():
    def f(x):
        return "hello"
    with pytest.raises(TypeError, match=r"f.*str"):
        fluxion.grad(f)(1.0)


def test_error_argnums_out_of_range():
    def f(x):
        return x
    with pytest.raises(TypeError, match=r"grad of f.*argnums=5"):
        fluxion.grad(f, argnums=5)(1.0)


def test_error_custom_jvp_wrong_tangent_shape():
    @fluxion.custom_jvp
    def f(x):
        return jnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        return f(primals[0]), jnp.ones(3)

    with pytest.raises(TypeError, match=r"custom_jvp rule of f.*f32\[\].*f32\[3\]"):
        fluxion.grad(f)(1.0)


def test_error_custom_vjp_bwd_wrong_structure():
    @fluxion.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, (x, y)), lambda res, ct: (ct,))
    with pytest.raises(ValueError, match=r"custom_vjp bwd rule of f.*length 2.*length 1"):
        fluxion.grad(f)(1.0, 2.0)


def test_indexing_gather_scatter_dynamic_slice_grads_match_jax():
    x = np.array([0.3, -0.7, 1.2, 2.0], np.float32)

    def f(x, np_):
        a = x[0] * x[np.array([0, 2, 2])].sum()
        b = x.at[1].set(5.0).sum() * x[1]
        c = x.at[2].add(x[0]).prod()
        return a + b + c

    assert_close(fluxion.grad(lambda x: f(x, jnp))(x), jax.grad(lambda x: f(x, jnp_ref))(x),
          rtol=1e-5, atol=1e-6)
    check_grads(lambda x: f(x, jnp), (x,), order=1, atol=3e-2, rtol=3e-2)
    i = np.int32(1)
    g = fluxion.jit(fluxion.grad(
        lambda x, i: lax.dynamic_update_slice(x, x[:2] * 3, (i,)).sum() * x[i]))(x, i)
    r = jax.jit(jax.grad(
        lambda x, i: jax.lax.dynamic_update_slice(x, x[:2] * 3, (i,)).sum() * x[i]))(x, i)
    assert_close(g, r, rtol=1e-5, atol=1e-6)


def test_where_and_clamp_rules_use_true_zeros():
    # an inf cotangent/tangent in the unselected branch must not turn into NaN (inf * 0)
    inf = np.inf
    sel = np.array([True, False])
    w = np.array([1.0, inf], np.float32)
    ours = fluxion.grad(lambda x: (jnp.where(sel, x, 0.0) * w).sum())(np.ones(2, np.float32))
    theirs = jax.grad(lambda x: (jnp_ref.where(sel, x, 0.0) * w).sum())(np.ones(2, np.float32))
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    t = np.array([inf, 1.0, inf], np.float32)
    ours = fluxion.jvp(lambda x: fluxion.lax.clamp(0.0, x, 1.0), (x,), (t,))[1]
    theirs = jax.jvp(lambda x: jax.lax.clamp(0.0, x, 1.0), (x,), (t,))[1]
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_per_example_weight_grads_are_built_in_their_final_layout():
    # vmap(grad) of x @ w: the per-example weight gradients are outer products (no sums), so the
    # transpose rule computes them directly as (batch, in, out) instead of transposing the result
    rng = np.random.default_rng(0)
    w = rng.standard_normal((5, 3)).astype(np.float32)
    xs = rng.standard_normal((4, 1, 5)).astype(np.float32)

    def make(np_, api):
        return api.vmap(api.grad(lambda w, x: np_.sum(np_.tanh(np_.dot(x, w)) ** 2)), (None, 0))

    ours = make(jnp, fluxion)(w, xs)
    assert_close(ours, make(jnp_ref, jax)(w, xs), rtol=1e-5, atol=1e-6)
    prog = fluxion.make_jaxpr(make(jnp, fluxion))(w, xs)
    assert ours.shape == (4, 5, 3)
    assert not [e for e in prog.program.eqns if e.prim.name == "transpose"
                and e.outputs[0].aval.shape == (4, 5, 3)]


@pytest.mark.parametrize("jac", ["jacfwd", "jacrev"])
def test_jacobians_of_pytrees_argnums_and_aux_match_jax(jac):
    def f(p, x, k):
        y = {"a": p["w"] * jnp.sin(x), "b": (p["w"] ** 2).sum() * x[0]}
        return y, k * 2

    def fr(p, x, k):
        y = {"a": p["w"] * jnp_ref.sin(x), "b": (p["w"] ** 2).sum() * x[0]}
        return y, k * 2

    p = {"w": np.arange(1.0, 4.0, dtype=np.float32)}
    x = np.linspace(0.1, 0.7, 3).astype(np.float32)
    for argnums in (0, (0, 1), 1):
        ours = getattr(fluxion, jac)(f, argnums=argnums, has_aux=True)(p, x, 3)
        theirs = getattr(jax, jac)(fr, argnums=argnums, has_aux=True)(p, x, 3)
        assert jax.tree_util.tree_structure(ours) == jax.tree_util.tree_structure(theirs)
        for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
            assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_jacobian_functions_wrap_the_function_like_jax():
    # jacfwd/jacrev/hessian carry the function's name and __wrapped__, as JAX's (equinox walks
    # __wrapped__ to warn about a transformed Module stored as a field)
    def energy(x):
        return jnp.sum(x ** 3)

    for name in ["jacfwd", "jacrev", "hessian", "grad", "value_and_grad"]:
        ours, ref = getattr(fluxion, name)(energy), getattr(jax, name)(energy)
        assert ours.__name__ == ref.__name__ == "energy"
        chain = []
        f = ours
        while hasattr(f, "__wrapped__"):
            f = f.__wrapped__
            chain.append(f)
        assert chain[-1] is energy

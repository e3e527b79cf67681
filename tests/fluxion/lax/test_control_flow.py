"""Structured control flow (cond, switch, while_loop, fori_loop, scan, map, associative_scan,
custom_root, custom_linear_solve) against real JAX: values, vmap, jit, nesting, programs, errors.
"""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from _compare import assert_same

import fluxion
import fluxion.numpy as fjnp
from fluxion import lax as flax
from fluxion.core.errors import ConcretizationTypeError

# Each test function is written once against a (lax, numpy, api) triple and run on both sides.
F = (flax, fjnp, fluxion)
J = (jax.lax, jjnp, jax)


def both(fn, *args, rtol=None, atol=None, **kw):
    ours = fn(*F)(*args, **kw)
    theirs = fn(*J)(*args, **kw)
    assert_same(ours, theirs, rtol=rtol, atol=atol)
    return ours


X = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
V = np.array([0.5, -1.0, 2.0, 0.25, 3.0], np.float32)


# ----------------------------------------------------------------------------- cond / switch

def _cond_tree(L, N, api):
    y = N.ones(3, N.float32)

    def f(p, x):
        return L.cond(p, lambda x: {"a": x + y, "b": (x * 2.0, 1.0)},
                      lambda x: {"a": x - 1.0, "b": (N.sin(x), x.sum())}, x)
    return f


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("pred", [True, False, 3, -2.5])
def test_cond_values(jit, pred):
    def make(L, N, api):
        f = _cond_tree(L, N, api)
        return api.jit(f) if jit else f
    both(make, pred, X[0])


def test_cond_weak_type_from_false_branch():
    both(lambda L, N, api: lambda x: L.cond(True, lambda: 1.0, lambda: N.float32(2) * x), 1.0)
    both(lambda L, N, api: lambda x: L.cond(True, lambda: N.float32(2) * x, lambda: 1.0), 1.0)


@pytest.mark.parametrize("index", [-3, 0, 1, 2, 9])
def test_switch_clamps(index):
    def make(L, N, api):
        fs = [lambda x: x + 1.0, lambda x: x * 3.0, lambda x: N.cos(x)]
        return api.jit(lambda i, x: L.switch(i, fs, x))
    both(make, index, V)


def test_switch_single_branch_and_operand_keyword():
    both(lambda L, N, api: lambda x: L.switch(5, [lambda x: x * 2.0], x), V)
    both(lambda L, N, api: lambda x: L.cond(True, lambda x: x, lambda x: -x, operand=x), V)


@pytest.mark.parametrize("pred", [True, False])
def test_operand_keyword_none_is_an_operand(pred):
    # optax's conditionally_mask / apply_if_finite: lax.cond(p, do, reject, operand=None) calls the
    # chosen branch with None (a one-argument branch), as JAX does; None is not "no operand".
    def make(L, N, api):
        def f(x):
            a = L.cond(pred, lambda u: (x * 2.0, u), lambda u: (-x, u), operand=None)
            b = L.switch(1, [lambda u: x + 1.0, lambda u: x * 3.0], operand=None)
            c = api.jit(lambda x: L.cond(x[0] > 0, lambda _: x, lambda _: -x, operand=None))(x)
            assert a[1] is None
            return a[0], b, c
        return f
    both(make, V)
    with pytest.raises(TypeError, match="operand"):
        flax.cond(True, lambda x: x, lambda x: x, 1.0, operand=None)


# ----------------------------------------------------------------------------- while / fori

def test_while_loop_values():
    def make(L, N, api):
        def f(x):
            return L.while_loop(lambda c: c[0] < 10.0, lambda c: (c[0] * 2.0 + 1.0, c[1] + 1), (x, 0))
        return f
    both(make, np.float32(0.5))
    both(lambda L, N, api: api.jit(make(L, N, api)), np.float32(0.5))


def test_while_loop_promotes_weak_init():
    both(lambda L, N, api: lambda: L.while_loop(lambda c: c < 10.0,
                                                lambda c: c + N.float32(1.5), 0))


@pytest.mark.parametrize("bounds", [(0, 5), (2, 7), (5, 2), (np.int32(1), np.int32(4))])
def test_fori_loop_static(bounds):
    lo, hi = bounds
    both(lambda L, N, api: lambda x: L.fori_loop(lo, hi, lambda i, c: c * 1.5 + i, x), np.float32(1))


def test_fori_loop_traced_bounds_and_unroll():
    both(lambda L, N, api: api.jit(lambda n, x: L.fori_loop(0, n, lambda i, c: c + i * x, 0.0)),
         5, np.float32(2))
    both(lambda L, N, api: lambda x: L.fori_loop(0, 7, lambda i, c: c + i * x, 0.0, unroll=3),
         np.float32(2))
    with pytest.raises(ValueError, match="unroll"):
        fluxion.jit(lambda n: flax.fori_loop(0, n, lambda i, c: c + i, 0, unroll=2))(3)


# ----------------------------------------------------------------------------- scan / map

@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("unroll", [1, 2])
def test_scan_pytrees(reverse, unroll):
    def make(L, N, api):
        w = N.asarray(X)

        def body(c, x):
            h, k = c
            h = N.tanh(h * x["a"] + w[0])
            return (h, k + 1), {"y": h.sum(), "z": x["b"] * k}
        return lambda a, b: L.scan(body, (N.zeros(3, N.float32), 0), {"a": a, "b": b},
                                   reverse=reverse, unroll=unroll)
    both(make, np.tile(V[:, None], (1, 3)), V, rtol=1e-6, atol=1e-6)


def test_scan_length_no_xs_and_none_ys():
    both(lambda L, N, api: lambda x: L.scan(lambda c, _: (c * 2.0, None), x, None, length=4),
         np.float32(1.5))
    both(lambda L, N, api: lambda x: L.scan(lambda c, _: (c + 1, c), x, length=0), 3)
    both(lambda L, N, api: api.jit(lambda x: L.scan(lambda c, x: (c + x, c), 0.0, x)), V)


def test_scan_errors_on_lengths():
    with pytest.raises(ValueError, match="disagrees"):
        flax.scan(lambda c, x: (c, x), 0.0, fjnp.ones(3), length=4)
    with pytest.raises(ValueError, match="different leading axis sizes"):
        flax.scan(lambda c, x: (c, x), 0.0, (fjnp.ones(3), fjnp.ones(2)))
    with pytest.raises(ValueError, match="no values to scan"):
        flax.scan(lambda c, x: (c, x), 0.0)


@pytest.mark.parametrize("batch_size", [None, 2, 5, 7])
def test_map(batch_size):
    both(lambda L, N, api: lambda x: L.map(lambda r: (r * 2.0, r.sum()), x, batch_size=batch_size),
         np.tile(V[:, None], (1, 2)))


# ----------------------------------------------------------------------------- associative_scan

@pytest.mark.parametrize("n", [1, 5, 8])
@pytest.mark.parametrize("reverse", [False, True])
def test_associative_scan_add(n, reverse):
    both(lambda L, N, api: api.jit(lambda x: L.associative_scan(L.add, x, reverse=reverse)),
         np.arange(n, dtype=np.int32))


def test_associative_scan_noncommutative_pytree_axis():
    # composition of affine maps x -> a x + b: not commutative
    def make(L, N, api):
        def comb(f, g):
            return (g[0] * f[0], g[0] * f[1] + g[1])
        return api.jit(lambda a, b: L.associative_scan(comb, (a, b), axis=1))
    a = np.linspace(0.5, 1.5, 14).reshape(2, 7).astype(np.float32)
    both(make, a, a[::-1] + 1.0, rtol=1e-6)


# ----------------------------------------------------------------------------- solves

def _newton(f, x):
    for _ in range(8):
        x = x - f(x) / (2.0 * x)
    return x


def test_custom_root_and_linear_solve_values():
    both(lambda L, N, api: lambda a: L.custom_root(lambda x: x * x - a, 1.0, _newton,
                                                   lambda g, y: y / g(1.0)), np.float32(2.0))
    d = np.array([1.0, 2.0, 4.0], np.float32)
    both(lambda L, N, api: lambda b: L.custom_linear_solve(lambda x: d * x, b,
                                                           lambda mv, b: b / d), V[:3])
    both(lambda L, N, api: lambda b: L.custom_linear_solve(
        lambda x: {"u": d * x["u"]}, b, lambda mv, b: {"u": b["u"] / d}, symmetric=True),
        {"u": V[:3]})


# ----------------------------------------------------------------------------- nesting, jit

def test_nested_loops_under_jit():
    def make(L, N, api):
        def f(x):
            def outer(i, c):
                def inner(c2, xi):
                    c2 = L.cond(xi > 1.0, lambda c: c + xi, lambda c: c * 0.5, c2)
                    return c2, c2
                c, ys = L.scan(inner, c, x)
                return c + L.while_loop(lambda k: k < i, lambda k: k + 1, 0) + ys.sum()
            return L.fori_loop(0, 3, outer, N.float32(1.0))
        return api.jit(f)
    both(make, V, rtol=1e-6)


def test_make_jaxpr_shows_nested_programs():
    def f(p, x):
        def body(c, xi):
            return flax.cond(p, lambda c: c + xi, lambda c: c - xi, c), c
        return flax.scan(body, 0.0, x)
    text = str(fluxion.make_jaxpr(f)(True, fjnp.asarray(V)))
    assert "scan[" in text and "jaxpr={ lambda" in text
    assert "cond[" in text and "branches=(" in text
    assert text.count("lambda") == 4  # outer, scan body, two branches
    text = str(fluxion.make_jaxpr(lambda n: flax.fori_loop(0, n, lambda i, c: c + i, 0))(3))
    assert "while[" in text and "body_jaxpr={ lambda" in text and "cond_jaxpr={ lambda" in text


def test_lowered_text_uses_case_and_while():
    f = fluxion.jit(lambda p, x: flax.cond(p, lambda x: flax.while_loop(
        lambda c: c < 10.0, lambda c: c * 2.0, x), lambda x: x, x))
    text = f.lower(True, 1.0).as_text()
    assert '"stablehlo.case"' in text and '"stablehlo.while"' in text
    assert float(f(True, 1.0)) == 16.0


# ----------------------------------------------------------------------------- vmap

def test_vmap_cond_batched_and_unbatched_predicate():
    def make(L, N, api):
        f = lambda x: L.cond(x.sum() > 1.0, lambda x: x * 2.0, lambda x: x - 1.0, x)
        g = lambda x: L.cond(True, lambda x: x * 2.0, lambda x: x - 1.0, x)
        return lambda xs: (api.vmap(f)(xs), api.vmap(g)(xs))
    both(make, X)


def test_vmap_switch_batched_index():
    def make(L, N, api):
        fs = [lambda x: x + 1.0, lambda x: x * 3.0, lambda x: N.sin(x)]
        return api.vmap(lambda i, x: L.switch(i, fs, x))
    both(make, np.array([0, 1, 2, 7, -1], np.int32), V)


def test_vmap_while_batched_predicate():
    def make(L, N, api):
        def f(x):
            return L.while_loop(lambda c: c[0] < x, lambda c: (c[0] + 1.0, c[1] * 2.0), (0.0, 1.0))
        return api.vmap(f)
    both(make, np.array([0.0, 1.0, 3.5, 2.0], np.float32))
    both(lambda L, N, api: api.vmap(lambda n: L.fori_loop(0, n, lambda i, c: c + i, 0)),
         np.array([3, 5, 0], np.int32))


@pytest.mark.parametrize("in_axes", [(0, None, None), (None, 0, None), (None, None, 0), (1, 0, 0)])
def test_vmap_scan(in_axes):
    def make(L, N, api):
        def f(xs, c0, w):
            return L.scan(lambda c, x: (c * w + x, c), c0, xs)
        return api.vmap(f, in_axes=in_axes)
    xs = {0: X, 1: np.tile(V[:4, None], (1, 3)), None: V[:3]}[in_axes[0]]
    c0 = V[:3] if in_axes[1] == 0 else np.float32(1.0)
    w = V[1:4] if in_axes[2] == 0 else np.float32(0.5)

    both(make, xs, c0, w, rtol=1e-6)


def test_vmap_solves():
    d = np.array([1.0, 2.0, 4.0], np.float32)
    both(lambda L, N, api: api.vmap(lambda b: L.custom_linear_solve(
        lambda x: d * x, b, lambda mv, b: b / d)), X[:, :3])
    both(lambda L, N, api: api.vmap(lambda a: L.custom_root(
        lambda x: x * x - a, 1.0, _newton, lambda g, y: y / g(1.0))), V[[0, 2, 4]])


# ----------------------------------------------------------------------------- errors

def test_branch_structure_mismatch():
    with pytest.raises(TypeError) as e:
        flax.cond(True, lambda x: (x, x), lambda x: x, 1.0)
    msg = str(e.value)
    assert "same pytree structure" in msg and "true_fun" in msg and "false_fun" in msg
    assert "tuple of length 2" in msg and "pytree leaf" in msg


def test_branch_type_mismatch_by_path():
    with pytest.raises(TypeError) as e:
        flax.cond(True, lambda x: {"a": x, "b": x}, lambda x: {"a": x, "b": x.astype(fjnp.int32)},
                  1.0)
    msg = str(e.value)
    assert "['b']" in msg and "f32[]" in msg and "i32[]" in msg
    with pytest.raises(TypeError, match=r"shapes do not match"):
        flax.switch(0, [lambda x: x, lambda x: fjnp.stack([x, x])], 1.0)


def test_carry_type_change_names_path_and_types():
    with pytest.raises(TypeError) as e:
        flax.scan(lambda c, x: ({"a": c["a"].astype(fjnp.int32)}, x), {"a": 1.0}, fjnp.ones(2))
    msg = str(e.value)
    assert "c['a']" in msg and "f32[]" in msg and "i32[]" in msg
    with pytest.raises(TypeError) as e:
        flax.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, fjnp.zeros(2)), (0, fjnp.zeros(3)))
    msg = str(e.value)
    assert "s[1]" in msg and "f32[3]" in msg and "f32[2]" in msg
    with pytest.raises(TypeError, match="same pytree structure"):
        flax.while_loop(lambda s: True, lambda s: (s, s), 0)


@pytest.mark.parametrize("bad", [np.ones(2, bool), [True], np.complex64(1)])
def test_bad_predicates(bad):
    with pytest.raises(TypeError):
        flax.cond(bad, lambda: 1.0, lambda: 2.0)
    with pytest.raises(TypeError, match="boolean scalar"):
        flax.while_loop(lambda c: c, lambda c: c + 1, 0)
    with pytest.raises(TypeError, match="integer"):
        flax.switch(1.5, [lambda: 1.0, lambda: 2.0])


def test_python_control_flow_suggests_lax():
    def f(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(ConcretizationTypeError, match="lax.cond"):
        fluxion.jit(f)(1.0)

    def g(x):
        while x < 10:
            x = x * 2
        return x

    with pytest.raises(ConcretizationTypeError, match="lax.while_loop"):
        fluxion.jit(g)(1.0)


# ----------------------------------------------------------------------------- autodiff

def _loss_cond(L, N, api):
    y = N.float32(3.0)

    def f(x):
        a = L.cond(x > 1.0, lambda x: N.sin(x) * y, lambda x: x * x + 1.0, x)
        b = L.switch(2, [lambda x: x, lambda x: 2.0 * x, lambda x: N.cos(x) * x], x)
        return a + b
    return f


def _loss_scan(L, N, api):
    def f(w, xs):
        def outer(c, x):
            c2, ys = L.scan(lambda d, z: (N.sin(d * w + z), d * z), c, xs * x, reverse=True)
            c3 = L.cond(x > 0, lambda: c2 * w, lambda: c2 + ys.sum())
            return c3, ys.sum()
        c, ys = L.scan(outer, 0.3, xs, unroll=2)
        return c + ys.sum() + L.fori_loop(0, 3, lambda i, c: c * w + i, w)
    return f


@pytest.mark.parametrize("x", [0.5, 2.0])
def test_grad_and_jvp_cond_switch(x):
    both(lambda L, N, api: api.grad(_loss_cond(L, N, api)), np.float32(x), rtol=1e-6)
    both(lambda L, N, api: lambda x: api.jvp(_loss_cond(L, N, api), (x,), (np.float32(1),)),
         np.float32(x), rtol=1e-6)


def test_grad_nested_scans_jit_and_vmap():
    both(lambda L, N, api: api.jit(api.grad(_loss_scan(L, N, api), argnums=(0, 1))),
         np.float32(0.7), V, rtol=2e-5, atol=1e-5)
    both(lambda L, N, api: api.jit(api.vmap(api.grad(_loss_scan(L, N, api)), (0, None))),
         V[:3], V, rtol=2e-5, atol=1e-5)


def test_jvp_vjp_transposition_identity_through_scan():
    f = fluxion.jit(_loss_scan(flax, fjnp, fluxion))
    g = lambda xs: fjnp.stack([f(fjnp.float32(0.7), xs), f(fjnp.float32(1.1), xs * 2)])
    t = fjnp.asarray(V[::-1].copy())
    _, jv = fluxion.jvp(g, (fjnp.asarray(V),), (t,))
    _, pullback = fluxion.vjp(g, fjnp.asarray(V))
    ct = fjnp.asarray(np.array([0.3, -1.2], np.float32))
    (vj,) = pullback(ct)
    np.testing.assert_allclose(float((ct * jv).sum()), float((vj * t).sum()), rtol=1e-4)


def test_scan_grad_with_carry_reset():
    # the first carry's tangent is nonzero at init but the body resets it to a constant
    def make(L, N, api):
        def f(w, xs):
            def body(c, x):
                a, b = c
                return (2.0 * N.ones_like(a), b * x + a * w), a * b
            (a, b), ys = L.scan(body, (w * 1.0, N.float32(0.5)), xs)
            return b + ys.sum()
        return api.grad(f, argnums=(0, 1))
    both(make, np.float32(0.7), V, rtol=1e-6)


def _ckpt_scan(L, N, api, policy=None):
    def body(c, x):
        return N.sin(c) * x + N.cos(c * x), c ** 2

    def f(c0, xs):
        b = api.checkpoint(body) if policy is None else api.checkpoint(body, policy=policy)
        c, ys = L.scan(b, c0, xs)
        return c + ys.sum()
    return f


@pytest.mark.parametrize("policy", [None, "dots_saveable", "everything_saveable"])
def test_checkpoint_inside_scan_body(policy):
    def make(L, N, api):
        pol = None if policy is None else getattr(api.checkpoint_policies, policy)
        return api.jit(api.grad(_ckpt_scan(L, N, api, pol), argnums=(0, 1)))
    both(make, np.float32(0.3), V, rtol=1e-6)


def test_checkpoint_saves_only_inputs_as_scan_residuals():
    # With the body rematerialised, the forward scan's residuals are the body's inputs (the carry
    # and x per step), not its intermediate sin/cos values; the backward scan recomputes them.
    prog = fluxion.make_jaxpr(fluxion.grad(_ckpt_scan(flax, fjnp, fluxion)))(np.float32(0.3), V)
    fwd = [e for e in prog.program.eqns if e.prim.name == "scan"][0]
    assert len(fwd.outputs) == 1 + 1 + 2  # carry, ys, and two residual stacks (c, x)


def test_nested_checkpointed_scans_under_vmap():
    def make(L, N, api):
        def inner(c, x):
            return c * N.sin(x) + x, None

        def outer(c, row):
            c, _ = L.scan(api.checkpoint(inner), c, row)
            return c, c
        return api.vmap(api.grad(lambda c, X: L.scan(outer, c, X)[1].sum()), (0, None))
    both(make, np.arange(3, dtype=np.float32), 0.5 + X.reshape(3, 2), rtol=1e-5)


def test_while_loop_forward_mode_and_reverse_error():
    def make(L, N, api):
        f = lambda x: L.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * x), (0, 1.0))[1]
        return lambda x: (api.jvp(f, (x,), (np.float32(1),)), api.jacfwd(f)(x))
    both(make, np.float32(0.9), rtol=1e-6)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        fluxion.grad(lambda x: flax.while_loop(lambda c: c < 5.0, lambda c: c * x, 1.0))(2.0)
    g = fluxion.jit(lambda x, n: flax.fori_loop(0, n, lambda i, c: c * x, 1.0))
    with pytest.raises(ValueError, match="fori_loop with static"):
        fluxion.grad(g)(2.0, 3)


def test_grad_solves():
    both(lambda L, N, api: api.grad(lambda a: L.custom_root(
        lambda x: x * x - a, 1.0, _newton, lambda g, y: y / g(1.0))), np.float32(2.0))
    d = np.array([1.0, 2.0, 4.0], np.float32)

    def make(sym):
        def mk(L, N, api):
            def f(d, b):
                return L.custom_linear_solve(lambda x: d * x, b, lambda mv, b: b / d,
                                             lambda vm, b: b / d, symmetric=sym).sum()
            return api.grad(f, argnums=(0, 1))
        return mk
    both(make(False), d, V[:3])
    both(make(True), d, V[:3])
    with pytest.raises(TypeError, match="transpose_solve required"):
        fluxion.grad(lambda b: flax.custom_linear_solve(lambda x: d * x, b,
                                                        lambda mv, b: b / d).sum())(V[:3])


# ----------------------------------------------------------------------------- eager staging cache

_SCALE = 1.0


def _scaled_body(c, x):
    return c * _SCALE + x, c


def test_eager_staging_is_cached_per_function(monkeypatch):
    from fluxion.lax.control_flow import common as cf
    calls = []
    real = cf.trace_to_program
    monkeypatch.setattr(cf, "trace_to_program", lambda *a, **k: calls.append(1) or real(*a, **k))
    xs = fjnp.ones(4)
    for _ in range(3):
        flax.scan(_scaled_body, 0.0, xs)
        flax.fori_loop(0, 3, lambda i, c: c, 1.0)  # a new lambda each time: staged each time
    assert len(calls) == 1 + 3
    flax.scan(_scaled_body, 0.0, fjnp.ones(5))  # another length: the same body program
    assert len(calls) == 4
    flax.scan(_scaled_body, fjnp.zeros(2), fjnp.ones((5, 2)))  # new avals: staged again
    assert len(calls) == 5


def test_eager_staging_cache_sees_rebound_globals_and_closures():
    global _SCALE
    xs = np.ones(3, np.float32)
    try:
        _SCALE = 1.0
        assert float(flax.scan(_scaled_body, 1.0, xs)[0]) == 4.0
        _SCALE = 2.0  # JAX would reuse its cached trace here and print 4.0 again
        assert float(flax.scan(_scaled_body, 1.0, xs)[0]) == 15.0
    finally:
        _SCALE = 1.0
    k = 2.0

    def body(i, c):
        return c * k

    assert float(flax.fori_loop(0, 3, body, 1.0)) == 8.0
    k = 3.0
    assert float(flax.fori_loop(0, 3, body, 1.0)) == 27.0


def test_eager_staging_cache_does_not_keep_functions_alive():
    import gc
    import weakref

    def make():
        w = fjnp.arange(3.0)

        def body(i, c):
            return c + w
        return body

    f = make()
    flax.fori_loop(0, 2, f, fjnp.zeros(3))
    ref = weakref.ref(f)
    del f
    gc.collect()
    assert ref() is None


def test_cond_forwards_untouched_operands_like_jax():
    # An operand every branch returns unchanged is returned around the cond (JAX's forwarding):
    # it stays unbatched under vmap with a batched predicate (flax's nnx.cond passthrough).
    def f(lib, p, c):
        return lib.lax.cond(p > 0, lambda c: (c, c + 1), lambda c: (c, c * 2), c)

    ours = fluxion.vmap(lambda p, c: f(fluxion, p, c), in_axes=(0, None), out_axes=(None, 0))(
        fjnp.arange(3), 5.0)
    ref = jax.vmap(lambda p, c: f(jax, p, c), in_axes=(0, None), out_axes=(None, 0))(
        jjnp.arange(3), 5.0)
    assert_same(ours, ref)
    assert str(fluxion.make_jaxpr(lambda p, c: f(fluxion, p, c))(1, 1.0)) == str(
        jax.make_jaxpr(lambda p, c: f(jax, p, c))(1, 1.0))
    assert_same(flax.cond(True, lambda x: x, lambda x: x, 1.0),
                jax.lax.cond(True, lambda x: x, lambda x: x, 1.0))
    x = fjnp.ones(2)
    assert flax.cond(False, lambda v: v, lambda v: v, x) is x
    # a value closed over (not an operand) is not forwarded: batched, as in JAX
    with pytest.raises(ValueError):
        fluxion.vmap(lambda p: flax.cond(p > 0, lambda: x, lambda: x), out_axes=None)(
            fjnp.arange(3))


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("which", ["cond", "switch"])
def test_branch_given_twice_is_traced_once_like_jax(which, jit):
    seen = []
    for api, lax in ((fluxion, flax), (jax, jax.lax)):
        calls: list[str] = []

        def f(x, calls=calls):
            calls.append("f")
            return x * 2

        def g(x, calls=calls):
            calls.append("g")
            return x * 3

        def run(x, lax=lax, f=f, g=g):
            if which == "cond":
                return lax.cond(x > 0, f, f, x)
            return lax.switch(1, [f, g] * 3, x)

        out = (api.jit(run) if jit else run)(np.float32(2))
        seen.append((calls, float(out)))
    assert seen[0] == seen[1] == ((["f"], 4.0) if which == "cond" else (["f", "g"], 6.0))

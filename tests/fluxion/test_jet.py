"""fluxion.experimental.jet against jax.experimental.jet (jax 0.10.2), and against nested jvp.

Each primitive's jet rule performs JAX's operations in JAX's order, so under ``jit`` (both
systems compile the whole series computation with the same XLA) the primal and every term are
compared for equality to the bit. Run eagerly they differ by a few ulps: JAX's ``jnp``
functions are jitted, so JAX's jet of ``jnp.exp`` compiles the rule's recurrence as one fused
XLA program, where Fluxion (whose ``jnp.exp`` binds ``exp`` directly) runs it operation by
operation (it then equals the same recurrence written out with ``jax.lax`` ops); there the
comparison is to 4e-6 relative in float32.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion.experimental import jet as fjet

jax = pytest.importorskip("jax")
jjet = pytest.importorskip("jax.experimental.jet")

X = np.array([0.3, 0.7, 1.2], np.float32)
ON_CPU = os.environ.get("FLUXION_TEST_PLATFORM", "cpu") == "cpu"


def _same_as_reference(ours, ref):
    """Bit-equal with jax on the CPU, where both run; elsewhere (a TPU, the reference still on
    the CPU) within the platform's float tolerance (tests/conftest.py widens assert_allclose):
    the chip's exp/sin/lgamma and matmul passes round differently."""
    if ON_CPU:
        np.testing.assert_array_equal(ours, ref)
    else:
        np.testing.assert_allclose(np.asarray(ours), np.asarray(ref))
SERIES = (np.array([1.0, 0.5, -0.2], np.float32), np.array([0.1, 0.2, 0.3], np.float32),
          np.array([0.3, -0.1, 0.2], np.float32))
IDX = np.array([2, 0, 1, 1])

# name -> a program written once for either system (``m`` is fluxion or jax)
PROGRAMS = {
    "exp": lambda m: m.numpy.exp,
    "log": lambda m: m.numpy.log,
    "sin": lambda m: m.numpy.sin,
    "cos": lambda m: m.numpy.cos,
    "tanh": lambda m: m.numpy.tanh,
    "sinh_cosh": lambda m: lambda x: m.numpy.sinh(x) * m.numpy.cosh(x),
    "logistic": lambda m: m.nn.sigmoid,
    "sqrt_rsqrt": lambda m: lambda x: m.numpy.sqrt(x) + m.lax.rsqrt(x),
    "pow": lambda m: lambda x: x ** 2.5 + m.lax.pow(x, x),
    "integer_pow": lambda m: lambda x: x ** 3 + m.lax.integer_pow(x, -2) + x ** 0,
    "erf_erfc_inv": lambda m: lambda x: (m.lax.erf(x) + m.lax.erfc(x / 2)
                                         + m.lax.erf_inv(x / 2)),
    "div": lambda m: lambda x: x / (1 + x * x) - 2.0 / x,
    "expm1_log1p": lambda m: lambda x: m.numpy.expm1(x) * m.numpy.log1p(x),
    "inverse_hyperbolic": lambda m: lambda x: (m.numpy.arcsinh(x) + m.numpy.arccosh(1 + x)
                                               + m.numpy.arctanh(x / 2)),
    "atan2": lambda m: lambda x: m.numpy.arctan2(x, 1 + x),
    "rem_abs_sign": lambda m: lambda x: (m.lax.rem(x * 3, 1.0 + x) + m.numpy.abs(x - 0.7)
                                         + m.numpy.floor(x) * m.numpy.sign(x)),
    "max_min": lambda m: lambda x: m.numpy.maximum(x, 0.7) + m.numpy.minimum(x, m.numpy.cos(x)),
    "select_n": lambda m: lambda x: m.numpy.where(x > 0.5, x ** 2, m.numpy.sin(x)),
    "dot_general": lambda m: lambda x: m.numpy.dot(m.numpy.outer(x, m.numpy.exp(x)), x),
    "reductions": lambda m: lambda x: (m.numpy.sum(x ** 2) * m.numpy.max(m.numpy.sin(x))
                                       + m.numpy.min(x) + m.numpy.mean(x)),
    "cumsum": lambda m: m.numpy.cumsum,
    "cummax": lambda m: lambda x: m.lax.cummax(3 * x),
    "cummin": lambda m: lambda x: m.lax.cummin(x, reverse=True),
    "cumprod": lambda m: lambda x: m.numpy.cumprod(3 * x),
    "structural": lambda m: lambda x: 2 * m.numpy.concatenate(
        [x[::-1], m.numpy.pad(x, 1)[1:3]]).reshape(5, 1)[1:].T.astype(np.float32),
    "gather_scatter": lambda m: lambda x: (m.numpy.sum(x[IDX]) * x[1]
                                           + x.at[np.array([0, 0, 2])].add(x ** 2)),
    "dynamic_slices": lambda m: lambda x: m.lax.dynamic_update_slice(
        x, m.lax.dynamic_slice(x, (1,), (2,)) ** 2, (0,)),
    "complex": lambda m: lambda x: m.numpy.real(m.lax.complex(x, x * x) * (1 + 2j)),
    "jit_call": lambda m: m.jit(lambda x: m.numpy.exp(m.numpy.sin(x))),
    "gelu": lambda m: m.nn.gelu,
    "silu": lambda m: m.nn.silu,
    "stop_gradient": lambda m: lambda x: x * m.lax.stop_gradient(x),
    "clamp": lambda m: lambda x: m.lax.clamp(0.5 * m.numpy.ones_like(x), x * x, 1.0 + x),
    "reduce_window_sum": lambda m: lambda x: m.lax.reduce_window(
        m.numpy.exp(x), 0.0, m.lax.add, (2,), (1,), "VALID"),
}


def _terms(out):
    primal, series = out
    return [np.asarray(primal)] + [np.asarray(t) for t in series]


# Fluxion's associative_scan (which the cumprod rule jets, as JAX's) combines in another order
# than JAX's: under jit its third term is 1 ulp away.
NOT_BIT_EQUAL_UNDER_JIT = {"cumprod"}


def _both(name, wrap=lambda f, m: f, order=3):
    series = SERIES[:order]
    ours = wrap(lambda x, s: fjet.jet(PROGRAMS[name](fluxion), (x,), (s,)), fluxion)(X, series)
    ref = wrap(lambda x, s: jjet.jet(PROGRAMS[name](jax), (x,), (s,)), jax)(X, series)
    return _terms(ours), _terms(ref)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_vs_jax_bit_equal_under_jit(name):
    ours, ref = _both(name, wrap=lambda f, m: m.jit(f))
    assert len(ours) == len(ref) == 4
    for o, r in zip(ours, ref):
        assert o.dtype == r.dtype and o.shape == r.shape
        if name in NOT_BIT_EQUAL_UNDER_JIT:
            np.testing.assert_allclose(o, r, rtol=4e-7)
        else:
            _same_as_reference(o, r)


@pytest.mark.parametrize("name", ["exp", "tanh", "div", "dot_general", "cumsum", "cumprod",
                                  "gather_scatter", "jit_call", "gelu"])
def test_vs_jax_eager(name):
    ours, ref = _both(name)
    for o, r in zip(ours, ref):
        assert o.dtype == r.dtype and o.shape == r.shape
        np.testing.assert_allclose(o, r, rtol=4e-6, atol=1e-6)


def test_float64_and_weak_types(x64):
    x, s = np.array([0.4, 1.1]), ([np.array([1.0, -0.5])], )
    f = lambda m: lambda x, c: (m.numpy.exp(x) * c, {"k": 3.0, "x": x})  # noqa: E731
    ours = fjet.jet(f(fluxion), (x, 2.0), (s[0], [1.0]))
    ref = jjet.jet(f(jax), (x, 2.0), (s[0], [1.0]))
    flat_o, flat_r = fluxion.tree.leaves(ours), jax.tree.leaves(ref)
    assert len(flat_o) == len(flat_r)
    for o, r in zip(flat_o, flat_r):
        assert np.asarray(o).dtype == np.asarray(r).dtype
        assert getattr(o, "weak_type", None) == getattr(r, "weak_type", None)
        np.testing.assert_allclose(np.asarray(o), np.asarray(r), rtol=1e-14)


def test_unscaled_series_and_fact():
    for k in range(1, 6):
        _same_as_reference(np.asarray(fjet.fact(k)), np.asarray(jjet.fact(k)))
    ours = fjet.jet2(jnp.sin, (X,), (SERIES,))
    ref = jjet.jet2(jax.numpy.sin, (X,), (SERIES,))
    for o, r in zip(_terms(ours), _terms(ref)):
        np.testing.assert_allclose(o, r, rtol=4e-6, atol=1e-7)


def test_terms_are_nested_jvps(x64):
    # along the line x + t v, term k of jet is the k-th directional derivative
    def f(x):
        return jnp.sum(jnp.tanh(jnp.exp(x) / (1 + x ** 2)) * jnp.sin(x))

    x, v = np.array([0.2, -0.4, 0.9]), np.array([0.5, 1.0, -0.3])
    zero = np.zeros_like(v)
    out, terms = fjet.jet(f, (x,), ((v, zero, zero, zero),))

    def directional(g):
        return lambda y: fluxion.jvp(g, (y,), (v,))[1]

    d, expected = f, []
    for _ in range(4):
        d = directional(d)
        expected.append(float(d(x)))
    np.testing.assert_allclose(float(out), float(f(x)), rtol=1e-14)
    np.testing.assert_allclose([float(t) for t in terms], expected, rtol=1e-10)


def test_vmap_and_jit_of_jet():
    xs = np.stack([X, X + 0.5])
    vs = np.stack([SERIES[0], -SERIES[0]])

    def one(mod, jet_fn):
        return lambda x, v: jet_fn(mod.numpy.sin, (x,), ((v, v),))[1][1]

    ours = fluxion.jit(fluxion.vmap(one(fluxion, fjet.jet)))(xs, vs)
    ref = jax.jit(jax.vmap(one(jax, jjet.jet)))(xs, vs)
    _same_as_reference(np.asarray(ours), np.asarray(ref))
    # a jitted function stays one jit call in the jet's program
    program = fluxion.make_jaxpr(lambda x: fjet.jet(PROGRAMS["jit_call"](fluxion), (x,),
                                                    ((x, x),)))(X)
    assert [e.primitive.name for e in program.jaxpr.eqns if e.primitive.name == "jit"] == ["jit"]


def test_errors_as_jax():
    with pytest.raises(KeyError) as ours:
        fjet.jet(lambda x: fluxion.lax.while_loop(lambda c: c < 3.0, lambda c: c + 1, x),
                 (0.5,), ((1.0,),))
    with pytest.raises(KeyError) as ref:
        jjet.jet(lambda x: jax.lax.while_loop(lambda c: c < 3.0, lambda c: c + 1, x),
                 (0.5,), ((1.0,),))
    assert str(ours.value) == str(ref.value) == "while"
    with pytest.raises(KeyError, match="tan"):
        fjet.jet(jnp.tan, (X,), (SERIES,))
    with pytest.raises(ValueError, match="inconsistent lengths"):
        fjet.jet(jnp.add, (X, X), (SERIES, SERIES[:2]))
    with pytest.raises(ValueError, match="primal value at position 0 is not an array"):
        fjet.jet(lambda t: t[0], ((X, X),), ((X,),))
    with pytest.raises(ValueError, match="term 0 for argument 0 is not an array"):
        fjet.jet(jnp.sin, (X,), (((X, X),),))


def test_custom_rules_are_set_aside():
    # JAX's jet differentiates the function of a custom_jvp/custom_vjp, not its rules (jax
    # 0.10.2's own jet raises UnexpectedTracerError on them, so the reference here is the plain
    # function, under JAX's jet too)
    def plain(m):
        return lambda x: m.numpy.sin(x) * x + m.numpy.exp(x)

    @fluxion.custom_jvp
    def f(x):
        return jnp.sin(x) * x

    f.defjvp(lambda p, t: (f(p[0]), 100.0 * t[0]))

    @fluxion.custom_vjp
    def g(x):
        return jnp.exp(x)

    g.defvjp(lambda x: (g(x), x), lambda r, c: (100.0 * c,))
    run = fluxion.jit(lambda x, s: fjet.jet(lambda y: f(y) + g(y), (x,), (s,)))
    ours = _terms(run(X, SERIES))
    same = _terms(fluxion.jit(lambda x, s: fjet.jet(plain(fluxion), (x,), (s,)))(X, SERIES))
    ref = _terms(jax.jit(lambda x, s: jjet.jet(plain(jax), (x,), (s,)))(X, SERIES))
    for o, p, r in zip(ours, same, ref):
        np.testing.assert_array_equal(o, p)  # both Fluxion's, on one platform
        _same_as_reference(o, r)


def test_rule_builders_set_the_slot():
    from fluxion.extend.core import Primitive
    p = Primitive("jet_builder_test")
    p.def_impl(lambda x: x * 2)
    p.def_abstract_eval(lambda x: x)
    fjet.deflinear(p)
    out, (t1,) = fjet.jet(p.bind, (np.float32(1.5),), ((np.float32(3.0),),))
    assert float(out) == 3.0 and float(t1) == 6.0


def test_composes_with_grad_and_vmap():
    x, s = np.float32(0.7), (np.float32(1.0), np.float32(0.5), np.float32(0.2))

    def f(m):
        return lambda x: m.numpy.tanh(m.numpy.sin(x) * x)

    # jet of a gradient (the rules of the primitives grad emits) and the gradient of a term
    ours = fjet.jet(fluxion.grad(f(fluxion)), (x,), (s,))
    ref = jjet.jet(jax.grad(f(jax)), (x,), (s,))
    np.testing.assert_allclose(_terms(ours), _terms(ref), rtol=4e-6)
    ours = fluxion.grad(lambda x: fjet.jet(f(fluxion), (x,), (s,))[1][2])(x)
    ref = jax.grad(lambda x: jjet.jet(f(jax), (x,), (s,))[1][2])(x)
    # (float32 arrays, not Python floats: on a TPU the float32 tolerance applies)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=4e-6)
    # jet of a vmapped function: each member's series
    xs = np.array([0.1, 0.7, 1.3], np.float32)
    out, (t1,) = fjet.jet(fluxion.vmap(f(fluxion)), (xs,), ((np.ones(3, np.float32),),))
    for i in range(3):
        one, (u1,) = fjet.jet(f(fluxion), (xs[i],), ((np.float32(1.0),),))
        np.testing.assert_allclose([float(out[i]), float(t1[i])], [float(one), float(u1)],
                                   rtol=4e-6)


def test_nested_jets_and_jvp_keep_their_series_apart():
    def outer(m, jet):
        def g(y):
            return jet(lambda x: m.numpy.sin(x * y), (0.5,), ((1.0, 0.0),))[1][1]
        return jet(g, (2.0,), ((1.0, 0.0),))

    np.testing.assert_allclose(_terms(outer(fluxion, fjet.jet)), _terms(outer(jax, jjet.jet)),
                               rtol=4e-6)

    def term_of(m, jet):
        return lambda y: jet(lambda x: m.numpy.exp(x * y), (0.5,), ((1.0,),))[1][0]

    ours = fluxion.jvp(term_of(fluxion, fjet.jet), (2.0,), (1.0,))
    ref = jax.jvp(term_of(jax, jjet.jet), (2.0,), (1.0,))
    np.testing.assert_allclose([float(v) for v in ours], [float(v) for v in ref], rtol=4e-6)

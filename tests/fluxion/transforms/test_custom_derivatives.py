"""custom_jvp / custom_vjp / linear_call against real JAX: which user functions run, in which
order, under each transformation; rules on concrete values; symbolic zeros; the ``vjp`` function
as a pytree; complex gradients' weak types."""

from __future__ import annotations

import jax
import jax.custom_derivatives
import jax.numpy as jjnp
import numpy as np
import pytest
from _compare import assert_same

import fluxion
import fluxion.custom_derivatives
import fluxion.numpy as jnp

jax.config.update("jax_platforms", "cpu")

LIBS = {"fluxion": (fluxion, jnp, fluxion.custom_derivatives),
        "jax": (jax, jjnp, jax.custom_derivatives)}


def both(make):
    """``make(lib, np_, cd)`` built for Fluxion and for JAX."""
    return make(*LIBS["fluxion"]), make(*LIBS["jax"])


def arrays(tree):
    """JAX's results as arrays: its eager vjp hands back Python floats where a custom rule
    computed on Python floats (Fluxion returns weakly typed arrays, as for any other function;
    its jvp returns them as they are, as JAX's does: see :func:`same_types`)."""
    return jax.tree_util.tree_map(jjnp.asarray, tree)


def same_types(ours, theirs):
    """Equal values, and a Python scalar exactly where JAX's result has one (jvp hands back what
    a custom rule computed on Python floats as it is)."""
    o_leaves, t_leaves = fluxion.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert [type(o) is float for o in o_leaves] == [type(t) is float for t in t_leaves]
    assert_same(ours, theirs)


# ----------------------------------------------------------------------------- which calls run

def _jvp_fn(lib, np_, cd):
    calls = []

    @lib.custom_jvp
    def f(x):
        calls.append("f")
        return np_.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        calls.append("f_jvp")
        (x,), (t,) = primals, tangents
        return f(x), np_.cos(x) * t

    return f, calls


def _vjp_fn(lib, np_, cd):
    calls = []

    @lib.custom_vjp
    def f(x):
        calls.append("f")
        return np_.sin(x)

    def f_fwd(x):
        calls.append("f_fwd")
        return np_.sin(x), np_.cos(x)

    def f_bwd(res, ct):
        calls.append("f_bwd")
        return (res * ct,)

    f.defvjp(f_fwd, f_bwd)
    return f, calls


# Each case builds a fresh function, so no jit cache is shared between cases. (One known
# difference is left out: grad of vmap traces the primal function once more than JAX, since
# vmap stages the function instead of batching it lazily.)
_PROGRAMS = {
    "call": lambda lib, np_, f: f(1.0),
    "grad": lambda lib, np_, f: lib.grad(f)(1.0),
    "value_and_grad": lambda lib, np_, f: lib.value_and_grad(f)(1.0),
    "jvp": lambda lib, np_, f: lib.jvp(f, (1.0,), (1.0,)),
    "vjp": lambda lib, np_, f: lib.vjp(f, 1.0),
    "vjp_apply": lambda lib, np_, f: lib.vjp(f, 1.0)[1](1.0),
    "linearize": lambda lib, np_, f: lib.linearize(f, 1.0)[1](1.0),
    "jit": lambda lib, np_, f: lib.jit(f)(1.0),
    "jit_grad": lambda lib, np_, f: lib.jit(lib.grad(f))(1.0),
    "grad_jit": lambda lib, np_, f: lib.grad(lib.jit(f))(1.0),
    "grad_grad": lambda lib, np_, f: lib.grad(lib.grad(f))(1.0),
    "grad_closure": lambda lib, np_, f: lib.grad(lambda x: f(x) * x)(1.0),
    "make_jaxpr": lambda lib, np_, f: lib.make_jaxpr(f)(1.0),
    "make_jaxpr_grad": lambda lib, np_, f: lib.make_jaxpr(lib.grad(f))(1.0),
    "vmap": lambda lib, np_, f: lib.vmap(f)(np_.ones(2)),
    "vmap_grad": lambda lib, np_, f: lib.vmap(lib.grad(f))(np_.ones(2)),
}


def _calls(make, lib_name, program):
    lib, np_, cd = LIBS[lib_name]
    f, calls = make(lib, np_, cd)
    try:
        _PROGRAMS[program](lib, np_, f)
    except TypeError:
        calls.append("TypeError")  # forward mode of a custom_vjp function
    return calls


@pytest.mark.parametrize("program", sorted(_PROGRAMS))
@pytest.mark.parametrize("make", [_jvp_fn, _vjp_fn], ids=["custom_jvp", "custom_vjp"])
def test_user_functions_run_as_in_jax(make, program):
    assert _calls(make, "fluxion", program) == _calls(make, "jax", program)


def test_docs_example_prints_like_jax():
    # The custom derivative tutorial's example: what the functions print under grad.
    def make(lib, np_, cd):
        out = []

        @lib.custom_jvp
        def f(x, y):
            out.append(("f", float(x), float(y)))
            return np_.sin(x) * y

        @f.defjvp
        def f_jvp(primals, tangents):
            x, y = primals
            x_dot, y_dot = tangents
            out.append(("f_jvp", float(x), float(y)))
            return f(x, y), np_.cos(x) * x_dot * y + np_.sin(x) * y_dot

        return f, out

    (f, ours), (g, theirs) = both(make)
    assert_same(fluxion.grad(f)(2.0, 3.0), jax.grad(g)(2.0, 3.0))
    assert ours == theirs == [("f_jvp", 2.0, 3.0), ("f", 2.0, 3.0)]


# ----------------------------------------------------------------------------- concrete values

def _branchy(lib, np_, cd):
    @lib.custom_jvp
    def f(x):
        return x * 2.0 if x > 0 else x * 3.0

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), t * (20.0 if x > 0 else 30.0)

    @lib.custom_vjp
    def g(x):
        return x * 2.0 if x > 0 else x * 3.0

    def g_fwd(x):
        return g(x), x

    def g_bwd(x, ct):
        return (ct * (20.0 if x > 0 else 30.0),)

    g.defvjp(g_fwd, g_bwd)
    return f, g


@pytest.mark.parametrize("x", [1.0, -1.0])
def test_python_control_flow_in_rules_under_eager_grad(x):
    (f, g), (jf, jg) = both(_branchy)
    assert_same(fluxion.grad(f)(x), arrays(jax.grad(jf)(x)))
    assert_same(fluxion.grad(g)(x), arrays(jax.grad(jg)(x)))
    same_types(fluxion.jvp(f, (x,), (1.0,)), jax.jvp(jf, (x,), (1.0,)))
    assert_same(fluxion.vjp(g, x)[1](1.0), arrays(jax.vjp(jg, x)[1](1.0)))
    assert_same(fluxion.grad(fluxion.grad(f))(x), arrays(jax.grad(jax.grad(jf))(x)))
    with pytest.raises(fluxion.errors.TracerBoolConversionError):
        fluxion.jit(fluxion.grad(f))(x)  # under jit the values are abstract, as in JAX


def test_closing_over_a_differentiated_value_raises_with_a_hint():
    def outer(y):
        @fluxion.custom_jvp
        def f(x):
            return x * y

        f.defjvp(lambda p, t: (f(p[0]), t[0] * y))
        return f(y)

    with pytest.raises(fluxion.errors.UnexpectedTracerError, match="closure_convert"):
        fluxion.grad(outer)(3.0)


def test_nondiff_argnums_have_zero_derivative():
    def make(lib, np_, cd):
        @lib.custom_jvp
        def f(n, x):
            return x * n

        @f.defjvp
        def f_jvp(n, primals, tangents):
            return f(n, primals[0]), tangents[0] * n * 2.0

        f.nondiff_argnums = (0,)
        return lambda x: f(x, x)

    ours, theirs = both(make)
    assert_same(fluxion.grad(ours)(3.0), jax.grad(theirs)(3.0))


def test_rule_calling_the_function_on_tangents_transposes_like_jax():
    # jax_md's space.transform: the jvp rule applies the custom_jvp function to a tangent, so
    # reverse mode transposes a custom_jvp call (JAX inlines it while linearizing).
    def make(lib, np_, cd):
        @lib.custom_jvp
        def t(b, r):
            return b * r

        @t.defjvp
        def t_jvp(primals, tangents):
            (b, r), (db, dr) = primals, tangents
            return t(b, r), dr + t(db, r)

        return lambda b: np_.sum(t(b, np_.arange(3.0)) ** 2)

    ours, theirs = both(make)
    x = np.array([1.0, 2.0, 0.5], np.float32)
    assert_same(fluxion.grad(ours)(jnp.asarray(x)), jax.grad(theirs)(x))
    assert_same(fluxion.jit(fluxion.grad(ours))(jnp.asarray(x)), jax.jit(jax.grad(theirs))(x))
    assert_same(fluxion.vmap(fluxion.grad(ours))(jnp.asarray(np.stack([x, 2 * x]))),
                jax.vmap(jax.grad(theirs))(np.stack([x, 2 * x])))


# ----------------------------------------------------------------------------- symbolic zeros

def _sz_jvp(lib, np_, cd):
    seen = []

    @lib.custom_jvp
    def f(x, y):
        return x * y, x + y

    def f_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        zx, zy = type(tx) is cd.SymbolicZero, type(ty) is cd.SymbolicZero
        seen.append((zx, zy))
        t = (0.0 if zx else tx * y) + (0.0 if zy else ty * x)
        # The second output's tangent is returned as a symbolic zero.
        return f(x, y), (t, cd.SymbolicZero.from_primal_value(x + y))

    f.defjvp(f_jvp, symbolic_zeros=True)
    return f, seen


@pytest.mark.parametrize("case", ["grad_x", "grad_y", "grad_both", "jvp", "jit", "second"])
def test_custom_jvp_symbolic_zeros(case):
    def run(lib, f):
        if case == "grad_x":
            return lib.grad(lambda x, y: f(x, y)[0])(2.0, 3.0)
        if case == "grad_y":
            return lib.grad(lambda x, y: f(x, y)[0], argnums=1)(2.0, 3.0)
        if case == "grad_both":
            return lib.grad(lambda x, y: f(x, y)[0], argnums=(0, 1))(2.0, 3.0)
        if case == "jvp":
            return lib.jvp(lambda x: f(x, 3.0), (2.0,), (1.0,))
        if case == "jit":
            return lib.jit(lib.grad(lambda x, y: f(x, y)[0], argnums=1))(2.0, 3.0)
        return lib.grad(lambda x, y: f(x, y)[1])(2.0, 3.0)  # symbolic zero output tangent

    (f, ours), (g, theirs) = both(_sz_jvp)
    if case == "jvp":
        same_types(run(fluxion, f), run(jax, g))
    else:
        assert_same(run(fluxion, f), arrays(run(jax, g)))
    assert ours == theirs


def _sz_vjp(lib, np_, cd):
    seen = []

    @lib.custom_vjp
    def f(x, y):
        return x * y, x + y

    def f_fwd(x, y):
        seen.append(("fwd", type(x).__name__, x.perturbed, y.perturbed))
        x, y = cd.custom_vjp_primal_tree_values((x, y))
        return f(x, y), (x, y)

    def f_bwd(res, cts):
        x, y = res
        ca, cb = cts
        seen.append(("bwd", type(ca) is cd.SymbolicZero, type(cb) is cd.SymbolicZero))
        if type(ca) is cd.SymbolicZero:  # only the sum was used: y's cotangent is cb
            return cb, cb
        cb = 0.0 if type(cb) is cd.SymbolicZero else cb
        return ca * y + cb, ca * x + cb

    f.defvjp(f_fwd, f_bwd, symbolic_zeros=True)
    return f, seen


@pytest.mark.parametrize("case", ["first", "second", "both_outputs", "argnum1", "jit"])
def test_custom_vjp_symbolic_zeros(case):
    def run(lib, f):
        if case == "first":
            return lib.grad(lambda x, y: f(x, y)[0])(2.0, 3.0)
        if case == "second":
            return lib.grad(lambda x, y: f(x, y)[1], argnums=(0, 1))(2.0, 3.0)
        if case == "both_outputs":
            return lib.grad(lambda x, y: sum(f(x, y)), argnums=(0, 1))(2.0, 3.0)
        if case == "argnum1":
            return lib.grad(lambda x, y: f(x, y)[0], argnums=1)(2.0, 3.0)
        return lib.jit(lib.grad(lambda x, y: f(x, y)[0]))(2.0, 3.0)

    (f, ours), (g, theirs) = both(_sz_vjp)
    assert_same(run(fluxion, f), arrays(run(jax, g)))
    assert ours == theirs


def test_bwd_may_return_symbolic_zeros_and_none():
    def make(lib, np_, cd):
        @lib.custom_vjp
        def f(x, y, z):
            return x * y * z

        f.defvjp(lambda x, y, z: (f(x, y, z), (x, y, z)),
                 lambda r, ct: (ct * r[1] * r[2], cd.SymbolicZero.from_primal_value(r[1]), None),
                 symbolic_zeros=False)
        return lambda x, y, z: lib.grad(f, argnums=(0, 1, 2))(x, y, z)

    ours, theirs = both(make)
    assert_same(ours(2.0, 3.0, 4.0), arrays(theirs(2.0, 3.0, 4.0)))


def test_custom_derivatives_module_names_match_jax():
    public = {n for n in dir(jax.custom_derivatives) if not n.startswith("_")}
    # remat_opt_p is JAX's internal primitive for custom_vjp(optimize_remat=True), which only
    # changes how JAX schedules rematerialisation; Fluxion accepts the flag and needs none.
    assert public - {"remat_opt_p"} <= set(fluxion.custom_derivatives.__all__)
    for n in fluxion.custom_derivatives.__all__:
        assert getattr(fluxion.custom_derivatives, n) is not None
    assert fluxion.custom_derivatives.custom_jvp is fluxion.custom_jvp
    z = fluxion.custom_derivatives.zero_from_primal((1.0, np.ones(2, np.float32)), True)
    zj = jax.custom_derivatives.zero_from_primal((1.0, np.ones(2, np.float32)), True)
    assert [(a.shape, a.dtype) for a in z] == [(b.shape, b.dtype) for b in zj]
    assert repr(z[0]) == repr(zj[0]) == "SymbolicZero"


# ----------------------------------------------------------------------------- linear_call

def _div_add(lib, np_, cd):
    def div_add(x, denom):
        return x + cd.linear_call(lambda r, x: x / r, lambda r, t: t / r, denom, x)

    def custom_id(x):
        return cd.linear_call(lambda _, x: x, lambda _, t: 7.0, (), x)

    return div_add, custom_id


def test_linear_call_matches_jax():
    (div_add, custom_id), (jdiv_add, jcustom_id) = both(_div_add)

    def transpose(lib, f):
        return lambda y: lib.linear_transpose(f, 1.0)(y)[0]

    assert_same(div_add(9.0, 3.0), arrays(jdiv_add(9.0, 3.0)))
    assert_same(transpose(fluxion, lambda x: div_add(x, 3.0))(18.0),
                arrays(transpose(jax, lambda x: jdiv_add(x, 3.0))(18.0)))
    f, g = custom_id, jcustom_id
    for _ in range(3):  # the transpose of the transpose is the function again
        f, g = transpose(fluxion, f), transpose(jax, g)
        assert float(f(1.0)) == float(g(1.0))
    assert_same(fluxion.grad(custom_id)(1.0), arrays(jax.grad(jcustom_id)(1.0)))
    assert_same(fluxion.jit(fluxion.grad(custom_id))(1.0), arrays(jax.grad(jcustom_id)(1.0)))
    assert_same(fluxion.grad(lambda x: div_add(x, 3.0))(2.0),
                arrays(jax.grad(lambda x: jdiv_add(x, 3.0))(2.0)))


# ----------------------------------------------------------------------------- vjp is a pytree

def _f(np_):
    return lambda x, y: {"a": np_.sin(x) * y, "b": (np_.cos(x), 3)}


def test_vjp_function_is_a_pytree_of_residuals():
    x, y = np.arange(3.0, dtype=np.float32), np.float32(2.0)
    _, f_vjp = fluxion.vjp(_f(jnp), x, y)
    leaves = fluxion.tree_util.tree_leaves(f_vjp)
    assert leaves and all(isinstance(v, fluxion.Array) for v in leaves)
    rebuilt = fluxion.tree_util.tree_unflatten(fluxion.tree_util.tree_structure(f_vjp), leaves)
    ct = {"a": np.ones(3, np.float32), "b": (np.ones(3, np.float32), 0)}
    assert_same(rebuilt(ct), f_vjp(ct))


def test_vjp_function_crosses_jit_boundaries():
    x, y = np.arange(3.0, dtype=np.float32), np.float32(2.0)
    ct = {"a": np.ones(3, np.float32), "b": (np.full(3, 2.0, np.float32), 0)}
    ours = fluxion.jit(lambda x, y: fluxion.vjp(_f(jnp), x, y)[1])(x, y)
    theirs = jax.jit(lambda x, y: jax.vjp(_f(jjnp), x, y)[1])(x, y)
    apply_ours = fluxion.jit(lambda g, c: g(c))
    assert_same(apply_ours(ours, ct), jax.jit(lambda g, c: g(c))(theirs, ct))
    assert_same(apply_ours(ours, ct), ours(ct))  # a second call hits the cache
    assert_same(fluxion.vmap(lambda g, c: g(c), in_axes=(None, 0))(
                    ours, {"a": np.ones((2, 3), np.float32), "b": (np.ones((2, 3), np.float32),
                                                                   np.zeros(2, np.int32))}),
                jax.vmap(lambda g, c: g(c), in_axes=(None, 0))(
                    theirs, {"a": np.ones((2, 3), np.float32), "b": (np.ones((2, 3), np.float32),
                                                                     np.zeros(2, np.int32))}))
    out, g = fluxion.jit(lambda x: fluxion.vjp(lambda v: (v * v).sum(), x, has_aux=False))(x)
    outj, gj = jax.jit(lambda x: jax.vjp(lambda v: (v * v).sum(), x))(x)
    assert_same(out, outj)
    assert_same(fluxion.jit(lambda g: g(1.0))(g), jax.jit(lambda g: g(1.0))(gj))


# ----------------------------------------------------------------------------- complex weak types

_COMPLEX = {
    "holomorphic": (lambda np_: (lambda z: z * z), True),
    "holomorphic_sin": (lambda np_: np_.sin, True),
    "abs": (lambda np_: np_.abs, False),
    "real_square": (lambda np_: (lambda z: np_.real(z * z)), False),
    "imag": (lambda np_: np_.imag, False),
    "abs_squared": (lambda np_: (lambda z: np_.abs(z) ** 2), False),
}


@pytest.mark.parametrize("name", sorted(_COMPLEX))
@pytest.mark.parametrize("arg", [1j + 1.0, np.complex64(1 + 2j)], ids=["python", "numpy"])
def test_complex_gradient_weak_types_match_jax(name, arg):
    make, holo = _COMPLEX[name]
    ours = fluxion.grad(make(jnp), holomorphic=holo)(arg)
    theirs = jax.grad(make(jjnp), holomorphic=holo)(arg)
    assert_same(ours, theirs, rtol=1e-6, atol=1e-6)
    assert_same(fluxion.jit(fluxion.grad(make(jnp), holomorphic=holo))(arg), theirs,
                rtol=1e-6, atol=1e-6)


def test_linear_call_under_vmap_equals_a_loop():
    # JAX has no batching rule for linear_call; ours must equal the unbatched call per member,
    # also through its transpose (linear_transpose, grad) inside and outside the vmap.
    lc = fluxion.custom_derivatives.linear_call

    def f(r, x):
        return lc(lambda r, x: x * r, lambda r, t: t * r, r, x)

    r = jnp.arange(1.0, 4.0)
    x = jnp.arange(3.0) + 2.0
    loop = np.stack([np.asarray(f(r[i], x[i])) for i in range(3)])
    np.testing.assert_allclose(fluxion.vmap(f)(r, x), loop)
    np.testing.assert_allclose(fluxion.vmap(f, in_axes=(None, 0))(2.0, x), 2.0 * np.asarray(x))
    t = fluxion.vmap(lambda c: fluxion.linear_transpose(lambda x: f(3.0, x), 1.0)(c)[0])(x)
    np.testing.assert_allclose(t, 3.0 * np.asarray(x))
    g = fluxion.grad(lambda x: fluxion.vmap(f, in_axes=(None, 0))(3.0, x).sum())(x)
    np.testing.assert_allclose(g, np.full(3, 3.0))
    per = fluxion.vmap(lambda r, x: fluxion.grad(lambda x: f(r, x))(x))(r, x)
    np.testing.assert_allclose(per, np.asarray(r))


def test_custom_jvp_call_bind_params_have_subfuns_like_jax():
    # equinox's finalise_jaxpr inlines a custom_jvp_call through
    # get_bind_params(params)["subfuns"][0].call_wrapped(*args)
    def inlined(lib):
        f = lib.custom_jvp(lambda x, y: x * y + 1.0)
        f.defjvp(lambda p, t: (f(*p), t[0] * p[1] + t[1] * p[0]))
        c = 2.0
        eqn = lib.make_jaxpr(lambda x: f(x, c))(1.0).jaxpr.eqns[0]
        bp = eqn.primitive.get_bind_params(eqn.params)
        fun, _ = bp["subfuns"]
        direct = fun.call_wrapped(np.float32(3.0), np.float32(c))
        # and the primitive binds again from those parameters (JAX's eval_jaxpr does this)
        rebound = lib.jvp(lambda x: eqn.primitive.bind(x, np.float32(c), **bp)[0], (3.0,),
                          (1.0,))
        return [float(v) for v in direct], [float(v) for v in rebound], "symbolic_zeros" in bp

    assert inlined(fluxion) == inlined(jax) == ([7.0], [7.0, 2.0], True)

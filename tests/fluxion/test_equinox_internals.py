"""JAX internals that equinox 0.13.8 calls (its ``finalise_jaxpr`` and ``error_if``), compared
with JAX 0.10.2: ``Primitive.get_bind_params`` and ``jax._src.traceback_util.include_frame``."""

from __future__ import annotations

import os
import sys

import jax
import jax._src.traceback_util as jax_tb
import jax.extend.core as jex
import jax.numpy as jjnp
import numpy as np
import pytest

import fluxion
import fluxion.compat.jax_src.traceback_util as tb
import fluxion.extend.core as fex
import fluxion.numpy as jnp


def _rebind(mod, closed, *args):
    # equinox's finalise_eval_jaxpr: each equation re-bound from its params
    env = dict(zip(closed.jaxpr.constvars, closed.consts))
    env.update(zip(closed.jaxpr.invars, args))

    literal = (fex if mod is fluxion else jex).Literal

    def read(v):
        return v.val if isinstance(v, literal) else env[v]

    for eqn in closed.jaxpr.eqns:
        params = eqn.primitive.get_bind_params(eqn.params)
        assert isinstance(params, dict) and params == dict(eqn.params) or mod is jax
        out = eqn.primitive.bind(*[read(v) for v in eqn.invars], **params)
        outs = out if eqn.primitive.multiple_results else [out]
        env.update(zip(eqn.outvars, outs))
    return [np.asarray(env[v]) for v in closed.jaxpr.outvars]


@pytest.mark.parametrize("name", ["sum", "jit", "cond", "scan"])
def test_get_bind_params_rebinds_like_jax(name):
    def make(mod, np_):
        return {
            "sum": lambda x: np_.sum(x * 2.0, axis=0),
            "jit": lambda x: mod.jit(lambda y: np_.sin(y) + 1.0)(x),
            "cond": lambda x: mod.lax.cond(x[0] > 0, np_.cos, np_.sin, x),
            "scan": lambda x: mod.lax.scan(lambda c, v: (c + v, c * v), 0.0, x)[1],
        }[name]

    x = np.arange(1.0, 4.0, dtype=np.float32)
    ours = _rebind(fluxion, fluxion.make_jaxpr(make(fluxion, jnp))(x), x)
    theirs = _rebind(jax, jax.make_jaxpr(make(jax, jjnp))(x), x)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_include_frame_like_jax(tmp_path):
    user = str(tmp_path / "train.py")
    assert tb.include_filename(user) and jax_tb.include_filename(user)
    # each library's own internals are left out of user-facing tracebacks
    assert not tb.include_filename(fluxion.__file__)
    assert not jax_tb.include_filename(jax_tb.__file__)
    # a folder registered as a library's is left out, in both
    lib = str(tmp_path / "mylib")
    os.makedirs(lib)
    tb.register_exclusion(lib)
    jax_tb.register_exclusion(lib)
    for mod in (tb, jax_tb):
        assert not mod.include_filename(os.path.join(lib, "x.py"))
        assert mod.include_filename(str(tmp_path / "mylib2" / "x.py"))
        assert mod.include_frame(sys._getframe()) is True


def _own_tracers(mod, jex_core):
    # equinox's filter_jvp: which outputs are tracers of this jvp (trace.main identity)
    seen = {}

    def inner(x):
        main = jex_core.find_top_trace((x,)).main
        y = x * 2.0
        seen["inner"] = [isinstance(v, mod.interpreters.ad.JVPTracer) and v._trace.main is main
                         for v in (x, y, seen["outer_x"])]  # the outer jvp's tracer: False
        return y

    def outer(x):
        main = jex_core.find_top_trace((x,)).main
        seen["outer_x"] = x
        out = mod.jvp(inner, (x,), (1.0,))[0]
        seen["outer"] = [isinstance(out, mod.interpreters.ad.JVPTracer)
                         and out._trace.main is main, main is not None]
        return out

    mod.jvp(outer, (3.0,), (1.0,))
    del seen["outer_x"]
    return seen


def test_trace_main_identifies_the_jvp_like_jax():
    import jax.interpreters.ad  # noqa: F401  (jax.interpreters.ad as an attribute)

    import fluxion.interpreters.ad  # noqa: F401

    assert _own_tracers(fluxion, fex) == _own_tracers(jax, jex)


@pytest.mark.parametrize("how", ["grad", "jit", "vjp", "vmap"])
def test_custom_vjp_bool_residual_stays_a_bool_like_jax(how):
    # equinox's filter_custom_vjp hands its `perturbed` flags (Python bools) to bwd as
    # residuals and tests them with `is True`
    def run(mod, np_):
        seen = []

        @mod.custom_vjp
        def f(x):
            return x * 2.0

        def fwd(x):
            return x * 2.0, (True, False, x)

        def bwd(res, g):
            seen.append((res[0] is True, res[1] is False))
            return (g * 2.0,)

        f.defvjp(fwd, bwd)
        g = mod.grad(f)
        {"grad": lambda: g(1.0), "jit": lambda: mod.jit(g)(1.0),
         "vjp": lambda: mod.vjp(f, 1.0)[1](1.0),
         "vmap": lambda: mod.vmap(g)(np_.ones(2))}[how]()
        return seen

    assert run(fluxion, jnp) == run(jax, jjnp) == [(True, True)]


def _axis_rule_calls(mod, jex_core, batching, np_, name):
    # equinox's create_vprim registers its vmap rules in axis_primitive_batchers
    p = jex_core.Primitive(f"eqx_test_rowsum_{name}")
    p.def_impl(lambda x: np_.sum(x, axis=-1))
    p.def_abstract_eval(lambda a: a.update(shape=a.shape[:-1]))
    calls = []

    def rule(axis_size, axis_name, trace_type, inputs, batch_axes):
        calls.append((axis_size, axis_name, trace_type, tuple(batch_axes)))
        (x,), (d,) = inputs, batch_axes
        return p.bind(np_.moveaxis(x, d, 0)), 0

    batching.axis_primitive_batchers[p] = rule
    if mod is fluxion:  # JAX's table is write-only (a proxy)
        assert batching.axis_primitive_batchers[p] is rule
    x = np.arange(24.0, dtype=np.float32).reshape(3, 2, 4)
    out = mod.vmap(p.bind, in_axes=1, axis_name="i")(x)
    return np.asarray(out), calls


def test_axis_primitive_batchers_convention_like_jax():
    import jax.interpreters.batching as jbatching

    import fluxion.interpreters.batching as fbatching

    ours = _axis_rule_calls(fluxion, fex, fbatching, jnp, "f")
    theirs = _axis_rule_calls(jax, jex, jbatching, jjnp, "j")
    np.testing.assert_array_equal(ours[0], theirs[0])
    assert ours[1] == theirs[1] == [(2, "i", None, (1,))]


@pytest.mark.parametrize("kind", ["shaped_array", "weak_shaped_array", "struct", "value"])
def test_linear_transpose_of_shape_dtype_primals_like_jax(kind):
    # equinox's filter_primitive_transpose calls linear_transpose on the avals of its inputs
    import jax._src.core as jcore

    from fluxion.core.avals import ShapedArray

    def primal(mod):
        return {"shaped_array": lambda: (ShapedArray if mod is fluxion else jcore.ShapedArray)(
                    (3,), np.dtype("float32")),
                "weak_shaped_array": lambda: (ShapedArray((), np.dtype("float32"), True)
                                              if mod is fluxion else
                                              jcore.ShapedArray((), np.float32, weak_type=True)),
                "struct": lambda: mod.ShapeDtypeStruct((2, 3), np.float32),
                "value": lambda: np.ones((2,), np.float32)}[kind]()

    def run(mod):
        p = primal(mod)
        (ct,) = mod.linear_transpose(lambda x: 3.0 * x, p)(np.ones(p.shape, np.float32))
        return np.asarray(ct), ct.dtype, getattr(ct, "weak_type", False)

    ours, theirs = run(fluxion), run(jax)
    np.testing.assert_array_equal(ours[0], theirs[0])
    assert ours[1:] == theirs[1:]

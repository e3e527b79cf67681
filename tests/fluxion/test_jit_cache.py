"""jit's caches belong to the wrapped function, as in JAX 0.10.2.

``jit(f)(x)`` written inside a loop traces ``f`` once; a function re-created on every iteration
(a lambda, a bound method, a ``functools.partial``) traces every time. Each case counts traces with
a Python side effect in the function and compares the count with real JAX running the same code.
The caches are weakly keyed: they go away with the function.
"""

from __future__ import annotations

import functools
import gc
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _compare import platform_tol

import fluxion
import fluxion.numpy as fnp
from fluxion.backend import jit as fjit


def _count_traces(lib, m, scenario):
    traces = []
    outs = scenario(lib, m, traces)
    return len(traces), [np.asarray(o) for o in outs]


def _loop_same_function(lib, m, traces):
    def f(x):
        traces.append(1)
        return x * 2 + 1

    return [lib.jit(f)(m.arange(3.0) + i) for i in range(5)]


def _loop_lambda(lib, m, traces):
    return [lib.jit(lambda x: (traces.append(1), x * i)[1])(m.arange(3.0)) for i in range(4)]


def _loop_statics(lib, m, traces):
    def f(x, n, scale):
        traces.append(1)
        return x * n * scale

    outs = []
    for i in range(6):
        g = lib.jit(f, static_argnums=1, static_argnames="scale")
        outs.append(g(m.arange(3.0), i % 2, scale=2.0))
    return outs


def _loop_pytrees(lib, m, traces):
    def f(tree):
        traces.append(1)
        return tree["a"] + tree["b"][0]

    outs = []
    for i in range(6):
        tree = {"a": m.ones(3) * i, "b": [m.ones(3)] if i % 3 else (m.ones(3),)}
        outs.append(lib.jit(f)(tree))
    return outs


def _loop_shapes(lib, m, traces):
    def f(x):
        traces.append(1)
        return x.sum()

    return [lib.jit(f)(m.ones(1 + i % 2)) for i in range(6)]


class _Model:
    def __init__(self, traces):
        self.traces = traces

    def apply(self, x):
        self.traces.append(1)
        return x * 3

    def __call__(self, x):
        self.traces.append(1)
        return x - 1


def _loop_bound_method(lib, m, traces):
    model = _Model(traces)
    return [lib.jit(model.apply)(m.arange(3.0)) for _ in range(3)]


def _loop_callable_object(lib, m, traces):
    model = _Model(traces)
    return [lib.jit(model)(m.arange(3.0)) for _ in range(3)]


def _loop_partial(lib, m, traces):
    def f(x, y):
        traces.append(1)
        return x + y

    return [lib.jit(functools.partial(f, 1.0))(m.arange(3.0)) for _ in range(3)]


def _same_function_other_spelling(lib, m, traces):
    def f(x, n):
        traces.append(1)
        return x * n

    return [lib.jit(f, static_argnums=1)(m.arange(3.0), 2),
            lib.jit(f, static_argnames="n")(m.arange(3.0), 2),
            lib.jit(f, static_argnums=(1,))(m.arange(3.0), 2)]


SCENARIOS = {
    "same function in a loop": _loop_same_function,
    "a new lambda per iteration": _loop_lambda,
    "static arguments": _loop_statics,
    "pytree arguments": _loop_pytrees,
    "shapes alternate": _loop_shapes,
    "bound method": _loop_bound_method,
    "callable object": _loop_callable_object,
    "functools.partial": _loop_partial,
    "equivalent static options": _same_function_other_spelling,
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_trace_count_like_jax(name):
    ours, ours_out = _count_traces(fluxion, fnp, SCENARIOS[name])
    theirs, theirs_out = _count_traces(jax, jnp, SCENARIOS[name])
    assert ours == theirs, (ours, theirs)
    for a, b in zip(ours_out, theirs_out):
        np.testing.assert_allclose(a, b)


def test_same_function_in_a_loop_traces_once():
    assert _count_traces(fluxion, fnp, _loop_same_function)[0] == 1


def test_cache_dies_with_the_function():
    def make():
        def f(x):
            return x + 1
        return f

    f = make()
    fluxion.jit(f)(fnp.ones(2))
    j = weakref.ref(fluxion.jit(f)._fluxion_jit)
    assert j() is not None and f in fjit._BY_FUN
    f_ref = weakref.ref(f)
    del f
    gc.collect()
    assert f_ref() is None, "the jit caches keep the function alive"
    assert j() is None, "the caches outlive the function"


def test_wrappers_share_caches_and_clear_cache():
    traces = []

    def f(x):
        traces.append(1)
        return x * 2

    a, b = fluxion.jit(f), fluxion.jit(f)
    a(fnp.ones(2))
    b(fnp.ones(2))
    assert len(traces) == 1 and a._fluxion_jit is b._fluxion_jit
    b.clear_cache()
    a(fnp.ones(2))
    assert len(traces) == 2


def test_different_options_do_not_share_executables():
    def f(x, y):
        return x + y

    x = fnp.ones(3)
    plain = fluxion.jit(f)
    donating = fluxion.jit(f, donate_argnums=0)
    assert plain._fluxion_jit is not donating._fluxion_jit
    np.testing.assert_allclose(plain(x, x), 2.0)
    assert not x.is_deleted()


def test_unhashable_callable_gets_private_caches():
    class Unhashable:
        __hash__ = None

        def __call__(self, x):
            return x * 5

    obj = Unhashable()
    np.testing.assert_allclose(fluxion.jit(obj)(fnp.ones(2)), 5.0)
    np.testing.assert_allclose(fluxion.jit(obj)(fnp.ones(2)), 5.0)


def test_keyword_arguments_reach_the_function():
    def f(x, y):
        return x - y

    g = fluxion.jit(f)
    one, two = fnp.ones(2), fnp.ones(2) * 2
    for out in (g(two, one), g(two, y=one), g(y=one, x=two)):
        np.testing.assert_allclose(out, 1.0)
    with pytest.raises(TypeError):
        g(two, z=one)


def test_static_arguments_of_equal_value_but_different_type_are_different_keys():
    # 1 == True and hash(1) == hash(True), but x[1] and x[True] are different programs (JAX keys
    # static arguments on their type too).
    def f(x, i):
        return x[i]

    ours, theirs = fluxion.jit(f, static_argnums=1), jax.jit(f, static_argnums=1)
    x = np.ones((3, 2), np.float32)
    for i in (1, True, 0, False):
        assert ours(fnp.asarray(x), i).shape == theirs(jnp.asarray(x), i).shape
    # Inside tuples too (JAX would reuse the (1,) program for (True,); we key on the types).
    assert ours(fnp.asarray(x), (1,)).shape == (2,)
    assert ours(fnp.asarray(x), (True,)).shape == (1, 3, 2)


def test_python_scalar_arguments_take_the_fast_table_with_jax_results():
    """Python scalars among the arguments hit the dispatcher's table (no retrace, no general
    path), with JAX's values, dtypes and weak types; x64 and disable_jit still see them."""
    def body(xnp):
        def f(x, y):
            return xnp.sin(x) * y + 1

        return f

    fx_f, jx_f = fluxion.jit(body(fnp)), jax.jit(body(jnp))
    calls = [(0.5, 3.0), (2, 3), (True, 2.0), (0.5, fnp.ones(3)), (0.5, 3.0), (2, 3)]
    jx_calls = [(0.5, 3.0), (2, 3), (True, 2.0), (0.5, jnp.ones(3)), (0.5, 3.0), (2, 3)]
    for (a, b), (ja, jb) in zip(calls, jx_calls):
        got, want = fx_f(a, b), jx_f(ja, jb)
        assert got.dtype == want.dtype and got.weak_type == want.weak_type
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    j = fjit._BY_FUN[fx_f._fluxion_fun].by_options
    (entry,) = {id(v): v for v in j.values()}.values()
    assert len(entry.cache) == 4  # four signatures, the repeated calls reused them
    # the scalar signatures are in the dispatcher's table, so a repeat never reaches the general
    # path (which flattens the arguments); a new signature does
    flattened = []
    inner = fjit._flatten
    fjit._flatten = lambda *a: (flattened.append(1), inner(*a))[1]
    try:
        fx_f(0.5, 3.0), fx_f(2, 3), fx_f(True, 2.0)
        assert flattened == []
        fx_f(1.5, fnp.ones(2))
        assert flattened
    finally:
        fjit._flatten = inner
    assert fx_f(0.5, 3.0).item() == pytest.approx(np.sin(0.5) * 3 + 1, rel=1e-6)
    with fluxion.disable_jit():  # the function sees the Python values as given
        assert type(fluxion.jit(lambda x, y: x * y)(2.0, 3.0)) is float


def test_jit_of_a_wrapper_takes_the_fast_table_for_positional_arguments():
    """jit(grad(f)): grad's wrapper takes (*args, **kwargs); positional Arrays and Python scalars
    still reach the dispatcher's table (no general path), keywords take the general path, and
    the values equal JAX's."""
    def loss(xnp):
        def f(w, x, scale=1.0):
            return xnp.sum(xnp.tanh(w * x) * scale)

        return f

    fx_g, jx_g = fluxion.jit(fluxion.grad(loss(fnp))), jax.jit(jax.grad(loss(jnp)))
    w, x = np.linspace(-1, 1, 5).astype(np.float32), np.float32(0.5)
    cases = [((fnp.asarray(w), fnp.asarray(x)), (jnp.asarray(w), jnp.asarray(x)), {}),
             ((fnp.asarray(w), 0.5), (jnp.asarray(w), 0.5), {}),
             ((fnp.asarray(w), 0.5), (jnp.asarray(w), 0.5), {"scale": 2.0})]
    for fx_args, jx_args, kw in cases:
        got, want = fx_g(*fx_args, **kw), jx_g(*jx_args, **kw)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), **platform_tol(1e-6))
    flattened = []
    inner = fjit._flatten
    fjit._flatten = lambda *a: (flattened.append(1), inner(*a))[1]
    try:
        fx_g(fnp.asarray(w), fnp.asarray(x)), fx_g(fnp.asarray(w), 0.5)
        assert flattened == []
        fx_g(fnp.asarray(w), 0.5, scale=3.0)  # keywords: the general path
        assert flattened
    finally:
        fjit._flatten = inner


@pytest.mark.parametrize("const_out", [False, True])
def test_grad_of_a_jitted_function_transposes_it_once_like_jax(const_out):
    # A custom_vjp bwd runs when the jit's body is transposed; the transpose is memoised on the
    # body, so grad of the same jitted function traces bwd once, also when the body has
    # constants (equinox's test_grad_jit_new/old call filter_grad(filter_jit(f)) twice).
    def count(lib, m):
        traces = []

        @lib.custom_vjp
        def f(x):
            return x

        def bwd(_, g):
            traces.append(1)
            return (g + 2,)

        f.defvjp(lambda x: (x, None), bwd)
        body = (lambda d: (m.array(0), f(d))) if const_out else (lambda d: (d * 2, f(d)))
        jf = lib.jit(body)
        grads = [float(lib.grad(lambda x: jf(x)[1])(m.array(1.0))) for _ in range(3)]
        return grads, len(traces)

    assert count(fluxion, fnp) == count(jax, jnp) == ([3.0, 3.0, 3.0], 1)

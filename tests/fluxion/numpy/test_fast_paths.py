"""numpy/_fast.py: a binary ufunc on a value being staged and a Python number takes the fast
path, which must stage exactly the program the general promotion path stages."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion.numpy import _fast

OPS = {
    "mul": lambda x, s: x * s, "rmul": lambda x, s: s * x, "add": lambda x, s: x + s,
    "sub": lambda x, s: x - s, "rsub": lambda x, s: s - x, "gt": lambda x, s: x > s,
    "eq": lambda x, s: x == s, "max": lambda x, s: jnp.maximum(x, s),
    "min": lambda x, s: jnp.minimum(s, x),
}
OPERANDS = [  # (argument, Python number)
    (np.ones(3, np.float32), 0.5), (np.ones(3, np.float32), 2), (np.ones(3, np.int32), 3),
    (np.ones(3, np.int32), 2.5), (np.ones(3, np.uint8), 300), (np.ones(3, np.uint8), -1),
    (np.ones(3, np.int32), 2 ** 40), (np.ones(3, np.bool_), 1), (np.ones(3, np.complex64), 1.5),
    (np.ones(3, np.float16), 1e5), (np.ones((), np.float32), 3.0), (1.0, 2.0), (7, 3),
]


def _staged(f, x):
    try:
        jaxpr = fluxion.make_jaxpr(f)(x)
    except Exception as err:  # the same error either way
        return type(err).__name__
    return str(jaxpr), [(v.aval.dtype, v.aval.weak_type) for v in jaxpr.jaxpr.outvars]


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("case", range(len(OPERANDS)))
def test_the_fast_path_stages_the_general_paths_program(monkeypatch, op, case):
    x, s = OPERANDS[case]
    f = lambda a: OPS[op](a, s)  # noqa: E731
    calls = []
    real = _fast._staged_scalar
    monkeypatch.setattr(_fast, "_staged_scalar", lambda v, t: calls.append(v) or real(v, t))
    fast = _staged(f, x)
    assert calls, "the staged value and the number went through binary_operands"
    monkeypatch.setattr(_fast, "_staged_scalar", lambda v, t: None)
    assert fast == _staged(f, x)


def test_a_scalar_beside_a_value_of_an_outer_trace_takes_the_general_path():
    def outer(x):
        return fluxion.jit(lambda y: (x * 2.0) + y)(x)  # x is the outer jit's value

    np.testing.assert_allclose(fluxion.jit(outer)(jnp.ones(3)), np.full(3, 3.0))
    assert "mul" in str(fluxion.make_jaxpr(outer)(jnp.ones(3)))


def test_values_under_jit_match_eager():
    x = jnp.arange(4.0, dtype=jnp.float32)
    f = lambda a: (a * 0.5 + 1, 2 - a, a > 1, jnp.maximum(a, 2))  # noqa: E731
    for got, want in zip(fluxion.jit(f)(x), f(x)):
        assert got.dtype == want.dtype and got.weak_type == want.weak_type
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", range(len(OPERANDS)))
def test_true_divide_of_traced_values_stages_the_general_paths_program(case):
    from fluxion.numpy.ufuncs import _true_divide

    x, s = OPERANDS[case]
    for f, general in [(lambda a: a / s, lambda a: _true_divide(a, s)),
                       (lambda a: s / a, lambda a: _true_divide(s, a)),
                       (lambda a: a / a, lambda a: _true_divide(a, a))]:
        assert _staged(f, x) == _staged(general, x)


@pytest.mark.parametrize("name", ["exp", "sin", "tanh", "sqrt", "log1p"])
@pytest.mark.parametrize("x", [np.ones(3, np.float32), np.ones(3, np.float16), 1.0,
                               np.ones(3, np.complex64), np.ones(3, np.int32), np.ones(3, np.bool_)])
def test_unary_ufuncs_of_traced_values_stage_the_general_paths_program(name, x):
    from fluxion import lax
    from fluxion.numpy._util import promote_args_inexact

    prim = getattr(lax, name)
    general = lambda a: prim(promote_args_inexact(name, a)[0])  # noqa: E731  (the ufunc's body)
    assert _staged(getattr(jnp, name), x) == _staged(general, x)
    grad_of = fluxion.grad(lambda a: getattr(jnp, name)(a).real.sum())
    if np.asarray(x).dtype.kind == "f":  # under a JVP trace too
        np.testing.assert_allclose(grad_of(jnp.asarray(x)), fluxion.grad(
            lambda a: general(a).real.sum())(jnp.asarray(x)), rtol=1e-6)


def test_grad_programs_and_values_are_the_general_paths(monkeypatch):
    # under grad the staged value may be a partial evaluation's (the linear part's) own
    f = lambda a: jnp.sum(jnp.tanh(a) * 0.5 - 2.0 * a + (a > 1.0) * a / 3.0 + 1 - a)  # noqa: E731
    x = jnp.arange(3.0)

    def everything() -> tuple:
        g = fluxion.grad(f)
        return (str(fluxion.make_jaxpr(g)(x)), np.asarray(g(x)), np.asarray(fluxion.jit(g)(x)))

    fast = everything()
    monkeypatch.setattr(_fast, "_staged_scalar", lambda v, t: None)
    general = everything()
    assert fast[0] == general[0]
    np.testing.assert_array_equal(fast[1], general[1])
    np.testing.assert_array_equal(fast[2], general[2])

"""Tracers are Arrays: ``isinstance(x, fluxion.Array)`` inside jit, grad, vmap (and the rest) is
True, as ``isinstance(x, jax.Array)`` is in JAX 0.10.2, so code branching on it behaves the same
inside transformations. ``type(x) is Array`` still tells device arrays from tracers."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
from fluxion.core.trace import Tracer


def _probe(lib, m, seen):
    def f(x):
        seen.append((isinstance(x, lib.Array), isinstance(x, m.ndarray)))
        return (x * 2).sum()
    return f


TRANSFORMS = {
    "eager": lambda lib, f, x: f(x),
    "jit": lambda lib, f, x: lib.jit(f)(x),
    "grad": lambda lib, f, x: lib.grad(f)(x),
    "vmap": lambda lib, f, x: lib.vmap(f)(x[None]),
    "jvp": lambda lib, f, x: lib.jvp(f, (x,), (x,)),
    "vjp": lambda lib, f, x: lib.vjp(f, x)[0],
    "linearize": lambda lib, f, x: lib.linearize(f, x)[0],
    "make_jaxpr": lambda lib, f, x: lib.make_jaxpr(f)(x),
    "eval_shape": lambda lib, f, x: lib.eval_shape(f, x),
    "jit(grad(vmap))": lambda lib, f, x: lib.jit(lib.grad(lambda y: lib.vmap(f)(y[None]).sum()))(x),
    "checkpoint": lambda lib, f, x: lib.grad(lib.checkpoint(f))(x),
    "scan body": lambda lib, f, x: lib.lax.scan(lambda c, y: (c + f(y), None), 0.0, x[None]),
    "cond branch": lambda lib, f, x: lib.lax.cond(True, f, f, x),
    "while body": lambda lib, f, x: lib.lax.while_loop(lambda c: c[0] < 1,
                                                        lambda c: (c[0] + 1, c[1] + f(x)),
                                                        (0, 0.0)),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_isinstance_array_like_jax(name):
    ours, theirs = [], []
    TRANSFORMS[name](fluxion, _probe(fluxion, fnp, ours), fnp.arange(3.0))
    TRANSFORMS[name](jax, _probe(jax, jnp, theirs), jnp.arange(3.0))
    assert ours == theirs and ours and all(a and b for a, b in ours), (ours, theirs)


def test_custom_jvp_rule_sees_arrays():
    @fluxion.custom_jvp
    def f(x):
        return fnp.sin(x)

    seen = []

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        seen.append(isinstance(x, fluxion.Array) and isinstance(t, fluxion.Array))
        return f(x), fnp.cos(x) * t

    fluxion.jit(fluxion.grad(f))(1.0)
    assert seen == [True]


def test_not_arrays():
    for x in (np.ones(3), 1.0, 2, [1.0], (fnp.ones(2),), None, "x"):
        assert not isinstance(x, fluxion.Array), type(x)


def test_type_checks_still_tell_tracers_apart():
    kinds = []

    def f(x):
        kinds.append((type(x) is fluxion.Array, isinstance(x, Tracer)))
        return x

    x = fnp.ones(2)
    f(x)
    fluxion.jit(f)(x)
    assert kinds == [(True, False), (False, True)]
    assert not issubclass(Tracer, fluxion.Array)  # virtual instances only, as in JAX
    with pytest.raises(TypeError):
        type("Sub", (fluxion.Array,), {})


def test_library_style_branching_on_array():
    """A library helper that converts non-Arrays with NumPy must leave traced values alone."""
    def ensure_array(lib, m, x):
        return x if isinstance(x, lib.Array) else m.asarray(np.asarray(x, np.float32))

    def f(lib, m):
        return lambda x: ensure_array(lib, m, x) * 3

    for t in ("jit", "grad", "vmap"):
        ours = TRANSFORMS[t](fluxion, lambda x: f(fluxion, fnp)(x).sum(), fnp.arange(3.0))
        theirs = TRANSFORMS[t](jax, lambda x: f(jax, jnp)(x).sum(), jnp.arange(3.0))
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs))

"""``jit(f, static_argnums/static_argnames).lower(...).compile()`` is called with the dynamic
arguments only, as in JAX 0.10.2 (equinox's ``filter_jit(...).lower().compile()`` relies on it);
passing the static ones again is JAX's TypeError."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp


def f(a, b, s, k=1):
    return a["x"] * 2 + b["y"] + k + len(s)


LOWERINGS = {
    "argnums": lambda mod, A, B: mod.jit(f, static_argnums=2).lower(A, B, "st"),
    "argnames": lambda mod, A, B: mod.jit(f, static_argnames="s").lower(A, B, s="st"),
    "both": lambda mod, A, B: mod.jit(f, static_argnums=(2,), static_argnames="k").lower(
        A, B, "st", k=5),
}
CALLS = {
    "dynamic": lambda c, A, B: c(A, B),
    "static again": lambda c, A, B: c(A, B, "st"),
    "kwarg": lambda c, A, B: c(A, B, k=3),
    "missing": lambda c, A, B: c(A),
}


def _run(mod, np_, lowering, call):
    A, B = {"x": np_.array(3)}, {"y": np_.array(4)}
    compiled = LOWERINGS[lowering](mod, A, B).compile()
    try:
        return int(CALLS[call](compiled, A, B))
    except TypeError:
        return TypeError


@pytest.mark.parametrize("lowering", list(LOWERINGS))
@pytest.mark.parametrize("call", list(CALLS))
def test_compiled_takes_dynamic_arguments_like_jax(lowering, call):
    assert _run(fluxion, jnp, lowering, call) == _run(jax, jax.numpy, lowering, call)


def test_compiled_with_static_and_donated_arguments():
    g = lambda x, n: x * n  # noqa: E731
    x = np.arange(3.0, dtype=np.float32)
    ours = fluxion.jit(g, static_argnums=1, donate_argnums=0).lower(x, 4).compile()
    theirs = jax.jit(g, static_argnums=1, donate_argnums=0).lower(x, 4).compile()
    np.testing.assert_array_equal(np.asarray(ours(jnp.asarray(x))),
                                  np.asarray(theirs(jax.numpy.asarray(x))))

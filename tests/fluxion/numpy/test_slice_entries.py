"""Slice bounds that are not static integers fail as in JAX 0.10.2: a traced bound (jit, vmap,
or a tracer leaked from a finished transformation) is JAX's IndexError "Slice entries must be
static integers"; any other value (a float, a string, a float or non-scalar array) is the
TypeError of converting it to an index, not an IndexError."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp

BOUNDS = {
    "float": lambda m: 1.0,
    "str": lambda m: "a",
    "np.float64": lambda m: np.float64(1.0),
    "float array": lambda m: m.array(1.0),
    "1-d array": lambda m: m.array([1]),
    "np 1-d array": lambda m: np.array([1]),
    "list": lambda m: [1],
    "bool": lambda m: True,
    "np.int32": lambda m: np.int32(1),
    "int array": lambda m: m.array(1),
}


def _outcome(fn):
    try:
        return ("ok", np.asarray(fn()).tolist())
    except Exception as e:  # noqa: BLE001 - the exception type is what is compared
        return type(e).__name__


@pytest.mark.parametrize("name", sorted(BOUNDS))
@pytest.mark.parametrize("where", ["start", "stop", "step", "at.set"])
def test_concrete_slice_bound_like_jax(name, where):
    def run(m):
        x, b = m.arange(10), BOUNDS[name](m)
        if where == "start":
            return x[b:5]
        if where == "stop":
            return x[1:b]
        if where == "step":
            return x[::b]
        return x.at[b:4].set(0)
    assert _outcome(lambda: run(fnp)) == _outcome(lambda: run(jnp))


def _leaked(lib):
    box = []
    lib.jit(lambda i: box.append(i) or i)(1)
    return box[0]


@pytest.mark.parametrize("where", ["index", "start", "stop", "tuple", "at.set"])
def test_leaked_tracer_in_index_like_jax(where):
    def run(lib, m):
        x, t = m.arange(10), _leaked(lib)
        if where == "index":
            return x[t]
        if where == "start":
            return x[t:5]
        if where == "stop":
            return x[1:t]
        if where == "tuple":
            return x.reshape(2, 5)[0, t:]
        return x.at[t:3].set(0)
    ours, ref = _outcome(lambda: run(fluxion, fnp)), _outcome(lambda: run(jax, jnp))
    assert ours == ref
    if where != "index":
        with pytest.raises(IndexError, match="Slice entries must be static integers"):
            run(fluxion, fnp)


def test_traced_bounds_like_jax():
    for lib, m in ((fluxion, fnp), (jax, jnp)):
        x = m.arange(10)
        with pytest.raises(IndexError, match="Slice entries must be static integers"):
            lib.vmap(lambda i: x[i:])(m.arange(2))
        # a grad tracer's known value is read: a float one is then the conversion's TypeError
        with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
            lib.grad(lambda f: x[f:3].sum() * f)(1.0)

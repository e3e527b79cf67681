"""Trace-level checks (flax.nnx.tracers): mutating a graph object or an RNG stream from a trace
other than the one it was made at raises TraceContextError with flax's words, against flax.nnx
on real jax; mutating objects passed into the transformation, or at their own trace, works."""

from __future__ import annotations

import flax.errors
import flax.nnx as fnnx
import jax
import pytest

import fluxion
import fluxion_nn as nnx
from fluxion_nn.errors import TraceContextError

SIDES = [(nnx, fluxion, TraceContextError), (fnnx, jax, flax.errors.TraceContextError)]


def _raised(fn) -> str | None:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the test compares the errors of both sides
        return f"{type(e).__name__}: {str(e).split(' (https://')[0]}"
    return None


@pytest.mark.parametrize("side", [0, 1], ids=["fluxion_nn", "flax"])
def test_captured_object_mutated_inside_jit(side):
    lib, jx, err = SIDES[side]
    m = lib.Dict(a=lib.Param(1))
    seen = []

    @jx.jit
    def f():
        seen.append(_raised(lambda: setattr(m, "a", 2)))
        return 0

    f()
    assert seen == ["TraceContextError: Cannot mutate 'Dict' from different trace level"]
    m.a = 3  # at its own trace: allowed
    assert m.a == 3
    with pytest.raises(err):  # the error is the library's own type

        @jx.jit
        def g():
            m.a = 4
            return 0

        g()


@pytest.mark.parametrize("side", [0, 1], ids=["fluxion_nn", "flax"])
def test_rng_stream_used_from_another_trace(side):
    lib, jx, _ = SIDES[side]
    rngs = lib.Rngs(0)
    seen = []

    @jx.jit
    def f():
        seen.append(_raised(rngs.params))
        return 0

    f()
    made = []

    @jx.jit
    def h():
        made.append(lib.Rngs(1))
        return 0

    h()
    assert seen == [_raised(made[0].params)]
    assert seen == ["TraceContextError: Cannot mutate RngCount from a different trace level"]
    key = rngs.params()  # outside: fine
    assert key.shape == ()


@pytest.mark.parametrize("side", [0, 1], ids=["fluxion_nn", "flax"])
def test_objects_passed_in_may_be_mutated(side):
    lib, jx, _ = SIDES[side]

    class Params(lib.Pytree):
        def __init__(self):
            self.count = lib.data(0)

    @jx.jit
    def f(p):
        p.count = 1  # p was rebuilt inside the trace
        return p

    assert f(Params()).count == 1

    class Counter(lib.Module):
        def __init__(self):
            self.n = lib.BatchStat(jx.numpy.zeros(()))

    c = Counter()

    @lib.jit
    def step(c):
        c.n[...] += 1
        c.extra = lib.Param(jx.numpy.ones(()))

    step(c)
    assert float(c.n[...]) == 1.0 and isinstance(c.extra, lib.Param)

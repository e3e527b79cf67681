"""``fluxion.make_user_context`` against ``jax.make_user_context`` (jax 0.10.2): the value inside
and outside ``with`` blocks, ``get_global``/``set_global``, and that ``jit`` traces once per value
taken, exactly as often as JAX does for the same sequence."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import fluxion


def _traces(make, jit, values) -> int:
    ctx = make(default_value=None)
    count = []

    @jit
    def f(x):
        count.append(1)
        return x * 2

    for v in values:
        with ctx(v):
            assert ctx.value == v
            f(1.0)
    f(1.0)
    return len(count)


@pytest.mark.parametrize("values", [[1, 1, 2, 1], [None, "a", ("t", 1), "a"], [0, 0, 0]])
def test_retraces_as_jax(values) -> None:
    assert _traces(fluxion.make_user_context, fluxion.jit, values) == \
        _traces(jax.make_user_context, jax.jit, values)


def test_values_and_globals_as_jax() -> None:
    for make in (fluxion.make_user_context, jax.make_user_context):
        ctx = make(default_value=5)
        assert ctx.value == 5 and ctx.get_global() == 5
        with ctx(7):
            assert ctx.value == 7
        assert ctx.value == 5
        ctx.set_global(9)
        assert ctx.value == 9 and ctx.get_global() == 9
        ctx.set_global(5)
    unhashable = [1]
    for make, jit in ((fluxion.make_user_context, fluxion.jit),
                      (jax.make_user_context, jax.jit)):
        ctx = make(default_value=0)
        with pytest.raises(TypeError, match="unhashable"):
            with ctx(unhashable):
                jit(lambda x: x + 1)(1.0)
    assert "make_user_context" in fluxion.__all__


def test_an_unhashable_value_leaves_the_flags_working() -> None:
    # as jax: the block is entered, a jitted call in it raises TypeError, and on leaving it the
    # value is restored; other flags keep changing (before the fix the value stayed set and
    # every later config.update raised "unhashable type", e.g. enable_x64 in other tests)
    ctx = fluxion.make_user_context(default_value=None)
    f = fluxion.jit(lambda x: x * 2)
    with pytest.raises(TypeError, match="unhashable"):
        with ctx([1]):
            assert ctx.value == [1]
            f(1.0)
    assert ctx.value is None
    with fluxion.enable_x64(True):
        assert fluxion.numpy.ones(1).dtype == np.float64
    assert float(f(2.0)) == 4.0

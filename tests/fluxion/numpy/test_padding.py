"""fluxion.numpy.pad (every mode of numpy.pad) against jax.numpy.pad, eager and under jit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _compare import assert_same, check_like_jax

import fluxion
import fluxion.numpy as fnp


def _both(case):
    """``case(module)`` with fluxion.numpy and with jax.numpy: equal results, or the same
    exception type."""
    check_like_jax(lambda: case(fnp), lambda: case(jnp), rtol=1e-6, atol=1e-6)


X2 = np.arange(1, 7, dtype=np.float32).reshape(2, 3) ** 1.5
I1 = np.array([3, 1, 4, 1, 5], np.int32)

PAD_CASES = [
    ("constant", {}),
    ("constant", {"constant_values": 7}),
    ("constant", {"constant_values": (1, 2)}),
    ("constant", {"constant_values": ((1, 2), (3, 4))}),
    ("edge", {}),
    ("reflect", {}),
    ("reflect", {"reflect_type": "odd"}),
    ("symmetric", {}),
    ("symmetric", {"reflect_type": "odd"}),
    ("wrap", {}),
    ("linear_ramp", {}),
    ("linear_ramp", {"end_values": (5, -3)}),
    ("maximum", {}),
    ("minimum", {"stat_length": 2}),
    ("mean", {"stat_length": ((1, 2), (2, 1))}),
    ("median", {}),
    ("empty", {}),
]


@pytest.mark.parametrize("mode,kw", PAD_CASES)
@pytest.mark.parametrize("width", [(1, 3), ((0, 4), (5, 1))])
def test_pad_modes_2d(mode, kw, width):
    assert_same(fnp.pad(X2, width, mode=mode, **kw), jnp.pad(X2, width, mode=mode, **kw), rtol=1e-5)


@pytest.mark.parametrize("mode,kw", PAD_CASES)
def test_pad_modes_int_1d(mode, kw):
    if "constant_values" in kw and np.ndim(kw["constant_values"]) == 2:
        kw = {"constant_values": ((1, 2),)}
    if "stat_length" in kw and np.ndim(kw["stat_length"]) == 2:
        kw = {"stat_length": ((1, 2),)}
    assert_same(fnp.pad(I1, (7, 3), mode=mode, **kw), jnp.pad(I1, (7, 3), mode=mode, **kw), rtol=1e-6, atol=1e-6)


def test_pad_forms_and_edge_cases():
    for width in [0, 3, (2,), [[1, 2]], np.array([[1, 0], [0, 2]])]:
        assert_same(fnp.pad(X2, width), jnp.pad(X2, width), rtol=1e-6, atol=1e-6)
    # weak-typed and 0-d inputs, bool
    assert_same(fnp.pad(fnp.asarray(1.5), 2), jnp.pad(jnp.asarray(1.5), 2), rtol=1e-6, atol=1e-6)
    b = np.array([True, False])
    assert_same(fnp.pad(b, 1, mode="reflect"), jnp.pad(b, 1, mode="reflect"), rtol=1e-6, atol=1e-6)
    one = np.array([4.0], np.float32)
    for mode in ("reflect", "symmetric"):
        assert_same(fnp.pad(one, 3, mode=mode, reflect_type="odd"),
               jnp.pad(one, 3, mode=mode, reflect_type="odd"), rtol=1e-6, atol=1e-6)
    _both(lambda m: m.pad(X2, -1))
    _both(lambda m: m.pad(X2, 1, mode="edge", constant_values=3))
    _both(lambda m: m.pad(X2, 1, mode="nope"))
    _both(lambda m: m.pad(X2, 1.5))
    _both(lambda m: m.pad(np.zeros((0, 2), np.float32), 1, mode="wrap"))
    _both(lambda m: m.pad(X2, 1, mode="mean", stat_length=0))


def test_pad_callable_and_jit():
    def f(row, width, iaxis, kwargs):
        row = row.at[:width[0]].set(kwargs.get("v", -1))
        return row.at[row.shape[0] - width[1]:].set(9)

    assert_same(fnp.pad(X2, (1, 2), f, v=5), jnp.pad(X2, (1, 2), f, v=5), rtol=1e-6, atol=1e-6)
    ours = fluxion.jit(lambda x: fnp.pad(x, ((1, 2), (3, 0)), mode="reflect"))(X2)
    theirs = jax.jit(lambda x: jnp.pad(x, ((1, 2), (3, 0)), mode="reflect"))(X2)
    assert_same(ours, theirs, rtol=1e-6, atol=1e-6)

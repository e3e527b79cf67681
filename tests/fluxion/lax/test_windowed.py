"""fluxion.lax windowed reductions (reduce_window, select_and_scatter_add) against jax.lax 0.10.2.

Each case runs eagerly and under ``fluxion.jit``; values, dtypes, shapes and weak types must equal
JAX's, and error cases must raise JAX's exception class with a message naming the function.
"""

from __future__ import annotations

import jax
import jax.lax as jlax
import numpy as np
import pytest
from _compare import rand_array
from _lax_cases import XI, X, _both

import fluxion.lax as flax

WINDOW_CASES = [
    ((2, 2), (1, 1), "VALID", None, None),
    ((2, 3), (2, 1), "SAME", None, None),
    ((3, 2), (1, 2), ((1, 0), (2, 1)), (1, 2), None),
    ((2, 2), (1, 1), "VALID", None, (2, 1)),
]


@pytest.mark.parametrize("op,init", [("add", 0.0), ("max", -np.inf), ("min", np.inf),
                                     ("add", 1.5)])
@pytest.mark.parametrize("win,strides,padding,base,wdil", WINDOW_CASES)
def test_reduce_window(op, init, win, strides, padding, base, wdil):
    def ours(a):
        return flax.reduce_window(a, init, getattr(flax, op), win, strides, padding, base, wdil)

    def theirs(a):
        return jlax.reduce_window(a, init, getattr(jlax, op), win, strides, padding, base, wdil)

    _both(ours, theirs, X, rtol=1e-6)


def test_reduce_window_generic_and_int():
    _both(lambda a: flax.reduce_window(a, 1, lambda x, y: flax.mul(x, y), (2, 2), (1, 2), "SAME"),
          lambda a: jlax.reduce_window(a, 1, lambda x, y: jlax.mul(x, y), (2, 2), (1, 2), "SAME"),
          XI)
    _both(lambda a: flax.reduce_window(a, 0, flax.add, (3, 1), (1, 1), "VALID"),
          lambda a: jlax.reduce_window(a, 0, jlax.add, (3, 1), (1, 1), "VALID"), XI)

    def pair(x, y):
        return (x[0] + y[0], flax.max(x[1], y[1]))

    def jpair(x, y):
        return (x[0] + y[0], jlax.max(x[1], y[1]))

    _both(lambda a, b: flax.reduce_window((a, b), (0.0, 0), pair, (2, 2), (1, 1), "VALID"),
          lambda a, b: jlax.reduce_window((a, b), (0.0, 0), jpair, (2, 2), (1, 1), "VALID"),
          X, XI)


def test_select_and_scatter_add():
    from jax._src.lax.windowed_reductions import _select_and_scatter_add
    src = rand_array((2, 4), "float32", seed=3)
    for prim, jprim in ((flax.ge_p, jlax.ge_p), (flax.le_p, jlax.le_p)):
        pads = ((0, 0), (1, 0))
        _both(lambda s, o: flax.select_and_scatter_add(s, o, prim, (2, 2), (1, 1), pads),
              lambda s, o: _select_and_scatter_add(s, o, jprim, (2, 2), (1, 1), pads), src, X)


def test_max_pool_gradient_matches_jax():
    # the select_and_scatter_add of a max pool equals JAX's gradient of reduce_window max
    g = jax.grad(lambda a: jlax.reduce_window(a, -jnp_inf(), jlax.max, (2, 2), (1, 1),
                                              "VALID").sum())(X)
    ones = np.ones((2, 3), np.float32)
    ours = flax.select_and_scatter_add(ones, X, flax.ge_p, (2, 2), (1, 1), ((0, 0), (0, 0)))
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(g))


def jnp_inf():
    return np.float32(np.inf)

"""fluxion.lax sort, sort_key_val and top_k against jax.lax 0.10.2.

Each case runs eagerly and under ``fluxion.jit``; values, dtypes, shapes and weak types must equal
JAX's, and error cases must raise JAX's exception class with a message naming the function.
"""

from __future__ import annotations

import jax.lax as jlax
import numpy as np
import pytest
from _compare import check_like_jax, rand_array
from _lax_cases import XI, X, _both

import fluxion.lax as flax
import fluxion.numpy as fjnp

SPECIAL = np.array([[3.0, -0.0, np.nan, 0.0, -np.inf, 1.0],
                    [np.nan, 2.0, -1.0, np.inf, 2.0, -np.nan]], np.float32)


@pytest.mark.parametrize("dimension", [0, -1])
def test_sort_single(dimension):
    _both(lambda a: flax.sort(a, dimension), lambda a: jlax.sort(a, dimension), SPECIAL)
    _both(lambda a: flax.sort(a, dimension), lambda a: jlax.sort(a, dimension), XI)
    b = rand_array((2, 6), "bool", seed=3)
    _both(lambda a: flax.sort(a, dimension), lambda a: jlax.sort(a, dimension), b)


def test_sort_multi_and_complex():
    k1 = np.array([1, 0, 1, 0, 1, 0], np.int32)
    k2 = np.array([2.0, 1.0, np.nan, 1.0, -0.0, 0.0], np.float32)
    v = np.arange(6, dtype=np.int32)
    for nk in (1, 2):
        _both(lambda a, b, c: flax.sort((a, b, c), num_keys=nk),
              lambda a, b, c: jlax.sort((a, b, c), num_keys=nk), k1, k2, v)
    _both(lambda a, b: flax.sort_key_val(a, b), lambda a, b: jlax.sort_key_val(a, b), k2, v)
    c = (rand_array((5,), "float32") + 1j * np.array([1, 0, 1, 0, 1])).astype(np.complex64)
    c[1] = c[0].real
    _both(lambda a: flax.sort(a), lambda a: jlax.sort(a), c)


def test_top_k():
    for axis in (-1, 0):
        _both(lambda a: flax.top_k(a, 2, axis=axis), lambda a: jlax.top_k(a, 2, axis=axis), X)
    _both(lambda a: flax.top_k(a, 3), lambda a: jlax.top_k(a, 3), XI)
    e = check_like_jax(lambda: flax.top_k(fjnp.asarray(X), 5), lambda: jlax.top_k(X, 5))
    assert "top_k" in str(e)

"""fluxion.lax convenience functions (full, full_like, collapse, broadcast_to_rank) against
jax.lax 0.10.2.

Each case runs eagerly and under ``fluxion.jit``; values, dtypes, shapes and weak types must equal
JAX's, and error cases must raise JAX's exception class with a message naming the function.
"""

from __future__ import annotations

import jax.lax as jlax
import numpy as np
import pytest
from _compare import assert_same, rand_array
from _lax_cases import XI, X, _both

import fluxion.lax as flax


def test_full_collapse_broadcast_to_rank():
    for args in [((2, 3), 1.5), ((2,), 3, np.float32), ((), True), ((3,), np.int8(2))]:
        assert_same(flax.full(*args), jlax.full(*args))
    for a, kw in [(X, {}), (XI, dict(dtype=np.float32)), (X, dict(shape=(2,))), (2.0, {})]:
        assert_same(flax.full_like(a, 3, **kw), jlax.full_like(a, 3, **kw))
    _both(lambda a: flax.full_like(a, 3), lambda a: jlax.full_like(a, 3), X)
    x = rand_array((2, 3, 4), "float32")
    for start, stop in [(0, 2), (1, None), (-2, -1), (0, 3)]:
        _both(lambda a: flax.collapse(a, start, stop), lambda a: jlax.collapse(a, start, stop), x)
    for rank in (2, 4):
        _both(lambda a: flax.broadcast_to_rank(a, rank), lambda a: jlax.broadcast_to_rank(a, rank), X)
    with pytest.raises(TypeError, match="lax.full"):
        flax.full((2,), np.ones(2))

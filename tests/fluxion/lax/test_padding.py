"""fluxion.lax.pad and padtype_to_pads against jax.lax 0.10.2.

Each case runs eagerly and under ``fluxion.jit``; values, dtypes, shapes and weak types must equal
JAX's, and error cases must raise JAX's exception class with a message naming the function.
"""

from __future__ import annotations

import jax.lax as jlax
import jax.numpy as jjnp
import numpy as np
import pytest
from _compare import check_like_jax, rand_array
from _lax_cases import X, _both

import fluxion.lax as flax
import fluxion.numpy as fjnp

PAD_CASES = [
    ((4,), [(1, 2, 0)]),
    ((4,), [(-1, 1, 1)]),
    ((3, 4), [(1, -1, 1), (0, 2, 2)]),
    ((3, 4), [(-2, -1, 0), (-3, 0, 0)]),
    ((0, 2), [(1, 1, 3), (0, 0, 0)]),
]


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("shape,config", PAD_CASES)
def test_pad(shape, config, dtype):
    x = rand_array(shape, dtype)
    pv = np.array(7, dtype)
    _both(lambda a, v: flax.pad(a, v, config), lambda a, v: jlax.pad(a, v, config), x, pv)


def test_pad_python_scalar_value():
    _both(lambda a: flax.pad(a, 0.0, [(1, 1, 1), (0, 0, 0)]),
          lambda a: jlax.pad(a, 0.0, [(1, 1, 1), (0, 0, 0)]), X)


@pytest.mark.parametrize("config", [[(1, 1, 0)], [(0, 0, -1), (0, 0, 0)],
                                    [(-5, 0, 0), (0, 0, 0)]])
def test_pad_errors(config):
    e = check_like_jax(lambda: flax.pad(fjnp.asarray(X), 0.0, config),
                       lambda: jlax.pad(jjnp.asarray(X), 0.0, config))
    assert isinstance(e, ValueError) and "lax.pad" in str(e)


def test_padtype_to_pads():
    for pad in ("SAME", "VALID", "SAME_LOWER"):
        for shape, win, strides in [((5, 6), (3, 2), (2, 1)), ((4,), (4,), (3,))]:
            assert [tuple(p) for p in flax.padtype_to_pads(shape, win, strides, pad)] == \
                [tuple(p) for p in jlax.padtype_to_pads(shape, win, strides, pad)]

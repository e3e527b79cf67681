"""fluxion.lax cumulative reductions (cumsum, cumprod, cummax, cummin, cumlogsumexp) against
jax.lax 0.10.2.

Each case runs eagerly and under ``fluxion.jit``; values, dtypes, shapes and weak types must equal
JAX's, and error cases must raise JAX's exception class with a message naming the function.
"""

from __future__ import annotations

import jax.lax as jlax
import numpy as np
import pytest
from _compare import check_like_jax
from _lax_cases import XI, X, _both

import fluxion.lax as flax
import fluxion.numpy as fjnp


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"])
@pytest.mark.parametrize("axis,reverse", [(0, False), (1, True)])
def test_cumulative(name, axis, reverse):
    f, g = getattr(flax, name), getattr(jlax, name)
    _both(lambda a: f(a, axis, reverse), lambda a: g(a, axis, reverse), X, rtol=1e-6, atol=1e-6)
    if name != "cumlogsumexp":
        _both(lambda a: f(a, axis, reverse), lambda a: g(a, axis, reverse), XI)


def test_cumulative_nan_inf_and_errors():
    x = np.array([1.0, -np.inf, np.nan, 2.0, np.inf], np.float32)
    for name in ("cumsum", "cummax", "cumlogsumexp"):
        _both(getattr(flax, name), getattr(jlax, name), x)
    e = check_like_jax(lambda: flax.cumsum(fjnp.asarray(X), 2), lambda: jlax.cumsum(X, 2))
    assert "cumsum" in str(e)

"""fluxion.numpy.polynomial against jax.numpy: ``roots``."""

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


def _sorted_roots(r):
    r = np.asarray(r)
    return np.sort_complex(r[~np.isnan(r)]), int(np.isnan(r).sum())


ROOT_CASES = [
    [1.0, -6.0, 11.0, -6.0],
    [2.0, 0.0, 1.0, 0.0, 3.0, 0.0],
    [1.0, 0.0, 1.0],
    [0.5, -1.25, 3.0, 2.0, -7.0],
    [0.0, 0.0, 1.0, -3.0, 2.0],
    [3, 2, 1],
]


@pytest.mark.parametrize("p", ROOT_CASES)
@pytest.mark.parametrize("strip", [True, False])
def test_roots(p, strip):
    p = np.asarray(p, np.int32 if isinstance(p[0], int) else np.float32)
    ours, theirs = fnp.roots(p, strip_zeros=strip), jnp.roots(p, strip_zeros=strip)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert not ours.weak_type
    (o, on), (t, tn) = _sorted_roots(ours), _sorted_roots(theirs)
    assert on == tn
    np.testing.assert_allclose(o, t, rtol=1e-4, atol=1e-4)


def test_roots_edge_cases_and_jit():
    for p in ([5.0], [0.0, 0.0], [0.0, 0.0, 0.0]):
        a = np.asarray(p, np.float32)
        for strip in (True, False):
            assert_same(fnp.roots(a, strip_zeros=strip), jnp.roots(a, strip_zeros=strip), rtol=1e-6, atol=1e-6)
    c = np.array([1 + 1j, -6, 11j, -6], np.complex64)
    (o, _), (t, _) = _sorted_roots(fnp.roots(c)), _sorted_roots(jnp.roots(c))
    np.testing.assert_allclose(o, t, rtol=1e-4, atol=1e-4)
    p = np.array([0.0, 1.0, -3.0, 2.0], np.float32)
    ours = fluxion.jit(lambda q: fnp.roots(q, strip_zeros=False))(p)
    theirs = jax.jit(lambda q: jnp.roots(q, strip_zeros=False))(p)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    (o, on), (t, tn) = _sorted_roots(ours), _sorted_roots(theirs)
    assert on == tn == 1
    np.testing.assert_allclose(o, t, rtol=1e-4, atol=1e-4)
    _both(lambda m: m.roots(np.ones((2, 2), np.float32)))

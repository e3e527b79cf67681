"""Cached device constants (backend/dispatch.py: folded literals, Python scalars put on the
device) come back as a new Array object per call, as JAX's results do, on the one cached buffer.

haiku's module_test told two parameters apart with ``assertIsNot``: both were ``jnp.zeros([])``,
which Fluxion handed out as the identical cached object from the third call on."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from _compare import assert_same

import fluxion
import fluxion.numpy as fnp


def _calls(make, n: int = 4) -> list:
    return [make() for _ in range(n)]  # the second call caches the constant; later ones hit it


def test_zeros_scalar_is_a_new_object_per_call_like_jax() -> None:
    for shape, dtype in [((), None), ([], np.float32), ((), np.int32), ((), bool)]:
        ours = _calls(lambda: fnp.zeros(shape, dtype))
        theirs = _calls(lambda: jnp.zeros(shape, dtype))
        assert len({id(a) for a in ours}) == len({id(a) for a in theirs}) == 4
        for a, b in zip(ours, theirs):
            assert_same(a, b)


def test_device_put_python_scalar_is_a_new_object_per_call_like_jax() -> None:
    for v in (2.0, 3, True, -0.0):
        ours = _calls(lambda: fluxion.device_put(v))
        theirs = _calls(lambda: jax.device_put(v))
        assert len({id(a) for a in ours}) == len({id(a) for a in theirs}) == 4
        for a, b in zip(ours, theirs):
            assert_same(a, b)
        assert np.signbit(np.asarray(ours[-1])) == np.signbit(v)


def test_fresh_objects_share_the_cached_buffer_and_stay_usable() -> None:
    a, b, c = _calls(lambda: fnp.ones(()), 3)
    assert b is not c and b._a is c._a  # one device buffer, no copy per call
    assert_same(a + b * c, jnp.ones(()) * 2)
    f = fluxion.jit(lambda x: x * 3, donate_argnums=0)
    assert_same(f(c), jnp.ones(()) * 3)  # donating one of them leaves the others intact
    assert_same(fnp.ones(()) + b, jnp.ones(()) * 2)

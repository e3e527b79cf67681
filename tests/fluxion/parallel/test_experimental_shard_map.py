"""``fluxion.experimental.shard_map`` (the legacy ``jax.experimental.shard_map`` module) against JAX."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion.experimental import shard_map as flegacy

jax = pytest.importorskip("jax")
jlegacy = pytest.importorskip("jax.experimental.shard_map")


def _get(mod):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return mod.shard_map


def test_reading_the_name_warns_like_jax():
    with pytest.warns(DeprecationWarning, match="jax.experimental.shard_map is deprecated") as ours:
        ours_fn = flegacy.shard_map
    with pytest.warns(DeprecationWarning) as theirs:
        theirs_fn = jlegacy.shard_map
    assert callable(ours_fn) and callable(theirs_fn)
    assert str(ours[0].message) == str(theirs[0].message)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = flegacy.nothing


@pytest.mark.parametrize("check_rep", [True, False])
def test_positional_signature_matches_jax(check_rep):
    x = np.arange(8.0, dtype=np.float32).reshape(4, 2)

    def body(lib):
        def f(b):
            return b * 2 + lib.lax.psum(b.sum(), "x")
        return f

    fmesh = fluxion.sharding.Mesh(np.array(fluxion.devices()[:2]), ("x",))
    jmesh = jax.sharding.Mesh(np.array(jax.devices()[:2]), ("x",))
    got = _get(flegacy)(body(fluxion), fmesh, fluxion.P("x"), fluxion.P("x"), check_rep)(jnp.asarray(x))
    want = _get(jlegacy)(body(jax), jmesh, jax.P("x"), jax.P("x"), check_rep)(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want))
    assert got.shape == want.shape and got.dtype == want.dtype
    assert got.weak_type == want.weak_type

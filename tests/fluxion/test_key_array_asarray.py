"""``jnp.asarray``/``jnp.array`` of a typed key array, against real JAX: the key array itself
(optax's ``inject_hyperparams`` passes a ``random.key`` hyperparameter through ``jnp.asarray``),
eagerly and under ``jit``; a numeric dtype is refused with JAX's ValueError."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import fluxion
import fluxion.numpy as fjnp


@pytest.mark.parametrize("ndmin", [0, 2])
def test_asarray_of_key_is_the_key_array(ndmin):
    fk, jk = fluxion.random.key(17), jax.random.key(17)
    got, want = fjnp.array(fk, ndmin=ndmin), jjnp.array(jk, ndmin=ndmin)
    assert got.shape == want.shape and str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(np.asarray(fluxion.random.key_data(got)),
                                  np.asarray(jax.random.key_data(want)))
    assert fjnp.asarray(fk) is fk and fjnp.asarray(fk, fk.dtype) is fk


def test_asarray_of_key_under_jit_samples_as_jax():
    got = fluxion.jit(lambda k: fluxion.random.normal(fjnp.asarray(k), (3,)))(fluxion.random.key(1))
    want = jax.jit(lambda k: jax.random.normal(jjnp.asarray(k), (3,)))(jax.random.key(1))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_asarray_of_key_to_float_raises_like_jax():
    with pytest.raises(ValueError):
        jjnp.asarray(jax.random.key(0), jjnp.float32)
    with pytest.raises(ValueError, match="key array"):
        fjnp.asarray(fluxion.random.key(0), fjnp.float32)

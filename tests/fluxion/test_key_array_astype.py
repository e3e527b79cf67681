"""``jnp.astype`` and ``lax.convert_element_type`` of typed key arrays, against real JAX: to the
key's own dtype a no-op (the key array itself; ``copy=True`` a new key array of the same keys),
eagerly, under ``jit`` and ``vmap``, with no equation in the jaxpr; to or from any other dtype
JAX's ValueError. (optax's MultiSteps selects its inner state with
``jnp.astype(jnp.where(emit, new, old), old.dtype)``, a PRNG key among the leaves with noisy_sgd.)"""

from __future__ import annotations

import re

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from _compare import platform_tol

import fluxion
import fluxion.numpy as fjnp


def _keys(mod, shape):
    k = mod.random.key(3)
    return mod.random.split(k, shape) if shape else k


def _same_keys(got, want):
    assert got.shape == want.shape and str(got.dtype) == str(want.dtype) == "key<fry>"
    np.testing.assert_array_equal(np.asarray(fluxion.random.key_data(got)),
                                  np.asarray(jax.random.key_data(want)))


@pytest.mark.parametrize("shape", [(), (3,)])
def test_astype_to_own_key_dtype_is_the_key_array(shape):
    fk, jk = _keys(fluxion, shape), _keys(jax, shape)
    got, want = fjnp.astype(fk, fk.dtype), jjnp.astype(jk, jk.dtype)
    assert (got is fk) == (want is jk) == True  # noqa: E712
    _same_keys(got, want)
    assert fluxion.lax.convert_element_type(fk, fk.dtype) is fk
    got, want = fjnp.astype(fk, fk.dtype, copy=True), jjnp.astype(jk, jk.dtype, copy=True)
    assert (got is fk) == (want is jk) == False  # noqa: E712
    _same_keys(got, want)


def test_astype_of_keys_under_jit_and_vmap_like_jax():
    fk, jk = _keys(fluxion, (4,)), _keys(jax, (4,))

    def sample(mod, xnp):
        return lambda k: mod.random.normal(xnp.astype(k, k.dtype), (2,))

    np.testing.assert_allclose(np.asarray(fluxion.jit(fluxion.vmap(sample(fluxion, fjnp)))(fk)),
                               np.asarray(jax.jit(jax.vmap(sample(jax, jjnp)))(jk)), **platform_tol(1e-6))
    _same_keys(fluxion.jit(lambda k: fjnp.astype(k, k.dtype))(fk),
               jax.jit(lambda k: jjnp.astype(k, k.dtype))(jk))
    ours = fluxion.make_jaxpr(lambda k: fjnp.astype(k, k.dtype))(fk)
    theirs = jax.make_jaxpr(lambda k: jjnp.astype(k, k.dtype))(jk)
    assert len(ours.eqns) == len(theirs.eqns) == 0


@pytest.mark.parametrize("case", ["key_to_float32", "key_to_uint32", "uint32_to_key"])
def test_astype_to_or_from_another_dtype_raises_like_jax(case):
    def args(mod, xnp):
        k = _keys(mod, (2,))
        return {"key_to_float32": (k, xnp.float32), "key_to_uint32": (k, xnp.uint32),
                "uint32_to_key": (xnp.zeros(2, xnp.uint32), k.dtype)}[case]

    with pytest.raises(ValueError) as want:
        jjnp.astype(*args(jax, jjnp))
    with pytest.raises(ValueError, match=re.escape(str(want.value))):
        fjnp.astype(*args(fluxion, fjnp))
    with pytest.raises(ValueError, match=re.escape(str(want.value))):
        fluxion.lax.convert_element_type(*args(fluxion, fjnp))

"""The array methods a typed key array has but cannot run (sum, astype, item, real, ...):
JAX's key arrays inherit them from ``jax.Array`` as abstract methods, so calling one (or reading
such a property) raises NotImplementedError, not AttributeError; the ones key arrays do run
(reshape, take, copy, ...) keep working. Against real jax 0.10.2."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import fluxion

_CALLS = {"sum": lambda k: k.sum(), "astype": lambda k: k.astype(np.float32),
          "item": lambda k: k.item(), "max": lambda k: k.max(axis=0), "round": lambda k: k.round(),
          "argsort": lambda k: k.argsort(), "to_device": lambda k: k.to_device(None),
          "array_namespace": lambda k: k.__array_namespace__(), "real": lambda k: k.real,
          "mT": lambda k: k.mT, "flat": lambda k: k.flat}


@pytest.mark.parametrize("name", sorted(_CALLS))
def test_abstract_methods_of_key_arrays_as_jax(name):
    for lib in (jax, fluxion):
        keys = lib.random.split(lib.random.key(0), 3)
        with pytest.raises(NotImplementedError, match="Cannot call abstract method"):
            _CALLS[name](keys)
        assert callable(type(keys).sum)


def test_methods_key_arrays_run_still_run():
    for lib in (jax, fluxion):
        keys = lib.random.split(lib.random.key(0), 4)
        out = [keys.reshape(2, 2), keys.take(np.array([1, 3])), keys.copy(), keys.T, keys.ravel()]
        assert [(o.shape, str(o.dtype)) for o in out] == [
            ((2, 2), "key<fry>"), ((2,), "key<fry>"), ((4,), "key<fry>"), ((4,), "key<fry>"),
            ((4,), "key<fry>")]
        data = lib.random.key_data(out[1])
        want = jax.random.key_data(jax.random.split(jax.random.key(0), 4))[np.array([1, 3])]
        np.testing.assert_array_equal(np.asarray(data), np.asarray(want))

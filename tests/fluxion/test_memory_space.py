"""``fluxion.memory.Space`` (JAX 0.10.2's ``jax.memory.Space``) against jax: the enum (names,
values, repr, lookup, pickling, identity hash), ``device_put(x, Space.Device)`` (committed,
on the array's own device or the default one, eagerly, under jit/grad/vmap, pytrees),
``Space.Any``'s error as jax's, and ``Space.Host``, which Fluxion refuses (no host memory kind)."""

from __future__ import annotations

import pickle

import jax
import numpy as np
import pytest
from _compare import assert_same

import fluxion

X = np.arange(3.0, dtype=np.float32)


def test_space_enum_like_jax():
    S, J = fluxion.memory.Space, jax.memory.Space
    assert [(m.name, m.value) for m in S] == [(m.name, m.value) for m in J]
    assert [repr(m) for m in S] == [repr(m) for m in J] == [
        "MemorySpace.Device", "MemorySpace.Host", "MemorySpace.Any"]
    assert str(S.Host) == str(J.Host) and S["Host"] is S.Host and S(1) is S.Device
    assert pickle.loads(pickle.dumps(S.Host)) is S.Host
    assert hash(S.Host) == object.__hash__(S.Host)  # identity hash, as jax's


def test_device_put_to_device_space_like_jax():
    for lib in (fluxion, jax):
        S = lib.memory.Space
        for x in (X, lib.numpy.arange(3.0)):
            y = lib.device_put(x, S.Device)
            assert y.committed and y.devices() == {lib.devices()[0]}
        if lib.device_count() >= 4:
            z = lib.device_put(lib.device_put(X, lib.devices()[3]), S.Device)
            assert z.committed and z.devices() == {lib.devices()[3]}
    S, J = fluxion.memory.Space, jax.memory.Space
    assert_same(fluxion.device_put({"a": X, "b": 1.0}, S.Device),
                jax.device_put({"a": X, "b": 1.0}, J.Device))
    assert_same(fluxion.jit(lambda a: fluxion.device_put(a * 2, S.Device))(X),
                jax.jit(lambda a: jax.device_put(a * 2, J.Device))(X))
    assert_same(fluxion.grad(lambda a: fluxion.device_put(a, S.Device).sum())(X),
                jax.grad(lambda a: jax.device_put(a, J.Device).sum())(X))
    assert_same(fluxion.vmap(lambda a: fluxion.device_put(a, S.Device))(X),
                jax.vmap(lambda a: jax.device_put(a, J.Device))(X))


def test_any_space_error_like_jax_and_host_refused():
    for lib in (fluxion, jax):
        with pytest.raises(AssertionError, match="unreachable"):
            lib.device_put(X, lib.memory.Space.Any)
        with pytest.raises(AssertionError, match="unreachable"):
            lib.jit(lambda a: lib.device_put(a, lib.memory.Space.Any))(X)
    # jax places the array in pinned host memory; Fluxion has no memory kinds
    for put in (lambda: fluxion.device_put(X, fluxion.memory.Space.Host),
                lambda: fluxion.jit(lambda a: fluxion.device_put(a, fluxion.memory.Space.Host))(X)):
        with pytest.raises(NotImplementedError, match="Space.Host"):
            put()

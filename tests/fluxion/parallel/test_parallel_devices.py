"""Computation follows committed inputs (eager and jit), ``jit(device=)``, ``default_device``,
``Array.devices()/.device/.committed``, and JAX's error for two committed devices."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp

jax = pytest.importorskip("jax")


def test_device_lists_match_jax(eight):
    assert [d.id for d in fluxion.devices()] == [d.id for d in jax.devices()]
    assert fluxion.local_device_count() == jax.local_device_count() == 8
    assert fluxion.process_indices() == [0] and fluxion.host_count() == 1


def test_eager_follows_committed_device(eight):
    x = fluxion.device_put(np.ones(3, np.float32), eight[3])
    assert x.committed and x.devices() == {eight[3]} and x.device == eight[3]
    y = x * 2 + jnp.ones(3)          # uncommitted operands follow
    assert y.devices() == {eight[3]} and y.committed
    np.testing.assert_array_equal(np.asarray(y), np.full(3, 3.0))
    u = jnp.ones(3)
    assert not u.committed and u.devices() == {eight[0]}
    assert not (u + 1).committed


def test_jit_follows_committed_device(eight):
    f = fluxion.jit(lambda a, b: a * b)
    x = fluxion.device_put(np.arange(3.0, dtype=np.float32), eight[5])
    out = f(x, jnp.ones(3))
    assert out.devices() == {eight[5]} and out.committed
    assert f(jnp.ones(3), jnp.ones(3)).devices() == {eight[0]}
    jx = jax.device_put(np.arange(3.0, dtype=np.float32), jax.devices()[5])
    assert jax.jit(lambda a, b: a * b)(jx, jax.numpy.ones(3)).committed == out.committed


@pytest.mark.parametrize("use_jit", [False, True])
def test_mixed_committed_devices_raise_like_jax(eight, use_jit):
    a = fluxion.device_put(np.ones(3, np.float32), eight[1])
    b = fluxion.device_put(np.ones(3, np.float32), eight[2])
    f = fluxion.jit(lambda x, y: x + y) if use_jit else (lambda x, y: x + y)
    with pytest.raises(ValueError, match="Received incompatible devices for jitted computation") as e:
        f(a, b)
    assert "device ids [1]" in str(e.value) and "device ids [2]" in str(e.value)
    assert "test_parallel_devices.py" in str(e.value)  # the user's line
    ja = jax.device_put(np.ones(3, np.float32), jax.devices()[1])
    jb = jax.device_put(np.ones(3, np.float32), jax.devices()[2])
    with pytest.raises(ValueError, match="Received incompatible devices for jitted computation"):
        (jax.jit(lambda x, y: x + y) if use_jit else (lambda x, y: x + y))(ja, jb)


def test_jit_device_and_backend(eight):
    f = fluxion.jit(lambda a: a * 3, device=eight[6])
    out = f(jnp.ones(2))
    assert out.devices() == {eight[6]} and out.committed
    np.testing.assert_array_equal(np.asarray(out), [3.0, 3.0])
    g = fluxion.jit(lambda a: a + 1, backend="cpu")
    assert g(jnp.ones(2)).devices() == {eight[0]}
    with pytest.raises(ValueError, match="incompatible|committed argument"):
        f(fluxion.device_put(np.ones(2, np.float32), eight[1]))
    with pytest.raises(TypeError, match="device must be a Device"):
        fluxion.jit(lambda a: a, device="cpu:1")


def test_default_device_context(eight):
    with fluxion.default_device(eight[4]):
        assert fluxion.default_device.value == eight[4]
        z = jnp.zeros(2)
        assert z.devices() == {eight[4]} and not z.committed
        assert (z + 1).devices() == {eight[4]}
        assert fluxion.jit(lambda q: q * 2)(jnp.ones(2)).devices() == {eight[4]}
    assert fluxion.default_device.value is None
    assert jnp.zeros(2).devices() == {eight[0]}
    with jax.default_device(jax.devices()[4]):
        assert jax.numpy.zeros(2).devices() == {jax.devices()[4]}


def test_device_put_array_between_devices(eight):
    x = fluxion.device_put(np.arange(4, dtype=np.int32), eight[2])
    y = fluxion.device_put(x, eight[7])
    assert y.devices() == {eight[7]} and y.committed
    np.testing.assert_array_equal(np.asarray(y), np.arange(4))
    assert fluxion.device_put(x).devices() == {eight[2]}


def test_grad_and_vmap_on_committed_device(eight):
    x = fluxion.device_put(np.linspace(0, 1, 4, dtype=np.float32), eight[3])
    g = fluxion.grad(lambda v: jnp.sum(jnp.sin(v) ** 2))(x)
    assert g.devices() == {eight[3]}
    np.testing.assert_allclose(np.asarray(g), np.sin(2 * np.asarray(x)), rtol=1e-5)
    v = fluxion.vmap(lambda r: r * 2)(x)
    assert v.devices() == {eight[3]}

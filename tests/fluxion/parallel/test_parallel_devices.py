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


@pytest.mark.filterwarnings("ignore:backend and device argument on jit is deprecated")
def test_jit_device_and_backend(eight):
    f = fluxion.jit(lambda a: a * 3, device=eight[6])
    out = f(jnp.ones(2))
    assert out.devices() == {eight[6]} and out.committed
    np.testing.assert_array_equal(np.asarray(out), [3.0, 3.0])
    g = fluxion.jit(lambda a: a + 1, backend="cpu")
    assert g(jnp.ones(2)).devices() == {eight[0]}
    with pytest.raises(TypeError, match="device must be a Device"):
        fluxion.jit(lambda a: a, device="cpu:1")


def _placed(out):
    return sorted(d.id for d in out.devices()), out.committed, np.asarray(out).tolist()


@pytest.mark.filterwarnings("ignore:backend and device argument on jit is deprecated")
@pytest.mark.parametrize("how", ["device", "backend", "device_lower", "sharded", "two_args"])
def test_jit_device_backend_move_committed_arguments_like_jax(eight, how):
    # device=/backend= act as a device_put of every argument in JAX 0.10.2: an argument
    # committed to another device (or sharded over several) is copied there, the result is
    # committed there
    def run(lib, lnp, devs, sharding):
        x = lib.device_put(np.arange(4.0, dtype=np.float32), devs[2])
        kw = {"backend": "cpu"} if how == "backend" else {"device": devs[5]}
        if how == "two_args":
            y = lib.device_put(np.ones(4, np.float32), devs[5])
            return lib.jit(lambda a, b: a + b, **kw)(x, y)
        if how == "sharded":
            mesh = sharding.Mesh(np.array(devs[:2]), ("x",))
            x = lib.device_put(np.arange(4.0, dtype=np.float32),
                               sharding.NamedSharding(mesh, sharding.PartitionSpec("x")))
        f = lib.jit(lambda a: a * 3, **kw)
        if how == "device_lower":
            return f.lower(x).compile()(x)
        out = f(x)
        assert _placed(f(x)) == _placed(out)  # a second (cached) call places the same way
        return out
    mine = run(fluxion, jnp, eight, fluxion.sharding)
    ref = run(jax, jax.numpy, jax.devices(), jax.sharding)
    assert _placed(mine) == _placed(ref)
    assert type(mine.sharding).__name__ == type(ref.sharding).__name__ == "SingleDeviceSharding"


def test_jit_device_backend_warn_and_refuse_like_jax(eight):
    for lib, devs in ((fluxion, eight), (jax, jax.devices())):
        with pytest.warns(DeprecationWarning, match="backend and device argument on jit is "
                          "deprecated") as rec:
            lib.jit(lambda a: a, device=devs[1])
        assert rec[0].filename == __file__  # the user's line
        with pytest.warns(DeprecationWarning):
            lib.jit(lambda a: a, backend="cpu")
        with pytest.warns(DeprecationWarning), pytest.raises(
                ValueError, match="can't specify both a device and a backend"):
            lib.jit(lambda a: a, device=devs[1], backend="cpu")
        for kw in ("in_shardings", "out_shardings"):
            with pytest.warns(DeprecationWarning), pytest.raises(
                    ValueError, match=f"then {kw} should not be specified"):
                lib.jit(lambda a: a, backend="cpu", **{kw: lib.sharding.SingleDeviceSharding(
                    devs[0])})


@pytest.mark.parametrize("spec", ["single", "replicated", "split"])
def test_jit_in_shardings_move_or_refuse_committed_argument_like_jax(eight, spec):
    # in_shardings: a committed argument elsewhere moves when its HLO sharding is the same
    # (one device to another, one device to replicated); otherwise JAX's error
    def run(lib, devs):
        sh = lib.sharding
        x = lib.device_put(np.arange(4.0, dtype=np.float32), devs[2])
        mesh = sh.Mesh(np.array(devs[:2]), ("x",))
        s = {"single": sh.SingleDeviceSharding(devs[5]),
             "replicated": sh.NamedSharding(mesh, sh.PartitionSpec()),
             "split": sh.NamedSharding(mesh, sh.PartitionSpec("x"))}[spec]
        try:
            return _placed(lib.jit(lambda a: a + 1, in_shardings=s)(x))
        except ValueError as e:
            return str(e).split(".")[0]
    assert run(fluxion, eight) == run(jax, jax.devices())


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

"""Typed PRNG key arrays answer the device side of the Array API as JAX 0.10.2's do: eagerly
from their data (``sharding`` without the data's trailing key dimension, ``devices()``,
``committed``, shards holding keys, ...), and under jit/vmap as a traced key array (the same
exception types and ``hasattr`` answers as JAX's)."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax.sharding import NamedSharding as JNamedSharding
from jax.sharding import PartitionSpec as JP

import fluxion
from fluxion.sharding import NamedSharding as FNamedSharding
from fluxion.sharding import PartitionSpec as FP

# name -> call arguments (None: an attribute, not called)
TRACED = {
    "devices": (), "committed": None, "device": None, "sharding": None,
    "addressable_shards": None, "is_fully_addressable": None, "is_fully_replicated": None,
    "global_shards": None, "copy_to_host_async": (), "unsafe_buffer_pointer": (),
    "block_until_ready": (), "delete": (), "is_deleted": (), "on_device_size_in_bytes": (),
    "traceback": None, "addressable_data": (0,), "nbytes": None, "itemsize": None,
}
# eagerly: the names whose values both give (JAX's on_device_size_in_bytes / addressable_data
# on keys raise errors of their own, where Fluxion answers from the key data)
EAGER = ("devices", "committed", "device", "sharding", "addressable_shards",
         "is_fully_addressable", "is_fully_replicated", "global_shards", "nbytes", "itemsize")


def _outcome(fn):
    try:
        v = fn()
    except Exception as e:  # noqa: BLE001 - the exception type is what is compared
        return type(e).__name__
    return ("value", v) if isinstance(v, (bool, int)) else "ok"


@pytest.mark.parametrize("transform", ["jit", "vmap"])
def test_traced_keys_like_jax(transform):
    def probe(lib):
        seen = {}

        def f(k):
            for name, args in TRACED.items():
                has = _outcome(lambda: hasattr(k, name))
                got = _outcome(lambda: getattr(k, name) if args is None
                               else getattr(k, name)(*args))
                seen[name] = (has, got)
            return k
        keys = lib.random.split(lib.random.key(0), 4)
        (lib.jit(f) if transform == "jit" else lib.vmap(f))(keys)
        return seen
    assert probe(fluxion) == probe(jax)


def _eager(lib, keys):
    out = {}
    for name in EAGER:
        v = getattr(keys, name)
        v = v() if name == "devices" else v
        if name == "devices":
            v = sorted(d.id for d in v)
        elif name == "device":
            v = getattr(v, "id", None) if not hasattr(v, "spec") else tuple(v.spec)
        elif name == "sharding":
            v = (type(v).__name__, tuple(getattr(v, "spec", ())))
        elif name in ("addressable_shards", "global_shards"):
            v = [(s.device.id, s.index, str(s.data.dtype), s.data.shape) for s in v]
        out[name] = v
    out["key_data"] = np.asarray(lib.random.key_data(keys)).tolist()
    return out


def test_eager_keys_like_jax():
    ours, ref = fluxion.random.split(fluxion.random.key(0), 4), jax.random.split(
        jax.random.key(0), 4)
    assert _eager(fluxion, ours) == _eager(jax, ref)
    assert ours.block_until_ready() is ours and ref.block_until_ready() is ref
    assert ours.unsafe_buffer_pointer() == fluxion.random.key_data(ours).unsafe_buffer_pointer()
    assert ours.is_deleted() is False
    # 32 bytes on the CPU (jax's too); a TPU lays the buffer out in tiles (1024 on a v5e)
    size = ours.on_device_size_in_bytes()
    assert (size == 32 if fluxion.default_backend() == "cpu" else size >= 32)
    assert ours.addressable_data(0).shape == (4,)
    ours.copy_to_host_async()
    ours.delete()
    assert ours.is_deleted() is True


def test_sharded_keys_like_jax():
    if fluxion.device_count() < 2 or jax.device_count() < 2:
        pytest.skip("needs 2 devices")
    fm = fluxion.make_mesh((2,), ("x",))
    jm = jax.make_mesh((2,), ("x",))
    ours = fluxion.device_put(fluxion.random.split(fluxion.random.key(0), 4),
                              FNamedSharding(fm, FP("x")))
    ref = jax.device_put(jax.random.split(jax.random.key(0), 4), JNamedSharding(jm, JP("x")))
    assert _eager(fluxion, ours) == _eager(jax, ref)
    assert ours.sharding == FNamedSharding(fm, FP("x")) and ours.committed

"""Reading arrays back to the host in a process where ``import jax`` fails.

Run as a script (``python tests/fluxion/platforms/readback_check.py``) on any platform: the test
``test_readback.py`` runs it on the CPU in a subprocess, and the same file runs on a TPU chip
(``tools/bootstrap.py test --platform tpu`` runs that test there). References are NumPy values
made on the host; every conversion of a Fluxion array to the host is compared with them. Prints
``READBACK OK <platform> <checks>`` and exits 0, or raises.
"""

from __future__ import annotations

import importlib.abc
import sys


class _NoJax(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):  # noqa: ANN001, ANN201
        if name == "jax" or name.startswith("jax."):
            raise ImportError(f"import of {name!r} is blocked in this readback check")
        return None


sys.meta_path.insert(0, _NoJax())

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

import fluxion  # noqa: E402
import fluxion.numpy as jnp  # noqa: E402

CHECKS = [0]


def same(ours: np.ndarray, want: np.ndarray, what: str) -> None:
    CHECKS[0] += 1
    assert type(ours) is np.ndarray, (what, type(ours))
    assert ours.dtype == want.dtype, (what, ours.dtype, want.dtype)
    assert ours.shape == want.shape, (what, ours.shape, want.shape)
    # compare bit patterns (NaNs and ml_dtypes included) through a wide integer view
    a = ours.view(np.uint8) if ours.dtype.itemsize == 1 else ours
    b = want.view(np.uint8) if want.dtype.itemsize == 1 else want
    if want.dtype.kind in "iub" or want.dtype.itemsize == 1 or want.dtype.name == "bfloat16":
        assert np.array_equal(np.asarray(a).astype(np.int64) if a.dtype.kind != "V" else a,
                              np.asarray(b).astype(np.int64) if b.dtype.kind != "V" else b), \
            (what, ours, want)
    else:
        assert np.array_equal(ours, want, equal_nan=True), (what, ours, want)


def host_values(dt: np.dtype) -> np.ndarray:
    base = np.array([[0, 1, -2, 3], [4, -5, 6, 7]])
    if dt == np.bool_:
        return base > 0
    if dt.kind == "c":
        return (base + 0.5j * base[::-1]).astype(dt)
    if dt.name.startswith("uint"):
        return np.abs(base).astype(dt)
    if dt.name in ("int2",):
        return np.clip(base, -2, 1).astype(dt)
    if dt.name in ("int4",):
        return base.astype(dt)
    if dt.name in ("uint2",):
        return np.clip(np.abs(base), 0, 3).astype(dt)
    if dt.kind == "f" or dt.kind == "V" or dt.name.startswith("float"):
        return (base * 0.5).astype(dt)
    return base.astype(dt)


def main() -> None:
    platform = fluxion.default_backend()
    dtypes = [np.float32, np.int32, np.bool_, np.complex64, np.float16, np.int8, np.uint8,
              np.int16, np.uint32, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
              ml_dtypes.float8_e5m2, ml_dtypes.int4, ml_dtypes.uint4]
    devs = fluxion.devices()
    mesh = fluxion.make_mesh((len(devs),), ("x",))
    split = fluxion.NamedSharding(mesh, fluxion.P(None, "x"))
    repl = fluxion.NamedSharding(mesh, fluxion.P())
    for t in dtypes:
        dt = np.dtype(t)
        want = host_values(dt)
        x = fluxion.device_put(want)
        same(np.asarray(x), want, f"{dt} put")
        same(x.__array__(), want, f"{dt} __array__")
        same(fluxion.device_get({"a": x})["a"], want, f"{dt} device_get")
        y = jnp.reshape(x, (4, 2))  # computed on the device, not a placed host value
        same(np.asarray(y), want.reshape(4, 2), f"{dt} computed")
        z = jnp.asarray(want)[::-1]
        z.copy_to_host_async()
        same(np.asarray(z), want[::-1], f"{dt} copy_to_host_async")
        assert x.tolist() == want.tolist(), (dt, x.tolist())
        CHECKS[0] += 1
        assert str(x) == str(want), (dt, str(x), str(want))
        assert repr(x).startswith("Array(") and dt.name in repr(x), repr(x)
        CHECKS[0] += 2
        if want.shape[1] % len(devs) == 0:
            s = fluxion.device_put(want, split)
            same(np.asarray(s), want, f"{dt} sharded")
            r = fluxion.device_put(want, repl)
            same(np.asarray(r), want, f"{dt} replicated")
            for sh in s.addressable_shards:
                same(np.asarray(sh.data), want[sh.index], f"{dt} shard {sh.device}")
            fluxion.copy_to_host_async(s)
    # Python scalars
    f = jnp.float32(2.5) * 2
    assert float(f) == 5.0 and int(jnp.int32(7) + 1) == 8 and bool(jnp.array(True)) is True
    assert complex(jnp.complex64(1 + 2j)) == 1 + 2j and f.item() == 5.0
    assert float(jnp.asarray(1.5, ml_dtypes.bfloat16)) == 1.5
    assert format(f, ".1f") == "5.0" and int(jnp.asarray(3, ml_dtypes.int4)) == 3
    CHECKS[0] += 7
    big = jnp.arange(1 << 16, dtype=jnp.float32)
    same(np.asarray(big * 2), np.arange(1 << 16, dtype=np.float32) * 2, "large")
    assert "jax" not in sys.modules
    print(f"READBACK OK {platform} {CHECKS[0]}")


if __name__ == "__main__":
    main()

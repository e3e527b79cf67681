"""Programs a first run on a GPU (or any platform) checks, each against NumPy, one line each.

Run in a process where ``jax`` is not imported (Fluxion alone), on the platform that
``FLUXION_PLATFORMS`` selects:

    FLUXION_PLATFORMS=cuda python tools/gpu_programs.py      # a lent GPU machine
    FLUXION_PLATFORMS=cpu .venv/bin/python tools/gpu_programs.py   # the same checks here

Each line is ``ok|FAIL <name> <seconds> [error]``; the exit status is the number of failures.
The programs cover what issue 32 lists for a platform: reading results back (every dtype),
linalg and its gradients (the platform's solver kernels), host callbacks inside jit (ordered
ones too), random bits, FFT, a jitted MLP train step, vmap, donation and a sharded array.
"""

from __future__ import annotations

import sys
import time
import traceback
from typing import Callable

import numpy as np


def _close(got, want, tol: float = 2e-4) -> None:
    np.testing.assert_allclose(np.asarray(got).astype(np.complex128),
                               np.asarray(want).astype(np.complex128), rtol=tol, atol=tol)


def _programs() -> dict[str, Callable[[], None]]:
    import fluxion
    import fluxion.numpy as jnp
    from fluxion import lax

    rng = np.random.default_rng(0)
    a = rng.standard_normal((6, 6)).astype(np.float32)
    spd = a @ a.T + 6 * np.eye(6, dtype=np.float32)
    b = rng.standard_normal((6, 2)).astype(np.float32)

    def readback() -> None:
        for dt in (np.float32, np.int32, np.bool_, np.complex64, jnp.bfloat16, jnp.float16,
                   jnp.int8, jnp.uint8):
            x = jnp.arange(4).astype(dt)
            assert np.asarray(x).dtype == np.dtype(dt), dt
            assert x.tolist() == np.arange(4).astype(dt).tolist(), dt
        assert float(jnp.float32(2.5)) == 2.5 and int(jnp.int32(3)) == 3
        assert repr(jnp.ones(2)).startswith("Array(")
        x = jnp.ones(3)
        x.copy_to_host_async()
        assert fluxion.device_get(x).tolist() == [1.0, 1.0, 1.0]

    def linalg() -> None:
        lin = jnp.linalg
        _close(lin.cholesky(spd), np.linalg.cholesky(spd))
        _close(lin.solve(a, b), np.linalg.solve(a, b), 1e-3)
        _close(lin.inv(spd), np.linalg.inv(spd), 1e-3)
        _close(lin.slogdet(spd)[1], np.linalg.slogdet(spd)[1])
        q, r = lin.qr(a)
        _close(q @ r, a)
        w, v = lin.eigh(spd)
        _close(w, np.linalg.eigvalsh(spd), 1e-3)
        _close(lin.svd(a, compute_uv=False), np.linalg.svd(a, compute_uv=False), 1e-3)
        _close(np.sort_complex(np.asarray(lin.eigvals(a))), np.sort_complex(np.linalg.eigvals(a)),
               1e-3)
        d = np.full(6, 4.0, np.float32)
        e = np.ones(6, np.float32)
        e0 = e.copy()
        e0[0] = 0
        e1 = e.copy()
        e1[-1] = 0
        full = np.diag(d) + np.diag(e[1:], -1) + np.diag(e[:-1], 1)
        _close(lax.linalg.tridiagonal_solve(e0, d, e1, b), np.linalg.solve(full, b), 1e-3)

    def linalg_grads() -> None:
        g = fluxion.grad(lambda m: jnp.linalg.slogdet(m)[1])(spd)
        _close(g, np.linalg.inv(spd).T, 1e-3)
        g = fluxion.grad(lambda m: jnp.sum(jnp.linalg.cholesky(m)))(spd)
        eps = 1e-2
        bump = np.zeros_like(spd)
        bump[2, 1] = bump[1, 2] = eps
        fd = (np.sum(np.linalg.cholesky(spd + bump)) - np.sum(np.linalg.cholesky(spd - bump))) / (
            2 * eps)
        _close(np.asarray(g)[2, 1] + np.asarray(g)[1, 2], fd, 2e-2)

    def callbacks() -> None:
        from fluxion.experimental import io_callback
        seen: list = []

        @fluxion.jit
        def f(x):
            y = fluxion.pure_callback(lambda v: np.sin(np.asarray(v)),
                                      fluxion.ShapeDtypeStruct((3,), np.float32), x)
            io_callback(lambda v: seen.append(np.asarray(v).tolist()), None, y, ordered=True)
            fluxion.debug.print("gpu_programs: x={}", x)
            return y * 2

        x = np.arange(3, dtype=np.float32)
        _close(f(x), np.sin(x) * 2)
        assert len(seen) == 1, seen

    def random_fft() -> None:
        k = fluxion.random.key(0)
        bits = np.asarray(fluxion.random.bits(k, (4,)))
        assert bits.dtype == np.uint32 and len(set(bits.tolist())) == 4
        n = fluxion.random.normal(k, (10000,))
        assert abs(float(jnp.mean(n))) < 0.05 and abs(float(jnp.std(n)) - 1) < 0.05
        x = rng.standard_normal(16).astype(np.float32)
        _close(jnp.fft.rfft(x), np.fft.rfft(x), 1e-3)

    def train_step() -> None:
        w1 = jnp.asarray(rng.standard_normal((8, 16)).astype(np.float32) * 0.3)
        w2 = jnp.asarray(rng.standard_normal((16, 1)).astype(np.float32) * 0.3)
        xs = jnp.asarray(rng.standard_normal((32, 8)).astype(np.float32))
        ys = jnp.sum(xs, axis=1, keepdims=True)

        def loss(p, x, y):
            h = jnp.tanh(x @ p[0])
            return jnp.mean((h @ p[1] - y) ** 2)

        @fluxion.jit
        def step(p, x, y):
            g = fluxion.grad(loss)(p, x, y)
            return [w - 0.05 * gw for w, gw in zip(p, g)]

        p = [w1, w2]
        first = float(loss(p, xs, ys))
        for _ in range(50):
            p = step(p, xs, ys)
        assert float(loss(p, xs, ys)) < first * 0.7, (first, float(loss(p, xs, ys)))

    def vmap_donate_shard() -> None:
        xs = jnp.asarray(rng.standard_normal((5, 3)).astype(np.float32))
        _close(fluxion.vmap(lambda r: jnp.dot(r, r))(xs), np.sum(np.asarray(xs) ** 2, axis=1))
        f = fluxion.jit(lambda x: x + 1, donate_argnums=0)
        y = f(jnp.zeros(4))
        assert y.tolist() == [1.0] * 4
        devs = fluxion.devices()
        mesh = fluxion.sharding.Mesh(np.array(devs), ("d",))
        s = fluxion.sharding.NamedSharding(mesh, fluxion.sharding.PartitionSpec("d"))
        z = fluxion.device_put(np.arange(4 * len(devs), dtype=np.float32), s)
        assert float(jnp.sum(z)) == float(np.arange(4 * len(devs)).sum())

    return {"readback": readback, "linalg": linalg, "linalg_grads": linalg_grads,
            "callbacks": callbacks, "random_fft": random_fft, "train_step": train_step,
            "vmap_donate_shard": vmap_donate_shard}


def main() -> int:
    """Run every program; print one line each; return the number of failures."""
    import fluxion
    print(f"backend {fluxion.default_backend()} devices {fluxion.devices()}", flush=True)
    failures = 0
    for name, fn in _programs().items():
        t0 = time.perf_counter()
        try:
            fn()
            print(f"ok   {name} {time.perf_counter() - t0:.2f}s", flush=True)
        except Exception as e:  # report and go on: one line per program
            failures += 1
            last = traceback.format_exception_only(type(e), e)[-1].strip()
            print(f"FAIL {name} {time.perf_counter() - t0:.2f}s {last[:400]}", flush=True)
    assert "jax" not in sys.modules, "this check must run without jax imported"
    return failures


if __name__ == "__main__":
    sys.exit(main())

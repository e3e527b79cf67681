"""Fluxion quickstart: the JAX README's examples, run on Fluxion.

Run with ``python3.11 tools/bootstrap.py demo`` (or ``.venv/bin/python examples/quickstart.py``).
It prints results, a staged program and timings against NumPy; it writes no files.

    .venv/bin/python examples/quickstart.py            # the demo
    .venv/bin/python examples/quickstart.py --quick    # smaller arrays, one timing call each

On Linux with transparent huge pages in ``madvise`` mode (``/sys/kernel/mm/transparent_hugepage/
enabled``), the demo starts itself once more with ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``, so that
glibc asks for huge pages for the large blocks it maps, XLA's result buffers among them. NumPy
already does so for its own arrays (``madvise(MADV_HUGEPAGE)`` on each allocation of 4 MiB or
more); a fresh result of hundreds of MB faulted in 4 KiB pages costs more than computing it. The
per-example gradient row writes 342 MB per call: on a 2-core machine (load 1.1-3.4), four demo runs
each way, it took 142-157 ms against NumPy's 189-257 ms with 4 KiB pages and 51-53 ms against
176-181 ms with huge pages (the 5000x5000 ``x*x + x*2.0`` row 30-44 ms -> 14-15 ms). Set
``GLIBC_TUNABLES`` yourself (``glibc.malloc.hugetlb=0`` keeps 4 KiB pages) and the demo runs as it
is started.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

import fluxion as jax
import fluxion.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cli import parser  # noqa: E402

REPS = 5  # timing rounds per program (1 with --quick)
MIN_TIME = 0.02  # seconds: a fast call is repeated until one timed block lasts this long


def timeit(fn, *args) -> float:
    """Median wall time of ``fn(*args)`` over ``REPS`` calls after a warm-up call (which compiles),
    in milliseconds (results waited for)."""
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return 1e3 * sorted(times)[len(times) // 2]


def _loops(call) -> int:
    """How many calls make one timed block last at least ``MIN_TIME`` (at least 1)."""
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            call()
        if time.perf_counter() - t0 >= MIN_TIME or number >= 1 << 16:
            return number
        number *= 4


def compare(fx_call, np_call) -> tuple[float, float]:
    """Per-call milliseconds of two zero-argument callables doing the same work, each warmed up,
    timed in ``REPS`` interleaved rounds (Fluxion, NumPy, Fluxion, ...) so that a change of
    machine load hits both; a fast call is looped (``MIN_TIME`` per block). Medians over rounds."""
    fx_call(), np_call()  # warm-up: compiles, and fills both sides' caches
    calls = [(fx_call, _loops(fx_call)), (np_call, _loops(np_call))]
    times: list[list[float]] = [[], []]
    for _ in range(REPS):
        for k, (call, number) in enumerate(calls):
            t0 = time.perf_counter()
            for _ in range(number):
                call()
            times[k].append((time.perf_counter() - t0) / number)
    return tuple(1e3 * sorted(t)[len(t) // 2] for t in times)


def section(title: str) -> None:
    print(f"\n=== {title} ===")


def main(argv: list[str] | None = None) -> None:
    global REPS
    args = parser(__doc__, "quickstart", quick_help="1000x1000 instead of 5000x5000 arrays, "
                  "one call per timing", writes=False).parse_args(argv)
    global MIN_TIME
    REPS = 1 if args.quick else 5
    MIN_TIME = 0.002 if args.quick else 0.02
    print(f"Fluxion {jax.__version__} on {jax.default_backend()} ({jax.device_count()} device)"
          + (f", GLIBC_TUNABLES={os.environ['GLIBC_TUNABLES']}" if "GLIBC_TUNABLES" in os.environ
             else ""))

    section("NumPy on an accelerator")
    x = jnp.arange(10.0)
    print("x            =", x)
    print("jnp.sin(x)   =", jnp.sin(x))
    print("x @ x        =", x @ x)

    section("jit: compile a whole function with XLA")

    def slow_f(x):
        # Element-wise ops see a large benefit from fusion.
        return x * x + x * 2.0

    fast_f = jax.jit(slow_f)
    n = 1000 if args.quick else 5000
    xs = jnp.ones((n, n))
    host = np.ones((n, n), np.float32)
    fast_f(xs).block_until_ready()  # compile once
    t_jit = timeit(fast_f, xs)
    t_eager = timeit(slow_f, xs)
    t_np = timeit(lambda a: a * a + a * 2.0, host)
    print(f"x*x + x*2.0 on {n}x{n}: jit {t_jit:.1f} ms, eager {t_eager:.1f} ms, NumPy {t_np:.1f} ms "
          f"(jit is {t_np / t_jit:.1f}x NumPy)")
    print("result[0, :3] =", fast_f(xs)[0, :3])

    section("jit of a Python loop: unrolled while tracing, compiled once")

    def ten_steps(x):
        for _ in range(10):
            x = 0.5 * x + 0.1 * jnp.sin(x)
        return x

    print("ten_steps(1.0): jit", jax.jit(ten_steps)(1.0), "eager", ten_steps(1.0))

    section("make_jaxpr: the staged program")
    print(jax.make_jaxpr(slow_f)(jnp.ones(3)))

    section("An MLP forward pass, jitted")

    def predict(params, inputs):
        for w, b in params:
            outputs = jnp.dot(inputs, w) + b
            inputs = jnp.tanh(outputs)
        return outputs

    rng = np.random.default_rng(0)
    sizes = [784, 512, 512, 10]
    params = [(jnp.asarray(rng.normal(size=(m, k)).astype(np.float32) * 0.05), jnp.zeros(k))
              for m, k in zip(sizes[:-1], sizes[1:])]
    batch = jnp.asarray(rng.normal(size=(128, 784)).astype(np.float32))
    predict_jit = jax.jit(predict)
    out = predict_jit(params, batch)
    print("logits shape:", out.shape, "dtype:", out.dtype)
    print("jit == eager:", np.allclose(np.asarray(out), np.asarray(predict(params, batch)), atol=1e-5))
    host_params = [(np.asarray(w), np.asarray(b)) for w, b in params]
    host_batch = np.asarray(batch)

    def predict_np(params, inputs):
        for w, b in params:
            outputs = inputs @ w + b
            inputs = np.tanh(outputs)
        return outputs

    print(f"forward: jit {timeit(predict_jit, params, batch):.2f} ms, "
          f"NumPy {timeit(predict_np, host_params, host_batch):.2f} ms")

    section("grad: derivatives of Python functions")

    def tanh(x):
        y = jnp.exp(-2.0 * x)
        return (1.0 - y) / (1.0 + y)

    grad_tanh = jax.grad(tanh)
    print("grad(tanh)(1.0)             =", grad_tanh(1.0))
    print("grad(grad(grad(tanh)))(1.0) =", jax.grad(jax.grad(jax.grad(tanh)))(1.0))

    def abs_val(x):
        if x > 0:
            return x
        else:
            return -x

    print("grad(abs_val)(1.0), (-1.0) =", jax.grad(abs_val)(1.0), jax.grad(abs_val)(-1.0))

    section("vmap: automatic batching")

    def l1_distance(a, b):
        return jnp.sum(jnp.abs(a - b))

    pts = jax.random.normal(jax.random.key(0), (100, 3))
    pairwise = jax.jit(jax.vmap(jax.vmap(l1_distance, (0, None)), (None, 0)))
    dists = pairwise(pts, pts)
    print("pairwise distances:", dists.shape, dists.dtype, "d[0, 1] =", dists[0, 1])

    def loss(params, inputs, targets):
        preds = predict(params, inputs)
        return jnp.sum((preds - targets) ** 2)

    targets = jnp.zeros((128, 10))
    per_example = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
    grads = per_example(params, batch[:, None, :], targets[:, None, :])
    print("per-example gradient of W1:", grads[0][0].shape)

    section(f"Timings against NumPy ({REPS} interleaved round{'s' if REPS > 1 else ''}, "
            "both sides warmed up, "
            "the same result computed and waited for)")
    rows = []
    grad_tanh_jit = jax.jit(grad_tanh)
    one = np.float32(1.0)
    rows.append(("grad(tanh)(1.0), jitted, read as float",
                 compare(lambda: float(grad_tanh_jit(1.0)),
                         lambda: float(1.0 - np.tanh(one) ** 2)),
                 "a scalar: per-call dispatch against two NumPy scalar ops"))
    rows.append((f"x*x + x*2.0, {n}x{n}",
                 compare(lambda: fast_f(xs).block_until_ready(), lambda: host * host + host * 2.0),
                 "one fused pass over memory against NumPy's three"))
    ten_jit = jax.jit(ten_steps)
    rows.append(("10-step loop, scalar",
                 compare(lambda: float(ten_jit(1.0)), lambda: float(ten_steps_np(one))),
                 "30 scalar ops: one compiled call against 30 NumPy calls"))
    host_pts = np.asarray(pts)
    rows.append(("pairwise L1 distances (100, 3)",
                 compare(lambda: pairwise(pts, pts).block_until_ready(),
                         lambda: np.abs(host_pts[None, :, :] - host_pts[:, None, :]).sum(-1)),
                 "vmap of vmap fused into one loop, no (100, 100, 3) temporary"))
    host_targets = np.zeros((128, 10), np.float32)
    np_grads = per_example_np(host_params, host_batch, host_targets)
    print("NumPy backprop equals per-example grads:",
          all(np.allclose(np.asarray(g), h.reshape(np.shape(g)), rtol=1e-3, atol=1e-4)
              for g, h in zip(jax.tree_util.tree_leaves(grads), jax.tree_util.tree_leaves(np_grads))))
    bx, tx = batch[:, None, :], targets[:, None, :]
    rows.append(("per-example grads, MLP batch 128",
                 compare(lambda: jax.block_until_ready(per_example(params, bx, tx)),
                         lambda: per_example_np(host_params, host_batch, host_targets)),
                 "writes 128 weight-sized gradients (342 MB): page faults + memory on both sides"))
    print(f"{'program':40s} {'Fluxion ms':>11s} {'NumPy ms':>10s} {'NumPy/Fluxion':>14s}  what it shows")
    for name, (t_fx, t_host), why in rows:
        print(f"{name:40s} {t_fx:11.4f} {t_host:10.4f} {t_host / t_fx:14.2f}  {why}")


def ten_steps_np(x):
    """The 10-step loop in NumPy."""
    for _ in range(10):
        x = 0.5 * x + 0.1 * np.sin(x)
    return x


def per_example_np(params, inputs, targets):
    """Per-example gradients of the squared-error MLP loss, by hand-written backprop in NumPy."""
    acts = [inputs]
    pre = []
    h = inputs
    for i, (w, b) in enumerate(params):
        z = h @ w + b
        pre.append(z)
        h = np.tanh(z) if i < len(params) - 1 else z
        acts.append(h)
    delta = 2.0 * (acts[-1] - targets)                      # (B, out)
    grads = []
    for i in range(len(params) - 1, -1, -1):
        w, _ = params[i]
        grads.append((np.einsum("bi,bo->bio", acts[i], delta), delta))
        if i:
            delta = (delta @ w.T) * (1.0 - acts[i] ** 2)
    return grads[::-1]


def restart_with_huge_pages() -> None:
    """Replace this process by the same command with ``glibc.malloc.hugetlb=1`` added to
    ``GLIBC_TUNABLES`` (the module docstring says why), where that can matter: Linux, glibc,
    transparent huge pages in ``madvise`` mode, and the tunable not set yet. Returns otherwise."""
    if sys.platform != "linux" or "glibc.malloc.hugetlb" in os.environ.get("GLIBC_TUNABLES", ""):
        return
    try:
        mode = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return
    import platform

    if "[madvise]" not in mode or platform.libc_ver()[0] != "glibc":
        return
    tunables = os.environ.get("GLIBC_TUNABLES")
    env = dict(os.environ, GLIBC_TUNABLES=(f"{tunables}:" if tunables else "")
               + "glibc.malloc.hugetlb=1")
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)


if __name__ == "__main__":
    restart_with_huge_pages()
    main()

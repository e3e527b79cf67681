"""Time XLA's compile and one run of ``lax.cumsum`` (int32, float32) for jax and for Fluxion.

Made for a TPU chip (issue 32): there a cumsum over a long axis lowered as one
``reduce_window`` spanning the axis (jax 0.10.2's lowering) takes XLA's TPU compiler seconds
(250,000 int32 elements: 10.9 s on a v5e), and Fluxion lowers axes longer than 1024 elements in
blocks instead (``fluxion.lax.cumulative``). For each size n and dtype the table gives the time to
trace and lower, XLA's compile, the first run (input already on the device), the widest
``reduce_window`` in the module, and the value check against NumPy (int32: equal; float32: the
largest error relative to the float64 total).

Each library runs in its own child process, jax first then Fluxion (one process at a time may
hold a TPU chip), each stopped when its share of ``--budget`` seconds is spent: a case that did
not finish shows as ``>Ns``. The parent imports neither. Needs only jax, jaxlib and NumPy
installed; the repository's ``packages/*/src`` are appended to the children's ``PYTHONPATH``.
Fluxion's and jax's persistent compilation caches are off in the children.

Usage, on the TPU machine, from the repository root::

    python3 tools/tpu_cumsum_compile.py                 # n = 1e3, 1e4, 2.5e5, 4e6; < 120 s
    python3 tools/tpu_cumsum_compile.py --forms 1024,512 --sizes 250000,4000000

``--forms``: Fluxion's lowerings to time, each a block size (``_TPU_BLOCK``: an axis up to it
is one window, a longer one is scanned in blocks of it); the first should be the default (1024).
The rows of further forms come after all sizes of the first, while the budget lasts, and only
where they give another module (the default list adds blocks of 128, n = 1000 included).
The ``form`` column: ``window`` (one reduce_window over the axis) or ``bN``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import select
import subprocess
import sys
import tempfile
import time

import numpy as np

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_WINDOW = re.compile(r"window_dimensions = array<i64: ([0-9, ]+)>")


def _emit(**row: object) -> None:
    print(json.dumps(row), flush=True)


def _inputs(n: int, dtype: str) -> np.ndarray:
    rng = np.random.default_rng(n)
    if dtype == "int32":  # sums stay below 2**31 up to n = 2e7
        return rng.integers(0, 100, n).astype(np.int32)
    return rng.random(n).astype(np.float32)


def _check(x: np.ndarray, got: np.ndarray) -> tuple[bool, float]:
    """(ok, error): int32 equal to NumPy's cumsum; float32 within 1e-3 of the float64 total."""
    if x.dtype == np.int32:
        want = np.cumsum(x.astype(np.int64))
        return bool(np.array_equal(got.astype(np.int64), want)), float(np.abs(got - want).max())
    want = np.cumsum(x.astype(np.float64))
    err = float(np.abs(got.astype(np.float64) - want).max() / max(want[-1], 1e-30))
    return err <= 1e-3, err


def _worker(lib: str, sizes: list[int], forms: list[int]) -> None:
    """Run in a child process: one JSON line per event on stdout."""
    t_open = time.perf_counter()
    if lib == "jax":
        import jax
        from jax import lax
        backend, dev = jax.default_backend(), jax.devices()[0]

        def put(a: np.ndarray) -> object:
            return jax.device_put(a, dev).block_until_ready()
        jit, settings = jax.jit, [None]  # jax: one window
    else:
        import fluxion
        from fluxion import lax
        from fluxion.lax import cumulative
        backend, dev = fluxion.default_backend(), fluxion.devices()[0]

        def put(a: np.ndarray) -> object:
            return fluxion.device_put(a, dev).block_until_ready()
        jit, settings = fluxion.jit, forms
    warm = jit(lambda v: v + 1)
    t0 = time.perf_counter()
    np.asarray(warm(put(np.ones(8, np.float32))))
    _emit(event="ready", lib=lib, backend=backend, device=str(dev),
          open_s=round(t0 - t_open, 2), warmup_s=round(time.perf_counter() - t0, 2))
    seen = set()
    for form in settings:
        if form is not None:
            cumulative._TPU_BLOCK = form
        for n in sizes:
            label = "window" if form is None or n <= form else f"b{form}"
            if (n, label) in seen:
                continue
            seen.add((n, label))
            for dtype in ("int32", "float32"):
                _emit(event="start", lib=lib, form=label, first=form == settings[0], n=n,
                      dtype=dtype)
                x = _inputs(n, dtype)
                xd = put(x)
                f = jit(lambda v: lax.cumsum(v, 0))
                t1 = time.perf_counter()
                lowered = f.lower(xd)
                t2 = time.perf_counter()
                compiled = lowered.compile()
                t3 = time.perf_counter()
                out = compiled(xd)
                out.block_until_ready()
                t4 = time.perf_counter()
                got = np.asarray(out)
                ok, err = _check(x, got)
                widths = [int(np.prod([int(d) for d in w.split(",")]))
                          for w in _WINDOW.findall(lowered.as_text())]
                _emit(event="done", lib=lib, form=label, first=form == settings[0], n=n,
                      dtype=dtype,
                      lower_ms=round(1e3 * (t2 - t1), 1), compile_s=round(t3 - t2, 3),
                      run_ms=round(1e3 * (t4 - t3), 2), windows=len(widths),
                      widest=max(widths, default=0), ok=ok, err=err)


def _run_child(lib: str, args: argparse.Namespace, deadline: float,
               platform: str | None = None) -> list[dict]:
    """Run the worker for ``lib`` until it ends or ``deadline`` (time.monotonic) passes;
    ``platform``: the only platform Fluxion may open (no silent fallback to the CPU)."""
    env = dict(os.environ, FLUXION_ENABLE_COMPILATION_CACHE="0",
               JAX_ENABLE_COMPILATION_CACHE="0")
    if platform and "FLUXION_PLATFORMS" not in env:
        env["FLUXION_PLATFORMS"] = platform
    srcs = sorted(glob.glob(os.path.join(_ROOT, "packages", "*", "src")))
    env["PYTHONPATH"] = os.pathsep.join([p for p in [env.get("PYTHONPATH", "")] if p] + srcs)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", lib, "--sizes", args.sizes,
           "--forms", args.forms]
    rows: list[dict] = []
    with tempfile.TemporaryFile("w+b") as err:
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, env=env, cwd=_ROOT)
        fd = child.stdout.fileno()
        started, pending, stopped = time.monotonic(), b"", False
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                child.kill()  # only this script's own child
                child.wait()
                stopped = True
                break
            # os.read, not readline: a buffered reader would hold lines that select cannot see
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                child.wait()
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                row = json.loads(line)
                row["t"] = time.monotonic() - started
                rows.append(row)
        if stopped and rows and rows[-1]["event"] == "start":
            rows[-1]["event"] = "stopped"
            rows[-1]["after_s"] = round(time.monotonic() - started - rows[-1]["t"], 1)
        if child.returncode not in (0, None) and not stopped:
            err.seek(0)
            tail = err.read().decode(errors="replace").splitlines()[-15:]
            print(f"# {lib} worker exited with {child.returncode}; last stderr lines:",
                  *tail, sep="\n# ")
    return rows


def _table(rows: list[dict]) -> None:
    print(f"{'lib':8} {'form':>6} {'n':>8} {'dtype':7} {'lower ms':>8} {'compile s':>9} "
          f"{'run ms':>8} {'windows':>7} {'widest':>8}  check")
    for r in rows:
        head = f"{r['lib']:8} {r['form']:>6} {r['n']:>8} {r['dtype']:7}"
        if r["event"] == "stopped":
            print(f"{head} {'':>8} {'>' + str(r['after_s']) + 's':>9}   (stopped: budget spent)")
            continue
        check = ("ok" if r["ok"] else "WRONG") + (f" rel err {r['err']:.1e}"
                                                  if r["dtype"] == "float32" else "")
        print(f"{head} {r['lower_ms']:>8} {r['compile_s']:>9} {r['run_ms']:>8} "
              f"{r['windows']:>7} {r['widest']:>8}  {check}")


def main() -> None:
    """Parse the arguments; run the jax worker, then the Fluxion worker; print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,250000,4000000")
    ap.add_argument("--forms", default="1024,128",
                    help="Fluxion lowerings: block sizes (comma separated)")
    ap.add_argument("--budget", type=float, default=110.0, help="seconds for both workers")
    ap.add_argument("--jax-share", type=float, default=0.5,
                    help="fraction of the budget the jax worker may use")
    ap.add_argument("--worker", choices=["jax", "fluxion"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    forms = [int(f) for f in args.forms.split(",")]
    if args.worker:
        _worker(args.worker, sizes, forms)
        return
    t0 = time.monotonic()
    rows = _run_child("jax", args, t0 + args.budget * args.jax_share)
    # Fluxion on the platform jax had (the chip, once jax's process has let it go)
    plat = next((r["backend"] for r in rows if r["event"] == "ready"), None)
    for _attempt in range(2):
        got = _run_child("fluxion", args, t0 + args.budget, plat)
        rows += got
        if any(r["event"] == "ready" for r in got) or time.monotonic() > t0 + args.budget - 20:
            break
        print("# the fluxion worker did not open the device; trying again in 3 s")
        time.sleep(3)
    for r in rows:
        if r["event"] == "ready":
            print(f"# {r['lib']}: backend {r['backend']} ({r['device']}), import + open "
                  f"{r['open_s']} s, first compile + run of v+1 {r['warmup_s']} s")
    _table([r for r in rows if r["event"] in ("done", "stopped")])
    done = {(r["lib"], r["first"], r["n"], r["dtype"]): r for r in rows
            if r["event"] == "done"}
    for (lib, first, n, dtype), r in done.items():
        j = done.get(("jax", True, n, dtype))
        if lib == "fluxion" and first and j:
            print(f"# n={n} {dtype}: compile fluxion/jax {r['compile_s']:.3f}/{j['compile_s']:.3f}"
                  f" s, run {r['run_ms']}/{j['run_ms']} ms")
    print(f"# total {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    main()

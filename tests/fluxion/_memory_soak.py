"""The soak workloads of tests/fluxion/test_memory.py, run in a fresh process.

``python _memory_soak.py WORKLOAD`` warms up, runs the workload in two halves and prints the RSS
growth in MiB over the whole run and over its second half (after a warm-up, a flat process grows
by about nothing in the second half).
"""

from __future__ import annotations

import gc
import itertools
import os
import sys
import threading

import numpy as np

import fluxion
import fluxion.numpy as jnp


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


_count = itertools.count(1)
x = jnp.arange(16.0)
y = jnp.ones(16)
g = fluxion.jit(lambda a, s: a * s)


def closures(n: int) -> None:
    for _ in range(n):
        c = jnp.arange(16.0) * next(_count)
        f = fluxion.jit(lambda a: a * c + 1.0)
        f(x).block_until_ready()


def eager(n: int) -> None:
    for i in range(n):
        (x + (i * 0.37 + 0.1)).block_until_ready()


def jitscalar(n: int) -> None:
    for i in range(n):
        g(x, i * 0.37 + 0.1).block_until_ready()


def same(n: int) -> None:
    for _ in range(n):
        g(x, y).block_until_ready()


def threads(n: int) -> None:
    jobs = [(closures, n // 30), (eager, n), (jitscalar, n), (same, n)]
    ts = [threading.Thread(target=fn, args=(k,)) for fn, k in jobs]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


WORKLOADS = {"closures": (closures, 1000), "eager": (eager, 30000),
             "jitscalar": (jitscalar, 30000), "same": (same, 20000), "threads": (threads, 6000)}


def main() -> None:
    fn, n = WORKLOADS[sys.argv[1]]
    fn(max(n // 50, 5))
    gc.collect()
    r0 = rss_mib()
    fn(n // 2)
    gc.collect()
    r1 = rss_mib()
    fn(n - n // 2)
    gc.collect()
    r2 = rss_mib()
    assert np.isfinite(np.asarray(g(x, y))).all()
    print(f"{r2 - r0:.2f} {r2 - r1:.2f}")


if __name__ == "__main__":
    main()

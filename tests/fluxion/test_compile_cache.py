"""The persistent executable cache (backend/compile_cache.py): hits across processes, bad entries
ignored and rewritten, the size bound, turning it off, identical results, callbacks not cached.

Every test uses a temporary directory; tests/conftest.py keeps the cache off for the rest of the
suite."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _compare import platform_tol

import fluxion
import fluxion.numpy as jnp
from fluxion.backend import compile_cache, dispatch
from fluxion.core import monitoring
from fluxion.core.config import config, flag_context

# The in-memory caches are emptied around each test (a hit must come from the disk): these run
# after the other tests of a worker (tests/conftest.py).
pytestmark = pytest.mark.clears_caches


@pytest.fixture
def cache(disk_cache):
    """The persistent cache's folder (tests/fluxion/conftest.py's ``disk_cache``)."""
    return disk_cache


def _entries(d):
    compile_cache.flush()  # entries are written on the cache's writer thread
    return sorted(f for f in os.listdir(d) if f.endswith(".fxe")) if os.path.isdir(d) else []


class _Events:
    def __init__(self):
        self.compiles = 0
        self.hits = 0

    def duration(self, event, duration, **kw):
        if event == monitoring.BACKEND_COMPILE_EVENT:
            self.compiles += 1

    def event(self, event, **kw):
        if event == compile_cache.CACHE_HIT_EVENT:
            self.hits += 1


@pytest.fixture
def events():
    ev = _Events()
    monitoring.register_event_duration_secs_listener(ev.duration)
    monitoring.register_event_listener(ev.event)
    try:
        yield ev
    finally:
        monitoring.unregister_event_duration_listener(ev.duration)
        monitoring.unregister_event_listener(ev.event)


def _f(x, w):
    return jnp.sum(jnp.tanh(x @ w) ** 2, axis=0) + jnp.cos(w[0])


def _args():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((5, 3)).astype(np.float32),
            rng.standard_normal((3, 3)).astype(np.float32))


def test_default_location(monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", "/some/xdg")
    with flag_context("jax_enable_compilation_cache", True), \
            flag_context("jax_compilation_cache_dir", None):
        assert compile_cache.cache_dir() == os.path.join("/some/xdg", "fluxion", "executables")
    with flag_context("jax_enable_compilation_cache", False):
        assert compile_cache.cache_dir() is None
    with flag_context("jax_enable_compilation_cache", True), \
            flag_context("jax_compilation_cache_dir", ""):
        assert compile_cache.cache_dir() is None


def test_second_process_hits_cache(tmp_path):
    d = tmp_path / "cache"
    code = textwrap.dedent("""
        import numpy as np, fluxion, fluxion.numpy as jnp
        from fluxion.core import monitoring
        n = {"compile": 0, "hit": 0}
        monitoring.register_event_duration_secs_listener(
            lambda e, t, **k: n.__setitem__("compile", n["compile"] + (e.endswith("backend_compile_duration"))))
        monitoring.register_event_listener(
            lambda e, **k: n.__setitem__("hit", n["hit"] + (e.endswith("cache_hits"))))
        g = fluxion.jit(fluxion.grad(lambda w, x: jnp.sum(jnp.tanh(x @ w) ** 2)))
        x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
        out = np.asarray(g(jnp.ones((3, 2)), x))
        print(out.tobytes().hex(), n["compile"], n["hit"])
    """)
    env = dict(os.environ, FLUXION_ENABLE_COMPILATION_CACHE="1",
               FLUXION_COMPILATION_CACHE_DIR=str(d))
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=180, env=env)
        assert r.returncode == 0, r.stderr[-2000:]
        runs.append(r.stdout.split())
    (out1, compiles1, hits1), (out2, compiles2, hits2) = runs
    assert int(compiles1) >= 1 and int(hits1) == 0
    assert int(compiles2) == 0 and int(hits2) == int(compiles1)  # everything came from disk
    assert out1 == out2  # bit-identical
    assert _entries(str(d))
    assert not [f for f in os.listdir(d) if f.startswith(".tmp-")]


def test_hit_gives_identical_results(cache, events):
    args = _args()
    ref = np.asarray(fluxion.jit(_f)(*args))
    assert events.compiles >= 1 and events.hits == 0
    assert _entries(cache)
    fluxion.clear_caches()
    c0 = events.compiles
    out = np.asarray(fluxion.jit(_f)(*args))
    assert events.compiles == c0 and events.hits >= 1
    assert out.dtype == ref.dtype and out.shape == ref.shape
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_allclose(out, np.sum(np.tanh(args[0] @ args[1]) ** 2, axis=0)
                               + np.cos(args[1][0]), **platform_tol(1e-5))


@pytest.mark.parametrize("damage", ["garbage", "truncate", "flip"])
def test_bad_entry_ignored_and_rewritten(cache, events, damage, caplog):
    args = _args()
    ref = np.asarray(fluxion.jit(_f)(*args))
    files = _entries(cache)
    for name in files:
        p = os.path.join(cache, name)
        data = open(p, "rb").read()
        if damage == "garbage":
            data = b"garbage"
        elif damage == "truncate":
            data = data[: len(data) // 2]
        else:
            data = data[:-10] + bytes(b ^ 0xFF for b in data[-10:])
        with open(p, "wb") as f:
            f.write(data)
    fluxion.clear_caches()
    c0 = events.compiles
    out = np.asarray(fluxion.jit(_f)(*args))
    np.testing.assert_array_equal(out, ref)
    assert events.compiles > c0 and events.hits == 0  # recompiled, nothing bad was loaded
    assert "compilation cache entry" in caplog.text
    for name in files:  # rewritten: loadable again
        assert compile_cache.load(cache, name[:-4]) is not None


def test_size_bound_evicts_least_recently_used(tmp_path):
    d = str(tmp_path)
    blob = os.urandom(10_000)  # incompressible: each entry is a bit over 10 kB
    keys = [f"{i:064x}" for i in range(5)]
    for i, k in enumerate(keys):
        compile_cache.store(d, k, blob, max_size=-1)
        os.utime(os.path.join(d, k + ".fxe"), (1000 + i, 1000 + i))
    assert compile_cache.load(d, keys[0]) == blob  # a hit makes entry 0 the most recent
    size = os.path.getsize(os.path.join(d, keys[0] + ".fxe"))
    compile_cache.store(d, "f" * 64, blob, max_size=3 * size)
    left = {f[:-4] for f in _entries(d)}
    assert left == {keys[0], keys[4], "f" * 64}
    assert sum(os.path.getsize(os.path.join(d, f)) for f in _entries(d)) <= 3 * size


def test_first_write_scans_on_a_thread_of_its_own(tmp_path, monkeypatch):
    # a process's first write scans for what other processes wrote, off the caller's thread;
    # the entries over the bound go, least recently used first
    import threading

    d = str(tmp_path)
    blob = os.urandom(100)
    old = [f"{i:064x}" for i in range(200)]
    for i, k in enumerate(old):
        compile_cache.store(d, k, blob, max_size=-1)
        os.utime(os.path.join(d, k + ".fxe"), (1000 + i, 1000 + i))
    size = os.path.getsize(os.path.join(d, old[0] + ".fxe"))
    monkeypatch.setattr(compile_cache, "_scanned", [])
    monkeypatch.setattr(compile_cache, "_written", 0)
    real, scans = compile_cache.evict, []

    def evict(directory, max_size):
        scans.append(threading.current_thread())
        return real(directory, max_size)
    monkeypatch.setattr(compile_cache, "evict", evict)
    compile_cache.store(d, "f" * 64, blob, max_size=150 * size)  # 1/64 of the bound not reached
    for t in threading.enumerate():
        if t.name == "fluxion-compilation-cache-evict":
            t.join(30)
    assert len(scans) == 1 and scans[0] is not threading.main_thread()
    left = {f[:-4] for f in _entries(d)}
    assert left == set(old[51:]) | {"f" * 64}
    compile_cache.store(d, "e" * 64, blob, max_size=150 * size)
    assert len(scans) == 1  # once per process (and per max_size/64 bytes it writes)
    monkeypatch.setattr(compile_cache, "_scanned", [])  # another process, minutes later
    monkeypatch.setattr(compile_cache, "_written", 0)
    compile_cache.store(d, "d" * 64, blob, max_size=150 * size)
    assert len(scans) == 1  # a scan less than ten minutes old: none
    stamp = os.path.join(d, compile_cache._STAMP)
    os.utime(stamp, (os.stat(stamp).st_mtime - 700,) * 2)
    monkeypatch.setattr(compile_cache, "_scanned", [])
    monkeypatch.setattr(compile_cache, "_written", 0)
    compile_cache.store(d, "c" * 64, blob, max_size=150 * size)
    for t in threading.enumerate():
        if t.name == "fluxion-compilation-cache-evict":
            t.join(30)
    assert len(scans) == 2


def test_size_bound_flag(cache):
    args = _args()
    with flag_context("jax_compilation_cache_max_size", 0):
        fluxion.jit(_f)(*args)
    assert _entries(cache) == []  # every write evicted at once


def test_disabled_writes_and_reads_nothing(cache, events):
    args = _args()
    with flag_context("jax_enable_compilation_cache", False):
        assert compile_cache.cache_dir() is None
        ref = np.asarray(fluxion.jit(_f)(*args))
    assert _entries(cache) == []
    fluxion.jit(_f)(*args)  # memory cache hit: still nothing on disk
    fluxion.clear_caches()
    np.testing.assert_array_equal(np.asarray(fluxion.jit(_f)(*args)), ref)
    assert _entries(cache)
    fluxion.clear_caches()
    c0 = events.compiles
    with flag_context("jax_enable_compilation_cache", False):
        fluxion.jit(_f)(*args)
    assert events.compiles == c0 + 1 and events.hits == 0  # not read either


def test_min_compile_time_threshold(cache):
    with flag_context("jax_persistent_cache_min_compile_time_secs", 3600.0):
        fluxion.jit(_f)(*_args())
    assert _entries(cache) == []


def test_key_depends_on_text_devices_and_flags(monkeypatch):
    cl = fluxion.backend.client.get_client()
    devs = cl.local_devices()
    o1 = dispatch._compile_options(devs[:1])
    k = compile_cache.entry_key("module {}", cl, devs[:1], o1)
    assert k == compile_cache.entry_key("module {}", cl, devs[:1], o1)
    assert k != compile_cache.entry_key("module { }", cl, devs[:1], o1)
    if len(devs) > 1:
        assert k != compile_cache.entry_key("module {}", cl, devs[1:2],
                                            dispatch._compile_options(devs[1:2]))
    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", "") + " --xla_cpu_use_thunk_runtime=true")
    assert k != compile_cache.entry_key("module {}", cl, devs[:1], o1)


def test_host_callback_programs_not_cached(cache):
    seen = []

    def f(x):
        fluxion.debug.callback(lambda v: seen.append(np.asarray(v)), x)
        return x * 2

    x = jnp.arange(3.0)
    before = _entries(cache)
    out = fluxion.jit(f)(x)
    np.testing.assert_array_equal(np.asarray(out), [0.0, 2.0, 4.0])
    assert len(seen) == 1
    assert _entries(cache) == before  # compiled, not written
    texts = [e.text for e in dispatch._EXE_CACHE.values()]
    assert not [t for t in texts if "python_cpu_callback" in t]


def test_unwritable_dir_is_not_fatal(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with flag_context("jax_enable_compilation_cache", True), \
            flag_context("jax_compilation_cache_dir", str(blocker / "sub")):
        fluxion.clear_caches()
        try:
            np.testing.assert_allclose(np.asarray(fluxion.jit(lambda x: x + 1)(jnp.ones(2))), 2.0)
        finally:
            fluxion.clear_caches()
    assert compile_cache.flush(60)
    assert "could not write compilation cache entry" in caplog.text
    assert config.jax_enable_compilation_cache is False  # the suite's setting is restored


def test_concurrent_processes_share_one_dir(tmp_path):
    d = tmp_path / "cache"
    code = ("import numpy as np, fluxion, fluxion.numpy as jnp\n"
            "f = fluxion.jit(lambda x: jnp.cumsum(jnp.sin(x) * 2, 0))\n"
            "print(np.asarray(f(np.arange(6.0, dtype=np.float32))).tobytes().hex())\n")
    env = dict(os.environ, FLUXION_ENABLE_COMPILATION_CACHE="1",
               FLUXION_COMPILATION_CACHE_DIR=str(d))
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(3)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err[-2000:]
        outs.append(out.strip())
    assert len(set(outs)) == 1
    ref = np.cumsum(np.sin(np.arange(6.0, dtype=np.float32)) * 2, 0)
    np.testing.assert_allclose(np.frombuffer(bytes.fromhex(outs[0]), np.float32), ref, rtol=1e-6)
    names = _entries(str(d))
    assert names and all(compile_cache.load(str(d), n[:-4]) is not None for n in names)
    assert not [f for f in os.listdir(d) if f.startswith(".tmp-")]


def test_entries_written_off_the_compiling_thread(cache, monkeypatch):
    # the first call returns without waiting for the serialization and the write
    import threading

    real, writers = compile_cache.store, []

    def store(*a, **k):
        writers.append(threading.current_thread())
        return real(*a, **k)
    monkeypatch.setattr(compile_cache, "store", store)
    np.asarray(fluxion.jit(_f)(*_args()))
    assert compile_cache.flush(60)
    assert writers and all(t is not threading.current_thread() for t in writers)
    assert {t.name for t in writers} == {"fluxion-compilation-cache-write"}
    assert _entries(cache)


def test_queued_write_errors_are_logged(tmp_path, caplog, monkeypatch):
    d = str(tmp_path)

    def unserializable():
        raise RuntimeError("no serialization for this one")
    compile_cache.store_later(d, "a" * 64, unserializable)
    assert compile_cache.flush(60)
    assert "not caching an unserializable executable: no serialization" in caplog.text

    def broken_store(*a, **k):
        raise ValueError("disk on fire")
    monkeypatch.setattr(compile_cache, "store", broken_store)
    compile_cache.store_later(d, "b" * 64, lambda: b"payload")
    assert compile_cache.flush(60)
    assert "could not write compilation cache entry " + "b" * 64 + ": disk on fire" in caplog.text
    assert _entries(d) == []


def test_small_entries_skipped_and_load_waits_for_queued_write(tmp_path):
    import threading

    d = str(tmp_path)
    compile_cache.store_later(d, "c" * 64, lambda: b"tiny", min_size=5)
    release = threading.Event()

    def slow():
        release.wait(30)
        return b"payload"
    compile_cache.store_later(d, "e" * 64, slow)
    threading.Timer(0.2, release.set).start()
    assert compile_cache.load(d, "e" * 64) == b"payload"  # waited for this process's write
    assert compile_cache.flush(60)
    assert _entries(d) == ["e" * 64 + ".fxe"]


def _child_queues_a_slow_write(d):
    import time

    def slow():
        time.sleep(0.5)
        return b"from the child"
    compile_cache.store_later(d, "9" * 64, slow)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_multiprocessing_child_writes_before_it_exits(tmp_path):
    # a forked multiprocessing child ends with os._exit, after waiting for its threads: its
    # queued write lands
    import multiprocessing

    d = str(tmp_path)
    proc = multiprocessing.get_context("fork").Process(target=_child_queues_a_slow_write,
                                                       args=(d,))
    proc.start()
    proc.join(60)
    assert proc.exitcode == 0
    assert compile_cache.load(d, "9" * 64) == b"from the child"

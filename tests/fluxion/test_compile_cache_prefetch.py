"""A jitted call's persistent-cache entry read while the call is traced
(backend/cache_prefetch.py): the hint file written beside the entry, the prefetched executable
used only when the traced program's key is the predicted one, a stale hint corrected, eager ops
run during tracing never taking the jitted call's prefetch, hints evicted with the entries."""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion.backend import cache_prefetch, compile_cache, compile_hook
from fluxion.core import monitoring
from fluxion.core.config import flag_context

pytestmark = pytest.mark.clears_caches


@pytest.fixture
def cache(disk_cache):
    """The persistent cache's folder (tests/fluxion/conftest.py's ``disk_cache``)."""
    return disk_cache


@pytest.fixture
def compiles():
    n = [0]

    def listener(event, duration, **kw):
        n[0] += event == monitoring.BACKEND_COMPILE_EVENT
    monitoring.register_event_duration_secs_listener(listener)
    try:
        yield n
    finally:
        monitoring.unregister_event_duration_listener(listener)


def _files(d, suffix):
    compile_cache.flush()
    return sorted(f[:-len(suffix)] for f in os.listdir(d) if f.endswith(suffix))


def _hints(d):
    return {h: compile_cache.read_hint(d, h)[0] for h in _files(d, ".fxh")}


def _f(x, w):
    return jnp.sum(jnp.tanh(x @ w) ** 2, axis=0)


def _g(x, w):
    return jnp.sum(jnp.cos(x @ w), axis=0)


def _args():
    rng = np.random.default_rng(1)
    return (rng.standard_normal((5, 3)).astype(np.float32),
            rng.standard_normal((3, 4)).astype(np.float32))


def _fresh():
    """What a new process would have: no executable in memory (the prefetch skips loaded ones)."""
    fluxion.clear_caches()
    gc.collect()


def test_second_call_reads_the_entry_while_tracing(cache, compiles):
    args = _args()
    ref = np.asarray(fluxion.jit(_f)(*args))
    entries, hints = _files(cache, ".fxe"), _hints(cache)
    assert len(entries) == 1 and list(hints.values()) == entries  # the hint names the entry
    _fresh()
    before, n = dict(cache_prefetch.STATS), compiles[0]
    out = np.asarray(fluxion.jit(_f)(*args))
    assert cache_prefetch.STATS["started"] == before.get("started", 0) + 1
    assert cache_prefetch.STATS["used"] == before.get("used", 0) + 1
    assert compiles[0] == n  # nothing compiled
    np.testing.assert_array_equal(out, ref)
    assert _hints(cache) == hints  # still right: not rewritten


def test_stale_hint_is_checked_and_corrected(cache, compiles):
    args = _args()
    ref_f = np.asarray(fluxion.jit(_f)(*args))
    (hint_f, entry_f), = _hints(cache).items()
    np.asarray(fluxion.jit(_g)(*args))
    entry_g = next(e for e in _files(cache, ".fxe") if e != entry_f)
    # the hint of f's call now names g's entry (as after f was edited): a guess, never trusted
    compile_cache.store_hint_later(cache, hint_f, entry_g)
    compile_cache.flush()
    _fresh()
    before, n = dict(cache_prefetch.STATS), compiles[0]
    out = np.asarray(fluxion.jit(_f)(*args))
    assert cache_prefetch.STATS["wasted"] == before.get("wasted", 0) + 1
    assert cache_prefetch.STATS["used"] == before.get("used", 0)
    assert compiles[0] == n  # f's own entry came from the disk
    np.testing.assert_array_equal(out, ref_f)
    assert _hints(cache)[hint_f] == entry_f


def test_eager_ops_while_tracing_leave_the_hint_to_the_jitted_call(cache):
    args = _args()
    scale = jnp.asarray(np.float32(3.0))

    def h(x, w):
        k = scale * 2.0 + 1.0  # eager ops on a concrete array, compiled during the trace
        return _f(x, w) * k

    ref = np.asarray(fluxion.jit(h)(*args))
    hints = _hints(cache)
    jitted = [e for e in _files(cache, ".fxe") if e in hints.values()]
    assert len(hints) == 1 and len(jitted) == 1
    _fresh()
    before = dict(cache_prefetch.STATS)
    np.testing.assert_array_equal(np.asarray(fluxion.jit(h)(*args)), ref)
    assert cache_prefetch.STATS["used"] == before.get("used", 0) + 1


def test_no_prefetch_of_an_executable_already_loaded(cache):
    args = _args()
    f1 = fluxion.jit(_f)
    f1(*args)
    before = dict(cache_prefetch.STATS)
    fluxion.jit(_f)(*args)  # a new jit object: traced again, its executable is in memory
    assert cache_prefetch.STATS["started"] == before.get("started", 0)


def test_cache_off_no_hint(tmp_path):
    d = str(tmp_path / "off")
    with flag_context("jax_enable_compilation_cache", False), \
            flag_context("jax_compilation_cache_dir", d):
        fluxion.clear_caches()
        fluxion.jit(_f)(*_args())
        compile_cache.flush()
    assert not os.path.exists(d)


def test_malformed_hint_ignored_and_hints_evicted(tmp_path):
    d = str(tmp_path)
    with open(os.path.join(d, "ab" * 32 + ".fxh"), "w") as f:
        f.write("not-a-key\n")
    assert compile_cache.read_hint(d, "ab" * 32) is None
    compile_cache.store_hint_later(d, "cd" * 32, "ef" * 32)
    compile_cache.flush()
    assert compile_cache.read_hint(d, "cd" * 32) == ("ef" * 32, "")
    assert compile_cache.evict(d, 0) == 2
    assert not [f for f in os.listdir(d) if f.endswith(".fxh")]


def test_closures_over_different_constants_have_their_own_hints(cache):
    x = np.ones(3, np.float32)

    def scaled(c):
        return fluxion.jit(lambda v: v * c)

    for c in (2.0, 3.0):
        np.testing.assert_array_equal(np.asarray(scaled(c)(x)), x * c)
    assert len(_hints(cache)) == 2 and len(set(_hints(cache).values())) == 2
    _fresh()
    before = dict(cache_prefetch.STATS)
    for c in (2.0, 3.0):
        np.testing.assert_array_equal(np.asarray(scaled(c)(x)), x * c)
    assert cache_prefetch.STATS["used"] == before.get("used", 0) + 2
    assert cache_prefetch.STATS["wasted"] == before.get("wasted", 0)


def test_a_static_argument_whose_repr_fails_only_skips_the_prefetch(cache):
    class Opaque:
        def __hash__(self):
            return 7

        def __eq__(self, other):
            return isinstance(other, Opaque)

        def __repr__(self):
            raise RuntimeError("no repr")

    f = fluxion.jit(lambda x, o: x * 2.0, static_argnums=1)
    x = np.ones(3, np.float32)
    np.testing.assert_array_equal(np.asarray(f(x, Opaque())), x * 2.0)
    assert _hints(cache) == {}


_OPTIONS = {"xla_cpu_enable_fast_math": False}  # XLA's default: the same numbers, another key


def test_a_jit_with_compiler_options_never_runs_the_entry_compiled_without(cache, compiles):
    # whatever a hint names, the real entry key (which hashes the compile options) decides
    args = _args()
    ref = np.asarray(fluxion.jit(_f)(*args))
    assert len(_hints(cache)) == 1
    _fresh()
    seen, inner = [], compile_hook.backend_compile_and_load

    def spy(backend, module, devices, options, *rest):
        seen.append(list(options.env_option_overrides))
        return inner(backend, module, devices, options, *rest)
    before = dict(cache_prefetch.STATS)
    compile_hook.backend_compile_and_load = spy
    try:
        out = np.asarray(fluxion.jit(_f, compiler_options=_OPTIONS)(*args))
    finally:
        compile_hook.backend_compile_and_load = inner
    assert cache_prefetch.STATS["used"] == before.get("used", 0)
    assert [("xla_cpu_enable_fast_math", False)] in seen  # compiled with its options
    np.testing.assert_array_equal(out, ref)


def test_compiler_options_have_their_own_hint(cache, compiles):
    # both jits of one function keep their hints: before, they shared one, each call rewriting
    # it for its own entry, so the other's prefetch was always wasted
    args = _args()
    refs = [np.asarray(fluxion.jit(_f, **kw)(*args)) for kw in ({}, {"compiler_options": _OPTIONS})]
    hints = _hints(cache)
    assert len(hints) == 2 and sorted(hints.values()) == _files(cache, ".fxe")
    _fresh()
    before, n = dict(cache_prefetch.STATS), compiles[0]
    outs = [np.asarray(fluxion.jit(_f, **kw)(*args))
            for kw in ({}, {"compiler_options": _OPTIONS})]
    assert cache_prefetch.STATS["used"] == before.get("used", 0) + 2
    assert cache_prefetch.STATS["wasted"] == before.get("wasted", 0)
    assert compiles[0] == n
    for out, ref in zip(outs, refs):
        np.testing.assert_array_equal(out, ref)

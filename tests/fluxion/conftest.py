"""Shared pytest set-up for tests/fluxion: puts this folder on sys.path so ``from _compare import
assert_same`` works in every test below it, and offers an ``x64`` fixture (64-bit mode on in both
Fluxion and the reference JAX for one test, restored afterwards) and a ``disk_cache`` fixture
(the persistent compilation cache on, in a fresh folder, for one test)."""

from __future__ import annotations

import os
import sys

import pytest

# The persistent executable cache stays off in the tests (see tests/conftest.py; repeated here
# for runs that start in this folder, e.g. Bazel's), set before _compare imports fluxion.
os.environ["FLUXION_ENABLE_COMPILATION_CACHE"] = "0"

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from _compare import x64_both

import fluxion

# A test worker compiles thousands of distinct eager operations (every op x dtype x shape of the
# suite); the default budget of the eager executables (256 MiB, oldest compiled first out) was
# full after ~1400 tests of tests/fluxion/numpy, and from then on about a third of the eager
# compiles were of operations compiled before and evicted (the common conversions and
# arithmetic of small shapes). A larger budget for the test processes (tests/fluxion/test_memory.py
# checks the eviction itself with its own limits).
fluxion.config.update("fluxion_eager_cache_max_bytes", 1 << 30)


def pytest_configure(config: pytest.Config) -> None:
    # xdist registers this mark itself; register it too for runs with ``-p no:xdist``.
    config.addinivalue_line("markers", "xdist_group(name): run on one xdist worker under "
                            "--dist loadgroup")


@pytest.fixture
def x64():
    """64-bit mode on in Fluxion and JAX for the duration of one test."""
    with x64_both(True):
        yield


@pytest.fixture
def disk_cache(tmp_path):
    """The persistent compilation cache on, in ``tmp_path / "cache"`` (its path given), every
    compile written, with empty in-memory caches (a hit must come from the disk); the writer
    thread's queue flushed and everything restored after."""
    from fluxion.backend import compile_cache
    from fluxion.core.config import flag_context

    d = str(tmp_path / "cache")
    with flag_context("jax_enable_compilation_cache", True), \
            flag_context("jax_compilation_cache_dir", d), \
            flag_context("jax_persistent_cache_min_compile_time_secs", 0.0):
        fluxion.clear_caches()
        try:
            yield d
        finally:
            compile_cache.flush()
            fluxion.clear_caches()

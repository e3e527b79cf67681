"""Repository-wide pytest set-up: the ``slow`` marker.

Tests marked ``slow`` (each spends many seconds in XLA compiles without covering new code paths)
run only when ``FLUXION_SLOW=1``; CI's scheduled job sets it, the per-commit job does not.
"""

from __future__ import annotations

import os

# Every test process gets 8 host CPU devices (as JAX's own test suite does), for the tests of
# devices, shardings, shard_map and pmap. Set before anything imports jaxlib or jax, which read it
# when they create their CPU client; single-device code keeps running on device 0.
if "--xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + " --xla_force_host_platform_device_count=8").strip()

# The persistent executable cache (on by default in ~/.cache/fluxion) stays off in the test
# suite, in this process and in the subprocesses tests start: a test run must not write into the
# user's cache, and tests must not depend on what an earlier run left there. The cache's own tests
# (tests/fluxion/test_compile_cache.py) turn it on with a temporary directory.
os.environ["FLUXION_ENABLE_COMPILATION_CACHE"] = "0"

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: long-running; run with FLUXION_SLOW=1")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("FLUXION_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow test: set FLUXION_SLOW=1 to run it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)

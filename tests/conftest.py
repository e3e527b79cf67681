"""Repository-wide pytest set-up: the ``slow`` marker.

Tests marked ``slow`` (each spends many seconds in XLA compiles without covering new code paths)
run only when ``FLUXION_SLOW=1``; CI's scheduled job sets it, the per-commit job does not.
"""

from __future__ import annotations

import os

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

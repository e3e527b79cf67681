"""Set-up for the multi-device tests: they need 8 host CPU devices (tests/conftest.py asks for
them through XLA_FLAGS before jaxlib starts); with fewer they are skipped."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def eight():
    import fluxion
    if fluxion.device_count() < 8:
        pytest.skip("needs 8 devices: XLA_FLAGS=--xla_force_host_platform_device_count=8")
    return fluxion.devices()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU and fluxion[cuda13] (or [cuda12]); skipped "
                            "without one")


def _gpu_available() -> bool:
    from fluxion.backend import plugins
    if plugins.cuda_plugin_path() is None:
        return False
    import fluxion
    try:
        return bool(fluxion.devices("cuda"))
    except RuntimeError:
        return False


@pytest.fixture(scope="session")
def gpu():
    if not _gpu_available():
        pytest.skip("needs a CUDA GPU and `pip install fluxion[cuda13] (or [cuda12])`")
    import fluxion
    return fluxion.devices("cuda")

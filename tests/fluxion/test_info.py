"""``python -m fluxion.info`` / ``fluxion.info.environment_info()``: the ecosystem packages'
versions (compared with importlib.metadata), XLA_FLAGS and the compilation cache's folder."""

from __future__ import annotations

import importlib.metadata
import importlib.util

from fluxion import info
from fluxion.backend import compile_cache


def test_lists_every_package_with_its_version(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    lines = info.environment_info().splitlines()
    for dist, module in info.PACKAGES:
        line = next(ln for ln in lines if ln.startswith(dist + ":"))
        if importlib.util.find_spec(module) is None:
            assert line.endswith("not installed")
            continue
        try:
            version = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            version = "not installed"
        # (a package importable from a source tree without being pip-installed has no version:
        # "not installed (import ...)", as on a machine that only has the checkout on PYTHONPATH)
        assert line.split(None, 1)[1].startswith(version + " (") and f"import {module}" in line
    assert "XLA_FLAGS:  --xla_cpu_enable_fast_math=false" in lines
    assert f"compilation cache: {compile_cache.cache_dir() or 'off'}" in lines


def test_unset_xla_flags_and_cache_off(monkeypatch):
    import fluxion

    monkeypatch.delenv("XLA_FLAGS", raising=False)
    old = fluxion.config.jax_enable_compilation_cache
    fluxion.config.update("jax_enable_compilation_cache", False)
    try:
        lines = info.environment_info().splitlines()
    finally:
        fluxion.config.update("jax_enable_compilation_cache", old)
    assert "XLA_FLAGS:  (not set)" in lines and "compilation cache: off" in lines

"""Fixtures for the fluxion-scipy tests: 64-bit mode in Fluxion and in the JAX reference."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import fluxion


@pytest.fixture
def x64() -> Iterator[None]:
    """Turns on 64-bit mode in Fluxion and (when installed) JAX for one test, restoring both."""
    jax = pytest.importorskip("jax")
    old_f = fluxion.config.read("jax_enable_x64")
    old_j = jax.config.jax_enable_x64
    fluxion.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        fluxion.config.update("jax_enable_x64", old_f)
        jax.config.update("jax_enable_x64", old_j)

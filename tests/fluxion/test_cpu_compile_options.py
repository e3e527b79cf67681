"""XLA options fluxion sets for CPU compiles (backend/executables.py ``_compile_options``): the opt-in
loop emitters (``xla_cpu_use_fusion_emitters=false``, config ``fluxion_cpu_fast_compile``), which
compile faster than XLA's MLIR fusion emitters. Both settings must give the same numbers on
ordinary programs, and modules the loop emitters cannot compile fall back to the default."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion.backend import compile_cache, dispatch
from fluxion.core.config import flag_context

_OVERRIDE = ("xla_cpu_use_fusion_emitters", False)


def _overrides():
    return list(dispatch._compile_options(fluxion.local_devices()[:1]).env_option_overrides)


def test_override_only_with_flag(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    assert _overrides() == []  # off by default: XLA's (and JAX's) emitters
    with flag_context("fluxion_cpu_fast_compile", True):
        assert _overrides() == [_OVERRIDE]


def test_explicit_xla_flag_wins(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=true")
    with flag_context("fluxion_cpu_fast_compile", True):
        assert _overrides() == []


def test_disk_cache_key_depends_on_setting(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    devs = tuple(fluxion.local_devices()[:1])
    cl = fluxion.local_devices()[0].client
    off = compile_cache.entry_key("module {}", cl, devs, dispatch._compile_options(devs))
    with flag_context("fluxion_cpu_fast_compile", True):
        on = compile_cache.entry_key("module {}", cl, devs, dispatch._compile_options(devs))
    assert on != off


def _mlp_grad(params, x):
    def loss(p):
        h = jnp.tanh(x @ p[0] + p[1])
        return jnp.sum((h @ p[2]) ** 2)
    return fluxion.grad(loss)(params)


@pytest.mark.clears_caches
def test_same_results_either_way(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((7, 5)).astype(np.float32)
    b1 = rng.standard_normal((5,)).astype(np.float32)
    w2 = rng.standard_normal((5, 3)).astype(np.float32)
    x = rng.standard_normal((4, 7)).astype(np.float32)
    outs = []
    for fast in (True, False):
        with flag_context("fluxion_cpu_fast_compile", fast):
            fluxion.clear_caches()  # identical texts would otherwise share one executable
            g = fluxion.jit(_mlp_grad)((w1, b1, w2), x)
            outs.append([np.asarray(a) for a in g])
    fluxion.clear_caches()
    for a, b in zip(*outs):
        assert a.dtype == b.dtype == np.float32 and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    # and against a float64 NumPy evaluation of the same gradient
    h = np.tanh(x.astype(np.float64) @ w1 + b1)
    gy = 2 * (h @ w2)
    gh = gy @ w2.T * (1 - h * h)
    want = (x.T.astype(np.float64) @ gh, gh.sum(0), h.T @ gy)
    for got, ref in zip(outs[0], want):
        np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5)


@pytest.mark.clears_caches
def test_unsupported_module_falls_back_to_default_emitters():
    # the loop emitters have no complex maximum; the module is compiled with XLA's default
    a = np.array([1 + 2j, -3 + 0.5j, 2 - 1j], np.complex64)
    b = np.array([1 + 1j, -2 + 1j, 0 + 5j], np.complex64)
    with flag_context("fluxion_cpu_fast_compile", True):
        fluxion.clear_caches()
        got = np.asarray(fluxion.jit(jnp.maximum)(a, b))
    fluxion.clear_caches()
    assert got.dtype == np.complex64
    np.testing.assert_array_equal(got, np.maximum(a, b))  # lexicographic, as NumPy and JAX

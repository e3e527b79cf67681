"""JAX's compile-option and client-option flags reach XLA as in jax 0.10.2
(backend/compile_options.py): the CompileOptions of a one-device compile are byte-for-byte the
ones jax's ``get_compile_options`` builds under the same flags; a jitted function is compiled
again when one changes (and reuses the first executable when it changes back); the plugin
client's create options are jax's ``_options_from_jax_configs``."""

from __future__ import annotations

import contextlib

import jax
import numpy as np
import pytest
from jax._src import compiler as jax_compiler
from jax._src import xla_bridge as jax_bridge

import fluxion
import fluxion.numpy as jnp
from fluxion.backend import compile_cache, compile_hook, compile_options, dispatch, plugins
from fluxion.core.config import flag_context

_SETTINGS = [
    {},
    {"jax_optimization_level": "O1", "jax_memory_fitting_level": "O0"},
    {"jax_optimization_level": "O3", "jax_memory_fitting_level": "UNKNOWN"},
    {"jax_exec_time_optimization_effort": 0.5, "jax_memory_fitting_effort": -0.25},
    {"jax_xla_profile_version": 7},
    {"jax_compiler_enable_remat_pass": False},
    {"jax_disable_most_optimizations": True},
    {"jax_use_shardy_partitioner": False},
]


@contextlib.contextmanager
def _both(flags: dict):
    """``flags`` set on Fluxion's config and on the reference jax's, restored after."""
    old = {n: jax.config._read(n) for n in flags}
    with contextlib.ExitStack() as stack:
        for n, v in flags.items():
            stack.enter_context(flag_context(n, v))
            jax.config.update(n, v)
        try:
            yield
        finally:
            for n, v in old.items():
                jax.config.update(n, v)


@pytest.mark.parametrize("flags", _SETTINGS, ids=lambda f: ",".join(f"{k[4:]}={v}" for k, v in f.items()) or "defaults")
def test_one_device_compile_options_are_jax_s(flags):
    dev = fluxion.local_devices()[0]
    with _both(flags):
        ours = dispatch._compile_options((dev,))
        theirs = jax_compiler.get_compile_options(
            num_replicas=1, num_partitions=1, device_assignment=np.array([[dev.id]]))
        assert ours.SerializeAsString() == theirs.SerializeAsString()
    b = ours.executable_build_options
    assert b.use_spmd_partitioning
    assert b.use_shardy_partitioner == flags.get("jax_use_shardy_partitioner", True)
    assert b.memory_fitting_level == compile_options.EFFORT_LEVELS[
        flags.get("jax_memory_fitting_level", "O2")]


def test_a_new_level_compiles_again_and_reaches_xla():
    seen, inner = [], compile_hook.backend_compile_and_load

    def spy(backend, module, devices, options, *rest):
        seen.append(options.executable_build_options.optimization_level)
        return inner(backend, module, devices, options, *rest)

    f = fluxion.jit(lambda x: x * 3.0 - 0.8125)
    x = jnp.arange(5.0)
    compile_hook.backend_compile_and_load = spy
    try:
        f(x)
        with flag_context("jax_optimization_level", "O1"):
            np.testing.assert_allclose(f(x), np.arange(5.0) * 3.0 - 0.8125)
        f(x)  # back to the first value: the first executable, no compile
    finally:
        compile_hook.backend_compile_and_load = inner
    assert seen == [0, 19]


def test_executable_index_and_disk_key_depend_on_the_flags():
    text = fluxion.jit(lambda x: x + 0.4375).lower(1.0).as_text()
    devs = tuple(fluxion.local_devices()[:1])
    first = dispatch.compile_text(text, devs)
    with flag_context("jax_memory_fitting_level", "O3"):
        other = dispatch.compile_text(text, devs)
        key_o3 = compile_cache.entry_key(text, devs[0].client, devs, dispatch._compile_options(devs))
    assert other is not first
    assert dispatch.compile_text(text, devs) is first
    assert key_o3 != compile_cache.entry_key(text, devs[0].client, devs,
                                             dispatch._compile_options(devs))


@pytest.mark.parametrize("value", [None, "", "a:1", "ml_framework_name:JAX;n:2", {"k": 3, "v": [0]}])
def test_client_create_options_are_jax_s(value):
    with _both({"jax_pjrt_client_create_options": value}):
        assert compile_options.client_create_options() == jax_bridge._options_from_jax_configs("tpu")


def test_client_create_options_malformed_item_raises_as_jax():
    with _both({"jax_pjrt_client_create_options": "a:1;b:2:3"}):
        with pytest.raises(RuntimeError):
            jax_bridge._options_from_jax_configs("tpu")
        with pytest.raises(RuntimeError, match="b:2:3"):
            compile_options.client_create_options()


def test_tpu_client_is_created_with_the_flag_s_options(monkeypatch):
    from jaxlib import xla_client as xc

    made = []
    monkeypatch.setattr(plugins, "tpu_library_path", lambda: "/nonexistent/libtpu.so")
    monkeypatch.setitem(plugins._loaded, "tpu", object())  # as after a first load
    monkeypatch.setattr(xc, "make_c_api_client", lambda name, opts, *rest: made.append((name, opts)))
    with flag_context("jax_pjrt_client_create_options", "ml_framework_name:JAX;x:1"):
        plugins.make_client("tpu", {})
    plugins.make_client("tpu", {})
    assert made == [("tpu", {"ml_framework_name": "JAX", "x": "1"}), ("tpu", {})]


def test_every_compile_flag_is_a_trace_flag():
    names = fluxion.config.trace_context.names
    assert all(n in names for n in compile_options.COMPILE_FLAGS)


def test_fast_compile_flag_compiles_again(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    seen, inner = [], compile_hook.backend_compile_and_load

    def spy(backend, module, devices, options, *rest):
        seen.append(list(options.env_option_overrides))
        return inner(backend, module, devices, options, *rest)

    f = fluxion.jit(lambda x: x * 5.0 + 0.1875)
    x = jnp.arange(4.0)
    compile_hook.backend_compile_and_load = spy
    try:
        f(x)
        with flag_context("fluxion_cpu_fast_compile", True):
            f(x)
    finally:
        compile_hook.backend_compile_and_load = inner
    if fluxion.default_backend() == "cpu":
        assert seen == [[], [("xla_cpu_use_fusion_emitters", False)]]
    else:
        assert len(seen) == 2

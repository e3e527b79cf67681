"""Configuration flags and their context managers at top level (issue 12, item 4), against
real JAX: every flag JAX 0.10 defines is accepted, unknown ones raise as in JAX, and the flags
with an effect in Fluxion (log_compiles, transfer guards, default_matmul_precision) act."""

from __future__ import annotations

import enum
import logging

import jax
import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion.core.config import config


def _jax_flags() -> dict:
    out = {}
    for name, holder in jax.config._value_holders.items():
        value = holder.value
        out[name] = value.value if isinstance(value, enum.Enum) else value
    return out


def test_every_jax_flag_is_accepted():
    ours = config.values()
    missing = sorted(set(_jax_flags()) - set(ours))
    assert not missing, f"JAX flags fluxion.config does not know: {missing}"
    for name, value in _jax_flags().items():
        if name in ("jax_enable_x64", "jax_default_device", "jax_platforms"):
            continue  # process-wide choices the test session itself depends on
        old = config.read(name)
        try:  # JAX's own (default) value is accepted and read back
            config.update(name, value)
            assert config.read(name) == value, name
        finally:
            config.update(name, old)


def test_unknown_flag_raises_like_jax():
    with pytest.raises(AttributeError, match="Unrecognized config option: jax_no_such_flag"):
        fluxion.config.update("jax_no_such_flag", 1)
    with pytest.raises(AttributeError, match="Unrecognized config option"):
        jax.config.update("jax_no_such_flag", 1)
    with pytest.raises(ValueError):
        fluxion.config.update("jax_numpy_rank_promotion", "bad")
    with pytest.raises(ValueError):
        fluxion.config.update("jax_default_matmul_precision", "fastest_please")


def test_top_level_flag_objects_match_jax():
    names = ["allow_f16_reductions", "array_garbage_collection_guard", "auto_pcast",
             "check_tracer_leaks", "default_matmul_precision", "default_prng_impl",
             "enable_checks", "enable_custom_prng", "enable_x64", "explain_cache_misses",
             "jax2tf_associative_scan_reductions", "legacy_prng_key", "log_compiles",
             "no_execution", "no_tracing", "numpy_dtype_promotion", "numpy_rank_promotion",
             "remove_size_one_mesh_axis_from_type", "softmax_custom_jvp", "thread_guard",
             "transfer_guard_device_to_device", "transfer_guard_device_to_host",
             "transfer_guard_host_to_device"]
    for name in names:
        ours, theirs = getattr(fluxion, name), getattr(jax, name)
        # the suite turns our internal checks on (tests/conftest.py); jax keeps its default
        assert ours.value == theirs.value or name in ("enable_x64", "enable_checks"), name
    with fluxion.log_compiles(True):
        assert fluxion.log_compiles.value is True
    assert fluxion.log_compiles.value is False
    with fluxion.checking_leaks():
        assert fluxion.check_tracer_leaks.value is True


def test_log_compiles(caplog):
    f = fluxion.jit(lambda x: x * 3 + 1)
    with caplog.at_level(logging.WARNING, logger="fluxion"):
        with fluxion.log_compiles(True):
            f(jnp.ones(7))
        f(jnp.ones(9))  # not logged: the flag is off again
    msgs = [r.getMessage() for r in caplog.records if r.name == "fluxion"]
    assert any(m.startswith("Compiling") and "f32[7]" in m for m in msgs), msgs
    assert not any("f32[9]" in m for m in msgs)


def test_transfer_guard_host_to_device():
    x = np.ones(3, np.float32)
    with fluxion.transfer_guard("disallow"):
        assert fluxion.transfer_guard_host_to_device.value == "disallow"
        with pytest.raises(RuntimeError, match="Disallowed host-to-device transfer"):
            jnp.sin(x)
        y = jnp.asarray(jnp.ones(3))          # device values and constants are fine
        assert float(jnp.sum(jnp.sin(y))) > 0
    with jax.transfer_guard("disallow"):
        with pytest.raises(Exception, match="Disallowed host-to-device transfer"):
            jax.numpy.sin(x)
    assert float(jnp.sum(jnp.sin(x))) > 0     # restored
    with fluxion.transfer_guard_host_to_device("log"):
        jnp.cos(x)                            # logged, not raised


def test_default_matmul_precision_reaches_the_program():
    a = np.ones((2, 2), np.float32)
    with fluxion.default_matmul_precision(None):  # a run on a TPU sets "highest" (conftest)
        text = fluxion.jit(lambda m: m @ m).lower(a).as_text()
    with fluxion.default_matmul_precision("float32"):
        hi = fluxion.jit(lambda m: m @ m).lower(a).as_text()
    assert "HIGHEST" in hi and "HIGHEST" not in text


def test_default_prng_impl():
    assert fluxion.default_prng_impl.value == jax.default_prng_impl.value == "threefry2x32"
    with pytest.raises(ValueError, match="jax_default_prng_impl"):
        fluxion.config.update("jax_default_prng_impl", "no_such_prng")
    with fluxion.default_prng_impl("rbg"), jax.default_prng_impl("rbg"):
        assert fluxion.config.jax_default_prng_impl == jax.config.jax_default_prng_impl == "rbg"
        assert fluxion.random.PRNGKey(0).shape == jax.random.PRNGKey(0).shape == (4,)
    assert fluxion.config.jax_default_prng_impl == "threefry2x32"


def test_x64_enabled_follows_the_flag_as_jax():
    """``config.x64_enabled`` (jax_md's tests read it) is the x64 flag's current value, as JAX's."""
    assert fluxion.config.x64_enabled is jax.config.x64_enabled is False
    with fluxion.enable_x64(True):
        assert fluxion.config.x64_enabled is True
    with jax.enable_x64(True):
        assert jax.config.x64_enabled is True
    assert fluxion.config.x64_enabled is False

"""Transfer guards around eager host callbacks, against jax 0.10.2 (one CPU device).

JAX runs an eager ``pure_callback``/``io_callback`` as a jitted call: a NumPy or Python argument
first crosses to the device (an implicit host-to-device transfer), then XLA hands every argument
to the host and the callback ``device_put`` s it again (an explicit one), device arguments
included. An eager ``debug.callback`` ``device_put`` s its arguments directly (explicit). Which
levels raise, and how many transfers ``log_explicit`` logs, follow from that."""

from __future__ import annotations

import logging
import os
import types

import jax
import jax.experimental
import jax.numpy as jnp
import numpy as np
import pytest

import fluxion
import fluxion.experimental
import fluxion.numpy as fnp

from .test_transfer_guard import _compare

FLUXION = types.SimpleNamespace(lib=fluxion, np=fnp)
ON_TPU = os.environ.get("FLUXION_TEST_PLATFORM", "cpu") == "tpu"
JAX = types.SimpleNamespace(lib=jax, np=jnp)


def _cases(m: types.SimpleNamespace) -> dict:
    x = m.np.arange(3.0)
    spec = m.lib.ShapeDtypeStruct((3,), np.float32)
    host = np.ones(3, np.float32)

    def double(b):
        return np.asarray(b) * 2

    def pure(*args):
        return lambda: m.lib.pure_callback(double, spec, *args).block_until_ready()

    def io(*args):
        return lambda: m.lib.experimental.io_callback(double, spec, *args).block_until_ready()

    return {  # name -> (host-to-device transfers as (explicit, ...), thunk)
        "eager pure_callback: device argument": ((True,), pure(x)),
        "eager pure_callback: NumPy argument": ((False, True), pure(host)),
        "eager pure_callback: Python float": ((False, True), lambda: m.lib.pure_callback(
            lambda b: np.full(3, b, np.float32), spec, 2.5).block_until_ready()),
        "eager pure_callback: no argument": ((), lambda: m.lib.pure_callback(
            lambda: host, spec).block_until_ready()),
        "eager io_callback: device argument": ((True,), io(x)),
        "eager io_callback: NumPy argument": ((False, True), io(host)),
        "eager debug callback: device argument": ((), lambda: m.lib.debug.callback(
            lambda b: None, x)),
        "eager debug callback: NumPy argument": ((True,), lambda: m.lib.debug.callback(
            lambda b: None, host)),
        "eager debug callback: Python float": ((True,), lambda: m.lib.debug.callback(
            lambda b: None, 2.5)),
    }


@pytest.mark.parametrize("guard", ["transfer_guard", "transfer_guard_host_to_device"])
def test_eager_callbacks_raise_as_jax(guard) -> None:
    ours, theirs = _cases(FLUXION), _cases(JAX)
    for case, (moves, thunk) in ours.items():
        if ON_TPU and guard == "transfer_guard" and case == "eager debug callback: device argument":
            # the chip's array is device_put to the CPU: a device-to-device copy that the
            # reference's CPU array does not need (test_eager_debug_callback_device_puts_...)
            continue
        got = _compare(f"{case} (callback)", thunk, theirs[case][1], (guard,))
        assert got["allow"] is None and got["log"] is None and got["log_explicit"] is None
        assert (got["disallow"] is None) == all(moves), case
        assert (got["disallow_explicit"] is None) == (not moves), case


def test_eager_callbacks_leave_the_device_to_host_guard_alone() -> None:
    # the arguments reach the host through XLA, not through a guarded read (both libraries)
    for m in (FLUXION, JAX):
        with m.lib.transfer_guard_device_to_host("disallow_explicit"):
            for _, thunk in _cases(m).values():
                thunk()


@pytest.mark.parametrize("level", ["log", "log_explicit"])
def test_eager_callbacks_log_as_many_transfers_as_jax(level, caplog, capfd) -> None:
    ours, theirs = _cases(FLUXION), _cases(JAX)
    for case, (moves, thunk) in ours.items():
        caplog.clear()
        capfd.readouterr()
        with caplog.at_level(logging.WARNING, logger="fluxion"), fluxion.transfer_guard(level):
            thunk()
        logged = sum(r.getMessage().startswith("host-to-device transfer:")
                     for r in caplog.records)
        assert logged == sum(level == "log_explicit" or not e for e in moves), (case, level)
        with jax.transfer_guard(level):
            theirs[case][1]()
        if int(os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0")) < 2:  # absl's warnings shown
            assert capfd.readouterr().err.count("host-to-device transfer:") == logged, (
                case, level)


def _debug_args_on(device_index, x, guard, level):
    """What an eager ``debug.callback`` hands its callback when the callbacks' CPU device is
    ``fluxion.devices()[device_index]`` (on a TPU it is the CPU, the array on the chip): the
    arguments' devices, or the guard's error."""
    import fluxion.callback as fcb
    seen = []
    saved = fcb._host_cpu
    fcb._host_cpu = lambda: fluxion.devices()[device_index]
    try:
        with getattr(fluxion, guard)(level):
            fluxion.debug.callback(lambda b: seen.append(list(b.devices())), x)
    except Exception as e:  # noqa: BLE001 - the guard's error is the outcome
        return str(e).split(", dst_sharding")[0]
    finally:
        fcb._host_cpu = saved
    return seen[0]


def test_eager_debug_callback_device_puts_a_device_argument_as_jax():
    # jax's debug_callback_impl device_puts its arguments to the CPU device: for an array on
    # another device (a TPU's) an explicit device-to-device copy, no host-to-device transfer
    # (on a TPU Fluxion read the array and placed it again, which the host-to-device guard
    # refused under "disallow_explicit"). Reproduced with two CPU devices: the array on device
    # 0, the callbacks' device 1.
    devs = fluxion.devices()
    if len(devs) < 2:
        pytest.skip("needs two devices")
    x = fluxion.device_put(fnp.arange(3.0), devs[0])
    assert _debug_args_on(1, x, "transfer_guard_host_to_device", "disallow_explicit") == [devs[1]]
    assert _debug_args_on(1, x, "transfer_guard", "disallow") == [devs[1]]  # explicit
    ours = _debug_args_on(1, x, "transfer_guard", "disallow_explicit")
    jx = jax.device_put(jnp.arange(3.0), jax.devices()[0])
    with pytest.raises(Exception) as theirs, jax.transfer_guard("disallow_explicit"):
        jax.device_put(jx, jax.devices()[1])  # what jax's impl does with it
    assert ours == str(theirs.value).split(", dst_sharding")[0] == (
        "INVALID_ARGUMENT: Disallowed device-to-device transfer: aval=ShapedArray(float32[3])")
    # an array already on the callbacks' device: no transfer at all
    assert _debug_args_on(0, x, "transfer_guard", "disallow_explicit") == [devs[0]]

"""Transfer guards (``fluxion.transfer_guard*``, backend/guards.py) against jax 0.10.2's, case by
case in this process (one CPU device) and, for device-to-device moves, in subprocesses with two
CPU devices: which operations raise or log at each level, the error's class (jaxlib's
``JaxRuntimeError``) and the transfer its message names. The deliberate difference (Python
numbers in operations are constants, not transfers) is pinned in its own test; docs/api/config.md
says why."""

from __future__ import annotations

import json
import logging
import os
import pickle
import re
import subprocess
import sys
import textwrap
import types

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
from fluxion.backend import dispatch, guards

LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")
FLUXION = types.SimpleNamespace(lib=fluxion, np=fnp)
JAX = types.SimpleNamespace(lib=jax, np=jnp)


def _raised(thunk) -> BaseException | None:
    try:
        thunk()
    except Exception as e:  # the guard's error, compared with jax's below
        return e
    return None


def _transfer(e: BaseException | None) -> tuple | None:
    """The direction and the transfer a guard's error names (its destination's repr aside:
    jaxlib spells the default memory kind, Fluxion's default sharding has none)."""
    if e is None:
        return None
    m = re.search(r"INVALID_ARGUMENT: Disallowed (\S+) transfer: "
                 r"(aval=ShapedArray\([^)]*\)|shape=\([^)]*\), dtype=\w+, device=\S+)", str(e))
    assert m, str(e)
    return type(e), m.group(1), m.group(2).rstrip(",")


def _compare(case, fluxion_thunk, jax_thunk, guard=("transfer_guard",)) -> dict:
    """Run a case under every level of both libraries' guard; assert the same outcome."""
    out = {}
    for level in LEVELS:
        with getattr(fluxion, guard[0])(level):
            ours = _transfer(_raised(fluxion_thunk))
        with getattr(jax, guard[0])(level):
            theirs = _transfer(_raised(jax_thunk))
        if "callback" in case and ours and theirs:
            # an error inside a host callback reaches jax's caller as jaxlib's CpuCallback
            # error, a ValueError or a JaxRuntimeError by how the call ran; Fluxion's is the
            # guard's own JaxRuntimeError
            theirs = (ours[0],) + theirs[1:]
        assert ours == theirs, (case, level, ours, theirs)
        out[level] = ours
    return out


def _host_to_device_cases(m: types.SimpleNamespace) -> dict:
    x = m.np.arange(3.0)
    double = m.lib.jit(lambda a: a * 2)
    host = np.arange(3.0, dtype=np.float32)
    one = m.lib.sharding.SingleDeviceSharding(m.lib.devices()[0])
    split = m.lib.sharding.NamedSharding(m.lib.make_mesh((1,), ("i",)),
                                         m.lib.sharding.PartitionSpec("i"))
    # a host callback's arguments arrive on the host and are device_put for it (jax: explicit)
    calls_back = m.lib.jit(lambda a: m.lib.pure_callback(
        lambda b: np.asarray(b) * 2, m.lib.ShapeDtypeStruct((3,), np.float32), a))
    calls_back(x)
    return {  # name -> (explicit, thunk)
        "jit argument: NumPy array": (False, lambda: double(np.ones(3, np.float32))),
        "jit argument: Python float": (False, lambda: double(2.5)),
        "jit argument: Python int": (False, lambda: m.lib.jit(lambda a, b: a * b)(x, 2)),
        "operand: NumPy array": (False, lambda: x + np.ones(3, np.float32)),
        "operand: NumPy scalar": (False, lambda: x + np.float32(2)),
        "jnp.asarray(NumPy array)": (False, lambda: m.np.asarray(np.ones(3))),
        "jnp.array(list)": (False, lambda: m.np.array([1.0, 2.0])),
        "jnp.asarray(Python float)": (False, lambda: m.np.asarray(2.0)),
        "device_put(NumPy array)": (True, lambda: m.lib.device_put(np.ones(3))),
        "device_put(Python float)": (True, lambda: m.lib.device_put(1.5)),
        "make_array_from_callback": (False, lambda: m.lib.make_array_from_callback(
            (3,), one, lambda ix: host[ix])),
        "make_array_from_process_local_data": (True, lambda: m.lib.make_array_from_process_local_data(
            split, host)),
        "jit(pure_callback) argument": (True, lambda: calls_back(x)),
    }


def test_host_to_device_raises_as_jax() -> None:
    ours, theirs = _host_to_device_cases(FLUXION), _host_to_device_cases(JAX)
    for guard in ("transfer_guard", "transfer_guard_host_to_device"):
        for case, (explicit, thunk) in ours.items():
            got = _compare(case, thunk, theirs[case][1], (guard,))
            assert got["allow"] is None and got["log"] is None and got["log_explicit"] is None
            assert (got["disallow"] is None) == explicit
            assert got["disallow_explicit"][:2] == (jax.errors.JaxRuntimeError, "host-to-device")
    # a guard of another direction leaves host-to-device transfers alone
    with fluxion.transfer_guard_device_to_host("disallow"), \
            fluxion.transfer_guard_device_to_device("disallow"):
        fnp.asarray(np.ones(3))


def test_nesting_and_the_global_flag_as_jax() -> None:
    a = np.ones(2, np.float32)
    for lib, lnp in ((fluxion, fnp), (jax, jnp)):
        with lib.transfer_guard("disallow"):
            with lib.transfer_guard_host_to_device("allow"):
                lnp.asarray(a)
            with pytest.raises(jax.errors.JaxRuntimeError, match="Disallowed host-to-device"):
                lnp.asarray(a)
        with lib.transfer_guard_host_to_device("disallow"):
            with lib.transfer_guard("allow"):
                lnp.asarray(a)
    fluxion.config.update("jax_transfer_guard", "disallow")
    try:
        with pytest.raises(jax.errors.JaxRuntimeError, match="Disallowed host-to-device"):
            fnp.asarray(a)
    finally:
        fluxion.config.update("jax_transfer_guard", None)
    fnp.asarray(a)


def test_log_levels_log_what_jax_logs(caplog, capfd) -> None:
    # jaxlib logs through absl to stderr; Fluxion on its "fluxion" logger, with jaxlib's text
    ours, theirs = _host_to_device_cases(FLUXION), _host_to_device_cases(JAX)
    want = "host-to-device transfer: aval=ShapedArray(float32[3])"
    for level in ("log", "log_explicit"):
        for case in ("jit argument: NumPy array", "device_put(NumPy array)"):
            caplog.clear()
            capfd.readouterr()
            with caplog.at_level(logging.WARNING, logger="fluxion"), \
                    fluxion.transfer_guard(level):
                ours[case][1]()
            with jax.transfer_guard(level):
                theirs[case][1]()
            logged = any(r.getMessage().startswith(want) for r in caplog.records)
            # (jaxlib's C++ jit path logs the direction with an empty description; absl's
            # warnings are hidden from TF_CPP_MIN_LOG_LEVEL=2 on)
            if int(os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0")) < 2:
                jax_logged = "host-to-device transfer:" in capfd.readouterr().err
                assert logged == jax_logged, (level, case)
            assert logged == (level == "log_explicit" or not ours[case][0]), (level, case)


def test_python_numbers_in_operations_are_constants_not_transfers() -> None:
    # The deliberate difference (docs/api/config.md): a Python number in an operation (its fill
    # value, an operand) is a cached device constant in Fluxion, not a transfer per call; jax
    # transfers it, so its guard refuses these.
    cases = {
        "ones": lambda m, x: m.np.ones(3),
        "zeros_like": lambda m, x: m.np.zeros_like(x),
        "x + 1": lambda m, x: x + 1,
        "x * 2.5": lambda m, x: x * 2.5,
        "where(x > 0, x, 0)": lambda m, x: m.np.where(x > 0, x, 0),
    }
    fx, jx = fnp.arange(3.0), jnp.arange(3.0)
    for name, f in cases.items():
        want = f(JAX, jx)
        with jax.transfer_guard("disallow"):
            assert _transfer(_raised(lambda: f(JAX, jx)))[1] == "host-to-device", name
        with fluxion.transfer_guard("disallow_explicit"):
            got = f(FLUXION, fx)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def _device_to_host_cases(m: types.SimpleNamespace, dtype) -> dict:
    def fresh(shape=(3,)):  # a new array each time: a read keeps its host value (no new transfer)
        with m.lib.transfer_guard("allow"):
            return m.np.arange(int(np.prod(shape))).reshape(shape).astype(dtype)
    return {  # name -> (explicit, thunk)
        "np.asarray": (False, lambda: np.asarray(fresh())),
        "np.add": (False, lambda: np.add(fresh(), 1)),
        "tolist": (False, lambda: fresh((2, 3)).tolist()),
        "float": (False, lambda: float(fresh(()))),
        "str": (False, lambda: str(fresh())),
        "pickle.dumps": (False, lambda: pickle.dumps(fresh())),
        "copy_to_host_async": (False, lambda: fresh((2, 3)).copy_to_host_async()),
        "device_get": (True, lambda: m.lib.device_get(fresh())),
    }


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16, ml_dtypes.int4,
                                   ml_dtypes.float4_e2m1fn])
def test_device_to_host_as_jax(dtype) -> None:
    # The CPU's buffers are read in place (never a transfer), except sub-byte element types,
    # which jaxlib copies out: those reads are guarded on the CPU too, as on other platforms.
    ours, theirs = _device_to_host_cases(FLUXION, dtype), _device_to_host_cases(JAX, dtype)
    copies = np.dtype(dtype).name in ("int4", "float4_e2m1fn")
    for guard in ("transfer_guard", "transfer_guard_device_to_host"):
        for case, (explicit, thunk) in ours.items():
            got = _compare(case, thunk, theirs[case][1], (guard,))
            assert (got["disallow_explicit"] is not None) == copies, (case, got)
            assert (got["disallow"] is not None) == (copies and not explicit), (case, got)


@pytest.mark.tpu
@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16, ml_dtypes.int4])
def test_every_first_read_of_a_tpu_array_is_guarded(dtype) -> None:
    # On a TPU no read is in place: each first read copies and is checked, as jaxlib's copy is
    # there (seen on a v5e: 'Disallowed device-to-host transfer: shape=(3), dtype=F32,
    # device=TPU_0(process=0,(0,0,0,0))'); device_get is explicit. The CPU tests above compare
    # with the reference jax, which runs on the CPU in a TPU run.
    wrong = []
    for case, (explicit, thunk) in _device_to_host_cases(FLUXION, dtype).items():
        for level, refused in (("allow", False), ("disallow", not explicit),
                               ("disallow_explicit", True)):
            with fluxion.transfer_guard_device_to_host(level):
                err = _raised(thunk)
            if refused != (err is not None) or refused and not re.match(
                    r"INVALID_ARGUMENT: Disallowed device-to-host transfer: shape=.*"
                    r"device=TPU", str(err)):
                wrong.append((case, level, err))
    assert not wrong, wrong


def test_a_read_or_a_started_copy_is_not_transferred_again() -> None:
    for m in (FLUXION, JAX):
        read, started, fresh = (m.np.arange(3).astype(ml_dtypes.int4) for _ in range(3))
        with m.lib.transfer_guard("disallow"), pytest.raises(jax.errors.JaxRuntimeError):
            np.asarray(fresh)  # an int4 read copies, on the CPU too
        np.asarray(read)
        started.copy_to_host_async()
        with m.lib.transfer_guard("disallow_explicit"):
            assert np.asarray(read).tolist() == [0, 1, 2]
            assert np.asarray(started).tolist() == [0, 1, 2]
            started.copy_to_host_async()


def test_the_readback_of_other_platforms_passes_the_guard() -> None:
    # A TPU or GPU buffer is read by dispatch._copy_to_numpy (never in place): here it reads a
    # CPU array, and must check the guard as jaxlib's copy does (its message: jaxlib's own,
    # compared on an int4 array, which jaxlib copies on the CPU).
    x = fnp.arange(6.0).reshape(2, 3)
    with fluxion.transfer_guard_device_to_host("disallow"):
        with pytest.raises(jax.errors.JaxRuntimeError) as e:
            dispatch._copy_to_numpy(x)
        np.testing.assert_array_equal(dispatch.to_numpy(x), np.arange(6.0).reshape(2, 3))
        with guards.explicit_get():  # device_get's read: explicit
            dispatch._copy_to_numpy(x)
    assert str(e.value) == ("INVALID_ARGUMENT: Disallowed device-to-host transfer: "
                            "shape=(2,3), dtype=F32, device=cpu:0")
    with fluxion.transfer_guard_device_to_host("disallow_explicit"), guards.explicit_get():
        with pytest.raises(jax.errors.JaxRuntimeError, match="device-to-host"):
            dispatch._copy_to_numpy(x)
    with fluxion.transfer_guard_device_to_host("log"):
        dispatch._copy_to_numpy(x)
    # which reads copy: any platform but the CPU, and sub-byte types on the CPU
    tpu = types.SimpleNamespace(_internal_device_list=[types.SimpleNamespace(platform="tpu")])
    assert guards.readback_copies(tpu, np.dtype(np.float32))
    assert not guards.readback_copies(x.sharding, x.dtype)
    ours, theirs = fnp.arange(4).astype(ml_dtypes.int4), jnp.arange(4).astype(ml_dtypes.int4)
    with fluxion.transfer_guard("disallow"), jax.transfer_guard("disallow"):
        assert str(_raised(lambda: np.asarray(ours))) == str(_raised(lambda: np.asarray(theirs)))


_TWO_DEVICES = textwrap.dedent("""
    import json, sys
    import numpy as np
    if sys.argv[1] == "jax":
        import jax as lib, jax.numpy as lnp
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    else:
        import fluxion as lib, fluxion.numpy as lnp
        from fluxion.sharding import Mesh, NamedSharding, PartitionSpec as P
    d0, d1 = lib.devices()[:2]
    mesh = Mesh(np.array([d0, d1]), ("i",))
    split, whole = NamedSharding(mesh, P("i")), NamedSharding(mesh, P())
    x0 = lib.device_put(lnp.arange(4.0), d0)   # committed to device 0
    xu = lnp.arange(4.0) + 1                   # uncommitted, on device 0
    xs = lib.device_put(lnp.arange(4.0), split)
    xr = lib.device_put(lnp.arange(4.0), whole)
    cases = {
        "device_put(x0, d1)": lambda: lib.device_put(x0, d1),
        "device_put(xu, d1)": lambda: lib.device_put(xu, d1),
        "device_put(x0, split)": lambda: lib.device_put(x0, split),
        "device_put(xs, d0)": lambda: lib.device_put(xs, d0),
        "device_put(xr, d0)": lambda: lib.device_put(xr, d0),
        "device_put(xr, d1)": lambda: lib.device_put(xr, d1),
        "device_put(xs, whole)": lambda: lib.device_put(xs, whole),
        "xu + xs": lambda: xu + xs,
        "np.asarray(xs)": lambda: np.asarray(xs),
        "device_get(xs)": lambda: lib.device_get(xs),
    }
    out = {}
    for guard in ("transfer_guard", "transfer_guard_device_to_device"):
        for level in sys.argv[2:]:
            for name, f in cases.items():
                with getattr(lib, guard)(level):
                    try:
                        f()
                        got = None
                    except Exception as e:
                        got = [type(e).__name__, str(e).split(", dst_sharding=")[0]]
                out[f"{guard} {level} {name}"] = got
    print(json.dumps(out))
""")


def _two_devices(lib: str) -> dict:
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2",
               JAX_PLATFORMS="cpu", FLUXION_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", _TWO_DEVICES, lib, *LEVELS], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_device_to_device_as_jax_on_two_devices() -> None:
    ours, theirs = _two_devices("fluxion"), _two_devices("jax")
    assert ours == theirs
    raised = {k for k, v in ours.items() if v is not None}
    # explicit moves are refused by disallow_explicit only; the implicit one by disallow too
    assert "transfer_guard disallow_explicit device_put(x0, d1)" in raised
    assert "transfer_guard disallow device_put(x0, d1)" not in raised
    assert "transfer_guard_device_to_device disallow xu + xs" in raised
    assert ours["transfer_guard disallow_explicit device_put(xs, d0)"][1].endswith(
        "Disallowed host-to-device transfer: aval=ShapedArray(float32[4])")  # via the host
    assert ours["transfer_guard disallow_explicit device_put(xr, d0)"] is None  # no copy


@pytest.mark.parametrize("how", ["positional", "one argument", "keyword", "varargs one",
                                 "varargs two"])
def test_scalar_jit_argument_logged_once_per_call_as_jax(how, caplog, capfd) -> None:
    # the first, compiling call too (its fast dispatcher used to convert the scalar, miss, and
    # leave the general path to convert it again: two log lines)
    def calls(m):
        x = m.np.arange(3.0)
        f = {"positional": lambda: m.lib.jit(lambda a, b: a * b),
             "one argument": lambda: m.lib.jit(lambda b: b + 1),
             "keyword": lambda: m.lib.jit(lambda a, b: a * b),
             "varargs one": lambda: m.lib.jit(lambda *a: a[0] + 1),
             "varargs two": lambda: m.lib.jit(lambda *a: a[0] * a[1])}[how]()
        if how in ("one argument", "varargs one"):
            return lambda: f(2.5)
        if how == "keyword":
            return lambda: f(x, b=2.5)
        return lambda: f(x, 2.5)
    ours, theirs = calls(FLUXION), calls(JAX)
    counts = []
    for _ in range(3):
        caplog.clear()
        capfd.readouterr()
        with caplog.at_level(logging.WARNING, logger="fluxion"), fluxion.transfer_guard("log"):
            ours()
        with jax.transfer_guard("log"):
            theirs()
        counts.append(sum(r.getMessage().startswith("host-to-device transfer: aval=ShapedArray("
                                                    "float32[], weak_type=True)")
                          for r in caplog.records))
        if int(os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0")) < 2:  # absl's warnings shown
            assert capfd.readouterr().err.count("host-to-device transfer:") == counts[-1]
    assert counts == [1, 1, 1]
    with fluxion.transfer_guard("disallow"), pytest.raises(
            jax.errors.JaxRuntimeError, match="Disallowed host-to-device transfer"):
        ours()

"""benchmarks/dispatch_args.py's pyhpc cases (issue 32), and what a steady call of a pyhpc
kernel does on the CPU: one execute of the entry's executable, no transfer, no general path.

On a TPU v5e pyhpc_tke at 2^12 cells took 1.97 ms per call under Fluxion against 1.14 under
jax with the same optimized HLO; these tests pin the host side of that call (the chip command
is in dispatch_args' docstring). No timing is asserted.
"""

from __future__ import annotations

import collections
import sys

import jax
import numpy as np
import pytest

import fluxion
from benchmarks import dispatch_args
from fluxion.backend import dispatch as _d


@pytest.fixture
def x64():
    old = (fluxion.config.jax_enable_x64, jax.config.jax_enable_x64)
    fluxion.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        fluxion.config.update("jax_enable_x64", old[0])
        jax.config.update("jax_enable_x64", old[1])


def test_pyhpc_cases_print_every_split_column(x64, capsys):
    dispatch_args.main(["--cases", "tke,eos", "--split", "--jax-options", "--jax-text",
                        "--calls", "2", "--blocks", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("pyhpc size 4096")
    assert lines[1].split() == ["case", "fluxion", "jax", "entry", "execute", "jax_exec",
                                "jaxopts", "jaxtext", "ratio"]
    rows = {ln.split()[0]: ln.split()[1:] for ln in lines[2:] if "layouts:" not in ln}
    assert set(rows) == {"tke", "eos"}
    for cells in rows.values():
        assert len(cells) == 8 and all(float(c) > 0 for c in cells)
    notes = [ln.strip() for ln in lines if "layouts:" in ln]
    # tke: 19 inputs, two of them unused (pruned, as jax does); eos: 3
    assert notes == [f"{k} {lib} layouts: 0 of {n} argument buffers differ from the "
                     "executable's parameters"
                     for k, n in (("tke", 17), ("eos", 3)) for lib in ("fluxion", "jax")]


def test_split_thunks_wait_and_run_the_entrys_executable(x64):
    f, args = dispatch_args.make_pyhpc(fluxion, fluxion.numpy, "tke", 4096)
    parts = dispatch_args.split_calls(f, args, wait=True)
    (e,) = f._fluxion_jit.cache.values()
    assert e.run.positions == tuple(i for i in range(19) if i not in (8, 9))  # maskU, maskV
    want = [a.tolist() for a in f(*args)]
    assert [a.tolist() for a in parts["entry"]()] == want
    assert parts["execute"]() is None and parts["call"]()[1].tolist() == want[1]
    # the module compiled again with jax's CompileOptions, run bare: the same values
    assert [np.asarray(o).tolist() for o in dispatch_args.jax_options_call(f, args)()] == want
    # jax's module of the kernel, compiled by Fluxion, on Fluxion's buffers: jax's values
    got = [np.asarray(o) for o in dispatch_args.jax_text_call(f, args, "tke")()]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-18)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-18)
    g, jargs = dispatch_args.make_pyhpc(jax, jax.numpy, "tke", 4096)
    assert set(dispatch_args.jax_split_calls(g, jargs, wait=True)) == {"execute"}
    with pytest.raises(ValueError, match="unknown pyhpc kernel"):
        dispatch_args.make_pyhpc(fluxion, fluxion.numpy, "nope")


class _CountingExecutable:
    """A loaded executable whose ``execute_sharded`` calls are counted."""

    def __init__(self, exe, counts):
        self._exe, self._counts = exe, counts

    def execute_sharded(self, buffers, *a, **k):
        self._counts["execute"] += 1
        self._counts["buffers"] += len(buffers)
        return self._exe.execute_sharded(buffers, *a, **k)

    def __getattr__(self, name):
        return getattr(self._exe, name)


@pytest.mark.parametrize("kernel,buffers", [("tke", 17), ("eos", 3)])
def test_steady_pyhpc_call_is_one_execute_and_no_transfer(x64, monkeypatch, kernel, buffers):
    counts = collections.Counter()
    compile_program = _d.compile_program

    def counting_compile(*a, **k):
        exe, shardings = compile_program(*a, **k)
        wrapped = _d.Executable(_CountingExecutable(exe.exe, counts), exe.text, exe.devices,
                                exe.compile_time)
        return wrapped, shardings

    put = _d._jax.batched_device_put

    def counting_put(*a, **k):
        counts["device_put"] += 1
        return put(*a, **k)

    monkeypatch.setattr(_d, "compile_program", counting_compile)
    f, args = dispatch_args.make_pyhpc(fluxion, fluxion.numpy, kernel, 4096)
    assert counts["execute"] == 1  # the first call, on the counting executable
    monkeypatch.setattr(_d._jax, "batched_device_put", counting_put)
    for _ in range(3):
        fluxion.block_until_ready(f(*args))
    counts.clear()
    frames = collections.Counter()

    def profile(frame, event, arg):
        code = frame.f_code
        if event == "call" and "/src/fluxion/" in code.co_filename:  # Fluxion's own code
            frames[(code.co_filename.rsplit("/", 1)[-1], code.co_name)] += 1

    with fluxion.transfer_guard("disallow"):
        sys.setprofile(profile)
        try:
            for _ in range(100):
                fluxion.block_until_ready(f(*args))
        finally:
            sys.setprofile(None)
    assert counts == {"execute": 100, "buffers": 100 * buffers}, counts
    # the dispatcher's table, never the general call path (which places arguments) nor a
    # readback: each Python function here runs a fixed number of times per call
    called = set(frames)
    assert not any(file in ("jit.py", "dispatch.py", "transfer.py")
                   and fn != "block_until_ready"
                   for file, fn in called), sorted(called)
    assert not any(file == "array.py" and fn != "block_until_ready" for file, fn in called)
    assert all(n % 100 == 0 for n in frames.values()), frames
    assert sum(frames.values()) <= 100 * 12, frames


def test_jax_alone_has_its_bare_execute_column(x64, capsys):
    # as on a TPU, where each library runs in a process of its own
    dispatch_args.main(["--cases", "eos", "--libs", "jax", "--split", "--calls", "2",
                        "--blocks", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["case", "jax", "jax_exec"]
    assert lines[2].split()[0] == "eos" and len(lines[2].split()) == 3
    assert lines[3].strip().startswith("eos jax layouts: 0 of 3 ")


def test_client_options_set_fluxions_create_options_flag(capsys):
    # --client-options is Fluxion's jax_pjrt_client_create_options (which the plugin clients
    # are created with: tests/fluxion/test_compile_options.py), set before the client starts
    import fluxion
    from fluxion.core.config import flag_context

    spec = "ml_framework_name:JAX;ml_framework_version:0.10.2"
    with flag_context("jax_pjrt_client_create_options", None):
        dispatch_args.main(["--cases", "1x1", "--libs", "fluxion", "--calls", "2", "--blocks",
                            "1", "--client-options", spec])
        assert fluxion.config.jax_pjrt_client_create_options == spec
    assert f"client create options {spec}" in capsys.readouterr().out.splitlines()[0]

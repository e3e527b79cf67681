"""``fluxion.debug.breakpoint``: a host debugger session with the runtime values of the traced
variables, eagerly, under ``jit`` and per batch member under ``vmap``."""

from __future__ import annotations

import io

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp


def _session(fn, *args, commands="p y\nc\n"):
    out = io.StringIO()

    def f(x):
        y = x * 2  # noqa: F841 - inspected from the debugger
        fluxion.debug.breakpoint(stdin=io.StringIO(commands), stdout=out)
        return x + 1
    res = fn(f)(*args)
    return out.getvalue(), res


@pytest.mark.parametrize("wrap", [lambda f: f, fluxion.jit])
def test_breakpoint_shows_runtime_values(wrap):
    text, res = _session(wrap, jnp.arange(3.0), commands="p y\npp x.tolist()\nl\nw\nc\n")
    assert text.startswith("Entering fdb:")
    assert "Array([0., 2., 4.], dtype=float32)" in text
    assert "[0.0, 1.0, 2.0]" in text
    assert "fluxion.debug.breakpoint(stdin" in text  # the source listing
    assert "Traceback:" in text
    assert np.asarray(res).tolist() == [1.0, 2.0, 3.0]


def test_breakpoint_under_vmap_once_per_member():
    text, _ = _session(fluxion.vmap, jnp.arange(2.0), commands="p y\nc\np y\nc\n")
    assert text.count("Entering fdb:") == 2
    assert "Array(0., dtype=float32)" in text and "Array(2., dtype=float32)" in text


def test_breakpoint_errors_and_frames():
    text, _ = _session(fluxion.jit, jnp.ones(1), commands="p undefined_name\nd\nu\nc\n")
    assert "*** NameError" in text
    assert "At bottommost frame." in text
    with pytest.raises(TypeError, match="unexpected keyword"):
        fluxion.debug.breakpoint(colour="red")


def test_quit_raises_system_exit():
    with pytest.raises(SystemExit):
        _session(fluxion.jit, jnp.ones(1), commands="q\n")

"""Traceback filtering (core/tracebacks.py, flag ``jax_traceback_filtering``).

An error raised in the user's function under ``jit``/``grad``/``vmap``/``lax.scan`` reaches the
user without Fluxion's frames; the frames that remain are the ones JAX's filtered traceback keeps
for the same program (compared with real JAX), the user's failing line is the last one, and a note
says how to see the rest. The other modes do what JAX's do.
"""

from __future__ import annotations

import os
import subprocess
import sys
import traceback

import jax
import jax.numpy as np_jax
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion.core.tracebacks import FILTERED_NOTE, UnfilteredStackTrace

_FLUXION_DIR = os.path.dirname(fluxion.__file__)
_JAX_DIR = os.path.dirname(jax.__file__)


@pytest.fixture
def mode():
    """Set the filtering mode for one test, restoring the old value afterwards."""
    old = fluxion.config.jax_traceback_filtering
    yield lambda m: fluxion.config.update("jax_traceback_filtering", m)
    fluxion.config.update("jax_traceback_filtering", old)


def _frames(exc: BaseException) -> list[traceback.FrameSummary]:
    return traceback.extract_tb(exc.__traceback__)


def _user_frames(exc: BaseException, lib_dir: str) -> list[tuple[str, str]]:
    """(function, source line) of the traceback's frames outside ``lib_dir``."""
    return [(f.name, f.line) for f in _frames(exc) if not f.filename.startswith(lib_dir)]


def _raise_from(lib, kind):
    """Call a transformed function whose body fails (a dot of unaligned shapes); return the error."""
    np_ = jnp if lib is fluxion else np_jax

    def loss(x):
        return np_.dot(x, np_.ones((4,)))

    def body(c, x):
        return c + loss(x), None

    calls = {
        "jit": lambda: lib.jit(loss)(np_.ones(3)),
        "grad": lambda: lib.grad(loss)(np_.ones(3)),
        "vmap": lambda: lib.vmap(loss)(np_.ones((2, 3))),
        "jit_grad": lambda: lib.jit(lambda x: lib.grad(loss)(x))(np_.ones(3)),
        "scan": lambda: lib.lax.scan(body, 0.0, np_.ones((2, 3))),
    }
    with pytest.raises(TypeError) as info:
        calls[kind]()
    return info.value


@pytest.mark.parametrize("kind", ["jit", "grad", "vmap", "jit_grad", "scan"])
def test_filtered_frames_match_jax(mode, kind):
    mode("quiet_remove_frames")
    ours = _raise_from(fluxion, kind)
    theirs = _raise_from(jax, kind)
    frames = _frames(ours)
    assert not any(f.filename.startswith(_FLUXION_DIR) for f in frames), frames
    # The user's failing line is the last frame, as in JAX's filtered traceback.
    assert frames[-1].name == "loss" and "dot(x" in frames[-1].line
    assert [name for name, _ in _user_frames(ours, _FLUXION_DIR)] == [
        name for name, _ in _user_frames(theirs, _JAX_DIR)]
    notes = getattr(ours, "__notes__", [])
    assert len(notes) == 1 and notes[0].startswith("Fluxion removed ")
    assert "FLUXION_TRACEBACK_FILTERING=off" in notes[0]
    assert notes[0] == FILTERED_NOTE.format(n=notes[0].split()[2])
    assert "not aligned" in str(ours)  # the message itself is unchanged


def test_off_keeps_every_frame(mode):
    mode("off")
    err = _raise_from(fluxion, "jit")
    frames = _frames(err)
    assert any(f.filename.startswith(_FLUXION_DIR) for f in frames)
    assert frames[-1].filename.startswith(_FLUXION_DIR)  # the raise inside fluxion.numpy
    assert not getattr(err, "__notes__", None)


def test_remove_frames_chains_the_full_traceback(mode):
    mode("remove_frames")
    err = _raise_from(fluxion, "jit")
    assert not any(f.filename.startswith(_FLUXION_DIR) for f in _frames(err))
    cause = err.__cause__
    assert isinstance(cause, UnfilteredStackTrace)
    assert any(f.filename.startswith(_FLUXION_DIR) for f in _frames(cause))
    assert "not aligned" in str(cause)


def test_tracebackhide_marks_internal_frames(mode):
    mode("tracebackhide")
    err = _raise_from(fluxion, "jit")
    tb = err.__traceback__
    marked = []
    while tb is not None:
        internal = tb.tb_frame.f_code.co_filename.startswith(_FLUXION_DIR)
        marked.append((internal, tb.tb_frame.f_locals.get("__tracebackhide__", False)))
        tb = tb.tb_next
    assert any(internal for internal, _ in marked)
    assert all(hide for internal, hide in marked if internal)
    assert not any(hide for internal, hide in marked if not internal)


def test_flag_values_and_environment():
    with pytest.raises(ValueError, match="jax_traceback_filtering"):
        fluxion.config.update("jax_traceback_filtering", "sometimes")
    code = "import fluxion; print(fluxion.config.jax_traceback_filtering)"
    env = {**os.environ, "FLUXION_TRACEBACK_FILTERING": "off"}
    env.pop("JAX_TRACEBACK_FILTERING", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "off"


def test_errors_caught_inside_fluxion_are_untouched(mode):
    # An exception that a boundary below another boundary sees is left to the outer one.
    mode("quiet_remove_frames")

    def f(x):
        try:
            return lax.cond(x.sum() > 0, lambda v: v, lambda v: v[None], x)
        except TypeError as e:
            assert not getattr(e, "__notes__", None)
            raise

    with pytest.raises(TypeError) as info:
        fluxion.jit(f)(jnp.ones(2))
    assert len(info.value.__notes__) == 1


def test_script_traceback_ends_at_the_users_line(tmp_path):
    script = tmp_path / "user_script.py"
    script.write_text(
        "import fluxion\nimport fluxion.numpy as jnp\n\n"
        "@fluxion.jit\ndef f(x, y):\n    return jnp.dot(x, y)\n\n"
        "f(jnp.ones((2, 3)), jnp.ones((4, 5)))\n")
    env = {k: v for k, v in os.environ.items() if not k.endswith("TRACEBACK_FILTERING")}
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
    assert out.returncode == 1
    lines = out.stderr.splitlines()
    files = [ln for ln in lines if ln.strip().startswith("File ")]
    assert files == [f'  File "{script}", line 8, in <module>',
                     f'  File "{script}", line 6, in f'], out.stderr
    assert lines[-2].startswith("TypeError: dot: shapes (2, 3) and (4, 5) are not aligned")
    assert lines[-1].startswith("Fluxion removed ")


@pytest.mark.parametrize("mode_env, internal_shown", [(None, False), ("off", True)])
def test_uncaught_eager_error_in_a_script(tmp_path, mode_env, internal_shown):
    # No transformation, so no boundary: the excepthook filters the uncaught error.
    script = tmp_path / "eager.py"
    script.write_text("import fluxion.numpy as jnp\njnp.dot(jnp.ones((2, 3)), jnp.ones((4, 5)))\n")
    env = {k: v for k, v in os.environ.items() if not k.endswith("TRACEBACK_FILTERING")}
    if mode_env:
        env["FLUXION_TRACEBACK_FILTERING"] = mode_env
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
    assert out.returncode == 1
    files = [ln for ln in out.stderr.splitlines() if ln.strip().startswith("File ")]
    assert files[0] == f'  File "{script}", line 2, in <module>'
    assert any(_FLUXION_DIR in f for f in files) == internal_shown, out.stderr
    assert ("Fluxion removed 1 of its internal frames" in out.stderr) != internal_shown


def test_excepthook_leaves_other_hooks_alone(tmp_path):
    script = tmp_path / "hook.py"
    script.write_text("import sys\ndef mine(*a):\n    print('mine')\nsys.excepthook = mine\n"
                      "import fluxion\nprint(sys.excepthook is mine)\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True"]


def test_transformations_accept_a_callable_whose_name_is_not_a_string_like_jax():
    # JAX's transformations copy a function's metadata where they can: a callable object whose
    # __name__ is not a string (an equinox Module carried through scan) is still transformed.
    import jax
    import numpy as np

    import fluxion

    class Odd:
        __name__ = object()

        def __call__(self, x):
            return x * x

    x = np.arange(3.0, dtype=np.float32)
    for name in ["vmap", "checkpoint"]:
        ours, theirs = getattr(fluxion, name)(Odd()), getattr(jax, name)(Odd())
        np.testing.assert_array_equal(np.asarray(ours(x)), np.asarray(theirs(x)))
    for name in ["grad", "value_and_grad"]:
        ours, theirs = getattr(fluxion, name)(Odd()), getattr(jax, name)(Odd())
        np.testing.assert_equal(np.asarray(ours(np.float32(3.0))),
                                np.asarray(theirs(np.float32(3.0))))

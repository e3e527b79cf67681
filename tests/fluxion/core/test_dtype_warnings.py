"""The x64 truncation warning points at the user's line (not into fluxion/numpy) and is shown once
per line, even when a ``warnings.catch_warnings`` block re-arms Python's per-location registry."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import pytest

import fluxion.numpy as jnp


def test_warning_points_at_the_users_line_once(tmp_path):
    script = tmp_path / "user.py"
    script.write_text(textwrap.dedent("""\
        import warnings
        import fluxion.numpy as jnp
        for i in range(3):
            jnp.sum(jnp.ones(3), dtype="float64")
            with warnings.catch_warnings():
                pass
        jnp.zeros(2, "float64")
        """))
    env = {k: v for k, v in os.environ.items() if not k.endswith("ENABLE_X64")}
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if "UserWarning" in ln]
    assert len(lines) == 2, r.stderr
    assert lines[0].startswith(f"{script}:4: UserWarning: Explicitly requested dtype float64 "
                               "requested in sum")
    assert lines[1].startswith(f"{script}:7: UserWarning:")


def test_pytest_warns_still_sees_every_call():
    for _ in range(2):
        with pytest.warns(UserWarning, match="truncated to dtype float32"):
            jnp.zeros(2, "float64")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning):
            jnp.zeros(2, "float64")


def test_a_package_asking_for_float64_warns_once(tmp_path):
    # An ecosystem package (any top-level fluxion_* package) asking for float64 in 32-bit mode:
    # one warning for its line, pointing at the user's first call, naming the package's line.
    pkg = tmp_path / "fluxion_fake"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent("""\
        import fluxion.numpy as jnp
        def total(x):
            return jnp.sum(x, dtype="float64")
        """))
    script = tmp_path / "user.py"
    script.write_text(textwrap.dedent("""\
        import fluxion.numpy as jnp
        import fluxion_fake
        fluxion_fake.total(jnp.ones(3))
        fluxion_fake.total(jnp.ones(4))
        """))
    env = {k: v for k, v in os.environ.items() if not k.endswith("ENABLE_X64")}
    env["PYTHONPATH"] = str(tmp_path) + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if "UserWarning" in ln]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"{script}:3: UserWarning:")
    assert lines[0].endswith("(asked for by fluxion_fake/__init__.py:3)")

"""jax_enable_checks: the type check of the programs jit compiles (core.ir.typecheck) runs only
under the flag, which is off by default and on in the test suite (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion.backend import jit as jit_module
from fluxion.backend import jit_stages
from fluxion.core import ir
from fluxion.core.avals import ShapedArray
from fluxion.lax import sin_p


def _counting(monkeypatch: pytest.MonkeyPatch) -> list:
    calls: list = []
    real = ir.typecheck

    def counted(program: ir.Program) -> None:
        calls.append(program)
        real(program)

    monkeypatch.setattr(jit_module, "typecheck", counted)
    monkeypatch.setattr(jit_stages, "typecheck", counted)
    return calls


def _malformed() -> ir.Program:
    # sin of an f32[3] recorded with an f32[4] output: what a wrong rule would build
    x = ir.Var(ShapedArray((3,), np.dtype(np.float32)))
    y = ir.Var(ShapedArray((4,), np.dtype(np.float32)))
    return ir.Program([], [x], [y], [ir.Equation(sin_p, [x], [y], {})])


def test_the_suite_runs_with_checks_on():
    assert fluxion.config.jax_enable_checks is True
    assert fluxion.enable_checks.value is True


def test_default_is_off_in_a_fresh_process():
    env = {k: v for k, v in os.environ.items()
           if k not in ("FLUXION_ENABLE_CHECKS", "JAX_ENABLE_CHECKS")}
    out = subprocess.run([sys.executable, "-c", "import fluxion; print(fluxion.config."
                          "jax_enable_checks)"], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
    env["JAX_ENABLE_CHECKS"] = "1"  # JAX's environment variable turns them on too
    out = subprocess.run([sys.executable, "-c", "import fluxion; print(fluxion.config."
                          "jax_enable_checks)"], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "True"


@pytest.mark.parametrize("checks", [True, False])
def test_typecheck_runs_only_under_the_flag(monkeypatch, checks):
    calls = _counting(monkeypatch)
    with fluxion.enable_checks(checks):
        f = fluxion.jit(lambda a: jnp.sin(a) * 2.0)
        np.testing.assert_allclose(f(jnp.arange(3.0)), np.sin(np.arange(3.0)) * 2.0, rtol=1e-6)
        f(jnp.arange(3.0))  # a cache hit: never checked again
        f.trace(jnp.arange(5.0)).lower()  # the ahead-of-time path (jit_stages)
    assert len(calls) == (2 if checks else 0)


def test_a_malformed_program_is_caught_with_checks_on():
    program = _malformed()
    with fluxion.enable_checks(True):
        with pytest.raises(ir.ProgramTypeError, match=r"sin: output f32\[4\] does not match "
                                                      r"f32\[3\]"):
            jit_module.run_program(program, [jnp.ones(3)], "malformed", [False])


def test_a_malformed_program_is_not_checked_with_checks_off(monkeypatch):
    calls = _counting(monkeypatch)
    with fluxion.enable_checks(False):
        with pytest.raises(Exception) as info:  # XLA's verifier rejects the module instead
            jit_module.run_program(_malformed(), [jnp.ones(3)], "malformed_off", [False])
    assert not isinstance(info.value, ir.ProgramTypeError)
    assert calls == []


def test_user_errors_do_not_depend_on_the_checks():
    # bad shapes are reported while tracing, naming the function and the user's line
    f = fluxion.jit(lambda a, b: a @ b)
    for checks in (True, False):
        with fluxion.enable_checks(checks):
            with pytest.raises(TypeError, match="contracting dimensions must match") as info:
                f(jnp.ones((2, 3)), jnp.ones((4, 5)))
            assert "test_enable_checks.py" in str(info.value)

"""The generated dispatchers of ``jit`` (backend/jit_dispatch.py) are compiled once per number of
parameters: a function with other parameter names gets that code with its own names swapped in,
and binds keyword arguments by them as the function itself does."""

from __future__ import annotations

import builtins
import inspect

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp


def test_one_compile_per_number_of_parameters(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = []
    real = builtins.compile

    def counting(source, filename, *args, **kwargs):
        if "<dispatcher of" in str(filename):
            compiled.append(filename)
        return real(source, filename, *args, **kwargs)

    monkeypatch.setattr(builtins, "compile", counting)

    def f(alpha_q, beta_q, gamma_q):
        return alpha_q * beta_q - gamma_q

    def g(delta_q, eps_q, zeta_q):
        return delta_q - eps_q * zeta_q

    jf, jg = fluxion.jit(f), fluxion.jit(g)
    # the arity's first compile may have happened in an earlier test: at most one here
    assert len(compiled) <= 1, compiled
    assert jf.__code__.co_varnames[:3] == ("alpha_q", "beta_q", "gamma_q")
    assert jg.__code__.co_varnames[:3] == ("delta_q", "eps_q", "zeta_q")
    assert str(inspect.signature(jg)) == "(delta_q, eps_q, zeta_q)"
    x = np.arange(3.0, dtype=np.float32)
    for _ in range(2):  # the first call traces, the second takes the generated lookup
        np.testing.assert_array_equal(jf(jnp.asarray(x), 2.0, gamma_q=jnp.asarray(x)), x)
        np.testing.assert_array_equal(
            jg(zeta_q=2.0, eps_q=jnp.asarray(x), delta_q=jnp.asarray(x)), -x)
    with pytest.raises(TypeError, match="unexpected keyword argument 'alpha_q'"):
        jg(x, x, alpha_q=x)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'zeta_q'"):
        jg(x, x)

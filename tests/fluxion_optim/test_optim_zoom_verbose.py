"""scale_by_zoom_linesearch(verbose=True) prints optax's diagnostics (the FLAG_* texts optax's own
tests look for) in the same failure cases as optax, and the same steps; nothing when it succeeds."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
import fluxion_optim as optax
from fluxion_optim import _linesearch as ls

roptax = pytest.importorskip("optax")
rls = pytest.importorskip("optax._src.linesearch")
jax = pytest.importorskip("jax")


def _run(mod, lib_jax, lib_jnp, fn, w, u, guess, **kw):
    opt = mod.scale_by_zoom_linesearch(verbose=True, **kw)
    state = opt.init(w)
    state = state._replace(learning_rate=lib_jnp.asarray(guess, lib_jnp.float32))
    value, grad = lib_jax.value_and_grad(fn(lib_jnp))(w)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _, state = opt.update(u, state, w, value=value, grad=grad, value_fn=fn(lib_jnp))
        step = float(state.learning_rate)
        if lib_jax is jax:
            jax.effects_barrier()
    return step, out.getvalue()


CASES = {
    "not_descent": (lambda np_: lambda w: np_.dot(w, w), [60.0, 0.0], [1.0, 0.0],
                    dict(max_linesearch_steps=18, curv_rtol=0.5),
                    [ls.FLAG_NOT_A_DESCENT_DIRECTION, ls.FLAG_NO_STEPSIZE_FOUND]),
    "max_stepsize": (lambda np_: lambda w: np_.dot(w, w), [-60.0, 0.0], [1.0, 0.0],
                     dict(max_linesearch_steps=10, curv_rtol=0.5, max_learning_rate=10.0),
                     [ls.FLAG_INTERVAL_NOT_FOUND, ls.FLAG_CURVATURE_COND_NOT_SATISFIED]),
    "success": (lambda np_: lambda w: np_.dot(w, w), [-60.0, 0.0], [1.0, 0.0],
                dict(max_linesearch_steps=30, curv_rtol=0.5), []),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_verbose_messages_match_optax(case):
    fn, w, u, kw, flags = CASES[case]
    ours = _run(optax, fluxion, jnp, fn, jnp.asarray(w), jnp.asarray(u), 1.0, **kw)
    ref = _run(roptax, jax, jax.numpy, fn, jax.numpy.asarray(w), jax.numpy.asarray(u), 1.0, **kw)
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-6)
    for flag in (ls.FLAG_NOT_A_DESCENT_DIRECTION, ls.FLAG_NO_STEPSIZE_FOUND,
                 ls.FLAG_INTERVAL_NOT_FOUND, ls.FLAG_CURVATURE_COND_NOT_SATISFIED,
                 ls.FLAG_INTERVAL_TOO_SMALL):
        assert (flag in ours[1]) == (flag in ref[1]), (flag, ours[1], ref[1])
    for flag in flags:
        assert flag in ours[1]
    assert ls.FLAG_NO_STEPSIZE_FOUND == rls.FLAG_NO_STEPSIZE_FOUND
    if not flags:
        assert ours[1] == ""

"""The categorical log-probability's derivatives are distrax's: ``multiply_no_nan`` (the one-hot
product inside ``softmax().logprob``) is differentiated by distrax's rule ``x' y + y' x``, not
through its ``where``. The gradient is then rlax's to the bit, and NaN where distrax's is."""

from __future__ import annotations

import numpy as np
import pytest
from _compare import platform_tol

import fluxion
import fluxion.numpy as fjnp
import fluxion_rl
from fluxion_rl import _distributions

rlax = pytest.importorskip("rlax")
jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

pytestmark = pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")


def _logprob_sum(rl, xnp, actions):
    dist = rl.softmax()
    return lambda logits: xnp.sum(dist.logprob(actions, logits))


@pytest.mark.parametrize("seed", [0, 1])
def test_softmax_logprob_grad_is_rlax_bitwise(seed):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((64, 3)).astype(np.float32)
    actions = rng.integers(-1, 4, 64).astype(np.int32)  # -1 and 3 lie outside the support
    ours = fluxion.jit(fluxion.grad(_logprob_sum(fluxion_rl, fjnp, actions)))(logits)
    ref = jax.jit(jax.grad(_logprob_sum(rlax, jnp, actions)))(logits)
    # differentiated through the where, 1 (seed 0) and 3 (seed 1) of the 192 entries were
    # 1 ulp off rlax's; bit for bit on the CPU, within the platform's float32 tolerance on a TPU
    # (whose exp and division round otherwise than the CPU reference's)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), **platform_tol(0.0))


def test_mul_no_nan_tangent_is_distrax_rule():
    x = np.array([1.0, 2.0, 3.0], np.float32)
    y = np.array([0.0, 2.0, 0.0], np.float32)
    x_dot = np.array([np.nan, 1.0, 1.0], np.float32)
    out, t = fluxion.jvp(_distributions._mul_no_nan, (x, y), (x_dot, np.zeros(3, np.float32)))
    np.testing.assert_array_equal(np.asarray(out), [0.0, 4.0, 0.0])
    # x' y: a NaN tangent times y == 0 stays NaN (distrax), where the where's derivative gave 0
    np.testing.assert_array_equal(np.asarray(t), [np.nan, 2.0, 0.0])
    _, t_y = fluxion.jvp(lambda b: _distributions._mul_no_nan(x, b), (y,),
                         (np.ones(3, np.float32),))
    np.testing.assert_array_equal(np.asarray(t_y), x)

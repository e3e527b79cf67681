"""``jnp.clip`` (traced) and ``nn.log_softmax`` stay nested jits in the caller's program, as
JAX's: XLA then gets JAX's program, so the optimized HLO of a PPO-style loss gradient has JAX's
fusions, one for one (issue 28: the clamp's operand order and the cotangent sums of two
log_softmax calls differed while both were inlined). Eager clip is still one compiled program.
"""

from __future__ import annotations

import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
from _compare import assert_same

import fluxion
import fluxion.numpy as fnp

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

from benchmarks.issue28_analysis import canonical_hlo  # noqa: E402


def _names(jaxpr) -> list[str]:
    return [str(e.params.get("name")) for e in jaxpr.eqns if e.primitive.name in ("jit", "pjit")]


def test_traced_clip_and_log_softmax_are_nested_jits_as_jax() -> None:
    def f(lib):
        def g(x):
            return lib.nn.log_softmax(lib.numpy.clip(x, 0.0, 1.0))
        return g

    x = np.array([-0.5, 0.25, 2.0], np.float32)
    ours = fluxion.make_jaxpr(f(fluxion))(fnp.asarray(x))
    theirs = jax.make_jaxpr(f(jax))(jnp.asarray(x))
    assert _names(ours.jaxpr) == _names(theirs.jaxpr) == ["clip", "log_softmax"]
    assert_same(fluxion.jit(f(fluxion))(fnp.asarray(x)), jax.jit(f(jax))(jnp.asarray(x)))
    assert_same(fnp.clip(fnp.asarray(x), None, 1.0), jnp.clip(jnp.asarray(x), None, 1.0))
    # one bound, traced (a nested jit of its own)
    assert_same(fluxion.jit(lambda a: fnp.clip(a, 0.0))(fnp.asarray(x)),
                jax.jit(lambda a: jnp.clip(a, 0.0))(jnp.asarray(x)))


def test_ppo_style_loss_gradient_gets_jaxs_fusions() -> None:
    def loss(lib):
        xnp, nn = lib.numpy, lib.nn

        def f(w, obs, act, old_logp, adv):
            logits = obs @ w
            logp_all = nn.log_softmax(logits)
            logp = xnp.take_along_axis(logp_all, act[:, None], axis=-1)[:, 0]
            ratio = xnp.exp(logp - old_logp)
            pg = -xnp.mean(xnp.minimum(ratio * adv, xnp.clip(ratio, 0.8, 1.2) * adv))
            ent = -xnp.mean(-xnp.sum(xnp.exp(nn.log_softmax(logits)) * nn.log_softmax(logits),
                                     axis=-1))
            return pg + 0.01 * ent
        return f

    rng = np.random.default_rng(0)
    args = (rng.standard_normal((4, 2)).astype(np.float32),
            rng.standard_normal((16, 4)).astype(np.float32),
            rng.integers(0, 2, 16).astype(np.int32),
            rng.standard_normal(16).astype(np.float32) * 0.1,
            rng.standard_normal(16).astype(np.float32))
    ours = fluxion.jit(fluxion.grad(loss(fluxion))).lower(*map(fnp.asarray, args))
    theirs = jax.jit(jax.grad(loss(jax))).lower(*map(jnp.asarray, args))
    ours_c, theirs_c = ours.compile(), theirs.compile()
    assert sorted(canonical_hlo(ours_c.as_text())["fusions"]) == \
        sorted(canonical_hlo(theirs_c.as_text())["fusions"])
    assert_same(ours_c(*map(fnp.asarray, args)), theirs_c(*map(jnp.asarray, args)), rtol=1e-6)

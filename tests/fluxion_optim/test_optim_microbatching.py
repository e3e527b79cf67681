"""fluxion_optim.microbatching against optax.microbatching: same results, dtypes and errors."""

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
import fluxion_optim

optax = pytest.importorskip("optax")
jax = pytest.importorskip("jax")
from _optim_reference import ref_jit  # (imports jax: after the skip above)


def _both(make):
    return make(fluxion_optim, jnp), make(optax, jax.numpy)


def test_microbatch_concat_and_sum_as_optax() -> None:
    data = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], np.float32)

    def make(mod, xp):
        acc = (mod.microbatching.AccumulationType.CONCAT, mod.microbatching.AccumulationType.MEAN)
        f = mod.microbatch(lambda x: (x + 1, xp.sum(3 * x)), argnums=0, microbatch_size=2,
                           accumulator=acc)
        return f(xp.asarray(data))

    ours, ref = _both(make)
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
        assert a.dtype == b.dtype and a.shape == b.shape


def test_micro_grad_as_optax() -> None:
    w = np.array([0.5, -1.0], np.float32)
    x = np.arange(8, dtype=np.float32).reshape(4, 2)

    def make(mod, xp):
        loss = lambda w, x: xp.sum((x @ w) ** 2)  # noqa: E731
        clip = lambda g: g / xp.maximum(1.0, xp.linalg.norm(g))  # noqa: E731
        f = mod.microbatching.micro_grad(loss, microbatch_size=2, transform_fn=clip,
                                         metrics_fn=lambda g: xp.linalg.norm(g))
        return f(xp.asarray(w), xp.asarray(x))

    (g, aux), (rg, raux) = _both(make)
    np.testing.assert_allclose(np.asarray(g), np.asarray(rg), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(aux.values), np.asarray(raux.values), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(aux.metrics), np.asarray(raux.metrics), rtol=1e-6)


def test_early_stop_running_mean_under_jit() -> None:
    x = np.arange(8, dtype=np.float32)

    def make(mod, xp):
        f = mod.microbatching.micro_vmap(
            lambda v: v * 2.0, microbatch_size=2, num_real_microbatches=3,
            accumulator=mod.microbatching.AccumulationType.RUNNING_MEAN)
        return f(xp.asarray(x))

    ours = fluxion.jit(lambda: make(fluxion_optim, jnp))()
    ref = ref_jit(lambda: make(optax, jax.numpy))()
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=1e-6)


def test_errors_as_optax() -> None:
    mb = fluxion_optim.microbatching
    with pytest.raises(ValueError, match="must be divisible by microbatch_size=4"):
        mb.microbatch(lambda x: x, argnums=0, microbatch_size=4)(jnp.zeros(6))
    with pytest.raises(ValueError, match="require floating-point values"):
        mb.microbatch(lambda x: x, argnums=0, microbatch_size=2,
                      accumulator=mb.AccumulationType.MEAN)(jnp.zeros(4, jnp.int32))

"""A real program end to end: the training loop of JAX's ``examples/mnist_vae.py`` on small
synthetic data.

The program has the example's structure, written here over each backend's ``numpy``, ``random``,
``lax`` and ``example_libraries.stax``/``optimizers``: a Gaussian VAE with a 784-512-512-(10, 10)
encoder (``FanOut(2)`` into a mean head and a softplus variance head) and a 10-512-512-784
decoder; images binarised by ``bernoulli`` per batch; the negative ELBO (Bernoulli likelihood of
the logits + analytic Gaussian KL) minimised with momentum SGD inside ``lax.fori_loop`` in one
jitted ``run_epoch``; and a jitted ``evaluate`` that binarises the test set, computes its ELBO and
samples a 10 x 10 grid of decoded images (100 slices + transposes of one ``bernoulli`` draw: the
part whose compile once made Fluxion 3.5x slower than JAX here).

Data: ``size`` epochs over 1024 random "images" (uniform grey levels in [0, 1), 784 pixels;
batch 32, so 32 steps per epoch) and a 256-image test set. Every repetition changes the data sizes
slightly (one more batch, one more test image), so its programs are new and nothing is served
from an in-memory cache: each repetition is a first run of the program in a warm process.

Phases (seconds, one sample per repetition): ``end_to_end`` (initialise parameters, then every
epoch's ``run_epoch`` and ``evaluate``, blocking, as the example's loop does), ``run_epoch_first``
and ``evaluate_first`` (the first call of each: trace + compile + run), ``epoch_steady`` (the
mean ``run_epoch`` + ``evaluate`` time of the later epochs).

``python -m benchmarks.workloads.vae_train --backend fluxion`` prints the optimized HLO
instruction counts of both programs (``jit(f).lower(...).compile().as_text()``).
"""

from __future__ import annotations

import importlib
import time
from typing import Any, Callable

import numpy as np

from benchmarks import backends

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "QUICK_SIZES", "PHASES", "DEFAULT_REPS",
           "QUICK_REPS", "setup", "size_label", "build", "hlo_instruction_counts"]

NAME = "vae_train"
DESCRIPTION = ("JAX's examples/mnist_vae.py training loop (MLP VAE, momentum, fori_loop epochs, "
               "evaluate with a 10x10 sampled image grid) on 1024 synthetic images: end to end")
VARIANTS = ("jax", "fluxion")
SIZES = (3,)
QUICK_SIZES = (2,)
PHASES = ("end_to_end", "run_epoch_first", "evaluate_first", "epoch_steady")
DEFAULT_REPS = 3
QUICK_REPS = 1

N_TRAIN, N_TEST, BATCH, NROW, NCOL, LATENT = 1024, 256, 32, 10, 10, 10


def size_label(size: int) -> str:
    """``3 -> "3 epochs"``."""
    return f"{size} epochs"


def build(b: Any, num_batches: int) -> dict[str, Any]:
    """The example's program over backend ``b``: ``init(key) -> opt_state``, jitted
    ``run_epoch(key, opt_state, images)`` and ``evaluate(opt_state, images)``."""
    jnp, random, jit, grad = b.np, b.module.random, b.module.jit, b.module.grad
    lax = importlib.import_module(b.name + ".lax")
    stax = importlib.import_module(b.name + ".example_libraries.stax")
    optimizers = importlib.import_module(b.name + ".example_libraries.optimizers")

    def kl_to_standard_normal(mu: Any, var: Any) -> Any:
        return -0.5 * jnp.sum(1.0 + jnp.log(var) - mu ** 2.0 - var)

    def sample_gaussian(key: Any, mu: Any, var: Any) -> Any:
        return mu + jnp.sqrt(var) * random.normal(key, mu.shape)

    def bernoulli_log_likelihood(logits: Any, x: Any) -> Any:
        # log sigmoid(+-logits) = -log(1 + exp(-+logits))
        return -jnp.sum(jnp.logaddexp(0.0, jnp.where(x, -1.0, 1.0) * logits))

    enc_init, encode = stax.serial(
        stax.Dense(512), stax.Relu, stax.Dense(512), stax.Relu, stax.FanOut(2),
        stax.parallel(stax.Dense(LATENT), stax.serial(stax.Dense(LATENT), stax.Softplus)))
    dec_init, decode = stax.serial(
        stax.Dense(512), stax.Relu, stax.Dense(512), stax.Relu, stax.Dense(28 * 28))

    def elbo(key: Any, params: Any, images: Any) -> Any:
        enc, dec = params
        mu, var = encode(enc, images)
        logits = decode(dec, sample_gaussian(key, mu, var))
        return bernoulli_log_likelihood(logits, images) - kl_to_standard_normal(mu, var)

    def image_grid(nrow: int, ncol: int, flat: Any, shape: tuple[int, int]) -> Any:
        imgs = flat.reshape((-1,) + shape)
        rows = []
        for r in range(nrow):
            row = [imgs[r * ncol + c].T for c in range(ncol)]
            rows.append(jnp.hstack(row[::-1]))
        return jnp.vstack(rows).T

    def sample_images(key: Any, params: Any) -> Any:
        code_key, pixel_key = random.split(key)
        logits = decode(params[1], random.normal(code_key, (NROW * NCOL, LATENT)))
        pixels = random.bernoulli(pixel_key, jnp.logaddexp(0.0, logits))
        return image_grid(NROW, NCOL, pixels, (28, 28))

    opt_init, opt_update, get_params = optimizers.momentum(1e-3, mass=0.9)

    def init(key: Any) -> Any:
        k_enc, k_dec = random.split(key)
        _, enc = enc_init(k_enc, (BATCH, 28 * 28))
        _, dec = dec_init(k_dec, (BATCH, LATENT))
        return opt_init((enc, dec))

    @jit
    def run_epoch(key: Any, opt_state: Any, images: Any) -> Any:
        def step(i: Any, state: Any) -> Any:
            elbo_key, data_key = random.split(random.fold_in(key, i))
            batch = lax.dynamic_slice_in_dim(images, (i % num_batches) * BATCH, BATCH)
            batch = random.bernoulli(data_key, batch)
            g = grad(lambda p: -elbo(elbo_key, p, batch) / BATCH)(get_params(state))
            return opt_update(i, g, state)

        return lax.fori_loop(0, num_batches, step, opt_state)

    test_key = random.PRNGKey(1)

    @jit
    def evaluate(opt_state: Any, images: Any) -> Any:
        params = get_params(opt_state)
        elbo_key, data_key, image_key = random.split(test_key, 3)
        binary = random.bernoulli(data_key, images)
        return (elbo(elbo_key, params, binary) / images.shape[0],
                sample_images(image_key, params))

    return {"init": init, "run_epoch": run_epoch, "evaluate": evaluate}


def _data(salt: int) -> tuple[np.ndarray, np.ndarray, int]:
    rng = np.random.default_rng(salt)
    num_batches = N_TRAIN // BATCH + salt
    train = rng.random((num_batches * BATCH, 28 * 28), dtype=np.float32)
    test = rng.random((N_TEST + salt, 28 * 28), dtype=np.float32)
    return train, test, num_batches


def setup(variant: str, size: int) -> Callable[[], dict[str, float]]:
    """One self-timed repetition: ``size`` epochs of a fresh program (``phase -> seconds``)."""
    b = backends.load(variant)
    random = b.module.random
    salt = [0]

    def run() -> dict[str, float]:
        salt[0] += 1
        train, test, num_batches = _data(salt[0])
        t0 = time.perf_counter()
        prog = build(b, num_batches)
        train_d, test_d = b.module.device_put(train), b.module.device_put(test)
        state = prog["init"](random.PRNGKey(2))
        times: dict[str, float] = {}
        steady: list[float] = []
        test_elbo = None
        for epoch in range(int(size)):
            t_e = time.perf_counter()
            state = b.module.block_until_ready(
                prog["run_epoch"](random.PRNGKey(epoch), state, train_d))
            t_v = time.perf_counter()
            test_elbo, grid = b.module.block_until_ready(prog["evaluate"](state, test_d))
            t_end = time.perf_counter()
            if epoch == 0:
                times["run_epoch_first"] = t_v - t_e
                times["evaluate_first"] = t_end - t_v
            else:
                steady.append(t_end - t_e)
        times["end_to_end"] = time.perf_counter() - t0
        times["epoch_steady"] = float(np.mean(steady)) if steady else float("nan")
        value = float(test_elbo)
        if not np.isfinite(value) or np.asarray(grid).shape != (28 * NROW, 28 * NCOL):
            raise AssertionError(f"vae_train/{variant}: test ELBO {value}, grid "
                                 f"{np.asarray(grid).shape}")
        return times

    return run


def hlo_instruction_counts(backend: str, salt: int = 1) -> dict[str, int]:
    """Optimized-HLO instruction counts (lines with `` = ``) of ``run_epoch`` and ``evaluate``
    on ``backend``, from ``jit(f).lower(...).compile().as_text()``."""
    b = backends.load(backend)
    train, test, num_batches = _data(salt)
    prog = build(b, num_batches)
    state = prog["init"](b.module.random.PRNGKey(2))
    out = {}
    for name, args in (("run_epoch", (b.module.random.PRNGKey(0), state, train)),
                       ("evaluate", (state, test))):
        t0 = time.process_time()
        text = prog[name].lower(*args).compile().as_text()
        out[name] = sum(1 for line in text.splitlines() if " = " in line)
        out[name + "_compile_cpu_s"] = round(time.process_time() - t0, 2)
    return out


if __name__ == "__main__":
    import argparse
    import json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="fluxion", choices=("jax", "fluxion"))
    print(json.dumps(hlo_instruction_counts(parser.parse_args().backend)))

"""Shared code of the ``nn_*_train_step`` workloads: one model definition written against the
``flax.nnx`` / ``optax`` API, run either with ``flax.nnx`` + ``optax`` on JAX (variant ``jax``) or
with ``fluxion_nn`` + ``fluxion_optim`` (variant ``fluxion``). Nothing here imports a backend at
module level; the libraries are imported inside :func:`make_step`.

Phases: ``steady`` is one cached call of the jitted train step (model and optimizer updated in
place, blocked on the loss); ``first_call`` is the first call of a fresh ``nnx.jit`` step (trace,
lower, compile and run), timed in ``setup``.
"""

from __future__ import annotations

import importlib
import time
from typing import Any, Callable

import numpy as np

__all__ = ["libraries", "make_step"]


def libraries(variant: str) -> tuple[Any, Any, Any, Any]:
    """``(nnx, optax, jnp, module)`` of ``variant`` (``"jax"`` or ``"fluxion"``)."""
    if variant == "jax":
        import flax.nnx as nnx
        import jax
        import jax.numpy as jnp
        import optax
        return nnx, optax, jnp, jax
    if variant == "fluxion":
        import fluxion
        import fluxion.numpy as fnp
        nnx = importlib.import_module("fluxion_nn")
        optax = importlib.import_module("fluxion_optim")
        return nnx, optax, fnp, fluxion
    raise ValueError(f"nn train step: variant must be 'jax' or 'fluxion', got {variant!r}")


def make_step(variant: str, build_model: Callable[[Any, Any], Any], batch: tuple[np.ndarray, ...],
              name: str, lr: float = 1e-3) -> Callable[[], Any]:
    """The steady-state step callable (``first_call_s`` set) of ``build_model(nnx, rngs)``
    trained with ``optax.adam(lr)`` on integer-label softmax cross-entropy.

    Checked before timing: the loss is finite, the first step changes the parameters, and a
    few more steps on the same batch lower the loss.
    """
    nnx, optax, jnp, mod = libraries(variant)
    model = build_model(nnx, nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(lr), wrt=nnx.Param)
    x, y = (mod.device_put(a) for a in batch)

    def loss_fn(model: Any, x: Any, y: Any) -> Any:
        logits = model(x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

    @nnx.jit
    def train_step(model: Any, optimizer: Any, x: Any, y: Any) -> Any:
        loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
        optimizer.update(model, grads)
        return loss

    t0 = time.perf_counter()
    loss0 = float(mod.block_until_ready(train_step(model, optimizer, x, y)))
    first = time.perf_counter() - t0
    if not np.isfinite(loss0):
        raise AssertionError(f"{name}/{variant}: first loss is {loss0}")
    losses = [float(train_step(model, optimizer, x, y)) for _ in range(4)]
    if not losses[-1] < loss0:
        raise AssertionError(f"{name}/{variant}: loss did not decrease on a repeated batch: "
                             f"{loss0} -> {losses}")

    def run() -> Any:
        return mod.block_until_ready(train_step(model, optimizer, x, y))

    run.first_call_s = first  # type: ignore[attr-defined]
    return run

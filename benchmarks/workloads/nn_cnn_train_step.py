"""A CNN train step written once against the flax.nnx/optax API: fluxion_nn + fluxion_optim
(variant ``fluxion``) vs flax.nnx + optax on JAX (variant ``jax``).

Model (float32, NHWC 28x28x1, batch 32): ``Conv(1, 16, 3x3)`` relu, ``Conv(16, 32, 3x3,
stride 2)`` relu, ``avg_pool 2x2``, ``Conv(32, 32, 3x3)`` relu, global mean, ``Linear(32, 10)``;
adam(1e-3) through ``nnx.Optimizer``, softmax cross-entropy with integer labels, the whole step
under ``nnx.jit``. Phases: ``steady`` (a cached step) and ``first_call`` (trace + compile + run
of the fresh jitted step).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from benchmarks.workloads import _nn_step

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "PHASES", "DEFAULT_REPS", "QUICK_REPS",
           "setup", "size_label"]

NAME = "nn_cnn_train_step"
DESCRIPTION = ("nnx.jit train step (adam) of a 3-conv CNN on 28x28x1, batch 32: fluxion_nn + "
               "fluxion_optim vs flax.nnx + optax")
VARIANTS = ("jax", "fluxion")
SIZES = (32,)
PHASES = ("steady", "first_call")
DEFAULT_REPS = 10
QUICK_REPS = 3


def size_label(size: int) -> str:
    """``32 -> "b32"`` (the batch size)."""
    return f"b{size}"


def _build(nnx: Any, rngs: Any) -> Any:
    class CNN(nnx.Module):
        def __init__(self, rngs: Any) -> None:
            self.conv1 = nnx.Conv(1, 16, kernel_size=(3, 3), rngs=rngs)
            self.conv2 = nnx.Conv(16, 32, kernel_size=(3, 3), strides=(2, 2), rngs=rngs)
            self.conv3 = nnx.Conv(32, 32, kernel_size=(3, 3), rngs=rngs)
            self.head = nnx.Linear(32, 10, rngs=rngs)

        def __call__(self, x: Any) -> Any:
            x = nnx.relu(self.conv1(x))
            x = nnx.relu(self.conv2(x))
            x = nnx.avg_pool(x, window_shape=(2, 2), strides=(2, 2))
            x = nnx.relu(self.conv3(x))
            return self.head(x.mean(axis=(1, 2)))

    return CNN(rngs)


def setup(variant: str, size: int) -> Callable[[], Any]:
    """The cached train step of ``variant`` at batch ``size`` (checked: the loss decreases)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((size, 28, 28, 1)).astype(np.float32)
    y = rng.integers(0, 10, size).astype(np.int32)
    return _nn_step.make_step(variant, _build, (x, y), NAME)

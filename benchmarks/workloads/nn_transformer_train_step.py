"""A transformer-block train step written once against the flax.nnx/optax API: fluxion_nn +
fluxion_optim (variant ``fluxion``) vs flax.nnx + optax on JAX (variant ``jax``).

Model (float32): ``Embed(256, 128)`` plus a learned position embedding, one pre-norm block
(``LayerNorm``, causal ``MultiHeadAttention`` with 4 heads, residual, ``LayerNorm``,
``Linear(128, 512)`` gelu ``Linear(512, 128)``, residual), a final ``LayerNorm`` and a
``Linear(128, 256)`` head; next-token softmax cross-entropy with integer labels, adam(1e-3)
through ``nnx.Optimizer``, the whole step under ``nnx.jit``. Size = ``[batch, sequence]``.
Phases: ``steady`` (a cached step) and ``first_call`` (trace + compile + run of the fresh step).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from benchmarks.workloads import _nn_step

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "PHASES", "DEFAULT_REPS", "QUICK_REPS",
           "setup", "size_label"]

NAME = "nn_transformer_train_step"
DESCRIPTION = ("nnx.jit train step (adam) of a 1-block causal transformer, d=128, 4 heads: "
               "fluxion_nn + fluxion_optim vs flax.nnx + optax")
VARIANTS = ("jax", "fluxion")
SIZES = ([8, 64],)
PHASES = ("steady", "first_call")
DEFAULT_REPS = 10
QUICK_REPS = 3
VOCAB, DIM, HEADS, HIDDEN = 256, 128, 4, 512


def size_label(size: list[int]) -> str:
    """``[8, 64] -> "b8xs64"``."""
    return f"b{size[0]}xs{size[1]}"


def _build_for(seq: int) -> Callable[[Any, Any], Any]:
    def build(nnx: Any, rngs: Any) -> Any:
        class Block(nnx.Module):
            def __init__(self, rngs: Any) -> None:
                self.embed = nnx.Embed(VOCAB, DIM, rngs=rngs)
                self.pos = nnx.Embed(seq, DIM, rngs=rngs)
                self.ln1 = nnx.LayerNorm(DIM, rngs=rngs)
                self.attn = nnx.MultiHeadAttention(num_heads=HEADS, in_features=DIM,
                                                   decode=False, rngs=rngs)
                self.ln2 = nnx.LayerNorm(DIM, rngs=rngs)
                self.up = nnx.Linear(DIM, HIDDEN, rngs=rngs)
                self.down = nnx.Linear(HIDDEN, DIM, rngs=rngs)
                self.ln_f = nnx.LayerNorm(DIM, rngs=rngs)
                self.head = nnx.Linear(DIM, VOCAB, rngs=rngs)

            def __call__(self, tokens: Any) -> Any:
                n = tokens.shape[-1]
                h = self.embed(tokens) + self.pos.embedding[...][:n]
                mask = nnx.make_causal_mask(tokens)
                h = h + self.attn(self.ln1(h), mask=mask)
                h = h + self.down(nnx.gelu(self.up(self.ln2(h))))
                return self.head(self.ln_f(h))

        return Block(rngs)

    return build


def setup(variant: str, size: list[int]) -> Callable[[], Any]:
    """The cached train step of ``variant`` at ``[batch, seq]`` (checked: the loss decreases)."""
    batch, seq = size
    rng = np.random.default_rng(0)
    data = rng.integers(0, VOCAB, (batch, seq + 1)).astype(np.int32)
    return _nn_step.make_step(variant, _build_for(seq), (data[:, :-1], data[:, 1:]), NAME)

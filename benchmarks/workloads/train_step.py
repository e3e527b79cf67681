"""One SGD training step of an MLP and of a small CNN: ``jit(step)(params, x, y)``, float32.

``mlp``  784-256-256-10, relu, softmax cross-entropy, batch 128.
``cnn``  28x28x1 images, batch 32: conv 3x3 (16, stride 1, SAME) relu, conv 3x3 (32, stride 2,
         SAME) relu, global average pool, dense 32-10, softmax cross-entropy.

The step returns the updated parameters and the loss (``p - 0.1 * grad``). ``total`` is a cached
call, ``first_call`` trace + compile + run of the fresh ``jit`` in a fresh process. torch: the
same loss over tensors, the step through ``torch.func.grad_and_value``, eager (``torch``) and
under ``torch.compile(dynamic=False)`` (``torch-compile``; its first call is dynamo + inductor).

Checked before timing, against NumPy: the loss equals a NumPy forward pass (the convolutions as
explicit sums over the 3x3 taps), and the gradient is right along its own direction: the
NumPy loss at ``params +- h * g`` changes by ``2 h |g|^2`` to first order.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from benchmarks import backends

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "PHASES", "DEFAULT_REPS", "QUICK_REPS",
           "setup", "make_params", "make_batch", "numpy_loss", "make_torch_loss"]

NAME = "train_step"
DESCRIPTION = "jitted SGD step (grad + update) of an MLP 784-256-256-10 (b128) and a small CNN (b32)"
VARIANTS = ("jax", "fluxion", "torch", "torch-compile")
SIZES = ("mlp", "cnn")
PHASES = ("total", "first_call")
DEFAULT_REPS = 10
QUICK_REPS = 3
LR = 0.1


def make_params(kind: str, rng: np.random.Generator) -> list[np.ndarray]:
    """Float32 parameters as a flat list (weights and biases alternating)."""
    def dense(n_in: int, n_out: int) -> list[np.ndarray]:
        return [(rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32),
                np.zeros((n_out,), np.float32)]

    if kind == "mlp":
        return dense(784, 256) + dense(256, 256) + dense(256, 10)
    if kind == "cnn":
        def conv(c_in: int, c_out: int) -> list[np.ndarray]:
            w = rng.standard_normal((3, 3, c_in, c_out)) / np.sqrt(9 * c_in)
            return [w.astype(np.float32), np.zeros((c_out,), np.float32)]
        return conv(1, 16) + conv(16, 32) + dense(32, 10)
    raise ValueError(f"train_step: size must be 'mlp' or 'cnn', got {kind!r}")


def make_batch(kind: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(x, one-hot y)`` float32."""
    n = 128 if kind == "mlp" else 32
    shape = (n, 784) if kind == "mlp" else (n, 28, 28, 1)
    x = rng.standard_normal(shape).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, n)]
    return x, y


def _xent(xnp: Any, logits: Any, y: Any) -> Any:
    shifted = logits - xnp.max(logits, axis=-1, keepdims=True)
    logp = shifted - xnp.log(xnp.sum(xnp.exp(shifted), axis=-1, keepdims=True))
    return -xnp.mean(xnp.sum(y * logp, axis=-1))


def make_loss(kind: str, xnp: Any, lax: Any) -> Callable[..., Any]:
    """The loss ``f(params, x, y)`` over ``xnp``/``lax`` (jax or fluxion)."""
    dn = ("NHWC", "HWIO", "NHWC")

    def loss(params: list[Any], x: Any, y: Any) -> Any:
        if kind == "mlp":
            h = xnp.maximum(x @ params[0] + params[1], 0.0)
            h = xnp.maximum(h @ params[2] + params[3], 0.0)
            return _xent(xnp, h @ params[4] + params[5], y)
        h = lax.conv_general_dilated(x, params[0], (1, 1), "SAME", dimension_numbers=dn)
        h = xnp.maximum(h + params[1], 0.0)
        h = lax.conv_general_dilated(h, params[2], (2, 2), "SAME", dimension_numbers=dn)
        h = xnp.maximum(h + params[3], 0.0)
        return _xent(xnp, xnp.mean(h, axis=(1, 2)) @ params[4] + params[5], y)

    return loss


def _np_conv_same(x: np.ndarray, w: np.ndarray, stride: int) -> np.ndarray:
    # XLA's SAME padding: total pad = max((ceil(n / s) - 1) * s + k - n, 0), low = total // 2
    n, k = x.shape[1], w.shape[0]
    out = -(-n // stride)
    total = max((out - 1) * stride + k - n, 0)
    lo = total // 2
    xp = np.pad(x, ((0, 0), (lo, total - lo), (lo, total - lo), (0, 0)))
    acc = np.zeros((x.shape[0], out, out, w.shape[3]), np.float64)
    for di in range(k):
        for dj in range(k):
            patch = xp[:, di:di + stride * out:stride, dj:dj + stride * out:stride, :]
            acc += patch.astype(np.float64) @ w[di, dj].astype(np.float64)
    return acc


def numpy_loss(kind: str, params: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> float:
    """The same loss in float64 NumPy (the reference)."""
    p = [np.asarray(v, np.float64) for v in params]
    if kind == "mlp":
        h = np.maximum(x @ p[0] + p[1], 0.0)
        h = np.maximum(h @ p[2] + p[3], 0.0)
        logits = h @ p[4] + p[5]
    else:
        h = np.maximum(_np_conv_same(x, p[0], 1) + p[1], 0.0)
        h = np.maximum(_np_conv_same(h, p[2], 2) + p[3], 0.0)
        logits = h.mean(axis=(1, 2)) @ p[4] + p[5]
    shifted = logits - logits.max(axis=-1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return float(-np.mean(np.sum(y * logp, axis=-1)))


def _check(kind: str, variant: str, params: list[np.ndarray], x: np.ndarray, y: np.ndarray,
           new_params: list[np.ndarray], loss: float) -> None:
    ref = numpy_loss(kind, params, x, y)
    if not abs(loss - ref) <= 1e-4 * max(1.0, abs(ref)):
        raise AssertionError(f"train_step/{variant}/{kind}: loss {loss!r} differs from numpy's "
                             f"{ref!r}")
    g = [(p - q.astype(np.float64)) / LR for p, q in zip(params, new_params)]
    gg = sum(float(np.sum(v * v)) for v in g)
    h = 1e-3 / np.sqrt(gg)
    up = numpy_loss(kind, [p + h * v for p, v in zip(params, g)], x, y)
    down = numpy_loss(kind, [p - h * v for p, v in zip(params, g)], x, y)
    directional = (up - down) / (2 * h)
    if not abs(directional - gg) <= 2e-2 * gg:
        raise AssertionError(f"train_step/{variant}/{kind}: gradient check failed: finite "
                             f"difference along g gives {directional:.6g}, |g|^2 = {gg:.6g}")


def make_torch_loss(kind: str, torch: Any) -> Callable[..., Any]:
    """The same loss over torch tensors (NHWC inputs and HWIO kernels, as for jax/fluxion,
    transposed to torch's NCHW/OIHW; XLA's SAME padding written out with ``F.pad``)."""
    F = torch.nn.functional

    def xent(logits: Any, y: Any) -> Any:
        shifted = logits - torch.amax(logits, dim=-1, keepdim=True)
        logp = shifted - torch.log(torch.sum(torch.exp(shifted), dim=-1, keepdim=True))
        return -torch.mean(torch.sum(y * logp, dim=-1))

    def conv_same(h: Any, w: Any, stride: int) -> Any:
        n, k = h.shape[-1], w.shape[0]
        out = -(-n // stride)
        total = max((out - 1) * stride + k - n, 0)
        lo = total // 2
        h = F.pad(h, (lo, total - lo, lo, total - lo))
        return F.conv2d(h, w.permute(3, 2, 0, 1), stride=stride)

    def loss(params: list[Any], x: Any, y: Any) -> Any:
        if kind == "mlp":
            h = torch.relu(x @ params[0] + params[1])
            h = torch.relu(h @ params[2] + params[3])
            return xent(h @ params[4] + params[5], y)
        h = x.permute(0, 3, 1, 2)
        h = torch.relu(conv_same(h, params[0], 1) + params[1][:, None, None])
        h = torch.relu(conv_same(h, params[2], 2) + params[3][:, None, None])
        return xent(torch.mean(h, dim=(2, 3)) @ params[4] + params[5], y)

    return loss


def _setup_torch(variant: str, size: str) -> Callable[[], Any]:
    torch = backends.load("torch").module
    rng = np.random.default_rng(0)
    host_params = make_params(size, rng)
    host_x, host_y = make_batch(size, rng)
    params = [torch.from_numpy(p.copy()) for p in host_params]
    x, y = torch.from_numpy(host_x), torch.from_numpy(host_y)
    grad_and_value = torch.func.grad_and_value(make_torch_loss(size, torch))

    def step(params: list[Any], x: Any, y: Any) -> tuple[list[Any], Any]:
        grads, loss = grad_and_value(params, x, y)
        return [p - LR * g for p, g in zip(params, grads)], loss

    if variant == "torch-compile":
        step = torch.compile(step, dynamic=False)
    elif variant != "torch":
        raise ValueError(f"train_step: unknown variant {variant!r}")
    t0 = time.perf_counter()
    new_params, loss = step(params, x, y)
    first = time.perf_counter() - t0
    _check(size, variant, host_params, host_x.astype(np.float64), host_y,
           [p.detach().numpy() for p in new_params], float(loss))

    def run() -> Any:
        return step(params, x, y)

    run.first_call_s = first  # type: ignore[attr-defined]
    return run


def setup(variant: str, size: str) -> Callable[[], Any]:
    """The cached step of ``variant`` for ``size`` (``"mlp"`` or ``"cnn"``)."""
    if backends.backend_of(variant) == "torch":
        return _setup_torch(variant, size)
    b = backends.load(variant)
    import importlib

    lax = importlib.import_module(variant + ".lax")
    rng = np.random.default_rng(0)
    host_params = make_params(size, rng)
    host_x, host_y = make_batch(size, rng)
    params = [b.module.device_put(p) for p in host_params]
    x, y = b.module.device_put(host_x), b.module.device_put(host_y)
    loss_fn = make_loss(size, b.np, lax)
    value_and_grad = b.module.value_and_grad

    def step(params: list[Any], x: Any, y: Any) -> tuple[list[Any], Any]:
        loss, grads = value_and_grad(loss_fn)(params, x, y)
        return [p - LR * g for p, g in zip(params, grads)], loss

    jitted = b.jit(step)
    ready = b.module.block_until_ready
    t0 = time.perf_counter()
    new_params, loss = ready(jitted(params, x, y))
    first = time.perf_counter() - t0
    _check(size, variant, host_params, host_x.astype(np.float64), host_y,
           [np.asarray(p) for p in new_params], float(loss))

    def run() -> Any:
        return ready(jitted(params, x, y))

    run.first_call_s = first  # type: ignore[attr-defined]
    return run

"""Train an MLP and a small CNN on scikit-learn's digits with fluxion_nn + fluxion_optim.

Shows a tqdm progress bar (``--no-progress`` to turn it off), reports test accuracy, writes a PNG
of the loss curves, and saves, reloads and re-checks a checkpoint.

    python examples/train_digits.py --out /tmp/digits
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import fluxion.numpy as jnp
import fluxion_nn as nnx
import fluxion_optim as optax
from fluxion_nn import checkpoint


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.l1 = nnx.Linear(64, 128, rngs=rngs)
        self.l2 = nnx.Linear(128, 10, rngs=rngs)

    def __call__(self, x):
        return self.l2(nnx.relu(self.l1(x.reshape(x.shape[0], -1))))


class CNN(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(1, 16, kernel_size=(3, 3), rngs=rngs)
        self.conv2 = nnx.Conv(16, 32, kernel_size=(3, 3), rngs=rngs)
        self.out = nnx.Linear(32 * 2 * 2, 10, rngs=rngs)

    def __call__(self, x):
        x = nnx.max_pool(nnx.relu(self.conv1(x)), (2, 2), strides=(2, 2))
        x = nnx.max_pool(nnx.relu(self.conv2(x)), (2, 2), strides=(2, 2))
        return self.out(x.reshape(x.shape[0], -1))


def loss_fn(model, x, y):
    logits = model(x)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), logits


@nnx.jit
def train_step(model, optimizer, metrics, x, y):
    (loss, logits), grads = nnx.value_and_grad(loss_fn, has_aux=True)(model, x, y)
    optimizer.update(model, grads)
    metrics.update(loss=loss, logits=logits, labels=y)


@nnx.jit
def predict(model, x):
    return model(x).argmax(-1)


def load_data(seed: int = 0):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[..., None]
    return train_test_split(x, d.target.astype(np.int32), test_size=0.2, random_state=seed,
                            stratify=d.target)


def train(name, model, data, *, epochs, batch_size, lr, progress):
    xtr, xte, ytr, yte = data
    optimizer = nnx.Optimizer(model, optax.adam(lr), wrt=nnx.Param)
    metrics = nnx.MultiMetric(loss=nnx.metrics.Average("loss"), accuracy=nnx.metrics.Accuracy())
    rng = np.random.default_rng(0)
    steps = len(xtr) // batch_size
    losses = []
    bar = None
    if progress:
        try:
            from tqdm import tqdm

            bar = tqdm(total=epochs * steps, desc=name, leave=True)
        except ImportError:
            bar = None
    for epoch in range(epochs):
        perm = rng.permutation(len(xtr))
        metrics.reset()
        for i in range(steps):
            idx = perm[i * batch_size:(i + 1) * batch_size]
            train_step(model, optimizer, metrics, jnp.asarray(xtr[idx]), jnp.asarray(ytr[idx]))
            if bar is not None:
                bar.update(1)
        m = {k: float(v) for k, v in metrics.compute().items()}
        losses.append(m["loss"])
        if bar is not None:
            bar.set_postfix(loss=f"{m['loss']:.3f}", acc=f"{m['accuracy']:.3f}")
        elif progress:
            print(f"{name} epoch {epoch + 1}/{epochs} loss {m['loss']:.3f} acc {m['accuracy']:.3f}")
    if bar is not None:
        bar.close()
    acc = float((np.asarray(predict(model, jnp.asarray(xte))) == yte).mean())
    return losses, acc


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", default="digits_out")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    t0 = time.perf_counter()
    data = load_data()
    results = {}
    for name, cls, lr in [("mlp", MLP, 3e-3), ("cnn", CNN, 3e-3)]:
        model = cls(nnx.Rngs(0))
        losses, acc = train(name, model, data, epochs=args.epochs, batch_size=args.batch_size,
                            lr=lr, progress=not args.no_progress)
        path = os.path.join(args.out, f"{name}.safetensors")
        checkpoint.save(path, model)
        fresh = cls(nnx.Rngs(1))
        checkpoint.restore(path, target=fresh)
        acc2 = float((np.asarray(predict(fresh, jnp.asarray(data[1]))) == data[3]).mean())
        assert acc2 == acc, (acc, acc2)
        results[name] = (losses, acc)
        print(f"{name}: test accuracy {acc:.4f} (reloaded checkpoint: {acc2:.4f})")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    for name, (losses, acc) in results.items():
        ax.plot(range(1, len(losses) + 1), losses, label=f"{name} (test acc {acc:.3f})")
    ax.set_xlabel("epoch")
    ax.set_ylabel("train loss")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    png = os.path.join(args.out, "loss_curves.png")
    tmp = png + ".tmp.png"
    fig.savefig(tmp)
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, png)
    print(f"wrote {png}; total {time.perf_counter() - t0:.1f}s")
    return {k: v[1] for k, v in results.items()}


if __name__ == "__main__":
    main()

"""Train an MLP and a small CNN on scikit-learn's digits with fluxion_nn + fluxion_optim.

Shows a tqdm progress bar (``--no-progress`` to turn it off), reports test accuracy, writes a PNG
of the loss curves, and saves, reloads and re-checks a checkpoint, all into ``--out`` (default
``build/examples/train_digits/``).

    .venv/bin/python examples/train_digits.py --out /tmp/digits
    .venv/bin/python examples/train_digits.py --quick      # 2 epochs
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

import fluxion.numpy as jnp
import fluxion_nn as nnx
import fluxion_optim as optax
from fluxion_nn import checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cli import out_dir, parser, save_figure  # noqa: E402


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
    p = parser(__doc__, "train_digits", quick_help="2 epochs instead of 20")
    p.add_argument("--epochs", type=int, default=None, help="training epochs (default 20)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    out = out_dir(args, "train_digits")  # created before any work
    epochs = args.epochs or (2 if args.quick else 20)
    t0 = time.perf_counter()
    data = load_data()
    results = {}
    for name, cls, lr in [("mlp", MLP, 3e-3), ("cnn", CNN, 3e-3)]:
        model = cls(nnx.Rngs(0))
        losses, acc = train(name, model, data, epochs=epochs, batch_size=args.batch_size,
                            lr=lr, progress=not args.no_progress)
        path = os.path.join(out, f"{name}.safetensors")
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
    import matplotlib.ticker

    fig, ax = plt.subplots(figsize=(5, 3.5))
    for name, (losses, acc) in results.items():
        ax.plot(range(1, len(losses) + 1), losses, label=f"{name} (test acc {acc:.3f})")
    ax.set_xlabel("epoch")
    ax.set_ylabel("train loss")
    ax.set_yscale("log")
    ax.set_title("scikit-learn digits: training loss")
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.legend()
    fig.tight_layout()
    png = os.path.join(out, "loss_curves.png")
    save_figure(fig, png)
    plt.close(fig)
    print(f"wrote {png}; total {time.perf_counter() - t0:.1f}s")
    return {k: v[1] for k, v in results.items()}


if __name__ == "__main__":
    main()

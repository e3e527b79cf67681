"""Data-parallel training over several processes: an MLP on scikit-learn's digits with
fluxion_nn + fluxion_optim, one model trained by every process of a ``fluxion.distributed`` run.

Each process feeds its share of every batch; the batch is one global array split over the
processes' devices, the parameters are replicated, and the compiled step sums the gradients
across processes (XLA's collectives, gloo over TCP on CPU). The losses are those of the
one-process run, step for step. Process 0 saves the checkpoint; every process restores it.

    .venv/bin/python examples/train_digits_multiprocess.py --processes 2   # 2 processes, this host
    .venv/bin/python examples/train_digits_multiprocess.py                 # the 1-process reference
    .venv/bin/python examples/train_digits_multiprocess.py --quick         # 20 steps

Files (checkpoint, one ``result_<process>.json`` each, the loss curve ``losses.png``) go to
``--out`` (default ``build/examples/train_digits_multiprocess/`` in the repository).

``--processes 2`` alone starts the second process on this machine (loopback). On a cluster start
one copy per host with ``--processes N --process-id I --coordinator HOST:PORT``, or with
``--auto-cluster`` under SLURM, ``mpirun`` or a Kubernetes indexed job (docs/guide/launch.md).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np

import fluxion
import fluxion.numpy as jnp
import fluxion_nn as nnx
import fluxion_optim as optax
from fluxion.experimental import multihost_utils
from fluxion.sharding import Mesh, NamedSharding
from fluxion.sharding import PartitionSpec as P
from fluxion_nn import checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cli import out_dir, parser, save_figure  # noqa: E402


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.l1 = nnx.Linear(64, 128, rngs=rngs)
        self.l2 = nnx.Linear(128, 10, rngs=rngs)

    def __call__(self, x):
        return self.l2(nnx.relu(self.l1(x)))


def loss_fn(model, x, y):
    return optax.softmax_cross_entropy_with_integer_labels(model(x), y).mean()


@nnx.jit
def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss


@nnx.jit
def predict(model, x):
    return model(x).argmax(-1)


def load_data():
    from sklearn.datasets import load_digits
    d = load_digits()
    return (d.images.reshape(-1, 64) / 16.0).astype(np.float32), d.target.astype(np.int32)


def replicate(mesh, module):
    """Every array of ``module`` placed on all devices of ``mesh`` (the same value in every
    process: each gives its own copy)."""
    rep = NamedSharding(mesh, P())
    nnx.update(module, fluxion.tree.map(
        lambda v: fluxion.make_array_from_process_local_data(rep, np.asarray(v)),
        nnx.state(module)))


def shard_batch(mesh, x):
    """The global batch ``x`` (the same in every process) as one array split over the
    processes: each process gives only its own rows."""
    n, i = fluxion.process_count(), fluxion.process_index()
    rows = len(x) // n
    return fluxion.make_array_from_process_local_data(
        NamedSharding(mesh, P("data")), x[i * rows:(i + 1) * rows], x.shape)


def train(x, y, *, steps, batch_size, lr, mesh=None):
    """Train an MLP for ``steps`` steps; returns (model, the loss of every step)."""
    model = MLP(nnx.Rngs(0))
    if mesh is not None:
        replicate(mesh, model)
    optimizer = nnx.Optimizer(model, optax.adam(lr), wrt=nnx.Param)
    put = jnp.asarray if mesh is None else (lambda v: shard_batch(mesh, v))
    rng = np.random.default_rng(0)  # the same batches in every process
    losses = []
    for _ in range(steps):
        idx = rng.choice(len(x), batch_size, replace=False)
        losses.append(float(train_step(model, optimizer, put(x[idx]), put(y[idx]))))
    return model, losses


def _free_address():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def plot_losses(losses, processes, png):
    """The training loss per step, as a PNG (written atomically)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(range(1, len(losses) + 1), losses)
    ax.set_xlabel("step")
    ax.set_ylabel("train loss")
    ax.set_title(f"digits MLP, data-parallel over {processes} process(es)")
    fig.tight_layout()
    save_figure(fig, png)
    plt.close(fig)


def main(argv=None):
    p = parser(__doc__, "train_digits_multiprocess", quick_help="20 steps instead of 200")
    p.add_argument("--processes", type=int, default=1)
    p.add_argument("--process-id", type=int, default=None)
    p.add_argument("--coordinator", default=None, help="host:port of process 0")
    p.add_argument("--auto-cluster", action="store_true",
                   help="fluxion.distributed.initialize() with no arguments (SLURM, mpirun, k8s)")
    p.add_argument("--steps", type=int, default=None, help="training steps (default 200)")
    p.add_argument("--batch-size", type=int, default=64)
    args = p.parse_args(argv)
    out = out_dir(args, "train_digits_multiprocess")  # created before any work
    steps = args.steps or (20 if args.quick else 200)
    argv = list(sys.argv[1:] if argv is None else argv)
    children = []
    if args.auto_cluster:
        fluxion.distributed.initialize()
    elif args.processes > 1:
        addr, pid = args.coordinator, args.process_id
        if pid is None:  # started alone: start the other processes on this machine
            addr, pid = _free_address(), 0
            env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
            children = [subprocess.Popen([sys.executable, os.path.abspath(__file__), *argv,
                                          "--process-id", str(i), "--coordinator", addr],
                                         env=env) for i in range(1, args.processes)]
        fluxion.distributed.initialize(addr, args.processes, pid,
                                       local_device_ids=[0] if addr.startswith("127.") else None)
    me, multi = fluxion.process_index(), fluxion.process_count() > 1
    mesh = Mesh(np.array(fluxion.devices()), ("data",)) if multi else None
    x, y = load_data()
    xtr, ytr, xte, yte = x[:1400], y[:1400], x[1400:], y[1400:]
    model, losses = train(xtr, ytr, steps=steps, batch_size=args.batch_size, lr=3e-3,
                          mesh=mesh)
    xte_all = jnp.asarray(xte) if mesh is None else fluxion.make_array_from_process_local_data(
        NamedSharding(mesh, P()), xte)
    acc = float((np.asarray(predict(model, xte_all)) == yte).mean())
    path = os.path.join(out, "mlp.safetensors")
    if me == 0:  # one writer
        checkpoint.save(path, model)
    if multi:  # the others read it once it is complete
        multihost_utils.sync_global_devices(f"saved {path}")
    fresh = MLP(nnx.Rngs(1))
    checkpoint.restore(path, target=fresh)
    acc_restored = float((np.asarray(predict(fresh, jnp.asarray(xte))) == yte).mean())
    result = {"process": me, "processes": fluxion.process_count(), "losses": losses,
              "accuracy": acc, "restored_accuracy": acc_restored}
    with open(os.path.join(out, f"result_{me}.json"), "w") as f:
        json.dump(result, f)
    if me == 0:
        plot_losses(losses, fluxion.process_count(), os.path.join(out, "losses.png"))
    print(f"process {me}/{fluxion.process_count()}: {steps} steps, final loss "
          f"{losses[-1]:.4f}, test accuracy {acc:.4f} (restored checkpoint: {acc_restored:.4f})")
    if multi:
        fluxion.distributed.shutdown()
    for i, c in enumerate(children, 1):
        if c.wait(timeout=900) != 0:
            raise SystemExit(f"process {i} failed")
    return result


if __name__ == "__main__":
    main()

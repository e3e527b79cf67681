"""Count and time the XLA compilations of a workload's eager setup and first call, per phase.

Both backends report every XLA compilation as the monitoring event
``/jax/core/compile/backend_compile_duration`` (``jax.monitoring``; Fluxion records it under the
same name, ``fluxion.core.monitoring.BACKEND_COMPILE_EVENT``), so one duration listener counts
them for either. The persistent compilation cache is turned off (a disk hit would hide a compile),
and each backend runs in a fresh subprocess, so every program is compiled cold.

Scenarios (their phases, in order):

``md_lj_neighbor``  the setup of ``benchmarks/workloads/md_lj_neighbor.py``: ``import``
                    (``jax_md`` / ``fluxion_md``), ``space`` (an
                    FCC crystal to the device, ``space.periodic`` and
                    ``energy.lennard_jones_neighbor_list``), ``allocate`` (``neighbor_fn.allocate``),
                    ``init`` (``simulate.nve`` and its ``init_fn``), ``first_call`` (the jitted
                    step's first call), ``steps`` (:data:`STEPS` more calls; a compile there
                    means the step is traced again).
``nn_cnn``          the setup of ``nn_cnn_train_step``: ``import`` (``flax.nnx`` + ``optax`` /
                    ``fluxion_nn`` + ``fluxion_optim``), ``model`` (the CNN's ``nnx`` init),
                    ``optimizer`` (``nnx.Optimizer`` with ``adam``), ``first_call`` (the
                    ``nnx.jit`` train step's first call), ``steps`` (:data:`STEPS` more).

Run (prints one line per backend and phase, and writes JSON with ``--json``)::

    python -m benchmarks.compile_count --scenario md_lj_neighbor --size 5
    python -m benchmarks.compile_count --scenario nn_cnn --backends fluxion --platform tpu

Example (one scenario, in this process; ``count`` is what each worker runs):
    >>> from benchmarks import compile_count
    >>> sorted(compile_count.SCENARIOS)
    ['md_lj_neighbor', 'nn_cnn']
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any, Callable, Iterator

import numpy as np

__all__ = ["SCENARIOS", "COMPILE_EVENT", "STEPS", "PhaseCounter", "count", "run_backend", "main"]

#: The monitoring event both backends record once per XLA compilation (its duration, seconds).
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
#: Calls of the compiled step after its first (phase ``steps``: any compile there is a retrace).
STEPS = 5
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class PhaseCounter:
    """Collects compile durations from a backend's monitoring module, split into phases.

    Example:
        >>> from fluxion.core import monitoring
        >>> pc = PhaseCounter(monitoring)
        >>> monitoring.record_event_duration_secs(COMPILE_EVENT, 0.25)
        >>> pc.end("a")["compiles"]
        1
        >>> pc.close()
    """

    def __init__(self, monitoring: Any) -> None:
        self._mon = monitoring
        self._durations: list[float] = []
        self._mark = 0
        self._t0 = time.perf_counter()
        self.phases: list[dict[str, Any]] = []
        monitoring.register_event_duration_secs_listener(self._listen)

    def _listen(self, event: str, duration: float, **_: Any) -> None:
        if event == COMPILE_EVENT:
            self._durations.append(float(duration))

    def end(self, name: str) -> dict[str, Any]:
        """Close the current phase as ``name``: its compiles, their seconds and its wall time."""
        now = time.perf_counter()
        new = self._durations[self._mark:]
        row = {"phase": name, "compiles": len(new), "compile_s": round(sum(new), 4),
               "wall_s": round(now - self._t0, 4)}
        self.phases.append(row)
        self._mark, self._t0 = len(self._durations), now
        return row

    def close(self) -> None:
        """Stop listening."""
        self._mon.unregister_event_duration_listener(self._listen)


def _libs(backend: str) -> tuple[Any, Any, Any]:
    """``(module, numpy namespace, monitoring)`` of ``backend``, its disk cache off."""
    if backend == "jax":
        import jax
        import jax.monitoring
        import jax.numpy as jnp
        jax.config.update("jax_enable_compilation_cache", False)
        return jax, jnp, jax.monitoring
    if backend == "fluxion":
        import fluxion
        import fluxion.numpy as fnp
        from fluxion.core import monitoring
        fluxion.config.update("jax_enable_compilation_cache", False)
        return fluxion, fnp, monitoring
    raise ValueError(f"compile_count: backend must be 'jax' or 'fluxion', got {backend!r}")


def _md_lj_neighbor(backend: str, size: int, mod: Any, jnp: Any) -> Iterator[str]:
    from benchmarks.workloads.md_lj_neighbor import fcc
    md = __import__("jax_md" if backend == "jax" else "fluxion_md")
    yield "import"
    R_np, box = fcc(size)
    R = jnp.asarray(R_np.astype(np.float32))
    displacement, shift = md.space.periodic(box)
    neighbor_fn, energy_fn = md.energy.lennard_jones_neighbor_list(displacement, box,
                                                                   dr_threshold=0.3)
    yield "space"
    nbrs = neighbor_fn.allocate(R)
    yield "allocate"
    init_fn, apply_fn = md.simulate.nve(energy_fn, shift, 0.005)
    state = init_fn(mod.random.PRNGKey(0), R, kT=1.5, neighbor=nbrs)
    yield "init"

    def one_step(st: Any, nb: Any) -> Any:
        st = apply_fn(st, neighbor=nb)
        return st, nb.update(st.position)
    step = mod.jit(one_step)
    state, nbrs = step(state, nbrs)
    mod.block_until_ready(state.position)
    yield "first_call"
    for _ in range(STEPS):
        state, nbrs = step(state, nbrs)
    mod.block_until_ready(state.position)
    yield "steps"


def _nn_cnn(backend: str, size: int, mod: Any, jnp: Any) -> Iterator[str]:
    from benchmarks.workloads import _nn_step
    from benchmarks.workloads.nn_cnn_train_step import _build
    nnx, optax, _, _ = _nn_step.libraries(backend)
    yield "import"
    model = _build(nnx, nnx.Rngs(0))
    yield "model"
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    yield "optimizer"
    rng = np.random.default_rng(0)
    x = mod.device_put(rng.standard_normal((size, 28, 28, 1)).astype(np.float32))
    y = mod.device_put(rng.integers(0, 10, size).astype(np.int32))

    @nnx.jit
    def train_step(model: Any, optimizer: Any, x: Any, y: Any) -> Any:
        def loss_fn(model: Any) -> Any:
            return optax.softmax_cross_entropy_with_integer_labels(model(x), y).mean()
        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss
    mod.block_until_ready(train_step(model, optimizer, x, y))
    yield "first_call"
    for _ in range(STEPS):
        loss = train_step(model, optimizer, x, y)
    mod.block_until_ready(loss)
    yield "steps"


#: scenario name -> (generator of phase names, default size)
SCENARIOS: dict[str, tuple[Callable[..., Iterator[str]], int]] = {
    "md_lj_neighbor": (_md_lj_neighbor, 5),
    "nn_cnn": (_nn_cnn, 32),
}


def count(scenario: str, backend: str, size: int | None = None) -> list[dict[str, Any]]:
    """Run ``scenario`` with ``backend`` in this process; one row per phase
    (``{"phase", "compiles", "compile_s", "wall_s"}``) plus a final ``"total"`` row."""
    if scenario not in SCENARIOS:
        raise ValueError(f"compile_count: unknown scenario {scenario!r}; "
                         f"known: {sorted(SCENARIOS)}")
    gen, default = SCENARIOS[scenario]
    mod, jnp, mon = _libs(backend)
    pc = PhaseCounter(mon)
    try:
        for name in gen(backend, default if size is None else size, mod, jnp):
            pc.end(name)
    finally:
        pc.close()
    total = {"phase": "total", "compiles": sum(r["compiles"] for r in pc.phases),
             "compile_s": round(sum(r["compile_s"] for r in pc.phases), 4),
             "wall_s": round(sum(r["wall_s"] for r in pc.phases), 4)}
    return pc.phases + [total]


def run_backend(scenario: str, backend: str, size: int | None = None,
                platform: str | None = None) -> list[dict[str, Any]]:
    """:func:`count` in a fresh subprocess (so nothing is compiled already), on ``platform``."""
    env = dict(os.environ)
    if platform:
        env["JAX_PLATFORMS"] = platform
    code = ("import json, sys; from benchmarks.compile_count import count; "
            f"print('ROWS ' + json.dumps(count({scenario!r}, {backend!r}, {size!r})))")
    out = subprocess.run([sys.executable, "-c", code], cwd=_REPO, env=env, capture_output=True,
                         text=True, check=False)
    for line in out.stdout.splitlines():
        if line.startswith("ROWS "):
            return json.loads(line[5:])
    raise RuntimeError(f"compile_count: {backend} {scenario} failed:\n{out.stderr[-2000:]}")


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring); returns the exit status."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.compile_count")
    p.add_argument("--scenario", choices=sorted(SCENARIOS), default="md_lj_neighbor")
    p.add_argument("--size", type=int, default=None)
    p.add_argument("--backends", default="fluxion,jax")
    p.add_argument("--platform", default=None, help="JAX_PLATFORMS for the workers (cpu, tpu)")
    p.add_argument("--json", default=None, help="also write the rows to this file")
    args = p.parse_args(argv)
    result = {}
    for backend in [b for b in args.backends.split(",") if b]:
        rows = run_backend(args.scenario, backend, args.size, args.platform)
        result[backend] = rows
        for r in rows:
            print(f"{args.scenario} {backend:8s} {r['phase']:11s} compiles={r['compiles']:4d} "
                  f"compile_s={r['compile_s']:.3f} wall_s={r['wall_s']:.3f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

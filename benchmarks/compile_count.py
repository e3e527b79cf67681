"""Count and time the XLA compilations of a workload's eager setup and first call, per phase.

Both backends report every XLA compilation as the monitoring event
``/jax/core/compile/backend_compile_duration`` (``jax.monitoring``; Fluxion records it under the
same name, ``fluxion.core.monitoring.BACKEND_COMPILE_EVENT``), so one duration listener counts
them for either. The persistent compilation cache is turned off (a disk hit would hide a compile),
and each backend runs in a fresh subprocess, so every program is compiled cold.

Scenarios (their phases, in order):

``md_lj_neighbor``  the setup of ``benchmarks/workloads/md_lj_neighbor.py``: ``import``
                    (``jax_md`` / ``fluxion_md``, and the device's start-up), ``space`` (an
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

``--programs`` also prints one line per XLA compile (:class:`ProgramLog`): its phase, the
program's name, its compile seconds, its module's size and its counts of the ops that XLA's
compilers are slow or fast over (scatter, gather, sort, while, reduce_window), and the largest
``reduce_window`` window. On a TPU machine (jax_md is pure Python: put its source on
``PYTHONPATH`` if it is not installed there)::

    python -m benchmarks.compile_count --scenario md_lj_neighbor --platform tpu --programs

jax_md imports flax, haiku, e3nn_jax, jraph, ... which a bare TPU machine lacks. The same
programs of both libraries can be compared there without it: ``--export-tpu DIR`` (on any
machine) writes, for each backend, the TPU StableHLO module of every program md_lj_neighbor's
setup compiles (its eager ops', ``allocate``'s prune, ``init_fn``'s; :class:`TpuCapture`), of
the neighbor list's rebuild alone and of the step (:func:`export_tpu_modules`), and Fluxion's
modules of the setup's patterns alone (``probe_*``, :func:`export_probe_modules`); and
``--compile-modules DIR`` (on the TPU machine; needs only jax) compiles each, prints its seconds
beside :func:`module_stats`' counts and sizes of what the TPU compiler is slow over, and sums
each backend's setup modules (:func:`compile_modules`; ``--reps 0`` only reads the modules)::

    python -m benchmarks.compile_count --export-tpu benchmarks/results/tpu_setup_N500
    python -m benchmarks.compile_count --compile-modules benchmarks/results/tpu_setup_N500 --reps 2

On the chip, in one call of the device tool (``carry`` the exported folder, which git ignores:
``["benchmarks/results/tpu_setup_N500"]``), the modules' compile seconds and then fluxion_md's
own setup there, phase by phase and program by program::

    export PYTHONPATH=$PYTHONPATH:$(ls -d $PWD/packages/*/src | paste -sd:); \
    python3 -m benchmarks.compile_count --compile-modules benchmarks/results/tpu_setup_N500 \
      --reps 2 --json $OUT/tpu_setup_modules.json 2>&1 | tee $OUT/modules.txt; \
    python3 -m benchmarks.compile_count --scenario md_lj_neighbor --backends fluxion \
      --platform tpu --programs --json $OUT/setup_phases.json 2>&1 | tee $OUT/phases.txt

The first module compiled in that process also pays the chip's warm-up (a few seconds): the
second rep is the figure to read.

Example (one scenario, in this process; ``count`` is what each worker runs):
    >>> from benchmarks import compile_count
    >>> sorted(compile_count.SCENARIOS)
    ['md_lj_neighbor', 'nn_cnn']
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from typing import Any, Callable, Iterator

import numpy as np

__all__ = ["SCENARIOS", "COMPILE_EVENT", "STEPS", "KEY_OPS", "SIZE_KEYS", "PhaseCounter",
           "ProgramLog", "module_stats",
           "count", "run_backend", "TpuCapture", "export_tpu_modules",
           "export_probe_modules", "compile_modules", "main"]

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


#: Ops counted per program by :func:`module_stats` (each is one line of ``--programs``).
KEY_OPS = ("scatter", "gather", "sort", "while", "reduce_window")
#: Sizes :func:`module_stats` reports beside the counts: what XLA's TPU compiler is slow over.
SIZE_KEYS = ("max_window", "max_scatter", "max_sort", "max_while_ops", "max_const_chars")
_OP = re.compile(r'=\s*"?stablehlo\.([a-z_]+)')
_WINDOW = re.compile(r"window_dimensions = array<i64: ([0-9, ]+)>")
_FUNC = re.compile(r"func\.func (?:private |public )?@([\w.$-]+)")
_SIG = re.compile(r": \(([^()]*)\) ->")
_TENSOR = re.compile(r"tensor<([^>]*)>")
_DENSE = re.compile(r"dense<([^>]*)>")


def _elements(tensor: str) -> int:
    dims = [d for d in tensor.split("x")[:-1]]
    return int(np.prod([int(d) for d in dims if d.isdigit()])) if dims else 1


def _operand_elements(text: str, op: str, which: int) -> int:
    """The most elements of operand ``which`` (``-1``: the last) over every ``op`` in ``text``.
    An op with regions prints its types on the line that closes them, at its own indent."""
    most, lines = 0, text.splitlines()
    pat = re.compile(r'stablehlo\.' + op + r'\b')
    for i, line in enumerate(lines):
        if not pat.search(line):
            continue
        indent, sig = len(line) - len(line.lstrip()), _SIG.search(line)
        if line.rstrip().endswith("({") or line.rstrip().endswith("{"):
            for nxt in lines[i + 1:]:
                if len(nxt) - len(nxt.lstrip()) == indent and nxt.lstrip().startswith("}"):
                    sig = _SIG.search(nxt)
                    if sig or not nxt.rstrip().endswith("{"):
                        break
        types = _TENSOR.findall(sig.group(1)) if sig else []
        if types:
            most = max(most, _elements(types[which]))
    return most


def _while_ops(text: str) -> int:
    """The most ops inside one ``stablehlo.while`` (condition and body, nested loops included),
    read by indentation: the loop's lines are those indented deeper than it, and its closing
    ``}`` lines."""
    lines, most = text.splitlines(), 0
    for i, line in enumerate(lines):
        if not re.search(r'stablehlo\.while\b', line):
            continue
        indent, n = len(line) - len(line.lstrip()), 0
        for nxt in lines[i + 1:]:
            depth = len(nxt) - len(nxt.lstrip())
            if depth <= indent and not nxt.lstrip().startswith("}"):
                break
            n += bool(_OP.search(nxt))
        most = max(most, n)
    return most


def module_stats(text: str) -> dict[str, Any]:
    """Size and op counts of a StableHLO module's text: ``chars``, ``ops`` (StableHLO ops with
    a result), one count per :data:`KEY_OPS` name, and the sizes the TPU compiler is slow over
    (:data:`SIZE_KEYS`): ``max_window`` (the most elements of one ``reduce_window`` window: a
    cumulative sum's window spans its axis or its block), ``max_scatter`` (the most update
    elements of one scatter), ``max_sort`` (the most elements one sort orders),
    ``max_while_ops`` (the most ops in one while loop) and ``max_const_chars`` (the longest
    constant literal, a program's baked-in array).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> text = fluxion.jit(jnp.cumsum).lower(jnp.ones(64)).as_text()
        >>> st = module_stats(text)
        >>> st["reduce_window"], st["max_window"], st["scatter"], st["max_sort"]
        (1, 64, 0, 0)
        >>> module_stats(fluxion.jit(lambda x: x.at[jnp.arange(5)].add(1.0)).lower(
        ...     jnp.ones(9)).as_text())["max_scatter"]
        5
    """
    ops = _OP.findall(text)
    row: dict[str, Any] = {"chars": len(text), "ops": len(ops)}
    for k in KEY_OPS:
        row[k] = sum(1 for o in ops if o == k)
    windows = [int(np.prod([int(d) for d in w.split(",")])) for w in _WINDOW.findall(text)]
    row["max_window"] = max(windows, default=0)
    row["max_scatter"] = _operand_elements(text, "scatter", -1) if row["scatter"] else 0
    row["max_sort"] = _operand_elements(text, "sort", 0) if row["sort"] else 0
    row["max_while_ops"] = _while_ops(text) if row["while"] else 0
    row["max_const_chars"] = max((len(v) for v in _DENSE.findall(text)), default=0)
    return row


class ProgramLog:
    """One row per XLA compilation of ``backend`` (``"jax"`` or ``"fluxion"``) while open: the
    program's name, its compile seconds and :func:`module_stats` of its module. It wraps the one
    function each library compiles through (``jax._src.compiler.backend_compile_and_load``,
    ``fluxion.backend.compile_hook.backend_compile_and_load``); :meth:`close` restores it.

    A program read from the disk cache is not compiled, so it has no row (:func:`count` turns
    that cache off).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> cached = fluxion.config.jax_enable_compilation_cache
        >>> fluxion.config.update("jax_enable_compilation_cache", False)
        >>> log = ProgramLog("fluxion")
        >>> try:
        ...     _ = fluxion.jit(lambda x: jnp.cumsum(x) * 2)(jnp.ones(37))
        ... finally:
        ...     log.close()
        ...     fluxion.config.update("jax_enable_compilation_cache", cached)
        >>> [(r["name"], r["reduce_window"], r["max_window"]) for r in log.rows]
        [('jit__lambda_', 1, 37)]
    """

    def __init__(self, backend: str) -> None:
        if backend == "jax":
            from jax._src import compiler as holder
        elif backend == "fluxion":
            from fluxion.backend import compile_hook as holder
        else:
            raise ValueError(f"compile_count: backend must be 'jax' or 'fluxion', got {backend!r}")
        self._holder = holder
        self._inner = holder.backend_compile_and_load
        self.rows: list[dict[str, Any]] = []
        holder.backend_compile_and_load = self._compile

    def _compile(self, client: Any, module: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        exe = self._inner(client, module, *args, **kwargs)
        seconds = time.perf_counter() - t0
        text = module if isinstance(module, str) else (
            module.decode() if isinstance(module, bytes) else str(module))
        # the module's name (jit_<fun>), else (an exported @main) its first function's
        head = re.search(r"module @([\w.$-]+)", text)
        names = [n for n in _FUNC.findall(text) if n != "main"]
        name = head.group(1) if head and head.group(1) != "main" else (names[0] if names else "?")
        self.rows.append({"name": name, "compile_s": round(seconds, 4), **module_stats(text)})
        return exe

    def close(self) -> None:
        """Restore the library's compile function."""
        if self._holder.backend_compile_and_load == self._compile:
            self._holder.backend_compile_and_load = self._inner


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


def _md_setup(backend: str, size: int, mod: Any, jnp: Any) -> Iterator[Any]:
    """md_lj_neighbor's setup, a phase at a time; its last value: ``(step, state, nbrs, R)``
    (``step`` the un-jitted NVE step + neighbor update)."""
    from benchmarks.workloads.md_lj_neighbor import fcc
    md = __import__("jax_md" if backend == "jax" else "fluxion_md")
    mod.devices()  # the device's start-up belongs to the import, as with jax_md's
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
    yield one_step, state, nbrs, R


def _md_lj_neighbor(backend: str, size: int, mod: Any, jnp: Any) -> Iterator[str]:
    for item in _md_setup(backend, size, mod, jnp):
        if isinstance(item, str):
            yield item
    one_step, state, nbrs, _ = item
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


def count(scenario: str, backend: str, size: int | None = None,
          programs: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Run ``scenario`` with ``backend`` in this process; one row per phase
    (``{"phase", "compiles", "compile_s", "wall_s"}``) plus a final ``"total"`` row. Given a
    list as ``programs``, appends a :class:`ProgramLog` row per compile to it, with its phase."""
    if scenario not in SCENARIOS:
        raise ValueError(f"compile_count: unknown scenario {scenario!r}; "
                         f"known: {sorted(SCENARIOS)}")
    gen, default = SCENARIOS[scenario]
    mod, jnp, mon = _libs(backend)
    log = ProgramLog(backend) if programs is not None else None
    pc = PhaseCounter(mon)
    try:
        for name in gen(backend, default if size is None else size, mod, jnp):
            pc.end(name)
            if log is not None:
                programs.extend({"phase": name, **r} for r in log.rows[len(programs):])
    finally:
        pc.close()
        if log is not None:
            log.close()
    total = {"phase": "total", "compiles": sum(r["compiles"] for r in pc.phases),
             "compile_s": round(sum(r["compile_s"] for r in pc.phases), 4),
             "wall_s": round(sum(r["wall_s"] for r in pc.phases), 4)}
    return pc.phases + [total]


def run_backend(scenario: str, backend: str, size: int | None = None,
                platform: str | None = None,
                programs: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """:func:`count` in a fresh subprocess (so nothing is compiled already), on ``platform``;
    ``programs`` (a list) receives its per-compile rows."""
    env = dict(os.environ)
    if platform:
        env["JAX_PLATFORMS"] = platform
    code = ("import json, sys; from benchmarks.compile_count import count; progs = []; "
            f"rows = count({scenario!r}, {backend!r}, {size!r}, "
            f"progs if {programs is not None!r} else None); "
            "print('PROGRAMS ' + json.dumps(progs)); print('ROWS ' + json.dumps(rows))")
    out = subprocess.run([sys.executable, "-c", code], cwd=_REPO, env=env, capture_output=True,
                         text=True, check=False)
    for line in out.stdout.splitlines():
        if line.startswith("PROGRAMS ") and programs is not None:
            programs.extend(json.loads(line[9:]))
        if line.startswith("ROWS "):
            return json.loads(line[5:])
    raise RuntimeError(f"compile_count: {backend} {scenario} failed:\n{out.stderr[-2000:]}")


class TpuCapture:
    """While open, every program ``backend`` (``"jax"`` or ``"fluxion"``) lowers for its own
    device is lowered once more for the TPU, and kept in :attr:`modules` as
    ``{"name", "text"}`` (a text seen before is not kept again). It wraps the function each
    library lowers a jitted program or an eager op through (``pxla.lower_sharding_computation``
    with ``lowering_platforms=("tpu",)``, as ``jax.export`` does; Fluxion's ``lower_program``
    in ``backend.dispatch`` and ``backend.jit_stages`` with ``platform="tpu"``); :meth:`close`
    restores them. A program compiled here is lowered here, so with the disk cache off there is
    one module per XLA compile (:class:`ProgramLog`'s rows).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> cap = TpuCapture("fluxion")
        >>> try:
        ...     _ = fluxion.jit(lambda x: jnp.cumsum(x) + 1.0)(jnp.ones(3000))
        ... finally:
        ...     cap.close()
        >>> [module_stats(m["text"])["max_window"] for m in cap.modules]  # TPU: blocks of 1024
        [1024]
    """

    def __init__(self, backend: str) -> None:
        self.modules: list[dict[str, str]] = []
        self._seen: set[str] = set()
        if backend == "jax":
            from jax._src.interpreters import pxla
            self._saved = [(pxla, "lower_sharding_computation", pxla.lower_sharding_computation)]
            wrap = self._jax
        elif backend == "fluxion":
            from fluxion.backend import dispatch, jit_stages
            self._saved = [(m, "lower_program", m.lower_program) for m in (dispatch, jit_stages)]
            wrap = self._fluxion
        else:
            raise ValueError(f"compile_count: backend must be 'jax' or 'fluxion', got {backend!r}")
        for holder, attr, inner in self._saved:
            setattr(holder, attr, wrap(inner))

    def _keep(self, name: str, text: str) -> None:
        if text not in self._seen:
            self._seen.add(text)
            self.modules.append({"name": name, "text": text})

    def _jax(self, inner: Callable[..., Any]) -> Callable[..., Any]:
        def lower(jaxpr: Any, api: str, name: str, *args: Any,
                  lowering_platforms: Any = None, **kwargs: Any) -> Any:
            out = inner(jaxpr, api, name, *args, lowering_platforms=lowering_platforms, **kwargs)
            if lowering_platforms is None:  # a program for this device, not an export
                tpu = inner(jaxpr, api, name, *args, lowering_platforms=("tpu",), **kwargs)
                self._keep(name, str(tpu.stablehlo()))
            return out
        return lower

    def _fluxion(self, inner: Callable[..., Any]) -> Callable[..., Any]:
        def lower(program: Any, name: str = "main", **kwargs: Any) -> Any:
            out = inner(program, name, **kwargs)
            self._keep(name, str(inner(program, name, **{**kwargs, "platform": "tpu"})))
            return out
        return lower

    def close(self) -> None:
        """Restore the library's lowering functions."""
        for holder, attr, inner in self._saved:
            setattr(holder, attr, inner)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)[:48]


def export_tpu_modules(backend: str, out_dir: str, size: int | None = None) -> list[str]:
    """Write the TPU StableHLO modules of md_lj_neighbor under ``backend`` to ``out_dir``:

    * ``<backend>_setup_<NN>_<phase>_<program>.mlir``: every program its eager setup (run here,
      :class:`TpuCapture` open) compiles, in order, phase ``space``, ``allocate`` or ``init``
      (the md library's import is left out, as the workload's setup time leaves it out): each
      eager op's program, ``allocate``'s jitted prune, ``init_fn``'s program (the energy and
      forces inside it);
    * ``<backend>_rebuild.mlir``: ``nbrs.update`` alone, whose rebuild branch is what
      ``allocate`` compiles at a fixed capacity;
    * ``<backend>_step.mlir``: the jitted NVE step + neighbor update (``first_call``);
    * for ``"fluxion"``, the ``probe_*.mlir`` of :func:`export_probe_modules` at the setup's
      atoms and neighbor-list capacity.

    Returns their paths (setup ones first).

    Example:
        >>> import tempfile
        >>> paths = export_tpu_modules("fluxion", tempfile.mkdtemp(), size=2)
        >>> [os.path.basename(p) for p in paths if "_setup_" not in p][:2]
        ['fluxion_rebuild.mlir', 'fluxion_step.mlir']
        >>> any(p.endswith("_allocate_jit_prune.mlir") for p in paths)
        True
    """
    mod, jnp, _ = _libs(backend)
    if backend == "jax":
        from jax import export as exporter
    else:
        from fluxion import export as exporter
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    cap, mark = TpuCapture(backend), 0
    try:
        for item in _md_setup(backend, _md_size(size), mod, jnp):
            if not isinstance(item, str):
                break
            for m in cap.modules[mark:] if item != "import" else ():
                path = os.path.join(out_dir, f"{backend}_setup_{len(paths):02d}_{item}_"
                                             f"{_safe(m['name'])}.mlir")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(m["text"])
                paths.append(path)
            mark = len(cap.modules)
    finally:
        cap.close()
    one_step, state, nbrs, R = item

    def rebuild(R: Any, nb: Any) -> Any:
        return nb.update(R + 1.0)
    for name, fun, args in (("rebuild", rebuild, (R, nbrs)), ("step", one_step, (state, nbrs))):
        text = exporter.export(mod.jit(fun), platforms=["tpu"])(*args).mlir_module()
        path = os.path.join(out_dir, f"{backend}_{name}.mlir")
        with open(path, "w", encoding="utf-8") as f:
            f.write(str(text))
        paths.append(path)
    if backend == "fluxion":  # the setup's patterns alone, at its sizes
        paths += export_probe_modules(out_dir, R.shape[0], nbrs.idx.shape[-1])
    return paths


def export_probe_modules(out_dir: str, n: int = 500, capacity: int = 24375) -> list[str]:
    """Write Fluxion's TPU modules of the patterns md_lj_neighbor's setup programs hold, each
    alone, at the setup's sizes (``n`` atoms, all ``n * n`` pairs candidates, a neighbor list of
    ``capacity`` pairs: 24,375 at N = 500), so a chip's compile seconds say which one costs:
    ``probe_cumsum_rows`` (the prune's running count along each of ``n`` rows),
    ``probe_cumsum_flat`` (one cumsum of ``n * n`` as jax_md calls it, which Fluxion's TPU
    lowering scans in blocks of 1024), ``probe_compact_scatter``
    (the prune's ``.at[pos].set`` of ``n * n`` candidates into ``capacity`` slots),
    ``probe_force_scatter_add`` (``capacity`` pair forces summed onto ``n`` atoms, as the
    energy's gradient does) and ``probe_pair_gather`` (the ``capacity`` pairs' positions).

    Example:
        >>> import tempfile
        >>> [os.path.basename(p) for p in export_probe_modules(tempfile.mkdtemp(), 8, 20)][:2]
        ['probe_cumsum_rows.mlir', 'probe_cumsum_flat.mlir']
    """
    import fluxion
    import fluxion.numpy as fnp
    from fluxion import export as exporter
    i32, f32 = np.int32, np.float32
    mask = fluxion.ShapeDtypeStruct((n, n), i32)
    flat = fluxion.ShapeDtypeStruct((n * n,), i32)
    pairs = fluxion.ShapeDtypeStruct((capacity,), i32)
    forces = fluxion.ShapeDtypeStruct((capacity, 3), f32)
    positions = fluxion.ShapeDtypeStruct((n, 3), f32)

    def compact(pos: Any, idx: Any) -> Any:
        return fnp.full((capacity,), n, i32).at[pos].set(idx, mode="drop")
    probes = (
        ("cumsum_rows", lambda m: fnp.cumsum(m, axis=1, dtype=i32), (mask,)),
        ("cumsum_flat", lambda m: fnp.cumsum(m, dtype=i32), (flat,)),
        ("compact_scatter", compact, (flat, flat)),
        ("force_scatter_add", lambda i, f: fnp.zeros((n, 3), f32).at[i].add(f), (pairs, forces)),
        ("pair_gather", lambda r, i: r[i], (positions, pairs)),
    )
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for name, fun, args in probes:
        text = exporter.export(fluxion.jit(fun), platforms=["tpu"])(*args).mlir_module()
        path = os.path.join(out_dir, f"probe_{name}.mlir")
        with open(path, "w", encoding="utf-8") as f:
            f.write(str(text))
        paths.append(path)
    return paths


def _md_size(size: int | None) -> int:
    return SCENARIOS["md_lj_neighbor"][1] if size is None else size


def compile_modules(paths: list[str], reps: int = 1) -> list[dict[str, Any]]:
    """Compile each StableHLO module file in ``paths`` ``reps`` times for jax's default device
    (a TPU's modules need the TPU); one row each: ``{"module", "compile_s": [...]}`` and its
    :func:`module_stats`. The first compile in a process also pays a few seconds of warm-up.

    Example:
        >>> import tempfile, fluxion, fluxion.numpy as jnp
        >>> path = os.path.join(tempfile.mkdtemp(), "double.mlir")
        >>> with open(path, "w") as f:
        ...     _ = f.write(fluxion.jit(lambda x: x * 2).lower(jnp.ones(3)).as_text())
        >>> [(r["module"], len(r["compile_s"])) for r in compile_modules([path])]
        [('double.mlir', 1)]
    """
    from jax._src.lib import _jax
    from jax._src.lib import xla_client as xc
    from jax.extend.backend import get_backend
    client = get_backend()
    devices = _jax.DeviceList((client.devices()[0],))
    rows = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        seconds = []
        for _ in range(reps):
            t0 = time.perf_counter()
            client.compile_and_load(text, devices, xc.CompileOptions())
            seconds.append(round(time.perf_counter() - t0, 3))
        rows.append({"module": os.path.basename(path), "compile_s": seconds, **module_stats(text)})
    return rows


def _patterns(r: dict[str, Any]) -> str:
    """One :func:`module_stats` row as ``chars=.. ops=.. <op>=<count>.. <size>=<value>..``
    (zeros left out)."""
    rest = " ".join(f"{k}={r[k]}" for k in KEY_OPS + SIZE_KEYS if r.get(k))
    return f"chars={r['chars']} ops={r['ops']} {rest}"


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring); returns the exit status."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.compile_count")
    p.add_argument("--scenario", choices=sorted(SCENARIOS), default="md_lj_neighbor")
    p.add_argument("--size", type=int, default=None)
    p.add_argument("--backends", default="fluxion,jax")
    p.add_argument("--platform", default=None, help="JAX_PLATFORMS for the workers (cpu, tpu)")
    p.add_argument("--json", default=None, help="also write the rows to this file")
    p.add_argument("--programs", action="store_true",
                   help="also print one line per XLA compile (name, seconds, module size, ops)")
    p.add_argument("--export-tpu", default=None, metavar="DIR",
                   help="write md_lj_neighbor's TPU modules for each backend to DIR, and exit")
    p.add_argument("--compile-modules", default=None, metavar="DIR",
                   help="compile every DIR/*.mlir on this machine's device and print the seconds")
    p.add_argument("--reps", type=int, default=1,
                   help="compiles per module (--compile-modules; 0: only its ops and sizes)")
    args = p.parse_args(argv)
    backends = [b for b in args.backends.split(",") if b]
    if args.export_tpu:
        for backend in backends:
            for path in export_tpu_modules(backend, args.export_tpu, args.size):
                print(f"wrote {path}", flush=True)
        return 0
    if args.compile_modules:
        import glob
        paths = sorted(glob.glob(os.path.join(args.compile_modules, "*.mlir")))
        rows = compile_modules(paths, args.reps)
        totals: dict[str, float] = {}
        for r in rows:
            print(f"{r['module'][:52]:52s} compile_s="
                  f"{' '.join(f'{t:.2f}' for t in r['compile_s']) or '-'} {_patterns(r)}",
                  flush=True)
            if "_setup_" in r["module"] and r["compile_s"]:
                # <backend>_setup_<NN>_<phase>_...: the backend's setup, and its phase
                backend, rest = r["module"].split("_setup_", 1)
                for group in (f"{backend} setup", f"{backend} setup {rest.split('_')[1]}"):
                    totals[group] = totals.get(group, 0.0) + min(r["compile_s"])
        for group, secs in sorted(totals.items()):
            print(f"{group}: {secs:.2f} s of compiles (each module's fastest)", flush=True)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(rows, f, indent=1)
        return 0
    result: dict[str, Any] = {}
    for backend in backends:
        progs: list[dict[str, Any]] | None = [] if args.programs else None
        rows = run_backend(args.scenario, backend, args.size, args.platform, progs)
        result[backend] = rows
        for r in rows:
            print(f"{args.scenario} {backend:8s} {r['phase']:11s} compiles={r['compiles']:4d} "
                  f"compile_s={r['compile_s']:.3f} wall_s={r['wall_s']:.3f}", flush=True)
        if progs is not None:
            result[backend + "_programs"] = progs
            for r in progs:
                print(f"  program {backend:8s} {r['phase']:11s} {r['compile_s']:8.3f}s "
                      f"{r['name'][:28]:28s} {_patterns(r)}", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

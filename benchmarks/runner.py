"""Benchmark orchestration: one subprocess per (backend, workload), then stats, ratios and output.

The runner never imports a backend itself. For each workload and each selected backend that the
workload implements, it starts ``python -m benchmarks.worker`` (see :mod:`benchmarks.worker`),
reads back the JSON lines it wrote, and turns anything missing (a crash, a timeout) into error
records, so one broken backend never stops the run. Ratios are computed only between timings of
the same run: machines are noisy, ratios much less so.

Outputs, in ``out_dir``: ``<run_id>.json`` and ``latest.json`` (written atomically), and when
matplotlib is importable ``<run_id>.png`` and ``latest.png`` (median / jax, log scale).

Example:
    >>> from benchmarks.runner import RunConfig, run
    >>> doc = run(RunConfig(workloads=["eager_dispatch"], backends=["numpy"], quick=True,
    ...                     out_dir=None))                                  # doctest: +SKIP
    >>> doc["results"][0]["median_s"] > 0                                   # doctest: +SKIP
    True
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Iterable, Sequence

from benchmarks import backends as _backends
from benchmarks import report
from benchmarks import workloads as _workloads
from benchmarks.report import format_seconds
from benchmarks.workloads import WorkloadSpec

__all__ = [
    "SCHEMA",
    "RunConfig",
    "resolve_workloads",
    "resolve_backends",
    "run",
    "run_worker",
    "merge_rounds",
    "compute_ratios",
    "compute_intervals",
    "round_order",
    "reference_variant",
    "write_json_atomic",
    "worker_prefix",
    "byte_compile_checkout",
    "THREAD_MODES",
    "save_results",
    "format_seconds",
    "format_table",
    "plot_ratios",
]

#: The ``schema`` field of every result file; bump it when the layout changes incompatibly.
SCHEMA = "fluxion-benchmarks/1"

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT_DIR = os.path.join(REPO_ROOT, "benchmarks", "results")


@dataclasses.dataclass
class RunConfig:
    """Everything a run depends on. ``None`` fields take the quick/full defaults.

    Attributes:
        workloads: workload names (see :func:`benchmarks.workloads.discover`) or paths of
            workload modules; empty means all shipped workloads.
        backends: backend names; ``None`` means numpy, fluxion, jax, plus numba and torch
            when importable.
        reps: repetitions per (variant, size) after warmup; default per workload, else 20
            (quick: 5).
        warmup: calls before timing (at least 1); default 2 (quick: 1).
        min_rep_time: a repetition of a fast call loops until it lasts this long (seconds);
            default 0.01 (quick: 0.002).
        quick: use each workload's ``QUICK_SIZES`` and the quick defaults.
        out_dir: where results go; ``None`` writes nothing.
        sizes: per-workload size overrides, ``name -> list of sizes``.
        timeout: seconds allowed to one worker process; default 900 (quick: 180), 4x that for
            a torch worker with ``torch-compile`` variants.
        rounds: how many times the whole list of worker processes runs, interleaved; each
            case's repetitions from all rounds are pooled. Default 3 (quick: 1): with three or
            more, every ratio gets a paired t-interval over the rounds (else a bootstrap one).
        platform: value of ``JAX_PLATFORMS`` for the workers (``"cpu"`` by default so that jax
            and fluxion run on the same device); ``""`` leaves the environment alone.
        python: interpreter for the workers (default: this one).
        plot: write the PNGs when matplotlib is importable.
        verbose: print progress to stderr.
        threads: ``"all"`` (libraries use every core) or ``"single"`` (as pyhpc-benchmarks
            runs its CPU comparison: OMP/MKL/OpenBLAS/numba/torch threads = 1, XLA's CPU client
            without its Eigen thread pool and one intra-op thread, and each worker pinned to
            one CPU with ``taskset`` when it exists).
        compile_cache: a folder for the persistent compilation caches of fluxion
            (``FLUXION_COMPILATION_CACHE_DIR``, ``FLUXION_ENABLE_COMPILATION_CACHE=1``) and jax
            (``JAX_COMPILATION_CACHE_DIR``), shared by every worker of the run, so a second run
            reports warm-cache first calls; ``None`` (default) turns both off
            (``FLUXION_ENABLE_COMPILATION_CACHE=0``; fluxion's cache is otherwise on by default
            in ~/.cache/fluxion), so every ``first_call`` is cold.
    """

    workloads: Sequence[str] = ()
    backends: Sequence[str] | None = None
    reps: int | None = None
    warmup: int | None = None
    min_rep_time: float | None = None
    quick: bool = False
    out_dir: str | None = DEFAULT_OUT_DIR
    sizes: dict[str, list[Any]] = dataclasses.field(default_factory=dict)
    timeout: float | None = None
    rounds: int | None = None
    platform: str = "cpu"
    python: str = sys.executable
    plot: bool = True
    verbose: bool = True
    threads: str = "all"
    compile_cache: str | None = None


def resolve_workloads(names: Iterable[str]) -> list[WorkloadSpec]:
    """Load workload specs by name (shipped workloads) or by path of a ``.py`` file.

    Example:
        >>> [w.name for w in resolve_workloads(["jit_tiny_call"])]
        ['jit_tiny_call']
    """
    shipped = _workloads.discover()
    names = list(names) or list(shipped)
    specs = []
    for name in names:
        if name in shipped:
            path = shipped[name]
        elif name.endswith(".py") and os.path.exists(name):
            path = os.path.abspath(name)
        else:
            raise ValueError(f"unknown workload {name!r}; known: {', '.join(shipped)} "
                             "(or give the path of a workload .py file)")
        specs.append(_workloads.spec_of(_workloads.load_module(path), path))
    return specs


def resolve_backends(requested: Sequence[str] | None) -> tuple[list[str], dict[str, str]]:
    """Return ``(backends to run, {skipped backend: reason})``.

    With ``requested=None``: numpy, fluxion and jax always, numba and torch when importable.
    An explicitly requested optional backend that is not installed is skipped, not run.

    Example:
        >>> resolve_backends(["numpy"])
        (['numpy'], {})
    """
    names = list(requested) if requested is not None else list(_backends.KNOWN)
    selected, skipped = [], {}
    for name in names:
        if name in _backends.OPTIONAL and not _backends.is_installed(name):
            skipped[name] = "not installed"
        elif name not in selected:
            selected.append(name)
    return selected, skipped


THREAD_MODES = ("all", "single")
#: The default worker timeout is this many times longer for a torch worker running
#: ``torch-compile`` variants (an explicit ``--timeout`` applies as given).
TORCH_TIMEOUT_FACTOR = 4
#: Environment of a single-threaded worker (pyhpc-benchmarks' CPU setting).
SINGLE_THREAD_ENV = {
    "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1", "VECLIB_MAXIMUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
    # torch: set_num_threads(1) in the worker (benchmarks.backends), one inductor compile thread
    "FLUXION_BENCH_THREADS": "single", "TORCHINDUCTOR_COMPILE_THREADS": "1",
}
SINGLE_THREAD_XLA_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def worker_prefix(threads: str) -> list[str]:
    """The command prefix of a worker: ``taskset -c CPU`` in single-thread mode when taskset
    exists (CPU: the first one this process may use), else nothing.

    Example:
        >>> worker_prefix("all")
        []
    """
    if threads != "single" or shutil.which("taskset") is None:
        return []
    try:
        cpu = min(os.sched_getaffinity(0))
    except (AttributeError, OSError, ValueError):
        cpu = 0
    return ["taskset", "-c", str(cpu)]


def _checkout_sources() -> list[str]:
    """This checkout's ``benchmarks`` folder and every ``packages/<name>/src``."""
    dirs = [os.path.join(REPO_ROOT, "benchmarks")]
    pkg_dir = os.path.join(REPO_ROOT, "packages")
    if os.path.isdir(pkg_dir):
        dirs += [os.path.join(pkg_dir, p, "src") for p in sorted(os.listdir(pkg_dir))
                 if os.path.isdir(os.path.join(pkg_dir, p, "src"))]
    return dirs


def byte_compile_checkout(dirs: Sequence[str] | None = None) -> bool:
    """Writes the byte code of the Python files under ``dirs`` (default: this checkout's
    ``benchmarks`` and ``packages/*/src``) where it is missing or stale, so that worker
    processes import them from byte code, as they import the installed references (jax, numpy,
    torch: compiled when installed). Where the environment sets ``PYTHONDONTWRITEBYTECODE``,
    Python never writes it, and every import compiled the source again: in a Fluxion first
    call that was 20-40 ms under load (the modules it imports on first use). Returns whether
    every file compiled.

    Example:
        >>> import importlib.util, os, tempfile
        >>> d = tempfile.mkdtemp()
        >>> with open(os.path.join(d, "m.py"), "w") as f:
        ...     _ = f.write("x = 1\\n")
        >>> byte_compile_checkout([d]), os.path.exists(importlib.util.cache_from_source(
        ...     os.path.join(d, "m.py")))
        (True, True)
    """
    import compileall

    ok = True
    for d in _checkout_sources() if dirs is None else dirs:
        ok = bool(compileall.compile_dir(d, quiet=2)) and ok
    return ok


def _worker_env(cfg: RunConfig) -> dict[str, str]:
    if cfg.threads not in THREAD_MODES:
        raise ValueError(f"threads must be one of {THREAD_MODES}, got {cfg.threads!r}")
    env = dict(os.environ)
    env.pop("FLUXION_BENCH_THREADS", None)
    if cfg.threads == "single":
        env.update(SINGLE_THREAD_ENV)
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + SINGLE_THREAD_XLA_FLAGS).strip()
    for var in ("FLUXION_COMPILATION_CACHE_DIR", "JAX_COMPILATION_CACHE_DIR",
                "FLUXION_ENABLE_COMPILATION_CACHE"):
        env.pop(var, None)
        if cfg.compile_cache:
            env[var] = os.path.abspath(cfg.compile_cache)
    env.pop("TORCHINDUCTOR_CACHE_DIR", None)
    env["FLUXION_BENCH_TORCH_CACHE"] = "dir" if cfg.compile_cache else "cold"
    if cfg.compile_cache:
        env["FLUXION_ENABLE_COMPILATION_CACHE"] = "1"
        env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(os.path.abspath(cfg.compile_cache),
                                                      "torchinductor")
    else:
        # fluxion's on-disk cache is on by default (in ~/.cache/fluxion): off, so first calls
        # are cold; jax's needs a directory, which it does not get
        env["FLUXION_ENABLE_COMPILATION_CACHE"] = "0"
        env["FLUXION_COMPILATION_CACHE_DIR"] = ""
    paths = [REPO_ROOT]
    pkg_dir = os.path.join(REPO_ROOT, "packages")
    if os.path.isdir(pkg_dir):
        for pkg in sorted(os.listdir(pkg_dir)):
            src = os.path.join(pkg_dir, pkg, "src")
            if os.path.isdir(src):
                paths.append(src)
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    if cfg.platform:
        env["JAX_PLATFORMS"] = cfg.platform
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, 9)
    except OSError:
        proc.kill()
    proc.communicate()


def _size_key(size: Any) -> str:
    return json.dumps(size, sort_keys=True)


def run_worker(spec: WorkloadSpec, backend: str, variants: Sequence[str], sizes: Sequence[Any],
               *, reps: int, warmup: int, min_rep_time: float, timeout: float,
               python: str = sys.executable, env: dict[str, str] | None = None,
               prefix: Sequence[str] = ()) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run one worker process; return ``(backend header, records)``.

    Every expected (variant, size, phase) gets exactly one record: what the worker wrote, or an
    error record saying why it is missing (non-zero exit, timeout, ...).
    """
    fd, out_path = tempfile.mkstemp(prefix=f"bench-{spec.name}-{backend}-", suffix=".jsonl")
    os.close(fd)
    cmd = [*prefix, python, "-m", "benchmarks.worker", "--workload", spec.path, "--backend", backend,
           "--variants", ",".join(variants), "--sizes", json.dumps(list(sizes)),
           "--phases", json.dumps(list(spec.phases)), "--reps", str(reps),
           "--warmup", str(warmup), "--min-rep-time", repr(min_rep_time), "--out", out_path]
    failure = None
    try:
        proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            output, _ = proc.communicate(timeout=timeout)
            if proc.returncode != 0:
                tail = (output or "").strip()[-1500:]
                failure = f"worker exited with status {proc.returncode}: {tail}"
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            failure = f"worker timed out after {timeout:g} s"
        except BaseException:
            # Ctrl-C: the worker is in its own session, so it would outlive us otherwise.
            _kill_group(proc)
            raise
        lines = []
        with open(out_path, encoding="utf-8") as f:
            for line in f:
                try:
                    lines.append(json.loads(line))
                except ValueError:
                    pass  # a line cut short by a crash
    except OSError as exc:
        failure, lines = f"could not run worker: {exc}", []
    finally:
        try:
            os.unlink(out_path)
        except OSError:
            pass

    header = next((x for x in lines if x.get("kind") == "backend"),
                  {"backend": backend, "version": None, "import_error": failure})
    records = [x for x in lines if x.get("kind") == "record"]
    seen = {(r["variant"], _size_key(r["size"]), r["phase"]) for r in records}
    for variant in variants:
        for size in sizes:
            for phase in spec.phases_of(variant):
                if (variant, _size_key(size), phase) not in seen:
                    records.append({"kind": "record", "backend": backend, "variant": variant,
                                    "size": size, "phase": phase, "status": "error",
                                    "error": failure or "no result from the worker"})
    return header, records


def merge_rounds(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pool the records of several rounds: one record per (workload, variant, size, phase).

    Successful rounds' per-repetition times are concatenated and the statistics recomputed;
    ``rounds`` counts the successful rounds. A case that failed in every round keeps its first
    error.

    Example:
        >>> a = {"workload": "w", "variant": "numpy", "size": 1, "phase": "total",
        ...      "status": "ok", "number": 10, "times_s": [1.0, 2.0]}
        >>> merged = merge_rounds([a, dict(a, times_s=[3.0])])
        >>> merged[0]["median_s"], merged[0]["reps"], merged[0]["rounds"]
        (2.0, 3, 2)
    """
    from benchmarks.worker import summarize, wait_share

    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for r in records:
        key = (r["workload"], r["variant"], _size_key(r["size"]), r["phase"])
        groups.setdefault(key, []).append(r)
    merged = []
    for recs in groups.values():
        ok = [r for r in recs if r.get("status") == "ok"]
        if not ok:
            merged.append(dict(recs[0], rounds=0))
            continue
        times = [t for r in ok for t in r["times_s"]]
        out = dict(ok[0], **summarize(times), rounds=len(ok))
        out["number"] = max(r.get("number") or 1 for r in ok)
        if all(r.get("cpu_times_s") for r in ok):  # looped reps' process CPU, pooled alike
            out["cpu_times_s"] = [t for r in ok for t in r["cpu_times_s"]]
            out["cpu_median_s"] = statistics.median(out["cpu_times_s"])
        else:
            out.pop("cpu_times_s", None)
            out.pop("cpu_median_s", None)
        if all(r.get("wait_times_s") for r in ok):  # and their waits for a core
            out["wait_times_s"] = [t for r in ok for t in r["wait_times_s"]]
            out["wait_share"] = wait_share(out["wait_times_s"], times)
        else:
            out.pop("wait_times_s", None)
            out.pop("wait_share", None)
        merged.append(out)
    return merged


def reference_variant(variant: str, available: Sequence[str], backend: str) -> str | None:
    """The variant that ``variant``'s ratio vs ``backend`` divides by, among ``available``.

    For another backend's variant: the same suffix (``fluxion-eager`` -> ``jax-eager``), then
    the bare backend name (``jax``), then the first variant of that backend in ``available``'s
    order. For a variant of ``backend`` itself: its primary variant (the bare name, else the
    first), so ``jax-eager``'s ratio vs jax compares it with ``jax-jit``.

    Example:
        >>> avail = ["numpy", "jax-jit", "jax-eager"]
        >>> reference_variant("fluxion-eager", avail, "jax")
        'jax-eager'
        >>> reference_variant("numpy", avail, "jax")
        'jax-jit'
        >>> reference_variant("jax-eager", avail, "jax")
        'jax-jit'
    """
    base, _, suffix = variant.partition("-")
    candidates = ([f"{backend}-{suffix}"] if suffix and base != backend else []) + [backend]
    for c in candidates:
        if c in available:
            return c
    for v in available:
        if _backends.backend_of(v) == backend:
            return v
    return None


def compute_ratios(records: list[dict[str, Any]], variant_order: dict[str, Sequence[str]]
                   ) -> None:
    """Fill ``ratio_vs_jax``/``ratio_vs_numpy`` (median / reference median) and the references.

    Groups are (workload, size, phase); ``variant_order`` maps a workload to its declared
    variants, which decides the fallback reference. A ratio is ``None`` when either side has
    no successful timing. Greater than 1 means slower than the reference.

    Example:
        >>> recs = [{"workload": "w", "size": 1, "phase": "total", "variant": v, "status": "ok",
        ...          "median_s": m} for v, m in [("numpy", 2.0), ("jax", 4.0)]]
        >>> compute_ratios(recs, {"w": ["numpy", "jax"]})
        >>> recs[0]["ratio_vs_jax"], recs[1]["ratio_vs_numpy"]
        (0.5, 2.0)
    """
    groups: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = {}
    for r in records:
        groups.setdefault((r["workload"], _size_key(r["size"]), r["phase"]), {})[r["variant"]] = r
    for (workload, _, _), by_variant in groups.items():
        order = [v for v in variant_order.get(workload, ()) if v in by_variant]
        order += [v for v in by_variant if v not in order]
        for r in by_variant.values():
            for ref_backend in ("jax", "numpy"):
                ref = reference_variant(r["variant"], order, ref_backend)
                r[f"{ref_backend}_reference"] = ref
                ratio = None
                ref_rec = by_variant.get(ref) if ref else None
                if (ref_rec is not None and r.get("status") == "ok"
                        and ref_rec.get("status") == "ok" and ref_rec.get("median_s")):
                    ratio = r["median_s"] / ref_rec["median_s"]
                r[f"ratio_vs_{ref_backend}"] = ratio


def round_order(jobs: Sequence[tuple], round_index: int) -> list[tuple]:
    """The jobs of one round: workload by workload, each workload's backends in their order in
    even rounds and reversed in odd ones (numpy, fluxion, jax, then jax, fluxion, numpy), so a
    load that drifts during a round does not always favour the same backend.

    Example:
        >>> jobs = [("w", "numpy"), ("w", "fluxion"), ("w", "jax"), ("v", "jax")]
        >>> [b for _, b in round_order(jobs, 1)]
        ['jax', 'fluxion', 'numpy', 'jax']
    """
    groups: list[list[tuple]] = []
    for job in jobs:
        if groups and groups[-1][0][0] is job[0]:
            groups[-1].append(job)
        else:
            groups.append([job])
    return [job for g in groups for job in (reversed(g) if round_index % 2 else g)]


def compute_intervals(records: list[dict[str, Any]], per_round: list[dict[str, Any]],
                      rounds: int) -> None:
    """Fill ``ratio_vs_jax_ci`` / ``ratio_vs_numpy_ci`` (``[lo, hi]``, 95%), ``ci_method``
    (``"t"``: paired t-interval over the per-round ratios; ``"bootstrap"``: over the pooled
    repetitions; see :mod:`benchmarks.stats`) and ``round_medians_s`` (the median of each round,
    ``None`` where that round failed) of the merged ``records``, from the unmerged ``per_round``
    records (each carrying its ``round`` index).

    Example:
        >>> raw = [{"workload": "w", "size": 1, "phase": "total", "variant": v, "status": "ok",
        ...         "round": i, "times_s": [t]}
        ...        for i, (a, b) in enumerate([(2.0, 1.0), (2.2, 1.0), (1.8, 1.0)])
        ...        for v, t in (("fluxion", a), ("jax", b))]
        >>> merged = [{"workload": "w", "size": 1, "phase": "total", "variant": "fluxion",
        ...            "jax_reference": "jax", "numpy_reference": None, "ratio_vs_jax": 2.0}]
        >>> compute_intervals(merged, raw, 3)
        >>> merged[0]["ci_method"], [round(v, 2) for v in merged[0]["ratio_vs_jax_ci"]]
        ('t', [1.55, 2.56])
    """
    from benchmarks.stats import ratio_interval

    by_case: dict[tuple[str, str, str, str], list[list[float] | None]] = {}
    for r in per_round:
        key = (r["workload"], _size_key(r["size"]), r["phase"], r["variant"])
        slots = by_case.setdefault(key, [None] * rounds)
        i = r.get("round", 0)
        if r.get("status") == "ok" and r.get("times_s") and 0 <= i < rounds:
            slots[i] = list(r["times_s"])
    for r in records:
        key = (r["workload"], _size_key(r["size"]), r["phase"])
        mine = by_case.get((*key, r["variant"]), [None] * rounds)
        r["round_medians_s"] = [statistics.median(t) if t else None for t in mine]
        method = None
        for ref_backend in ("jax", "numpy"):
            ci = None
            ref = r.get(f"{ref_backend}_reference")
            if r.get(f"ratio_vs_{ref_backend}") is not None and ref and ref != r["variant"]:
                ci, m = ratio_interval(mine, by_case.get((*key, ref), [None] * rounds))
                method = method or m
            r[f"ratio_vs_{ref_backend}_ci"] = ci
        r["ci_method"] = method


def _machine_info() -> dict[str, Any]:
    commit = None
    try:
        res = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                             text=True, timeout=10)
        if res.returncode == 0:
            commit = res.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        pass
    cpu_model = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory_gb = None
    try:
        memory_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    except (AttributeError, OSError, ValueError):
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = None
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        load = None
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "cpu_model": cpu_model or platform.processor() or None,
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "memory_gb": memory_gb,
        "loadavg": load,
        "python": platform.python_version(),
        "git_commit": commit,
    }


def _log(cfg: RunConfig, msg: str) -> None:
    if cfg.verbose:
        print(msg, file=sys.stderr, flush=True)


def run(cfg: RunConfig) -> dict[str, Any]:
    """Run the benchmarks that ``cfg`` selects and return the result document.

    When ``cfg.out_dir`` is set, also writes the JSON files and the plot (see
    :func:`save_results`); the returned document then has an ``"outputs"`` entry.
    """
    specs = resolve_workloads(cfg.workloads)
    selected, skipped = resolve_backends(cfg.backends)
    warmup = max(1, cfg.warmup if cfg.warmup is not None else (1 if cfg.quick else 2))
    min_rep_time = cfg.min_rep_time if cfg.min_rep_time is not None else (
        0.002 if cfg.quick else 0.01)
    timeout = cfg.timeout if cfg.timeout is not None else (180.0 if cfg.quick else 900.0)
    rounds = max(1, cfg.rounds if cfg.rounds is not None else (1 if cfg.quick else 3))
    env = _worker_env(cfg)
    byte_compile_checkout()
    prefix = worker_prefix(cfg.threads)
    now = _dt.datetime.now(_dt.UTC)

    jobs = []
    for spec in specs:
        sizes = list(cfg.sizes.get(spec.name) or (spec.quick_sizes if cfg.quick else spec.sizes))
        reps = cfg.reps or ((spec.quick_reps or 5) if cfg.quick else (spec.default_reps or 20))
        for backend in selected:
            variants = [v for v in spec.variants if _backends.backend_of(v) == backend]
            if variants:
                jobs.append((spec, backend, variants, sizes, reps))

    backend_info: dict[str, dict[str, Any]] = {
        name: {"status": "skipped", "version": None, "error": reason}
        for name, reason in skipped.items()}
    per_round: list[dict[str, Any]] = []
    workload_info: dict[str, dict[str, Any]] = {
        spec.name: {"description": spec.description,
                    "path": os.path.relpath(spec.path, REPO_ROOT),
                    "variants": list(spec.variants), "phases": list(spec.phases),
                    "sizes": [], "reps": None, "ran_variants": []} for spec in specs}
    for spec, _, variants, sizes, reps in jobs:
        wi = workload_info[spec.name]
        wi.update(sizes=sizes, reps=reps)
        wi["ran_variants"].extend(variants)
    started = time.perf_counter()
    n_jobs = len(jobs) * rounds
    i = 0
    # Rounds interleave all backends, so a change in machine load hits every backend alike.
    for round_index in range(rounds):
        for spec, backend, variants, sizes, reps in round_order(jobs, round_index):
            i += 1
            t0 = time.perf_counter()
            # a torch worker compiles every torch-compile case cold (dynamo + inductor's C++:
            # 30-90 s each on a loaded machine), so the default allowance is larger for it
            allowed = (timeout * TORCH_TIMEOUT_FACTOR
                       if cfg.timeout is None and backend == "torch"
                       and any(v.endswith("-compile") for v in variants) else timeout)
            header, recs = run_worker(spec, backend, variants, sizes, reps=reps, warmup=warmup,
                                      min_rep_time=min_rep_time, timeout=allowed,
                                      python=cfg.python, env=env, prefix=prefix)
            n_err = sum(r["status"] != "ok" for r in recs)
            _log(cfg, f"[{i}/{n_jobs}] {spec.name:<20} {backend:<8} "
                      f"{time.perf_counter() - t0:6.1f} s"
                      + (f"  ({n_err} errors)" if n_err else ""))
            info = backend_info.setdefault(backend,
                                           {"status": "ok", "version": None, "error": None})
            if header.get("import_error"):
                info.update(status="error", error=header["import_error"])
            elif header.get("version") is not None:
                info["version"] = header["version"]
            for r in recs:
                r.pop("kind", None)
                r["workload"] = spec.name
                r["size_label"] = spec.label(r["size"])
                r.setdefault("backend", backend)
                r["round"] = round_index
            per_round.extend(recs)
    records = merge_rounds(per_round)

    order = {spec.name: list(spec.variants) for spec in specs}
    compute_ratios(records, order)
    compute_intervals(records, per_round, rounds)
    spec_index = {spec.name: i for i, spec in enumerate(specs)}

    def sort_key(r: dict[str, Any]) -> tuple:
        spec = specs[spec_index[r["workload"]]]
        sizes = [_size_key(s) for s in workload_info[r["workload"]]["sizes"]]
        sk = _size_key(r["size"])
        phases = list(spec.phases)
        return (spec_index[r["workload"]], sizes.index(sk) if sk in sizes else len(sizes),
                phases.index(r["phase"]) if r["phase"] in phases else len(phases),
                order[r["workload"]].index(r["variant"]) if r["variant"] in order[r["workload"]]
                else len(order[r["workload"]]))

    records.sort(key=sort_key)
    field_order = ["workload", "size", "size_label", "phase", "backend", "variant", "status",
                   "error", "rounds", "reps", "number", "warmup", "median_s", "min_s", "max_s",
                   "mean_s",
                   "stdev_s", "ratio_vs_jax", "ratio_vs_jax_ci", "ratio_vs_numpy",
                   "ratio_vs_numpy_ci", "ci_method", "jax_reference", "numpy_reference",
                   "round_medians_s", "times_s", "cpu_median_s",
                   "wait_share"]
    records = [{k: r.get(k) for k in field_order} for r in records]

    run_id = now.strftime("%Y%m%d-%H%M%S")
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "run_id": run_id,
        "created": now.isoformat(timespec="seconds"),
        "duration_s": time.perf_counter() - started,
        "config": {
            "quick": cfg.quick, "reps": cfg.reps, "warmup": warmup, "min_rep_time_s": min_rep_time,
            "timeout_s": timeout, "rounds": rounds, "platform": cfg.platform or None,
            "workloads": [s.name for s in specs], "backends": selected,
            "sizes_override": cfg.sizes, "python": cfg.python,
            "threads": cfg.threads, "worker_prefix": prefix,
            "compile_cache": cfg.compile_cache,
        },
        "machine": _machine_info(),
        "backends": backend_info,
        "workloads": workload_info,
        "results": records,
    }
    if cfg.out_dir:
        doc["outputs"] = save_results(doc, cfg.out_dir, plot=cfg.plot)
    return doc


def write_json_atomic(path: str, obj: Any) -> None:
    """Write ``obj`` as JSON to ``path`` atomically (a temp file in the same folder, then
    ``os.replace``), so a reader never sees a half-written file.

    Example:
        >>> import os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), "x.json")
        >>> write_json_atomic(p, {"a": 1}); open(p).read()
        '{\\n  "a": 1\\n}\\n'
    """
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2, allow_nan=False, default=str)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _unique_stem(out_dir: str, run_id: str) -> str:
    stem, n = run_id, 1
    while os.path.exists(os.path.join(out_dir, stem + ".json")):
        n += 1
        stem = f"{run_id}-{n}"
    return stem


def save_results(doc: dict[str, Any], out_dir: str, *, plot: bool = True) -> dict[str, Any]:
    """Write ``<run_id>.json``, ``<run_id>.md`` and their ``latest.*`` copies, and when ``plot``
    and matplotlib is importable the PNGs (``<run_id>.png``: ratios to jax;
    ``<run_id>-scaling.png``: time vs size; ``<run_id>-first_call.png``: first-call bars) and
    their ``latest*`` copies, into ``out_dir``; return the paths written (a plot's entries are
    ``None`` when it was not made)."""
    os.makedirs(out_dir, exist_ok=True)
    stem = _unique_stem(out_dir, doc["run_id"])
    outputs: dict[str, Any] = {
        "json": os.path.join(out_dir, stem + ".json"),
        "latest_json": os.path.join(out_dir, "latest.json"),
        "png": None, "latest_png": None,
        "markdown": os.path.join(out_dir, stem + ".md"),
        "latest_markdown": os.path.join(out_dir, "latest.md"),
        "scaling_png": None, "latest_scaling_png": None,
        "first_call_png": None, "latest_first_call_png": None,
    }
    if plot:
        png = os.path.join(out_dir, stem + ".png")
        if plot_ratios(doc, png):
            latest_png = os.path.join(out_dir, "latest.png")
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".png", dir=out_dir)
            os.close(fd)
            with open(png, "rb") as src, open(tmp, "wb") as dst:
                dst.write(src.read())
            os.replace(tmp, latest_png)
            outputs.update(png=png, latest_png=latest_png)
        for key, draw in (("scaling", report.plot_scaling),
                          ("first_call", report.plot_first_calls)):
            path = os.path.join(out_dir, f"{stem}-{key}.png")
            if draw(doc, path):
                latest = os.path.join(out_dir, f"latest-{key}.png")
                _copy_atomic(path, latest)
                outputs.update({f"{key}_png": path, f"latest_{key}_png": latest})
    doc["outputs"] = outputs
    text = report.format_markdown(doc)
    _write_text_atomic(outputs["markdown"], text)
    _write_text_atomic(outputs["latest_markdown"], text)
    write_json_atomic(outputs["json"], doc)
    write_json_atomic(outputs["latest_json"], doc)
    return outputs


def _copy_atomic(src: str, dst: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.splitext(dst)[1],
                               dir=os.path.dirname(os.path.abspath(dst)))
    with os.fdopen(fd, "wb") as out, open(src, "rb") as f:
        out.write(f.read())
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, dst)


def _write_text_atomic(path: str, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".md",
                               dir=os.path.dirname(os.path.abspath(path)))
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text if text.endswith("\n") else text + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _fmt_ratio(r: float | None) -> str:
    if r is None:
        return "-"
    return f"{r:.2f}x" if r < 10 else (f"{r:.1f}x" if r < 100 else f"{r:.0f}x")


def _fmt_ci(ci: Any) -> str:
    if not ci or ci[0] is None or ci[1] is None:
        return ""
    return f"{_fmt_ratio(ci[0])}-{_fmt_ratio(ci[1])}"


def format_table(doc: dict[str, Any], *, max_error: int = 160) -> str:
    """The console table: one row per (workload, size, phase, variant).

    Columns: workload, size, phase, backend (variant), median, min, max, reps, ratio vs jax
    and its 95% interval, ratio vs numpy and its 95% interval. Failed rows show the error in
    place of the timings.
    """
    head = ["workload", "size", "phase", "backend", "median", "min", "max", "reps",
            "vs jax", "95% CI", "vs numpy", "95% CI"]
    rows: list[list[str]] = []
    errors: list[str] = []
    for r in doc["results"]:
        base = [r["workload"], r["size_label"], r["phase"], r["variant"]]
        if r["status"] == "ok":
            rows.append(base + [format_seconds(r["median_s"]), format_seconds(r["min_s"]),
                                format_seconds(r["max_s"]), str(r["reps"]),
                                _fmt_ratio(r["ratio_vs_jax"]), _fmt_ci(r.get("ratio_vs_jax_ci")),
                                _fmt_ratio(r["ratio_vs_numpy"]),
                                _fmt_ci(r.get("ratio_vs_numpy_ci"))])
        else:
            msg = " ".join(str(r.get("error") or r["status"]).split())
            rows.append(base + [r["status"].upper(), "", "", "", "", "", "", ""])
            errors.append(f"  {r['workload']} {r['size_label']} {r['phase']} {r['variant']}: "
                          f"{msg[:max_error]}{'...' if len(msg) > max_error else ''}")
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h)
              for i, h in enumerate(head)]
    right = {4, 5, 6, 7, 8, 10}

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = [line(head), line(["-" * w for w in widths])]
    prev = None
    for row in rows:
        if prev is not None and row[0] != prev:
            out.append("")
        prev = row[0]
        out.append(line(row))
    skipped = [f"{n} ({i['error']})" for n, i in doc.get("backends", {}).items()
               if i["status"] == "skipped"]
    if skipped:
        out.append("")
        out.append("skipped backends: " + ", ".join(skipped))
    if errors:
        out.append("")
        out.append(f"errors ({len(errors)}):")
        # one line per distinct message is enough when a backend failed everywhere
        seen: set[str] = set()
        for e in errors:
            key = e.split(": ", 1)[-1]
            if key in seen:
                continue
            seen.add(key)
            out.append(e)
    out.append("")
    out.append("ratios are median / reference median in this run (>1: slower than the "
               "reference)")
    return "\n".join(out)


def plot_ratios(doc: dict[str, Any], path: str) -> bool:
    """Bar chart of median / jax median per workload (log scale), saved atomically to ``path``.

    Returns ``False`` (and writes nothing) when matplotlib is not importable or nothing has a
    ratio to show.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:
        return False

    per_workload: dict[str, list[dict[str, Any]]] = {}
    for r in doc["results"]:
        if r.get("ratio_vs_jax") is not None and r["variant"] != r.get("jax_reference"):
            per_workload.setdefault(r["workload"], []).append(r)
    if not per_workload:
        return False

    n = len(per_workload)
    fig, axes = plt.subplots(1, n, figsize=(max(5.0, 4.2 * n), 4.6), squeeze=False)
    for ax, (workload, recs) in zip(axes[0], per_workload.items()):
        groups: list[str] = []
        variants: list[str] = []
        for r in recs:
            g = r["size_label"] if r["phase"] == "total" else f"{r['size_label']}\n{r['phase']}"
            if g not in groups:
                groups.append(g)
            if r["variant"] not in variants:
                variants.append(r["variant"])
        width = 0.8 / max(1, len(variants))
        all_ys: list[float] = []
        for j, v in enumerate(variants):
            xs, ys = [], []
            for r in recs:
                if r["variant"] == v:
                    g = (r["size_label"] if r["phase"] == "total"
                         else f"{r['size_label']}\n{r['phase']}")
                    xs.append(groups.index(g) + (j - (len(variants) - 1) / 2) * width)
                    ys.append(r["ratio_vs_jax"])
            # bars grow from 1 (jax): up when slower than jax, down when faster
            ax.bar(xs, [y - 1.0 for y in ys], bottom=1.0, width=width, label=v)
            all_ys.extend(ys)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_ylim(min(min(all_ys), 1.0) / 1.6, max(max(all_ys), 1.0) * 1.6)
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(groups, fontsize=8)
        ax.set_title(workload, fontsize=10)
        ax.set_ylabel("median / jax median")
        ax.legend(fontsize=7)
    fig.suptitle(f"time relative to jax (lower is faster) - run {doc['run_id']}", fontsize=10)
    fig.tight_layout()
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".png", dir=folder)
    os.close(fd)
    try:
        fig.savefig(tmp, format="png", dpi=110)
        os.replace(tmp, path)
    except Exception:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
    finally:
        plt.close(fig)
    return True

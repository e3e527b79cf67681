#!/usr/bin/env python3
"""Run the JAX ecosystem's own released test suites on real jax and on Fluxion, and compare.

Usage (from the repository root, with the repository's .venv)::

    .venv/bin/python tests/compat/run_suites.py                      # all libraries, all modes
    .venv/bin/python tests/compat/run_suites.py --libs optax,rlax --modes real,alias
    .venv/bin/python tests/compat/run_suites.py --sample             # the per-commit sample
    .venv/bin/python tests/compat/run_suites.py --record-baseline    # rewrite baseline/<lib>.json

Libraries and where their test files come from (pinned versions; see SUITES):

* optax 0.2.8, dm-haiku 0.0.17, rlax 0.1.9: the ``*_test.py`` files inside the installed wheel;
* flax 0.12.8 (``tests/nnx`` and ``tests/linen``), jax-md 0.2.29 (``tests/`` and its data): the
  source distribution, fetched once with ``pip download --no-deps --no-binary :all:`` into
  ``~/.cache/fluxion-compat/sdists`` (``FLUXION_COMPAT_CACHE`` moves it).

The files are copied into a neutral folder (``<cache>/suites/<lib>-<version>/tests/...``), so the
library under test is the installed one (or what the alias resolves it to) and node ids are the same
on every side. Each (library, mode) runs in its own pytest process (``compat_plugin.py`` sets it up:
absl flags, derandomized hypothesis, the alias), with a per-test timeout (pytest-timeout) and a
crash resume: a test that kills the process is recorded as a crash and the run goes on without it.

Modes:

* ``real``   real jax 0.10.2: the baseline. Only tests that pass here count.
* ``alias``  ``jax`` resolved to Fluxion, the library itself unchanged.
* ``mirror`` ``jax`` resolved to Fluxion and the library to its Fluxion mirror (optax ->
  fluxion_optim, flax.nnx -> fluxion_nn, haiku -> fluxion_nn.haiku, rlax -> fluxion_rl, jax_md ->
  fluxion_md). Tests that need an unmirrored library (haiku's flax bridge, jax-md's linen models)
  are counted apart and listed. For flax, mirror mode runs ``tests/nnx`` only, and only ``flax.nnx``
  is mirrored: ``flax.linen``, ``flax.struct``, ... are the real flax on ``jax`` -> Fluxion (the
  reference those tests compare nnx layers with); the ids that used them are counted and listed
  as "vs real flax.linen on Fluxion".

When ``real`` is not among the modes, the recorded baseline pass-list (``baseline/<lib>.json``,
written by ``--record-baseline``) stands in for it. Results (JSON + markdown) go to ``--results``
(default ``build/compat``).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import fnmatch
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BASELINE_DIR = HERE / "baseline"
RECORDED = HERE / "recorded.json"
MODES = ("real", "alias", "mirror")
JAX_VERSION = "0.10.2"


@dataclass(frozen=True)
class Suite:
    lib: str                 # the import name
    dist: str                # the distribution name on the package index
    version: str             # the pinned version
    source: str              # "wheel" (tests inside the installed package) or "sdist"
    subdirs: tuple[str, ...] = ("tests",)           # sdist: folders holding the tests (and data)
    mirror_subdirs: tuple[str, ...] | None = None   # mirror mode runs only these, when set
    sdist_name: str = ""     # the sdist's base name when it differs from dist-version
    extra_files: tuple[str, ...] = field(default=())
    # the per-commit sample takes tests that ran at most this long on the baseline (seconds)
    sample_max_duration: float = 1.0


SUITES: dict[str, Suite] = {
    "optax": Suite("optax", "optax", "0.2.8", "wheel"),
    "haiku": Suite("haiku", "dm-haiku", "0.0.17", "wheel"),
    "rlax": Suite("rlax", "rlax", "0.1.9", "wheel"),
    "flax": Suite("flax", "flax", "0.12.8", "sdist", subdirs=("tests/nnx", "tests/linen"),
                  mirror_subdirs=("tests/nnx",)),
    # jax-md's baseline durations were measured on a 13-core lent host, where its compile-bound
    # tests ran 10-100x faster than on a loaded 2-core machine (uma_test's backbone test: 0.85 s
    # there, 154 s here on real jax): a tighter cut keeps its per-commit sample cheap.
    "jax_md": Suite("jax_md", "jax-md", "0.2.29", "sdist", subdirs=("tests",), sdist_name="jax_md-0.2.29",
                    sample_max_duration=0.1),
}


class SuiteUnavailable(Exception):
    """The suite's files cannot be had here (no network for the sdist); the reason says why."""


def cache_dir() -> Path:
    return Path(os.environ.get("FLUXION_COMPAT_CACHE", Path.home() / ".cache" / "fluxion-compat"))


def is_test_file(name: str) -> bool:
    return name.endswith("_test.py") or (name.startswith("test_") and name.endswith(".py"))


# --------------------------------------------------------------------------------------------------
# Getting the test files
# --------------------------------------------------------------------------------------------------


def installed_version(suite: Suite) -> str:
    try:
        return importlib.metadata.version(suite.dist)
    except importlib.metadata.PackageNotFoundError:
        return ""


def check_version(suite: Suite) -> None:
    have = installed_version(suite)
    if have != suite.version:
        raise RuntimeError(f"{suite.dist}: the compat suites pin {suite.version}, but {have or 'nothing'} "
                           f"is installed (pip install '{suite.dist}=={suite.version}' "
                           f"'jax=={JAX_VERSION}' 'jaxlib=={JAX_VERSION}')")
    jv = importlib.metadata.version("jax")
    if jv != JAX_VERSION:
        raise RuntimeError(f"the compat baseline is jax {JAX_VERSION}; {jv} is installed")


def _sdist(suite: Suite) -> Path:
    """The cached sdist archive, downloaded with pip when missing."""
    dest = cache_dir() / "sdists"
    base = suite.sdist_name or f"{suite.dist}-{suite.version}"
    for cand in dest.glob("*.tar.gz"):
        if cand.name.lower().replace("-", "_") == f"{base}.tar.gz".lower().replace("-", "_"):
            return cand
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-input",
           "--no-deps", "--no-binary", ":all:", "-d", str(dest),
           f"{suite.dist}=={suite.version}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    for cand in dest.glob("*.tar.gz"):
        if cand.name.lower().replace("-", "_") == f"{base}.tar.gz".lower().replace("-", "_"):
            return cand
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    raise SuiteUnavailable(f"{suite.dist}=={suite.version}: its sdist could not be downloaded "
                           f"(network unavailable?): {' | '.join(tail)}")


def suite_root(suite: Suite) -> Path:
    """The neutral folder with the suite's test files (made once, then reused).

    Several processes (pytest-xdist workers) may ask at once: a lock file makes one of them fetch
    and copy while the others wait, and a finished folder is never replaced.
    """
    root = cache_dir() / "suites" / f"{suite.lib}-{suite.version}"
    if (root / ".complete").exists():
        return root
    import fcntl

    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{suite.lib}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return _make_suite_root(suite, root)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _make_suite_root(suite: Suite, root: Path) -> Path:
    stamp = root / ".complete"
    if stamp.exists():
        return root
    tmp = root.with_name(root.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "tests").mkdir(parents=True)
    if suite.source == "wheel":
        spec = importlib.util.find_spec(suite.lib)
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError(f"{suite.lib} is not installed")
        pkg = Path(list(spec.submodule_search_locations)[0])
        for f in sorted(pkg.rglob("*.py")):
            if is_test_file(f.name):
                target = tmp / "tests" / suite.lib / f.relative_to(pkg)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, target)
    else:
        archive = _sdist(suite)
        with tarfile.open(archive) as tar:
            members = []
            for m in tar.getmembers():
                parts = m.name.split("/", 1)
                if len(parts) < 2 or not (m.isfile() or m.isdir()):
                    continue
                rel = parts[1]
                if any(rel == d or rel.startswith(d + "/") for d in suite.subdirs):
                    m.name = rel
                    members.append(m)
            tar.extractall(tmp, members=members, filter="data")
    stamp_tmp = tmp / ".complete"
    stamp_tmp.write_text(f"{suite.dist}=={suite.version}\n")
    if root.exists():
        shutil.rmtree(root)
    os.replace(tmp, root)
    return root


def test_files(suite: Suite, root: Path, mode: str) -> list[str]:
    dirs = suite.mirror_subdirs if (mode == "mirror" and suite.mirror_subdirs) else (
        suite.subdirs if suite.source == "sdist" else (f"tests/{suite.lib}",))
    files = []
    for d in dirs:
        for f in sorted((root / d).rglob("*.py")):
            if is_test_file(f.name):
                files.append(str(f.relative_to(root)))
    return files


def selected_files(suite: Suite, root: Path, mode: str, only: list[str] | None = None,
                   file_patterns: list[str] | None = None) -> list[str]:
    """The test files a run of ``mode`` takes: those holding an id of ``only`` (when given) that
    match one of ``file_patterns`` (fnmatch, relative to ``root``; when given)."""
    files = test_files(suite, root, mode)
    if only is not None:
        wanted = {n.split("::", 1)[0] for n in only}
        files = [f for f in files if f in wanted]
    if file_patterns:
        files = [f for f in files if any(fnmatch.fnmatch(f, p) for p in file_patterns)]
    return files


def in_mode(suite: Suite, mode: str, nodeid: str) -> bool:
    """Whether a node id belongs to the tests that ``mode`` runs (flax mirror: tests/nnx only)."""
    if mode == "mirror" and suite.mirror_subdirs:
        return any(nodeid.startswith(d + "/") for d in suite.mirror_subdirs)
    return True


# --------------------------------------------------------------------------------------------------
# Running one (library, mode)
# --------------------------------------------------------------------------------------------------


def child_env(suite: Suite, mode: str, out: Path) -> dict[str, str]:
    env = dict(os.environ)
    # The same process set-up on every side, whoever starts the runner: 8 host CPU devices, as JAX's
    # own test suite (and this repository's conftest) use, so chex's pmap variants and flax's SPMD
    # tests run instead of skipping.
    flags = re.sub(r"--xla_force_host_platform_device_count=\S+", "", env.get("XLA_FLAGS", "")).strip()
    env["XLA_FLAGS"] = (flags + " --xla_force_host_platform_device_count=8").strip()
    env.update({
        "FLUXION_COMPAT_MODE": mode, "FLUXION_COMPAT_LIB": suite.lib, "FLUXION_COMPAT_OUT": str(out),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": os.pathsep.join([str(HERE)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])),
        "JAX_PLATFORMS": env.get("JAX_PLATFORMS", "cpu") or "cpu",
        "FLUXION_ENABLE_COMPILATION_CACHE": "0", "TF_CPP_MIN_LOG_LEVEL": "3",
    })
    env.pop("PYTEST_ADDOPTS", None)
    return env


def have_timeout_plugin() -> bool:
    return importlib.util.find_spec("pytest_timeout") is not None


def read_events(path: Path) -> list[dict]:
    if not path.exists():
        return []
    events = []
    with open(path) as f:
        for line in f:
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut short by a crash
    return events


def run_one(suite: Suite, mode: str, results: Path, *, only: list[str] | None, test_timeout: float,
            process_timeout: float, log=print, resume: bool = False,
            file_patterns: list[str] | None = None) -> dict:
    """Run one (library, mode) in its own pytest process (resumed after crashes). Returns its record."""
    root = suite_root(suite)
    files = selected_files(suite, root, mode, only, file_patterns)
    tag = f"{suite.lib}-{mode}"
    out = results / f"{tag}.jsonl"
    logf = results / f"{tag}.log"
    if not resume:
        out.unlink(missing_ok=True)
    ini = root / "pytest-compat.ini"
    ini.write_text("[pytest]\npython_files = *_test.py test_*.py\naddopts = --import-mode=importlib "
                   "-p no:cacheprovider --continue-on-collection-errors\n")
    base_cmd = [sys.executable, "-m", "pytest", "-c", str(ini), "--rootdir", str(root), "-p", "compat_plugin",
                "-q", "-rN", "--no-header", "--tb=no"]
    if have_timeout_plugin():
        base_cmd += ["-p", "pytest_timeout", f"--timeout={test_timeout:g}", "--timeout-method=signal"]
    only_file = results / f"{tag}.only"
    if only is not None:
        only_file.write_text("\n".join(only) + "\n")
    skip_file = results / f"{tag}.skip"
    t0 = time.time()
    crashes = 0
    rc = None
    while files:
        env = child_env(suite, mode, out)
        if only is not None:
            env["FLUXION_COMPAT_ONLY"] = str(only_file)
        done = {e["nodeid"] for e in read_events(out) if e["kind"] == "test"}
        skip_file.write_text("\n".join(sorted(done)) + "\n")
        env["FLUXION_COMPAT_SKIP"] = str(skip_file)
        left = process_timeout - (time.time() - t0)
        if left <= 0:
            break
        with open(logf, "a") as lf:
            proc = subprocess.Popen(base_cmd + files, cwd=root, env=env, stdout=lf, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            try:
                rc = proc.wait(timeout=left)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                rc = "process-timeout"
        events = read_events(out)
        finished = {e["nodeid"] for e in events if e["kind"] == "test"}
        started = [e["nodeid"] for e in events if e["kind"] == "start"]
        inflight = [n for n in started if n not in finished]
        if rc in (0, 1, 5) or not inflight:
            break
        why = "the whole run hit its time limit" if rc == "process-timeout" else f"process died (exit {rc})"
        with open(out, "a") as f:
            f.write(json.dumps({"kind": "test", "nodeid": inflight[-1], "outcome": "failed",
                                "cause": f"Crash: {why}", "duration": None}) + "\n")
        crashes += 1
        log(f"  {tag}: {why} in {inflight[-1]}; resuming ({crashes})")
        if rc == "process-timeout" or crashes > 25:
            break
    # Cut by the process time limit (or by too many crashes): the tests it never reached are not
    # results, so the run is partial (a baseline recorded from it is not complete).
    cut = rc == "process-timeout" or (crashes > 25 and rc not in (0, 1, 5))
    meta = {"wall_s": round(time.time() - t0, 1), "rc": rc, "crashes": crashes, "files": files,
            "selected": only, "partial": cut}
    (results / f"{tag}.meta.json").write_text(json.dumps(meta) + "\n")
    return load_run(suite, mode, results)


# In mirror mode a test parametrized by module names (haiku's doctest_test:
# ``test_doctest_haiku.nets``) gets the mirror's names (``fluxion_nn.haiku.nets``); read them as the
# reference's. Only packages whose name is not a prefix of another reference's (flax -> fluxion_nn is
# left alone: nnx ids never carry module names).
_MIRROR_ID_NAMES = {"haiku": "fluxion_nn.haiku", "optax": "fluxion_optim", "rlax": "fluxion_rl",
                    "jax_md": "fluxion_md"}


def mirror_nodeid(lib: str, nodeid: str) -> str:
    """``nodeid`` with the mirror's package name in its parameter part read as ``lib``'s.

    Example: ``mirror_nodeid("haiku", "t.py::T::test_doctest_fluxion_nn.haiku.nets")`` is
    ``"t.py::T::test_doctest_haiku.nets"``.
    """
    name = _MIRROR_ID_NAMES.get(lib)
    head, sep, tail = nodeid.partition("::")
    if not name or not sep or name not in tail:
        return nodeid
    return head + sep + re.sub(rf"(?<![A-Za-z0-9.]){re.escape(name)}(?![A-Za-z0-9])", lib, tail)


def load_run(suite: Suite, mode: str, results: Path) -> dict | None:
    """One (library, mode) run read back from its event file (None when it never started)."""
    tag = f"{suite.lib}-{mode}"
    events = read_events(results / f"{tag}.jsonl")
    if not events:
        return None
    meta_path = results / f"{tag}.meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {"partial": True}
    tests = {e["nodeid"]: e for e in events if e["kind"] == "test"}
    if mode == "mirror":
        tests = {mirror_nodeid(suite.lib, n): e for n, e in tests.items()}
    collect = {e["nodeid"]: e["cause"] for e in events if e["kind"] == "collect"}
    session = next((e for e in events if e["kind"] == "session"), {})
    if "wall_s" not in meta:  # still running (or the runner was stopped): time so far
        stamps = [e["t"] for e in events if "t" in e] + [session.get("time", time.time())]
        meta["wall_s"] = round(max(stamps) - session.get("time", max(stamps)), 1)
    return {"lib": suite.lib, "mode": mode, "wall_s": meta["wall_s"], "rc": meta.get("rc"),
            "crashes": meta.get("crashes", 0), "partial": meta.get("partial", False),
            "alias": session.get("alias"), "files": meta.get("files"), "selected": meta.get("selected"),
            "tests": tests, "collect_errors": collect}


# --------------------------------------------------------------------------------------------------
# Comparing
# --------------------------------------------------------------------------------------------------

_UNMIRRORED = "[compat:unmirrored]"


def normalise_cause(cause: str | None) -> str:
    """One failure cause: exception type + first message line, with numbers and addresses blanked."""
    c = (cause or "unknown").strip()
    c = re.sub(r"^_pytest\.outcomes\.Failed: Timeout.*", "Timeout (per-test limit)", c)
    c = re.sub(r"^(_pytest\.outcomes\.)?Failed: ", "Failed: ", c)
    c = re.sub(r"\s*\(at \S+:\d+ \([^)]*\)\)", "", c)  # Fluxion's "(at file:line (fn))" suffix
    c = re.sub(r"\S*/site-packages/", "", c)
    c = re.sub(r"0x[0-9a-fA-F]+", "0x…", c)
    c = re.sub(r"(?<![A-Za-z_\d])-?\d+(\.\d+)?(e-?\d+)?", "N", c)
    c = re.sub(r"\s+", " ", c)
    return c[:240]


def load_baseline(lib: str) -> dict | None:
    path = BASELINE_DIR / f"{lib}.json"
    if not path.exists():
        return None
    return json.loads(path.read_text())


def compare(suite: Suite, mode: str, base_pass: dict[str, float], run: dict) -> dict:
    """Share of the baseline-passing tests that pass in ``run``, and the failures grouped by cause."""
    base = {n for n in base_pass if in_mode(suite, mode, n)}
    if run.get("selected") is not None:
        base &= set(run["selected"])
    tests = run["tests"]
    collect = run["collect_errors"]
    if run.get("partial"):  # a run still going (or stopped): only the tests it reached count
        base = {n for n in base if n in tests or n.split("::", 1)[0] in collect}
    passing, apart, causes = [], [], defaultdict(list)
    # flax mirror: counted ids whose test read real flax parts (linen, struct, ...) as its reference
    vs_real = sorted(n for n in base if (tests.get(n) or {}).get("real_flax"))
    for nodeid in sorted(base):
        rec = tests.get(nodeid)
        if rec is not None and rec["outcome"] == "passed":
            passing.append(nodeid)
            continue
        if rec is not None:
            cause = rec["cause"] or rec["outcome"]
        else:
            fileid = nodeid.split("::", 1)[0]
            cause = collect.get(fileid)
            cause = f"[collection] {cause}" if cause else "not run (not collected, or the run stopped)"
        if _UNMIRRORED in cause:
            apart.append(nodeid)
            continue
        causes[normalise_cause(cause)].append(nodeid)
    counted = len(base) - len(apart)
    grouped = sorted(causes.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    parts = {}
    if len(suite.subdirs) > 1:  # flax: nnx and linen apart as well
        for d in suite.subdirs:
            mine = [n for n in base if n.startswith(d + "/")]
            if mine:
                parts[d] = {"baseline_passing": len(mine), "passing": sum(n.startswith(d + "/") for n in passing)}
    return {
        "parts": parts, "partial": bool(run.get("partial")),
        "baseline_passing": len(base), "apart": len(apart), "counted": counted, "passing": len(passing),
        "share": round(len(passing) / counted, 4) if counted else None,
        "wall_s": run["wall_s"], "crashes": run["crashes"], "alias": run.get("alias"),
        "causes": [{"cause": c, "count": len(ids), "examples": ids[:3]} for c, ids in grouped],
        "apart_tests": apart, "passing_ids": passing,
        "vs_real_flax": len(vs_real), "vs_real_flax_passing": len(set(vs_real) & set(passing)),
        "vs_real_flax_tests": vs_real,
    }


def baseline_from_run(run: dict) -> dict[str, float]:
    return {n: (r.get("duration") or 0.0) for n, r in run["tests"].items() if r["outcome"] == "passed"}


# --------------------------------------------------------------------------------------------------
# The sample (the per-commit subset)
# --------------------------------------------------------------------------------------------------


def sample_ids(suite: Suite, mode: str, base_pass: dict[str, float], size: int, per_file: int = 2,
               max_duration: float = 1.0) -> list[str]:
    """A deterministic subset of the baseline-passing ids: the same on every side and every run.

    Ids are ordered by a hash of their text, cheap ones (``max_duration`` seconds on the baseline)
    only, at most ``per_file`` per test file so the sample spreads over the suite.
    """
    cands = [n for n, d in base_pass.items() if in_mode(suite, mode, n) and (d or 0.0) <= max_duration]
    cands.sort(key=lambda n: hashlib.sha256(n.encode()).hexdigest())
    per = Counter()
    chosen = []
    for n in cands:
        f = n.split("::", 1)[0]
        if per[f] < per_file:
            per[f] += 1
            chosen.append(n)
            if len(chosen) == size:
                break
    return sorted(chosen)


# --------------------------------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------------------------------


def markdown(summary: dict, top: int = 8) -> str:
    lines = [f"# Compat suites ({summary['meta']['kind']})", "",
             f"jax {JAX_VERSION} baseline; Fluxion sides: {', '.join(summary['meta']['modes'])}; "
             f"finished {summary['meta']['finished']}.", "",
             "| library | baseline-passing | alias pass | mirror pass (apart) | run time (s) |",
             "|---|---|---|---|---|"]
    for lib, rec in summary["libs"].items():
        if "unavailable" in rec:
            lines.append(f"| {lib} | unavailable: {rec['unavailable']} | | | |")
            continue
        if "skipped" in rec:
            lines.append(f"| {lib} | skipped: {rec['skipped']} | | | |")
            continue
        if "error" in rec:
            lines.append(f"| {lib} | error: {rec['error']} | | | |")
            continue
        m = rec["modes"]

        def cell(mode):
            if mode not in m:
                return "-"
            r = m[mode]
            share = "n/a" if r["share"] is None else f"{100 * r['share']:.1f}%"
            extra = f" ({r['apart']} apart)" if mode == "mirror" else ""
            extra += " (partial run)" if r.get("partial") else ""
            return f"{r['passing']}/{r['counted']} = {share}{extra}"

        walls = [str(round(rec.get("real_wall_s") or 0))] + [str(round(m[k]["wall_s"])) for k in m]
        base = rec["baseline_passing"]
        if "sample_size" in rec:
            base = f"{base} (sample: {rec['sample_size']})"
        lines.append(f"| {lib} {rec['version']} | {base} | {cell('alias')} | "
                     f"{cell('mirror')} | {' / '.join(walls)} |")
    lines += ["", "Run time: real / then each Fluxion mode, seconds.", ""]
    for lib, rec in summary["libs"].items():
        for mode, r in rec.get("modes", {}).items():
            lines.append(f"## {lib} — {mode}: top causes")
            lines.append("")
            for c in r["causes"][:top]:
                lines.append(f"- {c['count']}× `{c['cause']}` (e.g. `{c['examples'][0]}`)")
            if not r["causes"]:
                lines.append("- none")
            if r["apart"]:
                files = Counter(n.split("::", 1)[0] for n in r["apart_tests"])
                lines.append(f"- counted apart (need an unmirrored library): {r['apart']} tests: "
                             + ", ".join(f"`{f}` ({k})" for f, k in sorted(files.items())))
            if r.get("vs_real_flax"):
                files = Counter(n.split("::", 1)[0] for n in r["vs_real_flax_tests"])
                lines.append(f"- vs real flax.linen on Fluxion (counted; real flax.linen/struct/core read "
                             f"by the test as its reference): {r['vs_real_flax']} tests, "
                             f"{r['vs_real_flax_passing']} pass: "
                             + ", ".join(f"`{f}` ({k})" for f, k in sorted(files.items())))
            for d, part in r.get("parts", {}).items():
                lines.append(f"- {d}: {part['passing']}/{part['baseline_passing']} pass")
            lines.append("")
    return "\n".join(lines) + "\n"


def regressions(summary: dict, recorded: dict) -> list[str]:
    """Each (library, mode) whose passing count fell below its recorded figure, as a sentence."""
    figures = recorded.get(summary["meta"]["kind"] if summary["meta"]["kind"] == "full" else "sampled", {})
    out = []
    for lib, rec in summary["libs"].items():
        for mode, r in rec.get("modes", {}).items():
            fig = figures.get(lib, {}).get(mode)
            if fig is None or r["passing"] >= fig["passing"]:
                continue
            lost = sorted(set(fig.get("passing_ids", ())) - set(r["passing_ids"]))
            top = "; ".join(f"{c['count']}x {c['cause']}" for c in r["causes"][:3])
            out.append(f"{lib} ({mode}): {r['passing']}/{r['counted']} pass, below the recorded "
                       f"{fig['passing']}/{fig['counted']}"
                       + (f"; newly failing: {', '.join(lost[:5])}" if lost else "")
                       + (f"; top causes: {top}" if top else ""))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--libs", default=",".join(SUITES), help="comma-separated: " + ",".join(SUITES))
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of real,alias,mirror")
    ap.add_argument("--results", default=str(ROOT / "build" / "compat"), help="folder for JSON/markdown")
    ap.add_argument("--sample", action="store_true", help="run only the recorded per-commit sample")
    ap.add_argument("--sample-size", type=int, default=None, help="ids per library in the sample")
    ap.add_argument("--timeout", type=float, default=None, help="per-test limit, seconds")
    ap.add_argument("--process-timeout", type=float, default=None, help="per (library, mode) limit, s")
    ap.add_argument("--jobs", type=int, default=1, help="(library, mode) processes at once")
    ap.add_argument("--record-baseline", action="store_true", help="write baseline/<lib>.json from real")
    ap.add_argument("--record-figures", action="store_true", help="write the figures into recorded.json")
    ap.add_argument("--files", default="",
                    help="comma-separated patterns (fnmatch) of the test files to run, e.g. 'tests/energy_test.py'; "
                         "a library with no matching file is skipped")
    ap.add_argument("--resume", action="store_true",
                    help="keep the event files in --results and run only the tests they lack")
    ap.add_argument("--allow-partial", action="store_true",
                    help="with --record-baseline: record from a real run that has not finished")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when a library falls below its figure in recorded.json")
    ap.add_argument("--from-results", action="store_true",
                    help="run nothing: report on the event files already in --results (a partial run too)")
    args = ap.parse_args(argv)

    libs = [s.strip() for s in args.libs.split(",") if s.strip()]
    file_patterns = [s.strip() for s in args.files.split(",") if s.strip()] or None
    modes = [s.strip() for s in args.modes.split(",") if s.strip()]
    for lib in libs:
        if lib not in SUITES:
            ap.error(f"unknown library {lib!r}; known: {', '.join(SUITES)}")
    for mode in modes:
        if mode not in MODES:
            ap.error(f"unknown mode {mode!r}; known: {', '.join(MODES)}")
    recorded = json.loads(RECORDED.read_text()) if RECORDED.exists() else {}
    size = args.sample_size or recorded.get("sample_size", 12)
    test_timeout = args.timeout or (60.0 if args.sample else 180.0)
    process_timeout = args.process_timeout or (600.0 if args.sample else 4 * 3600.0)
    results = Path(args.results).resolve()  # the children run in the suite's folder
    results.mkdir(parents=True, exist_ok=True)

    summary: dict = {"meta": {"kind": "sample" if args.sample else "full", "modes": modes, "libs": libs,
                              "jax": JAX_VERSION, "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                              "test_timeout_s": test_timeout},
                     "libs": {}}
    tasks = []
    for lib in libs:
        suite = SUITES[lib]
        rec = summary["libs"].setdefault(lib, {"version": suite.version, "dist": suite.dist})
        try:
            check_version(suite)
            root = suite_root(suite)
        except SuiteUnavailable as e:
            rec["unavailable"] = str(e)
            print(f"{lib}: unavailable: {e}", file=sys.stderr)
            continue
        except Exception as e:  # noqa: BLE001 - reported per library
            rec["error"] = f"{type(e).__name__}: {e}"
            print(f"{lib}: error: {rec['error']}", file=sys.stderr)
            continue
        lib_modes = modes
        if file_patterns:
            # a pattern that names no file of this library (or of one mode: flax's mirror runs
            # tests/nnx only) skips it, with one line, rather than running nothing
            lib_modes = [m for m in modes if selected_files(suite, root, m, None, file_patterns)]
            if not lib_modes:
                rec["skipped"] = f"no test file matches --files {args.files}"
                print(f"{lib}: skipped: {rec['skipped']}", file=sys.stderr)
                continue
            for mode in modes:
                if mode not in lib_modes:
                    print(f"{lib} {mode}: skipped: no test file of this mode matches --files "
                          f"{args.files}", file=sys.stderr)
        baseline = load_baseline(lib)
        for mode in lib_modes:
            only = None
            if args.sample:
                if baseline is None:
                    rec["error"] = f"no recorded baseline {BASELINE_DIR / (lib + '.json')} to sample from"
                    break
                only = sample_ids(suite, mode, baseline["passing"], size,
                                  max_duration=suite.sample_max_duration)
            tasks.append((suite, mode, only))

    def work(task):
        suite, mode, only = task
        if args.from_results:
            return load_run(suite, mode, results)
        print(f"[compat] {suite.lib} {mode}: start ({'sample of ' + str(len(only)) if only else 'full'})",
              flush=True)
        r = run_one(suite, mode, results, only=only, test_timeout=test_timeout,
                    process_timeout=process_timeout, log=lambda s: print(s, flush=True),
                    resume=args.resume, file_patterns=file_patterns)
        if r is None:  # no file to run (or the process never started): no events to read
            print(f"[compat] {suite.lib} {mode}: no test ran", flush=True)
            return None
        npass = sum(1 for t in r["tests"].values() if t["outcome"] == "passed")
        print(f"[compat] {suite.lib} {mode}: {npass}/{len(r['tests'])} passed, {len(r['collect_errors'])} "
              f"collection errors, {r['wall_s']} s", flush=True)
        return r

    runs: dict[tuple[str, str], dict] = {}
    # The real side of a library first, so its figures can be compared as soon as its others end.
    tasks.sort(key=lambda t: (libs.index(t[0].lib), MODES.index(t[1])))
    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for (suite, mode, _), r in zip(tasks, pool.map(work, tasks)):
            if r is not None:
                runs[(suite.lib, mode)] = r

    for lib in libs:
        rec = summary["libs"][lib]
        if "unavailable" in rec or "error" in rec or "skipped" in rec:
            continue
        suite = SUITES[lib]
        real = runs.get((lib, "real"))
        if real is not None:
            base_pass = baseline_from_run(real)
            if real.get("selected") is not None:
                base_pass = {n: d for n, d in base_pass.items() if n in set(real["selected"])}
            rec["baseline_source"] = "run"
            rec["real_wall_s"] = real["wall_s"]
            rec["real_collected"] = len(real["tests"])
            rec["real_collect_errors"] = real["collect_errors"]
            if args.record_baseline and not args.sample and (args.allow_partial or not real.get("partial")):
                BASELINE_DIR.mkdir(exist_ok=True)
                (BASELINE_DIR / f"{lib}.json").write_text(json.dumps(
                    {"lib": lib, "dist": suite.dist, "version": suite.version, "jax": JAX_VERSION,
                     # complete: false = recorded from a run that had not reached every test yet
                     # (each id listed did pass on jax; some passing ones may be missing).
                     "complete": not real.get("partial"),
                     "collected": len(real["tests"]),
                     "passing": dict(sorted(base_pass.items()))}, indent=0, sort_keys=False) + "\n")
        else:
            baseline = load_baseline(lib)
            if baseline is None:
                rec["error"] = "no real run and no recorded baseline"
                continue
            base_pass = baseline["passing"]
            rec["baseline_source"] = "recorded"
        rec["baseline_passing"] = len(base_pass)
        if args.sample:
            rec["sample_size"] = size
        rec["modes"] = {}
        for mode in modes:
            if mode == "real" or (lib, mode) not in runs:
                continue
            rec["modes"][mode] = compare(suite, mode, base_pass, runs[(lib, mode)])
    summary["meta"]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())

    if args.record_figures:
        key = "sampled" if args.sample else "full"
        recorded.setdefault("sample_size", size)
        fig = recorded.setdefault(key, {})
        for lib, rec in summary["libs"].items():
            for mode, r in rec.get("modes", {}).items():
                fig.setdefault(lib, {})[mode] = {"passing": r["passing"], "counted": r["counted"],
                                                 "apart": r["apart"], "share": r["share"]}
                if args.sample:
                    fig[lib][mode]["passing_ids"] = r["passing_ids"]
        RECORDED.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")

    (results / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (results / "summary.md").write_text(markdown(summary))
    print(markdown(summary))
    if args.check:
        bad = regressions(summary, recorded)
        for line in bad:
            print("REGRESSION: " + line, file=sys.stderr)
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

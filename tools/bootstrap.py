#!/usr/bin/env python3
"""Set up the development environment and run one task in it.

Usage (from anywhere; only the standard library and Python >= 3.11 are needed)::

    python3.11 tools/bootstrap.py setup           # only create/update .venv
    python3.11 tools/bootstrap.py demo            # run examples/quickstart.py
    python3.11 tools/bootstrap.py test [ARGS...]  # pytest tests -n 2 --dist loadgroup -q [ARGS...] (paths in ARGS
                                                  # replace the default `tests`)
    python3.11 tools/bootstrap.py test --platform tpu [ARGS...]  # the same with Fluxion on the TPU, one process
    python3.11 tools/bootstrap.py bench [ARGS...] # nox -s bench -- [ARGS...]
    python3.11 tools/bootstrap.py bench_history [ARGS...]  # nox -s bench_history: nightly run + history
    python3.11 tools/bootstrap.py lint [ARGS...]  # nox -s lint -- [ARGS...]
    python3.11 tools/bootstrap.py docs [ARGS...]  # nox -s docs -- [ARGS...]
    python3.11 tools/bootstrap.py compat [ARGS...]  # nox -s compat: the ecosystem suites in full (long)
    python3.11 tools/bootstrap.py core_only       # nox -s core_only: only packages/fluxion, fresh venv

What it does:

1. creates ``.venv/`` at the repository root when it is missing (or unusable);
2. upgrades pip and installs every ``packages/*/`` that has a ``pyproject.toml`` in editable mode,
   with its ``test`` extra when it declares one, plus ``nox`` -- all in one pip call. A stamp file in
   ``.venv`` records a hash of every ``pyproject.toml`` (and of this install plan), so when nothing
   changed the install is skipped and a second run starts at once;
3. runs the task with ``.venv/bin`` first on ``PATH`` and exits with the task's exit code.

The environment is passed through unchanged (OPENBLAS_* and other variables included).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
VENV_BIN = VENV / "bin"
VENV_PY = VENV_BIN / "python"
STAMP = VENV / ".fluxion-bootstrap.sha256"
LOCK = VENV / ".fluxion-bootstrap.lock"

# Tools installed beside the packages. Part of the stamp hash: change it and the next run reinstalls.
EXTRA_REQUIREMENTS = ["nox"]
# Bump to force every checkout to reinstall once (e.g. after changing how installs are done).
INSTALL_PLAN_VERSION = "1"

MIN_PYTHON = (3, 11)
_VERSION_PROBE = f"import sys; sys.exit(0 if sys.version_info >= {MIN_PYTHON!r} else 1)"
TASKS = ("setup", "demo", "test", "bench", "bench_history", "lint", "docs", "core_only", "train_digits",
         "compat")


def log(msg: str) -> None:
    print(f"[bootstrap] {msg}", file=sys.stderr, flush=True)


def run(cmd: list[str], **kwargs) -> int:
    """Run ``cmd`` and return its exit code (128 + N when it was killed by signal N)."""
    log("$ " + " ".join(cmd))
    proc = subprocess.run(cmd, **kwargs)
    rc = proc.returncode
    return 128 - rc if rc < 0 else rc


def check(cmd: list[str], **kwargs) -> None:
    rc = run(cmd, **kwargs)
    if rc != 0:
        log(f"command failed with exit code {rc}")
        sys.exit(rc)


# --------------------------------------------------------------------------------------------------
# The virtual environment
# --------------------------------------------------------------------------------------------------


def venv_is_usable() -> bool:
    """True when .venv/bin/python runs and is at least MIN_PYTHON."""
    if not VENV_PY.exists():
        return False
    try:
        return subprocess.run([str(VENV_PY), "-c", _VERSION_PROBE], capture_output=True).returncode == 0
    except OSError:
        return False


def ensure_venv() -> None:
    if venv_is_usable():
        return
    if VENV.exists():
        log(f"{VENV} exists but its python is missing, broken or older than "
            f"{'.'.join(map(str, MIN_PYTHON))}: recreating it")
        check([sys.executable, "-m", "venv", "--clear", str(VENV)])
    else:
        log(f"creating {VENV}")
        check([sys.executable, "-m", "venv", str(VENV)])
    STAMP.unlink(missing_ok=True)


def package_dirs() -> list[Path]:
    """Every packages/<name>/ holding a pyproject.toml; the core package 'fluxion' first."""
    dirs = sorted(p.parent for p in (ROOT / "packages").glob("*/pyproject.toml"))
    return sorted(dirs, key=lambda d: (d.name != "fluxion", d.name))


def has_test_extra(pkg: Path) -> bool:
    import tomllib  # 3.11+; imported here so an older python3 gets to reexec_with_newer_python()

    with open(pkg / "pyproject.toml", "rb") as f:
        data = tomllib.load(f)
    extras = data.get("project", {}).get("optional-dependencies", {})
    return "test" in extras


def install_hash(pkgs: list[Path]) -> str:
    h = hashlib.sha256()
    h.update(f"plan={INSTALL_PLAN_VERSION};extra={','.join(EXTRA_REQUIREMENTS)}\n".encode())
    for pkg in pkgs:
        h.update(str(pkg.relative_to(ROOT)).encode() + b"\n")
        h.update(hashlib.sha256((pkg / "pyproject.toml").read_bytes()).hexdigest().encode() + b"\n")
    return h.hexdigest()


@contextlib.contextmanager
def install_lock() -> Iterator[None]:
    """Serialise concurrent bootstraps of the same checkout (POSIX only; a no-op elsewhere)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX
        yield
        return
    with open(LOCK, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def ensure_installed() -> None:
    pkgs = package_dirs()
    if not pkgs:
        log("no packages/*/pyproject.toml found")
        sys.exit(2)
    digest = install_hash(pkgs)
    if STAMP.exists() and STAMP.read_text().strip() == digest:
        return
    with install_lock():
        # Another bootstrap may have finished the same install while we waited for the lock.
        if STAMP.exists() and STAMP.read_text().strip() == digest:
            return
        pip = [str(VENV_PY), "-m", "pip", "--disable-pip-version-check", "--no-input"]
        check(pip + ["install", "--upgrade", "pip"])
        reqs: list[str] = []
        for pkg in pkgs:
            target = str(pkg) + ("[test]" if has_test_extra(pkg) else "")
            reqs += ["-e", target]
        reqs += EXTRA_REQUIREMENTS
        check(pip + ["install"] + reqs)
        STAMP.write_text(digest + "\n")
        log("environment ready: " + ", ".join(p.name for p in pkgs) + " + " + ", ".join(EXTRA_REQUIREMENTS))


# --------------------------------------------------------------------------------------------------
# Tasks
# --------------------------------------------------------------------------------------------------


def child_env() -> dict[str, str]:
    """The caller's environment, unchanged, with the venv activated."""
    env = dict(os.environ)
    env["VIRTUAL_ENV"] = str(VENV)
    env["PATH"] = str(VENV_BIN) + os.pathsep + env.get("PATH", "")
    env.pop("PYTHONHOME", None)
    return env


# pytest options whose value is the next argument (so that value is never taken for a test path).
_PYTEST_VALUE_OPTS = {"-k", "-m", "-n", "-p", "-c", "-o", "-W", "--maxfail", "--deselect", "--ignore",
                      "--ignore-glob", "--rootdir", "--dist", "--basetemp", "--durations", "--tb"}


def _has_path_arg(args: list[str]) -> bool:
    """True when pytest arguments name a test path of their own (file, folder or node id)."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _PYTEST_VALUE_OPTS:
            skip = True
        elif not arg.startswith("-") and (ROOT / arg.split("::", 1)[0]).exists():
            return True
    return False


def task_command(task: str, extra: list[str]) -> list[str]:
    py = str(VENV_PY)
    if task == "setup":  # only make the environment (e.g. before adding an accelerator plugin in CI)
        return [py, "-m", "pip", "--disable-pip-version-check", "list"]
    if task == "demo":
        return [py, str(ROOT / "examples" / "quickstart.py"), *extra]
    if task == "test":
        # `test --platform tpu [ARGS]`: Fluxion on the TPU, reference jax on the CPU, in one
        # process (one process at a time may hold the chip); see docs/guide/platforms.md.
        platform = "cpu"
        if "--platform" in extra:
            i = extra.index("--platform")
            platform = extra[i + 1] if i + 1 < len(extra) else "cpu"
            extra = extra[:i] + extra[i + 2:]
        # `test tests/fluxion/test_x.py::test_y` runs just that; otherwise the whole tests/ tree.
        targets = [] if _has_path_arg(extra) else ["tests"]
        # The whole tree prints its 30 slowest cases: the per-commit budget is 25 minutes on 2 cores,
        # and CI's log is where the next case to move to the nightly run is found.
        durations = ["--durations=30"] if targets else []
        if platform != "cpu":
            return [py, "-m", "pytest", *targets, "-p", "no:xdist", "--platform", platform, "-q",
                    *durations, *extra]
        return [py, "-m", "pytest", *targets, "-n", "2", "--dist", "loadgroup", "-q", *durations, *extra]
    # bench, lint, docs, compat, ...: the nox sessions of the same name (they reuse this venv).
    nox = [str(VENV_BIN / "nox"), "-f", str(ROOT / "noxfile.py"), "-s", task]
    return nox + (["--", *extra] if extra else [])


def usage() -> str:
    return (f"usage: {Path(sys.argv[0]).name} {{{'|'.join(TASKS)}}} [ARGS...]\n"
            "  setup  only create/update .venv\n"
            "  demo   run examples/quickstart.py\n"
            "  test   pytest tests -n 2 --dist loadgroup -q [ARGS...]\n"
            "  bench  nox -s bench   (benchmarks/run.py)\n"
            "  bench_history  nox -s bench_history (3 interleaved rounds, appended to benchmarks/history/)\n"
            "  lint   nox -s lint    (ruff, workflow schema, zizmor)\n"
            "  docs   nox -s docs    (mkdocs build --strict)\n"
            "  core_only  nox -s core_only (install only packages/fluxion in a fresh venv, smoke test)\n"
            "  train_digits  nox -s train_digits (examples/train_digits.py: MLP + CNN on digits)\n"
            "  compat nox -s compat  (optax/haiku/rlax/flax/jax-md's own suites, real jax vs Fluxion)\n")


def reexec_with_newer_python() -> None:
    """When started by an older python3, hand over to python3.11+ if one is on PATH."""
    if sys.version_info >= MIN_PYTHON or os.environ.get("FLUXION_BOOTSTRAP_REEXEC"):
        return
    for name in ("python3.11", "python3.12", "python3.13"):
        exe = shutil.which(name)
        # A pyenv shim can exist on PATH yet fail for a version that is not selected: try it first.
        if exe and subprocess.run([exe, "-c", _VERSION_PROBE], capture_output=True).returncode == 0:
            log(f"{sys.version.split()[0]} is too old; re-running with {exe}")
            os.environ["FLUXION_BOOTSTRAP_REEXEC"] = "1"
            os.execv(exe, [exe, str(Path(__file__).resolve()), *sys.argv[1:]])
    sys.exit(f"bootstrap needs Python >= {'.'.join(map(str, MIN_PYTHON))}; "
             f"this is {sys.version.split()[0]} and no python3.11+ is on PATH")


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage(), end="")
        return 0 if argv else 2
    task, extra = argv[0], argv[1:]
    if task not in TASKS:
        print(f"unknown task {task!r}\n" + usage(), end="", file=sys.stderr)
        return 2
    reexec_with_newer_python()
    ensure_venv()
    ensure_installed()
    cmd = task_command(task, extra)
    try:
        return run(cmd, cwd=ROOT, env=child_env())
    except KeyboardInterrupt:
        return 128 + signal.SIGINT


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

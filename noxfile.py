"""Nox sessions for Fluxion: demo, tests, lint, bench, docs, compat.

Every session reuses the repository's ``.venv`` (made by ``python3.11 tools/bootstrap.py ...``) instead
of building a fresh virtualenv, so nothing is reinstalled per session: run them through the bootstrap
(``python3.11 tools/bootstrap.py lint``) or directly (``.venv/bin/nox -s lint``) once the venv exists.
Arguments after ``--`` are forwarded to the session's main command.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
VENV_BIN = ROOT / ".venv" / "bin"
PY = str(VENV_BIN / "python")

nox.options.default_venv_backend = "none"
nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True

LINT_PATHS = ["packages", "tests", "benchmarks", "examples", "tools", "noxfile.py"]
WORKFLOW = ".github/workflows/ci.yml"


def _tool(name: str) -> str:
    return str(VENV_BIN / name)


def _ensure(session: nox.Session, *tools: tuple[str, str]) -> None:
    """pip-install each (executable, requirement) into .venv when the executable is missing."""
    missing = [req for exe, req in tools if shutil.which(exe, path=str(VENV_BIN)) is None]
    if missing:
        session.run(PY, "-m", "pip", "install", "--disable-pip-version-check", *missing, external=True)


@nox.session(venv_backend="none")
def demo(session: nox.Session) -> None:
    """Run the quickstart example."""
    session.chdir(ROOT)
    session.run(PY, "examples/quickstart.py", *session.posargs, external=True)


@nox.session(venv_backend="none")
def train_digits(session: nox.Session) -> None:
    """Train an MLP and a CNN on scikit-learn's digits (fluxion_nn + fluxion_optim)."""
    session.chdir(ROOT)
    session.run(PY, "examples/train_digits.py", *session.posargs, external=True)


@nox.session(venv_backend="none")
def tests(session: nox.Session) -> None:
    """Run the whole test tree with two xdist workers."""
    session.chdir(ROOT)
    session.run(PY, "-m", "pytest", "tests", "-n", "2", "--dist", "loadgroup", "-q", *session.posargs, external=True)


@nox.session(venv_backend="none")
def compat(session: nox.Session) -> None:
    """The ecosystem's own test suites in full (nightly): real jax, then jax -> Fluxion, then mirrors.

    Runs tests/compat/run_suites.py (optax, dm-haiku, rlax, flax, jax-md at their pinned versions;
    flax's and jax-md's tests come from their sdists, downloaded once into ~/.cache/fluxion-compat)
    and fails when a library falls below its recorded figure (tests/compat/recorded.json). The
    per-commit run covers a fixed sample instead (tests/compat/test_compat_sampled.py). Arguments
    after ``--`` go to run_suites.py (``--libs optax --modes real,alias``, ``--jobs 2``, ...).
    Results (JSON + markdown) go to build/compat/.
    """
    session.chdir(ROOT)
    session.run(PY, "tests/compat/run_suites.py", "--check", *session.posargs, external=True)


@nox.session(venv_backend="none")
def lint(session: nox.Session) -> None:
    """ruff, the workflow's JSON schema, and zizmor (offline) over the workflows."""
    session.chdir(ROOT)
    _ensure(session, ("ruff", "ruff"), ("check-jsonschema", "check-jsonschema"), ("zizmor", "zizmor"))
    paths = [p for p in LINT_PATHS if (ROOT / p).exists()]
    session.run(_tool("ruff"), "check", *paths, *session.posargs, external=True)
    session.run(_tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", WORKFLOW,
                external=True)
    session.run(_tool("zizmor"), "--offline", ".github/workflows", external=True)


@nox.session(venv_backend="none")
def bench(session: nox.Session) -> None:
    """Run the benchmark suite (benchmarks/run.py); its results go under benchmarks/results/.

    Installs the benchmark-only backends first (the ``bench`` extra of packages/fluxion: numba
    and torch) when one is missing. Arguments after ``--`` go to run.py (``--quick``,
    ``--threads single``, ``--gpu``, ...); the results are JSON, markdown and PNG plots.
    """
    session.chdir(ROOT)
    import subprocess

    probe = ("import importlib.util as u, sys; "
             "sys.exit(any(u.find_spec(m) is None for m in ('numba', 'torch')))")
    if subprocess.run([PY, "-c", probe], check=False).returncode != 0:
        # Keep what the test environment pinned (jax/jaxlib 0.10.2 as references, numpy, ...):
        # the installed versions of those become constraints of this install.
        import tempfile

        keep = ("jax", "jaxlib", "numpy", "ml_dtypes", "scipy", "opt_einsum")
        freeze = subprocess.run([PY, "-m", "pip", "freeze", "--disable-pip-version-check"],
                                capture_output=True, text=True, check=True).stdout.splitlines()
        pins = [ln for ln in freeze if ln.split("==")[0].lower().replace("-", "_") in keep]
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("\n".join(pins) + "\n")
        session.run(PY, "-m", "pip", "install", "--disable-pip-version-check", "-c", f.name, "-e",
                    f"{ROOT / 'packages' / 'fluxion'}[bench]", external=True)
    session.run(PY, "benchmarks/run.py", *session.posargs, external=True)


@nox.session(venv_backend="none")
def bench_history(session: nox.Session) -> None:
    """The nightly benchmark run: the suite in interleaved rounds, kept in the history.

    Runs benchmarks/run.py with 3 interleaved rounds (so every ratio gets a paired t-interval),
    appends the run's ratios and intervals to benchmarks/history/history.jsonl and redraws
    benchmarks/history/ratios_vs_jax.svg (and .png with matplotlib), one panel per case over
    the commits. Arguments after ``--`` go to run.py (``--quick``, ``--workloads ...``).
    Uses only the core backends (numpy, fluxion, jax) unless ``--backends`` is given.
    """
    session.chdir(ROOT)
    args = list(session.posargs)
    if not any(a == "--rounds" or a.startswith("--rounds=") for a in args):
        args += ["--rounds", "3"]
    if not any(a == "--backends" or a.startswith("--backends=") for a in args):
        args += ["--backends", "numpy,fluxion,jax"]
    session.run(PY, "benchmarks/run.py", "--history", "benchmarks/history/history.jsonl", *args,
                external=True)


@nox.session(venv_backend="none")
def docs(session: nox.Session) -> None:
    """Build the documentation with mkdocs into build/docs (warnings are errors)."""
    session.chdir(ROOT)
    # The site needs only mkdocs itself: the API reference comes from tools/mkdocs_hooks.py (no plugin).
    _ensure(session, ("mkdocs", "mkdocs==1.6.1"), ("pygmentize", "pygments"))  # Pygments: build-time highlighting
    session.run(_tool("mkdocs"), "build", "--strict", "-d", "build/docs", *session.posargs, external=True)


@nox.session(venv_backend="none")
def core_only(session: nox.Session) -> None:
    """Install only packages/fluxion into a fresh virtualenv and smoke-test it there.

    Guards the promise that the core needs nothing but numpy, jaxlib, ml_dtypes and opt_einsum
    (no ecosystem package, no test dependency), and that ``fluxion.scipy`` then names the package
    to install.
    """
    import tempfile

    session.chdir(ROOT)
    with tempfile.TemporaryDirectory(prefix="fluxion-core-only-") as tmp:
        venv = Path(tmp) / "venv"
        session.run(PY, "-m", "venv", str(venv), external=True)
        py = str(venv / "bin" / "python")
        # Build from a copy: setuptools writes a build/ folder next to the sources it builds.
        src = Path(tmp) / "fluxion-src"
        shutil.copytree(ROOT / "packages" / "fluxion", src,
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        session.run(py, "-m", "pip", "install", "--disable-pip-version-check", "-q", str(src),
                    external=True)
        # Run from the temporary folder so the checkout's sources cannot shadow the installed copy.
        session.chdir(tmp)
        session.run(py, str(ROOT / "tools" / "core_only_smoke.py"), external=True)

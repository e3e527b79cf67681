"""The examples' command line: ``--help`` everywhere (and it runs nothing), ``--quick`` everywhere,
``--out DIR`` created before any work, never the current directory by default; readable plot
ticks. The full ``--quick`` runs are nightly (they train agents and run MD for minutes)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SCRIPTS = sorted(p.stem for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))
# The first step of real work in each example that writes files: replaced by a sentinel, so a test
# sees what exists when the work would start.
FIRST_WORK = {"train_digits": "load_data", "md_lj_melt": "fcc_lattice",
              "rl_cartpole_ppo": "train", "rl_cartpole_dqn": "train",
              "train_digits_multiprocess": "load_data"}


class _Started(Exception):
    pass


def _load(name: str):
    sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", SCRIPTS)
def test_help_runs_nothing(name, monkeypatch, tmp_path):
    module = _load(name)
    monkeypatch.chdir(tmp_path)
    if name in FIRST_WORK:
        monkeypatch.setattr(module, FIRST_WORK[name], lambda *a, **k: (_ for _ in ()).throw(_Started()))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_info:
        module.main(["--help"])
    assert exit_info.value.code == 0
    text = out.getvalue()
    assert text.startswith("usage:") and "--quick" in text
    if name in FIRST_WORK or name == "quickstart":  # quickstart writes no file
        assert ("--out DIR" in text) == (name in FIRST_WORK)
    assert "===" not in text and not list(tmp_path.iterdir())


@pytest.mark.parametrize("name", sorted(FIRST_WORK))
def test_out_is_created_before_any_work(name, monkeypatch, tmp_path):
    module = _load(name)
    seen = {}
    out = tmp_path / "a" / "missing" / "folder"

    def first_work(*args, **kwargs):
        seen["exists"] = out.is_dir()
        raise _Started

    monkeypatch.setattr(module, FIRST_WORK[name], first_work)
    with pytest.raises(_Started):
        module.main(["--quick", "--out", str(out)])
    assert seen == {"exists": True}


@pytest.mark.parametrize("name", sorted(FIRST_WORK))
def test_default_out_is_not_the_current_directory(name, monkeypatch, tmp_path):
    module = _load(name)
    cli = sys.modules["_cli"]
    cwd, default = tmp_path / "cwd", tmp_path / "default"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(cli, "default_out", lambda n: default / n)
    monkeypatch.setattr(module, FIRST_WORK[name], lambda *a, **k: (_ for _ in ()).throw(_Started()))
    with pytest.raises(_Started):
        module.main(["--quick"])
    assert (default / name).is_dir() and not list(cwd.iterdir())
    assert cli.default_out.__name__ == "<lambda>"
    monkeypatch.undo()
    assert sys.modules["_cli"].default_out(name) == ROOT / "build" / "examples" / name


def test_step_tick_labels_are_short():
    common = _load("_rl_common")
    labels = [common.step_label(v) for v in (0, 500, 125_000, 150_000, 1_200_000)]
    assert labels == ["0", "500", "125k", "150k", "1.2M"]


@pytest.mark.slow
@pytest.mark.parametrize("name", SCRIPTS)
def test_quick_run_writes_only_under_out(name, tmp_path):
    out, cwd = tmp_path / "out" / "new", tmp_path / "cwd"
    cwd.mkdir()
    args = [sys.executable, str(EXAMPLES / f"{name}.py"), "--quick"]
    if name in FIRST_WORK:
        args += ["--out", str(out)]
    r = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert not list(cwd.iterdir())
    if name in FIRST_WORK:
        assert any(p.suffix == ".png" for p in out.iterdir())


def test_quickstart_restarts_once_with_glibc_huge_pages(monkeypatch):
    """The demo replaces itself by the same command with ``glibc.malloc.hugetlb=1`` appended to
    ``GLIBC_TUNABLES`` when transparent huge pages are in madvise mode, and not when the tunable
    is already set (the restarted process, or a user's choice) or the mode is another."""
    module = _load("quickstart")
    calls = []
    monkeypatch.setattr(module.os, "execve", lambda *a: calls.append(a))
    monkeypatch.setattr(module.sys, "platform", "linux")
    monkeypatch.setattr(module.sys, "orig_argv", ["python", "examples/quickstart.py", "--quick"])
    monkeypatch.setattr("platform.libc_ver", lambda *a, **k: ("glibc", "2.36"))
    mode = {"text": "always [madvise] never\n"}
    monkeypatch.setattr(module.Path, "read_text", lambda self, *a, **k: mode["text"])
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2")
    module.restart_with_huge_pages()
    (exe, argv, env), = calls
    assert exe == sys.executable and argv == [sys.executable, "examples/quickstart.py", "--quick"]
    assert env["GLIBC_TUNABLES"] == "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=0")
    module.restart_with_huge_pages()
    monkeypatch.delenv("GLIBC_TUNABLES")
    mode["text"] = "[always] madvise never\n"
    module.restart_with_huge_pages()
    assert len(calls) == 1

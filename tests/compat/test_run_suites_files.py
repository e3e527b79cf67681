"""run_suites.py's ``--files``: a pattern that names no test file of a selected library skips that
library with one line (it used to end the whole run with a TypeError); the others run. Unit level:
the suites' folders are small fakes and ``run_one`` records its calls instead of starting pytest."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_suites  # noqa: E402


@pytest.fixture
def fake_suites(tmp_path, monkeypatch):
    """optax with alias_test.py and transform_test.py, rlax with losses_test.py; run_one writes one
    passing test per file it is given and reads the run back as the real one does."""
    roots = {}
    for lib, names in (("optax", ("alias_test.py", "transform_test.py")), ("rlax", ("losses_test.py",))):
        d = tmp_path / "suites" / lib / "tests" / lib
        d.mkdir(parents=True)
        for n in names + ("helpers.py",):
            (d / n).write_text("")
        roots[lib] = d.parent.parent
    calls = []

    def run_one(suite, mode, results, *, only, file_patterns=None, **_):
        files = run_suites.selected_files(suite, roots[suite.lib], mode, only, file_patterns)
        calls.append((suite.lib, mode, files))
        if not files:
            return None
        with open(results / f"{suite.lib}-{mode}.jsonl", "w") as f:
            for name in files:
                f.write(json.dumps({"kind": "test", "nodeid": f"{name}::test_a", "outcome": "passed",
                                    "cause": None, "duration": 0.1}) + "\n")
        (results / f"{suite.lib}-{mode}.meta.json").write_text(json.dumps({"wall_s": 1.0, "rc": 0}))
        return run_suites.load_run(suite, mode, results)

    monkeypatch.setattr(run_suites, "check_version", lambda suite: None)
    monkeypatch.setattr(run_suites, "suite_root", lambda suite: roots[suite.lib])
    monkeypatch.setattr(run_suites, "run_one", run_one)
    monkeypatch.setattr(run_suites, "load_baseline", lambda lib: {"passing": {
        f"tests/{lib}/{n}::test_a": 0.1 for n in ("alias_test.py", "transform_test.py", "losses_test.py")}})
    return roots, calls, tmp_path / "results"


def _main(results, files, libs="optax,rlax"):
    return run_suites.main(["--libs", libs, "--modes", "alias", "--files", files, "--jobs", "1",
                            "--results", str(results)])


def test_selected_files_by_pattern(fake_suites):
    roots, _, _ = fake_suites
    optax = run_suites.SUITES["optax"]
    assert run_suites.selected_files(optax, roots["optax"], "alias", None, ["*alias_test.py"]) == [
        "tests/optax/alias_test.py"]
    assert run_suites.selected_files(optax, roots["optax"], "alias", None, ["alias_test"]) == []
    assert len(run_suites.selected_files(optax, roots["optax"], "alias")) == 2  # helpers.py is no test
    assert run_suites.selected_files(optax, roots["optax"], "alias", ["tests/optax/transform_test.py::t"],
                                     ["*_test.py"]) == ["tests/optax/transform_test.py"]


def test_a_library_without_a_matching_file_is_skipped_in_one_line(fake_suites, capsys):
    _, calls, results = fake_suites
    assert _main(results, "*alias_test.py") == 0
    assert calls == [("optax", "alias", ["tests/optax/alias_test.py"])]  # rlax never runs
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err == ["rlax: skipped: no test file matches --files *alias_test.py"]
    summary = json.loads((results / "summary.json").read_text())
    assert summary["libs"]["rlax"]["skipped"] == "no test file matches --files *alias_test.py"
    assert summary["libs"]["optax"]["modes"]["alias"]["passing"] == 1
    assert "| rlax | skipped: no test file matches" in (results / "summary.md").read_text()


def test_a_pattern_matching_no_file_at_all_skips_every_library(fake_suites, capsys):
    _, calls, results = fake_suites
    assert _main(results, "alias_test") == 0  # the reproducer: fnmatch needs the whole path
    assert calls == []
    err = capsys.readouterr().err
    assert "optax: skipped" in err and "rlax: skipped" in err


def test_a_run_that_reads_back_nothing_does_not_end_the_others(fake_suites, capsys, monkeypatch):
    _, calls, results = fake_suites
    monkeypatch.setattr(run_suites, "run_one", lambda suite, mode, results, **_: None)
    assert _main(results, "*_test.py") == 0
    out = capsys.readouterr().out
    assert "[compat] optax alias: no test ran" in out and "[compat] rlax alias: no test ran" in out

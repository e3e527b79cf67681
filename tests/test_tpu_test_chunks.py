"""tools/tpu_test_chunks.py: the id list for a time-boxed chip run (runs on the CPU)."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "tpu_test_chunks.py"


def _tool():
    spec = importlib.util.spec_from_file_location("tpu_test_chunks_under_test", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_order_ids_first_then_round_robin_without_done_and_excluded():
    t = _tool()
    ids = ["t/a.py::x1", "t/a.py::x2", "t/a.py::x3", "t/b.py::y1", "t/sub/c.py::z1",
           "t/sub/c.py::z2", "t/d.py::f64", "t/d.py::w"]
    got = t.order_ids(ids, first=["t/sub"], done={"t/a.py::x2"}, exclude=r"::f64$")
    assert got == ["t/sub/c.py::z1", "t/sub/c.py::z2",          # the folder asked first, whole
                   "t/a.py::x1", "t/b.py::y1", "t/d.py::w",     # round 1: one id per file
                   "t/a.py::x3"]                                 # round 2
    assert sorted(got) == sorted(set(ids) - {"t/a.py::x2", "t/d.py::f64"})
    # a file path as --first, and the plain order without options
    assert t.order_ids(ids[:4], first=["t/b.py"]) == ["t/b.py::y1", "t/a.py::x1", "t/a.py::x2",
                                                       "t/a.py::x3"]
    assert t.order_ids(["t/ab.py::1", "t/a.py::1"], first=["t/a"]) == ["t/ab.py::1", "t/a.py::1"]
    # float64 programs (slow TPU compiles) after every other id, round-robin among themselves
    assert t.order_ids(ids, first=["t/sub"], last=t.SLOW_ON_TPU) == [
        "t/sub/c.py::z1", "t/sub/c.py::z2", "t/a.py::x1", "t/b.py::y1", "t/d.py::w",
        "t/a.py::x2", "t/a.py::x3", "t/d.py::f64"]
    # by_file: whole files in collection order (each pytest start then collects few files)
    assert t.order_ids(["t/b.py::y1", "t/a.py::x1", "t/b.py::y2", "t/d.py::f64", "t/a.py::x2"],
                       last=t.SLOW_ON_TPU, by_file=True) == [
        "t/b.py::y1", "t/b.py::y2", "t/a.py::x1", "t/a.py::x2", "t/d.py::f64"]


def test_logged_ids_reads_every_outcome_and_skips_notes(tmp_path):
    t = _tool()
    log = tmp_path / "progress.txt"
    log.write_text("# pytest from index 0, 530 s left\n"
                   "0\tcall\tpassed\t0.10\tt/a.py::x1\n"
                   "1\tsetup\tskipped\t0.00\tt/a.py::x[2-3]\n"
                   "2\tcall\tfailed\t0.40\tt/b.py::y1\n"
                   "# pytest ended with 1: index 3 timed out after 45 s (watchdog)\n")
    assert t._logged_ids(str(log)) == {"t/a.py::x1", "t/a.py::x[2-3]", "t/b.py::y1"}


def test_ids_subcommand_collects_orders_and_writes(tmp_path):
    tests = tmp_path / "suite"
    tests.mkdir()
    (tests / "test_one.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    (tests / "test_two.py").write_text("def test_c():\n    pass\n")
    (tests / "test_three.py").write_text("def test_x64():\n    pass\n\ndef test_d():\n    pass\n")
    done = tmp_path / "done-1.txt"
    done.write_text("0\tcall\tpassed\t0.01\tsuite/test_two.py::test_c\n")
    (tmp_path / "done-2.txt").write_text("0\tcall\tpassed\t0.01\tsuite/test_three.py::test_d\n")
    out = tmp_path / "ids.txt"
    res = subprocess.run([sys.executable, str(TOOL), "ids", "--out", str(out), "--done", str(tmp_path / "done-*.txt"),
                          "--", "suite"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120, env=dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert out.read_text().splitlines() == ["suite/test_one.py::test_a", "suite/test_one.py::test_b",
                                            "suite/test_three.py::test_x64"]
    assert "3 of 5 collected ids" in res.stdout


def test_narrowed_gives_pytest_only_the_files_of_the_next_ids(tmp_path):
    ids = tmp_path / "ids.txt"
    ids.write_text("tests/test_tpu_test_chunks.py::a\ntests/conftest.py::b\n"
                   "tests/test_tpu_test_chunks.py::c\ntests/fluxion/conftest.py::d\n")
    import argparse
    tc = _tool()
    args = ["tests", "--platform", "tpu", "-p", "no:cacheprovider"]
    a = argparse.Namespace(ids=str(ids), narrow=3, pytest_args=args)
    assert tc._narrowed(a, 0) == ["--platform", "tpu", "-p", "no:cacheprovider",
                                  "tests/test_tpu_test_chunks.py", "tests/conftest.py"]
    assert tc._narrowed(a, 3) == ["--platform", "tpu", "-p", "no:cacheprovider",
                                  "tests/fluxion/conftest.py"]
    assert tc._narrowed(a, 9) == args  # past the end: the paths as given
    a.narrow = 0
    assert tc._narrowed(a, 0) == args


def test_a_budget_under_the_watchdog_still_runs_tests(tmp_path):
    # session 13's chip call gave 55 s to the affected tests with a 60 s watchdog: the driver
    # started nothing. Now the watchdog shrinks to half of what is left.
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_one.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    log, fails = tmp_path / "progress.txt", tmp_path / "failures.txt"
    res = subprocess.run([sys.executable, str(TOOL), "--budget", "45", "--timeout", "60",
                          "--log", str(log), "--failures", str(fails), "--", "suite",
                          "-p", "no:cacheprovider"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1"))
    assert res.returncode == 0, res.stdout + res.stderr
    rows = [line.split("\t") for line in log.read_text().splitlines() if not line.startswith("#")]
    assert [(r[2], r[4]) for r in rows] == [("passed", "suite/test_one.py::test_a"),
                                           ("passed", "suite/test_one.py::test_b")]


def test_narrowed_windows_continue_until_the_list_ends(tmp_path):
    # session 14's first chip call: with --narrow 300 the driver stopped when pytest finished
    # the first window's files, with half of its budget left. Each window now runs exactly its
    # ids, and a window that ran to its end hands over to the next.
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_one.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    (suite / "test_two.py").write_text("def test_c():\n    pass\n")
    ids = tmp_path / "ids.txt"
    order = ["suite/test_one.py::test_b", "suite/test_two.py::test_c", "suite/test_one.py::test_a"]
    ids.write_text("".join(i + "\n" for i in order))
    log, fails = tmp_path / "progress.txt", tmp_path / "failures.txt"
    res = subprocess.run([sys.executable, str(TOOL), "--budget", "100", "--ids", str(ids),
                          "--narrow", "2", "--log", str(log), "--failures", str(fails), "--",
                          "suite", "-p", "no:cacheprovider"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=150,
                         env=dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1"))
    assert res.returncode == 0, res.stdout + res.stderr
    rows = [line.split("\t") for line in log.read_text().splitlines() if not line.startswith("#")]
    assert [(r[0], r[2], r[4]) for r in rows] == [(str(i), "passed", n) for i, n in enumerate(order)]
    starts = [line for line in log.read_text().splitlines() if line.startswith("# pytest from")]
    assert [s.split()[4].rstrip(",") for s in starts] == ["0", "2"]

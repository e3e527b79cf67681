"""Run a long test selection on a borrowed TPU in time-boxed chunks that survive hangs.

On a TPU one process at a time may hold the chip, so the suite runs in one pytest process; a
test that hangs inside the runtime (SIGALRM cannot interrupt C++) would stop the whole run. This
driver runs pytest with itself as a plugin: tests run in the order of an id list (``--ids``,
one node id a line; default: pytest's own order), a per-test watchdog
(``faulthandler.dump_traceback_later(exit=True)``) ends a hung process, and the driver starts
pytest again after the hung test until the time budget is spent. Each test's outcome is appended
to ``--log`` (``index<TAB>phase<TAB>outcome<TAB>seconds<TAB>node id``; ``#`` lines note restarts
and hangs), failures' reports to ``--failures``: both survive a kill.

Usage (on the TPU machine, the project's ``packages/*/src`` on ``PYTHONPATH``)::

    python3 tools/tpu_test_chunks.py --budget 540 --start 0 --ids ids.txt \\
        --log $OUT/progress.txt --failures $OUT/failures.txt -- tests/fluxion --platform tpu

``--start N`` continues a list where an earlier call stopped (the log's last index + 1).

The id list for a session with less device time than the suite needs (the whole of tests/fluxion
is ~45 device-minutes there) comes from the ``ids`` subcommand, on any machine: the files given
with ``--first`` in full, in that order, then one test of every other file per round (so a
budget that ends early has touched every file), leaving out the ids that earlier progress logs
(``--done``) record and those matching ``--exclude`` (e.g. float64 compiles that outlast the
watchdog)::

    python3 tools/tpu_test_chunks.py ids --out ids.txt --done progress.txt \
        --first tests/fluxion/callbacks --exclude 'test_special.py::.*(f64|x64)' -- tests/fluxion
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import subprocess
import sys
import time

_STATE: dict = {}
# Seconds a driver needs left to start pytest once more (collection plus at least one test).
_MIN_START_S = 30.0
# The watchdog's traceback goes to a copy of stderr taken when pytest imports this plugin, before
# its fd-level capture replaces fd 2 (which swallowed the dump of a test that timed out).
_STDERR_COPY = os.dup(2)
_ERR = None


def pytest_configure(config):  # noqa: ANN001, ANN201 - pytest hook
    global _ERR
    if _ERR is None:
        _ERR = os.fdopen(_STDERR_COPY, "w", buffering=1)


# ------------------------------------------------------------------ the pytest plugin side

def pytest_collection_modifyitems(config, items):  # noqa: ANN001, ANN201 - pytest hook
    sel = os.environ.get("TPU_CHUNK_IDS")
    start = int(os.environ.get("TPU_CHUNK_START", "0"))
    if sel:
        with open(sel) as f:
            ids = [line.rstrip("\n") for line in f if line.strip()]
    else:
        ids = [it.nodeid for it in items]
    # a narrowed start runs exactly its window (ids of its files past the window wait for theirs)
    end = int(os.environ.get("TPU_CHUNK_END") or len(ids))
    order = {nid: i for i, nid in enumerate(ids) if start <= i < end}
    keep = sorted((it for it in items if it.nodeid in order), key=lambda it: order[it.nodeid])
    dropped = [it for it in items if it.nodeid not in order]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep
    _STATE["index"] = {it.nodeid: order[it.nodeid] for it in keep}


def pytest_sessionstart(session):  # noqa: ANN001, ANN201 - pytest hook
    _STATE["session"], _STATE["t0"] = session, time.monotonic()
    _STATE["log"] = open(os.environ["TPU_CHUNK_LOG"], "a", buffering=1)
    _STATE["fail"] = open(os.environ["TPU_CHUNK_FAILURES"], "a", buffering=1)


def pytest_sessionfinish(session, exitstatus):  # noqa: ANN001, ANN201 - pytest hook
    _STATE["log"].write(f"# finished (pytest exit status {int(exitstatus)})\n")


def pytest_runtest_setup(item):  # noqa: ANN001, ANN201 - pytest hook
    import faulthandler
    # the real stderr (pytest's capture may have replaced sys.stderr by then)
    faulthandler.dump_traceback_later(float(os.environ.get("TPU_CHUNK_TIMEOUT", "60")),
                                      exit=True, file=_ERR or sys.__stderr__)


def pytest_runtest_teardown(item, nextitem):  # noqa: ANN001, ANN201 - pytest hook
    import faulthandler
    faulthandler.cancel_dump_traceback_later()


def pytest_runtest_logreport(report):  # noqa: ANN001, ANN201 - pytest hook
    idx = _STATE.get("index", {}).get(report.nodeid, -1)
    if report.when == "call" or report.outcome != "passed":
        _STATE["log"].write(f"{idx}\t{report.when}\t{report.outcome}\t{report.duration:.2f}\t"
                            f"{report.nodeid}\n")
    if report.outcome == "failed":
        text = str(report.longrepr)
        if len(text) > 3000:
            text = text[:1000] + "\n...\n" + text[-2000:]
        _STATE["fail"].write(f"=== {report.nodeid} [{report.when}]\n{text}\n")


def pytest_runtest_logfinish(nodeid, location):  # noqa: ANN001, ANN201 - pytest hook
    budget = float(os.environ.get("TPU_CHUNK_BUDGET", "0"))
    if budget and time.monotonic() - _STATE["t0"] > budget:
        _STATE["session"].shouldstop = f"time budget of {budget:.0f} s spent"
        _STATE["log"].write(f"# stopped after index {_STATE['index'].get(nodeid)}\n")


# ------------------------------------------------------------------ the driver

def _last_index(log: str) -> int:
    last = -1
    with open(log) as f:
        for line in f:
            if line[:1] != "#" and line.strip():
                last = max(last, int(line.split("\t", 1)[0]))
    return last


def _count_ids(path: str) -> int:
    with open(path) as f:
        return sum(1 for line in f if line.strip())


def _narrowed(a: argparse.Namespace, start: int) -> list[str]:
    """``a.pytest_args`` with its paths replaced by the files of ids ``start .. start+narrow``."""
    if not (a.ids and a.narrow):
        return list(a.pytest_args)
    with open(a.ids) as f:
        ids = [line.rstrip("\n") for line in f if line.strip()]
    files = list(dict.fromkeys(i.split("::", 1)[0] for i in ids[start:start + a.narrow]))
    opts = [x for x in a.pytest_args if x.startswith("-") or not os.path.exists(x.split("::")[0])]
    return opts + files if files else list(a.pytest_args)


# Ids of float64 programs: the TPU emulates float64, and XLA's TPU compile of such a program
# can outlast the per-test watchdog (each overrun also costs a pytest restart), so they go last.
SLOW_ON_TPU = r"x64|float64|f64|complex128"


def _round_robin(ids: list[str]) -> list[str]:
    by_file: dict[str, list[str]] = {}
    for i in ids:
        by_file.setdefault(i.split("::", 1)[0], []).append(i)
    out, queues = [], [list(reversed(q)) for q in by_file.values()]
    while queues:
        out.extend(q.pop() for q in queues)
        queues = [q for q in queues if q]
    return out


def order_ids(ids: list[str], first: list[str] = (), done: set[str] = frozenset(),
              exclude: str = "", last: str = "", by_file: bool = False) -> list[str]:
    """The order to run ``ids`` in on a time budget: every id under a ``first`` prefix (a file or
    folder path, in the order given), then round-robin over the other files (one id of each file
    per round, files in collection order), then, round-robin too, the ids the ``last`` regular
    expression matches; without the ``done`` ids and those ``exclude`` (a regular expression)
    matches. ``by_file`` keeps collection order instead of the rounds: a run that is to cover
    the whole list over several calls then collects each file once (with ``--narrow``), where the
    rounds touch every file early but make each pytest start collect hundreds of files.

    Example:
        >>> order_ids(["a.py::1", "a.py::2", "b.py::1", "c.py::1", "c.py::2"], first=["c.py"])
        ['c.py::1', 'c.py::2', 'a.py::1', 'b.py::1', 'a.py::2']
        >>> order_ids(["a.py::x64", "a.py::2", "b.py::1"], last="x64")
        ['a.py::2', 'b.py::1', 'a.py::x64']
        >>> order_ids(["a.py::1", "b.py::1", "a.py::2"], by_file=True)
        ['a.py::1', 'a.py::2', 'b.py::1']
    """
    rx = re.compile(exclude) if exclude else None
    todo = [i for i in ids if i not in done and not (rx and rx.search(i))]
    head = [i for pre in first for i in todo
            if i.split("::", 1)[0] == pre or i.startswith(pre.rstrip("/") + "/")]
    taken = set(head)
    lx = re.compile(last) if last else None
    tail = [i for i in todo if i not in taken and lx and lx.search(i)]
    taken.update(tail)
    spread = _by_file if by_file else _round_robin
    return head + spread([i for i in todo if i not in taken]) + spread(tail)


def _by_file(ids: list[str]) -> list[str]:
    """``ids`` grouped by file, files in order of first appearance, ids in their order."""
    files: dict[str, list[str]] = {}
    for i in ids:
        files.setdefault(i.split("::", 1)[0], []).append(i)
    return [i for group in files.values() for i in group]


def _logged_ids(log: str) -> set[str]:
    """The node ids a progress log records (any outcome)."""
    with open(log) as f:
        return {line.rstrip("\n").split("\t")[4] for line in f
                if line[:1] != "#" and line.count("\t") >= 4}


def ids_main(argv: list[str]) -> int:
    """``ids``: collect with pytest, order with :func:`order_ids`, write one id a line."""
    ap = argparse.ArgumentParser(prog="tpu_test_chunks.py ids",
                                 description="write the id list for a time-boxed chip run")
    ap.add_argument("--out", required=True, help="file to write the ordered ids to")
    ap.add_argument("--first", action="append", default=[], help="file/folder to run first")
    ap.add_argument("--done", action="append", default=[],
                    help="progress log of earlier runs (a glob pattern may name several)")
    ap.add_argument("--exclude", default="", help="regular expression of ids to leave out")
    ap.add_argument("--last", default=SLOW_ON_TPU,
                    help=f"regular expression of ids to run after all others (default: {SLOW_ON_TPU!r}, "
                    "float64 programs, slow to compile for a TPU)")
    ap.add_argument("--by-file", action="store_true",
                    help="whole files in collection order instead of one id of each file per round")
    ap.add_argument("pytest_args", nargs="*")
    a = ap.parse_args(argv)
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",  # noqa: S603
                          "-p", "no:cacheprovider", *a.pytest_args],
                         capture_output=True, text=True)
    ids = [line.strip() for line in out.stdout.splitlines() if "::" in line]
    if not ids:
        sys.stderr.write(out.stdout[-2000:] + out.stderr[-2000:])
        return 1
    logs = [p for pat in a.done for p in (sorted(glob.glob(pat)) or [pat])]
    done = set().union(*(_logged_ids(p) for p in logs)) if logs else set()
    ordered = order_ids(ids, a.first, done, a.exclude, a.last, a.by_file)
    with open(a.out, "w") as f:
        f.write("".join(i + "\n" for i in ordered))
    print(f"{len(ordered)} of {len(ids)} collected ids written to {a.out}")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["ids"]:
        return ids_main(argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=float, required=True, help="seconds for the whole call")
    ap.add_argument("--start", type=int, default=0, help="first index of the id list to run")
    ap.add_argument("--ids", default="", help="file of node ids, in the order to run them")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per test")
    ap.add_argument("--narrow", type=int, default=0,
                    help="with --ids: give pytest only the files of the next N ids instead of the "
                         "paths in pytest_args (each start, restarts too, collects less)")
    ap.add_argument("--log", required=True)
    ap.add_argument("--failures", required=True)
    ap.add_argument("pytest_args", nargs="*")
    a = ap.parse_args(argv)
    end = time.monotonic() + a.budget
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [p for p in (os.environ.get("PYTHONPATH", ""), here) if p]),
        TPU_CHUNK_IDS=a.ids, TPU_CHUNK_LOG=a.log, TPU_CHUNK_FAILURES=a.failures,
        TPU_CHUNK_TIMEOUT=str(a.timeout))
    open(a.log, "a").close()
    start = a.start
    while True:
        left = end - time.monotonic()
        if left < _MIN_START_S:
            with open(a.log, "a") as f:
                f.write(f"# {left:.0f} s left: too little for another pytest start\n")
            break
        # a budget shorter than two watchdogs still runs: the watchdog shrinks to half of what is
        # left (a budget under --timeout used to start nothing at all), and pytest's own budget
        # (from its start, collection included) keeps at least a quarter
        watchdog = min(a.timeout, left / 2)
        end_ = start + a.narrow if a.ids and a.narrow else 0
        env.update(TPU_CHUNK_START=str(start), TPU_CHUNK_END=str(end_ or ""),
                   TPU_CHUNK_TIMEOUT=f"{watchdog:.1f}",
                   TPU_CHUNK_BUDGET=f"{max(left - watchdog - 20, left / 4):.1f}")
        with open(a.log, "a") as f:
            f.write(f"# pytest from index {start}, {left:.0f} s left\n")
        cmd = [sys.executable, "-m", "pytest", "-p", "tpu_test_chunks", "-p", "no:xdist",
               "-p", "no:cacheprovider", "-q", *_narrowed(a, start)]
        try:
            rc = subprocess.run(cmd, env=env, timeout=max(left - 5, 1)).returncode  # noqa: S603
        except subprocess.TimeoutExpired:
            break
        with open(a.log) as f:
            lines = f.read().splitlines()
        if lines and lines[-1].startswith("# finished"):  # ran to its end, or the budget stopped it
            # a narrowed window that ran to its end goes on with the next window (session 14's
            # first chip call stopped after its first 300 ids with half its budget left)
            if end_ and not (lines[-2:-1] or [""])[0].startswith("# stopped") and end_ < _count_ids(a.ids):
                start = end_
                continue
            break
        hung = max(_last_index(a.log) + 1, start)
        why = (f"crashed (signal {-rc})" if rc < 0 else
               f"timed out after {watchdog:.0f} s (watchdog)" if rc == 1 else "hung or crashed")
        with open(a.log, "a") as f:
            f.write(f"# pytest ended with {rc}: index {hung} {why}\n")
        start = hung + 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

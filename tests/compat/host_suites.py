#!/usr/bin/env python3
"""Run the ecosystem suites' Fluxion sides in chunks, within a wall-clock budget, resumably.

Made for a lent machine's host cores (tools/run_host_suites.sh prepares the machine and starts
this), usable anywhere ``run_suites.py`` is::

    python tests/compat/host_suites.py --results DIR --budget-s 540 --jobs 10 \\
        [--modes alias,mirror] [--libs optax,flax] [--tarball OUT/host-suites.tar.gz]

The recorded baseline (``baseline/<lib>.json``) stands in for the real side. Each (library, mode)'s
baseline-passing ids are put in a fixed order, cheap ones first (by their baseline duration, in
buckets; by a hash of the id within a bucket, so each bucket spreads over the suite's files), and
cut into chunks of about ``--chunk-s`` baseline seconds. Each chunk is one ``run_suites.run_one``
call (its own pytest process, ``FLUXION_COMPAT_ONLY`` = the chunk's ids, crash resume) with its own
folder under ``DIR/chunks``. The pool takes the first chunk of every (library, mode), then the
second of each, ..., so a run cut by its budget has covered the cheap part of every suite.

Every ``--snapshot-s`` seconds and at the end, the chunks' events are merged into
``DIR/<lib>-<mode>.jsonl`` (+ ``.meta.json``), ``run_suites.py --from-results`` writes
``summary.json`` / ``summary.md`` from them, and ``DIR`` is packed into ``--tarball`` (gzip), so a
kill leaves the last snapshot. A later run over a results folder that holds an earlier one's chunks
(unpack the tarball into it) runs only the ids those lack: a test that the budget cut short (not a
result) is run again, every other recorded outcome stays.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import contextlib
import hashlib
import io
import json
import os
import re
import sys
import tarfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run_suites  # noqa: E402

# run_one's record for the test in flight when a chunk's process hit its time limit: the budget
# cut it short, so it is not a result (a later run runs it again).
BUDGET_CUT = "Crash: the whole run hit its time limit"
# duration buckets (baseline seconds): every id of a bucket runs before any of the next
BUCKETS = (0.05, 0.2, 1.0, 5.0, 30.0)


def _bucket(duration: float | None) -> int:
    d = duration or 0.0
    return next((i for i, b in enumerate(BUCKETS) if d <= b), len(BUCKETS))


def ordered_ids(suite: run_suites.Suite, mode: str, base_pass: dict[str, float | None]) -> list[str]:
    """The baseline-passing ids that ``mode`` runs, cheap buckets first, hash order within one."""
    ids = [n for n in base_pass if run_suites.in_mode(suite, mode, n)]
    return sorted(ids, key=lambda n: (_bucket(base_pass[n]), hashlib.sha256(n.encode()).hexdigest()))


def chunked(ids: list[str], base_pass: dict[str, float | None], chunk_s: float,
            max_ids: int) -> list[list[str]]:
    """``ids`` cut in order into runs of about ``chunk_s`` baseline seconds and at most ``max_ids``."""
    chunks: list[list[str]] = []
    cur: list[str] = []
    spent = 0.0
    for n in ids:
        d = base_pass.get(n) or 0.0
        if cur and (spent + d > chunk_s or len(cur) >= max_ids):
            chunks.append(cur)
            cur, spent = [], 0.0
        cur.append(n)
        spent += d
    if cur:
        chunks.append(cur)
    return chunks


def runtime_ids(lib: str, mode: str, nodeid: str) -> list[str]:
    """The id(s) a baseline id can have in a run: in mirror mode a parameter part naming the
    library (haiku's doctest ids) names the mirror's package instead (``run_suites.mirror_nodeid``
    reads it back)."""
    name = run_suites._MIRROR_ID_NAMES.get(lib)
    head, sep, tail = nodeid.partition("::")
    if mode != "mirror" or not name or not sep:
        return [nodeid]
    alt = head + sep + re.sub(rf"(?<![A-Za-z0-9.]){re.escape(lib)}(?![A-Za-z0-9])", name, tail)
    return [nodeid] if alt == nodeid else [nodeid, alt]


def chunk_dirs(results: Path, lib: str, mode: str) -> list[Path]:
    return sorted(p for p in (results / "chunks" / f"{lib}-{mode}").glob("*") if p.is_dir())


def recorded_events(results: Path, lib: str, mode: str) -> list[dict]:
    """Every chunk's events for (lib, mode), without the budget-cut records."""
    events = []
    for d in chunk_dirs(results, lib, mode):
        for e in run_suites.read_events(d / f"{lib}-{mode}.jsonl"):
            if e.get("kind") == "test" and e.get("cause") == BUDGET_CUT:
                continue
            events.append(e)
    return events


def done_ids(results: Path, lib: str, mode: str) -> set[str]:
    """Baseline-named ids that have an outcome in an earlier chunk (run again: none of them)."""
    return {run_suites.mirror_nodeid(lib, e["nodeid"]) if mode == "mirror" else e["nodeid"]
            for e in recorded_events(results, lib, mode) if e.get("kind") == "test"}


def merge(results: Path, lib: str, mode: str, planned: list[str]) -> None:
    """Write ``<lib>-<mode>.jsonl`` and ``.meta.json`` (run_suites' layout) from the chunks.

    The merged run is partial unless every planned id has an outcome or was selected by a chunk
    whose process finished (an id such a chunk never saw was not collected: it counts as not run).
    """
    tag = f"{lib}-{mode}"
    events = recorded_events(results, lib, mode)
    covered = done_ids(results, lib, mode)
    wall, crashes, rc = 0.0, 0, None
    files: set[str] = set()
    for d in chunk_dirs(results, lib, mode):
        meta_path = d / f"{tag}.meta.json"
        if not meta_path.exists():
            continue
        meta = json.loads(meta_path.read_text())
        wall += meta.get("wall_s") or 0.0
        crashes += meta.get("crashes") or 0
        files.update(meta.get("files") or ())
        rc = meta.get("rc") if rc in (None, 0) else rc
        if not meta.get("partial"):
            sel = meta.get("selected") or ()
            covered.update(run_suites.mirror_nodeid(lib, n) if mode == "mirror" else n for n in sel)
    if not events:
        (results / f"{tag}.jsonl").unlink(missing_ok=True)
        return
    with open(results / f"{tag}.jsonl.part", "w") as f:
        for e in events:
            f.write(json.dumps(e) + "\n")
    os.replace(results / f"{tag}.jsonl.part", results / f"{tag}.jsonl")
    meta = {"wall_s": round(wall, 1), "rc": rc, "crashes": crashes, "files": sorted(files),
            "selected": planned, "partial": bool(set(planned) - covered)}
    (results / f"{tag}.meta.json").write_text(json.dumps(meta) + "\n")


def summarise(results: Path, libs: list[str], modes: list[str]) -> str:
    """run_suites' report over the merged event files (summary.json / summary.md in results)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        run_suites.main(["--libs", ",".join(libs), "--modes", ",".join(modes), "--results", str(results),
                         "--from-results"])
    return (results / "summary.md").read_text() if (results / "summary.md").exists() else buf.getvalue()


def pack(results: Path, tarball: Path, max_log: int = 1 << 20) -> None:
    """``results`` as a gzip tarball (written beside, then renamed): events, metas, summaries, and
    each pytest log's last ``max_log`` bytes."""
    part = tarball.with_name(tarball.name + ".part")
    with tarfile.open(part, "w:gz", compresslevel=6) as tar:
        for p in sorted(results.rglob("*")):
            if not p.is_file() or p.suffix in (".part", ".only", ".skip"):
                continue
            arc = f"{results.name}/{p.relative_to(results)}"
            if p.suffix == ".log" and p.stat().st_size > max_log:
                data = p.read_bytes()[-max_log:]
                info = tarfile.TarInfo(arc)
                info.size, info.mtime = len(data), int(p.stat().st_mtime)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.add(p, arcname=arc, recursive=False)
    os.replace(part, tarball)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", required=True, help="results folder (an earlier run's: resumed)")
    ap.add_argument("--budget-s", type=float, required=True, help="wall-clock budget, seconds")
    ap.add_argument("--jobs", type=int, default=10, help="pytest processes at once")
    ap.add_argument("--libs", default=",".join(run_suites.SUITES))
    ap.add_argument("--modes", default="alias,mirror")
    ap.add_argument("--files", default="", help="comma-separated fnmatch patterns of test files (a check)")
    ap.add_argument("--max-per-file", type=int, default=0, help="at most this many ids a file (0: all)")
    ap.add_argument("--chunk-s", type=float, default=120.0, help="baseline seconds of tests a chunk")
    ap.add_argument("--chunk-ids", type=int, default=400, help="at most this many ids a chunk")
    ap.add_argument("--timeout", type=float, default=90.0, help="per-test limit, seconds")
    ap.add_argument("--min-start-s", type=float, default=40.0,
                    help="start no chunk with less than this left of the budget")
    ap.add_argument("--reserve-s", type=float, default=15.0, help="kept at the end for the last snapshot")
    ap.add_argument("--snapshot-s", type=float, default=60.0, help="seconds between snapshots")
    ap.add_argument("--tarball", default="", help="where each snapshot's tarball goes")
    args = ap.parse_args(argv)

    t0 = time.time()
    deadline = t0 + args.budget_s - args.reserve_s
    results = Path(args.results).resolve()
    results.mkdir(parents=True, exist_ok=True)
    libs = [s for s in args.libs.split(",") if s]
    modes = [s for s in args.modes.split(",") if s]
    patterns = [s for s in args.files.split(",") if s]
    run_tag = time.strftime("r%Y%m%dT%H%M%S", time.gmtime(t0))

    def log(msg: str) -> None:
        print(f"[host {time.time() - t0:6.0f}s] {msg}", file=sys.__stdout__, flush=True)

    # plan: per (lib, mode) the ordered ids still lacking an outcome, cut into chunks
    planned: dict[tuple[str, str], list[str]] = {}
    queues: list[list[tuple[str, str, int, list[str]]]] = []
    for lib in libs:
        suite = run_suites.SUITES[lib]
        base = run_suites.load_baseline(lib)
        if base is None:
            log(f"{lib}: no recorded baseline; skipped")
            continue
        base_pass = base["passing"]
        for mode in modes:
            ids = ordered_ids(suite, mode, base_pass)
            if patterns:
                import fnmatch

                ids = [n for n in ids if any(fnmatch.fnmatch(n.split("::", 1)[0], p) for p in patterns)]
            if args.max_per_file:
                seen: dict[str, int] = {}
                kept = []
                for n in ids:
                    f = n.split("::", 1)[0]
                    if seen.get(f, 0) < args.max_per_file:
                        seen[f] = seen.get(f, 0) + 1
                        kept.append(n)
                ids = kept
            planned[(lib, mode)] = ids
            done = done_ids(results, lib, mode)
            left = [n for n in ids if n not in done]
            chunks = chunked(left, base_pass, args.chunk_s, args.chunk_ids)
            log(f"{lib} {mode}: {len(ids)} ids, {len(ids) - len(left)} done earlier, {len(chunks)} chunks")
            queues.append([(lib, mode, k, c) for k, c in enumerate(chunks)])
    order = [q[k] for k in range(max((len(q) for q in queues), default=0)) for q in queues if k < len(q)]

    lock = threading.Lock()

    def snapshot(final: bool = False) -> None:
        with lock:
            try:
                for (lib, mode), ids in planned.items():
                    merge(results, lib, mode, ids)
                summarise(results, libs, modes)
                if args.tarball:
                    pack(results, Path(args.tarball))
                if final:
                    log("final snapshot written")
            except Exception as e:  # noqa: BLE001 - a failed snapshot must not stop the run
                log(f"snapshot failed: {type(e).__name__}: {e}")

    def work(item) -> None:
        lib, mode, k, ids = item
        left = deadline - time.time()
        if left < args.min_start_s:
            return
        cdir = results / "chunks" / f"{lib}-{mode}" / f"{run_tag}-c{k:03d}"
        cdir.mkdir(parents=True, exist_ok=True)
        only = [r for n in ids for r in runtime_ids(lib, mode, n)]
        log(f"{lib} {mode} chunk {k}: {len(ids)} ids, {left:.0f}s left")
        r = run_suites.run_one(run_suites.SUITES[lib], mode, cdir, only=only, test_timeout=args.timeout,
                               process_timeout=left, log=log)
        tests = r["tests"] if r else {}
        npass = sum(t["outcome"] == "passed" for t in tests.values())
        log(f"{lib} {mode} chunk {k}: {npass}/{len(tests)} passed"
            + (" (cut by the budget)" if r and r.get("partial") else ""))

    stop = threading.Event()

    def ticker() -> None:
        while not stop.wait(args.snapshot_s):
            snapshot()

    tick = threading.Thread(target=ticker, daemon=True)
    tick.start()
    try:
        with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            for fut in [pool.submit(work, it) for it in order]:
                try:
                    fut.result()
                except Exception as e:  # noqa: BLE001 - one chunk's failure is reported, not fatal
                    log(f"chunk failed: {type(e).__name__}: {e}")
    finally:
        stop.set()
        snapshot(final=True)
    print((results / "summary.md").read_text() if (results / "summary.md").exists() else "no summary")
    return 0


if __name__ == "__main__":
    sys.exit(main())

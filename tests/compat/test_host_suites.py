"""host_suites.py's bookkeeping: the cheap-first id order, the chunks, mirror ids, and the merge of
chunk event files (budget-cut tests are not results; resume skips only real outcomes)."""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import host_suites  # noqa: E402
import run_suites  # noqa: E402

OPTAX = run_suites.SUITES["optax"]
FLAX = run_suites.SUITES["flax"]


def test_order_cheap_buckets_first_and_deterministic():
    base = {"a.py::t1": 3.0, "b.py::t2": 0.01, "c.py::t3": 0.1, "a.py::t4": None, "b.py::t5": 40.0}
    ids = host_suites.ordered_ids(OPTAX, "alias", base)
    assert ids == host_suites.ordered_ids(OPTAX, "alias", dict(reversed(base.items())))
    buckets = [host_suites._bucket(base[n]) for n in ids]
    assert buckets == sorted(buckets)
    assert set(ids[:2]) == {"b.py::t2", "a.py::t4"} and ids[-1] == "b.py::t5"


def test_order_keeps_only_the_mode_s_ids():
    base = {"tests/nnx/a_test.py::t": 0.1, "tests/linen/b_test.py::t": 0.1}
    assert host_suites.ordered_ids(FLAX, "mirror", base) == ["tests/nnx/a_test.py::t"]
    assert len(host_suites.ordered_ids(FLAX, "alias", base)) == 2


def test_chunks_by_baseline_seconds_and_count():
    base = {f"f.py::t{i}": 1.0 for i in range(10)}
    ids = list(base)
    chunks = host_suites.chunked(ids, base, chunk_s=3.0, max_ids=100)
    assert [len(c) for c in chunks] == [3, 3, 3, 1] and sum(chunks, []) == ids
    assert [len(c) for c in host_suites.chunked(ids, base, chunk_s=100.0, max_ids=4)] == [4, 4, 2]
    # one test longer than a chunk still makes a chunk of its own
    assert host_suites.chunked(["x"], {"x": 50.0}, chunk_s=1.0, max_ids=9) == [["x"]]


def test_runtime_ids_read_back_by_mirror_nodeid():
    nid = "tests/haiku/_src/integration/doctest_test.py::DoctestTest::test_doctest_haiku.nets"
    got = host_suites.runtime_ids("haiku", "mirror", nid)
    assert got[0] == nid and got[1].endswith("test_doctest_fluxion_nn.haiku.nets")
    assert {run_suites.mirror_nodeid("haiku", n) for n in got} == {nid}
    assert host_suites.runtime_ids("haiku", "alias", nid) == [nid]
    assert host_suites.runtime_ids("optax", "mirror", "a.py::T::test_x") == ["a.py::T::test_x"]


def _chunk(results: Path, lib: str, mode: str, name: str, events: list[dict], meta: dict | None):
    d = results / "chunks" / f"{lib}-{mode}" / name
    d.mkdir(parents=True)
    with open(d / f"{lib}-{mode}.jsonl", "w") as f:
        for e in events:
            f.write(json.dumps(e) + "\n")
    if meta is not None:
        (d / f"{lib}-{mode}.meta.json").write_text(json.dumps(meta))


def _test(nodeid, outcome="passed", cause=None):
    return {"kind": "test", "nodeid": nodeid, "outcome": outcome, "cause": cause, "duration": 0.1}


def test_merge_drops_budget_cut_tests_and_marks_partial(tmp_path):
    planned = ["f.py::a", "f.py::b", "f.py::c", "g.py::d"]
    _chunk(tmp_path, "optax", "alias", "r1-c000",
           [{"kind": "session", "time": 1.0}, _test("f.py::a"), _test("f.py::b", "failed", "ValueError: x"),
            _test("f.py::c", "failed", host_suites.BUDGET_CUT)],
           {"wall_s": 5.0, "rc": "process-timeout", "crashes": 1, "files": ["f.py"],
            "selected": planned[:3], "partial": True})
    assert host_suites.done_ids(tmp_path, "optax", "alias") == {"f.py::a", "f.py::b"}
    host_suites.merge(tmp_path, "optax", "alias", planned)
    meta = json.loads((tmp_path / "optax-alias.meta.json").read_text())
    assert meta["partial"] and meta["selected"] == planned
    run = run_suites.load_run(OPTAX, "alias", tmp_path)
    assert set(run["tests"]) == {"f.py::a", "f.py::b"}
    cmp = run_suites.compare(OPTAX, "alias", dict.fromkeys(planned, 0.1), run)
    assert (cmp["passing"], cmp["counted"]) == (1, 2)  # only the tests reached count


def test_merge_complete_once_every_chunk_finished(tmp_path):
    planned = ["f.py::a", "f.py::b", "g.py::d"]
    _chunk(tmp_path, "optax", "alias", "r1-c000", [_test("f.py::a"), _test("f.py::b", "failed", host_suites.BUDGET_CUT)],
           {"wall_s": 5.0, "rc": "process-timeout", "crashes": 1, "files": ["f.py"], "selected": planned[:2],
            "partial": True})
    # the resumed run: f.py::b again, and g.py::d, which the process never collected
    _chunk(tmp_path, "optax", "alias", "r2-c000", [_test("f.py::b")],
           {"wall_s": 3.0, "rc": 0, "crashes": 0, "files": ["f.py", "g.py"], "selected": planned[1:],
            "partial": False})
    host_suites.merge(tmp_path, "optax", "alias", planned)
    meta = json.loads((tmp_path / "optax-alias.meta.json").read_text())
    assert not meta["partial"] and meta["wall_s"] == 8.0
    cmp = run_suites.compare(OPTAX, "alias", dict.fromkeys(planned, 0.1), run_suites.load_run(OPTAX, "alias", tmp_path))
    assert (cmp["passing"], cmp["counted"]) == (2, 3)  # g.py::d counts, as not run


def test_merge_a_chunk_that_never_started_leaves_the_run_partial(tmp_path):
    planned = ["f.py::a", "f.py::b"]
    _chunk(tmp_path, "optax", "mirror", "r1-c000", [_test("f.py::a")], None)  # killed: no meta
    host_suites.merge(tmp_path, "optax", "mirror", planned)
    assert json.loads((tmp_path / "optax-mirror.meta.json").read_text())["partial"]


def test_pack_writes_a_tarball_without_id_lists(tmp_path):
    res = tmp_path / "host-suites"
    _chunk(res, "optax", "alias", "r1-c000", [_test("f.py::a")], None)
    (res / "chunks" / "optax-alias" / "r1-c000" / "optax-alias.only").write_text("f.py::a\n")
    (res / "chunks" / "optax-alias" / "r1-c000" / "optax-alias.log").write_text("x" * 100)
    out = tmp_path / "out.tar.gz"
    host_suites.pack(res, out, max_log=10)
    with tarfile.open(out) as tar:
        names = tar.getnames()
        log = tar.extractfile("host-suites/chunks/optax-alias/r1-c000/optax-alias.log").read()
    assert "host-suites/chunks/optax-alias/r1-c000/optax-alias.jsonl" in names
    assert not any(n.endswith(".only") for n in names) and len(log) == 10

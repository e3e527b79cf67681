"""The XLA compiles of md_lj_neighbor's setup (benchmarks/workloads/md_lj_neighbor.py at its
quick size, N = 500), pinned: on a TPU each is 50-300 ms, so an eager op that creeps back into
``space.periodic``, ``energy.lennard_jones_neighbor_list``, ``neighbor_fn.allocate`` or
``simulate.nve`` shows here. Counted by benchmarks/compile_count.py in a fresh process (every
program cold, the disk cache off), program by program."""

from __future__ import annotations

import os
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

from benchmarks import compile_count  # noqa: E402

# phase -> the programs it compiles. space: the cutoff's r_c = r_cutoff ** 2 and r_onset ** 2
# (one eager pow: computed on the host its value could differ from XLA's pow in the last bit);
# allocate: the prune (its all-pairs candidates inside it, the cut to capacity on the host);
# init: init_fn (the workload's PRNGKey(0) is made on the host). jax_md's setup compiles 7, 13
# and 3 here (and ~120 programs at import).
EXPECTED = {
    "import": [],
    "space": ["pow"],
    "allocate": ["jit_prune"],
    "init": ["jit_init_fn"],
    "first_call": ["jit_one_step"],
    "steps": [],
}


def test_md_lj_neighbor_setup_compiles_only_its_programs():
    programs = []
    rows = compile_count.run_backend("md_lj_neighbor", "fluxion", 5, "cpu", programs)
    got = {phase: [p["name"] for p in programs if p["phase"] == phase] for phase in EXPECTED}
    assert got == EXPECTED
    counts = {r["phase"]: r["compiles"] for r in rows}
    assert counts == {**{k: len(v) for k, v in EXPECTED.items()},
                      "total": sum(map(len, EXPECTED.values()))}

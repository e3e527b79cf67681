"""scipy_minimize_bfgs reports each solve's work (nit/nfev/status) beside its times, and the
worker writes a workload's ``work`` into its records: the counts equal SciPy's (and
fluxion_scipy's own result) for the same problem, and solve_per_iter is solve / nit."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.optimize

from benchmarks import worker, workloads
from benchmarks.workloads import scipy_minimize_bfgs as bfgs


def test_worker_records_carry_scipy_work(tmp_path):
    out = tmp_path / "w.jsonl"
    worker.main(["--workload", bfgs.__file__, "--backend", "numpy", "--variants", "numpy",
                 "--sizes", "[5]", "--phases", json.dumps(list(bfgs.PHASES)), "--reps", "1",
                 "--out", str(out)])
    recs = {r["phase"]: r for r in map(json.loads, out.read_text().splitlines())
            if r["kind"] == "record"}
    assert set(recs) == set(bfgs.PHASES) and all(r["status"] == "ok" for r in recs.values())
    want = scipy.optimize.minimize(lambda x: bfgs._rosen(np, x), np.zeros(5), method="BFGS",
                                   jac=bfgs._rosen_grad)
    work = recs["solve"]["work"]
    assert work == {"nit": want.nit, "nfev": want.nfev, "status": want.status}
    assert all(r["work"] == work for r in recs.values())


@pytest.mark.slow  # three BFGS compiles (~10 s on a loaded 2-core machine)
def test_fluxion_solve_per_iter_and_counts():
    import fluxion
    from fluxion_scipy.optimize import minimize

    fn = workloads.make_callable(bfgs, "fluxion", 5)
    times = fn()
    assert set(times) == set(bfgs.PHASES)
    res = fluxion.jit(lambda v: minimize(lambda y: bfgs._rosen(fluxion.numpy, y), v,
                                         method="BFGS"))(fluxion.numpy.zeros(5, np.float32))
    assert fn.work == {"nit": int(res.nit), "nfev": int(res.nfev), "status": int(res.status)}
    assert fn.work["nit"] > 0
    assert np.isclose(times["solve_per_iter"], times["solve"] / fn.work["nit"])

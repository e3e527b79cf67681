"""fluxion_scipy's minimize lowers to no more than JAX lowers the same source to (issue 28: the
solvers' first calls are XLA compiles of their loops). The module's source is run twice: as it is
(on Fluxion) and with its ``fluxion`` imports bound to ``jax``; both modules are parsed with JAX's
MLIR bindings (tests/fluxion/lax/test_loop_lowering_size.py) and compared loop by loop."""

from __future__ import annotations

import importlib.util
import os
import sys
import types

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
import fluxion_scipy.optimize._minimize as fmin

jax = pytest.importorskip("jax")

_LAX_TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "fluxion", "lax", "test_loop_lowering_size.py")
_spec = importlib.util.spec_from_file_location("_loop_lowering_size", _LAX_TESTS)
_sizes = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("_loop_lowering_size", _sizes)
_spec.loader.exec_module(_sizes)


def _on_jax() -> types.ModuleType:
    """``fluxion_scipy.optimize._minimize``'s source with its imports bound to jax."""
    with open(fmin.__file__) as f:
        src = f.read()
    for a, b in (("import fluxion.lax as lax", "import jax.lax as lax"),
                 ("import fluxion.numpy as jnp", "import jax.numpy as jnp"),
                 ("import fluxion\n", "import jax as fluxion\n")):
        assert a in src
        src = src.replace(a, b)
    mod = types.ModuleType("_minimize_on_jax")
    exec(compile(src, fmin.__file__, "exec"), mod.__dict__)
    return mod


def _rosen(np_):
    def f(x):
        return np_.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    return f


_X0 = np.zeros(4, np.float32)
_LO, _HI = np.full(4, -0.5, np.float32), np.full(4, 0.8, np.float32)


@pytest.mark.slow  # traces and lowers each solver twice (jax's side alone takes 1-2 s of CPU)
@pytest.mark.parametrize("kw", [
    dict(method="BFGS"),
    dict(method="l-bfgs-experimental-do-not-rely-on-this"),
    dict(method="L-BFGS-B", bounds=(_LO, _HI)),
], ids=["bfgs", "lbfgs", "lbfgsb"])
def test_minimize_loops_no_larger_than_jax(kw):
    jmin = _on_jax()
    lf = fluxion.jit(lambda x: fmin.minimize(_rosen(fnp), x, **kw).x).lower(_X0)
    lj = jax.jit(lambda x: jmin.minimize(_rosen(jax.numpy), x, **kw).x).lower(_X0)
    sf, sj = _sizes.module_stats(lf.as_text()), _sizes.module_stats(lj.as_text())
    # as many loops; each (matched by size: JAX outlines nested jits after main) carries at most
    # JAX's operands; no extra parameters; no more ops once JAX's calls are inlined
    assert len(sf["whiles"]) == len(sj["whiles"])
    assert all(a <= b for a, b in zip(sorted(sf["whiles"]), sorted(sj["whiles"]))), (sf, sj)
    assert sf["params"] == sj["params"] == 1
    assert sf["ops"] <= sj["ops"]
    assert sum(sf["consts"].values()) <= sum(sj["consts"].values())


@pytest.mark.slow  # two XLA compiles of a BFGS solve (~1-2 s of CPU each)
def test_bfgs_compiled_module_no_larger_than_jax_scipy():
    """Issue 32: the first call of a jitted BFGS solve is mostly XLA's compile of it, which grows
    with the optimized module. MINPACK's line search, written as SciPy's dcstep (four cases each
    computed, the modified-function step a second copy, the bounds computed after the step),
    compiled to 2541 HLO instructions in 103 fusions at d20, 1.6x jax.scipy's; one step per trial
    and bounds made from the carry bring it to jax.scipy's size."""
    from jax.scipy.optimize import minimize as jax_minimize

    x0 = np.zeros(20, np.float32)
    ours = fluxion.jit(lambda x: fmin.minimize(_rosen(fnp), x, method="BFGS").x).lower(x0)
    theirs = jax.jit(lambda x: jax_minimize(_rosen(jax.numpy), x, method="BFGS").x).lower(x0)
    sizes = [c.compile().as_text().count(" = ") for c in (ours, theirs)]
    assert sizes[0] <= 1.1 * sizes[1], sizes

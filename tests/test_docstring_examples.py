"""Every docstring example (``>>>``) of fluxion and the ecosystem packages runs and prints what it shows.

One case per source module (so ``-n 2`` splits them), found on disk under each package's
``src/`` tree: the public names live in private modules (``fluxion/numpy/sorting.py`` holds
``fluxion.numpy.sort``), so every module is run, public or not. Modules whose examples another
test already runs are listed in ``COVERED`` with that test (checked below), so no example runs
twice per commit.

The examples see their module's globals plus the names JAX's doctests get (``fluxion`` in place of
``jax``, ``jnp``, ``np``, ``lax``). Output is compared as doctest does (``ELLIPSIS``,
``NORMALIZE_WHITESPACE``), except that numbers compare by value: a float32 result printed as a
Python float (``0.6000000238418579``) matches an example's ``0.6``, and ``-0.0`` matches ``0.0``
(relative 1e-5, absolute 1e-6; integers exactly). A number that differs beyond that, or any other
text that differs, fails. No example is skipped; an example must also leave ``fluxion.config`` as
it found it.
"""

from __future__ import annotations

import doctest
import importlib
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fluxion
import fluxion.lax
import fluxion.numpy

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {  # package -> its source directory
    "fluxion": ROOT / "packages/fluxion/src/fluxion",
    "fluxion_scipy": ROOT / "packages/fluxion-scipy/src/fluxion_scipy",
    "fluxion_md": ROOT / "packages/fluxion-md/src/fluxion_md",
    "fluxion_nn": ROOT / "packages/fluxion-nn/src/fluxion_nn",
    "fluxion_rl": ROOT / "packages/fluxion-rl/src/fluxion_rl",
    "fluxion_optim": ROOT / "packages/fluxion-optim/src/fluxion_optim",
}

# Module (or package prefix ending in '.') -> the test that runs its docstring examples.
COVERED = {
    "fluxion_optim.": "tests/fluxion_optim/test_optim_doctests.py",
    "fluxion_md._nn.e3nn.": "tests/fluxion_md/test_e3nn.py",
    "fluxion_md._nn.nequip": "tests/fluxion_md/test_nequip.py",
    "fluxion_md._nn.gnome": "tests/fluxion_md/test_nequip.py",
    "fluxion_md._gnome_energy": "tests/fluxion_md/test_nequip.py",
    "fluxion_md._nn.e3nn_layer": "tests/fluxion_md/test_nequip.py",
    "fluxion_md._nn.uma.blocks": "tests/fluxion_md/test_uma_model.py",
    "fluxion_md._nn.uma.model": "tests/fluxion_md/test_uma_model.py",
    "fluxion_md._nn.uma.model_moe": "tests/fluxion_md/test_uma_model.py",
    "fluxion_md._nn.uma.featurizer": "tests/fluxion_md/test_uma_model.py",
    "fluxion_md._nn.uma.pretrained": "tests/fluxion_md/test_uma_model.py",
    "fluxion_md._nn.uma.model_moe_layers": "tests/fluxion_md/test_uma_layers.py",
    "fluxion_md._nn.uma.common.rotation": "tests/fluxion_md/test_uma_layers.py",
    "fluxion_md._nn.uma.common.so3": "tests/fluxion_md/test_uma_layers.py",
    "fluxion_md._nn.uma.kernels": "tests/fluxion_md/test_uma_layers.py",
    "fluxion_md._nn.uma.heads": "tests/fluxion_md/test_uma_layers.py",
    "fluxion_md._nn.uma.nn.": "tests/fluxion_md/test_uma_layers.py",
    "fluxion_md._nn.uma._layers": "tests/fluxion_md/test_uma_layers.py",
}

# Modules whose examples take 1 s of CPU or more (XLA compiles; measured one after another in one
# process, under load; fluxion.compat's start a Python subprocess): nightly only, so that the
# per-commit cases stay near 50 CPU-seconds. fluxion.numpy's ufuncs and manipulation (1.7 s each,
# 221 examples of the most used functions) stay per-commit.
SLOW = {
    "fluxion.compat", "fluxion.example_libraries.stax", "fluxion.lax.special", "fluxion.nn.functions",
    "fluxion.nn.initializers", "fluxion.numpy.floating_point", "fluxion.numpy.histograms",
    "fluxion.numpy.integers", "fluxion.numpy.polynomial", "fluxion.numpy.setops",
    "fluxion.random._continuous", "fluxion.random._discrete", "fluxion.random._gamma",
    "fluxion.random._multinomial", "fluxion.random._multivariate", "fluxion.random._normal",
    "fluxion_md._driver", "fluxion_md._edip", "fluxion_md._fire_box", "fluxion_md.tpu", "fluxion_md._electrostatics", "fluxion_md._ensembles", "fluxion_md._integrators",
    "fluxion_md._graph_energy", "fluxion_md._many_body", "fluxion_md._membrane", "fluxion_md._nn.behler_parrinello",
    "fluxion_md._nn.util", "fluxion_md.nn", "fluxion_md.energy", "fluxion_md.partition",
    "fluxion_md.quantity", "fluxion_md.rigid_body", "fluxion_md.smap",
    "fluxion_nn.haiku._attention", "fluxion_nn.haiku._basic", "fluxion_nn.haiku._layers", "fluxion_nn.haiku._lifted",
    "fluxion_nn.haiku._layer_stack", "fluxion_nn.haiku._nets_extra", "fluxion_nn.haiku._resnet",
    "fluxion_nn.haiku._recurrent", "fluxion_nn.haiku._src.conv", "fluxion_nn.haiku._src.depthwise_conv",
    "fluxion_nn.nn.attention",
    "fluxion_nn.nn.linear", "fluxion_nn.nn.recurrent", "fluxion_nn.transforms.iteration",
    "fluxion_rl._distributional", "fluxion_rl._distributions", "fluxion_rl._transforms", "fluxion_rl.envs._classic",
    "fluxion_rl._memory_and_exploration", "fluxion_rl._moving_averages_popart", "fluxion_rl._mpo",
    "fluxion_rl._nonlinear_bellman", "fluxion_rl._trajectories",
    "fluxion_scipy.linalg._decomp", "fluxion_scipy.linalg._matfuncs", "fluxion_scipy.optimize",
    "fluxion_scipy.optimize._minimize", "fluxion_scipy.signal", "fluxion_scipy.spatial.transform",
    "fluxion_scipy.special._error", "fluxion_scipy.special._gamma", "fluxion_scipy.stats._kde",
    "fluxion_scipy.stats.beta", "fluxion_scipy.stats.dirichlet", "fluxion_scipy.stats.poisson",
}


def _covered_by(name: str) -> str | None:
    for key, test in COVERED.items():
        if name == key or (key.endswith(".") and name.startswith(key)):
            return test
    return None


def _modules_with_examples() -> list[str]:
    """Every module of SOURCES with a ``>>>`` line that is more than a comment (read from disk,
    nothing imported; doctest ignores ``>>> # ...`` lines, so they are no example)."""
    names = []
    for src in SOURCES.values():
        for path in sorted(src.rglob("*.py")):
            if not re.search(r"^\s*>>> *[^#\s]", path.read_text(encoding="utf-8"), re.M):
                continue
            parts = list(path.relative_to(src.parent).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            names.append(".".join(parts))
    return names


ALL_MODULES = _modules_with_examples()
MODULES = [m for m in ALL_MODULES if _covered_by(m) is None]

_NUMBER = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|inf|nan)"
_TOKENS = re.compile(rf"(?P<num>(?<![\w.]){_NUMBER}(?![\w]))|(?P<dots>\.\.\.)|(?P<space>\s+)")


def _is_int(text: str) -> bool:
    return re.fullmatch(r"[-+]?\d+", text) is not None


def _numbers_close(want: str, got: str) -> bool:
    if _is_int(want) or _is_int(got):
        return _is_int(want) and _is_int(got) and int(want) == int(got)
    a, b = float(want), float(got)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= 1e-6 + 1e-5 * max(abs(a), abs(b))


class NumericOutputChecker(doctest.OutputChecker):
    """doctest's checker, then a second try where numbers compare by value (see the module doc)."""

    def check_output(self, want: str, got: str, optionflags: int) -> bool:
        if super().check_output(want, got, optionflags):
            return True
        pattern, numbers = [], []
        pos = 0
        for m in _TOKENS.finditer(want):
            pattern.append(re.escape(want[pos:m.start()]))
            if m.group("num") is not None:
                pattern.append(rf"\s*({_NUMBER})")
                numbers.append(m.group("num"))
            elif m.group("dots") is not None:
                pattern.append(r".*?" if optionflags & doctest.ELLIPSIS else re.escape("..."))
            else:
                pattern.append(r"\s+" if optionflags & doctest.NORMALIZE_WHITESPACE else
                               re.escape(m.group("space")))
            pos = m.end()
        pattern.append(re.escape(want[pos:]))
        if not numbers:
            return False
        m = re.fullmatch("".join(pattern), got, re.S)
        return m is not None and all(_numbers_close(w, g) for w, g in zip(numbers, m.groups()))


EXTRA_GLOBALS = {"fluxion": fluxion, "jnp": fluxion.numpy, "np": np, "lax": fluxion.lax}
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


# Modules whose import installs the ``jax`` alias (fluxion.compat.pytest_plugin does, as pytest
# loads it): in a process where the suite's reference jax is imported that raises, so their
# examples run in a fresh interpreter.
FRESH_PROCESS = {"fluxion.compat.pytest_plugin"}


def _run_in_fresh_process(name: str) -> tuple[int, int, str]:
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import test_docstring_examples as t; "
            "print(json.dumps(t._run_examples(sys.argv[2])))")
    proc = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent), name],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{name}: the fresh interpreter failed:\n{proc.stderr[-3000:]}"
    attempted, failed, report = json.loads(proc.stdout.strip().splitlines()[-1])
    return attempted, failed, report


def _run_examples(name: str) -> tuple[int, int, str]:
    """(examples, failures, report) for one module, with the numeric checker."""
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(checker=NumericOutputChecker(), optionflags=FLAGS)
    report: list[str] = []
    for test in finder.find(module, name, globs=dict(vars(module)), extraglobs=EXTRA_GLOBALS):
        if test.examples:
            runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    return result.attempted, result.failed, "".join(report)


@pytest.mark.parametrize("name", [pytest.param(m, marks=pytest.mark.slow) if m in SLOW else m
                                  for m in MODULES])
def test_docstring_examples(name: str) -> None:
    before = fluxion.config.values()
    try:
        attempted, failed, report = (_run_in_fresh_process(name) if name in FRESH_PROCESS
                                     else _run_examples(name))
    finally:
        after = fluxion.config.values()
        changed = {k: (before[k], after.get(k)) for k in before if after.get(k) != before[k]}
        for key, (old, _) in changed.items():
            fluxion.config.update(key, old)
    assert attempted > 0, f"{name}: its source has '>>>' lines but doctest found no example"
    assert failed == 0, f"{failed} docstring example(s) of {name} failed:\n{report}"
    assert not changed, f"the examples of {name} left fluxion.config changed: {changed}"


def test_every_module_with_examples_is_run_somewhere() -> None:
    """Each module left out above names a test file that exists and runs that module's examples."""
    for name in ALL_MODULES:
        test = _covered_by(name)
        if test is None:
            continue
        text = (ROOT / test).read_text(encoding="utf-8")
        assert "doctest" in text, f"{test} (said to run {name}'s examples) runs no doctest"
        tail = name.rsplit(".", 1)[-1] if not name.startswith("fluxion_optim") else "fluxion_optim"
        assert tail in text, f"{test} does not name {name}, whose examples it is said to run"
    assert len(MODULES) > 350
    assert SLOW <= set(MODULES), f"SLOW names modules that are not run here: {SLOW - set(MODULES)}"
    assert FRESH_PROCESS <= set(MODULES)


# Public names (tools/missing_examples.py's list) that have no runnable example, each with the
# reason; every other public name of these packages must have one.
NO_EXAMPLE = {
    "fluxion_md.energy.load_gnome_model_neighbor_list": "reads a GNoME checkpoint; none is in the repo",
    "fluxion_md._nn.gnome.load_model": "reads a GNoME checkpoint; none is in the repo",
}


@pytest.mark.parametrize("package", ["fluxion_rl", "fluxion_md", "fluxion_nn"])
def test_every_public_name_has_an_example(package: str) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("fluxion_missing_examples", ROOT / "tools/missing_examples.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    missing = [name for name in tool.missing_examples(package) if name not in NO_EXAMPLE]
    assert not missing, f"public names of {package} without a '>>>' example: {missing}"


@pytest.mark.parametrize("want, got, ok", [
    ("[0.6, 0.8]\n", "[0.6000000238418579, 0.800000011920929]\n", True),
    ("[[1.0, 0.0]]\n", "[[1.0, -0.0]]\n", True),
    ("Array([1., 0.], dtype=float32)\n", "Array([ 1., -0.], dtype=float32)\n", True),
    ("0.125...\n", "0.1249999925494194\n", True),
    ("-0.5364\n", "-0.5372\n", False),
    ("10\n", "11\n", False),
    ("10\n", "10.0\n", False),
    ("(3, 4)\n", "(4, 3)\n", False),
    ("float32\n", "float64\n", False),
    ("[1.0, ...]\n", "[1.0000001, 2.0, 3.0]\n", True),
    ("nan\n", "nan\n", True),
    ("inf\n", "-inf\n", False),
])
def test_numeric_checker(want: str, got: str, ok: bool) -> None:
    assert NumericOutputChecker().check_output(want, got, FLAGS) is ok

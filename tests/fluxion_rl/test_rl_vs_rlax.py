"""Every rlax array function in fluxion_rl gives rlax's numbers, unbatched and batched, under jit.

Each case is checked unbatched under ``jit`` and batched under ``vmap`` (of the jitted function)
against rlax; ``test_eager_matches_rlax`` runs a sample of the cases without jit.
"""

from __future__ import annotations

import importlib.util
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

import fluxion
import fluxion.tree_util as ftu
import fluxion_rl

rlax = pytest.importorskip("rlax")
jax = pytest.importorskip("jax")

sys.path.insert(0, str(Path(__file__).parent))
_spec = importlib.util.spec_from_file_location("rl_cases", Path(__file__).parent / "rl_cases.py")
rl_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rl_cases)
sys.path.pop(0)

pytestmark = pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")


def _resolve(lib, static):
    out = dict(static)
    if "tx_pair" in out:
        out["tx_pair"] = getattr(lib, out["tx_pair"])
    return out


def _leaves_np(tree, lib):
    leaves = (ftu.tree_leaves(tree) if lib is fluxion_rl else jax.tree_util.tree_leaves(tree))
    return [np.asarray(x) for x in leaves]


# signed_parabolic subtracts two numbers near 1 / (2 eps) = 500: float32 cancellation leaves ~1e-4.
RTOL = {"signed_parabolic": 2e-4}


def _assert_close(ours, ref, what, rtol=2e-5):
    a, b = _leaves_np(ours, fluxion_rl), _leaves_np(ref, rlax)
    assert len(a) == len(b), what
    for x, y in zip(a, b):
        assert x.shape == y.shape, f"{what}: shape {x.shape} vs {y.shape}"
        assert x.dtype == y.dtype, f"{what}: dtype {x.dtype} vs {y.dtype}"
        np.testing.assert_allclose(x, y, rtol=rtol, atol=2e-6, err_msg=what)


IDS = [c[0] for c in rl_cases.CASES]


@pytest.mark.parametrize("case", rl_cases.CASES, ids=IDS)
def test_matches_rlax(case):
    name, make, static = case
    args = make(np.random.default_rng(zlib.crc32(name.encode())))
    # The reference jitted once for its four calls (rlax eagerly compiles each operation per
    # call shape: twice the time); test_eager_matches_rlax compares with eager rlax.
    ref_fn = jax.jit(lambda *a: getattr(rlax, name)(*a, **_resolve(rlax, static)),
                     compiler_options=rl_cases.REFERENCE_COMPILE_OPTIONS)
    ref = ref_fn(*args)
    rtol = RTOL.get(name, 2e-5)

    def fn(*a):
        return getattr(fluxion_rl, name)(*a, **_resolve(fluxion_rl, static))

    # Unbatched under jit (one compile); the eager path is exercised by the other test files.
    _assert_close(fluxion.jit(fn)(*args), ref, f"{name} jit", rtol)

    if name in rl_cases.NO_VMAP:
        return
    rng = np.random.default_rng(7)
    batch = [make(rng) for _ in range(3)]
    stacked = [np.stack(column) for column in zip(*batch)]
    ours_b = fluxion.jit(fluxion.vmap(fn))(*stacked)
    # The reference is rlax applied to each batch element (rlax is not re-traced under jax.vmap).
    refs = [ref_fn(*a) for a in batch]
    ref_b = jax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *refs)
    _assert_close(ours_b, ref_b, f"{name} vmap", rtol)


def test_public_names_match_rlax():
    ours = {n for n in dir(fluxion_rl) if not n.startswith("_")}
    ref = {n for n in dir(rlax) if not n.startswith("_")}
    assert ref - ours == set()
    assert ours - ref == {"envs"}
    assert set(fluxion_rl.__all__) == ours


def _normalised_signature(fn):
    import inspect

    out = []
    for p in inspect.signature(fn).parameters.values():
        default = p.default
        if default is inspect.Parameter.empty:
            default = "<required>"
        elif isinstance(default, tuple) and hasattr(default, "_fields"):
            default = type(default).__name__  # rlax's and our IDENTITY_PAIR are different objects
        elif callable(default):
            default = "<callable>"
        out.append((p.name, p.kind, default))
    return out


def test_signatures_match_rlax():
    import inspect

    mismatched = []
    for name in sorted(n for n in dir(rlax) if not n.startswith("_")):
        ref = getattr(rlax, name)
        if not callable(ref) or inspect.isclass(ref) or name == "clip_gradient":  # rlax's takes *args
            continue
        if _normalised_signature(ref) != _normalised_signature(getattr(fluxion_rl, name)):
            mismatched.append(name)
    assert mismatched == []


EAGER_SAMPLE = ["lambda_returns", "q_learning", "retrace", "categorical_q_learning", "vtrace_td_error_and_advantage",
                "clipped_surrogate_pg_loss", "transformed_q_lambda", "categorical_sample", "embed_oar"]


@pytest.mark.parametrize("name", EAGER_SAMPLE)
def test_eager_matches_rlax(name):
    _, make, static = next(c for c in rl_cases.CASES if c[0] == name)
    args = make(np.random.default_rng(3))
    _assert_close(getattr(fluxion_rl, name)(*args, **_resolve(fluxion_rl, static)),
                  getattr(rlax, name)(*args, **_resolve(rlax, static)), f"{name} eager")

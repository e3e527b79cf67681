"""benchmarks/hlo_compare.py on the suite's programs: per-example gradients (the demo's last row)
are emitted in their final layout, with the same values as JAX's.

Small batch (4), one compile per library; no timing is asserted.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import fluxion
from benchmarks import hlo_compare
from benchmarks.workloads.mlp_grad import LAYERS


def test_per_example_grads_have_no_layout_copy_and_jax_values():
    counts = {b: hlo_compare.count_hlo_ops(hlo_compare.lower_text(b, "per_example_grads", 4,
                                                                   optimized=True))
              for b in ("fluxion", "jax")}
    # JAX computes the (4, in, out) weight gradients transposed and copies them into the
    # result layout; Fluxion's dot_general transpose rule emits them in place.
    # (3 transposed outer-product fusions + 3 copy fusions in JAX's optimized HLO, none here)
    assert counts["fluxion"].get("transpose", 0) == 0 < counts["jax"].get("transpose", 0)
    assert counts["fluxion"].get("copy", 0) < counts["jax"].get("copy", 0)
    assert counts["fluxion"]["#fusions"] < counts["jax"]["#fusions"]

    outs = {}
    for name, mod in (("fluxion", fluxion), ("jax", jax)):
        lowered = hlo_compare._lower_program(mod, mod.numpy, "per_example_grads", 4)
        rng = np.random.default_rng(0)
        params = [(mod.numpy.asarray((rng.standard_normal((m, k)) / np.sqrt(m))
                                     .astype(np.float32)), mod.numpy.zeros((k,), np.float32))
                  for m, k in zip(LAYERS[:-1], LAYERS[1:])]
        x = rng.standard_normal((4, 1, LAYERS[0])).astype(np.float32)
        y = rng.standard_normal((4, 1, LAYERS[-1])).astype(np.float32)
        outs[name] = [np.asarray(a) for a in mod.tree_util.tree_leaves(
            lowered.compile()(params, x, y))]
    for a, b in zip(outs["fluxion"], outs["jax"]):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)


def test_unknown_program_is_refused(capsys):
    assert hlo_compare.main(["--kernels", "nope"]) == 2
    assert "per_example_grads" in capsys.readouterr().err


@pytest.mark.slow  # imports and traces jax_md and fluxion_md (~5 s of CPU)
def test_md_step_takes_as_many_square_roots_as_jax_md():
    # the md step (NVE + neighbor-list update): fluxion_md's neighbor list once took sqrt then
    # squared it in its update and rebuild (3 sqrt against jax_md's 1, issue 28)
    pytest.importorskip("jax_md")
    counts = {b: hlo_compare.count_ops(hlo_compare.lower_text(b, "md_step", 2))
              for b in ("fluxion", "jax")}
    assert counts["fluxion"].get("stablehlo.sqrt", 0) == counts["jax"]["stablehlo.sqrt"] == 1


def test_dump_writes_each_backends_text_with_the_counted_ops(tmp_path):
    counts = hlo_compare.compare(("eos",), 64, dump=str(tmp_path))["eos"]
    for backend in ("fluxion", "jax"):
        text = (tmp_path / f"eos-{backend}.txt").read_text()
        assert "stablehlo" in text
        assert hlo_compare.count_ops(text) == counts[backend]

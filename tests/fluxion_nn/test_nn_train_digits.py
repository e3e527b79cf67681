"""examples/train_digits.py reaches >= 97% test accuracy and writes its outputs (slow)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_train_digits_example(tmp_path):
    spec = importlib.util.spec_from_file_location("train_digits", ROOT / "examples" / "train_digits.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    acc = mod.main(["--out", str(tmp_path), "--no-progress"])
    assert acc["mlp"] >= 0.97 and acc["cnn"] >= 0.97
    for name in ("mlp.safetensors", "cnn.safetensors", "loss_curves.png"):
        assert (tmp_path / name).stat().st_size > 0

"""fluxion.export: export a jitted function to StableHLO, serialize it, and call it again,
in this process and in a fresh one (which never sees the function's Python code)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest
from _compare import assert_close

import fluxion
import fluxion.numpy as jnp
from fluxion import export

W = np.arange(6, dtype=np.float32).reshape(3, 2) / 10  # a closed-over constant


def _model(params, x):
    return {"y": jnp.tanh(x @ W + params["b"]), "n": jnp.sum(x, axis=1)}


def _jmodel(params, x):
    return {"y": jax.numpy.tanh(x @ W + params["b"]), "n": jax.numpy.sum(x, axis=1)}


ARGS = ({"b": np.ones(2, np.float32)}, np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))


def test_export_round_trip_in_process():
    exp = export.export(fluxion.jit(_model))(
        {"b": fluxion.ShapeDtypeStruct((2,), jnp.float32)},
        fluxion.ShapeDtypeStruct((4, 3), jnp.float32))
    assert "stablehlo" in exp.mlir_module() and "func.func public @main" in exp.mlir_module()
    assert [a.shape for a in exp.out_avals] == [(4,), (4, 2)]
    again = export.deserialize(exp.serialize())
    assert again.in_tree == exp.in_tree and again.out_tree == exp.out_tree
    assert_close(again.call(*ARGS), jax.jit(_jmodel)(*ARGS))
    with pytest.raises(TypeError, match="argument 1"):
        again.call(ARGS[0], np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match="structure"):
        again.call(ARGS[1])
    with pytest.raises(ValueError, match="not a Fluxion export"):
        export.deserialize(b"garbage")


def test_exported_runs_in_a_fresh_process(tmp_path):
    # exported for the CPU and run there by the child (on a TPU run this process holds the chip)
    blob = export.export(fluxion.jit(_model), platforms=["cpu"])(*ARGS).serialize()
    path = tmp_path / "model.flx"
    path.write_bytes(bytes(blob))
    np.save(tmp_path / "x.npy", ARGS[1])
    script = textwrap.dedent(f"""
        import numpy as np
        from fluxion import export
        exp = export.deserialize(open({str(path)!r}, "rb").read())
        out = exp.call({{"b": np.ones(2, np.float32)}}, np.load({str(tmp_path / "x.npy")!r}))
        np.save({str(tmp_path / "y.npy")!r}, np.asarray(out["y"]))
        print(exp.fun_name, [a.shape for a in exp.out_avals])
    """)
    env = {k: v for k, v in os.environ.items() if k != "FLUXION_PLATFORMS"}
    env.update(PYTHONPATH=os.pathsep.join(sys.path), JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "_model"
    assert_close(np.load(tmp_path / "y.npy"), jax.jit(_jmodel)(*ARGS)["y"])

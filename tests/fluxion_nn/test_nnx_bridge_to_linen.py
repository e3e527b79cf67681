"""nnx.bridge.ToLinen as a submodule of real flax.linen code: with flax running on Fluxion (``jax``
aliased to Fluxion, as a user switching the import does), ``to_linen`` gives a
``flax.linen.Module`` whose variables and outputs match flax's own ToLinen on real jax. Without
that, ``ToLinen`` stays the Linen-protocol class (flax on real jax cannot run Fluxion arrays)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import fluxion_nn as nnx

_MODEL = """
class Outer(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = bridge.to_linen(nnx.Linear, 4, 3, name="dense")(x)
        k = bridge.to_linen(nnx.Linear, 3, 2, kernel_init=nnx.with_metadata(
            nnx.initializers.lecun_normal(), tag="k"))(h)
        return nn.relu(k)

x = jnp.arange(8, dtype=jnp.float32).reshape(2, 4) / 8
y, variables = Outer().init_with_output(jax.random.key(0), x)
y2 = Outer().apply(variables, x + 1)
boxed = variables["params"]["ToLinen_0"]["kernel"]
out = {
    "is_linen": isinstance(bridge.to_linen(nnx.Linear, 4, 3), nn.Module),
    "spec": [str(s) for s in nn.get_partition_spec(variables)["params"]["ToLinen_0"]["kernel"]],
    "tag": boxed.metadata["tag"],
    "box": type(boxed).__name__,
    "y": np.asarray(y).tolist(), "y2": np.asarray(y2).tolist(), "ydtype": str(y.dtype),
    "vars": {"/".join(k): np.asarray(v).tolist() for k, v in
             flax.traverse_util.flatten_dict(nn.meta.unbox(variables)).items()},
}
"""

_CHILD = """
import json, sys
import fluxion.compat
fluxion.compat.install_jax_alias()
import jax, jax.numpy as jnp, numpy as np
import flax, flax.linen as nn
import fluxion_nn as nnx
from fluxion_nn import bridge
""" + _MODEL + """
print(json.dumps(out))
"""


def _reference() -> dict:
    import flax
    import flax.linen as nn
    import flax.nnx as fnnx
    import jax
    import jax.numpy as jnp
    scope = {"flax": flax, "nn": nn, "nnx": fnnx, "bridge": fnnx.bridge, "jax": jax, "jnp": jnp,
             "np": np}
    exec(_MODEL, scope)  # noqa: S102 - the same model source, on real flax and real jax
    return scope["out"]


@pytest.mark.slow  # 7-10 s under load: a child process importing flax on the jax alias
def test_to_linen_inside_linen_code_matches_flax():
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ours = json.loads(proc.stdout.strip().splitlines()[-1])
    ref = _reference()
    assert ours["is_linen"] and ref["is_linen"]
    # the box is Linen AxisMetadata (get_partition_spec asks it, not its array) with the tag
    assert ours["spec"] == ref["spec"] and ours["tag"] == ref["tag"] == "k"
    assert ours["box"] == ref["box"] == "NNXMeta"
    assert ours["ydtype"] == ref["ydtype"] == "float32"
    assert sorted(ours["vars"]) == sorted(ref["vars"])
    for k in ref["vars"]:
        np.testing.assert_allclose(ours["vars"][k], ref["vars"][k], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ours["y"], ref["y"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours["y2"], ref["y2"], rtol=1e-5, atol=1e-6)


def test_to_linen_is_the_protocol_class_when_flax_runs_on_real_jax():
    # flax here (when imported by other tests) runs on real jax: ToLinen must not become a
    # Linen module then, and without flax it is the protocol class anyway
    assert nnx.bridge.ToLinen is nnx.bridge.wrappers.ToLinen
    model = nnx.bridge.to_linen(nnx.Linear, 4, 3)
    assert isinstance(model, nnx.bridge.wrappers.ToLinen)
    import fluxion
    import fluxion.numpy as jnp
    x = jnp.ones((2, 4))
    y, variables = model.init_with_output(fluxion.random.key(0), x)
    assert y.shape == (2, 3) and y.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(y), np.asarray(x @ variables["params"]["kernel"]),
                               rtol=1e-6)

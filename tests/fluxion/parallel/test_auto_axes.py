"""``fluxion.sharding.auto_axes`` against JAX's ``jax.sharding.auto_axes`` on a 2x2 Explicit
mesh: an operation whose sharding rule rejects the operands' explicit shardings runs with the
axes left to the compiler, and the result has the type ``out_sharding`` gives it."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fjnp

jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")


def _run(lib, jnp, jit):
    from_lib = lib.sharding
    mesh = lib.make_mesh((2, 2), ("X", "Y"),
                         axis_types=(from_lib.AxisType.Explicit, from_lib.AxisType.Explicit))
    with lib.set_mesh(mesh):
        emb = from_lib.reshard(jnp.arange(32.0).reshape(8, 4), from_lib.PartitionSpec("X"))
        idx = from_lib.reshard(jnp.arange(4), from_lib.PartitionSpec("Y"))
        take = from_lib.auto_axes(out_sharding=from_lib.PartitionSpec("X"))(
            lambda e, i: jnp.take(e, i, axis=0))
        y = (lib.jit(take) if jit else take)(emb, idx)
        twice = from_lib.auto_axes(lambda e: e * 2, axes="X")
        z = twice(emb, out_sharding=from_lib.PartitionSpec(None, "Y"))
        with pytest.raises(TypeError, match="out_sharding"):
            twice(emb)
        return y, z


@pytest.mark.parametrize("jit", [
    pytest.param(False, id="eager", marks=pytest.mark.slow),  # ~7 s under load (JAX's eager)
    pytest.param(True, id="jit"),
])
def test_auto_axes_like_jax(eight, jit):
    ours, theirs = _run(fluxion, fjnp, jit), _run(jax, jjnp, jit)
    for o, t in zip(ours, theirs):
        assert str(fluxion.typeof(o)) == str(jax.typeof(t))
        np.testing.assert_array_equal(np.asarray(o), np.asarray(t))
        assert o.dtype == t.dtype and o.weak_type == t.weak_type


def test_auto_axes_without_a_mesh_runs_the_function():
    f = fluxion.sharding.auto_axes(lambda x: x + 1, out_sharding=fluxion.P())
    np.testing.assert_array_equal(np.asarray(f(fjnp.arange(3))), np.arange(3) + 1)

"""A ShapeDtypeStruct placed on Explicit mesh axes traces with that sharding type, as JAX 0.10.2
does and as an array placed so does (``f32[8@x]`` in ``make_jaxpr``, ``jit(...).trace``,
``typeof``; ``eval_shape`` keeps it), over a Mesh or an AbstractMesh; Auto axes give no type."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AbstractMesh as JAbstractMesh
from jax.sharding import AxisType as JAxisType
from jax.sharding import NamedSharding as JNamedSharding
from jax.sharding import PartitionSpec as JP

import fluxion
import fluxion.numpy as fnp
from fluxion.sharding import AbstractMesh as FAbstractMesh
from fluxion.sharding import AxisType as FAxisType
from fluxion.sharding import NamedSharding as FNamedSharding
from fluxion.sharding import PartitionSpec as FP

CASES = {  # name -> (mesh kind, axis type, spec entries, shape)
    "explicit rows": ("mesh", "Explicit", ("x",), (8, 2)),
    "explicit cols": ("mesh", "Explicit", (None, "x"), (2, 8)),
    "auto": ("mesh", "Auto", ("x",), (8,)),
    "abstract explicit": ("abstract", "Explicit", ("x",), (8, 3)),
    "abstract auto": ("abstract", "Auto", ("x",), (8,)),
}


def _stand_in(lib, m, NS, P, AM, AT, case):
    kind, axis_type, spec, shape = CASES[case]
    t = getattr(AT, axis_type)
    mesh = (lib.make_mesh((2,), ("x",), axis_types=(t,)) if kind == "mesh"
            else AM((2,), ("x",), (t,)))
    return lib.ShapeDtypeStruct(shape, m.float32, sharding=NS(mesh, P(*spec)))


def _seen(lib, m, NS, P, AM, AT, case):
    x = _stand_in(lib, m, NS, P, AM, AT, case)
    f = lambda a: a * 2 + 1  # noqa: E731
    out = lib.eval_shape(f, x)
    spec = None if out.sharding is None else tuple(out.sharding.spec)
    return (str(lib.make_jaxpr(f)(x)), str(lib.jit(f).trace(x).jaxpr), str(lib.typeof(x)),
            out.shape, spec)


@pytest.mark.parametrize("case", sorted(CASES))
def test_stand_in_types_like_jax(case):
    if fluxion.device_count() < 2 or jax.device_count() < 2:
        pytest.skip("needs 2 devices")
    ours = _seen(fluxion, fnp, FNamedSharding, FP, FAbstractMesh, FAxisType, case)
    ref = _seen(jax, jnp, JNamedSharding, JP, JAbstractMesh, JAxisType, case)
    assert ours == ref


def test_same_type_as_a_placed_array():
    if fluxion.device_count() < 2:
        pytest.skip("needs 2 devices")
    mesh = fluxion.make_mesh((2,), ("x",), axis_types=(FAxisType.Explicit,))
    s = FNamedSharding(mesh, FP("x"))
    a = fluxion.device_put(np.ones((8, 2), np.float32), s)
    x = fluxion.ShapeDtypeStruct((8, 2), fnp.float32, sharding=s)
    assert fluxion.typeof(x) == fluxion.typeof(a)
    np.testing.assert_array_equal(np.asarray(fluxion.jit(lambda v: v * 2)(a)), 2.0)


def test_lowering_for_an_abstract_mesh_is_refused():
    x = fluxion.ShapeDtypeStruct((8,), fnp.float32, sharding=FNamedSharding(
        FAbstractMesh((2,), ("x",), (FAxisType.Explicit,)), FP("x")))
    traced = fluxion.jit(lambda a: a * 2).trace(x)
    assert "f32[8@x]" in str(traced.jaxpr)
    with pytest.raises(NotImplementedError, match="AbstractMesh"):
        traced.lower()

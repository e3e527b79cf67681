"""Placing and constraining with a ``Format`` (a layout with a sharding) and with shardings built
on the abstract mesh of ``set_mesh`` (as flax builds them), against real JAX on 8 host CPU
devices; and ``_addressable_device_assignment``, which orbax reads."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
from fluxion.experimental.layout import Format, Layout
from fluxion.sharding import AxisType, NamedSharding
from fluxion.sharding import PartitionSpec as P

jax = pytest.importorskip("jax")
from jax.experimental.layout import Format as JFormat  # noqa: E402
from jax.experimental.layout import Layout as JLayout  # noqa: E402
from jax.sharding import AxisType as JAxisType  # noqa: E402
from jax.sharding import NamedSharding as JNS  # noqa: E402
from jax.sharding import PartitionSpec as JP  # noqa: E402

A = np.arange(32, dtype=np.float32).reshape(8, 4)


def _spec(s):
    parts = list(s)
    while parts and parts[-1] is None:
        parts.pop()
    return tuple(parts)


@pytest.fixture(scope="module")
def meshes(eight):
    return (fluxion.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2),
            jax.make_mesh((2, 4), ("x", "y"), axis_types=(JAxisType.Auto,) * 2))


@pytest.mark.parametrize("spec", [("x",), ("x", "y"), (None, "y")])
def test_device_put_and_constraint_with_a_default_layout_format_like_jax(meshes, spec):
    m, jm = meshes
    ours_f = Format(Layout((1, 0)), NamedSharding(m, P(*spec)))
    theirs_f = JFormat(JLayout((1, 0)), JNS(jm, JP(*spec)))
    ours, theirs = fluxion.device_put(A, ours_f), jax.device_put(A, theirs_f)
    assert _spec(ours.sharding.spec) == _spec(theirs.sharding.spec)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype

    ours_c = fluxion.jit(lambda a: fluxion.lax.with_sharding_constraint(a * 2, ours_f))(A)
    theirs_c = jax.jit(lambda a: jax.lax.with_sharding_constraint(a * 2, theirs_f))(A)
    assert _spec(ours_c.sharding.spec) == _spec(theirs_c.sharding.spec)
    np.testing.assert_array_equal(np.asarray(ours_c), np.asarray(theirs_c))


def test_format_with_another_layout_is_refused(meshes):
    m, _ = meshes
    with pytest.raises(NotImplementedError, match="default row-major layout"):
        fluxion.device_put(A, Format(Layout((0, 1)), NamedSharding(m, P("x"))))


def test_reshard_to_an_abstract_mesh_sharding_under_set_mesh_like_jax(eight):
    m = fluxion.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    jm = jax.make_mesh((2, 4), ("x", "y"), axis_types=(JAxisType.Explicit,) * 2)
    with fluxion.set_mesh(m):
        s = NamedSharding(fluxion.sharding.get_abstract_mesh(), P("x", "y"))
        ours = fluxion.sharding.reshard(fluxion.numpy.asarray(A), s)
    with jax.set_mesh(jm):
        js = JNS(jax.sharding.get_abstract_mesh(), JP("x", "y"))
        theirs = jax.sharding.reshard(jax.numpy.asarray(A), js)
    assert _spec(ours.sharding.spec) == _spec(theirs.sharding.spec) == ("x", "y")
    assert ours.sharding.mesh.devices.shape == theirs.sharding.mesh.devices.shape
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_addressable_device_assignment_like_jax(meshes):
    m, jm = meshes
    ours = NamedSharding(m, P("x"))._addressable_device_assignment
    theirs = JNS(jm, JP("x"))._addressable_device_assignment
    assert [d.id for d in ours] == [d.id for d in theirs]
    one = fluxion.numpy.ones(2).sharding._addressable_device_assignment
    j_one = jax.numpy.ones(2).sharding._addressable_device_assignment
    assert [d.id for d in one] == [d.id for d in j_one]

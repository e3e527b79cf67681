"""``fluxion.debug.visualize_sharding`` / ``visualize_array_sharding`` draw JAX 0.10.2's grid
(compared character for character with ``jax.debug.visualize_sharding(use_color=False)``), and
``fluxion.sharding.make_single_device_sharding`` against ``jax.sharding``'s."""

from __future__ import annotations

import contextlib
import io
import math

import jax
import numpy as np
import pytest
from jax.sharding import NamedSharding as JaxNamedSharding
from jax.sharding import PartitionSpec as JaxP

import fluxion
import fluxion.numpy as fnp

CASES = [
    ((2, 2), ("x", "y"), (4, 4), ("x", "y")), ((2, 2), ("x", "y"), (4,), ("x",)),
    ((2, 2), ("x", "y"), (4, 4), ("x",)), ((2, 2), ("x", "y"), (4, 4), (None, "y")),
    ((2, 2), ("x", "y"), (4, 4), ("y", "x")), ((2, 4), ("x", "y"), (8, 16), ("x", "y")),
    ((1,), ("x",), (2, 2), ()), ((8,), ("x",), (8,), ("x",)), ((8,), ("x",), (3, 4), ()),
    ((2, 4), ("x", "y"), (16, 8), (("x", "y"),)),
]


def _printed(fn, *args, **kwargs) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fn(*args, **kwargs)
    return out.getvalue()


@pytest.mark.parametrize("mesh_shape,names,shape,spec", CASES)
@pytest.mark.parametrize("kw", [{}, {"scale": 0.5}, {"min_width": 10, "max_width": 100}])
def test_visualize_sharding_draws_jaxs_grid(mesh_shape, names, shape, spec, kw) -> None:
    n = math.prod(mesh_shape)
    jax_mesh = jax.make_mesh(mesh_shape, names, devices=jax.devices()[:n])
    mesh = fluxion.make_mesh(mesh_shape, names, devices=fluxion.devices()[:n])
    theirs = _printed(jax.debug.visualize_sharding, shape,
                      JaxNamedSharding(jax_mesh, JaxP(*spec)), use_color=False, **kw)
    sharding = fluxion.NamedSharding(mesh, fluxion.P(*spec))
    assert _printed(fluxion.debug.visualize_sharding, shape, sharding, **kw) == theirs
    x = fluxion.device_put(np.zeros(shape, np.float32), sharding)
    assert _printed(fluxion.debug.visualize_array_sharding, x, **kw) == theirs


def test_visualize_sharding_shape_errors_and_single_device() -> None:
    for fn, sharding in ((jax.debug.visualize_sharding, jax.sharding.SingleDeviceSharding(
            jax.devices()[0])), (fluxion.debug.visualize_sharding,
                                 fluxion.sharding.make_single_device_sharding(
                                     fluxion.devices()[0]))):
        with pytest.raises(ValueError, match="only works for shapes with 1 and 2 dimensions"):
            fn((2, 2, 2), sharding)
    theirs = _printed(jax.debug.visualize_sharding, (3, 5),
                      jax.sharding.SingleDeviceSharding(jax.devices()[0]), use_color=False)
    assert _printed(fluxion.debug.visualize_array_sharding, fnp.zeros((3, 5))) == theirs


def test_make_single_device_sharding_as_jax() -> None:
    dev, jdev = fluxion.devices()[1], jax.devices()[1]
    ours, theirs = (fluxion.sharding.make_single_device_sharding(dev),
                    jax.sharding.make_single_device_sharding(jdev))
    assert type(ours).__name__ == type(theirs).__name__ == "SingleDeviceSharding"
    assert [d.id for d in ours.device_set] == [d.id for d in theirs.device_set] == [1]
    x = fluxion.device_put(np.arange(3.0), ours)
    assert x.devices() == {dev} and x.sharding.is_fully_replicated
    same = fluxion.sharding.make_single_device_sharding(dev, memory_kind="device")
    assert same.device_set == ours.device_set
    with pytest.raises(ValueError, match="Got memory kind: foo"):
        jax.sharding.make_single_device_sharding(jdev, memory_kind="foo")
    with pytest.raises(ValueError, match="Got memory kind: foo"):
        fluxion.sharding.make_single_device_sharding(dev, memory_kind="foo")
    with pytest.raises(NotImplementedError, match="default memory"):
        fluxion.sharding.make_single_device_sharding(dev, memory_kind="pinned_host")

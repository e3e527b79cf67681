"""``fluxion.sharding.ManualAxisType`` against jax 0.10.2's: keyword-only construction, interning,
repr, the overlap errors, and what ``typeof(x).mat`` is inside a ``shard_map`` body."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import ManualAxisType as JaxMAT

import fluxion
from fluxion.sharding import ManualAxisType


@pytest.mark.parametrize("kw", [{}, {"varying": {"x"}}, {"varying": frozenset({"y"})},
                                {"varying": {"x"}, "unreduced": {"y"}}, {"reduced": {"z"}}])
def test_construction_repr_and_interning(kw) -> None:
    ours, theirs = ManualAxisType(**kw), JaxMAT(**kw)
    assert repr(ours) == repr(theirs)
    assert ours is ManualAxisType(**kw)
    assert (ours.varying, ours.unreduced, ours.reduced) == (
        theirs.varying, theirs.unreduced, theirs.reduced)


def test_errors_as_jax() -> None:
    for cls in (ManualAxisType, JaxMAT):
        with pytest.raises(ValueError, match="varying and unreduced cannot have common"):
            cls(varying={"x"}, unreduced={"x"})
        with pytest.raises(ValueError, match="varying and reduced cannot have common"):
            cls(varying={"x"}, reduced={"x", "y"})
        with pytest.raises(TypeError):
            cls({"x"})
    with pytest.raises(AttributeError):
        ManualAxisType().varying = frozenset({"x"})


def test_typeof_mat_in_a_shard_map_body() -> None:
    seen = {}

    def body(name):
        def f(x):
            seen[name] = (fluxion if name == "ours" else jax).typeof(x).mat
            return x
        return f

    mesh = fluxion.make_mesh((2,), ("x",), devices=fluxion.devices()[:2])
    x = fluxion.device_put(np.arange(4.0, dtype=np.float32),
                           fluxion.NamedSharding(mesh, fluxion.P("x")))
    fluxion.shard_map(body("ours"), mesh=mesh, in_specs=fluxion.P("x"),
                      out_specs=fluxion.P("x"))(x)
    jmesh = jax.make_mesh((2,), ("x",), devices=jax.devices()[:2])
    jx = jax.device_put(jnp.arange(4.0), jax.NamedSharding(jmesh, jax.P("x")))
    jax.shard_map(body("theirs"), mesh=jmesh, in_specs=jax.P("x"), out_specs=jax.P("x"))(jx)
    assert seen["ours"] is ManualAxisType(varying={"x"})
    assert repr(seen["ours"]) == repr(seen["theirs"])

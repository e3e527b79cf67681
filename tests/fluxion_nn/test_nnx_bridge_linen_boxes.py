"""nnx.bridge with Linen metadata boxes (flax.linen.Partitioned / LogicallyPartitioned): a boxed
Linen variable becomes a Variable with the box's metadata and comes back as the same box type,
against flax.nnx.bridge on real jax."""

from __future__ import annotations

import flax.linen as nn
import flax.nnx as fnnx
import flax.nnx.bridge.variables as theirs
import jax.numpy as jjnp
import numpy as np
import pytest

import fluxion.numpy as fjnp
import fluxion_nn as nnx
import fluxion_nn.bridge.variables as ours

BOXES = [
    lambda v: nn.Partitioned(v, names=("in", "out")),
    lambda v: nn.LogicallyPartitioned(v, names=("a", "b"), rules=(("a", "in"), ("b", None))),
]


@pytest.mark.parametrize("box", BOXES, ids=["partitioned", "logically_partitioned"])
def test_linen_box_to_variable_and_back_as_flax(box):
    value = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    got = []
    for mod, lib, jnp in ((ours, nnx, fjnp), (theirs, fnnx, jjnp)):
        with lib.use_eager_sharding(False):  # no mesh here: the metadata alone is compared
            var = mod.to_nnx_var("params", box(jnp.asarray(value)))
        back = mod.to_linen_var(var)
        got.append((type(var).__name__, var.get_metadata().get("out_sharding"),
                    var.get_metadata().get("sharding_rules"), var.get_metadata()["linen_meta_type"],
                    np.asarray(var.get_value()), type(back), tuple(back.names)))
    (o_type, o_sh, o_rules, o_lt, o_val, o_back, o_names), theirs_ = got
    assert (o_type, o_sh, o_rules, o_lt, o_back, o_names) == (
        theirs_[0], theirs_[1], theirs_[2], theirs_[3], theirs_[5], theirs_[6])
    np.testing.assert_array_equal(o_val, theirs_[4])


def test_plain_linen_value_becomes_a_default_variable_as_flax():
    # the same metadata flags (eager_sharding the default): the state trees of a ToNNX match
    value = np.ones((2,), np.float32)
    o = ours.to_nnx_var("batch_stats", fjnp.asarray(value))
    t = theirs.to_nnx_var("batch_stats", jjnp.asarray(value))
    assert type(o).__name__ == type(t).__name__ == "BatchStat"
    assert o.get_metadata() == t.get_metadata()

"""The pieces of JAX's private ``jax._src`` modules that Fluxion provides for the ecosystem
(``fluxion.compat.jax_src``), compared with real JAX 0.10.2's."""

from __future__ import annotations

import collections

import jax._src.distributed as jax_distributed
import jax._src.tree_util as jax_tree_util
import numpy as np
import pytest

import fluxion.compat.jax_src.distributed as distributed
import fluxion.compat.jax_src.tree_util as tree_util
from fluxion.compat import jax_src


def test_distributed_global_state_before_initialize_like_jax():
    # orbax reads these to tell whether the multi-process runtime is up
    ours, theirs = distributed.global_state, jax_distributed.global_state
    for name in ("client", "service", "process_id", "num_processes", "preemption_sync_manager",
                 "partition_index"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert ours is not theirs and type(ours).__module__ == "fluxion.compat.jax_src.distributed"
    assert ours.client is None and not distributed.is_initialized()
    assert distributed.initialize.__module__ == "fluxion.distributed"
    assert "distributed" in jax_src.PROVIDED


_Point = collections.namedtuple("_Point", "x y")


@pytest.mark.parametrize("tree", [
    {"a": [1, 2], "b": {"c": 3}}, [1, (2, 3)], (), None, _Point(1, [2]),
    collections.OrderedDict([("z", 1), ("a", 2)]),
], ids=["dict", "list", "empty", "none", "namedtuple", "ordereddict"])
def test_flatten_one_level_like_jax(tree):
    children, meta = tree_util.flatten_one_level(tree)
    j_children, j_meta = jax_tree_util.flatten_one_level(tree)
    assert list(children) == list(j_children)
    assert meta == j_meta
    keyed = tree_util.flatten_one_level_with_keys(tree)[0]
    if isinstance(tree, _Point):
        # JAX 0.10.2's flatten_one_level_with_keys names every field of a namedtuple after the
        # first ('.x', '.x'); its tree_flatten_with_path names them right, as Fluxion does.
        assert [str(k) for k, _ in keyed] == [".x", ".y"]
        return
    j_keyed = jax_tree_util.flatten_one_level_with_keys(tree)[0]
    assert [str(k) for k, _ in keyed] == [str(k) for k, _ in j_keyed]


@pytest.mark.parametrize("leaf", [1.0, np.ones(2), "s"], ids=["float", "ndarray", "str"])
def test_flatten_one_level_of_a_leaf_raises_like_jax(leaf):
    with pytest.raises(ValueError, match="can't tree-flatten type"):
        tree_util.flatten_one_level(leaf)
    with pytest.raises(ValueError, match="can't tree-flatten type"):
        jax_tree_util.flatten_one_level(leaf)


def test_dispatch_wait_for_tokens_like_jax():
    # equinox's filter_jit reads jax._src.dispatch.wait_for_tokens at import and calls it after
    # each call; both return None once the callbacks issued so far have run
    import jax._src.dispatch as jax_dispatch

    from fluxion.compat.jax_src import dispatch

    seen = []
    import fluxion

    fluxion.jit(lambda x: fluxion.debug.callback(seen.append, x) or x)(1.0)
    assert dispatch.wait_for_tokens() is None and jax_dispatch.wait_for_tokens() is None
    assert [float(v) for v in seen] == [1.0]
    assert jax_src.PROVIDED["dispatch"] == "fluxion.compat.jax_src.dispatch"

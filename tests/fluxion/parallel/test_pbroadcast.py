"""``lax.pbroadcast`` against jax 0.10.2. JAX's primitive has no CPU lowering (and its ``vmap``
rule fails), so the reference is the equivalence its docstring states,
``psum(where(axis_index(axis) == source, x, 0), axis)``, run by jax, under ``vmap`` and
``shard_map``, with gradients."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
from fluxion import lax


def _jax_reference(x, axis, source):
    return jax.lax.psum(jnp.where(jax.lax.axis_index(axis) == source, x, jnp.zeros_like(x)),
                        axis)


@pytest.mark.parametrize("source", [0, 2])
def test_vmap_matches_jaxs_definition(source) -> None:
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    tree = {"a": x, "b": x.astype(np.int32)}
    ours = fluxion.vmap(lambda t: lax.pbroadcast(t, "i", source), axis_name="i")(tree)
    theirs = jax.vmap(lambda t: jax.tree.map(lambda v: _jax_reference(v, "i", source), t),
                      axis_name="i")(tree)
    for k in tree:
        assert ours[k].dtype == theirs[k].dtype
        np.testing.assert_array_equal(np.asarray(ours[k]), np.asarray(theirs[k]))
    g = fluxion.grad(lambda v: (fluxion.vmap(lambda r: lax.pbroadcast(r, "i", source),
                                             axis_name="i")(v) ** 2).sum())(x)
    jg = jax.grad(lambda v: (jax.vmap(lambda r: _jax_reference(r, "i", source),
                                      axis_name="i")(v) ** 2).sum())(x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(jg))


def test_shard_map_matches_jaxs_definition_and_jax_has_no_cpu_rule() -> None:
    mesh = fluxion.make_mesh((4,), ("i",), devices=fluxion.devices()[:4])
    jmesh = jax.make_mesh((4,), ("i",), devices=jax.devices()[:4])
    a = np.arange(8.0, dtype=np.float32)
    x = fluxion.device_put(a, fluxion.NamedSharding(mesh, fluxion.P("i")))
    y = jax.device_put(a, jax.NamedSharding(jmesh, jax.P("i")))
    ours = fluxion.shard_map(lambda v: lax.pbroadcast(v, "i", 3), mesh=mesh,
                             in_specs=fluxion.P("i"), out_specs=fluxion.P("i"))(x)
    theirs = jax.shard_map(lambda v: _jax_reference(v, "i", 3), mesh=jmesh,
                           in_specs=jax.P("i"), out_specs=jax.P("i"))(y)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    with pytest.raises(NotImplementedError, match="pbroadcast"):
        jax.shard_map(lambda v: jax.lax.pbroadcast(v, "i", 3), mesh=jmesh,
                      in_specs=jax.P("i"), out_specs=jax.P("i"))(y)


def test_copies_exactly_and_errors() -> None:
    x = np.array([1.0, -0.0, np.nan], np.float32)
    out = fluxion.vmap(lambda v: lax.pbroadcast(v, "i", 1), axis_name="i")(x)
    assert np.signbit(np.asarray(out)).all()  # -0.0 copied as -0.0 (a masked psum gives +0.0)
    with pytest.raises(ValueError, match="source 3"):
        fluxion.vmap(lambda v: lax.pbroadcast(v, "i", 3), axis_name="i")(x)
    with pytest.raises(NameError):
        fluxion.vmap(lambda v: lax.pbroadcast(v, "j", 0), axis_name="i")(fnp.asarray(x))

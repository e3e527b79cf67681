"""``shard_map`` over a mesh whose axes are all ``Explicit``: ``in_specs`` must be the arguments'
own specs (their sharding is part of their type), as in JAX, eagerly, under jit and under
``set_mesh``; outcomes (result or error type and message) compared with ``jax.shard_map``."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion.sharding import AxisType
from fluxion.sharding import PartitionSpec as P

jax = pytest.importorskip("jax")
JP = jax.sharding.PartitionSpec


def _outcome(call):
    try:
        out = call()
    except ValueError as e:
        return "ValueError", str(e).split(" `in_specs` is an optional")[0]
    return "ok", np.asarray(out).tolist()


def _run(lib, np_mod, spec_cls, types, arg_spec, in_spec, how):
    mesh = lib.make_mesh((4, 2), ("x", "y"), axis_types=(types("Explicit"),) * 2)
    x = np_mod.arange(32.0).reshape(8, 4)
    if arg_spec is not None:
        x = lib.device_put(x, lib.NamedSharding(mesh, spec_cls(*arg_spec)))

    def f(a):
        return a * 2

    def smap(**kw):
        return lib.shard_map(f, in_specs=spec_cls(*in_spec), out_specs=spec_cls(*in_spec), **kw)

    if how == "eager":
        return _outcome(lambda: smap(mesh=mesh)(x))
    if how == "jit":
        return _outcome(lambda: lib.jit(smap(mesh=mesh))(x))
    with lib.set_mesh(mesh):
        return _outcome(lambda: smap()(x))


CASES = [
    (None, ("x",)),            # unsharded argument, split specs: refused
    (None, ()),                # unsharded argument, P(): accepted
    (("x",), ("x",)),          # the argument's own spec: accepted
    (("x",), ("x", None)),     # the same spec written out in full: accepted
    (("x",), ()),              # a sharded argument with P(): refused
    (("x", "y"), ("y", "x")),  # another spec: refused
]


@pytest.mark.parametrize("how", ["eager", "jit", "set_mesh"])
@pytest.mark.parametrize("arg_spec, in_spec", CASES)
def test_explicit_mesh_in_specs_must_match_the_argument(eight, arg_spec, in_spec, how):
    ours = _run(fluxion, jnp, P, lambda n: getattr(AxisType, n), arg_spec, in_spec, how)
    theirs = _run(jax, jax.numpy, JP, lambda n: getattr(jax.sharding.AxisType, n),
                  arg_spec, in_spec, how)
    assert ours == theirs
    refused = in_spec not in (arg_spec or (), (arg_spec or ()) + (None,))
    assert (ours[0] == "ValueError") == refused
    if refused:
        assert ours[1].startswith("in_specs passed to shard_map: P(")
        assert "does not match the specs of the input: P(" in ours[1]
        assert "for arg: float32[8" in ours[1]


def test_auto_mesh_still_splits_an_unsharded_argument(eight):
    mesh = fluxion.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    out = fluxion.shard_map(lambda a: a * 2, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(
        jnp.arange(8.0))
    assert out.tolist() == [2.0 * i for i in range(8)]

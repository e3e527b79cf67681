"""``fluxion.smap`` (JAX 0.10.2's ``jax.smap``, a ``shard_map`` over one mesh axis with
``vmap``-style axes) against jax over 8 CPU devices: in_axes/out_axes (ints, None, tuples,
negative axes as jax), ``in_axes`` read from Explicit shardings, Auto axes, collectives, jit,
grad, nesting over a 2-D mesh, the decorator form and jax's errors."""

from __future__ import annotations

import numpy as np
import pytest
from _compare import assert_same

import fluxion
import fluxion.numpy as fnp

jax = pytest.importorskip("jax")
jnp = jax.numpy

X = np.arange(32.0, dtype=np.float32).reshape(8, 4)


def _mesh(lib, shape, names, auto):
    kinds = (lib.sharding.AxisType.Auto if auto else lib.sharding.AxisType.Explicit,) * len(shape)
    return lib.make_mesh(shape, names, axis_types=kinds)


def _run(lib, shape, names, auto, fn, place=None):
    with lib.set_mesh(_mesh(lib, shape, names, auto)):
        x = X if place is None else lib.device_put(X, lib.sharding.PartitionSpec(*place))
        return fn(lib, x)


def _spec(a):
    return tuple(a.sharding.spec)


CASES = {  # name: (mesh shape, names, Auto?, placement of X, fn(lib, x), compare shardings)
    "explicit_infer": ((8,), ("x",), False, ("x",),
                       lambda L, x: L.smap(lambda a: a * 2, out_axes=0, axis_name="x")(x), True),
    "explicit_infer_replicated": ((8,), ("x",), False, None,
                                  lambda L, x: L.smap(lambda a: a * 2, out_axes=0,
                                                      axis_name="x")(x), True),
    "explicit_in0_jit": ((8,), ("x",), False, ("x",),
                         lambda L, x: L.jit(L.smap(lambda a: a * 2, in_axes=0, out_axes=0,
                                                   axis_name="x"))(x), True),
    "psum_out_none": ((8,), ("x",), False, ("x",),
                      lambda L, x: L.smap(lambda a: L.lax.psum(a, "x"), in_axes=0, out_axes=None,
                                          axis_name="x")(x), True),
    "psum_out0": ((8,), ("x",), False, ("x",),
                  lambda L, x: L.smap(lambda a: L.lax.psum(a, "x"), in_axes=0, out_axes=0,
                                      axis_name="x")(x), True),
    "auto_in1": ((8,), ("x",), True, None,
                 lambda L, x: L.smap(lambda a: a * 2, in_axes=1, out_axes=1,
                                     axis_name="x")(x.T), True),
    "auto_negative_axis_is_0": ((8,), ("x",), True, None,
                                lambda L, x: L.smap(lambda a: a * 2, in_axes=-1, out_axes=0,
                                                    axis_name="x")(x), True),
    "auto_tuple_in_out": ((8,), ("x",), True, None,
                          lambda L, x: L.smap(lambda a, b: (a * b, b), in_axes=(0, None),
                                              out_axes=(1, None), axis_name="x")(
                                                  x, np.ones(4, np.float32)), False),
    "decorator": ((8,), ("x",), True, None,
                  lambda L, x: L.smap(in_axes=0, out_axes=0, axis_name="x")(
                      lambda a: a + 1)(x), True),
    "grad": ((8,), ("x",), True, None,
             lambda L, x: L.grad(lambda x: L.smap(lambda a: L.numpy.sin(a), in_axes=0,
                                                  out_axes=0, axis_name="x")(x).sum())(x), False),
    "mesh2d_auto_nested": ((4, 2), ("x", "y"), True, None,
                           lambda L, x: L.smap(L.smap(lambda a: L.lax.psum(a, "y"), in_axes=1,
                                                      out_axes=1, axis_name="y"),
                                               in_axes=0, out_axes=0, axis_name="x")(x), False),
    "mesh2d_explicit_nested_infer": ((4, 2), ("x", "y"), False, ("x", "y"),
                                     lambda L, x: L.smap(L.smap(lambda a: a * 2, in_axes=1,
                                                                out_axes=1, axis_name="y"),
                                                         out_axes=0, axis_name="x")(x), False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_smap_like_jax(eight, name):
    shape, names, auto, place, fn, shardings = CASES[name]
    ours = _run(fluxion, shape, names, auto, fn, place)
    theirs = _run(jax, shape, names, auto, fn, place)
    assert_same(ours, theirs)
    if shardings:
        for o, t in zip(fluxion.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
            assert _spec(o) == _spec(t)


ERRORS = {  # name: (Auto mesh?, fn(lib, x), error class, message)
    "axis_name_list": (True, lambda L, x: L.smap(lambda a: a, in_axes=0, out_axes=0,
                                                 axis_name=["x"]), TypeError, "axis_name should"),
    "in_axes_list": (True, lambda L, x: L.smap(lambda a: a, in_axes=[0], out_axes=0,
                                               axis_name="x"), TypeError, "or a tuple of entries"),
    "in_axes_str_leaf": (True, lambda L, x: L.smap(lambda a: a, in_axes=(0, "a"), out_axes=0,
                                                   axis_name="x"), TypeError, "container"),
    "out_axes_str": (True, lambda L, x: L.smap(lambda a: a, in_axes=0, out_axes="a",
                                               axis_name="x"), TypeError, "smap out_axes must"),
    "unknown_axis": (True, lambda L, x: L.smap(lambda a: a, in_axes=0, out_axes=0,
                                               axis_name="z")(x), ValueError,
                     r"axis_names=frozenset\(\{'z'\}\) to be a subset"),
    "infer_on_auto": (True, lambda L, x: L.smap(lambda a: a, out_axes=0, axis_name="x")(x),
                      TypeError, "in_axes was not specified when axis_name"),
    "explicit_unsharded_in0": (False, lambda L, x: L.smap(lambda a: a, in_axes=0, out_axes=0,
                                                          axis_name="x")(x), ValueError,
                               "does not match the specs of the input"),
    "varying_out_none": (True, lambda L, x: L.smap(lambda a: a, in_axes=0, out_axes=None,
                                                   axis_name="x")(x), ValueError,
                         "out_specs which require replication"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_smap_errors_like_jax(eight, name):
    auto, fn, err, msg = ERRORS[name]
    for lib in (fluxion, jax):
        with pytest.raises(err, match=msg):
            _run(lib, (8,), ("x",), auto, fn)


def test_smap_needs_a_context_mesh(eight):
    for lib in (fluxion, jax):
        with pytest.raises(ValueError, match="The context mesh cannot be empty"):
            lib.smap(lambda a: a, in_axes=0, out_axes=0, axis_name="x")(X)


def test_smap_array_types(eight):
    # fluxion arrays in, fluxion arrays out (values checked above against jax)
    with fluxion.set_mesh(_mesh(fluxion, (8,), ("x",), True)):
        y = fluxion.smap(lambda a: a + 1, in_axes=0, out_axes=0, axis_name="x")(fnp.asarray(X))
    assert isinstance(y, fluxion.Array) and y.shape == (8, 4)

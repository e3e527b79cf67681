"""Errors of the parallel API, raised in Python before XLA sees a program (a mismatch inside
XLA would kill the process): each names the function or argument and the user's line. The
messages follow JAX's where JAX has one (``Received incompatible devices``)."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
from fluxion import lax
from fluxion.sharding import AxisType, Mesh
from fluxion.sharding import NamedSharding as NS
from fluxion.sharding import PartitionSpec as P

HERE = __file__.rsplit("/", 1)[-1]


@pytest.fixture(scope="module")
def meshes(eight):
    auto = (AxisType.Auto,)
    return (fluxion.make_mesh((8,), ("x",), axis_types=auto),
            Mesh(np.array(eight[:4]), ("x",), axis_types=auto),
            Mesh(np.array(eight[4:]), ("x",), axis_types=auto))


def _raises(exc, match, f):
    with pytest.raises(exc, match=match) as info:
        f()
    assert HERE in str(info.value), str(info.value)  # the user's line
    return str(info.value)


def test_mismatched_meshes(meshes):
    _, m4, m4b = meshes
    a = fluxion.device_put(np.ones(8, np.float32), NS(m4, P("x")))
    b = fluxion.device_put(np.ones(8, np.float32), NS(m4b, P("x")))
    msg = _raises(ValueError, "Received incompatible devices", lambda: a + b)
    assert "[0, 1, 2, 3]" in msg and "[4, 5, 6, 7]" in msg
    _raises(ValueError, "argument b of <lambda>",
            lambda: fluxion.jit(lambda a, b: a * b)(a, b))
    _raises(ValueError, "explicit output sharding", lambda: fluxion.jit(
        lambda v: v, in_shardings=NS(m4, P("x")), out_shardings=NS(m4b, P("x")))(np.ones(8)))
    _raises(ValueError, "argument 0 of shard_map", lambda: fluxion.shard_map(
        lambda v: v, mesh=m4, in_specs=P("x"), out_specs=P("x"))(b))


def test_shardings_that_do_not_divide_the_shape(meshes):
    m8 = meshes[0]
    x5 = np.ones(5, np.float32)
    for f, where in [(lambda: fluxion.device_put(x5, NS(m8, P("x"))), "device_put"),
                     (lambda: fluxion.jit(lambda v: v, in_shardings=NS(m8, P("x")))(x5),
                      "in_shardings"),
                     (lambda: fluxion.jit(lambda v: v, out_shardings=NS(m8, P("x")))(x5),
                      "out_shardings for result 0"),
                     (lambda: fluxion.shard_map(lambda v: v, mesh=m8, in_specs=P("x"),
                                                out_specs=P("x"))(x5), "argument 0")]:
        msg = _raises(ValueError, "divisible|divide", f)
        assert where in msg and "(5,)" in msg, msg
    _raises(ValueError, "which the mesh does not have", lambda: NS(m8, P("q")))
    _raises(ValueError, "has 2 entries but the array has rank 1", lambda: fluxion.jit(
        lambda v: v, in_shardings=NS(m8, P("x", None)))(np.ones(8)))


def test_collectives_over_unbound_axes(meshes):
    m8 = meshes[0]
    _raises(NameError, "lax.psum: unbound axis name: 'z'.*: 'x'", lambda: fluxion.shard_map(
        lambda v: lax.psum(v, "z"), mesh=m8, in_specs=P("x"), out_specs=P("x"))(np.ones(8)))
    _raises(NameError, "lax.all_gather: unbound axis name: 'i'",
            lambda: lax.all_gather(fnp.ones(3), "i"))
    _raises(NameError, "unbound axis name: 'j'", lambda: fluxion.vmap(
        lambda v: lax.pmean(v, "j"), axis_name="i")(fnp.ones(3)))


def test_process_count_that_does_not_match():
    with pytest.raises(ValueError, match="process_id must be in"):
        fluxion.distributed.initialize("127.0.0.1:1", 2, 2)
    with pytest.raises(ValueError, match="num_processes must be a positive int"):
        fluxion.distributed.initialize("127.0.0.1:1", 0, 0)

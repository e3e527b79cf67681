"""Explicit mesh axes ("sharding in types"): the sharding of an array on a mesh with
``AxisType.Explicit`` axes is part of its type, propagated by each primitive's rule at trace time,
against real JAX on 8 host CPU devices (types, result shardings, values and errors)."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
from fluxion import lax as flax
from fluxion.core.avals import ShapedArray
from fluxion.sharding import AxisType, NamedSharding, ShardingTypeError
from fluxion.sharding import PartitionSpec as P

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax as jlax  # noqa: E402
from jax.sharding import AxisType as JAxisType  # noqa: E402
from jax.sharding import NamedSharding as JNS  # noqa: E402
from jax.sharding import PartitionSpec as JP  # noqa: E402

A = np.arange(32, dtype=np.float32).reshape(8, 4)


def _spec(s):
    parts = [tuple(p) if isinstance(p, (tuple, list)) else p for p in s]
    while parts and parts[-1] is None:
        parts.pop()
    return tuple(parts)


@pytest.fixture(scope="module")
def env(eight):
    m, jm = fluxion.make_mesh((2, 4), ("x", "y")), jax.make_mesh((2, 4), ("x", "y"))

    def put(spec, a=A):
        return (fluxion.device_put(a, NamedSharding(m, P(*spec))),
                jax.device_put(a, JNS(jm, JP(*spec))))
    return m, jm, put


def _same(out, jout):
    assert _spec(out.sharding.spec) == _spec(jout.sharding.spec), (out.sharding, jout.sharding)
    assert out.shape == jout.shape and out.dtype == jout.dtype
    np.testing.assert_allclose(np.asarray(out), np.asarray(jout), rtol=1e-6)


def test_types_of_arrays_like_jax(env):
    m, jm, put = env
    for spec in [("x",), (None, "y"), (("x", "y"),), ()]:
        x, jx = put(spec)
        assert fluxion.typeof(x).str_short(False) == str(jax.typeof(jx))
        assert fluxion.typeof(x).sharding.spec == x.sharding.spec
    am = fluxion.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    jam = jax.make_mesh((2, 4), ("x", "y"), axis_types=(JAxisType.Auto,) * 2)
    xa = fluxion.device_put(A, NamedSharding(am, P("x")))
    jxa = jax.device_put(A, JNS(jam, JP("x")))
    assert fluxion.typeof(xa).sharding is None
    assert fluxion.typeof(xa).str_short(False) == str(jax.typeof(jxa)) == "float32[8,4]"
    # single-device arrays: no sharding in the type, the same interned aval as before
    assert fluxion.typeof(fnp.ones((8, 4))) is ShapedArray((8, 4), np.float32)


def _program(a, b, np_, api):
    """Shape ops, reductions, products, updates and control flow on a: P('x', None),
    b: P(None, 'y')."""
    return [a + b, a.T, a.sum(0), a.sum(1), a @ b.T, a.reshape(2, 4, 4), a.reshape(32),
            a[:, 1:3], np_.broadcast_to(a[None], (3, 8, 4)), a.max(0), a + np_.ones(4),
            np_.where(a > 2, a, 0.0), np_.concatenate([a, a], 1), np_.ones_like(a),
            a.at[:, 0].set(1.0), np_.argmax(a, 1), (a * 2).astype(np.int32), np_.sin(a),
            (a - a.mean(0)) / (a.std(0) + 1), 3.0 * a + 1, api.jit(lambda v: v.T)(a),
            api.lax.cond(True, lambda v: v * 2, lambda v: v, a),
            api.lax.fori_loop(0, 3, lambda i, v: v + 1, a), api.vmap(lambda r: r.sum())(a)]


def test_jit_types_and_result_shardings_like_jax(env):
    m, jm, put = env
    (x, jx), (y, jy) = put(("x", None)), put((None, "y"))
    types, jtypes = [], []

    def f(a, b):
        outs = _program(a, b, fnp, fluxion)
        types.extend(fluxion.typeof(o).str_short(False) for o in outs)
        return outs

    def jf(a, b):
        outs = _program(a, b, jnp, jax)
        jtypes.extend(str(jax.typeof(o)) for o in outs)
        return outs

    with fluxion.set_mesh(m):
        outs = fluxion.jit(f)(x, y)
    with jax.set_mesh(jm):
        jouts = jax.jit(jf)(jx, jy)
    assert types == jtypes
    for o, jo in zip(outs, jouts):
        _same(o, jo)


def test_eager_ops_follow_types_like_jax(env):
    m, jm, put = env
    (x, jx), (y, jy) = put(("x", None)), put((None, "y"))
    for f in (lambda a, b: a + b, lambda a, b: a.T, lambda a, b: a.sum(0),
              lambda a, b: a.sum(1), lambda a, b: a * 2.0):
        _same(f(x, y), f(jx, jy))


def _errs(put, m, jm, f, jf, *specs):
    args = [put(s) for s in specs]
    with fluxion.set_mesh(m), pytest.raises(Exception) as e:
        fluxion.jit(f)(*[a for a, _ in args])
    with jax.set_mesh(jm), pytest.raises(Exception) as je:
        jax.jit(jf)(*[b for _, b in args])
    return e.value, je.value


@pytest.mark.parametrize("case", [
    ("add", lambda np_, l_: lambda a, b: a + b, [("x",), ("y",)],
     "got incompatible shardings for broadcasting"),
    ("dot_contracting", lambda np_, l_: lambda a, b: a @ b.T, [("x", "y"), (None, "y")],
     "Contracting dimensions are sharded"),
    ("dot_illegal", lambda np_, l_: lambda a, b: np_.einsum("ij,kj->ik", a, a), [("x",), ()],
     "produces an illegally sharded result"),
    ("reshape", lambda np_, l_: lambda a, b: a.reshape(4, 8), [("x",), ()],
     "This reshape is not supported"),
    ("cumsum", lambda np_, l_: lambda a, b: np_.cumsum(a, 0), [("x",), ()],
     "Input should be unsharded over the axis being reduced"),
    ("sort", lambda np_, l_: lambda a, b: np_.sort(a, 0), [("x",), ()],
     "Arguments to sort must be unsharded over the sorting dimension"),
    ("scatter", lambda np_, l_: lambda a, b: a.at[0].set(1.0), [("x",), ()],
     "to provide output PartitionSpec for the scatter update"),
    ("wsc_assert", lambda np_, l_: lambda a, b: l_.with_sharding_constraint(a, P(None, "y"))
     if l_ is flax else l_.with_sharding_constraint(a, JP(None, "y")), [("x",), ()],
     "acts as an assert when all axes of mesh are of type `Explicit`"),
], ids=lambda c: c[0])
def test_sharding_type_errors_like_jax(env, case):
    m, jm, put = env
    _, mk, specs, msg = case
    e, je = _errs(put, m, jm, mk(fnp, flax), mk(jnp, jlax), *specs)
    assert type(e).__name__ == type(je).__name__
    assert msg in str(je) and msg in str(e)
    if isinstance(e, ShardingTypeError):
        assert __file__ in str(e)  # the user's line


def test_out_sharding_arguments_like_jax(env):
    m, jm, put = env
    (x, jx), (xy, jxy) = put(("x", None)), put(("x", "y"))

    def prog(np_, l_, Ps, a, c):
        return [np_.dot(c, c.T, out_sharding=Ps("x", None)),
                np_.einsum("ij,kj->ik", a, a, out_sharding=Ps(None, "x")),
                np_.matmul(a.T, a, out_sharding=Ps()),
                l_.dot_general(a.T, a, (((1,), (0,)), ((), ())), out_sharding=Ps("y")),
                np_.zeros((8, 4), out_sharding=Ps("x", "y")),
                np_.full((8, 4), 2.0, out_sharding=Ps(None, "y")),
                a.at[0].set(1.0, out_sharding=Ps("x")),
                np_.reshape(a, (4, 8), out_sharding=Ps("x"))]

    with fluxion.set_mesh(m):
        outs = fluxion.jit(lambda a, c: prog(fnp, flax, P, a, c))(x, xy)
        eager = fnp.zeros((8, 4), out_sharding=P("x"))
    with jax.set_mesh(jm):
        jouts = jax.jit(lambda a, c: prog(jnp, jlax, JP, a, c))(jx, jxy)
        jeager = jnp.zeros((8, 4), out_sharding=JP("x"))
    for o, jo in zip(outs + [eager], jouts + [jeager]):
        _same(o, jo)


def test_reshard_and_grad_like_jax(env):
    m, jm, put = env
    x, jx = put(("x", None))
    types = []

    def f(a):
        r = fluxion.sharding.reshard(a, P(None, "y"))
        types.append(fluxion.typeof(r).str_short(False))
        return r, fluxion.grad(lambda v: (v * v).sum())(a)

    with fluxion.set_mesh(m):
        outs = fluxion.jit(f)(x)
        eager = fluxion.sharding.reshard(x, P(None, "x"))
    with jax.set_mesh(jm):
        jouts = jax.jit(lambda a: (jax.sharding.reshard(a, JP(None, "y")),
                                   jax.grad(lambda v: (v * v).sum())(a)))(jx)
        jeager = jax.sharding.reshard(jx, JP(None, "x"))
    assert types == ["float32[8,4@y]"]
    for o, jo in zip(list(outs) + [eager], list(jouts) + [jeager]):
        _same(o, jo)


def test_auto_axes_unchanged(env):
    am = fluxion.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    jam = jax.make_mesh((2, 4), ("x", "y"), axis_types=(JAxisType.Auto,) * 2)
    x = fluxion.device_put(A, NamedSharding(am, P("x")))
    y = fluxion.device_put(A, NamedSharding(am, P("y")))
    jx = jax.device_put(A, JNS(jam, JP("x")))
    jy = jax.device_put(A, JNS(jam, JP("y")))
    seen = []
    out = fluxion.jit(lambda a, b: seen.append(fluxion.typeof(a + b)) or a + b)(x, y)
    jout = jax.jit(lambda a, b: a + b)(jx, jy)  # no error on Auto axes: the compiler decides
    assert seen[0].sharding is None
    np.testing.assert_array_equal(np.asarray(out), np.asarray(jout))


def test_out_shardings_on_reordered_devices_like_jax(env):
    devs = fluxion.devices()
    jdevs = jax.devices()
    m1 = fluxion.sharding.Mesh(np.array(devs).reshape(2, 4), ("x", "y"))
    m2 = fluxion.sharding.Mesh(np.array(devs[::-1]).reshape(2, 4), ("x", "y"))
    jm1 = jax.sharding.Mesh(np.array(jdevs).reshape(2, 4), ("x", "y"))
    jm2 = jax.sharding.Mesh(np.array(jdevs[::-1]).reshape(2, 4), ("x", "y"))
    # uncommitted arguments go where the out_shardings are, in their order
    y = fluxion.jit(lambda a: a * 2, out_shardings=NamedSharding(m2, P("x")))(A)
    jy = jax.jit(lambda a: a * 2, out_shardings=JNS(jm2, JP("x")))(A)
    _same(y, jy)
    assert sorted((s.device.id, s.index) for s in y.addressable_shards) == sorted(
        (s.device.id, s.index) for s in jy.addressable_shards)
    # committed arguments on the same devices in another order: JAX refuses, and so do we
    x = fluxion.device_put(A, NamedSharding(m1, P("x", "y")))
    jx = jax.device_put(A, JNS(jm1, JP("x", "y")))
    with pytest.raises(ValueError) as je:
        jax.jit(lambda a: a * 2, out_shardings=JNS(jm2, JP("x")))(jx)
    with pytest.raises(ValueError) as e:
        fluxion.jit(lambda a: a * 2, out_shardings=NamedSharding(m2, P("x")))(x)
    head = "Received incompatible devices for jitted computation"
    assert str(je.value).startswith(head) and str(e.value).startswith(head)
    assert "device ids [7, 6, 5, 4, 3, 2, 1, 0]" in str(e.value)

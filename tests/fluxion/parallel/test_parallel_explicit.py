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
        assert repr(fluxion.typeof(x).sharding.spec) == repr(jax.typeof(jx).sharding.spec)
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
                np_.reshape(a, (4, 8), out_sharding=Ps("x")),
                np_.ravel(a, out_sharding=Ps("x")),
                np_.broadcast_to(np_.arange(4.0), (8, 4), out_sharding=Ps("x", "y")),
                np_.tensordot(a, c, ((1,), (1,)), out_sharding=Ps(None, "x")),
                np_.bincount(np_.arange(8) % 3, length=8, out_sharding=Ps())]

    with fluxion.set_mesh(m):
        outs = fluxion.jit(lambda a, c: prog(fnp, flax, P, a, c))(x, xy)
        eager = fnp.zeros((8, 4), out_sharding=P("x"))
    with jax.set_mesh(jm):
        jouts = jax.jit(lambda a, c: prog(jnp, jlax, JP, a, c))(jx, jxy)
        jeager = jnp.zeros((8, 4), out_sharding=JP("x"))
    for o, jo in zip(outs + [eager], jouts + [jeager]):
        _same(o, jo)


def test_bincount_out_sharding_must_be_replicated_like_jax(env):
    m, jm, _ = env
    for lib, np_, mesh, Ps in ((fluxion, fnp, m, P), (jax, jnp, jm, JP)):
        with lib.set_mesh(mesh), pytest.raises(Exception) as e:
            np_.bincount(np_.arange(8) % 3, length=8, out_sharding=Ps("x"))
        assert type(e.value).__name__ == "ShardingTypeError"
        assert str(e.value).startswith("out_sharding passed to `jnp.bincount` can only be fully "
                                       "replicated or fully unreduced along all mesh axes")


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


def test_partition_spec_equality_and_repr_like_jax(env):
    m, jm, put = env
    cases = [("x", None), ("x",), (("x",),), (("x", "y"), None), ((),), (None,), ()]
    for a in cases:
        assert repr(P(*a)) == repr(JP(*a))
        assert tuple(P(*a)) == tuple(JP(*a))
        for b in cases:
            assert (P(*a) == P(*b)) == (JP(*a) == JP(*b)), (a, b)
            if P(*a) == P(*b):
                assert hash(P(*a)) == hash(P(*b))
    assert (P("x") == ("x",)) == (JP("x") == ("x",))
    # results carry one spec entry per dimension, as JAX's types do
    x, jx = put(("x",))
    assert repr(fnp.sin(x).sharding.spec) == repr(jnp.sin(jx).sharding.spec) == "P('x', None)"
    assert repr(x.sharding.spec) == repr(jx.sharding.spec) == "P('x',)"


def test_eager_out_sharding_does_not_hide_the_error_like_jax(env):
    m, jm, put = env
    (a, ja), (b, jb) = put(("x", "y")), put((None, "y"))
    with fluxion.set_mesh(m):
        out = fnp.dot(a, b.T, out_sharding=P("x", None))
        with pytest.raises(ShardingTypeError) as e:  # the same operand types, no out_sharding
            fnp.dot(a, b.T)
        out2 = fnp.dot(a, b.T, out_sharding=P("x", None))  # and the cached executable again
    with jax.set_mesh(jm):
        jout = jnp.dot(ja, jb.T, out_sharding=JP("x", None))
        with pytest.raises(Exception) as je:
            jnp.dot(ja, jb.T)
    msg = "Contracting dimensions are sharded"
    assert type(je.value).__name__ == "ShardingTypeError" and msg in str(je.value)
    assert msg in str(e.value)
    _same(out, jout)
    _same(out2, jout)
    assert repr(out.sharding.spec) == repr(jout.sharding.spec) == "P('x', None)"


def test_scan_over_split_leading_dim_like_jax(env):
    m, jm, put = env
    (x, jx), (y, jy) = put(("x",)), put((None, "y"))
    f = lambda lax_, np_: lambda c, r: (c + r, r * 2)  # noqa: E731
    with pytest.raises(ValueError) as je:
        jax.lax.scan(f(jlax, jnp), jnp.zeros(4), (np.ones((8, 1), np.float32), jx))
    with pytest.raises(ValueError) as e:
        fluxion.lax.scan(f(flax, fnp), fnp.zeros(4), (np.ones((8, 1), np.float32), x))
    assert str(e.value) == str(je.value)
    assert "0th dimension of all xs should be replicated" in str(e.value)
    # split on another dimension: scanned, typed as JAX types it
    c, ys = fluxion.lax.scan(f(flax, fnp), fnp.zeros(4), y)
    jc, jys = jax.lax.scan(f(jlax, jnp), jnp.zeros(4), jy)
    _same(ys, jys)
    np.testing.assert_allclose(np.asarray(c), np.asarray(jc))


B3 = (np.arange(32, dtype=np.float32).reshape(2, 4, 4) % 5 + 4 * np.eye(4, dtype=np.float32))
IMG = np.arange(512, dtype=np.float32).reshape(8, 4, 4, 4) / 512
KER = np.arange(64, dtype=np.float32).reshape(4, 4, 2, 2) / 64


def _rules_program(api, np_, Ps, b, t, img, ker, v, key):
    la = api.lax.linalg
    return [np_.fft.fft(v), np_.fft.fft(v.astype(np.complex64), axis=0), la.svd(b)[1],
            la.eigh(b)[0], la.lu(b)[0], la.triangular_solve(b, t, left_side=True),
            np_.linalg.solve(b, t),
            api.lax.conv_general_dilated(img, ker, (1, 1), "SAME"),
            api.lax.conv_general_dilated(img, ker, (1, 1), "VALID"),
            api.lax.rng_bit_generator(key, (8, 4))[1]]


def test_rules_fft_conv_linalg_rng_like_jax(env):
    m, jm, put = env
    b, jb = put(("x",), B3)
    t, jt = put(("x", None, "y"), B3)
    img, jimg = put(("x",), IMG)
    ker, jker = put((), KER)
    v, jv = put((None, "y"))
    key, jkey = put((), np.arange(4, dtype=np.uint32))
    types, jtypes = [], []

    def f(*a):
        outs = _rules_program(fluxion, fnp, P, *a)
        types.extend(fluxion.typeof(o).str_short(False) for o in outs)
        return outs

    def jf(*a):
        outs = _rules_program(jax, jnp, JP, *a)
        jtypes.extend(str(jax.typeof(o)) for o in outs)
        return outs

    with fluxion.set_mesh(m):
        outs = fluxion.jit(f)(b, t, img, ker, v, key)
    with jax.set_mesh(jm):
        jouts = jax.jit(jf)(jb, jt, jimg, jker, jv, jkey)
    assert types == jtypes
    for o, jo in zip(outs[:-1], jouts[:-1]):  # the generator's bits are the backend's own
        assert _spec(o.sharding.spec) == _spec(jo.sharding.spec)
        np.testing.assert_allclose(np.asarray(o), np.asarray(jo), rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("case", [
    ("conv_feature", lambda api, Ps: lambda a, k: api.lax.conv_general_dilated(
        a, k, (1, 1), "SAME"), [(None, "x"), ()],
     "Please specify the output sharding via `out_sharding` parameter of `conv_general_dilated`"),
    ("conv_kernel", lambda api, Ps: lambda a, k: api.lax.conv_general_dilated(
        a, k, (1, 1), "SAME"), [("x",), ("y",)],
     "Please specify the output sharding via `out_sharding` parameter of `conv_general_dilated`"),
    ("trisolve_contracting", lambda api, Ps: lambda a, k: api.lax.linalg.triangular_solve(
        k, k, left_side=True), [(), ("x", "y")],
     "triangular solve input `b` must be unsharded on the contracting axis"),
    ("svd_matrix_dim", lambda api, Ps: lambda a, k: api.lax.linalg.svd(k), [(), (None, "y")],
     "Input 0 to svd must be unsharded on non-batch dimensions"),
    ("rfft_indivisible", lambda api, Ps: lambda a, k: api.numpy.fft.rfft(k[0]),
     [(), (None, None, "y")], "partitioned 4 times, but does not evenly divide"),
], ids=lambda c: c[0])
def test_rules_errors_like_jax(env, case):
    m, jm, put = env
    _, mk, (sa, sk), msg = case
    (a, ja), (k, jk) = put(sa, IMG), put(sk, IMG[:4] if "conv" in _ else B3)
    with fluxion.set_mesh(m), pytest.raises(Exception) as e:
        fluxion.jit(mk(fluxion, P))(a, k)
    with jax.set_mesh(jm), pytest.raises(Exception) as je:
        jax.jit(mk(jax, JP))(ja, jk)
    assert type(e.value).__name__ == type(je.value).__name__
    assert msg in str(je.value) and msg in str(e.value)


def test_conv_out_sharding_like_jax(env):
    m, jm, put = env
    (a, ja), (k, jk) = put((None, "x"), IMG), put((), KER)
    with fluxion.set_mesh(m):
        out = fluxion.jit(lambda u, w: fluxion.lax.conv_general_dilated(
            u, w, (1, 1), "SAME", out_sharding=P("x")))(a, k)
    with jax.set_mesh(jm):
        jout = jax.jit(lambda u, w: jax.lax.conv_general_dilated(
            u, w, (1, 1), "SAME", out_sharding=JP("x")))(ja, jk)
    assert _spec(out.sharding.spec) == _spec(jout.sharding.spec)
    np.testing.assert_allclose(np.asarray(out), np.asarray(jout), rtol=1e-5, atol=1e-5)


def test_no_argument_and_uncommitted_computations_run_on_the_set_mesh_like_jax(env):
    m, jm, put = env

    def prog(api, np_):
        return [api.jit(lambda: np_.arange(8.0) * 2)(), api.jit(lambda: (np_.zeros(3), 1.0))(),
                np_.arange(4.0), api.jit(lambda a: a * 2)(np.ones(4, np.float32))]

    with fluxion.set_mesh(m):
        outs = fluxion.tree_util.tree_leaves(prog(fluxion, fnp))
    with jax.set_mesh(jm):
        jouts = jax.tree_util.tree_leaves(prog(jax, jnp))
    for o, jo in zip(outs, jouts):
        assert repr(o.sharding) == repr(jo.sharding)  # NamedSharding(mesh, P(None,)) ...
        np.testing.assert_array_equal(np.asarray(o), np.asarray(jo))
    # outside set_mesh the same functions run on one device again (cached apart)
    assert fluxion.jit(lambda: fnp.arange(8.0) * 2)().sharding == fluxion.sharding.SingleDeviceSharding(
        fluxion.devices()[0])


def test_random_out_sharding_like_jax(env):
    m, jm, put = env

    def prog(api, Ps):
        k = api.random.key(0)
        return [api.random.normal(k, (8, 4), out_sharding=Ps("x")),
                api.random.uniform(k, (8, 4), out_sharding=Ps(None, "y")),
                api.random.randint(k, (8,), 0, 5, out_sharding=Ps("x")),
                api.random.bits(k, (8, 4), out_sharding=Ps("x", "y"))]

    types, jtypes = [], []
    with fluxion.set_mesh(m):
        outs = fluxion.jit(lambda: [types.append(fluxion.typeof(o).str_short(False)) or o
                                    for o in prog(fluxion, P)])()
        eager = prog(fluxion, P)
    with jax.set_mesh(jm):
        jouts = jax.jit(lambda: [jtypes.append(str(jax.typeof(o))) or o for o in prog(jax, JP)])()
    assert types == jtypes
    plain = prog(fluxion, lambda *a: None)  # the same values, unplaced
    for o, e, jo, p in zip(outs, eager, jouts, plain):
        assert _spec(o.sharding.spec) == _spec(e.sharding.spec) == _spec(jo.sharding.spec)
        np.testing.assert_array_equal(np.asarray(o), np.asarray(p))
        np.testing.assert_array_equal(np.asarray(e), np.asarray(p))

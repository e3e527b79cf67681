"""JAX's extension API for user-defined primitives (``Primitive.def_impl/def_abstract_eval``,
``jax.interpreters.ad/batching/mlir`` rule tables), run on Fluxion and on real JAX alike: the
same primitive definition, written once against either module set, gives the same values under
eager evaluation, jit, grad, jvp and vmap."""

from __future__ import annotations

import jax
import jax.extend as jex
import jax.interpreters.ad as jad
import jax.interpreters.batching as jbatching
import jax.interpreters.mlir as jmlir
import jax.numpy as jjnp
import numpy as np
import pytest

import fluxion
import fluxion.extend.core as fcore
import fluxion.interpreters.ad as fad
import fluxion.interpreters.batching as fbatching
import fluxion.interpreters.mlir as fmlir
import fluxion.numpy as fjnp


def _define(name, core, ad, batching, mlir, jnp):
    """A scaled matrix-vector product ``prim(w, x, scale=)`` with every rule, written as
    jax_md's UMA kernels write theirs."""
    p = core.Primitive(name)

    def impl(w, x, *, scale):
        return scale * (w @ x)

    p.def_impl(impl)
    p.def_abstract_eval(lambda w, x, *, scale: core_shaped(w.shape[0], x.dtype))
    mlir.register_lowering(p, mlir.lower_fun(impl, multiple_results=False))

    def jvp(primals, tangents, *, scale):
        w, x = primals
        tw, tx = tangents
        out = p.bind(w, x, scale=scale)
        t = None
        if type(tw) is not ad.Zero:
            t = p.bind(tw, x, scale=scale)
        if type(tx) is not ad.Zero:
            t2 = p.bind(w, tx, scale=scale)
            t = t2 if t is None else t + t2
        return out, t

    def transpose(ct, w, x, *, scale):
        if type(ct) is ad.Zero:
            return None, None
        gw = scale * jnp.outer(ct, x) if ad.is_undefined_primal(w) else None
        gx = scale * (w.T @ ct) if ad.is_undefined_primal(x) else None
        return gw, gx

    def batch(args, dims, *, scale):
        w, x = args
        dw, dx = dims
        if dw is not None:
            raise NotImplementedError
        x = jnp.moveaxis(x, dx, 0)
        return jnp.stack([p.bind(w, xi, scale=scale) for xi in x]), 0

    ad.primitive_jvps[p] = jvp
    ad.primitive_transposes[p] = transpose
    batching.primitive_batchers[p] = batch
    return p


def core_shaped(n, dtype):
    return _SHAPED[0]((n,), dtype)


_SHAPED = [None]


@pytest.fixture(scope="module")
def prims():
    import jax.core as jcore
    _SHAPED[0] = jcore.ShapedArray
    jp = _define("ext_test_mv", jex.core, jad, jbatching, jmlir, jjnp)
    _SHAPED[0] = fluxion.core.ShapedArray
    fp = _define("ext_test_mv", fcore, fad, fbatching, fmlir, fjnp)
    return jp, fp


def _abstract(lib_shaped):
    _SHAPED[0] = lib_shaped


W = np.arange(6.0, dtype=np.float32).reshape(2, 3) / 7
X = np.array([0.5, -1.0, 2.0], np.float32)
XS = np.arange(12.0, dtype=np.float32).reshape(4, 3) / 5


def _both(prims, make):
    import jax.core as jcore
    jp, fp = prims
    _abstract(jcore.ShapedArray)
    ref = make(jax, jp)
    _abstract(fluxion.core.ShapedArray)
    got = make(fluxion, fp)
    refs = ref if isinstance(ref, list) else [ref]
    gots = got if isinstance(got, list) else [got]
    assert len(refs) == len(gots)
    for r, g in zip(refs, gots):
        assert np.shape(g) == np.shape(r) and np.asarray(g).dtype == np.asarray(r).dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-6, atol=1e-6)
    return got


def test_eager_and_jit(prims):
    _both(prims, lambda lib, p: p.bind(W, X, scale=2.0))
    _both(prims, lambda lib, p: lib.jit(lambda w, x: p.bind(w, x, scale=2.0))(W, X))


def test_make_jaxpr_uses_abstract_eval(prims):
    _abstract(fluxion.core.ShapedArray)
    text = str(fluxion.make_jaxpr(lambda w, x: prims[1].bind(w, x, scale=2.0))(W, X))
    assert "ext_test_mv" in text and "f32[2]" in text


def test_grad_through_user_transpose(prims):
    def make(lib, p):
        f = lambda w, x: (p.bind(w, x, scale=3.0) ** 2).sum()  # noqa: E731
        gw, gx = lib.grad(f, argnums=(0, 1))(W, X)
        jgw, jgx = lib.jit(lib.grad(f, argnums=(0, 1)))(W, X)
        return [gw, gx, jgw, jgx]
    _both(prims, make)


def test_jvp(prims):
    def make(lib, p):
        out, t = lib.jvp(lambda x: p.bind(W, x, scale=1.5), (X,), (np.ones(3, np.float32),))
        return [out, t]
    _both(prims, make)


def test_vmap_user_batcher(prims):
    _both(prims, lambda lib, p: lib.vmap(lambda x: p.bind(W, x, scale=1.0))(XS))
    _both(prims, lambda lib, p: lib.vmap(lambda x: p.bind(W, x, scale=1.0), in_axes=1)(XS.T))


def test_tables_view_slots(prims):
    fp = prims[1]
    assert fp in fad.primitive_jvps and fp in fad.primitive_transposes
    assert fp in fbatching.primitive_batchers
    # the table gives back the rule it was given; the slot holds its adapter (tuples in)
    assert fad.primitive_jvps[fp].__qualname__ == "_define.<locals>.jvp"
    assert fp.jvp is not None
    # Fluxion's own primitives are in the tables, with JAX's calling convention
    from fluxion.lax import sin_p
    out, dim = fbatching.primitive_batchers[sin_p]([fjnp.zeros((2, 3))], [1])
    assert dim is not None and out.shape == (2, 3)


def test_deflinear_callback_primitive():
    # haiku's stateful_test defines a linear primitive with side effects in impl and transpose
    calls = []

    def make(core, ad, lib):
        p = core.Primitive("ext_test_cb")
        p.def_impl(lambda x: (calls.append("f"), x)[1])
        p.def_abstract_eval(lambda x: x)
        ad.deflinear(p, lambda ct: (calls.append("b"), (ct,))[1])
        return lib.grad(lambda x: p.bind(x) * 2.0)(3.0)

    ref = make(jex.core, jad, jax)
    seen_ref, calls[:] = list(calls), []
    got = make(fcore, fad, fluxion)
    assert float(got) == float(ref) == 2.0
    assert calls == seen_ref


def test_defjvp_and_defbilinear_match_jax():
    def make(core, ad, lib, jnp):
        p = core.Primitive("ext_test_mul")
        p.def_impl(lambda x, y: x * y)
        p.def_abstract_eval(lambda x, y: x)
        ad.defjvp(p, lambda g, x, y: g * y, lambda g, x, y: x * g)
        q = core.Primitive("ext_test_bimul")
        q.def_impl(lambda x, y: x * y)
        q.def_abstract_eval(lambda x, y: x)
        ad.defbilinear(q, lambda ct, x, y: ct * y, lambda ct, x, y: x * ct)
        x, y = jnp.asarray(1.5), jnp.asarray(-2.0)
        return [lib.grad(p.bind, argnums=(0, 1))(x, y), lib.grad(q.bind, argnums=(0, 1))(x, y)]

    ref = make(jex.core, jad, jax, jjnp)
    got = make(fcore, fad, fluxion, fjnp)
    np.testing.assert_allclose(np.asarray(got, dtype=np.float32), np.asarray(ref, dtype=np.float32))


def test_platform_lowering_and_unknown_platform():
    p = fcore.Primitive("ext_test_cpu_only")
    p.def_abstract_eval(lambda x: x)
    fmlir.register_lowering(p, fmlir.lower_fun(lambda x: x + 1, multiple_results=False),
                            platform="cpu")
    with fluxion.default_device(fluxion.devices("cpu")[0]):  # also in a run on a TPU
        assert float(fluxion.jit(p.bind)(1.0)) == 2.0
    with pytest.raises(ValueError, match="register_lowering: unknown platform"):
        fmlir.register_lowering(p, lambda ctx, x: [x], platform="abacus")


def test_effectful_abstract_eval():
    p = fcore.Primitive("ext_test_eff")
    p.def_effectful_abstract_eval(lambda x: (x, set()))
    assert p.abstract_eval(fluxion.core.ShapedArray((2,), np.float32)).shape == (2,)


def _host_primitive(name, core, mlir, jit):
    """``prim(i, x, y) -> (y[::-1] * k[i], x.sum())`` whose lowering calls back to Python (as
    equinox's noinline does), with the tables of either library."""
    k = np.array([2.0, 3.0], np.float32)
    p = core.Primitive(name)
    p.multiple_results = True
    p.def_abstract_eval(lambda i, x, y: (y, y.update(shape=())))
    calls = []

    def host(i, x, y):
        calls.append((type(i).__name__, i.dtype.name))
        return (y[::-1] * k[i.item()], np.sum(x, dtype=np.float32))

    def rule(ctx, i, x, y):
        outs, token, keep = mlir.emit_python_callback(
            ctx, host, None, [i, x, y], ctx.avals_in, ctx.avals_out,
            has_side_effect=False, sharding=None)
        assert token is None
        ctx.module_context.add_keepalive(keep)
        return outs

    mlir.register_lowering(p, rule)
    return jit(lambda i, x, y: p.bind(i, x, y)), calls


def test_emit_python_callback_like_jax():
    i = np.int32(1)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.array([1.0, -2.0, 4.0], np.float32)
    ref, ref_calls = _host_primitive("ext_host_j", jex.core, jmlir, jax.jit)
    got, got_calls = _host_primitive("ext_host_f", fcore, fmlir, fluxion.jit)
    with fluxion.default_device(fluxion.devices("cpu")[0]), \
            jax.default_device(jax.devices("cpu")[0]):
        r, g = ref(i, x, y), got(i, x, y)
    assert len(g) == len(r) == 2
    for a, b in zip(g, r):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert np.asarray(a).dtype == np.asarray(b).dtype
    # the callback sees NumPy arrays, as JAX's does
    assert got_calls == ref_calls == [("ndarray", "int32")]
    with pytest.raises(NotImplementedError, match="token"):
        fmlir.emit_python_callback(None, lambda: (), object(), [], [], [],
                                   has_side_effect=True)


def _seen_types(core, ad, batching, lib, jnp, table):
    """The container types a primitive's jvp and batching rules are handed."""
    seen = []
    p = core.Primitive(f"ext_types_{table}_{lib.__name__}")
    p.def_impl(lambda x, y: x * y)
    p.def_abstract_eval(lambda x, y: x)

    def jvp(primals, tangents):
        seen.append(("jvp", type(primals).__name__, type(tangents).__name__))
        (x, y), (tx, _) = primals, tangents
        return p.bind(x, y), ad.instantiate_zeros(tx) * y

    def batch(args, dims):
        seen.append(("batch", type(args).__name__, type(dims).__name__))
        return p.bind(*args), dims[0]

    ad.primitive_jvps[p] = jvp
    if table == "axis":
        batching.axis_primitive_batchers[p] = lambda size, name, tt, args, dims: batch(args, dims)
    else:
        batching.primitive_batchers[p] = batch
    x = jnp.arange(3.0)
    lib.jvp(p.bind, (x, x), (x, x))
    lib.vmap(p.bind)(x, x)
    return seen


@pytest.mark.parametrize("table", ["plain", "axis"])
def test_rules_get_tuples_like_jax(table):
    # equinox's vprim uses the dims it is handed as a vmap in_axes/out_axes tree: the
    # containers must be JAX's (tuples) for the tree structures to match
    ours = _seen_types(fcore, fad, fbatching, fluxion, fjnp, table)
    theirs = _seen_types(jex.core, jad, jbatching, jax, jjnp, table)
    assert ours == theirs

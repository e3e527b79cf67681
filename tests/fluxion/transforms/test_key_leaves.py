"""Typed PRNG key arrays as pytree leaves through every transformation, against jax 0.10.2.

Each case runs the same program with ``lib`` = real jax and ``lib`` = fluxion and compares the
results leaf by leaf: the tree structure, each leaf's dtype (``key<fry>``, float0, ...) and shape,
the key data bit for bit and the numbers within a tolerance.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import fluxion
from fluxion.tree_util import physical


def _leaf_summary(lib, leaf):
    if isinstance(leaf, (str, int, float)):
        return ("python", repr(leaf), (), None)
    if hasattr(leaf, "dtype") and lib.dtypes.issubdtype(leaf.dtype, lib.dtypes.prng_key):
        data = None if isinstance(leaf, lib.ShapeDtypeStruct) else \
            np.asarray(lib.random.key_data(leaf))
        return ("key", str(leaf.dtype), tuple(leaf.shape), data)
    if isinstance(leaf, lib.ShapeDtypeStruct):
        return ("struct", str(leaf.dtype), tuple(leaf.shape), None)
    dtype = np.asarray(leaf).dtype if not hasattr(leaf, "dtype") else leaf.dtype
    if dtype == lib.dtypes.float0:
        return ("float0", "float0", tuple(np.shape(leaf)), None)
    return ("array", str(dtype), tuple(np.shape(leaf)), np.asarray(leaf))


def _summary(lib, tree):
    leaves, treedef = lib.tree_util.tree_flatten(tree)
    return str(treedef), [_leaf_summary(lib, x) for x in leaves]


def _check(case):
    theirs = _summary(jax, case(jax))
    ours = _summary(fluxion, case(fluxion))
    assert ours[0] == theirs[0]
    assert len(ours[1]) == len(theirs[1])
    for o, t in zip(ours[1], theirs[1]):
        assert o[:3] == t[:3]
        if o[0] == "key":
            np.testing.assert_array_equal(o[3], t[3])
        elif o[0] == "array":
            np.testing.assert_allclose(o[3], t[3], rtol=1e-5, atol=1e-6)


def _f0(lib, shape=()):
    return np.zeros(shape, lib.dtypes.float0)


def _jit(lib):
    k = lib.random.key(0)
    return lib.jit(lambda k: (lib.random.split(k), k, lib.random.normal(k, (2,))))(k)


def _jit_makes_key(lib):
    return lib.jit(lambda: lib.random.split(lib.random.key(3), 2))()


def _grad_aux(lib):
    f = lambda x, k: (x * lib.random.normal(k), (k, lib.random.split(k)))
    return lib.grad(f, has_aux=True)(1.5, lib.random.key(1))


def _vjp(lib):
    ks = lib.random.split(lib.random.key(0), 3)
    out, f_vjp = lib.vjp(lambda x, ks: (x * lib.vmap(lib.random.normal)(ks), ks), 2.0, ks)
    return out, f_vjp((np.ones(3, np.float32), _f0(lib, (3,))))


def _jvp(lib):
    k = lib.random.key(0)
    return lib.jvp(lambda x, k: (x * lib.random.normal(k), lib.random.split(k)),
                   (1.0, k), (2.0, _f0(lib)))


def _linearize(lib):
    k = lib.random.key(0)
    y, f_jvp = lib.linearize(lambda x, k: x * lib.random.normal(k), 1.0, k)
    return y, f_jvp(3.0, _f0(lib))


def _vmap(lib):
    ks = lib.random.split(lib.random.key(0), 6).reshape(2, 3)
    f = lambda k: (lib.random.split(k[0]), lib.random.normal(k[1]), k)
    return lib.vmap(f, in_axes=1, out_axes=(0, 0, 1))(ks)


def _vmap_negative_axes(lib):
    ks = lib.random.split(lib.random.key(0), 6).reshape(2, 3)
    f = lambda k: (k, lib.random.split(k[0]))
    return lib.vmap(f, in_axes=-1, out_axes=-1)(ks), lib.vmap(lambda k: k.shape, in_axes=-1)(ks)


def _scan(lib):
    ks = lib.random.split(lib.random.key(2), 3)
    body = lambda c, x: (lib.random.fold_in(c, 1), (x, lib.random.uniform(x)))
    return lib.lax.scan(body, lib.random.key(0), ks)


def _cond(lib):
    k = lib.random.key(0)
    return [lib.lax.cond(p, lambda k: lib.random.split(k)[0], lambda k: k, k)
            for p in (True, False)]


def _while_fori(lib):
    k = lib.random.key(0)
    w = lib.lax.while_loop(lambda c: c[0] < 3,
                           lambda c: (c[0] + 1, lib.random.split(c[1])[0]), (0, k))
    return w, lib.lax.fori_loop(0, 3, lambda i, c: lib.random.fold_in(c, i), k)


def _custom_jvp(lib):
    @lib.custom_jvp
    def f(x, k):
        return x * lib.random.normal(k)

    @f.defjvp
    def f_jvp(primals, tangents):
        x, k = primals
        return f(x, k), 2.0 * tangents[0] * lib.random.normal(k)

    k = lib.random.key(0)
    return lib.grad(f)(1.0, k), lib.jvp(f, (1.0, k), (1.0, _f0(lib)))[1] * 1.0


def _custom_vjp(lib):
    @lib.custom_vjp
    def f(x, k):
        return x * lib.random.normal(k)

    f.defvjp(lambda x, k: (f(x, k), k),
             lambda k, g: (g * lib.random.uniform(k), np.zeros(k.shape, lib.dtypes.float0)))
    k = lib.random.key(0)
    return lib.grad(f)(1.0, k), lib.vjp(f, 1.0, k)[1](1.0)


def _remat(lib):
    k = lib.random.key(0)
    f = lib.checkpoint(lambda x, k: (x * lib.random.normal(k), k))
    return lib.value_and_grad(lambda x, k: f(x, k)[0])(1.0, k), f(1.0, k)


def _eval_shape(lib):
    k = lib.random.key(0)
    f = lambda k: (lib.random.split(k), lib.random.normal(k), k)
    return (lib.eval_shape(f, k),
            lib.eval_shape(f, lib.ShapeDtypeStruct((), k.dtype)))


def _device_put(lib):
    k = lib.random.key(0)
    return lib.device_put({"k": lib.random.split(k, 2), "x": np.ones(2, np.float32)},
                          lib.devices()[0])


def _shard_map(lib):
    mesh = lib.sharding.Mesh(np.array(lib.devices()[:1]), ("i",))
    spec = lib.sharding.PartitionSpec("i")
    f = lambda ks: (lib.vmap(lambda k: lib.random.split(k)[0])(ks), ks)
    return lib.shard_map(f, mesh=mesh, in_specs=spec, out_specs=spec)(
        lib.random.split(lib.random.key(0), 1))


def _nested(lib):
    ks = lib.random.split(lib.random.key(0), 3)
    g = lib.grad(lambda x, k: x * lib.random.normal(k))
    return lib.jit(lib.vmap(g, in_axes=(None, 0)))(1.0, ks)


def _tree_ops(lib):
    k = lib.random.key(0)
    tree = {"k": k, "x": np.ones(2, np.float32)}
    dtypes = lib.tree_util.tree_map(lambda x: str(x.dtype), tree)
    return dtypes, len(lib.tree_util.tree_leaves(tree)), lib.tree_util.tree_map(lambda x: x, tree)


def _at_update(lib):
    ks = lib.random.split(lib.random.key(0), 3)
    return (ks.at[1].set(lib.random.key(5)), ks.at[2].get(),
            lib.jit(lambda ks, k: ks.at[0].set(k))(ks, lib.random.key(7)))


def _jnp_key_ops(lib):
    ks = lib.random.split(lib.random.key(0), 4).reshape(2, 2)
    jnp = lib.numpy
    cond = np.array([True, False])
    return (jnp.stack([ks, ks], axis=-1), jnp.concatenate([ks, ks[:1]]),
            jnp.concatenate([ks, ks], axis=None), jnp.where(cond, ks, ks[::-1]),
            lib.jit(lambda a, b: jnp.stack([a, b], axis=1))(ks[0], ks[1]))


CASES = [_jit, _jit_makes_key, _grad_aux, _vjp, _jvp, _linearize, _vmap, _vmap_negative_axes,
         _scan, _cond, _while_fori, _custom_jvp, _custom_vjp, _remat, _eval_shape, _device_put,
         _shard_map, _nested, _tree_ops, _at_update, _jnp_key_ops]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__[1:] for c in CASES])
def test_key_leaves_like_jax(case):
    _check(case)


def _partial_eval_outputs(lib, pe, lu, core):
    k = lib.random.key(0)
    aval = core.ShapedArray((3,), k.dtype)  # a typed key's aval, as flax.linen's scan builds
    f = lambda ks, x: [lib.vmap(lambda kk: lib.random.fold_in(kk, 1))(ks), x + 1.0,
                       lib.random.key(2)]
    fun = lu.wrap_init(f, debug_info=lib.api_util.debug_info("f", f, (None, None), {}))
    _, out, _ = pe.trace_to_jaxpr_nounits(
        fun, [pe.PartialVal.unknown(aval), pe.PartialVal.known(np.float32(1))])
    return str(aval), [(p.is_known(), str(p.get_aval()) if not p.is_known()
                        else str(lib.typeof(p.get_known()))) for p in out]


def test_partial_eval_key_avals_like_jax():
    import jax.core
    from jax.extend import linear_util as jlu
    from jax.interpreters import partial_eval as jpe

    import fluxion.api_util  # noqa: F401
    import fluxion.core
    from fluxion.extend import linear_util as flu
    from fluxion.interpreters import partial_eval as fpe

    assert (_partial_eval_outputs(fluxion, fpe, flu, fluxion.core)
            == _partial_eval_outputs(jax, jpe, jlu, jax.core))


def test_physical_view_sees_key_data():
    k = fluxion.random.split(fluxion.random.key(0), 4)
    (data,), treedef = physical.tree_flatten(k)
    assert data.dtype == np.uint32 and data.shape == (4, 2)
    back = physical.tree_unflatten(treedef, [data])
    np.testing.assert_array_equal(fluxion.random.key_data(back), fluxion.random.key_data(k))
    assert fluxion.tree_util.tree_leaves(k)[0] is k


def test_key_tangent_must_be_float0_of_key_shape():
    k = fluxion.random.key(0)
    with pytest.raises(TypeError, match="float0 of shape"):
        fluxion.jvp(lambda k: k, (k,), (np.zeros((2,), fluxion.dtypes.float0),))

"""Small JAX behaviours the ecosystem's libraries rely on (flax, jax_md), each against real JAX:
``lax.dtype``, ``sharding.get_abstract_mesh()`` without a mesh, the mesh predicates,
``eval_shape`` on abstract values, ``lax.scan(_split_transpose=)``."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import fluxion
import fluxion.numpy as fjnp
from fluxion import lax


@pytest.mark.parametrize("x", [1.0, 1, True, np.int8(3), np.zeros(2, np.uint16), "bfloat16",
                               np.float16, np.complex64])
def test_lax_dtype(x):
    assert lax.dtype(x) == jax.lax.dtype(x)


def test_lax_dtype_of_arrays():
    assert lax.dtype(fjnp.ones(2, fjnp.int8)) == jax.lax.dtype(jjnp.ones(2, jjnp.int8))


def test_abstract_mesh_without_mesh():
    got, ref = fluxion.sharding.get_abstract_mesh(), jax.sharding.get_abstract_mesh()
    assert got.axis_sizes == ref.axis_sizes == ()
    assert got.axis_names == ref.axis_names and got.empty == ref.empty
    for name in ("are_all_axes_explicit", "are_all_axes_auto", "are_all_axes_manual"):
        assert getattr(got, name) == getattr(ref, name), name


@pytest.mark.parametrize("kind", ["Explicit", "Auto", "Manual"])
def test_mesh_predicates(kind):
    fm = fluxion.sharding.Mesh(np.array(fluxion.devices()[:1]), ("x",),
                               axis_types=(getattr(fluxion.sharding.AxisType, kind),))
    jm = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",),
                           axis_types=(getattr(jax.sharding.AxisType, kind),))
    for m, r in ((fm, jm), (fm.abstract_mesh, jm.abstract_mesh)):
        for name in ("are_all_axes_explicit", "are_all_axes_auto", "are_all_axes_manual"):
            assert getattr(m, name) == getattr(r, name), (kind, name)


@pytest.mark.parametrize("weak", [False, True])
def test_eval_shape_on_shaped_arrays(weak):
    def f(a, b, t=0):
        return (a - b).sum(), a * 2

    got = fluxion.eval_shape(f, fluxion.core.ShapedArray((3,), np.float32, weak_type=weak),
                             fluxion.core.ShapedArray((3,), np.float32), t=0)
    ref = jax.eval_shape(f, jax.core.ShapedArray((3,), np.float32, weak_type=weak),
                         jax.core.ShapedArray((3,), np.float32), t=0)
    for g, r in zip(got, ref):
        assert (g.shape, g.dtype, g.weak_type) == (r.shape, r.dtype, r.weak_type)


def test_eval_shape_refuses_other_values():
    with pytest.raises(TypeError, match="not a valid array type"):
        fluxion.eval_shape(lambda x: x, object())


def test_scan_split_transpose_is_accepted():
    def loss(scan, c0, xs, **kw):
        return scan(lambda c, x: (c * x, c + x), c0, xs, **kw)[1].sum()

    xs = np.linspace(0.5, 1.5, 4, dtype=np.float32)
    ref = jax.grad(loss, argnums=1)(jax.lax.scan, 1.0, xs, _split_transpose=True)
    got = fluxion.grad(loss, argnums=1)(lax.scan, 1.0, xs, _split_transpose=True)
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-6)


def test_make_jaxpr_takes_axis_env_none():
    # haiku's jaxpr_info passes axis_env always (None when not given), positionally after
    # static_argnums as in JAX's signature
    f = lambda x: x * 2  # noqa: E731
    got = fluxion.make_jaxpr(f, (), None)(np.ones(2, np.float32))
    ref = jax.make_jaxpr(f, (), None)(np.ones(2, np.float32))
    assert [(a.shape, a.dtype) for a in got.out_avals] == [(a.shape, a.dtype) for a in ref.out_avals]
    assert fluxion.make_jaxpr(f, axis_env=[])(1.0) is not None
    with pytest.raises(NotImplementedError, match="axis_env"):
        fluxion.make_jaxpr(f, axis_env=[("i", 2)])


@pytest.mark.parametrize("lib", ["jax", "fluxion"])
def test_checkpoint_traces_outside_transformations(lib):
    # as in JAX, checkpoint stages its function even when called eagerly: the function sees a
    # tracer and another trace state (haiku's check_jax_usage relies on it)
    import importlib
    mod = jax if lib == "jax" else fluxion
    jex_core = importlib.import_module(f"{lib}.extend.core")
    outer = jex_core.get_opaque_trace_state(convention="haiku")
    seen = []

    def f(x):
        seen.append((isinstance(x, mod.core.Tracer),
                     jex_core.get_opaque_trace_state(convention="haiku") != outer))
        return x * 3.0

    assert float(mod.checkpoint(f)(2.0)) == 6.0
    assert float(mod.grad(mod.checkpoint(f))(2.0)) == 3.0
    assert seen[0] == (True, True)


@pytest.mark.parametrize("jitted", [False, True])
def test_sharding_constraint_on_abstract_mesh_resolves_to_context_mesh(jitted):
    # flax's partitioning builds NamedSharding(get_abstract_mesh(), spec) under set_mesh
    results = []
    for mod, xnp in ((jax, jjnp), (fluxion, fjnp)):
        if len(mod.devices()) < 4:
            pytest.skip("needs 4 host devices")
        mesh = mod.make_mesh((2, 2), ("in", "out"),
                             axis_types=(mod.sharding.AxisType.Auto,) * 2)
        with mod.set_mesh(mesh):
            s = mod.sharding.NamedSharding(mod.sharding.get_abstract_mesh(),
                                           mod.sharding.PartitionSpec("in", "out"))

            def f(a, mod=mod, s=s):
                return mod.lax.with_sharding_constraint(a * 2, s)
            y = (mod.jit(f) if jitted else f)(xnp.ones((2, 6)))
        results.append((type(y.sharding.mesh).__name__, tuple(y.sharding.spec),
                        np.asarray(y).tolist()))
    assert results[0] == results[1]


@pytest.mark.parametrize("weak", [False, True])
def test_shaped_array_str_and_repr(weak):
    # flax's spmd tests look for 'float32[2@X,4]' in str(jax.typeof(...))
    got = fluxion.core.ShapedArray((2, 3), np.float32, weak_type=weak)
    ref = jax.core.ShapedArray((2, 3), np.float32, weak_type=weak)
    assert (str(got), repr(got)) == (str(ref), repr(ref))


def test_array_equal_on_typed_keys():
    # flax's rngs tests compare keys with jnp.array_equal
    def cases(mod, xnp):
        a, b = mod.random.key(0), mod.random.key(1)
        return [bool(xnp.array_equal(a, b)), bool(xnp.array_equal(a, a)),
                bool(xnp.array_equal(mod.random.split(a, 2), mod.random.split(a, 3))),
                bool(xnp.array_equal(mod.random.split(a, 2), mod.random.split(a, 2))),
                bool(xnp.array_equal(a, xnp.zeros(2, xnp.uint32)))]
    assert cases(fluxion, fjnp) == cases(jax, jjnp)


def test_equal_not_equal_on_typed_keys():
    # flax's nnx scan tests: assert jnp.not_equal(keys[0], keys[1])
    def cases(mod, xnp):
        k = mod.random.split(mod.random.key(0), 3)
        return [np.asarray(xnp.not_equal(k[0], k[1])).tolist(),
                np.asarray(xnp.equal(k[0], k[0])).tolist(),
                np.asarray(xnp.equal(k, k[1])).tolist(),
                np.asarray(xnp.not_equal(k, k[1])).tolist()]
    assert cases(fluxion, fjnp) == cases(jax, jjnp)


def test_custom_vjp_cotangent_none_where_argument_has_none():
    # flax nnx's custom_vjp returns states whose structure holds None where the argument does
    def run(mod):
        @mod.custom_vjp
        def f(p):
            return p["a"] * 2.0 + p["c"][1]

        def fwd(p):
            return f(p), None

        def bwd(res, g):
            return ({"a": g * 2.0, "b": None, "c": None},)
        f.defvjp(fwd, bwd)
        p = {"a": np.float32(1.0), "b": None, "c": (np.float32(1.0), np.float32(2.0))}
        return mod.tree_util.tree_map(lambda x: np.asarray(x).tolist(), mod.grad(f)(p))
    assert run(fluxion) == run(jax)
    with pytest.raises(TypeError, match="cotangent 0 has structure"):
        @fluxion.custom_vjp
        def h(p):
            return p["a"]
        h.defvjp(lambda p: (h(p), None), lambda r, g: ({"a": g, "z": g},))
        fluxion.grad(h)({"a": 1.0})


@pytest.mark.parametrize("pred", [True, False])
def test_cond_old_five_argument_form(pred):
    # cond(pred, true_operand, true_fun, false_operand, false_fun): jax_md's neighbor lists
    def run(mod):
        out = mod.lax.cond(pred, (np.float32(1.0), np.float32(2.0)), lambda t: t[0] + t[1],
                           np.float32(5.0), lambda x: x * 3.0)
        return np.asarray(out).tolist(), np.asarray(out).dtype
    assert run(fluxion) == run(jax)
    with pytest.raises(TypeError, match="should be callable"):
        fluxion.lax.cond(pred, 1.0, 2.0)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_mean_var_of_16_bit_floats_computed_in_float32(dt):
    # 4*200*200 values of 1.5 sum past float16's range: JAX averages in float32 (haiku's
    # mixed-precision ResNet doctest normalises float16 activations with BatchNorm)
    def run(xnp):
        x = xnp.ones((4, 200, 200, 3), dt) * 1.5
        outs = [xnp.mean(x, axis=(0, 1, 2)), xnp.var(x, axis=(0, 1, 2)),
                xnp.std(x, axis=(0, 1, 2)), xnp.mean(x, keepdims=True)]
        return [(np.asarray(o, np.float32).tolist(), str(o.dtype), o.weak_type) for o in outs]
    assert run(fjnp) == run(jjnp)

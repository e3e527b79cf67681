"""The lax names added for JAX's surface (issue 12), against real JAX: composed helpers,
shape tuples, XLA's RNGs, zeta/betainc, patches, ragged_dot, approx top-k, platform_dependent,
composite, DotAlgorithmPreset and the default matmul precision."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from _compare import assert_close, assert_same

import fluxion
import fluxion.numpy as jnp
from fluxion import lax

RNG = np.random.default_rng(0)


def test_tile_split_stack_unstack():
    x = RNG.normal(size=(2, 3)).astype(np.float32)
    assert_same(lax.tile(x, (2, 3)), jax.lax.tile(x, (2, 3)))
    for ours, theirs in zip(lax.split(x, (1, 2), axis=1), jax.lax.split(x, (1, 2), axis=1)):
        assert_same(ours, theirs)
    assert_same(lax.stack([x, x * 2], axis=-1), jax.lax.stack([x, x * 2], axis=-1))
    for ours, theirs in zip(lax.unstack(x, 1), jax.lax.unstack(x, 1)):
        assert_same(ours, theirs)
    with pytest.raises(ValueError, match="lax.split"):
        lax.split(x, (1, 1), axis=1)
    with pytest.raises(TypeError, match="lax.tile"):
        lax.tile(x, (2,))


def test_broadcast_like_shapes_empty_index_take():
    assert lax.broadcast_shapes((2, 1), (3,), ()) == jax.lax.broadcast_shapes((2, 1), (3,), ())
    with pytest.raises(ValueError):
        lax.broadcast_shapes((2,), (3,))
    a = np.arange(3, dtype=np.int32)
    assert_same(lax.broadcast_like(a, np.zeros((2, 3))), jax.lax.broadcast_like(a, np.zeros((2, 3))))
    e = lax.empty((2, 3), jnp.float32)
    assert e.shape == (2, 3) and e.dtype == np.float32
    src = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    idx = (np.array([1, -1, 0], np.int32), np.array([2, 5, 3], np.int32))
    assert_same(lax.index_take(src, idx, (0, 2)), jax.lax.index_take(src, idx, (0, 2)))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "uint32"])
def test_mulhi(dtype):
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, 50, endpoint=True).astype(dtype)
    y = RNG.integers(info.min, info.max, 50, endpoint=True).astype(dtype)
    x[:2], y[:2] = info.min, info.max
    assert_same(lax.mulhi(x, y), jax.lax.mulhi(x, y))


def test_shape_tuples():
    dn = ("NHWC", "HWIO", "NHWC")
    for pad in ("SAME", "VALID", [(1, 2), (0, 1)]):
        args = ((2, 9, 8, 3), (3, 2, 3, 5), (2, 1), pad)
        assert lax.conv_general_shape_tuple(*args, dn) == jax.lax.conv_general_shape_tuple(*args, dn)
        assert lax.conv_transpose_shape_tuple(*args, dn) == \
            jax.lax.conv_transpose_shape_tuple(*args, dn)
        assert lax.conv_shape_tuple((2, 3, 9, 8), (5, 3, 3, 2), (2, 1), pad) == \
            jax.lax.conv_shape_tuple((2, 3, 9, 8), (5, 3, 3, 2), (2, 1), pad)
    assert lax.conv_general_permutations(dn) == jax.lax.conv_general_permutations(dn)
    assert lax.reduce_window_shape_tuple((9, 7), (3, 2), (2, 1), ((1, 0), (0, 2)), (2, 1), (1, 2)) \
        == jax.lax.reduce_window_shape_tuple((9, 7), (3, 2), (2, 1), ((1, 0), (0, 2)), (2, 1), (1, 2))


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32])
def test_rng_bit_generator_matches_jax(dtype):
    key = np.array([1, 2, 3, 4], np.uint32)
    ours = lax.rng_bit_generator(key, (3, 5), dtype)
    theirs = jax.lax.rng_bit_generator(key, (3, 5), dtype)
    assert_same(ours, theirs)
    jitted = fluxion.jit(lambda k: lax.rng_bit_generator(k, (3, 5), dtype))(key)
    assert_same(jitted, theirs)
    with pytest.raises(TypeError, match="rng_bit_generator"):
        lax.rng_bit_generator(key, (2,), np.int32)


def test_rng_uniform():
    out = lax.rng_uniform(np.float32(2), np.float32(3), (100,))
    assert out.shape == (100,) and out.dtype == np.float32
    assert float(jnp.min(out)) >= 2 and float(jnp.max(out)) < 3


def test_zeta():
    x = np.array([2.0, 3.0, 1.5, 4.5], np.float32)
    q = np.array([1.0, 2.0, 0.5, 3.0], np.float32)
    assert_close(lax.zeta(x, q), jax.lax.zeta(x, q))


def test_betainc_values_and_edges():
    scipy_special = pytest.importorskip("scipy.special")
    ea = np.array([0, 1, 0, 2, -1, np.nan, np.inf, 1, 2], np.float32)
    eb = np.array([1, 0, 0, np.inf, 1, 1, 1, 2, 3], np.float32)
    ex = np.array([0.5, 0.5, 0.5, 0.3, 0.5, 0.5, 0.5, 0.0, 1.0], np.float32)
    a = np.concatenate([RNG.uniform(0.1, 10, 300).astype(np.float32), ea])
    b = np.concatenate([RNG.uniform(0.1, 10, 300).astype(np.float32), eb])
    x = np.concatenate([RNG.uniform(0, 1, 300).astype(np.float32), ex])
    ours = np.asarray(lax.betainc(a, b, x))
    ref = scipy_special.betainc(a[:300].astype(np.float64), b[:300].astype(np.float64),
                                x[:300].astype(np.float64))
    np.testing.assert_allclose(ours[:300], ref, atol=2e-5)
    assert_close(ours[300:], jax.lax.betainc(ea, eb, ex))
    assert_close(ours[:300], jax.lax.betainc(a[:300], b[:300], x[:300]), 1e-5)


def test_betainc_float64(x64):
    scipy_special = pytest.importorskip("scipy.special")
    a, b = RNG.uniform(0.2, 20, 100), RNG.uniform(0.2, 20, 100)
    x = RNG.uniform(0, 1, 100)
    np.testing.assert_allclose(np.asarray(lax.betainc(a, b, x)),
                               scipy_special.betainc(a, b, x), rtol=1e-10, atol=1e-13)


def test_betainc_derivative():
    g = fluxion.grad(lambda x: lax.betainc(2.0, 3.0, x))(0.3)
    assert_close(g, jax.grad(lambda x: jax.lax.betainc(2.0, 3.0, x))(0.3))
    with pytest.raises(ValueError, match="a and b"):
        fluxion.grad(lambda a: lax.betainc(a, 3.0, 0.4))(2.0)


def test_patches_small():
    x = RNG.normal(size=(1, 2, 5, 4)).astype(np.float32)
    assert_close(lax.conv_general_dilated_patches(x, (2, 2), (1, 2), "VALID"),
                 jax.lax.conv_general_dilated_patches(x, (2, 2), (1, 2), "VALID"))


@pytest.mark.slow  # ~12 s of compilation: dilations, layouts and the unshared convolution
def test_patches_and_local():
    x = RNG.normal(size=(2, 3, 7, 6)).astype(np.float32)
    for kw in (dict(rhs_dilation=(2, 1)), dict(lhs_dilation=(1, 2))):
        ours = lax.conv_general_dilated_patches(x, (3, 2), (2, 1), [(1, 1), (0, 1)], **kw)
        theirs = jax.lax.conv_general_dilated_patches(x, (3, 2), (2, 1), [(1, 1), (0, 1)], **kw)
        assert_close(ours, theirs)
    xh = np.transpose(x, (0, 2, 3, 1))
    dn = ("NHWC", "HWIO", "NHWC")
    assert_close(lax.conv_general_dilated_patches(xh, (2, 2), (1, 1), "VALID", dimension_numbers=dn),
                 jax.lax.conv_general_dilated_patches(xh, (2, 2), (1, 1), "VALID",
                                                      dimension_numbers=dn))
    w = RNG.normal(size=(6, 5, 3 * 2 * 2, 4)).astype(np.float32)  # HWIO, output spatial 6 x 5
    ours = lax.conv_general_dilated_local(xh, w, (1, 1), "VALID", (2, 2), dimension_numbers=dn)
    theirs = jax.lax.conv_general_dilated_local(xh, w, (1, 1), "VALID", (2, 2),
                                                dimension_numbers=dn)
    assert_close(ours, theirs, 1e-4)
    w2 = RNG.normal(size=(4, 3 * 2, 7, 5)).astype(np.float32)  # OIHW
    assert_close(lax.conv_general_dilated_local(x, w2, (1, 1), "VALID", (1, 2)),
                 jax.lax.conv_general_dilated_local(x, w2, (1, 1), "VALID", (1, 2)), 1e-4)


def test_ragged_dot():
    lhs = RNG.normal(size=(7, 4)).astype(np.float32)
    rhs = RNG.normal(size=(3, 4, 5)).astype(np.float32)
    gs = np.array([2, 0, 4], np.int32)  # the last row belongs to no group
    assert_close(lax.ragged_dot(lhs, rhs, gs), jax.lax.ragged_dot(lhs, rhs, gs), 1e-5)
    f = lambda l, r: lax.ragged_dot(l, r, gs).sum()  # noqa: E731
    g = lambda l, r: jax.lax.ragged_dot(l, r, gs).sum()  # noqa: E731
    assert_close(fluxion.grad(f, (0, 1))(lhs, rhs), jax.grad(g, (0, 1))(lhs, rhs), 1e-5)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_approx_top_k(dim):
    x = RNG.permutation(24).reshape(4, 6).astype(np.float32)
    assert_same(lax.approx_max_k(x, 2, reduction_dimension=dim),
                jax.lax.approx_max_k(x, 2, reduction_dimension=dim))
    assert_same(lax.approx_min_k(x, 3, reduction_dimension=dim),
                jax.lax.approx_min_k(x, 3, reduction_dimension=dim))


def test_platform_dependent_and_composite():
    # the branch of the platform the program runs on (the reference jax runs on the CPU)
    here = fluxion.default_backend()
    other = "tpu" if here == "cpu" else "cpu"
    x = np.float32(2.0)
    ours = fluxion.jit(lambda v: lax.platform_dependent(v, cpu=lambda t: t * 10,
                                                        default=lambda t: t))(x)
    theirs = jax.jit(lambda v: jax.lax.platform_dependent(v, cpu=lambda t: t * 10,
                                                          default=lambda t: t))(x)
    assert_same(ours, theirs if here == "cpu" else theirs / 10)
    assert float(lax.platform_dependent(x, **{other: lambda t: t}, default=lambda t: -t)) == -2.0
    assert float(lax.platform_dependent(x, **{here: lambda t: t}, default=lambda t: -t)) == 2.0
    for lib in (jax, fluxion):  # JAX's NotImplementedError (an identity branch would be
        # forwarded around the cond, as in jax, and never lowered)
        with pytest.raises(NotImplementedError, match="platform"):
            lib.jit(lambda v, lib=lib: lib.lax.platform_dependent(v, **{other: lambda t: t * 3}))(x)
    tangent = lax.composite(lambda v: lax.sin(v) / lax.cos(v), name="my.tangent")
    jtangent = jax.lax.composite(lambda v: jax.lax.sin(v) / jax.lax.cos(v), name="my.tangent")
    v = np.array([0.0, 0.5, 1.0], np.float32)
    assert_close(fluxion.jit(tangent)(v), jax.jit(jtangent)(v))


_PLATFORM_CASES = {
    "no_branches": lambda pd: pd(1.0), "no_branches_no_args": lambda pd: pd(),
    "only_default": lambda pd: pd(1.0, default=lambda x: x + 1),
    "other_platform": lambda pd: pd(1.0, foo=lambda x: x * 2, bar=lambda x: x * 3),
    "upper_case": lambda pd: pd(1.0, CPU=lambda x: x * 2, TPU=lambda x: x * 3),
    "gpu": lambda pd: pd(1.0, gpu=lambda x: x),
    "not_callable": lambda pd: pd(1.0, cpu=3), "default_not_callable": lambda pd: pd(
        1.0, cpu=lambda x: x, default=3),
    "arg_as_keyword": lambda pd: pd(x=1.0, cpu=lambda x: x),
    # eagerly only the chosen branch runs: the other's mismatch and error go unseen
    "mismatch": lambda pd: pd(np.float32(1.0), cpu=lambda x: x, tpu=lambda x: (x, x)),
    "other_raises": lambda pd: pd(np.float32(1.0), cpu=lambda x: x, tpu=lambda x: 1 / 0),
    "pytree": lambda pd: pd({"a": 1.0}, cpu=lambda d: d["a"] * 2, tpu=lambda d: d["a"]),
}


@pytest.mark.parametrize("name", sorted(_PLATFORM_CASES))
@pytest.mark.parametrize("jit", [False, True])
def test_platform_dependent_arguments_as_jax(name, jit):
    if fluxion.default_backend() != "cpu":
        pytest.skip("the reference jax runs on the CPU")
    if jit and name in ("no_branches", "no_branches_no_args"):
        pytest.skip("jax 0.10.2 fails inside its own switch (safe_zip TypeError) under jit")
    out = {}
    for lib in (jax, fluxion):
        fn = _PLATFORM_CASES[name]
        try:
            r = (lib.jit(lambda: fn(lib.lax.platform_dependent))() if jit
                 else fn(lib.lax.platform_dependent))
            out[lib.__name__] = ("Array" if isinstance(r, lib.Array) else type(r),
                                 np.asarray(r).dtype, getattr(r, "weak_type", None),
                                 np.asarray(r).tolist())
        except Exception as ex:  # noqa: BLE001 - the raised type is what is compared
            out[lib.__name__] = (type(ex), str(ex))
    theirs, ours = out["jax"], out["fluxion"]
    assert (ours[0] is theirs[0] if isinstance(ours[1], str) else ours == theirs), out
    if ours[0] in (NotImplementedError, ValueError, TypeError):
        assert "platform_dependent" in ours[1], out
        if "callable" in theirs[1]:  # the branch that is not callable is named, as jax's
            assert theirs[1].split(" must")[0] == ours[1].split(" must")[0], out



def test_dot_algorithm_preset_and_default_precision():
    assert [m for m in lax.DotAlgorithmPreset.__members__] == \
        [m for m in jax.lax.DotAlgorithmPreset.__members__]
    a = RNG.normal(size=(3, 4)).astype(np.float32)
    out = lax.dot(a, a.T, precision=lax.DotAlgorithmPreset.F32_F32_F32)
    assert_close(out, a @ a.T, 1e-5)
    with fluxion.default_matmul_precision(None):  # a TPU run of the suite sets "highest"
        text = str(fluxion.make_jaxpr(lambda m: lax.dot(m, m.T))(a))
    with fluxion.default_matmul_precision("highest"):
        text_hi = str(fluxion.make_jaxpr(lambda m: lax.dot(m, m.T))(a))
        assert_close(jnp.dot(a, a.T), a @ a.T, 1e-5)
    assert "HIGHEST" not in text and "HIGHEST" in text_hi


@pytest.mark.slow  # JAX's multinomial alone takes ~10 s to compile
def test_random_multinomial():
    # one call covering a batch of n, an explicit shape and an integer dtype (JAX's multinomial
    # takes ~10 s to compile: keep this to one program per library)
    p = np.array([[0.2, 0.3, 0.5], [0.6, 0.0, 0.4]], np.float32)
    n = np.array([5.0, 7.0], np.float32)
    ours = fluxion.jit(lambda k: fluxion.random.multinomial(k, n, p, shape=(2, 3),
                                                            dtype=jnp.int32))(fluxion.random.key(0))
    theirs = jax.random.multinomial(jax.random.key(0), n, p, shape=(2, 3), dtype=jjnp.int32)
    assert_same(ours, theirs)
    assert np.array_equal(np.asarray(ours).sum(-1), n.astype(np.int32))

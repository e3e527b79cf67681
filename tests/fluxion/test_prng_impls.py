"""PRNG implementations (threefry2x32, rbg, unsafe_rbg, ``define_prng_impl``) against real JAX.

rbg's bits come from XLA's RngBitGenerator: with the same jaxlib on the same platform they are
the same as JAX's, so these comparisons run both in one process."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import random as fr
from fluxion.extend import random as xr

jr = jax.random
IMPLS = ["threefry2x32", pytest.param("rbg", marks=pytest.mark.slow),
         pytest.param("unsafe_rbg", marks=pytest.mark.slow)]


def same(ours, theirs):
    a, b = np.asarray(ours), np.asarray(theirs)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("impl", IMPLS)
def test_key_operations_match_jax(impl):
    fk, jk = fr.key(7, impl=impl), jr.key(7, impl=impl)
    assert str(fk.dtype) == str(jk.dtype) and fk.shape == jk.shape == ()
    assert fr.key_impl(fk) == jr.key_impl(jk) == impl
    same(fr.key_data(fk), jr.key_data(jk))
    same(fr.key_data(fr.split(fk, (2, 3))), jr.key_data(jr.split(jk, (2, 3))))
    same(fr.key_data(fr.fold_in(fk, 5)), jr.key_data(jr.fold_in(jk, 5)))
    for dt in (np.uint8, np.uint16, np.uint32):
        same(fr.bits(fk, (5,), dt), jr.bits(jk, (5,), dt))


@pytest.mark.slow
@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_samplers_match_jax(impl):
    fk, jk = fr.key(3, impl=impl), jr.key(3, impl=impl)
    same(fr.normal(fk, (4,)), jr.normal(jk, (4,)))
    same(fr.uniform(fk, (3,), minval=1, maxval=3), jr.uniform(jk, (3,), minval=1, maxval=3))
    same(fr.randint(fk, (4,), 0, 100), jr.randint(jk, (4,), 0, 100))
    same(fr.permutation(fk, 6), jr.permutation(jk, 6))
    a = np.array([0.5, 2.0, 3.0], np.float32)
    same(fr.gamma(fk, a), jr.gamma(jk, a))


@pytest.mark.slow
@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_rbg_under_jit_vmap_grad_like_jax(impl):
    fk, jk = fr.key(1, impl=impl), jr.key(1, impl=impl)
    fks, jks = fr.split(fk, 3), jr.split(jk, 3)
    # a batch of rbg keys draws from its first key, as JAX's vmap of rng_bit_generator
    same(fluxion.vmap(lambda k: fr.normal(k, (2,)))(fks),
         jax.vmap(lambda k: jr.normal(k, (2,)))(jks))
    same(fluxion.vmap(lambda k: fr.key_data(fr.split(k)))(fks),
         jax.vmap(lambda k: jr.key_data(jr.split(k)))(jks))
    same(fluxion.jit(lambda k: fr.uniform(k, (3,)))(fk), jax.jit(lambda k: jr.uniform(k, (3,)))(jk))
    g = fluxion.grad(lambda x: jnp.sum(x * fr.normal(fk, (2,))))(1.0)
    same(g, jax.grad(lambda x: jax.numpy.sum(x * jr.normal(jk, (2,))))(1.0))
    out = fluxion.jit(lambda k: fr.split(k))(fk)
    assert str(out.dtype) == str(jr.split(jk).dtype) and out.shape == (2,)


def test_rbg_keys_and_a_key_batch_like_jax():
    fk, jk = fr.key(11, impl="rbg"), jr.key(11, impl="rbg")
    assert str(fk.dtype) == str(jk.dtype) == "key<rbg>" and fr.key_impl(fk) == "rbg"
    fks, jks = fr.split(fk, 2), jr.split(jk, 2)
    same(fr.key_data(fks), jr.key_data(jks))
    same(fr.key_data(fr.fold_in(fk, 2)), jr.key_data(jr.fold_in(jk, 2)))
    same(fluxion.vmap(lambda k: fr.bits(k, (2,)))(fks), jax.vmap(lambda k: jr.bits(k, (2,)))(jks))


def test_rng_bit_generator_vmap_like_jax():
    keys = np.arange(12, dtype=np.uint32).reshape(3, 4)
    fk, fb = fluxion.vmap(lambda k: fluxion.lax.rng_bit_generator(k, (2,)))(keys)
    jk, jb = jax.vmap(lambda k: jax.lax.rng_bit_generator(k, (2,)))(keys)
    same(fk, jk)
    same(fb, jb)


def test_default_impl_rbg_for_raw_keys():
    with fluxion.default_prng_impl("rbg"), jax.default_prng_impl("rbg"):
        fk, jk = fr.PRNGKey(42), jr.PRNGKey(42)
        same(fk, jk)
        same(fr.split(fk), jr.split(jk))
        same(fr.normal(fk, (3,)), jr.normal(jk, (3,)))
        assert str(fr.key(0).dtype) == "key<rbg>"
        with pytest.raises(TypeError, match=r"normal.*default PRNG implementation 'rbg'.*\(2,\)"):
            fr.normal(fk[:2], (3,))
    assert fr.PRNGKey(0).shape == (2,)


def test_poisson_is_threefry_only_as_jax():
    with pytest.raises(NotImplementedError, match="poisson.*rbg"):
        fr.poisson(fr.key(0, impl="rbg"), 3.0, (2,))


def _counter_spec(calls):
    def split(k, shape):
        calls.append(tuple(shape))
        return jnp.broadcast_to(k + np.uint32(1), (*shape, 3))

    return xr.define_prng_impl(
        key_shape=(3,),
        seed=lambda s: jnp.full((3,), s, np.uint32),
        split=split,
        random_bits=lambda k, width, shape: (
            jnp.arange(int(np.prod(shape)), dtype=np.uint32).reshape(shape) + k[0]
        ).astype(f"uint{width}"),
        fold_in=lambda k, d: k ^ d,
        name="counter", tag="ctr")


def test_define_prng_impl_in_samplers_and_transforms():
    calls = []
    spec = _counter_spec(calls)
    k = fr.key(5, impl=spec)
    assert str(k.dtype) == "key<ctr>" and k.shape == ()
    assert fr.key_impl(k) == spec and repr(spec) == "PRNGSpec('counter')"
    assert fr.key_data(k).tolist() == [5, 5, 5]
    ks = fr.split(k, 4)
    assert ks.shape == (4,) and calls == [(4,)]
    assert fr.key_data(ks).tolist() == [[6, 6, 6]] * 4
    assert fr.key_data(fr.fold_in(k, 3)).tolist() == [6, 6, 6]
    bits = fr.bits(k, (3,))
    assert bits.dtype == np.uint32 and bits.tolist() == [5, 6, 7]
    assert fr.bits(k, (2,), np.uint8).dtype == np.uint8
    # batches of keys: vmap of the implementation's functions
    assert fluxion.vmap(lambda kk: fr.bits(kk, (2,)))(ks).tolist() == [[6, 7]] * 4
    assert fr.key_data(fluxion.jit(lambda kk: fr.split(kk, 2))(k)).tolist() == [[6, 6, 6]] * 2
    u = fr.uniform(k, (3,))
    assert u.shape == (3,) and u.dtype == np.float32
    same(fluxion.jit(lambda kk: fr.uniform(kk, (3,)))(k), u)
    keys = xr.random_seed(np.arange(2), spec)
    assert fr.key_data(keys).tolist() == [[0, 0, 0], [1, 1, 1]]


def test_define_prng_impl_bad_output_is_a_clear_error():
    spec = xr.define_prng_impl(key_shape=(2,), seed=lambda s: jnp.zeros((2,), np.uint32),
                               split=lambda k, shape: jnp.zeros((3,), np.uint32),
                               random_bits=lambda k, w, shape: jnp.zeros(shape, np.uint32),
                               fold_in=lambda k, d: k, name="bad")
    with pytest.raises(TypeError, match=r"'bad': its split function returned uint32\[3\], "
                                        r"expected uint32\[2, 2\]"):
        fr.split(fr.key(0, impl=spec))
    with pytest.raises(TypeError, match="define_prng_impl: seed must be callable"):
        xr.define_prng_impl(key_shape=(2,), seed=None, split=len, random_bits=len, fold_in=len)


def test_extend_random_builtins_like_jax():
    import jax.extend.random as jxr
    assert xr.rbg_prng_impl.key_shape == jxr.rbg_prng_impl.key_shape == (4,)
    assert xr.threefry_prng_impl.tag == jxr.threefry_prng_impl.tag == "fry"
    assert xr.unsafe_rbg_prng_impl.tag == jxr.unsafe_rbg_prng_impl.tag == "urbg"
    same(fr.key_data(xr.seed_with_impl(xr.rbg_prng_impl, 9)),
         jr.key_data(jxr.seed_with_impl(jxr.rbg_prng_impl, 9)))
    same(xr.threefry_2x32(np.array([0, 1], np.uint32), np.arange(4, dtype=np.uint32)),
         jxr.threefry_2x32(np.array([0, 1], np.uint32), np.arange(4, dtype=np.uint32)))

"""fluxion.random against jax.random 0.10.2: the same key, shape and dtype give the same bits.

Exact (bitwise) for key construction, split, fold_in, bits, uniform, normal, randint and
permutation; float tolerance for the other samplers. Both x64 modes and both threefry layouts.
"""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from _compare import flags_both, x64_both

import fluxion
import fluxion.numpy as jnp
from fluxion import random as fr
from fluxion.errors import KeyReuseError

SEEDS = [0, 42, -1, 2 ** 33 + 7]


def _np(x):
    if isinstance(x, fr.KeyArray):
        x = fr.key_data(x)
    elif hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
        x = jax.random.key_data(x)
    return np.asarray(x)


def exact(ours, theirs):
    a, b = _np(ours), _np(theirs)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    if a.dtype.kind in "fcV":  # compare the bits (also tells -0.0 from 0.0)
        a, b = np.atleast_1d(a).view(np.uint8), np.atleast_1d(b).view(np.uint8)
    np.testing.assert_array_equal(a, b)


def close(ours, theirs, rtol=1e-5, atol=1e-6):
    a, b = _np(ours), _np(theirs)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    np.testing.assert_allclose(a.astype(np.float64) if a.dtype.kind != "c" else a,
                               b.astype(np.float64) if b.dtype.kind != "c" else b,
                               rtol=rtol, atol=atol)


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def mode(request):
    with x64_both(request.param):
        yield request.param


# ------------------------------------------------------------------------------ keys

@pytest.mark.parametrize("seed", SEEDS + [np.uint32(7), np.int8(-3)])
def test_key_and_prngkey(mode, seed):
    exact(fr.key(seed), jax.random.key(seed))
    exact(fr.PRNGKey(seed), jax.random.PRNGKey(seed))


def test_key_array_surface():
    k = fr.key(0)
    assert str(k.dtype) == "key<fry>" and k.shape == () and k.ndim == 0
    assert repr(k).startswith("Array((), dtype=key<fry>)")
    assert fr.key_impl(k) == "threefry2x32"
    assert fr.PRNGKey(0).dtype == np.uint32 and fr.PRNGKey(0).shape == (2,)
    ks = fr.split(k, 6)
    assert ks.shape == (6,) and len(ks) == 6
    exact(ks[2], jax.random.split(jax.random.key(0), 6)[2])
    exact(ks[1:4], jax.random.split(jax.random.key(0), 6)[1:4])
    assert ks.reshape(2, 3).shape == (2, 3) and ks.reshape(2, 3)[1, 2].shape == ()
    exact(ks.reshape(2, 3)[1, 2], ks[5])
    assert [kk.shape for kk in ks][:2] == [(), ()]
    assert bool(fr.wrap_key_data(fr.key_data(ks[3])) == ks[3])
    assert bool(ks[0] != ks[1])
    leaves, tdef = fluxion.tree_util.tree_flatten(ks)
    assert len(leaves) == 1 and leaves[0].shape == (6, 2)
    assert isinstance(fluxion.tree_util.tree_unflatten(tdef, leaves), fr.KeyArray)
    with pytest.raises(TypeError):
        fr.key(np.arange(2))
    with pytest.raises(ValueError):
        fr.normal(ks, (2,))
    with pytest.raises(TypeError):
        fr.key_data(np.zeros(3, np.float32))


@pytest.mark.parametrize("num", [2, 3, (2, 3)])
def test_split(mode, num):
    for seed in SEEDS[:2]:
        exact(fr.split(fr.key(seed), num), jax.random.split(jax.random.key(seed), num))
        exact(fr.split(fr.PRNGKey(seed), num), jax.random.split(jax.random.PRNGKey(seed), num))


@pytest.mark.parametrize("data", [0, 7, 2 ** 32 - 1, np.int32(-5)])
def test_fold_in(mode, data):
    exact(fr.fold_in(fr.key(3), data), jax.random.fold_in(jax.random.key(3), data))


def test_chain_of_splits(mode):
    ours, theirs = fr.key(1701), jax.random.key(1701)
    for i in range(3):
        ours, sub = fr.split(ours)
        theirs, tsub = jax.random.split(theirs)
        exact(fr.uniform(sub, (2,)), jax.random.uniform(tsub, (2,)))
        ours = fr.fold_in(ours, i)
        theirs = jax.random.fold_in(theirs, i)
    exact(ours, theirs)


# ------------------------------------------------------------------------------ exact streams

@pytest.mark.parametrize("shape", [(), (5,), (2, 3)])
@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32", "uint64"])
@pytest.mark.filterwarnings("ignore:Explicitly requested dtype")
def test_bits(mode, shape, dtype):
    exact(fr.bits(fr.key(11), shape, dtype), jax.random.bits(jax.random.key(11), shape, dtype))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("shape", [(), (7,), (2, 3)])
def test_uniform(mode, dtype, shape):
    for seed in (0, 5):
        exact(fr.uniform(fr.key(seed), shape, dtype),
              jax.random.uniform(jax.random.key(seed), shape, dtype))
    exact(fr.uniform(fr.PRNGKey(9), shape, dtype, -2.0, 3.0),
          jax.random.uniform(jax.random.PRNGKey(9), shape, dtype, -2.0, 3.0))


def test_uniform_array_bounds(mode):
    lo, hi = np.array([0.0, 1.0, -5.0], np.float32), np.float32(10.0)
    exact(fr.uniform(fr.key(2), (2, 3), minval=lo, maxval=hi),
          jax.random.uniform(jax.random.key(2), (2, 3), minval=lo, maxval=hi))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "complex64"])
@pytest.mark.parametrize("shape", [(), (7,), (2, 3)])
def test_normal(mode, dtype, shape):
    for seed in (0, 5):
        exact(fr.normal(fr.key(seed), shape, dtype),
              jax.random.normal(jax.random.key(seed), shape, dtype))


@pytest.mark.parametrize("dtype,lo,hi", [
    ("int32", 0, 10), ("int32", -100, 1000), ("int32", 5, 5), ("int8", -128, 128),
    ("uint8", 0, 256), ("int16", -7, 30000), ("int64", -3, 2 ** 40), ("uint32", 0, 2 ** 32),
])
@pytest.mark.filterwarnings("ignore:Explicitly requested dtype")
def test_randint(mode, dtype, lo, hi):
    for shape in [(), (9,)]:
        try:
            theirs = jax.random.randint(jax.random.key(4), shape, lo, hi, dtype)
        except OverflowError:  # bounds that do not fit the 32-bit default int
            with pytest.raises(OverflowError):
                fr.randint(fr.key(4), shape, lo, hi, dtype)
            continue
        exact(fr.randint(fr.key(4), shape, lo, hi, dtype), theirs)


def test_randint_array_bounds(mode):
    lo, hi = np.array([0, 10, -4]), np.array([5, 100, 4])
    exact(fr.randint(fr.key(4), (2, 3), lo, hi), jax.random.randint(jax.random.key(4), (2, 3),
                                                                     lo, hi))


def test_permutation(mode):
    k, jk = fr.key(8), jax.random.key(8)
    exact(fr.permutation(k, 10), jax.random.permutation(jk, 10))
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    exact(fr.permutation(k, x[0]), jax.random.permutation(jk, x[0]))
    exact(fr.permutation(k, x, axis=1, independent=True),
          jax.random.permutation(jk, x, axis=1, independent=True))
    exact(fr.permutation(k, x, axis=0), jax.random.permutation(jk, x, axis=0))
    exact(fr.permutation(k, x, axis=1), jax.random.permutation(jk, x, axis=1))


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_original_threefry_layout(x64):
    with x64_both(x64), flags_both("jax_threefry_partitionable", False):
        k, jk = fr.key(6), jax.random.key(6)
        exact(fr.split(k, 3), jax.random.split(jk, 3))
        exact(fr.split(k, (2, 2)), jax.random.split(jk, (2, 2)))
        for dt in ("uint8", "uint16", "uint32", "uint64"):
            exact(fr.bits(k, (5,), dt), jax.random.bits(jk, (5,), dt))
        exact(fr.uniform(k, (2, 3)), jax.random.uniform(jk, (2, 3)))
        exact(fr.normal(k, (3,)), jax.random.normal(jk, (3,)))
        exact(fr.randint(k, (4,), 0, 9), jax.random.randint(jk, (4,), 0, 9))
        exact(fr.fold_in(k, 3), jax.random.fold_in(jk, 3))


# ------------------------------------------------------------------------------ other samplers

def _pairs():
    k = fr.key(21)
    jk = jax.random.key(21)
    f32 = np.float32
    return [
        ("bernoulli", fr.bernoulli(k, 0.3, (6,)), jax.random.bernoulli(jk, 0.3, (6,))),
        ("bernoulli_high", fr.bernoulli(k, np.array([0.1, 0.9], f32), mode="high"),
         jax.random.bernoulli(jk, np.array([0.1, 0.9], f32), mode="high")),
        ("truncated_normal", fr.truncated_normal(k, -1.0, 2.0, (6,)),
         jax.random.truncated_normal(jk, -1.0, 2.0, (6,))),
        ("exponential", fr.exponential(k, (6,)), jax.random.exponential(jk, (6,))),
        ("laplace", fr.laplace(k, (6,)), jax.random.laplace(jk, (6,))),
        ("logistic", fr.logistic(k, (6,)), jax.random.logistic(jk, (6,))),
        ("cauchy", fr.cauchy(k, (6,)), jax.random.cauchy(jk, (6,))),
        ("gumbel", fr.gumbel(k, (6,)), jax.random.gumbel(jk, (6,))),
        ("gumbel_high", fr.gumbel(k, (6,), mode="high"), jax.random.gumbel(jk, (6,), mode="high")),
        ("gumbel_highest", fr.gumbel(k, (6,), mode="highest"),
         jax.random.gumbel(jk, (6,), mode="highest")),
        ("categorical", fr.categorical(k, np.log(np.array([[.1, .2, .7], [.5, .25, .25]], f32))),
         jax.random.categorical(jk, np.log(np.array([[.1, .2, .7], [.5, .25, .25]], f32)))),
        ("categorical_shape", fr.categorical(k, np.zeros(4, f32), shape=(5,)),
         jax.random.categorical(jk, np.zeros(4, f32), shape=(5,))),
        ("categorical_noreplace", fr.categorical(k, np.zeros(6, f32), shape=(3,), replace=False),
         jax.random.categorical(jk, np.zeros(6, f32), shape=(3,), replace=False)),
        ("rademacher", fr.rademacher(k, (6,)), jax.random.rademacher(jk, (6,))),
        ("maxwell", fr.maxwell(k, (4,)), jax.random.maxwell(jk, (4,))),
        ("double_sided_maxwell", fr.double_sided_maxwell(k, 1.0, 2.0, (4,)),
         jax.random.double_sided_maxwell(jk, 1.0, 2.0, (4,))),
        ("weibull_min", fr.weibull_min(k, 2.0, 1.5, (4,)), jax.random.weibull_min(jk, 2.0, 1.5, (4,))),
        ("pareto", fr.pareto(k, 3.0, (4,)), jax.random.pareto(jk, 3.0, (4,))),
        ("lognormal", fr.lognormal(k, 0.5, (4,)), jax.random.lognormal(jk, 0.5, (4,))),
        ("triangular", fr.triangular(k, 0.0, 0.3, 1.0, (4,)),
         jax.random.triangular(jk, 0.0, 0.3, 1.0, (4,))),
        ("geometric", fr.geometric(k, 0.3, (6,)), jax.random.geometric(jk, 0.3, (6,))),
        ("rayleigh", fr.rayleigh(k, 2.0, (4,)), jax.random.rayleigh(jk, 2.0, (4,))),
        ("wald", fr.wald(k, 1.5, (4,)), jax.random.wald(jk, 1.5, (4,))),
        ("gamma", fr.gamma(k, np.array([0.3, 1.0, 2.5, 10.0], f32)),
         jax.random.gamma(jk, np.array([0.3, 1.0, 2.5, 10.0], f32))),
        ("loggamma", fr.loggamma(k, 0.2, (4,)), jax.random.loggamma(jk, 0.2, (4,))),
        ("beta", fr.beta(k, 2.0, 0.5, (4,)), jax.random.beta(jk, 2.0, 0.5, (4,))),
        ("dirichlet", fr.dirichlet(k, np.array([1.0, 2.0, 0.5], f32), (2,)),
         jax.random.dirichlet(jk, np.array([1.0, 2.0, 0.5], f32), (2,))),
        ("t", fr.t(k, 3.0, (4,)), jax.random.t(jk, 3.0, (4,))),
        ("chisquare", fr.chisquare(k, 4.0, (4,)), jax.random.chisquare(jk, 4.0, (4,))),
        ("f", fr.f(k, 3.0, 5.0, (4,)), jax.random.f(jk, 3.0, 5.0, (4,))),
        ("generalized_normal", fr.generalized_normal(k, 1.5, (4,)),
         jax.random.generalized_normal(jk, 1.5, (4,))),
        ("ball", fr.ball(k, 3, 2, (2,)), jax.random.ball(jk, 3, 2, (2,))),
        ("poisson", fr.poisson(k, np.array([0.5, 3.0, 25.0, 0.0], f32)),
         jax.random.poisson(jk, np.array([0.5, 3.0, 25.0, 0.0], f32))),
        ("binomial", fr.binomial(k, np.array([5.0, 50.0, 200.0], f32), 0.4),
         jax.random.binomial(jk, np.array([5.0, 50.0, 200.0], f32), 0.4)),
        ("choice_int", fr.choice(k, 10, (4,)), jax.random.choice(jk, 10, (4,))),
        ("choice_array", fr.choice(k, np.arange(20.0, dtype=f32).reshape(5, 4), (3,), axis=1),
         jax.random.choice(jk, np.arange(20.0, dtype=f32).reshape(5, 4), (3,), axis=1)),
        ("choice_noreplace", fr.choice(k, 10, (4,), replace=False),
         jax.random.choice(jk, 10, (4,), replace=False)),
        ("choice_p", fr.choice(k, 4, (6,), p=np.array([.1, .2, .3, .4], f32)),
         jax.random.choice(jk, 4, (6,), p=np.array([.1, .2, .3, .4], f32))),
        ("choice_p_noreplace",
         fr.choice(k, 4, (3,), replace=False, p=np.array([.1, .2, .3, .4], f32)),
         jax.random.choice(jk, 4, (3,), replace=False, p=np.array([.1, .2, .3, .4], f32))),
    ]


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_samplers_match_jax(x64):
    with x64_both(x64):
        failures = []
        for name, ours, theirs in _pairs():
            tol = dict(rtol=1e-10, atol=1e-12) if x64 else dict(rtol=2e-5, atol=1e-6)
            try:
                close(ours, theirs, **tol)
            except AssertionError as e:
                failures.append(f"{name}: {e}")
        assert not failures, "\n".join(failures)


def test_choice_shape_errors():
    with pytest.raises(ValueError):
        fr.choice(fr.key(0), 3, (5,), replace=False)
    with pytest.raises(ValueError):
        fr.choice(fr.key(0), 3, (2,), p=np.ones(4) / 4)


# ------------------------------------------------------------------------------ transformations

def test_keys_under_jit(mode):
    k = fr.key(3)

    @fluxion.jit
    def f(key):
        a, b = fr.split(key)
        return fr.normal(a, (3,)), fr.uniform(b, (2,)), fr.split(key, 2)

    n, u, ks = f(k)
    a, b = fr.split(k)
    exact(n, fr.normal(a, (3,)))
    exact(u, fr.uniform(b, (2,)))
    assert isinstance(ks, fr.KeyArray) and ks.shape == (2,)
    exact(ks, fr.split(k))
    closure = fluxion.jit(lambda x: x + fr.normal(k, (3,)))
    exact(closure(jnp.zeros(3)), fr.normal(k, (3,)))
    raw = fluxion.jit(lambda kd: fr.randint(kd, (4,), 0, 7))(fr.PRNGKey(2))
    exact(raw, jax.random.randint(jax.random.PRNGKey(2), (4,), 0, 7))


def test_vmap_over_keys():
    if not hasattr(fluxion, "vmap"):
        pytest.skip("fluxion.vmap is not available yet")
    keys = fr.split(fr.key(0), 4)
    out = fluxion.vmap(lambda k: fr.normal(k, (3,)))(keys)
    jkeys = jax.random.split(jax.random.key(0), 4)
    exact(out, jax.vmap(lambda k: jax.random.normal(k, (3,)))(jkeys))
    sub = fluxion.vmap(lambda k: fr.split(k, 2))(keys)
    assert isinstance(sub, fr.KeyArray) and sub.shape == (4, 2)
    exact(sub, jax.vmap(lambda k: jax.random.split(k, 2))(jkeys))


def test_grad_of_reparameterised_sampler():
    if not hasattr(fluxion, "grad"):
        pytest.skip("fluxion.grad is not available yet")
    k = fr.key(0)
    g = fluxion.grad(lambda s: jnp.sum(s * fr.normal(k, (3,)) + 2.0 * s))(1.5)
    np.testing.assert_allclose(np.asarray(g), np.asarray(jnp.sum(fr.normal(k, (3,)))) + 6.0,
                               rtol=1e-6)


# ------------------------------------------------------------------------------ key reuse

def test_key_reuse_detection():
    fluxion.config.update("jax_debug_key_reuse", True)
    try:
        k = fr.key(0)
        fr.normal(k, (2,))
        with pytest.raises(KeyReuseError, match="already used by fluxion.random.normal"):
            fr.uniform(k)
        a, b = fr.split(fr.key(1))
        fr.normal(a)
        fr.normal(b)
        with pytest.raises(KeyReuseError):
            fr.split(a)
        ks = fr.split(fr.key(2), 3)
        fr.normal(ks[0])
        fr.normal(ks[1])
        with pytest.raises(KeyReuseError, match="already used"):
            fr.bits(ks[0])
        c = fr.clone(ks[2])
        fr.normal(c)
        fr.normal(ks[2])
        raw = fr.PRNGKey(0)
        fr.normal(raw)
        with pytest.raises(KeyReuseError):
            fr.normal(raw)
        fluxion.jit(lambda kk: fr.normal(kk) + fr.normal(kk))(fr.key(5))  # traced: not checked
    finally:
        fluxion.config.update("jax_debug_key_reuse", False)
    k = fr.key(0)
    fr.normal(k)
    fr.normal(k)  # reuse is allowed with the flag off

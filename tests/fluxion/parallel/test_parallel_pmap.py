"""``fluxion.pmap`` on jit + shard_map: the README seed example, in_axes/out_axes, static and
donated arguments, collectives, vmap and grad, and a data-parallel training step equal to the
single-device step; against real JAX."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax

jax = pytest.importorskip("jax")


def test_seed_example_prints_like_jax(eight):
    out = fluxion.pmap(lambda x: x ** 2)(np.arange(4))
    ref = jax.pmap(lambda x: x ** 2)(np.arange(4))
    assert repr(out) == repr(ref) == "Array([0, 1, 4, 9], dtype=int32)"
    assert tuple(out.sharding.spec) == tuple(ref.sharding.spec)
    assert [d.id for d in out.sharding.mesh.devices.flat] == [0, 1, 2, 3]
    assert out.committed


def test_axes_statics_and_collectives_like_jax(eight):
    x = np.arange(24, dtype=np.float32).reshape(3, 8)

    def f(L):
        return lambda a, s: (a * s - L.pmean(a, "i"), L.all_gather(a, "i"), L.axis_index("i"))
    out = fluxion.pmap(f(lax), "i", in_axes=(1, None), out_axes=(1, 0, 0),
                       static_broadcasted_argnums=1)(x, 2.0)
    ref = jax.pmap(f(jax.lax), "i", in_axes=(1, None), out_axes=(1, 0, 0),
                   static_broadcasted_argnums=1)(x, 2.0)
    for o, r in zip(out, ref):
        assert o.shape == r.shape and o.dtype == r.dtype
        np.testing.assert_allclose(np.asarray(o), np.asarray(r))
    un = fluxion.pmap(lambda a: lax.psum(a, "i"), "i", out_axes=None)(jnp.arange(4.0))
    assert un.shape == () and float(un) == 6.0


def test_pmap_with_vmap_and_grad(eight):
    x = np.linspace(-1, 1, 4 * 3, dtype=np.float32).reshape(4, 3)
    inner = fluxion.pmap(fluxion.vmap(lambda v: jnp.sin(v) * 2))(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(inner), np.sin(x) * 2, rtol=1e-6)
    outer = fluxion.vmap(fluxion.pmap(lambda v: v * 3))(jnp.asarray(x.T))
    np.testing.assert_allclose(np.asarray(outer), x.T * 3, rtol=1e-6)
    g = fluxion.pmap(fluxion.grad(lambda v: jnp.sum(v ** 3)))(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(g), 3 * x ** 2, rtol=1e-5)
    gg = fluxion.grad(lambda v: jnp.sum(fluxion.pmap(lambda r: r ** 2 * lax.psum(r, "i"),
                                                     "i")(v)))(jnp.asarray(x))
    jg = jax.grad(lambda v: jax.numpy.sum(jax.pmap(lambda r: r ** 2 * jax.lax.psum(r, "i"),
                                                   "i")(v)))(x)
    np.testing.assert_allclose(np.asarray(gg), np.asarray(jg), rtol=1e-5)


def _init(rng):
    return {"w1": rng.normal(size=(3, 16)).astype(np.float32) * 0.5,
            "b1": np.zeros(16, np.float32),
            "w2": rng.normal(size=(16, 1)).astype(np.float32) * 0.5}


def _loss(np_, params, x, y):
    h = np_.tanh(x @ params["w1"] + params["b1"])
    return np_.mean((h @ params["w2"] - y) ** 2)


def test_data_parallel_train_step_matches_single_device(eight):
    rng = np.random.default_rng(0)
    params = _init(rng)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    y = np.sin(x.sum(1, keepdims=True)).astype(np.float32)
    lr = 0.1

    def step(p, xb, yb):
        g = fluxion.grad(lambda q: _loss(jnp, q, xb, yb))(p)
        g = lax.pmean(g, "batch")
        return fluxion.tree_util.tree_map(lambda a, b: a - lr * b, p, g)

    pstep = fluxion.pmap(step, "batch", in_axes=(None, 0, 0), out_axes=None)
    single = fluxion.jit(lambda p, xb, yb: fluxion.tree_util.tree_map(
        lambda a, b: a - lr * b, p, fluxion.grad(lambda q: _loss(jnp, q, xb, yb))(p)))
    p_dp = {k: jnp.asarray(v) for k, v in params.items()}
    p_1 = dict(p_dp)
    xs, ys = x.reshape(8, 8, 3), y.reshape(8, 8, 1)
    for _ in range(3):
        p_dp = pstep(p_dp, xs, ys)
        p_1 = single(p_1, jnp.asarray(x), jnp.asarray(y))
    for k in params:
        np.testing.assert_allclose(np.asarray(p_dp[k]), np.asarray(p_1[k]), rtol=2e-5,
                                   atol=2e-6)


def test_donation_and_errors(eight):
    x = fluxion.pmap(lambda v: v + 1)(jnp.zeros((4, 2)))
    f = fluxion.pmap(lambda v: v * 2, donate_argnums=0)
    out = f(x)
    assert x.is_deleted()
    np.testing.assert_array_equal(np.asarray(out), np.full((4, 2), 2.0))
    with pytest.raises(ValueError, match="size 9 but only 8 devices") as e:
        fluxion.pmap(lambda v: v)(np.ones(9))
    assert "test_parallel_pmap.py" in str(e.value)
    with pytest.raises(ValueError, match="inconsistent sizes"):
        fluxion.pmap(lambda a, b: a)(np.ones(4), np.ones(3))
    with pytest.raises(ValueError, match="hashable"):
        fluxion.pmap(lambda a, s: a, static_broadcasted_argnums=1)(np.ones(2), [1])
    with pytest.raises(NameError, match="unbound axis name"):
        fluxion.pmap(lambda a: lax.psum(a, "j"), "i")(np.ones(2))
    # JAX 0.10 (pmap on shard_map) refuses nested pmap with this ValueError
    msg = "should match the mesh passed to shard_map"
    with pytest.raises(ValueError, match=msg):
        jax.pmap(jax.pmap(lambda a: a * 2, "a"), "b")(np.ones((2, 4)))
    with pytest.raises(ValueError, match=msg) as e:
        fluxion.pmap(fluxion.pmap(lambda a: a * 2, "a"), "b")(np.ones((2, 4)))
    assert "'b': 2" in str(e.value) and "'a': 4" in str(e.value)


def test_keyword_arguments_are_mapped_over_their_leading_axis_like_jax(eight):
    """JAX maps keyword arguments over axis 0 whatever in_axes says (rlax's tests pass them)."""
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    scale = np.arange(4, dtype=np.float32) + 1

    def f(L):
        return lambda a, b, *, scale: (a * scale + b, L.psum(scale, "i"))
    out = fluxion.pmap(f(lax), "i", in_axes=(0, None))(x, 3.0, scale=scale)
    ref = jax.pmap(f(jax.lax), "i", in_axes=(0, None))(x, 3.0, scale=scale)
    for o, r in zip(out, ref):
        assert o.shape == r.shape and o.dtype == r.dtype
        np.testing.assert_allclose(np.asarray(o), np.asarray(r))


def test_python_scalar_outputs_become_arrays_like_jax(eight):
    """A constant (Python int) output is replicated over the devices, as JAX (rlax's
    episodic-memory state returns one)."""
    x = np.ones(4, np.float32)
    out = fluxion.pmap(lambda a: (a, 2))(x)[1]
    ref = jax.pmap(lambda a: (a, 2))(x)[1]
    assert out.shape == ref.shape and out.dtype == ref.dtype
    np.testing.assert_array_equal(np.asarray(out), np.asarray(ref))


def test_lower_and_compile_like_jax(eight):
    """``pmap(f).lower(*args).compile()`` is called with f's arguments less the static ones,
    as JAX's (equinox's filter_pmap(...).lower)."""
    x = np.arange(8, dtype=np.float32).reshape(4, 2)

    def run(lib):
        f = lib.pmap(lambda a, s, *, k: a * s + k, static_broadcasted_argnums=1)
        k = np.ones(4, np.float32)
        low = f.lower(x, 3.0, k=k)
        compiled = low.compile()
        return "func" in low.as_text(), compiled(x, k=k), f(x, 3.0, k=k)

    ours, theirs = run(fluxion), run(jax)
    assert ours[0] and theirs[0]
    for o, r in zip(ours[1:], theirs[1:]):
        assert o.shape == r.shape and o.dtype == r.dtype
        np.testing.assert_array_equal(np.asarray(o), np.asarray(r))

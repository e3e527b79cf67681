"""fluxion_nn.haiku's stateful transforms (grad, value_and_grad, vmap, cond, switch, fori_loop,
while_loop, remat) and Bias vs dm-haiku: same rng -> same parameters, outputs and state."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
import fluxion.random as fr
import fluxion_nn.haiku as hk

rhk = pytest.importorskip("haiku")
jax = pytest.importorskip("jax")

X = np.random.RandomState(0).randn(4, 5).astype(np.float32)


# XLA options for the reference's program: dm-haiku's init + apply as one jax.jit program compiled
# with XLA's cheapest CPU settings (eagerly it compiles each op on its own). Given per compile, the
# options are part of jax's executable cache key, so no other test reuses these executables.
_REFERENCE_COMPILE_OPTIONS = {"xla_backend_optimization_level": 0,
                              "xla_llvm_disable_expensive_passes": True,
                              "xla_cpu_use_fusion_emitters": False}


def _run(build, *args, with_state=False, rng=42):
    """init + apply of ``build(h, np_)`` in both libraries: ((params, out, state) ours, theirs);
    Fluxion's eagerly (the code under test), dm-haiku's as one jitted program (the reference)."""
    res = []
    for h, np_, key in ((hk, jnp, fr.PRNGKey(rng)), (rhk, jax.numpy, jax.random.PRNGKey(rng))):
        t = h.transform_with_state(build(h, np_))

        def init_apply(key, *a, t=t):
            params, state = t.init(key, *a)
            out, state2 = t.apply(params, state, key, *a)
            return params, out, state2

        a = [np_.asarray(x) for x in args]
        if h is rhk:
            init_apply = jax.jit(init_apply, compiler_options=_REFERENCE_COMPILE_OPTIONS)
        res.append(init_apply(key, *a))
    return res


def _close(a, b, atol=1e-5):
    la, ta = fluxion.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    assert len(la) == len(lb), (a, b)
    for x, y in zip(la, lb):
        assert tuple(np.shape(x)) == tuple(np.shape(y))
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), atol=atol, rtol=1e-5)


def _check(ours, theirs):
    (po, oo, so), (pt, ot, st) = ours, theirs
    assert sorted(po) == sorted(pt)
    _close(po, dict(pt))
    _close(oo, ot)
    _close(so, dict(st))


@pytest.mark.parametrize("bias_dims", [None, [], [-1], [1, 2]])
def test_bias_matches_haiku(bias_dims):
    def build(h, np_):
        def f(x):
            init = h.initializers.RandomNormal(0.5)
            return h.Bias(bias_dims=bias_dims, b_init=init)(x, multiplier=-2.0)
        return f

    x = np.random.RandomState(1).randn(2, 3, 4).astype(np.float32)
    _check(*_run(build, x))


def test_bias_rejects_batch_dim():
    t = hk.transform(lambda x: hk.Bias(bias_dims=[0])(x))
    with pytest.raises(ValueError, match="Bias"):
        t.init(fr.PRNGKey(0), jnp.ones((2, 3)))


def test_grad_and_value_and_grad_keep_state():
    def build(h, np_):
        def f(x):
            lin = h.Linear(3)

            def loss(x):
                y = lin(x)
                h.set_state("last", y.sum())
                return (y ** 2).sum(), y.mean()

            (v, aux), g = h.value_and_grad(loss, has_aux=True)(x)
            g2, aux2 = h.grad(loss, has_aux=True)(x * 2)
            return v, aux, g, g2, aux2, h.get_state("last", [], init=np_.zeros)
        return f

    _check(*_run(build, X))


def test_vmap_shares_params():
    def build(h, np_):
        def f(x):
            lin = h.Linear(3)
            y = h.vmap(lambda r: lin(r[None])[0], split_rng=False)(x)
            return y, h.vmap(lambda r: r * 2, in_axes=1, out_axes=0, split_rng=False)(x)
        return f

    _check(*_run(build, X))


def test_vmap_split_rng_draws_different_keys():
    def f(x):
        return hk.vmap(lambda r: r + fr.normal(hk.next_rng_key(), r.shape), split_rng=True)(x)

    out = hk.transform(f).apply({}, fr.PRNGKey(0), jnp.zeros((3, 2)))
    assert not np.allclose(np.asarray(out[0]), np.asarray(out[1]))
    same = hk.transform(lambda x: hk.vmap(
        lambda r: r + fr.normal(hk.next_rng_key(), r.shape), split_rng=False)(x))
    o2 = np.asarray(same.apply({}, fr.PRNGKey(0), jnp.zeros((3, 2))))
    np.testing.assert_allclose(o2[0], o2[1])


def test_cond_and_switch_thread_state():
    def build(h, np_):
        def f(x):
            a, b, c = h.Linear(2, name="a"), h.Linear(2, name="b"), h.Linear(2, name="c")

            def br(mod):
                def run(x):
                    y = mod(x)
                    h.set_state("seen", y.sum())
                    return y
                return run

            h.get_state("seen", [], init=np_.zeros)
            if h.running_init():
                for m in (a, b, c):
                    m(x)
                return x[:, :2]
            y1 = h.cond(x.sum() > 0, br(a), br(b), x)
            y2 = h.switch(np_.asarray(2), [br(a), br(b), br(c)], x)
            return y1 + y2
        return f

    _check(*_run(build, X))
    _check(*_run(build, -np.abs(X)))


def test_fori_and_while_loops():
    def build(h, np_):
        def f(x):
            lin = h.Linear(5, w_init=h.initializers.RandomNormal(0.1))
            y = h.fori_loop(0, 3, lambda i, v: np_.tanh(lin(v)) + i, x)
            if h.running_init():
                return y, x
            z = h.while_loop(lambda v: v.sum() < 100.0, lambda v: np_.abs(lin(v)) + v + 1, np_.abs(x))
            return y, z
        return f

    _check(*_run(build, X))


def test_remat_matches_and_differentiates():
    def build(h, np_):
        def f(x):
            return h.remat(h.nets.MLP([6, 3]))(x)
        return f

    _check(*_run(build, X))
    loss_o = hk.transform(lambda x: hk.remat(hk.nets.MLP([6, 3]))(x).sum())
    loss_t = rhk.transform(lambda x: rhk.remat(rhk.nets.MLP([6, 3]))(x).sum())
    po = loss_o.init(fr.PRNGKey(0), jnp.asarray(X))
    pt = loss_t.init(jax.random.PRNGKey(0), X)
    go = fluxion.grad(lambda p: loss_o.apply(p, None, jnp.asarray(X)))(po)
    gt = jax.grad(lambda p: loss_t.apply(p, None, X))(pt)
    _close(go, dict(gt), atol=1e-4)


def test_while_loop_at_init_raises():
    t = hk.transform(lambda x: hk.while_loop(lambda v: v.sum() < 3, lambda v: v + 1, x))
    with pytest.raises(ValueError, match="while_loop"):
        t.init(fr.PRNGKey(0), jnp.zeros(2))


def test_lifted_outside_transform_raises():
    with pytest.raises(ValueError, match="hk.grad"):
        hk.grad(lambda x: x.sum())(jnp.ones(2))

"""``fluxion.example_libraries`` (stax, optimizers) against JAX's: the same programs, written
once against a library namespace, give the same parameters, outputs and losses.

The programs mirror JAX's ``examples/mnist_classifier.py`` and ``examples/mnist_vae.py`` (an MLP
classifier trained with momentum; a VAE with FanOut/parallel trained inside ``fori_loop``), on a
small synthetic dataset and a few steps."""

from __future__ import annotations

import types

import jax
import jax.example_libraries.optimizers
import jax.example_libraries.stax
import jax.numpy as jjnp
import numpy as np
import pytest
from _compare import assert_close, platform_tol

import fluxion
import fluxion.numpy as jnp
from fluxion.example_libraries import optimizers, stax

JAX = types.SimpleNamespace(lib=jax, np=jjnp, stax=jax.example_libraries.stax,
                            opt=jax.example_libraries.optimizers)
FLX = types.SimpleNamespace(lib=fluxion, np=jnp, stax=stax, opt=optimizers)

RNG = np.random.RandomState(0)
IMAGES = RNG.rand(32, 784).astype(np.float32)
LABELS = np.eye(10, dtype=np.float32)[RNG.randint(0, 10, 32)]


def _classifier(ns: types.SimpleNamespace, steps: int = 3) -> list:
    s = ns.stax
    init_fun, predict = s.serial(s.Dense(64), s.Relu, s.Dense(64), s.Relu, s.Dense(10),
                                 s.LogSoftmax)

    def loss(params, batch):
        inputs, targets = batch
        return -ns.np.mean(ns.np.sum(predict(params, inputs) * targets, axis=1))

    opt_init, opt_update, get_params = ns.opt.momentum(0.01, mass=0.9)

    @ns.lib.jit
    def update(i, opt_state, batch):
        return opt_update(i, ns.lib.grad(loss)(get_params(opt_state), batch), opt_state)

    _, params = init_fun(ns.lib.random.PRNGKey(0), (-1, 784))
    state = opt_init(params)
    out = [params]
    for i in range(steps):
        state = update(i, state, (IMAGES[8 * i:8 * i + 8], LABELS[8 * i:8 * i + 8]))
        out.append(loss(get_params(state), (IMAGES, LABELS)))
    out.append(get_params(state))
    return out


@pytest.mark.slow  # ~30 s of compilation on a loaded CPU
def test_mlp_classifier_like_jax():
    assert_close(_classifier(FLX), _classifier(JAX), 1e-5)


def _vae(ns: types.SimpleNamespace) -> list:
    s, np_, random, lax = ns.stax, ns.np, ns.lib.random, ns.lib.lax
    enc_init, encode = s.serial(s.Dense(32), s.Relu, s.FanOut(2),
                                s.parallel(s.Dense(4), s.serial(s.Dense(4), s.Softplus)))
    dec_init, decode = s.serial(s.Dense(32), s.Relu, s.Dense(784))

    def elbo(rng, params, images):
        enc, dec = params
        mu, sigmasq = encode(enc, images)
        z = mu + np_.sqrt(sigmasq) * random.normal(rng, mu.shape)
        logits = decode(dec, z)
        logpdf = -np_.sum(np_.logaddexp(0., np_.where(images, -1., 1.) * logits))
        kl = -0.5 * np_.sum(1. + np_.log(sigmasq) - mu ** 2. - sigmasq)
        return logpdf - kl

    k_enc, k_dec = random.split(random.PRNGKey(2))
    _, enc_params = enc_init(k_enc, (8, 784))
    _, dec_params = dec_init(k_dec, (8, 4))
    opt_init, opt_update, get_params = ns.opt.adam(1e-3)

    @ns.lib.jit
    def run_epoch(rng, opt_state):
        def body(i, opt_state):
            elbo_rng, data_rng = random.split(random.fold_in(rng, i))
            batch = random.bernoulli(data_rng, lax.dynamic_slice_in_dim(IMAGES, i * 8, 8))
            g = ns.lib.grad(lambda p: -elbo(elbo_rng, p, batch) / 8)(get_params(opt_state))
            return opt_update(i, g, opt_state)
        return lax.fori_loop(0, 4, body, opt_state)

    state = run_epoch(random.PRNGKey(0), opt_init((enc_params, dec_params)))
    return [get_params(state), elbo(random.PRNGKey(1), get_params(state), IMAGES > 0.5)]


@pytest.mark.slow  # ~60 s of compilation on a loaded CPU
def test_vae_like_jax():
    assert_close(_vae(FLX), _vae(JAX), 1e-4)


@pytest.mark.parametrize("name,args", [
    ("sgd", (0.1,)), ("momentum", (0.1, 0.9)), ("nesterov", (0.1, 0.9)), ("adagrad", (0.1,)),
    ("rmsprop", (0.1,)), ("rmsprop_momentum", (0.1,)), ("adam", (0.1,)), ("adamax", (0.1,)),
    ("sm3", (0.1,)),
])
def test_optimizers_like_jax(name, args):
    params = {"w": np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3),
              "b": np.float32(0.5)}

    def run(ns):
        init, update, get = getattr(ns.opt, name)(*args)
        state = init(params)
        for i in range(3):
            grads = ns.lib.tree_util.tree_map(lambda p: ns.np.sin(p) + i, get(state))
            state = update(i, grads, state)
        return get(state)

    assert_close(run(FLX), run(JAX), 1e-6)


def test_schedules_and_state_packing():
    for ours, theirs in [
        (optimizers.exponential_decay(1.0, 10, 0.5), JAX.opt.exponential_decay(1.0, 10, 0.5)),
        (optimizers.inverse_time_decay(1.0, 10, 2.0, staircase=True),
         JAX.opt.inverse_time_decay(1.0, 10, 2.0, staircase=True)),
        (optimizers.polynomial_decay(1.0, 10, 0.1, 2.0), JAX.opt.polynomial_decay(1.0, 10, 0.1, 2.0)),
        (optimizers.piecewise_constant([3, 6], [1.0, 0.5, 0.1]),
         JAX.opt.piecewise_constant([3, 6], [1.0, 0.5, 0.1])),
    ]:
        for i in (4, 12):
            np.testing.assert_allclose(np.float64(ours(i)), np.float64(theirs(i)),
                                       **platform_tol(1e-6))
    g = [np.array([3.0, 4.0], np.float32)]
    assert_close(optimizers.clip_grads(g, 1.0), JAX.opt.clip_grads(g, 1.0))
    init, update, get = optimizers.adam(0.1)
    state = update(0, {"a": jnp.ones(2)}, init({"a": jnp.zeros(2)}))
    packed = optimizers.pack_optimizer_state(optimizers.unpack_optimizer_state(state))
    assert_close(get(packed), get(state))
    with pytest.raises(TypeError, match="gradient tree"):
        update(0, [jnp.ones(2)], state)


def _layers_like_jax(x: np.ndarray, net) -> None:
    def run(ns):
        init, apply = net(ns)
        shape, params = ns.lib.jit(init, static_argnums=1)(ns.lib.random.PRNGKey(0), x.shape)
        out = ns.lib.jit(lambda p, v, r: apply(p, v, rng=r))(params, x, ns.lib.random.PRNGKey(3))
        return [int(d) for d in shape], params, out

    ours, theirs = run(FLX), run(JAX)
    assert ours[0] == theirs[0]
    assert_close(ours[1:], [list(theirs[1]), theirs[2]], 1e-5)


def test_stax_dense_layers_like_jax():
    x = np.random.RandomState(1).rand(4, 6).astype(np.float32)
    _layers_like_jax(x, lambda ns: ns.stax.serial(
        ns.stax.Dense(5), ns.stax.Tanh, ns.stax.FanOut(2),
        ns.stax.parallel(ns.stax.Dense(3), ns.stax.Identity), ns.stax.FanInConcat(),
        ns.stax.BatchNorm(axis=(0,)), ns.stax.Dropout(0.8), ns.stax.Elu, ns.stax.Dense(2),
        ns.stax.Softmax))


@pytest.mark.slow  # ~40 s of compilation on a loaded CPU
def test_stax_conv_layers_like_jax():
    x = np.random.RandomState(1).rand(2, 8, 8, 3).astype(np.float32)
    _layers_like_jax(x, lambda ns: ns.stax.serial(
        ns.stax.Conv(4, (3, 3), padding="SAME"), ns.stax.BatchNorm(), ns.stax.Relu,
        ns.stax.MaxPool((2, 2), strides=(2, 2)), ns.stax.AvgPool((2, 2), padding="SAME"),
        ns.stax.SumPool((1, 1)), ns.stax.ConvTranspose(2, (2, 2), strides=(2, 2)),
        ns.stax.Flatten, ns.stax.Gelu))

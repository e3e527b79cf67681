"""rlax names that are not plain array functions: distributions, MPO, PopArt, EMA, trees, gradients."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fjnp
import fluxion.tree_util as ftu
import fluxion_rl

rlax = pytest.importorskip("rlax")
jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

pytestmark = pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")

RNG = np.random.default_rng(0)

_spec = importlib.util.spec_from_file_location("rl_cases", Path(__file__).parent / "rl_cases.py")
rl_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rl_cases)


def _ref(fn):
    """``fn`` (an rlax computation over arrays) as one jax.jit program compiled with the
    reference's XLA options (rl_cases.REFERENCE_COMPILE_OPTIONS): eager rlax compiles each
    operation on its own, several times the time of one program."""
    return jax.jit(fn, compiler_options=rl_cases.REFERENCE_COMPILE_OPTIONS)


@pytest.fixture(autouse=True)
def _fresh_rng():
    """Each test draws the same inputs whatever ran before it."""
    global RNG
    RNG = np.random.default_rng(0)


def _f(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def close(ours, ref, rtol=2e-5, atol=2e-6):
    a = [np.asarray(x) for x in ftu.tree_leaves(ours)]
    b = [np.asarray(x) for x in jax.tree_util.tree_leaves(ref)]
    assert len(a) == len(b)
    scalars = [isinstance(y, (int, float)) for y in jax.tree_util.tree_leaves(ref)]
    for x, y, py in zip(a, b, scalars):
        # A Python number in rlax's output may come back as a 0-d array from jit: compare values only.
        assert x.shape == y.shape and (py or x.dtype == y.dtype), (x.shape, y.shape, x.dtype, y.dtype)
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


KEY = np.array([0, 42], np.uint32)


def _jitted(dist, *names):
    """``dist`` with its array methods under jax.jit: rlax's eager distributions compile each
    op on its own (several times the time of one program)."""
    return dist._replace(**{n: _ref(getattr(dist, n)) for n in names})


@pytest.mark.parametrize("which", ["softmax", "clipped_entropy_softmax", "greedy", "epsilon_greedy"])
def test_discrete_distributions(which):
    logits = _f(4, 3, lo=-2, hi=2)
    logits[0, 1] = logits[0, 2]  # a tie for the greedy distributions
    args = {"softmax": (0.7,), "clipped_entropy_softmax": (1.3, 0.5), "greedy": (),
            "epsilon_greedy": (0.2,)}[which]
    ours, ref = getattr(fluxion_rl, which)(*args), getattr(rlax, which)(*args)
    ref = _jitted(ref, "probs", "entropy", "logprob", "sample", *(("kl",) if ref.kl else ()))
    close(ours.probs(logits), ref.probs(logits))
    close(ours.entropy(logits), ref.entropy(logits))
    actions = np.array([0, 1, 2, 1], np.int32)
    close(ours.logprob(actions, logits), ref.logprob(actions, logits))
    close(ours.sample(KEY, logits), ref.sample(KEY, logits))
    close(fluxion.jit(ours.sample)(KEY, logits), ref.sample(KEY, logits))
    if ref.kl is not None:
        q = _f(4, 3)
        close(ours.kl(logits, q), ref.kl(logits, q))
    else:
        assert ours.kl is None


def test_gaussian_diagonal():
    ours, ref = fluxion_rl.gaussian_diagonal(), rlax.gaussian_diagonal()
    ref = _jitted(ref, "sample", "prob", "logprob", "entropy", "kl_to_standard_normal", "kl")
    mu, sigma, x = _f(3, 2), _f(3, 2, lo=0.3, hi=1.5), _f(3, 2)
    close(ours.sample(KEY, mu, sigma), ref.sample(KEY, mu, sigma))
    close(ours.prob(x, mu, sigma), ref.prob(x, mu, sigma))
    close(ours.logprob(x, mu, sigma), ref.logprob(x, mu, sigma))
    close(ours.entropy(mu, sigma), ref.entropy(mu, sigma))
    close(ours.kl_to_standard_normal(mu, sigma), ref.kl_to_standard_normal(mu, sigma))
    mu1, s1 = _f(3, 2), _f(3, 2, lo=0.3, hi=1.5)
    close(ours.kl(mu, sigma, mu1, s1), ref.kl(mu, sigma, mu1, s1))
    close(fluxion.vmap(ours.logprob)(x, mu, sigma), ref.logprob(x, mu, sigma))


class _Spec:
    minimum = np.array([-2.0, 0.0], np.float32)
    maximum = np.array([1.0, 3.0], np.float32)


@pytest.mark.parametrize("spec", [None, _Spec()])
def test_squashed_gaussian(spec):
    ours, ref = fluxion_rl.squashed_gaussian(), rlax.squashed_gaussian()
    ref = _jitted(ref, "entropy", "kl_to_standard_normal", "kl")
    mu, sigma = _f(3, 2), _f(3, 2)
    sample = _ref(lambda k, m, s: ref.sample(k, m, s, spec))(KEY, mu, sigma)
    close(ours.sample(KEY, mu, sigma, spec), sample, rtol=1e-4)
    x = np.asarray(sample)
    close(ours.logprob(x, mu, sigma, spec),
          _ref(lambda *a: ref.logprob(*a, spec))(x, mu, sigma), rtol=1e-4, atol=1e-4)
    close(ours.prob(x, mu, sigma, spec),
          _ref(lambda *a: ref.prob(*a, spec))(x, mu, sigma), rtol=1e-4, atol=1e-4)
    close(ours.entropy(mu, sigma), ref.entropy(mu, sigma))
    close(ours.kl_to_standard_normal(mu, sigma), ref.kl_to_standard_normal(mu, sigma))
    close(ours.kl(mu, sigma, sigma, mu), ref.kl(mu, sigma, sigma, mu))


def _penalties(lib, per_dimension=False):
    return lib.LagrangePenalty(alpha=np.float32(0.7), epsilon=np.float32(0.1), per_dimension=per_dimension)


@pytest.mark.parametrize("per_dimension", [False, True])
def test_mpo_loss(per_dimension):
    logp, q = _f(5, 4), _f(5, 4)
    kl = _f(4, 3, lo=0, hi=0.2) if per_dimension else _f(4, lo=0, hi=0.2)
    ours = fluxion_rl.mpo_loss(logp, q, _penalties(fluxion_rl), [(kl, _penalties(fluxion_rl, per_dimension))])
    ref = rlax.mpo_loss(logp, q, _penalties(rlax), [(kl, _penalties(rlax, per_dimension))])
    close(ours, ref)
    jitted = fluxion.jit(lambda a, b, c: fluxion_rl.mpo_loss(
        a, b, _penalties(fluxion_rl), [(c, _penalties(fluxion_rl, per_dimension))]))
    close(jitted(logp, q, kl), ref)


@pytest.mark.parametrize("top_k", [0.5, 1.0])
def test_vmpo_loss(top_k):
    logp, adv, kl = _f(6), _f(6), _f(6, lo=0, hi=0.2)
    restart = (RNG.uniform(size=6) > 0.2).astype(np.float32)
    ours = fluxion_rl.vmpo_loss(logp, adv, _penalties(fluxion_rl), [(kl, _penalties(fluxion_rl))],
                                restarting_weights=restart, top_k_fraction=top_k)
    # eager (also below): rlax's losses return Python numbers among their arrays, which close()
    # compares by value only
    ref = rlax.vmpo_loss(logp, adv, _penalties(rlax), [(kl, _penalties(rlax))],
                         restarting_weights=restart, top_k_fraction=top_k)
    close(ours, ref)
    proj = lambda x: fjnp.clip(x, 1e-10)  # noqa: E731
    close(fluxion_rl.vmpo_compute_weights_and_temperature_loss(
        adv, restart, np.ones(6, np.float32), _penalties(fluxion_rl), proj, top_k),
        rlax.vmpo_compute_weights_and_temperature_loss(
            adv, restart, np.ones(6, np.float32), _penalties(rlax), lambda x: jnp.clip(x, 1e-10), top_k))
    q = _f(5, 3)
    close(fluxion_rl.mpo_compute_weights_and_temperature_loss(q, _penalties(fluxion_rl), proj, sample_axis=1),
          rlax.mpo_compute_weights_and_temperature_loss(q, _penalties(rlax), lambda x: jnp.clip(x, 1e-10),
                                                        sample_axis=1))


def test_kl_penalty_and_dual_loss():
    kls = [_f(4, lo=0, hi=0.3), _f(4, lo=0, hi=0.3)]
    ours = fluxion_rl.compute_parametric_kl_penalty_and_dual_loss(
        [(k, _penalties(fluxion_rl)) for k in kls], lambda x: fjnp.clip(x, 1e-10))
    ref = rlax.compute_parametric_kl_penalty_and_dual_loss(
        [(k, _penalties(rlax)) for k in kls], lambda x: jnp.clip(x, 1e-10))
    close(ours, ref)


def test_popart():
    init_o, update_o = fluxion_rl.popart(3, 0.1, 1e-3, 1e3)
    init_r, update_r = rlax.popart(3, 0.1, 1e-3, 1e3)
    params = {"w": _f(4, 3), "b": _f(3)}
    targets, idx = _f(5, lo=-5, hi=5), np.array([0, 2, 2, 1, 0], np.int32)
    po, so = update_o(params, init_o(), targets, idx)
    pr, sr = update_r(params, init_r(), targets, idx)
    close(po, pr)
    close(tuple(so), tuple(sr))
    x = _f(5)
    close(fluxion_rl.normalize(so, x, idx), rlax.normalize(sr, x, idx))
    close(fluxion_rl.unnormalize(so, x, idx), rlax.unnormalize(sr, x, idx))
    out = _f(5, 3)
    close(tuple(fluxion_rl.unnormalize_linear(so, out, idx)), tuple(rlax.unnormalize_linear(sr, out, idx)))
    close(tuple(fluxion_rl.art(so, targets, idx, 0.2, 1e-3, 1e3)), tuple(rlax.art(sr, targets, idx, 0.2, 1e-3, 1e3)))
    close(fluxion_rl.pop(params, so, so), rlax.pop(params, sr, sr))
    jitted = fluxion.jit(lambda p, s, t, i: update_o(p, fluxion_rl.PopArtState(*s), t, i))
    close(jitted(params, tuple(init_o()), targets, idx)[0], pr)


def test_create_ema():
    tree = {"a": _f(3), "b": _f(2, 2)}
    init_o, upd_o = fluxion_rl.create_ema(0.9)
    init_r, upd_r = rlax.create_ema(0.9)
    so, sr = init_o(tree), init_r(tree)
    for _ in range(3):
        mo, so = upd_o(tree, so)
        mr, sr = upd_r(tree, sr)
    close((mo.mean, mo.variance), (mr.mean, mr.variance))
    close((so.mu, so.nu, so.decay_product), (sr.mu, sr.nu, sr.decay_product))
    assert isinstance(so, fluxion_rl.EmaState) and isinstance(mo, fluxion_rl.EmaMoments)
    mj, _ = fluxion.jit(upd_o)(tree, init_o(tree))
    m1, _ = upd_r(tree, init_r(tree))
    close((mj.mean, mj.variance), (m1.mean, m1.variance))


def test_clip_gradient_and_huber():
    x = _f(6, lo=-3, hi=3)
    ours = fluxion.grad(lambda v: fjnp.sum(fluxion_rl.clip_gradient(v, -1.0, 1.0) ** 2 * 0.5))(x)
    ref = jax.grad(lambda v: jnp.sum(rlax.clip_gradient(v, -1.0, 1.0) ** 2 * 0.5))(x)
    close(ours, ref)
    close(fluxion.grad(lambda v: fjnp.sum(fluxion_rl.huber_loss(v)))(x), ref)
    close(fluxion.jit(fluxion.grad(lambda v: fjnp.sum(fluxion_rl.clip_gradient(v, -0.5, 2.0) * v)))(x),
          jax.grad(lambda v: jnp.sum(rlax.clip_gradient(v, -0.5, 2.0) * v))(x))


def test_stop_target_gradients():
    q_tm1, q_t = _f(3), _f(3)
    for stop in (True, False):
        ours = fluxion.grad(lambda a, b: fluxion_rl.q_learning(a, 1, 0.5, 0.9, b, stop) ** 2, argnums=(0, 1))
        ref = _ref(jax.grad(lambda a, b: rlax.q_learning(a, 1, 0.5, 0.9, b, stop) ** 2,
                            argnums=(0, 1)))
        close(ours(q_tm1, q_t), ref(q_tm1, q_t))
    r, d, v = _f(5), _f(5, lo=0, hi=1), _f(6)
    rho = _f(5, lo=0.1, hi=2)
    for stop in (True, False):
        close(fluxion.grad(lambda v_: fjnp.sum(fluxion_rl.vtrace(v_[:-1], v_[1:], r, d, rho,
                                                                 stop_target_gradients=stop) ** 2))(v),
              _ref(jax.grad(lambda v_: jnp.sum(rlax.vtrace(v_[:-1], v_[1:], r, d, rho,
                                                           stop_target_gradients=stop) ** 2)))(v))


def test_updates_and_trees():
    new, old = {"w": _f(2)}, {"w": _f(2)}
    for step in (0, 3, 4):
        close(fluxion_rl.periodic_update(new, old, np.int32(step), 2),
              rlax.periodic_update(new, old, np.int32(step), 2))
    close(fluxion_rl.conditional_update(new, old, True), rlax.conditional_update(new, old, True))
    mask = np.array([True, False, True])
    data, repl = {"x": _f(3, 2)}, {"x": _f(3, 2)}
    close(fluxion_rl.tree_replace_masked(data, repl, mask), rlax.tree_replace_masked(data, repl, mask))
    close(fluxion_rl.tree_replace_masked(data, None, mask), rlax.tree_replace_masked(data, None, mask))
    close(fluxion_rl.tree_select(np.bool_(False), new, old), rlax.tree_select(np.bool_(False), new, old))
    close(fluxion_rl.tree_map_zipped(lambda a, b: a * b, [new, old]),
          rlax.tree_map_zipped(lambda a, b: a * b, [new, old]))
    k_o = fluxion_rl.tree_split_key(KEY, {"a": 1, "b": (2, 3)})
    k_r = rlax.tree_split_key(KEY, {"a": 1, "b": (2, 3)})
    close(k_o, k_r)
    t = {"a": np.arange(6.0).reshape(2, 3)}
    for keep in (False, True):
        ours, ref = fluxion_rl.tree_split_leaves(t, 0, keep), rlax.tree_split_leaves(t, 0, keep)
        assert len(ours) == len(ref) == 2
        close(ours, ref)
    x = {"a": _f(2, 3, 4)}
    close(fluxion_rl.transpose_last_axis_to_first(x), rlax.transpose_last_axis_to_first(x))
    close(fluxion_rl.transpose_first_axis_to_last(x), rlax.transpose_first_axis_to_last(x))
    close(fluxion_rl.tree_fn(lambda a, s: a * s, s=2.0)(x), rlax.tree_fn(lambda a, s: a * s, s=2.0)(x))
    close(fluxion_rl.lhs_broadcast(_f(3) * 0 + 1, _f(3, 2, 2)), rlax.lhs_broadcast(np.ones(3, np.float32),
                                                                                  _f(3, 2, 2)))
    y = _f(3, 4)
    close(fluxion_rl.AllSum()(y, axis=1), rlax.AllSum()(y, axis=1))
    close(fluxion.vmap(lambda v: fluxion_rl.AllSum("i")(v), axis_name="i")(y),
          jax.vmap(lambda v: rlax.AllSum("i")(v), axis_name="i")(y))


def _transform_pair_outputs(lib, x, p, r, d, v, q, pi, a):
    out = []
    for name in ["IDENTITY_PAIR", "SIGNED_LOGP1_PAIR", "SIGNED_HYPERBOLIC_PAIR", "HYPERBOLIC_SIN_PAIR"]:
        pair = getattr(lib, name)
        out += [pair.apply(x), pair.apply_inv(x)]
    out += [lib.DISCOUNT_TRANSFORM_PAIR.apply(p), lib.DISCOUNT_TRANSFORM_PAIR.apply_inv(p)]
    tw = lib.twohot_pair(-5.0, 5.0, 11)
    out += [tw.apply(x), tw.apply_inv(tw.apply(x))]
    out.append(lib.muzero_pair(-3.0, 3.0, 13, lib.SIGNED_HYPERBOLIC_PAIR).apply(x))
    ub = lib.unbiased_transform_pair(-3.0, 3.0, 13, lib.SIGNED_HYPERBOLIC_PAIR)
    out += [ub.apply(x), ub.apply_inv(ub.apply(x))]
    c = lib.compose_tx(lib.SIGNED_LOGP1_PAIR, lib.SIGNED_HYPERBOLIC_PAIR)
    out += [c.apply(x), c.apply_inv(0.25 * x)]  # exp(parabolic(4)) would amplify rounding
    out.append(lib.transformed_lambda_returns(lib.SIGNED_HYPERBOLIC_PAIR, r, d, v, 0.8))
    out.append(lib.transformed_n_step_returns(lib.SIGNED_LOGP1_PAIR, r, d, v, 3))
    out.append(lib.transformed_general_off_policy_returns_from_action_values(
        lib.SIGNED_LOGP1_PAIR, q, a, r, d, d, pi))
    return out


def test_transform_pairs():
    args = (_f(6, lo=-4, hi=4), _f(6, lo=0.05, hi=0.9), _f(5), _f(5, lo=0, hi=1), _f(5), _f(5, 3),
            _f(5, 3, lo=0.1, hi=1), np.array([0, 1, 2, 1, 0], np.int32))
    ours = fluxion.jit(lambda *xs: _transform_pair_outputs(fluxion_rl, *xs))(*args)
    ref = _transform_pair_outputs(rlax, *args)
    # signed_parabolic (inside the inverse transforms and the unbiased pair's bins) cancels two numbers
    # near 500 in float32: bins and two-hot weights move by ~3e-5 between compilations.
    close(ours, ref, rtol=1e-4, atol=1e-4)


def test_memory_and_subsequences():
    data, queries = _f(20, 3), _f(4, 3)
    ours, ref = fluxion_rl.knn_query(data, queries, 5), rlax.knn_query(data, queries, 5)
    close((ours.neighbors, ours.neighbor_indices, ours.neighbor_neg_distances),
          (ref.neighbors, ref.neighbor_indices, ref.neighbor_neg_distances))
    emb1, emb2 = _f(3, 2), _f(3, 2)
    r_o, s_o = fluxion_rl.episodic_memory_intrinsic_rewards(emb1, 2, 0.5, max_memory_size=16)
    r_r, s_r = rlax.episodic_memory_intrinsic_rewards(emb1, 2, 0.5, max_memory_size=16)
    close(r_o, r_r)
    r_o, s_o = fluxion_rl.episodic_memory_intrinsic_rewards(emb2, 2, 0.5, s_o, max_memory_size=16)
    r_r, s_r = rlax.episodic_memory_intrinsic_rewards(emb2, 2, 0.5, s_r, max_memory_size=16)
    close(r_o, r_r)
    close((s_o.memory, s_o.distance_sum, s_o.distance_count), (s_r.memory, s_r.distance_sum, s_r.distance_count))
    traj = _f(10, 2, 3)
    starts = np.array([[0, 3], [5, 7]], np.int32)
    close(fluxion_rl.extract_subsequences(traj, starts, 3, 7), rlax.extract_subsequences(traj, starts, 3, 7))
    close(fluxion.jit(lambda k: fluxion_rl.sample_start_indices(k, 3, 2, 6))(KEY), rlax.sample_start_indices(KEY, 3, 2, 6))


class _Dist:
    """A small distrax-like distribution: both libraries only call sample / log_prob / batch_shape."""

    def __init__(self, np_mod, logits):
        self.np, self.logits, self.batch_shape = np_mod, logits, logits.shape[:-1]

    def sample(self, seed, sample_shape):
        return (np.asarray(seed)[1] % 3 + np.zeros(sample_shape + self.batch_shape, np.int32)).astype(np.int32)

    def log_prob(self, a):
        lp = self.logits - self.np.log(self.np.sum(self.np.exp(self.logits), -1, keepdims=True))
        hot = self.np.asarray(a)[..., None] == self.np.arange(lp.shape[-1])
        return self.np.sum(self.np.where(hot, lp, 0.0), axis=-1)


def test_policy_distillation():
    logits = _f(2, 3)
    t_o = fluxion_rl.constant_policy_targets(_Dist(fjnp, logits), KEY, 4)
    t_r = rlax.constant_policy_targets(_Dist(jnp, logits), KEY, 4)
    close((t_o.actions, t_o.weights), (t_r.actions, t_r.weights))
    z_o = fluxion_rl.zero_policy_targets(_Dist(fjnp, logits), KEY, 4)
    z_r = rlax.zero_policy_targets(_Dist(jnp, logits), KEY, 4)
    close((z_o.actions, z_o.weights), (z_r.actions, z_r.weights))
    t_o = fluxion_rl.PolicyTarget(actions=t_o.actions, weights=fjnp.asarray(_f(4, 2)))
    t_r = rlax.PolicyTarget(actions=t_r.actions, weights=jnp.asarray(np.asarray(t_o.weights)))
    close(fluxion_rl.sampled_policy_distillation_loss(_Dist(fjnp, logits), t_o),
          rlax.sampled_policy_distillation_loss(_Dist(jnp, logits), t_r))

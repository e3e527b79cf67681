"""What optax's own tests need beyond the public names: optax's private module layout
(``optax._src.utils`` ...), the contrib wrappers mechanize / split_real_and_imaginary / DP-SGD
against optax's numbers, and scalar-type comparisons the tests make (``jnp.float16 != dtype``)."""

import importlib

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
import fluxion_optim

optax = pytest.importorskip("optax")
jax = pytest.importorskip("jax")

# the names optax's tests take from optax._src.<module>
PRIVATE = {
    "utils": "canonicalize_dtype multi_normal scale_gradient set_diags tile_second_to_last_dim "
             "x64_precision",
    "numerics": "abs_sq safe_increment safe_norm safe_root_mean_squares",
    "base": "ArrayTree EmptyState GradientTransformation PRNGKey Params ScalarOrSchedule Schedule "
            "Shape StatefulSchedule identity init_empty_state set_to_zero stateless",
    "update": "apply_updates incremental_update periodic_update",
    "lookahead": "LookaheadParams lookahead",
    "linear_algebra": "matrix_inverse_pth_root nnls power_iteration",
    "transform": "scale_by_adam scale_by_lion ScaleByAdamState add_noise",
}


@pytest.mark.parametrize("mod", sorted(PRIVATE))
def test_private_layout(mod: str) -> None:
    ours = importlib.import_module(f"fluxion_optim._src.{mod}")
    ref = importlib.import_module(f"optax._src.{mod}")
    for name in PRIVATE[mod].split():
        assert hasattr(ref, name), name
        assert hasattr(ours, name), (mod, name)


def test_private_helpers_match_optax() -> None:
    from optax._src import utils as ref

    from fluxion_optim._src import utils
    a = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    d = np.ones((3, 2), np.float32)
    np.testing.assert_array_equal(np.asarray(utils.set_diags(jnp.asarray(a), jnp.asarray(d))),
                                  np.asarray(ref.set_diags(jax.numpy.asarray(a), d)))
    x = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_array_equal(np.asarray(utils.tile_second_to_last_dim(jnp.asarray(x))),
                                  np.asarray(ref.tile_second_to_last_dim(x)))
    with pytest.raises(ValueError, match="Expected `a` to be a 3D tensor, got 2D instead"):
        utils.set_diags(jnp.zeros((2, 2)), jnp.zeros((2, 2)))
    with utils.x64_precision(True):
        assert jnp.float64(1.0).dtype == np.float64
    assert jnp.float64(1.0).dtype == np.float32  # restored


def test_scalar_types_compare_unequal() -> None:
    assert not (jnp.float16 != jnp.float16)
    assert jnp.float16 != jnp.bfloat16
    assert jnp.float32 == np.float32 and not (jnp.float32 != np.float32)


def _run(make, mod, xp, params, grads, steps=3):
    tx = make(mod)
    p = {k: xp.asarray(v) for k, v in params.items()}
    state = tx.init(p)
    for _ in range(steps):
        u, state = tx.update({k: xp.asarray(v) for k, v in grads.items()}, state, p)
        p = mod.apply_updates(p, u)
    return p, state


@pytest.mark.parametrize("make", [
    lambda m: m.contrib.mechanize(m.adam(0.1)),
    lambda m: m.contrib.split_real_and_imaginary(m.adam(0.1)),
], ids=["mechanize", "split_real_and_imaginary"])
def test_contrib_wrappers_match_optax(make) -> None:
    cplx = "split" in repr(make.__code__.co_names)
    dt = np.complex64 if cplx else np.float32
    params = {"a": np.array([1.0, -2.0, 3.0]).astype(dt), "b": np.array([[0.5, 1.5]]).astype(dt)}
    grads = {"a": np.array([0.1, 0.2, -0.3]).astype(dt), "b": np.array([[1.0, -1.0]]).astype(dt)}
    if cplx:
        params["a"] = params["a"] * (1 + 1j)
    ours, _ = _run(make, fluxion_optim, jnp, params, grads)
    ref, _ = _run(make, optax, jax.numpy, params, grads)
    for k in params:
        np.testing.assert_allclose(np.asarray(ours[k]), np.asarray(ref[k]), rtol=2e-6, atol=1e-6)
        assert ours[k].dtype == ref[k].dtype


def test_dpsgd_same_noise_as_optax() -> None:
    per_example = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    ours = fluxion_optim.contrib.dpsgd(0.1, 1.0, 0.5, seed=3)
    ref = optax.contrib.dpsgd(0.1, 1.0, 0.5, seed=3)
    u, _ = ours.update(jnp.asarray(per_example), ours.init(jnp.zeros(3)))
    r, _ = ref.update(per_example, ref.init(np.zeros(3, np.float32)))
    np.testing.assert_allclose(np.asarray(u), np.asarray(r), rtol=1e-6)


@pytest.mark.parametrize("name,kwargs", [
    ("momo", {"adapt_lower_bound": True, "weight_decay": 0.1}),
    ("momo_adam", {"learning_rate": 0.1}),
])
def test_momo_matches_optax(name: str, kwargs: dict) -> None:
    p0 = np.array([1.0, -2.0, 3.0], np.float32)
    finals = []
    for mod, xp, value_and_grad in ((fluxion_optim, jnp, fluxion.value_and_grad),
                                    (optax, jax.numpy, jax.value_and_grad)):
        f = lambda x, xp=xp: xp.sum((x - 0.5) ** 2) + 0.3  # noqa: E731
        tx = getattr(mod.contrib, name)(**kwargs)
        p = xp.asarray(p0)
        state = tx.init(p)
        for _ in range(3):
            v, g = value_and_grad(f)(p)
            u, state = tx.update(g, state, p, value=v)
            p = mod.apply_updates(p, u)
        finals.append(np.asarray(p))
    np.testing.assert_allclose(finals[0], finals[1], rtol=1e-5, atol=2e-6)
    with pytest.raises(ValueError, match="You need to pass the latest loss value to Momo"):
        tx = getattr(fluxion_optim.contrib, name)()
        tx.update(jnp.ones(3), tx.init(jnp.ones(3)), jnp.ones(3))


def test_sophia_matches_optax() -> None:
    p0 = np.array([1.0, -2.0, 3.0], np.float32)
    finals = []
    for mod, xp, grad in ((fluxion_optim, jnp, fluxion.grad), (optax, jax.numpy, jax.grad)):
        f = lambda x, xp=xp: xp.sum((x - 0.5) ** 4) + xp.sum(x ** 2)  # noqa: E731
        tx = mod.contrib.sophia(0.1, update_interval=2)
        p = xp.asarray(p0)
        state = tx.init(p)
        for _ in range(3):
            u, state = tx.update(grad(f)(p), state, p, obj_fn=f)
            p = mod.apply_updates(p, u)
        finals.append((np.asarray(p), np.asarray(state[0].nu)))
    np.testing.assert_allclose(finals[0][0], finals[1][0], rtol=1e-6)
    np.testing.assert_allclose(finals[0][1], finals[1][1], rtol=1e-6)

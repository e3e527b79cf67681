"""fluxion.test_util against jax.test_util: the finite differences use JAX's step (1e-4, central:
f(x + eps t) - f(x - eps t) over 2 eps), so tolerances written for JAX hold (jax_md's
rigid_body shape-derivative test: atol = rtol = 5e-4)."""

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import test_util

jax = pytest.importorskip("jax")
from jax._src import public_test_util as jax_tu  # noqa: E402


def _f(lib, np_):
    return lambda x: np_.sum(np_.sin(30.0 * x) * x)


X = np.array([0.1, 0.35, -0.2], np.float32)


def test_central_difference_matches_jax_numerical_jvp():
    t = np.array([0.3, -1.2, 0.7], np.float32)
    ours = test_util._central_difference(_f(fluxion, jnp), [X], [t], 1e-4)
    ref = jax_tu.numerical_jvp(_f(jax, jax.numpy), (X,), (t,), eps=1e-4)
    assert np.asarray(ours).shape == np.asarray(ref).shape == ()
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=1e-4)


def test_check_grads_step_is_jaxs():
    # A 1e-2 step (the old float32 default) misses this curvature by ~0.4%; JAX's passes.
    jax_tu.check_grads(_f(jax, jax.numpy), (X,), 1, atol=5e-4, rtol=5e-4)
    test_util.check_grads(_f(fluxion, jnp), (X,), 1, atol=5e-4, rtol=5e-4)
    with pytest.raises(AssertionError):
        test_util.check_grads(_f(fluxion, jnp), (X,), 1, atol=5e-4, rtol=5e-4, eps=5e-3)


def test_check_grads_still_catches_a_wrong_derivative():
    @fluxion.custom_jvp
    def f(x):
        return jnp.sin(x)

    f.defjvp(lambda p, t: (jnp.sin(p[0]), 1.01 * jnp.cos(p[0]) * t[0]))
    with pytest.raises(AssertionError, match="finite differences"):
        test_util.check_grads(f, (X,), 1, modes=("fwd",), atol=5e-4, rtol=5e-4)
    with pytest.raises(AssertionError, match="finite differences"):
        test_util.check_grads(f, (X,), 1, modes=("rev",), atol=5e-4, rtol=5e-4)

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


def test_platform_tolerances_widen_float_checks_only_off_the_cpu(monkeypatch):
    import _compare

    monkeypatch.setattr(np.testing, "assert_allclose", np.testing.assert_allclose)
    assert not _compare.install_platform_tolerances("cpu")
    with pytest.raises(AssertionError):  # the CPU: the test's own tolerance
        np.testing.assert_allclose(np.float32([1.0005]), np.float32([1.0]), rtol=1e-6)
    assert _compare.install_platform_tolerances("tpu")
    assert not _compare.install_platform_tolerances("tpu")  # once
    # float32 within the TPU's 2e-3 relative: passes; beyond it, or integers: still fails
    np.testing.assert_allclose(np.float32([1.0005]), np.float64([1.0]), rtol=1e-6)
    np.testing.assert_allclose(fluxion.numpy.float32(1.0005), 1.0, 1e-6)
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(np.float32([1.01]), np.float32([1.0]), rtol=1e-6)
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(np.int32([1001]), np.int32([1000]), rtol=1e-6)
    with pytest.raises(AssertionError):  # float64 on both sides: the TPU's float64 tolerance
        np.testing.assert_allclose(np.float64([1.0005]), np.float64([1.0]), rtol=1e-7)
    # a wider tolerance a test gives stays
    np.testing.assert_allclose(np.float32([1.05]), np.float32([1.0]), rtol=0.1)

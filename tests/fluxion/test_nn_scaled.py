"""``fluxion.nn.scaled_matmul``, ``scaled_dot_general`` and ``get_scaled_dot_general_config``
against jax 0.10.2. JAX's ``scaled_matmul`` has only cuDNN (CUDA) and ``scaled_dot`` (ROCm) rules,
so on this CPU its result is the definition its docstring gives (operands times repeated
scales, ``einsum('BMK,BNK->BMN')``); ``scaled_dot_general`` runs JAX's own quantization,
shape handling and custom VJP with that definition standing in for the fused kernel."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.cudnn import scaled_matmul_stablehlo as jax_scaled

import fluxion
import fluxion.numpy as fnp
from fluxion import nn


def _definition(a, b, a_scales, b_scales, preferred_element_type=jnp.float32):
    f32 = jnp.float32
    a = a.astype(f32) * jnp.repeat(a_scales.astype(f32), a.shape[-1] // a_scales.shape[-1], -1)
    b = b.astype(f32) * jnp.repeat(b_scales.astype(f32), b.shape[-1] // b_scales.shape[-1], -1)
    return jnp.einsum("BMK,BNK->BMN", a, b, precision="highest").astype(preferred_element_type)


@pytest.mark.parametrize("dtype,scale_dtype,block", [
    (np.float32, np.float32, 3), (jnp.float8_e4m3fn, jnp.float8_e8m0fnu, 32),
    (jnp.float4_e2m1fn, jnp.float8_e4m3fn, 16)])
@pytest.mark.parametrize("out", [np.float32, jnp.bfloat16])
def test_scaled_matmul_is_jaxs_definition(dtype, scale_dtype, block, out) -> None:
    r = np.random.RandomState(0)
    k = 4 * block
    a = r.randn(2, 3, k).astype(dtype)
    b = r.randn(2, 5, k).astype(dtype)
    sa = np.exp2(r.randint(-3, 3, (2, 3, 4))).astype(scale_dtype)
    sb = np.exp2(r.randint(-3, 3, (2, 5, 4))).astype(scale_dtype)
    ours = nn.scaled_matmul(fnp.asarray(a), fnp.asarray(b), fnp.asarray(sa), fnp.asarray(sb),
                            preferred_element_type=out)
    theirs = _definition(a, b, sa, sb, out)
    assert ours.shape == theirs.shape == (2, 3, 5) and ours.dtype == theirs.dtype
    np.testing.assert_allclose(np.asarray(ours, np.float32), np.asarray(theirs, np.float32),
                               rtol=1e-6 if out == np.float32 else 1e-2)
    with pytest.raises(NotImplementedError):  # JAX itself has no CPU rule
        jax.nn.scaled_matmul(a, b, sa, sb)


def test_scaled_matmul_errors_as_jax() -> None:
    one = np.ones((1, 2, 4), np.float32)
    cases = [((one[0], one, one, one), "3-dimensional"),
             ((one, np.ones((1, 2, 8), np.float32), one, one), "matching batch"),
             ((one, one, np.ones((1, 2, 2), np.float32), one), "scales to have matching"),
             ((one, one, np.ones((1, 3, 4), np.float32), one), "non-contract dimensions")]
    for args, match in cases:
        with pytest.raises(ValueError, match=match):
            jax.nn.scaled_matmul(*args)
        with pytest.raises(ValueError, match=match):
            nn.scaled_matmul(*args)


def test_configs_as_jax() -> None:
    for mode in ("mxfp8", "nvfp4"):
        ours, theirs = nn.get_scaled_dot_general_config(mode), \
            jax.nn.get_scaled_dot_general_config(mode)
        for field in ("mode", "block_size", "data_type", "scale_type", "infer_only"):
            assert getattr(ours, field) == getattr(theirs, field)
        assert (ours.global_scale is None) == (theirs.global_scale is None)
    scale = np.array([0.5], np.float32)
    assert nn.get_scaled_dot_general_config("nvfp4", scale).global_scale is scale
    for get in (nn.get_scaled_dot_general_config, jax.nn.get_scaled_dot_general_config):
        with pytest.raises(ValueError, match="Unsupported mode: fp8"):
            get("fp8")


CASES = [((2, 32, 64), (2, 32, 64), (((2,), (2,)), ((0,), (0,)))),
         ((32, 64), (64, 32), (((1,), (0,)), ((), ()))),
         ((3, 64, 32), (32, 3, 64), (((1,), (2,)), ((0,), (1,))))]


@pytest.mark.parametrize("mode", ["mxfp8", "nvfp4"])
@pytest.mark.parametrize("lhs_shape,rhs_shape,dims", CASES)
@pytest.mark.parametrize("out", [np.float32, jnp.bfloat16])
def test_scaled_dot_general_and_its_gradient_match_jax(monkeypatch, mode, lhs_shape, rhs_shape,
                                                       dims, out) -> None:
    monkeypatch.setattr(jax_scaled, "scaled_matmul_wrapper", _definition)
    r = np.random.RandomState(1)
    x, y = r.randn(*lhs_shape).astype(np.float32), r.randn(*rhs_shape).astype(np.float32)
    ours_c = [nn.get_scaled_dot_general_config(mode)] * 3
    theirs_c = [jax.nn.get_scaled_dot_general_config(mode)] * 3

    def program(lib, scaled_dot_general, configs):
        # the product and both gradients in one compiled program per library (eagerly, JAX's
        # quantization and custom VJP compile about a hundred small programs a case)
        def loss(a, b):
            return scaled_dot_general(a, b, dims, out, configs=configs).astype(np.float32).sum()
        return lib.jit(lambda a, b: (scaled_dot_general(a, b, dims, out, configs=configs),
                                     lib.grad(loss, (0, 1))(a, b)))

    ours, ours_g = program(fluxion, nn.scaled_dot_general, ours_c)(x, y)
    theirs, theirs_g = program(jax, jax.nn.scaled_dot_general, theirs_c)(jnp.asarray(x),
                                                                         jnp.asarray(y))
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_array_equal(np.asarray(ours, np.float32), np.asarray(theirs, np.float32))
    if len(lhs_shape) == 2 and out == np.float32:  # Fluxion's eager path, one case a mode
        np.testing.assert_array_equal(
            np.asarray(nn.scaled_dot_general(x, y, dims, out, configs=ours_c)), np.asarray(theirs))
    for o, t in zip(ours_g, theirs_g):
        assert o.shape == t.shape
        np.testing.assert_allclose(np.asarray(o, np.float32), np.asarray(t, np.float32),
                                   rtol=0 if out == np.float32 else 1e-2, atol=0 if
                                   out == np.float32 else 0.07)


def test_scaled_dot_general_without_configs_and_its_errors() -> None:
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    dims = (((1,), (1,)), ((), ()))
    np.testing.assert_array_equal(np.asarray(nn.scaled_dot_general(x, x, dims)),
                                  np.asarray(jax.nn.scaled_dot_general(x, x, dims)))
    configs = [nn.get_scaled_dot_general_config("mxfp8")] * 3
    with pytest.raises(TypeError, match="preferred_element_type"):
        nn.scaled_dot_general(x, x, dims, np.int32, configs=configs)
    with pytest.raises(TypeError, match="preferred_element_type"):
        jax.nn.scaled_dot_general(jnp.asarray(x), jnp.asarray(x), dims, np.int32,
                                  configs=[jax.nn.get_scaled_dot_general_config("mxfp8")] * 3)
    with pytest.raises(ValueError, match="multiple of the block size"):
        nn.scaled_dot_general(x, x, dims, configs=configs)
    with pytest.warns(DeprecationWarning):
        nn.scaled_dot_general(x, x, dims, implementation="cudnn")

"""``lax.DotAlgorithm`` and the ``DotAlgorithmPreset``s as ``precision=`` of ``lax.dot``, against
jax 0.10.2: the ``algorithm`` attribute of the lowered ``stablehlo.dot_general`` (CPU and, through
``export``, TPU and CUDA modules), the operand/result conversions, values and dtypes on the CPU,
and JAX's CPU refusal of every custom algorithm and of the presets it does not let through."""

from __future__ import annotations

import re

import jax
import ml_dtypes
import numpy as np
import pytest
from _compare import assert_same

import fluxion
from fluxion import lax

A = (np.arange(6, dtype=np.float32).reshape(2, 3) / 7)
B = (np.arange(12, dtype=np.float32).reshape(3, 4) / 3)
_ALGO = re.compile(r"algorithm = (?:#stablehlo\.dot_algorithm)?<([^>]*)>")
CUSTOM = {
    "f32": (np.float32, np.float32, np.float32),
    "bf16_x3_imprecise": (ml_dtypes.bfloat16, ml_dtypes.bfloat16, np.float32, 1, 1, 3, True),
    "f16": (np.float16, np.float16, np.float16),
}


def _facts(text):
    """The algorithm attributes and how many converts a lowered module has."""
    return _ALGO.findall(text), text.count("convert")


def _run(lib, precision, x, y):
    f = lib.jit(lambda x, y: lib.lax.dot(x, y, precision=precision))
    try:
        return _facts(f.lower(x, y).as_text()), f(x, y)
    except ValueError as e:
        return "ValueError", str(e)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("name", list(jax.lax.DotAlgorithmPreset.__members__))
def test_presets_on_cpu_like_jax(name, dtype):
    x, y = A.astype(dtype), B.astype(dtype)
    ours = _run(fluxion, getattr(lax.DotAlgorithmPreset, name), x, y)
    theirs = _run(jax, getattr(jax.lax.DotAlgorithmPreset, name), x, y)
    assert ours[0] == theirs[0]
    if ours[0] == "ValueError":
        assert ours[1] == theirs[1]  # "The precision 'TF32_TF32_F32' is not supported ..."
    else:
        assert_same(ours[1], theirs[1])


@pytest.mark.parametrize("name", sorted(CUSTOM))
def test_custom_algorithm_refused_on_cpu_like_jax(name):
    for lib in (fluxion, jax):
        alg = lib.lax.DotAlgorithm(*CUSTOM[name])
        f = lib.jit(lambda x, y: lib.lax.dot(x, y, precision=alg))
        with pytest.raises(ValueError, match="is not supported by dot_general on CPU"):
            f.lower(A, B)
        # staging needs no lowering: the algorithm is the equation's precision, as jax's
        eqn, = lib.make_jaxpr(lambda x, y: lib.lax.dot(x, y, precision=alg))(A, B).eqns
        assert isinstance(eqn.params["precision"], lib.lax.DotAlgorithm)
        assert lib.eval_shape(f, A, B).dtype == np.float32


@pytest.mark.parametrize("platform", ["tpu", "cuda"])
@pytest.mark.parametrize("name", ["f32", "f16", "TF32_TF32_F32", "F16_F16_F32"])
def test_algorithm_attribute_for_accelerators_like_jax(platform, name):
    # (not bf16_x3_imprecise: jax's StableHLO verifier refuses that algorithm when exporting;
    # Fluxion's export does not run the verifier, see docs/api/lax.md)
    def facts(lib):
        p = lib.lax.DotAlgorithm(*CUSTOM[name]) if name in CUSTOM else name
        f = lib.jit(lambda x, y: lib.lax.dot(x, y, precision=p))
        return _facts(lib.export.export(f, platforms=[platform])(A, B).mlir_module())
    assert facts(fluxion) == facts(jax)


def test_dot_algorithm_class_like_jax():
    fields = ("lhs_precision_type", "rhs_precision_type", "accumulation_type",
              "lhs_component_count", "rhs_component_count", "num_primitive_operations",
              "allow_imprecise_accumulation")
    assert lax.DotAlgorithm._fields == jax.lax.DotAlgorithm._fields == fields
    assert lax.DotAlgorithm._field_defaults == jax.lax.DotAlgorithm._field_defaults
    alg = lax.DotAlgorithm(np.float32, np.float32, np.float32)
    assert repr(alg) == repr(jax.lax.DotAlgorithm(np.float32, np.float32, np.float32))
    for lib in (fluxion, jax):  # jax's message lists DotAlgorithm among the accepted values
        with pytest.raises(ValueError, match="a lax.DotAlgorithm value"):
            lib.lax.dot(A, B, precision=3)

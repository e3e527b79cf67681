"""``lax.DotAlgorithm`` and the ``DotAlgorithmPreset``s as ``precision=`` of ``lax.dot``, against
jax 0.10.2: the ``algorithm`` attribute of the lowered ``stablehlo.dot_general`` (CPU and, through
``export``, TPU and CUDA modules), the operand/result conversions, values and dtypes on the CPU,
and JAX's CPU refusal of every custom algorithm and of the presets it does not let through."""

from __future__ import annotations

import os
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


# Fluxion's platform in this run: the CPU-only checks (JAX's CPU refusals, values bit-equal with
# the reference on the CPU) skip elsewhere; the TPU's own behaviour has a test of its own.
PLATFORM = os.environ.get("FLUXION_TEST_PLATFORM", "cpu")
_CPU_ONLY = pytest.mark.skipif(PLATFORM != "cpu", reason="JAX's CPU lowering and CPU values: "
                               "the reference runs on the CPU; see test_presets_on_tpu")


def _facts(text):
    """The algorithm attributes and how many converts a lowered module has."""
    return _ALGO.findall(text), text.count("convert")


def _run(lib, precision, x, y):
    f = lib.jit(lambda x, y: lib.lax.dot(x, y, precision=precision))
    try:
        return _facts(f.lower(x, y).as_text()), f(x, y)
    except ValueError as e:
        return "ValueError", str(e)


@_CPU_ONLY
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


@_CPU_ONLY
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
    # (not bf16_x3_imprecise: the StableHLO verifier's rule refuses that algorithm when
    # exporting, in both: test_unknown_algorithms_refused_at_lowering_like_jax)
    def facts(lib):
        p = lib.lax.DotAlgorithm(*CUSTOM[name]) if name in CUSTOM else name
        f = lib.jit(lambda x, y: lib.lax.dot(x, y, precision=p))
        return _facts(lib.export.export(f, platforms=[platform])(A, B).mlir_module())
    assert facts(fluxion) == facts(jax)


def _exported(lib, precision, x, y, platform):
    """The algorithm facts and result type of the module exported for ``platform``, or the
    error's type and message (without jax's source locations)."""
    f = lib.jit(lambda x, y: lib.lax.dot(x, y, precision=precision))
    try:
        text = lib.export.export(f, platforms=[platform])(x, y).mlir_module()
    except ValueError as e:
        return "ValueError", str(e).split("\n\t\tat ")[0]
    return _facts(text), re.findall(r"-> tensor<[^>]*>", text)[-1]


@pytest.mark.parametrize("platform", ["tpu", "cuda"])
def test_every_preset_lowers_for_accelerators_like_jax(platform):
    # The TPU/CUDA lowering of each preset, which the CPU refuses earlier: on a TPU the ANY_F8
    # presets on non-float8 operands raised AttributeError (fluxion.core.dtypes has no float32)
    # where jax raises its ValueError ('requires both inputs to have float8 dtypes').
    for name in jax.lax.DotAlgorithmPreset.__members__:
        for dtype in (np.float32, np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn):
            x, y = A.astype(dtype), B.astype(dtype)
            ours = _exported(fluxion, getattr(lax.DotAlgorithmPreset, name), x, y, platform)
            theirs = _exported(jax, getattr(jax.lax.DotAlgorithmPreset, name), x, y, platform)
            assert ours == theirs, (name, np.dtype(dtype).name)


VERIFIER_CASES = [
    (ml_dtypes.bfloat16, ml_dtypes.bfloat16, np.float32, 1, 1, 3, True),  # imprecise: not known
    (np.float32, np.float32, np.float32, 2, 1, 1, False),  # two components
    (ml_dtypes.float8_e8m0fnu, ml_dtypes.float8_e8m0fnu, np.float32),  # not an "any f8"
    (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, np.float32, 1, 1, 1, True),  # known
    (np.float16, np.float16, np.float32, 1, 1, 3),  # f16 x3: not known
    (ml_dtypes.bfloat16, ml_dtypes.bfloat16, np.float32, 1, 1, 9),  # BF16_BF16_F32_X9's
]


@pytest.mark.parametrize("case", range(len(VERIFIER_CASES)))
def test_unknown_algorithms_refused_at_lowering_like_jax(case):
    # StableHLO's verifier rule, which jax runs when lowering: an algorithm no hardware is known
    # to support is jax's ValueError, never a module for XLA (on a TPU Fluxion's reached the
    # compiler: JaxRuntimeError 'dot algorithm not known to be supported on any hardware').
    args = VERIFIER_CASES[case]
    ours = _exported(fluxion, lax.DotAlgorithm(*args), A, B, "tpu")
    theirs = _exported(jax, jax.lax.DotAlgorithm(*args), A, B, "tpu")
    assert ours == theirs


# What jax 0.10.2 does with each preset on a TPU v5e (the chip probe of session 17, f32, f16 and
# bf16 operands alike): these run; the ANY_F8 presets are the ValueError above on these operands;
# XLA's TPU compiler refuses every other one ("UNIMPLEMENTED: Dot algorithm ALG_DOT_... is not
# supported").
TPU_RUNS = {"DEFAULT", "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6"}


def _tpu_reference(name, x, y):
    """What the chip computes for a preset that runs there, by the reference on the CPU. XLA:CPU
    computes float32 operands in float32 whatever the algorithm; the TPU's DEFAULT and
    BF16_BF16_F32 are one bfloat16 pass, which on the CPU is the float32 product of the
    operands rounded to bfloat16 (the chip probe's values exactly), and DEFAULT is
    BF16_BF16_F32 for the narrower types too; the others as jax's."""
    if name in ("DEFAULT", "BF16_BF16_F32") and x.dtype == np.float32:
        b16 = ml_dtypes.bfloat16
        return jax.jit(lambda a, b: jax.lax.dot(a, b, preferred_element_type=np.float32))(
            x.astype(b16), y.astype(b16))
    preset = getattr(jax.lax.DotAlgorithmPreset, "BF16_BF16_F32" if name == "DEFAULT" else name)
    return jax.jit(lambda a, b: jax.lax.dot(a, b, precision=preset))(x, y)


@pytest.mark.tpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_presets_on_tpu(dtype):
    x, y = A.astype(dtype), B.astype(dtype)
    for name in jax.lax.DotAlgorithmPreset.__members__:
        f = fluxion.jit(lambda x, y, p=getattr(lax.DotAlgorithmPreset, name): lax.dot(
            x, y, precision=p))
        if name.startswith("ANY_F8"):
            with pytest.raises(ValueError, match="requires both inputs to have float8 dtypes"):
                f(x, y)
        elif name in TPU_RUNS:
            assert_same(f(x, y), _tpu_reference(name, x, y))
        else:
            with pytest.raises(Exception, match=f"Dot algorithm ALG_DOT_{name} is not supported"):
                np.asarray(f(x, y))


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

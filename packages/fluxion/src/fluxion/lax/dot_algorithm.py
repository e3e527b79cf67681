"""``DotAlgorithm`` and ``DotAlgorithmPreset``: the algorithm of a matrix product, JAX's.

Passed as ``precision=`` to ``dot_general``/``dot``, an algorithm is lowered as JAX 0.10.2
lowers it: the operands are converted to the algorithm's input types, the product is computed in
its accumulation type (then converted to the result's dtype) and ``stablehlo.dot_general``
carries it as its ``algorithm`` attribute, with the precision config ``DEFAULT``. On the CPU only
the presets JAX lets through are lowered (``DEFAULT``, ``F16_F16_F16``, ``F32_F32_F32``,
``F64_F64_F64``, ``BF16_BF16_F32``, ``BF16_BF16_F32_X3``, ``BF16_BF16_F32_X6``); any other preset
or ``DotAlgorithm`` is JAX's ``ValueError`` there (XLA:CPU would ignore it). In
``conv_general_dilated`` a preset selects the nearest operand precision.

Example:
    >>> from fluxion import lax
    >>> str(lax.DotAlgorithmPreset.F32_F32_F32)
    'F32_F32_F32'
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple

import numpy as np

from fluxion.core import dtypes

__all__ = ["DotAlgorithm", "DotAlgorithmPreset", "algorithm_attr", "algorithm_types",
           "check_cpu_algorithm"]


class DotAlgorithm(NamedTuple):
    """A dot product's algorithm: the types the operands are rounded to
    (``lhs_precision_type``, ``rhs_precision_type``), the accumulation type, how many components
    each operand is split into and how many products are summed (for algorithms emulating a
    higher precision; 1 otherwise), and whether part of the accumulation may be less precise.
    Platforms support only some: see :class:`DotAlgorithmPreset` for known ones.

    Example:
        >>> import numpy as np
        >>> DotAlgorithm(np.float32, np.float32, np.float32).num_primitive_operations
        1
    """

    lhs_precision_type: Any
    rhs_precision_type: Any
    accumulation_type: Any
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


class DotAlgorithmPreset(enum.Enum):
    """The dot algorithm presets of JAX 0.10 (input types, accumulation type, passes)."""

    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __repr__(self) -> str:
        return f"DotAlgorithmPreset.{self.name}"

    def __str__(self) -> str:
        return self.name

    @property
    def precision(self) -> str:
        """The operand precision this preset maps to: 'DEFAULT', 'HIGH' or 'HIGHEST'."""
        if self.name in ("F32_F32_F32", "F64_F64_F64", "BF16_BF16_F32_X9", "BF16_BF16_F32_X6"):
            return "HIGHEST"
        if self.name in ("TF32_TF32_F32", "TF32_TF32_F32_X3", "BF16_BF16_F32_X3"):
            return "HIGH"
        return "DEFAULT"

    @property
    def supported_lhs_types(self) -> tuple | None:
        """The operand types the preset computes in (the first is converted to when the
        operand's own is not among them); None: any."""
        n = self.name
        if n == "DEFAULT" or n.startswith("ANY_F8"):
            return None
        if n.startswith("F16_"):
            return (np.dtype(np.float16),)
        if n in ("BF16_BF16_BF16", "BF16_BF16_F32"):
            return (np.dtype(dtypes.bfloat16), np.dtype(np.float32))
        if n == "F64_F64_F64":
            return (np.dtype(np.float64),)
        return (np.dtype(np.float32),)

    @property
    def supported_rhs_types(self) -> tuple | None:
        """As :attr:`supported_lhs_types`."""
        return self.supported_lhs_types

    @property
    def accumulation_type(self) -> Any:
        """The type the products are summed in; None: the result's."""
        n = self.name
        if n in ("DEFAULT", "ANY_F8_ANY_F8_ANY", "ANY_F8_ANY_F8_ANY_FAST_ACCUM"):
            return None
        return {"F16_F16_F16": np.dtype(np.float16), "BF16_BF16_BF16": np.dtype(dtypes.bfloat16),
                "F64_F64_F64": np.dtype(np.float64)}.get(n, np.dtype(np.float32))

    def supported_output_types(self, lhs_dtype: Any, rhs_dtype: Any) -> tuple | None:
        """The result types the preset can produce for these operand types; None: any."""
        n = self.name
        if n in ("ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM"):
            # (float32/float16 are NumPy's: fluxion.core.dtypes names only the extra types)
            return (np.dtype(np.float32), np.dtype(np.float16)) + tuple(
                np.dtype(getattr(dtypes, t)) for t in (
                    "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e5m2fnuz",
                    "float8_e4m3fnuz", "float8_e4m3b11fnuz"))
        for name, narrow in (("F16_F16_F32", np.float16), ("BF16_BF16_F32", dtypes.bfloat16)):
            if n == name:
                if dtypes.promote_types(lhs_dtype, rhs_dtype) == np.dtype(narrow):
                    return (np.dtype(np.float32), np.dtype(narrow))
                return (np.dtype(np.float32),)
        acc = self.accumulation_type
        return None if acc is None else (acc,)


# The presets JAX 0.10.2 lowers on the CPU (every other algorithm is its ValueError there).
_CPU_PRESETS = frozenset({"DEFAULT", "F16_F16_F16", "F32_F32_F32", "F64_F64_F64",
                          "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6"})
# (lhs, rhs, accumulation, primitive operations) of each preset with a fixed algorithm
_PRESET_ALGORITHMS = {
    "F16_F16_F16": ("f16", "f16", "f16", 1), "F16_F16_F32": ("f16", "f16", "f32", 1),
    "BF16_BF16_BF16": ("bf16", "bf16", "bf16", 1), "BF16_BF16_F32": ("bf16", "bf16", "f32", 1),
    "BF16_BF16_F32_X3": ("bf16", "bf16", "f32", 3), "BF16_BF16_F32_X6": ("bf16", "bf16", "f32", 6),
    "BF16_BF16_F32_X9": ("bf16", "bf16", "f32", 9), "TF32_TF32_F32": ("tf32", "tf32", "f32", 1),
    "TF32_TF32_F32_X3": ("tf32", "tf32", "f32", 3), "F32_F32_F32": ("f32", "f32", "f32", 1),
    "F64_F64_F64": ("f64", "f64", "f64", 1),
}
_MLIR_NAMES = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
               "float8_e4m3fn": "f8E4M3FN", "float8_e5m2": "f8E5M2",
               "float8_e4m3fnuz": "f8E4M3FNUZ", "float8_e5m2fnuz": "f8E5M2FNUZ",
               "float8_e4m3b11fnuz": "f8E4M3B11FNUZ", "float8_e3m4": "f8E3M4",
               "float8_e4m3": "f8E4M3", "float8_e8m0fnu": "f8E8M0FNU", "int8": "i8",
               "int16": "i16", "int32": "i32", "int64": "i64"}
_FP8 = ("float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
        "float8_e5m2fnuz", "float8_e3m4", "float8_e4m3", "float8_e8m0fnu")


# The float8 types the StableHLO verifier's "any f8" algorithms take (not f8E8M0FNU).
_VERIFIER_F8 = frozenset({"f8E3M4", "f8E4M3", "f8E4M3FN", "f8E5M2", "f8E4M3FNUZ",
                          "f8E4M3B11FNUZ", "f8E5M2FNUZ"})
_KNOWN = frozenset(v for v in _PRESET_ALGORITHMS.values())


def _known_algorithm(lhs: str, rhs: str, acc: str, lhs_components: int, rhs_components: int,
                     ops: int, imprecise: bool) -> bool:
    """Whether StableHLO's verifier knows the algorithm (stablehlo/dialect/Base.cpp,
    ``isKnownDotAlgorithm``): one component per operand, and either two "any f8" inputs with
    f32 accumulation in one operation (imprecise accumulation allowed), or one of the fixed
    presets' (lhs, rhs, accumulation, operations) without imprecise accumulation."""
    if lhs_components != 1 or rhs_components != 1:
        return False
    if lhs in _VERIFIER_F8 and rhs in _VERIFIER_F8 and acc == "f32" and ops == 1:
        return True
    return not imprecise and (lhs, rhs, acc, ops) in _KNOWN


def _mlir_name(dtype: Any) -> str:
    name = np.dtype(dtype).name
    if name not in _MLIR_NAMES:
        raise ValueError(f"a dot algorithm cannot compute in {name}")
    return _MLIR_NAMES[name]


def check_cpu_algorithm(precision: Any) -> None:
    """JAX's refusal, when lowering for the CPU, of a dot algorithm it does not let through.

    Example:
        >>> check_cpu_algorithm(DotAlgorithmPreset.F32_F32_F32)  # lowered
    """
    if isinstance(precision, DotAlgorithm) or (isinstance(precision, DotAlgorithmPreset)
                                               and precision.name not in _CPU_PRESETS):
        raise ValueError(f"The precision '{precision}' is not supported by dot_general on CPU")


def algorithm_types(precision: Any, lhs_dtype: Any, rhs_dtype: Any, out_dtype: Any) -> tuple:
    """(lhs, rhs, accumulation) dtypes a dot with this algorithm computes in; None: as given.

    Example:
        >>> import numpy as np
        >>> f32 = np.dtype(np.float32)
        >>> [str(t) for t in algorithm_types(DotAlgorithmPreset.F16_F16_F32, f32, f32, f32)]
        ['float16', 'float16', 'float32']
    """
    if isinstance(precision, DotAlgorithm):
        return tuple(np.dtype(t) for t in (precision.lhs_precision_type,
                                           precision.rhs_precision_type,
                                           precision.accumulation_type))

    def pick(dt: Any, allowed: tuple | None) -> Any:
        return dt if allowed is None or np.dtype(dt) in allowed else allowed[0]

    lhs = pick(lhs_dtype, precision.supported_lhs_types)
    rhs = pick(rhs_dtype, precision.supported_rhs_types)
    return lhs, rhs, pick(out_dtype, precision.supported_output_types(lhs, rhs))


def algorithm_attr(precision: Any, lhs_dtype: Any, rhs_dtype: Any) -> str:
    """``stablehlo.dot_general``'s ``algorithm`` attribute for a ``DotAlgorithm`` or preset
    ("" for ``DEFAULT``); ``lhs_dtype``/``rhs_dtype`` are the operand types after conversion.

    Example:
        >>> algorithm_attr(DotAlgorithmPreset.BF16_BF16_F32_X3, None, None)[:75]
        'algorithm = #stablehlo.dot_algorithm<lhs_precision_type = bf16, rhs_precisi'
    """
    if isinstance(precision, DotAlgorithm):
        parts = (_mlir_name(precision.lhs_precision_type),
                 _mlir_name(precision.rhs_precision_type),
                 _mlir_name(precision.accumulation_type), precision.lhs_component_count,
                 precision.rhs_component_count, precision.num_primitive_operations,
                 precision.allow_imprecise_accumulation)
    elif precision.name in _PRESET_ALGORITHMS:
        lhs, rhs, acc, ops = _PRESET_ALGORITHMS[precision.name]
        parts = (lhs, rhs, acc, 1, 1, ops, False)
    elif precision.name.startswith("ANY_F8"):
        names = (np.dtype(lhs_dtype).name, np.dtype(rhs_dtype).name)
        if not all(n in _FP8 for n in names):
            raise ValueError(f"The dot algorithm '{precision}' requires both inputs to have "
                             f"float8 dtypes. Got {names[0]} and {names[1]} instead.")
        parts = (_mlir_name(lhs_dtype), _mlir_name(rhs_dtype), "f32", 1, 1, 1,
                 precision.name == "ANY_F8_ANY_F8_F32_FAST_ACCUM")
    else:
        return ""
    lhs, rhs, acc, lc, rc, ops, imprecise = parts
    if not _known_algorithm(lhs, rhs, acc, int(lc), int(rc), int(ops), bool(imprecise)):
        # the StableHLO verifier's rule (jax runs it when lowering; XLA would only fail later)
        raise ValueError(
            "Cannot lower jaxpr with verifier errors:\n\tdot algorithm not known to be supported "
            f"on any hardware: {{lhs:'{lhs}', rhs:'{rhs}', accum:'{acc}', lhs_components:{int(lc)}, "
            f"rhs_components:{int(rc)}, primitive_ops:{int(ops)}, imprecise:{int(bool(imprecise))}}}")
    return (f"algorithm = #stablehlo.dot_algorithm<lhs_precision_type = {lhs}, "
            f"rhs_precision_type = {rhs}, accumulation_type = {acc}, lhs_component_count = "
            f"{int(lc)}, rhs_component_count = {int(rc)}, num_primitive_operations = {int(ops)}, "
            f"allow_imprecise_accumulation = {'true' if imprecise else 'false'}>")

"""e3nn_jax's ``legacy`` tensor products: ``FunctionalTensorProduct`` (explicit instructions)
and ``FunctionalFullyConnectedTensorProduct`` (every allowed path, ``"uvw"`` weights).

An instruction ``(i_in1, i_in2, i_out, mode, has_weight[, path_weight])`` couples entry
``i_in1`` of the first input with entry ``i_in2`` of the second into entry ``i_out`` through the
real Clebsch-Gordan table, with multiplicities connected as ``mode`` says (``"uvw"``: a full
weight ``[mul1, mul2, mul_out]``; ``"uvu"``: ``[mul1, mul2]``, output keeps ``u``; ...). The path
weights follow e3nn's normalizations: component irrep normalization, "element" path normalization
(each output is divided by the root of the number of elements feeding it) and "path" gradient
normalization (the weights are initialised with standard deviation 1).
"""

from __future__ import annotations

import dataclasses
from math import prod, sqrt
from typing import Any, Sequence

import numpy as np

import fluxion.numpy as fnp
from fluxion_md._nn.e3nn._basic import from_chunks, zeros
from fluxion_md._nn.e3nn._config import config
from fluxion_md._nn.e3nn._irreps import Irreps
from fluxion_md._nn.e3nn._irreps_array import IrrepsArray
from fluxion_md._nn.e3nn._linear import normalization_exponent, pytree_dtype, sum_tensors
from fluxion_md._nn.e3nn._so3 import clebsch_gordan

__all__ = ["Instruction", "FunctionalTensorProduct", "FunctionalFullyConnectedTensorProduct"]

_MODES = ("uvw", "uvu", "uvv", "uuw", "uuu", "uvuv", "uvu<v", "u<vw")


@dataclasses.dataclass(frozen=True)
class Instruction:
    """One path of a :class:`FunctionalTensorProduct` (``path_shape``: its weight's shape;
    ``num_elements``: how many products feed one output component)."""

    i_in1: int
    i_in2: int
    i_out: int
    connection_mode: str
    has_weight: bool
    path_weight: float
    weight_std: float | None
    first_input_multiplicity: int
    second_input_multiplicity: int
    output_multiplicity: int
    path_shape: tuple = dataclasses.field(init=False)
    num_elements: int = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        if self.connection_mode not in _MODES:
            raise ValueError(f"Unsupported connection_mode {self.connection_mode} for "
                             f"instruction (one of {_MODES}).")
        m1, m2, mo = (self.first_input_multiplicity, self.second_input_multiplicity,
                      self.output_multiplicity)
        pairs = m1 * (m2 - 1) // 2
        shape, elements = {
            "uvw": ((m1, m2, mo), m1 * m2), "uvu": ((m1, m2), m2), "uvv": ((m1, m2), m1),
            "uuw": ((m1, mo), m1), "uuu": ((m1,), 1), "uvuv": ((m1, m2), 1),
            "uvu<v": ((pairs,), 1), "u<vw": ((pairs, mo), pairs),
        }[self.connection_mode]
        object.__setattr__(self, "path_shape", shape)
        object.__setattr__(self, "num_elements", elements)

    def replace(self, **changes: Any) -> Instruction:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


def _normalized(instructions: list[Instruction], irreps_in1: Irreps, irreps_in2: Irreps,
                irreps_out: Irreps, in1_var: Sequence[float], in2_var: Sequence[float],
                out_var: Sequence[float], irrep_normalization: str, path_exp: float,
                grad_exp: float) -> list[Instruction]:
    if irrep_normalization not in ("component", "norm", "none"):
        raise ValueError(f"Unsupported irrep normalization: {irrep_normalization}.")

    def variance(ins: Instruction) -> float:
        return in1_var[ins.i_in1] * in2_var[ins.i_in2] * ins.num_elements

    per_output: dict[int, float] = {}
    for ins in instructions:
        per_output[ins.i_out] = per_output.get(ins.i_out, 0.0) + variance(ins) ** (1.0 - path_exp)

    out = []
    for ins in instructions:
        ir1, ir2, ir_out = irreps_in1[ins.i_in1].ir, irreps_in2[ins.i_in2].ir, irreps_out[ins.i_out].ir
        if ir1.p * ir2.p != ir_out.p or not abs(ir1.l - ir2.l) <= ir_out.l <= ir1.l + ir2.l:
            raise ValueError(f"FunctionalTensorProduct: {ir1} x {ir2} has no {ir_out} part "
                             f"(instruction {ins.i_in1},{ins.i_in2},{ins.i_out})")
        alpha = {"component": ir_out.dim, "norm": ir1.dim * ir2.dim, "none": 1}[irrep_normalization]
        x = variance(ins) ** path_exp * per_output[ins.i_out]
        if x > 0.0:
            alpha /= x
        alpha *= out_var[ins.i_out] * ins.path_weight
        if ins.has_weight:
            out.append(ins.replace(path_weight=sqrt(alpha) ** grad_exp,
                                   weight_std=sqrt(alpha) ** (1.0 - grad_exp)))
        else:
            out.append(ins.replace(path_weight=sqrt(alpha)))
    return out


class FunctionalTensorProduct:
    """A weighted tensor product ``irreps_in1 x irreps_in2 -> irreps_out`` along explicit
    instructions; ``tp.left_right(weights, x1, x2)`` applies it to unbatched inputs (map over
    leading axes with ``e3nn.utils.vmap``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> tp = FunctionalTensorProduct("1x1o", "1x1o", "1x0e", [(0, 0, 0, "uvw", True)])
        >>> tp.instructions[0].path_shape
        (1, 1, 1)
        >>> x = IrrepsArray("1x1o", jnp.array([1.0, 0.0, 0.0]))
        >>> round(float(tp.left_right([jnp.ones((1, 1, 1))], x, x).array[0]), 4)
        0.5774
    """

    irreps_in1: Irreps
    irreps_in2: Irreps
    irreps_out: Irreps
    instructions: list[Instruction]
    output_mask: Any

    def __init__(self, irreps_in1: Any, irreps_in2: Any, irreps_out: Any,
                 instructions: Sequence[tuple], in1_var: Sequence[float] | None = None,
                 in2_var: Sequence[float] | None = None,
                 out_var: Sequence[float] | None = None, irrep_normalization: str | None = None,
                 path_normalization: str | float | None = None,
                 gradient_normalization: str | float | None = None):
        self.irreps_in1, self.irreps_in2 = Irreps(irreps_in1), Irreps(irreps_in2)
        self.irreps_out = Irreps(irreps_out)
        parsed = []
        for entry in instructions:
            entry = tuple(entry)
            if len(entry) not in (5, 6):
                raise ValueError("FunctionalTensorProduct: an instruction is (i_in1, i_in2, "
                                 f"i_out, mode, has_weight[, path_weight]), got {entry}")
            i1, i2, io, mode, has_weight = entry[:5]
            path_weight = entry[5] if len(entry) == 6 else 1.0
            parsed.append(Instruction(i1, i2, io, mode, has_weight, path_weight, None,
                                      self.irreps_in1[i1].mul, self.irreps_in2[i2].mul,
                                      self.irreps_out[io].mul))
        self.instructions = _normalized(
            parsed, self.irreps_in1, self.irreps_in2, self.irreps_out,
            [1.0] * len(self.irreps_in1) if in1_var is None else list(in1_var),
            [1.0] * len(self.irreps_in2) if in2_var is None else list(in2_var),
            [1.0] * len(self.irreps_out) if out_var is None else list(out_var),
            config("irrep_normalization") if irrep_normalization is None else irrep_normalization,
            normalization_exponent(path_normalization, "path_normalization"),
            normalization_exponent(gradient_normalization, "gradient_normalization"))
        reached = [any(ins.i_out == k and ins.path_weight != 0 and 0 not in ins.path_shape
                       for ins in self.instructions) for k in range(len(self.irreps_out))]
        self.output_mask = fnp.asarray(
            np.concatenate([np.full(mul_ir.dim, hit, bool)
                            for hit, mul_ir in zip(reached, self.irreps_out)])
            if self.irreps_out.dim > 0 else np.ones(0, bool))

    def left_right(self, weights: Any, input1: IrrepsArray, input2: IrrepsArray | None = None,
                   *, custom_einsum_jvp: bool | None = None, fused: bool | None = None,
                   sparse: bool | None = None) -> IrrepsArray:
        """The product of ``input1`` and ``input2`` with ``weights`` (a list, one array per
        weighted instruction, or one flat array); ``left_right(x1, x2)`` when no instruction has
        weights. ``custom_einsum_jvp``, ``fused`` and ``sparse`` (defaults: ``e3nn.config``'s
        ``custom_einsum_jvp``, ``fused``, ``sparse_tp``) choose how e3nn_jax computes and
        differentiates the same product: one einsum over all paths, Clebsch-Gordan tables stored
        sparsely. Here every choice is computed by the block form, per instruction, which gives
        those values up to the order of the additions; as in e3nn_jax, ``sparse`` with
        ``custom_einsum_jvp`` raises.

        Example:
            >>> import fluxion.numpy as jnp
            >>> tp = FunctionalTensorProduct("1x1o", "1x1o", "1x0e", [(0, 0, 0, "uuu", False)])
            >>> x = IrrepsArray("1x1o", jnp.array([1.0, 0.0, 0.0]))
            >>> float(tp.left_right(x, x, fused=True).array[0]) == float(tp.left_right(x, x).array[0])
            True
        """
        custom = config("custom_einsum_jvp") if custom_einsum_jvp is None else custom_einsum_jvp
        sparse = config("sparse_tp") if sparse is None else sparse
        if sparse and custom:
            raise AssertionError("custom_einsum_jvp does not support sparse tensors.")
        del fused  # the same values as the block form (see the docstring)
        if input2 is None:
            weights, input1, input2 = [], weights, input1
        input1, input2 = input1.rechunk(self.irreps_in1), input2.rechunk(self.irreps_in2)
        dtype = pytree_dtype(weights, input1, input2)
        if dtype.kind == "i":
            dtype = fnp.dtype(fnp.float32)
        if 0 in (self.irreps_in1.dim, self.irreps_in2.dim, self.irreps_out.dim):
            return zeros(self.irreps_out, (), dtype)
        weight_list = self._weight_list(weights, "left_right")
        if input1.ndim != 1 or input2.ndim != 1:
            raise ValueError(f"FunctionalTensorProduct.left_right: inputs must be unbatched, got "
                             f"shapes {input1.shape} and {input2.shape}; use e3nn.utils.vmap")
        return self._block_products(weight_list, input1, input2, dtype)

    def _weight_list(self, weights: Any, name: str) -> list[Any]:
        weighted = [ins for ins in self.instructions if ins.has_weight]
        if isinstance(weights, list):
            if len(weights) != len(weighted):
                raise ValueError(f"FunctionalTensorProduct.{name}: {len(weights)} weights for "
                                 f"{len(weighted)} weighted instructions")
            return weights
        out, cursor = [], 0
        for ins in weighted:
            n = prod(ins.path_shape)
            out.append(weights[cursor:cursor + n].reshape(ins.path_shape))
            cursor += n
        if cursor != weights.size:
            raise ValueError(f"FunctionalTensorProduct.{name}: {weights.size} flat weights for "
                             f"{cursor} weight entries")
        return out

    def right(self, weights: Any, input2: IrrepsArray | None = None, *,
              custom_einsum_jvp: bool | None = None) -> Any:
        """The product with ``input2`` (unbatched) fixed, as a matrix
        ``[irreps_in1.dim, irreps_out.dim]``: ``x1 @ tp.right(w, x2) == tp.left_right(w, x1,
        x2).array``; ``right(x2)`` when no instruction has weights."""
        del custom_einsum_jvp
        if input2 is None:
            weights, input2 = [], weights
        input2 = input2.rechunk(self.irreps_in2)
        dtype = pytree_dtype(weights, input2)
        if dtype.kind == "i":
            dtype = fnp.dtype(fnp.float32)
        if 0 in (self.irreps_in1.dim, self.irreps_in2.dim, self.irreps_out.dim):
            return fnp.zeros((self.irreps_in1.dim, self.irreps_out.dim), dtype)
        if input2.ndim != 1:
            raise ValueError(f"FunctionalTensorProduct.right: input2 must be unbatched, got shape "
                             f"{input2.shape}; use e3nn.utils.vmap")
        remaining = iter(self._weight_list(weights, "right"))
        blocks = {}
        for ins in self.instructions:
            w = next(remaining) if ins.has_weight else None
            mul_ir1, mul_ir2 = self.irreps_in1[ins.i_in1], self.irreps_in2[ins.i_in2]
            mul_ir_out = self.irreps_out[ins.i_out]
            x2 = input2.chunks[ins.i_in2]
            if 0 in (mul_ir1.dim, mul_ir2.dim, mul_ir_out.dim) or x2 is None:
                continue
            cg = fnp.asarray(clebsch_gordan(mul_ir1.ir.l, mul_ir2.ir.l, mul_ir_out.ir.l),
                             dtype=dtype)
            block = ins.path_weight * _right_block(ins, w, cg, x2, dtype)
            blocks.setdefault((ins.i_in1, ins.i_out), []).append(
                block.reshape(mul_ir1.dim, mul_ir_out.dim))
        rows = [fnp.concatenate([sum_tensors(blocks.get((i1, io), []), (m1.dim, mo.dim),
                                             dtype=dtype)
                                 for io, mo in enumerate(self.irreps_out) if mo.mul > 0], axis=1)
                for i1, m1 in enumerate(self.irreps_in1) if m1.mul > 0]
        return fnp.concatenate(rows, axis=0)

    def _block_products(self, weight_list: list[Any], input1: IrrepsArray,
                        input2: IrrepsArray, dtype: Any) -> IrrepsArray:
        remaining = iter(weight_list)
        outputs = []
        for ins in self.instructions:
            w = next(remaining) if ins.has_weight else None
            if w is not None and tuple(w.shape) != ins.path_shape:
                raise ValueError(f"FunctionalTensorProduct: weight of shape {tuple(w.shape)} for "
                                 f"an instruction of path_shape {ins.path_shape}")
            mul_ir1, mul_ir2 = self.irreps_in1[ins.i_in1], self.irreps_in2[ins.i_in2]
            mul_ir_out = self.irreps_out[ins.i_out]
            x1, x2 = input1.chunks[ins.i_in1], input2.chunks[ins.i_in2]
            if 0 in (mul_ir1.dim, mul_ir2.dim, mul_ir_out.dim) or x1 is None or x2 is None:
                outputs.append(None)
                continue
            table = ins.path_weight * clebsch_gordan(mul_ir1.ir.l, mul_ir2.ir.l, mul_ir_out.ir.l)
            outputs.append(_contract(ins, w, fnp.asarray(table, dtype=dtype), x1, x2))
        chunks = [sum_tensors([o for ins, o in zip(self.instructions, outputs) if ins.i_out == k],
                              (mul_ir.mul, mul_ir.ir.dim), empty_return_none=True, dtype=dtype)
                  for k, mul_ir in enumerate(self.irreps_out)]
        return from_chunks(self.irreps_out, chunks, (), dtype)

    def __repr__(self) -> str:
        n_paths = sum(prod(ins.path_shape) for ins in self.instructions)
        n_weights = sum(prod(ins.path_shape) for ins in self.instructions if ins.has_weight)
        return (f"{type(self).__name__}({self.irreps_in1.simplify()} x "
                f"{self.irreps_in2.simplify()} -> {self.irreps_out.simplify()} | {n_paths} paths "
                f"| {n_weights} weights)")


def _contract(ins: Instruction, w: Any, cg: Any, x1: Any, x2: Any) -> Any:
    mode, weighted = ins.connection_mode, ins.has_weight
    m1, m2, mo = (ins.first_input_multiplicity, ins.second_input_multiplicity,
                  ins.output_multiplicity)
    if mode == "uvw":
        return fnp.einsum("uvw,ijk,ui,vj->wk", w, cg, x1, x2)
    if mode == "uvu":
        _require(m1 == mo, ins)
        return (fnp.einsum("uv,ijk,ui,vj->uk", w, cg, x1, x2) if weighted
                else fnp.einsum("ijk,ui,vj->uk", cg, x1, x2))
    if mode == "uvv":
        _require(m2 == mo, ins)
        return (fnp.einsum("uv,ijk,ui,vj->vk", w, cg, x1, x2) if weighted
                else fnp.einsum("ijk,ui,vj->vk", cg, x1, x2))
    if mode == "uuw":
        _require(m1 == m2 and (weighted or mo == 1), ins)
        return (fnp.einsum("uw,ijk,ui,uj->wk", w, cg, x1, x2) if weighted
                else fnp.einsum("ijk,ui,uj->k", cg, x1, x2))
    if mode == "uuu":
        _require(m1 == m2 == mo, ins)
        return (fnp.einsum("u,ijk,ui,uj->uk", w, cg, x1, x2) if weighted
                else fnp.einsum("ijk,ui,uj->uk", cg, x1, x2))
    if mode == "uvuv":
        _require(m1 * m2 == mo, ins)
        return (fnp.einsum("uv,ijk,ui,vj->uvk", w, cg, x1, x2) if weighted
                else fnp.einsum("ijk,ui,vj->uvk", cg, x1, x2))
    # "uvu<v" and "u<vw": the products of distinct pairs u < v
    _require(m1 == m2, ins)
    upper = np.triu_indices(m1, 1)
    pairs = fnp.einsum("ui,vj->uvij", x1, x2)[upper[0], upper[1]]
    if mode == "uvu<v":
        _require(m1 * (m1 - 1) // 2 == mo, ins)
        return (fnp.einsum("w,ijk,wij->wk", w, cg, pairs) if weighted
                else fnp.einsum("ijk,wij->wk", cg, pairs))
    _require(weighted, ins)
    return fnp.einsum("qw,ijk,qij->wk", w, cg, pairs)


def _right_block(ins: Instruction, w: Any, cg: Any, x2: Any, dtype: Any) -> Any:
    # [mul1, 2l1+1, (mul_out, 2l_out+1)]: the map from the first input's entry to the output's
    mode, weighted = ins.connection_mode, ins.has_weight
    m1, mo = ins.first_input_multiplicity, ins.output_multiplicity
    eye = fnp.eye(m1, dtype=dtype)
    if mode == "uvw":
        return fnp.einsum("uvw,ijk,vj->uiwk", w, cg, x2)
    if mode == "uvu":
        _require(m1 == mo, ins)
        return (fnp.einsum("uv,ijk,vj,uw->uiwk", w, cg, x2, eye) if weighted
                else fnp.einsum("ijk,vj,uw->uiwk", cg, x2, eye))
    if mode == "uvv":
        _require(ins.second_input_multiplicity == mo, ins)
        return (fnp.einsum("uv,ijk,vj->uivk", w, cg, x2) if weighted
                else fnp.einsum("ijk,vj,u->uivk", cg, x2, fnp.ones((m1,), dtype)))
    if mode == "uuw":
        _require(weighted or mo == 1, ins)
        return (fnp.einsum("uw,ijk,uj->uiwk", w, cg, x2) if weighted
                else fnp.einsum("ijk,uj->uik", cg, x2))
    if mode == "uuu":
        return (fnp.einsum("u,ijk,uj,uw->uiwk", w, cg, x2, eye) if weighted
                else fnp.einsum("ijk,uj,uw->uiwk", cg, x2, eye))
    if mode == "uvuv":
        return (fnp.einsum("uv,ijk,vj,uw->uiwvk", w, cg, x2, eye) if weighted
                else fnp.einsum("ijk,vj,uw->uiwvk", cg, x2, eye))
    raise NotImplementedError(f"FunctionalTensorProduct.right: connection mode {mode!r} is not "
                              "supported (as in e3nn_jax)")


def _require(condition: bool, ins: Instruction) -> None:
    if not condition:
        raise ValueError(f"FunctionalTensorProduct: multiplicities "
                         f"{ins.first_input_multiplicity},{ins.second_input_multiplicity},"
                         f"{ins.output_multiplicity} (or has_weight={ins.has_weight}) do not fit "
                         f"connection mode {ins.connection_mode!r}")


def FunctionalFullyConnectedTensorProduct(  # noqa: N802 - e3nn_jax's name (a factory)
        irreps_in1: Any, irreps_in2: Any, irreps_out: Any,
        in1_var: Sequence[float] | None = None, in2_var: Sequence[float] | None = None,
        out_var: Sequence[float] | None = None, irrep_normalization: str | None = None,
        path_normalization: str | float | None = None,
        gradient_normalization: str | float | None = None) -> FunctionalTensorProduct:
    """The tensor product with one ``"uvw"`` weighted path for every ``(i_in1, i_in2, i_out)``
    whose irreps couple, in that loop order.

    Example:
        >>> tp = FunctionalFullyConnectedTensorProduct("2x0e+1x1o", "1x0e", "3x0e")
        >>> [(ins.i_in1, ins.i_in2, ins.i_out, ins.path_shape) for ins in tp.instructions]
        [(0, 0, 0, (2, 1, 3))]
    """
    irreps_in1, irreps_in2, irreps_out = Irreps(irreps_in1), Irreps(irreps_in2), Irreps(irreps_out)
    instructions = [(i1, i2, io, "uvw", True)
                    for i1, (_, ir1) in enumerate(irreps_in1)
                    for i2, (_, ir2) in enumerate(irreps_in2)
                    for io, (_, ir_out) in enumerate(irreps_out) if ir_out in ir1 * ir2]
    return FunctionalTensorProduct(irreps_in1, irreps_in2, irreps_out, instructions, in1_var,
                                   in2_var, out_var, irrep_normalization, path_normalization,
                                   gradient_normalization)

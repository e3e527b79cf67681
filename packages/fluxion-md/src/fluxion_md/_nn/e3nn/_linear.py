"""Equivariant linear map between irreps (e3nn_jax's ``FunctionalLinear``).

Every input entry is mixed into every output entry of the same irrep by a ``[mul_in, mul_out]``
weight; outputs may get a bias (even scalars only). The default normalizations are e3nn's
("element" path normalization, "path" gradient normalization): a path into output ``k`` is
scaled by ``1 / sqrt(sum of mul_in over the paths into k)`` in the forward pass and its weight is
initialised with standard deviation 1. The instruction list (order, ``path_shape``,
``weight_std``) is what layers build their parameter names and shapes from.
"""

from __future__ import annotations

from math import prod, sqrt
from typing import Any, NamedTuple, Sequence

import numpy as np

import fluxion
import fluxion.numpy as fnp
from fluxion_md._nn.e3nn._basic import from_chunks
from fluxion_md._nn.e3nn._config import config
from fluxion_md._nn.e3nn._irreps import Irreps
from fluxion_md._nn.e3nn._irreps_array import IrrepsArray

__all__ = ["Instruction", "FunctionalLinear", "sum_tensors", "pytree_dtype", "normalization_exponent"]


class Instruction(NamedTuple):
    """One path of a :class:`FunctionalLinear`: input entry ``i_in`` (-1 for a bias) into
    output entry ``i_out``."""

    i_in: int
    i_out: int
    path_shape: tuple
    path_weight: float
    weight_std: float


def normalization_exponent(value: Any, name: str) -> float:
    """``"element"`` -> 0, ``"path"`` -> 1, a number as itself (``None``: the config's)."""
    if value is None:
        value = config(name)
    if isinstance(value, str):
        if value not in ("element", "path"):
            raise ValueError(f"{name} must be 'element', 'path' or a number, got {value!r}")
        return {"element": 0.0, "path": 1.0}[value]
    return float(value)


def sum_tensors(xs: Sequence[Any], shape: tuple[int, ...], empty_return_none: bool = False,
                dtype: Any = None) -> Any:
    """The sum of the non-``None`` arrays, each reshaped to ``shape`` (none: ``None`` or zeros)."""
    present = [x for x in xs if x is not None]
    if present:
        total = present[0].reshape(shape)
        for x in present[1:]:
            total = total + x.reshape(shape)
        return total
    return None if empty_return_none else fnp.zeros(shape, dtype=dtype)


def pytree_dtype(*trees: Any, default: Any = fnp.float32) -> Any:
    """The dtype that summing every leaf of ``trees`` would give."""
    leaves = fluxion.tree_util.tree_leaves(trees)
    if not leaves:
        return fnp.dtype(default)
    return fluxion.eval_shape(lambda xs: sum(fnp.sum(x) for x in xs), leaves).dtype


class FunctionalLinear:
    """An equivariant linear map ``irreps_in -> irreps_out`` without parameters of its own:
    ``lin(ws, x)`` applies it with weights ``ws`` (a list in ``lin.instructions`` order, or one
    flat array) to an unbatched :class:`IrrepsArray` ``x``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> lin = FunctionalLinear("2x0e+1x1o", "1x0e+1x1o")
        >>> [ins.path_shape for ins in lin.instructions]
        [(2, 1), (1, 1)]
        >>> ws = [jnp.ones(ins.path_shape) for ins in lin.instructions]
        >>> lin(ws, IrrepsArray("2x0e+1x1o", jnp.ones(5))).irreps
        1x0e+1x1o
    """

    irreps_in: Irreps
    irreps_out: Irreps
    instructions: list[Instruction]
    output_mask: Any

    def __init__(self, irreps_in: Any, irreps_out: Any,
                 instructions: Sequence[tuple[int, int]] | None = None,
                 biases: Sequence[bool] | bool | None = None,
                 path_normalization: str | float | None = None,
                 gradient_normalization: str | float | None = None):
        path_exp = normalization_exponent(path_normalization, "path_normalization")
        grad_exp = normalization_exponent(gradient_normalization, "gradient_normalization")
        irreps_in, irreps_out = Irreps(irreps_in), Irreps(irreps_out)
        if instructions is None:
            instructions = [(i_in, i_out)
                            for i_in, (_, ir_in) in enumerate(irreps_in)
                            for i_out, (_, ir_out) in enumerate(irreps_out) if ir_in == ir_out]
        pairs = list(instructions)
        fan_in: dict[int, list[int]] = {}
        for i_in, i_out in pairs:
            fan_in.setdefault(i_out, []).append(irreps_in[i_in].mul)

        def alpha(i_in: int, i_out: int) -> float:
            x = irreps_in[i_in].mul ** path_exp * sum(m ** (1.0 - path_exp)
                                                       for m in fan_in[i_out])
            return 1 / x if x > 0 else 1.0

        self.instructions = [
            Instruction(i_in=i_in, i_out=i_out,
                        path_shape=(irreps_in[i_in].mul, irreps_out[i_out].mul),
                        path_weight=sqrt(alpha(i_in, i_out)) ** grad_exp,
                        weight_std=sqrt(alpha(i_in, i_out)) ** (1.0 - grad_exp))
            for i_in, i_out in pairs]
        if biases is None:
            biases = [False] * len(irreps_out)
        if isinstance(biases, bool):
            biases = [biases and ir.is_scalar() for _, ir in irreps_out]
        biases = list(biases)
        if len(biases) != len(irreps_out):
            raise ValueError(f"FunctionalLinear: {len(biases)} biases for the "
                             f"{len(irreps_out)} entries of {irreps_out}")
        if any(b and not ir.is_scalar() for b, (_, ir) in zip(biases, irreps_out)):
            raise ValueError(f"FunctionalLinear: only 0e outputs may have a bias ({irreps_out})")
        self.instructions += [
            Instruction(i_in=-1, i_out=i_out, path_shape=(mul_ir.dim,), path_weight=1.0,
                        weight_std=0.0)
            for i_out, (bias, mul_ir) in enumerate(zip(biases, irreps_out)) if bias]
        reached = [any(ins.i_out == i_out and 0 not in ins.path_shape
                       for ins in self.instructions) for i_out in range(len(irreps_out))]
        self.output_mask = fnp.asarray(
            np.concatenate([np.full(mul_ir.dim, hit, bool)
                            for hit, mul_ir in zip(reached, irreps_out)])
            if irreps_out.dim > 0 else np.ones(0, bool))
        self.irreps_in, self.irreps_out = irreps_in, irreps_out

    @property
    def num_weights(self) -> int:
        """Total number of weight entries (biases included)."""
        return sum(prod(ins.path_shape) for ins in self.instructions)

    def split_weights(self, weights: Any) -> list[Any]:
        """One flat weight array cut into the per-instruction arrays."""
        out, cursor = [], 0
        for ins in self.instructions:
            n = prod(ins.path_shape)
            out.append(weights[cursor:cursor + n].reshape(ins.path_shape))
            cursor += n
        return out

    def aggregate_paths(self, paths: Sequence[Any], output_shape: tuple[int, ...],
                        output_dtype: Any) -> IrrepsArray:
        """Sums the per-instruction outputs into each output entry."""
        chunks = [sum_tensors([p for ins, p in zip(self.instructions, paths) if ins.i_out == k],
                              output_shape + (mul_ir.mul, mul_ir.ir.dim), empty_return_none=True)
                  for k, mul_ir in enumerate(self.irreps_out)]
        return from_chunks(self.irreps_out, chunks, output_shape, output_dtype)

    def __call__(self, ws: Any, input: IrrepsArray) -> IrrepsArray:
        input = input.rechunk(self.irreps_in)
        if input.ndim != 1:
            raise ValueError(f"FunctionalLinear does not support broadcasting, input shape is "
                             f"{input.shape} (map over the leading axes with e3nn.utils.vmap)")
        if not isinstance(ws, list):
            ws = self.split_weights(ws)
        if len(ws) != len(self.instructions):
            raise ValueError(f"FunctionalLinear: {len(ws)} weights for "
                             f"{len(self.instructions)} instructions")
        paths = []
        for ins, w in zip(self.instructions, ws):
            if tuple(w.shape) != ins.path_shape:
                raise ValueError(f"FunctionalLinear: weight of shape {tuple(w.shape)} for an "
                                 f"instruction of path_shape {ins.path_shape}")
            if ins.i_in == -1:
                paths.append(ins.path_weight * w)
            elif input.chunks[ins.i_in] is None:
                paths.append(None)
            else:
                paths.append(ins.path_weight * fnp.einsum("uw,ui->wi", w, input.chunks[ins.i_in]))
        return self.aggregate_paths(paths, input.shape[:-1], input.dtype)

    def matrix(self, ws: Sequence[Any]) -> Any:
        """The map as a matrix ``[irreps_in.dim, irreps_out.dim]`` (no biases)."""
        dtype = pytree_dtype(ws)
        out = fnp.zeros((self.irreps_in.dim, self.irreps_out.dim), dtype)
        for ins, w in zip(self.instructions, ws):
            if ins.i_in == -1:
                raise ValueError("FunctionalLinear.matrix: biases have no matrix form")
            mul_in, ir_in = self.irreps_in[ins.i_in]
            mul_out, ir_out = self.irreps_out[ins.i_out]
            block = fnp.einsum("uw,ij->uiwj", w, fnp.eye(ir_in.dim, dtype=dtype))
            out = out.at[self.irreps_in.slices()[ins.i_in], self.irreps_out.slices()[ins.i_out]
                         ].add(ins.path_weight * block.reshape(mul_in * ir_in.dim,
                                                               mul_out * ir_out.dim))
        return out

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.irreps_in} -> {self.irreps_out}, "
                f"{len(self.instructions)} instructions, {self.num_weights} weights)")

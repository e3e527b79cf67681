"""Parameter-free tensor products (e3nn_jax's ``elementwise_tensor_product`` and
``tensor_product``), contracted with the real Clebsch-Gordan tables of :mod:`._so3`."""

from __future__ import annotations

from typing import Any

import numpy as np

import fluxion
import fluxion.numpy as fnp
from fluxion_md._nn.e3nn import _upper
from fluxion_md._nn.e3nn._basic import as_irreps_array, from_chunks
from fluxion_md._nn.e3nn._config import config
from fluxion_md._nn.e3nn._irreps import Irrep, Irreps
from fluxion_md._nn.e3nn._irreps_array import IrrepsArray
from fluxion_md._nn.e3nn._so3 import clebsch_gordan

__all__ = ["elementwise_tensor_product", "tensor_product"]


def _filter(filter_ir_out: Any) -> list[Irrep] | None:
    if filter_ir_out is None:
        return None
    if isinstance(filter_ir_out, str):
        filter_ir_out = Irreps(filter_ir_out)
    if isinstance(filter_ir_out, Irrep):
        filter_ir_out = [filter_ir_out]
    return [Irrep(ir) for ir in filter_ir_out]


def _scaled_cg(ir1: Irrep, ir2: Irrep, ir_out: Irrep, normalization: str) -> np.ndarray:
    factor = {"component": ir_out.dim, "norm": ir1.dim * ir2.dim, "none": 1}.get(normalization)
    if factor is None:
        raise ValueError(f"irrep_normalization={normalization} not supported")
    return clebsch_gordan(ir1.l, ir2.l, ir_out.l) * np.sqrt(factor)


def _prepare(input1: Any, input2: Any) -> tuple[IrrepsArray, IrrepsArray, tuple[int, ...]]:
    input1, input2 = as_irreps_array(input1), as_irreps_array(input2)
    dtype = fluxion.eval_shape(lambda a, b: fnp.sum(a) + fnp.sum(b),
                               input1.array, input2.array).dtype
    if dtype.kind == "i":
        dtype = fnp.ones(()).dtype
    input1, input2 = input1.astype(dtype), input2.astype(dtype)
    lead = fnp.broadcast_shapes(input1.shape[:-1], input2.shape[:-1])
    return input1.broadcast_to(lead + (-1,)), input2.broadcast_to(lead + (-1,)), lead


def _align(irreps1: Irreps, irreps2: Irreps) -> tuple[Irreps, Irreps]:
    # Split entries so that both sides have the same multiplicity sequence.
    a, b = [tuple(x) for x in irreps1], [tuple(x) for x in irreps2]
    i = 0
    while i < min(len(a), len(b)):
        (mul_a, ir_a), (mul_b, ir_b) = a[i], b[i]
        if mul_a < mul_b:
            b[i:i + 1] = [(mul_a, ir_b), (mul_b - mul_a, ir_b)]
        elif mul_b < mul_a:
            a[i:i + 1] = [(mul_b, ir_a), (mul_a - mul_b, ir_a)]
        i += 1
    return Irreps(a), Irreps(b)


def elementwise_tensor_product(input1: Any, input2: Any, *, filter_ir_out: Any = None,
                               irrep_normalization: str | None = None) -> Any:
    """The tensor product of the ``i``-th irrep of ``input1`` with the ``i``-th of ``input2``
    (same ``num_irreps``); with two :class:`Irreps` it returns the output irreps only.

    Example:
        >>> import fluxion.numpy as jnp
        >>> s = IrrepsArray("1x0e", jnp.array([2.0])); v = IrrepsArray("1x1o", jnp.ones(3))
        >>> elementwise_tensor_product(s, v).array.tolist()
        [2.0, 2.0, 2.0]
    """
    filters = _filter(filter_ir_out)
    if irrep_normalization is None:
        irrep_normalization = config("irrep_normalization")
    if isinstance(input1, (Irreps, str)) and isinstance(input2, (Irreps, str)):
        irreps1, irreps2 = _align(Irreps(input1), Irreps(input2))
        return Irreps([(mul, ir_out) for (mul, ir1), (_, ir2) in zip(irreps1, irreps2)
                       for ir_out in ir1 * ir2 if filters is None or ir_out in filters])
    input1, input2, lead = _prepare(input1, input2)
    if input1.irreps.num_irreps != input2.irreps.num_irreps:
        raise ValueError("e3nn.elementwise_tensor_product: inputs must have the same number of "
                         f"irreps, got {input1.irreps.num_irreps} and {input2.irreps.num_irreps}")
    irreps1, irreps2 = _align(input1.irreps, input2.irreps)
    input1, input2 = input1.rechunk(irreps1), input2.rechunk(irreps2)
    irreps_out, chunks = [], []
    for (mul, ir1), x1, (_, ir2), x2 in zip(input1.irreps, input1.chunks,
                                            input2.irreps, input2.chunks):
        for ir_out in ir1 * ir2:
            if filters is not None and ir_out not in filters:
                continue
            irreps_out.append((mul, ir_out))
            if x1 is None or x2 is None:
                chunks.append(None)
                continue
            cg = fnp.asarray(_scaled_cg(ir1, ir2, ir_out, irrep_normalization), dtype=x1.dtype)
            chunks.append(fnp.einsum("...ui,...uj,ijk->...uk", x1, x2, cg))
    return from_chunks(irreps_out, chunks, lead, input1.dtype)


def tensor_product(input1: Any, input2: Any, *, filter_ir_out: Any = None,
                   irrep_normalization: str | None = None, regroup_output: bool = True
                   ) -> IrrepsArray:
    """The full tensor product of two :class:`IrrepsArray` reduced into irreps (every pair of
    entries, every allowed output), sorted, and regrouped when ``regroup_output``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> v = IrrepsArray("1x1o", jnp.array([1.0, 0.0, 0.0]))
        >>> tensor_product(v, v).irreps
        1x0e+1x1e+1x2e
    """
    filters = _filter(filter_ir_out)
    if irrep_normalization is None:
        irrep_normalization = config("irrep_normalization")
    input1, input2, lead = _prepare(input1, input2)
    if regroup_output:
        input1, input2 = input1.regroup(), input2.regroup()
    irreps_out, chunks = [], []
    for (mul1, ir1), x1 in zip(input1.irreps, input1.chunks):
        for (mul2, ir2), x2 in zip(input2.irreps, input2.chunks):
            for ir_out in ir1 * ir2:
                if filters is not None and ir_out not in filters:
                    continue
                irreps_out.append((mul1 * mul2, ir_out))
                if x1 is None or x2 is None:
                    chunks.append(None)
                    continue
                cg = fnp.asarray(_scaled_cg(ir1, ir2, ir_out, irrep_normalization),
                                 dtype=x1.dtype)
                out = fnp.einsum("...ui,...vj,ijk->...uvk", x1, x2, cg)
                chunks.append(out.reshape(out.shape[:-3] + (mul1 * mul2, ir_out.dim)))
    output = from_chunks(irreps_out, chunks, lead, input1.dtype).sort()
    return output.regroup() if regroup_output else output


_upper.register("elementwise_tensor_product", elementwise_tensor_product)

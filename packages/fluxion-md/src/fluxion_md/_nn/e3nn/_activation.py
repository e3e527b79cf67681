"""Equivariant nonlinearities (e3nn_jax's ``soft_odd``, ``normalize_function``,
``scalar_activation`` and ``gate``).

Only scalars (``l = 0``) pass through a nonlinearity. By default each activation ``phi`` is
rescaled to ``phi / c`` with ``c^2`` its second moment under a standard normal input, estimated as
e3nn_jax does (one million normal quantiles, in float32), so that activations keep unit variance.
An odd scalar (``0o``) keeps its parity under an odd ``phi`` and becomes even under an even one.
"""

from __future__ import annotations

import math
import weakref
from typing import Any, Callable, Sequence

import fluxion
import fluxion.numpy as fnp
from fluxion.scipy import special as fsp
from fluxion_md._nn.e3nn._basic import as_irreps_array, concatenate, from_chunks
from fluxion_md._nn.e3nn._irreps import Irreps
from fluxion_md._nn.e3nn._irreps_array import IrrepsArray

__all__ = ["soft_odd", "normalize_function", "parity_function", "scalar_activation", "gate"]

Activation = Callable[[Any], Any]


def soft_odd(x: Any) -> Any:
    """``(1 - exp(-x^2)) x``: a smooth odd activation for odd scalars.

    Example:
        >>> round(float(soft_odd(fluxion.numpy.array(1.0))), 4)
        0.6321
    """
    return (1 - fnp.exp(-(x**2))) * x


def _normal_quantiles(n: int) -> Any:
    # n points x_i with P(X < x_i) = i / (n + 1) for a standard normal X
    return math.sqrt(2) * fsp.erfinv(fnp.linspace(-1.0, 1.0, n + 2)[1:-1])


# per activation, per precision (the estimate is float64 when x64 is on, as e3nn_jax's)
_SCALE_CACHE: "weakref.WeakKeyDictionary[Any, dict[bool, float]]" = weakref.WeakKeyDictionary()


def _second_moment_root(phi: Activation) -> float:
    x64 = bool(fluxion.config.jax_enable_x64)
    try:
        return _SCALE_CACHE[phi][x64]
    except (KeyError, TypeError):
        pass
    with fluxion.ensure_compile_time_eval():
        c = float(fnp.mean(phi(_normal_quantiles(1_000_001)) ** 2) ** 0.5)
    try:
        _SCALE_CACHE.setdefault(phi, {})[x64] = c
    except TypeError:  # an activation that cannot be weakly referenced is not cached
        pass
    return c


def normalize_function(phi: Activation) -> Activation:
    """``phi / c`` with ``c = E[phi(X)^2]^(1/2)`` for a standard normal ``X`` (``phi`` itself when
    ``c`` is already 1 within ``1e-5``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> round(float(normalize_function(lambda x: 2 * x)(jnp.array(1.0))), 3)
        1.0
    """
    c = _second_moment_root(phi)
    if abs(c - 1.0) <= 1e-8 + 1e-5:
        return phi

    def rescaled(x: Any) -> Any:
        return phi(x) / c

    return rescaled


def parity_function(phi: Activation) -> int:
    """1 if ``phi`` is even, -1 if odd, 0 otherwise (checked on ``[0, 10]``)."""
    with fluxion.ensure_compile_time_eval():
        x = fnp.linspace(0.0, 10.0, 256)
        a, b = phi(x), phi(-x)
        if float(fnp.max(fnp.abs(a - b))) < 1e-5:
            return 1
        if float(fnp.max(fnp.abs(a + b))) < 1e-5:
            return -1
        return 0


def _zero_at_zero(phi: Activation) -> bool:
    with fluxion.ensure_compile_time_eval():
        return abs(float(phi(fnp.array(0.0)))) <= 1e-8


def scalar_activation(input: Any, acts: Sequence[Activation | None] | None = None, *,
                      even_act: Activation = fluxion.nn.gelu, odd_act: Activation = soft_odd,
                      normalize_act: bool = True) -> IrrepsArray:
    """Applies an activation to each scalar entry (``acts[i]`` per irreps entry, ``None`` to
    leave it; by default ``even_act`` on ``0e`` and ``odd_act`` on ``0o``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> x = IrrepsArray("1x0e+1x1o", jnp.array([1.0, 1.0, 1.0, 2.0]))
        >>> y = scalar_activation(x); y.irreps, round(float(y.array[0]), 4)
        (1x0e+1x1o, 1.2901)
    """
    input = as_irreps_array(input)
    if acts is None:
        acts = [({1: even_act, -1: odd_act}[ir.p] if ir.l == 0 else None)
                for _, ir in input.irreps]
    acts = list(acts)
    if len(acts) != len(input.irreps):
        raise ValueError(f"scalar_activation: {len(acts)} activations for the "
                         f"{len(input.irreps)} entries of {input.irreps}")
    irreps_out, chunks = [], []
    for (mul, ir), x, act in zip(input.irreps, input.chunks, acts):
        if act is None:
            irreps_out.append((mul, ir))
            chunks.append(x)
            continue
        if ir.l != 0:
            raise ValueError("Activation: cannot apply an activation function to a non-scalar "
                             f"input. {input.irreps} {acts}")
        if normalize_act:
            act = normalize_function(act)
        p_out = parity_function(act) if ir.p == -1 else ir.p
        if p_out == 0:
            raise ValueError("Activation: the parity is violated! The input scalar is odd but "
                             "the activation is neither even nor odd.")
        irreps_out.append((mul, (0, p_out)))
        if x is not None:
            chunks.append(act(x))
        elif _zero_at_zero(act):
            chunks.append(None)
        else:
            chunks.append(act(fnp.ones(input.shape[:-1] + (mul, 1), input.dtype)))
    irreps_out = Irreps(irreps_out)
    if acts and acts.count(acts[0]) == len(acts):
        # one activation for every entry: apply it to the whole array at once
        act = acts[0]
        if act is None:
            array = input.array
        else:
            array = (normalize_function(act) if normalize_act else act)(input.array)
        return IrrepsArray(irreps_out, array, zero_flags=[c is None for c in chunks])
    return from_chunks(irreps_out, chunks, input.shape[:-1], input.dtype)


def gate(input: IrrepsArray, even_act: Activation = fluxion.nn.gelu,
         odd_act: Activation = soft_odd, even_gate_act: Activation = fluxion.nn.sigmoid,
         odd_gate_act: Activation = fluxion.nn.tanh, normalize_act: bool = True) -> IrrepsArray:
    """Gate nonlinearity: the input's scalars are, in order, scalars to activate and then one
    gate per non-scalar irrep (the rightmost ones); the gates are activated and multiply the
    non-scalars. Output: activated scalars, then gated non-scalars.

    Example:
        >>> import fluxion.numpy as jnp
        >>> x = IrrepsArray("2x0e+1x0e+1x1o", jnp.ones(6))
        >>> gate(x).irreps
        2x0e+1x1o
    """
    if not isinstance(input, IrrepsArray):
        raise TypeError(f"gate: input must be an IrrepsArray, got {type(input).__name__}")
    scalars = input.filter(keep=["0e", "0o"])
    vectors = input.filter(drop=["0e", "0o"])
    if vectors.shape[-1] == 0:
        return scalar_activation(scalars, even_act=even_act, odd_act=odd_act,
                                 normalize_act=normalize_act)
    n_gates = vectors.irreps.num_irreps
    if scalars.irreps.dim < n_gates:
        raise ValueError("The input must have at least as many scalars as the number of "
                         f"non-scalar irreps (gate: {input.irreps})")
    n_free = scalars.irreps.dim - n_gates
    free = scalar_activation(scalars.slice_by_mul[:n_free], even_act=even_act, odd_act=odd_act,
                             normalize_act=normalize_act)
    gates = scalar_activation(scalars.slice_by_mul[n_free:], even_act=even_gate_act,
                              odd_act=odd_gate_act, normalize_act=normalize_act)
    return concatenate([free, gates * vectors], axis=-1)

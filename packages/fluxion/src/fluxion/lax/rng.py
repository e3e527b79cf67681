"""XLA's own random number generators: ``rng_bit_generator`` (stateless: a key in, a new key and
random bits out) and ``rng_uniform`` (XLA's stateful uniform sampler).

The bits depend on the platform's implementation of the algorithm, as in JAX; use
``fluxion.random`` for reproducible streams.

Example:
    >>> from fluxion import lax
    >>> import numpy as np
    >>> key, bits = lax.rng_bit_generator(np.zeros(4, np.uint32), (3,))
    >>> key.shape, bits.shape, bits.dtype.name
    ((4,), (3,), 'uint32')
"""

from __future__ import annotations

import enum
import operator
from typing import Any, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax import sharding_rules as _sh
from fluxion.lax._base import type_error, value_error

__all__ = ["RandomAlgorithm", "rng_bit_generator", "rng_bit_generator_p", "rng_uniform",
           "rng_uniform_p"]


class RandomAlgorithm(enum.IntEnum):
    """The algorithm of :func:`rng_bit_generator`: the platform's default, Threefry or Philox."""

    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __str__(self) -> str:
        return self.name


_HLO_ALGORITHM = {RandomAlgorithm.RNG_DEFAULT: "DEFAULT", RandomAlgorithm.RNG_THREE_FRY: "THREE_FRY",
                  RandomAlgorithm.RNG_PHILOX: "PHILOX"}
_UNSIGNED = tuple(np.dtype(f"uint{b}") for b in (8, 16, 32, 64))

rng_bit_generator_p = Primitive("rng_bit_generator", multiple_results=True, materialized=True)


def _rng_bit_generator_rule(prim: Any, in_avals: Sequence[Any], out: Any,
                            **_: Any) -> Any:
    """JAX's rule: the new key keeps the key's sharding; the bits are unsplit (replicated over
    the mesh)."""
    base = _sh.common_sharding(prim.name, in_avals)
    return [in_avals[0].sharding, _sh.make_sharding(base, [None] * len(out[1].shape))]


rng_bit_generator_p.sharding = _rng_bit_generator_rule


def _rbg_abstract_eval(key: ShapedArray, *, shape: tuple[int, ...], dtype: np.dtype,
                       algorithm: RandomAlgorithm) -> list[ShapedArray]:
    ok = ((key.shape == (4,) and key.dtype == np.uint32)
          or (key.shape == (2,) and key.dtype == np.uint64))
    if not ok:
        raise type_error("lax.rng_bit_generator", "key must be uint32[4] (or uint64[2]), got "
                         f"{key.str_short()}")
    return [ShapedArray(key.shape, key.dtype, key.weak_type), ShapedArray(shape, dtype)]


def _rbg_lowering(ctx: Any, key: str, *, shape: tuple[int, ...], dtype: np.dtype,
                  algorithm: RandomAlgorithm) -> list[str]:
    key_aval, (_, out_aval) = ctx.avals_in[0], ctx.avals_out
    u64 = ShapedArray((2,), np.uint64)
    if key_aval.dtype == np.uint32:  # XLA's key is u64[2]: reinterpret u32[4] as two pairs
        pairs = ShapedArray((2, 2), np.uint32)
        key = ctx.op1("stablehlo.reshape", [key], pairs, [key_aval])
        key = ctx.op1("stablehlo.bitcast_convert", [key], u64, [pairs])
    attrs = f"rng_algorithm = #stablehlo<rng_algorithm {_HLO_ALGORITHM[algorithm]}>"
    new_key, bits = ctx.op("stablehlo.rng_bit_generator", [key], result_avals=[u64, out_aval],
                           operand_avals=[u64], attrs=attrs)
    if key_aval.dtype == np.uint32:
        pairs = ShapedArray((2, 2), np.uint32)
        new_key = ctx.op1("stablehlo.bitcast_convert", [new_key], pairs, [u64])
        new_key = ctx.op1("stablehlo.reshape", [new_key], key_aval, [pairs])
    return [new_key, bits]


rng_bit_generator_p.abstract_eval = _rbg_abstract_eval
rng_bit_generator_p.lowering = _rbg_lowering
def _rbg_batch(axis_data: Any, args: Sequence[Any], dims: Sequence[Any], *,
               shape: tuple[int, ...], dtype: np.dtype, algorithm: RandomAlgorithm) -> tuple:
    """JAX's rule: a batch of keys draws ``(batch, *shape)`` bits from its FIRST key in one
    call, and only that key is advanced (so ``vmap`` over rbg keys gives JAX's bits)."""
    (key,), (d,) = args, dims
    if d is None:
        return list(rng_bit_generator_p.bind(key, shape=shape, dtype=dtype,
                                             algorithm=algorithm)), [None, None]
    keys = _rules.moveaxis(key, d, 0)
    kshape = tuple(keys.shape)
    n = kshape[0]
    lax = _rules.ops()
    first = _rules._member(keys, 0, 0)
    new_key, bits = rng_bit_generator_p.bind(first, shape=(n, *shape), dtype=dtype,
                                             algorithm=algorithm)
    new_key = lax.broadcast_in_dim_p.bind(new_key, shape=(1, *kshape[1:]),
                                          broadcast_dimensions=tuple(range(1, len(kshape))))
    if n > 1:
        rest = lax.slice_p.bind(keys, start_indices=(1,) + (0,) * (len(kshape) - 1),
                                limit_indices=kshape, strides=None)
        new_key = lax.concatenate_p.bind(new_key, rest, dimension=0)
    return [new_key, bits], [0, 0]


rng_bit_generator_p.batch = _rbg_batch


def rng_bit_generator(key: Any, shape: Sequence[int], dtype: Any = np.uint32,
                      algorithm: RandomAlgorithm = RandomAlgorithm.RNG_DEFAULT, *,
                      out_sharding: Any = None) -> tuple[Any, Any]:
    """XLA's stateless bit generator: ``(new_key, bits)`` with ``bits`` of ``shape`` and the
    unsigned ``dtype``, from a ``uint32[4]`` key.

    Example:
        >>> from fluxion import lax
        >>> import numpy as np
        >>> _, bits = lax.rng_bit_generator(np.ones(4, np.uint32), (2, 2), np.uint8)
        >>> bits.dtype.name
        'uint8'
    """
    shape = tuple(operator.index(d) for d in shape)
    dt = dtypes.check_and_canonicalize_user_dtype(dtype, "rng_bit_generator")
    if dt not in _UNSIGNED:
        raise TypeError(f"rng_bit_generator: unsupported dtype {dt}")
    return tuple(rng_bit_generator_p.bind(key, shape=shape, dtype=dt,
                                          algorithm=RandomAlgorithm(algorithm)))


rng_uniform_p = Primitive("rng_uniform", effectful=True, materialized=True)


def _rng_uniform_abstract_eval(a: ShapedArray, b: ShapedArray, *, shape: tuple[int, ...]
                               ) -> ShapedArray:
    if a.dtype != b.dtype:
        raise value_error("lax.rng_uniform", f"a and b must have one dtype, got {a.dtype.name} "
                          f"and {b.dtype.name}")
    if a.shape or b.shape:
        raise value_error("lax.rng_uniform", f"a and b must be scalars, got shapes {a.shape} "
                          f"and {b.shape}")
    return ShapedArray(shape, a.dtype, a.weak_type and b.weak_type)


def _rng_uniform_lowering(ctx: Any, a: str, b: str, *, shape: tuple[int, ...]) -> str:
    shp_aval = ShapedArray((len(shape),), np.int64)
    shp = ctx.constant(np.array(shape, np.int64), shp_aval)
    return ctx.op("stablehlo.rng", [a, b, shp], operand_avals=[*ctx.avals_in, shp_aval],
                  attrs="rng_distribution = #stablehlo<rng_distribution UNIFORM>")


rng_uniform_p.abstract_eval = _rng_uniform_abstract_eval
rng_uniform_p.lowering = _rng_uniform_lowering


def rng_uniform(a: Any, b: Any, shape: Sequence[int]) -> Any:
    """XLA's stateful uniform sampler in ``[a, b)`` (scalars of one dtype). Experimental, as in
    JAX: prefer ``fluxion.random``.

    Example:
        >>> from fluxion import lax
        >>> import numpy as np
        >>> lax.rng_uniform(np.float32(0), np.float32(1), (2,)).shape
        (2,)
    """
    return rng_uniform_p.bind(a, b, shape=tuple(operator.index(d) for d in shape))

"""``fluxion.extend.random`` (JAX's ``jax.extend.random``): PRNG implementations of your own and
the built-in ones as values.

:func:`define_prng_impl` makes an implementation from four functions on one key's ``uint32``
data; pass its result as ``impl=`` to ``fluxion.random.key``/``wrap_key_data``/``key_dtype``, and
every sampler, ``split`` and ``fold_in`` use its functions (batches of keys by ``vmap`` of them),
under ``jit``, ``vmap`` and ``grad`` as for the built-in implementations.

Example:
    >>> import numpy as np, fluxion, fluxion.numpy as jnp
    >>> from fluxion.extend import random as xr
    >>> spec = xr.define_prng_impl(
    ...     key_shape=(1,), seed=lambda s: jnp.reshape(s.astype(np.uint32), (1,)),
    ...     split=lambda k, shape: jnp.broadcast_to(k + 1, (*shape, 1)),
    ...     random_bits=lambda k, width, shape: jnp.broadcast_to(k[0], shape).astype(f"uint{width}"),
    ...     fold_in=lambda k, d: k ^ d, name="counter", tag="ctr")
    >>> k = fluxion.random.key(3, impl=spec)
    >>> str(k.dtype), fluxion.random.key_data(fluxion.random.split(k, 2)).tolist()
    ('key<ctr>', [[4], [4]])
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.interpreters.mlir import lower_fun, register_lowering
from fluxion.lax import _rules
from fluxion.lax import shape_ops as _so
from fluxion.lax._base import broadcasting_shape, type_error
from fluxion.random import _impls
from fluxion.random._key_ops import threefry_2x32
from fluxion.random._keys import PRNGImpl, PRNGKeyArray, PRNGSpec, resolve_impl
from fluxion.random._threefry import threefry2x32
from fluxion.transforms.batching import vmap

__all__ = ["define_prng_impl", "random_seed", "seed_with_impl", "rbg_prng_impl",
           "unsafe_rbg_prng_impl", "threefry_prng_impl", "threefry_2x32", "threefry2x32_p"]

threefry_prng_impl = _impls.THREEFRY
rbg_prng_impl = _impls.RBG
unsafe_rbg_prng_impl = _impls.UNSAFE_RBG


def define_prng_impl(*, key_shape: tuple[int, ...], seed: Callable[[Any], Any],
                     split: Callable[[Any, tuple[int, ...]], Any],
                     random_bits: Callable[[Any, int, tuple[int, ...]], Any],
                     fold_in: Callable[[Any, Any], Any], name: str = "<unnamed>",
                     tag: str = "?") -> PRNGSpec:
    """A PRNG implementation from its functions on ONE key's ``uint32[*key_shape]`` data:
    ``seed(int scalar)``, ``split(key, shape) -> uint32[*shape, *key_shape]``,
    ``random_bits(key, bit_width, shape) -> uint<bit_width>[*shape]`` and
    ``fold_in(key, uint32 scalar)``. Keys of it have dtype ``key<tag>``. It is not registered
    by name (``key_impl`` of its keys gives this spec back).

    Example:
        >>> import numpy as np, fluxion.numpy as jnp
        >>> from fluxion.extend.random import define_prng_impl
        >>> spec = define_prng_impl(key_shape=(2,), seed=lambda s: jnp.zeros(2, np.uint32),
        ...     split=lambda k, shape: jnp.zeros((*shape, 2), np.uint32),
        ...     random_bits=lambda k, w, shape: jnp.zeros(shape, f"uint{w}"),
        ...     fold_in=lambda k, d: k, name="zeros")
        >>> spec
        PRNGSpec('zeros')
    """
    try:
        shape = tuple(int(d) for d in key_shape)
    except TypeError:
        raise TypeError(f"define_prng_impl: key_shape must be a tuple of integers, got "
                        f"{key_shape!r}") from None
    for fname, fun in (("seed", seed), ("split", split), ("random_bits", random_bits),
                       ("fold_in", fold_in)):
        if not callable(fun):
            raise TypeError(f"define_prng_impl: {fname} must be callable, got {fun!r}")
    return PRNGSpec(PRNGImpl(shape, seed, split, random_bits, fold_in, name=str(name),
                             tag=str(tag)))


def random_seed(seeds: Any, impl: Any) -> PRNGKeyArray:
    """Keys of implementation ``impl`` from integer seeds of any shape (one key per seed).

    Example:
        >>> import numpy as np
        >>> from fluxion.extend import random as xr
        >>> xr.random_seed(np.arange(3), xr.rbg_prng_impl).shape
        (3,)
    """
    impl_obj = resolve_impl(impl)
    shape = tuple(getattr(seeds, "shape", ()))
    if not shape:
        return PRNGKeyArray(impl_obj, _impls.seed(impl_obj, seeds))
    fun = lambda s: _impls.seed(impl_obj, s)  # noqa: E731
    for _ in shape:
        fun = vmap(fun)
    return PRNGKeyArray(impl_obj, fun(seeds))


def seed_with_impl(impl: Any, seed: Any) -> PRNGKeyArray:
    """``random_seed(seed, impl)``, arguments the other way round (as JAX's).

    Example:
        >>> from fluxion.extend import random as xr
        >>> str(xr.seed_with_impl(xr.rbg_prng_impl, 0).dtype)
        'key<rbg>'
    """
    return random_seed(seed, impl)


def __getattr__(name: str) -> Any:
    raise AttributeError(f"module 'fluxion.extend.random' has no attribute {name!r}: "
                         f"jax.extend.random.{name} is not provided by Fluxion (see "
                         "docs/guide/coming-from-jax.md)")


# -- threefry2x32_p: JAX's Threefry-2x32 block primitive, as jax.extend.random exports it ------
# Fluxion's own samplers run the same block function (fluxion.random._threefry) inside a jit;
# this primitive gives it JAX's name and rules for code that binds or lowers it directly.
threefry2x32_p = Primitive("threefry2x32", multiple_results=True)
_U32 = np.dtype(np.uint32)


def _threefry2x32_abstract_eval(*avals: ShapedArray) -> list[ShapedArray]:
    if len(avals) != 4:
        raise type_error("threefry2x32", f"takes 4 operands (key1, key2, x1, x2), got {len(avals)}")
    if any(a.dtype != _U32 for a in avals):
        raise type_error("threefry2x32", "requires uint32 operands, got "
                         + ", ".join(a.str_short() for a in avals))
    shape = broadcasting_shape("threefry2x32", *avals)
    return [ShapedArray(shape, _U32)] * 2


def _threefry2x32_lowered(k1: Any, k2: Any, x1: Any, x2: Any) -> list[Any]:
    ops = (k1, k2, x1, x2)
    shape = broadcasting_shape("threefry2x32", *(a.aval for a in ops))
    full = [a if a.shape == shape else _so.broadcast_in_dim(
        a, shape, tuple(range(len(shape))) if a.shape else ()) for a in ops]
    return list(threefry2x32(*full))


def _threefry2x32_batch(axis_data: Any, args: Any, dims: Any) -> tuple[list, list]:
    out, d = _elementwise_batch(axis_data, args, dims)
    return list(out), [d, d]


threefry2x32_p.def_abstract_eval(_threefry2x32_abstract_eval)
register_lowering(threefry2x32_p, lower_fun(_threefry2x32_lowered, multiple_results=True))
_elementwise_batch = _rules.elementwise_batch_rule(threefry2x32_p)
threefry2x32_p.batch = _threefry2x32_batch
_rules.defjvp_zero(threefry2x32_p)  # integer operands: no derivative, as JAX's

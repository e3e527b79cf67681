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

from fluxion.random import _impls
from fluxion.random._key_ops import threefry_2x32
from fluxion.random._keys import PRNGImpl, PRNGKeyArray, PRNGSpec, resolve_impl
from fluxion.transforms.batching import vmap

__all__ = ["define_prng_impl", "random_seed", "seed_with_impl", "rbg_prng_impl",
           "unsafe_rbg_prng_impl", "threefry_prng_impl", "threefry_2x32"]

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

"""Keys drawn as ``flax.linen`` draws them, for bridge Modules whose class sets
``rng_scheme = "linen"``.

Linen gives every module scope its own view of each root key: the scope's path (the names of the
modules from the root, as in the variables tree) and a per-scope, per-stream call count are
hashed together with SHA-1, and the first four bytes of the digest, as a big-endian uint32, are
folded into the root key with ``fold_in``. A module that asks for its n-th key of stream
``name`` therefore gets ``fold_in(root[name], sha1(*path, n)[:4])``, whatever the other modules
drew before it. NNX's streams (``Rngs``) instead count calls over the whole model, so the same
seed gives other numbers; :class:`LinenRngs` is what a ``"linen"`` root Module's
``init``/``apply`` uses in their place, so models ported from Linen get Linen's parameters from
the same key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np

import fluxion.random as random

__all__ = ["LinenRngs", "fold_in_static"]


def fold_in_static(key: Any, data: tuple) -> Any:
    """``key`` with the SHA-1 hash of ``data`` (strings and ints) folded in, as Linen's
    ``LazyRng`` does: strings as UTF-8, ints as their shortest big-endian bytes, no separators
    (flax's default ``flax_fix_rng_separator=False``); an empty ``data`` gives ``key`` itself.

    Example:
        >>> import numpy as np, fluxion
        >>> from fluxion_nn.bridge.linen_rngs import fold_in_static
        >>> key = fluxion.random.PRNGKey(0)
        >>> k = fold_in_static(key, ("Dense_0", 1))  # the first key Linen's Dense_0 draws
        >>> k.shape, bool((np.asarray(fold_in_static(key, ())) == np.asarray(key)).all())
        ((2,), True)
    """
    if not data:
        return key
    digest = hashlib.sha1()
    for item in data:
        if isinstance(item, str):
            digest.update(item.encode("utf-8"))
        elif isinstance(item, (int, np.integer)):
            value = int(item)
            digest.update(value.to_bytes((value.bit_length() + 7) // 8, byteorder="big"))
        else:
            raise ValueError(f"Expected int or string, got: {item!r}")
    return random.fold_in(key, np.uint32(int.from_bytes(digest.digest()[:4], byteorder="big")))


class LinenRngs:
    """Root keys by stream name and Linen's per-scope call counts, for one ``init``/``apply``.

    ``make_rng(path, name)`` is Linen's ``Scope.make_rng`` for the scope at ``path``: a stream
    the call was not given falls back to ``'params'`` (a ValueError when that is missing too).
    A single key (or int seed) is the ``'params'`` stream, as Linen's ``init(key, ...)``.

    Example:
        >>> import numpy as np, fluxion
        >>> from fluxion_nn.bridge.linen_rngs import LinenRngs, fold_in_static
        >>> rngs = LinenRngs(fluxion.random.PRNGKey(0))
        >>> first, second = rngs.make_rng(("Dense_0",), "params"), rngs.make_rng(("Dense_0",), "params")
        >>> want = fold_in_static(fluxion.random.PRNGKey(0), ("Dense_0", 2))
        >>> bool((np.asarray(second) == np.asarray(want)).all()), sorted(rngs)
        (True, ['params'])
    """

    def __init__(self, keys: Any):
        if isinstance(keys, Mapping):
            streams = dict(keys)
        else:
            streams = {"params": keys}
        self._keys = {name: random.key(k) if isinstance(k, (int, np.integer)) else k
                      for name, k in streams.items()}
        self._counts: dict = {}

    def __iter__(self) -> Any:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, name: object) -> bool:
        return name in self._keys

    def make_rng(self, path: tuple, name: str = "params") -> Any:
        """The next key of stream ``name`` for the module scope at ``path`` (see the class)."""
        if name not in self._keys:
            if "params" not in self._keys:
                raise ValueError(f"the module at {'/'.join(map(str, path)) or '<root>'} needs "
                                 f"PRNG for {name!r} (give init/apply rngs={{{name!r}: key}})")
            name = "params"
        count = self._counts.get((path, name), 0) + 1
        self._counts[(path, name)] = count
        return fold_in_static(self._keys[name], (*path, count))

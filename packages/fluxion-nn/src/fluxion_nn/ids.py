"""``nnx.ids``: process-wide unique identifiers (as ``flax.nnx.ids``). ``uuid()`` hands out
:class:`UUID` values from a counter (never a recycled ``id()``); a copy or deep copy of one is a
new identifier, so copied objects never share it.

Example::

    >>> from fluxion_nn import ids
    >>> a, b = ids.uuid(), ids.uuid()
    >>> a == a, a == b
    (True, False)
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

__all__ = ["UUID", "UUIDManager", "uuid"]


class UUID:
    """A hashable identifier; equal only to itself (and to a UUID of the same number). Copying
    it (``copy.copy``/``copy.deepcopy``) gives a fresh one.

    Example:
        >>> import copy
        >>> from fluxion_nn import ids
        >>> a = ids.uuid()
        >>> a == a, a == ids.uuid(), copy.copy(a) == a  # a copy is a fresh id
        (True, False, False)
    """

    __slots__ = ("id",)

    def __init__(self, rawid: int) -> None:
        self.id = rawid

    def __eq__(self, other: Any) -> bool:
        return type(other) is UUID and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"UUID({self.id})"

    def __copy__(self) -> UUID:
        return uuid()

    def __deepcopy__(self, memo: Any) -> UUID:
        return uuid()


class UUIDManager:
    """A thread-safe counter handing out :class:`UUID` values (``uuid()`` is the shared one).

    Example:
        >>> from fluxion_nn import ids
        >>> next_id = ids.UUIDManager()
        >>> next_id().id, next_id().id
        (1, 2)
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = itertools.count(1)

    def __call__(self) -> UUID:
        with self._lock:
            return UUID(next(self._count))


uuid = UUIDManager()

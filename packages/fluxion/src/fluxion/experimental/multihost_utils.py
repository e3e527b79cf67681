"""``fluxion.experimental.multihost_utils`` (JAX's ``jax.experimental.multihost_utils``):
gathering, broadcasting and barriers across the processes of a multi-process run.

In a single process (``fluxion.process_count() == 1``) every function behaves as JAX's does
there: ``process_allgather`` gives NumPy arrays with a leading axis of size one (or the array
itself, ``tiled``), ``broadcast_one_to_all`` gives NumPy arrays, and ``sync_global_devices`` and
``assert_equal`` have nothing to wait for or compare. Across several processes they raise
``NotImplementedError`` (listed in docs/guide/coming-from-jax.md).

Example:
    >>> import numpy as np
    >>> from fluxion.experimental import multihost_utils
    >>> multihost_utils.process_allgather(np.arange(3)).shape
    (1, 3)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion import tree_util
from fluxion.backend import client as _client

__all__ = ["assert_equal", "broadcast_one_to_all", "process_allgather", "sync_global_devices"]


def _single_process(name: str) -> None:
    if _client.process_count() != 1:
        raise NotImplementedError(f"multihost_utils.{name} across {_client.process_count()} "
                                  f"processes is not provided by Fluxion (see "
                                  f"docs/guide/coming-from-jax.md)")


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
    """Every process's value of each leaf of ``in_tree``, as NumPy arrays: stacked on a new
    leading axis (concatenated on the first axis with ``tiled``).

    Example:
        >>> process_allgather({"a": np.ones(2)}, tiled=True)["a"].shape
        (2,)
    """
    _single_process("process_allgather")

    def one(x: Any) -> np.ndarray:
        out = np.asarray(x)
        return out if tiled else np.expand_dims(out, 0)

    return tree_util.tree_map(one, in_tree)


def broadcast_one_to_all(in_tree: Any, is_source: bool | None = None) -> Any:
    """Process 0's value of each leaf of ``in_tree`` (``is_source`` picks another source), as
    NumPy arrays on every process.

    Example:
        >>> broadcast_one_to_all([1, 2.0])
        [array(1), array(2.)]
    """
    _single_process("broadcast_one_to_all")
    return tree_util.tree_map(np.asarray, in_tree)


def assert_equal(in_tree: Any, fail_message: str = "") -> None:
    """Checks that every process has the same values of ``in_tree``.

    Example:
        >>> assert_equal(np.ones(2))
    """
    _single_process("assert_equal")


def sync_global_devices(name: str) -> None:
    """A barrier across all processes (checking they all reached the one named ``name``).

    Example:
        >>> sync_global_devices("after init")
    """
    _single_process("sync_global_devices")

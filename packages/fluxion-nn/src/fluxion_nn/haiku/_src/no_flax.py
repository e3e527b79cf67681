"""``haiku._src.no_flax``: the module object Haiku puts in place of ``haiku.experimental.flax``
when Flax is missing. Reading any name from it raises ImportError saying the feature needs
``flax``; ``__file__`` reads as ``None`` (as Haiku's, so tools that scan ``sys.modules`` skip it).

Example:
    >>> from fluxion_nn.haiku._src import no_flax
    >>> shim = no_flax.FlaxNotInstalled("haiku.experimental.flax")
    >>> try:
    ...     shim.lift
    ... except ImportError as e:
    ...     print(e)
    `haiku.experimental.flax.lift` features require `flax` to be installed.
"""

from __future__ import annotations

import sys
import types

__all__ = ["FlaxNotInstalled", "inject_shim_module"]


class FlaxNotInstalled(types.ModuleType):
    """A stand-in module whose every attribute read raises ImportError (Flax is not installed).

    Example: ``FlaxNotInstalled("haiku.experimental.flax").lift`` raises ImportError.
    """

    __slots__ = ()

    def __getattr__(self, name: str) -> None:
        if name == "__file__":
            return None
        raise ImportError(f"`haiku.experimental.flax.{name}` features require `flax` to be "
                          "installed.")


def inject_shim_module() -> None:
    """Register a :class:`FlaxNotInstalled` as ``haiku.experimental.flax`` in ``sys.modules``.

    Example: after ``inject_shim_module()``, ``import haiku.experimental.flax`` gives the shim.
    """
    sys.modules["haiku.experimental.flax"] = FlaxNotInstalled("haiku.experimental.flax")

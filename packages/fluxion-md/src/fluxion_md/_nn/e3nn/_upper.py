"""The floor of the e3nn subpackage: functions of upper modules that lower ones call late.

``Irrep.D_from_matrix`` (in ``_irreps``) needs ``_rotation``, and ``IrrepsArray`` (in
``_irreps_array``) needs ``_basic.from_chunks`` and ``_tensor_products``: each of those upper
modules imports the lower one, so the lower one may not import it back, not even inside a
function (docs/internals.md, "The floors"). Each upper module registers its function here when it
is imported; importing any module of the subpackage imports the package, which imports them all.

Example:
    >>> from fluxion_md._nn import e3nn
    >>> from fluxion_md._nn.e3nn import _upper
    >>> _upper.get("from_chunks") is e3nn.from_chunks
    True
"""

from __future__ import annotations

from typing import Any, Callable

_FUNCTIONS: dict[str, Callable[..., Any]] = {}


def register(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Makes ``fn`` callable from the lower modules as ``get(name)``; returns ``fn``."""
    _FUNCTIONS[name] = fn
    return fn


def get(name: str) -> Callable[..., Any]:
    """The function an upper module registered under ``name``."""
    try:
        return _FUNCTIONS[name]
    except KeyError:
        raise RuntimeError(f"fluxion_md._nn.e3nn: {name!r} is not registered yet (import "
                           "fluxion_md._nn.e3nn, not one of its private modules alone)") from None

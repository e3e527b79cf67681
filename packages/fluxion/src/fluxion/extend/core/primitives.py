"""``fluxion.extend.core.primitives`` (JAX's ``jax.extend.core.primitives``): Fluxion's
primitives under JAX's names — ``add_p``, ``dot_general_p``, ``jit_p``, ``custom_jvp_call_p``,
... — the same objects the equations of a staged program hold (``eqn.prim is add_p``).

Each name is looked up on first access; a JAX primitive Fluxion does not have raises an
``AttributeError`` pointing to docs/guide/coming-from-jax.md.

Example:
    >>> import fluxion
    >>> from fluxion.extend.core import primitives
    >>> closed = fluxion.make_jaxpr(lambda x: x + 1.0)(1.0)
    >>> closed.eqns[0].prim is primitives.add_p
    True
"""

from __future__ import annotations

import importlib
from typing import Any

# JAX primitive name -> (module, name there), where not in fluxion.lax / fluxion.lax.linalg
_ELSEWHERE = {
    "jit_p": ("fluxion.transforms.call", "jit_p"),
    "custom_jvp_call_p": ("fluxion.transforms.custom_derivatives", "custom_jvp_call_p"),
    "custom_vjp_call_p": ("fluxion.transforms.custom_derivatives", "custom_vjp_call_p"),
    "remat_p": ("fluxion.transforms.remat", "remat_p"),
}


def _lookup(name: str) -> Any:
    if name in _ELSEWHERE:
        module, attr = _ELSEWHERE[name]
        return getattr(importlib.import_module(module), attr)
    if name.endswith("_p"):
        for module in ("fluxion.lax", "fluxion.lax.linalg"):
            value = getattr(importlib.import_module(module), name, None)
            if value is not None:
                return value
    return None


def __getattr__(name: str) -> Any:
    value = _lookup(name)
    if value is None:
        raise AttributeError(f"module 'fluxion.extend.core.primitives' has no attribute "
                             f"{name!r}: the primitive jax.extend.core.primitives.{name} is not "
                             f"provided by Fluxion (see docs/guide/coming-from-jax.md)")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    lax = importlib.import_module("fluxion.lax")
    linalg = importlib.import_module("fluxion.lax.linalg")
    names = {n for m in (lax, linalg) for n in dir(m) if n.endswith("_p")}
    return sorted(names | set(_ELSEWHERE))


__all__ = __dir__()

"""``platform_dependent`` (per-platform code, chosen when the program is lowered) and
``composite`` (a named operation defined by its decomposition).

``platform_dependent`` traces every branch and stages a :func:`~fluxion.lax.switch` on
``platform_index``, a primitive that lowers to the constant index of the platform the module is
compiled for; the switch then lowers only that branch (as JAX's platform-dependent lowering).
``composite`` runs its decomposition inline: the
program computes the same values (no ``stablehlo.composite`` op is emitted, so a compiler
cannot pattern-match it), and unlike JAX it is differentiable through the decomposition.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> float(lax.platform_dependent(jnp.float32(2.0), cpu=lambda x: x * 10,
    ...                              default=lambda x: x))
    20.0
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax.control_flow.conditionals import _bind_branches

__all__ = ["platform_dependent", "platform_index_p", "composite"]

platform_index_p = Primitive("platform_index")


def _platform_index_lowering(ctx: Any, *, platforms: tuple, has_default: bool) -> str:
    platform = ctx.module.platform.lower()
    aliases = {"gpu": ("cuda", "rocm"), "cuda": ("gpu",), "rocm": ("gpu",)}
    chosen = None
    for i, names in enumerate(platforms):
        if platform in names or any(a in names for a in aliases.get(platform, ())):
            chosen = i
            break
    if chosen is None:
        if not has_default:
            raise ValueError(f"platform_dependent: no branch for platform {platform!r} and no "
                             f"default; branches are for {[n[0] for n in platforms]}")
        chosen = len(platforms)
    res = ctx.constant(np.int32(chosen), ctx.avals_out[0])
    ctx.set_static_value(res, chosen)  # the cond on it lowers only this branch
    return res


platform_index_p.abstract_eval = lambda *, platforms, has_default: ShapedArray((), np.int32)
platform_index_p.lowering = _platform_index_lowering
platform_index_p.batch_unmapped = False


def platform_dependent(*args: Any, default: Callable[..., Any] | None = None,
                       **per_platform: Callable[..., Any]) -> Any:
    """``per_platform[p](*args)`` for the platform ``p`` ('cpu', 'cuda', 'rocm', 'tpu', or
    'gpu' for either GPU) that the program is compiled for, else ``default(*args)``. Every
    branch is traced (they must return the same types).

    Example:
        >>> from fluxion import lax
        >>> int(lax.platform_dependent(3, cpu=lambda x: x + 1, tpu=lambda x: x - 1))
        4
    """
    names = list(per_platform)
    branches = [per_platform[n] for n in names]
    groups = tuple((n.lower(),) for n in names)
    # without a default the first branch stands in (never chosen: lowering raises instead), so
    # the switch keeps its index even when only one platform is given
    branches.append(default if default is not None else branches[0])
    index = platform_index_p.bind(platforms=groups, has_default=default is not None)
    # the index is in range by construction: no clamp, so the cond reads platform_index's
    # constant itself and lowers only the chosen branch
    return _bind_branches("lax.platform_dependent", index, branches,
                          [*(f"branch {n!r}" for n in names), "default"], args)


def composite(decomposition: Callable[..., Any], name: str, version: int = 0
              ) -> Callable[..., Any]:
    """A function computing ``decomposition(*args, **attributes)``, named ``name`` (its
    version ``version``) for compilers that recognise it; usable as a decorator.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> tangent = lax.composite(lambda x: lax.sin(x) / lax.cos(x), name="my.tangent")
        >>> round(float(tangent(jnp.float32(0.5))), 4)
        0.5463
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"lax.composite: name must be a non-empty string, got {name!r}")

    @functools.wraps(decomposition)
    def run(*args: Any, **attributes: Any) -> Any:
        attributes = {k: v for k, v in attributes.items() if v is not None}
        return decomposition(*args, **attributes)

    return run

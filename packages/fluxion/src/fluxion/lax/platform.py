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
from fluxion.core.trace import is_tracer
from fluxion.lax.control_flow.conditionals import _bind_branches

__all__ = ["platform_dependent", "platform_index_p", "composite"]

platform_index_p = Primitive("platform_index")


def _platform_index_lowering(ctx: Any, *, platforms: tuple, has_default: bool) -> str:
    platform = ctx.module.platform.lower()
    # a module for "gpu" takes the branch of either GPU platform
    names = {platform, *(("cuda", "rocm") if platform == "gpu" else ())}
    chosen = next((i for i, group in enumerate(platforms) if names & set(group)), None)
    if chosen is None:
        if not has_default:
            # JAX's error type (its lowering has no rule for the platform)
            raise NotImplementedError(
                f"lax.platform_dependent: no branch for platform {platform!r} and no default "
                f"(platform_index(platforms={platforms}) has no rule for {platform!r})")
        chosen = len(platforms)
    res = ctx.constant(np.int32(chosen), ctx.avals_out[0])
    ctx.set_static_value(res, chosen)  # the cond on it lowers only this branch
    return res


platform_index_p.abstract_eval = lambda *, platforms, has_default: ShapedArray((), np.int32)
platform_index_p.lowering = _platform_index_lowering
platform_index_p.batch_unmapped = False


def platform_dependent(*args: Any, default: Callable[..., Any] | None = None,
                       **per_platform: Callable[..., Any]) -> Any:
    """``per_platform[p](*args)`` for the platform ``p`` ('cpu', 'cuda', 'rocm' or 'tpu')
    that the program is compiled for, else ``default(*args)``. Under a trace every branch is
    traced (they must return the same types); eagerly only the default device's branch runs.
    Without a branch for the platform and without ``default`` it raises NotImplementedError.

    Example:
        >>> from fluxion import lax
        >>> int(lax.platform_dependent(3, cpu=lambda x: x + 1, tpu=lambda x: x - 1))
        4
    """
    # one branch per distinct callable, with the platforms that share it (as JAX's)
    groups: list[list[str]] = []
    branches: list[Callable[..., Any]] = []
    for name, fn in per_platform.items():
        if not callable(fn):
            raise TypeError(f"lax.platform_dependent: the {name!r} branch must be a callable, "
                            f"got {type(fn).__name__}")
        if name == "gpu":
            raise ValueError("lax.platform_dependent: use 'cuda' or 'rocm' for a GPU branch, "
                             "not 'gpu' (as JAX)")
        if fn in branches:
            groups[branches.index(fn)].append(name)
        else:
            groups.append([name])
            branches.append(fn)
    if default is not None:
        if not callable(default):
            raise TypeError(f"lax.platform_dependent: the 'default' branch must be a callable, "
                            f"got {type(default).__name__}")
        branches.append(default)
    elif not branches:
        raise NotImplementedError("lax.platform_dependent: no branches and no default: there is "
                                  "no code for any platform")
    index = platform_index_p.bind(platforms=tuple(map(tuple, groups)),
                                  has_default=default is not None)
    if not is_tracer(index):
        # eager: the default device's platform is known, and only its branch runs (as JAX's)
        return branches[int(index)](*args)
    labels = [*(f"branch {'/'.join(map(repr, g))}" for g in groups), "default"]
    if default is None:
        # the first branch stands in for the default (never chosen: lowering raises instead),
        # so the switch keeps its index even when only one platform is given
        branches.append(branches[0])
    # the index is in range by construction: no clamp, so the cond reads platform_index's
    # constant itself and lowers only the chosen branch
    return _bind_branches("lax.platform_dependent", index, branches, labels, args)


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

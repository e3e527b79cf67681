"""``fluxion.ad_checkpoint``: rematerialisation tools (JAX's ``jax.ad_checkpoint``).

``checkpoint``/``remat`` with ``checkpoint_policies`` decide which intermediates reverse mode
saves; ``checkpoint_name`` tags a value for the name-based policies; ``print_saved_residuals``
shows what reverse mode of a function would save, and where each value comes from.
``Saveable``, ``Recompute`` and ``Offloadable`` are the decisions a policy may return
(Fluxion saves an ``Offloadable`` value in place: there is no host offloading).

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.ad_checkpoint import print_saved_residuals
    >>> print_saved_residuals(lambda x: jnp.sin(x) * x, jnp.ones(2))  # doctest: +ELLIPSIS
    f32[2] from the argument x...
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, NamedTuple

from fluxion.core.ir import Literal
from fluxion.transforms.ad import vjp
from fluxion.transforms.remat import checkpoint, checkpoint_name, checkpoint_policies, name_p, remat
from fluxion.transforms.staging import trace_to_program
from fluxion.tree_util import physical as tree_util

__all__ = ["checkpoint", "remat", "checkpoint_name", "checkpoint_policies",
           "print_saved_residuals", "saved_residuals", "Saveable", "Recompute", "Offloadable"]


class _Decision:
    """A policy's answer; true when the value is saved."""

    __slots__ = ("name", "saved")

    def __init__(self, name: str, saved: bool) -> None:
        self.name, self.saved = name, saved

    def __bool__(self) -> bool:
        return self.saved

    def __repr__(self) -> str:
        return self.name


Saveable = _Decision("Saveable", True)
Recompute = _Decision("Recompute", False)


class Offloadable(NamedTuple):
    """A policy's answer: save the value in memory ``dst`` (Fluxion keeps it where it is)."""

    src: str
    dst: str

    def __bool__(self) -> bool:
        return True


def saved_residuals(f: Callable, *args: Any, **kwargs: Any) -> list[tuple[Any, str]]:
    """``(aval, description)`` for every value reverse mode of ``f(*args, **kwargs)`` saves:
    an argument, an operation's output (with its source line) or a named value.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.ad_checkpoint import saved_residuals
        >>> [d for _, d in saved_residuals(lambda x: x * x, jnp.ones(3))]
        ['from the argument x']
    """
    def residuals(*a: Any, **kw: Any) -> list:
        return tree_util.tree_leaves(vjp(lambda *p: f(*p, **kw), *a)[1])

    program, _, _ = trace_to_program(residuals, args, kwargs, description="saved_residuals")
    arg_names = _argument_names(f, len(tree_util.tree_leaves(args)), args)
    producer = {id(v): eqn for eqn in program.eqns for v in eqn.outputs}
    order = {id(v): k for k, eqn in enumerate(program.eqns) for v in eqn.outputs}
    invars = {id(v): i for i, v in enumerate(program.invars)}
    constvars = {id(v) for v in program.constvars}
    out = []
    # as JAX lists them: arguments first (in order), then outputs in program order
    outvars = sorted(program.outvars, key=lambda v: (
        (0, invars[id(v)]) if id(v) in invars else (1, order.get(id(v), -1))))
    for v in outvars:
        if isinstance(v, Literal):
            out.append((v.aval, "from a literal"))
        elif id(v) in invars:
            i = invars[id(v)]
            name = arg_names[i] if i < len(arg_names) else None
            out.append((v.aval, f"from the argument {name}" if name else
                        f"from argument {i}"))
        elif id(v) in constvars:
            out.append((v.aval, "from a constant"))
        else:
            eqn = producer[id(v)]
            where = f" from {eqn.source}" if eqn.source else ""
            if eqn.prim is name_p:
                out.append((v.aval, f"named {eqn.params['name']!r}{where}"))
            else:
                out.append((v.aval, f"output of {eqn.prim.name}{where}"))
    return out


def _argument_names(f: Callable, n_leaves: int, args: tuple) -> list[str | None]:
    """The parameter name of each array leaf of ``args`` (with a key path inside pytrees)."""

    try:
        params = list(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        params = []
    names: list[str | None] = []
    for i, a in enumerate(args):
        base = params[i] if i < len(params) else None
        flat = tree_util.tree_flatten_with_path(a)[0]
        for path, _ in flat:
            names.append(None if base is None else base + tree_util.keystr(path))
    return names[:n_leaves]


def print_saved_residuals(f: Callable, *args: Any, **kwargs: Any) -> None:
    """Print one line per value reverse mode of ``f`` saves: its type and where it comes from.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.ad_checkpoint import print_saved_residuals
        >>> print_saved_residuals(lambda x: x * x, jnp.ones(3))
        f32[3] from the argument x
    """
    for aval, what in saved_residuals(f, *args, **kwargs):
        print(f"{aval.str_short()} {what}")

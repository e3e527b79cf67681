"""Explaining a jitted function's trace-cache misses, in JAX's words (``jax_explain_cache_misses``).

When a jitted function traces again, :func:`explain_miss` logs either that the function was never
seen (and, when a second never-seen function appears on the same line, that it is probably being
re-created on every call) or the closest previously traced signature and how the new one differs:
the trace context, the pytree structure and static arguments, or the argument types (weak types
pointed out). ``j`` is a ``fluxion.backend.jit._Jitted``; this module reads its ``fun``, ``name``,
``source``, ``sig``, ``owner`` and ``programs``.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> with fluxion.explain_cache_misses():
    ...     _ = fluxion.jit(lambda x: x + 1)(jnp.ones(2))
"""

from __future__ import annotations

import inspect
import logging
import os
from typing import Any, Iterable

from fluxion.core.config import TraceContext
from fluxion.core.errors import user_frame
from fluxion.tree_util import physical as tree_util

__all__ = ["explain_miss", "arg_names"]

logger = logging.getLogger("fluxion")

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_WEAK_TYPE_URL = "https://docs.jax.dev/en/latest/type_promotion.html#weak-types"
# Call sites where a never-seen function was traced: a second one there means the function is
# probably re-created on every call (a lambda or closure defined inside a loop).
_MISS_CALLSITES: set[str] = set()


def explain_miss(j: Any, key: tuple, args: tuple, kwargs: dict) -> None:
    """Log why ``j`` traces again, in JAX's words: a function never seen before, or the closest
    previously traced signature and how it differs (trace context, pytree, argument types)."""
    if j.source.startswith(_PKG_DIR):  # Fluxion's own jitted helpers are not the user's concern
        return
    callsite = _callsite()
    lines = [f"TRACING CACHE MISS at {callsite}:"]
    fun = j.fun
    previous = [k for other in _siblings(j) for k in other.programs]
    if not previous:
        lines.append(f"  never seen function:\n    {j.name} id={id(fun)} defined at {j.source}")
        if callsite in _MISS_CALLSITES:
            lines.append("  but seen another function defined on the same line; maybe the function "
                         "is\n  being re-defined repeatedly, preventing caching?")
        else:
            _MISS_CALLSITES.add(callsite)
    else:
        names = arg_names(fun, j.sig, len(args) + sum(isinstance(k, int) for k, *_ in key[1]),
                           args, kwargs)
        diff = min(_diff_keys(key, old, names) for old in previous)[-1]
        lines += [f"  for {j.name} defined at {j.source}",
                  "  all previously seen cache keys differ. For the closest previous key:",
                  "  " + diff]
    logger.warning("\n".join(lines))


def _siblings(j: Any) -> list[Any]:
    """Every _Jitted of the same function (all jit options), ``j`` included."""
    if j.owner is None:
        return [j]
    return list({id(o): o for o in j.owner.by_options.values()}.values())


def _callsite() -> str:
    """``file:line[:column] (function)`` of the innermost frame outside Fluxion, as JAX prints
    call sites (the column only when it is not 0)."""
    f = user_frame()
    if f is None:
        return "<unknown>"
    line, col = f.f_lineno, 0
    positions = list(f.f_code.co_positions())
    if 0 <= f.f_lasti // 2 < len(positions):
        pos = positions[f.f_lasti // 2]
        if pos[0] is not None and pos[2] is not None:
            line, col = pos[0], pos[2]
    where = f"{f.f_code.co_filename}:{line}" + (f":{col}" if col else "")
    return f"{where} ({f.f_code.co_name})"


def _diff_keys(new: tuple, old: tuple, names: list[str]) -> tuple[int, int, str]:
    """``(severity, number of differences, explanation)`` of two program-cache keys
    ``(treedef, statics, trace context, *avals)``; lower severity is a closer key (JAX's order:
    trace context, then pytree structure and static arguments, then argument types)."""
    return (_diff_context(new[2], old[2])
            or _diff_trees(new[0], new[1], old[0], old[1])
            or _diff_types(names, new[3:], old[3:])
            or (4, 0, "cache miss explanation unavailable"))


def _diff_context(new: TraceContext, old: TraceContext) -> tuple[int, int, str] | None:
    if new is old:
        return None
    diffs = new.differences(old)
    lines = ["Tracing context doesn't match, e.g. due to config or context manager."]
    lines += [f"  * {name} differs: now {now} and before {before}" for name, now, before in diffs]
    return 0, len(diffs), "\n".join(lines)


class _Leaf:
    """Stands for an array leaf when comparing argument structures."""

    def __repr__(self) -> str:
        return "pytree leaf"


class _Static:
    """A static argument's value, placed where the argument was, when comparing structures."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


_LEAF = _Leaf()


def _with_statics(treedef: Any, statics: tuple) -> tuple[list, dict]:
    args, kwargs = treedef.unflatten([_LEAF] * treedef.num_leaves)
    args, kwargs = list(args), dict(kwargs)
    for k, v in sorted((k, v) for k, v, _ in statics if isinstance(k, int)):
        args.insert(k, _Static(v))
    for k, v, _ in statics:
        if isinstance(k, str):
            kwargs[k] = _Static(v)
    return args, kwargs


def _diff_trees(new_tree: Any, new_statics: tuple, old_tree: Any,
                old_statics: tuple) -> tuple[int, int, str] | None:
    if new_tree == old_tree and new_statics == old_statics:
        return None
    new_args, new_kwargs = _with_statics(new_tree, new_statics)
    old_args, old_kwargs = _with_statics(old_tree, old_statics)
    errs = list(_tree_errors((), (tuple(new_args), new_kwargs), (tuple(old_args), old_kwargs)))
    if not errs:
        return None
    lines = ["different input pytree:"]
    lines += [f"  * at input path {tree_util.keystr(path)}, now {now} and before {before}, so {why}"
              for path, now, before, why in errs]
    return 1, len(errs), "\n".join(lines)


def _describe(x: Any) -> str:
    if x is _LEAF:
        return "pytree leaf"
    if type(x) is _Static:
        return f"static argument {x.value!r}"
    return str(type(x))


def _tree_errors(path: tuple, a: Any, b: Any) -> Iterable[tuple[tuple, str, str, str]]:
    """The structural differences of two argument trees, as JAX's ``equality_errors``."""
    if a is _LEAF and b is _LEAF:
        return
    if type(a) is not type(b) or (a is _LEAF) != (b is _LEAF):
        yield path, _describe(a), _describe(b), "their Python types differ"
        return
    if type(a) is _Static:
        if a.value != b.value:
            yield path, _describe(a), _describe(b), "the static argument values do not match"
        return
    if isinstance(a, (list, tuple)) and len(a) != len(b):
        yield (path, f"{type(a).__name__} of length {len(a)}",
               f"{type(b).__name__} of length {len(b)}", "the lengths do not match")
        return
    a_kids, a_meta = tree_util.flatten_one_level_with_keys(a)
    b_kids, b_meta = tree_util.flatten_one_level_with_keys(b)
    if len(a_kids) != len(b_kids):
        try:
            diff = " ".join(repr(getattr(k, "key", k)) for k in
                            {k for k, _ in a_kids} ^ {k for k, _ in b_kids})
        except TypeError:
            diff = ""

        def count(n: int) -> str:
            return f"{n} child{'ren' if n > 1 else ''}"
        yield (path, f"{type(a)} with {count(len(a_kids))}", f"{type(b)} with {count(len(b_kids))}",
               "the numbers of children do not match"
               + (f", with the symmetric difference of key sets: {{{diff}}}" if diff else ""))
        return
    if a_meta != b_meta:
        yield (path, f"{type(a)} with pytree metadata {a_meta}",
               f"{type(b)} with pytree metadata {b_meta}", "the pytree node metadata does not match")
        return
    for (k, x), (_, y) in zip(a_kids, b_kids):
        yield from _tree_errors((*path, k), x, y)


def _diff_types(names: list[str], new: tuple, old: tuple) -> tuple[int, int, str] | None:
    if new == old:
        return None
    lines = ["different input types:"]
    weak_hint = False
    for name, a, b in zip(names, new, old):
        if a != b:
            now, before = a.str_short(), b.str_short()
            if a.weak_type != b.weak_type:
                weak_hint = True
                now += f"{{weak_type={a.weak_type}}}"
                before += f"{{weak_type={b.weak_type}}}"
            lines.append(f"  * at {name}, now {now} and before {before}")
    if weak_hint:
        lines.append(f"  see {_WEAK_TYPE_URL}")
    return 3, len(lines) - 1 - weak_hint, "\n".join(lines)


def arg_names(fun: Any, sig: Any, n_positional: int, args: tuple,
               kwargs: dict) -> list[str]:
    """JAX's names of the dynamic argument leaves: ``x``, ``x[0]['a']``, ``rest[1]``, ``kw['z']``
    (parameter names, then the path inside the argument)."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        params = []
    named = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var_pos = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), None)
    var_kw = next((p.name for p in params if p.kind is p.VAR_KEYWORD), None)
    positions = [i for i in range(n_positional) if i not in sig.static_argnums]

    def base(top: Any) -> str:
        if isinstance(top, int):
            p = positions[top] if top < len(positions) else top
            if p < len(named):
                return named[p]
            return f"{var_pos or 'args'}[{p - len(named) if var_pos else p}]"
        if top in named or var_kw is None:
            return str(top)
        return f"{var_kw}[{top!r}]"

    out = []
    for path, _ in tree_util.tree_flatten_with_path((args, kwargs))[0]:
        top = path[1].idx if path[0].idx == 0 else path[1].key
        out.append(base(top) + tree_util.keystr(tuple(path[2:])))
    return out

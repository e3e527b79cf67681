"""Structure-mismatch diagnostics: why one pytree is not a prefix of another."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable
from typing import Any

from fluxion.tree_util._keys import KeyPath, _simple_str, keystr
from fluxion.tree_util._nodes import _LEAF, _LIST, _TUPLE, _kind, _one_level_with_keys
from fluxion.tree_util._treedef import _aux_equal


def _children(n: int) -> str:
    return f"{n} child" if n == 1 else f"{n} children"


def _prefix_errors(path: KeyPath, prefix: Any, full: Any,
                   is_leaf: Callable[[Any], bool] | None = None
                   ) -> Iterable[Callable[[str], ValueError]]:
    """Yields error factories (taking the name of the prefix tree) for each place where
    ``prefix`` fails to be a tree prefix of ``full``; the first one is the most useful."""
    if (is_leaf is not None and is_leaf(prefix)) or _kind(prefix) is _LEAF:
        return
    where = keystr(path)
    if type(prefix) is not type(full):
        yield lambda name: ValueError(
            f"pytree structure error: the trees have different node types at key path "
            f"{name}{where}\n"
            f"  {name}{where} is a {type(prefix)},\n"
            f"  but the corresponding subtree of the other tree is a {type(full)}.")
        return
    kind = _kind(prefix)
    p_keys, p_children, p_aux = _one_level_with_keys(kind, prefix)
    f_keys, f_children, f_aux = _one_level_with_keys(kind, full)
    if kind is _TUPLE or kind is _LIST:
        if len(prefix) != len(full):
            tn = type(prefix).__name__
            yield lambda name: ValueError(
                f"pytree structure error: {tn}s of different lengths at key path "
                f"{name}{where}\n"
                f"  {name}{where} is a {tn} of length {len(prefix)},\n"
                f"  but the corresponding {tn} of the other tree has length {len(full)}.")
            return
    elif len(p_children) != len(f_children):
        def key_text(ks):
            return " ".join(_simple_str(k) for k in ks)
        try:
            diff = " ".join(_simple_str(k) for k in set(p_keys) ^ set(f_keys))
        except Exception:
            diff = None
        yield lambda name: ValueError(
            f"pytree structure error: different numbers of children at key path "
            f"{name}{where}\n"
            f"  {name}{where} is a {type(prefix)} with {_children(len(p_children))} "
            f"(keys: {key_text(p_keys)}),\n"
            f"  but the corresponding node of the other tree has {_children(len(f_children))} "
            f"(keys: {key_text(f_keys)})"
            + ("." if diff is None else f";\n  keys in only one of them: {diff}."))
        return
    if not _aux_equal(p_aux, f_aux):
        import difflib  # reason: only for this error message, kept off the import of fluxion

        p_text, f_text = str(p_aux), str(f_aux)
        delta = textwrap.indent("\n".join(difflib.ndiff(p_text.splitlines(),
                                                        f_text.splitlines())), "    ")
        yield lambda name: ValueError(
            f"pytree structure error: different node metadata at key path {name}{where}\n"
            f"  {name}{where} is a {type(prefix)} with metadata\n    {p_text}\n"
            f"  but the corresponding node of the other tree has metadata\n    {f_text}\n"
            f"  difference:\n{delta}")
        return
    for k, a, b in zip(p_keys, p_children, f_children):
        yield from _prefix_errors((*path, k), a, b, is_leaf)


def prefix_errors(prefix_tree: Any, full_tree: Any,
                  is_leaf: Callable[[Any], bool] | None = None
                  ) -> list[Callable[[str], ValueError]]:
    """Error factories describing why ``prefix_tree`` is not a prefix of ``full_tree``.

    Not exported. Each factory takes the name to print for the prefix tree.

    Example:
        >>> errs = prefix_errors((1, 2), (1, 2, 3))
        >>> "length 2" in str(errs[0]("in_axes"))
        True
    """
    return list(_prefix_errors((), prefix_tree, full_tree, is_leaf))


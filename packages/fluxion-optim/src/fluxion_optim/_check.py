"""Structure checks: an update whose trees disagree names the first path where they differ."""


from typing import Any

import fluxion
from fluxion.tree_util import keystr

_structure = fluxion.tree.structure


def _is_none(x: Any) -> bool:
    return x is None


def _first_mismatch(a: Any, b: Any, path: tuple) -> tuple[tuple, str] | None:
    a_leaf = a is None or not fluxion.tree_util.is_tree_node(type(a))
    b_leaf = b is None or not fluxion.tree_util.is_tree_node(type(b))
    if a_leaf and b_leaf:
        return None
    if a_leaf != b_leaf:
        what_a = "a leaf" if a_leaf else f"a {type(a).__name__}"
        what_b = "a leaf" if b_leaf else f"a {type(b).__name__}"
        return path, f"{what_a} vs {what_b}"
    if type(a) is not type(b):
        return path, f"a {type(a).__name__} vs a {type(b).__name__}"
    ka, _ = fluxion.tree_util.flatten_one_level_with_keys(a)
    kb, _ = fluxion.tree_util.flatten_one_level_with_keys(b)
    ka, kb = list(ka), list(kb)
    for (key_a, child_a), (key_b, child_b) in zip(ka, kb):
        if key_a != key_b:
            return (*path, key_a), (f"the first tree has {keystr((*path, key_a))} where the "
                                    f"second has {keystr((*path, key_b))}")
        found = _first_mismatch(child_a, child_b, (*path, key_a))
        if found:
            return found
    if len(ka) != len(kb):
        longer, name = (ka, "the first tree") if len(ka) > len(kb) else (kb, "the second")
        extra = longer[min(len(ka), len(kb))][0]
        return (*path, extra), f"only {name} has this entry"
    return None


def check_same_structure(fn: str, name_a: str, a: Any, name_b: str, b: Any) -> None:
    """Raises ``ValueError`` naming the first path where trees ``a`` and ``b`` differ."""
    if _structure(a, is_leaf=_is_none) == _structure(b, is_leaf=_is_none):
        return
    found = _first_mismatch(a, b, ())
    where, why = found if found else ((), "different structure")
    why = why.replace("the first tree", name_a).replace("the second", name_b)
    raise ValueError(
        f"{fn}: the {name_a} and {name_b} trees differ at path {keystr(where) or '<root>'} "
        f"({why}).\n  {name_a}: {_structure(a)}\n  {name_b}: {_structure(b)}")

"""Finding and replacing values by name inside optimizer states (``tree_get``, ``tree_set``,
``tree_map_params``)."""


import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import fluxion
from fluxion.tree_util import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey

__all__ = ["NamedTupleKey", "tree_get", "tree_get_all_with_path", "tree_map_params", "tree_set"]


@fluxion.tree_util.register_pytree_node_class
class _ParamsPlaceholder:
    def tree_flatten(self):
        return (), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        del aux, children
        return cls()


@dataclasses.dataclass(frozen=True)
class NamedTupleKey:
    """A key-path entry naming a field of a NamedTuple (``ScaleByAdamState.count``).

    Example:
        >>> from fluxion_optim.tree_utils import NamedTupleKey
        >>> str(NamedTupleKey("ScaleByAdamState", "count"))
        'ScaleByAdamState.count'
    """

    tuple_name: str
    name: str

    def __str__(self) -> str:
        return f"{self.tuple_name}.{self.name}"


def _is_named_tuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def tree_map_params(initable: Any, f: Callable[..., Any], state: Any, /, *rest: Any,
                    transform_non_params: Callable[..., Any] | None = None,
                    is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Applies ``f`` to the parts of an optimizer ``state`` that mirror the params (``mu``,
    ``nu`` ...), leaving counts and other state alone (or passing them to
    ``transform_non_params``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.adam(1e-3)
        >>> state = opt.init({"w": jnp.ones(2)})
        >>> new = optax.tree_map_params(opt, lambda p: p + 1, state)
        >>> new[0].mu["w"].tolist(), int(new[0].count)
        ([1.0, 1.0], 0)
    """
    placeholder = _ParamsPlaceholder()
    init = initable.init if hasattr(initable, "init") else initable
    with_placeholders = init(placeholder)

    def map_params(maybe_placeholder, value):
        if isinstance(maybe_placeholder, _ParamsPlaceholder):
            return fluxion.tree.map(f, value, *rest, is_leaf=is_leaf)
        if transform_non_params is not None:
            return transform_non_params(value)
        return value

    return fluxion.tree.map(map_params, with_placeholders, state,
                            is_leaf=lambda v: isinstance(v, _ParamsPlaceholder))


def _leaves_with_named_path(tree: Any, is_leaf: Callable[[Any], bool]) -> list[tuple[tuple, Any]]:
    out = []
    for path, node in fluxion.tree_util.tree_leaves_with_path(
            tree, is_leaf=lambda x: is_leaf(x) or _is_named_tuple(x)):
        if is_leaf(node) or not _is_named_tuple(node):
            out.append((path, node))
            continue
        for field in node._fields:
            key = NamedTupleKey(type(node).__name__, field)
            out += [((*path, key, *p), v)
                    for p, v in _leaves_with_named_path(getattr(node, field), is_leaf)]
    return out


def _has_keys(node: Any, keys: tuple[Any, ...]) -> bool:
    if _is_named_tuple(node):
        return any(k in node._fields for k in keys) or type(node).__name__ in keys
    return isinstance(node, dict) and any(k in node for k in keys)


def _children(path: tuple, node: Any) -> list[tuple[tuple, Any]]:
    if _is_named_tuple(node):
        return [((*path, NamedTupleKey(type(node).__name__, f)), getattr(node, f))
                for f in node._fields]
    if isinstance(node, dict):
        return [((*path, DictKey(k)), v) for k, v in node.items()]
    raise ValueError(f"tree_set: a subtree must be a dict or a NamedTuple, got {type(node)}")


def _key_name(entry: Any) -> Any:
    if isinstance(entry, DictKey):
        return entry.key
    if isinstance(entry, FlattenedIndexKey):
        return entry.key
    if isinstance(entry, GetAttrKey):
        return entry.name
    if isinstance(entry, SequenceKey):
        return entry.idx
    if isinstance(entry, NamedTupleKey):
        return entry.name
    raise KeyError(f"tree key {entry!r} of type {type(entry)} is not supported")


def _get_all(tree: Any, key: Any) -> list[tuple[tuple, Any]]:
    has_key = functools.partial(_has_keys, keys=(key,))
    found = []
    subtrees = [(p, s) for p, s in _leaves_with_named_path(tree, has_key) if has_key(s)]
    for path, sub in subtrees:
        if _is_named_tuple(sub) and type(sub).__name__ == key:
            found.append((path, sub))
        elif _is_named_tuple(sub):
            found.append(((*path, NamedTupleKey(type(sub).__name__, key)), getattr(sub, key)))
        else:
            found.append(((*path, DictKey(key)), sub[key]))
    for path, sub in subtrees:
        for child_path, child in _children(path, sub):
            found += [((*child_path, *p), v) for p, v in _get_all(child, key)]
    return found


def tree_get_all_with_path(tree: Any, key: Any,
                           filtering: Callable[[tuple, Any], bool] | None = None
                           ) -> list[tuple[tuple, Any]]:
    """All ``(path, value)`` pairs whose last key is ``key`` (a NamedTuple field, a dict key or a
    NamedTuple class name), optionally filtered by ``filtering(path, value)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> state = optax.adam(1e-3).init({"w": jnp.ones(2)})
        >>> [int(v) for _, v in optax.tree.get_all_with_path(state, "count")]
        [0]
    """
    found = _get_all(tree, key)
    if filtering:
        found = [(p, v) for p, v in found if filtering(p, v)]
    return found


def tree_get(tree: Any, key: Any, default: Any = None,
             filtering: Callable[[tuple, Any], bool] | None = None) -> Any:
    """The unique value named ``key`` in ``tree`` (``default`` if none; ``KeyError`` if several).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> state = optax.adam(1e-3).init({"w": jnp.ones(2)})
        >>> int(optax.tree.get(state, "count"))
        0
    """
    found = tree_get_all_with_path(tree, key, filtering=filtering)
    if len(found) > 1:
        raise KeyError(f"tree_get: found several values for {key!r}: "
                       f"{[fluxion.tree_util.keystr(tuple(p)) for p, _ in found]}")
    return found[0][1] if found else default


def tree_set(tree: Any, filtering: Callable[[tuple, Any], bool] | None = None, /,
             **kwargs: Any) -> Any:
    """A copy of ``tree`` where the values named by the keyword arguments are replaced.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.inject_hyperparams(optax.sgd)(learning_rate=0.1)
        >>> state = optax.tree.set(opt.init({"w": jnp.ones(2)}), learning_rate=0.5)
        >>> float(optax.tree.get(state, "learning_rate"))
        0.5
    """
    for key in kwargs:
        if not tree_get_all_with_path(tree, key, filtering):
            raise KeyError(f"tree_set: found no value named {key!r}"
                           + (" matching the filtering" if filtering else "") + f" in {tree}")
    has_any = functools.partial(_has_keys, keys=tuple(kwargs))

    def replace(path, node):
        if not has_any(node):
            return node
        if (_is_named_tuple(node) and type(node).__name__ in kwargs
                and (filtering is None or filtering(path, node))):
            return kwargs[type(node).__name__]
        new = {}
        for child_path, child in _children(path, node):
            k = _key_name(child_path[-1])
            if k in kwargs and (filtering is None or filtering(child_path, child)):
                new[k] = kwargs[k]
            elif isinstance(child, (dict, list, tuple)):
                new[k] = replace(child_path, child)
            else:
                new[k] = child
        return node._replace(**new) if _is_named_tuple(node) else new

    _, treedef = fluxion.tree.flatten(tree, is_leaf=has_any)
    pairs = _leaves_with_named_path(tree, has_any)
    return fluxion.tree.unflatten(treedef, [replace(p, n) for p, n in pairs])

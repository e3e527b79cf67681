"""State: the nested mapping of a module's Variables (as ``flax.nnx.State``), a pytree."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any, Iterator

import fluxion.tree_util as tree_util

from . import filterlib
from .variablelib import Variable

__all__ = ["State", "FlatState", "to_flat_state", "from_flat_state", "to_pure_dict",
           "replace_by_pure_dict", "filter_state", "merge_state", "split_state", "map_state",
           "diff", "create_path_filters", "restore_int_paths"]


def _sort_key(k: Any) -> tuple:
    return (type(k).__name__ if not isinstance(k, (int, str)) else ("0" if isinstance(k, int) else "1"), k)


class FlatState(list):
    """A list of ``(path, leaf)`` pairs, path a tuple of keys; ``.paths`` and ``.leaves`` views.

    Example:
        >>> import fluxion_nn as nnx
        >>> flat = nnx.state(nnx.Linear(2, 3, rngs=nnx.Rngs(0))).flat_state()
        >>> isinstance(flat, nnx.FlatState), len(flat), [path for path, _ in flat]
        (True, 2, [('bias',), ('kernel',)])
    """

    @property
    def paths(self) -> tuple:
        return tuple(p for p, _ in self)

    @property
    def leaves(self) -> list:
        return [v for _, v in self]

    def to_nested_state(self) -> "State":
        """Rebuild the nested State."""
        return State.from_flat_path(self)


class State(MutableMapping):
    """A nested mapping ``key -> State | Variable | array``, registered as a pytree.

    Attribute access reads keys (``state.linear.kernel``). ``nnx.split``/``nnx.state`` return
    States; ``nnx.merge``/``nnx.update`` consume them.

    Example::

        state = nnx.state(model, nnx.Param)
        n = sum(x.size for x in fluxion.tree_util.tree_leaves(state))

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> state = nnx.state(model)
        >>> isinstance(state, nnx.State), sorted(state.keys()), state["kernel"].value.shape
        (True, ['bias', 'kernel'], (2, 3))
    """

    __slots__ = ("_mapping",)

    def __init__(self, mapping: Any = None, /):
        m: dict = {}
        if mapping is not None:
            for k, v in dict(mapping).items():
                m[k] = State(v) if isinstance(v, dict) and not isinstance(v, State) else v
        object.__setattr__(self, "_mapping", m)

    def __getitem__(self, key: Any) -> Any:
        return self._mapping[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(value, dict) and not isinstance(value, State):
            value = State(value)
        self._mapping[key] = value

    def __delitem__(self, key: Any) -> None:
        del self._mapping[key]

    def __iter__(self) -> Iterator:
        return iter(self._mapping)

    def __len__(self) -> int:
        return len(self._mapping)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return object.__getattribute__(self, "_mapping")[name]
        except KeyError:
            raise AttributeError(f"State has no key {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __repr__(self) -> str:
        lines = []
        for path, leaf in self.flat_state():
            lines.append(f"  {'/'.join(map(str, path))}: {leaf!r}")
        return "State({\n" + "\n".join(lines) + "\n})" if lines else "State({})"

    def __eq__(self, other: Any) -> bool:
        # a State equals a State or a plain mapping with the same leaves (``State({}) == {}``)
        if isinstance(other, Mapping) and not isinstance(other, State):
            other = State(other)
        return isinstance(other, State) and self.flat_state() == other.flat_state()

    __hash__ = None  # type: ignore[assignment]

    # -- flat views -------------------------------------------------------------------------
    def flat_state(self) -> FlatState:
        """All ``(path, leaf)`` pairs, sorted by path."""
        out = FlatState()

        def walk(node: State, prefix: tuple) -> None:
            for k in sorted(node._mapping, key=_sort_key):
                v = node._mapping[k]
                if isinstance(v, State):
                    walk(v, prefix + (k,))
                else:
                    out.append((prefix + (k,), v))

        walk(self, ())
        return out

    @classmethod
    def from_flat_path(cls, flat: Any, /) -> "State":
        """Build a nested State from ``(path, leaf)`` pairs (or a ``{path: leaf}`` dict)."""
        items = flat.items() if isinstance(flat, dict) else flat
        root = cls()
        for path, leaf in items:
            node = root
            for k in path[:-1]:
                if k not in node._mapping:
                    node._mapping[k] = cls()
                node = node._mapping[k]
            node._mapping[path[-1]] = leaf
        return root

    def to_pure_dict(self) -> dict:
        """A nested plain dict with Variables replaced by their values."""
        return to_pure_dict(self)

    def replace_by_pure_dict(self, pure_dict: dict, replace_fn: Any = None) -> None:
        """Replace leaf values in place from a nested plain dict of arrays."""
        replace_by_pure_dict(self, pure_dict, replace_fn)

    def filter(self, first: Any, /, *filters: Any) -> Any:
        """Keep the leaves matching ``first`` (several filters return one State per filter)."""
        return filter_state(self, first, *filters)

    def split(self, first: Any, /, *filters: Any) -> Any:
        """Partition the leaves by filters (each leaf goes to the first filter matching it)."""
        return split_state(self, first, *filters)

    def merge(self, state: "State", /, *states: "State") -> "State":
        """Combine this State with others (later ones win)."""
        return merge_state(self, state, *states)

    def __or__(self, other: "State") -> "State":
        return merge_state(self, other)

    def __sub__(self, other: "State") -> "State":
        other_paths = set(p for p, _ in other.flat_state())
        return State.from_flat_path([(p, v) for p, v in self.flat_state() if p not in other_paths])


def _flatten_with_keys(s: State):
    keys = sorted(s._mapping, key=_sort_key)
    return [(tree_util.DictKey(k), s._mapping[k]) for k in keys], tuple(keys)


def _flatten(s: State):
    keys = sorted(s._mapping, key=_sort_key)
    return [s._mapping[k] for k in keys], tuple(keys)


def _unflatten(keys: tuple, children: Any) -> State:
    new = State()
    new._mapping.update(zip(keys, children))
    return new


tree_util.register_pytree_with_keys(State, _flatten_with_keys, _unflatten, _flatten)
# a FlatState is a pytree too (as flax's): its leaves' values are the children, the paths static
tree_util.register_pytree_node(FlatState, lambda fs: ([v for _, v in fs], tuple(p for p, _ in fs)),
                               lambda paths, leaves: FlatState(zip(paths, leaves)))


def to_flat_state(state: State) -> FlatState:
    """``state.flat_state()``.

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> flat = nnx.to_flat_state(nnx.state(model))
        >>> [(path, v.shape) for path, v in flat]
        [(('bias',), (3,)), (('kernel',), (2, 3))]
    """
    return state.flat_state()


def restore_int_paths(pure_dict: dict) -> dict:
    """A pure-dict state with its integer keys back: a checkpoint saved from ``to_pure_dict``
    (orbax) restores ``{0: ...}`` as ``{'0': ...}``; every key that ``int()`` reads becomes that
    int. Empty sub-dicts are dropped (as flax, which flattens the mapping and rebuilds it).

    Example:
        >>> import fluxion_nn as nnx
        >>> restored = nnx.restore_int_paths({"layers": {"0": {"kernel": 1.0}, "1": {"kernel": 2.0}}})
        >>> sorted(restored["layers"])
        [0, 1]
    """
    def key(k: Any) -> Any:
        try:
            return int(k)
        except ValueError:
            return k

    def walk(d: Mapping) -> dict:
        out: dict = {}
        for k, v in d.items():
            if isinstance(v, Mapping):
                v = walk(v)
                if not v:
                    continue
            out[key(k)] = v
        return out

    if not isinstance(pure_dict, Mapping):
        raise TypeError(f"restore_int_paths: expected a mapping, got {type(pure_dict).__name__}")
    return walk(pure_dict)


def create_path_filters(state: State) -> dict:
    """``{PathIn(*paths): value}``: the paths of ``state`` grouped by their (hashable) value,
    a Variable's by its value; how ``StateAxes``/``StateSharding`` read a State of axes/specs.

    Example: ``create_path_filters(State({"w": 0, "b": 0}))`` is ``{PathIn(("w",), ("b",)): 0}``.
    """
    groups: dict = {}
    for path, value in state.flat_state():
        if isinstance(value, Variable):
            value = value.get_value()
        groups.setdefault(value, []).append(tuple(path))
    return {filterlib.PathIn(*paths): value for value, paths in groups.items()}


def from_flat_state(flat: Any) -> State:
    """Inverse of ``to_flat_state``.

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> state = nnx.from_flat_state(nnx.to_flat_state(nnx.state(model)))
        >>> type(state).__name__, sorted(state.keys())
        ('State', ['bias', 'kernel'])
    """
    return State.from_flat_path(flat)


def to_pure_dict(state: State) -> dict:
    """Nested plain dicts of raw values (no Variables, no States).

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> pure = nnx.to_pure_dict(nnx.state(model))
        >>> type(pure).__name__, sorted(pure), pure["bias"].tolist()
        ('dict', ['bias', 'kernel'], [0.0, 0.0, 0.0])
    """
    out: dict = {}
    for k, v in state.items():
        if isinstance(v, State):
            out[k] = to_pure_dict(v)
        elif isinstance(v, Variable):
            out[k] = v.value
        else:
            out[k] = v
    return out


def replace_by_pure_dict(state: State, pure_dict: dict, replace_fn: Any = None) -> None:
    """Write the values of a nested plain dict into ``state`` in place (paths must exist).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> state = nnx.state(model)
        >>> pure = nnx.to_pure_dict(state)
        >>> pure["bias"] = jnp.ones(3)
        >>> nnx.replace_by_pure_dict(state, pure)
        >>> nnx.update(model, state)
        >>> model.bias.value.tolist()
        [1.0, 1.0, 1.0]
    """
    for k, v in pure_dict.items():
        if k not in state:
            raise ValueError(f"replace_by_pure_dict: key {k!r} is not in the state")
        cur = state[k]
        if isinstance(cur, State):
            replace_by_pure_dict(cur, v, replace_fn)
        elif isinstance(cur, Variable):
            state[k] = replace_fn(cur, v) if replace_fn else cur.replace(v)
        else:
            state[k] = v


def filter_state(state: State, first: Any, /, *filters: Any) -> Any:
    """Leaves of ``state`` matching each filter (one State per filter).

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
        >>> sorted(nnx.filter_state(nnx.state(model), nnx.BatchStat).keys())
        ['mean', 'var']
    """
    # several filters partition the leaves as in split_state (each leaf goes to the first
    # filter matching it), without requiring every leaf to match one
    outs = _partition(state, (first, *filters), "")
    return outs[0] if not filters else outs


def split_state(state: State, first: Any, /, *filters: Any) -> Any:
    """Partition ``state`` by filters; each leaf goes to the first filter matching it.

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
        >>> params, stats = nnx.split_state(nnx.state(model), nnx.Param, nnx.BatchStat)
        >>> sorted(params.keys()), sorted(stats.keys())
        (['bias', 'scale'], ['mean', 'var'])
    """
    outs = _partition(state, (first, *filters), "split_state")
    return outs[0] if len(outs) == 1 else outs


def diff(state: State, other: State) -> State:
    """The leaves of ``state`` whose paths ``other`` lacks (``state`` itself when ``other`` is
    empty).

    Example: ``nnx.statelib.diff(nnx.state(bigger), nnx.state(smaller))``.
    """
    if not other:
        return state
    paths = {p for p, _ in other.flat_state()}
    return State.from_flat_path([(p, v) for p, v in state.flat_state() if p not in paths])


def _partition(state: State, fs: tuple, strict: str) -> tuple:
    """One State per filter, each leaf in the first filter matching it; with ``strict`` (the
    caller's name) a leaf no filter matches is an error, else it is dropped."""
    preds = filterlib.filters_to_predicates(fs)
    buckets: list[list] = [[] for _ in fs]
    for p, v in state.flat_state():
        for i, pred in enumerate(preds):
            if pred(p, v):
                buckets[i].append((p, v))
                break
        else:
            if strict:
                raise ValueError("Non-exhaustive filters, got a non-empty remainder: no filter "
                                 f"matched the leaf at path {'/'.join(map(str, p))} ({strict}; "
                                 "add `...` as the last filter)")
    return tuple(State.from_flat_path(b) for b in buckets)


def merge_state(state: State, /, *states: State) -> State:
    """Merge States into one (later States win on equal paths).

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
        >>> params, stats = nnx.split_state(nnx.state(model), nnx.Param, nnx.BatchStat)
        >>> sorted(nnx.merge_state(params, stats).keys())
        ['bias', 'mean', 'scale', 'var']
    """
    flat: dict = {}
    for s in (state, *states):
        flat.update(dict(s.flat_state()))
    return State.from_flat_path(flat)


def map_state(f: Any, state: State) -> State:
    """Apply ``f(path, leaf)`` to every leaf of ``state``.

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> doubled = nnx.map_state(lambda path, x: x * 2 if path[-1] == "kernel" else x, nnx.state(model))
        >>> pure = nnx.to_pure_dict(doubled)
        >>> bool((pure["kernel"] == 2 * model.kernel.value).all()), pure["bias"].tolist()
        (True, [0.0, 0.0, 0.0])
    """
    return State.from_flat_path([(p, f(p, v)) for p, v in state.flat_state()])

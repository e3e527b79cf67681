"""Graph contexts (as flax's ``split_context`` / ``merge_context`` / ``update_context``): several
``split`` calls that share their references, several ``merge`` calls that share the objects they
build, and, around a transformation, the bookkeeping that lets the objects a function built and
changed inside it be merged back into the caller's objects (the same Python objects come out).

Example::

    with nnx.update_context("step"):
        with nnx.split_context("step") as ctx:
            graphdef, state = ctx.split(model)

        @fluxion.jit
        def f(graphdef, state):
            with nnx.merge_context("step", True) as ctx:
                m = ctx.merge(graphdef, state)
            m.count = 1
            with nnx.split_context("step") as ctx:
                return ctx.split(m)

        graphdef, state = f(graphdef, state)
        with nnx.merge_context("step", False) as ctx:
            same = ctx.merge(graphdef, state)   # ``same is model``, now with ``count == 1``
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Hashable, Iterator
from typing import Any, Callable

from .graph import merge, split
from .graph_def import (
    NO_UPDATE,
    ArrayRefOutput,
    GraphDef,
    _flatten_value,
    _FlattenCtx,
    _path_lookup,
    _unflatten_value,
    _UnflattenCtx,
)
from .statelib import FlatState, State
from .variablelib import Variable

__all__ = ["SplitContext", "MergeContext", "UpdateContext", "split_context", "merge_context",
           "update_context", "current_update_context"]


class UpdateContext:
    """The bookkeeping of one ``update_context(tag)`` block: the indices the first (outer) split
    gave the caller's objects, and the objects an inner merge built for those indices.

    Example: ``with nnx.update_context("t") as uctx: ...`` (``uctx.tag == "t"``).

    Example:
        >>> import fluxion_nn as nnx
        >>> with nnx.update_context("doc") as uctx:
        ...     print(isinstance(uctx, nnx.UpdateContext), uctx.tag)
        True doc
    """

    def __init__(self, tag: Hashable) -> None:
        self.tag = tag
        self.outer_objects: dict[int, Any] | None = None   # outer split: index -> object
        self.outer_indices: dict[int, int] | None = None   # outer split: id(object) -> index
        self.inner_indices: dict[int, int] | None = None   # inner merge: id(object) -> index
        self._inner_keep: list = []                        # keeps the inner objects alive

    def next_index(self) -> int:
        return 0 if not self.outer_objects else max(self.outer_objects) + 1


class _Stacks(threading.local):
    def __init__(self) -> None:
        self.by_tag: dict[Hashable, list[UpdateContext]] = {}


_STACKS = _Stacks()


def current_update_context(tag: Hashable) -> UpdateContext:
    """The innermost ``update_context(tag)`` block (an error outside one).

    Example:
        >>> import fluxion_nn as nnx
        >>> with nnx.update_context("doc") as uctx:
        ...     print(nnx.current_update_context("doc") is uctx, uctx.tag)
        True doc
    """
    stack = _STACKS.by_tag.get(tag)
    if not stack:
        raise ValueError(f"No update context found for tag {tag!r} (nnx.current_update_context)")
    return stack[-1]


def _find(tag: Hashable | None) -> UpdateContext | None:
    if tag is None:
        return None
    stack = _STACKS.by_tag.get(tag)
    return stack[-1] if stack else None


class update_context:  # noqa: N801 - flax's name; a context manager and a decorator
    """A block in which ``split_context(tag)`` / ``merge_context(tag, inner)`` remember which of
    the caller's objects went into a transformation, so that merging its outputs with
    ``merge_context(tag, False)`` updates those same objects in place (attributes added,
    changed or removed inside are carried back). As a decorator, each call runs in a block.

    Example:
        >>> import fluxion, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        >>> with nnx.update_context("doc"):  # splits/merges tagged "doc" inside share one bookkeeping
        ...     print(nnx.current_update_context("doc").tag)
        doc
    """

    def __init__(self, tag: Hashable) -> None:
        self.tag = tag

    def __enter__(self) -> UpdateContext:
        ctx = UpdateContext(self.tag)
        _STACKS.by_tag.setdefault(self.tag, []).append(ctx)
        return ctx

    def __exit__(self, *exc: Any) -> None:
        stack = _STACKS.by_tag[self.tag]
        stack.pop()
        if not stack:
            del _STACKS.by_tag[self.tag]

    def __call__(self, f: Callable) -> Callable:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with update_context(self.tag):
                return f(*args, **kwargs)

        return wrapper


class SplitContext:
    """Splits that share references: an object already split in this context comes out as a
    reference (a ``NodeRef`` GraphDef and an empty State).

    Example:
        >>> import fluxion_nn as nnx
        >>> with nnx.split_context() as ctx:
        ...     print(isinstance(ctx, nnx.SplitContext))
        True
    """

    def __init__(self, tag: Hashable | None) -> None:
        self._tag = tag
        self._update = _find(tag)
        self._seen: dict[int, int] = {}
        self._objects: dict[int, Any] = {}
        inner = self._update.inner_indices if self._update is not None else None
        counter = [self._update.next_index() if self._update is not None else 0]

        def assign(obj: Any) -> int:
            # an object that came from the caller keeps the caller's index; a new one gets the
            # next free index
            if inner is not None and id(obj) in inner:
                idx = inner[id(obj)]
            else:
                idx = counter[0]
                counter[0] += 1
            self._objects[idx] = obj
            return idx

        self._assign = assign
        self._ref_leaf = None
        if inner is not None:  # an inner split (after the inner merge) of an update_context

            def ref_leaf(ref: Any) -> Any:
                # a reference the caller passed in already holds its new value; one made inside
                # carries its value out, for the caller's merge to put in a new reference
                return NO_UPDATE if id(ref) in inner else ArrayRefOutput(ref[...])

            self._ref_leaf = ref_leaf

    def flatten(self, node: Any) -> tuple[GraphDef, FlatState]:
        """``(GraphDef, FlatState)`` of ``node`` within this context."""
        ctx = _FlattenCtx(self._seen, self._assign, self._ref_leaf)
        root = _flatten_value(node, (), ctx)
        return GraphDef(root), FlatState(ctx.leaves)

    def split(self, node: Any, *filters: Any) -> tuple:
        """As ``nnx.split``, within this context."""
        gdef, flat = self.flatten(node)
        if gdef.root[0] in ("A", "S", "F"):  # a lone array, static value or reference
            return split(node, *filters)
        if gdef.root[0] == "V" and not filters:  # a lone Variable: its state is itself
            return gdef, flat.leaves[0]
        st = State.from_flat_path(flat)
        if not filters:
            return gdef, st
        parts = st.split(*filters) if len(filters) > 1 else (st.split(filters[0]),)
        return (gdef, *parts)

    def _close(self) -> None:
        u = self._update
        if u is not None and u.outer_objects is None:  # the first split: the caller's objects
            u.outer_objects = dict(self._objects)
            u.outer_indices = {id(o): i for i, o in self._objects.items()}


class MergeContext:
    """Merges that share the objects they build (a ``NodeRef`` GraphDef gives the object an
    earlier merge built); ``inner=False`` inside an ``update_context`` merges into the caller's
    objects.

    Example:
        >>> import fluxion_nn as nnx
        >>> graphdef, state = nnx.split(nnx.Linear(2, 2, rngs=nnx.Rngs(0)))
        >>> with nnx.merge_context() as ctx:
        ...     print(isinstance(ctx, nnx.MergeContext), type(ctx.merge(graphdef, state)).__name__)
        True Linear
    """

    def __init__(self, tag: Hashable | None, inner: bool | None) -> None:
        self._update = _find(tag)
        self._inner = inner
        existing = None
        if self._update is not None and inner is False:
            existing = self._update.outer_objects
        self._ctx = _UnflattenCtx(lambda path: None, existing=existing)

    def unflatten(self, graphdef: GraphDef, flat: Any) -> Any:
        """Rebuild ``graphdef`` from a FlatState (or ``(path, value)`` pairs) in this context."""
        self._ctx.lookup = _path_lookup(dict(flat))
        return _unflatten_value(graphdef.root, (), self._ctx)

    def merge(self, graphdef: GraphDef, state: Any, /, *states: Any) -> Any:
        """As ``nnx.merge``, within this context."""
        if graphdef.root[0] in ("A", "S", "F"):
            return merge(graphdef, state, *states)
        flat: dict = {}
        for s in (state, *states):
            if isinstance(s, Variable):
                flat[()] = s
            elif isinstance(s, State):
                flat.update(dict(s.flat_state()))
            elif isinstance(s, dict):
                flat.update(dict(State(s).flat_state()))
            elif s is not None:
                flat.update(dict(s))
        return self.unflatten(graphdef, flat)

    def _close(self) -> None:
        u = self._update
        if u is not None and self._inner:
            u.inner_indices = {id(o): i for i, o in self._ctx.built.items()}
            u._inner_keep.append(dict(self._ctx.built))


@contextlib.contextmanager
def split_context(ctxtag: Hashable | None = None) -> Iterator[SplitContext]:
    """A block of splits sharing references (see :class:`SplitContext`); with the tag of an
    enclosing ``update_context``, its first block records the caller's objects.

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        >>> with nnx.split_context() as ctx:
        ...     graphdef1, state1 = ctx.split(model)
        ...     graphdef2, state2 = ctx.split(model)  # the same model again: a reference to the first
        >>> len(state1), len(state2)
        (2, 0)
        >>> with nnx.merge_context() as ctx:
        ...     m1, m2 = ctx.merge(graphdef1, state1), ctx.merge(graphdef2, state2)
        >>> m1 is m2
        True
    """
    ctx = SplitContext(ctxtag)
    try:
        yield ctx
    finally:
        ctx._close()


@contextlib.contextmanager
def merge_context(ctxtag: Hashable | None = None,
                  inner: bool | None = None) -> Iterator[MergeContext]:
    """A block of merges sharing the objects they build (see :class:`MergeContext`). In an
    ``update_context(ctxtag)``: ``inner=True`` inside the transformation (the objects built are
    remembered), ``inner=False`` after it (the caller's objects are updated and returned).

    Example:
        >>> import fluxion_nn as nnx
        >>> shared = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        >>> with nnx.split_context() as ctx:
        ...     a, b = ctx.split(shared), ctx.split(shared)
        >>> with nnx.merge_context() as ctx:
        ...     first, second = ctx.merge(*a), ctx.merge(*b)
        >>> first is second, first is shared
        (True, False)
    """
    ctx = MergeContext(ctxtag, inner)
    try:
        yield ctx
    finally:
        ctx._close()


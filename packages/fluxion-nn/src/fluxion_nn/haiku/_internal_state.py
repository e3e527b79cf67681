"""The current frame's parameters, state and key sequence as one value (Haiku's
``haiku._src.stateful`` internal state): read it, compare two readings, run code on a copy, and
``map`` (``lax.map`` with the state threaded through)."""

from __future__ import annotations

import collections
import contextlib
from typing import Any, Callable, Iterator

from . import _base
from ._layers import scan

__all__ = ["InternalState", "internal_state", "difference", "temporary_internal_state", "map"]

InternalState = collections.namedtuple("InternalState", "params,state,rng")


def _two_level_copy(d: dict | None) -> dict | None:
    return None if d is None else {k: dict(v) for k, v in d.items()}


def internal_state(*, params: bool = True) -> InternalState:
    """The current transform's parameters (unless ``params=False``), state (as
    ``StatePair(initial, current)``) and key sequence state (``(key, subkeys)`` or None).

    Example: ``before = internal_state(); ...; changed = difference(before, internal_state())``.
    """
    frame = _base._frame("internal_state")
    state = {mod: {name: _base.StatePair(frame.initial_state.get(mod, {}).get(name, value), value)
                   for name, value in entries.items()}
             for mod, entries in frame.state.items()}
    rng = None if frame.rng is None else (frame.rng._key, tuple(frame.rng._subkeys))
    return InternalState(_two_level_copy(frame.params) if params else None, state, rng)


def difference(before: InternalState, after: InternalState) -> InternalState:
    """``after`` with every entry that is the same object as in ``before`` set to None (new or
    replaced values kept); ``rng`` is None when the key sequence did not move.

    Example: ``difference(before, after).params`` lists new parameters by value, old ones as None.
    """
    def diff(a: dict | None, b: dict | None, same: Callable[[Any, Any], bool]) -> dict | None:
        if b is None:
            return None
        out = {}
        for mod, entries in b.items():
            old = (a or {}).get(mod, {})
            out[mod] = {name: (None if name in old and same(old[name], value) else value)
                        for name, value in entries.items()}
        return out

    def same_pair(x: Any, y: Any) -> bool:
        return x.initial is y.initial and x.current is y.current

    def same_rng(x: Any, y: Any) -> bool:
        return (x is not None and y is not None and x[0] is y[0] and len(x[1]) == len(y[1])
                and all(p is q for p, q in zip(x[1], y[1])))

    rng = None if same_rng(before.rng, after.rng) else after.rng
    return InternalState(diff(before.params, after.params, lambda x, y: x is y),
                         diff(before.state, after.state, same_pair), rng)


@contextlib.contextmanager
def temporary_internal_state(state: InternalState, *,
                             share_python_state: bool = False) -> Iterator[None]:
    """Run the block in a frame holding a copy of ``state`` (missing params/state taken from the
    current frame); module names start afresh there unless ``share_python_state``.

    Example::

        with temporary_internal_state(internal_state()):
            hk.Module(name="foo")     # "foo", whatever exists outside
    """
    outer = _base._frame("temporary_internal_state")
    params = _two_level_copy(state.params if state.params is not None else outer.params)
    current = state.state
    if current is None:
        values, initial = _two_level_copy(outer.state), _two_level_copy(outer.initial_state)
    else:
        values = {m: {n: p.current for n, p in e.items()} for m, e in current.items()}
        initial = {m: {n: p.initial for n, p in e.items()} for m, e in current.items()}
    rng = None if state.rng is None else _base.PRNGSequence(state.rng)
    frame = _base._Frame(params, values, rng, init=outer.init, params_frozen=outer.params_frozen)
    frame.initial_state = initial
    if share_python_state:
        frame.module_stack, frame.root_counter = outer.module_stack, outer.root_counter
    with frame:
        yield


def map(f: Callable, xs: Any) -> Any:  # noqa: A001 - Haiku's name
    """``lax.map`` with the Haiku state threaded through (``f`` applied to each leading slice).

    Example: ``ys = map(lambda x: hk.Linear(2)(x), xs)``.
    """
    _, ys = scan(lambda carry, x: (carry, f(x)), (), xs)
    return ys

"""Lifting: registering the parameters (and state) of an inner ``transform`` in the outer one,
as Haiku's ``hk.lift``/``hk.lift_with_state`` and their transparent variants."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

from . import _base
from ._base import NonEmptyStateError
from ._module import Module

__all__ = ["lift", "lift_with_state", "transparent_lift", "transparent_lift_with_state",
           "LiftWithStateUpdater", "LiftingModule"]


def _pack(src: Mapping, dst: dict, prefix: str, check_reuse: bool,
          initial: dict | None = None) -> None:
    """Copy ``src``'s bundles into ``dst`` under ``prefix/`` (refusing a bundle already there
    unless ``check_reuse`` is off); with ``initial`` also record them as initial state."""
    for key, bundle in src.items():
        new_key = f"{prefix}/{key}" if prefix else key
        if check_reuse and new_key in dst:
            raise ValueError(
                f"Key '{new_key}' already exists in the destination params. To prevent "
                "accidental parameter re-use during lift, you can't re-use a parameter already "
                "defined in the outer scope.")
        dst.setdefault(new_key, {}).update(dict(bundle))
        if initial is not None:
            initial.setdefault(new_key, {}).update(dict(bundle))


def _unpack(src: Mapping, prefix: str) -> dict:
    if not prefix:
        return {k: dict(v) for k, v in src.items()}
    n = len(prefix)
    return {k[n:]: dict(v) for k, v in src.items() if k.startswith(prefix)}


class LiftingModule(Module):
    """The module behind ``lift``/``lift_with_state``: during ``init`` it runs the inner
    ``init`` and stores its results in the outer frame; during ``apply`` it reads them back.

    Example: ``params, state = LiftingModule(inner.init)(rng, x)`` (prefer ``hk.lift``).
    """

    _is_lifting = True

    def __init__(self, init_fn: Callable, transparent: bool = False, allow_reuse: bool = False,
                 name: str = "lifted"):
        super().__init__(name=name)
        self._init_fn = init_fn
        if transparent:
            self.prefix_name = "/".join(self.module_name.split("/")[:-1])
        else:
            self.prefix_name = self.module_name
        self._allow_reuse = allow_reuse

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[dict, dict]:
        frame = _base.current_frame()
        if not frame.params_frozen:
            inner_params, inner_state = self._init_fn(*args, **kwargs)
            check = not self._allow_reuse
            _pack(inner_params, frame.params, self.prefix_name, check)
            _pack(inner_state, frame.state, self.prefix_name, check, frame.initial_state)
            return inner_params, inner_state
        prefix = f"{self.prefix_name}/" if self.prefix_name else ""
        return _unpack(frame.params, prefix), _unpack(frame.state, prefix)


def _params_only(init_fn: Callable) -> Callable:
    def init_with_empty_state(*args: Any, **kwargs: Any) -> tuple[Any, dict]:
        params = init_fn(*args, **kwargs)
        if not isinstance(params, Mapping):
            raise NonEmptyStateError("For stateful lifted functions use `hk.lift_with_state`")
        return params, {}

    return init_with_empty_state


class LiftWithStateUpdater:
    """Writes the state returned by the inner ``apply`` back into the outer transform; it must
    be used exactly once (``update(state)`` or ``ignore_update()``) per ``init``/``apply``.

    Example::

        params_and_state_fn, updater = hk.lift_with_state(inner.init)
        params, state = params_and_state_fn(rng, x)
        out, state = inner.apply(params, state, None, x)
        updater.update(state)

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def counter():
        ...     hk.set_state("n", hk.get_state("n", [], init=jnp.zeros) + 1)
        >>> inner = hk.transform_with_state(counter)
        >>> def outer():
        ...     init, updater = hk.lift_with_state(inner.init, name="inner")
        ...     params, state = init(None)
        ...     updater.update(inner.apply(params, state, None)[1])
        ...     return isinstance(updater, hk.LiftWithStateUpdater)
        >>> hk.transform_with_state(outer).apply(*hk.transform_with_state(outer).init(None), None)[0]
        True
    """

    __slots__ = ("_used", "_name", "_frame")

    def __init__(self, name: str | None):
        self._used = False
        self._name = name
        self._frame = _base.current_frame()
        self._frame.teardown.append(self.assert_used)

    def assert_used(self) -> None:
        """Raise when neither ``update`` nor ``ignore_update`` was called."""
        if not self._used:
            raise ValueError("LiftWithStateUpdater (from `lift_with_state`) must be used, call "
                             "`.update(..)` or `.ignore_update()` before it goes out of scope.")

    def _use(self) -> Any:
        if self._used:
            raise ValueError("State updater must only be used once.")
        if not _base.frame_stack:
            raise ValueError("State updater must be used inside hk.transform_with_state.")
        frame = _base.current_frame()
        if frame is not self._frame:
            raise ValueError("State updater must be used within the same call to init/apply.")
        self._used = True
        return frame

    def ignore_update(self) -> None:
        """Leave the outer state as it is."""
        self._use()

    def update(self, state: Mapping) -> None:
        """Set the outer transform's current state from the inner ``apply``'s new ``state``."""
        frame = self._use()
        for mod_name, bundle in state.items():
            if self._name is not None:
                mod_name = f"{self._name}/{mod_name}"
            for name, value in bundle.items():
                frame.initial_state.setdefault(mod_name, {}).setdefault(name, value)
                frame.state.setdefault(mod_name, {})[name] = value


def _call_only(f: Callable) -> Callable:
    return lambda *a, **k: f(*a, **k)


def lift_with_state(init_fn: Callable, *, allow_reuse: bool = False,
                    name: str = "lifted") -> tuple[Callable, LiftWithStateUpdater]:
    """Register the params and state made by an inner ``TransformedWithState.init`` in the
    outer transform (under ``name/``); returns ``(params_and_state_fn, updater)``.

    Example::

        def f(x):
            g = hk.transform_with_state(inner)
            params_and_state_fn, updater = hk.lift_with_state(g.init, name="f_lift")
            rng = hk.next_rng_key() if hk.running_init() else None
            params, state = params_and_state_fn(rng, x)
            out, state = g.apply(params, state, None, x)
            updater.update(state)
            return out

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def counter():
        ...     n = hk.get_state("n", [], init=jnp.zeros)
        ...     hk.set_state("n", n + 1)
        ...     return n
        >>> inner = hk.transform_with_state(counter)
        >>> def outer():
        ...     init, updater = hk.lift_with_state(inner.init, name="inner")
        ...     params, state = init(None)
        ...     out, state = inner.apply(params, state, None)
        ...     updater.update(state)  # the new inner state becomes part of outer's state
        ...     return out
        >>> outer = hk.transform_with_state(outer)
        >>> params, state = outer.init(None)
        >>> out, state = outer.apply(params, state, None)
        >>> {m: {k: float(v) for k, v in s.items()} for m, s in state.items()}
        {'inner/~': {'n': 1.0}}
    """
    _base._frame("lift_with_state")
    fn = _call_only(LiftingModule(init_fn, allow_reuse=allow_reuse, name=name))
    frame = _base.current_frame()
    if frame.module_stack:
        name = f"{_base.current_name()}/{name}"
    return fn, LiftWithStateUpdater(name)


def transparent_lift_with_state(init_fn: Callable, *,
                                allow_reuse: bool = False) -> tuple[Callable,
                                                                    LiftWithStateUpdater]:
    """``lift_with_state`` without the extra name scope: the inner names are used as they are.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def counter():
        ...     hk.set_state("n", hk.get_state("n", [], init=jnp.zeros) + 1)
        >>> inner = hk.transform_with_state(counter)
        >>> def outer():
        ...     init, updater = hk.transparent_lift_with_state(inner.init)
        ...     params, state = init(None)
        ...     updater.update(inner.apply(params, state, None)[1])
        >>> params, state = hk.transform_with_state(outer).init(None)
        >>> sorted(state)  # no "lifted" scope in the names
        ['~']
    """
    _base._frame("lift_with_state")
    fn = _call_only(LiftingModule(init_fn, transparent=True, allow_reuse=allow_reuse))
    frame = _base.current_frame()
    name = _base.current_name() if frame.module_stack else None
    return fn, LiftWithStateUpdater(name)


def lift(init_fn: Callable, *, allow_reuse: bool = False, name: str = "lifted") -> Callable:
    """Register the parameters made by an inner ``Transformed.init`` in the outer transform
    (under ``name/``): during ``init`` the returned function runs ``init_fn`` and stores its
    parameters, during ``apply`` it returns them from the outer parameters.

    Example::

        def f(x):
            inner = hk.transform(lambda x: hk.Linear(3)(x))
            rng = hk.next_rng_key() if hk.running_init() else None
            params = hk.lift(inner.init, name="inner")(rng, x)
            return inner.apply(params, None, x)

        params = hk.transform(f).init(jax.random.PRNGKey(0), jnp.ones([1, 2]))
        # {'inner/linear': {'w': ..., 'b': ...}}

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> inner = hk.transform(lambda x: hk.Linear(2)(x))
        >>> def outer(x):
        ...     # inner's parameters become part of outer's, under "inner"
        ...     params = hk.lift(inner.init, name="inner")(hk.next_rng_key(), x)
        ...     return inner.apply(params, None, x)
        >>> outer = hk.transform(outer)
        >>> x = jnp.ones((1, 3))
        >>> params = outer.init(fluxion.random.PRNGKey(0), x)
        >>> sorted(params), outer.apply(params, fluxion.random.PRNGKey(1), x).shape
        (['inner/linear'], (1, 2))
    """
    _base._frame("lift")
    fn, updater = lift_with_state(_params_only(init_fn), allow_reuse=allow_reuse, name=name)
    updater.ignore_update()
    return lambda *a, **k: fn(*a, **k)[0]


def transparent_lift(init_fn: Callable, *, allow_reuse: bool = False) -> Callable:
    """``lift`` without the extra name scope.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> inner = hk.transform(lambda x: hk.Linear(2)(x))
        >>> def outer(x):
        ...     params = hk.transparent_lift(inner.init)(hk.next_rng_key(), x)  # no extra name scope
        ...     return inner.apply(params, None, x)
        >>> sorted(hk.transform(outer).init(fluxion.random.PRNGKey(0), jnp.ones((1, 3))))
        ['linear']
    """
    _base._frame("transparent_lift")
    lifted = LiftingModule(_params_only(init_fn), transparent=True, allow_reuse=allow_reuse)

    def fn(*a: Any, **k: Any) -> dict:
        # modules made before the frames the wrapped function runs in may not be used there
        boundaries = _base._closure_boundaries()
        boundaries.append(_base.current_frame().frame_id + 1)
        try:
            return lifted(*a, **k)[0]
        finally:
            boundaries.pop()

    return fn

"""The Haiku-style core: ``transform`` turns a function that builds modules and calls
``get_parameter``/``get_state``/``next_rng_key`` into a pure ``(init, apply)`` pair."""

from __future__ import annotations

import collections
import functools
import re
import threading
from typing import Any, Callable, NamedTuple

import fluxion.numpy as jnp
import fluxion.random as random

__all__ = ["Transformed", "TransformedWithState", "transform", "transform_with_state",
           "without_apply_rng", "without_state", "with_empty_state", "get_parameter",
           "get_state", "set_state", "next_rng_key", "next_rng_keys", "maybe_next_rng_key",
           "reserve_rng_keys", "PRNGSequence", "Module", "current_name", "running_init",
           "get_params", "get_current_state"]

_local = threading.local()


def _frames() -> list:
    if not hasattr(_local, "frames"):
        _local.frames = []
    return _local.frames


class _Frame:
    def __init__(self, params: dict, state: dict, rng: "PRNGSequence | None", init: bool,
                 params_frozen: bool):
        self.params = params
        self.state = state
        self.rng = rng
        self.init = init
        self.params_frozen = params_frozen
        self.initial_state: dict = {}
        self.module_stack: list = []
        self.root_counter: collections.Counter = collections.Counter()

    def __enter__(self) -> "_Frame":
        _frames().append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _frames().pop()


def _frame(what: str) -> _Frame:
    frames = _frames()
    if not frames:
        raise ValueError(f"haiku.{what} must be used as part of an `hk.transform`ed function")
    return frames[-1]


class PRNGSequence:
    """An iterator of PRNG keys: ``next(seq)`` splits the internal key (as ``hk.PRNGSequence``).

    Example::

        seq = hk.PRNGSequence(42)
        k1, k2 = next(seq), next(seq)
    """

    __slots__ = ("_key", "_subkeys")

    def __init__(self, key_or_seed: Any):
        if isinstance(key_or_seed, tuple):
            self._key, subkeys = key_or_seed
            self._subkeys = collections.deque(subkeys)
            return
        if isinstance(key_or_seed, int) or (hasattr(key_or_seed, "shape") and not key_or_seed.shape
                                            and key_or_seed.dtype == jnp.int32):
            key_or_seed = random.PRNGKey(key_or_seed)
        if not hasattr(key_or_seed, "shape"):
            raise TypeError(f"PRNGSequence: expected a PRNG key or an int seed, got {key_or_seed!r}")
        self._key = key_or_seed
        self._subkeys: collections.deque = collections.deque()

    def reserve(self, num: int) -> None:
        """Split ``num`` keys now (key 0 is kept for future splits)."""
        if num > 0:
            new = random.split(self._key, num + 1)
            self._key = new[0]
            self._subkeys.extend(new[i] for i in range(1, num + 1))

    def __next__(self) -> Any:
        if not self._subkeys:
            self.reserve(1)
        return self._subkeys.popleft()

    def __iter__(self) -> "PRNGSequence":
        return self

    next = __next__

    def take(self, num: int) -> tuple:
        """The next ``num`` keys."""
        self.reserve(max(num - len(self._subkeys), 0))
        return tuple(next(self) for _ in range(num))

    @property
    def internal_state(self) -> tuple:
        return self._key, tuple(self._subkeys)

    def replace_internal_state(self, state: tuple) -> None:
        """Restore a state from ``internal_state``."""
        self._key, subkeys = state
        self._subkeys = collections.deque(subkeys)


class Transformed(NamedTuple):
    """``init(rng, *args) -> params`` and ``apply(params, rng, *args) -> out``.

    Example: ``f = hk.transform(forward); params = f.init(rng, x); y = f.apply(params, rng, x)``.
    """

    init: Callable
    apply: Callable


class TransformedWithState(NamedTuple):
    """``init(rng, *args) -> (params, state)``; ``apply(params, state, rng, *args) -> (out, state)``.

    Example: ``f = hk.transform_with_state(forward)``.
    """

    init: Callable
    apply: Callable


def _to_seq(rng: Any) -> PRNGSequence | None:
    if rng is None:
        return None
    if isinstance(rng, PRNGSequence):
        return rng
    return PRNGSequence(rng)


def _copy(d: dict) -> dict:
    return {k: dict(v) for k, v in d.items()}


def transform_with_state(f: Callable) -> TransformedWithState:
    """Turn ``f`` (which may create modules, parameters and state) into a pure
    ``(init, apply)`` pair that threads parameters and state explicitly.

    Example::

        def forward(x, is_training):
            return hk.BatchNorm(True, True, 0.9)(x, is_training)

        f = hk.transform_with_state(forward)
        params, state = f.init(rng, x, True)
        y, state = f.apply(params, state, rng, x, True)
    """

    @functools.wraps(f)
    def init_fn(rng: Any, *args: Any, **kwargs: Any) -> tuple[dict, dict]:
        frame = _Frame({}, {}, _to_seq(rng), init=True, params_frozen=False)
        with frame:
            f(*args, **kwargs)
        return frame.params, frame.initial_state

    @functools.wraps(f)
    def apply_fn(params: Any, state: Any, rng: Any, *args: Any, **kwargs: Any) -> tuple[Any, dict]:
        frame = _Frame(_copy(params or {}), _copy(state or {}), _to_seq(rng), init=False,
                       params_frozen=True)
        with frame:
            out = f(*args, **kwargs)
        return out, frame.state

    return TransformedWithState(init_fn, apply_fn)


def transform(f: Callable, *, apply_rng: bool = True) -> Transformed:
    """Turn ``f`` into ``Transformed(init, apply)``; ``f`` may not use state (see
    ``transform_with_state``).

    Example::

        def forward(x):
            return hk.nets.MLP([32, 10])(x)

        f = hk.transform(forward)
        params = f.init(jax_key, x)
        logits = f.apply(params, None, x)
    """
    tws = transform_with_state(f)

    @functools.wraps(f)
    def init_fn(rng: Any, *args: Any, **kwargs: Any) -> dict:
        params, state = tws.init(rng, *args, **kwargs)
        if state:
            raise ValueError("hk.transform: the function uses state; use hk.transform_with_state")
        return params

    @functools.wraps(f)
    def apply_fn(params: Any, rng: Any, *args: Any, **kwargs: Any) -> Any:
        out, state = tws.apply(params, {}, rng, *args, **kwargs)
        if state:
            raise ValueError("hk.transform: the function uses state; use hk.transform_with_state")
        return out

    t = Transformed(init_fn, apply_fn)
    return t if apply_rng else without_apply_rng(t)


def without_apply_rng(f: Any) -> Any:
    """Drop the ``rng`` argument of ``apply`` (for functions that draw no random numbers).

    Example: ``f = hk.without_apply_rng(hk.transform(forward)); y = f.apply(params, x)``.
    """
    if isinstance(f, TransformedWithState):
        def apply_s(params: Any, state: Any, *args: Any, **kwargs: Any) -> Any:
            return f.apply(params, state, None, *args, **kwargs)

        return TransformedWithState(f.init, apply_s)

    def apply(params: Any, *args: Any, **kwargs: Any) -> Any:
        return f.apply(params, None, *args, **kwargs)

    return Transformed(f.init, apply)


def without_state(f: TransformedWithState) -> Transformed:
    """A ``Transformed`` from a ``TransformedWithState`` whose state is empty.

    Example: ``f = hk.without_state(hk.transform_with_state(forward))``.
    """
    def init(*args: Any, **kwargs: Any) -> Any:
        params, state = f.init(*args, **kwargs)
        if state:
            raise ValueError("hk.without_state: the function has state")
        return params

    def apply(params: Any, *args: Any, **kwargs: Any) -> Any:
        out, state = f.apply(params, {}, *args, **kwargs)
        if state:
            raise ValueError("hk.without_state: the function has state")
        return out

    return Transformed(init, apply)


def with_empty_state(f: Transformed) -> TransformedWithState:
    """A ``TransformedWithState`` (empty state) from a ``Transformed``.

    Example: ``f = hk.with_empty_state(hk.transform(forward))``.
    """
    def init(*args: Any, **kwargs: Any) -> Any:
        return f.init(*args, **kwargs), {}

    def apply(params: Any, state: Any, *args: Any, **kwargs: Any) -> Any:
        return f.apply(params, *args, **kwargs), state

    return TransformedWithState(init, apply)


def running_init() -> bool:
    """True inside ``init``.

    Example: ``if hk.running_init(): ...``.
    """
    return _frame("running_init").init


def current_name() -> str:
    """The full name of the module whose method is running (``"~"`` at top level).

    Example: ``hk.current_name()`` inside ``hk.Linear`` is ``"linear"``.
    """
    frame = _frame("current_name")
    return frame.module_stack[-1][0].module_name if frame.module_stack else "~"


def _bundle(frame: _Frame) -> str:
    return frame.module_stack[-1][0].module_name if frame.module_stack else "~"


def get_parameter(name: str, shape: Any, dtype: Any = jnp.float32, init: Callable | None = None) -> Any:
    """The parameter ``name`` of the current module, created by ``init(shape, dtype)`` during
    ``init``.

    Example: ``w = hk.get_parameter("w", [3, 4], init=hk.initializers.TruncatedNormal())``.
    """
    frame = _frame("get_parameter")
    bundle = _bundle(frame)
    shape = tuple(int(s) for s in shape)
    params = frame.params.get(bundle, {})
    if name in params:
        value = params[name]
    else:
        if frame.params_frozen:
            raise ValueError(f"hk.get_parameter: unable to retrieve parameter {name!r} for module "
                             f"{bundle!r}; all parameters must be created as part of `init`")
        if init is None:
            raise ValueError(f"hk.get_parameter: initializer must be specified for {bundle}/{name}")
        value = init(shape, dtype)
        frame.params.setdefault(bundle, {})[name] = value
    if tuple(value.shape) != shape:
        raise ValueError(f"hk.get_parameter: {bundle}/{name} has shape {tuple(value.shape)} but "
                         f"{shape} was requested")
    return value


def get_state(name: str, shape: Any = None, dtype: Any = jnp.float32, init: Callable | None = None) -> Any:
    """The state ``name`` of the current module (created by ``init(shape, dtype)`` if missing).

    Example: ``count = hk.get_state("count", [], jnp.int32, init=jnp.zeros)``.
    """
    frame = _frame("get_state")
    bundle = _bundle(frame)
    st = frame.state.get(bundle, {})
    if name in st:
        return st[name]
    if init is None:
        raise ValueError(f"hk.get_state: no state {bundle}/{name} and no initializer given")
    value = init(tuple(shape), dtype)
    frame.state.setdefault(bundle, {})[name] = value
    if frame.init:
        frame.initial_state.setdefault(bundle, {})[name] = value
    return value


def set_state(name: str, value: Any) -> None:
    """Set the state ``name`` of the current module.

    Example: ``hk.set_state("count", count + 1)``.
    """
    frame = _frame("set_state")
    bundle = _bundle(frame)
    if frame.init and name not in frame.initial_state.get(bundle, {}):
        frame.initial_state.setdefault(bundle, {})[name] = value
    frame.state.setdefault(bundle, {})[name] = value


def get_params() -> dict:
    """The parameters of the current transform (a copy).

    Example: ``hk.get_params()``.
    """
    return _copy(_frame("get_params").params)


def get_current_state() -> dict:
    """The state of the current transform (a copy).

    Example: ``hk.get_current_state()``.
    """
    return _copy(_frame("get_current_state").state)


def next_rng_key() -> Any:
    """A fresh PRNG key from the ``rng`` given to ``init``/``apply``.

    Example: ``mask = jax.random.bernoulli(hk.next_rng_key(), 0.5, x.shape)``.
    """
    frame = _frame("next_rng_key")
    if frame.rng is None:
        raise ValueError("hk.next_rng_key: you must pass a non-None PRNGKey to init/apply")
    return next(frame.rng)


def next_rng_keys(num: int) -> Any:
    """``num`` fresh keys stacked in one array.

    Example: ``keys = hk.next_rng_keys(3)``.
    """
    frame = _frame("next_rng_keys")
    if frame.rng is None:
        raise ValueError("hk.next_rng_keys: you must pass a non-None PRNGKey to init/apply")
    return jnp.stack(frame.rng.take(num))


def maybe_next_rng_key() -> Any:
    """``next_rng_key()`` or None when no rng was given.

    Example: ``key = hk.maybe_next_rng_key()``.
    """
    frame = _frame("maybe_next_rng_key")
    return None if frame.rng is None else next(frame.rng)


def reserve_rng_keys(num: int) -> None:
    """Pre-split ``num`` keys.

    Example: ``hk.reserve_rng_keys(2)``.
    """
    frame = _frame("reserve_rng_keys")
    if frame.rng is not None:
        frame.rng.reserve(num)


def _snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return s.lower()


def _wrap_method(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def method(self: "Module", *args: Any, **kwargs: Any) -> Any:
        frames = _frames()
        if not frames or not hasattr(self, "module_name"):
            return fn(self, *args, **kwargs)
        stack = frames[-1].module_stack
        stack.append((self, fn.__name__, collections.Counter()))
        try:
            return fn(self, *args, **kwargs)
        finally:
            stack.pop()

    method._hk_wrapped = True  # type: ignore[attr-defined]
    return method


def _wrap_init(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def init(self: "Module", *args: Any, **kwargs: Any) -> None:
        frames = _frames()
        if not frames:
            raise ValueError(f"{type(self).__name__}: haiku modules must be created inside a "
                             "transformed function (hk.transform)")
        stack = frames[-1].module_stack
        pushed = not stack or stack[-1][0] is not self
        if pushed:
            stack.append((self, "__init__", collections.Counter()))
        try:
            fn(self, *args, **kwargs)
        finally:
            if pushed:
                stack.pop()

    init._hk_wrapped = True  # type: ignore[attr-defined]
    return init


def _name_and_number(name: str) -> tuple[str, int | None]:
    m = re.match(r"^(.*)_([0-9]+)$", name)
    return (m.group(1), int(m.group(2))) if m else (name, None)


class Module:
    """Base class of Haiku-style modules: parameters created with ``hk.get_parameter`` inside
    its methods belong to the module's unique name (``"mlp/~/linear_0"``).

    Example::

        class Scale(hk.Module):
            def __call__(self, x):
                s = hk.get_parameter("s", [], init=hk.initializers.Constant(2.0))
                return s * x
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for k, v in list(vars(cls).items()):
            if k == "__init__":
                setattr(cls, k, _wrap_init(v))
            elif (callable(v) and not isinstance(v, (staticmethod, classmethod, type))
                  and (not k.startswith("_") or k == "__call__") and not getattr(v, "_hk_wrapped", False)):
                setattr(cls, k, _wrap_method(v))
            elif isinstance(v, property) and v.fget is not None:
                setattr(cls, k, property(_wrap_method(v.fget), v.fset, v.fdel, v.__doc__))

    def __init__(self, name: str | None = None):
        frame = _frame("Module")
        entries = [e for e in frame.module_stack if e[0] is not self and hasattr(e[0], "module_name")]
        base = name if name is not None else _snake(type(self).__name__)
        if entries:
            parent, method, counter = entries[-1]
            if method == "__init__":
                base = "~/" + base
            elif method != "__call__":
                base = f"~{method}/" + base
            base = f"{parent.module_name}/{base}"
        else:
            counter = frame.root_counter
        stem, n = _name_and_number(base)
        explicit = n is not None
        if n is None:
            n = counter[stem]
        full = f"{stem}_{n}" if explicit or n else stem
        counter[stem] = max(counter[stem], n + 1)
        self.module_name = full
        self.name = full.rsplit("/", 1)[-1]

    def params_dict(self) -> dict:
        """This module's parameters (and its submodules')."""
        frame = _frame("params_dict")
        return {k: v for k, v in frame.params.items()
                if k == self.module_name or k.startswith(self.module_name + "/")}

    def state_dict(self) -> dict:
        """This module's state (and its submodules')."""
        frame = _frame("state_dict")
        return {k: v for k, v in frame.state.items()
                if k == self.module_name or k.startswith(self.module_name + "/")}


Module.__init__ = _wrap_init(Module.__init__)  # type: ignore[method-assign]

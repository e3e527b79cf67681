"""The Haiku-style core's frames: the per-thread stack of frames that ``transform``
(``_transform.py``) pushes, and what runs inside one: ``get_parameter``/``get_state``/
``set_state``, the rng sequence, the custom creator/getter/setter stacks and contexts.
``Module`` and its naming live in ``_module.py``."""

from __future__ import annotations

import collections
import contextlib
import itertools
import threading
from typing import Any, Callable, NamedTuple

import fluxion
import fluxion.extend.core as _extend_core
import fluxion.numpy as jnp
import fluxion.random as random
import fluxion.tree_util as tree_util

from ._src import config as _config

__all__ = ["get_parameter",
           "get_state", "set_state", "next_rng_key", "next_rng_keys", "maybe_next_rng_key",
           "reserve_rng_keys", "PRNGSequence", "current_name", "running_init",
           "get_params", "get_current_state", "custom_creator", "custom_getter",
           "custom_setter", "GetterContext", "SetterContext", "DO_NOT_STORE", "new_context",
           "HaikuContext", "params_frozen", "with_rng", "maybe_get_rng_sequence_state",
           "replace_rng_sequence_state", "get_initial_state", "assert_no_new_parameters",
           "MissingRNGError", "NonEmptyStateError", "JaxUsageError", "StatePair"]

_local = threading.local()


def _frames() -> list:
    if not hasattr(_local, "frames"):
        _local.frames = []
    return _local.frames


_FRAME_IDS = itertools.count()  # frames are numbered in the order they are made


def _closure_boundaries() -> list:
    """This thread's stack of frame ids below which modules may not be used (transparent_lift)."""
    if not hasattr(_local, "boundaries"):
        _local.boundaries = []
    return _local.boundaries


def _check_not_closed_over(module: Any) -> None:
    """Raise when ``module`` was created outside the function that a ``transparent_lift``
    running now wraps (its parameters would land in the wrong transform)."""
    boundaries = _closure_boundaries()
    if boundaries and getattr(module, "_creation_frame_id", boundaries[-1]) < boundaries[-1]:
        raise ValueError("You cannot close over a module created outside the function given to "
                         f"hk.transparent_lift: '{module.module_name}' was; create it inside "
                         "that function")


class _Frame:
    def __init__(self, params: dict, state: dict, rng: "PRNGSequence | None", init: bool,
                 params_frozen: bool):
        self.frame_id = next(_FRAME_IDS)
        self.params = params
        self.state = state
        self.rng = rng
        self.init = init
        self.params_frozen = params_frozen
        self.initial_state: dict = {}
        self.module_stack: list = []
        self.root_counter: collections.Counter = collections.Counter()
        self.teardown: list = []

    def __enter__(self) -> "_Frame":
        self.trace_stack = [_trace_level()]
        _frames().append(self)
        return self

    def __exit__(self, exc_type: Any = None, *exc: Any) -> None:
        _frames().pop()
        if exc_type is None:
            # as Haiku's context teardown: e.g. an unused lift_with_state updater raises here
            callbacks, self.teardown = self.teardown, []
            for f in callbacks:
                f()


class _FrameStack:
    """A read-only view of this thread's frames (Haiku's ``base.frame_stack``)."""

    def __len__(self) -> int:
        return len(_frames())

    def __iter__(self) -> Any:
        return iter(list(_frames()))

    def peek(self, depth: int = -1) -> Any:
        return _frames()[depth]


frame_stack = _FrameStack()


def current_frame() -> Any:
    """The innermost frame (raises outside a transform).

    Example: ``base.current_frame().params``.
    """
    return _frame("current_frame")


def _trace_level() -> Any:
    return _extend_core.get_opaque_trace_state(convention="haiku")


def _assert_jax_usage(what: str) -> None:
    """As Haiku with ``check_jax_usage``: a Haiku side effect inside a raw JAX transform of an
    untransformed function raises ``JaxUsageError``."""
    if not _config.get_config().check_jax_usage:
        return
    frame = _frames()[-1]
    if _trace_level() != frame.trace_stack[-1]:
        raise JaxUsageError(
            "tl;dr - You need to use a Haiku overloaded transform (e.g. `hk.vmap`) or control "
            "flow operator (e.g. `hk.cond`) instead of the `jax.*` equivalent for untransformed "
            "functions using Haiku APIs.\n\nSome APIs in JAX (e.g. `jit`, `vmap`, `cond`, "
            f"`switch`) take functions that are expected to be pure. `hk.{what}` has a side "
            "effect, and using it inside a function (without also using `hk.transform`) makes "
            "that function 'impure' (the function has a side effect).\n\nHaiku includes "
            "drop-in replacements for these JAX APIs (e.g. `hk.vmap`) that carefully turn your "
            "function into a pure function and then call the underlying JAX function.")


class _TraceLevelPushed:
    """Inside a Haiku-aware transform: the current trace is the expected one."""

    def __enter__(self) -> None:
        frames = _frames()
        self.frame = frames[-1] if frames else None
        if self.frame is not None:
            self.frame.trace_stack.append(_trace_level())

    def __exit__(self, *exc: Any) -> None:
        if self.frame is not None:
            self.frame.trace_stack.pop()


def _frame(what: str) -> _Frame:
    frames = _frames()
    if not frames:
        raise ValueError(f"`hk.{what}` must be used as part of an `hk.transform`ed function "
                         f"(haiku.{what} called outside a transformed function)")
    return frames[-1]


def _stack(kind: str) -> list:
    stacks = getattr(_local, "stacks", None)
    if stacks is None:
        stacks = _local.stacks = {k: [] for k in ("param_creator", "state_creator",
                                                  "param_getter", "state_getter",
                                                  "state_setter")}
    return stacks[kind]


class MissingRNGError(ValueError):
    """Raised when a random key is requested but ``init``/``apply`` got ``rng=None``."""


class NonEmptyStateError(ValueError):
    """Raised by ``hk.transform`` when the function uses state."""


class JaxUsageError(ValueError):
    """Raised when a JAX transform is used wrongly inside a Haiku function."""


class StatePair(NamedTuple):
    """The initial and current value of one state entry."""

    initial: Any
    current: Any


class _DoNotStore:
    """Returned by a custom creator to skip storing a parameter (as ``hk.DO_NOT_STORE``)."""

    _instance: "_DoNotStore | None" = None

    def __new__(cls) -> "_DoNotStore":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "DO_NOT_STORE"

    @property
    def shape(self) -> Any:
        raise ValueError("DO_NOT_STORE does not have a shape.")

    @property
    def dtype(self) -> Any:
        raise ValueError("DO_NOT_STORE does not have a dtype.")


DO_NOT_STORE = _DoNotStore()


class GetterContext(NamedTuple):
    """Where a parameter or state value is created or read (given to custom creators/getters).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> seen = []
        >>> def getter(next_getter, value, context):
        ...     seen.append((context.full_name, context.module_name, context.name))
        ...     return next_getter(value)
        >>> def f(x):
        ...     with hk.custom_getter(getter):
        ...         return hk.Linear(2, name="dense")(x)
        >>> _ = hk.transform(f).init(fluxion.random.PRNGKey(0), jnp.ones((1, 3)))
        >>> seen
        [('dense/w', 'dense', 'w'), ('dense/b', 'dense', 'b')]
    """

    full_name: str
    module: Any
    original_dtype: Any
    original_shape: Any
    original_init: Any
    lifted_prefix_name: str | None

    @property
    def module_name(self) -> str:
        return self.full_name.rsplit("/", 1)[0]

    @property
    def name(self) -> str:
        return self.full_name.rsplit("/", 1)[1]


class SetterContext(NamedTuple):
    """Where a state value is set (given to custom setters).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def double(next_setter, value, context):
        ...     return next_setter(2 * value) if context.name == "count" else next_setter(value)
        >>> def f():
        ...     with hk.custom_setter(double):
        ...         hk.set_state("count", jnp.array(3))
        ...     return hk.get_state("count")
        >>> out, state = hk.transform_with_state(f).apply({}, {"~": {"count": jnp.array(0)}}, None)
        >>> int(out)
        6
    """

    full_name: str
    module: Any
    original_dtype: Any
    original_shape: Any
    lifted_prefix_name: str | None

    @property
    def module_name(self) -> str:
        return self.full_name.rsplit("/", 1)[0]

    @property
    def name(self) -> str:
        return self.full_name.rsplit("/", 1)[1]


def _run_chain(stack: list, context: Any, value_args: tuple, last: Callable) -> Any:
    pending = list(stack)

    def nxt(*args: Any) -> Any:
        if not pending:
            return last(*args)
        fn = pending.pop(0)
        return fn(nxt, *args, context)

    return nxt(*value_args)


class _Pushed:
    """A context manager pushing one entry on several thread-local stacks."""

    def __init__(self, kinds: list, entry: Any):
        self.kinds = kinds
        self.entry = entry

    def __enter__(self) -> None:
        for k in self.kinds:
            _stack(k).append(self.entry)

    def __exit__(self, *exc: Any) -> None:
        for k in reversed(self.kinds):
            st = _stack(k)
            for i in range(len(st) - 1, -1, -1):
                if st[i] is self.entry:
                    del st[i]
                    break


def custom_creator(creator: Callable, *, params: bool = True, state: bool = False) -> Any:
    """Run ``creator(next_creator, shape, dtype, init, context)`` whenever a parameter (and,
    with ``state=True``, a state value) is created.

    Example::

        def zeros_creator(next_creator, shape, dtype, init, context):
            return next_creator(shape, dtype, jnp.zeros)

        with hk.custom_creator(zeros_creator):
            z = hk.get_parameter("z", [], jnp.float32, jnp.ones)  # 0.0

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def zeros_creator(next_creator, shape, dtype, init, context):
        ...     return next_creator(shape, dtype, jnp.zeros)
        >>> def f(x):
        ...     with hk.custom_creator(zeros_creator):
        ...         return hk.Linear(2)(x)
        >>> params = hk.transform(f).init(fluxion.random.PRNGKey(0), jnp.ones((1, 3)))
        >>> float(abs(params["linear"]["w"]).sum())
        0.0
    """
    _frame("custom_creator")
    return _Pushed([k for k, on in (("param_creator", params), ("state_creator", state)) if on],
                   creator)


def custom_getter(getter: Callable, *, params: bool = True, state: bool = False) -> Any:
    """Run ``getter(next_getter, value, context)`` on every parameter (and, with
    ``state=True``, state value) read.

    Example::

        def bf16(next_getter, value, context):
            return next_getter(value.astype(jnp.bfloat16))

        with hk.custom_getter(bf16):
            w = hk.get_parameter("w", [], jnp.float32, jnp.ones)  # bfloat16

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def half_getter(next_getter, value, context):
        ...     return next_getter(value.astype(jnp.bfloat16))
        >>> def f(x):
        ...     with hk.custom_getter(half_getter):
        ...         return hk.Linear(2)(x)
        >>> f = hk.transform(f)
        >>> params = f.init(fluxion.random.PRNGKey(0), jnp.ones((1, 3)))
        >>> params["linear"]["w"].dtype, f.apply(params, None, jnp.ones((1, 3), jnp.bfloat16)).dtype
        (dtype('float32'), dtype(bfloat16))
    """
    _frame("custom_getter")
    return _Pushed([k for k, on in (("param_getter", params), ("state_getter", state)) if on],
                   getter)


def custom_setter(setter: Callable) -> Any:
    """Run ``setter(next_setter, value, context)`` on every ``hk.set_state``.

    Example::

        def zero_during_init(next_setter, value, context):
            return next_setter(jnp.zeros_like(value) if hk.running_init() else value)

        with hk.custom_setter(zero_during_init):
            hk.set_state("x", jnp.ones([2]))

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def clip(next_setter, value, context):
        ...     return next_setter(jnp.minimum(value, 10))
        >>> def f():
        ...     with hk.custom_setter(clip):
        ...         hk.set_state("total", jnp.array(42))
        ...     return hk.get_state("total")
        >>> int(hk.transform_with_state(f).apply({}, {"~": {"total": jnp.array(0)}}, None)[0])
        10
    """
    _frame("custom_setter")
    return _Pushed(["state_setter"], setter)


def params_frozen() -> bool:
    """True when new parameters may not be created (inside ``apply``).

    Example: ``hk.params_frozen()`` is False in ``init``.
    """
    return _frame("params_frozen").params_frozen


class HaikuContext:
    """A Haiku frame outside ``transform``: ``with hk.experimental.new_context(...) as ctx``
    collects the parameters and state that the code inside creates.

    Example::

        with new_context(rng=jax.random.PRNGKey(42)) as ctx:
            hk.nets.MLP([3, 2])(jnp.ones([1, 1]))
        params = ctx.collect_params()
    """

    def __init__(self, frame: "_Frame"):
        self._frame = frame

    def collect_params(self) -> dict:
        """The parameters created so far (``{module: {name: value}}``)."""
        return {k: dict(v) for k, v in self._frame.params.items()}

    def collect_initial_state(self) -> dict:
        """The initial values of the state created so far."""
        return {k: dict(v) for k, v in self._frame.initial_state.items()}

    def collect_state(self) -> dict:
        """The current values of the state."""
        return {k: dict(v) for k, v in self._frame.state.items()}

    def add_teardown_callback(self, f: Callable) -> None:
        """Call ``f()`` when the context exits without an error."""
        self._frame.teardown.append(f)

    def __enter__(self) -> "HaikuContext":
        self._frame.__enter__()
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self._frame.__exit__(exc_type)


def new_context(*, params: Any = None, state: Any = None, rng: Any = None) -> HaikuContext:
    """A context in which ``get_parameter``/``get_state``/``next_rng_key`` work outside
    ``transform``; given ``params`` are frozen (as ``hk.experimental.new_context``).

    Example::

        with new_context(rng=jax.random.PRNGKey(0)) as ctx:
            y = hk.Linear(2)(jnp.ones([1, 3]))
        ctx.collect_params()["linear"]["w"].shape  # (3, 2)
    """
    frozen = params is not None
    p = _copy(params) if params is not None else {}
    s = _copy(state) if state is not None else {}
    frame = _Frame(p, s, _to_seq(rng), init=not frozen, params_frozen=frozen)
    if state is not None:
        frame.initial_state = _copy(state)
    return HaikuContext(frame)


def _assert_is_prng_key(key: Any) -> None:
    if not hasattr(key, "shape") or not hasattr(key, "dtype"):
        raise ValueError(f"The provided key is not a JAX PRNGKey but a {type(key)}:\n{key}")
    if fluxion.dtypes.issubdtype(key.dtype, fluxion.dtypes.prng_key):
        if key.shape:
            raise ValueError("Provided key did not have expected shape and/or dtype: "
                             f"expected=(shape=(), dtype={key.dtype}), "
                             f"actual=(shape={key.shape}, dtype={key.dtype})")
        return
    expected = tuple(random.key_data(random.key(0)).shape)
    if tuple(key.shape) != expected or key.dtype != jnp.uint32:
        raise ValueError("Provided key did not have expected shape and/or dtype: "
                         f"expected=(shape={expected}, dtype=uint32), "
                         f"actual=(shape={key.shape}, dtype={key.dtype})")


class PRNGSequence:
    """An iterator of PRNG keys: ``next(seq)`` splits the internal key (as ``hk.PRNGSequence``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> seq = hk.PRNGSequence(42)
        >>> k1, k2 = next(seq), next(seq)
        >>> bool((k1 != k2).any())
        True
    """

    __slots__ = ("_key", "_subkeys")

    def __init__(self, key_or_seed: Any):
        if isinstance(key_or_seed, tuple):
            key, subkeys = key_or_seed
            _assert_is_prng_key(key)
            for k in subkeys:
                _assert_is_prng_key(k)
            self._key = key
            self._subkeys = collections.deque(subkeys)
            return
        if isinstance(key_or_seed, int) or (hasattr(key_or_seed, "shape") and not key_or_seed.shape
                                            and getattr(key_or_seed, "dtype", None) == jnp.int32):
            key_or_seed = random.PRNGKey(key_or_seed)
        else:
            _assert_is_prng_key(key_or_seed)
        self._key = key_or_seed
        self._subkeys: collections.deque = collections.deque()

    def reserve(self, num: int) -> None:
        """Split ``num`` keys now (key 0 is kept for future splits)."""
        if num > 0:
            new = tuple(random.split(self._key, num + 1))
            self._key = new[0]
            self._subkeys.extend(new[1:])

    def reserve_up_to_full(self) -> None:
        """Hold exactly ``rng_reserve_size`` split keys."""
        num = _config.get_config().rng_reserve_size
        diff = num - len(self._subkeys)
        if diff > 0:
            self.reserve(diff)
        elif diff < 0:
            self._subkeys = collections.deque(list(self._subkeys)[:num])

    def __next__(self) -> Any:
        if not self._subkeys:
            self.reserve(_config.get_config().rng_reserve_size)
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
        _assert_is_prng_key(state[0])
        for k in state[1]:
            _assert_is_prng_key(k)
        self._key, subkeys = state
        self._subkeys = collections.deque(subkeys)


def _to_seq(rng: Any) -> PRNGSequence | None:
    if rng is None:
        return None
    if isinstance(rng, PRNGSequence):
        return rng
    return PRNGSequence(rng)


def _copy(d: dict) -> dict:
    return {k: dict(v) for k, v in d.items()}


def running_init() -> bool:
    """True inside ``init`` (parameters not frozen).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda: hk.running_init())
        >>> f.init(key), f.apply({}, key)
        ({}, False)
    """
    return not _frame("running_init").params_frozen


def current_name() -> str:
    """The full name of the module whose method is running (``"~"`` at top level).

    Example:
        >>> import fluxion, fluxion_nn.haiku as hk
        >>> class Encoder(hk.Module):
        ...     def __call__(self):
        ...         return hk.current_name()
        >>> hk.transform(lambda: (hk.current_name(), Encoder()())).apply({}, None)
        ('~', 'encoder')
    """
    frame = _frame("current_name")
    return frame.module_stack[-1][0].module_name if frame.module_stack else "~"


def _bundle(frame: _Frame) -> str:
    if not frame.module_stack:
        return "~"
    module = frame.module_stack[-1][0]
    _check_not_closed_over(module)
    return module.module_name


def _throw_if_run(shape: Any, dtype: Any) -> Any:
    raise ValueError("Initializer must be specified.")


def get_parameter(name: str, shape: Any, dtype: Any = None, init: Callable | None = None) -> Any:
    """The parameter ``name`` of the current module, created by ``init(shape, dtype)`` during
    ``init`` (custom creators and getters run as in Haiku).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: x @ hk.get_parameter('w', [3, 2], init=jnp.ones))
        >>> x = jnp.ones((1, 3))
        >>> params = f.init(key, x)
        >>> params['~']['w'].shape
        (3, 2)
        >>> f.apply(params, None, x).tolist()
        [[3.0, 3.0]]
    """
    frame = _frame("get_parameter")
    _assert_jax_usage("get_parameter")
    if init is None:
        init = _throw_if_run
    if dtype is None:
        dtype = jnp.float32
    bundle = _bundle(frame)
    fq_name = f"{bundle}/{name}"
    context = GetterContext(fq_name, _current_module(frame), dtype, shape, init, _lift_prefix())
    param = frame.params.get(bundle, {}).get(name)
    if param is None:
        missing = ValueError(
            f"Unable to retrieve parameter {name!r} for module {bundle!r} All parameters must be "
            "created as part of `init`.")
        try:
            creators = _stack("param_creator")
            if creators:
                param = _run_chain(creators, context, (shape, dtype, init),
                                   lambda sh, dt, ini: ini(sh, dt))
            else:
                param = init(shape, dtype)
        except MissingRNGError as e:
            if frame.params_frozen:
                raise missing from e
            raise
        if param is DO_NOT_STORE:
            pass
        else:
            if frame.params_frozen:
                raise missing
            if param is None:
                raise ValueError("Parameters cannot be `None`.")
            frame.params.setdefault(bundle, {})[name] = param
    getters = _stack("param_getter")
    if getters:
        param = _run_chain(getters, context, (param,), lambda v: v)
    if param is None:
        raise ValueError("Parameters cannot be `None`.")
    if tuple(param.shape) != tuple(shape):
        raise ValueError(f"{fq_name!r} with retrieved shape {param.shape!r} does not match "
                         f"shape={shape!r} dtype={dtype!r}")
    return param


def _lift_prefix() -> str | None:
    # as Haiku: inside a lifted init, the module names of the enclosing lifting modules
    if _frames()[-1].params_frozen:
        return None
    prefixes = [f.module_stack[-1][0].prefix_name for f in _frames() if f.module_stack
                and getattr(f.module_stack[-1][0], "_is_lifting", False)
                and f.module_stack[-1][0].prefix_name]
    return "/".join(prefixes) + "/" if prefixes else None


def _current_module(frame: _Frame) -> Any:
    return frame.module_stack[-1][0] if frame.module_stack else None


def get_state(name: str, shape: Any = None, dtype: Any = jnp.float32,
              init: Callable | None = None) -> Any:
    """The state ``name`` of the current module (created by ``init(shape, dtype)`` if missing;
    custom creators/getters registered with ``state=True`` run as in Haiku).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def counter():
        ...     count = hk.get_state('count', [], jnp.int32, init=jnp.zeros)
        ...     hk.set_state('count', count + 1)
        ...     return count
        >>> f = hk.transform_with_state(counter)
        >>> params, state = f.init(None)
        >>> out, state = f.apply(params, state, None)
        >>> out.tolist(), state['~']['count'].tolist()
        (0, 1)
    """
    frame = _frame("get_state")
    _assert_jax_usage("get_state")
    bundle = _bundle(frame)
    fq_name = f"{bundle}/{name}"
    context = GetterContext(fq_name, _current_module(frame), dtype, shape, init, _lift_prefix())
    st = frame.state.get(bundle, {})
    if name in st:
        value = st[name]
    else:
        if init is None:
            raise ValueError(f"No value for {name!r} in {bundle!r}, perhaps set an init function?")
        if shape is None or dtype is None:
            raise ValueError(f"Must provide shape and dtype to initialize {name!r} in "
                             f"{bundle!r}.")
        creators = _stack("state_creator")
        if creators:
            value = _run_chain(creators, context, (shape, dtype, init),
                               lambda sh, dt, ini: ini(sh, dt))
        else:
            value = init(shape, dtype)
        if value is not DO_NOT_STORE:
            frame.state.setdefault(bundle, {})[name] = value
            frame.initial_state.setdefault(bundle, {})[name] = value
    getters = _stack("state_getter")
    if getters:
        value = _run_chain(getters, context, (value,), lambda v: v)
    return value


def set_state(name: str, value: Any) -> None:
    """Set the state ``name`` of the current module (custom setters run first).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def counter():
        ...     count = hk.get_state('count', [], jnp.int32, init=jnp.zeros)
        ...     hk.set_state('count', count + 1)
        ...     return count
        >>> f = hk.transform_with_state(counter)
        >>> params, state = f.init(None)
        >>> for _ in range(3):
        ...     _, state = f.apply(params, state, None)
        >>> state['~']['count'].tolist()
        3
    """
    frame = _frame("set_state")
    _assert_jax_usage("set_state")
    bundle = _bundle(frame)
    setters = _stack("state_setter")
    if setters:
        context = SetterContext(f"{bundle}/{name}", _current_module(frame),
                                tree_util.tree_map(lambda v: v.dtype, value),
                                tree_util.tree_map(lambda v: v.shape, value), _lift_prefix())
        value = _run_chain(setters, context, (value,), lambda v: v)
    if value is DO_NOT_STORE:
        return
    if name not in frame.initial_state.get(bundle, {}):
        frame.initial_state.setdefault(bundle, {})[name] = value
    frame.state.setdefault(bundle, {})[name] = value


def get_params() -> dict:
    """The parameters of the current transform (a copy).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def f(x):
        ...     y = hk.Linear(2)(x)
        ...     return y, {m: sorted(p) for m, p in hk.get_params().items()}
        >>> f = hk.transform(f)
        >>> _, seen = f.apply(f.init(fluxion.random.PRNGKey(0), jnp.ones((1, 3))), None, jnp.ones((1, 3)))
        >>> seen
        {'linear': ['b', 'w']}
    """
    return _copy(_frame("get_params").params)


def get_current_state() -> dict:
    """The state of the current transform (a copy).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def f():
        ...     hk.set_state("count", jnp.array(1))
        ...     return hk.get_current_state()
        >>> out, state = hk.transform_with_state(f).apply({}, {"~": {"count": jnp.array(5)}}, None)
        >>> {m: {k: int(v) for k, v in s.items()} for m, s in out.items()}
        {'~': {'count': 1}}
    """
    return _copy(_frame("get_current_state").state)


def _rng_seq(what: str) -> PRNGSequence:
    frame = _frame(what)
    _assert_jax_usage(what)
    if frame.rng is None:
        raise MissingRNGError(
            "You must pass a non-None PRNGKey to init (and to apply if you call "
            f"`hk.{what}` there)")
    return frame.rng


def next_rng_key() -> Any:
    """A fresh PRNG key from the ``rng`` given to ``init``/``apply``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda: fluxion.random.uniform(hk.next_rng_key(), (2,)))
        >>> a, b = f.apply({}, key), f.apply({}, key)
        >>> bool((a == b).all())   # the same key gives the same draws
        True
    """
    return next(_rng_seq("next_rng_key"))


def next_rng_keys(num: int) -> Any:
    """``num`` fresh keys stacked in one array.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda: hk.next_rng_keys(3))
        >>> f.apply({}, key).shape
        (3, 2)
    """
    return jnp.stack(_rng_seq("next_rng_keys").take(num))


def maybe_next_rng_key() -> Any:
    """``next_rng_key()`` or None when no rng was given.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda: hk.maybe_next_rng_key())
        >>> f.apply({}, None) is None, f.apply({}, key).shape
        (True, (2,))
    """
    frame = _frame("maybe_next_rng_key")
    return None if frame.rng is None else next(frame.rng)


def reserve_rng_keys(num: int) -> None:
    """Pre-split ``num`` keys.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> def draw():
        ...     hk.reserve_rng_keys(2)
        ...     return hk.next_rng_key()
        >>> f = hk.transform(draw)
        >>> f.apply({}, key).shape
        (2,)
    """
    _rng_seq("reserve_rng_keys").reserve(num)


def maybe_get_rng_sequence_state() -> Any:
    """The internal state of the current rng sequence, or None without an rng.

    Example:
        >>> import fluxion, fluxion_nn.haiku as hk
        >>> def f():
        ...     return hk.maybe_get_rng_sequence_state()
        >>> f = hk.transform(f)
        >>> f.apply({}, None) is None, f.apply({}, fluxion.random.PRNGKey(0)) is None  # with no key: None
        (True, False)
    """
    frame = _frame("maybe_get_rng_sequence_state")
    return None if frame.rng is None else frame.rng.internal_state


def replace_rng_sequence_state(state: Any) -> None:
    """Replace the internal state of the current rng sequence (from
    ``maybe_get_rng_sequence_state``).

    Example:
        >>> import fluxion, fluxion_nn.haiku as hk
        >>> def f():
        ...     saved = hk.maybe_get_rng_sequence_state()
        ...     first = hk.next_rng_key()
        ...     hk.replace_rng_sequence_state(saved)  # rewind the sequence
        ...     return bool((hk.next_rng_key() == first).all())
        >>> hk.transform(f).apply({}, fluxion.random.PRNGKey(0))
        True
    """
    frame = _frame("replace_rng_sequence_state")
    _assert_jax_usage("replace_rng_sequence_state")
    if frame.rng is None:
        raise MissingRNGError("replace_rng_sequence_state requires an RNG to be passed into "
                              "the transformed function")
    frame.rng.replace_internal_state(state)


class with_rng:  # noqa: N801 (Haiku's name)
    """Use ``key`` for ``next_rng_key`` inside the block.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> def draw():
        ...     with hk.with_rng(fluxion.random.PRNGKey(1)):
        ...         return hk.next_rng_key()
        >>> f = hk.without_apply_rng(hk.transform(draw))
        >>> f.apply({}).shape
        (2,)
    """

    def __init__(self, key: Any):
        self.seq = PRNGSequence(key)

    def __enter__(self) -> None:
        frame = _frame("with_rng")
        _assert_jax_usage("with_rng")
        self.old = frame.rng
        frame.rng = self.seq

    def __exit__(self, *exc: Any) -> None:
        _frame("with_rng").rng = self.old


def get_initial_state() -> dict:
    """The initial values of the current transform's state (a copy).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def f():
        ...     count = hk.get_state("count", [], init=jnp.zeros)
        ...     hk.set_state("count", count + 1)
        ...     return hk.get_initial_state()
        >>> params, state = hk.transform_with_state(f).init(None)
        >>> initial, state = hk.transform_with_state(f).apply(params, state, None)
        >>> float(initial["~"]["count"]), float(state["~"]["count"])
        (0.0, 1.0)
    """
    return _copy(_frame("get_initial_state").initial_state)


def assert_no_new_parameters() -> Any:
    """A context manager failing if the block creates parameters.

    Example: ``with hk.experimental.assert_no_new_parameters(): mod(x)``.
    """

    @contextlib.contextmanager
    def check() -> Any:
        frame = _frame("assert_no_new_parameters")
        before = {(m, n) for m, p in frame.params.items() for n in p}
        yield
        after = {(m, n) for m, p in frame.params.items() for n in p}
        diff = after - before
        if diff:
            raise AssertionError(f"New parameters were created: {sorted(diff)}")

    return check()

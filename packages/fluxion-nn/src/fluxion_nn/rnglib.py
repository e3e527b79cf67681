"""Random streams: ``Rngs`` holds named ``RngStream``s, each a key and a counter; calling a
stream folds the counter into the key (as ``flax.nnx.Rngs``, so the same seed gives the same
numbers)."""

from __future__ import annotations

import functools
from typing import Any, Callable

import fluxion.nn.initializers as _initializers
import fluxion.numpy as jnp
import fluxion.random as random
from fluxion import dtypes

from . import filterlib
from . import graph as _graph
from ._config import resolve
from .module import Module
from .pytreelib import Pytree
from .variablelib import Variable, is_array

_MISSING: Any = object()  # no node given: with_rngs is used as a decorator

__all__ = ["RngState", "RngKey", "RngCount", "RngStream", "Rngs", "reseed", "split_rngs",
           "fork_rngs", "restore_rngs", "with_rngs"]


class RngState(Variable):
    """Base Variable type of the random state (keys and counts).

    Example:
        >>> import fluxion_nn as nnx
        >>> flat = nnx.to_flat_state(nnx.state(nnx.Rngs(0)))
        >>> [(path, type(v).__name__, isinstance(v, nnx.RngState)) for path, v in flat]
        [(('default', 'count'), 'RngCount', True), (('default', 'key'), 'RngKey', True)]
    """


class RngKey(RngState):
    """A stream's key.

    Example:
        >>> import fluxion_nn as nnx
        >>> keys = nnx.state(nnx.Rngs(0), nnx.RngKey)
        >>> [(path, type(v).__name__) for path, v in nnx.to_flat_state(keys)]
        [(('default', 'key'), 'RngKey')]
    """


class RngCount(RngState):
    """A stream's call counter (uint32).

    Example:
        >>> import fluxion_nn as nnx
        >>> rngs = nnx.Rngs(0)
        >>> _ = rngs(), rngs()
        >>> [(path, int(v.value)) for path, v in nnx.to_flat_state(nnx.state(rngs, nnx.RngCount))]
        [(('default', 'count'), 2)]
    """


def _as_key(key: Any) -> Any:
    if isinstance(key, int):
        return random.key(key)
    if is_array(key) and key.dtype == jnp.uint32:
        return random.wrap_key_data(key)
    if is_array(key) and dtypes.issubdtype(key.dtype, dtypes.prng_key):
        return key
    raise ValueError(f"Rngs: invalid rng value {key!r}; expected an int seed or a typed PRNG key")


class RngStream(Pytree):
    """One random stream: ``stream()`` returns ``fold_in(key, count)`` and increments count.

    Example:
        >>> import fluxion_nn as nnx
        >>> rngs = nnx.Rngs(params=0)
        >>> stream = rngs.params
        >>> isinstance(stream, nnx.RngStream), stream.tag, int(stream.count.value)
        (True, 'params', 0)
        >>> _ = stream()  # each call folds in the count
        >>> int(stream.count.value)
        1
    """

    def __init__(self, key: Any, *, tag: str):
        key = _as_key(key)
        self.tag = tag
        self.key = RngKey(key, tag=tag)
        self.count = RngCount(jnp.zeros(key.shape, dtype=jnp.uint32), tag=tag)

    def __call__(self) -> Any:
        self.count._check_can_update()
        key = random.fold_in(self.key.value, self.count.value)
        self.count.value = self.count.value + 1
        return key

    def split(self, k: int | tuple[int, ...]) -> "RngStream":
        """A new stream whose key is ``split(self(), k)`` (for vmapped/scanned modules)."""
        return type(self)(random.split(self(), k), tag=self.tag)

    def fork(self, *, split: Any = None) -> "RngStream":
        """A new independent stream keyed by ``self()``."""
        key = self()
        if split is not None:
            key = random.split(key, split)
        return type(self)(key, tag=self.tag)

    def broadcast(self, k: int | tuple[int, ...]) -> "RngStream":
        """A new stream whose key ``self()`` is broadcast to shape ``k``."""
        shape = (k,) if isinstance(k, int) else tuple(k)
        key = self()
        return type(self)(jnp.broadcast_to(key, shape + key.shape), tag=self.tag)

    def __repr__(self) -> str:
        return f"RngStream(tag={self.tag!r}, count={self.count.value})"


def _keyed(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return fn(self(), *args, **kwargs)

    return method


_RANDOM_METHODS = [
    "bits", "uniform", "randint", "permutation", "choice", "normal", "multivariate_normal",
    "truncated_normal", "bernoulli", "beta", "cauchy", "dirichlet", "exponential", "gamma",
    "loggamma", "poisson", "gumbel", "categorical", "laplace", "logistic", "pareto", "t",
    "chisquare", "f", "rademacher", "maxwell", "double_sided_maxwell", "weibull_min",
    "orthogonal", "generalized_normal", "ball", "rayleigh", "wald", "geometric", "triangular",
    "lognormal", "binomial",
]
for _name in _RANDOM_METHODS:
    if hasattr(random, _name):
        setattr(RngStream, _name, _keyed(getattr(random, _name)))


class Rngs(Pytree):
    """Named random streams. ``Rngs(0)`` makes a ``default`` stream; ``Rngs(params=0,
    dropout=1)`` named ones. ``rngs.params()`` draws from ``params`` (falling back to
    ``default``), ``rngs()`` from ``default``. Keys and counts are Variables, so streams advance
    inside ``nnx.jit`` and the updates are kept.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> import fluxion
        >>> rngs = nnx.Rngs(0, dropout=1)
        >>> fluxion.random.normal(rngs.params(), (3,)).shape
        (3,)
        >>> rngs.dropout.count.value.tolist(), rngs.params.count.value.tolist()
        (0, 1)
    """

    def __init__(self, default: Any = None, **rngs: Any):
        if default is not None:
            if isinstance(default, dict):
                rngs = {**default, **rngs}
            else:
                rngs["default"] = default
        for tag, key in rngs.items():
            if isinstance(key, RngStream):
                key = key.key.value
            setattr(self, tag, RngStream(key, tag=tag))

    def _get_stream(self, name: str, error: type) -> RngStream:
        d = vars(self)
        if name in d:
            return d[name]
        if "default" in d:
            return d["default"]
        raise error(f"No RngStream named {name!r} found in Rngs.")

    def __getattr__(self, name: str) -> RngStream:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._get_stream(name, AttributeError)

    def __getitem__(self, name: str) -> RngStream:
        return self._get_stream(name, KeyError)

    def __call__(self) -> Any:
        return self.default()

    def __iter__(self):
        return (k for k, v in vars(self).items() if isinstance(v, RngStream))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, name: Any) -> bool:
        return name in vars(self)

    def items(self):
        """``(name, stream)`` pairs."""
        return ((k, v) for k, v in vars(self).items() if isinstance(v, RngStream))

    def _per_stream(self, spec: Any) -> dict:
        if spec is None:
            return {}
        if not isinstance(spec, dict):
            spec = {...: spec}
        return {filterlib.to_predicate(k): v for k, v in spec.items()}

    def split(self, k: Any) -> "Rngs":
        """A new Rngs whose streams have keys of shape ``k`` (a dict maps filters to shapes)."""
        preds = self._per_stream(k)
        out = {}
        for name, stream in self.items():
            for pred, n in preds.items():
                if pred((), stream.key):
                    out[name] = stream if n is None else stream.split(n)
                    break
            else:  # not selected: a new stream on the same key (flax)
                out[name] = stream
        return Rngs(**out)

    def broadcast(self, k: Any) -> "Rngs":
        """A new Rngs whose selected streams have one new key broadcast to shape ``k`` (a dict
        maps filters to shapes or None; None, and a stream no filter selects, keep their key).

        Example: ``nnx.Rngs(0).broadcast(5).default.key.shape`` is ``(5,)``.
        """
        preds = self._per_stream(k)
        out = {}
        for name, stream in self.items():
            for pred, n in preds.items():
                if pred((), stream.key):
                    out[name] = stream if n is None else stream.broadcast(n)
                    break
            else:  # not selected (or None): a new stream on the same key (flax)
                out[name] = stream
        return Rngs(**out)

    def fork(self, *, split: Any = None) -> "Rngs":
        """A new Rngs with independent streams."""
        if split is not None:
            return self.split(split)
        return Rngs(**{name: stream.fork() for name, stream in self.items()})

    def __repr__(self) -> str:
        return f"Rngs({', '.join(self)})"


for _name in _RANDOM_METHODS:
    if hasattr(random, _name):
        setattr(Rngs, _name, _keyed(getattr(random, _name)))


def _keyless_initializer(constructor: Callable) -> Callable:
    # rngs.lecun_normal(*a)(shape, dtype): the initializer drawing its key from the stream
    @functools.wraps(constructor)
    def method(self: Any, *args: Any, **kwargs: Any) -> Callable:
        init = constructor(*args, **kwargs)

        def keyless(*init_args: Any, **init_kwargs: Any) -> Any:
            return init(self(), *init_args, **init_kwargs)

        return keyless

    return method


# flax's initializer helpers (those whose names do not clash with fluxion.random's functions)
_INITIALIZER_METHODS = ["delta_orthogonal", "glorot_normal", "glorot_uniform", "he_normal",
                        "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal",
                        "lecun_uniform", "variance_scaling", "xavier_normal", "xavier_uniform"]
for _name in _INITIALIZER_METHODS:
    if hasattr(_initializers, _name):
        setattr(RngStream, _name, _keyless_initializer(getattr(_initializers, _name)))
        setattr(Rngs, _name, _keyless_initializer(getattr(_initializers, _name)))


def reseed(node: Any, /, *, graph: bool | None = None, policy: str = "scalars_only",
           **stream_keys: Any) -> None:
    """Reset the named streams found anywhere in ``node`` to new keys (counts back to 0).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> rngs = nnx.Rngs(params=0, dropout=1)
        >>> _ = rngs.dropout()
        >>> nnx.reseed(rngs, dropout=5)
        >>> rngs.dropout.count.value.tolist()
        0
    """
    # as flax: each reseeded stream takes the next key of a fresh Rngs(**stream_keys) stream
    fresh = {tag: RngStream(_as_key(k), tag=tag) for tag, k in stream_keys.items()}
    for _, obj in _graph.iter_graph(node, graph=graph):
        if isinstance(obj, RngStream) and obj.tag in stream_keys:
            key = fresh[obj.tag]()
            if obj.key.value.shape and policy == "scalars_only" and not key.shape:
                key = random.split(key, obj.key.value.shape)
            obj.key.value = key
            obj.count.value = jnp.zeros(key.shape, dtype=jnp.uint32)


def _in_place(graph: bool | None, graph_updates: bool | None) -> tuple[bool, bool]:

    g = resolve(graph, _graph.set_graph_mode)
    return g, bool(g and resolve(graph_updates, _graph.set_graph_updates))


def _fork_rules(split: Any) -> list:
    if split is None:
        split = {...: None}
    elif isinstance(split, (int, tuple)):
        split = {...: split}
    return [(filterlib.to_predicate(k), v) for k, v in split.items()]


def fork_rngs(node: Any = None, /, *, split: Any = None, graph: bool | None = None,
              graph_updates: bool | None = None) -> Any:
    """Fork the streams of ``node`` (``split``: a shape for all, or ``{filter: shape or None}``,
    first match wins). In graph mode with graph updates (the defaults) the streams change in
    place and backups for ``restore_rngs`` are returned (also a context manager); otherwise a
    copy of ``node`` with forked streams is returned and ``node`` keeps its keys. Without
    ``node``, a decorator forking a function's arguments.

    Example:
        >>> import fluxion_nn as nnx
        >>> rngs = nnx.Rngs(0)
        >>> with nnx.fork_rngs(rngs, split=3):
        ...     print(rngs.default.key.value.shape)
        (3,)
        >>> rngs.default.key.value.shape
        ()
    """
    graph, in_place = _in_place(graph, graph_updates)
    rules = _fork_rules(split)
    if node is None:
        def decorator(f: Callable) -> Callable:
            @functools.wraps(f)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                if in_place:
                    with fork_rngs((args, kwargs), split=split, graph=True, graph_updates=True):
                        return f(*args, **kwargs)
                args, kwargs = fork_rngs((args, kwargs), split=split, graph=graph,
                                         graph_updates=False)
                return f(*args, **kwargs)

            return wrapper

        return decorator

    def match(path: tuple, stream: Any) -> Any:
        for pred, n in rules:
            if pred((*path, "key"), stream.key) and pred((*path, "count"), stream.count):
                return (n,)
        return None

    if not in_place:
        def fork_one(path: tuple, v: Any) -> Any:
            if isinstance(v, RngStream) and (m := match(path, v)) is not None:
                return v.fork(split=m[0])
            return v

        return _graph.recursive_map(fork_one, node, graph=graph)
    backups = _SplitBackups()
    for path, obj in _graph.iter_graph(node):
        if isinstance(obj, RngStream) and (m := match(path, obj)) is not None:
            new = obj.fork(split=m[0])
            backups.append((obj, obj.key.value, obj.count.value))
            obj.key.value = new.key.value
            obj.count.value = new.count.value
    return backups


def restore_rngs(backups: list, /) -> None:
    """Undo ``fork_rngs``/``split_rngs``.

    Example:
        >>> import fluxion_nn as nnx
        >>> rngs = nnx.Rngs(0)
        >>> backup = nnx.split_rngs(rngs, splits=2)
        >>> rngs.default.key.value.shape
        (2,)
        >>> nnx.restore_rngs(backup)
        >>> rngs.default.key.value.shape
        ()
    """
    for stream, key, count in backups:
        stream.key.value = key
        stream.count.value = count


class _SplitBackups(list):
    def __enter__(self) -> "_SplitBackups":
        return self

    def __exit__(self, *args: Any) -> None:
        restore_rngs(self)


def split_rngs(node: Any = None, /, *, splits: Any, only: Any = ..., squeeze: bool = False,
               graph: bool | None = None, graph_updates: bool | None = None) -> Any:
    """Split the keys of the streams (matching ``only``) in ``node`` into ``splits`` keys, in
    place; use as a context manager to restore them, or as a decorator of a function whose
    arguments hold Rngs (for ``nnx.vmap``/``nnx.scan`` over module creation).

    Example::

        @nnx.split_rngs(splits=4)
        @nnx.vmap
        def make(rngs):
            return nnx.Linear(2, 2, rngs=rngs)

    Example:
        >>> import fluxion_nn as nnx
        >>> rngs = nnx.Rngs(0)
        >>> with nnx.split_rngs(rngs, splits=4):
        ...     print(rngs.default.key.value.shape)
        (4,)
        >>> rngs.default.key.value.shape
        ()
    """
    pred = filterlib.to_predicate(only)
    graph, in_place = _in_place(graph, graph_updates)

    def selected(path: tuple, obj: Any) -> bool:
        return (isinstance(obj, RngStream) and pred((*path, "key"), obj.key)
                and pred((*path, "count"), obj.count))

    def new_key(obj: Any, drawn: Any = None) -> tuple:
        key = random.split(obj() if drawn is None else drawn, splits)
        if squeeze:
            key = key[0]
        counts = obj.count.value.shape if squeeze else (
            ((splits,) if isinstance(splits, int) else tuple(splits)) + tuple(obj.count.value.shape))
        return key, jnp.zeros(counts, dtype=jnp.uint32)

    def do_split(target: Any) -> _SplitBackups:
        backups = _SplitBackups()
        for path, obj in _graph.iter_graph(target):
            if selected(path, obj):
                drawn = obj()  # the draw advances the stream; the backup keeps that advance
                backups.append((obj, obj.key.value, obj.count.value))
                obj.key.value, obj.count.value = new_key(obj, drawn)
        return backups

    def split_copy(target: Any) -> Any:
        def one(path: tuple, obj: Any) -> Any:
            if selected(path, obj):
                key, count = new_key(obj)
                obj.key = RngKey(key, tag=obj.tag)
                obj.count = RngCount(count, tag=obj.tag)
            return obj

        return _graph.recursive_map(one, target, graph=graph)

    if node is not None:
        return do_split(node) if in_place else split_copy(node)

    def decorator(f: Callable) -> Callable:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not in_place:
                args, kwargs = split_copy((args, kwargs))
                return f(*args, **kwargs)
            targets = [a for a in (*args, *kwargs.values()) if isinstance(a, (Rngs, Module, RngStream))]
            backups = [do_split(t) for t in targets]
            try:
                return f(*args, **kwargs)
            finally:
                for b in backups:
                    restore_rngs(b)

        return wrapper

    return decorator


def _rule_map(spec: Any) -> list:
    if spec is None:
        return []
    if isinstance(spec, (int, tuple)):
        spec = {...: spec}
    return [(k, filterlib.to_predicate(k), v) for k, v in spec.items()]


def with_rngs(node: Any = _MISSING, /, *, split: Any = None, fork: Any = None,
              broadcast: Any = None, only: Any = True, graph: bool | None = None,
              graph_updates: bool | None = None) -> Any:
    """A copy of ``node`` whose ``RngStream``s are replaced by split, broadcast or forked copies
    (the original streams advance by one draw each). ``split``/``broadcast``: a shape for every
    stream or ``{filter: shape}`` (first match wins); ``fork``: a filter or filters selecting the
    remaining streams to fork; ``only`` limits the streams considered. Without ``node``, a
    decorator applying it to a function's arguments.

    Example::

        >>> import fluxion_nn as nnx
        >>> rngs = nnx.with_rngs(nnx.Rngs(params=0, dropout=1), split={"params": 4},
        ...                      fork=..., graph=False)
        >>> rngs.params.key.shape, rngs.dropout.key.shape
        ((4,), ())
    """

    graph = resolve(graph, _graph.set_graph_mode)
    graph_updates = resolve(graph_updates, _graph.set_graph_updates)
    if graph and graph_updates:
        raise NotImplementedError("graph=True and graph_updates=True is not supported for `with_rngs`")
    if node is _MISSING:
        def decorator(f: Callable) -> Callable:
            @functools.wraps(f)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                args, kwargs = with_rngs((args, kwargs), split=split, fork=fork,
                                         broadcast=broadcast, only=only, graph=graph,
                                         graph_updates=False)
                return f(*args, **kwargs)

            return wrapper

        return decorator
    splits, broadcasts = _rule_map(split), _rule_map(broadcast)
    if fork is None:
        forks = []
    elif isinstance(fork, str) or not isinstance(fork, (list, tuple)):
        forks = [(fork, filterlib.to_predicate(fork))]
    else:
        forks = [(f, filterlib.to_predicate(f)) for f in fork]
    only_pred = filterlib.to_predicate(only)

    def update(path: tuple, val: Any) -> Any:
        if not (isinstance(val, RngStream) and only_pred(path, val)):
            return val
        found: dict[str, tuple] = {}
        for flt, pred, n in splits:
            if pred(path, val):
                found["split"] = (flt, n)
                break
        for flt, pred, n in broadcasts:
            if pred(path, val):
                found["broadcast"] = (flt, n)
                break
        for flt, pred in forks:
            if pred(path, val):
                found["fork"] = (flt,)
                break
        if len(found) > 1:
            specific = [r for r, info in found.items() if info[0] not in (..., True)]
            if len(specific) > 1:
                rules = "\n".join(f"  - {r} matches filter {info[0]!r}" for r, info in found.items())
                raise ValueError(f"RngStream at path {path} matches multiple rules:\n{rules}")
        if "split" in found:
            return val.split(found["split"][1])
        if "broadcast" in found:
            return val.broadcast(found["broadcast"][1])
        if "fork" in found:
            return val.fork()
        return val

    return _graph.recursive_map(update, node, graph=graph)

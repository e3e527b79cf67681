"""``transform`` and its variants: a function that builds modules and calls
``get_parameter``/``get_state``/``next_rng_key`` becomes a pure ``(init, apply)`` pair
(each call runs the function inside a fresh frame of ``_base``)."""

from __future__ import annotations

import inspect
from typing import Any, Callable, NamedTuple

import fluxion
import fluxion.tree_util as tree_util

from ._base import NonEmptyStateError, _copy, _Frame, _to_seq
from ._src.typing import Params, State

__all__ = ["Transformed", "TransformedWithState", "transform", "transform_with_state",
           "without_apply_rng", "without_state", "with_empty_state", "get_original_fn"]


class Transformed(NamedTuple):
    """``init(rng, *args) -> params`` and ``apply(params, rng, *args) -> out``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.transform(lambda x: hk.Linear(2)(x))
        >>> isinstance(f, hk.Transformed), f._fields
        (True, ('init', 'apply'))
    """

    init: Callable
    apply: Callable


class TransformedWithState(NamedTuple):
    """``init(rng, *args) -> (params, state)``; ``apply(params, state, rng, *args) -> (out, state)``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.transform_with_state(lambda x: hk.BatchNorm(True, True, 0.9)(x, is_training=True))
        >>> isinstance(f, hk.TransformedWithState), f._fields
        (True, ('init', 'apply'))
    """

    init: Callable
    apply: Callable


def _tie_in_original_fn(f: Callable, init_fn: Callable, apply_fn: Callable) -> None:
    # as Haiku: init/apply know the function they came from (``_original_fn``), without
    # functools.wraps (a ``__wrapped__`` would give them ``f``'s signature)
    if isinstance(f, (Transformed, TransformedWithState)):
        f = getattr(f.init, "_original_fn", f)
    for fn in (init_fn, apply_fn):
        fn._original_fn = f  # type: ignore[attr-defined]  # (named init_fn/apply_fn, as Haiku's)


# The signatures Haiku gives init and apply: the leading arguments it adds, annotated, then the
# transformed function's own parameters (``inspect.signature(f.apply)`` shows what to pass).
_KEY_TYPE = fluxion.Array | int | None


def _own_parameters(f: Callable) -> tuple[list[inspect.Parameter], Any]:
    """``f``'s parameters and return annotation (none when it has no readable signature)."""
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        return [inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL),
                inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)], Any
    ret = sig.return_annotation
    return list(sig.parameters.values()), (Any if ret is inspect.Signature.empty else ret)


def _signature(leading: list[tuple[str, Any]], rest: list[inspect.Parameter],
               ret: Any) -> inspect.Signature:
    first = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=a)
             for n, a in leading]
    return inspect.Signature(first + rest, return_annotation=ret, __validate_parameters__=False)


def _replace_leading(fn: Callable, n: int, leading: list[tuple[str, Any]]) -> inspect.Signature:
    """``fn``'s signature with its first ``n`` parameters replaced by ``leading``."""
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    k = 0
    while k < n and k < len(params) and params[k].kind in positional:
        k += 1
    return _signature(leading, params[k:], sig.return_annotation)


def get_original_fn(f: Any) -> Callable:
    """The function a ``Transformed``/``TransformedWithState`` (or its ``init``/``apply``)
    was made from.

    Example: ``hk.experimental.get_original_fn(hk.transform(forward)) is forward``.
    """
    if isinstance(f, (Transformed, TransformedWithState)):
        f = f.init
    return f._original_fn


def _rng_seq(rng: Any, what: str, position: str, signature: str) -> Any:
    try:
        return _to_seq(rng)
    except Exception as e:  # as Haiku: say where the key goes
        raise ValueError(f"{what} must be called with an RNG as the {position} argument, the "
                         f"required signature is: `{signature}`. The object was of type "
                         f"{type(rng)}: {rng}") from e


def transform_with_state(f: Callable) -> TransformedWithState:
    """Turn ``f`` (which may create modules, parameters and state) into a pure
    ``(init, apply)`` pair that threads parameters and state explicitly.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> def forward(x, is_training):
        ...     return hk.BatchNorm(True, True, 0.9)(x, is_training)
        >>> f = hk.transform_with_state(forward)
        >>> x = jnp.array([[1.0, 2.0], [3.0, 6.0]])
        >>> params, state = f.init(key, x, is_training=True)
        >>> y, state = f.apply(params, state, None, x, is_training=True)
        >>> y.round(4).tolist()
        [[-1.0, -1.0], [1.0, 1.0]]
        >>> state['batch_norm/~/mean_ema']['average'].round(4).tolist()
        [[2.0, 4.0]]
    """

    def init_fn(rng: Any, *args: Any, **kwargs: Any) -> tuple[dict, dict]:
        frame = _Frame({}, {}, _rng_seq(rng, "Init", "first", "init(rng, *a, **k)"), init=True,
                       params_frozen=False)
        with frame:
            f(*args, **kwargs)
        return frame.params, frame.initial_state

    def apply_fn(params: Any, state: Any, rng: Any, *args: Any, **kwargs: Any) -> tuple[Any, dict]:
        frame = _Frame(_copy(params or {}), _copy(state or {}), _to_seq(rng), init=False,
                       params_frozen=True)
        frame.initial_state = _copy(state or {})  # as Haiku: the state apply was given
        with frame:
            out = f(*args, **kwargs)
        return out, frame.state

    rest, ret = _own_parameters(f)
    init_fn.__signature__ = _signature(  # type: ignore[attr-defined]
        [("rng", _KEY_TYPE)], rest, tuple[Params, State])
    apply_fn.__signature__ = _signature(  # type: ignore[attr-defined]
        [("params", Params | None), ("state", State | None), ("rng", _KEY_TYPE)], rest,
        tuple[ret, State])
    _tie_in_original_fn(f, init_fn, apply_fn)
    return TransformedWithState(init_fn, apply_fn)


def transform(f: Callable, *, apply_rng: bool = True) -> Transformed:
    """Turn ``f`` into ``Transformed(init, apply)``; ``f`` may not use state (see
    ``transform_with_state``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> def forward(x):
        ...     return hk.nets.MLP([8, 2])(x)
        >>> f = hk.transform(forward)
        >>> x = jnp.ones((4, 3))
        >>> params = f.init(key, x)
        >>> {name: [p.shape for p in v.values()] for name, v in sorted(params.items())}
        {'mlp/~/linear_0': [(3, 8), (8,)], 'mlp/~/linear_1': [(8, 2), (2,)]}
        >>> f.apply(params, key, x).shape
        (4, 2)
    """
    tws = transform_with_state(f)

    def init_fn(rng: Any, *args: Any, **kwargs: Any) -> dict:
        params, state = tws.init(rng, *args, **kwargs)
        if state:
            raise NonEmptyStateError(
                "If your transformed function uses `hk.{get,set}_state` then use "
                "`hk.transform_with_state`. (hk.transform: the function created state "
                f"{sorted(state)})")
        return params

    def apply_fn(params: Any, rng: Any, *args: Any, **kwargs: Any) -> Any:
        out, state = tws.apply(params, {}, rng, *args, **kwargs)
        if state:
            raise NonEmptyStateError(
                "If your transformed function uses `hk.{get,set}_state` then use "
                "`hk.transform_with_state`. (hk.transform: the function set state "
                f"{sorted(state)})")
        return out

    rest, ret = _own_parameters(f)
    init_fn.__signature__ = _signature(  # type: ignore[attr-defined]
        [("rng", _KEY_TYPE)], rest, Params)
    apply_fn.__signature__ = _signature(  # type: ignore[attr-defined]
        [("params", Params | None), ("rng", _KEY_TYPE)], rest, ret)
    _tie_in_original_fn(f, init_fn, apply_fn)
    t = Transformed(init_fn, apply_fn)
    return t if apply_rng else without_apply_rng(t)


def without_apply_rng(f: Any) -> Any:
    """Drop the ``rng`` argument of ``apply`` (for functions that draw no random numbers).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.without_apply_rng(hk.transform(lambda x: hk.Linear(2)(x)))
        >>> params = f.init(key, jnp.ones((1, 3)))
        >>> f.apply(params, jnp.ones((1, 3))).shape   # no rng argument
        (1, 2)
    """
    multi = type(f).__name__ in ("MultiTransformed", "MultiTransformedWithState")
    if multi:
        # a tree of apply functions: drop the rng argument of each
        with_state = type(f).__name__ == "MultiTransformedWithState"

        def drop(fn: Callable) -> Callable:
            if with_state:
                return lambda params, state, *a, **k: fn(params, state, None, *a, **k)
            return lambda params, *a, **k: fn(params, None, *a, **k)

        return type(f)(f.init, tree_util.tree_map(drop, f.apply))
    if isinstance(f, TransformedWithState):
        def apply_fn(params: Any, state: Any, *args: Any, **kwargs: Any) -> Any:
            return f.apply(params, state, None, *args, **kwargs)

        apply_fn.__signature__ = _replace_leading(  # type: ignore[attr-defined]
            f.apply, 3, [("params", Params | None), ("state", State | None)])
        _tie_in_original_fn(f, f.init, apply_fn)
        return TransformedWithState(f.init, apply_fn)

    def apply_fn(params: Any, *args: Any, **kwargs: Any) -> Any:
        return f.apply(params, None, *args, **kwargs)

    apply_fn.__signature__ = _replace_leading(  # type: ignore[attr-defined]
        f.apply, 2, [("params", Params | None)])
    _tie_in_original_fn(f, f.init, apply_fn)
    return Transformed(f.init, apply_fn)


def without_state(f: TransformedWithState) -> Transformed:
    """A ``Transformed`` from a ``TransformedWithState`` whose state is empty.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.without_state(hk.transform_with_state(lambda x: hk.Linear(2)(x)))
        >>> params = f.init(fluxion.random.PRNGKey(0), jnp.ones((1, 3)))
        >>> f.apply(params, None, jnp.ones((1, 3))).shape  # apply returns only the output
        (1, 2)
    """
    def init_fn(*args: Any, **kwargs: Any) -> Any:
        params, state = f.init(*args, **kwargs)
        if state:
            raise ValueError("hk.without_state: the function has state; if your transformed function "
                             "uses `hk.{get,set}_state` then use `hk.transform_with_state`")
        return params

    def apply_fn(params: Any, *args: Any, **kwargs: Any) -> Any:
        out, state = f.apply(params, {}, *args, **kwargs)
        if state:
            raise ValueError("hk.without_state: the function has state; if your transformed function "
                             "uses `hk.{get,set}_state` then use `hk.transform_with_state`")
        return out

    _tie_in_original_fn(f, init_fn, apply_fn)
    return Transformed(init_fn, apply_fn)


def with_empty_state(f: Transformed) -> TransformedWithState:
    """A ``TransformedWithState`` (empty state) from a ``Transformed``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.with_empty_state(hk.transform(lambda x: hk.Linear(2)(x)))
        >>> params, state = f.init(fluxion.random.PRNGKey(0), jnp.ones((1, 3)))
        >>> out, state = f.apply(params, state, None, jnp.ones((1, 3)))
        >>> state, out.shape
        ({}, (1, 2))
    """
    def init_fn(*args: Any, **kwargs: Any) -> Any:
        return f.init(*args, **kwargs), {}

    def apply_fn(params: Any, state: Any, *args: Any, **kwargs: Any) -> Any:
        return f.apply(params, *args, **kwargs), state

    _tie_in_original_fn(f, init_fn, apply_fn)
    return TransformedWithState(init_fn, apply_fn)

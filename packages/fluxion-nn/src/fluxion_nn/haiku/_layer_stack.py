"""``hk.layer_stack``: apply a function of Haiku modules ``num_layers`` times with a
``lax.scan``, its parameters (and state) stacked along a new leading axis of size
``num_layers`` (one compiled layer body instead of ``num_layers`` copies)."""

from __future__ import annotations

import collections
import functools
import inspect
from typing import Any, Callable, Protocol

import fluxion
import fluxion.numpy as jnp
import fluxion.random as random
from fluxion import lax

from . import _base, _lift
from ._transform import transform_with_state

__all__ = ["layer_stack", "LayerStackTransparencyMapping"]

LayerStackCarry = collections.namedtuple("LayerStackCarry", ["x"])
LayerStackScanned = collections.namedtuple("LayerStackScanned",
                                           ["params", "rng", "state", "args_ys"])


class LayerStackTransparencyMapping(Protocol):
    """How the stacked modules' names map to per-layer names (``transparent=True``):
    ``stacked_to_flat(name, i)`` and its inverse ``flat_to_stacked(name) -> (name, i) | None``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> class Suffix(hk.LayerStackTransparencyMapping):  # linear <-> linear_0, linear_1: unrolled names
        ...     def stacked_to_flat(self, stacked_module_name, scan_idx):
        ...         return stacked_module_name.replace("linear", f"linear_{scan_idx}")
        ...     def flat_to_stacked(self, unstacked_module_name):
        ...         name, _, idx = unstacked_module_name.rpartition("_")
        ...         return name, int(idx)
        >>> def f(x):
        ...     stack = hk.layer_stack(2, transparent=True, transparency_map=Suffix())
        ...     return stack(lambda x: hk.Linear(3)(x))(x)
        >>> f = hk.transform(f)
        >>> params = f.init(fluxion.random.PRNGKey(0), jnp.ones((1, 3)))
        >>> sorted(params), f.apply(params, None, jnp.ones((1, 3))).shape
        (['linear_0', 'linear_1'], (1, 3))
    """

    def stacked_to_flat(self, stacked_module_name: str, scan_idx: int) -> str: ...

    def flat_to_stacked(self, unstacked_module_name: str) -> tuple[str, int] | None: ...


def _check_no_varargs(f: Callable) -> None:
    params = list(inspect.signature(f).parameters.values())
    if params and params[0].kind == inspect.Parameter.VAR_POSITIONAL:
        raise ValueError("The function `f` should not have any `varargs` (that is *args) "
                         "argument. Instead, it should only use explicit positional arguments "
                         f"(hk.layer_stack: {getattr(f, '__name__', f)!r})")


def _split(stacked: dict, n: int, mapping: LayerStackTransparencyMapping) -> dict:
    out: dict = {}
    for mod, values in stacked.items():
        for i in range(n):
            flat = mapping.stacked_to_flat(mod, i)
            if flat in out:
                raise ValueError(f"Found conflicting unstacked module name for {mod} at {flat}.")
            out[flat] = {k: v[i] for k, v in values.items()}
    return out


def _stack(flat: dict, n: int, mapping: LayerStackTransparencyMapping) -> dict:
    layers: list = [{} for _ in range(n)]
    for mod, values in flat.items():
        found = mapping.flat_to_stacked(mod)
        if found is None:
            continue
        name, i = found
        target = layers[i].setdefault(name, {})
        for k, v in values.items():
            if k in target:
                raise ValueError(f"Found conflicting values for param {name}/{k} at index {i}.")
            target[k] = v
    return fluxion.tree.map(lambda *xs: jnp.stack(xs, axis=0), *layers)


class _LayerStack:
    def __init__(self, body: Callable, count: int, unroll: int, pass_reverse: bool,
                 mapping: LayerStackTransparencyMapping | None, name: str):
        self._body = body  # body(x, *ys, **kw) -> (x, z)
        self._count = count
        self._unroll = unroll
        self._pass_reverse = pass_reverse
        self._mapping = mapping
        self._name = name

    def __call__(self, x: Any, *args_ys: Any, reverse: bool = False) -> tuple[Any, Any]:
        count = self._count
        init_fn, apply_fn = transform_with_state(self._body)

        def per_layer_init(carry: Any, ys: Any) -> Any:
            c, rng = carry
            if rng is not None:
                rng, next_rng, apply_rng = random.split(rng, 3)
            else:
                next_rng = apply_rng = None
            params, state = init_fn(rng, c, *ys)
            (c, _), state = apply_fn(params, state, apply_rng, c, *ys)
            return (c, next_rng), (params, state)

        def scanned_init(x: Any, rng: Any) -> tuple[dict, dict]:
            _, (params, state) = lax.scan(per_layer_init, (x, rng), args_ys, length=count)
            if self._mapping is not None:
                return (_split(params, count, self._mapping),
                        _split(state, count, self._mapping))
            return params, state

        rng = _base.maybe_next_rng_key()
        if self._mapping is not None:
            params_and_state, updater = _lift.transparent_lift_with_state(scanned_init,
                                                                         allow_reuse=True)
        else:
            params_and_state, updater = _lift.lift_with_state(scanned_init, allow_reuse=True,
                                                              name=self._name)
        params, state = params_and_state(x, rng)

        def layer(carry: LayerStackCarry, scanned: LayerStackScanned) -> Any:
            kwargs = {"reverse": reverse} if self._pass_reverse else {}
            (out, z), new_state = apply_fn(scanned.params, scanned.state, scanned.rng, carry.x,
                                           *scanned.args_ys, **kwargs)
            return LayerStackCarry(out), (z, new_state)

        key = _base.maybe_next_rng_key()
        rngs = random.split(key, count) if key is not None else None
        if self._mapping is not None:
            params = _stack(params, count, self._mapping)
            state = _stack(state, count, self._mapping)
        carry, (zs, states) = lax.scan(layer, LayerStackCarry(x),
                                       LayerStackScanned(params, rngs, state, args_ys),
                                       length=count, unroll=self._unroll, reverse=reverse)
        updater.update(states)
        return carry.x, zs


def layer_stack(num_layers: int, with_per_layer_inputs: bool = False, unroll: int = 1,
                pass_reverse_to_layer_fn: bool = False, transparent: bool = False,
                transparency_map: LayerStackTransparencyMapping | None = None,
                name: str | None = None) -> Callable[[Callable], Callable]:
    """Decorator: the decorated function (of Haiku modules) runs ``num_layers`` times in a
    ``lax.scan``, each layer with its own parameters, stacked along a leading axis (under
    ``name``, default ``__layer_stack_no_per_layer``). Without per-layer inputs ``f(*xs)`` maps
    its arguments to outputs of the same structure; with ``with_per_layer_inputs=True``,
    ``f(x, *ys) -> (x, z)`` also gets slice ``i`` of each ``ys`` and the stack returns
    ``(x, zs)``. ``transparent=True`` (with a ``transparency_map``) keeps per-layer parameter
    names instead of stacked ones.

    Example::

        @hk.layer_stack(4)
        def block(x):
            return jax.nn.relu(hk.Linear(8)(x))

        y = block(x)   # params: "__layer_stack_no_per_layer/linear" with w of shape [4, 8, 8]

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def f(x):
        ...     @hk.layer_stack(3)  # three Linear layers with stacked parameters, run with a scan
        ...     def layer(x):
        ...         return jnp.tanh(hk.Linear(4)(x))
        ...     return layer(x)
        >>> f = hk.transform(f)
        >>> x = jnp.ones((2, 4))
        >>> params = f.init(fluxion.random.PRNGKey(0), x)
        >>> {name: p["w"].shape for name, p in params.items()}, f.apply(params, None, x).shape
        ({'__layer_stack_no_per_layer/linear': (3, 4, 4)}, (2, 4))
    """
    if transparent and transparency_map is None:
        raise ValueError("transparency_map must be provided with transparent=True.")
    if not name:
        name = ("__layer_stack_with_per_layer" if with_per_layer_inputs
                else "__layer_stack_no_per_layer")
    mapping = transparency_map if transparent or transparency_map is not None else None

    def iterate(f: Callable) -> Callable:
        if with_per_layer_inputs:
            @functools.wraps(f)
            def wrapped(x: Any, *args: Any, **kwargs: Any) -> Any:
                for ys in fluxion.tree.leaves(args):
                    assert ys.shape[0] == num_layers, f"{ys.shape[0]} != {num_layers}"
                stack = _LayerStack(f, num_layers, unroll, pass_reverse_to_layer_fn, mapping,
                                    name)
                return stack(x, *args, **kwargs)

            return wrapped

        _check_no_varargs(f)

        def body(xs: tuple, **kwargs: Any) -> tuple[tuple, None]:
            out = f(*xs, **kwargs)
            return (out if len(xs) != 1 else (out,)), None

        @functools.wraps(f)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            stack = _LayerStack(body, num_layers, unroll, pass_reverse_to_layer_fn, mapping, name)
            out = stack(args, **kwargs)[0]
            return out[0] if len(args) == 1 else out

        return wrapped

    return iterate

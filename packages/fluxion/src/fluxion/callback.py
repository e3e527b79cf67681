"""The host-callback primitives: Python functions called from (possibly staged) programs.

Three primitives, with JAX's names and rules (``jax/_src/callback.py``):

- ``pure_callback`` (``fluxion.pure_callback``): a pure function of its inputs with declared
  result shapes and dtypes; no derivative (use ``custom_jvp``); vmap per ``vmap_method``.
- ``io_callback`` (``fluxion.experimental.io_callback``): an impure function, never removed;
  ``ordered=True`` runs it in program order (a token threads the calls), and cannot be vmapped.
- ``debug_callback`` (``fluxion.debug.callback`` / ``print`` / ``breakpoint``): no results; under
  ``grad`` it sees the primal values, under ``vmap`` it runs once per batch member.

Eagerly, each primitive calls the Python function directly, on Arrays placed as JAX's eager
callbacks place them (what the transfer guards see: :func:`_as_handed_over`). Staged, it lowers
to a host call (:func:`fluxion.backend.callback.emit_host_callback`, the backend's run-time part:
compiling with the callables, re-raising their exceptions), whose NumPy arguments become Arrays
before the function sees them.

Example:
    >>> import numpy as np, fluxion, fluxion.numpy as jnp
    >>> f = fluxion.jit(lambda x: fluxion.pure_callback(
    ...     np.sin, fluxion.ShapeDtypeStruct((2,), np.float32), x))
    >>> np.round(np.asarray(f(jnp.array([0.0, 1.0]))), 3).tolist()
    [0.0, 0.841]
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from fluxion.backend import client as _client
from fluxion.backend import guards as _guards
from fluxion.backend.array import Array
from fluxion.backend.callback import check_results, emit_host_callback
from fluxion.backend.dispatch import (
    default_sharding,
    device_put_value,
    host_aval,
    move_to,
    to_array,
)
from fluxion.backend.sharding_impl import single_device_sharding
from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.core.trace import Tracer
from fluxion.lax import shape_ops as so
from fluxion.lax.control_flow import scan
from fluxion.transforms.array_ops import moveaxis
from fluxion.tree_util import physical as tree_util

__all__ = ["pure_callback_p", "io_callback_p", "debug_callback_p", "pure_callback",
           "io_callback", "debug_callback_bind", "effects_barrier", "FlatCallback"]

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized", None)


class FlatCallback:
    """A user callback taking the flat leaves of ``(args, kwargs)`` (``in_tree``); ``static``
    maps leaf positions to non-array leaves kept out of the program. Equal when the function,
    structure and static leaves are, so identical calls stage identical programs."""

    __slots__ = ("fn", "in_tree", "static", "name")

    def __init__(self, fn: Callable, in_tree: Any, static: tuple = ()) -> None:
        self.fn, self.in_tree, self.static = fn, in_tree, tuple(static)
        self.name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)

    def __call__(self, *dyn: Any) -> Any:
        static = dict(self.static)
        leaves, it = [], iter(dyn)
        for i in range(len(dyn) + len(static)):
            leaves.append(static[i] if i in static else next(it))
        args, kwargs = tree_util.tree_unflatten(self.in_tree, leaves)
        return self.fn(*args, **kwargs)

    def __eq__(self, other: Any) -> bool:
        return (type(other) is FlatCallback and self.fn == other.fn
                and self.in_tree == other.in_tree and _static_key(self.static) ==
                _static_key(other.static))

    def __hash__(self) -> int:
        return hash((self.fn, self.in_tree, len(self.static)))

    def __repr__(self) -> str:
        return f"<callback {self.name}>"


def _static_key(static: tuple) -> tuple:
    return tuple((i, id(v)) for i, v in static)


def _host_cpu() -> Any:
    """The CPU device when the default device is another platform's (else None)."""
    if _client.default_device().platform == "cpu":
        return None
    try:
        return _client.devices("cpu")[0]
    except Exception:  # noqa: BLE001 - no CPU backend initialised: stay where we are
        return None


def _to_arrays(xs: Sequence[Any], device: Any = None) -> list:
    """Host values as Fluxion Arrays on ``device`` (default: the default device): explicit
    host-to-device transfers for the transfer guards (JAX's callbacks ``device_put`` them,
    Python scalars included). An Array (an eager ``debug.callback``'s argument) is
    ``device_put`` to ``device`` as JAX's ``debug_callback_impl`` does: an explicit
    device-to-device copy when it lives elsewhere (a TPU array to the CPU), none when it is
    there already; never a host-to-device transfer (Fluxion made one on a TPU: it read the
    array to the host and placed that on the CPU, which transfer_guard("disallow_explicit")
    refused as host-to-device where jax's guard sees a device-to-device copy)."""
    out = []
    for x in xs:
        if isinstance(x, Array) and device is not None:
            out.append(move_to(x, single_device_sharding(device), True, explicit=True))
            continue
        if isinstance(x, (np.ndarray, np.generic, bool, int, float, complex)):
            if _guards.H2D is not None:
                _guards.host_to_device(host_aval(x), default_sharding() if device is None
                                       else single_device_sharding(device), explicit=True)
            out.append(device_put_value(x if type(x) in _SCALARS else np.asarray(x), device))
        else:
            out.append(to_array(x))
    return out


_SCALARS = (bool, int, float, complex)


def _as_handed_over(args: Sequence[Any]) -> list:
    """The arguments of an eager ``pure_callback``/``io_callback`` as the callback's program
    hands them over. JAX runs these two eagerly as a jitted call: NumPy and Python arguments
    cross to the device first (an implicit host-to-device transfer), then XLA passes every
    argument to the host as a NumPy value (no guarded read), which the callback places on the
    device again (the explicit transfer :func:`_to_arrays` guards)."""
    out = []
    for a in args:
        if type(a) is not Array:
            a = to_array(a)  # guarded as a jit argument
        with _guards.unchecked():
            out.append(np.asarray(a))
    return out


def _call_on_host(fn: Callable, args: Sequence[Any]) -> Any:
    """``fn`` on ``args`` as JAX runs a host callback: the arguments as Arrays on the CPU and the
    CPU the default device inside it. On an accelerator this matters: a callback that computed
    on the chip (``v * 2`` on an Array there) while the chip's program waits for the callback's
    result would wait forever."""
    cpu = _host_cpu()
    if cpu is None:
        return fn(*_to_arrays(args))
    with _client.default_device_state(cpu):
        return fn(*_to_arrays(args, cpu))


class _OnArrays:
    """A callback as the compiled program calls it: NumPy arrays in, turned into Arrays (on the
    CPU, as JAX hands them)."""

    __slots__ = ("fn", "name")

    def __init__(self, fn: Callable) -> None:
        self.fn, self.name = fn, getattr(fn, "name", "callback")

    def __call__(self, *args: Any) -> Any:
        return _call_on_host(self.fn, args)


# ------------------------------------------------------------------ pure_callback

def _avals_of(result_avals: tuple) -> list[ShapedArray]:
    return list(result_avals)


pure_callback_p = Primitive("pure_callback", multiple_results=True, materialized=True)
pure_callback_p.abstract_eval = lambda *avals, callback, result_avals, vmap_method, sharding: \
    _avals_of(result_avals)


def _pure_impl(*args: Any, callback: Any, result_avals: tuple, vmap_method: Any,
               sharding: Any) -> list:
    result = _call_on_host(callback, _as_handed_over(args))
    outs = check_results("pure_callback", callback.name, result, result_avals)
    return [device_put_value(o) for o in outs]


pure_callback_p.impl = _pure_impl


def _pure_lowering(ctx: Any, *args: str, callback: Any, result_avals: tuple, vmap_method: Any,
                   sharding: Any) -> list[str]:
    return emit_host_callback(ctx, "pure_callback", _OnArrays(callback), args, result_avals,
                              ordered=False, side_effect=False)


pure_callback_p.lowering = _pure_lowering


def _pure_jvp(primals: list, tangents: list, **params: Any) -> tuple:
    raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use "
                     "callbacks while taking gradients.")


def _pure_transpose(ct: Any, *args: Any, **params: Any) -> list:
    raise ValueError("Pure callbacks do not support transpose. Please use `jax.custom_vjp` to "
                     "use callbacks while taking gradients.")


pure_callback_p.jvp = _pure_jvp
pure_callback_p.transpose = _pure_transpose


def _batched_avals(size: int, avals: tuple) -> tuple:
    return tuple(ShapedArray((size, *a.shape), a.dtype) for a in avals)


def _sequential(prim: Primitive, args: Sequence[Any], dims: Sequence[Any], params: dict,
                unroll: bool) -> tuple:
    is_b = [d is not None for d in dims]
    moved = [moveaxis(a, d, 0) if d is not None else a for a, d in zip(args, dims)]
    fixed = [a for a, b in zip(moved, is_b) if not b]
    mapped = [a for a, b in zip(moved, is_b) if b]

    def body(carry: Any, xs: list) -> tuple:
        it_f, it_x = iter(fixed), iter(xs)
        merged = [next(it_x) if b else next(it_f) for b in is_b]
        return carry, prim.bind(*merged, **params)

    _, outs = scan(body, (), mapped, unroll=unroll)
    return list(outs), [0] * len(outs)


def _pure_batch(axis_data: Any, args: Sequence[Any], dims: Sequence[Any], *, callback: Any,
                result_avals: tuple, vmap_method: Any, sharding: Any) -> tuple:
    size = axis_data.size
    params = dict(callback=callback, result_avals=result_avals, vmap_method=vmap_method,
                  sharding=sharding)
    if vmap_method in ("sequential", "sequential_unrolled"):
        return _sequential(pure_callback_p, args, dims, params,
                           vmap_method == "sequential_unrolled")
    moved = [moveaxis(a, d, 0) if d is not None else a for a, d in zip(args, dims)]
    new_params = dict(params, result_avals=_batched_avals(size, result_avals))
    if vmap_method == "legacy_vectorized":
        outs = pure_callback_p.bind(*moved, **new_params)
    elif vmap_method in ("expand_dims", "broadcast_all"):
        n = size if vmap_method == "broadcast_all" else 1
        moved = [so.broadcast(a, (n,)) if d is None else a for a, d in zip(moved, dims)]
        outs = pure_callback_p.bind(*moved, **new_params)
    else:
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one of "
            "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
            f"'legacy_vectorized'. Got vmap_method={vmap_method!r}.")
    return list(outs), [0] * len(outs)


pure_callback_p.batch = _pure_batch


# ------------------------------------------------------------------ io_callback

io_callback_p = Primitive("io_callback", multiple_results=True, effectful=True, materialized=True)
io_callback_p.abstract_eval = lambda *avals, callback, result_avals, ordered, sharding: \
    _avals_of(result_avals)


def _io_impl(*args: Any, callback: Any, result_avals: tuple, ordered: bool, sharding: Any
             ) -> list:
    result = _call_on_host(callback, _as_handed_over(args))
    outs = check_results("io_callback", callback.name, result, result_avals)
    return [device_put_value(o) for o in outs]


io_callback_p.impl = _io_impl


def _io_lowering(ctx: Any, *args: str, callback: Any, result_avals: tuple, ordered: bool,
                 sharding: Any) -> list[str]:
    return emit_host_callback(ctx, "io_callback", _OnArrays(callback), args, result_avals,
                              ordered=ordered, side_effect=True)


io_callback_p.lowering = _io_lowering


def _io_jvp(primals: list, tangents: list, **params: Any) -> tuple:
    raise ValueError("IO callbacks do not support JVP.")


def _io_transpose(ct: Any, *args: Any, **params: Any) -> list:
    raise ValueError("IO callbacks do not support transpose.")


io_callback_p.jvp = _io_jvp
io_callback_p.transpose = _io_transpose


def _io_batch(axis_data: Any, args: Sequence[Any], dims: Sequence[Any], *, callback: Any,
              result_avals: tuple, ordered: bool, sharding: Any) -> tuple:
    if ordered:
        raise ValueError("Cannot `vmap` ordered IO callback.")
    return _sequential(io_callback_p, args, dims, dict(
        callback=callback, result_avals=result_avals, ordered=False, sharding=sharding), False)


io_callback_p.batch = _io_batch


# ------------------------------------------------------------------ debug_callback

debug_callback_p = Primitive("debug_callback", multiple_results=True, effectful=True, materialized=True)
debug_callback_p.abstract_eval = lambda *avals, callback, ordered, partitioned: []


def _debug_impl(*args: Any, callback: Any, ordered: bool, partitioned: bool) -> list:
    _call_on_host(callback, args)
    return []


debug_callback_p.impl = _debug_impl


def _debug_lowering(ctx: Any, *args: str, callback: Any, ordered: bool, partitioned: bool
                    ) -> list[str]:
    return emit_host_callback(ctx, "debug_callback", _OnArrays(callback), args, (), ordered=ordered,
                              side_effect=True)


debug_callback_p.lowering = _debug_lowering


def _debug_jvp(primals: list, tangents: list, **params: Any) -> tuple:
    return debug_callback_p.bind(*primals, **params), []


debug_callback_p.jvp = _debug_jvp
debug_callback_p.transpose = lambda ct, *args, **params: [None] * len(args)


def _debug_batch(axis_data: Any, args: Sequence[Any], dims: Sequence[Any], **params: Any
                 ) -> tuple:
    for i in range(axis_data.size):
        debug_callback_p.bind(*[a if d is None else so.index_in_dim(a, i, d, keepdims=False)
                                for a, d in zip(args, dims)], **params)
    return [], []


debug_callback_p.batch = _debug_batch


# ------------------------------------------------------------------ entry points

def effects_barrier() -> None:
    """Wait until every host callback issued so far has run (JAX's ``jax.effects_barrier``).

    Programs with host callbacks run synchronously here, so there is never anything left to
    wait for; the function exists so that JAX programs calling it keep working.

    Example:
        >>> effects_barrier()
    """
    return None


def _result_avals(fun: str, result_shape_dtypes: Any) -> tuple[list[ShapedArray], Any]:
    leaves, tree = tree_util.tree_flatten(result_shape_dtypes)
    avals = []
    for leaf in leaves:
        if not (hasattr(leaf, "shape") and hasattr(leaf, "dtype")):
            raise TypeError(f"{fun}: result_shape_dtypes leaves need .shape and .dtype (e.g. "
                            f"fluxion.ShapeDtypeStruct), got {type(leaf).__name__}: {leaf!r}")
        dt = np.dtype(leaf.dtype)
        if dtypes.canonicalize_dtype(dt) != dt:
            raise ValueError("result_shape_dtypes cannot specify 64-bit types when "
                             "`jax_enable_x64` is disabled")
        avals.append(ShapedArray(tuple(leaf.shape), dt))
    return avals, tree


def pure_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                  sharding: Any = None, vmap_method: str | None = None, **kwargs: Any) -> Any:
    """Call the pure Python function ``callback(*args, **kwargs)`` from (possibly staged) code.

    ``result_shape_dtypes`` is a pytree of ``ShapeDtypeStruct`` describing what ``callback``
    returns; the results are checked against it. ``vmap_method`` says how ``vmap`` calls the
    callback: ``"sequential"`` (one call per batch member), ``"sequential_unrolled"``,
    ``"expand_dims"`` (unbatched arguments get a leading axis of size 1), ``"broadcast_all"``
    or ``"legacy_vectorized"``; ``None`` makes ``vmap`` an error. No derivative: wrap it in
    ``custom_jvp``/``custom_vjp``.

    Example:
        >>> import numpy as np, fluxion, fluxion.numpy as jnp
        >>> spec = fluxion.ShapeDtypeStruct((), np.float32)
        >>> fluxion.jit(lambda x: fluxion.pure_callback(
        ...     lambda v: np.float32(v * 2), spec, x))(jnp.float32(3.0)).item()
        6.0
    """
    if vmap_method not in VMAP_METHODS:
        raise ValueError(f"vmap_method must be on of the allowed methods {list(VMAP_METHODS)}, "
                         f"but got: {vmap_method}")
    if not callable(callback):
        raise TypeError(f"pure_callback: callback must be callable, got {type(callback).__name__}")
    flat, in_tree = tree_util.tree_flatten((args, kwargs))
    avals, out_tree = _result_avals("pure_callback", result_shape_dtypes)
    outs = pure_callback_p.bind(*flat, callback=FlatCallback(callback, in_tree),
                                result_avals=tuple(avals), vmap_method=vmap_method,
                                sharding=sharding)
    return tree_util.tree_unflatten(out_tree, list(outs))


def io_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                sharding: Any = None, ordered: bool = False, **kwargs: Any) -> Any:
    """Call the impure Python function ``callback(*args, **kwargs)`` from (possibly staged)
    code. It is never removed as dead code; ``ordered=True`` runs the calls in program order
    (and rules out ``vmap``). No derivative.

    Example:
        >>> import numpy as np, fluxion, fluxion.numpy as jnp
        >>> seen = []
        >>> def log(x):
        ...     seen.append(float(x))
        ...     return np.float32(len(seen))
        >>> spec = fluxion.ShapeDtypeStruct((), np.float32)
        >>> fluxion.jit(lambda x: io_callback(log, spec, x, ordered=True))(jnp.float32(2.0)).item()
        1.0
    """
    if not callable(callback):
        raise TypeError(f"io_callback: callback must be callable, got {type(callback).__name__}")
    flat, in_tree = tree_util.tree_flatten((args, kwargs))
    avals, out_tree = _result_avals("io_callback", result_shape_dtypes)
    outs = io_callback_p.bind(*flat, callback=FlatCallback(callback, in_tree),
                              result_avals=tuple(avals), ordered=bool(ordered), sharding=sharding)
    return tree_util.tree_unflatten(out_tree, list(outs))


def _is_array_leaf(x: Any) -> bool:
    return (type(x) is Array or isinstance(x, (Tracer, np.ndarray, np.generic))
            or type(x) in (bool, int, float, complex) or hasattr(x, "__jax_array__"))


def debug_callback_bind(callback: Callable[..., Any], args: tuple, kwargs: dict, *,
                        ordered: bool, partitioned: bool) -> None:
    """Bind ``debug_callback`` for ``callback(*args, **kwargs)``: array leaves become operands,
    other leaves (strings, None, objects) are passed through unchanged."""
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    static, dyn = [], []
    for i, leaf in enumerate(leaves):
        if _is_array_leaf(leaf):
            dyn.append(leaf)
        else:
            static.append((i, leaf))
    debug_callback_p.bind(*dyn, callback=FlatCallback(callback, in_tree, tuple(static)),
                          ordered=bool(ordered), partitioned=bool(partitioned))

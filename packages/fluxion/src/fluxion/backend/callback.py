"""Host callbacks: Python functions called from compiled programs.

Three primitives, with JAX's names and rules:

- ``pure_callback`` (``fluxion.pure_callback``): a pure function of its inputs with declared
  result shapes and dtypes; no derivative (use ``custom_jvp``); vmap per ``vmap_method``.
- ``io_callback`` (``fluxion.experimental.io_callback``): an impure function, never removed;
  ``ordered=True`` runs it in program order (a token threads the calls), and cannot be vmapped.
- ``debug_callback`` (``fluxion.debug.callback`` / ``print`` / ``breakpoint``): no results; under
  ``grad`` it sees the primal values, under ``vmap`` it runs once per batch member.

Eagerly, each primitive calls the Python function directly. Staged, its lowering emits XLA's CPU
host-callback custom call (``xla_ffi_python_cpu_callback``) whose ``index`` points into the list
of callables compiled with the module (see :func:`emit_host_callback`); that list lives on the
executable, so the callables live as long as it does (a missing callable would crash XLA).

A Python exception raised by a callback (or by our check of its results' shapes and dtypes)
stops the execution and is re-raised to the caller as itself (:class:`CallbackExecutable`).

Example:
    >>> import numpy as np, fluxion, fluxion.numpy as jnp
    >>> f = fluxion.jit(lambda x: fluxion.pure_callback(
    ...     np.sin, fluxion.ShapeDtypeStruct((2,), np.float32), x))
    >>> np.round(np.asarray(f(jnp.array([0.0, 1.0]))), 3).tolist()
    [0.0, 0.841]
"""

from __future__ import annotations

import collections
import threading
from typing import Any, Callable, Sequence

import numpy as np

from fluxion import tree_util
from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import shape_ops as so
from fluxion.transforms.array_ops import moveaxis

__all__ = ["pure_callback_p", "io_callback_p", "debug_callback_p", "pure_callback",
           "io_callback", "debug_callback_bind", "emit_host_callback", "CallbackExecutable",
           "FlatCallback", "parse_module", "compile_with_callbacks", "effects_barrier"]

_TARGET = "xla_ffi_python_cpu_callback"
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


# ------------------------------------------------------------------ host side

# Exceptions raised inside host callbacks, waiting for the execution that ran them to fail.
_ERRORS: collections.deque = collections.deque(maxlen=64)
_ERRORS_LOCK = threading.Lock()


def _to_arrays(xs: Sequence[Any]) -> list:
    """Host values as Fluxion Arrays on the default device (what JAX hands its callbacks)."""
    from fluxion.backend.dispatch import device_put_value, to_array
    out = []
    for x in xs:
        if isinstance(x, np.ndarray) or isinstance(x, np.generic):
            out.append(device_put_value(np.asarray(x)))
        else:
            out.append(to_array(x))
    return out


def check_results(kind: str, name: str, result: Any, result_avals: Sequence[ShapedArray]
                  ) -> list[np.ndarray]:
    """The callback's results as NumPy arrays, checked against the declared avals."""
    leaves = tree_util.tree_leaves(result)
    if len(leaves) != len(result_avals):
        raise RuntimeError(f"{kind} {name}: mismatched number of outputs from callback. "
                           f"Expected: {len(result_avals)}, Actual: {len(leaves)}")
    out = []
    for i, (v, aval) in enumerate(zip(leaves, result_avals)):
        a = np.asarray(v)
        canon = dtypes.canonicalize_dtype(a.dtype) if a.dtype != object else a.dtype
        if canon != a.dtype:
            a = a.astype(canon)
        if a.shape != tuple(aval.shape):
            raise RuntimeError(f"{kind} {name}: Incorrect output shape for return value #{i}: "
                               f"Expected: {tuple(aval.shape)}, Actual: {a.shape}")
        if a.dtype != aval.dtype:
            raise RuntimeError(f"{kind} {name}: Incorrect output dtype for return value #{i}: "
                               f"Expected: {aval.dtype}, Actual: {a.dtype}")
        out.append(a)
    return out


class _HostCallable:
    """What XLA calls: NumPy arrays in, a tuple of NumPy arrays out; every exception is kept
    for :class:`CallbackExecutable` to re-raise."""

    __slots__ = ("kind", "callback", "result_avals", "token", "__weakref__")

    def __init__(self, kind: str, callback: Callable, result_avals: Sequence[ShapedArray],
                 token: bool) -> None:
        self.kind, self.callback, self.result_avals, self.token = (
            kind, callback, tuple(result_avals), token)

    def __call__(self, *args: Any) -> tuple:
        try:
            if self.token:
                args = args[1:]
            result = self.callback(*_to_arrays(args))
            outs = (check_results(self.kind, getattr(self.callback, "name", "callback"), result,
                                  self.result_avals) if self.result_avals else [])
            return ((None,) if self.token else ()) + tuple(outs)
        except BaseException as e:  # noqa: BLE001 - re-raised to the caller by the executable
            with _ERRORS_LOCK:
                _ERRORS.append(e)
            raise


def _take_error() -> BaseException | None:
    with _ERRORS_LOCK:
        return _ERRORS.pop() if _ERRORS else None


class CallbackExecutable:
    """A loaded executable with host callbacks: keeps the callables alive, runs synchronously
    (so callbacks run, in order, before the call returns) and re-raises a callback's exception
    as itself instead of XLA's runtime error. Other attributes are the executable's."""

    def __init__(self, exe: Any, callbacks: list) -> None:
        self._exe = exe
        self.host_callbacks = callbacks

    def execute_sharded(self, args: Any, with_tokens: bool = False) -> Any:
        with _ERRORS_LOCK:
            _ERRORS.clear()
        try:
            res = self._exe.execute_sharded(args, with_tokens=True)
            res.consume_token().block_until_ready()
        except Exception:
            err = _take_error()
            if err is None:
                raise
            raise err.with_traceback(err.__traceback__) from None
        return res

    def __getattr__(self, name: str) -> Any:
        return getattr(self._exe, name)


_CTX: list = []


def parse_module(text: str) -> Any:
    """``text`` as an MLIR module (``compile_and_load`` takes host callbacks only with one)."""
    from jaxlib.mlir import ir
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext
    from jaxlib.mlir.dialects import chlo, mhlo, sdy
    from jaxlib.mlir.dialects import stablehlo as hlo
    if not _CTX:
        reg = ir.DialectRegistry()
        _jax_mlir_ext.register_dialects(reg)
        ctx = ir.Context()
        ctx.append_dialect_registry(reg)
        ctx.load_all_available_dialects()
        hlo.register_dialect(ctx)
        chlo.register_dialect(ctx)
        sdy.register_dialect(ctx)
        mhlo.register_mhlo_dialect(ctx)
        _CTX.append(ctx)
    with _CTX[0]:
        return ir.Module.parse(text)


def compile_with_callbacks(client: Any, text: Any, device_list: Any, options: Any
                           ) -> CallbackExecutable:
    """Compile module ``text`` (a ``ModuleText``) with its host callbacks bound by index."""
    from fluxion.backend import lapack
    if lapack.needs_lapack(text):
        lapack.ensure_lapack()
    callbacks = [c.bind(client) if isinstance(c, SendRecvCallback) else c
                 for c in text.host_callbacks]
    exe = client.compile_and_load(parse_module(str(text)), device_list, options,
                                  host_callbacks=callbacks)
    return CallbackExecutable(exe, callbacks)


# ------------------------------------------------------------------ lowering

def current_token(fn: Any) -> str:
    """The ordered-effect token of lowering function (or region) ``fn``, made on first use; a
    region's first token comes after its enclosing function's (captured from there)."""
    tok = getattr(fn, "_fx_token", None)
    if tok is None:
        parent = getattr(fn, "_fx_parent", None)
        before = current_token(parent) if parent is not None else ""
        tok = fn.fresh()
        arg_t = "!stablehlo.token" if before else ""
        fn.lines.append(f'{fn.indent}{tok} = "stablehlo.after_all"({before}) : ({arg_t}) -> '
                        "!stablehlo.token")
        fn._fx_token = tok
    return tok


def _sync(*args: Any) -> tuple:
    return (None,)


def sequence_after(ctx: Any, values: list[str]) -> None:
    """Make the later ordered callbacks of ``ctx``'s function wait for ``values`` (the results
    of a loop or branch whose body runs ordered callbacks): a no-op host call takes the token
    and one of them."""
    if not values or ctx.module.platform != "cpu":
        # (on the TPU the send/recv tokens order the callbacks within a function; a loop's
        # callbacks and later ones of the enclosing function are not sequenced)
        return
    fn = ctx.fn
    i = min(range(len(values)), key=lambda k: ctx.avals_out[k].size)
    from fluxion.backend.lowering import mlir_type
    cbs = ctx.module.__dict__.setdefault("host_callbacks", [])
    index = len(cbs)
    cbs.append(_sync)
    tok = current_token(fn)
    res = fn.fresh()
    fn.lines.append(
        f'{fn.indent}{res} = "stablehlo.custom_call"({tok}, {values[i]}) {{call_target_name = '
        f'"{_TARGET}", has_side_effect = true, api_version = 4 : i32, backend_config = '
        f"{{index = {index} : ui64}}}} : (!stablehlo.token, {mlir_type(ctx.avals_out[i])}) -> "
        "!stablehlo.token")
    fn._fx_token = res


def emit_host_callback(ctx: Any, kind: str, callback: Callable, operands: Sequence[str],
                       result_avals: Sequence[ShapedArray], *, ordered: bool,
                       side_effect: bool) -> list[str]:
    """Emit the host-callback custom call of ``callback`` on ``operands``; returns the result
    values. ``ordered`` threads this function's token through the call."""
    from fluxion.backend.lowering import PlatformLoweringError, mlir_type
    module = ctx.module
    if module.platform == "tpu":
        return _emit_send_recv(ctx, kind, callback, operands, result_avals, ordered=ordered,
                               side_effect=side_effect)
    if module.platform != "cpu":
        # the CPU's FFI callback target does not exist elsewhere (XLA would fail with "Custom
        # emitter ... not found"); say so while lowering, naming the operation
        where = f" (at {ctx.source})" if getattr(ctx, "source", None) else ""
        raise PlatformLoweringError(
            f"{kind} inside a compiled function has no lowering for platform "
            f"{module.platform!r}{where}: Fluxion runs host callbacks in compiled code on the "
            "CPU only (through XLA's CPU FFI callback). Call it outside jit (eager calls run "
            "the callback directly), or run the computation on the CPU with "
            "`with fluxion.default_device(fluxion.devices('cpu')[0]):`.")
    cbs = module.__dict__.setdefault("host_callbacks", [])
    index = len(cbs)
    cbs.append(_HostCallable(kind, callback, result_avals, ordered))
    fn = ctx.fn
    ops = list(operands)
    in_types = [mlir_type(a) for a in ctx.avals_in]
    out_types = [mlir_type(a) for a in result_avals]
    if ordered:
        ops = [current_token(fn)] + ops
        in_types = ["!stablehlo.token"] + in_types
        out_types = ["!stablehlo.token"] + out_types
    res = fn.fresh()
    n = len(out_types)
    lhs = "" if n == 0 else (f"{res} = " if n == 1 else f"{res}:{n} = ")
    outs_t = out_types[0] if n == 1 else "(" + ", ".join(out_types) + ")"
    effect = "true" if side_effect else "false"
    fn.lines.append(
        f'{fn.indent}{lhs}"stablehlo.custom_call"({", ".join(ops)}) {{call_target_name = '
        f'"{_TARGET}", has_side_effect = {effect}, api_version = 4 : i32, '
        f"backend_config = {{index = {index} : ui64}}}} : ({', '.join(in_types)}) -> {outs_t}")
    names = [] if n == 0 else ([res] if n == 1 else [f"{res}#{i}" for i in range(n)])
    if ordered:
        fn._fx_token = names[0]
        names = names[1:]
    return names


class SendRecvCallback:
    """A host callback of a TPU module: the device sends the operands to the host over
    ``send`` channels and receives the results over ``recv`` channels; at compile time the
    client turns it into the runtime's callback (``make_python_callback_from_host_send_and_recv``,
    see :func:`compile_with_callbacks`)."""

    __slots__ = ("fn", "operand_avals", "result_avals", "send", "recv")

    def __init__(self, fn: Callable, operand_avals: list, result_avals: list, send: list,
                 recv: list) -> None:
        self.fn, self.operand_avals, self.result_avals = fn, operand_avals, result_avals
        self.send, self.recv = send, recv

    def bind(self, client: Any) -> Any:
        import pickle

        from fluxion.backend.client import xc
        shape = xc().Shape.array_shape
        return client.make_python_callback_from_host_send_and_recv(
            self.fn, [shape(a.dtype, a.shape) for a in self.operand_avals],
            [shape(a.dtype, a.shape) for a in self.result_avals], self.send, self.recv,
            pickle.dumps)


_HOST_ATTRS = ('mhlo.frontend_attributes = {{_xla_host_transfer_handler_name = '
               '"pjrt_rendezvous", _xla_host_transfer_rendezvous = "{ch}"}}')


def _new_channel(module: Any) -> int:
    n = module.__dict__.get("_channel", 0) + 1
    module._channel = n
    return n


def _emit_send_recv(ctx: Any, kind: str, callback: Callable, operands: Sequence[str],
                    result_avals: Sequence[ShapedArray], *, ordered: bool,
                    side_effect: bool) -> list[str]:
    """The TPU's host callback (as JAX emits it there): one ``stablehlo.send`` per operand and
    one ``stablehlo.recv`` per result, threaded on a token, with the Python side registered on
    the client at compile time."""
    from fluxion.backend.lowering import mlir_type
    module, fn = ctx.module, ctx.fn
    if ordered:
        tok = current_token(fn)
    else:
        tok = fn.fresh()
        fn.lines.append(f'{fn.indent}{tok} = "stablehlo.after_all"() : () -> !stablehlo.token')
    host = _HostCallable(kind, callback, result_avals, False)
    call: Callable = host
    ops, op_avals = list(operands), [a.update(weak_type=False) for a in ctx.avals_in]
    if not ops:  # the runtime runs the callback when its sends arrive: send one dummy value
        ops = [fn.constant(np.zeros(1, np.float32), ShapedArray((1,), np.float32))]
        op_avals = [ShapedArray((1,), np.float32)]
        call = lambda _dummy: host()  # noqa: E731
    res_avals = [a.update(weak_type=False) for a in result_avals]
    if not res_avals:  # wait for the callback to finish: receive one dummy value
        res_avals = [ShapedArray((), np.float32)]
        inner = call
        call = lambda *a: (inner(*a), (np.zeros((), np.float32),))[1]  # noqa: E731
    send, recv = [], []
    for v, a in zip(ops, op_avals):
        ch = _new_channel(module)
        send.append(ch)
        t = fn.fresh()
        fn.lines.append(
            f'{fn.indent}{t} = "stablehlo.send"({v}, {tok}) {{channel_handle = '
            f"#stablehlo.channel_handle<handle = {ch}, type = 2>, is_host_transfer = true, "
            f"{_HOST_ATTRS.format(ch=ch)}}} : ({mlir_type(a)}, !stablehlo.token) -> "
            "!stablehlo.token")
        tok = t
    outs = []
    for a in res_avals:
        ch = _new_channel(module)
        recv.append(ch)
        r = fn.fresh()
        fn.lines.append(
            f'{fn.indent}{r}:2 = "stablehlo.recv"({tok}) {{channel_handle = '
            f"#stablehlo.channel_handle<handle = {ch}, type = 3>, is_host_transfer = true, "
            f"{_HOST_ATTRS.format(ch=ch)}}} : (!stablehlo.token) -> ({mlir_type(a)}, "
            "!stablehlo.token)")
        outs.append(f"{r}#0")
        tok = f"{r}#1"
    module.__dict__.setdefault("host_callbacks", []).append(
        SendRecvCallback(call, op_avals, res_avals, send, recv))
    if ordered:
        fn._fx_token = tok
    return outs if result_avals else []


# ------------------------------------------------------------------ pure_callback

def _avals_of(result_avals: tuple) -> list[ShapedArray]:
    return list(result_avals)


pure_callback_p = Primitive("pure_callback", multiple_results=True)
pure_callback_p.abstract_eval = lambda *avals, callback, result_avals, vmap_method, sharding: \
    _avals_of(result_avals)


def _pure_impl(*args: Any, callback: Any, result_avals: tuple, vmap_method: Any,
               sharding: Any) -> list:
    from fluxion.backend.dispatch import device_put_value
    result = callback(*_to_arrays(args))
    outs = check_results("pure_callback", callback.name, result, result_avals)
    return [device_put_value(o) for o in outs]


pure_callback_p.impl = _pure_impl


def _pure_lowering(ctx: Any, *args: str, callback: Any, result_avals: tuple, vmap_method: Any,
                   sharding: Any) -> list[str]:
    return emit_host_callback(ctx, "pure_callback", callback, args, result_avals,
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
    from fluxion.lax.control_flow import scan
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

io_callback_p = Primitive("io_callback", multiple_results=True, effectful=True)
io_callback_p.abstract_eval = lambda *avals, callback, result_avals, ordered, sharding: \
    _avals_of(result_avals)


def _io_impl(*args: Any, callback: Any, result_avals: tuple, ordered: bool, sharding: Any
             ) -> list:
    from fluxion.backend.dispatch import device_put_value
    result = callback(*_to_arrays(args))
    outs = check_results("io_callback", callback.name, result, result_avals)
    return [device_put_value(o) for o in outs]


io_callback_p.impl = _io_impl


def _io_lowering(ctx: Any, *args: str, callback: Any, result_avals: tuple, ordered: bool,
                 sharding: Any) -> list[str]:
    return emit_host_callback(ctx, "io_callback", callback, args, result_avals,
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

debug_callback_p = Primitive("debug_callback", multiple_results=True, effectful=True)
debug_callback_p.abstract_eval = lambda *avals, callback, ordered, partitioned: []


def _debug_impl(*args: Any, callback: Any, ordered: bool, partitioned: bool) -> list:
    callback(*_to_arrays(args))
    return []


debug_callback_p.impl = _debug_impl


def _debug_lowering(ctx: Any, *args: str, callback: Any, ordered: bool, partitioned: bool
                    ) -> list[str]:
    return emit_host_callback(ctx, "debug_callback", callback, args, (), ordered=ordered,
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
    from fluxion.backend.array import Array
    from fluxion.core.trace import Tracer
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

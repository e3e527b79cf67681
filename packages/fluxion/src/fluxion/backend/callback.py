"""Host callbacks at run time: Python functions called from compiled programs.

The callback primitives (``pure_callback``, ``io_callback``, ``debug_callback``) live in
:mod:`fluxion.callback`; this module is what the backend does for them. Their lowering emits
XLA's host-callback custom call (``xla_ffi_python_cpu_callback`` on the CPU,
``xla_ffi_python_gpu_callback`` on CUDA and ROCm) whose ``index`` points into the list of
callables compiled with the module (:func:`emit_host_callback`); on the TPU it emits send/recv
host transfers (:class:`SendRecvCallback`). That list lives on the executable,
so the callables live as long as it does (a missing callable would crash XLA).

A Python exception raised by a callback (or by the check of its results' shapes and dtypes,
:func:`check_results`) stops the execution and is re-raised to the caller as itself
(:class:`CallbackExecutable`).

Example:
    >>> import numpy as np, fluxion, fluxion.numpy as jnp
    >>> f = fluxion.jit(lambda x: fluxion.pure_callback(
    ...     np.sin, fluxion.ShapeDtypeStruct((2,), np.float32), x))
    >>> np.round(np.asarray(f(jnp.array([0.0, 1.0]))), 3).tolist()
    [0.0, 0.841]
"""

from __future__ import annotations

import collections
import pickle
import threading
from typing import Any, Callable, Sequence

import numpy as np

from fluxion.backend import lapack
from fluxion.backend.client import xc
from fluxion.backend.lowering import (
    HOST_CALLBACK_TARGETS,
    SEQUENCE_EMITTERS,
    PlatformLoweringError,
    current_token,
    mlir_type,
)
from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.tree_util import physical as tree_util

__all__ = ["emit_host_callback", "CallbackExecutable", "check_results", "parse_module",
           "compile_with_callbacks", "SendRecvCallback"]

# Exceptions raised inside host callbacks, waiting for the execution that ran them to fail.
_ERRORS: collections.deque = collections.deque(maxlen=64)
_ERRORS_LOCK = threading.Lock()


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
    """What XLA calls: NumPy arrays in (``callback`` decides what its function sees), a tuple of
    NumPy arrays out; every exception is kept for :class:`CallbackExecutable` to re-raise."""

    __slots__ = ("kind", "callback", "result_avals", "token", "__weakref__")

    def __init__(self, kind: str, callback: Callable, result_avals: Sequence[ShapedArray],
                 token: bool) -> None:
        self.kind, self.callback, self.result_avals, self.token = (
            kind, callback, tuple(result_avals), token)

    def __call__(self, *args: Any) -> tuple:
        try:
            if self.token:
                args = args[1:]
            result = self.callback(*args)
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
    # reason: jaxlib's MLIR bindings load only for modules with host callbacks (import time)
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
    if lapack.needs_lapack(text):
        lapack.ensure_lapack()
    callbacks = [c.bind(client) if isinstance(c, SendRecvCallback) else c
                 for c in text.host_callbacks]
    exe = client.compile_and_load(parse_module(str(text)), device_list, options,
                                  host_callbacks=callbacks)
    return CallbackExecutable(exe, callbacks)


# ------------------------------------------------------------------ lowering

def emit_host_callback(ctx: Any, kind: str, callback: Callable, operands: Sequence[str],
                       result_avals: Sequence[ShapedArray], *, ordered: bool,
                       side_effect: bool) -> list[str]:
    """Emit the host-callback custom call of ``callback`` on ``operands``; returns the result
    values. ``ordered`` threads this function's token through the call."""
    module = ctx.module
    if module.platform == "tpu":
        return _emit_send_recv(ctx, kind, callback, operands, result_avals, ordered=ordered,
                               side_effect=side_effect)
    target = HOST_CALLBACK_TARGETS.get(module.platform)
    if target is None:
        # no FFI callback target there (XLA would fail with "Custom emitter ... not found");
        # say so while lowering, naming the operation
        where = f" (at {ctx.source})" if getattr(ctx, "source", None) else ""
        raise PlatformLoweringError(
            f"{kind} inside a compiled function has no lowering for platform "
            f"{module.platform!r}{where}: Fluxion runs host callbacks in compiled code on the "
            "CPU, CUDA, ROCm and the TPU. Call it outside jit (eager calls run the callback "
            "directly), or run the computation on the CPU with "
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
        f'"{target}", has_side_effect = {effect}, api_version = 4 : i32, '
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
        shape = xc().Shape.array_shape
        return client.make_python_callback_from_host_send_and_recv(
            self.fn, [shape(a.dtype, a.shape) for a in self.operand_avals],
            [shape(a.dtype, a.shape) for a in self.result_avals], self.send, self.recv,
            pickle.dumps)


class _OneValue:
    """What :func:`_emit_send_recv` reads of a rule's context, for sending one value."""

    __slots__ = ("module", "fn", "avals_in")

    def __init__(self, module: Any, fn: Any, aval: ShapedArray) -> None:
        self.module, self.fn, self.avals_in = module, fn, [aval]


def _sequence_after_tpu(ctx: Any, values: list[str]) -> None:
    """The TPU's :func:`~fluxion.backend.lowering.sequence_after`: the smallest numeric result
    of a loop or branch that runs ordered callbacks goes to the host on the function's token and
    a dummy value comes back, so the function's later ordered callbacks run after that loop's
    (the token is not threaded through the loop itself)."""
    cands = [k for k, a in enumerate(ctx.avals_out[:len(values)])
             if isinstance(a, ShapedArray) and getattr(a.dtype, "kind", "?") in ("i", "u", "f", "c")
             and a.size > 0]
    if not cands:
        return
    i = min(cands, key=lambda k: ctx.avals_out[k].size)
    _emit_send_recv(_OneValue(ctx.module, ctx.fn, ctx.avals_out[i]), "ordered effects",
                    lambda _value: None, [values[i]], [], ordered=True, side_effect=True)


SEQUENCE_EMITTERS["tpu"] = _sequence_after_tpu


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

"""Program -> StableHLO text.

Lowering writes MLIR text directly (generic op form), which is about 10x cheaper to produce than
building MLIR objects, and needs no MLIR Python module: jaxlib parses the text when it compiles.
Each primitive's lowering rule lives beside the primitive in ``fluxion.lax`` and has the form
``rule(ctx, *operands, **params) -> value | list[value]`` where operands and values are SSA names
(strings) and ``ctx`` is a :class:`RuleContext` (avals in and out, and op emitters).

Example:
    >>> import numpy as np
    >>> from fluxion.core.avals import ShapedArray
    >>> mlir_type(ShapedArray((2, 3), np.float32))
    'tensor<2x3xf32>'
"""

from __future__ import annotations

import math
import warnings
import weakref
from typing import Any, Callable, Sequence

import ml_dtypes
import numpy as np

from fluxion.backend import update_aliasing
from fluxion.core.avals import ShapedArray, physical_aval
from fluxion.core.dtypes import ExtendedDType
from fluxion.core.ir import Literal, Program

__all__ = ["mlir_type", "mlir_element_type", "lower_program", "RuleContext", "ModuleContext",
           "dense_attr", "LoweringError", "PlatformLoweringError", "lowering_platform", "rule_for",
           "lower_program_multi"]


class LoweringError(Exception):
    """A primitive has no lowering rule, or its rule failed."""


class PlatformLoweringError(LoweringError, NotImplementedError):
    """A primitive has no lowering for the platform the program is compiled for (raised while
    lowering, before XLA sees the program; a NotImplementedError, as in JAX)."""


# jaxlib's device.platform -> the lowering platform name (JAX's names)
_LOWERING_PLATFORM = {"gpu": "cuda", "cuda": "cuda", "rocm": "rocm", "tpu": "tpu", "cpu": "cpu"}


def lowering_platform(devices: Sequence[Any]) -> str:
    """The platform a computation on ``devices`` is lowered for (``'cpu'``, ``'tpu'``,
    ``'cuda'``, ``'rocm'``): the platform of its first device."""
    if not devices:
        return "cpu"
    d = devices[0]
    p = str(getattr(d, "platform", "cpu")).lower()
    if p == "gpu":
        kind = str(getattr(getattr(d, "client", None), "platform_version", "")).lower()
        return "rocm" if "rocm" in kind else "cuda"
    return _LOWERING_PLATFORM.get(p, p)


def rule_for(prim: Any, platform: str, source: str | None = None) -> Callable[..., Any]:
    """The lowering rule of ``prim`` for ``platform``: its platform-specific rule if it has one,
    else its general rule; raises :class:`PlatformLoweringError` when it has neither."""
    pl = prim.platform_lowerings
    rule = pl.get(platform, prim.lowering) if pl else prim.lowering
    if rule is None:
        if not pl:
            raise LoweringError(f"primitive {prim.name!r} has no StableHLO lowering rule")
        have = ", ".join(sorted(pl))
        where = f" (at {source})" if source else ""
        raise PlatformLoweringError(
            f"{prim.name} has no lowering for platform {platform!r}{where}: it is implemented "
            f"on {have} only. Run it there: place its inputs with "
            f"fluxion.device_put(x, fluxion.devices({sorted(pl)[0]!r})[0]) or use "
            f"`with fluxion.default_device(fluxion.devices({sorted(pl)[0]!r})[0]):`, or "
            f"export for {have}.")
    return rule


_ELEMENT_TYPES: dict[np.dtype, str] = {
    np.dtype(np.bool_): "i1",
    np.dtype(np.int8): "i8", np.dtype(np.int16): "i16", np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "ui8", np.dtype(np.uint16): "ui16", np.dtype(np.uint32): "ui32",
    np.dtype(np.uint64): "ui64",
    np.dtype(np.float16): "f16", np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
    np.dtype(ml_dtypes.bfloat16): "bf16",
    np.dtype(np.complex64): "complex<f32>", np.dtype(np.complex128): "complex<f64>",
    np.dtype(ml_dtypes.int4): "i4", np.dtype(ml_dtypes.uint4): "ui4",
}
for _name, _mlir in [("float8_e4m3fn", "f8E4M3FN"), ("float8_e5m2", "f8E5M2"),
                     ("float8_e4m3fnuz", "f8E4M3FNUZ"), ("float8_e5m2fnuz", "f8E5M2FNUZ"),
                     ("float8_e4m3b11fnuz", "f8E4M3B11FNUZ"), ("float8_e3m4", "f8E3M4"),
                     ("float8_e4m3", "f8E4M3"), ("float8_e8m0fnu", "f8E8M0FNU"),
                     ("int2", "i2"), ("uint2", "ui2"), ("float4_e2m1fn", "f4E2M1FN")]:
    if hasattr(ml_dtypes, _name):
        _ELEMENT_TYPES[np.dtype(getattr(ml_dtypes, _name))] = _mlir

_FLOAT0 = np.dtype([("float0", np.void, 0)])


def mlir_element_type(dtype: np.dtype) -> str:
    """The MLIR element type of a dtype (``f32``, ``ui8``, ``i1`` for bool ...)."""
    t = _ELEMENT_TYPES.get(dtype)
    if t is None:
        if dtype == _FLOAT0:
            return "i1"
        raise LoweringError(f"dtype {dtype} cannot be lowered to StableHLO")
    return t


_type_cache: dict[ShapedArray, str] = {}
# Constants up to this size are emitted once per function and value (a larger one each time)
_DEDUP_MAX_BYTES = 1 << 16


def mlir_type(aval: ShapedArray) -> str:
    """``tensor<2x3xf32>`` for a ShapedArray."""
    t = _type_cache.get(aval)
    if t is None:
        if isinstance(aval.dtype, ExtendedDType):  # a user-defined extended dtype: its physical type
            t = _type_cache[aval] = mlir_type(physical_aval(aval))
            return t
        el = mlir_element_type(aval.dtype)
        dims = "x".join(map(str, aval.shape))
        t = _type_cache[aval] = f"tensor<{dims}x{el}>" if dims else f"tensor<{el}>"
    return t


def dense_attr(value: Any, aval: ShapedArray) -> str:
    """A ``dense<...>`` attribute holding ``value`` (broadcast to ``aval``) as raw hex bytes."""
    arr = np.asarray(value)
    dt = aval.dtype
    if dt == _FLOAT0:
        arr = np.zeros((), np.bool_)
        dt = np.dtype(np.bool_)
    elif arr.dtype != dt:
        arr = arr.astype(dt)
    if arr.size and arr.ndim and (arr == arr.flat[0]).all():
        arr = arr.reshape(-1)[:1]
    elif arr.shape != aval.shape:
        if arr.size != 1:
            arr = np.broadcast_to(arr, aval.shape)
    arr = np.ascontiguousarray(arr)
    if arr.size == 1:
        arr = arr.reshape(())
    elif arr.size == 0:
        return f"dense<> : {mlir_type(ShapedArray(aval.shape, dt))}"
    data = arr.tobytes().hex().upper()
    return f'dense<"0x{data}"> : {mlir_type(ShapedArray(aval.shape, dt))}'


class ModuleContext:
    """State of one module being lowered: its functions and the cache of nested programs."""

    def __init__(self, name: str, platform: str = "cpu") -> None:
        self.name = name
        self.platform = platform
        self.functions: list[str] = []
        # (id(program), argument sharing classes, reshaped outputs) -> (symbol, call summary)
        self._lowered: dict[tuple, tuple[str, tuple]] = {}
        self._names: set[str] = set()
        # values known while lowering (the platform index of lax.platform_dependent), by
        # (function counter, SSA name): a cond on one lowers only the chosen branch, as in JAX
        self.static_values: dict[tuple[int, str], tuple[list, int]] = {}
        # whether the lowering keeps the value graph of update_aliasing (off for a module
        # without in-place updates)
        self.track_updates = True
        # objects a rule asks to keep alive as long as the module (JAX's add_keepalive)
        self.keepalives: list = []

    @property
    def platforms(self) -> tuple[str, ...]:
        """The platforms this module is lowered for (one), as JAX's module context names them."""
        return (self.platform,)

    def add_keepalive(self, keepalive: Any) -> None:
        """Keep ``keepalive`` alive as long as this module (JAX's ``add_keepalive``)."""
        self.keepalives.append(keepalive)

    def function_for(self, program: Program, name: str, classes: tuple[int, ...] | None = None,
                     reshaped_outs: tuple[bool, ...] | None = None) -> str:
        """Lower ``program`` as a private function (once per program and way its call site
        shares buffers) and return its symbol.

        ``classes`` numbers the arguments, equal for arguments that may read one buffer;
        ``reshaped_outs`` marks the outputs the caller reshapes (see ``update_aliasing``).
        """
        return self._function_for(program, name, classes, reshaped_outs)[0]

    def _function_for(self, program: Program, name: str, classes: tuple[int, ...] | None,
                      reshaped_outs: tuple[bool, ...] | None) -> tuple[str, tuple]:
        key = (id(program), classes, reshaped_outs)
        hit = self._lowered.get(key)
        if hit is not None:
            return hit
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "fn"
        sym, i = base, 1
        while sym in self._names or sym == "main":
            sym, i = f"{base}_{i}", i + 1
        self._names.add(sym)
        got: list = []
        text = _lower_function(self, program, sym, public=False, classes=classes,
                               reshaped_outs=reshaped_outs, summary=got)
        self._lowered[key] = (sym, got[0])
        self.functions.append(text)
        return sym, got[0]


class RuleContext:
    """What a lowering rule sees: avals in and out, and emitters writing into the function body."""

    __slots__ = ("fn", "avals_in", "avals_out", "source", "names_in", "reshaped_outs")

    def __init__(self, fn: "_FunctionContext", avals_in: Sequence[ShapedArray],
                 avals_out: Sequence[ShapedArray], source: str | None = None,
                 names_in: Sequence[str | None] = (),
                 reshaped_outs: tuple[bool, ...] | None = None) -> None:
        self.fn = fn
        self.avals_in = avals_in
        self.avals_out = avals_out
        self.source = source
        self.names_in = names_in  # the SSA values of the equation's inputs (None: a literal)
        self.reshaped_outs = reshaped_outs  # which of its outputs a reshape reads

    @property
    def module(self) -> ModuleContext:
        return self.fn.module

    @property
    def module_context(self) -> ModuleContext:
        """The module being lowered, under JAX's name for it (rules written for JAX call
        ``ctx.module_context.add_keepalive``)."""
        return self.fn.module

    @property
    def platform(self) -> str:
        """The platform the module is lowered for (``'cpu'``, ``'tpu'``, ``'cuda'`` ...)."""
        return self.fn.module.platform

    def op(self, name: str, operands: Sequence[str], result_avals: Sequence[ShapedArray] | None = None,
           attrs: str = "", regions: Sequence[str] = (), operand_avals: Sequence[ShapedArray] | None = None,
           ) -> Any:
        """Emit ``results = "name"(operands) (regions) {attrs}``; returns one name or a list.

        ``result_avals`` defaults to the equation's output avals and ``operand_avals`` to its
        input avals. With exactly one result a single name is returned, else a list.
        """
        if result_avals is None:
            result_avals = self.avals_out
        if operand_avals is None:
            operand_avals = self.avals_in
        return self.fn.emit(name, operands, operand_avals, result_avals, attrs, regions)

    def op1(self, name: str, operands: Sequence[str], result_aval: ShapedArray,
            operand_avals: Sequence[ShapedArray], attrs: str = "", regions: Sequence[str] = ()) -> str:
        """Emit an op with one result of ``result_aval``."""
        return self.fn.emit(name, operands, operand_avals, [result_aval], attrs, regions)

    def constant(self, value: Any, aval: ShapedArray) -> str:
        """A constant tensor of ``aval`` holding ``value`` (a scalar is broadcast)."""
        return self.fn.constant(value, aval)

    def known_constant(self, name: str) -> tuple[np.ndarray, ShapedArray] | None:
        """``(value, aval)`` when SSA value ``name`` of this function (or region) is a constant
        emitted by :meth:`constant`, else None. A loop lowering writes such an operand into its
        body again instead of carrying it through every iteration. A region (a ``case`` branch)
        also sees the constants of the functions around it, which it captures."""
        fn = self.fn
        while fn is not None:
            hit = fn.known.get(name)
            if hit is not None:
                return hit
            fn = getattr(fn, "_fx_parent", None)
        return None

    def region(self, arg_avals: Sequence[ShapedArray],
               body: Callable[["RuleContext", list[str]], Sequence[str]],
               result_avals: Sequence[ShapedArray]) -> str:
        """The text of a one-block region with arguments of ``arg_avals``; ``body`` emits ops into
        it and returns the values to ``stablehlo.return``."""
        return self.fn.region(arg_avals, body, result_avals)

    def update_reads_operand(self, operand: int, update: int) -> bool:
        """Whether this equation (an in-place update of input ``operand`` by input ``update``)
        may read its operand's buffer through a reshape, which XLA:CPU computes wrongly
        (``fluxion.backend.update_aliasing``)."""
        names = self.names_in
        if len(names) <= max(operand, update) or names[operand] is None or names[update] is None:
            return False
        return update_aliasing.reads_operand(self.fn.graph, names[operand], names[update],
                                             any(self.reshaped_outs or ()))

    def fresh_operand(self, x: str, index: int) -> str:
        """Input ``index`` (SSA value ``x``) through an identity that XLA keeps, so that an
        in-place update of it writes a new buffer."""
        return update_aliasing.fresh_operand(self, x, self.avals_in[index])

    def call_program(self, program: Program, args: Sequence[str], name: str) -> list[str]:
        """Call ``program`` (lowered once as a private function) on ``args``."""
        graph = self.fn.graph
        classes = None
        if len(args) > 1 and _program_has_updates(program):
            classes = update_aliasing.sharing_classes(graph, args)
            if len(set(classes)) == len(classes):
                classes = None
        reshaped = self.reshaped_outs if self.reshaped_outs and any(self.reshaped_outs) else None
        sym, summary = self.module._function_for(program, name, classes, reshaped)
        in_t = ", ".join(mlir_type(v.aval) for v in program.invars)
        outs = [v.aval for v in program.outvars]
        out_t = ", ".join(mlir_type(a) for a in outs)
        res = self.fn.fresh()
        n = len(outs)
        lhs = "" if n == 0 else (f"{res} = " if n == 1 else f"{res}:{n} = ")
        self.fn.lines.append(f"{self.fn.indent}{lhs}func.call @{sym}({', '.join(args)}) : "
                             f"({in_t}) -> ({out_t})")
        outs = [res] if n == 1 else [f"{res}#{i}" for i in range(n)]
        for o, (bitcast, reads) in zip(outs, summary):
            graph[o] = (tuple((args[i], hop) for i, hop in bitcast), tuple(args[i] for i in reads))
        return outs

    def lower_program_inline(self, program: Program, args: Sequence[str]) -> list[str]:
        """Emit ``program``'s equations inline on ``args`` (for region bodies)."""
        reshaped = self.reshaped_outs
        if reshaped is not None and len(reshaped) != len(program.outvars):
            reshaped = None
        return self.fn.lower_body(program, list(args), reshaped)

    def set_static_value(self, name: str, value: int) -> None:
        """Record that SSA value ``name`` (of this function or its regions) is ``value`` while
        lowering (``lax.platform_dependent``'s platform index)."""
        c = self.fn.counter  # names are unique per function counter (shared with its regions)
        self.module.static_values[(id(c), name)] = (c, value)

    def static_value(self, name: str) -> int | None:
        """The value recorded by :meth:`set_static_value` for ``name``, else None."""
        hit = self.module.static_values.get((id(self.fn.counter), name))
        return None if hit is None else hit[1]


class _FunctionContext:
    def __init__(self, module: ModuleContext, indent: str = "    ",
                 counter: list[int] | None = None, graph: dict | None = None) -> None:
        self.module = module
        # SSA value -> update_aliasing entry (shared with nested regions)
        self.graph: dict[str, Any] = graph if graph is not None else {}
        self.lines: list[str] = []
        self.counter = counter if counter is not None else [0]  # shared with nested regions
        self.indent = indent
        self._consts: dict[tuple, str] = {}
        # SSA name -> (value, aval) of each constant emitted here (see RuleContext.known_constant)
        self.known: dict[str, tuple[np.ndarray, ShapedArray]] = {}

    def fresh(self) -> str:
        c = self.counter
        c[0] += 1
        return f"%{c[0]}"

    def emit(self, name: str, operands: Sequence[str], operand_avals: Sequence[ShapedArray],
             result_avals: Sequence[ShapedArray], attrs: str, regions: Sequence[str]) -> Any:
        res = self.fresh()
        n = len(result_avals)
        lhs = "" if n == 0 else (f"{res} = " if n == 1 else f"{res}:{n} = ")
        reg = f" ({', '.join(regions)})" if regions else ""
        att = f" {{{attrs}}}" if attrs else ""
        in_t = ", ".join(mlir_type(a) for a in operand_avals)
        if n == 1:
            out_t = mlir_type(result_avals[0])
        else:
            out_t = "(" + ", ".join(mlir_type(a) for a in result_avals) + ")"
        self.lines.append(f'{self.indent}{lhs}"{name}"({", ".join(operands)}){reg}{att} : '
                          f"({in_t}) -> {out_t}")
        if n == 1:
            return res
        return [f"{res}#{i}" for i in range(n)]

    def constant(self, value: Any, aval: ShapedArray) -> str:
        if isinstance(aval.dtype, ExtendedDType):  # a user-defined extended dtype's physical value
            aval = physical_aval(aval)
        arr = np.asarray(value)
        key = None
        if arr.nbytes <= _DEDUP_MAX_BYTES:  # one constant per value (bits: 0.0 is not -0.0)
            key = (arr.dtype, arr.shape, arr.tobytes(), aval)
        if key is not None:
            hit = self._consts.get(key)
            if hit is not None:
                return hit
        if arr.size == 1 and aval.shape and math.prod(aval.shape) > 1:
            # A splat as broadcast_in_dim of a scalar, as JAX emits it: XLA turns a splat
            # constant into a full literal (copied into loop state, embedded in the executable),
            # while a broadcast fuses into its consumer.
            scalar = self.constant(arr.reshape(()), aval.update(shape=()))
            res = self.emit("stablehlo.broadcast_in_dim", [scalar], [aval.update(shape=())],
                            [aval], "broadcast_dimensions = array<i64>", ())
        else:
            res = self.fresh()
            self.lines.append(f'{self.indent}{res} = "stablehlo.constant"() '
                              f"{{value = {dense_attr(arr, aval)}}} : () -> {mlir_type(aval)}")
        if key is not None and self.indent == "    ":
            self._consts[key] = res
        self.known[res] = (arr, aval)
        return res

    def region(self, arg_avals, body, result_avals) -> str:
        sub = _FunctionContext(self.module, self.indent + "    ", self.counter, self.graph)
        sub._fx_parent = self  # regions capture the enclosing function's ordered-effect token
        base = sub.fresh()[1:]
        args = [f"%r{base}_{i}" for i in range(len(arg_avals))]
        rctx = RuleContext(sub, arg_avals, result_avals)
        outs = list(body(rctx, args))
        head = ", ".join(f"{a}: {mlir_type(t)}" for a, t in zip(args, arg_avals))
        ret_t = ", ".join(mlir_type(a) for a in result_avals)
        lines = ["{", f"{self.indent}  ^bb0({head}):"] + sub.lines + [
            f'{sub.indent}"stablehlo.return"({", ".join(outs)}) : ({ret_t}) -> ()',
            f"{self.indent}}}"]
        return "\n".join(lines)

    def lower_body(self, program: Program, args: list[str],
                   reshaped_outs: Sequence[bool] | None = None) -> list[str]:
        env: dict[int, str] = {}
        for v, a in zip(list(program.constvars) + list(program.invars), args):
            env[v.id] = a
        track = self.module.track_updates
        reshaped: set[int] = set()
        if track:
            reshaped = update_aliasing.reshaped_vars(program)
            for v, r in zip(program.outvars, reshaped_outs or ()):
                if r and not isinstance(v, Literal):
                    reshaped.add(v.id)
        graph = self.graph
        names_in: list = []

        def read(x: Any) -> str:
            if isinstance(x, Literal):
                return self.constant(x.val, x.aval)
            return env[x.id]

        for eqn in program.eqns:
            prim = eqn.prim
            rule = prim.lowering
            if rule is None or prim.platform_lowerings:
                rule = rule_for(prim, self.module.platform, eqn.source)
            if track:
                names_in = [None if isinstance(a, Literal) else env[a.id] for a in eqn.inputs]
            ctx = RuleContext(self, [a.aval for a in eqn.inputs], [v.aval for v in eqn.outputs],
                              eqn.source, names_in,
                              tuple(v.id in reshaped for v in eqn.outputs) if reshaped else None)
            ordered = _has_ordered_effects(eqn)
            if ordered and eqn.prim.name == "jit" and isinstance(eqn.params.get("program"), Program):
                # An inner jit with ordered host callbacks is inlined, so that this function's
                # token threads through its callbacks (a called function has its own).
                outs = self.lower_body(eqn.params["program"], [read(a) for a in eqn.inputs],
                                       ctx.reshaped_outs)
                for v, o in zip(eqn.outputs, outs):
                    env[v.id] = o
                continue
            outs = rule(ctx, *[read(a) for a in eqn.inputs], **eqn.params)
            if not eqn.prim.multiple_results:
                outs = [outs]
            if ordered:
                # Ordered host callbacks inside (a loop body, a branch): later ones of this
                # function wait for this equation's results.
                sequence_after(ctx, list(outs))
            if len(outs) != len(eqn.outputs):
                raise LoweringError(f"lowering of {eqn.prim.name} gave {len(outs)} values for "
                                    f"{len(eqn.outputs)} outputs")
            for k, (v, o) in enumerate(zip(eqn.outputs, outs)):
                env[v.id] = o
                if track and o not in graph and o not in names_in:
                    graph[o] = (eqn, names_in, k)  # made an update_aliasing entry when read
        return [read(v) for v in program.outvars]


def _lower_function(module: ModuleContext, program: Program, sym: str, public: bool,
                    arg_attrs: Sequence[str] | None = None, classes: Sequence[int] | None = None,
                    reshaped_outs: Sequence[bool] | None = None,
                    summary: list | None = None) -> str:
    """The text of ``program`` as function ``sym``. Arguments of one class in ``classes`` read
    one buffer of the caller's; ``summary`` receives its ``update_aliasing.call_summary``."""
    fn = _FunctionContext(module)
    params = list(program.constvars) + list(program.invars)
    args = [f"%arg{i}" for i in range(len(params))]
    if classes is not None:
        # the invars come after the constvars; they see the buffer they share through a
        # (conservatively assumed) reshape
        base = len(program.constvars)
        for i, c in enumerate(classes):
            if classes.count(c) > 1:
                shared = f"%shared{c}"
                fn.graph[args[base + i]] = (((shared, True),), (shared,))
    outs = fn.lower_body(program, args, reshaped_outs)
    sig = []
    for i, (a, v) in enumerate(zip(args, params)):
        extra = f" {{{arg_attrs[i]}}}" if arg_attrs and arg_attrs[i] else ""
        sig.append(f"{a}: {mlir_type(v.aval)}{extra}")
    out_types = [mlir_type(v.aval) for v in program.outvars]
    vis = "public" if public else "private"
    ret = (f"    return {', '.join(outs)} : {', '.join(out_types)}" if outs else "    return")
    if summary is not None:
        summary.append(update_aliasing.call_summary(fn.graph, args, outs))
    return "\n".join([f"  func.func {vis} @{sym}({', '.join(sig)}) -> ({', '.join(out_types)}) {{"]
                     + fn.lines + [ret, "  }"])


def donation_aliases(in_avals: Sequence[ShapedArray], out_avals: Sequence[ShapedArray],
                     donated: Sequence[bool]) -> list[int | None]:
    """For each parameter, the output whose buffer it becomes (None: not donated, or no output
    fits), as JAX pairs them on one device: each output, in order, takes the first donated
    parameter of its shape and dtype still free. Donated parameters left over are reported with
    JAX's warning ("Some donated buffers were not usable").

    Example:
        >>> f32, i32 = ShapedArray((), np.float32), ShapedArray((), np.int32)
        >>> donation_aliases([f32, f32], [i32, f32], [True, False])  # not into the int32 output
        [1, None]
    """
    aliases: list[int | None] = [None] * len(in_avals)
    if not any(donated):
        return aliases
    # keyed by the aval's own dtype: an extended dtype (a key, a user's) is no NumPy dtype
    free: dict[tuple, list[int]] = {}
    for i, a in enumerate(in_avals):
        if i < len(donated) and donated[i]:
            free.setdefault((tuple(a.shape), a.dtype), []).append(i)
    for k, a in enumerate(out_avals):
        waiting = free.get((tuple(a.shape), a.dtype))
        if waiting:
            aliases[waiting.pop(0)] = k
    unused = [a for i, a in enumerate(in_avals)
              if i < len(donated) and donated[i] and aliases[i] is None]
    if unused:
        shown = ", ".join(f"{getattr(a.dtype, 'name', a.dtype)}[{','.join(map(str, a.shape))}]"
                          for a in unused)
        warnings.warn(f"Some donated buffers were not usable: {shown}.\nSee an explanation at "
                      "https://docs.jax.dev/en/latest/faq.html#buffer-donation.", stacklevel=2)
    return aliases


def lower_program(program: Program, name: str = "main", *, donated: Sequence[bool] = (),
                  platform: str = "cpu") -> str:
    """The StableHLO module text of ``program`` (constvars first, then invars, as parameters).

    ``donated[i]`` marks parameter ``i`` as a buffer XLA may reuse for an output.
    """
    module = ModuleContext(name, platform)
    params = list(program.constvars) + list(program.invars)
    aliases = donation_aliases([v.aval for v in params], [v.aval for v in program.outvars],
                               donated)
    attrs = [f"tf.aliasing_output = {k} : i32" if k is not None else "" for k in aliases]
    module.track_updates = _program_has_updates(program)
    main = _lower_function(module, program, "main", public=True, arg_attrs=attrs)
    sym = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "main"
    body = "\n".join([main] + module.functions)
    text = (f"module @{sym} attributes {{mhlo.num_partitions = 1 : i32, "
            f"mhlo.num_replicas = 1 : i32}} {{\n{body}\n}}\n")
    callbacks = module.__dict__.get("host_callbacks")
    return ModuleText(text, callbacks) if callbacks else text


def lower_program_multi(program: Program, platforms: Sequence[str], name: str = "main") -> str:
    """The module text of ``program`` for several platforms at once, as ``jax.export`` makes
    it: ``main`` takes the platform's index in ``platforms`` (an ``i32`` scalar) before the
    program's parameters and runs that platform's lowering of the program (one private function
    per platform, each lowered with the platform's rules) through a ``stablehlo.case``."""
    plats = list(platforms)
    if len(plats) == 1:
        return lower_program(program, name, platform=plats[0])
    module = ModuleContext(name, plats[0])
    module.track_updates = _program_has_updates(program)
    syms = []
    for p in plats:
        module.platform = p
        module._lowered = {}  # nested programs are lowered again with this platform's rules
        sym = f"_platform_{p}"
        module._names.add(sym)
        module.functions.append(_lower_function(module, program, sym, public=False))
        syms.append(sym)
    params = list(program.constvars) + list(program.invars)
    in_t = [mlir_type(v.aval) for v in params]
    out_t = [mlir_type(v.aval) for v in program.outvars]
    args = [f"%arg{i + 1}" for i in range(len(params))]
    n = len(out_t)
    branches = []
    for k, sym in enumerate(syms):
        lhs = "" if n == 0 else (f"%b{k} = " if n == 1 else f"%b{k}:{n} = ")
        res = [] if n == 0 else ([f"%b{k}"] if n == 1 else [f"%b{k}#{i}" for i in range(n)])
        branches.append(
            "{\n"
            f"      {lhs}func.call @{sym}({', '.join(args)}) : ({', '.join(in_t)}) -> "
            f"({', '.join(out_t)})\n"
            f'      "stablehlo.return"({", ".join(res)}) : ({", ".join(out_t)}) -> ()\n'
            "    }")
    lhs = "" if n == 0 else ("%0 = " if n == 1 else f"%0:{n} = ")
    outs = [] if n == 0 else (["%0"] if n == 1 else [f"%0#{i}" for i in range(n)])
    sig = ", ".join(['%arg0: tensor<i32> {jax.global_constant = "_platform_index"}']
                    + [f"{a}: {t}" for a, t in zip(args, in_t)])
    ret = f"    return {', '.join(outs)} : {', '.join(out_t)}" if outs else "    return"
    main = "\n".join([
        f"  func.func public @main({sig}) -> ({', '.join(out_t)}) {{",
        f'    {lhs}"stablehlo.case"(%arg0) ({", ".join(branches)}) : (tensor<i32>) -> '
        f"({', '.join(out_t)})",
        ret, "  }"])
    sym = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "main"
    body = "\n".join([main] + module.functions)
    return (f"module @{sym} attributes {{mhlo.num_partitions = 1 : i32, "
            f"mhlo.num_replicas = 1 : i32}} {{\n{body}\n}}\n")


# Whether a Program has ordered effects, remembered while the Program lives (weakly keyed: a
# strong table kept the Programs of dropped functions alive).
_ORDERED: "weakref.WeakKeyDictionary[Program, bool]" = weakref.WeakKeyDictionary()


def _program_has_ordered(program: Program) -> bool:
    hit = _ORDERED.get(program)
    if hit is not None:
        return hit
    found = any((e.prim.effectful and e.params.get("ordered") is True) or _has_ordered_effects(e)
                for e in program.eqns)
    _ORDERED[program] = found
    return found


# Whether a Program (or one nested in it) updates an array in place (update_aliasing), weakly
# keyed like _ORDERED.
_UPDATES: "weakref.WeakKeyDictionary[Program, bool]" = weakref.WeakKeyDictionary()


def _program_has_updates(program: Program) -> bool:
    hit = _UPDATES.get(program)
    if hit is not None:
        return hit
    found = False
    for e in program.eqns:
        if e.prim.in_place is not None:
            found = True
            break
        for v in (e.params or {}).values():
            for p in (v if isinstance(v, tuple) else (v,)):
                inner = getattr(p, "program", p)
                if isinstance(inner, Program) and _program_has_updates(inner):
                    found = True
        if found:
            break
    _UPDATES[program] = found
    return found


def _has_ordered_effects(eqn: Any) -> bool:
    """True when a sub-program of ``eqn`` (a loop body, a branch, a called program) runs an
    ordered host callback."""
    if not eqn.params:
        return False
    for v in eqn.params.values():
        progs = v if isinstance(v, tuple) else (v,)
        for p in progs:
            inner = getattr(p, "program", p)  # closed programs carry theirs
            if isinstance(inner, Program) and _program_has_ordered(inner):
                return True
    return False


class ModuleText(str):
    """Module text whose host-callback custom calls index ``host_callbacks`` (the Python
    callables to compile it with; see ``fluxion.backend.callback``)."""

    host_callbacks: list

    def __new__(cls, text: str, host_callbacks: list) -> "ModuleText":
        self = super().__new__(cls, text)
        self.host_callbacks = host_callbacks
        return self


# ------------------------------------------------------------------ ordered-effect tokens
# Ordered host callbacks (backend/callback.py) thread a token through their function.

# XLA's host-callback custom call (the FFI callback of the Python runtime) per platform: the
# CPU's and the GPU's take the same operands and ``backend_config`` (the callable's index), as
# jax 0.10.2 emits them; the TPU's callbacks are host transfers instead (backend/callback.py).
HOST_CALLBACK_TARGETS = {"cpu": "xla_ffi_python_cpu_callback",
                         "cuda": "xla_ffi_python_gpu_callback",
                         "rocm": "xla_ffi_python_gpu_callback"}


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


# platform -> ``emit(ctx, values)``: the no-op host round trip of :func:`sequence_after` on a
# platform whose host callbacks are not the CPU's custom call (backend/callback.py sets the
# TPU's send/recv one; ordered callbacks are lowered only once that module is imported)
SEQUENCE_EMITTERS: dict[str, Callable[[Any, list], None]] = {}


def sequence_after(ctx: Any, values: list[str]) -> None:
    """Make the later ordered callbacks of ``ctx``'s function wait for ``values`` (the results
    of a loop or branch whose body runs ordered callbacks): a no-op host call takes the token
    and one of them."""
    if not values:
        return
    target = HOST_CALLBACK_TARGETS.get(ctx.module.platform)
    if target is None:
        emit = SEQUENCE_EMITTERS.get(ctx.module.platform)
        if emit is not None:
            emit(ctx, values)
        return
    fn = ctx.fn
    i = min(range(len(values)), key=lambda k: ctx.avals_out[k].size)
    cbs = ctx.module.__dict__.setdefault("host_callbacks", [])
    index = len(cbs)
    cbs.append(_sync)
    tok = current_token(fn)
    res = fn.fresh()
    fn.lines.append(
        f'{fn.indent}{res} = "stablehlo.custom_call"({tok}, {values[i]}) {{call_target_name = '
        f'"{target}", has_side_effect = true, api_version = 4 : i32, backend_config = '
        f"{{index = {index} : ui64}}}} : (!stablehlo.token, {mlir_type(ctx.avals_out[i])}) -> "
        "!stablehlo.token")
    fn._fx_token = res

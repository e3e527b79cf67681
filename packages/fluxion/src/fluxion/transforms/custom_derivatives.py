"""User-defined derivatives: ``custom_jvp``, ``custom_vjp``, ``custom_gradient``,
``closure_convert``; ``SymbolicZero`` and ``CustomVJPPrimal`` for rules that take symbolic zeros.

A call of a decorated function is processed by the interpreter that is current, as each of JAX's
traces processes it:

- outside every transformation the function simply runs;
- a JVP that differentiates one of the arguments (``jvp``, ``grad``, ``vjp``, ``linearize``) does
  not run the function: it calls the user's rule on the primal values, with its parent
  interpreter current, so under eager ``grad`` the rule sees concrete values and Python control
  flow on them works. For ``custom_vjp``, ``fwd`` runs then and a ``custom_lin`` equation
  carrying ``bwd`` goes into the linear program; transposing it calls ``bwd``;
- an interpreter that owns none of the arguments (a JVP of other values, a linearization whose
  inputs here are all known) passes the call on to its parent unchanged;
- any other interpreter (``jit``, ``make_jaxpr``, ``vmap``) stages the function to a Program and
  records a ``custom_jvp_call`` / ``custom_vjp_call`` equation carrying the rules, so they survive
  ``jit`` and ``vmap`` and are used by any later differentiation.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> @fluxion.custom_jvp
    ... def f(x):
    ...     return jnp.sin(x)
    >>> @f.defjvp
    ... def f_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return f(x), 2.0 * t
    >>> float(fluxion.grad(f)(0.0))
    2.0
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Sequence

from fluxion.core import dtypes
from fluxion.core import linear_util as lu
from fluxion.core import vma as _vma_rules
from fluxion.core.avals import ShapedArray, keep_sharding_rule
from fluxion.core.errors import UnexpectedTracerError
from fluxion.core.ir import Program, eval_program
from fluxion.core.primitive import Primitive
from fluxion.core.trace import (
    EVAL,
    STATE,
    EvalInterpreter,
    Interpreter,
    Trace,
    Tracer,
    check_live,
    set_current,
)
from fluxion.core.tracebacks import api_boundary
from fluxion.transforms import ad, array_ops, batching, jet
from fluxion.transforms.ad import (
    JVPInterpreter,
    JVPTracer,
    UndefinedPrimal,
    Zero,
    aval_of,
    instantiate,
    tangent_aval,
)
from fluxion.transforms.custom_common import (
    CustomVJPPrimal,
    SymbolicZero,
    _is_zero,
    _stage,
    _to_rule,
    custom_vjp_primal_tree_values,
    zero_from_primal,
)
from fluxion.transforms.linear_call import linear_call, linear_call_p
from fluxion.transforms.partial_eval import PartialEvalInterpreter
from fluxion.transforms.staging import (
    abstractify,
    fun_name,
    partial_at,
    trace_to_program,
)
from fluxion.tree_util import physical as tree_util

__all__ = ["custom_jvp", "custom_vjp", "custom_gradient", "closure_convert", "linear_call",
           "SymbolicZero", "CustomVJPPrimal", "custom_vjp_primal_tree_values", "zero_from_primal",
           "custom_jvp_call_p", "custom_vjp_call_p", "custom_lin_p", "linear_call_p"]


# ----------------------------------------------------------------------------- processing calls
# One call of a decorated function, flattened: the primal function over leaves and its rules.
# Each interpreter class has a handler (JAX's process_custom_jvp_call / process_custom_vjp_call).


class _JVPCall:
    __slots__ = ("name", "fun", "rule", "symbolic_zeros")

    def __init__(self, name: str, fun: Callable, rule: Callable, symbolic_zeros: bool) -> None:
        self.name = name
        self.fun = fun            # fun(*leaves) -> output leaves
        self.rule = rule          # rule(primals, tangents with Zero) -> (outs, tangents with Zero)
        self.symbolic_zeros = symbolic_zeros


class _VJPCall:
    __slots__ = ("name", "fun", "fwd", "bwd", "symbolic_zeros")

    def __init__(self, name: str, fun: Callable, fwd: Callable, bwd: Callable,
                 symbolic_zeros: bool) -> None:
        self.name = name
        self.fun = fun            # fun(*leaves) -> output leaves
        self.fwd = fwd            # fwd(primals, perturbed) -> (array residuals, outputs)
        self.bwd = bwd            # bwd(residuals, cts with Zero) -> per input: ct or None
        self.symbolic_zeros = symbolic_zeros


def _process(handlers: dict[type, Callable], call: Any, args: list) -> list:
    interp = STATE.interp
    for cls in type(interp).__mro__:
        handler = handlers.get(cls)
        if handler is not None:
            return handler(interp, call, args)
    raise AssertionError("Interpreter has a handler")  # pragma: no cover


def _run(interp: Interpreter, call: Any, args: list) -> list:
    return list(call.fun(*args))


def _unpack(it: JVPInterpreter, args: list) -> tuple[list, list, bool]:
    primals, tangents, owned = [], [], False
    for x in args:
        if type(x) is JVPTracer and x._interp is it:
            primals.append(x.primal)
            tangents.append(x.tangent)
            owned = True
        else:
            if isinstance(x, Tracer):
                check_live(x, it)
            primals.append(x)
            tangents.append(Zero(tangent_aval(aval_of(x))))
    return primals, tangents, owned


def _pack(it: JVPInterpreter, outs: list, tangents: list) -> list:
    return [o if type(t) is Zero else JVPTracer(it, o, t) for o, t in zip(outs, tangents)]


_CLOSURE_HINT = ("A custom_jvp or custom_vjp function and its rules see the values being "
                 "differentiated only through their arguments (as in JAX): if {name} closes over "
                 "one, pass it as an argument instead, or hoist it with "
                 "fluxion.closure_convert.")


def _with_closure_hint(name: str, run: Callable[[], Any]) -> Any:
    """``run()``; a leaked-tracer error gets a hint about closures over differentiated values
    (the likely cause, since the function and rules run outside the JVP)."""
    try:
        return run()
    except UnexpectedTracerError as e:
        hint = _CLOSURE_HINT.format(name=name)
        if hint in str(e):
            raise
        raise UnexpectedTracerError(f"{e} {hint}") from e


def _jvp_call_jvp(it: JVPInterpreter, call: _JVPCall, args: list) -> list:
    primals, tangents, owned = _unpack(it, args)
    with set_current(it.parent):
        if not owned:
            return _with_closure_hint(call.name,
                                      lambda: _process(_JVP_HANDLERS, call, primals))
        outs, t_outs = _with_closure_hint(call.name, lambda: call.rule(primals, tangents))
    return _pack(it, outs, t_outs)


def _jvp_call_stage(interp: Interpreter, call: _JVPCall, args: list) -> list:
    program, consts = _stage(call.fun, [abstractify(x) for x in args], call.name)
    return custom_jvp_call_p.bind(*consts, *args, call=program, jvp=call.rule,
                                  num_consts=len(consts), name=call.name,
                                  symbolic_zeros=call.symbolic_zeros)


def _vjp_call_jvp(it: JVPInterpreter, call: _VJPCall, args: list) -> list:
    primals, tangents, owned = _unpack(it, args)
    with set_current(it.parent):
        if not owned:
            return _with_closure_hint(call.name,
                                      lambda: _process(_VJP_HANDLERS, call, primals))
        outs, t_outs = _with_closure_hint(call.name, lambda: _linearize_vjp_call(
            call.fwd, call.bwd, call.name, primals, tangents))
    return _pack(it, outs, t_outs)


def _vjp_call_stage(interp: Interpreter, call: _VJPCall, args: list) -> list:
    program, consts = _stage(call.fun, [abstractify(x) for x in args], call.name)
    return custom_vjp_call_p.bind(*consts, *args, call=program, fwd=call.fwd, bwd=call.bwd,
                                  num_consts=len(consts), name=call.name,
                                  symbolic_zeros=call.symbolic_zeros)


def _linearize_handler(stage: Callable, handlers: Callable[[], dict]) -> Callable:
    """Partial evaluation of a custom call: staged whole when an argument is unknown, else
    processed now by the parent interpreter."""
    def handle(pe: PartialEvalInterpreter, call: Any, args: list) -> list:
        if any(pe.is_unknown(a) for a in args):
            return stage(pe, call, args)
        with set_current(pe.parent):
            return _process(handlers(), call, args)
    return handle


def _jvp_call_user(trace: Trace, call: _JVPCall, args: list) -> list:
    """A user-defined trace gets the call as JAX hands it over: ``process_custom_jvp_call``
    with the flat function and the flat rule (``jvp(*primals, *tangents)`` returns the primal
    outputs then their tangents) as WrappedFuns, run with no trace current."""
    n = len(args)

    def fun(*xs: Any) -> list:
        return call.fun(*xs)

    def jvp(*xs: Any) -> list:
        tangents = [_from_rule(t) for t in xs[n:]]
        outs, t_outs = call.rule(list(xs[:n]), tangents)
        return [*outs, *(instantiate(t) for t in t_outs)]

    fun.__name__, jvp.__name__ = call.name, getattr(call.rule, "__name__", "jvp")
    with set_current(EVAL):
        outs = trace.process_custom_jvp_call(custom_jvp_call_p, lu.wrap_init(fun),
                                             lu.wrap_init(jvp), list(args),
                                             symbolic_zeros=call.symbolic_zeros)
    return list(outs)


def _from_rule(t: Any) -> Any:
    """A tangent handed to a rule from outside: JAX's SymbolicZero as Fluxion's Zero."""
    return Zero(t.aval) if type(t) is SymbolicZero else t


_JVP_HANDLERS: dict[type, Callable] = {
    EvalInterpreter: _run, JVPInterpreter: _jvp_call_jvp,
    PartialEvalInterpreter: _linearize_handler(_jvp_call_stage, lambda: _JVP_HANDLERS),
    Trace: _jvp_call_user, Interpreter: _jvp_call_stage}
_VJP_HANDLERS: dict[type, Callable] = {
    EvalInterpreter: _run, JVPInterpreter: _vjp_call_jvp,
    PartialEvalInterpreter: _linearize_handler(_vjp_call_stage, lambda: _VJP_HANDLERS),
    Interpreter: _vjp_call_stage}


def _linearize_vjp_call(fwd: Callable, bwd: Callable, name: str, primals: list,
                        tangents: list) -> tuple[list, list]:
    """The JVP of a custom_vjp call: ``fwd`` runs now; the output tangents are a ``custom_lin``
    of the nonzero input tangents, whose transpose calls ``bwd``."""
    perturbed = [type(t) is not Zero for t in tangents]
    res, outs = fwd(primals, perturbed)
    out_tavals = [tangent_aval(aval_of(o)) for o in outs]
    live = [a.dtype != dtypes.float0 for a in out_tavals]

    def lin_bwd(res: list, cts: list) -> list:
        it = iter(cts)
        cts_in = bwd(res, [next(it) if lv else Zero(a) for lv, a in zip(live, out_tavals)])
        return [c for c, p in zip(cts_in, perturbed) if p]

    nz = [t for t in tangents if type(t) is not Zero]
    t_live = iter(custom_lin_p.bind(*res, *nz, bwd=lin_bwd, num_res=len(res),
                                    out_avals=tuple(a for a, lv in zip(out_tavals, live) if lv),
                                    name=name))
    return outs, [next(t_live) if lv else Zero(a) for lv, a in zip(live, out_tavals)]


# ----------------------------------------------------------------------------- custom_jvp

class _CustomJVPCallPrimitive(Primitive):
    """``custom_jvp_call``, whose bind parameters are JAX's: ``get_bind_params`` gives the
    function and its rule as ``subfuns`` (callables with ``call_wrapped``; equinox's
    ``finalise_jaxpr`` inlines the function through them) and ``bind`` takes them back."""

    __slots__ = ()

    def get_bind_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` with ``call``/``jvp`` as JAX's ``subfuns`` pair (see the class).

        Example:
            >>> import fluxion
            >>> f = fluxion.custom_jvp(lambda x: x * 2.0)
            >>> _ = f.defjvp(lambda p, t: (f(p[0]), 2.0 * t[0]))
            >>> eqn = fluxion.make_jaxpr(f)(1.0).eqns[0]
            >>> fun, _ = eqn.primitive.get_bind_params(eqn.params)["subfuns"]
            >>> [float(v) for v in fun.call_wrapped(3.0)]
            [6.0]
        """
        rest = {k: v for k, v in params.items() if k not in ("call", "jvp")}
        call = lu.wrap_init(functools.partial(_eval_closed, params["call"]))
        return {"subfuns": (call, lu.wrap_init(params["jvp"])), **rest}

    def bind(self, *args: Any, **params: Any) -> Any:
        subfuns = params.pop("subfuns", None)
        if subfuns is not None:
            call, jvp = subfuns
            inner = getattr(call, "f", None)
            if not (isinstance(inner, functools.partial) and inner.func is _eval_closed):
                raise TypeError("custom_jvp_call: subfuns must be the pair get_bind_params "
                                "gave (Fluxion keeps the function as a staged program)")
            params = dict(params, call=inner.args[0], jvp=jvp.f)
        return super().bind(*args, **params)


def _eval_closed(program: Program, *args: Any) -> list:
    return eval_program(program, [], list(args))


custom_jvp_call_p = _CustomJVPCallPrimitive("custom_jvp_call", multiple_results=True)
custom_jvp_call_p.sharding = keep_sharding_rule
custom_jvp_call_p.vma = _vma_rules.call_rule


def _custom_jvp_call_abstract_eval(*avals: ShapedArray, call: Program, **params: Any) -> list:
    return call.out_avals


def _custom_jvp_call_impl(*args: Any, call: Program, **params: Any) -> list:
    return eval_program(call, [], args)


def _custom_call_lowering(ctx: Any, *args: str, call: Program, **params: Any) -> list:
    return ctx.lower_program_inline(call, list(args))


def _custom_jvp_call_jvp(primals: list, tangents: list, *, call: Program, jvp: Callable,
                         num_consts: int, name: str, symbolic_zeros: bool) -> tuple:
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        # The function closes over values being differentiated, which its rule cannot see:
        # differentiate the function itself.
        return ad.jvp_call(call, primals, tangents,
                           lambda jprog, args: eval_program(jprog, [], args))
    return jvp(primals[num_consts:], tangents[num_consts:])


def _per_example(aval: ShapedArray, d: int | None) -> ShapedArray:
    return aval if d is None else aval.update(shape=aval.shape[:d] + aval.shape[d + 1:])


def _batch_call(call: Program, dims: Sequence[Any], axis: batching.AxisData
                ) -> tuple[Program, list, list]:
    """The staged function of a custom call batched as JAX batches it: the inputs stay at their
    batch dimensions and each output keeps the one its body gave it (None: unbatched)."""
    bcall, bconsts, out_dims = batching.batch_program(call, dims, axis)
    return bcall, bconsts, list(out_dims)


class _RuleDims:
    """The outputs' batch dimensions of one batched custom call, as JAX settles them: the
    body's, unless a rule runs while the call is bound (an enclosing jvp or grad): then the
    rule's, merged over primal and tangent (an output the body leaves unbatched is batched where
    the rule batches it). A rule run later (the call staged under jit) must keep the body's."""

    __slots__ = ("dims", "binding", "name")

    def __init__(self, body_dims: list, name: str) -> None:
        self.dims, self.binding, self.name = list(body_dims), False, name

    def settle(self, i: int, got: Any) -> Any:
        """The batch dimension of output ``i`` given the rule's ``got``."""
        if self.dims[i] is None and got is not None:
            if not self.binding:
                raise TypeError(
                    f"vmap of {self.name}: its rule batches output {i}, which the function itself "
                    f"leaves unbatched, after the call was staged with the function's type (under "
                    f"jit); make the rule's output independent of the mapped inputs as the "
                    f"function's is")
            self.dims[i] = got
        return self.dims[i]

    def bind(self, prim: Primitive, *args: Any, **params: Any) -> tuple[list, list]:
        self.binding = True
        try:
            outs = prim.bind(*args, **params)
        finally:
            self.binding = False
        return outs, list(self.dims)


def _custom_jvp_call_batch(axis: batching.AxisData, args: Sequence[Any], dims: Sequence[Any], *,
                           call: Program, jvp: Callable, num_consts: int, name: str,
                           symbolic_zeros: bool) -> tuple:
    """vmap of a custom_jvp call: a custom_jvp call of the batched program whose rule is the
    user's rule batched along the same axis (so grad(vmap(f)) uses the rule). As in JAX, the
    inputs keep their batch dimensions and the outputs get those the function's body gives
    them; the rule's outputs are moved to the same."""
    params = dict(num_consts=num_consts, name=name, symbolic_zeros=symbolic_zeros)
    if all(d is None for d in dims) and (
            axis.name is None or not batching._uses_axis(call, axis.name)):
        outs = custom_jvp_call_p.bind(*args, call=call, jvp=jvp, **params)
        return outs, [None] * len(outs)
    bcall, bconsts, body_dims = _batch_call(call, dims, axis)
    settled = _RuleDims(body_dims, name)
    rule_dims = list(dims[num_consts:])
    per_avals = [_per_example(aval_of(x), d) for x, d in zip(args[num_consts:], rule_dims)]

    def batched_jvp(primals: list, tangents: list) -> tuple:
        # A tangent is batched like its primal; zero tangents stay symbolic inside the vmap.
        nz = [type(t) is not Zero for t in tangents]
        n = len(primals)

        def one(xs: list) -> list:
            it = iter(xs[n:])
            full = [next(it) if z else Zero(tangent_aval(a)) for z, a in zip(nz, per_avals)]
            p_out, t_out = jvp(list(xs[:n]), full)
            return [*p_out, *t_out]

        vals, got = batching.batch_subtrace(
            axis, one, [*primals, *(t for t in tangents if type(t) is not Zero)],
            [*rule_dims, *(d for d, z in zip(rule_dims, nz) if z)])
        k = len(vals) // 2
        # JAX's merge of the primal's and the tangent's batch dimensions (a symbolic zero
        # tangent has none), then the dimension the call settles on
        dsts = [settled.settle(i, got[i] if got[i] is not None else
                               None if type(vals[k + i]) is Zero else got[k + i])
                for i in range(k)]
        p_out = [v if d is None and dst is None else array_ops.matchaxis(v, d, dst, axis.size)
                 for v, d, dst in zip(vals[:k], got[:k], dsts)]
        t_out = [t if type(t) is Zero or (d is None and dst is None)
                 else array_ops.matchaxis(t, d, dst, axis.size)
                 for t, d, dst in zip(vals[k:], got[k:], dsts)]
        t_out = [Zero(tangent_aval(aval_of(p))) if type(t) is Zero else t
                 for p, t in zip(p_out, t_out)]
        return p_out, t_out

    batched_jvp.__name__ = getattr(jvp, "__name__", "jvp")
    return settled.bind(custom_jvp_call_p, *bconsts, *args, call=bcall, jvp=batched_jvp,
                        **dict(params, num_consts=len(bconsts) + num_consts))


def _custom_call_printed_params(params: dict[str, Any], rules: Sequence[str]
                                ) -> list[tuple[str, Any]]:
    """As JAX prints custom calls: the name first, the rules by name, the staged function as
    ``call_jaxpr``, ``num_consts`` only when nonzero."""
    shown = {k: v for k, v in params.items() if k not in ("name", "call", "num_consts")}
    shown["call_jaxpr"] = params["call"]
    for r in rules:
        shown[r] = fun_name(params[r])
    if params["num_consts"]:
        shown["num_consts"] = params["num_consts"]
    return [("name", params["name"])] + sorted(shown.items())


def _custom_jvp_call_transpose(cts: list, *args: Any, call: Program, **params: Any) -> list:
    # Reached when a custom_jvp function is applied to tangents (its own jvp rule calling it on
    # them, as jax_md's space.transform does): the call is then linear in those inputs and is
    # transposed as its function, the rule no longer needed (JAX inlines such calls while
    # linearizing).
    cts_in = iter(ad.backward_pass(call, [], list(args), cts))
    return [next(cts_in) if ad.is_undefined(a) else None for a in args]


custom_jvp_call_p.abstract_eval = _custom_jvp_call_abstract_eval
custom_jvp_call_p.impl = _custom_jvp_call_impl
custom_jvp_call_p.transpose = _custom_jvp_call_transpose
custom_jvp_call_p.lowering = _custom_call_lowering
custom_jvp_call_p.jvp = _custom_jvp_call_jvp
custom_jvp_call_p.batch = _custom_jvp_call_batch
custom_jvp_call_p.batch_unmapped = True
custom_jvp_call_p.jet = jet.inline_prop("call")  # the function; its rule set aside, as JAX
custom_jvp_call_p.print_params = functools.partial(_custom_call_printed_params,
                                                      rules=("jvp",))


class _CustomRuleFunction:
    """What custom_jvp and custom_vjp share: method binding and argument splitting."""

    fun: Callable
    nondiff_argnums: tuple[int, ...]

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        return functools.partial(self, obj)

    def _positional(self, args: tuple, kwargs: dict) -> tuple:
        """The call's arguments by position, defaults filled in (JAX's ``resolve_kwargs``): a
        defaulted argument is passed to the rules too, and counts for ``nondiff_argnums``."""
        sig = self.__dict__.get("_signature", False)
        if sig is False:
            try:
                sig = inspect.signature(self.fun)
            except (TypeError, ValueError):  # no signature (a builtin): positions as given
                sig = None
            self.__dict__["_signature"] = sig
        if sig is None:
            return args
        if not kwargs and len(args) >= len(sig.parameters):
            return args
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        return bound.args

    def _nondiff(self, args: tuple) -> tuple[int, ...]:
        return tuple(i % len(args) for i in self.nondiff_argnums)

    def _split(self, args: tuple) -> tuple[list, list[int], tuple]:
        """(non-differentiable values, positions of the others, the others)."""
        nd = self._nondiff(args)
        dyn_idx = [i for i in range(len(args)) if i not in nd]
        return [args[i] for i in nd], dyn_idx, tuple(args[i] for i in dyn_idx)


def _record_out_tree(store: dict, key: str, tree: Any, name: str, rule: str) -> None:
    """Remember the output structure of the function (``key="fun"``) or of the primal output of
    its ``rule`` (``key="rule"``); the two must agree."""
    store[key] = tree
    fun_tree, rule_tree = store.get("fun"), store.get("rule")
    if fun_tree is not None and rule_tree is not None and fun_tree != rule_tree:
        raise TypeError(f"{rule} of {name}: the primal output has structure {rule_tree}, but "
                        f"{name} returns {fun_tree}")


def _out_tree(store: dict) -> Any:
    return store["fun"] if "fun" in store else store["rule"]


def _stop_gradient(x: Any) -> Any:
    """``x`` without the JVP tracers around it: a non-differentiable argument has zero
    derivative, as in JAX."""
    while type(x) is JVPTracer:
        x = x.primal
    return x


class custom_jvp(_CustomRuleFunction):
    """A function with a user-defined JVP rule (``@f.defjvp`` or ``f.defjvps``).

    ``nondiff_argnums`` name arguments that are not differentiated; they are passed first to the
    rule: ``rule(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)``. With
    ``defjvp(rule, symbolic_zeros=True)`` the rule receives a :class:`SymbolicZero` for each
    tangent that is zero, and may return one.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> @fluxion.custom_jvp
        ... def relu(x):
        ...     return jnp.maximum(x, 0.0)
        >>> relu.defjvps(lambda g, ans, x: jnp.where(x > 0, g, 0.0))
        >>> float(fluxion.grad(relu)(0.0))
        0.0
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()) -> None:
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp: Callable | None = None
        self.symbolic_zeros = False
        functools.update_wrapper(self, fun)

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """Set the rule ``jvp(primals, tangents) -> (primal_out, tangent_out)``."""
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """Set the rule from one function per argument, ``jvp_i(g_i, ans, *primals)``, giving
        that argument's contribution (``None``: no contribution)."""
        def jvp(primals: tuple, tangents: tuple) -> tuple:
            ans = self(*primals)
            acc = None
            for fn, t in zip(jvps, tangents):
                if fn is None:
                    continue
                c = fn(t, ans, *primals)
                acc = c if acc is None else tree_util.tree_map(lambda a, b: a + b, acc, c)
            if acc is None:
                acc = zero_from_primal(ans)
            return ans, acc
        self.defjvp(jvp)

    @api_boundary
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = fun_name(self.fun)
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
        args = self._positional(args, kwargs)
        if STATE.interp is EVAL:
            return self.fun(*args)
        nondiff = self._nondiff(args)
        args = tuple(tree_util.tree_map(_stop_gradient, a) if i in nondiff else a
                     for i, a in enumerate(args))
        static, dyn_idx, dyn = self._split(args)
        fun = partial_at(self.fun, args, dyn_idx)
        leaves, in_tree = tree_util.tree_flatten(dyn)
        user_jvp, symbolic_zeros = self.jvp, self.symbolic_zeros
        store: dict[str, Any] = {}

        def flat_fun(*xs: Any) -> list:
            out_flat, out_tree = tree_util.tree_flatten(fun(*tree_util.tree_unflatten(in_tree, xs)))
            _record_out_tree(store, "fun", out_tree, name, "custom_jvp rule")
            return out_flat

        def flat_rule(primals: list, tangents: list) -> tuple[list, list]:
            ps = tree_util.tree_unflatten(in_tree, primals)
            ts = tree_util.tree_unflatten(in_tree, [_to_rule(t, symbolic_zeros) for t in tangents])
            res = user_jvp(*static, tuple(ps), tuple(ts))
            if not isinstance(res, (tuple, list)) or len(res) != 2:
                raise TypeError(f"custom_jvp rule of {name} must return a pair (primal_out, "
                                f"tangent_out), got {type(res).__name__}")
            p_flat, p_tree = tree_util.tree_flatten(res[0])
            t_flat, t_tree = tree_util.tree_flatten(res[1])
            _record_out_tree(store, "rule", p_tree, name, "custom_jvp rule")
            if t_tree != p_tree:
                raise TypeError(f"custom_jvp rule of {name}: the tangent output has structure "
                                f"{t_tree}, expected the primal output's structure {p_tree}")
            return p_flat, [_rule_tangent(name, i, p, t) for i, (p, t) in
                            enumerate(zip(p_flat, t_flat))]

        flat_rule.__name__ = fun_name(user_jvp)
        call = _JVPCall(name, flat_fun, flat_rule, symbolic_zeros)
        outs = _process(_JVP_HANDLERS, call, leaves)
        return tree_util.tree_unflatten(_out_tree(store), outs)


def _rule_tangent(name: str, i: int, primal: Any, t: Any) -> Any:
    """A tangent returned by a custom_jvp rule, checked, as an internal tangent."""
    want = tangent_aval(aval_of(primal))
    if type(t) is SymbolicZero:
        t_aval = t.aval
    else:
        t_aval = aval_of(t)
    if want.dtype != dtypes.float0 and (t_aval.shape != want.shape or t_aval.dtype != want.dtype):
        raise TypeError(
            f"custom_jvp rule of {name}: tangent output {i} should have the shape and dtype of "
            f"the primal output ({want.str_short()}), got {t_aval.str_short()}")
    if type(t) is SymbolicZero or want.dtype == dtypes.float0:
        return Zero(want)
    return t


# ----------------------------------------------------------------------------- custom_vjp

custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
custom_vjp_call_p.sharding = keep_sharding_rule
custom_vjp_call_p.vma = _vma_rules.call_rule


def _custom_vjp_call_jvp(primals: list, tangents: list, *, call: Program, fwd: Callable,
                         bwd: Callable, num_consts: int, name: str, symbolic_zeros: bool) -> tuple:
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        raise TypeError(
            f"custom_vjp function {name} closes over a value that is being differentiated; "
            "pass it as an explicit argument, or use fluxion.closure_convert to hoist it.")
    return _linearize_vjp_call(fwd, bwd, name, primals[num_consts:], tangents[num_consts:])


def _sum_batch(x: Any, d: int) -> Any:
    """``x`` summed over its batch dimension ``d``: the transpose of broadcasting along it (the
    machinery cannot import lax's reduce_sum)."""
    aval = aval_of(x)
    one = aval.update(shape=aval.shape[:d] + aval.shape[d + 1:])
    program, consts, _ = trace_to_program(
        lambda y: array_ops.broadcast_batch(y, aval.shape[d], d), (x,), {}, in_avals=[one])
    return ad.backward_pass(program, consts, [UndefinedPrimal(one)], [x])[0]


def _custom_vjp_call_batch(axis: batching.AxisData, args: Sequence[Any], dims: Sequence[Any], *,
                           call: Program, fwd: Callable, bwd: Callable, num_consts: int,
                           name: str, symbolic_zeros: bool) -> tuple:
    """vmap of a custom_vjp call: a custom_vjp call of the batched program whose rules are the
    user's batched along the same axis. As in JAX, the inputs keep their batch dimensions, the
    outputs and residuals get those the bodies give them, and ``bwd``'s cotangents are moved to
    their inputs' batch dimensions (summed where an input is unbatched)."""
    params = dict(num_consts=num_consts, name=name, symbolic_zeros=symbolic_zeros)
    if all(d is None for d in dims) and (
            axis.name is None or not batching._uses_axis(call, axis.name)):
        outs = custom_vjp_call_p.bind(*args, call=call, fwd=fwd, bwd=bwd, **params)
        return outs, [None] * len(outs)
    bcall, bconsts, body_dims = _batch_call(call, dims, axis)
    settled = _RuleDims(body_dims, name)
    out_dims = settled.dims  # settled in place by fwd; bwd reads its cotangents' dimensions there
    rule_dims = list(dims[num_consts:])
    # The residuals' batch dimensions, from the last fwd for the bwd that follows it (as the
    # user rules' residual structure in custom_vjp.__call__).
    res_dims: list = []

    def batched_fwd(primals: list, perturbed: list) -> tuple:
        n_res: list[int] = []

        def one(ps: list) -> list:
            res, outs = fwd(list(ps), perturbed)
            n_res[:] = [len(res)]
            return [*res, *outs]

        vals, got = batching.batch_subtrace(axis, one, list(primals), rule_dims)
        k = n_res[0]
        res_dims[:] = got[:k]
        dsts = [settled.settle(i, d) for i, d in enumerate(got[k:])]
        outs = [v if d is None and dst is None else array_ops.matchaxis(v, d, dst, axis.size)
                for v, d, dst in zip(vals[k:], got[k:], dsts)]
        return list(vals[:k]), outs

    def batched_bwd(res: list, cts: list) -> list:
        live = [type(c) is not Zero for c in cts]
        zeros = [Zero(_per_example(c.aval, d)) if type(c) is Zero else None
                 for c, d in zip(cts, out_dims)]
        k = len(res)

        def one(xs: list) -> list:
            it = iter(xs[k:])
            got = bwd(list(xs[:k]), [next(it) if lv else z for lv, z in zip(live, zeros)])
            return [None if _is_zero(g) else g for g in got]

        vals, got = batching.batch_subtrace(
            axis, one, [*res, *(c for c in cts if type(c) is not Zero)],
            [*res_dims, *(d for d, lv in zip(out_dims, live) if lv)])
        out: list = []
        for g, src, dst in zip(vals, got, rule_dims):
            if g is None:
                out.append(None)
            elif dst is None:
                out.append(g if src is None else _sum_batch(g, src))
            else:
                out.append(array_ops.matchaxis(g, src, dst, axis.size))
        return out

    batched_fwd.__name__ = getattr(fwd, "__name__", "fwd")
    batched_bwd.__name__ = getattr(bwd, "__name__", "bwd")
    return settled.bind(custom_vjp_call_p, *bconsts, *args, call=bcall, fwd=batched_fwd,
                        bwd=batched_bwd, **dict(params, num_consts=len(bconsts) + num_consts))


custom_vjp_call_p.abstract_eval = _custom_jvp_call_abstract_eval
custom_vjp_call_p.impl = _custom_jvp_call_impl
custom_vjp_call_p.lowering = _custom_call_lowering
custom_vjp_call_p.jvp = _custom_vjp_call_jvp
custom_vjp_call_p.batch = _custom_vjp_call_batch
custom_vjp_call_p.batch_unmapped = True
custom_vjp_call_p.jet = jet.inline_prop("call")  # the function; its rules set aside, as JAX
custom_vjp_call_p.print_params = functools.partial(_custom_call_printed_params,
                                                      rules=("bwd", "fwd"))

# The linearized custom_vjp: linear in its inputs after the residuals; only transposable.
custom_lin_p = Primitive("custom_lin", multiple_results=True)
custom_lin_p.sharding = keep_sharding_rule


def _custom_lin_abstract_eval(*avals: ShapedArray, bwd: Callable, num_res: int,
                              out_avals: tuple, name: str) -> list:
    return list(out_avals)


def _custom_lin_impl(*args: Any, name: str, **params: Any) -> Any:
    raise TypeError(f"can't apply forward-mode autodiff (jvp) to the custom_vjp function {name}; "
                    "use reverse mode (grad, vjp) or define it with custom_jvp instead.")


def _custom_lin_transpose(cts: list, *args: Any, bwd: Callable, num_res: int, out_avals: tuple,
                          name: str) -> list:
    cts_in = bwd(list(args[:num_res]), [Zero(a) if c is None else c
                                        for c, a in zip(cts, out_avals)])
    return [None] * num_res + [None if _is_zero(c) else c for c in cts_in]


def _custom_lin_no_rule(*args: Any, name: str, **params: Any) -> Any:
    raise TypeError(f"can't apply forward-mode autodiff (jvp) or vmap to the linearized "
                    f"custom_vjp function {name}; use reverse mode (grad, vjp) instead.")


custom_lin_p.abstract_eval = _custom_lin_abstract_eval
custom_lin_p.impl = _custom_lin_impl
custom_lin_p.transpose = _custom_lin_transpose
ad.TRANSPOSED_ON_ZEROS.add(custom_lin_p)  # bwd runs with zero cotangents too, as in JAX
# As in JAX, the linearized custom_vjp (reached only inside a linear program being transposed)
# has no forward-mode or batching rule: both raise a clear error.
custom_lin_p.jvp = lambda primals, tangents, **params: _custom_lin_no_rule(**params)
custom_lin_p.batch = lambda axis_data, args, dims, **params: _custom_lin_no_rule(**params)


def _is_arraylike(x: Any) -> bool:
    try:
        abstractify(x)
        return True
    except TypeError:
        return False


class custom_vjp(_CustomRuleFunction):
    """A function with user-defined reverse-mode rules ``f.defvjp(fwd, bwd)``.

    ``fwd(*args) -> (out, residuals)``; ``bwd(*nondiff_args, residuals, ct) -> tuple`` with one
    cotangent per (differentiable) argument (``None`` for zero). With ``symbolic_zeros=True``,
    ``fwd`` receives each argument leaf as a :class:`CustomVJPPrimal` and ``bwd`` receives a
    :class:`SymbolicZero` for each output cotangent that is zero.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> @fluxion.custom_vjp
        ... def f(x):
        ...     return jnp.sin(x)
        >>> f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (3.0 * g,))
        >>> float(fluxion.grad(f)(1.0))
        3.0
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()) -> None:
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        self.symbolic_zeros = False
        functools.update_wrapper(self, fun)

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False,
               optimize_remat: bool = False) -> None:
        """Set the forward (``fwd(*args) -> (out, res)``) and backward (``bwd(res, ct)``)
        rules."""
        self.fwd, self.bwd = fwd, bwd
        self.symbolic_zeros = symbolic_zeros

    @api_boundary
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = fun_name(self.fun)
        if self.fwd is None or self.bwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
        args = self._positional(args, kwargs)
        if STATE.interp is EVAL:
            return self.fun(*args)
        static, dyn_idx, dyn = self._split(args)
        for s in static:
            if any(type(x) is JVPTracer for x in tree_util.tree_leaves(s)):
                raise TypeError(
                    f"custom_vjp function {name}: a value being differentiated was passed in a "
                    "position that nondiff_argnums marks as non-differentiable; only values "
                    "that are not differentiated can be non-differentiable arguments.")
        fun = partial_at(self.fun, args, dyn_idx)
        user_fwd = partial_at(self.fwd, args, dyn_idx)
        user_bwd, symbolic_zeros = self.bwd, self.symbolic_zeros
        leaves, in_tree = tree_util.tree_flatten(dyn)
        in_avals = [abstractify(x) for x in leaves]
        store: dict[str, Any] = {}

        def flat_fun(*xs: Any) -> list:
            out_flat, out_tree = tree_util.tree_flatten(fun(*tree_util.tree_unflatten(in_tree, xs)))
            _record_out_tree(store, "fun", out_tree, name, "custom_vjp fwd rule")
            return out_flat

        def flat_fwd(primals: list, perturbed: list) -> tuple:
            xs = ([CustomVJPPrimal(p, z) for p, z in zip(primals, perturbed)]
                  if symbolic_zeros else primals)
            r = user_fwd(*tree_util.tree_unflatten(in_tree, xs))
            if not isinstance(r, (tuple, list)) or len(r) != 2:
                raise TypeError(f"custom_vjp fwd rule of {name} must return a pair (output, "
                                f"residuals), got {type(r).__name__}")
            o_flat, o_tree = tree_util.tree_flatten(r[0])
            _record_out_tree(store, "rule", o_tree, name, "custom_vjp fwd rule")
            r_flat, r_tree = tree_util.tree_flatten(r[1])
            # Array residuals flow through the linear program; other leaves stay here, and so
            # do Python bools, which bwd gets back as bools, as in JAX (equinox's
            # filter_custom_vjp passes its `perturbed` flags this way).
            arr = [type(x) is not bool and _is_arraylike(x) for x in r_flat]
            store["res"] = (r_tree, arr, [x for x, a in zip(r_flat, arr) if not a])
            return [x for x, a in zip(r_flat, arr) if a], o_flat

        def flat_bwd(res: list, cts: list) -> list:
            r_tree, arr, others = store["res"]
            it_a, it_o = iter(res), iter(others)
            r = tree_util.tree_unflatten(r_tree, [next(it_a) if a else next(it_o) for a in arr])
            ct = tree_util.tree_unflatten(_out_tree(store),
                                          [_to_rule(c, symbolic_zeros) for c in cts])
            return _check_cotangents(name, user_bwd(*static, r, ct), dyn, in_avals)

        flat_fwd.__name__ = fun_name(self.fwd)
        flat_bwd.__name__ = fun_name(user_bwd)
        call = _VJPCall(name, flat_fun, flat_fwd, flat_bwd, symbolic_zeros)
        outs = _process(_VJP_HANDLERS, call, leaves)
        return tree_util.tree_unflatten(_out_tree(store), outs)


_COT_SLOT = object()  # a leaf standing for each leaf of an argument while matching cotangents


def _check_cotangents(name: str, got: Any, dyn: tuple, in_avals: list) -> list:
    """The cotangents returned by a bwd rule, one per input leaf (``None`` for zero)."""
    if not isinstance(got, (tuple, list)):
        raise TypeError(f"custom_vjp bwd rule of {name} must return a tuple with one "
                        f"cotangent per differentiable argument ({len(dyn)}), got "
                        f"{type(got).__name__}")
    if len(got) != len(dyn):
        raise ValueError(f"custom_vjp bwd rule of {name} must return a tuple of length "
                         f"{len(dyn)} (one cotangent per differentiable argument), got "
                         f"length {len(got)}")
    flat: list = []
    for i, (g, a) in enumerate(zip(got, dyn)):
        a_leaves, a_tree = tree_util.tree_flatten(a)
        if g is None:
            flat += [None] * len(a_leaves)
            continue
        # As JAX: the cotangent follows the argument's structure, where a None stands for
        # zeros of the whole subtree there (nothing where the argument itself has a None).
        dummy = tree_util.tree_unflatten(a_tree, [_COT_SLOT] * len(a_leaves))
        taken: list = []

        def take(x: Any, d: Any, taken: list = taken) -> Any:
            if x is None:
                taken.extend([None] * len(tree_util.tree_leaves(d)))
            else:
                taken.append(x)
            return x
        try:
            tree_util.tree_map(take, g, dummy, is_leaf=lambda x: x is None)
            ok = len(taken) == len(a_leaves)
        except (ValueError, TypeError):
            ok = False
        if not ok:
            g_tree = tree_util.tree_structure(g, is_leaf=lambda x: x is None)
            raise TypeError(f"custom_vjp bwd rule of {name}: cotangent {i} has "
                            f"structure {g_tree}, expected the argument's {a_tree}")
        flat += taken
    out: list = []
    for i, (g, a) in enumerate(zip(flat, in_avals)):
        ta = tangent_aval(a)
        if g is None or ta.dtype == dtypes.float0:
            out.append(None)
            continue
        ga = g.aval if type(g) is SymbolicZero else aval_of(g)
        if ga.shape != ta.shape:
            raise ValueError(f"custom_vjp bwd rule of {name}: cotangent for input {i} has "
                             f"shape {ga.shape}, expected {ta.shape}")
        if type(g) is SymbolicZero:
            out.append(None)
        elif ga.dtype != ta.dtype:
            out.append(array_ops.convert(g, ta.dtype, ta.weak_type))
        else:
            out.append(g)
    return out


def custom_gradient(fun: Callable) -> Callable:
    """``fun(*args) -> (out, vjp_fn)`` becomes a function whose reverse-mode derivative is
    ``vjp_fn(ct) -> tuple of input cotangents``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> @fluxion.custom_gradient
        ... def f(x):
        ...     return x ** 2, lambda g: (g * 10.0,)
        >>> float(fluxion.grad(f)(3.0))
        10.0
    """
    @custom_vjp
    def wrapped(*args: Any) -> Any:
        return fun(*args)[0]

    def fwd(*args: Any) -> tuple:
        out, vjp_fn = fun(*args)
        return out, vjp_fn

    def bwd(vjp_fn: Callable, ct: Any) -> tuple:
        r = vjp_fn(ct)
        return tuple(r) if isinstance(r, (tuple, list)) else (r,)

    wrapped.defvjp(fwd, bwd)
    functools.update_wrapper(wrapped, fun)
    return wrapped


def closure_convert(fun: Callable, *example_args: Any) -> tuple[Callable, list]:
    """Hoist the values ``fun`` closes over into explicit arguments.

    Returns ``(converted, consts)`` with ``converted(*args, *consts) == fun(*args)``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> w = jnp.ones(2)
        >>> g, consts = fluxion.closure_convert(lambda x: x * w, jnp.ones(2))
        >>> g(jnp.ones(2), *consts).tolist()
        [1.0, 1.0]
    """
    leaves, in_tree = tree_util.tree_flatten(example_args)
    avals = [abstractify(x) for x in leaves]
    program, consts, out_tree = trace_to_program(fun, example_args, {}, in_avals=avals)
    n_args = len(example_args)

    def converted(*args: Any) -> Any:
        xs, cs = args[:n_args], args[n_args:]
        flat, tree = tree_util.tree_flatten(tuple(xs))
        if tree != in_tree:
            raise TypeError(f"closure_convert of {fun_name(fun)}: arguments with structure "
                            f"{tree} where {in_tree} was expected")
        return tree_util.tree_unflatten(out_tree, eval_program(program, list(cs), flat))

    functools.update_wrapper(converted, fun)
    return converted, list(consts)

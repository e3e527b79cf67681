"""Taylor-mode automatic differentiation: ``jet`` (JAX's ``jax.experimental.jet``).

The jet interpreter carries, for each value ``x(t)`` of the function, its truncated Taylor
polynomial ``x_0 + x_1 t + ... + x_K t^K`` as the primal ``x_0`` and the list of coefficients
``terms = [x_1, ..., x_K]`` (not scaled by factorials inside the interpreter; the public ``jet``
scales at the boundary), or :data:`zero_series` when every coefficient is zero. Each primitive's
jet rule (``prim.jet``, set beside the primitive in its ``lax`` module) maps the coefficients
of its inputs to those of its output::

    jet(primals_in, series_in, **params) -> (primal_out, series_out)   # lists for multiple results

with the parent interpreter current and every input's series instantiated (zeros for a value
without one); ``series_out`` may be :data:`zero_series`. The builders below make the common
rules: :func:`zero_prop` (piecewise-constant results), :func:`linear_prop` (the rule is the
primitive itself, term by term), :func:`bilinear_prop` (Cauchy products: ``mul``,
``dot_general``), :func:`deriv_prop` (from the first derivative, itself a composition that is
jetted), :func:`comp_prop` (jet of a composition of other primitives). A primitive without a
rule raises ``KeyError(primitive)``, as JAX's table lookup does.

Example:
    >>> from fluxion import lax
    >>> out, terms = jet_coefficients(lambda x: [lax.exp(x)], [0.0], [[1.0, 0.0]])
    >>> [float(out[0])] + [float(t) for t in terms[0]]   # e^t = 1 + t + t^2/2
    [1.0, 1.0, 0.5]
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from fluxion.core.avals import ShapedArray
from fluxion.core.ir import Program, eval_program
from fluxion.core.trace import Interpreter, Tracer, check_live, interpreter_scope, set_current
from fluxion.transforms.array_ops import broadcast_in_dim, zeros
from fluxion.transforms.staging import (
    abstractify,
    cached_transform,
    close_program,
    trace_to_program,
)

__all__ = ["JetTracer", "JetInterpreter", "ZeroTerm", "ZeroSeries", "zero_term", "zero_series",
           "jet_coefficients", "zero_prop", "linear_prop", "bilinear_prop", "deriv_prop",
           "comp_prop", "program_prop", "inline_prop", "jet_program", "chain_terms",
           "pow_by_squaring", "extremum_prop"]


class ZeroTerm:
    """The type of :data:`zero_term`, one coefficient known to be zero.

    Example:
        >>> zero_term
        zero_term
    """

    def __repr__(self) -> str:
        return "zero_term"


class ZeroSeries:
    """The type of :data:`zero_series`, a series whose coefficients are all zero: what an
    interpreter's value that does not depend on the inputs carries.

    Example:
        >>> JetInterpreter(2).primal_and_terms(1.0)
        (1.0, zero_series)
    """

    def __repr__(self) -> str:
        return "zero_series"


zero_term = ZeroTerm()
zero_series = ZeroSeries()


class JetTracer(Tracer):
    """A value inside a jet-transformed function: its ``primal`` and its Taylor coefficients
    ``terms`` (a list of ``order`` arrays, or :data:`zero_series`).

    Example:
        >>> seen = []
        >>> _ = jet_coefficients(lambda x: seen.append((x.primal, x.terms)) or [x], [2.0], [[1.0]])
        >>> seen
        [(2.0, [1.0])]
    """

    __slots__ = ("primal", "terms")

    def __init__(self, interp: "JetInterpreter", primal: Any, terms: Any) -> None:
        self._interp = interp
        self._aval = None
        self.primal = primal
        self.terms = terms

    @property
    def aval(self) -> ShapedArray:
        a = self._aval
        if a is None:
            a = self._aval = abstractify(self.primal)
        return a

    def full_lower(self) -> Any:
        if self.terms is zero_series or all(t is zero_term for t in self.terms):
            return self.primal
        return self


class JetInterpreter(Interpreter):
    """Runs a function on truncated Taylor series of degree ``order``: every primitive is
    replaced by its jet rule (JAX's ``JetTrace``).

    Example:
        >>> from fluxion.core.trace import interpreter_scope
        >>> with interpreter_scope(JetInterpreter(1)) as it:
        ...     y = JetTracer(it, 3.0, [1.0]) * 2.0
        ...     float(y.primal), [float(t) for t in y.terms]
        (6.0, [2.0])
    """

    description = "jet"

    def __init__(self, order: int) -> None:
        self.order = order

    def primal_and_terms(self, x: Any) -> tuple[Any, Any]:
        if type(x) is JetTracer and x._interp is self:
            return x.primal, x.terms
        if isinstance(x, Tracer):
            check_live(x, self)
        return x, zero_series

    def process_primitive(self, prim: Any, args: Sequence[Any], params: dict[str, Any]) -> Any:
        primals, series = zip(*map(self.primal_and_terms, args)) if args else ((), ())
        with set_current(self.parent):
            if all(s is zero_series for s in series):
                return prim.bind(*primals, **params)
            rule = prim.jet
            if rule is None:
                raise KeyError(prim)
            series = [self._instantiate(x, s) for x, s in zip(primals, series)]
            primal_out, terms_out = rule(list(primals), series, **params)
        if prim.multiple_results:
            return [self._wrap(p, t) for p, t in zip(primal_out, terms_out)]
        return self._wrap(primal_out, terms_out)

    def _instantiate(self, x: Any, terms: Any) -> list:
        aval = abstractify(x).update(weak_type=False)
        if terms is zero_series:
            terms = [zero_term] * self.order
        return [zeros(aval) if t is zero_term else t for t in terms]

    def _wrap(self, primal: Any, terms: Any) -> Any:
        return primal if terms is zero_series else JetTracer(self, primal, list(terms))


def jet_coefficients(fun: Callable[..., Sequence[Any]], primals: Sequence[Any],
                     series: Sequence[Sequence[Any]]) -> tuple[list, list]:
    """``fun(*primals)`` (a function returning a sequence of arrays) and the Taylor coefficients
    of its outputs, given those of its inputs (``series[i]`` is the list of coefficients of
    input ``i``, all of one length); a zero series comes back as zeros. JAX's ``jet2`` for a flat
    function.

    Example:
        >>> out, terms = jet_coefficients(lambda x: [x * x], [3.0], [[1.0]])
        >>> float(out[0]), float(terms[0][0])
        (9.0, 6.0)
    """
    order = len(series[0]) if series else 0
    with interpreter_scope(JetInterpreter(order)) as it:
        ins = [JetTracer(it, x, list(s)) for x, s in zip(primals, series)]
        outs = [it.primal_and_terms(o) for o in fun(*ins)]
    primals_out = [p for p, _ in outs]
    # an output without a series gets zeros like it (its weak type kept, as JAX's zeros_like)
    series_out = [[zeros(abstractify(p))] * order if s is zero_series else s for p, s in outs]
    return primals_out, series_out


def _single(fun: Callable[..., Any], primals: Sequence[Any], series: Sequence[Any]) -> tuple:
    out, terms = jet_coefficients(lambda *xs: [fun(*xs)], primals, series)
    return out[0], terms[0]


# ------------------------------------------------------------------ rule builders

def zero_prop(prim: Any) -> Callable[..., tuple]:
    """The jet rule of a primitive whose result is locally constant (comparisons, rounding,
    bitwise operations): every coefficient of the result is zero.

    Example:
        >>> from fluxion import lax
        >>> zero_prop(lax.floor_p)([1.5], [[1.0]])
        (Array(1., dtype=float32, weak_type=True), zero_series)
    """
    def rule(primals: list, series: list, **params: Any) -> tuple:
        return prim.bind(*primals, **params), zero_series
    return rule


def linear_prop(prim: Any, n_linear: int | None = None) -> Callable[..., tuple]:
    """The jet rule of a primitive linear in its operands (the first ``n_linear`` of them; the
    rest, indices and the like, are passed along): each coefficient is the primitive applied to
    the operands' coefficients of that order.

    Example:
        >>> from fluxion import lax
        >>> out, terms = linear_prop(lax.neg_p)([1.0], [[2.0, 3.0]])
        >>> float(out), [float(t) for t in terms]
        (-1.0, [-2.0, -3.0])
    """
    def rule(primals: list, series: list, **params: Any) -> tuple:
        k = len(primals) if n_linear is None else n_linear
        out = prim.bind(*primals, **params)
        terms = [prim.bind(*[s[j] for s in series[:k]], *primals[k:], **params)
                 for j in range(len(series[0]))]
        if prim.multiple_results:
            terms = [list(t) for t in zip(*terms)] if terms else [[] for _ in out]
        return out, terms
    return rule


def bilinear_prop(prim: Any) -> Callable[..., tuple]:
    """The jet rule of a primitive bilinear in its two operands (``mul``, ``dot_general``): the
    Cauchy product ``v_k = sum_j op(u_j, w_{k-j})``.

    Example:
        >>> from fluxion import lax
        >>> out, terms = bilinear_prop(lax.mul_p)([2.0, 3.0], [[1.0], [1.0]])  # (2+t)(3+t)
        >>> float(out), float(terms[0])
        (6.0, 5.0)
    """
    def rule(primals: list, series: list, **params: Any) -> tuple:
        u, w = [primals[0], *series[0]], [primals[1], *series[1]]
        v = [sum(prim.bind(u[j], w[k - j], **params) for j in range(k + 1))
             for k in range(len(u))]
        return v[0], v[1:]
    return rule


def chain_terms(c: Sequence[Any], u: Sequence[Any], v0: Any) -> list:
    """``v`` with ``v' = c u'`` from the coefficients of ``c`` and ``u`` (``v_0`` given):
    ``v_k = sum_{j=1..k} j c_{k-j} u_j / k``.

    Example:
        >>> chain_terms([2.0, 0.0], [0.0, 1.0, 0.0], 5.0)  # v' = 2 u' with u = t
        [5.0, 2.0, 0.0]
    """
    v = [v0] + [None] * (len(u) - 1)
    for k in range(1, len(v)):
        v[k] = sum(j * c[k - j] * u[j] for j in range(1, k + 1)) / k
    return v


def deriv_prop(prim: Any, deriv: Callable[[Any], Any]) -> Callable[..., tuple]:
    """The jet rule of a unary primitive from its first derivative ``deriv`` (a function of
    the operand built from primitives that have jet rules).

    Example:
        >>> from fluxion import lax
        >>> out, terms = deriv_prop(lax.exp_p, lax.exp)([0.0], [[1.0, 0.0]])
        >>> float(out), [float(t) for t in terms]
        (1.0, [1.0, 0.5])
    """
    def rule(primals: list, series: list) -> tuple:
        c0, cs = _single(deriv, primals, series)
        v = chain_terms([c0, *cs], [primals[0], *series[0]], prim.bind(primals[0]))
        return v[0], v[1:]
    return rule


def comp_prop(comp: Callable[..., Any]) -> Callable[..., tuple]:
    """The jet rule of a primitive equal to the composition ``comp`` of primitives that have
    jet rules (``expm1`` as ``exp(x) - 1``).

    Example:
        >>> out, terms = comp_prop(lambda x: x * x)([3.0], [[1.0]])
        >>> float(out), float(terms[0])
        (9.0, 6.0)
    """
    def rule(primals: list, series: list, **params: Any) -> tuple:
        return _single(lambda *xs: comp(*xs, **params), primals, series)
    return rule


def pow_by_squaring(x: Any, n: float) -> Any:
    """``x ** n`` for an integer ``n`` by repeated squaring, in Python arithmetic (the jet of
    ``integer_pow`` is that of this product, as JAX's).

    Example:
        >>> pow_by_squaring(2.0, 5), pow_by_squaring(2.0, -2)
        (32.0, 0.25)
    """
    if n < 0:
        return pow_by_squaring(1 / x, -n)
    if n == 0:
        return 1
    if n % 2 == 0:
        return pow_by_squaring(x * x, n / 2)
    return x * pow_by_squaring(x * x, (n - 1) / 2)


def _broadcast_pair(x: Any, y: Any) -> tuple[Any, Any]:
    sx, sy = abstractify(x).shape, abstractify(y).shape
    if sx == sy:
        return x, y
    if not sx:
        return broadcast_in_dim(x, sy, ()), y
    return x, broadcast_in_dim(y, sx, ())


def extremum_prop(chosen: Callable[[Any, Any], Any],
                  select: Callable[[Any, Any, Any], Any]) -> Callable[..., tuple]:
    """The jet rule of ``max``/``min`` (``chosen(x, y)``: where x is the result): the chosen
    operand's coefficients, their mean where the operands tie (a rank-0 operand broadcast).

    Example:
        >>> from fluxion import lax
        >>> rule = extremum_prop(lambda x, y: x > y, lax.select)
        >>> out, terms = rule([1.0, 1.0], [[2.0], [4.0]])   # a tie: the mean
        >>> float(out), float(terms[0])
        (1.0, 3.0)
    """
    def rule(primals: list, series: list) -> tuple:
        x, y = _broadcast_pair(*primals)
        pick, tie = chosen(x, y), x == y

        def term(xi: Any, yi: Any) -> Any:
            xi, yi = _broadcast_pair(xi, yi)
            return select(tie, (xi + yi) / 2, select(pick, xi, yi))
        return select(pick, x, y), [term(*ts) for ts in zip(*series)]
    return rule


def jet_program(program: Program, order: int) -> tuple[Program, list]:
    """``(jetted, consts)``: the closed program over ``(*consts, *primals, *series)`` (each
    input's ``order`` coefficients in turn, after all primals) returning ``(*primals_out,
    *series_out)`` likewise, for a closed ``program`` (no constvars); cached on the program.

    Example:
        >>> program, _, _ = trace_to_program(lambda x: x * x, (1.0,), {})
        >>> jetted, consts = jet_program(program, 2)
        >>> [v.aval.str_short() for v in jetted.invars], len(jetted.outvars)
        (['f32[]', 'f32[]', 'f32[]'], 3)
    """
    def make() -> tuple:
        n = len(program.invars)
        avals = [v.aval.update(weak_type=False) for v in program.invars]
        in_avals = [v.aval for v in program.invars] + [a for a in avals for _ in range(order)]

        def jetted(*xs: Any) -> list:
            primals, flat = xs[:n], xs[n:]
            series = [list(flat[i * order:(i + 1) * order]) for i in range(n)]
            outs, terms = jet_coefficients(lambda *ins: eval_program(program, [], ins),
                                           primals, series)
            return [*outs, *(t for ts in terms for t in ts)]

        jetted.__name__ = "jet"
        new, consts, _ = trace_to_program(jetted, tuple(in_avals), {}, in_avals=in_avals,
                                          description="jet of a staged program")
        return close_program(new), list(consts)

    return cached_transform(program, ("jet", order), make)


def program_prop(call: Callable[..., list], key: str = "program") -> Callable[..., tuple]:
    """The jet rule of a primitive that runs the program in its parameter ``key`` (a call
    primitive): ``call(program, args, **params)`` binds the primitive again on the jetted
    program, so the result stays one call.

    Example:
        >>> from fluxion.core.ir import eval_program
        >>> program, _, _ = trace_to_program(lambda x: x * x, (1.0,), {})
        >>> rule = program_prop(lambda p, args: eval_program(p, [], args))
        >>> outs, terms = rule([3.0], [[1.0]], program=program)
        >>> float(outs[0]), float(terms[0][0])
        (9.0, 6.0)
    """
    def rule(primals: list, series: list, **params: Any) -> tuple:
        program = params.pop(key)
        order = len(series[0])
        jetted, consts = jet_program(program, order)
        outs = call(jetted, [*consts, *primals, *(t for s in series for t in s)], **params)
        n = len(program.outvars)
        terms = [list(outs[n + i * order:n + (i + 1) * order]) for i in range(n)]
        return list(outs[:n]), terms
    return rule


def inline_prop(key: str) -> Callable[..., tuple]:
    """The jet rule of a primitive whose value is that of the program in its parameter ``key``
    (``custom_jvp_call``, ``custom_vjp_call``): the program itself is jetted, its custom rules
    set aside, as JAX's jet does.

    Example:
        >>> program, _, _ = trace_to_program(lambda x: x * x, (1.0,), {})
        >>> outs, terms = inline_prop("call")([3.0], [[1.0]], call=program)
        >>> float(outs[0]), float(terms[0][0])
        (9.0, 6.0)
    """
    def rule(primals: list, series: list, **params: Any) -> tuple:
        return jet_coefficients(lambda *xs: eval_program(params[key], [], xs), primals, series)
    return rule

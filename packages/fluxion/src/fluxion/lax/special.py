"""Special functions: error functions, the gamma family (lgamma, digamma, polygamma, the
regularized incomplete gamma functions and their derivatives in ``a``) and exponentially scaled
modified Bessel functions.

Where StableHLO/CHLO has an op, the primitive lowers to it. Otherwise (``bessel_i0e``, the
incomplete gamma family) its lowering stages a lax-level algorithm once per result type and
inlines it: Chebyshev expansions for ``bessel_i0e``; for ``igamma`` a power series for
``x < a + 1``-like regions and a continued fraction elsewhere, iterated with a ``while`` loop
until the terms stop mattering. Half-precision inputs are computed in float32.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> round(float(lax.igamma(jnp.float32(1.0), jnp.float32(1.0))), 5)  # 1 - exp(-1)
    0.63212
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.lax import _rules
from fluxion.lax import conversions as cv
from fluxion.lax import elementwise as ew
from fluxion.lax import transcendental as tr
from fluxion.lax._base import DtypeSet, binop_primitive, broadcast_operand, unop_primitive
from fluxion.lax.control_flow import while_loop
from fluxion.lax.reductions import reduce_or
from fluxion.lax.shape_ops import broadcast_in_dim
from fluxion.transforms import ad
from fluxion.transforms import jet as _jet
from fluxion.transforms.staging import abstractify, trace_to_program

__all__ = ["erf", "erf_p", "erfc", "erfc_p", "erf_inv", "erf_inv_p", "lgamma", "lgamma_p",
           "digamma", "digamma_p", "polygamma", "polygamma_p", "bessel_i0e", "bessel_i0e_p",
           "bessel_i1e", "bessel_i1e_p", "igamma", "igammac", "igamma_p", "igammac_p",
           "igamma_grad_a", "igamma_grad_a_p", "random_gamma_grad", "random_gamma_grad_p"]

_float = DtypeSet("floating", "f")
_MAX_ITERS = 2000

# A weakly typed scalar of an operand's dtype (a literal when staged), for the JVP rules below.
_c = _rules.const_like


# ------------------------------------------------------------------ staged lowerings

_PROGRAMS: dict[tuple, Any] = {}


def _at_precision(impl: Callable[..., Any], *xs: Any) -> Any:
    """``impl(*xs)`` on same-shape operands, computing half-precision inputs in float32."""
    dt = np.dtype(xs[0].dtype)
    compute = np.dtype(np.float32) if dtypes.finfo(dt).bits < 32 else dt
    if compute == dt:
        return impl(*xs)
    xs = tuple(cv.convert_element_type(x, compute) for x in xs)
    return cv.convert_element_type(impl(*xs), dt)


def _staged_lowering(name: str, impl: Callable[..., Any]) -> Callable[..., str]:
    """A lowering that stages ``impl`` (lax-level, same-shape operands) once per result type
    and inlines it."""

    def lowering(ctx: Any, *args: str) -> str:
        out = ctx.avals_out[0]
        full = ShapedArray(out.shape, out.dtype)
        ops = [broadcast_operand(ctx, v, av.update(weak_type=False), out.shape)
               for v, av in zip(args, ctx.avals_in)]
        key = (name, full)
        program = _PROGRAMS.get(key)
        if program is None:
            avals = [full] * len(args)
            program, consts, _ = trace_to_program(lambda *xs: _at_precision(impl, *xs),
                                                  tuple(avals), {}, in_avals=avals)
            assert not consts, consts
            if len(_PROGRAMS) >= 4096:  # one per (function, type): stay bounded
                _PROGRAMS.clear()
            program = _PROGRAMS[key] = program
        return ctx.lower_program_inline(program, ops)[0]

    return lowering


# ------------------------------------------------------------------ error functions

erf_p = unop_primitive("erf", _float, "chlo.erf")
_rules.defjvp(erf_p, lambda g, x: ew.mul(g, ew.mul(_c(x, 2.0 / np.sqrt(np.pi)),
                                                   tr.exp(ew.neg(ew.mul(x, x))))))
erf_p.jet = _jet.deriv_prop(
    erf_p, lambda x: ew.mul(_rules.const_like(x, 2.0 / np.sqrt(np.pi)), tr.exp(ew.neg(x * x))))


def erf(x: Any) -> Any:
    """Elementwise error function.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.erf(jnp.array([0.5, 2.0])).tolist()
        [0.5205, 0.995322]
    """
    return erf_p.bind(x)


erfc_p = unop_primitive("erfc", _float, "chlo.erfc")
_rules.defjvp(erfc_p, lambda g, x: ew.mul(g, ew.mul(_c(x, -2.0 / np.sqrt(np.pi)),
                                                    tr.exp(ew.neg(ew.mul(x, x))))))
erfc_p.jet = _jet.comp_prop(lambda x: 1 - erf(x))


def erfc(x: Any) -> Any:
    """Elementwise complementary error function.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.erfc(jnp.array([0.5, 2.0])).tolist()
        [0.4795, 0.00467773]
    """
    return erfc_p.bind(x)


erf_inv_p = unop_primitive("erf_inv", _float, "chlo.erf_inv")
_rules.defjvp2(erf_inv_p, lambda g, ans, x: ew.mul(g, ew.mul(_c(x, np.sqrt(np.pi) / 2.0),
                                                             tr.exp(ew.mul(ans, ans)))))


def _erf_inv_jet(primals: list, series: list) -> tuple:
    # y = erf_inv(x): y' = c x' with c = sqrt(pi)/2 exp(y^2), whose series follows y's
    x, terms = primals[0], series[0]
    u = [x, *terms]
    v = [erf_inv(x)] + [None] * len(terms)
    half_root_pi = np.sqrt(np.pi) / 2.0
    square = [v[0] * v[0]] + [None] * (len(terms) - 1)
    expo = [tr.exp(square[0])] + [None] * (len(terms) - 1)
    c = [ew.mul(half_root_pi, expo[0])] + [None] * (len(terms) - 1)
    for k in range(1, len(terms)):
        v[k] = sum(j * c[k - j] * u[j] for j in range(1, k + 1)) / k
        square[k] = sum(v[k - j] * v[j] for j in range(k + 1))
        expo[k] = sum(j * expo[k - j] * square[j] for j in range(1, k + 1)) / k
        c[k] = half_root_pi * expo[k]
    k = len(terms)
    v[k] = sum(j * c[k - j] * u[j] for j in range(1, k + 1)) / k
    return v[0], v[1:]


erf_inv_p.jet = _erf_inv_jet


def erf_inv(x: Any) -> Any:
    """Elementwise inverse error function.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.erf_inv(jnp.array([0.0, 0.5])).tolist()
        [0.0, 0.476936]
    """
    return erf_inv_p.bind(x)


# ------------------------------------------------------------------ lgamma, digamma, polygamma

lgamma_p = unop_primitive("lgamma", _float, "chlo.lgamma")
_rules.defjvp(lgamma_p, lambda g, x: ew.mul(g, digamma(x)))


def lgamma(x: Any) -> Any:
    """Elementwise log of the absolute value of the gamma function.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.lgamma(jnp.array([0.5, 2.0])).tolist()
        [0.572365, 0.0]
    """
    return lgamma_p.bind(x)


digamma_p = unop_primitive("digamma", _float, "chlo.digamma")
_rules.defjvp(digamma_p, lambda g, x: ew.mul(g, polygamma(_c(x, 1), x)))


def digamma(x: Any) -> Any:
    """Elementwise digamma function (derivative of lgamma).

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.digamma(jnp.array([0.5, 2.0])).tolist()
        [-1.96351, 0.422785]
    """
    return digamma_p.bind(x)


def _polygamma_dm(g: Any, m: Any, x: Any) -> Any:
    raise NotImplementedError("lax.polygamma: the derivative with respect to the order `m` "
                              "is not defined (m is an integer)")


polygamma_p = binop_primitive("polygamma", _float, "chlo.polygamma")
_rules.defjvp(polygamma_p, _polygamma_dm,
              lambda g, m, x: ew.mul(g, polygamma(ew.add(m, _c(m, 1)), x)))


def polygamma(m: Any, x: Any) -> Any:
    """The polygamma function ``psi^(m)(x)``, the ``m``-th derivative of digamma, elementwise
    (``m`` a non-negative integer value of the same float dtype as ``x``).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> round(float(lax.polygamma(jnp.float32(1.0), jnp.float32(1.0))), 4)  # pi^2 / 6
        1.6449
    """
    return polygamma_p.bind(m, x)


# ------------------------------------------------------------------ Bessel functions

# CHLO has no bessel_i0e this jaxlib can compile, so it is staged from lax ops: Cephes'
# Chebyshev expansions of exp(-|x|) I0(x) on [0, 8] and of tr.sqrt(x) exp(-x) I0(x) on (8, inf).
_I0E_A = (-4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
          1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
          -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
          9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-09,
          -1.30002500998624804212e-08, 6.04699502254191894932e-08, -2.67079385394061173391e-07,
          1.11738753912010371815e-06, -4.41673835845875056359e-06, 1.64484480707288970893e-05,
          -5.75419501008210370398e-05, 1.88502885095841655729e-04, -5.76375574538582365885e-04,
          1.63947561694133579842e-03, -4.32430999505057594430e-03, 1.05464603945949983183e-02,
          -2.37374148058994688156e-02, 4.93052842396707084878e-02, -9.49010970480476444210e-02,
          1.71620901522208775349e-01, -3.04682672343198398683e-01, 6.76795274409476084995e-01)
_I0E_B = (-7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
          3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
          1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
          -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
          7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
          -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
          3.39623202570838634515e-09, 2.26666899049817806459e-08, 2.04891858946906374183e-07,
          2.89137052083475648297e-06, 6.88975834691682398426e-05, 3.36911647825569408990e-03,
          8.04490411014108831608e-01)


def _chebyshev(t: Any, coeffs: tuple) -> Any:
    """Clenshaw's recurrence for a Chebyshev series in Cephes' ``chbevl`` convention."""
    zero = ew.sub(t, t)
    b0, b1, b2 = ew.add(zero, coeffs[0]), zero, zero
    for cf in coeffs[1:]:
        b2, b1 = b1, b0
        b0 = ew.add(ew.sub(ew.mul(t, b1), b2), cf)
    return ew.mul(ew.sub(b0, b2), 0.5)


def _i0e_impl(x: Any) -> Any:
    ax = ew.abs(x)
    small = _chebyshev(ew.sub(ew.mul(ax, 0.5), 2.0), _I0E_A)
    safe = ew.select(ew.le(ax, 8.0), ew.add(ew.sub(ax, ax), 8.0), ax)
    large = ew.div(_chebyshev(ew.sub(ew.div(32.0, safe), 2.0), _I0E_B), tr.sqrt(safe))
    return ew.select(ew.le(ax, 8.0), small, large)


bessel_i0e_p = unop_primitive("bessel_i0e", _float, _staged_lowering("bessel_i0e", _i0e_impl))
_rules.defjvp2(bessel_i0e_p,
               lambda g, ans, x: ew.mul(g, ew.sub(bessel_i1e(x), ew.mul(ew.sign(x), ans))))


def bessel_i0e(x: Any) -> Any:
    """Elementwise exponentially scaled modified Bessel function of order 0.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.bessel_i0e(jnp.array([0.5, 2.0])).tolist()
        [0.645035, 0.308508]
    """
    return bessel_i0e_p.bind(x)


bessel_i1e_p = unop_primitive("bessel_i1e", _float, "chlo.bessel_i1e")


def _i1e_jvp(g: Any, ans: Any, x: Any) -> Any:
    # d/dx i1e(x) = i0e(x) - i1e(x) (sign(x) + 1/x), whose limit at 0 is 1/2.
    zero = ew.eq(x, _c(x, 0))
    safe = ew.select(zero, ew.add(ew.mul(x, _c(x, 0)), _c(x, 1)), x)
    d = ew.sub(bessel_i0e(x), ew.mul(ans, ew.add(ew.sign(x), ew.div(_c(x, 1), safe))))
    return ew.mul(g, ew.select(zero, ew.add(ew.mul(x, _c(x, 0)), _c(x, 0.5)), d))


_rules.defjvp2(bessel_i1e_p, _i1e_jvp)


def bessel_i1e(x: Any) -> Any:
    """Elementwise exponentially scaled modified Bessel function of order 1.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.bessel_i1e(jnp.array([0.5, 2.0])).tolist()
        [0.156421, 0.215269]
    """
    return bessel_i1e_p.bind(x)


# ------------------------------------------------------------------ incomplete gamma functions

def _consts(dtype: np.dtype) -> tuple[float, float]:
    info = dtypes.finfo(dtype)
    return float(info.eps), float(np.log(float(info.max)))


def _full(like: Any, value: float) -> Any:
    """A constant of ``like``'s shape and dtype."""
    return broadcast_in_dim(cv.convert_element_type(value, like.dtype), like.shape, ())


def _log_prefactor(a: Any, x: Any) -> Any:
    """``a*log(x) - x - lgamma(a)``: the log of ``x^a e^-x / Gamma(a)``."""
    return ew.sub(ew.sub(ew.mul(a, tr.log(x)), x), lgamma(a))


def _loop(cond_live: Any, body: Any, init: tuple) -> tuple:
    """Iterate ``body`` elementwise while any element is live (at most _MAX_ITERS times)."""

    def cond(state: tuple) -> Any:
        i, live = state[0], state[1]
        return ew.bitwise_and(ew.lt(i, np.int32(_MAX_ITERS)),
                              reduce_or(live, tuple(range(live.ndim))))

    def step(state: tuple) -> tuple:
        i, live, *vals = state
        new = body(*vals)
        vals = [ew.select(live, n, v) for n, v in zip(new, vals)]
        return (ew.add(i, np.int32(1)), ew.bitwise_and(live, cond_live(*vals)), *vals)

    return tuple(while_loop(cond, step, (np.int32(0), *init))[2:])


def _series(a: Any, x: Any, eps: float) -> Any:
    """P(a, x) by its power series (without the prefactor): sum of x^n / (a+1)...(a+n)."""
    one = _full(a, 1.0)

    def body(r: Any, c: Any, ans: Any) -> tuple:
        r = ew.add(r, one)
        c = ew.mul(c, ew.div(x, r))
        return r, c, ew.add(ans, c)

    init_live = ew.ge(one, one)
    _, _, ans = _loop(lambda r, c, ans: ew.gt(ew.div(c, ans), _full(a, eps)), body,
                      (init_live, a, one, one))
    return ew.div(ans, a)


def _continued_fraction(a: Any, x: Any, eps: float) -> Any:
    """Q(a, x) by its continued fraction (without the prefactor)."""
    one, zero = _full(a, 1.0), _full(a, 0.0)
    big = _full(a, 1.0 / eps)
    y = ew.sub(one, a)
    z = ew.add(ew.add(x, y), one)
    pkm2, qkm2, pkm1, qkm1 = one, x, ew.add(x, one), ew.mul(z, x)
    ans = ew.div(pkm1, qkm1)
    t = one

    def body(c, y, z, pkm2, qkm2, pkm1, qkm1, ans, t):
        c, y, z = ew.add(c, one), ew.add(y, one), ew.add(z, _full(a, 2.0))
        yc = ew.mul(y, c)
        pk = ew.sub(ew.mul(pkm1, z), ew.mul(pkm2, yc))
        qk = ew.sub(ew.mul(qkm1, z), ew.mul(qkm2, yc))
        nonzero = ew.ne(qk, zero)
        r = ew.div(pk, ew.select(nonzero, qk, one))
        t = ew.select(nonzero, ew.abs(ew.div(ew.sub(ans, r), r)), one)
        ans = ew.select(nonzero, r, ans)
        rescale = ew.gt(ew.abs(pk), big)
        s = ew.select(rescale, _full(a, eps), one)
        return (c, y, z, ew.mul(pkm1, s), ew.mul(qkm1, s), ew.mul(pk, s), ew.mul(qk, s), ans, t)

    init_live = ew.ge(one, one)
    out = _loop(lambda *v: ew.gt(v[-1], _full(a, eps)), body,
                (init_live, zero, y, z, pkm2, qkm2, pkm1, qkm1, ans, t))
    return out[7]


def _igamma_impl(a: Any, x: Any, upper: bool) -> Any:
    dt = a.dtype
    eps, maxlog = _consts(dt)
    one, zero = _full(a, 1.0), _full(a, 0.0)
    nan = _full(a, np.nan)
    logp = _log_prefactor(a, x)
    underflow = ew.lt(logp, _full(a, -maxlog))
    pref = tr.exp(logp)
    # choose the convergent expansion per element; each is evaluated where it is not chosen on
    # harmless substitute arguments so no NaN/inf leaks into the loop's termination test
    use_cf = ew.bitwise_and(ew.gt(x, one), ew.gt(x, a)) if not upper else \
        ew.bitwise_not(ew.bitwise_or(ew.lt(x, one), ew.lt(x, a)))
    safe_a = ew.select(ew.gt(a, zero), a, one)
    safe_x = ew.select(ew.is_finite(x), ew.select(ew.gt(x, zero), x, one), one)
    x_series = ew.select(use_cf, zero, safe_x)
    x_cf = ew.select(use_cf, safe_x, ew.add(safe_a, _full(a, 2.0)))
    p_series = ew.mul(pref, _series(safe_a, x_series, eps))
    q_cf = ew.mul(pref, _continued_fraction(safe_a, x_cf, eps))
    if upper:
        val = ew.select(use_cf, q_cf, ew.sub(one, p_series))
        val = ew.select(underflow, ew.select(use_cf, zero, one), val)
        at_zero, at_inf = one, zero
    else:
        val = ew.select(use_cf, ew.sub(one, q_cf), p_series)
        val = ew.select(underflow, ew.select(use_cf, one, zero), val)
        at_zero, at_inf = zero, one
    val = ew.select(ew.eq(x, zero), at_zero, val)
    val = ew.select(ew.eq(x, _full(a, np.inf)), at_inf, val)
    a_zero = ew.eq(a, zero)
    val = ew.select(a_zero, at_inf, val)  # P(0, x) = 1 and Q(0, x) = 0 for x > 0
    bad = ew.bitwise_or(ew.bitwise_or(ew.lt(a, zero), ew.lt(x, zero)),
                        ew.bitwise_or(ew.ne(a, a), ew.ne(x, x)))
    bad = ew.bitwise_or(bad, ew.bitwise_and(a_zero, ew.eq(x, zero)))
    return ew.select(bad, nan, val)


def _grad_series(a: Any, x: Any, enabled: Any, eps: float) -> tuple[Any, Any]:
    """The series ``S = sum x^n / ((a+1)...(a+n))`` (so ``P = x^a e^-x S / Gamma(a+1)``) and
    ``dS/da``, carried along term by term; iterates where ``enabled`` until ``dS/da`` settles."""
    one, zero = _full(a, 1.0), _full(a, 0.0)

    def body(r: Any, term: Any, total: Any, dterm: Any, dtotal: Any) -> tuple:
        r = ew.add(r, one)
        ratio = ew.div(x, r)
        # d/da of term_n = term_{n-1} * x / (a + n)
        dterm = ew.sub(ew.mul(dterm, ratio), ew.div(ew.mul(term, x), ew.mul(r, r)))
        term = ew.mul(term, ratio)
        return r, term, ew.add(total, term), dterm, ew.add(dtotal, dterm)

    def live(r: Any, term: Any, total: Any, dterm: Any, dtotal: Any) -> Any:
        return ew.gt(ew.abs(ew.div(dterm, dtotal)), _full(a, eps))

    _, _, total, _, dtotal = _loop(live, body, (enabled, a, one, one, zero, zero))
    return total, dtotal


def _grad_continued_fraction(a: Any, x: Any, enabled: Any, eps: float) -> tuple[Any, Any]:
    """The continued fraction ``F`` of ``Q = x^a e^-x F / Gamma(a)`` and ``dF/da``: the
    convergents ``p_k / q_k`` and their derivatives in ``a`` follow the same three-term
    recurrence; iterates where ``enabled`` until ``dF/da`` settles."""
    one, zero = _full(a, 1.0), _full(a, 0.0)
    big = _full(a, 1.0 / eps)
    y = ew.sub(one, a)
    z = ew.add(ew.add(x, y), one)
    p0, q0, p1, q1 = one, x, ew.add(x, one), ew.mul(z, x)
    dp0, dq0, dp1, dq1 = zero, zero, zero, ew.neg(x)  # dz/da = -1
    frac = ew.div(p1, q1)
    dfrac = ew.div(ew.sub(dp1, ew.mul(frac, dq1)), q1)

    def body(k, y, z, p0, q0, p1, q1, dp0, dq0, dp1, dq1, frac, dfrac, change):
        k, y, z = ew.add(k, one), ew.add(y, one), ew.add(z, _full(a, 2.0))
        yk = ew.mul(y, k)
        p = ew.sub(ew.mul(p1, z), ew.mul(p0, yk))
        q = ew.sub(ew.mul(q1, z), ew.mul(q0, yk))
        # y and z both move by -1 per unit of a, so d(yk)/da = -k
        dp = ew.add(ew.sub(ew.sub(ew.mul(dp1, z), p1), ew.mul(dp0, yk)), ew.mul(p0, k))
        dq = ew.add(ew.sub(ew.sub(ew.mul(dq1, z), q1), ew.mul(dq0, yk)), ew.mul(q0, k))
        ok = ew.ne(q, zero)
        safe_q = ew.select(ok, q, one)
        frac = ew.select(ok, ew.div(p, safe_q), frac)
        new_dfrac = ew.select(ok, ew.div(ew.sub(dp, ew.mul(frac, dq)), safe_q), dfrac)
        change = ew.select(ok, ew.abs(ew.sub(new_dfrac, dfrac)), one)
        s = ew.select(ew.gt(ew.abs(p), big), _full(a, eps), one)  # keep the convergents finite
        return (k, y, z, ew.mul(p1, s), ew.mul(q1, s), ew.mul(p, s), ew.mul(q, s),
                ew.mul(dp1, s), ew.mul(dq1, s), ew.mul(dp, s), ew.mul(dq, s), frac, new_dfrac,
                change)

    out = _loop(lambda *v: ew.gt(v[-1], _full(a, eps)), body,
                (enabled, zero, y, z, p0, q0, p1, q1, dp0, dq0, dp1, dq1, frac, dfrac, one))
    return out[11], out[12]


def _igamma_da_impl(a: Any, x: Any, sample: bool) -> Any:
    """``dP(a, x)/da`` (``sample=False``), or the implicit derivative of a Gamma(a) sample ``x``,
    ``dx/da = -(dP/da) / (dP/dx)`` (``sample=True``); same-shape operands."""
    eps, maxlog = _consts(a.dtype)
    one, zero = _full(a, 1.0), _full(a, 0.0)
    is_nan = ew.bitwise_or(ew.ne(a, a), ew.ne(x, x))
    x_zero = ew.eq(x, zero)
    domain = ew.bitwise_or(ew.lt(x, zero), ew.le(a, zero))
    use_cf = ew.bitwise_and(ew.gt(x, one), ew.gt(x, a))
    logp = _log_prefactor(a, x)
    underflow = ew.lt(logp, _full(a, -maxlog))
    pref = tr.exp(logp)
    enabled = ew.bitwise_not(ew.bitwise_or(ew.bitwise_or(x_zero, domain),
                                           ew.bitwise_or(underflow, is_nan)))
    s_val, s_da = _grad_series(a, x, ew.bitwise_and(enabled, ew.bitwise_not(use_cf)), eps)
    f_val, f_da = _grad_continued_fraction(a, x, ew.bitwise_and(enabled, use_cf), eps)
    logx = tr.log(x)
    # d/da of the log prefactors: x^a e^-x / Gamma(a+1) (series), x^a e^-x / Gamma(a) (fraction)
    dlog_s = ew.sub(logx, digamma(ew.add(a, one)))
    dlog_f = ew.sub(logx, digamma(a))
    s_inner = ew.add(ew.mul(s_val, dlog_s), s_da)
    f_inner = ew.add(ew.mul(f_val, dlog_f), f_da)
    if sample:
        # divide by the density x^(a-1) e^-x / Gamma(a): the prefactor cancels (no underflow)
        series = ew.div(ew.mul(ew.neg(s_inner), x), a)
        fraction = ew.mul(f_inner, x)
    else:
        series = ew.div(ew.mul(pref, s_inner), a)
        fraction = ew.neg(ew.mul(pref, f_inner))
    val = ew.select(use_cf, fraction, series)
    val = ew.select(x_zero, zero, val)
    return ew.select(ew.bitwise_or(domain, is_nan), _full(a, np.nan), val)


def _operands(*vals: Any) -> list:
    """Elementwise operands (arrays, tracers or Python scalars) as arrays of one dtype (a
    strongly typed operand's, if any) and their common shape (rank 0 and size-1 dimensions
    broadcast)."""
    avals = [v.aval if isinstance(getattr(v, "aval", None), ShapedArray) else abstractify(v)
             for v in vals]
    strong = [av for av in avals if not av.weak_type]
    dt = (strong or avals)[0].dtype
    shape = tuple(np.broadcast_shapes(*(tuple(av.shape) for av in avals)))
    out = []
    for v, av in zip(vals, avals):
        v = cv.convert_element_type(v, dt)
        if tuple(av.shape) != shape:
            v = broadcast_in_dim(v, shape, tuple(range(len(av.shape))) if av.shape else ())
        out.append(v)
    return out


def _through_impl(impl: Callable[..., Any]) -> Callable[..., Any]:
    """The JVP contribution of ``a`` for a primitive computing ``impl(a, x)``: second
    derivatives in ``a`` have no closed form, so differentiate the staged series / continued
    fraction in forward mode (the loops carry tangents), as JAX does."""

    def rule(g: Any, a: Any, x: Any) -> Any:
        a, x, g = _operands(a, x, g)
        return ad.jvp(lambda a_: _at_precision(impl, a_, x), (a,), (g,))[1]

    return rule


def _log_density(a: Any, x: Any) -> Any:
    """``log(dP/dx) = (a - 1) log x - x - lgamma(a)``: the log of the Gamma(a) density."""
    return ew.sub(ew.sub(ew.mul(ew.sub(a, _c(a, 1)), tr.log(x)), x), lgamma(a))


def _igamma_dx(g: Any, a: Any, x: Any) -> Any:
    # dP/dx = x^(a-1) e^(-x) / Gamma(a)
    return ew.mul(g, tr.exp(_log_density(a, x)))


def _igamma_da(g: Any, a: Any, x: Any) -> Any:
    return ew.mul(g, igamma_grad_a(a, x))


igamma_p = binop_primitive("igamma", _float, _staged_lowering(
    "igamma", lambda a, x: _igamma_impl(a, x, upper=False)))
_rules.defjvp(igamma_p, _igamma_da, _igamma_dx)


def igamma(a: Any, x: Any) -> Any:
    """Regularized lower incomplete gamma function ``P(a, x)``, elementwise (same dtypes).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> [round(v, 4) for v in lax.igamma(jnp.array([1.0, 2.0]), jnp.array([1.0, 3.0])).tolist()]
        [0.6321, 0.8009]
    """
    return igamma_p.bind(a, x)


igammac_p = binop_primitive("igammac", _float, _staged_lowering(
    "igammac", lambda a, x: _igamma_impl(a, x, upper=True)))
_rules.defjvp(igammac_p, lambda g, a, x: ew.neg(_igamma_da(g, a, x)),
              lambda g, a, x: ew.neg(_igamma_dx(g, a, x)))


def igammac(a: Any, x: Any) -> Any:
    """Regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``, elementwise.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> round(float(lax.igammac(jnp.float32(1.0), jnp.float32(1.0))), 4)  # exp(-1)
        0.3679
    """
    return igammac_p.bind(a, x)


def _igamma_grad_a_impl(a: Any, x: Any) -> Any:
    return _igamma_da_impl(a, x, sample=False)


def _igamma_grad_a_dx(g: Any, a: Any, x: Any) -> Any:
    # d/dx dP/da = d/da (x^(a-1) e^-x / Gamma(a)) = density * (log x - digamma(a))
    density = tr.exp(_log_density(a, x))
    return ew.mul(g, ew.mul(density, ew.sub(tr.log(x), digamma(a))))


igamma_grad_a_p = binop_primitive("igamma_grad_a", _float, _staged_lowering(
    "igamma_grad_a", _igamma_grad_a_impl))
_rules.defjvp(igamma_grad_a_p, _through_impl(_igamma_grad_a_impl), _igamma_grad_a_dx)


def igamma_grad_a(a: Any, x: Any) -> Any:
    """The derivative ``dP(a, x)/da`` of the regularized lower incomplete gamma function with
    respect to its shape parameter, elementwise (same float dtypes; ``nan`` for ``a <= 0`` or
    ``x < 0``). The derivative of ``igammac`` is its negative.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> round(float(lax.igamma_grad_a(jnp.float32(1.0), jnp.float32(1.0))), 4)
        -0.4317
    """
    return igamma_grad_a_p.bind(a, x)


def _random_gamma_grad_impl(a: Any, x: Any) -> Any:
    return _igamma_da_impl(a, x, sample=True)


def _random_gamma_grad_dx(g: Any, ans: Any, a: Any, x: Any) -> Any:
    # ans = -P_a / P_x, so d ans/dx = -P_ax / P_x - ans * P_xx / P_x with
    # P_ax / P_x = log x - digamma(a) and P_xx / P_x = (a - 1) / x - 1
    dlog_density = ew.sub(ew.div(ew.sub(a, _c(a, 1)), x), _c(x, 1))
    d = ew.neg(ew.add(ew.sub(tr.log(x), digamma(a)), ew.mul(ans, dlog_density)))
    return ew.mul(g, d)


_random_gamma_grad_da = _through_impl(_random_gamma_grad_impl)
random_gamma_grad_p = binop_primitive("random_gamma_grad", _float, _staged_lowering(
    "random_gamma_grad", _random_gamma_grad_impl))
_rules.defjvp2(random_gamma_grad_p, lambda g, ans, a, x: _random_gamma_grad_da(g, a, x),
               _random_gamma_grad_dx)


def random_gamma_grad(a: Any, x: Any) -> Any:
    """The derivative of a Gamma(a, 1) sample ``x`` with respect to ``a`` at fixed uniform noise
    (implicit reparameterisation: ``-(dP/da) / (dP/dx)`` with ``P(a, x)`` the gamma CDF),
    elementwise; ``fluxion.random.gamma`` uses it for its gradient.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> round(float(lax.random_gamma_grad(jnp.float32(1.0), jnp.float32(1.0))), 4)
        1.1736
    """
    return random_gamma_grad_p.bind(a, x)

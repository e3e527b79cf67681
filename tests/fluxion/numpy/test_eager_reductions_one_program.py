"""Eager reductions with static arguments (mean/var/std, the nan* family, average, cov,
corrcoef, quantiles, ptp, count_nonzero) and other jnp functions JAX jits (diff, cumsum, digitize,
isclose, trace, convolve, tril, roll, argmax, searchsorted, repeat's gather, ...) run as one
compiled program per call pattern, as JAX's
``jit(..., static_argnames=...)``-decorated ``jnp`` functions: values, dtypes, shapes and weak
types against jax, one compile on the first call and none on a repeated one, ``ddof``/``q``/
``where`` as operands (a new value compiles nothing), jit(f) == f, op by op under disable_jit
and for unhashable static arguments, errors as before.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _compare import CountCompiles, assert_same, flags_both

import fluxion
import fluxion.numpy as fnp
from fluxion.numpy._eager import one_program_static

# Shapes no other test uses (7 x 3 x 2), so the first call's compile is this file's own.
_RNG = np.random.default_rng(11)
X = _RNG.uniform(-3, 3, (7, 3, 2)).astype(np.float32)
XN = X.copy()
XN[0, 1, 0] = XN[2, :, 1] = np.nan
POS = np.abs(X[:, :, 0]) + 0.5  # (7, 3)
MASK = X > -1.0
W = np.linspace(0.5, 2.0, 3).astype(np.float32)
I = _RNG.integers(-4, 5, (7, 3, 2)).astype(np.int32)
H = X.astype(np.float16)

# name -> function of the module and its (converted) inputs
CASES = {
    "mean": lambda m, a: m.mean(a["x"], axis=1),
    "mean_where_keepdims": lambda m, a: m.mean(a["x"], axis=(0, 2), keepdims=True,
                                               where=a["mask"]),
    "mean_int": lambda m, a: m.mean(a["i"]),
    "mean_f16": lambda m, a: m.mean(a["h"], axis=0),
    "mean_dtype": lambda m, a: m.mean(a["i"], axis=2, dtype=np.float32),
    "var_ddof": lambda m, a: m.var(a["x"], axis=0, ddof=1),
    "var_where": lambda m, a: m.var(a["x"], where=a["mask"]),
    "std_correction": lambda m, a: m.std(a["x"], axis=(1, 2), keepdims=True, correction=1.5),
    "std_int": lambda m, a: m.std(a["i"], axis=-1),
    "nanmean": lambda m, a: m.nanmean(a["xn"], axis=1),
    "nanvar": lambda m, a: m.nanvar(a["xn"], axis=0, ddof=1),
    "nanstd": lambda m, a: m.nanstd(a["xn"], keepdims=True),
    "nansum": lambda m, a: m.nansum(a["xn"], axis=2),
    "nanprod": lambda m, a: m.nanprod(a["xn"], axis=0),
    "nanmin": lambda m, a: m.nanmin(a["xn"], axis=(0, 1)),
    "nanmax": lambda m, a: m.nanmax(a["xn"], axis=2, keepdims=True),
    "nanargmax": lambda m, a: m.nanargmax(a["xn"], axis=0),
    "nanargmin": lambda m, a: m.nanargmin(a["xn"], axis=1),
    "ptp": lambda m, a: m.ptp(a["x"], axis=1),
    "count_nonzero": lambda m, a: m.count_nonzero(a["i"], axis=(0, 2)),
    "average": lambda m, a: m.average(a["pos"], axis=1, weights=a["w"]),
    "average_returned": lambda m, a: m.average(a["pos"], axis=1, weights=a["w"], returned=True),
    "cov": lambda m, a: m.cov(a["pos"]),
    "cov_aweights_ddof": lambda m, a: m.cov(a["pos"], rowvar=False, ddof=0,
                                            aweights=m.arange(1.0, 8.0)),
    "corrcoef": lambda m, a: m.corrcoef(a["pos"], rowvar=False),
    "quantile": lambda m, a: m.quantile(a["pos"], 0.3, axis=0),
    "quantile_vector_nearest": lambda m, a: m.quantile(a["pos"], m.asarray([0.1, 0.5, 0.9]),
                                                       axis=1, method="nearest"),
    "percentile": lambda m, a: m.percentile(a["pos"], 30.0, keepdims=True),
    "median": lambda m, a: m.median(a["x"], axis=2),
    "nanmedian": lambda m, a: m.nanmedian(a["xn"], axis=0),
    "nanquantile": lambda m, a: m.nanquantile(a["xn"], 0.25, axis=1),
    # other jnp functions JAX jits with static arguments
    "diff": lambda m, a: m.diff(a["x"], axis=0),
    "diff_n2_prepend": lambda m, a: m.diff(a["pos"], n=2, prepend=0.0),
    "ediff1d": lambda m, a: m.ediff1d(a["w"], to_end=m.asarray([9.0])),
    "trapezoid_dx": lambda m, a: m.trapezoid(a["pos"], dx=0.5, axis=0),
    "trapezoid_x": lambda m, a: m.trapezoid(a["pos"], x=a["w"]),
    "unwrap": lambda m, a: m.unwrap(a["x3"], axis=1),
    "digitize_right": lambda m, a: m.digitize(a["x"], a["w"], right=True),
    "polyval": lambda m, a: m.polyval(a["w"], a["pos"]),
    "vander": lambda m, a: m.vander(a["w"], 4),
    "cumsum_int": lambda m, a: m.cumsum(a["i"], axis=1),
    "cumprod_dtype": lambda m, a: m.cumprod(a["pos"], axis=0, dtype=np.float32),
    "nancumsum": lambda m, a: m.nancumsum(a["xn"]),
    "nancumprod": lambda m, a: m.nancumprod(a["xn"], axis=1),
    "kron": lambda m, a: m.kron(a["w"], a["i0"]),
    "trace_offset": lambda m, a: m.trace(a["pos"], offset=1),
    "cross": lambda m, a: m.cross(a["pos"], a["x1"]),
    "isclose_rtol": lambda m, a: m.isclose(a["x"], a["x_eps"], rtol=1e-4),
    "isclose_equal_nan": lambda m, a: m.isclose(a["xn"], a["xn"], equal_nan=True),
    "allclose": lambda m, a: m.allclose(a["pos"], 1.0),
    "nan_to_num": lambda m, a: m.nan_to_num(a["xn"], nan=-1.0, posinf=9.0),
    "round_decimals": lambda m, a: m.round(a["x"], 2),
    "outer": lambda m, a: m.outer(a["w"], a["i00"]),
    "inner": lambda m, a: m.inner(a["pos"], a["pos"]),
    "convolve": lambda m, a: m.convolve(a["w"], a["pos0"]),
    "correlate_same": lambda m, a: m.correlate(a["pos0"], a["w"], mode="same"),
    "tril": lambda m, a: m.tril(a["pos"], k=-1),
    "triu": lambda m, a: m.triu(a["x"], 1),
    "diagonal_offset": lambda m, a: m.diagonal(a["x"], offset=1, axis1=1, axis2=2),
    "diag_k": lambda m, a: m.diag(a["w"], 1),
    "roll_axes": lambda m, a: m.roll(a["x"], (1, -2), axis=(0, 1)),
    "roll_flat": lambda m, a: m.roll(a["pos"], -3),
    "rot90": lambda m, a: m.rot90(a["pos"], 3),
    "append_scalar": lambda m, a: m.append(a["w"], 3.0),
    "searchsorted_right": lambda m, a: m.searchsorted(a["w"], a["pos"], side="right"),
    "argmax": lambda m, a: m.argmax(a["x"], axis=1),
    "argmin_keepdims": lambda m, a: m.argmin(a["x"], axis=0, keepdims=True),
    "gcd": lambda m, a: m.gcd(a["i"], a["i_rev"]),
    "lcm_scalar": lambda m, a: m.lcm(a["i"], 6),
    "packbits": lambda m, a: m.packbits(a["mask"], axis=1),
    "unpackbits_little": lambda m, a: m.unpackbits(a["u8"], axis=0, bitorder="little"),
    # repeat's scatter/cumsum/gather core (array repeats with a total_repeat_length)
    "repeat_total": lambda m, a: m.repeat(a["pos"], a["reps"], axis=0, total_repeat_length=9),
    "repeat_total_short": lambda m, a: m.repeat(a["pos"], a["reps"], axis=0,
                                                total_repeat_length=5),
}
# Variances: XLA's CPU reductions round the fused sum of squares differently from program to
# program (jax.jit(lambda x: jnp.var(x, ddof=1)) and eager jnp.var differ in the last bit too).
TOL = {"cov": 1e-5, "cov_aweights_ddof": 1e-5, "corrcoef": 1e-5, "mean_f16": 1e-3,
       "convolve": 1e-6, "correlate_same": 1e-6,
       **dict.fromkeys(("var_ddof", "var_where", "std_correction", "std_int", "nanvar", "nanstd"),
                       1e-6)}


JIT_CHECKED = {"mean_where_keepdims", "var_where", "nanvar", "nanargmax", "average_returned",
               "cov_aweights_ddof", "quantile_vector_nearest", "diff_n2_prepend", "cumsum_int",
               "isclose_equal_nan", "nan_to_num", "roll_axes", "searchsorted_right", "gcd",
               "repeat_total"}
assert JIT_CHECKED <= set(CASES), sorted(JIT_CHECKED - set(CASES))


def _inputs(m):
    return {"x": m.asarray(X), "xn": m.asarray(XN), "pos": m.asarray(POS), "mask": m.asarray(MASK),
            "w": m.asarray(W), "i": m.asarray(I), "h": m.asarray(H), "x3": m.asarray(X * 3),
            "x1": m.asarray(X[:, :, 1]), "x_eps": m.asarray(X + np.float32(1e-6)),
            "i0": m.asarray(I[0]), "i00": m.asarray(I[0, 0]), "pos0": m.asarray(POS[:, 0]),
            "i_rev": m.asarray(I[::-1] * 3), "u8": m.asarray((np.abs(I) * 29).astype(np.uint8)),
            "reps": m.asarray(np.array([1, 0, 2, 1, 3, 1, 1], np.int32))}


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_program_per_call_pattern_matches_jax(name):
    f = CASES[name]
    ours_in, theirs_in = _inputs(fnp), _inputs(jnp)
    with CountCompiles() as first:
        ours = f(fnp, ours_in)
    with CountCompiles() as again:
        repeat = f(fnp, ours_in)
    tol = TOL.get(name)
    tols = {"rtol": tol, "atol": tol} if tol else {}
    assert_same(ours, f(jnp, theirs_in), **tols)
    assert_same(repeat, ours, rtol=0, atol=0)
    assert first.n == 1, f"{name}: {first.n} compiles on the first eager call (one program)"
    assert again.n == 0, f"{name}: a repeated eager call compiled {again.n} programs"
    if name in JIT_CHECKED:  # the identity jit(f) == f (one case per kind: each is a compile)
        jitted = fluxion.jit(lambda a: f(fnp, a))(ours_in)
        assert_same(jitted, ours, **(tols or {"rtol": 0, "atol": 0}))


def test_traced_arguments_are_operands_as_in_jax():
    # ddof, correction, q and where are traced by JAX's jitted functions: a new value reuses
    # the compiled program.
    x, jx = fnp.asarray(X[:, :, 1]), jnp.asarray(X[:, :, 1])
    fnp.var(x, axis=1, ddof=0)
    fnp.quantile(x, 0.5, axis=0)
    with CountCompiles() as c:
        for ddof in (1, 2, 3):  # 3: no degrees of freedom left, NaN as JAX's
            assert_same(fnp.var(x, axis=1, ddof=ddof), jnp.var(jx, axis=1, ddof=ddof),
                        rtol=1e-6, atol=1e-6)
        for q in (0.1, 0.75):
            assert_same(fnp.quantile(x, q, axis=0), jnp.quantile(jx, q, axis=0))
    assert c.n == 0
    # a static argument's type is part of the key: keepdims=1 and keepdims=True both work
    assert_same(fnp.mean(x, axis=0, keepdims=1), jnp.mean(jx, axis=0, keepdims=1))
    assert_same(fnp.mean(x, axis=0, keepdims=True), jnp.mean(jx, axis=0, keepdims=True))


def test_op_by_op_fallbacks_give_the_same_results():
    x, jx = fnp.asarray(POS), jnp.asarray(POS)
    # an unhashable static argument (a list axis) runs op by op
    assert_same(fnp.std(x, axis=[0, 1], ddof=1), jnp.std(jx, axis=(0, 1), ddof=1))
    # Python numbers alone are not an eager program's operands
    assert_same(fnp.mean(3.0), jnp.mean(3.0))
    # typed PRNG keys run op by op (key equality)
    assert_same(fnp.isclose(fluxion.random.key(1), fluxion.random.key(1)),
                jnp.isclose(jax.random.key(1), jax.random.key(1)))
    with flags_both("jax_disable_jit", True):
        assert_same(fnp.var(x, axis=0, ddof=1), jnp.var(jx, axis=0, ddof=1), rtol=1e-6,
                    atol=1e-6)


def test_grad_and_vmap_inline_the_body_as_jax():
    x = X[:, :, 0]
    ours = fluxion.grad(lambda v: fnp.std(v, axis=0, ddof=1).sum())(x)
    theirs = jax.grad(lambda v: jnp.std(v, axis=0, ddof=1).sum())(x)
    assert_same(ours, theirs, rtol=1e-6, atol=1e-6)
    assert_same(fluxion.vmap(lambda v: fnp.nanmean(v))(XN[:, :, 0]),
                jax.vmap(lambda v: jnp.nanmean(v))(XN[:, :, 0]))


def test_errors_are_the_functions_own():
    x = fnp.ones((2, 3))
    with pytest.raises(ValueError, match="mean: axis 5 is out of bounds"):
        fnp.mean(x, axis=5)
    with pytest.raises(TypeError, match="mean requires ndarray or scalar"):
        fnp.mean([1.0, 2.0])
    with pytest.raises(ValueError, match="method can only be"):
        fnp.quantile(x, 0.5, method="bogus")
    with pytest.raises(TypeError, match="unexpected keyword"):
        fnp.var(x, axes=0)


def test_decorator_checks_its_arguments():
    with pytest.raises(TypeError, match="no parameters"):
        one_program_static(static_argnames=("axis",))(lambda x: x)
    with pytest.raises(TypeError, match="positional-only or variadic"):
        one_program_static()(lambda *xs: xs)

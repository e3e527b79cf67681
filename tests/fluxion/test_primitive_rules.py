"""Every primitive's rules, checked numerically from one table.

``CASES`` holds, for every :class:`~fluxion.core.primitive.Primitive` defined at module level
anywhere in the ``fluxion`` package, one or more small programs that bind it, with sample inputs.
A program is written once as ``fn(ns, *args)`` against a namespace ``ns`` (:data:`FLX` for Fluxion,
:data:`JAX` for the reference), so the same case runs on both. Checks per case:

- ``binds``: tracing the program records the primitive (so the table cannot drift);
- ``fd``: ``jvp`` against central finite differences, in float64;
- ``jax``: ``jvp`` (primal and tangent) against ``jax.jvp`` of the same program, in float64;
- ``transpose``: ``<vjp(ct), t> == <ct, jvp(t)>`` (real part of the bilinear pairing) for random
  ``t`` and ``ct``, in float64; this checks transpose rules and the linearisation of jvp rules;
- ``vmap``: ``vmap`` over a batch of 3 against a Python loop stacking the results, in float32,
  with every argument mapped on axis 0, and with a mapped axis at the end mixed with unmapped
  arguments (both ways round for programs with several arguments).

Integer-only programs get the ``binds`` and ``vmap`` checks. Each check runs the programs of many
cases inside one ``jit`` (one compilation per chunk instead of one per operation) and each test
reads its own case's result; when a chunk fails to trace or compile, its cases run one by one so
that the failure lands on the test of the case that caused it.

A new primitive fails ``test_table_covers_every_primitive`` until it has a case (or an entry with
its reason in ``EXCLUDED``). A rule that is wrong today gets ``xfail={check: reason}`` on its
case (a strict xfail: fixing the rule turns it into a failure that asks to remove the mark).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from types import SimpleNamespace
from typing import Any, Callable

import jax
import jax.ad_checkpoint
import jax.custom_derivatives
import jax.experimental.sparse
import jax.extend.core.primitives as jax_primitives
import numpy as np
import pytest
from _compare import x64_both
from _primitives import find_primitives

import fluxion
import fluxion.custom_derivatives
import fluxion.experimental.sparse
import fluxion.lax.linalg
from fluxion.core.primitive import Primitive

# Under ``pytest -n N --dist loadgroup`` every test of this file runs on one worker, which then
# compiles each chunk once (with plain ``--dist load`` the workers share the tests and each
# compiles most chunks).
pytestmark = pytest.mark.xdist_group("primitive_rules")

PRIMS = find_primitives()

# Primitives with no numeric check. Keep this short, with the reason.
EXCLUDED: dict[str, str] = {
    "rng_uniform": "XLA's stateful sampler: no derivative, no batching rule and no fixed values "
                   "to compare (tests/fluxion/surface/test_surface_lax.py checks its range)",
    # Meaningful only functionalized by checkify (staged alone it is an error, as in JAX):
    # tested against JAX in tests/fluxion/callbacks/test_callbacks_checkify.py.
    "check": "checkify.check runs functionalized by checkify, not by jvp/vmap of a program",
    # Bound only for user-defined extended dtypes (their rules decide conversions, tangent add
    # and zeros): tests/fluxion/test_extended_dtypes.py defines the same dtype for both libraries
    # and checks values, jvp/vjp (the dtype's max add), vmap and errors against JAX.
    "to_edtype": "needs a user-defined extended dtype: tests/fluxion/test_extended_dtypes.py",
    "from_edtype": "needs a user-defined extended dtype: tests/fluxion/test_extended_dtypes.py",
    # Call a C++ kernel built and registered at test time: tests/fluxion/test_ffi.py compares
    # values, each vmap_method, lowerings and errors (no derivative) with jax.ffi.
    "ffi_call": "needs a compiled FFI kernel: tests/fluxion/test_ffi.py",
}


def _namespace(top: Any, linalg: Any, prims: dict[str, Any], checkpoint_name: Any) -> Any:
    """The API a case program uses, for one library (Fluxion or JAX)."""
    return SimpleNamespace(
        lax=top.lax, linalg=linalg, numpy=top.numpy, jit=top.jit, vmap=top.vmap, jvp=top.jvp,
        vjp=top.vjp, checkpoint=top.checkpoint,
        checkpoint_name=checkpoint_name, custom_jvp=top.custom_jvp, custom_vjp=top.custom_vjp,
        linear_call=top.custom_derivatives.linear_call,
        sparse=top.experimental.sparse,
        bind=lambda name, *args, **params: prims[name].bind(*args, **params))


FLX = _namespace(fluxion, fluxion.lax.linalg, PRIMS, fluxion.checkpoint_name)
JAX = _namespace(jax, jax.lax.linalg,
                 {n[:-2]: getattr(jax_primitives, n) for n in dir(jax_primitives)
                  if n.endswith("_p")},
                 jax.ad_checkpoint.checkpoint_name)

# ------------------------------------------------------------------ sample inputs


@dataclasses.dataclass(frozen=True)
class Arg:
    """One sample input: ``make(rng, float_dtype)`` builds it; ``diff``: jvp/vjp differentiate it."""

    make: Callable[[np.random.Generator, np.dtype], np.ndarray]
    diff: bool


def _complex_of(dtype: np.dtype) -> np.dtype:
    return np.result_type(dtype, np.complex64)


def F(*shape: int, lo: float = -3.0, hi: float = 3.0, diff: bool = True) -> Arg:
    """A float array uniform in [lo, hi]."""
    return Arg(lambda rng, dt: rng.uniform(lo, hi, shape).astype(dt), diff)


def Pos(*shape: int, diff: bool = True) -> Arg:
    """A float array in [0.5, 3]: away from poles and branch cuts at 0."""
    return F(*shape, lo=0.5, hi=3.0, diff=diff)


def Unit(*shape: int) -> Arg:
    """A float array in [-0.9, 0.9]: inside the domain of acos, atanh, erf_inv, ..."""
    return F(*shape, lo=-0.9, hi=0.9)


def C(*shape: int) -> Arg:
    """A complex array."""
    return Arg(lambda rng, dt: (rng.uniform(-2, 2, shape) + 1j * rng.uniform(-2, 2, shape))
               .astype(_complex_of(dt)), True)


def Int(*shape: int, lo: int = -8, hi: int = 8, dtype: str = "int32") -> Arg:
    """An integer array uniform in [lo, hi)."""
    return Arg(lambda rng, dt: rng.integers(lo, hi, shape).astype(dtype), False)


def Bool(*shape: int) -> Arg:
    """A boolean array."""
    return Arg(lambda rng, dt: rng.integers(0, 2, shape).astype(bool), False)


def Const(value: Any) -> Arg:
    """The same non-differentiated value for every sample (cast to the float dtype if float)."""
    v = np.asarray(value)
    return Arg(lambda rng, dt: v.astype(dt) if v.dtype.kind == "f" else v, False)


def UniqueRows(n: int, size: int) -> Arg:
    """int32 indices of shape (n, 1): n distinct rows of an axis of ``size``."""
    return Arg(lambda rng, dt: rng.permutation(size)[:n, None].astype(np.int32), False)


def Pivots(n: int) -> Arg:
    """Valid LU pivots of an n x n matrix (row i swapped with a row >= i)."""
    return Arg(lambda rng, dt: np.array([rng.integers(i, n) for i in range(n)], np.int32), False)


def Mat(kind: str, n: int, m: int | None = None) -> Arg:
    """A well-conditioned float matrix: 'general', 'spd', 'sym' or 'tril' (lower triangular)."""
    def make(rng: np.random.Generator, dt: np.dtype) -> np.ndarray:
        a = rng.uniform(-1, 1, (n, m or n))
        if kind == "spd":
            a = a @ a.T + n * np.eye(n)
        elif kind == "sym":
            a = a + a.T
        elif kind == "tril":
            a = np.tril(a) + 2 * np.eye(n)
        return a.astype(dt)
    return Arg(make, True)


# ------------------------------------------------------------------ the table


@dataclasses.dataclass(eq=False)
class Case:
    """One program binding ``prim``: ``fn(ns, *args)`` with sample ``args``.

    ``deriv=False``: the primitive has no derivative rules (only ``binds`` and ``vmap``);
    ``batch=False``: no batching rule (no ``vmap`` check).
    ``jvp=False``: forward mode is undefined (custom_vjp): no ``fd``/``jax`` check, and the
    transpose check pairs the vjp with finite differences instead of jvp. ``fd``, ``jax`` and
    ``transpose`` turn one check off (say why in a comment). ``xfail`` maps a check name to the
    precise reason it fails today (a strict xfail). ``trace(*args)`` traces a program that binds
    ``prim`` when ``fn`` itself does not. ``slow``: its checks run only with FLUXION_SLOW=1.
    """

    prim: str
    fn: Callable[..., Any]
    args: tuple[Arg, ...]
    label: str = ""
    deriv: bool = True
    batch: bool = True
    jvp: bool = True
    fd: bool = True
    jax: bool = True
    transpose: bool = True
    fd_tol: float = 1e-6
    jax_tol: float = 1e-9
    vmap_tol: float = 1e-5
    trace: Callable[..., Any] | None = None
    xfail: dict[str, str] = dataclasses.field(default_factory=dict)
    slow: bool = False

    @property
    def id(self) -> str:
        return f"{self.prim}-{self.label}" if self.label else self.prim

    @property
    def diff_positions(self) -> tuple[int, ...]:
        return tuple(i for i, a in enumerate(self.args) if a.diff) if self.deriv else ()

    def sample(self, dtype: Any, seed: int) -> tuple[np.ndarray, ...]:
        """The inputs of batch member ``seed`` (0, 1, 2, ...) with floats of ``dtype``."""
        return tuple(np.asarray(a.make(np.random.default_rng([seed, i]), np.dtype(dtype)))
                     for i, a in enumerate(self.args))


# The lax function of a primitive, where the names differ.
_LAX_NAME = {"not": "bitwise_not", "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor"}


def _unary(name: str, arg: Callable[..., Arg] = F, **kw: Any) -> Case:
    """``lax.<name>(x)`` of a (2, 3) input."""
    fname = _LAX_NAME.get(name, name)
    return Case(name, lambda ns, x: getattr(ns.lax, fname)(x), (arg(2, 3),), **kw)


def _binary(name: str, a: Arg | None = None, b: Arg | None = None, **kw: Any) -> Case:
    """``lax.<name>(x, y)`` of two (2, 3) inputs (floats unless given)."""
    fname = _LAX_NAME.get(name, name)
    return Case(name, lambda ns, x, y: getattr(ns.lax, fname)(x, y),
                (a or F(2, 3), b or F(2, 3)), **kw)


def _gather_1d(ns: Any, x: Any, idx: Any) -> Any:
    dn = ns.lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                       start_index_map=(0,))
    return ns.lax.gather(x, idx, dn, (1, 3))


def _gather_points(ns: Any, x: Any, idx: Any) -> Any:
    dn = ns.lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0, 1),
                                       start_index_map=(0, 1))
    return ns.lax.gather(x, idx, dn, (1, 1), mode="clip")


def _scatter(name: str, idx: Arg | None = None, **kw: Any) -> Case:
    """``name`` of a (4, 3) operand at rows ``idx`` (default: 2 distinct rows)."""
    def fn(ns: Any, x: Any, i: Any, u: Any) -> Any:
        dn = ns.lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                            scatter_dims_to_operand_dims=(0,))
        return getattr(ns.lax, name)(x, i, u, dn, unique_indices=idx is None)
    rows = UniqueRows(2, 4) if idx is None else idx
    return Case(name, fn, (F(4, 3), rows, F(2 if idx is None else 3, 3)), **kw)


def _maxpool(ns: Any, x: Any) -> Any:
    return ns.lax.reduce_window(x, -np.inf, ns.lax.max, (2, 2), (1, 1), "VALID")


def _named(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn(ns, v)`` run per member of the named axis 'i' (the leading axis of x)."""
    return lambda ns, x: ns.vmap(lambda v: fn(ns, v), axis_name="i")(x)


def _mesh1(ns: Any) -> Any:
    """A one-device mesh with axis 'x' of the library of ``ns``."""
    lib = _lib(ns)
    return lib.make_mesh((1,), ("x",), axis_types=(lib.sharding.AxisType.Auto,),
                         devices=lib.devices()[:1])


def _custom_jvp_sin(ns: Any) -> Any:
    f = ns.custom_jvp(lambda x: ns.lax.sin(x))
    f.defjvp(lambda primals, tangents: (ns.lax.sin(primals[0]),
                                        ns.lax.cos(primals[0]) * tangents[0]))
    return f


def _custom_vjp_sin_x(ns: Any) -> Any:
    f = ns.custom_vjp(lambda x: ns.lax.sin(x) * x)
    f.defvjp(lambda x: (ns.lax.sin(x) * x, x),
             lambda x, ct: ((ns.lax.cos(x) * x + ns.lax.sin(x)) * ct,))
    return f


def _newton_cbrt(ns: Any, y: Any) -> Any:
    """The root of x**3 = y by custom_root (the solve is closed-form; the rule does the rest)."""
    return ns.lax.custom_root(lambda x: x * x * x - y, ns.numpy.ones_like(y),
                              lambda f, x0: ns.lax.cbrt(y),
                              lambda g, t: t / g(ns.numpy.ones_like(t)))


def _linear_solve(ns: Any, a: Any, b: Any) -> Any:
    def solve(matvec: Any, r: Any) -> Any:
        return ns.numpy.linalg.solve(a, r)
    return ns.lax.custom_linear_solve(lambda v: a @ v, b, solve, solve, symmetric=True)


def _while(ns: Any, x: Any) -> Any:
    def body(c: Any) -> Any:
        return c[0] + 1, ns.lax.sin(c[1]) * 1.5 + 0.5 * c[1]
    return ns.lax.while_loop(lambda c: c[0] < 3, body, (0, x))[1]


def _while_data(ns: Any, x: Any) -> Any:
    # The trip count depends on the value: batch members stop at different steps.
    return ns.lax.while_loop(lambda c: ns.lax.reduce_sum(c, (0,)) < 10.0,
                             lambda c: c * 1.5 + 1.0, x)


def _scan(ns: Any, c0: Any, xs: Any) -> Any:
    return ns.lax.scan(lambda c, x: (c * x + ns.lax.sin(c), c * 2.0), c0, xs)


def _lib(ns: Any) -> Any:
    """The top-level package (fluxion or jax) of a namespace."""
    return importlib.import_module(ns.lax.__name__.split(".")[0])


def _host_sin(x: Any) -> np.ndarray:
    return np.sin(np.asarray(x))


def _host_nothing(x: Any) -> None:
    np.asarray(x)


_CONV_DN = ("NCH", "OIH", "NCH")
_COMPARISONS = ["eq", "ne", "lt", "le", "gt", "ge"]
_BITWISE = ["and", "or", "xor"]

CASES: list[Case] = [
    # ---------------------------------------------------------- elementwise, one operand
    *[_unary(n) for n in ["abs", "asinh", "atan", "bessel_i0e", "bessel_i1e", "cbrt", "ceil",
                          "cos", "cosh", "erf", "erfc", "exp", "exp2", "expm1", "floor",
                          "logistic", "neg", "round", "sign", "sin", "sinh", "tanh"]],
    *[_unary(n, Unit) for n in ["acos", "asin", "atanh", "erf_inv", "tan"]],
    *[_unary(n, Pos) for n in ["digamma", "lgamma", "log", "log1p", "rsqrt", "sqrt"]],
    _unary("acosh", lambda *s: F(*s, lo=1.2, hi=3.0)),
    *[_unary(n, C, label="complex") for n in ["abs", "exp", "log", "sqrt"]],
    *[_unary(n, C) for n in ["conj", "real", "imag"]],
    _unary("is_finite"),
    # Not the derivative of the values: the point is the zero tangent (checked against JAX).
    Case("stop_gradient", lambda ns, x: ns.lax.stop_gradient(x) * x, (F(2, 3),), fd=False),
    Case("copy", lambda ns, x: ns.bind("copy", x), (F(2, 3),)),
    # sparse.todense of a dense array: the identity (under sparsify it densifies a sparse value;
    # tests/fluxion/experimental/test_sparse.py compares that with jax)
    Case("sparse_todense", lambda ns, x: ns.sparse.todense(x) * x, (F(2, 3),)),
    Case("integer_pow", lambda ns, x: ns.lax.integer_pow(x, 3), (F(2, 3),)),
    Case("integer_pow", lambda ns, x: ns.lax.integer_pow(x, -2), (Pos(2, 3),), label="neg"),
    Case("reduce_precision",
         lambda ns, x: ns.lax.reduce_precision(x, 8, np.finfo(x.dtype).nmant - 2), (F(2, 3),)),
    Case("convert_element_type",
         lambda ns, x: ns.lax.convert_element_type(x, _complex_of(x.dtype)), (F(2, 3),)),
    Case("convert_element_type", lambda ns, x: ns.lax.convert_element_type(x, np.int32),
         (F(2, 3),), label="int"),
    Case("bitcast_convert_type",
         lambda ns, x: ns.lax.bitcast_convert_type(x, f"int{8 * x.dtype.itemsize}"), (F(2, 3),)),
    *[_unary(n, Int) for n in ["not", "population_count", "clz"]],
    _unary("not", Bool, label="bool"),
    # ---------------------------------------------------------- elementwise, several operands
    *[_binary(n) for n in ["add", "sub", "mul", "max", "min", "atan2"]],
    _binary("div", b=Pos(2, 3)),
    _binary("rem", b=Pos(2, 3)),
    _binary("pow", a=Pos(2, 3)),
    _binary("complex"),
    *[_binary(n, C(2, 3), C(2, 3), label="complex") for n in ["mul", "div"]],
    # nextafter's derivative is 1 in x and 0 in y; JAX has no jvp rule (it raises).
    _binary("nextafter", jax=False),
    *[_binary(n, Pos(2, 3), Pos(2, 3)) for n in ["igamma", "igammac"]],
    # The jvp rules of these two sum a series in a while loop: no reverse mode (as in JAX), and
    # JAX has no jvp rule for igamma_grad_a. Their programs take seconds to compile.
    _binary("igamma_grad_a", Pos(2, 3), Pos(2, 3), transpose=False, jax=False, slow=True),
    _binary("random_gamma_grad", Pos(2, 3), Pos(2, 3), transpose=False, slow=True),
    _binary("polygamma", Const([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0]]), Pos(2, 3)),
    *[_binary(n) for n in _COMPARISONS],
    *[_binary(n, Int(2, 3), Int(2, 3)) for n in _BITWISE],
    *[_binary(n, Bool(2, 3), Bool(2, 3), label="bool") for n in _BITWISE],
    *[_binary(n, Int(2, 3), Int(2, 3, lo=0, hi=5)) for n in
      ["shift_left", "shift_right_arithmetic", "shift_right_logical"]],
    _binary("rem", Int(2, 3), Int(2, 3, lo=1, hi=5), label="int"),
    # JAX's clamp jvp fails for scalar bounds (select of a scalar and a (2, 3) tangent).
    Case("clamp", lambda ns, lo, x, hi: ns.lax.clamp(lo, x, hi),
         (F(lo=-3.0, hi=-1.0), F(2, 3), F(lo=1.0, hi=3.0)), jax=False),
    Case("clamp", lambda ns, lo, x, hi: ns.lax.clamp(lo, x, hi),
         (F(2, 3, lo=-3.0, hi=0.0), F(2, 3), F(2, 3, lo=0.0, hi=3.0)), label="arrays"),
    Case("select_n", lambda ns, p, a, b: ns.lax.select_n(p, a, b), (Bool(2, 3), F(2, 3), F(2, 3))),
    Case("select_n", lambda ns, p, a, b, c: ns.lax.select_n(p, a, b, c),
         (Int(2, 3, lo=0, hi=3), F(2, 3), F(2, 3), F(2, 3)), label="int32"),
    # ---------------------------------------------------------- shapes
    Case("broadcast_in_dim", lambda ns, x: ns.lax.broadcast_in_dim(x, (2, 3), (1,)), (F(3),)),
    Case("reshape", lambda ns, x: ns.lax.reshape(x, (3, 2)), (F(2, 3),)),
    Case("transpose", lambda ns, x: ns.lax.transpose(x, (2, 0, 1)), (F(2, 3, 2),)),
    Case("squeeze", lambda ns, x: ns.lax.squeeze(x, (1,)), (F(2, 1, 3),)),
    Case("rev", lambda ns, x: ns.lax.rev(x, (0, 1)), (F(2, 3),)),
    Case("concatenate", lambda ns, x, y: ns.lax.concatenate([x, y], 0), (F(2, 3), F(1, 3))),
    Case("pad", lambda ns, x, v: ns.lax.pad(x, v, [(1, -1, 1), (0, 2, 0)]), (F(2, 3), F())),
    Case("iota", lambda ns, x: x * ns.lax.iota(x.dtype, 3), (F(3),)),
    Case("slice", lambda ns, x: ns.lax.slice(x, (1, 0), (3, 3), (1, 2)), (F(4, 3),)),
    Case("dynamic_slice", lambda ns, x, i, j: ns.lax.dynamic_slice(x, (i, j), (2, 2)),
         (F(4, 3), Int(lo=-1, hi=4), Int(lo=0, hi=3))),
    Case("dynamic_update_slice",
         lambda ns, x, u, i, j: ns.lax.dynamic_update_slice(x, u, (i, j)),
         (F(4, 3), F(2, 2), Int(lo=-1, hi=4), Int(lo=0, hi=3))),
    Case("gather", _gather_1d, (F(4, 3), Int(2, 1, lo=0, hi=4))),
    Case("gather", _gather_points, (F(4, 3), Int(3, 2, lo=0, hi=3)), label="points"),
    _scatter("scatter"),
    _scatter("scatter_add", Int(3, 1, lo=0, hi=4)),
    _scatter("scatter_sub", Int(3, 1, lo=0, hi=4)),
    _scatter("scatter_mul"),
    _scatter("scatter_min"),
    _scatter("scatter_max"),
    # ---------------------------------------------------------- reductions and scans
    *[Case(n, lambda ns, x, n=n: getattr(ns.lax, n)(x, (1,)), (F(2, 3),))
      for n in ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"]],
    *[Case(n, lambda ns, x, n=n: getattr(ns.lax, n)(x, (1,)), (Int(2, 3),))
      for n in ["reduce_and", "reduce_or", "reduce_xor"]],
    *[Case(n, lambda ns, x, n=n: getattr(ns.lax, n)(x, (0, 1)), (Bool(2, 3),), label="bool")
      for n in ["reduce_and", "reduce_or", "reduce_xor"]],
    *[Case(n, lambda ns, x, n=n: getattr(ns.lax, n)(x, 1, np.int32), (F(2, 3),))
      for n in ["argmax", "argmin"]],
    Case("reduce", lambda ns, x, y: ns.lax.reduce(
        (x, y), (0.0, 1.0), lambda a, b: (a[0] + b[0], a[1] * b[1]), (1,)),
        (F(2, 3), F(2, 3))),
    *[Case(n, lambda ns, x, n=n: getattr(ns.lax, n)(x, axis=1), (F(2, 4),))
      for n in ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"]],
    Case("cumsum", lambda ns, x: ns.lax.cumsum(x, axis=0, reverse=True), (F(3, 2),),
         label="reverse"),
    Case("sort", lambda ns, x: ns.lax.sort(x, dimension=1), (F(2, 4),)),
    Case("sort", lambda ns, k, v: ns.lax.sort((k, v), dimension=0, num_keys=1),
         (F(4, 2), F(4, 2)), label="key_val"),
    Case("top_k", lambda ns, x: ns.lax.top_k(x, 2), (F(2, 4),)),
    # ---------------------------------------------------------- windows
    Case("reduce_window_sum", lambda ns, x: ns.lax.reduce_window(
        x, 0.0, ns.lax.add, (2, 2), (1, 2), ((1, 0), (0, 1))), (F(3, 4),)),
    Case("reduce_window_max", lambda ns, x: _maxpool(ns, x), (F(3, 4),)),
    Case("reduce_window_min", lambda ns, x: ns.lax.reduce_window(
        x, np.inf, ns.lax.min, (2, 1), (1, 1), "SAME"), (F(3, 4),)),
    # A generic reduce_window has no reverse mode (nor in JAX).
    Case("reduce_window", lambda ns, x, y: ns.lax.reduce_window(
        (x, y), (0.0, 1.0), lambda a, b: (a[0] + b[0], a[1] * b[1]), (2, 2), (1, 1), "VALID"),
        (F(3, 4), F(3, 4)), transpose=False),
    Case("select_and_gather_add",
         lambda ns, x, t: ns.jvp(lambda v: _maxpool(ns, v), (x,), (t,))[1],
         (F(3, 4), F(3, 4))),
    Case("select_and_scatter_add",
         lambda ns, x, ct: ns.vjp(lambda v: _maxpool(ns, v), x)[1](ct)[0],
         (F(3, 4), F(2, 3))),
    # ---------------------------------------------------------- dot and convolution
    Case("dot_general", lambda ns, a, b: ns.lax.dot_general(a, b, (((1,), (0,)), ((), ()))),
         (F(2, 3), F(3, 4))),
    Case("dot_general", lambda ns, a, b: ns.lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
         (F(2, 2, 3), F(2, 3, 2)), label="batch"),
    # no derivative in JAX either (its decomposition is a composite XLA may replace)
    Case("scaled_dot", lambda ns, a, b: ns.lax.scaled_dot(a, b, preferred_element_type=np.float32),
         (F(2, 4, diff=False), F(4, 3, diff=False)), deriv=False),
    Case("conv_general_dilated", lambda ns, x, w: ns.lax.conv_general_dilated(
        x, w, (1,), "SAME", dimension_numbers=_CONV_DN), (F(2, 1, 6), F(2, 1, 3))),
    Case("conv_general_dilated", lambda ns, x, w: ns.lax.conv_general_dilated(
        x, w, (2, 1), ((1, 1), (0, 1)), rhs_dilation=(1, 2), feature_group_count=2),
        (F(1, 4, 5, 5), F(4, 2, 3, 2)), label="grouped"),
    Case("conv_general_dilated", lambda ns, x, w: ns.lax.conv_general_dilated(
        x, w, (1,), ((1, 1),), lhs_dilation=(2,), dimension_numbers=_CONV_DN),
        (F(2, 1, 4), F(1, 1, 3)), label="lhs_dilated"),
    # ---------------------------------------------------------- linear algebra
    Case("cholesky", lambda ns, a: ns.linalg.cholesky(a), (Mat("spd", 3),)),
    Case("triangular_solve", lambda ns, a, b: ns.linalg.triangular_solve(
        a, b, left_side=True, lower=True), (Mat("tril", 3), F(3, 2))),
    Case("triangular_solve", lambda ns, a, b: ns.linalg.triangular_solve(
        a, b, left_side=False, lower=True, transpose_a=True), (Mat("tril", 3), F(2, 3)),
        label="right_transposed"),
    Case("lu", lambda ns, a: ns.linalg.lu(a), (Mat("general", 3),)),
    Case("lu_pivots_to_permutation", lambda ns, p: ns.linalg.lu_pivots_to_permutation(p, 4),
         (Pivots(3),)),
    Case("qr", lambda ns, a: ns.linalg.qr(a, full_matrices=False), (Mat("general", 4, 3),)),
    Case("geqrf", lambda ns, a: ns.linalg.geqrf(a), (Mat("general", 4, 3),), deriv=False),
    Case("householder_product", lambda ns, a, t: ns.linalg.householder_product(a, t),
         (Mat("general", 4, 3), F(3)), deriv=False),
    # Eigenvectors and singular vectors are defined up to sign: check v * v, sign-free.
    Case("eigh", lambda ns, a: (lambda v, w: (v * v, w))(*ns.linalg.eigh(a)), (Mat("sym", 3),)),
    Case("svd", lambda ns, a: (lambda u, s, vt: (u * u, s, vt * vt))(
        *ns.linalg.svd(a, full_matrices=False)), (Mat("general", 3, 2),)),
    Case("svd", lambda ns, a: ns.linalg.svd(a, compute_uv=False), (Mat("general", 3, 2),),
         label="values"),
    Case("eig", lambda ns, a: ns.linalg.eig(a, compute_left_eigenvectors=False,
                                            compute_right_eigenvectors=False)[0],
         (Mat("spd", 3),)),
    Case("eig", lambda ns, a: ns.linalg.eig(a), (Mat("general", 3),), label="vectors",
         deriv=False),
    Case("tridiagonal_solve", lambda ns, dl, d, du, b: ns.linalg.tridiagonal_solve(
        dl * np.array([0, 1, 1], dl.dtype), d, du * np.array([1, 1, 0], du.dtype), b),
        (F(3, lo=-1, hi=1), F(3, lo=4, hi=5), F(3, lo=-1, hi=1), F(3, 2))),
    Case("schur", lambda ns, a: ns.linalg.schur(a), (Mat("spd", 3),), deriv=False),
    Case("hessenberg", lambda ns, a: ns.linalg.hessenberg(a), (Mat("general", 3),), deriv=False),
    Case("tridiagonal", lambda ns, a: ns.linalg.tridiagonal(a), (Mat("sym", 3),), deriv=False),
    # unbatched and without derivatives, as jax's primitive
    Case("cholesky_update", lambda ns, r, w: ns.linalg.cholesky_update(r.T, w),
         (Mat("tril", 3), F(3)), deriv=False, batch=False),
    # jax=False: jax's symmetric_product_p has no jvp rule (Fluxion's is the product rule)
    Case("symmetric_product", lambda ns, a, c: ns.linalg.symmetric_product(
        a, c, alpha=2.0, beta=0.5, symmetrize_output=True), (F(3, 2), Mat("sym", 3)),
        jax=False),
    # ---------------------------------------------------------- control flow
    Case("cond", lambda ns, i, x: ns.lax.switch(
        i, [ns.lax.sin, ns.lax.cos, lambda v: v * v], x), (Int(lo=0, hi=3), F(2, 3))),
    # Reverse mode of a while loop needs a bound on the trip count (JAX cannot either).
    Case("while", _while, (F(3),), transpose=False),
    Case("while", _while_data, (Pos(3),), transpose=False, label="data_dependent"),
    Case("scan", _scan, (F(3, lo=-1, hi=1), F(4, 3, lo=-1, hi=1))),
    Case("custom_linear_solve", _linear_solve, (Mat("spd", 3), F(3))),
    Case("custom_root", _newton_cbrt, (Pos(3),)),
    Case("optimization_barrier", lambda ns, x, y: ns.lax.optimization_barrier((x, y * 2.0)),
         (F(2, 3), F(3))),
    # ---------------------------------------------------------- transformations
    Case("jit", lambda ns, x, y: ns.jit(lambda a, b: ns.lax.sin(a) * b)(x, y), (F(3), F(3))),
    Case("remat2", lambda ns, x: ns.checkpoint(lambda a: ns.lax.sin(ns.lax.sin(a)))(x), (F(3),)),
    Case("name", lambda ns, x: ns.checkpoint_name(ns.lax.sin(x), "h") * x, (F(3),)),
    Case("custom_jvp_call", lambda ns, x: _custom_jvp_sin(ns)(x), (F(3),)),
    # jvp of a custom_vjp function raises (as in JAX): fd/transpose use the vjp alone.
    Case("custom_vjp_call", lambda ns, x: _custom_vjp_sin_x(ns)(x), (F(3),), jvp=False),
    # custom_lin is the linearised custom_vjp_call: only vjp reaches it (above); its program is
    # the linear function of linearize.
    Case("custom_lin", lambda ns, x: _custom_vjp_sin_x(ns)(x), (F(3),), jvp=False,
         trace=lambda x: fluxion.make_jaxpr(fluxion.linearize(_custom_vjp_sin_x(FLX), x)[1])(x)),
    # The sum of two cotangent contributions to one value (x is used twice).
    Case("add_any", lambda ns, x, ct: ns.vjp(lambda v: ns.lax.sin(v) * v, x)[1](ct)[0],
         (F(3), F(3))),
    # Linear in x only (the residual r is not differentiated); JAX has no batching rule for it.
    Case("linear_call", lambda ns, r, x: ns.linear_call(
        lambda r, x: x / r, lambda r, t: t / r, r, x), (Pos(3, diff=False), F(3)), batch=False),
    # ---------------------------------------------------------- collectives over a vmap axis
    Case("psum", _named(lambda ns, v: ns.lax.psum(v, "i")), (F(2, 3),)),
    # JAX has no jvp rule for pmax / pmin.
    Case("pmax", _named(lambda ns, v: ns.lax.pmax(v, "i")), (F(2, 3),), jax=False),
    Case("pmin", _named(lambda ns, v: ns.lax.pmin(v, "i")), (F(2, 3),), jax=False),
    Case("ppermute", _named(lambda ns, v: ns.lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 0)])),
         (F(3, 2),)),
    Case("all_gather", _named(lambda ns, v: ns.lax.all_gather(v, "i")), (F(2, 3),)),
    Case("all_to_all", _named(lambda ns, v: ns.lax.all_to_all(v, "i", 0, 0)), (F(2, 2, 3),)),
    Case("axis_index", _named(lambda ns, v: v * ns.lax.axis_index("i")), (F(3, 2),)),
    Case("psum_scatter", _named(lambda ns, v: ns.lax.psum_scatter(v, "i", tiled=True)),
         (F(2, 4),)),
    # ---------------------------------------------------------- shardings (a 1-device mesh here;
    # tests/fluxion/parallel/ runs them on 8 devices)
    Case("sharding_constraint", lambda ns, x: _lib(ns).lax.with_sharding_constraint(
        ns.lax.sin(x), _lib(ns).NamedSharding(_mesh1(ns), _lib(ns).P())), (F(2, 3),)),
    Case("shard_map", lambda ns, x: _lib(ns).shard_map(
        lambda b: ns.lax.sin(b) * b, mesh=_mesh1(ns), in_specs=_lib(ns).P("x"),
        out_specs=_lib(ns).P("x"))(x), (F(2, 3),)),
    # check_vma's casts (shard_map only: JAX refuses them under a vmap axis).
    Case("pvary", lambda ns, x: _lib(ns).shard_map(
        lambda b: ns.lax.pcast(b, "x", to="varying") * b, mesh=_mesh1(ns), in_specs=_lib(ns).P(),
        out_specs=_lib(ns).P("x"))(x), (F(2, 3),)),
    Case("all_gather_invariant", lambda ns, x: _lib(ns).shard_map(
        lambda b: ns.lax.all_gather(ns.lax.sin(b), "x", to="invarying"), mesh=_mesh1(ns),
        in_specs=_lib(ns).P("x"), out_specs=_lib(ns).P())(x), (F(2, 3),)),
    # ---------------------------------------------------------- FFT
    Case("fft", lambda ns, x: ns.lax.fft(x, ns.lax.FftType.FFT, (3,)), (C(2, 3),)),
    Case("fft", lambda ns, x: ns.lax.fft(x, ns.lax.FftType.IFFT, (2, 3)), (C(2, 3),),
         label="ifft2"),
    Case("fft", lambda ns, x: ns.lax.fft(x, ns.lax.FftType.RFFT, (4,)), (F(2, 4),),
         label="rfft"),
    Case("fft", lambda ns, x: ns.lax.fft(x, ns.lax.FftType.IRFFT, (2, 4)), (C(2, 3),),
         label="irfft"),
    # ---------------------------------------------------------- host callbacks
    # No derivative rules (as in JAX): only ``binds`` and ``vmap``.
    Case("pure_callback", lambda ns, x: _lib(ns).pure_callback(
        _host_sin, _lib(ns).ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="sequential"),
        (F(2, 3),), deriv=False),
    Case("io_callback", lambda ns, x: _lib(ns).experimental.io_callback(
        _host_sin, _lib(ns).ShapeDtypeStruct(x.shape, x.dtype), x), (F(2, 3),), deriv=False),
    # Sees the primals under jvp; no outputs of its own.
    Case("debug_callback", lambda ns, x: (_lib(ns).debug.callback(_host_nothing, x), x * 2)[1],
         (F(2, 3),)),
    # ---------------------------------------------------------- issue 12 surface (lax names)
    # No vmap-vs-loop check: JAX's batching rule draws the whole batch from the first key (one
    # rng_bit_generator of shape (batch, ...)), so vmap differs from a loop by design; Fluxion's
    # rule does the same, checked against jax.vmap in tests/fluxion/test_prng_impls.py.
    Case("rng_bit_generator", lambda ns, k: ns.lax.rng_bit_generator(k, (2, 3))[1],
         (Int(4, lo=0, hi=1000, dtype="uint32"),), batch=False),
    # jax.extend.random's Threefry-2x32 block (6679f4f): integer bits, no derivative; elementwise,
    # so vmap equals a loop. tests/fluxion/test_threefry2x32_p.py checks partly batched operands.
    Case("threefry2x32", lambda ns, k1, k2, x1, x2: ns.lax.bitwise_xor(
        *importlib.import_module(_lib(ns).__name__ + ".extend.random").threefry2x32_p.bind(
            k1, k2, x1, x2)),
         tuple(Int(2, 3, lo=0, hi=2 ** 31, dtype="uint32") for _ in range(4)), deriv=False),
    # JAX defines no derivative of zeta.
    _binary("zeta", Pos(2, 3, diff=False), Pos(2, 3, diff=False), deriv=False),
    # Differentiable in x only (as in JAX).
    Case("regularized_incomplete_beta", lambda ns, a, b, x: ns.lax.betainc(a, b, x),
         (Pos(2, 3, diff=False), Pos(2, 3, diff=False), F(2, 3, lo=0.2, hi=0.8))),
    Case("platform_index", lambda ns, x: ns.lax.platform_dependent(
        x, cpu=lambda t: ns.lax.sin(t), default=lambda t: t * 2.0), (F(2, 3),)),
    Case("custom_vmap_call", lambda ns, x: _sin_with_cos_rule(ns)(x), (F(2, 3),)),
]


def _sin_with_cos_rule(ns: Any) -> Any:
    """A custom_vmap function computing sin whose vmap rule computes sin too (so the vmap
    check compares the rule with the loop)."""
    f = _lib(ns).custom_batching.custom_vmap(lambda x: ns.lax.sin(x))
    f.def_vmap(lambda n, batched, x: (ns.lax.sin(x), batched[0]))
    return f

# ------------------------------------------------------------------ running the programs

EPS = 1e-6  # central-difference step, in float64
BATCH = 3
CHUNK = 30  # cases per jit: one compilation each; small enough that a failure costs little


def _leaves(tree: Any) -> list[Any]:
    if isinstance(tree, (tuple, list)):
        return [leaf for t in tree for leaf in _leaves(t)]
    return [tree]


def _inexact(x: Any) -> bool:
    return np.dtype(x.dtype).kind in "fc"


def _outputs(case: Case, ns: Any, args: Any, only_float: bool = False) -> list[Any]:
    """The program's outputs as a flat list (only the float ones if ``only_float``)."""
    outs = _leaves(case.fn(ns, *args))
    return [o for o in outs if _inexact(o)] if only_float else outs


def _of_diff(case: Case, ns: Any, args: Any, only_float: bool) -> Callable[..., tuple]:
    """The program as a function of its differentiated inputs, returning a flat tuple."""
    def f(*diff: Any) -> tuple:
        full = list(args)
        for p, v in zip(case.diff_positions, diff):
            full[p] = v
        return tuple(_outputs(case, ns, full, only_float))
    return f


def _like(shape: tuple, dtype: Any, rng: np.random.Generator) -> np.ndarray:
    """A random normal array of ``shape`` and ``dtype`` (complex if ``dtype`` is)."""
    v = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    return v.astype(dtype)


@functools.cache
def _ad_inputs(case: Case) -> dict:
    """float64 inputs of the derivative checks: ``args``, tangents ``t`` of the differentiated
    args, cotangents ``ct`` of the float outputs, and the args at x + EPS t and x - EPS t."""
    with x64_both(True):
        args = case.sample(np.float64, 0)
        rng = np.random.default_rng(7)
        primals = [args[i] for i in case.diff_positions]
        ts = [_like(x.shape, x.dtype, rng) for x in primals]
        outs = fluxion.eval_shape(_of_diff(case, FLX, args, True), *primals)
        cts = [_like(o.shape, o.dtype, rng) for o in outs]

    def moved(sign: float) -> list:
        full = list(args)
        for p, t in zip(case.diff_positions, ts):
            full[p] = args[p] + sign * EPS * t
        return full
    return {"args": list(args), "t": ts, "ct": cts, "plus": moved(1.0), "minus": moved(-1.0)}


# Tangent dtypes seen while tracing jvp (float0 for integer outputs), by library and case.
_TANGENT_DTYPES: dict[str, dict[str, list[str]]] = {"ours": {}, "jax": {}}


def _jvp(case: Case, ns: Any, inp: dict, seen: dict[str, list[str]]) -> dict:
    """jvp of all outputs: primal outputs ``p`` and the tangents ``t`` of the float ones."""
    args = inp["args"]
    p, t = ns.jvp(_of_diff(case, ns, args, False), tuple(args[i] for i in case.diff_positions),
                  tuple(inp["t"]))
    seen[case.id] = [str(np.dtype(x.dtype)) for x in t]
    return {"p": list(p), "t": [ti for pi, ti in zip(p, t) if _inexact(pi)]}


def _vjp_program(case: Case, inp: dict) -> list:
    """Our vjp of the float outputs along the cotangents ``ct``."""
    f = _of_diff(case, FLX, inp["args"], True)
    primals = [inp["args"][i] for i in case.diff_positions]
    return list(FLX.vjp(f, *primals)[1](tuple(inp["ct"])))


def _vmap_variants(case: Case) -> list[tuple[str, tuple]]:
    """(name, in_axes): every argument on axis 0; the first mapped on its last axis and the rest
    unmapped; the first unmapped and the rest mapped on their last axes."""
    ndims = [np.ndim(a) for a in case.sample(np.float32, 0)]
    variants = [("axis0", (0,) * len(ndims))]
    first_last = (ndims[0],) + (None,) * (len(ndims) - 1)
    if first_last != variants[0][1]:
        variants.append(("mixed", first_last))
    if len(ndims) > 1:
        variants.append(("mixed_rest", (None,) + tuple(ndims[1:])))
    return variants


def _member_seeds(in_axes: tuple) -> list[tuple[int, ...]]:
    """Per batch member, the sample seed of each argument (unmapped ones are member 0's)."""
    return [tuple(0 if ax is None else i for ax in in_axes) for i in range(BATCH)]


def _loop_seeds(case: Case) -> list[tuple[int, ...]]:
    """Every distinct argument-seed combination the loops of all variants need."""
    return sorted({s for _, axes in _vmap_variants(case) for s in _member_seeds(axes)})


def _vmap_inputs(case: Case) -> dict:
    members = [case.sample(np.float32, s) for s in range(BATCH)]
    return {name: [members[0][k] if ax is None else np.stack([m[k] for m in members], ax)
                   for k, ax in enumerate(axes)]
            for name, axes in _vmap_variants(case)}


def _vmap_program(case: Case, inp: dict) -> dict:
    return {name: _leaves(FLX.vmap(lambda *a: _outputs(case, FLX, a), in_axes=axes)(*inp[name]))
            for name, axes in _vmap_variants(case)}


def _loop_inputs(case: Case) -> list[list]:
    samples = [case.sample(np.float32, s) for s in range(BATCH)]
    return [[samples[s][k] for k, s in enumerate(seeds)] for seeds in _loop_seeds(case)]


def _to_numpy(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: _to_numpy(v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return [_to_numpy(v) for v in tree]
    return np.asarray(tree)


def _jvp_ours(case: Case, inp: dict) -> dict:
    return _jvp(case, FLX, inp, _TANGENT_DTYPES["ours"])


def _jvp_jax(case: Case, inp: dict) -> dict:
    return _jvp(case, JAX, inp, _TANGENT_DTYPES["jax"])


def _applies(case: Case, check: str) -> bool:
    if check == "binds":
        return True
    if check == "vmap":
        return case.batch
    if not case.diff_positions:
        return False
    if check in ("fd", "jax"):
        return case.jvp and getattr(case, check)
    return case.transpose


@dataclasses.dataclass(frozen=True)
class Kind:
    """One kind of result: ``program(case, input)`` run under ``jit`` on each of ``inputs(case)``
    for the cases it is ``needed`` by, with 64-bit mode ``x64``; a case with an xfail on one of
    the ``checks`` runs by itself (its failure must not rerun a whole chunk)."""

    program: Callable[[Case, Any], Any]
    inputs: Callable[[Case], list[Any]]
    needed: Callable[[Case], bool]
    jit: Callable[..., Any]
    x64: bool
    checks: tuple[str, ...]


KINDS = {
    "jvp": Kind(_jvp_ours, lambda c: [_ad_inputs(c)],
                lambda c: _applies(c, "fd") or _applies(c, "jax")
                or (_applies(c, "transpose") and c.jvp),
                fluxion.jit, True, ("fd", "jax", "transpose")),
    "jax": Kind(_jvp_jax, lambda c: [_ad_inputs(c)], lambda c: _applies(c, "jax"), jax.jit,
                True, ("jax",)),
    "vjp": Kind(_vjp_program, lambda c: [_ad_inputs(c)], lambda c: _applies(c, "transpose"),
                fluxion.jit, True, ("transpose",)),
    # The float outputs at x + EPS t and x - EPS t.
    "primal": Kind(lambda c, a: _outputs(c, FLX, a, True),
                   lambda c: [_ad_inputs(c)["plus"], _ad_inputs(c)["minus"]],
                   lambda c: _applies(c, "fd") or (_applies(c, "transpose") and not c.jvp),
                   fluxion.jit, True, ("fd", "transpose")),
    "vmap": Kind(_vmap_program, lambda c: [_vmap_inputs(c)], lambda c: _applies(c, "vmap"),
                 fluxion.jit, False, ("vmap",)),
    # The unbatched outputs for every combination of batch members the vmap variants need.
    "loop": Kind(lambda c, a: _outputs(c, FLX, a), _loop_inputs, lambda c: _applies(c, "vmap"),
                 fluxion.jit, False, ("vmap",)),
}


@functools.cache
def _chunks(kind: str) -> list[tuple[Case, ...]]:
    """The cases of ``kind`` in groups that share one ``jit``: up to CHUNK cases, or one case
    alone when it is slow or has an xfail (so that neither costs the others anything)."""
    k = KINDS[kind]
    cases = [c for c in CASES if k.needed(c)]
    alone = [c for c in cases if c.slow or any(x in c.xfail for x in k.checks)]
    rest = [c for c in cases if c not in alone]
    return [(c,) for c in alone] + [tuple(rest[i:i + CHUNK]) for i in range(0, len(rest), CHUNK)]


def _to_numpy(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: _to_numpy(v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return [_to_numpy(v) for v in tree]
    return np.asarray(tree)


def _run(kind: Kind, cases: tuple[Case, ...]) -> dict[str, list[Any]]:
    """Every case's program on each of its inputs, all cases inside one ``jit``:
    {case id: [numpy result per input]}."""
    inputs = {c.id: kind.inputs(c) for c in cases}
    run = kind.jit(lambda inp: {c.id: kind.program(c, inp[c.id]) for c in cases})
    calls = max(len(v) for v in inputs.values())
    # A case with fewer inputs repeats its last one, so that every call has the same types.
    outs = [_to_numpy(run({i: v[min(j, len(v) - 1)] for i, v in inputs.items()}))
            for j in range(calls)]
    return {i: [o[i] for o in outs[:len(v)]] for i, v in inputs.items()}


@functools.cache
def _chunk_results(kind: str, index: int) -> dict[str, Any]:
    """Results of one chunk (computed on first use): {case id: [result per input] or the
    exception its case raised}. A chunk that fails reruns case by case to find the culprit."""
    k = KINDS[kind]
    cases = _chunks(kind)[index]
    with x64_both(k.x64):
        try:
            return _run(k, cases)
        except Exception as e:  # the test of the case that raised re-raises it
            if len(cases) == 1:
                return {cases[0].id: e}
        results: dict[str, Any] = {}
        for c in cases:
            try:
                results.update(_run(k, (c,)))
            except Exception as e:  # as above
                results[c.id] = e
        return results


def _result(kind: str, case: Case) -> list[Any]:
    """The results of ``kind`` for ``case``, one per input (raises what the case raised)."""
    index = next(i for i, chunk in enumerate(_chunks(kind)) if case in chunk)
    r = _chunk_results(kind, index)[case.id]
    if isinstance(r, BaseException):
        raise r
    return r


def _params(check: str) -> list[Any]:
    out = []
    for c in CASES:
        if not _applies(c, check):
            continue
        marks = [pytest.mark.xfail(strict=True, reason=c.xfail[check])] if check in c.xfail \
            else []
        if c.slow and check != "binds":
            marks.append(pytest.mark.slow)
        if check == "vmap":
            out += [pytest.param(c, name, id=f"{c.id}-{name}", marks=marks)
                    for name, _ in _vmap_variants(c)]
        else:
            out.append(pytest.param(c, id=c.id, marks=marks))
    return out


def _close(ours: np.ndarray, want: np.ndarray, tol: float, what: str) -> None:
    """Values within ``tol`` relative to the largest magnitude of ``want`` (at least 1)."""
    assert ours.shape == want.shape, f"{what}: shape {ours.shape} vs {want.shape}"
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    np.testing.assert_allclose(ours, want, rtol=tol, atol=tol * scale, err_msg=what)


def _finite_difference(case: Case) -> list[np.ndarray]:
    plus, minus = _result("primal", case)
    return [(p - m) / (2 * EPS) for p, m in zip(plus, minus, strict=True)]


# ------------------------------------------------------------------ the tests


def test_table_covers_every_primitive() -> None:
    assert len(PRIMS) > 100, "the scan of the fluxion package found too few primitives"
    covered = {c.prim for c in CASES}
    missing = sorted(set(PRIMS) - covered - set(EXCLUDED))
    assert not missing, f"primitives without a case in CASES: {missing}"
    unknown = sorted((covered | set(EXCLUDED)) - set(PRIMS))
    assert not unknown, f"CASES / EXCLUDED name primitives that do not exist: {unknown}"
    both = sorted(covered & set(EXCLUDED))
    assert not both, f"primitives both excluded and covered: {both}"
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), "two cases share an id: give one a label"


@pytest.mark.parametrize("case", _params("binds"))
def test_case_binds_its_primitive(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    # Record every bind while tracing: a rule may consume the primitive before it reaches the
    # program (a collective under vmap becomes a reduction).
    bound: set[str] = set()
    original = Primitive.bind

    def bind(self: Primitive, *args: Any, **params: Any) -> Any:
        bound.add(self.name)
        return original(self, *args, **params)
    monkeypatch.setattr(Primitive, "bind", bind)
    args = case.sample(np.float32, 0)
    if case.trace is not None:
        case.trace(*args)
    else:
        fluxion.make_jaxpr(lambda *a: case.fn(FLX, *a))(*args)
    assert case.prim in bound, f"{case.id} does not bind {case.prim}"


@pytest.mark.parametrize("case", _params("fd"))
def test_jvp_matches_finite_differences(case: Case) -> None:
    r = _result("jvp", case)[0]
    if not r["t"]:  # no float output: every tangent is a symbolic zero
        assert set(_TANGENT_DTYPES["ours"][case.id]) == {str(jax.dtypes.float0)}
    for k, (t, fd) in enumerate(zip(r["t"], _finite_difference(case), strict=True)):
        _close(t, fd, case.fd_tol, f"tangent of output {k}")


@pytest.mark.parametrize("case", _params("jax"))
def test_jvp_matches_jax(case: Case) -> None:
    ours, theirs = _result("jvp", case)[0], _result("jax", case)[0]
    assert _TANGENT_DTYPES["ours"][case.id] == _TANGENT_DTYPES["jax"][case.id], "tangent dtypes"
    for what in ("p", "t"):
        assert len(ours[what]) == len(theirs[what]), what
        for k, (o, t) in enumerate(zip(ours[what], theirs[what])):
            assert o.dtype == t.dtype, f"{what}[{k}] dtype: {o.dtype} vs jax {t.dtype}"
            if o.dtype.kind in "fc":
                _close(o, t, case.jax_tol, f"{what}[{k}]")
            else:
                np.testing.assert_array_equal(o, t, err_msg=f"{what}[{k}]")


@pytest.mark.parametrize("case", _params("transpose"))
def test_transpose_identity(case: Case) -> None:
    grads = _result("vjp", case)[0]
    inp = _ad_inputs(case)
    jt = _result("jvp", case)[0]["t"] if case.jvp else _finite_difference(case)
    lhs = [np.real(np.sum(g * t)) for g, t in zip(grads, inp["t"], strict=True)]
    rhs = [np.real(np.sum(c * j)) for c, j in zip(inp["ct"], jt, strict=True)]
    scale = sum(abs(v) for v in lhs + rhs) + 1.0
    tol = 1e-10 if case.jvp else case.fd_tol
    assert abs(sum(lhs) - sum(rhs)) <= tol * scale, \
        f"<vjp(ct), t> = {sum(lhs)!r} but <ct, jvp(t)> = {sum(rhs)!r}"


@pytest.mark.parametrize("case,variant", _params("vmap"))
def test_vmap_matches_loop(case: Case, variant: str) -> None:
    got = _result("vmap", case)[0][variant]
    loop = dict(zip(_loop_seeds(case), _result("loop", case)))
    members = [loop[s] for s in _member_seeds(dict(_vmap_variants(case))[variant])]
    assert len(got) == len(members[0]), "number of outputs"
    for k, g in enumerate(got):
        want = np.stack([m[k] for m in members])
        assert g.dtype == want.dtype, f"output {k} dtype: {g.dtype} vs loop {want.dtype}"
        if g.dtype.kind in "fc":
            _close(g, want, case.vmap_tol, f"output {k}")
        else:
            np.testing.assert_array_equal(g, want, err_msg=f"output {k}")

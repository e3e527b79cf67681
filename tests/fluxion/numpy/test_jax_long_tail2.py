"""More behaviours of fluxion.numpy/lax/random that once differed from jax 0.10.2 (session 9's
long tail), each checked against real jax: values, shapes, dtypes, weak types and error classes.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _compare import check_like_jax, x64_both

import fluxion
import fluxion.numpy as fnp

# --- Python ints given a dtype: NumPy's conversion (wraps), not the default int type's check -------

_BIG = [2 ** 31, -2 ** 31 - 1, 2 ** 40, 2 ** 63, 2 ** 64, -2 ** 63 - 1]
_CASTS = {
    "convert_element_type": lambda lib, v, dt: lib.lax.convert_element_type(v, dt),
    "lax.full": lambda lib, v, dt: lib.lax.full((2,), v, dt),
    "lax.full_like": lambda lib, v, dt: lib.lax.full_like(lib.numpy.zeros(2, dt), v),
    "jnp.full": lambda lib, v, dt: lib.numpy.full(2, v, dt),
    "jnp.full_no_dtype": lambda lib, v, dt: lib.numpy.full(2, v),
    "jit_jnp.full": lambda lib, v, dt: lib.jit(lambda: lib.numpy.full(2, v, dt))(),
}


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
@pytest.mark.parametrize("name", sorted(_CASTS))
def test_python_int_given_a_dtype_converts_as_numpy_casts(name, x64):
    # jax: 2**40 -> int32 wraps to 0, -> float32 is exact; an int beyond int64/uint64 raises
    # OverflowError for integer targets and TypeError for bfloat16 (ml_dtypes' cast)
    cast = _CASTS[name]
    with x64_both(x64), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # float16 overflow to inf, both sides
        for v in _BIG:
            for dt in ("int32", "uint8", "uint32", "float32", "float16", "bool", "bfloat16"):
                check_like_jax(lambda w, d=dt: cast(fluxion, w, d),
                               lambda w, d=dt: cast(jax, w, d), v)


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_python_int_operands_still_must_fit_the_default_int(x64):
    # the jnp functions are jitted in jax, so their Python int operands must fit int32/int64
    x = np.zeros(2, np.int32)
    ops = {"add": lambda m, v: m.add(x, v), "where": lambda m, v: m.where(x > 0, x, v),
           "clip": lambda m, v: m.clip(x, 0, v), "jit_mul": lambda m, v: (
               jax if m is jnp else fluxion).jit(lambda u: u * v)(x)}
    with x64_both(x64):
        for op in ops.values():
            for v in (2 ** 40, 2 ** 63, -2 ** 63 - 1):
                check_like_jax(lambda w: op(fnp, w), lambda w: op(jnp, w), v,
                               err_contains=("too large",))


def test_python_int_conversion_in_a_staged_program_is_a_literal():
    # as jax: the converted int is a literal of the program, not a constant argument
    with x64_both(True):
        ours = fluxion.make_jaxpr(lambda: fnp.full(2, 2 ** 40))()
        theirs = jax.make_jaxpr(lambda: jnp.full(2, 2 ** 40))()
    assert len(ours.consts) == len(theirs.consts) == 0
    (o,), (t,) = ours.jaxpr.eqns[0].invars, theirs.jaxpr.eqns[0].invars
    assert type(o).__name__ == type(t).__name__ == "Literal"
    assert (int(o.val), o.aval.dtype) == (int(t.val), t.aval.dtype)


# --- key arrays through structural jnp functions (JAX's key arrays are Arrays of a key dtype) ----

_KEY_OPS = {
    "reshape": lambda m, k, k1: m.reshape(k, (2, 3)),
    "ravel": lambda m, k, k1: m.ravel(k.reshape(3, 2)),
    "expand_dims": lambda m, k, k1: m.expand_dims(k, (0, 2)),
    "squeeze": lambda m, k, k1: m.squeeze(k[None]),
    "transpose": lambda m, k, k1: m.transpose(k.reshape(2, 3)),
    "swapaxes": lambda m, k, k1: k.reshape(2, 3).swapaxes(0, 1),
    "moveaxis": lambda m, k, k1: m.moveaxis(k.reshape(2, 3, 1), 0, -1),
    "atleast_2d": lambda m, k, k1: m.atleast_2d(k),
    "stacks": lambda m, k, k1: (m.vstack([k, k]), m.hstack([k, k]), m.column_stack([k, k])),
    "concatenate": lambda m, k, k1: m.concatenate([k, k[:2]]),
    "take": lambda m, k, k1: (m.take(k, m.array([0, 5, 7])), k.take(m.array([1]))),
    "take_along_axis": lambda m, k, k1: m.take_along_axis(k, m.array([2, 0]), 0),
    "tile_repeat": lambda m, k, k1: (m.tile(k, 2), m.repeat(k, 2)),
    "flip_roll_rot90": lambda m, k, k1: (m.flip(k), m.roll(k, 1), m.rot90(k.reshape(2, 3))),
    "splits": lambda m, k, k1: (m.split(k, [1, 3]), m.array_split(k, 4), m.unstack(k[:2])),
    "insert_delete_append": lambda m, k, k1: (m.insert(k, 1, k1), m.delete(k, 1),
                                              m.append(k, k1[None])),
    "tril_diagonal": lambda m, k, k1: (m.tril(k.reshape(2, 3)), m.diagonal(k.reshape(2, 3))),
    "where_select": lambda m, k, k1: (m.where(m.arange(6) % 2 == 0, k, k[::-1]),
                                      m.select([m.arange(6) > 2], [k], k1)),
    "compress_extract": lambda m, k, k1: m.compress(np.arange(6) % 2 == 0, k),
    "broadcast": lambda m, k, k1: (m.broadcast_to(k1, (2, 2)), m.broadcast_arrays(k, k1)[1]),
    "meshgrid": lambda m, k, k1: m.meshgrid(k[:2], k[:3])[0],
    "like": lambda m, k, k1: (m.zeros_like(k), m.ones_like(k), m.full_like(k, -1),
                              m.full_like(k, k1), m.zeros_like(k, dtype=m.float32),
                              m.zeros(2, k.dtype)),
    "isnan_isfinite": lambda m, k, k1: (m.isnan(k), m.isfinite(k), m.isinf(k1)),
    "mixed_refused": lambda m, k, k1: m.concatenate([k, m.zeros(6, m.uint32)]),
}


def _key_case(lib, name, jit):
    """(each result's kind: the key dtype and shape, or "array"; the results, key data for keys)"""
    k = lib.random.split(lib.random.key(0), 6)
    k1 = lib.random.key(3)
    fn = (lambda k, k1: _KEY_OPS[name](lib.numpy, k, k1))
    out = (lib.jit(fn) if jit else fn)(k, k1)
    is_key = lambda x: hasattr(x, "dtype") and str(x.dtype).startswith("key<")  # noqa: E731
    leaves = lib.tree_util.tree_leaves(out, is_leaf=is_key)
    kinds = [(str(x.dtype), x.shape) if is_key(x) else "array" for x in leaves]
    return kinds, [lib.random.key_data(x) if is_key(x) else x for x in leaves]


_EAGER_KEY_OPS = ("reshape", "concatenate", "take", "like", "isnan_isfinite", "mixed_refused",
                  "compress_extract")  # jax's compress of keys fails under jit


@pytest.mark.parametrize("name,jit", [(n, True) for n in sorted(_KEY_OPS) if n != "compress_extract"]
                         + [(n, False) for n in _EAGER_KEY_OPS])  # eager: one compile per op
def test_key_arrays_through_structural_functions_like_jax(name, jit):
    kinds = {}

    def side(lib):
        kinds[lib.__name__], values = _key_case(lib, name, jit)
        return values
    check_like_jax(lambda _: side(fluxion), lambda _: side(jax), 0, err_contains=("key<fry>",))
    assert kinds.get("fluxion") == kinds.get("jax")


# --- eager arrays of a user-defined extended dtype have no array methods (JAX's EArray) ---------

_EXT_METHODS = {"getitem": lambda e: e[1], "slice": lambda e: e[1:3], "iter": lambda e: list(e),
                "eq": lambda e: e == e, "T": lambda e: e.T, "reshape": lambda e: e.reshape(2, 2),
                "ravel": lambda e: e.ravel(), "astype": lambda e: e.astype(np.float32),
                "at": lambda e: e.at[0].get(), "sum": lambda e: e.sum(), "len": lambda e: len(e),
                "copy": lambda e: e.copy().shape, "shape": lambda e: (e.shape, e.ndim, e.size)}


@pytest.mark.parametrize("name", sorted(_EXT_METHODS))
def test_eager_extended_dtype_arrays_refuse_methods_like_jax(name):
    from test_extended_dtypes import FMAX, JMAX

    def side(lib, dt):
        return lambda x: _EXT_METHODS[name](lib.lax.convert_element_type(x, dt))
    out = check_like_jax(side(fluxion, FMAX), side(jax, JMAX), np.arange(4, dtype=np.float32),
                         err_contains=(("abstract method",),))
    if isinstance(out, NotImplementedError) and name != "sum":  # traced, the method works
        jitted = fluxion.jit(side(fluxion, FMAX))(np.arange(4, dtype=np.float32))
        assert jitted is not None


# --- eager jnp functions of Python numbers alone run as the compiled program, as JAX's jitted ones

@pytest.mark.parametrize("args", [(3.14159, 2), (2.675, 2), (3.14159, 5), (1234.5678, -2)],
                         ids=str)
def test_round_of_python_scalars_bit_equal_to_jax_and_jit(args):
    from _compare import assert_bits_equal
    eager, theirs = fnp.round(*args), jnp.round(*args)
    jitted = fluxion.jit(lambda x: fnp.round(x, args[1]))(args[0])
    assert_bits_equal(eager, theirs)
    assert_bits_equal(jitted, theirs)
    assert eager.weak_type and theirs.weak_type


@pytest.mark.parametrize("how", ["traced", "array"])
def test_round_decimals_given_as_an_array_is_a_value_error_like_jax(how):
    def side(lib, m):
        if how == "traced":
            return lambda x: lib.jit(lambda v, d: m.round(v, d))(x, 2)
        return lambda x: m.round(x, m.array(2))
    check_like_jax(side(fluxion, fnp), side(jax, jnp), 1.234, err_contains=("decimals",))


def test_trunc_of_an_extended_dtype_is_a_type_error_like_jax():
    from test_extended_dtypes import FMAX, JMAX

    def side(lib, m, dt):
        return lambda x: lib.jit(lambda v: m.trunc(lib.lax.convert_element_type(v, dt)))(x)
    check_like_jax(side(fluxion, fnp, FMAX), side(jax, jnp, JMAX), np.ones(2, np.float32),
                   err_contains=("Cannot interpret 'maxgrad32' as a data type",))


# --- jnp products give dot_general JAX's preferred_element_type (the printed program shows it) ---

_PRODUCTS = {
    "dot": lambda m, a, b: m.dot(a, b), "matmul": lambda m, a, b: a @ b,
    "matmul_vec": lambda m, a, b: a @ b[:, 0], "vdot": lambda m, a, b: m.vdot(a[0], b[:, 0]),
    "inner": lambda m, a, b: m.inner(a, b.T), "tensordot": lambda m, a, b: m.tensordot(a, b, 1),
    "einsum": lambda m, a, b: m.einsum("ij,jk->ik", a, b),
}


@pytest.mark.parametrize("dtype", ["float32", "int8", "bfloat16", "bool"])
@pytest.mark.parametrize("name", sorted(_PRODUCTS))
def test_products_preferred_element_type_like_jax(name, dtype):
    a = (np.arange(6).reshape(2, 3) % 3).astype(dtype)
    b = (np.arange(12).reshape(3, 4) % 2).astype(dtype)

    def pets(lib, m):
        jaxpr = lib.make_jaxpr(lambda x, y: _PRODUCTS[name](m, x, y))(a, b)
        return [str(e.params.get("preferred_element_type")) for e in jaxpr.jaxpr.eqns
                if e.primitive.name == "dot_general"]
    assert pets(fluxion, fnp) == pets(jax, jnp)
    check_like_jax(lambda _: _PRODUCTS[name](fnp, a, b), lambda _: _PRODUCTS[name](jnp, a, b), 0)


def test_products_of_weak_operands_stay_weak_like_jax():
    for f in (lambda m: m.dot(m.full(3, 2.0), m.full(3, 1.5)),
              lambda m: m.einsum("i,i->", m.full(3, 2.0), m.full(3, 1.5)),
              lambda m: m.matmul(m.full((2, 3), 2.0), m.full(3, 1.5))):
        check_like_jax(lambda _: f(fnp), lambda _: f(jnp), 0)


# --- found by differential probes over edge dtypes and shapes -----------------------------------

_LOG_X = np.array([0, 1, -2, 3.7, 1e-3, 1e20, -0.0, 7, 1000, 0.1])


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "complex64"])
@pytest.mark.parametrize("name", ["log2", "log10"])
def test_log2_log10_bit_equal_to_jax(name, dtype):
    # log2 divides by XLA's log(2), log10 multiplies by 1/log(10); complex parts each over a real
    # number (log(0) is -inf+0j, where a complex division gave NaN); strongly typed results
    from _compare import assert_bits_equal
    x = np.asarray(jnp.asarray(_LOG_X * (1 + 1j) if dtype == "complex64" else _LOG_X).astype(dtype))
    assert_bits_equal(getattr(fnp, name)(x), getattr(jnp, name)(x))
    assert_bits_equal(fluxion.jit(getattr(fnp, name))(x), getattr(jnp, name)(x))
    check_like_jax(getattr(fnp, name), getattr(jnp, name), 2.0)


@pytest.mark.parametrize("name", ["argmax", "argmin", "nanargmax", "nanargmin"])
def test_arg_reductions_refuse_complex_like_jax(name):
    check_like_jax(getattr(fnp, name), getattr(jnp, name), np.array([1 + 2j, 3 - 1j], np.complex64))


@pytest.mark.parametrize("shape", [(0,), (2, 0), (1,)])
@pytest.mark.parametrize("n", [1, 2])
def test_diff_of_an_empty_axis_like_jax(shape, n):
    check_like_jax(lambda x: fnp.diff(x, n), lambda x: jnp.diff(x, n), np.ones(shape, np.float32))
    check_like_jax(lambda x: fnp.diff(x, n), lambda x: jnp.diff(x, n), np.ones(shape, bool))


@pytest.mark.parametrize("dtype", ["bool", "int8", "float32"])
def test_products_with_a_scalar_or_outer_take_bool_like_jax(dtype):
    x = (np.arange(3) % 2).astype(dtype)
    for fn in (lambda m, u: m.outer(u, u), lambda m, u: m.dot(u, u[0]),
               lambda m, u: m.inner(u[0], u), lambda m, u: m.outer(u, 2.5)):
        check_like_jax(lambda u: fn(fnp, u), lambda u: fn(jnp, u), x)

"""Behaviours of fluxion.numpy that once differed from jax 0.10.2 (issues 23/24's long tail),
each checked against real jax: values, shapes, dtypes, weak types and error classes/words.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from _compare import check_like_jax, x64_both

import fluxion.numpy as fnp

X = (np.arange(6, dtype=np.float32).reshape(2, 3) * 1.7)
XI = np.arange(6, dtype=np.int32).reshape(2, 3)


@pytest.mark.parametrize("kw", [{}, {"axis": 0}, {"ddof": 1}, {"axis": 1, "keepdims": True},
                                {"axis": 1, "where": X > 2, "keepdims": True}], ids=str)
@pytest.mark.parametrize("dtype", ["int32", "uint8"])
@pytest.mark.parametrize("x", [X, XI], ids=["f32", "i32"])
def test_var_integer_dtype(x, dtype, kw):
    # JAX computes in integer arithmetic, then the NaN of "no degrees of freedom" makes the
    # result a weakly typed float
    out = check_like_jax(fnp.var, jnp.var, x, dtype=dtype, **kw)
    assert out.dtype == np.float32 and out.weak_type


def test_var_integer_dtype_no_degrees_left():
    out = check_like_jax(fnp.var, jnp.var, XI, dtype="int32", axis=0, ddof=2)
    assert np.isnan(np.asarray(out)).all()


@pytest.mark.parametrize("dtype", ["int32", "bool", "uint8"])
def test_std_refuses_integer_dtype(dtype):
    check_like_jax(fnp.std, jnp.std, X, dtype=dtype, err_contains=("jnp.std", "inexact", dtype))


@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std_mean_argument(name):
    for axis in (0, 1):
        mu = np.mean(X, axis, keepdims=True)
        check_like_jax(getattr(fnp, name), getattr(jnp, name), X, axis=axis, mean=mu, rtol=1e-6)


@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std_ddof_and_correction(name):
    check_like_jax(getattr(fnp, name), getattr(jnp, name), X, ddof=1, correction=1,
                   err_contains=(f"jnp.{name}", "ddof", "correction"))
    check_like_jax(getattr(fnp, name), getattr(jnp, name), X, correction=1)


def test_var_complex_dtypes():
    xc = X.astype(np.complex64) * (1 + 2j)
    check_like_jax(fnp.var, jnp.var, xc, dtype="complex64", rtol=1e-6)  # complex64, as JAX
    check_like_jax(fnp.var, jnp.var, xc, rtol=1e-6)  # the real dtype
    check_like_jax(fnp.var, jnp.var, xc, dtype="float32", err_contains=("jnp.var", "complex"))


def test_var_bool_dtype_refused():
    check_like_jax(fnp.var, jnp.var, X, dtype=bool, err_contains=("bool",))


ROUND_CASES = [
    (np.array([15, 25, -35], np.int32), 1),
    (np.array([15, 25, -35], np.int32), -1),  # NotImplementedError in jax 0.10.2 as well
    (np.array([True, False]), 0),  # jax: bool is refused (ValueError), whatever the decimals
    (np.array([True, False]), -1),
    (np.array([1.25, 3.5], np.float32), 39),  # beyond float32's range: unchanged
    (np.array([1.25, 3.5], np.float32), 38),
    (np.array([125.0, 350.0, -0.5], np.float32), -2),
    (np.array([1.55 + 2.35j, 1.25 - 0.35j], np.complex64), 1),  # real and imaginary parts
    (np.array([1.5 + 2.5j, 0.5 - 1.5j], np.complex64), 0),
    (np.array([1.5 + 2.5j], np.complex64), 39),
    (np.array([1.2345, 6.5], np.float16), 2),
    (np.array([1.2345, 6.5], np.float16), 6),  # beyond float16's range: unchanged
    (np.array([1.5, 2.345], np.float64), 400),  # float32 without x64: unchanged, no overflow
    (np.float32(3.14159), 2),
]


@pytest.mark.parametrize("name", ["round", "around"])
@pytest.mark.parametrize("case", ROUND_CASES, ids=lambda c: f"{np.asarray(c[0]).dtype}-{c[1]}")
def test_round_like_jax(case, name):
    x, decimals = case
    check_like_jax(getattr(fnp, name), getattr(jnp, name), x, decimals,
                   err_contains=(("jnp.round",), ("decimals < 0", "bool")))


def test_round_decimals_must_be_an_integer():
    check_like_jax(fnp.round, jnp.round, X, 2.0, err_contains=("integer",))


# --- arrays of extended dtypes (user-defined as flax's fp8 meta dtype; typed PRNG keys) --------

def _on_extended(build, x):
    """``build(jnp, lax)`` applied under jit to ``x`` converted to the maxgrad32 extended dtype
    (the same dtype defined for each library in test_extended_dtypes.py), on both sides."""
    import jax
    from test_extended_dtypes import FMAX, JMAX

    import fluxion

    def side(lib, np_mod, dt):
        return lambda v: lib.jit(lambda u: build(np_mod, lib.lax)(
            lib.lax.convert_element_type(u, dt)))(v)
    return side(fluxion, fnp, FMAX), side(jax, jnp, JMAX)


EXT_X = np.array([0.0, np.nan, np.inf, -2.5], np.float32)


@pytest.mark.parametrize("name", ["sum", "prod", "nansum", "max", "round", "count_nonzero"])
def test_extended_numeric_functions_raise_jax_type_error(name):
    ours, theirs = _on_extended(lambda m, lax: getattr(m, name), EXT_X)
    check_like_jax(ours, theirs, EXT_X, err_contains=("Cannot interpret 'maxgrad32' as a data type",))


@pytest.mark.parametrize("build", [lambda m, lax: lambda e: e < e, lambda m, lax: m.sort,
                                   lambda m, lax: m.floor],
                         ids=["lt", "sort", "floor"])
def test_extended_ordering_and_rounding_raise_type_error(build):
    ours, theirs = _on_extended(build, EXT_X)
    check_like_jax(ours, theirs, EXT_X, err_contains=("maxgrad32",))


@pytest.mark.parametrize("name", ["dot", "matmul", "einsum"])
def test_extended_products_raise_type_error(name):
    # jax 0.10.2 fails an internal assertion here; Fluxion says which dtype it refuses
    call = {"einsum": lambda m: lambda e: m.einsum("i,i", e, e)}.get(
        name, lambda m: lambda e: getattr(m, name)(e, e))
    ours, _ = _on_extended(lambda m, lax: call(m), EXT_X)
    with pytest.raises(TypeError, match="does not accept dtype maxgrad32"):
        ours(EXT_X)


@pytest.mark.parametrize("build", [lambda m, lax: lambda e: e == e, lambda m, lax: lambda e: e != e,
                                   lambda m, lax: lambda e: m.equal(e, e[::-1]),
                                   lambda m, lax: lambda e: lax.ne(e, e),
                                   lambda m, lax: m.isnan, lambda m, lax: m.isfinite,
                                   lambda m, lax: m.isinf],
                         ids=["eq", "ne", "equal", "lax.ne", "isnan", "isfinite", "isinf"])
def test_extended_comparisons_like_jax(build):
    # as JAX: equality compares the physical values (NaN != NaN); isfinite/isinf treat the dtype
    # as non-floating
    ours, theirs = _on_extended(build, EXT_X)
    out = check_like_jax(ours, theirs, EXT_X)
    assert out.dtype == np.bool_ and out.shape == EXT_X.shape


@pytest.mark.parametrize("name", ["sum", "mean", "sin", "cumsum"])
def test_key_arrays_in_numeric_functions_raise_type_error(name):
    import jax

    import fluxion
    check_like_jax(lambda k: getattr(fnp, name)(fluxion.random.split(fluxion.random.key(k), 3)),
                   lambda k: getattr(jnp, name)(jax.random.split(jax.random.key(k), 3)), 0,
                   err_contains=(name, "Cannot interpret 'key<fry>' as a data type"))


# --- Python ints out of the default integer type's range ---------------------------------------

_TARGETS = {"f32": lambda m: m.float32(1.5), "u32": lambda m: m.uint32(1),
            "f16_array": lambda m: m.ones(2, m.float16), "c64": lambda m: m.complex64(1)}
_OPS = {"add": lambda m, t, v: m.add(t, v), "radd": lambda m, t, v: v + t,
        "less": lambda m, t, v: t < v}


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
@pytest.mark.parametrize("v", [2 ** 31, -2 ** 31 - 1, 2 ** 40, 2 ** 63, -2 ** 63 - 1])
@pytest.mark.parametrize("target", sorted(_TARGETS))
def test_python_int_out_of_default_int_range(target, v, x64):
    # as JAX: a Python int operand must fit int32 (int64 with x64) whatever the other operand's
    # dtype (float32 included): OverflowError, on the eager fast path too
    with x64_both(x64):
        for op in _OPS.values():
            check_like_jax(lambda w: op(fnp, _TARGETS[target](fnp), w),
                           lambda w: op(jnp, _TARGETS[target](jnp), w), v,
                           err_contains=(str(v), "too large"))


# --- lax.full / lax.full_like with sharding= ----------------------------------------------------

def _lax_sharding_cases():
    import jax
    from jax.sharding import NamedSharding as JNS
    from jax.sharding import PartitionSpec as JP

    import fluxion
    from fluxion.sharding import NamedSharding, PartitionSpec

    if fluxion.device_count() < 4:
        pytest.skip("needs 4 devices (tests/conftest.py forces 8 host devices)")
    m, jm = fluxion.make_mesh((2, 2), ("row", "col")), jax.make_mesh((2, 2), ("row", "col"))

    def side(lib, ns, p, mesh):
        x = lib.device_put(np.arange(8, dtype=np.float32).reshape(4, 2), ns(mesh, p("row", "col")))
        plain = lib.numpy.ones((4, 2), np.int32)
        row = ns(mesh, p("row"))
        return {
            "given": lib.lax.full_like(plain, 3, sharding=row),
            "given_dtype": lib.lax.full_like(plain, 2.5, dtype=np.float32, sharding=row),
            "like_committed": lib.lax.full_like(x, 7.0),
            "reshaped": lib.lax.full_like(x, 7.0, shape=(8,)),
            "full": lib.lax.full((4, 2), 1.5, np.float32, sharding=row),
        }
    return side(fluxion, NamedSharding, PartitionSpec, m), side(jax, JNS, JP, jm)


def test_lax_full_like_sharding_like_jax():
    from _compare import assert_same

    ours, theirs = _lax_sharding_cases()
    for name in theirs:
        a, b = ours[name], theirs[name]
        assert_same(a, b)
        spec_b = getattr(b.sharding, "spec", None)
        spec_a = getattr(a.sharding, "spec", None)
        assert (spec_a is None) == (spec_b is None), (name, a.sharding, b.sharding)
        if spec_b is not None:  # P("row") and P("row", None) place alike
            pad = lambda spec: tuple(spec) + (None,) * (a.ndim - len(spec))  # noqa: E731
            assert pad(spec_a) == pad(spec_b), (name, a.sharding, b.sharding)


# --- mutable array references as vmap arguments ---------------------------------------------------

def _ref_cases(lib, m, which):
    def bump(r, x):
        r[...] = r[...] * 2.0 + x
        return r[0] + r.shape[0]  # the per-example type: shape without the mapped axis

    def grow_row(r):
        r[1] = r[0] + 1.0

    out = {}
    if which == "eager":
        r = lib.new_ref(m.arange(6.0).reshape(2, 3))
        out["mapped_out"] = lib.vmap(bump)(r, m.ones((2, 3)))
        out["mapped_ref"] = r[...]
        r1 = lib.new_ref(m.arange(6.0).reshape(3, 2))
        lib.vmap(grow_row, in_axes=1)(r1)
        out["axis1_ref"] = r1[...]
    else:  # one compiled program each
        r2 = lib.new_ref(m.arange(12.0).reshape(2, 2, 3))
        lib.jit(lib.vmap(lib.vmap(lambda q: q.addupdate(m.full(q.shape, 10.0)))))(r2)
        out["nested_ref"] = r2[...]
        r3 = lib.new_ref(m.arange(4.0).reshape(2, 2))
        lib.jit(lib.vmap(grow_row))(r3)
        out["jit_vmap_ref"] = r3[...]
    return out


@pytest.mark.parametrize("which", ["eager", "jit"])
def test_vmap_maps_mutable_array_references_like_jax(which):
    import jax

    import fluxion
    ours, theirs = _ref_cases(fluxion, fnp, which), _ref_cases(jax, jnp, which)
    for name in theirs:
        check_like_jax(lambda k: ours[k], lambda k: theirs[k], name)


def test_vmap_ref_is_restored_when_the_function_raises():
    import fluxion
    r = fluxion.new_ref(fnp.zeros((2, 3)))

    def bad(q):
        q[...] = q[...] + 1.0
        raise RuntimeError("boom")
    with pytest.raises(RuntimeError, match="boom"):
        fluxion.vmap(bad)(r)
    assert r.shape == (2, 3) and np.asarray(r[...]).tolist() == [[0.0] * 3] * 2


def _eval_shape_ref_case(lib, m):
    def step(r, x):
        r[...] = r[...] + x
        return (r[...] * 2).astype(m.int32), r[1:]

    r = lib.new_ref(m.arange(3.0))
    out = lib.eval_shape(step, r, m.ones(3))
    return out, r[...]


def test_eval_shape_of_a_function_writing_a_ref_like_jax():
    import jax

    import fluxion
    (o_struct, o_shape), o_ref = _eval_shape_ref_case(fluxion, fnp)
    (j_struct, j_shape), j_ref = _eval_shape_ref_case(jax, jnp)
    for o, j in ((o_struct, j_struct), (o_shape, j_shape)):
        assert (o.shape, o.dtype, o.weak_type) == (j.shape, j.dtype, j.weak_type)
    check_like_jax(lambda _: o_ref, lambda _: j_ref, 0)  # the reference is left as it was


def test_lax_full_like_of_a_traced_explicit_example_like_jax():
    import jax
    from jax.sharding import AxisType as JT
    from jax.sharding import NamedSharding as JNS
    from jax.sharding import PartitionSpec as JP

    import fluxion
    from fluxion.sharding import AxisType, NamedSharding, PartitionSpec

    if fluxion.device_count() < 4:
        pytest.skip("needs 4 devices (tests/conftest.py forces 8 host devices)")
    specs = []
    for lib, t, ns, p in ((fluxion, AxisType, NamedSharding, PartitionSpec), (jax, JT, JNS, JP)):
        mesh = lib.make_mesh((2, 2), ("a", "b"), axis_types=(t.Explicit, t.Explicit))
        with lib.set_mesh(mesh):
            x = lib.device_put(np.ones((4, 2), np.float32), ns(mesh, p("a", "b")))
            out = lib.jit(lambda v, lib=lib: lib.lax.full_like(v, 2.0))(x)
            specs.append((tuple(out.sharding.spec), np.asarray(out).tolist()))
    assert specs[0] == specs[1]

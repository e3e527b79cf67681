"""fluxion.core.dtypes against the reference, JAX 0.10.2 (jax.dtypes / jax.numpy / jax._src.dtypes).

Every promotion table is compared cell by cell (dtype, weak flag, or the error raised) with x64 on
and off, in 'standard' and 'strict' promotion modes.
"""

from __future__ import annotations

import contextlib
import itertools
import warnings
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax._src import dtypes as jdt
from jax._src.lax import lax as jlax

from fluxion.core import dtypes
from fluxion.core.config import config, flag_context

# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------

BASIC = [np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                "uint32", "uint64", "float16", "float32", "float64",
                                "complex64", "complex128")] + [np.dtype(ml_dtypes.bfloat16)]
EXTENDED = [np.dtype(getattr(ml_dtypes, n)) for n in (
    "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3",
    "float8_e8m0fnu", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
    "float8_e5m2fnuz", "int1", "uint1", "int2", "uint2", "int4", "uint4")]
ALL_DTYPES = BASIC + EXTENDED
WEAK_SCALARS = [1, 1.0, 1j, True]
PY_TYPES = [int, float, complex, bool]
BRIEF_SET = BASIC + WEAK_SCALARS  # the set of the task's full promotion table
float0 = dtypes.float0


@contextlib.contextmanager
def modes(x64: bool, promotion: str = "standard"):
    """Set x64 and the promotion mode in both jax and fluxion; restore both afterwards."""
    old = (jax.config.jax_enable_x64, jax.config.jax_numpy_dtype_promotion)
    jax.config.update("jax_enable_x64", x64)
    jax.config.update("jax_numpy_dtype_promotion", promotion)
    try:
        with flag_context("jax_enable_x64", x64), flag_context("jax_numpy_dtype_promotion", promotion):
            yield
    finally:
        jax.config.update("jax_enable_x64", old[0])
        jax.config.update("jax_numpy_dtype_promotion", old[1])


def outcome(fn, *args, **kwargs):
    """The result of fn, or the class name of the exception it raised (warnings ignored)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = fn(*args, **kwargs)
        except Exception as e:
            return ("raises", _exc_name(e))
    if isinstance(out, tuple):
        return tuple((str(o) if isinstance(o, np.dtype) else o) for o in out)
    return str(out) if isinstance(out, np.dtype) else out


def _exc_name(e: Exception) -> str:
    # jax.dtypes.TypePromotionError and ours are different classes with the same role.
    if type(e).__name__ == "TypePromotionError":
        return "TypePromotionError"
    return type(e).__name__


def mismatches(table):
    return [row for row in table if row[-2] != row[-1]]


def arg_name(a):
    return repr(a) if not isinstance(a, np.dtype) else str(a)


class FakeArray:
    """Stands in for a Fluxion array: an .aval with dtype and weak_type, and a .dtype."""

    def __init__(self, dt, weak):
        self.dtype = np.dtype(dt)
        self.aval = SimpleNamespace(dtype=self.dtype, weak_type=weak, shape=())


X64 = pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
PROMO = pytest.mark.parametrize("promotion", ["standard", "strict"])


# ----------------------------------------------------------------------------------------------
# result_type
# ----------------------------------------------------------------------------------------------

@X64
@PROMO
def test_result_type_full_pair_table(x64, promotion):
    """All pairs over the basic dtypes and the weak Python scalars: dtype, weak flag or error."""
    table = []
    with modes(x64, promotion):
        for a, b in itertools.product(BRIEF_SET, repeat=2):
            ours = outcome(dtypes.result_type, a, b, return_weak_type_flag=True)
            ref = outcome(jax.dtypes.result_type, a, b, return_weak_type_flag=True)
            table.append((arg_name(a), arg_name(b), ours, ref))
    assert not mismatches(table), mismatches(table)[:20]
    # sanity: the table really exercised weak results and errors where expected
    cells = {(r[0], r[1]): r[2] for r in table}
    if promotion == "standard":
        assert cells[("1", "1.0")] == ("float64" if x64 else "float32", True)
        assert cells[("float16", "1.0")] == ("float16", False)
        assert cells[("True", "True")] == ("bool", False)
    else:
        assert cells[("int8", "float32")] == ("raises", "TypePromotionError")


@X64
@PROMO
def test_result_type_pairs_over_all_dtypes(x64, promotion):
    """Pairs over every dtype (ml_dtypes floats and sub-byte ints too) and Python scalar types."""
    universe = ALL_DTYPES + WEAK_SCALARS + PY_TYPES + [None]
    table = []
    with modes(x64, promotion):
        for a, b in itertools.product(universe, repeat=2):
            table.append((arg_name(a), arg_name(b),
                          outcome(dtypes.result_type, a, b, return_weak_type_flag=True),
                          outcome(jax.dtypes.result_type, a, b, return_weak_type_flag=True)))
    assert not mismatches(table), mismatches(table)[:20]


@X64
@PROMO
def test_result_type_triples(x64, promotion):
    table = []
    with modes(x64, promotion):
        for args in itertools.product(BRIEF_SET, repeat=3):
            table.append((*map(arg_name, args),
                          outcome(dtypes.result_type, *args, return_weak_type_flag=True),
                          outcome(jax.dtypes.result_type, *args, return_weak_type_flag=True)))
    assert not mismatches(table), mismatches(table)[:20]


@X64
def test_result_type_single_args(x64):
    universe = ALL_DTYPES + WEAK_SCALARS + PY_TYPES + [None, "float64", "int8", np.float64, np.int16]
    with modes(x64):
        for a in universe:
            assert outcome(dtypes.result_type, a, return_weak_type_flag=True) == \
                outcome(jax.dtypes.result_type, a, return_weak_type_flag=True), a
    with pytest.raises(ValueError):
        dtypes.result_type()


@X64
def test_result_type_numpy_values(x64):
    """NumPy arrays and scalars are strong and canonicalised silently (no warning)."""
    values = [np.zeros(2, d) for d in BASIC] + [np.float64(1.0), np.int64(3), np.float32(2),
                                                 np.bool_(True), ml_dtypes.bfloat16(1)]
    with modes(x64):
        for a, b in itertools.product(values + WEAK_SCALARS, repeat=2):
            ours = outcome(dtypes.result_type, a, b, return_weak_type_flag=True)
            ref = outcome(jax.dtypes.result_type, a, b, return_weak_type_flag=True)
            assert ours == ref, (a, b)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            dtypes.result_type(np.zeros(2, np.float64), np.int64(1))


@X64
@PROMO
def test_result_type_weak_arrays(x64, promotion):
    """Weakly typed arrays of every dtype the mode allows (jax: lax weak converts)."""
    with modes(x64, promotion):
        canon = sorted({dtypes.canonicalize_dtype(d) for d in BASIC if d != np.dtype(bool)}, key=str)
        ours_args = [FakeArray(d, True) for d in canon] + [FakeArray(d, False) for d in canon]
        ref_args = [jlax._convert_element_type(1, d, weak_type=True) for d in canon] + \
                   [jnp.zeros((), d) for d in canon]
        for w in ref_args[:len(canon)]:
            assert w.aval.weak_type
        ours_univ = ours_args + WEAK_SCALARS
        ref_univ = ref_args + WEAK_SCALARS
        for (oa, ra), (ob, rb) in itertools.product(zip(ours_univ, ref_univ), repeat=2):
            ours = outcome(dtypes.result_type, oa, ob, return_weak_type_flag=True)
            ref = outcome(jax.dtypes.result_type, ra, rb, return_weak_type_flag=True)
            assert ours == ref, (ra, rb, ours, ref)


def test_result_type_keeps_array_dtype_across_modes():
    """An array made under x64 keeps its dtype when x64 is later off (like a jax Array)."""
    with modes(False):
        a64 = FakeArray(np.float64, False)
        assert dtypes.result_type(a64, a64) == np.dtype("float64")
        assert dtypes.dtype(a64, canonicalize=True) == np.dtype("float64")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert dtypes.result_type(a64, np.float32(1)) == np.dtype("float32")
        assert any("truncated to dtype float32" in str(x.message) for x in w)


def test_result_type_cache_follows_mode_switch():
    for _ in range(2):
        with modes(False):
            assert dtypes.result_type(1.0, 2) == np.dtype("float32")
            assert dtypes.result_type(np.dtype("uint32"), np.dtype("int32")) == np.dtype("int32")
        with modes(True):
            assert dtypes.result_type(1.0, 2) == np.dtype("float64")
            assert dtypes.result_type(np.dtype("uint32"), np.dtype("int32")) == np.dtype("int64")


# ----------------------------------------------------------------------------------------------
# errors
# ----------------------------------------------------------------------------------------------

def test_strict_mode_raises_naming_both_dtypes():
    with modes(False, "strict"):
        with pytest.raises(dtypes.TypePromotionError) as info:
            dtypes.result_type(np.dtype("int8"), np.dtype("float32"))
        assert "int8" in str(info.value) and "float32" in str(info.value)
        assert "strict" in str(info.value)
        assert isinstance(info.value, ValueError)
        # weak scalars still promote into strong dtypes
        assert dtypes.result_type(np.dtype("int8"), 1) == np.dtype("int8")
        assert dtypes.result_type(np.dtype("float16"), 1.0) == np.dtype("float16")


def test_small_float_and_intn_errors():
    with modes(False):
        with pytest.raises(dtypes.TypePromotionError, match="float8_e4m3fn"):
            dtypes.result_type(dtypes.float8_e4m3fn, np.float32)
        with pytest.raises(dtypes.TypePromotionError, match="int4"):
            dtypes.result_type(dtypes.int4, np.int8)
        with pytest.raises(ValueError, match="not a valid dtype"):
            dtypes.result_type(dtypes.float0, np.float32)


# ----------------------------------------------------------------------------------------------
# promote_types, canonicalize_dtype, dtype
# ----------------------------------------------------------------------------------------------

@X64
@PROMO
def test_promote_types_table(x64, promotion):
    universe = ALL_DTYPES + [int, float, complex, bool, "float32", np.int8]
    table = []
    with modes(x64, promotion):
        for a, b in itertools.product(universe, repeat=2):
            table.append((arg_name(a), arg_name(b), outcome(dtypes.promote_types, a, b),
                          outcome(jnp.promote_types, a, b)))
    assert not mismatches(table), mismatches(table)[:20]


@X64
def test_canonicalize_dtype(x64):
    universe = ALL_DTYPES + [float0, int, float, complex, bool, "float64", "i8", np.int64,
                             np.complex128, np.dtype("uint64"), None, "object"]
    with modes(x64):
        for a in universe:
            assert outcome(dtypes.canonicalize_dtype, a) == outcome(jax.dtypes.canonicalize_dtype, a), a
            # second call answers from the cache
            assert outcome(dtypes.canonicalize_dtype, a) == outcome(jax.dtypes.canonicalize_dtype, a), a
        assert outcome(dtypes.canonicalize_dtype, "not-a-dtype")[0] == "raises"
        assert dtypes.canonicalize_dtype([("a", np.float64)]) == np.dtype([("a", np.float64)])


@X64
def test_dtype_canonical_matches_jax(x64):
    universe = ALL_DTYPES + WEAK_SCALARS + PY_TYPES + [
        float0, "float64", "int32", np.float64, np.int8, np.zeros(2), np.zeros(2, np.int64),
        np.float64(2.0), np.int64(1), [1, 2], [1.5], ml_dtypes.bfloat16(1), np.dtype("complex128")]
    with modes(x64):
        for a in universe:
            assert outcome(dtypes.dtype, a, canonicalize=True) == outcome(jdt.dtype, a), a
        for bad in (np.dtype(object), "U", np.zeros(2, object), None, object()):
            assert outcome(dtypes.dtype, bad, canonicalize=True) == outcome(jdt.dtype, bad), bad


def test_dtype_raw():
    assert dtypes.dtype(1) == np.dtype("int64")
    assert dtypes.dtype(1.0) == np.dtype("float64")
    assert dtypes.dtype(1j) == np.dtype("complex128")
    assert dtypes.dtype(True) == np.dtype(bool)
    assert dtypes.dtype(float) == np.dtype("float64")
    assert dtypes.dtype("bfloat16") == np.dtype(ml_dtypes.bfloat16)
    assert dtypes.dtype(np.int8) == np.dtype("int8")
    assert dtypes.dtype(np.zeros(2, np.float64)) == np.dtype("float64")
    assert dtypes.dtype(FakeArray(np.int16, True)) == np.dtype("int16")
    assert dtypes.dtype(SimpleNamespace(dtype=np.dtype("uint8"))) == np.dtype("uint8")
    assert dtypes.dtype(float0) == float0
    with pytest.raises(TypeError):
        dtypes.dtype(np.dtype(object))
    with pytest.raises(TypeError):
        dtypes.dtype("U")
    with pytest.raises(ValueError):
        dtypes.dtype(None)
    with modes(False), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dtypes.dtype(np.float64) == np.dtype("float64")  # raw: no truncation, no warning


# ----------------------------------------------------------------------------------------------
# defaults, Python scalars, weak types
# ----------------------------------------------------------------------------------------------

@X64
def test_defaults(x64):
    with modes(x64):
        assert dtypes.default_int_dtype() == jdt.default_int_dtype()
        assert dtypes.default_uint_dtype() == jdt.default_uint_dtype()
        assert dtypes.default_float_dtype() == jdt.default_float_dtype()
        assert dtypes.default_complex_dtype() == jdt.default_complex_dtype()
        for k in "biufc":
            assert dtypes.default_types[k]() == jdt.default_types[k]()
        for t in (bool, int, float, complex):
            assert dtypes.python_scalar_dtype(t) == jdt.dtype(t)
            assert dtypes.python_scalar_dtype(t(1)) == jdt.dtype(t(1))
            assert dtypes.scalar_type_to_dtype(t) == jdt.scalar_type_to_dtype(t)
            assert dtypes.jax_dtype(t) == jdt.jax_dtype(t)
        assert dtypes.jax_dtype(None) == jdt.jax_dtype(None)
        assert dtypes.coerce_to_array(1.5).dtype == jdt.coerce_to_array(1.5).dtype
    with pytest.raises(TypeError):
        dtypes.python_scalar_dtype(np.float32(1))


def test_x64_flag_changes_defaults_via_config():
    old = config.jax_enable_x64
    try:
        config.update("jax_enable_x64", True)
        assert dtypes.default_float_dtype() == np.dtype("float64")
        assert dtypes.canonicalize_dtype(np.float64) == np.dtype("float64")
        config.update("jax_enable_x64", False)
        assert dtypes.default_float_dtype() == np.dtype("float32")
        assert dtypes.canonicalize_dtype(np.float64) == np.dtype("float32")
    finally:
        config.update("jax_enable_x64", old)


def test_is_python_scalar_and_weak():
    for x in (True, 1, 1.0, 1j):
        assert dtypes.is_python_scalar(x)
    for x in (np.float64(1), np.int32(1), np.zeros(()), "1", None):
        assert not dtypes.is_python_scalar(x)
    ref_values = [True, 1, 1.0, 1j, np.float32(1), np.zeros(2), np.float64(1),
                  jlax._convert_element_type(1, np.dtype(np.float32), weak_type=True), jnp.zeros(2)]
    for x in ref_values:
        assert dtypes.is_weakly_typed(x) == jdt.is_weakly_typed(x), x
        assert dtypes.is_weakly_typed_scalar(x) == jdt.is_weakly_typed_scalar(x), x
    assert dtypes.is_weakly_typed(FakeArray(np.float32, True))
    assert not dtypes.is_weakly_typed(FakeArray(np.float32, False))
    assert dtypes.is_weakly_typed(SimpleNamespace(dtype=np.dtype("float32"), weak_type=True))
    assert not dtypes.is_weakly_typed(True)


def test_avals_are_respected_in_result_type():
    aval = SimpleNamespace(dtype=np.dtype("float16"), weak_type=True, shape=(2,))
    assert dtypes.result_type(aval, np.dtype("bfloat16"), return_weak_type_flag=True) == \
        (np.dtype(ml_dtypes.bfloat16), False)
    assert dtypes.result_type(aval, 1, return_weak_type_flag=True) == (np.dtype("float32"), True)


def test_scalar_type_of():
    for d in ALL_DTYPES:
        assert dtypes.scalar_type_of(np.zeros(1, d)) is jax.dtypes.scalar_type_of(np.zeros(1, d)), d


# ----------------------------------------------------------------------------------------------
# issubdtype, isdtype, finfo/iinfo, bit widths, conversions
# ----------------------------------------------------------------------------------------------

ABSTRACT = [np.generic, np.number, np.integer, np.signedinteger, np.unsignedinteger, np.inexact,
            np.floating, np.complexfloating, np.bool_, dtypes.extended]


def test_issubdtype_matches_jax():
    jax_abstract = [jax.dtypes.extended if t is dtypes.extended else t for t in ABSTRACT]
    for a in ALL_DTYPES + [float0]:
        for ob, jb in zip(ABSTRACT + ALL_DTYPES, jax_abstract + ALL_DTYPES):
            for form in (a, a.type):
                assert dtypes.issubdtype(form, ob) == jnp.issubdtype(form, jb), (a, ob)
    assert dtypes.issubdtype(dtypes.bfloat16, np.floating)
    assert dtypes.issubdtype(np.dtype(dtypes.bfloat16), np.inexact)
    assert not dtypes.issubdtype(dtypes.bfloat16, np.integer)
    assert dtypes.issubdtype(dtypes.int4, np.signedinteger)
    assert dtypes.issubdtype(dtypes.uint4, np.unsignedinteger)
    assert dtypes.issubdtype(dtypes.prng_key, dtypes.extended)
    assert dtypes.issubdtype("float32", "float32")
    assert dtypes.issubdtype(int, np.integer) == jnp.issubdtype(int, np.integer)
    assert dtypes.issubdtype(float, np.floating) == jnp.issubdtype(float, np.floating)


def test_isdtype_matches_jax():
    kinds = ["bool", "signed integer", "unsigned integer", "integral", "real floating",
             "complex floating", "numeric", np.float32, ("bool", "integral"), ("real floating", "int8")]
    for d in ALL_DTYPES:
        for k in kinds:
            assert dtypes.isdtype(d, k) == jnp.isdtype(d, k), (d, k)
    with pytest.raises(ValueError):
        dtypes.isdtype(np.float32, "floating point")


def test_finfo_iinfo():
    for d in ALL_DTYPES:
        if jnp.issubdtype(d, np.floating):
            ours, ref = dtypes.finfo(d), jnp.finfo(d)
            for attr in ("bits", "eps", "max", "min", "tiny", "dtype", "nmant", "nexp"):
                assert str(getattr(ours, attr)) == str(getattr(ref, attr)), (d, attr)
        elif jnp.issubdtype(d, np.integer):
            ours, ref = dtypes.iinfo(d), jnp.iinfo(d)
            assert (ours.bits, ours.min, ours.max) == (ref.bits, ref.min, ref.max), d


def test_bit_width_and_predicates():
    for d in ALL_DTYPES:
        assert dtypes.bit_width(d) == jax.dtypes.itemsize_bits(d), d
        assert dtypes.itemsize_bits(d) == jax.dtypes.itemsize_bits(d), d
        assert dtypes.supports_inf(d) == jdt.supports_inf(d), d
        assert dtypes.is_inexact(d) == jnp.issubdtype(d, np.inexact), d
        assert not dtypes.is_float0(d)
    assert dtypes.is_float0(float0) and dtypes.is_float0(np.zeros(2, float0))
    assert dtypes.float0 == jax.dtypes.float0
    with pytest.raises(ValueError):
        dtypes.bit_width(float0)


def test_conversions():
    divergent = {np.dtype(t) for t in (ml_dtypes.int1, ml_dtypes.uint1, ml_dtypes.int2, ml_dtypes.uint2)}
    for d in ALL_DTYPES:
        assert dtypes.to_numeric_dtype(d) == jdt.to_numeric_dtype(d), d
        assert dtypes.to_complex_dtype(d) == jdt.to_complex_dtype(d), d
        if d in divergent:  # JAX leaves these as they are; we map them to float32 like int4
            assert dtypes.to_inexact_dtype(d) == np.dtype("float32")
            continue
        assert dtypes.to_inexact_dtype(d) == jdt.to_inexact_dtype(d), d
        if not jnp.issubdtype(d, np.integer) or d.itemsize >= 1:
            assert outcome(dtypes.to_floating_dtype, d) == outcome(jdt.to_floating_dtype, d), d


@X64
def test_safe_to_cast(x64):
    with modes(x64):
        for a, b in itertools.product(BASIC, repeat=2):
            assert outcome(dtypes.safe_to_cast, a, b) == outcome(jdt.safe_to_cast, a, b), (a, b)


def test_type_lists():
    assert dtypes.int_types == tuple(jdt._int_types)
    assert dtypes.float_types == tuple(jdt._float_types)
    assert dtypes.complex_types == tuple(jdt._complex_types)
    assert dtypes.bool_types == tuple(jdt._bool_types)
    assert dtypes.unsigned_types == tuple(jdt._unsigned_types)
    for name in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3b11fnuz",
                 "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e3m4", "float8_e4m3",
                 "float8_e8m0fnu", "int4", "uint4", "int2", "uint2"):
        assert getattr(dtypes, name) is getattr(jdt, name), name
    assert dtypes.float16 is np.float16


# ----------------------------------------------------------------------------------------------
# user dtype checks and the 64-bit warning
# ----------------------------------------------------------------------------------------------

WARN_TEXT = ("Explicitly requested dtype float64 requested in zeros is not available, and will be "
             "truncated to dtype float32. To enable more dtypes, set the jax_enable_x64 "
             "configuration option or the JAX_ENABLE_X64 shell environment variable. "
             "See https://github.com/jax-ml/jax#current-gotchas for more.")


def _warned(fn, *args):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            out = fn(*args)
        except Exception as e:
            out = ("raises", _exc_name(e))
    return (str(out) if isinstance(out, np.dtype) else out), [str(x.message) for x in w], \
        [x.category for x in w]


def test_64bit_warning_text():
    with modes(False):
        out, msgs, cats = _warned(dtypes.check_user_dtype_supported, np.float64, "zeros")
        assert out == "float32" and msgs == [WARN_TEXT] and cats == [UserWarning]
        assert _warned(jdt.check_and_canonicalize_user_dtype, np.float64, "zeros")[1] == [WARN_TEXT]


@X64
def test_user_dtype_checks_match_jax(x64):
    universe = ALL_DTYPES + [int, float, complex, bool, "float64", np.int64, np.dtype("uint64"),
                             np.complex128, "int8", float0]
    with modes(x64):
        for d in universe:
            ours = _warned(dtypes.check_and_canonicalize_user_dtype, d, "ones")
            ref = _warned(jdt.check_and_canonicalize_user_dtype, d, "ones")
            assert ours[:2] == ref[:2], d
            assert _warned(dtypes.check_user_dtype_supported, d, "ones")[:2] == ref[:2], d
        assert dtypes.check_user_dtype_supported(None, "zeros") is None


def test_unsupported_user_dtypes_raise_naming_function():
    for bad in (object, str, np.dtype(object), "U5"):
        with pytest.raises(TypeError, match="in zeros"):
            dtypes.check_user_dtype_supported(bad, "zeros")
        with pytest.raises(TypeError):
            jdt.check_and_canonicalize_user_dtype(bad, "zeros")
    with pytest.raises(ValueError):
        dtypes.check_user_dtype_supported(FakeArray(np.float32, False), "zeros")


def test_dtype_warns_like_jax():
    with modes(False):
        for a in (np.float64, np.dtype("int64"), "complex128", np.uint64):
            ours = _warned(dtypes.dtype, a, True)
            ref = _warned(jdt.dtype, a)
            assert ours[:2] == ref[:2], a
        for a in (np.zeros(2), np.float64(1.0), 1.0):
            assert _warned(dtypes.dtype, a, True)[1] == [], a
        # result_type on explicit 64-bit dtypes warns every time (the cache must not swallow it)
        for _ in range(2):
            assert _warned(dtypes.result_type, np.dtype("float64"), np.dtype("float32"))[1] == \
                _warned(jax.dtypes.result_type, np.dtype("float64"), np.dtype("float32"))[1]


def test_invalid_values_rejected_like_jax():
    for bad in (np.zeros(2, object), np.array(["a"]), object()):
        for args in ((bad,), (bad, 1), (np.float32, bad)):
            assert outcome(dtypes.result_type, *args) == outcome(jax.dtypes.result_type, *args), args
    # the canonicalize cache holding object must not let object arrays through
    dtypes.canonicalize_dtype(object)
    with pytest.raises(TypeError):
        dtypes.result_type(np.zeros(2, object))


def test_fast_path_for_types_whose_instances_may_lack_aval():
    class Maybe:
        def __init__(self, with_aval):
            self.dtype = np.dtype("int8")
            if with_aval:
                self.aval = SimpleNamespace(dtype=np.dtype("int16"), weak_type=True)

    assert dtypes.result_type(Maybe(True), return_weak_type_flag=True) == (np.dtype("int32"), True)
    assert dtypes.result_type(Maybe(False), return_weak_type_flag=True) == (np.dtype("int8"), False)
    assert dtypes.result_type(Maybe(True), Maybe(False), return_weak_type_flag=True) == \
        (np.dtype("int8"), False)


def test_registered_weak_scalar_type():
    class MyFloat(float):
        pass

    assert dtypes.result_type(np.float16, MyFloat(1.0)) == np.dtype("float32")
    dtypes.register_weak_scalar_type(MyFloat)
    assert dtypes.is_weakly_typed(MyFloat(1.0))
    assert dtypes.result_type(np.float16, MyFloat(1.0)) == np.dtype("float16")

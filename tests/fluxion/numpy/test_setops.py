"""``jnp.unique``'s options against jax 0.10.2: return_index/inverse/counts, axis, a static
``size`` padded with a scalar or an array ``fill_value`` (which broadcasts against one
sub-array, as jax's), equal_nan and sorted, eagerly and under jit (values, dtypes, shapes and
weak types; errors by class and message)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _compare import assert_same, check_like_jax

import fluxion
import fluxion.numpy as fnp

jax = pytest.importorskip("jax")
jnp = jax.numpy

ROWS = np.array([[1, 2], [3, 4], [1, 2], [5, 6]], np.int32)
NANS = np.array([[1., np.nan, 2.], [1., np.nan, 2.], [0., 1., np.nan]], np.float32)
EMPTY = np.zeros((0, 3), np.float32)


def _both(fn, *args, jit=False, err=()):
    """``fn(numpy_module, *args)`` for fluxion and jax (jitted with ``jit``), compared (``err``:
    words our error must have where jax raises)."""
    ours = (fluxion.jit if jit else lambda f: f)(lambda *a: fn(fnp, *a))
    theirs = (jax.jit if jit else lambda f: f)(lambda *a: fn(jnp, *a))
    return check_like_jax(ours, theirs, *args, err_contains=err)


# name: (input, unique's keyword arguments, words of our error where jax raises)
FILL_CASES = {
    "rows_axis0": (ROWS, dict(axis=0, size=5, fill_value=np.array([9, 8], np.int32))),
    "rows_axis0_python_list": (ROWS, dict(axis=0, size=6, fill_value=[7, 7]),
                               ("asarray: expected ArrayLike, got [7, 7] of type <class 'list'>",)),
    "rows_axis0_broadcast_1": (ROWS, dict(axis=0, size=5, fill_value=np.array([9], np.int32))),
    "rows_axis1": (ROWS, dict(axis=1, size=3, fill_value=np.arange(4, dtype=np.int32))),
    "rows_axis0_float_fill": (ROWS, dict(axis=0, size=5, fill_value=np.array([2.7, -1.5]))),
    "nans_axis0": (NANS, dict(axis=0, size=4, fill_value=np.array([5., 6., 7.], np.float32))),
    "nans_axis_neg1_no_equal_nan": (NANS, dict(axis=-1, size=4, equal_nan=False,
                                               fill_value=np.float32([1, 2, 3]))),
    "flat_array_scalar_fill": (NANS, dict(size=9, fill_value=np.array(-1., np.float32))),
    "empty_axis0": (EMPTY, dict(axis=0, size=2, fill_value=np.float32([1, 2, 3]))),
    "empty_axis1_no_rows": (EMPTY, dict(axis=1, size=2, fill_value=0)),
    "empty_axis_neg1_empty_fill": (EMPTY, dict(axis=-1, size=3, fill_value=np.zeros(0))),
    "fill_does_not_broadcast": (ROWS, dict(axis=0, size=5, fill_value=np.ones((2, 2))),
                                ("Incompatible shapes for broadcasting",)),
}


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", sorted(FILL_CASES))
def test_unique_array_fill_value_like_jax(name, jit):
    x, kw, *err = FILL_CASES[name]
    _both(lambda m, a: m.unique(a, return_index=True, return_inverse=True, return_counts=True,
                                **kw), x, jit=jit, err=err[0] if err else ())


@pytest.mark.parametrize("flags", list(itertools.product([False, True], repeat=3)),
                         ids=lambda f: "".join("ivc"[i] if b else "-" for i, b in enumerate(f)))
def test_unique_options_like_jax(flags):
    # every combination of the three return_* flags, with and without a static size, along an
    # axis and flattened, eagerly and under jit (size only: jit needs a static size)
    ri, rv, rc = flags
    for x, axis, size, fill, equal_nan, jit in [
            (ROWS, 0, 5, np.array([0, -1], np.int32), True, True),
            (NANS, 1, 4, np.float32([9, 9, 9]), False, True),
            (NANS, None, 8, 3, True, True),
            (NANS, 0, None, None, True, False),
            (ROWS, None, None, None, False, False)]:
        kw = dict(return_index=ri, return_inverse=rv, return_counts=rc, axis=axis, size=size,
                  fill_value=fill, equal_nan=equal_nan, sorted=True)
        _both(lambda m, a, kw=kw: m.unique(a, **kw), x, jit=jit)


def test_unique_array_api_functions_take_array_fill_like_jax():
    for fn in ("unique_all", "unique_counts", "unique_inverse", "unique_values"):
        ours = getattr(fnp, fn)(fnp.asarray(NANS[0]), size=4, fill_value=np.float32(-2))
        theirs = getattr(jnp, fn)(jnp.asarray(NANS[0]), size=4, fill_value=np.float32(-2))
        assert_same(tuple(ours) if isinstance(ours, tuple) else ours,
                    tuple(theirs) if isinstance(theirs, tuple) else theirs)


@pytest.mark.parametrize("x,axis", [(NANS, None), (NANS, 1), (np.float32(3), -1)],
                         ids=["flat", "axis1", "scalar_axis_out_of_bounds"])
def test_unique_under_jit_without_size_errors_like_jax(x, axis):
    # the traced input is refused first (before the axis is checked), in jax's words
    err = _both(lambda m, a: m.unique(a, axis=axis), x, jit=True, err=(
        "Abstract tracer value encountered where concrete value is expected: traced array with "
        f"shape float32[{','.join(map(str, np.shape(x)))}]\nThe error arose for the first "
        "argument of jnp.unique(). To make jnp.unique() compatible with JIT and other "
        "transforms, you can specify a concrete value for the size argument",))
    assert isinstance(err, fluxion.errors.ConcretizationTypeError)


RAVEL = {  # name: (dims, ravel_multi_index keyword arguments, words of our error where jax raises)
    "dtype_int8": ((3, 4), dict(dtype=np.int8), ()),
    "dtype_uint16_wrap": ((3, 4), dict(dtype=np.uint16, mode="wrap"), ()),
    "dtype_too_small": ((20, 20), dict(dtype=np.int8),
                        ("jnp.ravel_multi_index: dtype=dtype('int8') not large enough",)),
    "dtype_not_integer": ((3, 4), dict(dtype=np.float32),
                          ("dtype=dtype('float32') is not an integer type.",)),
    "mode_ignore": ((3, 4), dict(mode="ignore"), ()),
    "mode_unknown": ((3, 4), dict(mode="nope"),
                     ("Expected 'raise', 'wrap', 'clip', or 'ignore'.",)),
}


@pytest.mark.parametrize("name", sorted(RAVEL))
def test_ravel_multi_index_dtype_and_modes_like_jax(name):
    dims, kw, err = RAVEL[name]
    rows, cols = np.array([0, 2, 1], np.int32), np.array([3, 1, 0], np.int32)
    _both(lambda m, r, c: m.ravel_multi_index((r, c), dims, **kw), rows, cols, err=err)

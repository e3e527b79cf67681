"""jnp.searchsorted's methods against jax: 'scan' (the default) and 'scan_unrolled' are JAX's
binary search, with no [len(a), len(v)] intermediate (issue 28: a compare-all searchsorted put a
4000 x 4000 intermediate into fluxion_md's cell-list rebuild); 'sort' sorts a and the queries
together (no such intermediate either); 'compare_all' compares every pair. Values, dtypes, shapes and weak types equal jax's for every method and side, on
sorted input with ties, NaN, signed zeros, complex and bool keys, on unsorted input (where the
methods differ, as in jax), eagerly, under jit and under vmap.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _compare import assert_same

import fluxion
import fluxion.numpy as fnp

METHODS = ("scan", "scan_unrolled", "sort", "compare_all")
_RNG = np.random.default_rng(0)
CASES = {
    "float": (np.sort(_RNG.standard_normal(17).astype(np.float32)),
              _RNG.standard_normal((3, 4)).astype(np.float32)),
    "int_ties": (np.array([1, 2, 2, 2, 5, 7], np.int32), np.array([0, 2, 3, 7, 8, 2], np.int32)),
    "nan_zero": (np.array([-0.0, 0.0, 1.0, np.nan], np.float32),
                 np.array([np.nan, 0.5, -0.0, 0.0, 1.0, np.inf], np.float32)),
    "unsorted": (np.array([3.0, 1.0, 2.0, 0.0, 5.0], np.float32),
                 np.array([1.5, 2.5, 0.0, 9.0], np.float32)),
    "complex": (np.array([1 + 1j, 1 + 2j, 2 + 0j], np.complex64),
                np.array([1 + 1.5j, 2 + 0j, 0j], np.complex64)),
    "bool": (np.array([False, True]), np.array([True, False, True])),
    "scalar_v": (np.array([5.0], np.float32), np.float32(3.0)),
    "empty_a": (np.zeros((0,), np.float32), np.array([1.0], np.float32)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_default_scan_equals_jax(case):
    a, v = CASES[case]
    for side in ("left", "right"):
        ref = jnp.searchsorted(jnp.asarray(a), jnp.asarray(v), side=side)
        assert_same(fnp.searchsorted(fnp.asarray(a), fnp.asarray(v), side=side), ref,
                    err_msg=f"{case} {side}")


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_method_equals_jax(case):
    a, v = CASES[case]
    for side in ("left", "right"):
        for method in METHODS[1:]:
            ref = jnp.searchsorted(jnp.asarray(a), jnp.asarray(v), side=side, method=method)
            ours = fnp.searchsorted(fnp.asarray(a), fnp.asarray(v), side=side, method=method)
            assert_same(ours, ref, err_msg=f"{case} {side} {method}")
    jitted = fluxion.jit(lambda a, v: fnp.searchsorted(a, v, side="right"))(
        fnp.asarray(a), fnp.asarray(v))
    assert_same(jitted, jnp.searchsorted(jnp.asarray(a), jnp.asarray(v), side="right"))


def test_scan_holds_no_pairwise_intermediate_and_equals_compare_all():
    a = np.sort(_RNG.standard_normal(300).astype(np.float32))
    v = _RNG.standard_normal(200).astype(np.float32)
    for method in ("scan", "scan_unrolled", "sort"):
        text = str(fluxion.make_jaxpr(lambda a, v, m=method: fnp.searchsorted(a, v, method=m))(
            fnp.asarray(a), fnp.asarray(v))).replace(" ", "")
        assert "[300,200]" not in text and "[200,300]" not in text
    assert "[300,200]" in str(fluxion.make_jaxpr(lambda a, v: fnp.searchsorted(
        a, v, method="compare_all"))(fnp.asarray(a), fnp.asarray(v))).replace(" ", "")
    for side in ("left", "right"):
        for method in ("scan", "sort"):
            assert_same(fnp.searchsorted(fnp.asarray(a), fnp.asarray(v), side=side, method=method),
                        fnp.searchsorted(fnp.asarray(a), fnp.asarray(v), side=side,
                                         method="compare_all"))


def test_vmap_over_queries_and_sorted_rows_equals_jax():
    a = np.sort(_RNG.standard_normal((3, 9)).astype(np.float32), axis=1)
    v = _RNG.standard_normal((3, 5)).astype(np.float32)
    ours = fluxion.vmap(lambda a, v: fnp.searchsorted(a, v))(fnp.asarray(a), fnp.asarray(v))
    ref = jax.vmap(lambda a, v: jnp.searchsorted(a, v))(jnp.asarray(a), jnp.asarray(v))
    assert_same(ours, ref)
    ours = fluxion.vmap(lambda v: fnp.searchsorted(fnp.asarray(a[0]), v, side="right"))(
        fnp.asarray(v))
    ref = jax.vmap(lambda v: jnp.searchsorted(jnp.asarray(a[0]), v, side="right"))(
        jnp.asarray(v))
    assert_same(ours, ref)


def test_sort_method_under_jit_and_vmap_equals_jax():
    a = np.sort(_RNG.integers(0, 6, 12).astype(np.int32))
    v = _RNG.integers(-1, 8, (2, 7)).astype(np.int32)
    for side in ("left", "right"):
        ours = fluxion.jit(lambda a, v, s=side: fnp.searchsorted(a, v, side=s, method="sort"))(
            fnp.asarray(a), fnp.asarray(v))
        assert_same(ours, jnp.searchsorted(jnp.asarray(a), jnp.asarray(v), side=side,
                                           method="sort"))
    ours = fluxion.vmap(lambda v: fnp.searchsorted(fnp.asarray(a), v, method="sort"))(
        fnp.asarray(v))
    ref = jax.vmap(lambda v: jnp.searchsorted(jnp.asarray(a), v, method="sort"))(jnp.asarray(v))
    assert_same(ours, ref)

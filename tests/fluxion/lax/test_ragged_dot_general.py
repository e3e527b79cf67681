"""``lax.ragged_dot_general`` and ``lax.RaggedDotDimensionNumbers`` against jax 0.10.2: the three
modes (ragged free, contracting and batch dimension), batch dimensions, per-batch
``group_sizes``, groups that do not cover the dimension, gradients and the errors. JAX's
primitive has no derivative in the contracting and batch modes; the gradients there are
compared with those of JAX's own decomposition of the primitive (``_ragged_dot_general_impl``),
which defines its values."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax._src.lax.lax import _ragged_dot_general_impl

import fluxion
from fluxion import lax

R = np.random.RandomState(0)

# (lhs shape, rhs shape, group_sizes, dot dims, lhs ragged dims, rhs group dims)
CASES = {
    "free_basic": ((6, 3), (2, 3, 4), [2, 3], (([1], [1]), ([], [])), [0], [0]),
    "free_batched": ((2, 5, 3), (3, 2, 3, 4), [[1, 2, 2], [0, 4, 1]],
                     (([2], [2]), ([0], [1])), [1], [0]),
    "free_rhs_group_last": ((5, 3), (3, 4, 2), [4, 1], (([1], [0]), ([], [])), [0], [2]),
    "contracting": ((2, 6), (6, 4), [1, 2, 2], (([1], [0]), ([], [])), [1], []),
    "contracting_batched": ((2, 3, 6), (2, 6, 4), [[3, 3], [6, 0]],
                            (([2], [1]), ([0], [0])), [2], []),
    "batch": ((4, 2, 3), (4, 3, 5), [1, 3], (([2], [1]), ([0], [0])), [0], []),
}


def _args(case):
    ls, rs, gs, dims, ragged, group = CASES[case]
    return (R.randn(*ls).astype(np.float32), R.randn(*rs).astype(np.float32),
            np.asarray(gs, np.int32), dims, ragged, group)


@pytest.mark.parametrize("case", list(CASES))
def test_values_and_gradients_match_jax(case) -> None:
    lhs, rhs, gs, dims, ragged, group = _args(case)
    ours_dn = lax.RaggedDotDimensionNumbers(dims, ragged, group)
    theirs_dn = jax.lax.RaggedDotDimensionNumbers(dims, ragged, group)
    ours = lax.ragged_dot_general(lhs, rhs, gs, ours_dn)
    theirs = jax.lax.ragged_dot_general(lhs, rhs, gs, theirs_dn)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5, atol=1e-5)
    ours_g = fluxion.grad(lambda a, b: (lax.ragged_dot_general(a, b, gs, ours_dn) ** 2).sum(),
                          (0, 1))(lhs, rhs)
    theirs_g = jax.grad(lambda a, b: (_ragged_dot_general_impl(a, b, gs, theirs_dn) ** 2)
                        .sum(), (0, 1))(lhs, rhs)
    if case.startswith("free"):  # where JAX's primitive has a derivative, it is the same
        direct = jax.grad(lambda a, b: (jax.lax.ragged_dot_general(a, b, gs, theirs_dn) ** 2)
                          .sum(), (0, 1))(lhs, rhs)
        for d, t in zip(direct, theirs_g):
            np.testing.assert_allclose(np.asarray(d), np.asarray(t), rtol=1e-4, atol=1e-4)
    for o, t in zip(ours_g, theirs_g):
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-4, atol=1e-4)


def test_matches_ragged_dot_and_preferred_type() -> None:
    lhs, rhs, gs, dims, ragged, group = _args("free_basic")
    dn = lax.RaggedDotDimensionNumbers(dims, ragged, group)
    np.testing.assert_allclose(np.asarray(lax.ragged_dot_general(lhs, rhs, gs, dn)),
                               np.asarray(lax.ragged_dot(lhs, rhs, gs)), rtol=1e-6)
    out = lax.ragged_dot_general(lhs.astype(np.float16), rhs.astype(np.float16), gs, dn,
                                 preferred_element_type=np.float32)
    ref = jax.lax.ragged_dot_general(lhs.astype(np.float16), rhs.astype(np.float16), gs,
                                     jax.lax.RaggedDotDimensionNumbers(dims, ragged, group),
                                     preferred_element_type=np.float32)
    assert out.dtype == ref.dtype == np.float32


def test_dimension_numbers_object() -> None:
    dn = lax.RaggedDotDimensionNumbers([[[1], [1]], [[], []]], [0], [0])
    jdn = jax.lax.RaggedDotDimensionNumbers([[[1], [1]], [[], []]], [0], [0])
    for attr in ("dot_dimension_numbers", "lhs_ragged_dimensions", "rhs_group_dimensions"):
        assert getattr(dn, attr) == getattr(jdn, attr)
    assert dn == lax.RaggedDotDimensionNumbers(((( 1,), (1,)), ((), ())), (0,), (0,))
    with pytest.raises(AttributeError):
        dn.lhs_ragged_dimensions = (1,)


@pytest.mark.parametrize("change,match", [
    (dict(gs=np.array([[2, 4]], np.int32)), "expected group_sizes to have shape"),
    (dict(gs=np.float32([2.0, 4.0])), "subtype of np.integer"),
    (dict(ragged=[0, 1]), "exactly one lhs ragged dimension"),
    (dict(group=[]), "exactly one rhs group dimension"),
    (dict(group=[1]), "distinct from contracting and batch"),
    (dict(rhs=np.ones((3, 3, 4), np.float32)), "expected rhs group dimension size"),
])
def test_errors_as_jax(change, match) -> None:
    lhs, rhs, gs, dims, ragged, group = _args("free_basic")
    args = dict(lhs=lhs, rhs=rhs, gs=gs, ragged=ragged, group=group) | change
    for mod in (lax, jax.lax):
        dn = mod.RaggedDotDimensionNumbers(dims, args["ragged"], args["group"])
        with pytest.raises(TypeError, match=match):
            mod.ragged_dot_general(args["lhs"], args["rhs"], args["gs"], dn)
    with pytest.raises(NotImplementedError, match="group_offset"):
        lax.ragged_dot_general(lhs, rhs, gs, lax.RaggedDotDimensionNumbers(dims, ragged, group),
                               group_offset=np.zeros(1, np.int32))

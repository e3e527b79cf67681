"""``take_along_axis`` against jax.numpy 0.10.2: values, dtypes, shapes and weak types for every
kind of dimension (equal sizes, a size-1 index dimension, a size-1 array dimension broadcast),
negative and out-of-bounds indices in each mode, grad and vmap, and the emitted program: one
gather whose equal-size dimensions are batching dimensions (no iota index arrays concatenated),
the StableHLO gather JAX emits (issue 28).
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _compare import assert_same

import fluxion
import fluxion.numpy as fnp

_RNG = np.random.default_rng(0)
X = _RNG.normal(size=(3, 4, 5)).astype(np.float32)


def _cases() -> list:
    out = []
    for axis in (0, 1, 2, -1):
        n = X.shape[axis]
        for shape in [(3, 4, 5), (1, 4, 5), (3, 1, 5), (3, 4, 1), (1, 1, 1)]:
            s = list(shape)
            s[axis] = 2
            out.append((X, _RNG.integers(-n, n, size=s).astype(np.int32), axis))
    # a size-1 array dimension against wider index dimensions; small and unsigned index dtypes
    out.append((X[:1, :, :1], _RNG.integers(0, 4, size=(3, 2, 4)).astype(np.int8), 1))
    out.append((X, _RNG.integers(0, 5, size=(3, 4, 2)).astype(np.uint8), 2))
    out.append((np.arange(12, dtype=np.int32).reshape(3, 4),
                _RNG.integers(-4, 4, size=(3, 6)).astype(np.int16), 1))
    return out


@pytest.mark.parametrize("case", range(len(_cases())))
def test_take_along_axis_matches_jax(case: int) -> None:
    a, idx, axis = _cases()[case]
    assert_same(fnp.take_along_axis(fnp.asarray(a), fnp.asarray(idx), axis),
                jnp.take_along_axis(jnp.asarray(a), jnp.asarray(idx), axis))


@pytest.mark.parametrize("mode", [None, "fill", "clip"])
def test_take_along_axis_out_of_bounds_modes(mode: str | None) -> None:
    idx = np.array([[7, -9, 1, -1]] * 3, np.int32)
    assert_same(fnp.take_along_axis(fnp.asarray(X[:, 0]), fnp.asarray(idx), 1, mode=mode),
                jnp.take_along_axis(jnp.asarray(X[:, 0]), jnp.asarray(idx), 1, mode=mode))
    got = fnp.take_along_axis(fnp.asarray(X[:, 0]), fnp.asarray(idx), 1, mode="fill",
                              fill_value=-2.0)
    want = jnp.take_along_axis(jnp.asarray(X[:, 0]), jnp.asarray(idx), 1, mode="fill",
                               fill_value=-2.0)
    assert_same(got, want)


def test_take_along_axis_weak_scalar_array_and_axis_none() -> None:
    assert_same(fnp.take_along_axis(fnp.asarray(X).ravel() * 2.0, fnp.asarray([3, 0, -1]), None),
                jnp.take_along_axis(jnp.asarray(X).ravel() * 2.0, jnp.asarray([3, 0, -1]), None))


def test_take_along_axis_grad_and_vmap_match_jax() -> None:
    idx = _RNG.integers(0, 4, size=(3, 2, 5)).astype(np.int32)

    def loss(m):
        return lambda a, i: m.sum(m.take_along_axis(a, i, 1) ** 2)

    assert_same(fluxion.grad(loss(fnp))(fnp.asarray(X), fnp.asarray(idx)),
                jax.grad(loss(jnp))(jnp.asarray(X), jnp.asarray(idx)))
    assert_same(fluxion.vmap(lambda a, i: fnp.take_along_axis(a, i, 0))(fnp.asarray(X),
                                                                       fnp.asarray(idx)),
                jax.vmap(lambda a, i: jnp.take_along_axis(a, i, 0))(jnp.asarray(X),
                                                                    jnp.asarray(idx)))


def _gathers(text: str) -> list[str]:
    return re.findall(r"#stablehlo\.gather<([^>]*)>", text)


def test_take_along_axis_emits_jax_gather_with_batching_dims() -> None:
    """One gather, its dimension numbers and slice sizes as JAX's, and no iota/concatenate."""
    for shape in [(3, 2, 5), (1, 2, 5), (3, 2, 1)]:
        idx = np.zeros(shape, np.int32)
        ours = fluxion.jit(lambda a, i: fnp.take_along_axis(a, i, 1)).lower(
            fnp.asarray(X), fnp.asarray(idx)).as_text()
        theirs = jax.jit(lambda a, i: jnp.take_along_axis(a, i, 1)).lower(
            jnp.asarray(X), jnp.asarray(idx)).as_text()
        norm = [re.sub(r"offset_dims = \[\], ", "", g) for g in _gathers(ours)]
        assert norm == _gathers(theirs), (shape, ours)
        assert re.findall(r"slice_sizes = array<i64: [^>]*>", ours) == re.findall(
            r"slice_sizes = array<i64: [^>]*>", theirs)
        assert "iota" not in ours and "concatenate" not in ours

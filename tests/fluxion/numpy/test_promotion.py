"""Promotion flags of fluxion.numpy against jax.numpy: ``jax_numpy_rank_promotion``,
``jax_numpy_dtype_promotion`` and toggling x64.
"""

from __future__ import annotations

import warnings

import jax.numpy as jnp
import numpy as np
import pytest
from _compare import assert_same, check_like_jax, flags_both, x64_both

import fluxion.numpy as fnp


def test_rank_promotion_flag():
    a, b = np.ones((2, 3), np.float32), np.ones((3,), np.float32)
    with flags_both("jax_numpy_rank_promotion", "warn"):
        with pytest.warns(UserWarning) as rec:
            r = fnp.add(a, b)
        assert "(2, 3)" in str(rec[0].message) and "(3,)" in str(rec[0].message)
        with pytest.warns(UserWarning):
            theirs = jnp.add(a, b)
        assert_same(r, theirs)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fnp.add(a, 1.0)  # scalars are not rank promotion
            fnp.add(a, np.float32(1))
    with flags_both("jax_numpy_rank_promotion", "raise"):
        with pytest.raises(ValueError, match="rank"):
            fnp.add(a, b)
        with pytest.raises(ValueError):
            jnp.add(a, b)
        with pytest.raises(ValueError):
            fnp.arange(3.0) * fnp.ones((2, 3))
        fnp.add(a, a)
        fnp.add(a, 2)
    fnp.add(a, b)


def test_dtype_promotion_strict():
    a, b = np.ones(3, np.float32), np.ones(3, np.int32)
    with flags_both("jax_numpy_dtype_promotion", "strict"):
        e = check_like_jax(fnp.add, jnp.add, a, b)
        assert isinstance(e, Exception)
        e = check_like_jax(fnp.add, jnp.add, a, np.ones(3, np.float16))
        assert isinstance(e, Exception)
        check_like_jax(fnp.add, jnp.add, a, 1.0)
        check_like_jax(fnp.add, jnp.add, a, a)
        check_like_jax(fnp.multiply, jnp.multiply, b, 2)
    check_like_jax(fnp.add, jnp.add, a, b)


def test_x64_toggle_roundtrip():
    with x64_both():
        assert_same(fnp.array(1.0), jnp.array(1.0))
        assert_same(fnp.arange(3) + 1, jnp.arange(3) + 1)
        assert_same(fnp.ones(2, np.float32) * 2.0, jnp.ones(2, np.float32) * 2.0)
        assert_same(fnp.array([1, 2], np.uint64), jnp.array([1, 2], np.uint64))
        assert repr(fnp.array(1.0)) == repr(jnp.array(1.0))
    assert_same(fnp.array(1.0), jnp.array(1.0))


@pytest.mark.parametrize("mode", ["allow", "raise"])
def test_rank_promotion_per_function_like_jax(mode):
    # jax's where (and heaviside, built on it) broadcasts without the rank-promotion check;
    # ldexp's exponent meets x1 through jnp's add, which applies it; mismatched concatenate
    # shapes are a TypeError. Before: where/heaviside raised under "raise", ldexp could not
    # broadcast at all, concatenate raised ValueError.
    x = np.linspace(-3, 3, 6, dtype=np.float32).reshape(2, 3)
    v, e = np.array([0.5, -1.0, 2.0], np.float32), np.array([1, 2, -1], np.int32)
    cases = [
        ("where", lambda m: m.where(x > 0, v, x)),
        ("where_scalar_y", lambda m: m.where(v > 0, x, 1.0)),
        ("heaviside", lambda m: m.heaviside(v, x)),
        ("ldexp", lambda m: m.ldexp(x, e)),
        ("ldexp_outer", lambda m: m.ldexp(v, e.reshape(3, 1))),
        ("concatenate", lambda m: m.concatenate([x[:1], np.ones((2, 4), np.float32)], axis=1)),
    ]
    with flags_both("jax_numpy_rank_promotion", mode):
        for name, f in cases:
            outcome = []
            for m in (fnp, jnp):
                try:
                    outcome.append(f(m))
                except (TypeError, ValueError) as err:
                    outcome.append(type(err))
            ours, theirs = outcome
            if isinstance(theirs, type):
                assert ours is theirs, name
            else:
                assert_same(ours, theirs)

"""``fluxion.extend.random.threefry2x32_p`` against ``jax.extend.random.threefry2x32_p``: bits
bit-equal eagerly, under jit and vmap (batched and unbatched operands), zero tangents under jvp,
the same staged program text, and JAX's TypeError for non-uint32 operands."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from _compare import check_like_jax
from jax.extend.random import threefry2x32_p as jax_p

import fluxion
from fluxion.extend.random import threefry2x32_p as flx_p

RNG = np.random.RandomState(0)
K1, K2 = np.uint32(0x12345678), np.uint32(0x9ABCDEF0)
X1 = RNG.randint(0, 2 ** 32, (2, 3), dtype=np.uint64).astype(np.uint32)
X2 = RNG.randint(0, 2 ** 32, (2, 3), dtype=np.uint64).astype(np.uint32)

CASES = {
    "eager": lambda p, lib: p.bind(K1, K2, X1, X2),
    "eager_full_keys": lambda p, lib: p.bind(np.full((2, 3), K1), np.full((2, 3), K2), X1, X2),
    "jit": lambda p, lib: lib.jit(lambda *a: p.bind(*a))(K1, K2, X1, X2),
    "vmap": lambda p, lib: lib.vmap(lambda a, b: p.bind(K1, K2, a, b))(X1, X2),
    "jvp": lambda p, lib: lib.jvp(lambda a: p.bind(K1, K2, a, X2), (X1,),
                                  (np.zeros(X1.shape, lib.dtypes.float0),)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_threefry2x32_p_like_jax(case):
    ours, theirs = CASES[case](flx_p, fluxion), CASES[case](jax_p, jax)
    for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_threefry2x32_p_program_and_errors():
    program = lambda p, lib: str(lib.make_jaxpr(lambda *a: p.bind(*a))(K1, K2, X1, X2))  # noqa: E731
    assert program(flx_p, fluxion) == program(jax_p, jax)
    check_like_jax(lambda k: flx_p.bind(k, K2, X1, X2), lambda k: jax_p.bind(k, K2, X1, X2),
                   np.float32(1), err_contains=("threefry2x32", "uint32"))


def test_threefry2x32_p_vmap_of_some_operands_is_the_loop():
    # jax 0.10.2 fails here (its CPU lowering's loop carry types differ); Fluxion broadcasts the
    # unbatched operands, so each example equals its own bind
    keys = np.array([1, 2], np.uint32)
    out = fluxion.vmap(lambda k, a: flx_p.bind(k, K2, a, X2[0]))(keys, X1)
    for i in range(2):
        want = jax_p.bind(keys[i], K2, X1[i], X2[0])
        for o, w in zip(out, want):
            assert o.dtype == w.dtype and o[i].shape == w.shape
            np.testing.assert_array_equal(np.asarray(o[i]), np.asarray(w))

"""Key arrays through more structural fluxion.numpy functions than test_jax_long_tail2 covers,
each built on the lax primitives that move key data (see tests/fluxion/lax/test_key_primitives.py):
the key dtype, shape and ``random.key_data`` of every result against real jax 0.10.2, under jit
(and eagerly for a few), and the errors where jax refuses.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from _compare import check_like_jax

import fluxion

# Each case: fn(jnp, k, k1) with k of shape (6,) and k1 a single key.
_OPS = {
    "flips": lambda m, k, k1: (m.fliplr(k.reshape(2, 3)), m.flipud(k.reshape(2, 3))),
    "rollaxis_matrix_transpose": lambda m, k, k1: (m.rollaxis(k.reshape(1, 2, 3), 2),
                                                   m.matrix_transpose(k.reshape(2, 3))),
    "resize": lambda m, k, k1: m.resize(k, (2, 4)),
    "dstack_block": lambda m, k, k1: (m.dstack([k, k]), m.block([[k[:2], k[2:4]]])),
    "atleast": lambda m, k, k1: (m.atleast_1d(k1), m.atleast_3d(k)),
    "axis_splits": lambda m, k, k1: (m.hsplit(k, 2), m.vsplit(k.reshape(2, 3), 2),
                                     m.dsplit(k.reshape(1, 2, 3), 3)),
    "choose": lambda m, k, k1: m.choose(np.array([0, 1, 0, 1, 3, 1]), [k, k[::-1]], mode="clip"),
    "array_of_keys": lambda m, k, k1: (m.array([k, k]), m.asarray([k[0], k1]), m.array(k, ndmin=2)),
    "pad_edge": lambda m, k, k1: m.pad(k, (1, 2), mode="edge"),
    "put": lambda m, k, k1: m.put(k, np.array([1, 4]), k[:2], inplace=False),
    "diagflat_triu": lambda m, k, k1: (m.diagflat(k[:2]), m.triu(k.reshape(2, 3))),
    "stack_axis": lambda m, k, k1: (m.stack([k, k], axis=1), m.concatenate([k[None], k[None]], 1)),
    "at_set_get": lambda m, k, k1: (k.at[2].set(k1), k.at[np.array([1, 9])].get(mode="fill"),
                                    k.at[1:3].set(k[4:])),
    "indexing": lambda m, k, k1: (k[np.array([5, 0])], k.reshape(2, 3)[:, np.array([2, 0])],
                                  k[::-2]),
    "broadcast_to_where": lambda m, k, k1: m.where(np.array([True, False]), k1, k[:2]),
    "copy_array": lambda m, k, k1: (m.copy(k), m.array(k), m.asarray(k)),
    "last_axis": lambda m, k, k1: (
        m.concatenate([k.reshape(2, 3)] * 2, axis=-1), m.stack([k, k], axis=-1),
        m.take(k.reshape(2, 3), m.array([0, 2]), axis=-1), m.roll(k.reshape(2, 3), 2, axis=-1),
        m.insert(k.reshape(2, 3), 1, k[:2], axis=-1), m.delete(k.reshape(2, 3), 1, axis=-1)),
    "index_forms": lambda m, k, k1: (
        k.reshape(2, 3)[np.array([[True, False, True], [False, True, False]])],
        k.reshape(2, 3)[..., 1], k.reshape(2, 3)[None, :, None, 1], k.reshape(2, 3)[-1, -2]),
    # an update read from its own operand through a reshape: see _JAX_JIT_WRONG
    "index_forms_at_set_self": lambda m, k, k1: k.reshape(2, 3).at[:, 1:].set(k[:4].reshape(2, 2)),
    # numeric functions that are the identity (or zeros, or False) for non-complex input
    "real_conj_positive": lambda m, k, k1: (m.real(k), m.conj(k), m.conjugate(k), m.positive(k),
                                            m.nan_to_num(k), m.imag(k)),
    "isposinf_isneginf": lambda m, k, k1: (m.isposinf(k), m.isneginf(k.reshape(2, 3))),
    "ix_isin": lambda m, k, k1: (m.ix_(k, k[:2]), m.isin(k, k[::2]), m.isin(k, k1, invert=True)),
}


# Cases jax 0.10.2 computes wrongly under jit on the CPU (where the reference runs, also in TPU
# runs): an in-place update whose update reads its own operand through a reshape, XLA's bug
# openxla/xla#49176 (tests/fluxion/test_update_aliasing.py). Fluxion's jit is compared with
# jax's eager result there, which is right.
_JAX_JIT_WRONG = {"index_forms_at_set_self"}


def _is_key(x):
    return hasattr(x, "dtype") and str(x.dtype).startswith("key<")


def _run(lib, name, jit):
    k = lib.random.split(lib.random.key(0), 6)
    k1 = lib.random.key(3)
    fn = lambda k, k1: _OPS[name](lib.numpy, k, k1)  # noqa: E731
    out = (lib.jit(fn) if jit else fn)(k, k1)
    leaves = lib.tree_util.tree_leaves(out, is_leaf=_is_key)
    kinds = [(str(x.dtype), x.shape) if _is_key(x) else "array" for x in leaves]
    return kinds, [lib.random.key_data(x) if _is_key(x) else x for x in leaves]


@pytest.mark.parametrize("name,jit", [(n, True) for n in sorted(_OPS)]
                         + [(n, False) for n in ("at_set_get", "indexing", "put", "array_of_keys",
                                                 "index_forms", "index_forms_at_set_self")])
def test_more_structural_functions_take_key_arrays_like_jax(name, jit):
    kinds = {}

    def side(lib):
        lib_jit = jit and not (lib is jax and name in _JAX_JIT_WRONG)
        kinds[lib.__name__], values = _run(lib, name, lib_jit)
        return values
    check_like_jax(lambda _: side(fluxion), lambda _: side(jax), 0)
    assert kinds["fluxion"] == kinds["jax"]


_REFUSED = {  # jax: TypeError / ValueError; ours the same class
    "sum": lambda m, k: m.sum(k),
    "cumsum": lambda m, k: m.cumsum(k),
    "sort": lambda m, k: m.sort(k),
    "add": lambda m, k: m.add(k, k),
    "at_add": lambda m, k: k.at[0].add(k[1]),
    "mixed_stack": lambda m, k: m.stack([k, m.zeros(6, m.uint32)]),
    "mixed_where": lambda m, k: m.where(True, k, m.zeros(6, m.uint32)),
    "pad_zero": lambda m, k: m.pad(k, 1),
    # ValueError in jax (a cast to bool or float, an unordered dtype, type promotion)
    "all_any": lambda m, k: (m.all(k), m.any(k)),
    "angle": lambda m, k: m.angle(k),
    "argmax": lambda m, k: m.argmax(k),
    "argmin": lambda m, k: m.argmin(k.reshape(2, 3), axis=1),
    "nanargmax": lambda m, k: m.nanargmax(k),
    "nanargmin": lambda m, k: m.nanargmin(k),
    "lax_reduce_max": lambda m, k: (jax if m is jax.numpy else fluxion).lax.reduce_max(k, (0,)),
    "signbit": lambda m, k: m.signbit(k),
    "polyint": lambda m, k: m.polyint(k),
    "unwrap": lambda m, k: m.unwrap(k),
    # TypeError in jax
    "iscomplex_isreal": lambda m, k: (m.iscomplex(k), m.isreal(k)),
    "where_missing_y": lambda m, k: m.where(True, k),
    # rank checks before the dtype's: ValueError for these, TypeError for the 1-D ones
    "cumulative_sum_rank": lambda m, k: m.cumulative_sum(k.reshape(2, 3)),
    "cumulative_prod_scalar": lambda m, k: m.cumulative_prod(k[0]),
    "cumulative_sum": lambda m, k: m.cumulative_sum(k),
    "vander_rank": lambda m, k: m.vander(k.reshape(2, 3)),
    "vander": lambda m, k: m.vander(k),
}


@pytest.mark.parametrize("name", sorted(_REFUSED))
def test_key_arrays_refused_where_jax_refuses(name):
    def side(lib):
        return lambda _: _REFUSED[name](lib.numpy, lib.random.split(lib.random.key(0), 6))
    check_like_jax(side(fluxion), side(jax), 0)


def test_pad_and_off_diagonal_of_keys_fill_with_keys():
    # jax 0.10.2 fails to lower these (an MLIR rank error in its pad of key data); ours pad with
    # the given key (constant_values) or the key of zero data (diag's off-diagonal elements)
    m = fluxion.numpy
    k = fluxion.random.split(fluxion.random.key(0), 3)
    data = lambda x: np.asarray(fluxion.random.key_data(x))  # noqa: E731
    padded = m.pad(k, (2, 1), constant_values=k[1])
    assert (str(padded.dtype), padded.shape) == ("key<fry>", (6,))
    np.testing.assert_array_equal(data(padded), data(k)[[1, 1, 0, 1, 2, 1]])
    d = m.diag(k[:2], 1)
    assert (str(d.dtype), d.shape) == ("key<fry>", (3, 3))
    want = np.zeros((3, 3, 2), np.uint32)
    want[0, 1], want[1, 2] = data(k)[0], data(k)[1]
    np.testing.assert_array_equal(data(d), want)

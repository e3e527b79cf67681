"""NumPy indexing (``x[idx]``) and ``x.at[idx]`` updates against jax.numpy 0.10.2.

Each index expression is checked under ``fluxion.jit`` in one compiled function that reads
``x[idx]`` and applies every ``.at`` method, so a case costs one compile on each side; a few cases
also run eagerly. Values, dtypes, shapes and weak types must match JAX.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _compare import assert_same, x64_both

import fluxion
import fluxion.numpy as fnp
from fluxion.errors import NonConcreteBooleanIndexError

_RNG = np.random.default_rng(0)
X = _RNG.uniform(0.5, 3.0, (2, 3, 4, 5)).astype(np.float32)
XI = np.arange(2 * 3 * 4 * 5, dtype=np.int32).reshape(2, 3, 4, 5)
A = np.array

# Index expressions on a (2, 3, 4, 5) array: basic, advanced, mixed, masks, negative steps.
CASES = {
    "int": (1,),
    "neg_int": (-1, 2),
    "slices": (slice(None), slice(1, 3)),
    "neg_step": (slice(None, None, -1), slice(None, None, -2), slice(3, 0, -1)),
    "none_ellipsis": (None, Ellipsis, None, 2),
    "array": (A([1, 0, 1]),),
    "array_neg": (A([-1, -2, 0]),),
    "array_2d": (A([[0, 1], [1, 1]]),),
    "list_in_tuple": ([0, 1], slice(None), [1, 2]),
    "adv_none_int": (slice(None), [0, 2], None, 1),
    "adv_adjacent": (slice(None), A([0, 2]), A([1, 3])),
    "adv_separated": (A([0, 1]), slice(None), A([1, 2]), slice(None)),
    "adv_broadcast": (A([[0], [1]]), slice(None), A([[0, 1, 3]])),
    "adv_int_slice": (1, A([0, 2]), slice(1, 3), A([3, 0])),
    "adv_step": (slice(None, None, 2), A([0, 2]), slice(None, None, -1)),
    "adv_ellipsis": (Ellipsis, A([4, 0, -1])),
    "mask_1d": (A([True, False]),),
    "mask_2d": (slice(None), X[0, :, :, 0] > 1.5),
    "mask_last": (Ellipsis, A([True, False, True, True, False])),
    "scalar_true": (True,),
    "scalar_false": (False,),
    "uint8_index": (A([1, 0], np.uint8),),
    "int8_neg_index": (A([-1, 2], np.int8), 0),
    "empty_array": (A([], np.int32),),
    "oob_clamp": (A([5, -9]), 1),
}


def _apply_fn(v):
    return v * 3 + 1


def _all_ops(x, idx):
    at = x.at[idx]
    return (x[idx], at.set(2.5), at.add(1.5), at.subtract(0.5), at.multiply(2.0),
            at.divide(4.0), at.power(2.0), at.min(1.0), at.max(2.0), at.apply(_apply_fn),
            at.get(mode="fill", fill_value=-1.0), at.get(mode="clip"))


@pytest.mark.parametrize("name", list(CASES))
def test_getitem_and_at_methods_jit(name):
    idx = CASES[name]
    ours = fluxion.jit(_all_ops, static_argnums=1)(fnp.asarray(X), idx) if _hashable(idx) else \
        fluxion.jit(lambda x: _all_ops(x, idx))(fnp.asarray(X))
    theirs = jax.jit(lambda x: _all_ops(x, idx))(jnp.asarray(X))
    assert_same(ours, theirs)


def _hashable(idx):
    try:
        hash(idx)
    except TypeError:
        return False
    return True


@pytest.mark.parametrize("name", ["adv_none_int", "list_in_tuple", "mask_2d", "neg_step",
                                  "adv_separated", "oob_clamp", "scalar_true"])
def test_getitem_and_at_eager(name):
    idx = CASES[name]
    x, jx = fnp.asarray(X), jnp.asarray(X)
    assert_same(x[idx], jx[idx])
    assert_same(x.at[idx].add(1.0), jx.at[idx].add(1.0))
    assert_same(x.at[idx].set(A(7.0, np.float32)), jx.at[idx].set(A(7.0, np.float32)))


@pytest.mark.parametrize("i", [0, 2, -1, 5, -9])
def test_traced_scalar_indices(i):
    def f(x, i):
        return (x[i], x[i, :, -i], x[1:, i], x[::2, i], x[::-1, i, None], x[x.shape[0] - 1, i],
                x.at[i, 1].set(-5.0), x.at[i].add(1.0), x.at[:, i].get(mode="fill", fill_value=0.0))

    xs = X[:, :, :, 0].copy()
    ours = fluxion.jit(f)(fnp.asarray(xs), i)
    theirs = jax.jit(f)(jnp.asarray(xs), i)
    assert_same(ours, theirs)
    # The same with a concrete (eager) index array.
    assert_same(f(fnp.asarray(xs), fnp.asarray(i)), f(jnp.asarray(xs), jnp.asarray(i)))


@pytest.mark.parametrize("i", [1, -1, 3, -4])
def test_traced_array_indices(i):
    def f(x, i):
        idx = jnp_like(x).stack([i, 0, i])
        return (x[idx], x[idx, 1], x[:, idx], x.at[idx].add(1), x.at[idx, 2].set(0),
                x.at[idx].get(mode="fill"), x.at[idx].get(mode="clip"),
                x.at[idx].add(5, mode="clip"), x.at[idx].mul(3, mode="promise_in_bounds"),
                x.at[idx].min(-1), x.at[idx].max(100))

    xi = XI[0, :, :, 0].copy()
    assert_same(fluxion.jit(f)(fnp.asarray(xi), i), jax.jit(f)(jnp.asarray(xi), i))


def jnp_like(x):
    return fnp if isinstance(x, (fluxion.Array, fluxion.core.trace.Tracer)) else jnp


def test_dynamic_slice_path_in_jaxpr():
    prog = fluxion.make_jaxpr(lambda x, i: x[i, 1:3])(fnp.asarray(X[0]), 1)
    assert "dynamic_slice" in str(prog) and "gather" not in str(prog)
    prog = fluxion.make_jaxpr(lambda x, i: x[:, fnp.stack([i, i])])(fnp.asarray(X[0]), 1)
    assert "gather" in str(prog)


@pytest.mark.parametrize("idx", [(0,), (0, None), (slice(1, None), None), (slice(None), 0),
                                 (None, slice(None, None, -1), 2), (Ellipsis, None),
                                 (None, 1, None, slice(None), None)], ids=str)
def test_static_basic_indexing_jaxpr_like_jax(idx):
    # the same primitives as JAX's (equinox's test_struct counts them): integer axes are
    # squeezed out of the slice, None axes come from expand_dims (a broadcast_in_dim)
    x = X[0, :, :, 0]

    def prims(make_jaxpr, a):
        return [e.primitive.name for e in make_jaxpr(lambda v: v[idx])(a).jaxpr.eqns]

    assert prims(fluxion.make_jaxpr, fnp.asarray(x)) == prims(jax.make_jaxpr, jnp.asarray(x))
    assert_same(fluxion.jit(lambda v: v[idx])(x), jax.jit(lambda v: v[idx])(x))
    assert_same(fnp.asarray(x)[idx], jnp.asarray(x)[idx])


@pytest.mark.parametrize("idx", [(5,), (-7, 1), (1, 9), (slice(None), 4), (A([9, -9]),)],
                         ids=str)
@pytest.mark.parametrize("mode", ["fill", "clip", None])
def test_get_out_of_bounds_modes(idx, mode):
    x, jx = fnp.asarray(XI[0, :, :, 0]), jnp.asarray(XI[0, :, :, 0])
    fill = 3 if mode == "fill" else None
    assert_same(x.at[idx].get(mode=mode, fill_value=fill),
                jx.at[idx].get(mode=mode, fill_value=fill))


def test_get_fill_default_values():
    for dt in [np.float32, np.int32, np.uint8, np.bool_]:
        a = np.ones((3,), dt)
        assert_same(fnp.asarray(a).at[A([0, 3])].get(mode="fill"),
                    jnp.asarray(a).at[A([0, 3])].get(mode="fill"))


def test_static_out_of_bounds_integer_clamps():
    x, jx = fnp.asarray(XI[0, 0]), jnp.asarray(XI[0, 0])
    assert_same(x[7], jx[7])
    assert_same(x[-9, 1], jx[-9, 1])


@pytest.mark.parametrize("kind", ["set", "add", "multiply", "min", "max"])
def test_out_of_bounds_updates_drop_or_clip(kind):
    idx = (A([1, 9, -9, -1]),)
    x, jx = fnp.asarray(X[0, 0, 0]), jnp.asarray(X[0, 0, 0])
    assert_same(getattr(x.at[idx], kind)(2.0), getattr(jx.at[idx], kind)(2.0))
    assert_same(getattr(x.at[idx], kind)(2.0, mode="clip"),
                getattr(jx.at[idx], kind)(2.0, mode="clip"))


def test_repeated_indices_accumulate():
    idx = A([1, 1, 3, 1])
    assert_same(fnp.zeros(5).at[idx].add(A([1.0, 2.0, 3.0, 4.0], np.float32)),
                jnp.zeros(5).at[idx].add(A([1.0, 2.0, 3.0, 4.0], np.float32)))
    assert_same(fnp.ones(5).at[idx].apply(_apply_fn), jnp.ones(5).at[idx].apply(_apply_fn))
    assert_same(fnp.ones(5).at[idx].multiply(2.0), jnp.ones(5).at[idx].multiply(2.0))


def test_values_broadcast_and_cast():
    x, jx = fnp.asarray(XI[0]), jnp.asarray(XI[0])
    row = A([1, 2, 3, 4, 5], np.int32)
    assert_same(x.at[A([0, 2])].set(row), jx.at[A([0, 2])].set(row))
    assert_same(x.at[:, 1:3, None].add(A([[[10]], [[20]]], np.int32)),
                jx.at[:, 1:3, None].add(A([[[10]], [[20]]], np.int32)))
    # Values are cast to the array's dtype, with JAX's FutureWarning for unsafe casts.
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ours = x.at[0].add(1.5)
    assert any(issubclass(i.category, FutureWarning) for i in w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(ours, jx.at[0].add(1.5))
    # divide and power of an integer array promote like jnp.divide / jnp.power.
    assert_same(x.at[0].divide(2), jx.at[0].divide(2))
    assert_same(x.at[0].power(2), jx.at[0].power(2))


def test_weak_types_preserved():
    assert_same(fnp.asarray(3.0).at[()].set(4), jnp.asarray(3.0).at[()].set(4))
    assert_same(fnp.asarray(3.0).at[None].get(mode="fill"), jnp.asarray(3.0).at[None].get(mode="fill"))
    w = fluxion.jit(lambda s: (s * fnp.ones(3))[fnp.asarray([0, 2])])(2.0)
    assert_same(w, jax.jit(lambda s: (s * jnp.ones(3))[jnp.asarray([0, 2])])(2.0))


def test_concrete_device_indices_and_masks():
    x, jx = fnp.asarray(X), jnp.asarray(X)
    assert_same(x[fnp.asarray([1, 0])], jx[jnp.asarray([1, 0])])
    m = X[..., 0] > 1.5
    assert_same(x[fnp.asarray(m)], jx[jnp.asarray(m)])
    assert_same(x.at[fnp.asarray(m)].set(0.0), jx.at[jnp.asarray(m)].set(0.0))


def test_zero_size():
    z = np.zeros((0, 3), np.float32)
    assert_same(fnp.asarray(z)[A([], np.int32)], jnp.asarray(z)[A([], np.int32)])
    assert_same(fnp.asarray(X)[:, []], jnp.asarray(X)[:, []])
    assert_same(fnp.asarray(z).at[A([], np.int32)].set(1.0), jnp.asarray(z).at[A([], np.int32)].set(1.0))


def test_int64_indices_x64():
    with x64_both():
        x, jx = fnp.asarray(XI[0, 0]), jnp.asarray(XI[0, 0])
        idx = A([3, -1, 0], np.int64)
        assert_same(x[idx], jx[idx])
        assert_same(x.at[idx].add(1), jx.at[idx].add(1))


# ------------------------------------------------------------------ errors

def test_traced_boolean_mask_raises():
    with pytest.raises(NonConcreteBooleanIndexError, match="jnp.where|size="):
        fluxion.jit(lambda x: x[x > 1.0])(fnp.asarray(X))
    with pytest.raises(NonConcreteBooleanIndexError):
        fluxion.jit(lambda x: x.at[x > 1.0].set(0.0))(fnp.asarray(X))
    assert issubclass(NonConcreteBooleanIndexError, IndexError)


@pytest.mark.parametrize("idx", [[0, 1], [0, slice(None)], [A([0, 1])]], ids=str)
def test_list_index_is_type_error(idx):
    x, jx = fnp.asarray(X), jnp.asarray(X)
    with pytest.raises(TypeError) as theirs:
        jx[idx]
    with pytest.raises(TypeError) as ours:
        x[idx]
    assert str(ours.value).split(";")[1].split("See")[0] == str(theirs.value).split(";")[1].split("See")[0]
    with pytest.raises(TypeError):
        x.at[idx].set(0.0)


@pytest.mark.parametrize("idx,exc", [
    ((1.0,), TypeError), ((A([1.0]),), TypeError), (("a",), TypeError),
    ((0, 0, 0, 0, 0), IndexError), ((Ellipsis, 0, Ellipsis), IndexError),
    ((A([True, False, True]),), IndexError), ((slice(None), object()), IndexError),
], ids=lambda v: "object" if isinstance(v, tuple) and any(type(i) is object for i in v) else str(v))
def test_bad_indices(idx, exc):
    with pytest.raises(exc):
        jnp.asarray(X)[idx]
    with pytest.raises(exc):
        fnp.asarray(X)[idx]


def test_traced_slice_bound_is_index_error():
    with pytest.raises(IndexError, match="Slice entries must be static"):
        fluxion.jit(lambda x, i: x[i:])(fnp.asarray(X), 1)

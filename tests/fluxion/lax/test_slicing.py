"""fluxion.lax slicing primitives (dynamic_slice, dynamic_update_slice, gather, scatter family)
against jax.lax 0.10.2: values, dtypes, shapes and weak types, eagerly and under ``fluxion.jit``,
including out-of-bounds indices in every GatherScatterMode."""

from __future__ import annotations

import jax
import jax.lax as jlax
import jax.numpy as jnp
import numpy as np
import pytest
from _compare import assert_same

import fluxion
import fluxion.lax as flax
import fluxion.numpy as fnp

A = np.array
X = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5) / 7
XI = np.arange(3 * 4, dtype=np.int32).reshape(3, 4)


def _both(fn, *args, eager=True):
    """fn(lax, numpy-module, *args) for fluxion (jit, and eagerly if ``eager``) and jax (jit)."""
    jitted = fluxion.jit(lambda *a: fn(flax, fnp, *a))(*args)
    theirs = jax.jit(lambda *a: fn(jlax, jnp, *a))(*args)
    assert_same(jitted, theirs)
    if eager:
        assert_same(fn(flax, fnp, *args), theirs)


# ------------------------------------------------------------------ dynamic slices

@pytest.mark.parametrize("starts", [(0, 0), (2, 3), (-1, -2), (5, -9)], ids=str)
def test_dynamic_slice_and_update(starts):
    def f(lax, m, x, i, j):
        upd = m.full((2, 2), -1, x.dtype)
        return (lax.dynamic_slice(x, (i, j), (2, 2)),
                lax.dynamic_slice(x, (i, 1), (2, 3)),
                lax.dynamic_update_slice(x, upd, (i, j)),
                lax.dynamic_slice_in_dim(x, i, 2, 0),
                lax.dynamic_slice_in_dim(x, j, 3, axis=1),
                lax.dynamic_index_in_dim(x, j, 1, keepdims=False),
                lax.dynamic_index_in_dim(x, i),
                lax.dynamic_update_slice_in_dim(x, upd, j, 1),
                lax.dynamic_update_index_in_dim(x, upd[0], i, 0))
    _both(f, XI, *starts)


def test_dynamic_slice_dtypes_and_weak_type():
    for a in [X[0].astype(np.bool_), X[0].astype(np.uint8), X[0]]:
        assert_same(flax.dynamic_slice(a, (1, np.int32(2)), (2, 3)),
                    jlax.dynamic_slice(a, (1, np.int32(2)), (2, 3)))
    w = fluxion.jit(lambda s, i: flax.dynamic_slice(s * fnp.ones(4), (i,), (2,)))(2.0, 1)
    assert_same(w, jax.jit(lambda s, i: jlax.dynamic_slice(s * jnp.ones(4), (i,), (2,)))(2.0, 1))


def test_dynamic_slice_errors():
    x = fnp.asarray(XI)
    with pytest.raises(ValueError):
        flax.dynamic_slice(x, (1,), (2, 2))
    with pytest.raises(TypeError, match="dynamic_slice"):
        flax.dynamic_slice(x, (1, 1), (4, 2))
    with pytest.raises(TypeError, match="same type"):
        flax.dynamic_slice(x, (np.int32(1), np.uint8(1)), (2, 2))
    with pytest.raises(TypeError, match="dynamic_update_slice"):
        flax.dynamic_update_slice(x, fnp.ones((2, 2)), (0, 0))  # dtype mismatch


# ------------------------------------------------------------------ gather

_GATHER_CASES = {
    # x[idx] for 1-D idx on axis 0 of a (3, 4, 5) operand
    "rows": (dict(offset_dims=(1, 2), collapsed_slice_dims=(0,), start_index_map=(0,)),
             (1, 4, 5), A([[0], [2], [-1], [3]])),
    # 2-D windows at (i, j) pairs
    "windows": (dict(offset_dims=(1, 2), collapsed_slice_dims=(0,), start_index_map=(0, 1)),
                (1, 2, 5), A([[0, 0], [2, 3], [1, 2], [-1, 1]])),
    # scalars picked from the last two axes, batch dims of shape (2, 2)
    "points": (dict(offset_dims=(2,), collapsed_slice_dims=(1, 2), start_index_map=(1, 2)),
               (3, 1, 1), A([[[0, 0], [3, 4]], [[1, 5], [2, 2]]])),
    # batching dims: operand axis 0 pairs with indices axis 0
    "batched": (dict(offset_dims=(1,), collapsed_slice_dims=(1,), start_index_map=(1,),
                     operand_batching_dims=(0,), start_indices_batching_dims=(0,)),
                (1, 1, 5), A([[1], [3], [7]])),
}


@pytest.mark.parametrize("name", list(_GATHER_CASES))
@pytest.mark.parametrize("mode", [None, "clip", "fill", "promise_in_bounds"])
def test_gather(name, mode):
    dn, sizes, idx = _GATHER_CASES[name]
    idx = idx.astype(np.int32)

    def f(lax, m, x, i):
        d = lax.GatherDimensionNumbers(**dn)
        out = [lax.gather(x, i, d, sizes, mode=mode)]
        if mode == "fill":
            out.append(lax.gather(x, i, d, sizes, mode=mode, fill_value=-3.0))
        return out
    _both(f, X, idx, eager=mode in (None, "fill"))


def test_gather_fill_defaults_by_dtype():
    dn = jlax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    fdn = flax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    idx = A([[1], [5]], np.int32)
    for dt in [np.float32, np.int32, np.int8, np.uint16, np.bool_, np.complex64]:
        a = np.ones(3, dt)
        assert_same(flax.gather(a, idx, fdn, (1,), mode="fill"),
                    jlax.gather(a, idx, dn, (1,), mode="fill"))
    # index dtypes other than int32
    for it in [np.uint8, np.int16]:
        assert_same(flax.gather(A([1.0, 2.0, 3.0], np.float32), idx.astype(it), fdn, (1,),
                                mode="fill"),
                    jlax.gather(A([1.0, 2.0, 3.0], np.float32), idx.astype(it), dn, (1,),
                                mode="fill"))


def test_gather_lowering_and_params():
    dn = flax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                     start_index_map=(0,))
    f = fluxion.jit(lambda x, i: flax.gather(x, i, dn, (1, 4)))
    text = f.lower(fnp.asarray(XI), A([[1]], np.int32)).as_text()
    assert "stablehlo.gather" in text and "index_vector_dim = 1" in text
    hash(dn)
    assert isinstance(dn.offset_dims, tuple)
    # lists in dimension numbers are canonicalised to tuples (hashable params)
    dnl = flax.GatherDimensionNumbers(offset_dims=[1], collapsed_slice_dims=[0],
                                      start_index_map=[0])
    assert_same(flax.gather(XI, A([[2]], np.int32), dnl, [1, 4]),
                jlax.gather(XI, A([[2]], np.int32),
                            jlax.GatherDimensionNumbers((1,), (0,), (0,)), (1, 4)))


@pytest.mark.parametrize("bad", [
    dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0, 1)),   # map length
    dict(offset_dims=(1,), collapsed_slice_dims=(1,), start_index_map=(0,)),      # collapse size>1
    dict(offset_dims=(0,), collapsed_slice_dims=(), start_index_map=(0,)),        # missing dim
], ids=str)
def test_gather_bad_dimension_numbers(bad):
    idx = A([[1]], np.int32)
    with pytest.raises(TypeError):
        jlax.gather(XI, idx, jlax.GatherDimensionNumbers(**bad), (1, 4))
    with pytest.raises(TypeError, match="lax.gather"):
        flax.gather(XI, idx, flax.GatherDimensionNumbers(**bad), (1, 4))


def test_gather_float_indices_rejected():
    dn = flax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    with pytest.raises(TypeError, match="integer"):
        flax.gather(A([1.0, 2.0], np.float32), A([[0.0]], np.float32), dn, (1,))


def test_mode_parsing():
    M = flax.GatherScatterMode
    assert M.from_any("clip") is M.CLIP
    assert M.from_any("fill") is M.FILL_OR_DROP and M.from_any("drop") is M.FILL_OR_DROP
    assert M.from_any(None) is M.FILL_OR_DROP
    assert M.from_any("promise_in_bounds") is M.PROMISE_IN_BOUNDS
    assert M.from_any(M.CLIP) is M.CLIP
    with pytest.raises(ValueError):
        M.from_any("wrap")


# ------------------------------------------------------------------ scatter

_SCATTER_CASES = {
    # rows of a (3, 4, 5) operand, including repeated and out-of-bounds rows
    "rows": (dict(update_window_dims=(1, 2), inserted_window_dims=(0,),
                  scatter_dims_to_operand_dims=(0,)), A([[0], [2], [2], [5], [-1]]), (5, 4, 5)),
    # 2x2 windows in the last two axes at (j, k) pairs
    "windows": (dict(update_window_dims=(0, 2, 3), inserted_window_dims=(),
                     scatter_dims_to_operand_dims=(1, 2)),
                A([[0, 0], [2, 3], [3, 4], [1, 1]]), (3, 4, 2, 2)),
    # batched scalar updates
    "batched": (dict(update_window_dims=(1,), inserted_window_dims=(1,),
                     scatter_dims_to_operand_dims=(1,), operand_batching_dims=(0,),
                     scatter_indices_batching_dims=(0,)), A([[1], [3], [9]]), (3, 5)),
}


@pytest.mark.parametrize("name", list(_SCATTER_CASES))
@pytest.mark.parametrize("mode", [None, "clip", "promise_in_bounds"])
def test_scatter_family(name, mode):
    dn, idx, ushape = _SCATTER_CASES[name]
    idx = idx.astype(np.int32)
    upd = (np.arange(np.prod(ushape), dtype=np.float32).reshape(ushape) % 7) - 2

    def f(lax, m, x, i, u):
        d = lax.ScatterDimensionNumbers(**dn)
        kw = dict(mode=mode)
        out = [lax.scatter_add(x, i, u, d, **kw), lax.scatter_sub(x, i, u, d, **kw),
               lax.scatter_mul(x, i, u, d, **kw), lax.scatter_min(x, i, u, d, **kw),
               lax.scatter_max(x, i, u, d, **kw),
               lax.scatter_apply(x, i, lambda v: v * 2 + 1, d, update_shape=u.shape, **kw)]
        if name != "rows":  # repeated indices make plain scatter's winner unspecified
            out.append(lax.scatter(x, i, u, d, **kw))
        return out
    _both(f, X, idx, upd, eager=mode is None)


def test_scatter_int_and_bool_operands():
    dn_j = jlax.ScatterDimensionNumbers((), (0,), (0,))
    dn_f = flax.ScatterDimensionNumbers((), (0,), (0,))
    idx = A([[1], [1], [3]], np.int32)
    for dt in [np.int32, np.uint8]:
        x, u = np.arange(4, dtype=dt), A([5, 6, 7], dt)
        for op in ["scatter_add", "scatter_mul", "scatter_min", "scatter_max"]:
            assert_same(getattr(flax, op)(x, idx, u, dn_f), getattr(jlax, op)(x, idx, u, dn_j))
    xb, ub = np.zeros(4, bool), A([True, False, True])
    for op in ["scatter_min", "scatter_max", "scatter"]:
        assert_same(getattr(flax, op)(xb, idx, ub, dn_f), getattr(jlax, op)(xb, idx, ub, dn_j))
    for op in ["scatter_add", "scatter_mul"]:
        with pytest.raises(TypeError):
            getattr(jlax, op)(xb, idx, ub, dn_j)
        with pytest.raises(TypeError, match="bool"):
            getattr(flax, op)(xb, idx, ub, dn_f)


def test_scatter_apply_with_captured_constant():
    dn = flax.ScatterDimensionNumbers((), (0,), (0,))
    offs = np.arange(3, dtype=np.float32)  # a non-scalar constant captured by the function
    out = flax.scatter_apply(fnp.zeros(4), A([[2], [2]], np.int32),
                             lambda v: fnp.sum(v + offs), dn, update_shape=(2,))
    assert np.asarray(out).tolist() == [0.0, 0.0, 12.0, 0.0]  # 0 -> 3 -> 12
    jitted = fluxion.jit(lambda x: flax.scatter_apply(x, A([[0]], np.int32),
                                                      lambda v: fnp.sum(v * offs), dn,
                                                      update_shape=(1,)))
    assert np.asarray(jitted(fnp.ones(4))).tolist() == [3.0, 1.0, 1.0, 1.0]


def test_scatter_errors():
    dn = flax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0,))
    x = fnp.zeros(4)
    with pytest.raises(TypeError, match="same dtype"):
        flax.scatter_add(x, A([[1]], np.int32), A([1], np.int32), dn)
    with pytest.raises(TypeError, match="scatter dimensions"):
        flax.scatter_add(x, A([[1]], np.int32), fnp.ones(2), dn)
    with pytest.raises(TypeError, match="ScatterDimensionNumbers"):
        flax.scatter(x, A([[1]], np.int32), fnp.ones(1), (0,))


# ------------------------------------------------------------------ vmap: one vectorised op

def _stack_on(a, axis, n=3):
    """``n`` different copies of ``a`` stacked along ``axis``."""
    return np.stack([a * (k + 1) if a.dtype.kind == "f" else a for k in range(n)], axis=axis)


def _count(prog, name):
    return sum(1 for e in prog.program.eqns if e.prim.name == name)


# (operand in_axis, indices in_axis): indices vary per member by a cyclic shift of the rows
_VMAP_AXES = [(1, None), (None, 0), (0, 0), (2, 1)]


def _batched_indices(idx, axis):
    return np.stack([np.roll(idx, k, axis=0) for k in range(3)], axis=axis)


@pytest.mark.parametrize("name", list(_GATHER_CASES))
@pytest.mark.parametrize("mode", [None, "fill"])
@pytest.mark.parametrize("axes", _VMAP_AXES)
def test_vmap_gather_is_one_gather(name, mode, axes):
    dn, sizes, idx = _GATHER_CASES[name]
    ax, ai = axes
    xs = X if ax is None else _stack_on(X, ax)
    ii = idx.astype(np.int32) if ai is None else _batched_indices(idx.astype(np.int32), ai)

    def f(lax, m, x, i):
        return lax.gather(x, i, lax.GatherDimensionNumbers(**dn), sizes, mode=mode)

    ours = fluxion.vmap(lambda x, i: f(flax, fnp, x, i), axes)
    assert_same(ours(xs, ii), jax.vmap(lambda x, i: f(jlax, jnp, x, i), axes)(xs, ii))
    assert _count(fluxion.make_jaxpr(ours)(xs, ii), "gather") == 1
    # transposed: the vjp of the batched gather is one batched scatter-add
    if ax is not None:
        def g(L):
            return lambda x, i: (L.gather(x, i, L.GatherDimensionNumbers(**dn), sizes,
                                          mode=mode) * 1.5).sum()
        gf = fluxion.vmap(fluxion.grad(g(flax)), axes)
        assert_same(gf(xs, ii), jax.vmap(jax.grad(g(jlax)), axes)(xs, ii))


_SCATTER_VMAP_AXES = [(1, None, None), (None, None, 0), (None, 0, None), (0, 0, 0), (2, None, 1)]


@pytest.mark.parametrize("name", list(_SCATTER_CASES))
@pytest.mark.parametrize("axes", _SCATTER_VMAP_AXES)
def test_vmap_scatter_is_one_scatter(name, axes):
    dn, idx, ushape = _SCATTER_CASES[name]
    ax, ai, au = axes
    upd = (np.arange(np.prod(ushape), dtype=np.float32).reshape(ushape) % 7) - 2
    xs = X if ax is None else _stack_on(X, ax)
    ii = idx.astype(np.int32) if ai is None else _batched_indices(idx.astype(np.int32), ai)
    us = upd if au is None else _stack_on(upd, au)

    def f(lax, x, i, u):
        d = lax.ScatterDimensionNumbers(**dn)
        return [lax.scatter_add(x, i, u, d), lax.scatter_max(x, i, u, d),
                lax.scatter_apply(x, i, lambda v: v * 2 + 1, d, update_shape=u.shape)]

    ours = fluxion.vmap(lambda x, i, u: f(flax, x, i, u), axes)
    assert_same(ours(xs, ii, us), jax.vmap(lambda x, i, u: f(jlax, x, i, u), axes)(xs, ii, us))
    prog = fluxion.make_jaxpr(ours)(xs, ii, us)
    assert _count(prog, "scatter_add") == 1 and _count(prog, "scatter_max") == 1
    assert _count(prog, "scatter") == 1


@pytest.mark.parametrize("axes", [(None, 0, 0), (0, 0, None), (1, None, 0)])
def test_vmap_dynamic_slices_with_batched_starts(axes):
    ax, ai, aj = axes
    x = X if ax is None else _stack_on(X, ax)
    i = np.int32(1) if ai is None else np.array([0, 2, 5], np.int32)   # 5 is clamped
    j = np.int32(2) if aj is None else np.array([-1, 3, 1], np.int32)  # -1 wraps to 4, clamped
    u = np.full((2, 2, 3), -1.0, np.float32)

    def f(lax, x, i, j):
        return (lax.dynamic_slice(x, (i, j, 1), (2, 2, 3)),
                lax.dynamic_update_slice(x, u, (i, j, 1)),
                lax.dynamic_index_in_dim(x, i, 0, keepdims=False))

    ours = fluxion.vmap(lambda *a: f(flax, *a), axes)
    assert_same(ours(x, i, j), jax.vmap(lambda *a: f(jlax, *a), axes)(x, i, j))
    prog = fluxion.make_jaxpr(ours)(x, i, j)
    # one op per slice: a gather where the starts are batched (no per-member loop)
    assert _count(prog, "dynamic_slice") + _count(prog, "gather") == 2
    assert _count(prog, "gather") == (2 if ai is not None else 1)
    assert _count(prog, "scatter") + _count(prog, "dynamic_update_slice") == 1
    # reverse mode through the batched slices
    g = lambda L: lambda x, i, j: (L.dynamic_slice(x, (i, j, 1), (2, 2, 3)) ** 2).sum()
    if ax is not None:
        assert_same(fluxion.vmap(fluxion.grad(g(flax)), axes)(x, i, j),
                    jax.vmap(jax.grad(g(jlax)), axes)(x, i, j))

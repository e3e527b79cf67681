"""fluxion.experimental.pallas against JAX's Pallas in interpret mode: the same kernels, written
once against either module set, give the same outputs (grids, BlockSpecs, masked Triton-style
loads and stores through ``ref.at[...]`` views, aliased outputs, ``pl.ds``, ``pl.when``)."""

from __future__ import annotations

import functools

import jax
import jax.experimental.pallas as jpl
import jax.experimental.pallas.triton as jplt
import jax.numpy as jjnp
import numpy as np
import pytest

import fluxion
import fluxion.experimental.pallas as fpl
import fluxion.experimental.pallas.triton as fplt
import fluxion.numpy as fjnp

LIBS = {
    "jax": (jax, jpl, jplt, jjnp, {"interpret": True}),
    "fluxion": (fluxion, fpl, fplt, fjnp, {}),
}


def _run(make):
    ref = make(*LIBS["jax"])
    got = make(*LIBS["fluxion"])
    refs = ref if isinstance(ref, (list, tuple)) else [ref]
    gots = got if isinstance(got, (list, tuple)) else [got]
    for r, g in zip(refs, gots, strict=True):
        r, g = np.asarray(r), np.asarray(g)
        assert g.shape == r.shape and g.dtype == r.dtype
        np.testing.assert_allclose(g, r, rtol=1e-6, atol=1e-6)


X = np.arange(32.0, dtype=np.float32).reshape(4, 8) / 3


def test_blockspec_grid_add():
    def make(lib, pl, plt, jnp, kw):
        def kernel(x_ref, y_ref, o_ref):
            o_ref[...] = x_ref[...] * 2 + y_ref[...] + pl.program_id(1)
        spec = pl.BlockSpec((2, 4), lambda i, j: (i, j))
        f = pl.pallas_call(kernel, out_shape=lib.ShapeDtypeStruct(X.shape, jnp.float32),
                           grid=(2, 2), in_specs=[spec, spec], out_specs=spec, **kw)
        return [f(X, X + 1), lib.jit(f)(X, X)]
    _run(make)


def test_squeezed_block_dim_and_num_programs():
    def make(lib, pl, plt, jnp, kw):
        def kernel(x_ref, o_ref):
            o_ref[...] = x_ref[...].sum() + pl.num_programs(0) * jnp.ones(o_ref.shape)
        f = pl.pallas_call(kernel, out_shape=lib.ShapeDtypeStruct((4, 1), jnp.float32),
                           grid=(4,), in_specs=[pl.BlockSpec((None, 8), lambda i: (i, 0))],
                           out_specs=pl.BlockSpec((None, 1), lambda i: (i, 0)), **kw)
        return f(X)
    _run(make)


def _segment_kernel(x_ref, sizes_ref, starts_ref, init_ref, out_ref, *, pl, plt, jnp, lax, bm, bk):
    # the shape of jax_md's UMA segment_mm forward kernel: masked gathers from ref views,
    # an accumulation loop, a masked scatter through clamped (aliasing) row indices
    seg = pl.program_id(0)
    rb = pl.program_id(1)
    del init_ref
    rows = rb * bm + jnp.arange(bm)
    start = plt.load(starts_ref.at[seg])
    size = plt.load(sizes_ref.at[seg])
    idx = jnp.minimum(start + rows, x_ref.shape[0] - 1)

    def body(k, acc):
        ks = k * bk + jnp.arange(bk)
        v = plt.load(x_ref.at[idx[:, None], ks[None, :]],
                     mask=(rows[:, None] < size) & (ks[None, :] < x_ref.shape[1]), other=0.0)
        return acc + v.sum(axis=1) * (seg + 1)

    acc = lax.fori_loop(0, pl.cdiv(x_ref.shape[1], bk), body, jnp.zeros((bm,), jnp.float32))
    plt.store(out_ref.at[idx], acc, mask=rows < size)


def test_masked_triton_loads_stores_with_aliased_output():
    xs = np.arange(30.0, dtype=np.float32).reshape(10, 3)
    sizes = np.array([3, 5, 2], np.int32)
    starts = np.array([0, 3, 8], np.int32)

    def make(lib, pl, plt, jnp, kw):
        kernel = functools.partial(_segment_kernel, pl=pl, plt=plt, jnp=jnp, lax=lib.lax,
                                   bm=2, bk=2)
        init = jnp.full((10,), -1.0, jnp.float32)
        f = pl.pallas_call(kernel, out_shape=lib.ShapeDtypeStruct((10,), jnp.float32),
                           grid=(3, 3), input_output_aliases={3: 0},
                           compiler_params=plt.CompilerParams(num_warps=2, num_stages=1), **kw)
        return f(xs, sizes, starts, init)
    _run(make)
    # the result itself: row r of segment s gets (s + 1) * sum(xs[r]); rows outside stay -1
    got = np.asarray(make(*LIBS["fluxion"]))
    want = np.concatenate([1 * xs[:3].sum(1), 2 * xs[3:8].sum(1), 3 * xs[8:].sum(1)])
    np.testing.assert_allclose(got, want)


def test_ds_and_when():
    def make(lib, pl, plt, jnp, kw):
        def kernel(x_ref, o_ref):
            i = pl.program_id(0)
            o_ref[pl.ds(i * 2, 2)] = x_ref[pl.ds(i * 2, 2)] + 1.0

            @pl.when(i == 1)
            def _():
                o_ref[pl.ds(0, 2)] = jnp.zeros(2, jnp.float32)
        x = np.arange(6.0, dtype=np.float32)
        f = pl.pallas_call(kernel, out_shape=lib.ShapeDtypeStruct((6,), jnp.float32),
                           grid=(3,), **kw)
        return f(x)
    _run(make)


def test_outputs_pytree_and_int_dtype():
    def make(lib, pl, plt, jnp, kw):
        def kernel(x_ref, a_ref, b_ref):
            a_ref[...] = x_ref[...].astype(jnp.int32)
            b_ref[...] = -x_ref[...]
        shapes = (lib.ShapeDtypeStruct((4, 8), jnp.int32),
                  lib.ShapeDtypeStruct((4, 8), jnp.float32))
        return list(pl.pallas_call(kernel, out_shape=shapes, **kw)(X))
    _run(make)


def test_errors():
    spec = fpl.BlockSpec((3, 8), lambda i: (i, 0))
    f = fpl.pallas_call(lambda x_ref, o_ref: None,
                        out_shape=fluxion.ShapeDtypeStruct((4, 8), np.float32),
                        grid=(2,), in_specs=[spec], out_specs=spec)
    with pytest.raises(NotImplementedError, match="does not divide"):
        f(X)
    with pytest.raises(RuntimeError, match="program_id: called outside a kernel"):
        fpl.program_id(0)

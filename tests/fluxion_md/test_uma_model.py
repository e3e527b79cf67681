"""fluxion_md._nn.uma's blocks, backbone, featurizer and pretrained helpers against real jax_md
0.2.29's ``jax_md._nn.uma`` (flax.linen): jax_md's own init copied into ours gives the same
numbers (float32 tolerances), shapes, dtypes and parameter trees. Small shapes only."""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("flax")
pytest.importorskip("jax_md._nn.uma.blocks")

import jax.numpy as rjnp  # noqa: E402
from jax_md._nn.uma import blocks as r_blocks  # noqa: E402
from jax_md._nn.uma.common import so3 as r_so3  # noqa: E402

import fluxion  # noqa: E402
import fluxion.numpy as fnp  # noqa: E402
from fluxion_md._nn.uma import blocks  # noqa: E402

RS = np.random.RandomState(0)
TOL = 3e-5


def _arr(shape, scale=1.0):
    return (RS.randn(*shape) * scale).astype(np.float32)


def _shapes(tree, tree_util):
    return tree_util.tree_map(lambda a: (tuple(a.shape), str(a.dtype)), tree)


def _same(ours, ref, inputs, tol=TOL, key=1):
    """jax_md's init; ours must build the same tree and give the same outputs on those params."""
    ref_vars = ref.init(jax.random.PRNGKey(key), *[None if x is None else rjnp.asarray(x) for x in inputs])
    our_vars = ours.init(fluxion.random.PRNGKey(key), *[None if x is None else fnp.asarray(x) for x in inputs])
    want_tree = jax.tree_util.tree_map(lambda a: (tuple(a.shape), str(a.dtype)), ref_vars)
    assert _flat(_shapes(our_vars, fluxion.tree_util)) == _flat(want_tree)
    copied = jax.tree_util.tree_map(lambda a: fnp.asarray(np.asarray(a)), ref_vars)
    got = ours.apply(copied, *[None if x is None else fnp.asarray(x) for x in inputs])
    want = ref.apply(ref_vars, *[None if x is None else rjnp.asarray(x) for x in inputs])
    got_l, want_l = fluxion.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got_l) == len(want_l)
    for g, w in zip(got_l, want_l):
        a, b = np.asarray(g), np.asarray(w)
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
        assert g.weak_type == w.weak_type
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    return copied


def _flat(tree, prefix=()):
    out = {}
    for k, v in dict(tree).items():
        if isinstance(v, tuple):
            out[prefix + (k,)] = v
        else:
            out.update(_flat(v, prefix + (k,)))
    return out


def _edges(lmax, num_nodes=4, num_edges=7, edge_width=6):
    src = RS.randint(0, num_nodes, num_edges)
    dst = (src + 1 + RS.randint(0, num_nodes - 1, num_edges)) % num_nodes
    ei = np.stack([src, dst]).astype(np.int32)
    ei[:, -1] = -1  # a padded edge
    k = (lmax + 1) ** 2
    w = _arr((num_edges, k, k), 0.5)
    return ei, w, _arr((num_edges, edge_width)), np.abs(_arr((num_edges, 1, 1)))


@pytest.mark.slow
@pytest.mark.parametrize("act_type,ff_type,mmax", [("gate", "grid", 1), ("s2", "spectral", 2)])
def test_uma_block(act_type, ff_type, mmax):
    lmax, c = 2, 4
    mp = r_so3.create_coefficient_mapping(lmax, mmax)
    grid = r_so3.create_so3_grid(lmax, lmax)
    kw = dict(sphere_channels=c, hidden_channels=3, lmax=lmax, mmax=mmax, m_size=list(mp.m_size),
              edge_channels_list=[6, 5, 5], act_type=act_type, ff_type=ff_type)
    mats = dict(to_grid_mat=np.asarray(grid.to_grid_mat), from_grid_mat=np.asarray(grid.from_grid_mat),
                mapping_to_m=np.asarray(mp.to_m))
    ref = r_blocks.UMABlock(**kw, **{k: rjnp.asarray(v) for k, v in mats.items()})
    ours = blocks.UMABlock(**kw, **{k: fnp.asarray(v) for k, v in mats.items()})
    ei, w, xe, env = _edges(lmax)
    rows = int(sum(mp.m_size[: mmax + 1]))
    wm = _arr((ei.shape[1], rows, (lmax + 1) ** 2), 0.5)
    x = _arr((4, (lmax + 1) ** 2, c))
    sys = _arr((4, c))
    _same(ours, ref, (x, xe, ei, wm, np.transpose(wm, (0, 2, 1)), w, np.transpose(w, (0, 2, 1)),
                      env, sys))


@pytest.mark.slow
def test_edgewise_node_offset_and_empty():
    lmax, c = 1, 2
    mp = r_so3.create_coefficient_mapping(lmax, lmax)
    kw = dict(sphere_channels=c, hidden_channels=2, lmax=lmax, mmax=lmax,
              edge_channels_list=[6, 3], m_size=list(mp.m_size))
    ei, w, xe, env = _edges(lmax)
    x = _arr((4, 4, c))
    wt = np.transpose(w, (0, 2, 1))
    _same(blocks.Edgewise(**kw), r_blocks.Edgewise(**kw), (x, xe, ei, w, wt, None, None, env, 1))
    with pytest.raises(ValueError, match="Edgewise: edge_index"):
        ew = blocks.Edgewise(**kw)
        ew.init(fluxion.random.PRNGKey(0), fnp.asarray(x), fnp.asarray(xe), fnp.asarray(ei[0]),
                fnp.asarray(w), fnp.asarray(wt), None, None, fnp.asarray(env))


@pytest.mark.slow
@pytest.mark.parametrize("module", ["blocks"])
def test_docstring_examples(module):
    mod = importlib.import_module(f"fluxion_md._nn.uma.{module}")
    result = doctest.testmod(mod, extraglobs={"jnp": fnp, "fluxion": fluxion},
                             optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0

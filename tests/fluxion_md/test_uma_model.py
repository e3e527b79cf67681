"""fluxion_md._nn.uma's blocks, backbone, featurizer and pretrained helpers against real jax_md
0.2.29's ``jax_md._nn.uma`` (flax.linen): jax_md's own init copied into ours gives the same
numbers (float32 tolerances), shapes, dtypes and parameter trees. Small shapes only."""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest
from _compare import platform_tol

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
    """jax_md's init; ours must build the same tree, draw the same parameters from the same key
    (Linen's key derivation, bit for bit) and give the same outputs on them."""
    ref_vars = ref.init(jax.random.PRNGKey(key), *[None if x is None else rjnp.asarray(x) for x in inputs])
    our_vars = ours.init(fluxion.random.PRNGKey(key), *[None if x is None else fnp.asarray(x) for x in inputs])
    want_tree = jax.tree_util.tree_map(lambda a: (tuple(a.shape), str(a.dtype)), ref_vars)
    assert _flat(_shapes(our_vars, fluxion.tree_util)) == _flat(want_tree)
    want_values = jax.tree_util.tree_flatten_with_path(ref_vars)[0]
    got_values = fluxion.tree_util.tree_flatten_with_path(our_vars)[0]
    for (path, w), (_, g) in zip(want_values, got_values):
        # bit for bit on the CPU; a TPU's initializers (erf_inv) are only float32-close
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), err_msg=jax.tree_util.keystr(path),
                                   **platform_tol(0.0, 0.0, np.asarray(w).dtype))
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
@pytest.mark.parametrize("module", ["blocks", "model", "model_moe", "featurizer", "pretrained"])
def test_docstring_examples(module):
    mod = importlib.import_module(f"fluxion_md._nn.uma.{module}")
    result = doctest.testmod(mod, extraglobs={"jnp": fnp, "fluxion": fluxion},
                             optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def _system(num_atoms=5, num_systems=2, cutoff=3.0):
    pos = (RS.randn(num_atoms, 3) * 1.2).astype(np.float32)
    z = RS.choice([1, 6, 7, 8], size=num_atoms).astype(np.int32)
    batch = np.minimum(np.arange(num_atoms) * num_systems // num_atoms, num_systems - 1).astype(np.int32)
    pairs = [(i, j) for i in range(num_atoms) for j in range(num_atoms)
             if i != j and np.linalg.norm(pos[i] - pos[j]) < cutoff]
    ei = np.asarray(pairs, np.int32).T
    vec = (pos[ei[0]] - pos[ei[1]]).astype(np.float32)
    charge = np.asarray([0.0, 1.0][:num_systems], np.float32)
    spin = np.asarray([1.0, 2.0][:num_systems], np.float32)
    return pos, z, batch, ei, vec, charge, spin, np.arange(num_systems, dtype=np.int32)


def _configs(r_model, ours, **kw):
    base = dict(sphere_channels=4, lmax=2, mmax=2, num_layers=1, hidden_channels=4, cutoff=3.0,
                edge_channels=4, num_distance_basis=8)
    base.update(kw)
    return r_model.UMAConfig(**base), ours.UMAConfig(**base)


@pytest.mark.slow
@pytest.mark.parametrize("kw", [
    dict(dataset_list=["oc20", "omol", "omat"], use_dataset_embedding=True),
    dict(mmax=1, num_layers=2, ff_type="spectral", norm_type="layer_norm_sh",
         use_dataset_embedding=False, chg_spin_emb_type="lin_emb"),
])
def test_backbone_matches_jax_md(kw):
    from jax_md._nn.uma import model as r_model

    from fluxion_md._nn.uma import model
    rcfg, cfg = _configs(r_model, model, **kw)
    data = _system()
    if not kw.get("use_dataset_embedding"):
        data = data[:-1] + (None,)
    _same(model.UMABackbone(config=cfg), r_model.UMABackbone(config=rcfg), data, tol=1e-4)


@pytest.mark.slow
def test_backbone_energy_gradient_matches_jax_md():
    from jax_md._nn.uma import heads as r_heads
    from jax_md._nn.uma import model as r_model

    from fluxion_md._nn.uma import heads, model
    rcfg, cfg = _configs(r_model, model, use_dataset_embedding=False)
    # ours rematerialises each block (bridge.remat): values and gradients are unchanged. (jax_md's
    # own activation_checkpointing path raises in 0.2.29: its nn.remat call passes `name` twice.)
    cfg.activation_checkpointing = True
    pos, z, batch, ei, vec, q, s, _ = _system(num_atoms=4, num_systems=1)
    rm, rh = r_model.UMABackbone(config=rcfg), r_heads.MLPEnergyHead(4, 4)
    rp = rm.init(jax.random.PRNGKey(3), pos, z, batch, ei, vec, q, s)
    rhp = rh.init(jax.random.PRNGKey(4), rjnp.ones((4, 9, 4)), batch, 1)

    def ref_energy(p):
        out = rm.apply(rp, p, z, batch, ei, p[ei[0]] - p[ei[1]], q, s)
        return rh.apply(rhp, out["node_embedding"], batch, 1)["energy"].sum()

    fm, fh = model.UMABackbone(config=cfg), heads.MLPEnergyHead(4, 4)
    fp = jax.tree_util.tree_map(lambda a: fnp.asarray(np.asarray(a)), rp)
    fhp = jax.tree_util.tree_map(lambda a: fnp.asarray(np.asarray(a)), rhp)
    fz, fb, fei, fq, fs = (fnp.asarray(a) for a in (z, batch, ei, q, s))

    def our_energy(p):
        out = fm.apply(fp, p, fz, fb, fei, p[fei[0]] - p[fei[1]], fq, fs)
        return fh.apply(fhp, out["node_embedding"], fb, 1)["energy"].sum()

    e, g = fluxion.value_and_grad(our_energy)(fnp.asarray(pos))
    re, rg = jax.value_and_grad(ref_energy)(rjnp.asarray(pos))
    np.testing.assert_allclose(np.asarray(e), np.asarray(re), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(g), np.asarray(rg), rtol=1e-3, atol=1e-4)
    assert g.shape == (4, 3) and g.dtype == fnp.float32


def test_config_defaults_match_jax_md():
    from jax_md._nn.uma import model as r_model

    from fluxion_md._nn.uma import model
    assert vars(model.UMAConfig()) == vars(r_model.UMAConfig())
    assert vars(model.default_config()) == vars(r_model.default_config())


@pytest.mark.slow
def test_featurizer_matches_jax_md():
    from jax_md import partition as r_partition
    from jax_md import space as r_space
    from jax_md._nn.uma import featurizer as r_feat

    from fluxion_md import partition, space
    from fluxion_md._nn.uma import featurizer
    box = 4.0
    pos = np.asarray([[0.1, 0.2, 0.3], [1.0, 0.2, 0.3], [3.8, 0.1, 0.2], [2.0, 2.0, 2.0]],
                     np.float32)
    z = np.asarray([1, 6, 8, 1], np.int32)
    rd, _ = r_space.periodic(box)
    fd, _ = space.periodic(box)
    rn = r_partition.neighbor_list(rd, box, 1.6, format=r_partition.Sparse,
                                   disable_cell_list=True).allocate(rjnp.asarray(pos))
    fn = partition.neighbor_list(fd, box, 1.6, format=partition.Sparse,
                                 disable_cell_list=True).allocate(fnp.asarray(pos))
    want = r_feat.uma_featurizer(rd, cutoff=1.5)(rjnp.asarray(z), rjnp.asarray(pos), rn)
    got = featurizer.uma_featurizer(fd, cutoff=1.5)(fnp.asarray(z), fnp.asarray(pos), fn,
                                                    charge=None)
    assert sorted(got) == sorted(want)
    for key in want:
        a, b = np.asarray(got[key]), np.asarray(want[key])
        assert a.shape == b.shape and a.dtype == b.dtype, key
        assert got[key].weak_type == want[key].weak_type, key
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=key)
    assert int(np.asarray(got["edge_mask"]).sum()) == 6  # 0-1, 0-2, 1-2 both ways (periodic)
    with pytest.raises(ValueError, match="Unsupported neighbor list format"):
        featurizer.uma_featurizer(fd)(fnp.asarray(z), fnp.asarray(pos), object())


@pytest.mark.slow
def test_multi_image_featurizer_matches_jax_md():
    from jax_md import custom_partition as r_cp
    from jax_md import space as r_space
    from jax_md._nn.uma import featurizer as r_feat

    from fluxion_md import custom_partition, space
    from fluxion_md._nn.uma import featurizer
    box = np.eye(3, dtype=np.float32) * 2.5
    pos = np.asarray([[0.1, 0.2, 0.3], [1.0, 0.2, 0.3]], np.float32)
    z = np.asarray([1, 8], np.int32)
    rd, _ = r_space.periodic_general(rjnp.asarray(box), fractional_coordinates=False)
    fd, _ = space.periodic_general(fnp.asarray(box), fractional_coordinates=False)
    rn = r_cp.neighbor_list_multi_image(rd, rjnp.asarray(box), 2.6,
                                        fractional_coordinates=False).allocate(rjnp.asarray(pos))
    fn = custom_partition.neighbor_list_multi_image(fd, fnp.asarray(box), 2.6,
                                                    fractional_coordinates=False).allocate(
        fnp.asarray(pos))
    want = r_feat.uma_multi_image_featurizer(cutoff=2.6)(rjnp.asarray(z), rjnp.asarray(pos), rn)
    got = featurizer.uma_multi_image_featurizer(cutoff=2.6)(fnp.asarray(z), fnp.asarray(pos), fn)
    assert sorted(got) == sorted(want)
    for key in want:
        a, b = np.asarray(got[key]), np.asarray(want[key])
        assert a.shape == b.shape and a.dtype == b.dtype, key
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=key)
    assert int(np.asarray(got["edge_mask"]).sum()) > 2  # periodic self images are edges


def test_extract_energy_correction_matches_jax_md():
    from jax_md._nn.uma import pretrained as r_pre

    from fluxion_md._nn.uma import pretrained

    class Attr:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    tasks = [
        {"name": "omol_energy", "property": "energy", "datasets": ["omol"],
         "normalizer": {"mean": 0.5, "rmsd": 2.0}},
        Attr(name="x", property="energy", datasets="omat",
             normalizer=Attr(mean=np.asarray([1.25]), rmsd=None),
             element_references={"element_references": np.asarray([0.0, -1.0, 2.0])}),
    ]
    for dataset in ("omol", "omat"):
        got = pretrained.extract_energy_correction(tasks, dataset)
        want = r_pre.extract_energy_correction(tasks, dataset)
        assert sorted(got) == sorted(want)
        for key in want:
            if want[key] is None:
                assert got[key] is None
                continue
            assert got[key].dtype == want[key].dtype and got[key].shape == want[key].shape
            assert got[key].weak_type == want[key].weak_type
            np.testing.assert_array_equal(np.asarray(got[key]), np.asarray(want[key]))
    with pytest.raises(ValueError, match="No energy task found for dataset 'odac'"):
        pretrained.extract_energy_correction(tasks, "odac")
    assert pretrained.PRETRAINED_MODELS == r_pre.PRETRAINED_MODELS


@pytest.mark.slow
def test_featurizer_dense_list_refused_as_jax_md():
    from jax_md import partition as r_partition
    from jax_md import space as r_space
    from jax_md._nn.uma import featurizer as r_feat

    from fluxion_md import partition, space
    from fluxion_md._nn.uma import featurizer
    pos = np.asarray([[0.1, 0.2, 0.3], [1.0, 0.2, 0.3]], np.float32)
    z = np.asarray([1, 6], np.int32)
    rd, _ = r_space.free()
    fd, _ = space.free()
    rn = r_partition.neighbor_list(rd, 10.0, 1.5, format=r_partition.Dense,
                                   disable_cell_list=True).allocate(rjnp.asarray(pos))
    fn = partition.neighbor_list(fd, 10.0, 1.5, format=partition.Dense,
                                 disable_cell_list=True).allocate(fnp.asarray(pos))
    with pytest.raises(ValueError, match="dense neighbor list"):
        r_feat.uma_featurizer(rd)(rjnp.asarray(z), rjnp.asarray(pos), rn)
    with pytest.raises(ValueError, match="dense neighbor list"):
        featurizer.uma_featurizer(fd)(fnp.asarray(z), fnp.asarray(pos), fn)


@pytest.mark.slow
@pytest.mark.parametrize("kw", [
    dict(dataset_list=["oc20", "omat"], charge_balanced_channels=(0, 1),
         spin_balanced_channels=(2,), use_segment_mm_pallas=False),
    dict(mmax=1, model_version=1.0, ff_type="spectral"),
])
def test_moe_backbone_matches_jax_md(kw):
    from jax_md._nn.uma import model_moe as r_moe

    from fluxion_md._nn.uma import model_moe
    base = dict(sphere_channels=4, lmax=2, mmax=2, num_layers=1, hidden_channels=4, cutoff=3.0,
                edge_channels=4, num_distance_basis=8, num_experts=3, routing_hidden_channels=4)
    base.update(kw)
    rcfg, cfg = r_moe.UMAMoEConfig(**base), model_moe.UMAMoEConfig(**base)
    assert vars(rcfg) == vars(cfg)
    data = _system()
    if not kw.get("dataset_list"):
        data = data[:-1] + (None,)
    _same(model_moe.UMAMoEBackbone(config=cfg), r_moe.UMAMoEBackbone(config=rcfg), data,
          tol=1e-4)


@pytest.mark.slow
def test_moe_backbone_merged_matches_unmerged():
    from fluxion_md._nn.uma import model_moe
    base = dict(sphere_channels=4, lmax=1, mmax=1, num_layers=1, hidden_channels=4, cutoff=3.0,
                edge_channels=4, num_distance_basis=8, num_experts=2, routing_hidden_channels=4,
                use_dataset_embedding=False)
    data = [fnp.asarray(a) for a in _system(num_systems=1)[:-1]]
    model = model_moe.UMAMoEBackbone(config=model_moe.UMAMoEConfig(**base))
    params = model.init(fluxion.random.PRNGKey(2), *data)
    out = model.apply(params, *data)
    merged = model_moe.merge_mole_params(params, out["expert_coefficients"])
    merged_model = model_moe.UMAMoEBackbone(config=model_moe.UMAMoEConfig(**base, merged_mole=True))
    got = merged_model.apply(merged, *data)
    np.testing.assert_allclose(np.asarray(got["node_embedding"]), np.asarray(out["node_embedding"]),
                               rtol=1e-5, atol=1e-5)
    assert got["expert_coefficients"].shape == (1, 2)

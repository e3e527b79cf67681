"""fluxion_md._nn.uma's SO(3) bookkeeping, rotations, layers and kernels against real jax_md
0.2.29's ``jax_md._nn.uma`` (flax.linen): the same parameters (jax_md's own init, copied) and
inputs through both give the same numbers (float32 tolerances), shapes, dtypes and parameter
trees; gradients where jax_md defines custom ones. Small shapes only."""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("flax")
pytest.importorskip("jax_md._nn.uma.nn.radial")

import jax.numpy as rjnp  # noqa: E402
from jax_md._nn.uma import kernels as r_kernels  # noqa: E402
from jax_md._nn.uma.common import rotation as r_rot  # noqa: E402
from jax_md._nn.uma.common import so3 as r_so3  # noqa: E402
from jax_md._nn.uma.nn import activation as r_act  # noqa: E402
from jax_md._nn.uma.nn import layer_norm as r_norm  # noqa: E402
from jax_md._nn.uma.nn import radial as r_radial  # noqa: E402
from jax_md._nn.uma.nn import so2_layers as r_so2  # noqa: E402
from jax_md._nn.uma.nn import so3_layers as r_so3l  # noqa: E402

import fluxion  # noqa: E402
import fluxion.numpy as fnp  # noqa: E402
from fluxion_md._nn.uma import kernels  # noqa: E402
from fluxion_md._nn.uma.common import rotation, so3  # noqa: E402
from fluxion_md._nn.uma.nn import activation, layer_norm, radial, so2_layers, so3_layers  # noqa: E402

RS = np.random.RandomState(0)
TOL = 2e-5


def _arr(shape, scale=1.0):
    return (RS.randn(*shape) * scale).astype(np.float32)


def _close(ours, ref, tol=TOL):
    a, b = np.asarray(ours), np.asarray(ref)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    if hasattr(ref, "weak_type") and hasattr(ours, "weak_type"):
        assert ours.weak_type == ref.weak_type
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _shapes(tree, tree_util):
    return tree_util.tree_map(lambda a: (tuple(a.shape), str(a.dtype)), tree)


def _same_module(ours, ref, *inputs, tol=TOL):
    """Init jax_md's module, check our init has the same tree, run both on jax_md's params."""
    ref_vars = ref.init(jax.random.PRNGKey(1), *[rjnp.asarray(x) for x in inputs])
    our_vars = ours.init(fluxion.random.PRNGKey(1), *[fnp.asarray(x) for x in inputs])
    ref_tree = jax.tree_util.tree_map(np.asarray, ref_vars)
    ref_tree = jax.tree_util.tree_map(lambda a: (tuple(a.shape), str(a.dtype)), ref_tree)
    assert repr(_shapes(our_vars, fluxion.tree_util)) == repr(dict(ref_tree)) or \
        _shapes(our_vars, fluxion.tree_util) == ref_tree
    copied = jax.tree_util.tree_map(lambda a: fnp.asarray(np.asarray(a)), ref_vars)
    got = ours.apply(copied, *[fnp.asarray(x) for x in inputs])
    want = ref.apply(ref_vars, *[rjnp.asarray(x) for x in inputs])
    got_leaves, want_leaves = fluxion.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        _close(g, w, tol)
    return copied


@pytest.mark.parametrize("lmax,mmax", [(2, 2), (3, 1), (4, 2)])
def test_coefficient_mapping_and_grid(lmax, mmax):
    ours, ref = so3.create_coefficient_mapping(lmax, mmax), r_so3.create_coefficient_mapping(lmax, mmax)
    for field in ("to_m", "l_harmonic", "m_harmonic", "m_complex"):
        _close(getattr(ours, field), getattr(ref, field), 0)
    assert ours.m_size == ref.m_size and ours.res_size == ref.res_size
    assert sorted(ours.coefficient_idx_cache) == sorted(ref.coefficient_idx_cache)
    for key, value in ref.coefficient_idx_cache.items():
        _close(ours.coefficient_idx_cache[key], value, 0)
    grid, ref_grid = so3.create_so3_grid(lmax, mmax), r_so3.create_so3_grid(lmax, mmax)
    assert (grid.lat_resolution, grid.long_resolution) == (ref_grid.lat_resolution,
                                                           ref_grid.long_resolution)
    _close(grid.to_grid_mat, ref_grid.to_grid_mat, 1e-6)
    _close(grid.from_grid_mat, ref_grid.from_grid_mat, 1e-6)


@pytest.mark.slow
def test_jacobi_matrices_and_wigner():
    for lmax in (2, 4):
        for ours, ref in zip(rotation.load_jacobi_matrices_from_file(lmax),
                             r_rot.load_jacobi_matrices_from_file(lmax)):
            _close(ours, ref, 1e-6)
    for ours, ref in zip(rotation.compute_jacobi_matrices(3), r_rot.compute_jacobi_matrices(3)):
        np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), atol=1e-6)
    vec = _arr((6, 3))
    vec[2] = [0.0, 1.5, 0.0]   # on the pole: the custom derivatives must stay finite
    for ours, ref in zip(rotation.init_edge_rot_euler_angles(fnp.asarray(vec)),
                         r_rot.init_edge_rot_euler_angles(rjnp.asarray(vec))):
        _close(ours, ref, 1e-6)
    jac = fluxion.jacfwd(lambda v: fnp.stack(rotation.init_edge_rot_euler_angles(v)))(fnp.asarray(vec))
    ref_jac = jax.jacfwd(lambda v: rjnp.stack(r_rot.init_edge_rot_euler_angles(v)))(rjnp.asarray(vec))
    assert np.all(np.isfinite(np.asarray(jac)))
    _close(jac, ref_jac, 1e-4)
    gamma = rotation.init_edge_rot_euler_angles(fnp.asarray(vec), fluxion.random.PRNGKey(3))[0]
    _close(gamma, r_rot.init_edge_rot_euler_angles(rjnp.asarray(vec), jax.random.PRNGKey(3))[0], 1e-6)
    for lmax, mmax in ((2, 2), (3, 1)):
        mapping = so3.create_coefficient_mapping(lmax, mmax)
        index = so3.coefficient_idx(so3.create_coefficient_mapping(lmax, lmax), lmax, mmax)
        ref_mapping = r_so3.create_coefficient_mapping(lmax, mmax)
        ref_index = r_so3.coefficient_idx(r_so3.create_coefficient_mapping(lmax, lmax), lmax, mmax)
        ours = rotation.get_wigner_and_mapping(fnp.asarray(vec), lmax, mmax,
                                               rotation.load_jacobi_matrices_from_file(lmax),
                                               mapping.to_m, index)
        ref = r_rot.get_wigner_and_mapping(rjnp.asarray(vec), lmax, mmax,
                                           r_rot.load_jacobi_matrices_from_file(lmax),
                                           ref_mapping.to_m, ref_index)
        _close(ours[0], ref[0], 2e-6)
        _close(ours[1], ref[1], 2e-6)
    grad = fluxion.grad(lambda x: rotation.safe_acos(x).sum())(fnp.array([1.0 - 1e-8, -0.5]))
    _close(grad, jax.grad(lambda x: r_rot.safe_acos(x).sum())(rjnp.array([1.0 - 1e-8, -0.5])))


@pytest.mark.slow
def test_wigner_is_a_rotation_of_the_harmonics():
    """Identity beyond the reference: D(edge frame) maps the edge's harmonics onto the y axis'."""
    from fluxion_md._nn import e3nn
    vec = _arr((4, 3))
    wigner = rotation.eulers_to_wigner(rotation.init_edge_rot_euler_angles(fnp.asarray(vec)), 0, 2,
                                       rotation.load_jacobi_matrices_from_file(2))
    sh = e3nn.spherical_harmonics("0e + 1o + 2e", fnp.asarray(vec), normalize=True).array
    axis = e3nn.spherical_harmonics("0e + 1o + 2e", fnp.array([0.0, 1.0, 0.0]), normalize=True).array
    rotated = fnp.einsum("eij,ej->ei", wigner, sh)
    np.testing.assert_allclose(np.asarray(rotated), np.broadcast_to(np.asarray(axis), (4, 9)),
                               atol=2e-5)


@pytest.mark.slow
def test_segment_mm():
    x, w, sizes = _arr((7, 5)), _arr((3, 4, 5)), np.array([2, 3, 1], np.int32)
    for fn, ref_fn in ((kernels.segment_mm, r_kernels.segment_mm),
                       (kernels.segment_mm_reference, r_kernels.segment_mm_reference)):
        _close(fn(fnp.asarray(x), fnp.asarray(w), fnp.asarray(sizes)),
               ref_fn(rjnp.asarray(x), rjnp.asarray(w), rjnp.asarray(sizes)))
        grads = fluxion.grad(lambda a, b: fnp.sum(fn(a, b, fnp.asarray(sizes)) ** 2), (0, 1))(
            fnp.asarray(x), fnp.asarray(w))
        ref_grads = jax.grad(lambda a, b: rjnp.sum(ref_fn(a, b, rjnp.asarray(sizes)) ** 2), (0, 1))(
            rjnp.asarray(x), rjnp.asarray(w))
        _close(grads[0], ref_grads[0], 1e-4)
        _close(grads[1], ref_grads[1], 1e-4)
    x3, w3, s3 = _arr((5, 2, 4)), _arr((2, 3, 4)), np.array([2, 3], np.int32)
    _close(fluxion.jit(kernels.segment_mm)(fnp.asarray(x3), fnp.asarray(w3), fnp.asarray(s3)),
           r_kernels.segment_mm(rjnp.asarray(x3), rjnp.asarray(w3), rjnp.asarray(s3)))
    with pytest.raises(ValueError, match="segment_mm"):
        kernels.segment_mm(fnp.ones((2, 2, 2, 2)), fnp.asarray(w3), fnp.asarray(s3))
    with pytest.raises(ValueError, match="segment_mm_reference"):
        kernels.segment_mm_reference(fnp.ones((2, 3)), fnp.asarray(w3), fnp.asarray(s3))


@pytest.mark.slow
def test_wigner_node_edge_kernels():
    x, wig, msg = _arr((4, 9, 3)), _arr((5, 9, 9)), _arr((5, 9, 3))
    edges = np.array([[0, 1, 2, -1, 3], [1, 2, -1, 0, 0]], np.int32)
    to_m = np.asarray(r_so3.create_coefficient_mapping(2, 2).to_m)
    x_edge = np.asarray(r_kernels.gather_x_edge(rjnp.asarray(x), rjnp.asarray(edges)))
    _close(kernels.gather_x_edge(fnp.asarray(x), fnp.asarray(edges)), x_edge, 0)
    want = np.einsum("mk,ekj,ejc->emc", to_m, wig, x_edge)
    _close(kernels.node_to_edge_wigner_permute(fnp.asarray(x), fnp.asarray(edges), fnp.asarray(wig)),
           want.astype(np.float32), 1e-4)
    rotated = np.einsum("ejk,mk,emc->ejc", wig, to_m, msg)
    want = np.zeros((4, 9, 3), np.float32)
    for e, receiver in enumerate(edges[1]):
        if receiver >= 0:
            want[receiver] += rotated[e]
    _close(kernels.edge_to_node_wigner_inverse(fnp.asarray(msg), fnp.asarray(edges),
                                               fnp.asarray(wig), 4), want, 1e-4)
    none = fnp.zeros((2, 0), fnp.int32)
    gx = fluxion.grad(lambda a: fnp.sum(kernels.node_to_edge_wigner_permute(
        a, none, fnp.zeros((0, 9, 9))) ** 2))(fnp.asarray(x))
    _close(gx, np.zeros_like(x), 0)
    with pytest.raises(ValueError, match="9 coefficients"):
        kernels.node_to_edge_wigner_permute(fnp.ones((4, 4, 3)), fnp.asarray(edges), fnp.asarray(wig))


@pytest.mark.slow
def test_radial_and_so3_linear():
    _same_module(radial.RadialMLP((6, 8, 8, 5)), r_radial.RadialMLP((6, 8, 8, 5)), _arr((7, 6)))
    _same_module(radial.PolynomialEnvelope(5), r_radial.PolynomialEnvelope(5),
                 np.linspace(0, 1.2, 9).astype(np.float32))
    _same_module(radial.GaussianSmearing(0.0, 6.0, 10), r_radial.GaussianSmearing(0.0, 6.0, 10),
                 (RS.rand(7) * 6).astype(np.float32))
    _same_module(so3_layers.SO3Linear(5, 2), r_so3l.SO3Linear(5, 2), _arr((3, 9, 4)))
    _same_module(so3_layers.SO3Linear(5, 1, use_bias=False), r_so3l.SO3Linear(5, 1, use_bias=False),
                 _arr((3, 4, 4)))
    with pytest.raises(ValueError, match="SO3Linear"):
        so3_layers.SO3Linear(5, 2).init(fluxion.random.PRNGKey(0), fnp.ones((3, 4, 4)))


@pytest.mark.slow
def test_so2_convolutions():
    _same_module(so2_layers.SO2MConv(1, 3, 4, 2), r_so2.SO2MConv(1, 3, 4, 2), _arr((5, 2, 6)))
    m_size = [3, 4, 2]
    _same_module(so2_layers.SO2Convolution(3, 4, 2, 2, m_size),
                 r_so2.SO2Convolution(3, 4, 2, 2, m_size), _arr((5, 9, 3)), _arr((5, 6)))
    _same_module(so2_layers.SO2Convolution(3, 4, 2, 2, m_size, False, [6, 8], 5),
                 r_so2.SO2Convolution(3, 4, 2, 2, m_size, False, [6, 8], 5),
                 _arr((5, 9, 3)), _arr((5, 6)))
    sizes = list(r_so3.create_coefficient_mapping(3, 1).m_size)
    _same_module(so2_layers.SO2Convolution(3, 4, 3, 1, sizes, False, [6], 2),
                 r_so2.SO2Convolution(3, 4, 3, 1, sizes, False, [6], 2),
                 _arr((5, sum(sizes), 3)), _arr((5, 6)))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["EquivariantLayerNorm", "EquivariantLayerNormSH",
                                  "EquivariantRMSNorm"])
def test_norms(name):
    x = _arr((3, 9, 4), 2.0) + 1.0
    for affine in (True, False):
        _same_module(getattr(layer_norm, name)(2, 4, affine=affine),
                     getattr(r_norm, name)(2, 4, affine=affine), x)
    assert type(layer_norm.get_normalization_layer("layer_norm_sh", 2, 4)).__name__ == \
        "EquivariantLayerNormSH"
    with pytest.raises(ValueError, match="Unknown norm_type"):
        layer_norm.get_normalization_layer("batch", 2, 4)


@pytest.mark.slow
def test_rms_norm_options():
    _same_module(layer_norm.EquivariantRMSNorm(2, 4, centering=False, std_balance_degrees=False),
                 r_norm.EquivariantRMSNorm(2, 4, centering=False, std_balance_degrees=False),
                 _arr((3, 9, 4)))


@pytest.mark.slow
def test_activations():
    _same_module(activation.ScaledSiLU(), r_act.ScaledSiLU(), _arr((3, 4)))
    _same_module(activation.GateActivation(2, 2, 3), r_act.GateActivation(2, 2, 3),
                 _arr((4, 6)), _arr((4, 9, 3)))
    for m_prime in (False, True):
        _same_module(activation.GateActivation(3, 1, 3, m_prime=m_prime),
                     r_act.GateActivation(3, 1, 3, m_prime=m_prime), _arr((4, 9)), _arr((4, 10, 3)))
    grid, ref_grid = so3.create_so3_grid(2, 2), r_so3.create_so3_grid(2, 2)
    to_m, ref_to_m = so3.create_coefficient_mapping(2, 2).to_m, r_so3.create_coefficient_mapping(2, 2).to_m
    for use_m in (False, True):
        _same_module(activation.SeparableS2Activation(2, 2, grid.to_grid_mat, grid.from_grid_mat,
                                                      to_m if use_m else None),
                     r_act.SeparableS2Activation(2, 2, ref_grid.to_grid_mat, ref_grid.from_grid_mat,
                                                 ref_to_m if use_m else None),
                     _arr((4, 3)), _arr((4, 9, 3)))


_SLOW_DOCS = pytest.mark.slow  # several seconds of eager dispatch each under load


@pytest.mark.parametrize("module", [
    "common.so3", "_layers", "nn.so3_layers", "nn.layer_norm", "nn.activation", "nn.mole",
    "nn.embedding", "heads", pytest.param("common.rotation", marks=_SLOW_DOCS),
    pytest.param("kernels", marks=_SLOW_DOCS), pytest.param("nn.radial", marks=_SLOW_DOCS),
    pytest.param("nn.so2_layers", marks=_SLOW_DOCS),
    pytest.param("model_moe_layers", marks=_SLOW_DOCS)])
def test_docstring_examples(module):
    mod = importlib.import_module(f"fluxion_md._nn.uma.{module}")
    result = doctest.testmod(mod, extraglobs={"jnp": fnp, "fluxion": fluxion},
                             optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.slow
def test_mole_linear_and_routing():
    from jax_md._nn.uma.nn import mole as r_mole

    from fluxion_md._nn.uma.nn import mole

    def softmax(a):
        return (np.exp(a) / np.exp(a).sum(-1, keepdims=True)).astype(np.float32)

    cases = [(_arr((7, 5)), softmax(RS.randn(1, 4)), np.zeros(7, np.int32), True, {}),
             (_arr((8, 2, 5)), softmax(RS.randn(2, 4)), np.repeat([0, 1], 4).astype(np.int32),
              False, {"assume_equal_contiguous_batches": True}),
             (_arr((6, 5)), softmax(RS.randn(3, 4)), np.array([0, 1, 0, 2, 1, 2], np.int32), True,
              {"use_segment_mm_pallas": True, "max_segment_size": 2})]
    for x, coef, rows, use_bias, kwargs in cases:
        _same_module(mole.MOLELinear(4, 5, 6, use_bias=use_bias, **kwargs),
                     r_mole.MOLELinear(4, 5, 6, use_bias=use_bias, **kwargs), x, coef, rows)
    _same_module(mole.RoutingMLP(8, 3), r_mole.RoutingMLP(8, 3), _arr((2, 5)))
    weights = mole.MOLEWeights(2, 3, 4, merged=True).init(fluxion.random.PRNGKey(0))
    assert weights["params"]["weights"].shape == (4, 3)
    with pytest.raises(ValueError, match="MOLELinear"):
        mole.MOLELinear(4, 5, 6).init(fluxion.random.PRNGKey(0), fnp.ones((2, 3)),
                                      fnp.ones((1, 4)), fnp.zeros(2, fnp.int32))


@pytest.mark.slow
def test_embeddings_and_heads():
    from jax_md._nn.uma import heads as r_heads
    from jax_md._nn.uma.nn import embedding as r_emb

    from fluxion_md._nn.uma import heads
    from fluxion_md._nn.uma.nn import embedding

    _same_module(embedding.AtomicEmbedding(10, 4), r_emb.AtomicEmbedding(10, 4),
                 np.array([1, 6, 8], np.int32))
    for kind in ("pos_emb", "lin_emb", "rand_emb"):
        for target in ("charge", "spin"):
            values = np.array([0.0, 1.0, -2.0 if target == "charge" else 2.0, 3.0], np.float32)
            _same_module(embedding.ChgSpinEmbedding(kind, target, 8),
                         r_emb.ChgSpinEmbedding(kind, target, 8), values)
    _same_module(embedding.DatasetEmbedding(4, 5), r_emb.DatasetEmbedding(4, 5),
                 np.array([0, 2, 4], np.int32))
    edges = np.array([[0, 1, 2, 3, 0, 1], [1, 2, 3, 0, 2, 3]], np.int32)
    _same_module(embedding.EdgeDegreeEmbedding(3, 2, 2, [5, 8], 2.5, [3, 4, 2]),
                 r_emb.EdgeDegreeEmbedding(3, 2, 2, [5, 8], 2.5, [3, 4, 2]),
                 _arr((4, 9, 3)), _arr((6, 5)), edges, _arr((6, 9, 9)),
                 RS.rand(6, 1, 1).astype(np.float32))
    names = ["omat", "mptrj", "oc20", "unknown"]
    _close(embedding.dataset_names_to_indices(names, embedding.DEFAULT_DATASET_LIST),
           r_emb.dataset_names_to_indices(names, r_emb.DEFAULT_DATASET_LIST), 0)
    node, batch = _arr((5, 9, 4)), np.array([0, 0, 1, 1, 1], np.int32)
    _same_module(heads.MLPEnergyHead(4, 8), r_heads.MLPEnergyHead(4, 8), node, batch, 2)
    _same_module(heads.MLPEnergyHead(4, 8, "mean"), r_heads.MLPEnergyHead(4, 8, "mean"), node,
                 batch, 2, np.array([2.0, 3.0], np.float32))
    _same_module(heads.LinearEnergyHead(4), r_heads.LinearEnergyHead(4), node, batch, 2)
    _same_module(heads.LinearForceHead(4), r_heads.LinearForceHead(4), node)
    with pytest.raises(ValueError, match="Unknown embedding type"):
        embedding.ChgSpinEmbedding("x", "spin", 4).init(fluxion.random.PRNGKey(0), fnp.ones(2))


@pytest.mark.slow
def test_moe_layers():
    from jax_md._nn.uma import model_moe as r_moe

    from fluxion_md._nn.uma import model_moe_layers as moe

    def softmax(a):
        return (np.exp(a) / np.exp(a).sum(-1, keepdims=True)).astype(np.float32)

    one, two = softmax(RS.randn(1, 2)), softmax(RS.randn(2, 2))
    rows_one, rows_two = np.zeros(5, np.int32), np.array([0, 0, 1, 1, 1], np.int32)
    for block in (False, True):
        for coef, rows in ((one, rows_one), (two, rows_two)):
            _same_module(moe.SO2MConvMoE(1, 3, 4, 2, 2, so2_block_gemm=block),
                         r_moe.SO2MConvMoE(1, 3, 4, 2, 2, so2_block_gemm=block),
                         _arr((5, 2, 6)), coef, rows)
    conv = moe.SO2MConvMoE(1, 3, 4, 2, 2, so2_block_gemm=True)
    x = fnp.asarray(_arr((5, 2, 6)))
    params = conv.init(fluxion.random.PRNGKey(0), x, fnp.asarray(one), fnp.asarray(rows_one))
    merged = moe.SO2MConvMoE(1, 3, 4, 2, 2, so2_block_gemm=True, merged_mole=True).apply(
        moe.merge_mole_params(params, fnp.asarray(one)), x, fnp.asarray(one), fnp.asarray(rows_one))
    plain = conv.apply(params, x, fnp.asarray(one), fnp.asarray(rows_one))
    for a, b in zip(merged, plain):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-5)
    m_size = [3, 4, 2]
    _same_module(moe.SO2ConvolutionMoE(3, 4, 2, 2, m_size, 2, False, [6, 8], 5),
                 r_moe.SO2ConvolutionMoE(3, 4, 2, 2, m_size, 2, False, [6, 8], 5),
                 _arr((5, 9, 3)), _arr((5, 6)), two, rows_two)
    edges = np.array([[0, 1, 2, 3, -1, 1], [1, 2, 3, 0, 2, -1]], np.int32)
    wig = _arr((6, 9, 9))
    args = (_arr((4, 9, 3)), _arr((6, 5)), edges, wig, wig.transpose(0, 2, 1).copy(), wig, wig,
            RS.rand(6, 1, 1).astype(np.float32), two, np.array([0, 0, 0, 1, 1, 1], np.int32))
    _same_module(moe.EdgewiseMoE(3, 4, 2, 2, [5], m_size, 2),
                 r_moe.EdgewiseMoE(3, 4, 2, 2, [5], m_size, 2), *args)
    _same_module(moe.UMABlockMoE(3, 4, 2, 2, m_size, [5], 2),
                 r_moe.UMABlockMoE(3, 4, 2, 2, m_size, [5], 2), *args, tol=5e-5)
    assert moe.channel_range((3, 1, 2)) == r_moe.channel_range((3, 1, 2))
    with pytest.raises(ValueError, match="contiguous"):
        moe.channel_range((1, 3))
    emb, target = _arr((5, 9, 4)), np.array([1.0, -2.0], np.float32)
    _close(moe.balance_channels(fnp.asarray(emb), fnp.asarray(target), fnp.asarray(rows_two), 1, 3,
                                0.5),
           r_moe.balance_channels(rjnp.asarray(emb), rjnp.asarray(target), rjnp.asarray(rows_two),
                                  1, 3, 0.5))


@pytest.mark.slow
def test_uma_neighbor_list_energy():
    from jax_md import energy as r_energy
    from jax_md import space as r_space
    from jax_md._nn.uma.model import UMAConfig as RefConfig

    from fluxion_md import energy, space
    from fluxion_md._nn.uma.model import UMAConfig

    fields = dict(sphere_channels=4, lmax=1, mmax=1, num_layers=1, hidden_channels=4, cutoff=2.0,
                  edge_channels=4, num_distance_basis=4, use_dataset_embedding=False)
    pos = np.array([[0.1, 0.1, 0.1], [0.8, 0.1, 0.1], [0.1, 0.9, 0.1], [4.8, 0.3, 0.2]], np.float32)
    species = np.array([1, 6, 8, 6], np.int32)
    refs = {"element_refs": np.linspace(-1, 1, 100).astype(np.float32), "mean": 0.3, "rmsd": 2.0}
    ref_disp, _ = r_space.periodic(rjnp.array([5.0, 5.0, 5.0]))
    ref_nbr, ref_init, ref_energy = r_energy.uma_neighbor_list(
        ref_disp, rjnp.array([5.0, 5.0, 5.0]), cfg=RefConfig(**fields), atoms=rjnp.asarray(species),
        atom_refs=refs, disable_cell_list=True)
    ref_nb = ref_nbr.allocate(rjnp.asarray(pos))
    ref_params = ref_init(jax.random.PRNGKey(1), rjnp.asarray(pos), ref_nb)
    disp, _ = space.periodic(fnp.array([5.0, 5.0, 5.0]))
    nbr, init, energy_fn = energy.uma_neighbor_list(
        disp, fnp.array([5.0, 5.0, 5.0]), cfg=UMAConfig(**fields), atoms=fnp.asarray(species),
        atom_refs=refs, disable_cell_list=True)
    nb = nbr.allocate(fnp.asarray(pos))
    ours = init(fluxion.random.PRNGKey(1), fnp.asarray(pos), nb)
    params = jax.tree_util.tree_map(lambda a: fnp.asarray(np.asarray(a)), ref_params)
    assert fluxion.tree_util.tree_structure(ours) == fluxion.tree_util.tree_structure(params)
    _close(energy_fn(params, fnp.asarray(pos), nb), ref_energy(ref_params, rjnp.asarray(pos), ref_nb),
           1e-5)
    _close(fluxion.grad(energy_fn, 1)(params, fnp.asarray(pos), nb),
           jax.grad(ref_energy, 1)(ref_params, rjnp.asarray(pos), ref_nb), 1e-5)
    with pytest.raises(ValueError, match="checkpoint_path"):
        energy.uma_neighbor_list(disp, fnp.array([5.0, 5.0, 5.0]), checkpoint_path="x.pt")
    with pytest.raises(ValueError, match="MoE"):
        energy.uma_neighbor_list(disp, fnp.array([5.0, 5.0, 5.0]), cfg=UMAConfig(**fields),
                                 merge_mole=True)

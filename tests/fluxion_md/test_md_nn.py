"""fluxion_md.nn and the graph-network energies vs jax_md's (flax.nnx layers vs fluxion_nn ones:
the same initial parameters, so the same numbers), plus quantity.phop and smap's parameter helpers.
Tiny systems only."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax_md = pytest.importorskip("jax_md")
fnnx = pytest.importorskip("flax.nnx")

from _compare import platform_tol  # noqa: E402

import fluxion  # noqa: E402
import fluxion.numpy as jnp  # noqa: E402
import fluxion_nn  # noqa: E402
from fluxion_md import energy, nn, partition, quantity, smap, space  # noqa: E402

RS = np.random.RandomState(0)


def _close(a, b, tol=1e-6):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(a, b, **platform_tol(tol, tol, b.dtype))  # wider on a TPU


def test_mlp_matches_jax_md():
    x = RS.randn(5, 3).astype(np.float32)
    _close(nn.MLP(3, (4, 2), rngs=fluxion_nn.Rngs(0))(jnp.asarray(x)),
           jax_md.nn.MLP(3, (4, 2), rngs=fnnx.Rngs(0))(x))


@pytest.mark.slow
def test_graph_net_encoder_matches_jax_md():
    idx = np.array([[1, 2, 4], [0, 4, 4], [3, 1, 4], [2, 4, 4]])
    parts = (np.ones((4, 1), np.float32), RS.randn(4, 3, 3).astype(np.float32),
             np.ones((1,), np.float32), idx)
    enc = nn.GraphNetEncoder(1, 3, 1, 1, (4,), rngs=fluxion_nn.Rngs(3))
    enc_ref = jax_md.nn.GraphNetEncoder(1, 3, 1, 1, (4,), rngs=fnnx.Rngs(3))
    ours = fluxion.jit(lambda *p: enc(nn.GraphsTuple(*p)))(*[jnp.asarray(p) for p in parts])
    ref = jax.jit(lambda *p: enc_ref(jax_md.nn.GraphsTuple(*p)))(*parts)
    for f in ("nodes", "edges", "globals"):
        _close(getattr(ours, f), getattr(ref, f))


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["Dense", "Sparse"])
def test_graph_network_energies_match_jax_md(fmt):
    R = jax.numpy.asarray(RS.rand(8, 2).astype(np.float32))
    d_ref, _ = jax_md.space.free()
    d, _ = space.free()
    kw = dict(spatial_dimension=2, mlp_sizes=(4,), n_recurrences=1)
    e = energy.graph_network(d, 0.5, key=fluxion.random.PRNGKey(0), **kw)
    e_ref = jax_md.energy.graph_network(d_ref, 0.5, key=jax.random.PRNGKey(0), **kw)
    _close(fluxion.jit(e)(jnp.asarray(R)), jax.jit(e_ref)(R))
    nf, en = energy.graph_network_neighbor_list(d, 1.0, 0.5, 0.1, key=fluxion.random.PRNGKey(0),
                                                format=getattr(partition, fmt), **kw)
    nf_ref, en_ref = jax_md.energy.graph_network_neighbor_list(
        d_ref, 1.0, 0.5, 0.1, key=jax.random.PRNGKey(0), format=getattr(jax_md.partition, fmt), **kw)
    nbrs, nbrs_ref = nf.allocate(jnp.asarray(R)), nf_ref.allocate(R)
    _close(fluxion.jit(en)(jnp.asarray(R), nbrs), jax.jit(en_ref)(R, nbrs_ref))
    _close(fluxion.jit(fluxion.grad(en))(jnp.asarray(R), nbrs),
           jax.jit(jax.grad(en_ref))(R, nbrs_ref), 1e-5)


def test_phop_matches_jax_md():
    R0 = RS.rand(3, 2).astype(np.float32)
    d_ref, _ = jax_md.space.periodic(1.0)
    d, _ = space.periodic(1.0)
    i_ref, u_ref = jax_md.quantity.phop(d_ref, 4)
    i, u = quantity.phop(d, 4)
    s_ref, s = i_ref(R0), i(jnp.asarray(R0))
    for k in range(5):
        R = (R0 + 0.13 * (k + 1)) % 1.0
        s_ref, s = u_ref(s_ref, R), u(s, jnp.asarray(R))
        _close(s.phop, s_ref.phop)
        _close(s.position_buffer, s_ref.position_buffer)


def test_parameter_helpers_match_jax_md():
    mat = np.array([[2.0, 3.0], [3.0, 1.0]], np.float32)
    for s in [(0, 0), (0, 1), (1, 1)]:
        _close(smap._get_species_parameters(jnp.asarray(mat), s),
               jax_md.smap._get_species_parameters(jax.numpy.asarray(mat), s))
    vec = np.array([1.0, 2.0], np.float32)

    def mean(x, y):
        return 0.5 * (x + y)

    _close(smap._get_matrix_parameters(jnp.asarray(vec), mean),
           jax_md.smap._get_matrix_parameters(jax.numpy.asarray(vec), mean))
    assert smap._get_matrix_parameters(1.5, None) == 1.5


def test_behler_parrinello_radial_symmetry_functions_match_jax_md():
    from jax_md.nn import behler_parrinello as ref_bp

    from fluxion_md.nn import behler_parrinello as bp

    R = (RS.rand(5, 3) * 2.0).astype(np.float32)
    species = np.array([0, 1, 1, 0, 1])
    d_ref, _ = jax_md.space.periodic(2.0)
    d, _ = space.periodic(2.0)
    etas = np.array([0.5, 1.0], np.float32)
    _close(fluxion.jit(bp.radial_symmetry_functions(d, jnp.asarray(species), etas, 0.9))(jnp.asarray(R)),
           jax.jit(ref_bp.radial_symmetry_functions(d_ref, jax.numpy.asarray(species), etas, 0.9))(R))


@pytest.mark.slow
def test_behler_parrinello_angular_neighbor_list_matches_jax_md():
    from jax_md.nn import behler_parrinello as ref_bp

    from fluxion_md.nn import behler_parrinello as bp

    R = (RS.rand(5, 3) * 2.0).astype(np.float32)
    d_ref, _ = jax_md.space.periodic(2.0)
    d, _ = space.periodic(2.0)
    etas = np.array([0.5, 1.0], np.float32)
    nbrs = partition.neighbor_list(d, 2.0, 0.9, 0.0, format=partition.Sparse).allocate(jnp.asarray(R))
    nbrs_ref = jax_md.partition.neighbor_list(d_ref, 2.0, 0.9, 0.0,
                                              format=jax_md.partition.Sparse).allocate(R)
    ang = bp.angular_symmetry_functions_neighbor_list(d, None, etas, np.ones(2, np.float32),
                                                      np.array([1.0, 2.0], np.float32), 0.9)
    ang_ref = ref_bp.angular_symmetry_functions_neighbor_list(
        d_ref, None, etas, np.ones(2, np.float32), np.array([1.0, 2.0], np.float32), 0.9)
    _close(fluxion.jit(ang)(jnp.asarray(R), nbrs), jax.jit(ang_ref)(R, nbrs_ref), 1e-5)


@pytest.mark.slow
def test_behler_parrinello_energy_and_forces_match_jax_md():
    R = (RS.rand(6, 3) * 2.0).astype(np.float32)
    species = np.array([0, 1, 1, 0, 1, 0])
    d_ref, _ = jax_md.space.periodic(2.0)
    d, _ = space.periodic(2.0)
    sym = dict(cutoff_distance=0.9)
    e = energy.behler_parrinello(d, key=fluxion.random.PRNGKey(1), species=jnp.asarray(species),
                                 mlp_sizes=(4,), sym_kwargs=sym)
    e_ref = jax_md.energy.behler_parrinello(d_ref, key=jax.random.PRNGKey(1),
                                            species=jax.numpy.asarray(species), mlp_sizes=(4,),
                                            sym_kwargs=sym)
    _close(fluxion.jit(e)(jnp.asarray(R)), jax.jit(e_ref)(R), 1e-5)
    _close(fluxion.jit(fluxion.grad(e))(jnp.asarray(R)), jax.jit(jax.grad(e_ref))(R), 1e-4)


def test_convert_checkpoint_to_params_matches_jax_md():
    from jax_md._nn.util import convert_checkpoint_to_params as ref

    from fluxion_md._nn.util import convert_checkpoint_to_params

    ckpt = {"Energy/~/GraphNetEncoder/~/EdgeFunction_1/~/linear_1": {"w": np.ones((2, 3)),
                                                                    "b": np.zeros(3)}}
    template = {"GraphNetEncoder": {"edge_fns_1": {"layers_1": {
        "kernel": np.empty((2, 3), np.float32), "bias": np.empty(3, np.float32)}}}}
    ours, theirs = convert_checkpoint_to_params(ckpt, template), ref(ckpt, template)
    leaf = ours["GraphNetEncoder"]["edge_fns_1"]["layers_1"]
    _close(leaf["kernel"], theirs["GraphNetEncoder"]["edge_fns_1"]["layers_1"]["kernel"])
    with pytest.raises(ValueError, match="different keys"):
        convert_checkpoint_to_params({"Energy/~/m": {"w": np.ones(2)}}, {"m": {"kernel": np.ones(2),
                                                                             "bias": np.ones(1)}})


def test_membrane_energies_match_jax_md():
    R = np.array([[0.0, 0, 0], [1, 0.1, 0], [0.2, 1, 0], [0, 0.1, 1.2]], np.float32)
    tri = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    d_ref, _ = jax_md.space.free()
    d, _ = space.free()
    Rj, Rf, tj, tf = jax.numpy.asarray(R), jnp.asarray(R), jax.numpy.asarray(tri), jnp.asarray(tri)
    # each reference as one jax.jit program (eager jax_md compiles every operation on its own)
    _close(energy._calc_triangle_areas(Rf, tf, d),
           jax.jit(lambda r: jax_md.energy._calc_triangle_areas(r, tj, d_ref))(Rj))
    _close(energy.triangle_area_potential(Rf, tf, d, 0.4, 2.0),
           jax.jit(lambda r: jax_md.energy.triangle_area_potential(r, tj, d_ref, 0.4, 2.0))(Rj))
    _close(energy.volume_potential(Rf, tf, 0.2, 3.0),
           jax.jit(lambda r: jax_md.energy.volume_potential(r, tj, 0.2, 3.0))(Rj))
    _close(fluxion.grad(lambda r: energy.bending_potential(r, tf, d, 1.5))(Rf),
           jax.jit(jax.grad(lambda r: jax_md.energy.bending_potential(r, tj, d_ref, 1.5)))(Rj),
           1e-5)


def test_nvk_matches_jax_md():
    from fluxion_md import simulate

    R = (RS.rand(5, 2) * 3).astype(np.float32)
    d_ref, s_ref = jax_md.space.periodic(3.0)
    d, s = space.periodic(3.0)
    i_ref, a_ref = jax_md.simulate.nvk(jax_md.energy.soft_sphere_pair(d_ref), s_ref, 1e-2, 0.5)
    i, a = simulate.nvk(energy.soft_sphere_pair(d), s, 1e-2, 0.5)
    # the reference's init as one program (ours runs eagerly)
    st_ref = jax.jit(i_ref)(jax.random.PRNGKey(0), jax.numpy.asarray(R))
    st = i(fluxion.random.PRNGKey(0), jnp.asarray(R))
    step_ref, step = jax.jit(a_ref), fluxion.jit(a)
    for _ in range(3):
        st_ref, st = step_ref(st_ref), step(st)
    _close(st.position, st_ref.position, 1e-5)
    _close(st.momentum, st_ref.momentum, 1e-5)

"""fluxion_md's NequIP model and its Linen-style layers vs jax_md's (flax.linen + e3nn_jax): the
same parameter names and shapes, and, given jax_md's parameters, the same energies and forces.
Tiny systems only."""

from __future__ import annotations

import numpy as np
import pytest
from _compare import platform_tol

jax = pytest.importorskip("jax")
jax_md = pytest.importorskip("jax_md")
pytest.importorskip("e3nn_jax")

from jax_md._nn import e3nn_layer as ref_layer  # noqa: E402

import fluxion  # noqa: E402
import fluxion.numpy as jnp  # noqa: E402
from fluxion_md import energy, space  # noqa: E402
from fluxion_md._nn import e3nn, e3nn_layer, nequip  # noqa: E402
from fluxion_md._nn import util as nn_util  # noqa: E402

RS = np.random.RandomState(0)


def _numpy_tree(tree):
    return jax.tree_util.tree_map(np.asarray, tree)


def _paths(tree, prefix=()):
    if isinstance(tree, dict):
        out = {}
        for k, v in tree.items():
            out.update(_paths(v, prefix + (k,)))
        return out
    return {prefix: (tuple(tree.shape), np.dtype(tree.dtype))}  # arrays or ShapeDtypeStructs


def _same_values(ours, ref):
    """The same tree, shapes, dtypes and values, bit for bit (ours drawn from the same key)."""
    want = jax.tree_util.tree_flatten_with_path(ref)[0]
    got = fluxion.tree_util.tree_flatten_with_path(ours)[0]
    assert [jax.tree_util.keystr(p) for p, _ in got] == [jax.tree_util.keystr(p) for p, _ in want]
    for (path, g), (_, w) in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype, (jax.tree_util.keystr(path), g.dtype, w.dtype)
        # bit for bit on the CPU; a TPU's initializers (erf_inv) are only float32-close
        np.testing.assert_allclose(g, w, err_msg=jax.tree_util.keystr(path),
                                   **platform_tol(0.0, 0.0, w.dtype))


def _close(a, b, tol=1e-5):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_radial_mlp_matches_jax_md_and_maps_zero_to_zero():
    x = RS.rand(5, 3).astype(np.float32)
    ref = jax_md.nn.util.MLP((8, 8, 2), "raw_swish", use_bias=False, scalar_mlp_std=4.0)
    ours = nn_util.MLP((8, 8, 2), "raw_swish", use_bias=False, scalar_mlp_std=4.0)
    ref_vars = jax.jit(ref.init)(jax.random.PRNGKey(0), x)
    our_vars = fluxion.jit(ours.init)(fluxion.random.PRNGKey(0), jnp.asarray(x))
    _same_values(our_vars, ref_vars)  # Linen's keys from the same root key
    apply = fluxion.jit(ours.apply)
    _close(apply(_numpy_tree(ref_vars), jnp.asarray(x)), jax.jit(ref.apply)(ref_vars, x))
    _close(apply(our_vars, jnp.zeros((5, 3)))[:1], np.zeros((1, 2), np.float32), 0)
    # one layer (no hidden kernels, so no scalar_mlp_std needed), with a bias
    with_bias = nn_util.MLP((4,), "tanh")
    ref_bias = jax.eval_shape(jax_md.nn.util.MLP((4,), "tanh").init, jax.random.PRNGKey(0), x)
    assert _paths(fluxion.eval_shape(with_bias.init, fluxion.random.PRNGKey(0), x)) == _paths(
        ref_bias)
    # 'swish' is the learned BetaSwish: one 'Beta' vector per hidden layer, named as linen names it
    beta = nn_util.MLP((4, 4, 1), "swish", scalar_mlp_std=1.0)
    ref_beta = jax.eval_shape(jax_md.nn.util.MLP((4, 4, 1), "swish", scalar_mlp_std=1.0).init,
                              jax.random.PRNGKey(0), x)
    assert _paths(fluxion.eval_shape(beta.init, fluxion.random.PRNGKey(0), x)) == _paths(ref_beta)


def test_mlp_of_concatenated_args_matches_jax_md():
    import flax.linen as linen

    from fluxion_nn import bridge

    a, b = RS.randn(3, 2).astype(np.float32), RS.randn(3, 1).astype(np.float32)

    class Ours(bridge.Module):
        @bridge.compact
        def __call__(self, a, b):
            return nn_util.mlp((4, 2), "none", scalar_mlp_std=2.0)(a, {"b": b})

    class Ref(linen.Module):
        @linen.compact
        def __call__(self, a, b):
            return jax_md.nn.util.mlp((4, 2), "none", scalar_mlp_std=2.0)(a, {"b": b})

    ref_vars = jax.jit(Ref().init)(jax.random.PRNGKey(0), a, b)
    _close(fluxion.jit(Ours().apply)(_numpy_tree(ref_vars), jnp.asarray(a), jnp.asarray(b)),
           jax.jit(Ref().apply)(ref_vars, a, b))


def test_bessel_embedding_matches_jax_md_and_vanishes_past_the_cutoff():
    rs = np.array([0.0, 0.7, 2.0, 3.6, 3.9, 4.0, 4.1], np.float32)
    ref = jax_md.nn.util.BesselEmbedding(count=8, inner_cutoff=3.5, outer_cutoff=4.0)
    ours = nn_util.BesselEmbedding(count=8, inner_cutoff=3.5, outer_cutoff=4.0)
    ref_vars = jax.jit(ref.init)(jax.random.PRNGKey(0), rs)
    our_vars = fluxion.jit(ours.init)(fluxion.random.PRNGKey(0), jnp.asarray(rs))
    _close(our_vars["params"]["frequencies"], ref_vars["params"]["frequencies"], 0)
    out = fluxion.jit(ours.apply)(our_vars, jnp.asarray(rs))
    _close(out, jax.jit(ref.apply)(ref_vars, rs))
    assert not np.asarray(out)[-2:].any()


def test_nonlinearities_shift_scale_and_config():
    x = jnp.linspace(-2.0, 2.0, 5)
    for name in ("none", "relu", "raw_swish", "tanh", "sigmoid", "silu"):
        _close(nn_util.get_nonlinearity_by_name(name)(x),
               jax_md.nn.util.get_nonlinearity_by_name(name)(np.asarray(x)))
    with pytest.raises(ValueError, match="not found"):
        nn_util.get_nonlinearity_by_name("gelu")
    cfg = nn_util.ConfigDict({"train_dataset": ["harder_silicon"], "nested": {"a": 1}})
    assert nn_util.get_shift_and_scale(cfg) == (2.2548, 0.8825)
    assert cfg.nested.a == 1 and not hasattr(cfg, "shift")
    cfg.shift, cfg.scale = 0.5, 2.0
    assert nn_util.get_shift_and_scale(cfg) == (0.5, 2.0)
    with pytest.raises(ValueError, match="get_shift_and_scale"):
        nn_util.get_shift_and_scale(nn_util.ConfigDict())


def test_e3nn_layers_match_jax_md():
    import e3nn_jax

    x1 = RS.randn(4, 5).astype(np.float32)
    x2 = RS.randn(4, 3).astype(np.float32)
    for ours, ref, args in [
        (e3nn_layer.Linear("3x0e + 2x1o"), ref_layer.Linear("3x0e + 2x1o"), ("2x0e + 1x1o",)),
        (e3nn_layer.FullyConnectedTensorProductE3nn("2x0e + 1x1o"),
         ref_layer.FullyConnectedTensorProductE3nn("2x0e + 1x1o"), ("2x0e + 1x1o", "3x0e")),
    ]:
        ref_in = [e3nn_jax.IrrepsArray(ir, v) for ir, v in zip(args, (x1, x2))]
        our_in = [e3nn.IrrepsArray(ir, jnp.asarray(v)) for ir, v in zip(args, (x1, x2))]
        ref_vars = jax.jit(ref.init)(jax.random.PRNGKey(0), *ref_in)
        _same_values(fluxion.jit(ours.init)(fluxion.random.PRNGKey(0), *our_in), ref_vars)
        out = fluxion.jit(ours.apply)(_numpy_tree(ref_vars), *our_in)
        want = jax.jit(ref.apply)(ref_vars, *ref_in)
        assert str(out.irreps) == str(want.irreps)
        _close(out.array, want.array)
    with pytest.raises(ValueError, match="IrrepsArray"):
        e3nn_layer.Linear("1x0e").init(fluxion.random.PRNGKey(0), jnp.ones((2, 3)))


def _small_config(mod):
    cfg = mod.default_config()
    cfg.graph_net_steps = 2
    cfg.hidden_irreps = "4x0e + 2x1e"
    cfg.sh_irreps = "1x0e + 1x1e"
    cfg.r_max = 2.5
    cfg.radial_net_n_hidden = 8
    cfg.train_dataset = ["harder_silicon"]
    return cfg


def _system():
    base = np.array([[0.0, 0.0, 0.0], [0.239487, 0.0, 0.0], [0.5234, 0.78234, 0.0]], np.float32)
    tiles = np.stack(np.meshgrid(*[np.arange(2)] * 3), -1).reshape(-1, 3)
    R = ((base[:, None] + tiles[None]) / 2).reshape(-1, 3).astype(np.float32)
    atoms = np.zeros((len(R), 94), np.float32)
    atoms[:, 5] = 1
    return R, np.eye(3, dtype=np.float32) * 6.0, atoms


@pytest.mark.slow  # compiles a two-layer NequIP on both sides (~15 s under load)
def test_nequip_energy_and_forces_match_jax_md():
    R, box, atoms = _system()
    R_ref = jax.numpy.asarray(R)  # jax_md gathers the padded slot N: a jax array clamps it
    ref_disp, _ = jax_md.space.periodic_general(box)
    ref_nf, ref_init, ref_energy = jax_md.energy.nequip_neighbor_list(
        ref_disp, box, _small_config(jax_md.nn.nequip), atoms, fractional_coordinates=True,
        disable_cell_list=True)
    ref_nbrs = ref_nf.allocate(R_ref)
    ref_params = jax.jit(ref_init)(jax.random.PRNGKey(0), R_ref, ref_nbrs)
    e_ref, g_ref = jax.jit(jax.value_and_grad(ref_energy, argnums=1))(ref_params, R_ref, ref_nbrs)

    disp, _ = space.periodic_general(jnp.asarray(box))
    nf, init_fn, energy_fn = energy.nequip_neighbor_list(
        disp, jnp.asarray(box), _small_config(nequip), jnp.asarray(atoms),
        fractional_coordinates=True, disable_cell_list=True)
    nbrs = nf.allocate(jnp.asarray(R))
    ours = fluxion.jit(init_fn)(fluxion.random.PRNGKey(0), jnp.asarray(R), nbrs)
    _same_values(ours, ref_params)  # the same key draws jax_md's parameters, bit for bit
    e, g = fluxion.jit(fluxion.value_and_grad(energy_fn, argnums=1))(ours, jnp.asarray(R), nbrs)
    _close(e, e_ref, 1e-4)
    _close(g, g_ref, 1e-4)
    assert np.abs(np.asarray(g).sum(0)).max() < 1e-4  # momentum conservation
    with pytest.raises(ValueError, match="one-hot encoding of the atoms"):
        energy.nequip_neighbor_list(disp, jnp.asarray(box), _small_config(nequip),
                                    fractional_coordinates=True)[2](ref_params, jnp.asarray(R), nbrs)


def test_nequip_helpers():
    assert nequip.prod(()) == 1 and nequip.prod([2, 5]) == 10
    for args in [("1x0e + 1x1o", "1x1o", "0e"), ("1x0e", "1x0e", "1o"), ("2x1e", "1x1e", "2e")]:
        assert nequip.tp_path_exists(*args) == jax_md.nn.nequip.tp_path_exists(*args)
    with pytest.raises(ValueError, match="get_shift_and_scale"):
        nequip.model_from_config(nequip.default_config())
    assert dict(nequip.default_config()) == {k: (dict(v) if hasattr(v, "items") else v)
                                             for k, v in jax_md.nn.nequip.default_config().items()}


@pytest.mark.parametrize("modname", [
    # nequip's and _gnome_energy's examples init and run a small NequIP eagerly (5-8 s): nightly
    pytest.param("fluxion_md._nn.nequip", marks=pytest.mark.slow), "fluxion_md._nn.gnome",
    pytest.param("fluxion_md._gnome_energy", marks=pytest.mark.slow),
    pytest.param("fluxion_md._nn.util", marks=pytest.mark.slow),  # eager init/apply examples
    pytest.param("fluxion_md._nn.e3nn_layer", marks=pytest.mark.slow),
])
def test_docstring_examples_run(modname):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(modname),
                             extraglobs={"fluxion": fluxion, "jnp": jnp},
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0

"""fluxion_md's GNoME loader vs jax_md's: the msgpack checkpoint reader vs flax.serialization,
the optimizers vs jax_md.nn.gnome's (optax), and a checkpoint written by flax from jax_md's model
giving the same parameters, energy and forces. The silicon checkpoint of jax_md's suite is read
when the compat cache holds it."""

from __future__ import annotations

import json
import os
from typing import NamedTuple

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax_md = pytest.importorskip("jax_md")
pytest.importorskip("e3nn_jax")
serialization = pytest.importorskip("flax.serialization")

import optax  # noqa: E402

import fluxion  # noqa: E402
import fluxion.numpy as jnp  # noqa: E402
from fluxion_md import energy, space  # noqa: E402
from fluxion_md._nn import gnome  # noqa: E402
from fluxion_md._nn.util import ConfigDict  # noqa: E402

SILICON = os.path.expanduser(
    "~/.cache/fluxion-compat/suites/jax_md-0.2.29/tests/data/nequip_silicon_test/")
RS = np.random.RandomState(0)


def _leaves_equal(a, b):
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    assert ta == tb
    for x, y in zip(la, lb):
        assert type(x) is type(y) or np.asarray(x).dtype == np.asarray(y).dtype
        assert np.asarray(x).dtype == np.asarray(y).dtype and np.array_equal(x, y)


def test_msgpack_restore_matches_flax():
    tree = {"a": np.arange(6, dtype=np.int16).reshape(2, 3), "b": [1, -3, 2.5, None, True, "x" * 40],
            "c": np.float64(3.5), "d": 1 + 2j, "e": -200, "f": 2**40, "g": np.zeros((0, 2), np.float32),
            "h": np.ones(3, jnp.bfloat16), "i": {"j": [np.int8(-4)] * 20, "k": b"\x00\x01"},
            "l": {str(n): n for n in range(20)}, "m": -(2**40)}
    data = serialization.msgpack_serialize(tree)
    ours, ref = gnome.msgpack_restore(data), serialization.msgpack_restore(data)
    assert ours.keys() == ref.keys()
    for key in ref:
        _leaves_equal(ours[key], ref[key])
    with pytest.raises(ValueError, match="ends inside"):
        gnome.msgpack_restore(data[:-3])
    with pytest.raises(ValueError, match="follow the first object"):
        gnome.msgpack_restore(data + b"\x00")


class _State(NamedTuple):
    count: object
    mu: object


def test_restore_state_matches_flax_from_state_dict():
    target = (0, {"w": np.zeros(2), "v": [np.zeros(1), 1]}, (_State(0, {"w": 0.0}), ()))
    values = (7, {"w": np.ones(2), "v": [np.full(1, 2.0), 3]}, (_State(4, {"w": 5.0}), ()))
    state = serialization.msgpack_restore(serialization.to_bytes(values))
    ours = gnome.restore_state(target, state)
    _leaves_equal(ours, serialization.from_state_dict(target, state))
    assert type(ours[2][0]) is _State
    with pytest.raises(ValueError, match="at /1"):
        gnome.restore_state(target, {"0": 1, "1": {"w": 1}, "2": {}})


@pytest.mark.parametrize("schedule", ["constant", "linear_decay", "cosine_decay",
                                      "warmup_cosine_decay"])
def test_optimizer_matches_jax_md(schedule):
    cfg = dict(epochs=3, epoch_size=40, train_batch_size=[8, 4], schedule=schedule,
               learning_rate=1e-2, warmup_steps=2, l2_regularization=0.0)
    params = {"w": RS.randn(3).astype(np.float32)}
    grads = {"w": RS.randn(3).astype(np.float32)}
    for l2 in (0.0, 0.1):
        cfg["l2_regularization"] = l2
        ours, ref = gnome.optimizer(ConfigDict(cfg)), jax_md.nn.gnome.optimizer(
            jax_md.nn.nequip.ConfigDict(cfg))
        s, s_ref = ours.init(params), ref.init(params)
        for _ in range(3):
            u, s = ours.update(grads, s, params)
            u_ref, s_ref = ref.update(grads, s_ref, params)
            np.testing.assert_allclose(np.asarray(u["w"]), np.asarray(u_ref["w"]), rtol=1e-5,
                                       atol=1e-7)
    assert gnome.minimum_batch_size(ConfigDict(cfg)) == 4
    assert gnome.minimum_batch_size(ConfigDict()) == 1


def test_scale_lr_on_plateau():
    cfg = ConfigDict(epochs=1, schedule="scale_on_plateau", learning_rate=0.5,
                     max_lr_plateau_epochs=10, epochs_per_eval=2)
    tx = gnome.optimizer(cfg)
    state = tx.init({"w": jnp.ones(2)})
    assert state[1].step_size == -0.5 and state[1].max_steps_without_reduction == 5
    adam = optax.scale_by_adam()
    u, _ = tx.update({"w": jnp.full(2, 3.0)}, state)
    u_ref, _ = adam.update({"w": np.full(2, 3.0, np.float32)}, adam.init({"w": np.ones(2)}))
    np.testing.assert_allclose(np.asarray(u["w"]), -0.5 * np.asarray(u_ref["w"]), rtol=1e-6)
    with pytest.raises(ValueError, match="Unknown learning rate schedule"):
        gnome.optimizer(ConfigDict(epochs=1, schedule="step"))


def _silicon(tile):
    pos = np.array([[0.262703, 0.752304, 0.243743], [0.018137, 0.002302, 0.491184],
                    [0.248363, 0.237012, 0.776354], [0.991889, 0.496844, 0.005244],
                    [0.773055, 0.742292, 0.755667], [0.488418, 0.001649, 0.993714],
                    [0.7502, 0.232352, 0.236175], [0.52915, 0.488468, 0.512127]], np.float32)
    box = np.array([[4.707482, -0.92776, 0], [0, 5.658054, 0.0], [2.14774, 1.224906, 6.006509]],
                   np.float32)
    tiles = np.stack(np.meshgrid(*[np.arange(tile)] * 3), -1).reshape(-1, 3)
    R = ((pos[:, None] + tiles[None]) / tile).reshape(-1, 3).astype(np.float32)
    atoms = np.zeros((len(R), 94), np.float32)
    atoms[:, 13] = 1
    return R, (box * tile).astype(np.float32), atoms


def _compare_params(directory):
    cfg_ref, _, params_ref = jax_md.nn.gnome.load_model(directory)
    cfg, model, params = gnome.load_model(directory)
    assert dict(cfg) == json.loads(json.dumps(cfg_ref.to_dict()))
    assert type(model).__name__ == "NequIPEnergyModel" and model.r_max == cfg_ref.r_max
    _leaves_equal(jax.tree_util.tree_map(np.asarray, params),
                  jax.tree_util.tree_map(np.asarray, params_ref))


def _compare_energies(directory, R, box, atoms, tol):
    R_ref = jax.numpy.asarray(R)  # jax_md gathers the padded slot N: a jax array clamps it
    ref_disp, _ = jax_md.space.periodic_general(box)
    nf_ref, e_ref_fn = jax_md.energy.load_gnome_model_neighbor_list(
        ref_disp, box, directory, atoms, fractional_coordinates=True, disable_cell_list=True)
    e_ref, g_ref = jax.jit(jax.value_and_grad(e_ref_fn))(R_ref, nf_ref.allocate(R_ref))
    disp, _ = space.periodic_general(jnp.asarray(box))
    nf, e_fn = energy.load_gnome_model_neighbor_list(
        disp, jnp.asarray(box), directory, jnp.asarray(atoms), fractional_coordinates=True,
        disable_cell_list=True)
    e, g = fluxion.jit(fluxion.value_and_grad(e_fn))(jnp.asarray(R), nf.allocate(jnp.asarray(R)))
    assert e.shape == () and e.dtype == np.float32 and g.shape == R.shape and g.dtype == np.float32
    np.testing.assert_allclose(np.asarray(e), np.asarray(e_ref), rtol=tol, atol=tol)
    np.testing.assert_allclose(np.asarray(g), np.asarray(g_ref), rtol=tol, atol=tol)


_SMALL_CFG = {"model_family": "nequip", "graph_net_steps": 1,
              "nonlinearities": {"e": "raw_swish", "o": "tanh"}, "use_sc": True,
              "n_elements": 94, "hidden_irreps": "4x0e + 2x1e", "sh_irreps": "1x0e + 1x1e",
              "num_basis": 4, "r_max": 2.5, "radial_net_nonlinearity": "raw_swish",
              "radial_net_n_hidden": 4, "radial_net_n_layers": 1, "n_neighbors": 10.0,
              "scalar_mlp_std": 4.0, "train_dataset": ["harder_silicon"], "epochs": 1,
              "schedule": "constant", "learning_rate": 1e-3, "train_batch_size": 2}


def _write_checkpoint(directory):
    """A GNoME checkpoint written by flax: jax_md's small model's (step, params, Adam state)
    structure (from eval_shape, nothing compiled) filled with random values."""
    ref_cfg = jax_md.nn.nequip.ConfigDict(_SMALL_CFG)
    model = jax_md.nn.gnome.model_from_config(ref_cfg)
    sds = jax.ShapeDtypeStruct
    graph = jax_md.nn.gnome.GraphsTuple(sds((1, 94), np.float32), sds((1, 3), np.float32),
                                        sds((1,), np.int32), sds((1,), np.int32),
                                        sds((1, 1), np.float32), sds((1,), np.int32),
                                        sds((1,), np.int32))
    def fill(a):
        return np.asarray(RS.randn(*a.shape) * 4).astype(a.dtype)

    abstract = jax.eval_shape(lambda g: model.init(jax.random.PRNGKey(0), g), graph)
    params = jax.tree_util.tree_map(fill, abstract)
    opt_state = jax.tree_util.tree_map(
        fill, jax.eval_shape(jax_md.nn.gnome.optimizer(ref_cfg).init, abstract))
    (directory / "config.json").write_text(json.dumps(json.dumps(_SMALL_CFG)))
    (directory / "checkpoint_7").write_bytes(serialization.to_bytes((7, params, opt_state)))
    return str(directory)


def test_load_model_of_a_flax_checkpoint_matches_jax_md(tmp_path):
    directory = _write_checkpoint(tmp_path)
    _compare_params(directory)
    _, _, params = gnome.load_model(directory)
    (tmp_path / "config.json").write_text(json.dumps(_SMALL_CFG))  # a plain object reads too
    cfg, _, again = gnome.load_model(directory)
    assert cfg == _SMALL_CFG
    _leaves_equal(jax.tree_util.tree_map(np.asarray, again),
                  jax.tree_util.tree_map(np.asarray, params))
    (tmp_path / "checkpoint_8").write_bytes(b"")
    with pytest.raises(ValueError, match="exactly one checkpoint"):
        gnome.load_model(directory)


@pytest.mark.slow  # compiles the model's energy and forces on both sides (~10 s under load)
def test_gnome_energy_of_a_flax_checkpoint_matches_jax_md(tmp_path):
    R, box, atoms = _silicon(1)
    _compare_energies(_write_checkpoint(tmp_path), R[:4], box * 1.5, atoms[:4], 1e-5)


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir(SILICON), reason="jax_md's suite data is not cached")
def test_gnome_silicon_matches_jax_md():
    R, box, atoms = _silicon(2)
    _compare_params(SILICON)
    _compare_energies(SILICON, R, box, atoms, 2e-4)

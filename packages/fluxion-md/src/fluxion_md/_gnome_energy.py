"""NequIP and GNoME energies over a sparse neighbor list (``jax_md.energy.nequip_neighbor_list``
and ``load_gnome_model_neighbor_list``), re-exported by :mod:`fluxion_md.energy`.

The model (:mod:`fluxion_md._nn.nequip`) is a Linen-style ``fluxion_nn.bridge.Module``: its
parameters are a ``{'params': ...}`` tree, given to ``energy_fn`` (NequIP) or loaded from a
GNoME checkpoint (:func:`fluxion_md._nn.gnome.load_model`).
"""

from __future__ import annotations

from typing import Any, Callable

from fluxion_md import partition
from fluxion_md._nn import gnome, nequip
from fluxion_md._nn import util as nn_util
from fluxion_md.util import Array

__all__ = ["nequip_neighbor_list", "load_gnome_model_neighbor_list"]


def _atoms_or_raise(kwargs: dict, atoms: Any, fn_name: str) -> Any:
    atoms = kwargs.pop("atoms", atoms)
    if atoms is None:
        raise ValueError(f"energy.{fn_name}: a one-hot encoding of the atoms is required (pass "
                         "atoms= to the constructor or to the energy function).")
    return atoms


def nequip_neighbor_list(displacement_fn: Callable, box: Any, cfg: Any = None, atoms: Any = None,
                         neighbor_list_fn: Callable = partition.neighbor_list,
                         featurizer_fn: Callable = nn_util.neighbor_list_featurizer,
                         **nl_kwargs: Any) -> tuple[Callable, Callable, Callable]:
    """``(neighbor_fn, init_fn, energy_fn)`` of a NequIP model built from ``cfg`` (default
    :func:`fluxion_md._nn.nequip.default_config`) over a sparse neighbor list of cutoff
    ``cfg.r_max``, as ``jax_md.energy.nequip_neighbor_list``.

    ``init_fn(key, R, nbrs)`` gives the parameters and ``energy_fn(params, R, nbrs)`` the energy;
    ``atoms`` (one-hot species ``[N, n_elements]``) is given here or as ``atoms=`` to each call.
    ``featurizer_fn(displacement_fn)`` builds the graph (default
    :func:`fluxion_md._nn.util.neighbor_list_featurizer`).

    Example: a small model (one layer, few channels) on three atoms.

        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, space
        >>> from fluxion_md._nn import nequip
        >>> cfg = nequip.default_config()  # a small model: one layer, few channels
        >>> cfg.graph_net_steps, cfg.hidden_irreps, cfg.sh_irreps = 1, "2x0e + 1x1o", "1x0e + 1x1o"
        >>> cfg.radial_net_n_hidden, cfg.n_elements, cfg.r_max, cfg.shift, cfg.scale = 4, 2, 1.5, 0.0, 1.0
        >>> box = jnp.eye(3) * 4.0
        >>> displacement, shift = space.periodic_general(box, fractional_coordinates=False)
        >>> R = jnp.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.2, 0.0]])
        >>> atoms = jnp.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])  # one-hot species
        >>> neighbor_fn, init_fn, energy_fn = energy.nequip_neighbor_list(displacement, box, cfg, atoms,
        ...                                                               disable_cell_list=True)
        >>> nbrs = neighbor_fn.allocate(R)
        >>> params = init_fn(fluxion.random.PRNGKey(0), R, nbrs)
        >>> e = energy_fn(params, R, nbrs)
        >>> e.shape, abs(float(energy_fn(params, R + 0.3, nbrs) - e)) < 1e-5  # a translation changes nothing
        ((), True)
        >>> forces = -fluxion.grad(energy_fn, argnums=1)(params, R, nbrs)
        >>> forces.shape, bool(jnp.abs(forces.sum(0)).max() < 1e-5)  # no net force
        ((3, 3), True)
    """
    cfg = nequip.default_config() if cfg is None else cfg
    model = nequip.model_from_config(cfg)
    neighbor_fn = neighbor_list_fn(displacement_fn, box, cfg.r_max, format=partition.Sparse,
                                   **nl_kwargs)
    featurizer = featurizer_fn(displacement_fn)

    def init_fn(key: Array, position: Array, neighbor: partition.NeighborList,
                **kwargs: Any) -> Any:
        graph = featurizer(_atoms_or_raise(kwargs, atoms, "nequip_neighbor_list"), position,
                           neighbor, **kwargs)
        return model.init(key, graph)

    def energy_fn(params: Any, position: Array, neighbor: partition.NeighborList,
                  **kwargs: Any) -> Array:
        graph = featurizer(_atoms_or_raise(kwargs, atoms, "nequip_neighbor_list"), position,
                           neighbor, **kwargs)
        return model.apply(params, graph)[0, 0]

    return neighbor_fn, init_fn, energy_fn


def load_gnome_model_neighbor_list(displacement_fn: Callable, box: Any, directory: str,
                                   atoms: Any = None,
                                   neighbor_list_fn: Callable = partition.neighbor_list,
                                   featurizer_fn: Callable = nn_util.neighbor_list_featurizer,
                                   **nl_kwargs: Any) -> tuple[Callable, Callable]:
    """``(neighbor_fn, energy_fn)`` of the GNoME model whose checkpoint is in ``directory``
    (``config.json`` + one ``checkpoint*`` file, read by
    :func:`fluxion_md._nn.gnome.load_model`), over a sparse neighbor list of cutoff
    ``cfg.r_max``, as ``jax_md.energy.load_gnome_model_neighbor_list``.

    ``energy_fn(R, nbrs)`` is the energy; ``atoms`` (one-hot species ``[N, 94]``) is given here
    or as ``atoms=`` to each call; extra keyword arguments go to the featurizer (and on to
    ``displacement_fn``). ``nl_kwargs`` go to ``neighbor_list_fn``.

    Example:
        >>> # neighbor_fn, energy_fn = load_gnome_model_neighbor_list(
        >>> #     disp, box, "tests/data/nequip_silicon_test/", atoms, fractional_coordinates=True)
        >>> # e, g = fluxion.value_and_grad(energy_fn)(R, neighbor_fn.allocate(R))
    """
    cfg, model, params = gnome.load_model(directory)
    neighbor_fn = neighbor_list_fn(displacement_fn, box, cfg.r_max, format=partition.Sparse,
                                   **nl_kwargs)
    featurizer = featurizer_fn(displacement_fn)

    def energy_fn(position: Array, neighbor: partition.NeighborList, **kwargs: Any) -> Array:
        graph = featurizer(_atoms_or_raise(kwargs, atoms, "load_gnome_model_neighbor_list"),
                           position, neighbor, **kwargs)
        return model.apply(params, graph)[0, 0]

    return neighbor_fn, energy_fn

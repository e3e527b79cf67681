"""Lift functions of distances (or displacements) to functions of positions (mirrors ``jax_md.smap``).

``pair(fn, metric)`` sums ``fn`` over all pairs, ``pair_neighbor_list`` over a neighbor list,
``bond``/``angle``/``torsion`` over explicit index lists and ``triplet`` over all triplets.
Parameters may be scalars, per-particle vectors (combined with a combinator, by default the
mean), per-species matrices, or :class:`ParameterTree` objects.
"""

from __future__ import annotations

import enum
from functools import partial
from typing import Any, Callable

import numpy as onp

import fluxion.numpy as jnp
from fluxion import vmap
from fluxion.tree_util import tree_map
from fluxion_md import dataclasses, partition, space, util
from fluxion_md.util import Array, f32, high_precision_sum

__all__ = [
    "ParameterTreeMapping", "ParameterTree", "high_precision_sum", "bond", "angle", "torsion",
    "pair", "pair_neighbor_list", "triplet",
]


class ParameterTreeMapping(enum.Enum):
    """How the leaves of a :class:`ParameterTree` map onto interactions.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import smap
        >>> sigma = smap.ParameterTree(jnp.array([1.0, 2.0]), smap.ParameterTreeMapping.PerParticle)
        >>> smap.ParameterTreeMapping.PerParticle.name, sigma.mapping.value
        ('PerParticle', 1)
    """
    Global = 0
    PerParticle = 1
    PerBond = 2
    PerSpecies = 3


@dataclasses.dataclass
class ParameterTree:
    """A pytree of parameters with one :class:`ParameterTreeMapping` for all of its leaves.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import smap, space
        >>> displacement, shift = space.free()
        >>> def energy(dr, params):
        ...     return params["epsilon"] * (1.0 - dr / params["sigma"]) ** 2
        >>> params = smap.ParameterTree({"epsilon": 2.0, "sigma": 1.5}, smap.ParameterTreeMapping.Global)
        >>> energy_fn = smap.pair(energy, space.canonicalize_displacement_or_metric(displacement), params=params)
        >>> round(float(energy_fn(jnp.array([[0.0, 0.0], [1.0, 0.0]]))), 4)
        0.2222
    """
    tree: Any
    mapping: ParameterTreeMapping = dataclasses.static_field()


def _is_number(p: Any) -> bool:
    return isinstance(p, (int, float, bool)) or (hasattr(p, "dtype") and not hasattr(p, "ndim"))


def _split_params_and_combinators(kwargs: dict) -> tuple[dict, dict]:
    params, combinators = {}, {}
    for k, v in kwargs.items():
        if callable(v) and not util.is_array(v) and not isinstance(v, ParameterTree):
            combinators[k] = v
        elif isinstance(v, tuple) and v and callable(v[0]):
            combinators[k], params[k] = v[0], v[1]
        else:
            params[k] = v
    return params, combinators


def _mean(x: Array, y: Array) -> Array:
    return 0.5 * (x + y)


def _type_parameters(params: Any, types: Array, what: str) -> Any:
    if util.is_array(params):
        if params.ndim == 1:
            return params[types]
        if params.ndim == 0:
            return params
        raise ValueError(f"smap.{what}: parameters must be scalars or 1-d arrays indexed by type; "
                         f"got shape {params.shape}.")
    if isinstance(params, ParameterTree):
        if params.mapping is ParameterTreeMapping.Global:
            return params.tree
        if params.mapping is ParameterTreeMapping.PerBond:
            return tree_map(lambda p: p[types], params.tree)
        raise ValueError(f"smap.{what}: ParameterTree mapping must be Global or PerBond.")
    return params


def _interaction_parameters(indices: Array, types: Array | None, kwargs: dict,
                            combinators: dict, what: str) -> dict:
    out = {}
    for k, v in kwargs.items():
        if k in combinators:
            def combine(p: Any, comb: Callable = combinators[k]) -> Any:
                if util.is_array(p) and p.ndim >= 1:
                    return vmap(comb)(*[p[indices[:, i]] for i in range(indices.shape[1])])
                return p
            if isinstance(v, ParameterTree):
                v = tree_map(combine, v.tree) if v.mapping is ParameterTreeMapping.PerParticle \
                    else v.tree
            else:
                v = combine(v)
        elif types is not None:
            v = _type_parameters(v, types, what)
        out[k] = v
    return out


def _indexed_map(n_points: int, what: str) -> Callable:
    def make(fn: Callable, displacement_or_metric: Callable, static_idx: Array | None,
             static_types: Array | None, ignore_unused_parameters: bool, kwargs: dict) -> Callable:
        kwargs, combinators = _split_params_and_combinators(kwargs)
        merge = partial(util.merge_dicts, ignore_unused_parameters=ignore_unused_parameters)

        def compute(R: Array, idx: Array, types: Array | None, dynamic: dict) -> Array:
            idx = jnp.asarray(idx)
            # jax_md reads columns 0..n_points-1 and ignores any others (its own simulate_test
            # passes bonds of shape [2, N], i.e. two bonds): only too few columns is an error.
            if idx.ndim != 2 or idx.shape[1] < n_points:
                raise ValueError(f"smap.{what}: indices must have shape [n, {n_points}] (extra "
                                 f"columns are ignored, as in jax_md); got {idx.shape}.")
            points = [R[idx[:, i]] for i in range(n_points)]
            params = _interaction_parameters(idx, types, merge(kwargs, dynamic), combinators, what)
            disp = vmap(partial(displacement_or_metric, **dynamic), 0, 0)
            if n_points == 2:
                args = (disp(points[0], points[1]),)
            elif n_points == 3:
                args = (disp(points[0], points[1]), disp(points[2], points[1]))
            else:
                args = (disp(points[1], points[0]), disp(points[2], points[1]),
                        disp(points[3], points[2]))
            return high_precision_sum(fn(*args, **params))

        def mapped(R: Array, idx: Array | None = None, types: Array | None = None,
                   **dynamic: Any) -> Array:
            total = f32(0)
            if idx is not None:
                total = total + compute(R, idx, types, dynamic)
            if static_idx is not None:
                total = total + compute(R, static_idx, static_types, dynamic)
            return total
        return mapped
    return make


def bond(fn: Callable[..., Array], displacement_or_metric: Callable,
         static_bonds: Array | None = None, static_bond_types: Array | None = None,
         ignore_unused_parameters: bool = False, **kwargs: Any) -> Callable[..., Array]:
    """Sum ``fn(dr, **params)`` over bonds ``[n, 2]`` (static and/or passed per call).

    Example:
        >>> metric = space.metric(space.free()[0])
        >>> E = bond(lambda dr: (dr - 1.0) ** 2, metric, jnp.array([[0, 1]]))
        >>> float(E(jnp.array([[0.0, 0.0], [2.0, 0.0]])))
        1.0
    """
    inner = _indexed_map(2, "bond")(fn, displacement_or_metric, static_bonds, static_bond_types,
                                    ignore_unused_parameters, kwargs)

    def mapped_fn(R: Array, bonds: Array | None = None, bond_types: Array | None = None,
                  **dynamic_kwargs: Any) -> Array:
        return inner(R, bonds, bond_types, **dynamic_kwargs)
    return mapped_fn


def angle(fn: Callable[..., Array], displacement_or_metric: Callable,
          static_angles: Array | None = None, static_angle_types: Array | None = None,
          ignore_unused_parameters: bool = False, **kwargs: Any) -> Callable[..., Array]:
    """Sum ``fn(dR_ij, dR_kj, **params)`` over angles ``[n, 3]`` (``j`` the vertex).

    Example:
        >>> disp = space.free()[0]
        >>> E = angle(lambda a, b: jnp.sum(a * b, axis=-1), disp, jnp.array([[0, 1, 2]]))
        >>> float(E(jnp.array([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0]])))
        1.0
    """
    inner = _indexed_map(3, "angle")(fn, displacement_or_metric, static_angles,
                                     static_angle_types, ignore_unused_parameters, kwargs)

    def mapped_fn(R: Array, angles: Array | None = None, angle_types: Array | None = None,
                  **dynamic_kwargs: Any) -> Array:
        return inner(R, angles, angle_types, **dynamic_kwargs)
    return mapped_fn


def torsion(fn: Callable[..., Array], displacement_or_metric: Callable,
            static_torsions: Array | None = None, static_torsion_types: Array | None = None,
            ignore_unused_parameters: bool = False, **kwargs: Any) -> Callable[..., Array]:
    """Sum ``fn(b0, b1, b2, **params)`` over torsions ``[n, 4]`` (``b_k = R[k+1] - R[k]``).

    Example:
        >>> E = torsion(lambda a, b, c: jnp.sum(a * c), space.free()[0], jnp.array([[0, 1, 2, 3]]))
    """
    inner = _indexed_map(4, "torsion")(fn, displacement_or_metric, static_torsions,
                                       static_torsion_types, ignore_unused_parameters, kwargs)

    def mapped_fn(R: Array, torsions: Array | None = None, torsion_types: Array | None = None,
                  **dynamic_kwargs: Any) -> Array:
        return inner(R, torsions, torsion_types, **dynamic_kwargs)
    return mapped_fn


# ----------------------------------------------------------------------------- pair

def _get_species_parameters(params: Any, species: Any) -> Any:
    if util.is_array(params):
        if params.ndim == 2:
            return params[species]
        if params.ndim == 0:
            return params
        raise ValueError("smap.pair: with species, parameters must be scalars or "
                         f"[n_species, n_species] matrices; got shape {params.shape}.")
    if isinstance(params, ParameterTree):
        if params.mapping is ParameterTreeMapping.Global:
            return params.tree
        if params.mapping is ParameterTreeMapping.PerSpecies:
            return tree_map(lambda p: p[species], params.tree)
        raise ValueError("smap.pair: with species, ParameterTree mapping must be Global or "
                         f"PerSpecies; got {params.mapping}.")
    return params


def _get_matrix_parameters(params: Any, combinator: Callable) -> Any:
    if util.is_array(params):
        if params.ndim == 1:
            return combinator(params[:, None], params[None, :])
        if params.ndim in (0, 2):
            return params
        raise ValueError("smap.pair: parameters must have 0, 1 or 2 dimensions; "
                         f"got shape {params.shape}.")
    if isinstance(params, ParameterTree):
        if params.mapping in (ParameterTreeMapping.Global, ParameterTreeMapping.PerBond):
            return params.tree
        if params.mapping is ParameterTreeMapping.PerParticle:
            return tree_map(lambda p: combinator(p[:, None, ...], p[None, :, ...]), params.tree)
        raise ValueError("smap.pair: without species, ParameterTree mapping must be Global, "
                         f"PerBond or PerParticle; got {params.mapping}.")
    return params


def _kwargs_to_parameters(species: Any, kwargs: dict, combinators: dict) -> dict:
    out = {}
    for k, v in kwargs.items():
        if species is None:
            out[k] = _get_matrix_parameters(v, combinators.get(k, _mean))
        else:
            if k in combinators:
                raise ValueError("smap.pair: a custom combinator cannot be used with species.")
            out[k] = _get_species_parameters(v, species)
    return out


def _diagonal_mask(X: Array) -> Array:
    if X.shape[0] != X.shape[1] or X.ndim > 3:
        raise ValueError(f"smap: diagonal mask needs a square rank-2/3 array; got {X.shape}.")
    N = X.shape[0]
    X = jnp.nan_to_num(X)
    mask = f32(1.0) - jnp.eye(N, dtype=X.dtype)
    if X.ndim == 3:
        mask = jnp.reshape(mask, (N, N, 1))
    return mask * X


def _check_species(species: Any, what: str, n: int | None = None) -> None:
    if not jnp.issubdtype(jnp.asarray(species).dtype, jnp.integer):
        raise ValueError(f"{what}: species must be an integer array; "
                         f"got dtype {jnp.asarray(species).dtype}.")
    if n is not None and jnp.asarray(species).shape != (n,):
        raise ValueError(f"{what}: species must have shape ({n},) to match the positions; "
                         f"got {jnp.asarray(species).shape}.")


def pair(fn: Callable[..., Array], displacement_or_metric: Callable, species: Any = None,
         reduce_axis: tuple[int, ...] | None = None, keepdims: bool = False,
         ignore_unused_parameters: bool = False, **kwargs: Any) -> Callable[..., Array]:
    """Sum ``fn(dr, **params)`` over all distinct pairs (each pair counted once).

    ``species``: ``None``, a fixed integer array (loop over species pairs), or an int (the
    number of species; the species array is then passed per call as ``species=``).
    ``reduce_axis=(1,)`` gives per-particle energies.

    Example:
        >>> metric = space.metric(space.free()[0])
        >>> E = pair(lambda dr: dr ** 2, metric)
        >>> float(E(jnp.array([[0.0, 0.0], [1.0, 0.0]])))
        1.0
    """
    kwargs, combinators = _split_params_and_combinators(kwargs)
    merge = partial(util.merge_dicts, ignore_unused_parameters=ignore_unused_parameters)

    if species is None:
        def fn_mapped(R: Array, **dynamic_kwargs: Any) -> Array:
            d = space.map_product(partial(displacement_or_metric, **dynamic_kwargs))
            params = _kwargs_to_parameters(None, merge(kwargs, dynamic_kwargs), combinators)
            dr = d(R, R)
            return high_precision_sum(_diagonal_mask(fn(dr, **params)), axis=reduce_axis,
                                      keepdims=keepdims) * f32(0.5)
        return fn_mapped

    if util.is_array(species):
        species = onp.asarray(species)
        _check_species(species, "smap.pair")
        n_species = int(onp.max(species)) + 1
        if reduce_axis is not None or keepdims:
            raise ValueError("smap.pair: reduce_axis/keepdims are not supported with a fixed "
                             "species array; pass species as an int instead.")

        def fn_mapped(R: Array, **dynamic_kwargs: Any) -> Array:
            if R.shape[0] != species.shape[0]:
                raise ValueError(f"smap.pair: species has {species.shape[0]} entries but R has "
                                 f"{R.shape[0]} particles.")
            U = f32(0.0)
            d = space.map_product(partial(displacement_or_metric, **dynamic_kwargs))
            merged = merge(kwargs, dynamic_kwargs)
            for i in range(n_species):
                for j in range(i, n_species):
                    params = _kwargs_to_parameters((i, j), merged, combinators)
                    dr = d(R[onp.where(species == i)[0]], R[onp.where(species == j)[0]])
                    if i == j:
                        U = U + f32(0.5) * high_precision_sum(_diagonal_mask(fn(dr, **params)))
                    else:
                        U = U + high_precision_sum(fn(dr, **params))
            return U
        return fn_mapped

    if isinstance(species, int):
        n_species = species

        def fn_mapped(R: Array, species: Array, **dynamic_kwargs: Any) -> Array:
            _check_species(species, "smap.pair", R.shape[0])
            U = f32(0.0)
            N = R.shape[0]
            d = space.map_product(partial(displacement_or_metric, **dynamic_kwargs))
            merged = merge(kwargs, dynamic_kwargs)
            dr = d(R, R)
            for i in range(n_species):
                for j in range(n_species):
                    params = _kwargs_to_parameters((i, j), merged, combinators)
                    a = jnp.array(jnp.reshape(species == i, (N,)), dtype=R.dtype)
                    b = jnp.array(jnp.reshape(species == j, (N,)), dtype=R.dtype)
                    mask = a[:, None] * b[None, :]
                    if i == j:
                        mask = mask * _diagonal_mask(mask)
                    U = U + high_precision_sum(mask * fn(dr, **params), axis=reduce_axis,
                                               keepdims=keepdims)
            return U / f32(2.0)
        return fn_mapped

    raise ValueError(f"smap.pair: species must be None, an integer array or an int; got {species!r}.")


# ----------------------------------------------------------------------------- neighbor lists

def _neighborhood_matrix_params(fmt: Any, idx: Array, params: Any, combinator: Callable) -> Any:
    if util.is_array(params):
        if params.ndim == 1:
            if partition.is_sparse(fmt):
                return space.map_bond(combinator)(params[idx[0]], params[idx[1]])
            return combinator(params[:, None], params[idx])
        if params.ndim == 2:
            if partition.is_sparse(fmt):
                return params[idx[0], idx[1]]
            return params[jnp.arange(idx.shape[0], dtype=jnp.int32)[:, None], idx]
        if params.ndim == 0:
            return params
        raise ValueError("smap.pair_neighbor_list: parameters must be scalars, vectors or "
                         f"matrices; got shape {params.shape}.")
    if isinstance(params, ParameterTree):
        if params.mapping is ParameterTreeMapping.Global:
            return params.tree
        if params.mapping is ParameterTreeMapping.PerParticle:
            if partition.is_sparse(fmt):
                c = space.map_bond(combinator)
                return tree_map(lambda p: c(p[idx[0]], p[idx[1]]), params.tree)
            c = space.map_neighbor(combinator)
            return tree_map(lambda p: c(p, p[idx]), params.tree)
        if params.mapping is ParameterTreeMapping.PerBond:
            if partition.is_sparse(fmt):
                return tree_map(lambda p: p[idx[0], idx[1]], params.tree)
            rows = jnp.arange(idx.shape[0], dtype=jnp.int32)[:, None]
            return tree_map(lambda p: p[rows, idx], params.tree)
        raise ValueError("smap.pair_neighbor_list: without species, ParameterTree mapping must be "
                         f"Global, PerParticle or PerBond; got {params.mapping}.")
    return params


def _neighborhood_species_params(fmt: Any, idx: Array, species: Array, params: Any) -> Any:
    def lookup(p: Array) -> Array:
        if partition.is_sparse(fmt):
            return p[species[idx[0]], species[idx[1]]]
        return p[species[:, None], species[idx]]
    if util.is_array(params):
        if params.ndim == 2:
            return lookup(params)
        if params.ndim == 0:
            return params
        raise ValueError("smap.pair_neighbor_list: with species, parameters must be scalars or "
                         f"[n_species, n_species] matrices; got shape {params.shape}.")
    if isinstance(params, ParameterTree):
        if params.mapping is ParameterTreeMapping.Global:
            return params.tree
        if params.mapping is ParameterTreeMapping.PerSpecies:
            return tree_map(lookup, params.tree)
        raise ValueError("smap.pair_neighbor_list: with species, ParameterTree mapping must be "
                         f"Global or PerSpecies; got {params.mapping}.")
    return params


def _neighborhood_kwargs_to_params(fmt: Any, idx: Array, species: Any, kwargs: dict,
                                   combinators: dict) -> dict:
    out = {}
    for k, v in kwargs.items():
        if species is None or (util.is_array(v) and v.ndim == 1):
            out[k] = _neighborhood_matrix_params(fmt, idx, v, combinators.get(k, _mean))
        else:
            if k in combinators:
                raise ValueError("smap.pair_neighbor_list: a custom combinator cannot be used "
                                 "with species.")
            out[k] = _neighborhood_species_params(fmt, idx, species, v)
    return out


def pair_neighbor_list(fn: Callable[..., Array], displacement_or_metric: Callable,
                       species: Array | None = None, reduce_axis: tuple[int, ...] | None = None,
                       ignore_unused_parameters: bool = False,
                       **kwargs: Any) -> Callable[..., Array]:
    """Sum ``fn(dr, **params)`` over the pairs of a neighbor list: ``energy(R, neighbor)``.

    An overflowed neighbor list raises :class:`~fluxion_md.partition.NeighborListOverflowError`
    outside ``jit`` and makes the result NaN inside it (never silently wrong).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, partition, smap, space
        >>> displacement, shift = space.periodic(4.0)
        >>> R = jnp.array([[0.5, 0.5], [1.3, 0.5], [3.0, 3.0]])
        >>> metric = space.metric(displacement)
        >>> neighbor_fn = partition.neighbor_list(displacement, 4.0, r_cutoff=1.5)
        >>> nbrs = neighbor_fn.allocate(R)
        >>> energy_fn = smap.pair_neighbor_list(energy.soft_sphere, metric)
        >>> round(float(energy_fn(R, nbrs)), 4)
        0.02
        >>> round(float(smap.pair(energy.soft_sphere, metric)(R)), 4)   # the same, over all pairs
        0.02
    """
    kwargs, combinators = _split_params_and_combinators(kwargs)
    merge = partial(util.merge_dicts, ignore_unused_parameters=ignore_unused_parameters)
    if species is not None:
        _check_species(species, "smap.pair_neighbor_list")

    def fn_mapped(R: Array, neighbor: partition.NeighborList, **dynamic_kwargs: Any) -> Array:
        guard = partition.check_neighbor_list(neighbor, "smap.pair_neighbor_list")
        d = partial(displacement_or_metric, **dynamic_kwargs)
        _species = dynamic_kwargs.get("species", species)
        if _species is not None and jnp.asarray(_species).shape != (R.shape[0],):
            raise ValueError(f"smap.pair_neighbor_list: species must have shape ({R.shape[0]},) "
                             f"to match R; got {jnp.asarray(_species).shape}.")
        if _species is not None:
            _species = jnp.asarray(_species)
        normalization = 2.0
        N = R.shape[0]
        if partition.is_sparse(neighbor.format):
            dR = space.map_bond(d)(R[neighbor.idx[0]], R[neighbor.idx[1]])
            mask = neighbor.idx[0] < N
            if neighbor.format is partition.OrderedSparse:
                normalization = 1.0
        else:
            dR = space.map_neighbor(d)(R, R[neighbor.idx])
            mask = neighbor.idx < N
        params = _neighborhood_kwargs_to_params(neighbor.format, neighbor.idx, _species,
                                                merge(kwargs, dynamic_kwargs), combinators)
        out = fn(dR, **params)
        if out.ndim > mask.ndim:
            mask = jnp.reshape(mask, mask.shape + (1,) * (out.ndim - mask.ndim))
        # Where, not a product: padded slots may hold NaN (as jax_md, whose XLA multiply by a
        # boolean mask selects).
        out = jnp.where(mask, out, 0)
        if guard is not None:
            out = out * guard.astype(out.dtype)
        if reduce_axis is not None and len(reduce_axis) == 0:
            return out / normalization
        if reduce_axis is None:
            return high_precision_sum(out) / normalization
        if 0 in reduce_axis and 1 not in reduce_axis:
            raise ValueError("smap.pair_neighbor_list: cannot reduce over axis 0 without axis 1.")
        if not partition.is_sparse(neighbor.format):
            return high_precision_sum(out, reduce_axis) / normalization
        rest = tuple(a - 1 for a in reduce_axis if a > 1)
        if 0 in reduce_axis:
            return high_precision_sum(out, (0,) + rest)
        if neighbor.format is partition.OrderedSparse:
            raise ValueError("smap.pair_neighbor_list: per-particle values need a Dense or Sparse "
                             "neighbor list, not OrderedSparse.")
        out = high_precision_sum(out, rest) if rest else out
        return jnp.zeros((N,) + out.shape[1:], out.dtype).at[neighbor.idx[0]].add(
            out, mode="drop") / normalization

    return fn_mapped


# ----------------------------------------------------------------------------- triplets

def triplet(fn: Callable[..., Array], displacement_or_metric: Callable, species: Any = None,
            reduce_axis: tuple[int, ...] | None = None, keepdims: bool = False,
            ignore_unused_parameters: bool = False, **kwargs: Any) -> Callable[..., Array]:
    """Sum ``fn(dR_ij, dR_ik, **params)`` over all triplets centred on each particle ``i``, halved.

    Example:
        >>> E = triplet(lambda a, b: jnp.dot(a, b), space.free()[0])
        >>> E(jnp.eye(3)).shape
        ()
    """
    merge = partial(util.merge_dicts, ignore_unused_parameters=ignore_unused_parameters)

    def by_dim(kw: dict, dims: Any) -> dict:
        dims = [dims] if isinstance(dims, int) else dims
        return {k: v for k, v in kw.items() if jnp.ndim(v) in dims}

    if species is None:
        def fn_mapped(R: Array, **dynamic_kwargs: Any) -> Array:
            d = space.map_product(partial(displacement_or_metric, **dynamic_kwargs))
            params = _kwargs_to_parameters(None, merge(kwargs, dynamic_kwargs), {})
            dR = d(R, R)
            compute = partial(fn, **params)
            out = vmap(vmap(vmap(compute, (None, 0)), (0, None)), 0)(dR, dR)
            return high_precision_sum(out, axis=reduce_axis, keepdims=keepdims) / 2.0
        return fn_mapped

    if util.is_array(species):
        species = jnp.asarray(species)

        def fn_mapped(R: Array, **dynamic_kwargs: Any) -> Array:
            if R.shape[0] != species.shape[0]:
                raise ValueError(f"smap.triplet: species has {species.shape[0]} entries but R "
                                 f"has {R.shape[0]} particles.")
            d = partial(displacement_or_metric, **dynamic_kwargs)
            N = R.shape[0]
            idx = onp.tile(onp.arange(N), [N, 1])
            dR = vmap(vmap(d, (None, 0)))(R, R[idx])
            merged = merge(kwargs, dynamic_kwargs)
            mapped_args = {k: v[species] for k, v in by_dim(merged, [3]).items()}
            unmapped_args = by_dim(merged, [0])

            def compute(dR_i: Array, mapped: dict) -> Array:
                paired = {**by_dim(mapped, 2), **by_dim(unmapped_args, 2)}
                unpaired = {**by_dim(mapped, 0), **by_dim(unmapped_args, 0)}
                neigh = _neighborhood_kwargs_to_params(partition.Dense, idx, species, paired, {})

                def one(a: Array, b: Array, p: dict) -> Array:
                    return fn(a, b, **unpaired, **p)
                return vmap(vmap(one, (None, 0, 0)), (0, None, 0))(dR_i, dR_i, neigh)
            out = vmap(compute)(dR, mapped_args)
            return high_precision_sum(out, axis=reduce_axis, keepdims=keepdims) / 2.0
        return fn_mapped

    raise ValueError(f"smap.triplet: species must be None or an integer array; got {species!r}.")

"""Helpers of the learned potentials (mirrors ``jax_md._nn.util``): the Linen-style layers the
NequIP model is built from (:class:`MLP`, :class:`BesselEmbedding`, :class:`BetaSwish`, named
nonlinearities), the sparse-graph featurizer, the per-dataset energy shift/scale, a small
:class:`ConfigDict`, and the conversion of a Haiku-era graph-network checkpoint onto the module
parameter tree.

The layers are :class:`fluxion_nn.bridge.Module` subclasses
(:class:`~fluxion_md._nn._linen.LinenModule`), so they have Linen's ``init``/``apply`` over
``{'params': {...}}`` trees with Linen's parameter names (``MLP_0/Dense_1/kernel``) and draw
the same parameters from the same key, as jax_md's ``flax.linen`` modules do.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, Callable

import fluxion
import fluxion.numpy as jnp
from fluxion import lax, vmap
from fluxion_md import partition
from fluxion_md._cutoff import multiplicative_isotropic_cutoff
from fluxion_md._nn._linen import LinenModule
from fluxion_md.util import Array, f32
from fluxion_nn import bridge

__all__ = ["ConfigDict", "BetaSwish", "NONLINEARITY", "get_nonlinearity_by_name", "Dense", "MLP",
           "mlp", "neighbor_list_featurizer", "bessel", "BesselEmbedding", "DATASET_SHIFT_SCALE",
           "get_shift_and_scale", "convert_checkpoint_to_params"]

FeaturizerFn = Callable[..., Any]
UnaryFn = Callable[[Array], Array]


def normal(var: float) -> Callable:
    """jax_md's radial-MLP kernel initializer: a (non-truncated) normal of variance
    ``var / fan_in``.

    Example:
        >>> normal(1.0)(fluxion.random.PRNGKey(0), (3, 2)).shape
        (3, 2)
    """
    return fluxion.nn.initializers.variance_scaling(var, "fan_in", "normal")


class ConfigDict(dict):
    """A dict whose keys read and write as attributes (the part of ``ml_collections.ConfigDict``
    jax_md's model configs use); nested dicts become ConfigDicts. Reading a missing attribute
    raises AttributeError, so ``hasattr(cfg, 'scale')`` asks whether the key is set.

    Example:
        >>> cfg = ConfigDict({"r_max": 5.0, "nonlinearities": {"e": "raw_swish"}})
        >>> cfg.r_max, cfg.nonlinearities.e, cfg.get("shift", 0.0)
        (5.0, 'raw_swish', 0.0)
    """

    def __init__(self, initial: Mapping | None = None, **kwargs: Any) -> None:
        super().__init__()
        for key, value in dict(initial or {}, **kwargs).items():
            self[key] = value

    def __setitem__(self, key: str, value: Any) -> None:
        if isinstance(value, Mapping) and not isinstance(value, ConfigDict):
            value = ConfigDict(value)
        super().__setitem__(key, value)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"ConfigDict has no field {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self[name]
        except KeyError:
            raise AttributeError(f"ConfigDict has no field {name!r}") from None


# ---- nonlinearities --------------------------------------------------------------------------


class BetaSwish(LinenModule):
    """``x * sigmoid(beta * x)`` with a learned ``beta`` per feature (parameter ``'Beta'``,
    initialised to ones), as ``jax_md._nn.util.BetaSwish``.

    Example:
        >>> x = jnp.ones((2, 3))
        >>> variables = BetaSwish().init(fluxion.random.PRNGKey(0), x)
        >>> variables["params"]["Beta"].shape
        (3,)
    """

    @bridge.compact
    def __call__(self, x: Array) -> Array:
        beta = self.param("Beta", fluxion.nn.initializers.ones, (x.shape[-1],))
        return x * fluxion.nn.sigmoid(beta * x)


NONLINEARITY: dict[str, UnaryFn] = {
    "none": lambda x: x,
    "relu": fluxion.nn.relu,
    "swish": lambda x: BetaSwish()(x),
    "raw_swish": fluxion.nn.swish,
    "tanh": jnp.tanh,
    "sigmoid": fluxion.nn.sigmoid,
    "silu": fluxion.nn.silu,
}


def get_nonlinearity_by_name(name: str) -> UnaryFn:
    """The activation called ``name`` in :data:`NONLINEARITY` (``'raw_swish'`` is
    ``x * sigmoid(x)``; ``'swish'`` is the learned :class:`BetaSwish`).

    Example:
        >>> float(get_nonlinearity_by_name("relu")(jnp.float32(-1.0)))
        0.0
    """
    if name in NONLINEARITY:
        return NONLINEARITY[name]
    raise ValueError(f'Nonlinearity "{name}" not found.')


# ---- fully connected networks ----------------------------------------------------------------


class Dense(LinenModule):
    """``x @ kernel + bias`` over the last axis of ``x``: Linen's ``Dense`` (parameters
    ``'kernel'`` of shape ``(in, features)`` and ``'bias'`` of shape ``(features,)``).

    Example:
        >>> variables = Dense(4).init(fluxion.random.PRNGKey(0), jnp.ones((2, 3)))
        >>> variables["params"]["kernel"].shape, variables["params"]["bias"].shape
        ((3, 4), (4,))
    """

    features: int
    use_bias: bool = True
    kernel_init: Callable = fluxion.nn.initializers.lecun_normal()
    bias_init: Callable = fluxion.nn.initializers.zeros

    @bridge.compact
    def __call__(self, x: Array) -> Array:
        kernel = self.param("kernel", self.kernel_init, (jnp.shape(x)[-1], self.features))
        y = lax.dot_general(x, kernel[...], (((jnp.ndim(x) - 1,), (0,)), ((), ())))
        if self.use_bias:
            y = y + self.param("bias", self.bias_init, (self.features,))[...]
        return y


class MLP(LinenModule):
    """Dense layers of ``features`` widths with the nonlinearity ``nonlinearity`` between them
    (none after the last), as ``jax_md._nn.util.MLP``: hidden kernels are drawn with variance
    ``scalar_mlp_std / fan_in``, the last with ``1 / fan_in``. With ``use_bias=False`` and a
    nonlinearity that maps 0 to 0, ``MLP(0) == 0`` (NequIP's radial network).

    Example:
        >>> fc = MLP((8, 1), "raw_swish", use_bias=False, scalar_mlp_std=4.0)
        >>> variables = fc.init(fluxion.random.PRNGKey(0), jnp.zeros((3,)))
        >>> sorted(variables["params"])
        ['Dense_0', 'Dense_1']
    """

    features: tuple[int, ...]
    nonlinearity: str
    use_bias: bool = True
    scalar_mlp_std: float | None = None

    @bridge.compact
    def __call__(self, x: Array) -> Array:
        phi = get_nonlinearity_by_name(self.nonlinearity)
        for width in self.features[:-1]:
            x = phi(Dense(width, use_bias=self.use_bias, kernel_init=normal(self.scalar_mlp_std))(x))
        return Dense(self.features[-1], use_bias=self.use_bias, kernel_init=normal(1.0))(x)


def mlp(hidden_features: int | tuple[int, ...], nonlinearity: str,
        **kwargs: Any) -> Callable[..., Array]:
    """A function of any number of arrays (or trees of them) that concatenates their leaves on
    the last axis and applies an :class:`MLP` (built inside the calling compact module), as
    ``jax_md._nn.util.mlp`` (with jraph's ``concatenated_args``).

    Example:
        >>> fn = mlp(4, "relu")   # call fn(a, b) inside a @bridge.compact method
    """
    if isinstance(hidden_features, int):
        hidden_features = (hidden_features,)

    def mlp_fn(*args: Any) -> Array:
        leaves = fluxion.tree_util.tree_leaves(args)
        return MLP(tuple(hidden_features), nonlinearity, **kwargs)(
            jnp.concatenate(leaves, axis=-1))

    return mlp_fn


# ---- featurizers -----------------------------------------------------------------------------


def neighbor_list_featurizer(displacement_fn: Callable) -> Callable:
    """A function ``featurize(atoms, position, neighbor, **kwargs)`` giving the sparse neighbor
    list as a jraph-layout graph (:func:`fluxion_md.partition.to_jraph`) whose ``nodes`` are
    ``atoms`` and whose edges are the displacements ``displacement_fn(R[receiver], R[sender])``
    (empty slots get 1 in each component), as ``jax_md._nn.util.neighbor_list_featurizer``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import partition, space
        >>> from fluxion_md._nn.util import neighbor_list_featurizer
        >>> R = jnp.array([[1.0, 1.0], [2.0, 1.0], [1.0, 2.2]])
        >>> displacement, _ = space.periodic(6.0)
        >>> nbrs = partition.neighbor_list(displacement, 6.0, 1.5, format=partition.Sparse).allocate(R)
        >>> graph = neighbor_list_featurizer(displacement)(jnp.eye(3), R, nbrs)
        >>> graph.nodes.shape, graph.edges.shape, graph.n_edge.tolist()
        ((4, 3), (5, 2), [4, 1])
        >>> [[round(float(v), 4) for v in edge] for edge in graph.edges[:4]]
        [[0.0, 1.2], [1.0, 0.0], [-1.0, 0.0], [0.0, -1.2]]
    """
    def featurize(atoms: Array, position: Array, neighbor: partition.NeighborList,
                  **kwargs: Any) -> partition.GraphsTuple:
        graph = partition.to_jraph(neighbor, nodes=atoms)
        mask = partition.neighbor_list_mask(neighbor, True)
        d = vmap(partial(displacement_fn, **kwargs))
        dR = d(position[graph.receivers], position[graph.senders])
        return graph._replace(edges=jnp.where(mask[:, None], dR, 1))

    return featurize


# ---- Bessel radial basis ---------------------------------------------------------------------


def bessel(r_c: Any, frequencies: Array, r: Array) -> Array:
    """The radial Bessel basis ``2 / r_c * sin(f * r / r_c) / r`` (0 at ``r <= 1e-5``), as used
    by NequIP and SchNet.

    Example:
        >>> bessel(5.0, jnp.arange(1, 4) * jnp.pi, jnp.float32(1.0)).shape
        (3,)
    """
    rp = jnp.where(r > f32(1e-5), r, f32(1000.0))
    b = 2 / r_c * jnp.sin(frequencies * rp / r_c) / rp
    return jnp.where(r > f32(1e-5), b, 0)


class BesselEmbedding(LinenModule):
    """Each distance as ``count`` Bessel functions (learned frequencies ``'frequencies'``,
    initialised to ``pi * (1..count)``), smoothly cut off between ``inner_cutoff`` and
    ``outer_cutoff`` (zero beyond), as ``jax_md._nn.util.BesselEmbedding``.

    Example:
        >>> emb = BesselEmbedding(count=8, inner_cutoff=3.5, outer_cutoff=4.0)
        >>> rs = jnp.array([1.0, 4.1])
        >>> out = emb.apply(emb.init(fluxion.random.PRNGKey(0), rs), rs)
        >>> out.shape, float(abs(out[1]).max())
        ((2, 8), 0.0)
    """

    count: int
    inner_cutoff: float
    outer_cutoff: float

    @bridge.compact
    def __call__(self, rs: Array) -> Array:
        def init_fn(key: Any, shape: tuple[int, ...]) -> Array:
            del key
            if len(shape) != 1:
                raise ValueError(f"BesselEmbedding: frequencies must be a vector, got shape {shape}")
            return jnp.arange(1, shape[0] + 1) * jnp.pi

        frequencies = self.param("frequencies", init_fn, (self.count,))[...]
        bessel_fn = partial(bessel, self.outer_cutoff, frequencies)
        cut = multiplicative_isotropic_cutoff(bessel_fn, self.inner_cutoff,
                                                     self.outer_cutoff)
        return vmap(cut)(rs)


# ---- energy shift and scale ------------------------------------------------------------------

# (shift, scale) of the per-atom energy of the datasets a config can name as `train_dataset`
DATASET_SHIFT_SCALE = {"harder_silicon": (2.2548, 0.8825)}


def get_shift_and_scale(cfg: Any) -> tuple[float, float]:
    """``(cfg.shift, cfg.scale)`` when the config sets both, else the values of its first
    ``train_dataset`` in :data:`DATASET_SHIFT_SCALE`, as ``jax_md._nn.util.get_shift_and_scale``.

    Example:
        >>> get_shift_and_scale(ConfigDict(train_dataset=["harder_silicon"]))
        (2.2548, 0.8825)
    """
    if hasattr(cfg, "scale") and hasattr(cfg, "shift"):
        return cfg.shift, cfg.scale
    if hasattr(cfg, "train_dataset"):
        return DATASET_SHIFT_SCALE[cfg.train_dataset[0]]
    raise ValueError("get_shift_and_scale: the config sets neither shift and scale nor a "
                     "train_dataset")


# ---- Haiku-era checkpoint conversion ---------------------------------------------------------

# Haiku module names of the old checkpoints -> the attribute names of fluxion_md.nn's modules.
_HAIKU_TO_MODULE = {"linear": "layers", "EdgeFunction": "edge_fns", "NodeFunction": "node_fns",
                    "GlobalFunction": "global_fns"}
_LEAF_NAMES = {"w": "kernel", "b": "bias"}


def _segment(segment: str) -> str:
    for old, new in _HAIKU_TO_MODULE.items():
        if segment == old:
            return f"{new}_0"
        rest = segment[len(old) + 1:]
        if segment.startswith(old + "_") and rest.isdigit():
            return f"{new}_{rest}"
    return segment


def _module_path(module_name: str) -> tuple[str, ...]:
    prefix = "Energy/~/"
    if not module_name.startswith(prefix):
        raise ValueError(f"Unexpected checkpoint module path: {module_name}")
    return tuple(_segment(s) for s in module_name[len(prefix):].replace("/~/", "/").split("/"))


def _flatten(tree: Mapping, prefix: tuple = ()) -> dict[tuple, Any]:
    flat: dict[tuple, Any] = {}
    for key, value in tree.items():
        if isinstance(value, Mapping):
            flat.update(_flatten(value, prefix + (key,)))
        else:
            flat[prefix + (key,)] = value
    return flat


def convert_checkpoint_to_params(checkpoint_params: Mapping, template_params: Mapping) -> dict:
    """A Haiku-era checkpoint (``{'Energy/~/GraphNetEncoder/~/linear_1': {'w': ..., 'b': ...}}``)
    as a nested dict shaped like ``template_params`` (``linear_k`` -> ``layers_k``, ``w`` ->
    ``kernel``, ``b`` -> ``bias``, ``EdgeFunction_k`` -> ``edge_fns_k``, ...), each leaf cast to
    the template leaf's dtype, as ``jax_md._nn.util.convert_checkpoint_to_params``.

    Raises ``ValueError`` when the keys differ (listing up to five of each) or a shape differs.

    Example:
        >>> import numpy as np
        >>> out = convert_checkpoint_to_params({"Energy/~/m": {"w": np.ones((2, 3)), "b": np.zeros(3)}},
        ...                                    {"m": {"kernel": np.empty((2, 3), np.float32),
        ...                                           "bias": np.empty(3, np.float32)}})
        >>> out["m"]["kernel"].dtype
        dtype('float32')
    """
    ckpt: dict[tuple, Any] = {}
    for module_name, leaves in checkpoint_params.items():
        base = _module_path(module_name)
        for leaf, value in leaves.items():
            ckpt[base + (_LEAF_NAMES.get(leaf, leaf),)] = value
    template = _flatten(template_params)
    missing = sorted(set(template) - set(ckpt))
    extra = sorted(set(ckpt) - set(template))
    if missing or extra:
        lines = ["Checkpoint and template parameter tree have different keys."]
        if missing:
            lines.append(f"Missing in checkpoint: {missing[:5]}")
        if extra:
            lines.append(f"Extra in checkpoint: {extra[:5]}")
        raise ValueError("\n".join(lines))
    out: dict = {}
    for path, leaf in template.items():
        value = ckpt[path]
        if value.shape != leaf.shape:
            raise ValueError(f"Shape mismatch at {path}: {value.shape} vs {leaf.shape}")
        cursor = out
        for key in path[:-1]:
            cursor = cursor.setdefault(key, {})
        cursor[path[-1]] = jnp.asarray(value, dtype=leaf.dtype)
    return out

"""GaLore (Zhao et al., 2024): run a base optimizer on low-rank projections of the gradients
of matrix-shaped parameters; the projector (top singular vectors of the gradient) is refreshed
every ``update_proj_gap`` steps. Same state layout and numbers as ``optax.contrib.galore``."""

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_optim import _base
from fluxion_optim._adaptive import scale_by_adam
from fluxion_optim._numerics import safe_int32_increment
from fluxion_optim._scaling import scale_by_learning_rate
from fluxion_optim.transforms import add_decayed_weights, chain

__all__ = ["GaLoreDimensionNumbers", "GaLoreState", "scale_by_galore", "galore"]


class GaLoreDimensionNumbers(NamedTuple):
    """Which axes of a parameter form the rows (``reduction_axis``) and the columns
    (``output_axis``) of the matrix GaLore projects.

    Example: ``GaLoreDimensionNumbers(reduction_axis=(0, 1), output_axis=2)`` for a
    ``[heads, d, out]`` weight.
    """

    reduction_axis: Sequence[int] | int = 0
    output_axis: Sequence[int] | int = 1


def _is_dim_nums_leaf(x: Any) -> bool:
    return x is None or isinstance(x, GaLoreDimensionNumbers)


def _axes(x: Any, axes: Sequence[int] | int) -> tuple[int, ...]:
    return (axes % x.ndim,) if isinstance(axes, int) else tuple(a % x.ndim for a in axes)


def _galore_reshape(x: Any, dim_nums: GaLoreDimensionNumbers) -> tuple[Callable, Callable]:
    """``(to_matrix, from_matrix)`` for ``x``'s shape under ``dim_nums``."""
    if x.ndim < 2:
        raise ValueError(f"GaLore requires tensors with rank >= 2, got shape {x.shape}")
    red, out = _axes(x, dim_nums.reduction_axis), _axes(x, dim_nums.output_axis)
    if set(red) & set(out):
        raise ValueError(f"Reduction axes {red} and output axes {out} must be disjoint. Got "
                         f"dim_nums={dim_nums} for shape {x.shape}")
    if len(set(red) | set(out)) != x.ndim:
        raise ValueError(f"All axes must be specified. Got reduction={red}, output={out} for "
                         f"tensor with {x.ndim} dimensions")
    perm = red + out
    inverse = tuple(sorted(range(x.ndim), key=lambda i: perm[i]))
    permuted_shape = tuple(x.shape[a] for a in perm)
    rows = math.prod(x.shape[a] for a in red)
    cols = math.prod(x.shape[a] for a in out)
    return (lambda y: y.transpose(perm).reshape(rows, cols),
            lambda y: y.reshape(permuted_shape).transpose(inverse))


class GaLoreState(NamedTuple):
    """``count``, the base optimizer's state (over the projected gradients) and the
    projectors (a ``[0, 0]`` placeholder for parameters GaLore leaves alone)."""

    count: Any
    base_optimizer_state: Any
    projector: Any


def scale_by_galore(rank: int = 128, update_proj_gap: int = 200, scale: float = 1.0,
                    base_optimizer: _base.GradientTransformation | None = None,
                    weight_dimension_numbers: Any = None) -> _base.GradientTransformation:
    """Project each matrix gradient to rank ``rank`` (left projector when rows >= columns,
    else right), run ``base_optimizer`` (default ``scale_by_adam``) there, project back and
    multiply by ``scale``. ``weight_dimension_numbers``: None (2-D parameters only), one
    ``GaLoreDimensionNumbers`` (every parameter of rank >= 2), a tree of them (None = leave
    alone) or a function of the parameters returning such a tree.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.contrib.scale_by_galore(rank=2)
        >>> s = opt.init({"w": jnp.ones((4, 3))})
        >>> u, s = opt.update({"w": jnp.ones((4, 3))}, s)
    """
    if base_optimizer is None:
        base_optimizer = scale_by_adam()
    if not isinstance(rank, int):
        raise TypeError(f"`rank` must be an int, got {type(rank)}")
    if rank <= 0:
        raise ValueError(f"`rank` must be positive, got {rank}")
    tree_map = fluxion.tree_util.tree_map

    def dim_nums_of(params: Any) -> Any:
        wdn = weight_dimension_numbers
        if wdn is None:
            return tree_map(lambda p: GaLoreDimensionNumbers() if p.ndim == 2 else None, params)
        if isinstance(wdn, GaLoreDimensionNumbers):
            return tree_map(lambda p: wdn if p.ndim >= 2 else None, params)
        return wdn(params) if callable(wdn) else wdn

    def layout(p: Any, dn: Any) -> tuple[int, int, int, bool]:
        rows, cols = _galore_reshape(p, dn)[0](p).shape
        return rows, cols, min(rank, rows, cols), rows >= cols

    def unzip(tree: Any, pairs: Any) -> tuple[Any, Any]:
        return fluxion.tree_util.tree_transpose(
            fluxion.tree_util.tree_structure(tree), fluxion.tree_util.tree_structure((0, 0)),
            pairs)

    def shapes(p: Any, dn: Any) -> tuple[Any, Any]:
        if dn is None:
            return jnp.zeros((0, 0), p.dtype), jnp.zeros_like(p)
        rows, cols, r, left = layout(p, dn)
        proj, proxy = ((rows, r), (r, cols)) if left else ((cols, r), (rows, r))
        return jnp.zeros(proj, p.dtype), jnp.zeros(proxy, p.dtype)

    def init_fn(params: Any) -> GaLoreState:
        if not fluxion.tree_util.tree_leaves(params):
            return GaLoreState(jnp.zeros([], jnp.int32), base_optimizer.init(params), params)
        projectors, proxies = unzip(params, tree_map(shapes, params, dim_nums_of(params),
                                                     is_leaf=_is_dim_nums_leaf))
        return GaLoreState(jnp.zeros([], jnp.int32), base_optimizer.init(proxies), projectors)

    def update_fn(updates: Any, state: GaLoreState, params: Any = None) -> tuple:
        del params
        refresh = state.count % update_proj_gap == 0
        dim_nums = dim_nums_of(updates)

        def to_low_rank(g: Any, projector: Any, dn: Any) -> tuple[Any, Any]:
            if dn is None:
                return g, projector
            g2 = _galore_reshape(g, dn)[0](g)
            _, _, r, left = layout(g, dn)

            def fresh() -> Any:
                u, _, vh = jnp.linalg.svd(g2.astype(jnp.float32), full_matrices=False)
                return (u[:, :r] if left else vh[:r, :].T).astype(g.dtype)

            projector = lax.cond(refresh, fresh, lambda: projector)
            return (projector.T @ g2 if left else g2 @ projector), projector

        def to_full(low: Any, projector: Any, g: Any, dn: Any) -> Any:
            if dn is None:
                return low
            _, back = _galore_reshape(g, dn)
            left = layout(g, dn)[3]
            full = back(projector @ low if left else low @ projector.T)
            return (scale * full).astype(g.dtype)

        low, projectors = unzip(updates, tree_map(to_low_rank, updates, state.projector,
                                                  dim_nums, is_leaf=_is_dim_nums_leaf))
        low, base_state = base_optimizer.update(low, state.base_optimizer_state, None)
        full = tree_map(to_full, low, projectors, updates, dim_nums, is_leaf=_is_dim_nums_leaf)
        return full, GaLoreState(safe_int32_increment(state.count), base_state, projectors)

    return _base.GradientTransformation(init_fn, update_fn)


def galore(learning_rate: _base.ScalarOrSchedule, rank: int = 128, update_proj_gap: int = 200,
           scale: float = 1.0, base_optimizer: _base.GradientTransformation | None = None,
           weight_decay: Any = 0.0, mask: Any = None,
           weight_dimension_numbers: Any = None) -> _base.GradientTransformation:
    """GaLore: ``scale_by_galore``, then decoupled weight decay and the learning rate.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.contrib.galore(1e-2, rank=2)
        >>> params = {"w": jnp.ones((4, 3)), "b": jnp.ones(3)}
        >>> u, s = opt.update(params, opt.init(params), params)
    """
    return chain(scale_by_galore(rank=rank, update_proj_gap=update_proj_gap, scale=scale,
                                 base_optimizer=base_optimizer,
                                 weight_dimension_numbers=weight_dimension_numbers),
                 add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))

"""Arithmetic on whole pytrees (``optax.tree.add``, ``norm``, ``update_moment`` ...)."""


import functools
import operator
from typing import Any

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_optim._numerics import abs_sq

__all__ = [
    "tree_add", "tree_add_scale", "tree_allclose", "tree_batch_shape", "tree_bias_correction",
    "tree_clip", "tree_conj", "tree_div", "tree_full_like", "tree_max", "tree_min", "tree_mul",
    "tree_norm", "tree_ones_like", "tree_real", "tree_scale", "tree_size", "tree_sub",
    "tree_sum", "tree_update_infinity_moment", "tree_update_moment",
    "tree_update_moment_per_elem_norm", "tree_vdot", "tree_where", "tree_zeros_like",
]

_map = fluxion.tree.map


def _is_none(x: Any) -> bool:
    return x is None


def tree_add(tree_x: Any, tree_y: Any, *other_trees: Any) -> Any:
    """Leafwise sum of two or more trees.

    Example:
        >>> import fluxion_optim as optax
        >>> optax.tree.add({"a": 1.0}, {"a": 2.0})
        {'a': 3.0}
    """
    return _map(lambda *leaves: sum(leaves), tree_x, tree_y, *other_trees)


def tree_sub(tree_x: Any, tree_y: Any) -> Any:
    """Leafwise ``x - y``.

    Example:
        >>> import fluxion_optim as optax
        >>> optax.tree.sub({"a": 1.0}, {"a": 2.0})
        {'a': -1.0}
    """
    return _map(operator.sub, tree_x, tree_y)


def tree_mul(tree_x: Any, tree_y: Any) -> Any:
    """Leafwise ``x * y``.

    Example:
        >>> import fluxion_optim as optax
        >>> optax.tree.mul({"a": 3.0}, {"a": 2.0})
        {'a': 6.0}
    """
    return _map(operator.mul, tree_x, tree_y)


def tree_div(tree_x: Any, tree_y: Any) -> Any:
    """Leafwise ``x / y``.

    Example:
        >>> import fluxion_optim as optax
        >>> optax.tree.div({"a": 3.0}, {"a": 2.0})
        {'a': 1.5}
    """
    return _map(operator.truediv, tree_x, tree_y)


def tree_scale(scalar: Any, tree: Any) -> Any:
    """Every leaf times ``scalar``.

    Example:
        >>> import fluxion_optim as optax
        >>> optax.tree.scale(2.0, {"a": 3.0})
        {'a': 6.0}
    """
    return _map(lambda x: scalar * x, tree)


def tree_add_scale(tree_x: Any, scalar: Any, tree_y: Any) -> Any:
    """``x + scalar * y`` leafwise (``None`` leaves of ``x`` stay ``None``).

    Example:
        >>> import fluxion_optim as optax
        >>> float(optax.tree.add_scale({"a": 1.0}, 2.0, {"a": 3.0})["a"])
        7.0
    """
    scalar = jnp.asarray(scalar)
    return _map(lambda x, y: None if x is None else x + scalar * y, tree_x, tree_y,
                is_leaf=_is_none)


def _vdot(a: Any, b: Any) -> Any:
    a, b = jnp.asarray(a), jnp.asarray(b)
    if a.shape != b.shape:
        raise ValueError(f"tree_vdot: leaves must have equal shapes, got {a.shape} and {b.shape}")
    if jnp.iscomplexobj(a):
        a = jnp.conj(a)
    return jnp.tensordot(a, b, a.ndim, precision=lax.Precision.HIGHEST)


def tree_vdot(tree_x: Any, tree_y: Any) -> Any:
    """The inner product ``sum(conj(x) * y)`` over all leaves.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> float(optax.tree.vdot({"a": jnp.ones(3)}, {"a": jnp.arange(3.0)}))
        3.0
    """
    return fluxion.tree.reduce(operator.add, _map(_vdot, tree_x, tree_y), 0)


def tree_sum(tree: Any, associative_reduction: bool = False) -> Any:
    """The sum of all elements of all leaves.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> float(optax.tree.sum({"a": jnp.ones(3), "b": 2.0}))
        5.0
    """
    sums = _map(jnp.sum, tree)
    if associative_reduction:
        return fluxion.tree.reduce_associative(operator.add, sums, identity=0)
    return fluxion.tree.reduce(operator.add, sums, 0)


def tree_max(tree: Any) -> Any:
    """The largest element over all leaves (``-inf`` for an empty tree).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> float(optax.tree.max({"a": jnp.arange(3.0), "b": -1.0}))
        2.0
    """
    maxes = _map(lambda x: None if jnp.size(x) == 0 else jnp.max(x), tree)
    return fluxion.tree.reduce(jnp.maximum, maxes, -float("inf"))


def tree_min(tree: Any) -> Any:
    """The smallest element over all leaves (``inf`` for an empty tree).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> float(optax.tree.min({"a": jnp.arange(3.0), "b": -1.0}))
        -1.0
    """
    mins = _map(lambda x: None if jnp.size(x) == 0 else jnp.min(x), tree)
    return fluxion.tree.reduce(jnp.minimum, mins, float("inf"))


def tree_size(tree: Any) -> int:
    """The total number of elements of all leaves.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.tree.size({"a": jnp.ones((2, 3)), "b": 1.0})
        7
    """
    return sum(int(jnp.size(leaf)) for leaf in fluxion.tree.leaves(tree))


def tree_conj(tree: Any) -> Any:
    """Leafwise complex conjugate.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.tree.conj({"a": jnp.array([1 + 2j])})["a"].tolist()
        [(1-2j)]
    """
    return _map(jnp.conj, tree)


def tree_real(tree: Any) -> Any:
    """Leafwise real part.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.tree.real({"a": jnp.array([1 + 2j])})["a"].tolist()
        [1.0]
    """
    return _map(jnp.real, tree)


def _square(leaf: Any) -> Any:
    return jnp.square(leaf.real) + jnp.square(leaf.imag)


def tree_norm(tree: Any, ord: Any = None, squared: bool = False) -> Any:
    """The norm of the tree seen as one flat vector (``ord`` None/2, 1 or ``inf``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> float(optax.tree.norm({"a": jnp.array([3.0]), "b": jnp.array([4.0])}))
        5.0
    """
    if ord is None or ord == 2:
        sqnorm = tree_sum(_map(_square, tree))
        return jnp.array(sqnorm if squared else jnp.sqrt(sqnorm))
    if ord == 1:
        ret = tree_sum(_map(jnp.abs, tree))
    elif ord == jnp.inf or ord in ("inf", "infinity"):
        ret = tree_max(_map(jnp.abs, tree))
    else:
        raise ValueError(f"tree_norm: unsupported `ord` {ord!r} (expected None, 1, 2 or inf)")
    return jnp.array(_square(ret) if squared else ret)


def tree_batch_shape(tree: Any, shape: tuple[int, ...] = ()) -> Any:
    """Broadcasts every leaf to ``(*shape, *leaf.shape)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.tree.batch_shape({"a": jnp.ones(2)}, (3,))["a"].shape
        (3, 2)
    """
    return _map(lambda x: jnp.broadcast_to(x, (*shape, *jnp.shape(x))), tree)


def tree_zeros_like(tree: Any, dtype: Any = None) -> Any:
    """Zeros shaped like every leaf (optionally of ``dtype``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.tree.zeros_like({"a": jnp.ones(2)})["a"].tolist()
        [0.0, 0.0]
    """
    return _map(lambda x: jnp.zeros_like(x, dtype=dtype), tree)


def tree_ones_like(tree: Any, dtype: Any = None) -> Any:
    """Ones shaped like every leaf (optionally of ``dtype``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.tree.ones_like({"a": jnp.zeros(2)})["a"].tolist()
        [1.0, 1.0]
    """
    return _map(lambda x: jnp.ones_like(x, dtype=dtype), tree)


def tree_full_like(tree: Any, fill_value: Any, dtype: Any = None) -> Any:
    """``fill_value`` shaped like every leaf (optionally of ``dtype``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.tree.full_like({"a": jnp.zeros(2)}, 3.0)["a"].tolist()
        [3.0, 3.0]
    """
    return _map(lambda x: jnp.full_like(x, fill_value, dtype=dtype), tree)


def tree_clip(tree: Any, min_value: Any = None, max_value: Any = None) -> Any:
    """Leafwise ``clip(x, min_value, max_value)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.tree.clip({"a": jnp.array([-2.0, 2.0])}, -1.0, 1.0)["a"].tolist()
        [-1.0, 1.0]
    """
    return _map(lambda g: jnp.clip(g, min_value, max_value), tree)


def tree_update_moment(updates: Any, moments: Any, decay: Any, order: int) -> Any:
    """The exponential moving average ``(1 - decay) * g**order + decay * m`` leafwise.

    Example:
        >>> import fluxion_optim as optax
        >>> optax.tree.update_moment({"a": 2.0}, {"a": 0.0}, 0.5, 2)
        {'a': 2.0}
    """
    return _map(lambda g, t: None if g is None else (1 - decay) * (g ** order) + decay * t,
                updates, moments, is_leaf=_is_none)


def tree_update_infinity_moment(updates: Any, moments: Any, decay: Any, eps: Any) -> Any:
    """The infinity-norm moment ``max(|g| + eps, decay * m)`` leafwise (Adamax).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> float(optax.tree.update_infinity_moment({"a": jnp.array(-2.0)}, {"a": 1.0}, 0.5, 0.0)["a"])
        2.0
    """
    return _map(lambda g, t: g if g is None else jnp.maximum(jnp.abs(g) + eps, decay * t),
                updates, moments, is_leaf=_is_none)


def tree_update_moment_per_elem_norm(updates: Any, moments: Any, decay: Any, order: int) -> Any:
    """Like :func:`tree_update_moment` with ``|g|**order`` (complex-safe).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> float(optax.tree.update_moment_per_elem_norm({"a": jnp.array(2.0)}, {"a": 0.0}, 0.5, 2)["a"])
        2.0
    """

    def orderth_norm(g):
        if jnp.isrealobj(g):
            return g ** order
        half = order / 2
        if float(half).is_integer():
            half = int(half)
        return abs_sq(g) ** half

    return _map(lambda g, t: None if g is None else (1 - decay) * orderth_norm(g) + decay * t,
                updates, moments, is_leaf=_is_none)


def tree_bias_correction(moment: Any, decay: Any, count: Any) -> Any:
    """Divides every leaf by ``1 - decay**count`` (Adam's bias correction).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> float(optax.tree.bias_correction({"a": jnp.array(0.5)}, 0.5, jnp.array(1))["a"])
        1.0
    """
    correction = 1 - decay ** jnp.asarray(count)
    return _map(lambda t: t / correction.astype(t.dtype), moment)


def tree_where(condition: Any, tree_x: Any, tree_y: Any) -> Any:
    """Leafwise ``where(condition, x, y)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> float(optax.tree.where(jnp.array(True), {"a": 1.0}, {"a": 2.0})["a"])
        1.0
    """
    return _map(lambda x, y: jnp.where(condition, x, y), tree_x, tree_y)


def tree_allclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08,
                  equal_nan: bool = False) -> Any:
    """Whether every pair of leaves is ``allclose``.

    Example:
        >>> import fluxion_optim as optax
        >>> bool(optax.tree.allclose({"a": 1.0}, {"a": 1.0 + 1e-9}))
        True
    """
    leaves = fluxion.tree.leaves(_map(
        lambda x, y: jnp.allclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan), a, b))
    return functools.reduce(operator.and_, leaves, True)

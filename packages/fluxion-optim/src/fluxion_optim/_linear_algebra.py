"""Linear algebra on pytrees: global norm, power iteration, inverse p-th roots."""


import functools
from collections.abc import Callable
from typing import Any

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_optim.tree_utils import tree_norm, tree_scale, tree_sub, tree_vdot

__all__ = ["global_norm", "matrix_inverse_pth_root", "nnls", "power_iteration"]


def global_norm(updates: Any) -> Any:
    """The L2 norm of all leaves together (the same as ``optax.tree.norm``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> float(optax.global_norm({"a": jnp.array([3.0]), "b": jnp.array([4.0])}))
        5.0
    """
    return tree_norm(updates)


def _normalize(x: Any) -> Any:
    return tree_scale(1.0 / tree_norm(x), x)


def _power_iteration_cond_fun(error_tolerance: Any, num_iters: Any, loop_vars: tuple) -> Any:
    # optax's private name (its tests call it): continue while the residual |A v - ev v| is
    # not below error_tolerance * ev and iterations remain
    vec, z, eig, i = loop_vars
    residual = tree_sub(z, tree_scale(eig, vec))
    converged = jnp.abs(tree_norm(residual) / eig) < error_tolerance
    return ~converged & (i < num_iters)


def power_iteration(matrix: Any | Callable[[Any], Any], *, v0: Any = None,
                    num_iters: Any = 100, error_tolerance: Any = 1e-6,
                    precision: Any = lax.Precision.HIGHEST,
                    key: Any = None) -> tuple[Any, Any]:
    """The dominant eigenvalue and eigenvector of a matrix (or of a matrix-vector product
    function, which then needs ``v0``) by power iteration.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> ev, vec = optax.power_iteration(jnp.diag(jnp.array([1.0, 3.0])))
        >>> round(float(ev), 4)
        3.0
    """
    if callable(matrix):
        mvp = matrix
        if v0 is None:
            raise ValueError("power_iteration: `v0` is required when `matrix` is a function")
    else:
        def mvp(v):
            return jnp.matmul(matrix, v, precision=precision)
        if v0 is None:
            key = fluxion.random.PRNGKey(0) if key is None else key
            v0 = fluxion.random.uniform(key, shape=matrix.shape[-1:], dtype=matrix.dtype,
                                        minval=-1.0, maxval=1.0)
    v0 = _normalize(v0)
    cond = functools.partial(_power_iteration_cond_fun, error_tolerance, num_iters)

    def body(state):
        _, z, _, i = state
        vec = _normalize(z)
        z = mvp(vec)
        return vec, z, tree_vdot(vec, z), i + 1

    _, z, eig, _ = lax.while_loop(cond, body, (v0, mvp(v0), jnp.asarray(0.0), jnp.asarray(0)))
    return eig, _normalize(z)


def matrix_inverse_pth_root(matrix: Any, p: Any, num_iters: Any = 100,
                            ridge_epsilon: Any = 1e-6, error_tolerance: Any = 1e-6,
                            precision: Any = lax.Precision.HIGHEST) -> tuple[Any, Any]:
    """``matrix ** (-1/p)`` for a symmetric positive definite matrix by coupled Newton
    iterations (Shampoo); returns ``(root, error)``. ``p`` is 1, 2, 4 or 8.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> root, err = optax.matrix_inverse_pth_root(jnp.diag(jnp.array([4.0, 16.0])), 2)
        >>> [round(v, 3) for v in jnp.diag(root).tolist()]
        [0.5, 0.25]
    """
    size = matrix.shape[0]
    alpha = jnp.asarray(-1.0 / p, jnp.float32)
    identity = jnp.eye(size, dtype=jnp.float32)
    max_ev, _ = power_iteration(matrix=matrix, num_iters=100, error_tolerance=1e-6,
                                precision=precision)
    ridge_epsilon = ridge_epsilon * jnp.maximum(max_ev, 1e-16)

    def mat_power(m, p):
        def pow2(x):
            return jnp.matmul(x, x, precision=precision)
        branches = [lambda x: x, pow2, lambda x: pow2(pow2(x)), lambda x: pow2(pow2(pow2(x)))]
        return lax.switch(jnp.asarray(jnp.round(jnp.log2(p)), jnp.int32), branches, m)

    def cond(state):
        i, _, _, _, error, run_step = state
        return jnp.logical_and(i < num_iters,
                               jnp.logical_and(error > error_tolerance, run_step))

    def body(state):
        i, mat_m, mat_h, _, error, _ = state
        mat_m_i = (1 - alpha) * identity + alpha * mat_m
        new_mat_m = jnp.matmul(mat_power(mat_m_i, p), mat_m, precision=precision)
        new_mat_h = jnp.matmul(mat_h, mat_m_i, precision=precision)
        new_error = jnp.max(jnp.abs(new_mat_m - identity))
        return i + 1, new_mat_m, new_mat_h, mat_h, new_error, new_error < error * 1.2

    if size == 1:
        return (matrix + ridge_epsilon) ** alpha, 0
    damped = matrix + ridge_epsilon * identity
    z = (1 + p) / (2 * jnp.linalg.norm(damped))
    new_mat_m_0 = damped * z
    new_error = jnp.max(jnp.abs(new_mat_m_0 - identity))
    new_mat_h_0 = identity * jnp.power(z, 1.0 / p)
    init = (0, new_mat_m_0, new_mat_h_0, new_mat_h_0, new_error, True)
    _, mat_m, mat_h, old_mat_h, error, convergence = lax.while_loop(cond, body, init)
    error = jnp.max(jnp.abs(mat_m - identity))
    is_converged = jnp.asarray(convergence, old_mat_h.dtype)
    root = is_converged * mat_h + (1 - is_converged) * old_mat_h
    return jnp.asarray(root, matrix.dtype), error


def _spectral_radius_upper_bound(matrix: Any) -> Any:
    fro = jnp.sqrt(jnp.sum(jnp.abs(matrix) ** 2))
    one = jnp.max(jnp.sum(jnp.abs(matrix), axis=0)) if matrix.size != 0 else 0
    return jnp.minimum(fro, one)


def nnls(A: Any, b: Any, iters: int, unroll: int | bool = 1, L: Any = None) -> Any:  # noqa: N803
    """Non-negative least squares ``argmin_{x >= 0} |A x - b|^2`` by ``iters`` steps of
    accelerated projected gradient descent (``L``: a Lipschitz bound of ``A^T A``, estimated if
    not given). ``b`` may have a second axis of right-hand sides.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> x = optax.nnls(jnp.eye(2), jnp.array([1.0, -1.0]), iters=50)
        >>> [round(v, 4) for v in x.tolist()]
        [1.0, 0.0]
    """
    if A.ndim != 2 or b.ndim not in (1, 2) or b.shape[0] != A.shape[0]:
        raise ValueError(f"nnls: expected A of shape (m, n) and b of shape (m,) or (m, k), got "
                         f"{A.shape} and {b.shape}")
    At = jnp.swapaxes(A, -1, -2)  # noqa: N806
    Q, q = At @ A, At @ b  # noqa: N806
    L = _spectral_radius_upper_bound(Q) if L is None else L  # noqa: N806
    L = jnp.where(L == 0, 1, L)  # noqa: N806

    def step(carry, _):
        x, p, c = carry
        cn = (1 + jnp.sqrt(1 + 4 * c ** 2)) / 2
        xn = (p - (Q @ p - q) / L).clip(0)
        return (xn, xn + (c - 1) / cn * (xn - x), cn), None

    x = jnp.zeros(A.shape[-1:] + b.shape[1:], dtype=b.dtype)
    (x, _, _), _ = lax.scan(step, (x, x, 0.0), None, length=iters, unroll=unroll)
    return x

"""Graph preconditioners and preconditioned FIRE (re-exported by ``fluxion_md.minimize``).

The preconditioner is the position-only "Exp" metric of Packwood et al., J. Chem. Phys. 144,
164109 (2016): atoms ``i != j`` closer than ``r_cut`` are joined with weight
``w_ij = exp(-A (r_ij / r_NN - 1))``, and ``P = mu (diag(sum_j w_ij + c_stab) - W)`` acts on every
Cartesian component alike. :func:`precon_fire_descent` is FIRE in velocity form, with the
preconditioned force ``P^-1 F`` as the direction, a cap ``max_move`` on each step's length and
ASE's Armijo rejection of uphill trial steps (ASE's ``PreconFIRE``).

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion_md import minimize, space
    >>> displacement, shift = space.free()
    >>> P, P_dot = minimize.c1_preconditioner(displacement, r_cut=1.5, r_NN=1.0)
    >>> R = jnp.array([[0.0, 0.0], [1.0, 0.0]])
    >>> round(float(P_dot(R, R, R)), 4)
    1.1
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import fluxion
import fluxion.numpy as jnp
from fluxion.scipy.sparse.linalg import cg
from fluxion.tree_util import tree_leaves, tree_map, tree_reduce
from fluxion_md import dataclasses, partition, quantity
from fluxion_md.util import Array

__all__ = ["exp_preconditioner", "c1_preconditioner", "estimate_exp_mu",
           "PreconFireDescentState", "precon_fire_descent"]

PyTree = Any


def tree_dot(X: PyTree, Y: PyTree) -> Array:
    """``sum(X * Y)`` over all leaves of two pytrees of one structure."""
    return tree_reduce(operator.add, tree_map(lambda x, y: jnp.sum(x * y), X, Y), 0.0)


def tree_max_abs(X: PyTree) -> Array:
    """The largest ``|x|`` over all leaves of ``X``."""
    return tree_reduce(lambda acc, x: jnp.maximum(acc, jnp.max(jnp.abs(x))), X, 0.0)


def _pair_distances(displacement_fn: Callable, R: Array, **kwargs: Any) -> Array:
    def row(Ra: Array) -> Array:
        return fluxion.vmap(lambda Rb: displacement_fn(Ra, Rb, **kwargs))(R)
    d = fluxion.vmap(row)(R)
    return jnp.sqrt(jnp.sum(d ** 2, axis=-1))


def _nearest_neighbor_distance(dist: Array) -> Array:
    # the largest over atoms of each atom's nearest-neighbour distance
    off = jnp.where(jnp.eye(dist.shape[0], dtype=bool), jnp.inf, dist)
    return jnp.max(jnp.min(off, axis=1))


def _edges(neighbor: Any, N: int) -> tuple[Array, Array]:
    if neighbor.format is partition.Dense:
        return jnp.repeat(jnp.arange(N), neighbor.idx.shape[1]), neighbor.idx.reshape(-1)
    return neighbor.idx[0], neighbor.idx[1]


def exp_preconditioner(displacement_fn: Callable, r_cut: Any = None, r_NN: Any = None,
                       A: float = 3.0, mu: float = 1.0, c_stab: float = 0.1,
                       solve_tol: float = 1e-5, maxiter: int | None = None,
                       reference_position: Array | None = None, solver: str = "cg"
                       ) -> tuple[Callable[..., Array], Callable[..., Array]]:
    """The Exp graph preconditioner: ``(preconditioner, preconditioner_dot)`` with
    ``preconditioner(R, F, **kw) = P^-1 F`` (conjugate gradients, or ``solver='dense'``) and
    ``preconditioner_dot(R, X, Y, **kw) = X . P Y``.

    ``r_NN`` defaults to the largest nearest-neighbour distance of the graph's positions,
    ``r_cut`` to ``2 r_NN``. The graph is built from ``reference_position``, the
    ``preconditioner_position=`` keyword, or ``R``; a ``neighbor=`` list (standard or
    multi-image) restricts it to the listed pairs.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import space
        >>> displacement, _ = space.free()
        >>> P, P_dot = exp_preconditioner(displacement, r_cut=1.5, r_NN=1.0, A=0.0)
        >>> R = jnp.array([[0.0, 0.0], [1.0, 0.0]])
        >>> round(float(P_dot(R, R, R)), 4)
        1.1
    """
    if solver not in ("cg", "dense"):
        raise ValueError(f"exp_preconditioner: solver must be 'cg' or 'dense'; got {solver!r}.")

    def graph_position(R: Array, kwargs: dict) -> Array:
        R_graph = kwargs.get("preconditioner_position", reference_position)
        return R if R_graph is None else R_graph

    def graph_weights(R: Array, **kwargs: Any) -> Array:
        R_graph = graph_position(R, kwargs)
        N, dtype = R_graph.shape[0], R_graph.dtype
        decay = jnp.asarray(A, dtype=dtype)
        if r_NN is None:
            nn_dist = _nearest_neighbor_distance(_pair_distances(displacement_fn, R_graph,
                                                                 **kwargs))
        else:
            nn_dist = jnp.asarray(r_NN, dtype=dtype)
        cut = 2.0 * nn_dist if r_cut is None else jnp.asarray(r_cut, dtype=dtype)

        neighbor = kwargs.get("neighbor")
        if neighbor is None:
            dist = _pair_distances(displacement_fn, R_graph, **kwargs)
            keep = (dist < cut) & ~jnp.eye(N, dtype=bool)
            return jnp.where(keep, jnp.exp(-decay * (dist / nn_dist - 1.0)), 0.0)

        receivers, senders = _edges(neighbor, N)
        valid = (receivers < N) & (senders < N)
        recv = jnp.clip(receivers, 0, N - 1)
        send = jnp.clip(senders, 0, N - 1)
        if hasattr(neighbor, "shifts"):  # a multi-image list: integer image shifts per edge
            shifts = neighbor.shifts
            if neighbor.format is partition.Dense:
                shifts = shifts.reshape((-1, R_graph.shape[-1]))
            dR = R_graph[send] + shifts.astype(dtype) @ neighbor.box.T - R_graph[recv]
        else:
            dR = fluxion.vmap(lambda a, b: displacement_fn(a, b, **kwargs))(R_graph[recv],
                                                                             R_graph[send])
        dist = jnp.sqrt(jnp.sum(dR ** 2, axis=-1))
        w = jnp.where(valid, jnp.exp(-decay * (dist / nn_dist - 1.0)), 0.0)
        W = jnp.zeros((N, N), dtype=dtype).at[recv, send].add(w)
        if neighbor.format is partition.OrderedSparse:  # each pair is listed once
            W = W.at[send, recv].add(w)
        return W

    def graph_matrix(R: Array, **kwargs: Any) -> Array:
        W = graph_weights(R, **kwargs)
        dtype = graph_position(R, kwargs).dtype
        m, c = jnp.asarray(mu, dtype=dtype), jnp.asarray(c_stab, dtype=dtype)
        return m * (jnp.diag(jnp.sum(W, axis=1) + c) - W)

    def graph_matvec(R: Array, X: Array, **kwargs: Any) -> Array:
        W = graph_weights(R, **kwargs)
        m, c = jnp.asarray(mu, dtype=X.dtype), jnp.asarray(c_stab, dtype=X.dtype)
        return m * ((jnp.sum(W, axis=1)[:, None] + c) * X - W @ X)

    def preconditioner(R: Array, F: Array, **kwargs: Any) -> Array:
        if solver == "dense":
            return jnp.linalg.solve(graph_matrix(R, **kwargs), F)
        return cg(lambda X: graph_matvec(R, X, **kwargs), F, tol=solve_tol, maxiter=maxiter)[0]

    def preconditioner_dot(R: Array, X: Array, Y: Array, **kwargs: Any) -> Array:
        return jnp.sum(X * graph_matvec(R, Y, **kwargs))

    return preconditioner, preconditioner_dot


def c1_preconditioner(displacement_fn: Callable, r_cut: Any = None, r_NN: Any = None,
                      mu: float = 1.0, c_stab: float = 0.1, solve_tol: float = 1e-5,
                      maxiter: int | None = None, reference_position: Array | None = None,
                      solver: str = "cg") -> tuple[Callable[..., Array], Callable[..., Array]]:
    """:func:`exp_preconditioner` with ``A = 0``: every neighbour pair has weight 1.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import space
        >>> displacement, _ = space.free()
        >>> P, _ = c1_preconditioner(displacement, r_cut=1.5, r_NN=1.0, solver="dense")
        >>> P(jnp.array([[0.0], [1.0]]), jnp.array([[0.1], [0.1]])).round(4).tolist()
        [[1.0], [1.0]]
    """
    return exp_preconditioner(displacement_fn, r_cut=r_cut, r_NN=r_NN, A=0.0, mu=mu,
                              c_stab=c_stab, solve_tol=solve_tol, maxiter=maxiter,
                              reference_position=reference_position, solver=solver)


def estimate_exp_mu(energy_or_force: Callable[..., Array], displacement_fn: Callable, R: Array,
                    r_cut: Any = None, r_NN: Any = None, A: float = 3.0, c_stab: float = 0.1,
                    min_mu: float = 1.0, **kwargs: Any) -> Array:
    """Estimate the Exp preconditioner's energy scale ``mu`` from a finite-difference curvature
    along a smooth probe displacement ``V`` (Packwood et al. 2016):
    ``(F(R) - F(R + V)) . V = mu V . P_1 V``, bounded below by ``min_mu``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import space
        >>> displacement, _ = space.free()
        >>> R = jnp.array([[0.0, 0.0], [1.0, 0.5]])
        >>> float(estimate_exp_mu(lambda R: jnp.sum(R ** 2), displacement, R, min_mu=0.0)) > 0
        True
    """
    force = quantity.canonicalize_force(energy_or_force)
    if r_NN is None:
        r_NN = _nearest_neighbor_distance(_pair_distances(displacement_fn, R, **kwargs))
    extent = jnp.max(R, axis=0) - jnp.min(R, axis=0)
    flat = extent == 0
    V = 1e-2 * r_NN * jnp.where(flat, 0.0, jnp.sin(R / jnp.where(flat, 1.0, extent)))
    _, unit_dot = exp_preconditioner(displacement_fn, r_cut=r_cut, r_NN=r_NN, A=A, mu=1.0,
                                     c_stab=c_stab)
    curvature = jnp.sum((force(R, **kwargs) - force(R + V, **kwargs)) * V)
    return jnp.maximum(curvature / unit_dot(R, V, V, **kwargs), min_mu)


@dataclasses.dataclass
class PreconFireDescentState:
    """State of :func:`precon_fire_descent`: positions, FIRE velocity, force, ``dt``, ``alpha``,
    ``n_pos``, whether the first step was taken, and the preconditioner's reference positions.
    ``momentum`` is the velocity (for code written for momentum states).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import minimize, space
        >>> _, shift = space.free()
        >>> init_fn, apply_fn = minimize.precon_fire_descent(lambda R: jnp.sum(R ** 2), shift)
        >>> state = init_fn(jnp.ones((2, 2)))
        >>> type(state).__name__, float(state.dt), int(state.n_pos)
        ('PreconFireDescentState', 0.1, 0)
        >>> float(jnp.sum(apply_fn(state).position ** 2)) < 4.0
        True
    """
    position: Array
    velocity: Array
    force: Array
    dt: Any
    alpha: Any
    n_pos: Any
    initialized: Any
    preconditioner_position: PyTree
    preconditioner_previous_position: PyTree
    preconditioner_previous_initialized: Any

    @property
    def momentum(self) -> Array:
        """The FIRE velocity."""
        return self.velocity


def _check_preconditioner(name: str, preconditioner: Any, preconditioner_dot: Any) -> None:
    if preconditioner is not None and preconditioner_dot is None:
        raise ValueError("preconditioner_dot must be supplied when preconditioner is supplied. "
                         f"({name})")


def _refresh_reference(R: PyTree, initialized: Array, ref: PyTree, prev: PyTree,
                       prev_init: Array, threshold: float | None) -> tuple[Any, Any, Any]:
    """ASE's rule for rebuilding the preconditioner: once any coordinate moved ``threshold`` from
    the positions recorded at the previous step, the graph is rebuilt at the current ones."""
    if threshold is None:
        return ref, prev, prev_init
    moved = tree_max_abs(tree_map(lambda r, r0: r - r0, R, prev))
    update = initialized & prev_init & (moved >= threshold)
    ref = tree_map(lambda r, r0: jnp.where(update, r, r0), R, ref)
    prev = tree_map(lambda r, r0: jnp.where(initialized, r, r0), R, prev)
    return ref, prev, prev_init | initialized


def _fire_choice(initialized: Array, power: Array, n_pos: Array, dt: Array, alpha: Array,
                 n_min: Any, f_inc: Any, dt_max: Any, f_alpha: Any, f_dec: Any,
                 alpha_start: Any) -> tuple[Array, Array, Array, Array]:
    """FIRE's control after the power ``F . V``: ``(keep_velocity, dt, alpha, n_pos)``. The
    first step keeps everything and starts from rest; positive power mixes and (after ``n_min``
    steps) grows ``dt``; otherwise the velocity is zeroed, ``dt`` shrinks, ``alpha`` resets."""
    positive = initialized & (power > 0)
    grow = n_pos > n_min
    zero = jnp.zeros((), jnp.int32)
    new_dt = jnp.where(positive, jnp.where(grow, jnp.min(jnp.array([dt * f_inc, dt_max])), dt),
                       dt * f_dec)
    new_alpha = jnp.where(positive, jnp.where(grow, alpha * f_alpha, alpha), alpha_start)
    new_n = jnp.where(positive, n_pos + 1, zero)
    first = ~initialized
    return (positive & initialized, jnp.where(first, dt, new_dt),
            jnp.where(first, alpha, new_alpha), jnp.where(first, n_pos, new_n))


def precon_fire_descent(energy_or_force: Callable[..., Array], shift_fn: Callable,
                        dt_start: float = 0.1, dt_max: float = 1.0, max_move: float = 0.2,
                        n_min: float = 5, f_inc: float = 1.1, f_dec: float = 0.5,
                        alpha_start: float = 0.1, f_alpha: float = 0.99, theta: float = 0.1,
                        armijo_tol: float = 0.0, use_armijo: bool = True,
                        preconditioner_update_threshold: float | None = None,
                        preconditioner: Callable[..., PyTree] | None = None,
                        preconditioner_dot: Callable[..., Array] | None = None
                        ) -> tuple[Callable[..., PreconFireDescentState], Callable[..., Any]]:
    """Preconditioned FIRE (ASE's ``PreconFIRE``): velocity-form FIRE along ``P^-1 F``, steps
    capped at length ``max_move``, trial steps failing the Armijo condition
    ``E(R + dt V) <= E(R) - theta dt V.F`` rejected (needs an energy function).

    Without a ``preconditioner`` the metric is the identity.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import space
        >>> _, shift = space.free()
        >>> init_fn, apply_fn = precon_fire_descent(lambda R: jnp.sum(R ** 2), shift)
        >>> state = apply_fn(apply_fn(init_fn(jnp.ones((2, 2)))))
        >>> bool(jnp.sum(state.position ** 2) < 4.0)
        True
    """
    _check_preconditioner("precon_fire_descent", preconditioner, preconditioner_dot)
    force = quantity.canonicalize_force(energy_or_force)

    def direction(R: PyTree, F: PyTree, **kw: Any) -> PyTree:
        return F if preconditioner is None else preconditioner(R, F, **kw)

    def metric(R: PyTree, X: PyTree, Y: PyTree, **kw: Any) -> Array:
        return tree_dot(X, Y) if preconditioner is None else preconditioner_dot(R, X, Y, **kw)

    def shift(R: PyTree, dR: PyTree, **kwargs: Any) -> PyTree:
        fns = tree_map(lambda r: shift_fn, R) if callable(shift_fn) else shift_fn
        return tree_map(lambda s, r, d: s(r, d, **kwargs), fns, R, dR)

    def init_fn(R: PyTree, **kwargs: Any) -> PreconFireDescentState:
        dtype = tree_leaves(R)[0].dtype
        return PreconFireDescentState(
            R, tree_map(jnp.zeros_like, R), force(R, **kwargs), jnp.asarray(dt_start, dtype),
            jnp.asarray(alpha_start, dtype), jnp.zeros((), jnp.int32), jnp.array(False), R, R,
            jnp.array(False))

    def apply_fn(state: PreconFireDescentState, **kwargs: Any) -> PreconFireDescentState:
        (R, V, F, dt, alpha, n_pos, initialized, ref, prev, prev_init) = dataclasses.unpack(state)
        ref, prev, prev_init = _refresh_reference(R, initialized, ref, prev, prev_init,
                                                  preconditioner_update_threshold)
        pkw = dict(kwargs, preconditioner_position=ref)
        G = direction(R, F, **pkw)
        V_norm = jnp.sqrt(metric(R, V, V, **pkw))
        F_norm = jnp.sqrt(tree_dot(F, G))
        keep, dt_bar, alpha_bar, n_bar = _fire_choice(
            initialized, tree_dot(F, V), n_pos, dt, alpha, n_min, f_inc, dt_max, f_alpha,
            f_dec, alpha_start)
        V_bar = tree_map(lambda v, g: jnp.where(
            keep, (1.0 - alpha) * v + alpha * (V_norm / F_norm) * g, jnp.zeros_like(v)), V, G)
        if use_armijo:
            V_try = tree_map(lambda v, g: v + dt * g, V, G)
            R_try = shift(R, tree_map(lambda v: dt * v, V_try), **kwargs)
            E, E_try = energy_or_force(R, **kwargs), energy_or_force(R_try, **kwargs)
            uphill = E_try > E - theta * dt * tree_dot(V_try, F) - armijo_tol
            fail = initialized & (uphill | ~jnp.isfinite(E_try))
            V_bar = tree_map(lambda v: jnp.where(fail, jnp.zeros_like(v), v), V_bar)
            dt_bar = jnp.where(fail, dt * f_dec, dt_bar)
            alpha_bar = jnp.where(fail, alpha_start, alpha_bar)
            n_bar = jnp.where(fail, jnp.zeros((), jnp.int32), n_bar)
        V_new = tree_map(lambda v, g: v + dt_bar * g, V_bar, G)
        step = tree_map(lambda v: dt_bar * v, V_new)
        length = jnp.sqrt(tree_dot(step, step))
        scale = jnp.where(length > max_move, max_move / length, 1.0)
        R_new = shift(R, tree_map(lambda d: scale * d, step), **kwargs)
        return PreconFireDescentState(R_new, V_new, force(R_new, **kwargs), dt_bar, alpha_bar,
                                      n_bar, jnp.array(True), ref, prev, prev_init)

    return init_fn, apply_fn

"""Two solvers of the rectangular linear assignment problem, both jittable and vmappable.

``hungarian_algorithm`` is the potentials-and-parents form of the Hungarian method (one Dijkstra-like
search per row over the columns, each step vectorised over all columns); ``base_hungarian_algorithm``
is the shortest-augmenting-path method of Crouse (2016) that ``scipy.optimize.linear_sum_assignment``
uses, with SciPy's visiting order and tie-breaking, so that both return the pairs optax returns.
"""

from typing import Any

import fluxion.numpy as jnp
from fluxion import lax

__all__ = ["base_hungarian_algorithm", "hungarian_algorithm"]


def _check_cost_matrix(fn: str, cost_matrix: Any) -> Any:
    cost_matrix = jnp.asarray(cost_matrix)
    if cost_matrix.ndim != 2:
        raise ValueError(
            f"{fn}: cost_matrix must be a 2-D (rows, columns) matrix, got shape "
            f"{tuple(cost_matrix.shape)} (vmap the call for a batch of matrices)")
    return cost_matrix


def _empty() -> tuple[Any, Any]:
    return jnp.zeros(0, int), jnp.zeros(0, int)


def hungarian_algorithm(cost_matrix: Any) -> tuple[Any, Any]:
    r"""The Hungarian algorithm for the linear assignment problem (``optax.assignment``).

    Given an :math:`n \times m` cost matrix, picks :math:`\min(n, m)` (row, column) pairs, each row
    and each column at most once, with the least total cost. Runs in :math:`O(n^2 m)` with one
    scan over the rows of the smaller side; jittable and vmappable.

    Args:
      cost_matrix: a 2-D array of costs.

    Returns:
      ``(i, j)``: integer arrays of row and column indices; the cost of the assignment is
      ``cost_matrix[i, j].sum()``. The pairs and their order are optax's.

    Example:
      >>> import fluxion.numpy as jnp
      >>> import fluxion_optim as optax
      >>> cost = jnp.array([[90, 80, 75, 70], [35, 85, 55, 65], [125, 95, 90, 95],
      ...                   [45, 110, 95, 115], [50, 100, 90, 100]])
      >>> i, j = optax.assignment.hungarian_algorithm(cost)
      >>> int(cost[i, j].sum())
      265
    """
    cost_matrix = _check_cost_matrix("hungarian_algorithm", cost_matrix)
    if cost_matrix.shape[0] == 0 or cost_matrix.shape[1] == 0:
        return _empty()
    flipped = cost_matrix.shape[0] > cost_matrix.shape[1]
    costs = cost_matrix.T if flipped else cost_matrix
    n, m = costs.shape

    # 1-based bookkeeping: column 0 is the virtual start column; owner[c] is the (1-based) row
    # that column c is matched to, 0 for none. Row potentials have one spare slot, n + 1, that
    # absorbs the scatter of the columns not on the current search tree.
    def add_row(carry, row):
        row_pot, col_pot, owner = carry
        owner = owner.at[0].set(row + 1)

        def grow(state):
            row_pot, col_pot, on_tree, slack, came_from, col = state
            on_tree = on_tree.at[col].set(True)
            free = ~on_tree[1:]
            r = owner[col]
            reduced = costs[r - 1] - row_pot[r] - col_pot[1:]
            reduced = jnp.where(free, reduced, jnp.inf)
            better = reduced < slack
            came_from = jnp.where(better, col, came_from)
            slack = jnp.where(better, reduced, slack)
            masked = jnp.where(free, slack, jnp.inf)
            nxt = jnp.argmin(masked) + 1
            delta = jnp.min(masked)
            targets = jnp.where(on_tree, owner, n + 1)
            row_pot = row_pot.at[targets].add(delta)
            col_pot = jnp.where(on_tree, col_pot - delta, col_pot)
            slack = jnp.where(free, slack - delta, slack)
            return row_pot, col_pot, on_tree, slack, came_from, nxt

        def unmatched(state):
            return owner[state[-1]] != 0

        start = (row_pot, col_pot, jnp.zeros(m + 1, bool), jnp.full(m, jnp.inf),
                 jnp.zeros(m, int), 0)
        row_pot, col_pot, _, _, came_from, col = lax.while_loop(unmatched, grow, start)

        def flip_path(state):
            owner, c = state
            prev = came_from[c - 1]
            return owner.at[c].set(owner[prev]), prev

        owner, _ = lax.while_loop(lambda s: s[1] != 0, flip_path, (owner, col))
        return (row_pot, col_pot, owner), None

    init = (jnp.zeros(n + 2), jnp.zeros(m + 1), jnp.zeros(m + 1, int))
    (_, _, owner), _ = lax.scan(add_row, init, jnp.arange(n))
    owner = owner[1:]
    if n == m:
        rows, cols = owner - 1, jnp.arange(n)
    else:
        # the matched columns, by decreasing row (optax's order)
        top_rows, cols = lax.top_k(owner, n)
        rows = top_rows - 1
    if flipped:
        return cols, rows
    return rows, cols


def base_hungarian_algorithm(cost_matrix: Any) -> tuple[Any, Any]:
    r"""The Hungarian algorithm by shortest augmenting paths (Crouse 2016), as SciPy's.

    Same problem and result as :func:`hungarian_algorithm`, solved the way
    ``scipy.optimize.linear_sum_assignment`` solves it: for each row, a Dijkstra search over
    reduced costs for the cheapest path to a free column, then the path is flipped. Pairs come
    back sorted by row, as SciPy's.

    Args:
      cost_matrix: a 2-D array of costs.

    Returns:
      ``(i, j)``: integer arrays of row and column indices; the cost of the assignment is
      ``cost_matrix[i, j].sum()``.

    Example:
      >>> import fluxion.numpy as jnp
      >>> import fluxion_optim as optax
      >>> cost = jnp.array([[8, 4, 7], [5, 2, 3], [9, 6, 7], [9, 4, 8]])
      >>> i, j = optax.assignment.base_hungarian_algorithm(cost)
      >>> i.tolist(), j.tolist()
      ([0, 1, 3], [0, 2, 1])
    """
    cost_matrix = _check_cost_matrix("base_hungarian_algorithm", cost_matrix)
    if cost_matrix.shape[0] == 0 or cost_matrix.shape[1] == 0:
        return _empty()
    flipped = cost_matrix.shape[1] < cost_matrix.shape[0]
    costs = (cost_matrix.T if flipped else cost_matrix).astype(float)
    n, m = costs.shape
    positions = jnp.arange(m)
    row_ids = jnp.arange(n)

    def augment_row(cur, carry):
        u, v, pred, col_of_row, row_of_col = carry

        # Dijkstra from row `cur`; `todo` lists the columns not yet scanned (SciPy's order:
        # m-1 .. 0 at first, a scanned column's slot taken by the last entry).
        def scan_step(state):
            (todo, n_todo, i, dist, pred, min_val, seen_rows, seen_cols, _) = state
            seen_rows = seen_rows.at[i].set(True)
            live = positions < n_todo
            reduced = min_val + costs[i] - u[i] - v
            shorter = ~seen_cols & (reduced < dist)
            pred = jnp.where(shorter, i, pred)
            dist = jnp.where(shorter, reduced, dist)
            d_at = jnp.where(live, dist[todo], jnp.inf)
            lowest = jnp.min(d_at)
            ties = live & (d_at == lowest)
            free_ties = ties & (row_of_col[todo] == -1)
            last_free = m - 1 - jnp.argmax(free_ties[::-1])
            first_tie = jnp.argmax(ties)
            pick = jnp.where(jnp.any(free_ties), last_free, first_tie)
            j = todo[pick]
            is_sink = row_of_col[j] == -1
            sink = jnp.where(is_sink, j, -1)
            i = jnp.where(is_sink, i, row_of_col[j])
            seen_cols = seen_cols.at[j].set(True)
            n_todo = n_todo - 1
            todo = todo.at[pick].set(todo[n_todo])
            return (todo, n_todo, i, dist, pred, lowest, seen_rows, seen_cols, sink)

        start = (positions[::-1], m, cur, jnp.full(m, jnp.inf, costs.dtype), pred,
                 jnp.zeros((), costs.dtype), jnp.zeros(n, bool), jnp.zeros(m, bool), -1)
        state = lax.while_loop(lambda s: s[-1] == -1, scan_step, start)
        _, _, _, dist, pred, min_val, seen_rows, seen_cols, sink = state

        # new potentials
        u = u.at[cur].add(min_val)
        others = seen_rows & (row_ids != cur)
        u = jnp.where(others, u + min_val - dist[col_of_row], u)
        v = jnp.where(seen_cols, v + dist - min_val, v)

        # flip the path from the sink back to `cur`
        def flip(state):
            j, row_of_col, col_of_row, _ = state
            i = pred[j]
            row_of_col = row_of_col.at[j].set(i)
            nxt = col_of_row[i]
            col_of_row = col_of_row.at[i].set(j)
            return nxt, row_of_col, col_of_row, i == cur

        _, row_of_col, col_of_row, _ = lax.while_loop(
            lambda s: ~s[-1], flip, (sink, row_of_col, col_of_row, False))
        return u, v, pred, col_of_row, row_of_col

    init = (jnp.zeros(n, costs.dtype), jnp.zeros(m, costs.dtype), jnp.full(m, -1),
            jnp.full(n, -1), jnp.full(m, -1))
    _, _, _, col_of_row, _ = lax.fori_loop(0, n, augment_row, init)
    if flipped:
        order = jnp.argsort(col_of_row)
        return col_of_row[order], order
    return jnp.arange(n), col_of_row

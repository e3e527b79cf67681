"""Jacobians and Hessians: ``jacfwd``, ``jacrev`` (``jacobian``) and ``hessian``.

They are built from the transformations (a linearisation, then one ``vmap`` of the linear map or
of its transpose over a standard basis, as JAX does) and stack their results with lax and NumPy
operations, so they live above ``lax`` rather than in ``transforms/``.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> fluxion.jacfwd(lambda x: x ** 2)(jnp.arange(2.0)).tolist()
    [[0.0, 0.0], [0.0, 2.0]]
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.tracebacks import api_boundary, wraps
from fluxion.transforms.ad import (
    LinearFunction,
    Zero,
    _argnums,
    _check_input_dtypes,
    _linearize_flat,
    aval_of,
    tangent_aval,
    zeros_like_aval,
)
from fluxion.transforms.batching import vmap
from fluxion.transforms.staging import fun_name, partial_at
from fluxion.tree_util import physical as tree_util

__all__ = ["jacfwd", "jacrev", "jacobian", "hessian"]


def _std_basis(aval: ShapedArray) -> list[Any]:
    """The standard basis of the tangent space of ``aval``, one array per element."""
    n = int(np.prod(aval.shape, dtype=np.int64))
    eye = np.eye(n, dtype=aval.dtype)
    return [eye[i].reshape(aval.shape) for i in range(n)]


def _stack_jac(parts: list, out_shape: tuple, in_shape: tuple, in_first: bool) -> Any:
    if not parts:
        return jnp.zeros(out_shape + in_shape if not in_first else in_shape + out_shape)
    st = jnp.stack([jnp.asarray(p) for p in parts])  # [n_in or n_out, ...]
    if in_first:  # jacfwd: parts indexed by input element, each of out_shape
        st = jnp.reshape(st, (int(np.prod(in_shape, dtype=np.int64)),) + out_shape)
        nd_out = len(out_shape)
        st = jnp.moveaxis(st, 0, -1) if nd_out else st
        return jnp.reshape(st, out_shape + in_shape)
    return jnp.reshape(st, out_shape + in_shape)


def _jac_blocks_vmap(lin: LinearFunction, in_avals: list, out_avals: list,
                     forward: bool) -> list | None:
    """Jacobian blocks ``[out i][in j]`` (shape ``out_shape + in_shape``) by one ``vmap`` of the
    linear map (forward) or of its transpose (reverse) over a standard basis, as JAX does.
    ``None`` when that is not possible (an empty basis, or a primitive without a batching rule):
    the caller then loops over the basis."""
    sizes = [int(np.prod(a.shape, dtype=np.int64)) for a in (in_avals if forward else out_avals)]
    if any(n == 0 for n in sizes):
        return None
    blocks: list = [[None] * len(in_avals) for _ in out_avals]
    try:
        if forward:
            for j, a in enumerate(in_avals):
                basis = np.eye(sizes[j], dtype=a.dtype).reshape((sizes[j],) + a.shape)

                def col(e: Any, j: int = j) -> list:
                    return lin.apply([e if k == j else Zero(b) for k, b in enumerate(in_avals)])

                outs = vmap(col)(basis)
                for i, (o, oa) in enumerate(zip(outs, out_avals)):
                    o = lax.transpose(o, tuple(range(1, len(oa.shape) + 1)) + (0,))
                    blocks[i][j] = lax.reshape(o, oa.shape + a.shape)
            return blocks
        for i, oa in enumerate(out_avals):
            ta = tangent_aval(oa)
            basis = np.eye(sizes[i], dtype=ta.dtype).reshape((sizes[i],) + ta.shape)
            live = [j for j, a in enumerate(in_avals) if tangent_aval(a).dtype != dtypes.float0]

            def row(e: Any, i: int = i, live: list = live) -> list:
                cts_in = lin.transpose([e if k == i else None for k in range(len(out_avals))])
                return [zeros_like_aval(in_avals[j]) if c is None else c
                        for j, c in zip(live, cts_in)]

            got = dict(zip(live, vmap(row)(basis)))
            for j, a in enumerate(in_avals):
                if j not in got:
                    blocks[i][j] = np.zeros(oa.shape + a.shape, dtypes.float0)
                else:
                    blocks[i][j] = lax.reshape(got[j], oa.shape + a.shape)
        return blocks
    except NotImplementedError:
        return None


def _linearized(fun: Callable, fname: str, what: str, argnums: Any, holomorphic: bool,
                allow_int: bool, has_aux: bool, args: tuple, kwargs: dict) -> tuple:
    """Linearise ``fun`` at ``args`` in the arguments ``argnums``: ``(lin, in_avals, out_avals,
    in_tree, out_tree, aux)``."""
    nums = _argnums(fname, argnums, len(args), what)
    dyn = tuple(args[i] for i in nums)
    _check_input_dtypes(fname, what, dyn, nums, holomorphic, allow_int)
    p_flat, p_tree = tree_util.tree_flatten(dyn)
    out_p, lin, out_tree, aux = _linearize_flat(partial_at(fun, args, nums, kwargs), p_flat,
                                                [True] * len(p_flat), p_tree, has_aux, fname)
    return (lin, [aval_of(p) for p in p_flat], [aval_of(o) for o in out_p], p_tree, out_tree,
            aux)


def _assemble(blocks: list | None, parts: list, in_first: bool, in_avals: list, out_avals: list,
              in_tree: Any, out_tree: Any, argnums: Any) -> Any:
    """The Jacobian pytree: per output leaf, its blocks per input (the vmapped ``blocks``, or
    the per-basis-element ``parts`` stacked)."""
    leaves = []
    for i, oa in enumerate(out_avals):
        per_in = [blocks[i][j] if blocks is not None else
                  _stack_jac(parts[i][j], oa.shape, in_avals[j].shape, in_first)
                  for j in range(len(in_avals))]
        sub = tree_util.tree_unflatten(in_tree, per_in)
        leaves.append(sub[0] if isinstance(argnums, int) else sub)
    return tree_util.tree_unflatten(out_tree, leaves)


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable[..., Any]:
    """The Jacobian of ``fun`` by forward mode (one JVP per input element).

    The result has, for each output leaf, the output's shape followed by the input's shape.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> fluxion.jacfwd(lambda x: x * 2.0)(jnp.ones(2)).tolist()
        [[2.0, 0.0], [0.0, 2.0]]
    """
    fname = fun_name(fun)

    @api_boundary
    @wraps(fun)
    def jac_f(*args: Any, **kwargs: Any) -> Any:
        lin, in_avals, out_avals, in_tree, out_tree, aux = _linearized(
            fun, fname, "jacfwd", argnums, holomorphic, False, has_aux, args, kwargs)
        blocks = _jac_blocks_vmap(lin, in_avals, out_avals, forward=True)
        cols: list[list[list[Any]]] = [[[] for _ in in_avals] for _ in out_avals]
        for j, a in enumerate(in_avals if blocks is None else ()):  # fallback: one JVP each
            for e in _std_basis(a):
                outs = lin.apply([e if k == j else Zero(b) for k, b in enumerate(in_avals)])
                for i, o in enumerate(outs):
                    cols[i][j].append(o)
        jac = _assemble(blocks, cols, True, in_avals, out_avals, in_tree, out_tree, argnums)
        return (jac, aux) if has_aux else jac

    return jac_f


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False) -> Callable[..., Any]:
    """The Jacobian of ``fun`` by reverse mode (one VJP per output element).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> fluxion.jacrev(lambda x: x * 2.0)(jnp.ones(2)).tolist()
        [[2.0, 0.0], [0.0, 2.0]]
    """
    fname = fun_name(fun)

    @api_boundary
    @wraps(fun)
    def jac_f(*args: Any, **kwargs: Any) -> Any:
        lin, in_avals, out_avals, in_tree, out_tree, aux = _linearized(
            fun, fname, "jacrev", argnums, holomorphic, allow_int, has_aux, args, kwargs)
        blocks = _jac_blocks_vmap(lin, in_avals, out_avals, forward=False)
        rows: list[list[list[Any]]] = [[[] for _ in in_avals] for _ in out_avals]
        for i, oa in enumerate(out_avals if blocks is None else ()):  # fallback: one VJP each
            for e in _std_basis(tangent_aval(oa)):
                cts_in = iter(lin.transpose([e if k == i else None for k in range(len(out_avals))]))
                for j, a in enumerate(in_avals):
                    if tangent_aval(a).dtype == dtypes.float0:
                        rows[i][j].append(np.zeros(a.shape, dtypes.float0))
                        continue
                    c = next(cts_in)
                    rows[i][j].append(zeros_like_aval(a) if c is None else c)
        jac = _assemble(blocks, rows, False, in_avals, out_avals, in_tree, out_tree, argnums)
        return (jac, aux) if has_aux else jac

    return jac_f


jacobian = jacrev


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable[..., Any]:
    """The Hessian of scalar ``fun``: ``jacfwd(jacrev(fun))``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> fluxion.hessian(lambda x: (x ** 3).sum())(jnp.ones(2)).tolist()
        [[6.0, 0.0], [0.0, 6.0]]
    """
    return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)

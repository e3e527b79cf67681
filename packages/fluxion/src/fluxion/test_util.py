"""Testing helpers: ``check_grads`` compares derivatives with finite differences.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.test_util import check_grads
    >>> check_grads(jnp.sin, (0.5,), order=2)
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion.core.dtypes import canonicalize_dtype
from fluxion.transforms.ad import jvp, vjp
from fluxion.tree_util import physical as tree_util

__all__ = ["check_grads", "check_jvp", "check_vjp"]

_DEFAULT_TOL = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 2e-2,
                np.dtype(np.float64): 1e-5, np.dtype(np.complex64): 2e-2,
                np.dtype(np.complex128): 1e-5}
# The finite-difference step, for every dtype: JAX's ``jax.test_util`` default. The difference
# is central, f(x + EPS t) - f(x - EPS t) over 2 EPS, as JAX's (tests written against JAX pick
# their tolerances for exactly this step).
_EPS = 1e-4


def _leaves(x: Any) -> list[np.ndarray]:
    return [np.asarray(a) for a in tree_util.tree_leaves(x)]


def _canon(dt: Any) -> np.dtype:
    return canonicalize_dtype(np.dtype(dt))


def _tol(dt: np.dtype, given: float | None) -> float:
    return given if given is not None else _DEFAULT_TOL.get(np.dtype(dt), 2e-2)


def _close(name: str, a: Any, b: Any, atol: float | None, rtol: float | None) -> None:
    for x, y in zip(_leaves(a), _leaves(b)):
        tol_a = _tol(_canon(x.dtype), atol)
        tol_r = _tol(_canon(x.dtype), rtol)
        np.testing.assert_allclose(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64),
                                   y.astype(np.complex128 if y.dtype.kind == "c" else np.float64),
                                   atol=tol_a, rtol=tol_r, err_msg=name)


def _random_like(rng: np.random.RandomState, x: Any) -> Any:
    # x may be a tracer (the output of vjp(fun) inside a higher-order check): its shape and
    # dtype only, as jax's check_grads, since NumPy refuses a value that carries a derivative
    dt = getattr(x, "dtype", None)
    dt = np.dtype(dt if dt is not None else np.result_type(x))
    shape = np.shape(x)
    v = rng.standard_normal(shape)
    if dt.kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    return v.astype(dt)


def _add(xs: Sequence[Any], ts: Sequence[Any], scale: float) -> list:
    out = []
    for x, t in zip(xs, ts):
        out.append(tree_util.tree_map(
            lambda a, b: jnp.asarray((np.asarray(a) + scale * np.asarray(b)).astype(
                np.asarray(a).dtype)), x, t))
    return out


def _sub_trees(a: Any, b: Any, scale: float) -> Any:
    return tree_util.tree_map(lambda x, y: (np.asarray(x, np.float64 if np.asarray(x).dtype.kind
                                                       != "c" else np.complex128)
                                            - np.asarray(y)) * scale, a, b)


def _central_difference(f: Callable, args: Sequence[Any], ts: Sequence[Any], eps: float) -> Any:
    """The derivative of ``f`` at ``args`` along ``ts``: (f(x + eps t) - f(x - eps t)) / 2 eps."""
    return _sub_trees(f(*_add(args, ts, eps)), f(*_add(args, ts, -eps)), 0.5 / eps)


def _inner(a: Any, b: Any) -> complex:
    return sum(np.vdot(np.asarray(x).ravel(), np.asarray(y).ravel()).real
               for x, y in zip(tree_util.tree_leaves(a), tree_util.tree_leaves(b)))


def check_jvp(f: Callable, f_jvp: Callable, args: Sequence[Any], atol: float | None = None,
              rtol: float | None = None, eps: float | None = None, err_msg: str = "") -> None:
    """Compare ``f_jvp(args, tangents)`` with a central finite difference of ``f``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion import test_util
        >>> test_util.check_jvp(jnp.sin, lambda p, t: fluxion.jvp(jnp.sin, p, t), (jnp.array([0.5, 1.0]),))
        >>> try:
        ...     test_util.check_jvp(jnp.sin, lambda p, t: fluxion.jvp(jnp.cos, p, t), (jnp.array([0.5, 1.0]),))
        ... except AssertionError:
        ...     print('wrong jvp caught')
        wrong jvp caught
    """
    rng = np.random.RandomState(0)
    args = [tree_util.tree_map(np.asarray, a) for a in args]
    e = eps or _EPS
    ts = [tree_util.tree_map(lambda x: _random_like(rng, x), a) for a in args]
    _, t_out = f_jvp(args, ts)
    fd = _central_difference(f, args, ts, e)
    _close(f"JVP vs finite differences {err_msg}", t_out, fd, atol, rtol)


def check_vjp(f: Callable, f_vjp: Callable, args: Sequence[Any], atol: float | None = None,
              rtol: float | None = None, eps: float | None = None, err_msg: str = "") -> None:
    """Check ``<vjp(ct), t> == <ct, jvp(t)>`` with the JVP by finite differences.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion import test_util
        >>> test_util.check_vjp(jnp.sin, lambda x: fluxion.vjp(jnp.sin, x), (jnp.array([0.5, 1.0]),))
        >>> try:
        ...     test_util.check_vjp(jnp.sin, lambda x: fluxion.vjp(jnp.cos, x), (jnp.array([0.5, 1.0]),))
        ... except AssertionError:
        ...     print('wrong vjp caught')
        wrong vjp caught
    """
    rng = np.random.RandomState(1)
    args = [tree_util.tree_map(np.asarray, a) for a in args]
    e = eps or _EPS
    out, vjp_fn = f_vjp(*args)
    ts = [tree_util.tree_map(lambda x: _random_like(rng, x), a) for a in args]
    ct = tree_util.tree_map(lambda x: _random_like(rng, x), out)
    cts_in = vjp_fn(ct)
    fd = _central_difference(f, args, ts, e)
    lhs = _inner(cts_in, ts)
    rhs = _inner(ct, fd)
    _close(f"VJP vs finite differences {err_msg}", np.asarray(lhs), np.asarray(rhs), atol, rtol)


def check_grads(f: Callable, args: Sequence[Any], order: int,
                modes: Sequence[str] = ("fwd", "rev"), atol: float | None = None,
                rtol: float | None = None, eps: float | None = None) -> None:
    """Check the derivatives of ``f`` at ``args`` up to ``order`` against finite differences,
    in forward mode (``"fwd"``) and/or reverse mode (``"rev"``).

    Raises AssertionError on a mismatch.

    Example:
        >>> import fluxion.numpy as jnp
        >>> check_grads(lambda x: jnp.exp(x) * 2.0, (0.3,), order=2, modes=("fwd", "rev"))
    """
    args = tuple(args)

    def _check(fun: Callable, k: int) -> None:
        if "fwd" in modes:
            def f_jvp(a: Sequence[Any], t: Sequence[Any]) -> Any:
                return jvp(fun, tuple(a), tuple(t))
            check_jvp(fun, f_jvp, args, atol, rtol, eps, f"(order {k})")
            if k < order:
                def fwd_next(*a: Any) -> Any:
                    rng = np.random.RandomState(2 + k)
                    ts = tuple(tree_util.tree_map(lambda x: _random_like(rng, x), x)
                               for x in args)
                    return jvp(fun, a, ts)[1]
                _check(fwd_next, k + 1)
        if "rev" in modes:
            check_vjp(fun, lambda *a: vjp(fun, *a), args, atol, rtol, eps, f"(order {k})")
            if k < order:
                def rev_next(*a: Any) -> Any:
                    rng = np.random.RandomState(3 + k)
                    out, f_vjp = vjp(fun, *a)
                    ct = tree_util.tree_map(lambda x: _random_like(rng, x), out)
                    return f_vjp(ct)
                _check(rev_next, k + 1)

    _check(f, 1)

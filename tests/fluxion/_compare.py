"""Helpers to compare Fluxion results with the reference, real JAX 0.10.2 (tests only).

Import from any test under tests/fluxion/ (conftest.py puts this folder on sys.path)::

    from _compare import assert_same, assert_close, x64_both

``assert_same(ours, theirs)`` compares values through NumPy, plus dtype, shape and weak type.
Both sides may be pytrees (tuple/list/dict/None) of arrays or scalars; structure must match.
``assert_close`` is the same without the weak type and always within a tolerance;
``assert_bits_equal`` compares the bits. ``check_like_jax`` runs both libraries,
``check_ad_like_jax`` compares jvp and vjp with JAX, ``check_vmap_like_loop`` compares vmap with a
Python loop.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Iterator

import jax
import ml_dtypes  # noqa: F401 - registers bfloat16 & co. with NumPy (np.dtype("bfloat16"))
import numpy as np

import fluxion

__all__ = ["assert_same", "assert_same_value", "assert_close", "assert_bits_equal",
           "install_platform_tolerances",
           "platform_tol", "check_like_jax",
           "check_ad_like_jax", "check_vmap_like_loop", "weak_type_of", "x64_both", "flags_both",
           "SMALL_SHAPES", "BIN_SHAPE_PAIRS", "rand_array"]

# Shared shapes: reuse them so executables compiled for one test are reused by the next.
SMALL_SHAPES = [(), (1,), (3,), (2, 3)]
BIN_SHAPE_PAIRS = [((), ()), ((3,), (3,)), ((2, 3), (2, 3)), ((), (2, 3)), ((2, 3), (1, 3)),
                   ((1,), (3,))]

_FLOAT_KINDS = "fc"


def weak_type_of(x: Any) -> bool | None:
    """The weak-type flag of an array (Fluxion or JAX); None for NumPy arrays / Python scalars."""
    wt = getattr(x, "weak_type", None)
    if wt is None:
        aval = getattr(x, "aval", None)
        wt = getattr(aval, "weak_type", None)
    return wt


def _is_leafish(x: Any) -> bool:
    return not isinstance(x, (tuple, list, dict)) or x is None


def _default_tol(dtype: np.dtype) -> tuple[float, float]:
    name = np.dtype(dtype).name
    if name in ("bfloat16",):
        return 1e-2, 1e-2
    if name in ("float16",):
        return 2e-3, 2e-3
    if name in ("float32", "complex64"):
        return 2e-6, 1e-6
    return 1e-13, 1e-13


# Per-platform tolerances, as JAX's own test suite has them: on a TPU float32 matmuls run in
# bf16 passes at default precision and transcendental functions are less precise by design, so
# floating-point values computed there are compared within these (rtol, atol) with the CPU
# reference, also where a test asks for exact equality on the CPU. float64 is emulated there:
# chlo.lgamma(2.0) (jax's lowering too) gave -2.85e-9 on a v5e, hence the 1e-8 floor.
_PLATFORM_TOL = {
    "tpu": {"bfloat16": (2e-2, 2e-2), "float16": (1e-2, 1e-2), "float32": (2e-3, 1e-4),
            "complex64": (2e-3, 1e-4), "float64": (1e-6, 1e-8), "complex128": (1e-6, 1e-8)},
}


# The platform the suite runs Fluxion on (tests/conftest.py, ``--platform``).
_TEST_PLATFORM = os.environ.get("FLUXION_TEST_PLATFORM", "cpu")


def _platform_of(x: Any) -> str | None:
    """The platform of a Fluxion array (None for other values)."""
    if type(x) is not fluxion.Array:
        return None
    return next(iter(x.devices())).platform


def _upcast(a: np.ndarray) -> np.ndarray:
    if a.dtype.isbuiltin and a.dtype.kind in "biufc":
        return a
    name = a.dtype.name
    if name.startswith(("int", "uint")):
        return a.astype(np.int64)
    return a.astype(np.float32)


def assert_same_value(ours: Any, theirs: Any, *, rtol: float | None = None,
                      atol: float | None = None, check_dtype: bool = True,
                      check_weak_type: bool = True, exact: bool | None = None,
                      err_msg: str = "") -> None:
    """Compare one array-like leaf: shape, dtype, weak type, then values.

    ``exact=True`` (default when no tolerance is given) asks for bit-identical values (NaNs equal,
    signed zeros not distinguished); give ``rtol``/``atol`` for transcendental functions.
    """
    o = np.asarray(ours)
    t = np.asarray(theirs)
    where = f" {err_msg}" if err_msg else ""
    assert o.shape == t.shape, f"shape: ours {o.shape} vs jax {t.shape}{where}"
    if check_dtype:
        assert o.dtype == t.dtype, f"dtype: ours {o.dtype} vs jax {t.dtype}{where}"
    if check_weak_type:
        wo, wt = weak_type_of(ours), weak_type_of(theirs)
        if wo is not None and wt is not None:
            assert wo == wt, f"weak_type: ours {wo} vs jax {wt} ({t.dtype}){where}"
    if exact is None:
        exact = rtol is None and atol is None
    plat_tol = _PLATFORM_TOL.get(_platform_of(ours) or "", {}).get(t.dtype.name)
    if plat_tol is not None:  # a float computed on a less precise platform: its tolerance
        exact = False
        rtol = plat_tol[0] if rtol is None else max(rtol, plat_tol[0])
        atol = plat_tol[1] if atol is None else max(atol, plat_tol[1])
    # ml_dtypes (bfloat16, float8, int4: kind 'V' to NumPy) -> upcast for comparison.
    o, t = _upcast(o), _upcast(t)
    if exact:
        np.testing.assert_array_equal(o, t, err_msg=f"values differ{where}")
    else:
        dr, da = _default_tol(np.asarray(theirs).dtype)
        # Compare in double precision, so that the tolerance decides (not float16 rounding or
        # unsigned wrap-around in |ours - theirs|).
        wide = np.complex128 if "c" in (o.dtype.kind, t.dtype.kind) else np.float64
        o, t = o.astype(wide), t.astype(wide)
        np.testing.assert_allclose(o, t, rtol=dr if rtol is None else rtol,
                                   atol=da if atol is None else atol, equal_nan=True,
                                   err_msg=f"values differ{where}")


def assert_same(ours: Any, theirs: Any, *, rtol: float | None = None, atol: float | None = None,
                check_dtype: bool = True, check_weak_type: bool = True,
                exact: bool | None = None, err_msg: str = "") -> None:
    """Assert a Fluxion result equals a JAX result: values (via NumPy), dtype, shape, weak type.

    Works on pytrees of tuples/lists/dicts/None. Without ``rtol``/``atol`` values must be equal
    (XLA CPU is the backend of both); with them, ``np.testing.assert_allclose`` (NaNs equal).

    Example:
        >>> assert_same(fluxion.numpy.sin(x), jax.numpy.sin(jx), rtol=1e-6)
    """
    if ours is None or theirs is None:
        assert ours is None and theirs is None, f"None mismatch: {ours!r} vs {theirs!r} {err_msg}"
        return
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and set(ours) == set(theirs), \
            f"dict keys: {sorted(ours) if isinstance(ours, dict) else type(ours)} vs {sorted(theirs)}"
        for k in theirs:
            assert_same(ours[k], theirs[k], rtol=rtol, atol=atol, check_dtype=check_dtype,
                        check_weak_type=check_weak_type, exact=exact, err_msg=f"{err_msg}[{k!r}]")
        return
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs), \
            f"structure: {type(ours).__name__} vs {type(theirs).__name__}/{len(theirs)} {err_msg}"
        if hasattr(theirs, "_fields"):  # named tuples of the two libraries: same name, fields
            assert (type(ours).__name__, getattr(ours, "_fields", None)) == \
                (type(theirs).__name__, theirs._fields), \
                f"container type: {type(ours)} vs {type(theirs)}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, rtol=rtol, atol=atol, check_dtype=check_dtype,
                        check_weak_type=check_weak_type, exact=exact, err_msg=f"{err_msg}[{i}]")
        return
    assert_same_value(ours, theirs, rtol=rtol, atol=atol, check_dtype=check_dtype,
                      check_weak_type=check_weak_type, exact=exact, err_msg=err_msg)


def assert_close(ours: Any, theirs: Any, tol: float | None = None, *, rtol: float | None = None,
                 atol: float | None = None, err_msg: str = "") -> None:
    """Shape, dtype and values within ``rtol``/``atol`` (``tol`` sets both; default: by dtype),
    weak type not compared; pytrees as in :func:`assert_same`.

    Example:
        >>> assert_close(fluxion.grad(f)(x), jax.grad(f_jax)(x), rtol=1e-5, atol=1e-6)
    """
    if tol is not None:
        rtol = tol if rtol is None else rtol
        atol = tol if atol is None else atol
    assert_same(ours, theirs, rtol=rtol, atol=atol, check_weak_type=False, exact=False,
                err_msg=err_msg)


def platform_tol(rtol: float, atol: float = 0.0, dtype: Any = np.float32) -> dict[str, float]:
    """``rtol``/``atol`` for a check written with NumPy's ``assert_allclose``, widened to the
    tolerance of ``dtype`` on the platform the suite runs Fluxion on (unchanged on the CPU).

    Example:
        >>> np.testing.assert_allclose(np.asarray(out), ref, **platform_tol(1e-5))
    """
    plat = _PLATFORM_TOL.get(_TEST_PLATFORM, {}).get(np.dtype(dtype).name)
    if plat is None:
        return {"rtol": rtol, "atol": atol}
    return {"rtol": max(rtol, plat[0]), "atol": max(atol, plat[1])}


def _least_precise_float(*xs: Any) -> str | None:
    """The dtype name of the least precise floating array among ``xs`` (None if none is)."""
    order = ("bfloat16", "float16", "float32", "complex64", "float64", "complex128")
    names = set()
    for x in xs:
        dt = getattr(x, "dtype", None)
        if dt is None and isinstance(x, (list, tuple)) and x:
            dt = getattr(np.asarray(x), "dtype", None)
        if dt is not None:
            names.add(np.dtype(dt).name)
    return next((n for n in order if n in names), None)


def install_platform_tolerances(platform: str | None = None) -> bool:
    """On a less precise platform, make ``np.testing.assert_allclose`` compare floating arrays
    within at least that platform's tolerance for their dtype (``_PLATFORM_TOL``), as JAX's own
    test suite widens its default tolerances on a TPU; tolerances a test gives that are already
    wider stay. Exact checks (``assert_array_equal``) and integer arrays are unchanged. Returns
    whether anything was installed (nothing on the CPU).

    Example:
        >>> install_platform_tolerances("cpu")
        False
    """
    table = _PLATFORM_TOL.get((platform or _TEST_PLATFORM).lower())
    if not table or getattr(np.testing.assert_allclose, "_platform_widened", False):
        return False
    strict = np.testing.assert_allclose

    def assert_allclose(actual: Any, desired: Any, rtol: float = 1e-7, atol: float = 0,
                        *args: Any, **kwargs: Any) -> None:
        tol = table.get(_least_precise_float(actual, desired) or "")
        if tol is not None:
            rtol, atol = max(rtol, tol[0]), max(atol, tol[1])
        strict(actual, desired, rtol, atol, *args, **kwargs)

    assert_allclose._platform_widened = True  # type: ignore[attr-defined]
    np.testing.assert_allclose = assert_allclose
    return True


def assert_bits_equal(ours: Any, theirs: Any) -> None:
    """Shape, dtype and the same bits (so -0.0 differs from 0.0 and NaN payloads count)."""
    a, b = np.asarray(ours), np.asarray(theirs)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    plat_tol = _PLATFORM_TOL.get(_TEST_PLATFORM, {}).get(a.dtype.name)
    if plat_tol is not None:  # floats computed on a TPU: its tolerance (integers stay exact)
        np.testing.assert_allclose(_upcast(a).astype(np.complex128 if a.dtype.kind == "c"
                                                     else np.float64),
                                   _upcast(b), rtol=plat_tol[0], atol=plat_tol[1],
                                   equal_nan=True)
        return
    if a.dtype.kind in "fcV":  # compare the bytes of floats (and of ml_dtypes, kind 'V')
        a, b = np.atleast_1d(a).view(np.uint8), np.atleast_1d(b).view(np.uint8)
    np.testing.assert_array_equal(a, b)


@contextlib.contextmanager
def flags_both(name: str, value: Any) -> Iterator[None]:
    """Set a flag (JAX's name) in both Fluxion and JAX for a block, restoring both afterwards."""
    old_f = fluxion.config.read(name)
    old_j = getattr(jax.config, name)
    fluxion.config.update(name, value)
    jax.config.update(name, value)
    try:
        yield
    finally:
        fluxion.config.update(name, old_f)
        jax.config.update(name, old_j)


def x64_both(on: bool = True) -> contextlib.AbstractContextManager:
    """``with x64_both():`` turns 64-bit mode on in Fluxion and JAX, and restores both after."""
    return flags_both("jax_enable_x64", on)


def rand_array(shape: tuple, dtype: Any, seed: int = 0, *, positive: bool = False,
               unit: bool = False) -> np.ndarray:
    """A small deterministic NumPy array of ``dtype`` (bool/int/uint/float/complex/bf16)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind == "u":
        return rng.integers(0 if not positive else 1, 20, shape).astype(dt)
    if dt.kind == "i":
        lo = 1 if positive else -10
        return rng.integers(lo, 10, shape).astype(dt)
    if unit:
        v = rng.uniform(-0.9, 0.9, shape)
    elif positive:
        v = rng.uniform(0.1, 3.0, shape)
    else:
        v = rng.uniform(-3.0, 3.0, shape)
    if dt.kind == "c":
        w = rng.uniform(-3.0, 3.0, shape)
        return (v + 1j * w).astype(dt)
    return np.asarray(v).astype(dt)


def check_like_jax(ours_fn: Any, theirs_fn: Any, *args: Any, rtol: float | None = None,
                   atol: float | None = None, check_weak_type: bool = True,
                   err_contains: tuple[str, ...] = (), **kwargs: Any) -> Any:
    """Call ``theirs_fn(*args, **kwargs)`` and ``ours_fn(*args, **kwargs)``; both must succeed with
    the same result (see :func:`assert_same`) or both raise the same exception class (ours may be a
    subclass of JAX's). ``err_contains`` lists substrings our error message must contain (an entry
    may be a tuple of alternatives, any one of which must appear).
    Returns our result (or the exception we raised)."""
    try:
        theirs = theirs_fn(*args, **kwargs)
        t_exc = None
    except (TypeError, ValueError, OverflowError, IndexError, NotImplementedError) as e:
        t_exc = e
    if t_exc is not None:
        try:
            ours = ours_fn(*args, **kwargs)
        except Exception as e:
            # Same class, a subclass, or Fluxion's own class of the same name (TypePromotionError).
            assert isinstance(e, type(t_exc)) or type(e).__name__ == type(t_exc).__name__, \
                f"jax raised {type(t_exc).__name__}: {t_exc}; ours raised {type(e).__name__}: {e}"
            for s in err_contains:
                alts = (s,) if isinstance(s, str) else tuple(s)
                assert any(a in str(e) for a in alts), f"{s!r} not in our error message: {e}"
            return e
        raise AssertionError(f"jax raised {type(t_exc).__name__}: {t_exc}; ours returned {ours!r}")
    ours = ours_fn(*args, **kwargs)
    assert_same(ours, theirs, rtol=rtol, atol=atol, check_weak_type=check_weak_type)
    return ours


def check_ad_like_jax(f: Any, f_jax: Any, args: tuple, tol: float = 1e-5) -> None:
    """``jvp`` (random tangents) and ``vjp`` (random cotangents) of ``f`` equal JAX's of
    ``f_jax`` at float32 ``args``: shapes, dtypes and values within ``tol``. Each side is one
    ``jit`` (one compilation, not one per operation)."""
    rng = np.random.RandomState(1)
    ts = tuple(rng.randn(*np.shape(a)).astype(np.float32) for a in args)
    p, t = fluxion.jit(lambda *a: fluxion.jvp(f, a, ts))(*args)
    pj, tj = jax.jit(lambda *a: jax.jvp(f_jax, a, ts))(*args)
    for ours, theirs in ((p, pj), (t, tj)):
        for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
            assert_close(a, b, tol)
    ct = jax.tree_util.tree_map(lambda o: rng.randn(*np.shape(o)).astype(np.float32), pj)
    got = fluxion.jit(lambda a, c: fluxion.vjp(f, *a)[1](c))(args, ct)
    want = jax.jit(lambda a, c: jax.vjp(f_jax, *a)[1](c))(args, ct)
    for a, b in zip(got, want):
        assert_close(a, b, tol)


def check_vmap_like_loop(f: Any, xs: tuple, in_axes: Any = 0, tol: float = 1e-5) -> None:
    """``jit(vmap(f, in_axes))(*xs)`` equals the stack of ``f`` over the mapped axis (a Python
    loop): shapes, dtypes and values within ``tol``; ``f`` may return a tuple."""
    got = fluxion.jit(fluxion.vmap(f, in_axes=in_axes))(*xs)
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(xs)
    n = next(np.shape(x)[a] for x, a in zip(xs, axes) if a is not None)
    per = [f(*[x if a is None else np.take(x, i, axis=a) for x, a in zip(xs, axes)])
           for i in range(n)]
    if isinstance(got, (tuple, list)):
        for k, g in enumerate(got):
            assert_close(g, np.stack([np.asarray(p[k]) for p in per]), tol)
    else:
        assert_close(got, np.stack([np.asarray(p) for p in per]), tol)


class CountCompiles:
    """Counts Fluxion's XLA compiles inside a ``with`` block (``.n``), by wrapping the one hook
    every Fluxion compile goes through (``fluxion.backend.compile_hook``).

    Example: ``with CountCompiles() as c: f(x)`` then ``assert c.n == 0`` for a cached call.
    """

    def __enter__(self) -> "CountCompiles":
        from fluxion.backend import compile_hook
        self.n, self._hook, self._inner = 0, compile_hook, compile_hook.backend_compile_and_load

        def spy(*args: Any, **kwargs: Any) -> Any:
            self.n += 1
            return self._inner(*args, **kwargs)
        compile_hook.backend_compile_and_load = spy
        return self

    def __exit__(self, *exc: Any) -> None:
        self._hook.backend_compile_and_load = self._inner

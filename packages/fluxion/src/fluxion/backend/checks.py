"""Runtime checks: ``jax_debug_nans`` / ``jax_debug_infs`` and Fluxion's debug mode.

While a check is on, the eager interpreter runs :func:`checked_eager` instead of the plain
dispatcher (nothing is paid while every check is off):

- NaN/Inf: after each primitive, its floating outputs are read back; a NaN (or infinity)
  raises ``FloatingPointError("invalid value (nan) encountered in log at file.py:12 (f)")``,
  naming the primitive and the user's source line.
- A jitted call whose outputs hold a NaN/Inf is run again op by op (as if the ``jit`` were
  removed, like JAX), so that the error names the primitive that produced it.
- Debug mode (``fluxion_debug_mode`` / ``fluxion.debug_mode()``) turns both checks on, runs
  jitted functions eagerly (``jax_disable_jit``), turns on PRNG key-reuse checks, and makes
  out-of-bounds indices raise ``IndexError`` (with the index and the shape) where XLA would
  clamp them: gathers (``x[i]``), dynamic slices and clamping scatters.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> with fluxion.debug_nans(True):
    ...     try:
    ...         jnp.log(jnp.float32(-1.0))
    ...     except FloatingPointError as e:
    ...         print(str(e).split(" at ")[0])
    invalid value (nan) encountered in log
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Sequence

import numpy as np

from fluxion.backend.array import Array
from fluxion.core import trace as _trace
from fluxion.core.config import config, flag_context
from fluxion.core.errors import user_source_line
from fluxion.core.ir import Literal, literal_value
from fluxion.tree_util import physical as tree_util

__all__ = ["ENABLED", "checked_eager", "checked_jit_call", "check_values", "debug_mode_call",
           "install"]

# ENABLED[0]: some check is on (read by jit's call path); kept in sync with the flags.
ENABLED = [False]
_SAVED: dict[str, Any] = {}
# The dispatcher's plain eager handler and its host-value-to-Array conversion. This module sits
# below the dispatcher, which hands them over when it loads (``install``).
_plain_eager: Callable[..., Any] | None = None
_to_array: Callable[[Any], Any] | None = None


def install(eager: Callable[..., Any], to_array: Callable[[Any], Any]) -> None:
    """Called by ``fluxion.backend.dispatch`` when it loads: its plain eager handler (run by
    :func:`checked_eager`) and ``to_array``; sets the eager handler, checked while a check is on."""
    global _plain_eager, _to_array
    _plain_eager, _to_array = eager, to_array
    _trace.set_eager_handler(checked_eager if ENABLED[0] else eager)


def _kinds() -> tuple[bool, bool]:
    debug = config.fluxion_debug_mode
    return bool(config.jax_debug_nans or debug), bool(config.jax_debug_infs or debug)


def check_values(name: str, values: Sequence[Any]) -> None:
    """Raise FloatingPointError if a floating value in ``values`` holds a NaN / an infinity
    (whichever checks are on), naming ``name`` and the user's source line."""
    nans, infs = _kinds()
    for v in values:
        if type(v) is not Array or v.dtype.kind not in "fc":
            continue
        host = np.asarray(v)
        if host.dtype.kind not in "fc":  # ml_dtypes (bfloat16, float8) read back as themselves
            host = host.astype(np.float32)
        if nans and np.isnan(host).any():
            raise FloatingPointError(f"invalid value (nan) encountered in {name} at "
                                     f"{user_source_line()}")
        if infs and np.isinf(host).any():
            raise FloatingPointError(f"invalid value (inf) encountered in {name} at "
                                     f"{user_source_line()}")


# ------------------------------------------------------------------ out-of-bounds indices

def _ints(x: Any) -> np.ndarray:
    return np.asarray(x).astype(np.int64)


def _oob(prim: str, shape: tuple, axis: int, index: Any, limit: int) -> IndexError:
    return IndexError(
        f"index {index} is out of bounds for axis {axis} with size {shape[axis]} ({prim} of an "
        f"array of shape {tuple(shape)}"
        + (f", window of size {shape[axis] - limit}" if limit != shape[axis] else "")
        + f"; debug mode raises where XLA would clamp) at {user_source_line()}")


def _check_starts(prim: str, shape: tuple, starts: np.ndarray, dims: Sequence[int],
                  sizes: Sequence[int]) -> None:
    """``starts[..., j]`` must lie in ``[0, shape[dims[j]] - sizes[j]]``."""
    for j, d in enumerate(dims):
        col = starts[..., j]
        hi = shape[d] - sizes[j]
        bad = (col < 0) | (col > hi)
        if bad.any():
            raise _oob(prim, shape, d, int(col[bad].flat[0]), hi)


def _check_indices(prim: Any, args: Sequence[Any], params: dict) -> None:
    name = prim.name
    if name == "gather":
        if params["mode"].name == "FILL_OR_DROP":  # an explicit mode="fill": out of bounds is asked for
            return
        dn, sizes = params["dimension_numbers"], params["slice_sizes"]
        shape = tuple(args[0].shape)
        _check_starts("gather", shape, _ints(args[1]), dn.start_index_map,
                      [sizes[d] for d in dn.start_index_map])
    elif name == "dynamic_slice":
        shape = tuple(args[0].shape)
        starts = np.array([int(np.asarray(s)) for s in args[1:]])
        _check_starts("dynamic_slice", shape, starts, range(len(shape)), params["slice_sizes"])
    elif name == "dynamic_update_slice":
        shape = tuple(args[0].shape)
        starts = np.array([int(np.asarray(s)) for s in args[2:]])
        _check_starts("dynamic_update_slice", shape, starts, range(len(shape)),
                      tuple(args[1].shape))
    elif name.startswith("scatter") and "dimension_numbers" in params:
        if params["mode"].name == "FILL_OR_DROP":
            return
        dn = params["dimension_numbers"]
        shape, upd_shape = tuple(args[0].shape), tuple(args[2].shape)
        skipped = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
        window = iter(upd_shape[i] for i in dn.update_window_dims)
        win = [1 if d in skipped else next(window) for d in range(len(shape))]
        _check_starts(name, shape, _ints(args[1]), dn.scatter_dims_to_operand_dims,
                      [win[d] for d in dn.scatter_dims_to_operand_dims])


_INDEXING = {"gather", "dynamic_slice", "dynamic_update_slice"}
_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_MACHINERY = tuple(_PKG + d + os.sep for d in ("core", "backend", "lax", "transforms"))
_USER_INDEXING = tuple(_PKG + os.path.join("numpy", f) for f in (
    "indexing.py", "_advanced_indexing.py", "array_methods.py", "_gather_util.py"))


def _from_user_indexing() -> bool:
    """True when the indexing primitive comes from the user: ``x[i]``, ``x.at[i]``, or a direct
    ``lax`` call; False when another Fluxion function uses it (and may rely on clamping)."""
    f = sys._getframe(2)
    while f is not None:
        name = f.f_code.co_filename
        if not name.startswith(_MACHINERY) and not name.startswith(_USER_INDEXING):
            return not name.startswith(_PKG)
        f = f.f_back
    return True


# ------------------------------------------------------------------ the handlers

def checked_eager(prim: Any, args: Sequence[Any], params: dict[str, Any]) -> Any:
    """The eager interpreter while checks are on: run ``prim``, then check its outputs."""
    if config.fluxion_debug_mode and (prim.name in _INDEXING or prim.name.startswith("scatter")):
        if _from_user_indexing():
            _check_indices(prim, args, params)
    out = _plain_eager(prim, args, params)
    try:
        check_values(prim.name, out if prim.multiple_results else (out,))
    except FloatingPointError:
        program = params.get("program") if prim.name == "jit" else None
        if program is None:
            raise
    else:
        return out
    # A compiled inner call (grad of a jitted function, ...): run its program op by op to name
    # the primitive that made the value; fall back to naming the call.
    _rerun(program, args)
    check_values(prim.name, out)
    return out


class _Located(FloatingPointError):
    """A FloatingPointError already naming the equation's own source line."""


def _rerun(program: Any, args: Sequence[Any]) -> None:
    """Evaluate ``program`` op by op (checked); an error names the equation's source line."""
    env: dict[int, Any] = dict(zip((v.id for v in program.invars), args))

    def read(a: Any) -> Any:
        return literal_value(a) if isinstance(a, Literal) else env[a.id]

    for eqn in program.eqns:
        try:
            out = eqn.prim.bind(*[read(a) for a in eqn.inputs], **eqn.params)
        except _Located:
            raise
        except FloatingPointError as e:
            if not eqn.source:
                raise
            kind = "nan" if "(nan)" in str(e) else "inf"
            raise _Located(f"invalid value ({kind}) encountered in {eqn.prim.name} at "
                           f"{eqn.source}") from None
        outs = out if eqn.prim.multiple_results else [out]
        for v, o in zip(eqn.outputs, outs):
            env[v.id] = o


def _as_array(x: Any) -> Any:
    if type(x) in (bool, int, float, complex) or isinstance(x, (np.ndarray, np.generic)):
        return _to_array(x)
    return x


_REPORTED = "Invalid {kind} value encountered in the output of a fluxion.jit function {name}. " \
            "Calling the de-optimized version."


def debug_mode_call(fun: Callable, args: tuple, kwargs: dict, static_argnums: Sequence[int],
                    static_argnames: Sequence[str]) -> Any:
    """A jitted call in debug mode: ``fun`` runs eagerly, op by op, with its non-static
    arguments as jit would see them (arrays, not Python numbers), so that code indexing with
    an argument takes the same (checked) path."""
    args = tuple(a if i in static_argnums else tree_util.tree_map(_as_array, a)
                 for i, a in enumerate(args))
    kwargs = {k: v if k in static_argnames else tree_util.tree_map(_as_array, v)
              for k, v in kwargs.items()}
    with flag_context("jax_disable_jit", True):
        return fun(*args, **kwargs)


def checked_jit_call(fun: Callable, name: str, run: Callable[[], Any], args: tuple,
                     kwargs: dict) -> Any:
    """A jitted call while checks are on: in debug mode ``fun`` runs eagerly; otherwise the
    compiled ``run()`` runs and, if an output holds a NaN/Inf, ``fun`` runs again op by op to
    find the primitive that made it (JAX's behaviour)."""
    if config.fluxion_debug_mode:
        return debug_mode_call(fun, args, kwargs, (), ())
    out = run()
    found = None
    try:
        check_values(f"jit({name})", tree_util.tree_leaves(out))
    except FloatingPointError as e:
        found = e
    if found is None:
        return out
    kind = "nan" if "(nan)" in str(found) else "inf"
    print(_REPORTED.format(kind=kind, name=name))
    with flag_context("jax_disable_jit", True):
        fun(*args, **kwargs)  # raises the precise error, naming the primitive
    raise FloatingPointError(
            f"{found}. Because jax_debug_nans and/or jax_debug_infs is set, the de-optimized "
            "function (the function as if the `jit` decorator were removed) was called in an "
            "attempt to get a more precise error message. However, the de-optimized function "
            "did not produce invalid values during its execution. This can result from `jit` "
            "optimizations causing the invalid value to be produced, or from nan/inf literals "
            "as inputs or outputs. It may be possible to avoid the invalid value by removing "
            "the `jit` decorator.") from None


def _on_change(name: str, value: Any) -> None:
    if name == "fluxion_debug_mode":
        # Debug mode also runs jitted code eagerly and checks PRNG key reuse; the previous
        # values come back when it is turned off.
        if value:
            for flag in ("jax_disable_jit", "jax_debug_key_reuse"):
                _SAVED[flag] = config.read(flag)
                config.update(flag, True)
        else:
            for flag, old in list(_SAVED.items()):
                config.update(flag, old)
            _SAVED.clear()
    if name not in ("jax_debug_nans", "jax_debug_infs", "fluxion_debug_mode"):
        return
    _sync()


def _sync() -> None:
    on = any(_kinds())
    if on == ENABLED[0]:
        return
    ENABLED[0] = on
    jit_module = sys.modules.get("fluxion.backend.jit")
    if on and jit_module is not None:
        for j in list(getattr(jit_module, "_ALL", ())):  # their fast dispatchers skip the checks
            j.fast.clear()
    if _plain_eager is not None:  # else the dispatcher sets it when it loads (``install``)
        _trace.set_eager_handler(checked_eager if on else _plain_eager)


config.on_change(_on_change)
if config.fluxion_debug_mode:
    _on_change("fluxion_debug_mode", True)
_sync()

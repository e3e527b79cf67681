"""Eager fills of a scalar built on the host while their signature is new.

An eager ``broadcast_in_dim`` of a scalar (``jnp.zeros``, ``jnp.ones``, ``jnp.full``,
``lax.full``, optimizer and model initialisers) compiles one XLA program per result shape and
dtype, as in JAX. Setup code makes most such shapes once or twice (a model's biases, an
optimizer's moments), and on a TPU each of those programs costs ~50-150 ms to compile against
a few microseconds to fill and copy a small array. So the first :data:`HOST_USES` eager calls of
a signature (result shape, dtype, weak type) fill the result with NumPy and place it where the
compiled program would have put it (the default device, uncommitted); a later call compiles the
program as before, so a loop that makes the same array every step keeps the compiled path.

Rank-0 integer and bool operations (comparisons, bitwise ``and``/``or``/``xor``/``not``,
``max``/``min``, wrapping ``add``/``sub``/``mul``, ``select_n``: flags and counters in setup code)
are computed by NumPy the same way (:func:`try_scalar`); floats are left to XLA, whose rounding and
subnormal handling differ between platforms.

Both apply only where the result is the same either way: a rank-0 operand on the default device,
uncommitted, with no sharding in its type, a NumPy dtype, a result of at most
:data:`HOST_MAX_BYTES` bytes, no transfer guard set, and no Explicit mesh active.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.backend import host_fill
    >>> z = jnp.zeros((2, 3), "float32")        # first use of f32[2,3]: filled on the host
    >>> z.tolist(), z.dtype.name, z.weak_type, z.committed
    ([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]], 'float32', False, False)
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fluxion.core import avals as _avals
from fluxion.core import dtypes as _dtypes
from fluxion.core.config import config

__all__ = ["HOST_USES", "HOST_MAX_BYTES", "try_fill", "try_scalar", "clear"]

#: Eager calls of one fill signature served on the host before its program is compiled.
HOST_USES = 8
#: Largest result (bytes) filled on the host; larger fills always run a compiled program.
HOST_MAX_BYTES = 1 << 20
_uses: dict[tuple, int] = {}
_LIMIT = 4096  # signatures remembered (the table is emptied when it reaches this size)


def _guarded() -> bool:
    for g in (config.jax_transfer_guard, config.jax_transfer_guard_host_to_device,
              config.jax_transfer_guard_device_to_host):
        if g is not None and g != "allow":
            return True
    return False


def _explicit_context() -> bool:
    # A set_mesh mesh with Explicit axes is active: results of untyped operands get its types,
    # which the compiled path gives them. core.avals.EXPLICIT alone stays set for the rest of the
    # process once any sharded type existed, so it is not the test (as backend/fused.py).
    return _avals.EXPLICIT[0] and _avals.CONTEXT_EXPLICIT[0]()


def try_fill(prim: Any, spec: Any, operand: Any, params: dict[str, Any], default_sharding: Any,
             put: Callable[..., Any]) -> Any:
    """The result of ``prim(operand, **params)`` for a rank-0 ``operand`` (a fill:
    ``broadcast_in_dim``) built by the primitive's ``host`` rule, or ``None`` where the compiled
    program must run (see the module docstring). ``spec`` is the operand's Spec,
    ``default_sharding`` the sharding of uncommitted arrays and ``put(host, dtype, weak, None)``
    places a host array there."""
    aval = spec.aval
    if aval.shape or spec.committed or getattr(aval, "sharding", None) is not None:
        return None
    dt = aval.dtype
    if not isinstance(dt, np.dtype) or dt == _dtypes.float0:
        return None
    out = prim.abstract_eval(aval, **params)
    shape = tuple(out.shape)
    if out.dtype != dt or out.size * dt.itemsize > HOST_MAX_BYTES:
        return None
    if _explicit_context() or spec.sharding != default_sharding or _guarded():
        return None
    key = (prim.name, shape, dt, aval.weak_type)
    n = _uses.get(key, 0)
    if n >= HOST_USES:
        return None
    if len(_uses) >= _LIMIT:
        _uses.clear()
    _uses[key] = n + 1
    host = np.array(prim.host(np.asarray(operand._value(), dtype=dt), **params), dtype=dt)
    return put(host, dt, out.weak_type, None)


def _exact(dt: Any) -> bool:
    return isinstance(dt, np.dtype) and (dt == np.bool_ or np.issubdtype(dt, np.integer))


def try_scalar(prim: Any, specs: tuple, args: list, params: dict[str, Any],
               default_sharding: Any, put: Callable[..., Any]) -> Any:
    """The result of an eager ``prim`` of rank-0 integer/bool operands computed by its ``host``
    rule, or ``None`` where the compiled program must run (as :func:`try_fill`, for the first
    :data:`HOST_USES` calls of a signature)."""
    name = prim.name
    if prim.host is None or params or prim.multiple_results:
        return None
    for s in specs:
        a = s.aval
        if a.shape or s.committed or getattr(a, "sharding", None) is not None \
                or not _exact(a.dtype) or s.sharding != default_sharding:
            return None
    if _explicit_context() or _guarded():
        return None
    key = (name, tuple((s.aval.dtype, s.aval.weak_type) for s in specs))
    n = _uses.get(key, 0)
    if n >= HOST_USES:
        return None
    out = prim.abstract_eval(*[s.aval for s in specs])
    if out.shape or not _exact(out.dtype):
        return None
    if len(_uses) >= _LIMIT:
        _uses.clear()
    _uses[key] = n + 1
    vals = [np.asarray(a._value()) for a in args]
    with np.errstate(over="ignore"):
        host = prim.host(*vals)
    if host is None:
        return None
    return put(np.asarray(host, dtype=out.dtype), out.dtype, out.weak_type, None)


def clear() -> None:
    """Forget the signatures seen (with the eager program caches: the next uses fill on the
    host again)."""
    _uses.clear()

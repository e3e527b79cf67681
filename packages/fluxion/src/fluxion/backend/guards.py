"""Transfer guards: JAX's ``jax_transfer_guard*`` levels applied where Fluxion moves data.

Three directions, each with its level (``jax_transfer_guard_<direction>``, falling back to
``jax_transfer_guard``): ``host_to_device``, ``device_to_host``, ``device_to_device``. A level acts
on *implicit* transfers (``"log"``, ``"disallow"``) or on explicit ones too (``"log_explicit"``,
``"disallow_explicit"``), as jaxlib's guard library decides: ``device_put`` is an explicit
host-to-device or device-to-device transfer, ``device_get`` an explicit device-to-host one;
everything else (a NumPy argument, ``jnp.asarray`` of host data, ``np.asarray(x)``, ``float(x)``,
an uncommitted array following a committed one) is implicit. A disallowed transfer raises
jaxlib's ``JaxRuntimeError`` with JAX's ``INVALID_ARGUMENT: Disallowed <direction> transfer:``
message; a logged one is a WARNING on the ``fluxion`` logger with JAX's text.

The levels are read once per flag change (``H2D``, ``D2H``, ``D2D`` hold the level when it can
act, else None), so the callers' test on hot paths is one module attribute. Where Fluxion's
behaviour differs from JAX's (Python numbers in operations are cached device constants, not
transfers) docs/api/config.md says why.

Example:
    >>> import fluxion, numpy as np
    >>> with fluxion.transfer_guard("disallow"):
    ...     try:
    ...         fluxion.jit(lambda x: x + 1)(np.ones(2))
    ...     except RuntimeError as e:
    ...         print(str(e).split(":")[1].strip())
    Disallowed host-to-device transfer
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any, Callable

import numpy as np

from fluxion.backend import client as _client
from fluxion.core.config import config

__all__ = ["H2D", "D2H", "D2D", "check", "explicit_get", "unchecked", "readback_copies", "host_to_device",
           "device_to_host", "device_to_device", "move", "note_host_copy", "host_copy_started"]

logger = logging.getLogger("fluxion")

#: The level of each direction while it is one that acts (not None / "allow"), else None.
H2D: str | None = None
D2H: str | None = None
D2D: str | None = None

_DIRECTIONS = ("host_to_device", "device_to_host", "device_to_device")
# ``get``: inside device_get (an explicit device-to-host transfer); ``off``: Fluxion's own read
_state = threading.local()


def _level(direction: str) -> str | None:
    v = config.read(f"jax_transfer_guard_{direction}") or config.jax_transfer_guard
    return None if v == "allow" else v


def _refresh(name: str | None = None, value: Any = None) -> None:
    global H2D, D2H, D2D
    if name is None or name.startswith("jax_transfer_guard"):
        H2D, D2H, D2D = (_level(d) for d in _DIRECTIONS)


config.on_change(_refresh)
_refresh()


def check(direction: str, level: str | None, explicit: bool, describe: Callable[[], str]) -> None:
    """Apply ``level`` (a direction's level, None: allow) to one transfer: raise, log, or pass.
    ``describe()`` gives JAX's description of the transfer (called only when it is needed).

    Example:
        >>> check("host-to-device", "disallow", True, lambda: "aval=...")  # explicit: allowed
    """
    if level is None or level == "allow":
        return
    if explicit and not level.endswith("_explicit"):
        return
    if level.startswith("disallow"):  # JAX raises jaxlib's class (loaded: a transfer needs it)
        raise _client.jaxlib_ext().JaxRuntimeError(
            f"INVALID_ARGUMENT: Disallowed {direction} transfer: {describe()}")
    logger.warning("%s transfer: %s", direction, describe())


class _StateFlag:
    """Context manager setting one flag of this thread's guard state for its extent."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __enter__(self) -> None:
        self._prev = getattr(_state, self._name, False)
        setattr(_state, self._name, True)

    def __exit__(self, *exc: Any) -> None:
        setattr(_state, self._name, self._prev)


def explicit_get() -> _StateFlag:
    """Context manager: device-to-host reads inside it are explicit (``device_get``'s).

    Example:
        >>> with explicit_get():
        ...     pass
    """
    return _StateFlag("get")


# Element types jaxlib copies out of a CPU buffer (packed below a byte), where others are read
# in place: their reads on the CPU are guarded device-to-host transfers too.
_SUB_BYTE = frozenset({"int2", "uint2", "int4", "uint4", "float4_e2m1fn"})


def unchecked() -> _StateFlag:
    """Context manager: device-to-host reads inside it are Fluxion's own (a move between devices
    made through the host, which the guards judge as JAX's move), not checked.

    Example:
        >>> with unchecked():
        ...     pass
    """
    return _StateFlag("off")


def readback_copies(sharding: Any, dtype: Any) -> bool:
    """Whether reading an array of ``dtype`` with ``sharding`` on the host copies it from a
    device (a guarded device-to-host transfer), as jaxlib decides: on every platform but the
    CPU, whose buffers NumPy reads in place (zero-copy, for every shard as for one), except
    those of sub-byte element types (int4, float4_e2m1fn, ...), which jaxlib copies there too.

    Example:
        >>> import fluxion.numpy as jnp
        >>> x = jnp.ones(2)
        >>> readback_copies(x.sharding, x.dtype), readback_copies(x.sharding, np.dtype("int4"))
        (False, True)
    """
    if getattr(dtype, "name", None) in _SUB_BYTE:
        return True
    try:
        devices = sharding._internal_device_list
    except AttributeError:
        return True
    return any(d.platform != "cpu" for d in devices)


def host_to_device(aval: Any, dst_sharding: Any, explicit: bool = False) -> None:
    """The host-to-device guard for a host value of ``aval`` placed with ``dst_sharding``.

    Example:
        >>> host_to_device(None, None)  # no guard set: nothing to check
    """
    level = H2D
    if level is not None:
        check("host-to-device", level, explicit,
              lambda: f"aval={aval!r}, dst_sharding={dst_sharding!r}")


def device_to_device(aval: Any, dst_sharding: Any, explicit: bool = False) -> None:
    """The device-to-device guard for an array of ``aval`` copied to ``dst_sharding``.

    Example:
        >>> device_to_device(None, None)  # no guard set: nothing to check
    """
    level = D2D
    if level is not None:
        check("device-to-device", level, explicit,
              lambda: f"aval={aval!r}, dst_sharding={dst_sharding!r}")


def _xla_type_name(dt: np.dtype) -> str:
    # jaxlib names the element type as XLA does (F32, BF16, S32, PRED, F8E4M3FN, S4, ...)
    name = dt.name
    if dt.kind == "b":
        return "PRED"
    if name == "bfloat16":
        return "BF16"
    if dt.kind == "V":  # ml_dtypes' types: float8_e4m3fn -> F8E4M3FN, int4 -> S4, uint2 -> U2
        if name.startswith("float"):
            return "F" + name[len("float"):].replace("_", "").upper()
        return ("U" if name.startswith("u") else "S") + name.lstrip("uint")
    return {"i": "S", "u": "U", "f": "F", "c": "C"}.get(dt.kind, "") + str(dt.itemsize * 8)


def device_to_host(shape: tuple, dtype: np.dtype, device: Any) -> None:
    """The device-to-host guard for reading an array of ``shape`` and ``dtype`` held on
    ``device`` (its first device): explicit inside :class:`explicit_get` (``device_get``).

    Example:
        >>> device_to_host((2,), np.dtype("float32"), None)  # no guard set: nothing to check
    """
    level = D2H
    if level is not None and not getattr(_state, "off", False):
        check("device-to-host", level, getattr(_state, "get", False),
              lambda: f"shape=({','.join(map(str, shape))}), dtype={_xla_type_name(dtype)}, "
                      f"device={device}")


def _index_key(index: tuple) -> tuple:
    return tuple((s.start, s.stop, s.step) if isinstance(s, slice) else s for s in index)


def move(aval: Any, src: Any, dst: Any, explicit: bool = False) -> None:
    """The guards of moving an array of ``aval`` from sharding ``src`` to ``dst`` as JAX moves
    it: a single-device array, or shards that some device holds already, are copied between
    devices (device-to-device); a part that no device holds whole is gathered on the host and
    placed again (device-to-host, implicit, then host-to-device). A shard already on its device
    is no transfer.

    Example:
        >>> move(None, None, None)  # no guard set: nothing to check
    """
    if H2D is None and D2H is None and D2D is None:
        return
    src_devs = list(src._internal_device_list)
    if len(src_devs) == 1:
        if any(d != src_devs[0] for d in dst._internal_device_list):
            device_to_device(aval, dst, explicit)
        return
    held: dict = {}
    for d, ix in src.devices_indices_map(aval.shape).items():
        held.setdefault(_index_key(ix), set()).add(d)
    copies = False
    for d, ix in dst.devices_indices_map(aval.shape).items():
        where = held.get(_index_key(ix))
        if where is None:
            if readback_copies(src, aval.dtype):
                device_to_host(aval.shape, aval.dtype, src_devs[0])
            host_to_device(aval.update(weak_type=False), dst, explicit)
            return
        copies = copies or d not in where
    if copies:
        device_to_device(aval, dst, explicit)


# id -> weak reference of the Arrays whose host copy ``copy_to_host_async`` started on a
# platform other than the CPU: their read waits for that copy (jaxlib keeps it as the buffer's
# host value), no new transfer, so the device-to-host guard does not see it again (as JAX).
_HOST_COPIES: dict[int, Any] = {}


def note_host_copy(x: Any) -> None:
    """Record that ``x``'s host copy was started (``Array.copy_to_host_async``).

    Example:
        >>> class A: pass
        >>> a = A(); note_host_copy(a); host_copy_started(a)
        True
    """
    i = id(x)
    _HOST_COPIES[i] = weakref.ref(x, lambda _, i=i: _HOST_COPIES.pop(i, None))


def host_copy_started(x: Any) -> bool:
    """Whether ``x``'s host copy was started (its read is then no new transfer).

    Example:
        >>> host_copy_started(object())
        False
    """
    r = _HOST_COPIES.get(id(x))
    return r is not None and r() is x

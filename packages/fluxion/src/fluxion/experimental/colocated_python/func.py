"""Colocated Python functions: specialization, output-spec discovery and execution.

A wrapper holds a :class:`Specialization` (input specs, an output-spec function, devices; each
may be fixed once with ``specialize``). A call looks up, by the input specs of its arguments,
the specialized function: built once per input specs, it has the function after the
serialization round trip and the output specs, either given by ``out_specs_fn`` or discovered
by the first run. Results are checked against the output specs and put on their shardings.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any

from fluxion import tree_util
from fluxion.backend.array import Array
from fluxion.backend.transfer import device_put
from fluxion.core.avals import ShapeDtypeStruct
from fluxion.core.trace import Tracer
from fluxion.experimental.colocated_python import serialization

__all__ = ["Specialization", "make_callable"]


@dataclasses.dataclass(frozen=True)
class Specialization:
    """What a colocated function is fixed to: input specs, output specs (or a function that
    computes them from the input specs) and devices. Each is set at most once."""

    in_specs_treedef: Any = None
    in_specs_leaves: tuple | None = None
    out_specs_fn: Callable[..., Any] | None = None
    out_specs_treedef: Any = None
    out_specs_leaves: tuple | None = None
    devices: Any = None

    def update(self, **changes: Any) -> Specialization:
        """A copy with ``changes`` applied; setting a field that is already set is an error."""
        for name, value in changes.items():
            if value is not None and getattr(self, name) is not None:
                what = name.replace("_treedef", "").replace("_leaves", "")
                raise ValueError(f"colocated_python: {what} already specified")
        if changes.get("devices") is not None:
            changes["devices"] = serialization.DeviceList(tuple(changes["devices"]))
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})


def _get_spec(x: Any) -> ShapeDtypeStruct:
    """The spec (shape, dtype, sharding) of a concrete array argument or result."""
    if isinstance(x, Tracer):
        raise TypeError("colocated_python: a colocated function runs Python on concrete arrays "
                        "and cannot be called under a transformation (jit, vmap, grad); got a "
                        f"traced value of shape {x.shape} and dtype {x.dtype}")
    if not isinstance(x, Array):
        raise ValueError("colocated_python only supports jax.Array as input and output, but "
                         f"got {type(x)}.")
    return ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding)


def _infer_devices(leaves: Sequence[Any]) -> Any:
    """The one device list all array arguments share."""
    found = {x.sharding._internal_device_list for x in leaves}
    if len(found) != 1:
        raise ValueError("colocated_python: all arguments must use the same device list, but got "
                         f"multiple device lists: {sorted(map(str, found))}.")
    return found.pop()


def _same_spec(a: ShapeDtypeStruct, b: Any) -> bool:
    return tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype


def _check_leaves(where: str, treedef: Any, leaves: Sequence[Any], want_treedef: Any,
                  want_leaves: Sequence[Any]) -> None:
    if treedef != want_treedef:
        raise ValueError(f"colocated_python: {where} structure {treedef} does not match the "
                         f"specialized structure {want_treedef}")
    for i, (x, spec) in enumerate(zip(leaves, want_leaves)):
        got = _get_spec(x)
        if not _same_spec(got, spec):
            raise ValueError(f"colocated_python: {where} leaf {i} has shape {tuple(got.shape)} "
                             f"and dtype {got.dtype}, but the specialization says "
                             f"{tuple(spec.shape)} and {spec.dtype}")


class _Specialized:
    """One specialization with its input specs fixed: the serialized-then-restored function
    and, once known, its output specs."""

    def __init__(self, fun: Callable[..., Any], spec: Specialization) -> None:
        self.spec = spec
        self.lock = threading.Lock()
        # Ship the function as JAX does; this also fixes its closure as of now.
        self.fun = serialization._deserialize(serialization._serialize(fun))
        if spec.out_specs_treedef is None and spec.out_specs_fn is not None:
            ins = tree_util.tree_unflatten(spec.in_specs_treedef, list(spec.in_specs_leaves))
            args_specs, kwargs_specs = ins
            outs = spec.out_specs_fn(*args_specs, **kwargs_specs)
            leaves, treedef = tree_util.tree_flatten(outs)
            self.spec = spec.update(out_specs_treedef=treedef, out_specs_leaves=tuple(leaves))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        result = self.fun(*args, **kwargs)
        leaves, treedef = tree_util.tree_flatten(result)
        specs = [_get_spec(x) for x in leaves]
        with self.lock:
            if self.spec.out_specs_treedef is None:
                # First run: the output specs travel back serialized, as in JAX.
                treedef_, specs_ = serialization._deserialize(
                    serialization._serialize((treedef, tuple(specs))))
                self.spec = self.spec.update(out_specs_treedef=treedef_,
                                             out_specs_leaves=specs_)
                return result
        _check_leaves("output", treedef, leaves, self.spec.out_specs_treedef,
                      self.spec.out_specs_leaves)
        placed = []
        for x, got, want in zip(leaves, specs, self.spec.out_specs_leaves):
            target = getattr(want, "sharding", None)
            if target is not None and not got.sharding.is_equivalent_to(target, x.ndim):
                x = device_put(x, target)
            placed.append(x)
        return tree_util.tree_unflatten(treedef, placed)


def _make_callable(fun: Callable[..., Any], spec: Specialization) -> Any:
    cache: dict[Any, _Specialized] = {}
    lock = threading.Lock()

    def specialize(in_specs: Any = None, out_specs_fn: Callable[..., Any] | None = None,
                   devices: Sequence[Any] | None = None) -> Any:
        """A wrapper with input specs (a pytree of ShapeDtypeStruct for ``(args, kwargs)``),
        an output-spec function and/or devices fixed."""
        if in_specs is None:
            leaves, treedef = None, None
        else:
            leaves, treedef = tree_util.tree_flatten(in_specs)
            leaves = tuple(leaves)
        return _make_callable(fun, spec.update(in_specs_treedef=treedef, in_specs_leaves=leaves,
                                               out_specs_fn=out_specs_fn, devices=devices))

    @functools.wraps(fun, updated=())
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        leaves, treedef = tree_util.tree_flatten((args, kwargs))
        if not leaves and spec.devices is None:
            raise ValueError("No devices found. colocated_python function without input "
                             "arguments must be first specialized with devices.")
        in_specs = tuple(_get_spec(x) for x in leaves)
        if spec.in_specs_treedef is not None:
            _check_leaves("input", treedef, leaves, spec.in_specs_treedef, spec.in_specs_leaves)
        devices = spec.devices if spec.devices is not None else _infer_devices(leaves)
        key = (treedef, tuple((tuple(s.shape), s.dtype, s.sharding) for s in in_specs), devices)
        with lock:
            specialized = cache.get(key)
            if specialized is None:
                full = spec
                if spec.in_specs_treedef is None:
                    full = full.update(in_specs_treedef=treedef, in_specs_leaves=in_specs)
                if spec.devices is None:
                    full = full.update(devices=devices)
                specialized = cache[key] = _Specialized(fun, full)
        return specialized(*args, **kwargs)

    wrapper.specialize = specialize  # type: ignore[attr-defined]
    return wrapper


def make_callable(fun: Callable[..., Any]) -> Any:
    """The unspecialized colocated wrapper of ``fun`` (see ``colocated_python``)."""
    return _make_callable(fun, Specialization())

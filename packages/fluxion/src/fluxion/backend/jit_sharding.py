"""Where a jitted function runs: ``device=``, ``backend=``, ``in_shardings``, ``out_shardings``.

Everything is checked in Python, before XLA sees a program: the types of the shardings when
``jit`` is called, and each sharding against its argument's rank, shape and mesh when the
function is called (a mismatch reaching XLA would crash the process).

Example:
    >>> import fluxion
    >>> p = Placement.make("f", None, None, None, None)
    >>> p is None
    True
"""

from __future__ import annotations

import warnings
from typing import Any, Sequence

from fluxion.backend import client as _client
from fluxion.backend.sharding_impl import (
    NamedSharding,
    PartitionSpec,
    Sharding,
    check_spec,
    context_mesh,
)
from fluxion.core.errors import user_frame
from fluxion.tree_util import physical as tree_util

__all__ = ["Placement", "incompatible_out_devices"]


def _where() -> str:
    f = user_frame()
    return f" (at {f.f_code.co_filename}:{f.f_lineno})" if f is not None else ""


def _is_leaf(x: Any) -> bool:
    return x is None or isinstance(x, (PartitionSpec, Sharding)) or hasattr(
        x, "_to_xla_hlo_sharding")


def _check_tree(fname: str, what: str, tree: Any) -> Any:
    """``tree`` with lists made tuples (hashable); raises TypeError on a leaf that is not a
    Sharding, a PartitionSpec or None."""
    for leaf in tree_util.tree_leaves(tree, is_leaf=_is_leaf):
        if leaf is None:
            continue
        if not _is_leaf(leaf):
            raise TypeError(
                f"jit of {fname}: {what} leaves must be Sharding objects (NamedSharding, "
                f"SingleDeviceSharding), PartitionSpecs or None, got {type(leaf).__name__}: "
                f"{leaf!r}{_where()}")
        # A bare PartitionSpec is resolved against the mesh in context when the function is
        # called (as in JAX), so ``jit(f, in_shardings=P())`` may be made outside any mesh.
    return tree_util.tree_map(lambda x: x, tree, is_leaf=_is_leaf)


class Placement:
    """The placement options of one ``jit``: the device of ``device=``/``backend=`` (every
    argument is moved there, as by ``device_put``) or sharding trees."""

    __slots__ = ("devices", "in_shardings", "out_shardings", "_hash")

    def __init__(self, devices: tuple | None, in_shardings: Any, out_shardings: Any) -> None:
        self.devices = devices
        self.in_shardings = in_shardings
        self.out_shardings = out_shardings
        try:
            self._hash = hash((devices, _freeze(in_shardings), _freeze(out_shardings)))
        except TypeError:
            self._hash = id(self)

    @staticmethod
    def make(fname: str, device: Any, backend: Any, in_shardings: Any,
             out_shardings: Any) -> "Placement | None":
        """Validated options, or None when none is given."""
        if device is None and backend is None and in_shardings is None and out_shardings is None:
            return None
        if device is not None or backend is not None:
            # JAX 0.10.2 deprecates both; they make every argument a device_put to the device
            # (committed arguments elsewhere included) and commit the results there.
            warnings.warn("backend and device argument on jit is deprecated. You can use "
                          "`fluxion.device_put(..., fluxion.local_devices(backend=\"cpu\")[0])` "
                          "on the inputs to the jitted function to get the same behavior.",
                          DeprecationWarning, stacklevel=3)
            if device is not None and backend is not None:
                raise ValueError(f"jit of {fname}: can't specify both a device and a backend "
                                 f"for jit, got device={device!r} and backend={backend!r}"
                                 f"{_where()}")
            for what, given in (("in_shardings", in_shardings), ("out_shardings", out_shardings)):
                if given is not None:
                    raise ValueError(f"jit of {fname}: If backend or device is specified on "
                                     f"jit, then {what} should not be specified.{_where()}")
        devices = None
        if device is not None:
            if isinstance(device, str) or not hasattr(device, "platform"):
                raise TypeError(f"jit of {fname}: device must be a Device (from "
                                f"fluxion.devices()), got {device!r}{_where()}")
            devices = (device,)
        elif backend is not None:
            if not isinstance(backend, str):
                raise TypeError(f"jit of {fname}: backend must be a platform name such as "
                                f"'cpu', got {backend!r}{_where()}")
            devices = (_client.get_client(backend).local_devices()[0],)
        ins = _check_tree(fname, "in_shardings", in_shardings) if in_shardings is not None else None
        outs = (_check_tree(fname, "out_shardings", out_shardings)
                if out_shardings is not None else None)
        return Placement(devices, ins, outs)

    def __eq__(self, other: Any) -> bool:
        return (type(other) is Placement and self.devices == other.devices
                and _freeze(self.in_shardings) == _freeze(other.in_shardings)
                and _freeze(self.out_shardings) == _freeze(other.out_shardings))

    def __hash__(self) -> int:
        return self._hash

    # -------------------------------------------------------------- per call
    def arg_shardings(self, fname: str, args: tuple, kwargs: dict, avals: Sequence[Any],
                      names: Sequence[str]) -> list[Any]:
        """One sharding (or None) per dynamic argument leaf, checked against its aval."""
        n = len(avals)
        if self.in_shardings is None:
            return [None] * n
        tree = self.in_shardings
        if not isinstance(tree, tuple) or isinstance(tree, PartitionSpec):
            tree = (tree,) * len(args) if _is_leaf(tree) else tree
        if isinstance(tree, tuple) and len(tree) != len(args) and not _is_leaf(self.in_shardings):
            raise ValueError(
                f"jit of {fname}: in_shardings has {len(tree)} entries but the function was "
                f"called with {len(args)} positional arguments{_where()}")
        try:
            pos = tree_util.broadcast_prefix(tree, tuple(args), is_leaf=_is_leaf)
        except ValueError as e:
            raise ValueError(f"jit of {fname}: in_shardings is not a prefix of the arguments' "
                             f"structure: {e}{_where()}") from None
        out = pos + [None] * (n - len(pos))  # keyword arguments: unspecified
        return [self._resolve(fname, "in_shardings", s, a, nm)
                for s, a, nm in zip(out, avals, names)]

    def result_shardings(self, fname: str, out_tree: Any, avals: Sequence[Any]) -> list[Any]:
        """One sharding (or None: the compiler's choice) per result leaf."""
        if self.out_shardings is None:
            return [None] * len(avals)
        tree = self.out_shardings
        if _is_leaf(tree):
            flat = [tree] * len(avals)
        else:
            try:
                flat = tree_util.broadcast_prefix(
                    tree, tree_util.tree_unflatten(out_tree, list(range(len(avals)))),
                    is_leaf=_is_leaf)
            except ValueError as e:
                raise ValueError(f"jit of {fname}: out_shardings is not a prefix of the "
                                 f"results' structure: {e}{_where()}") from None
        return [self._resolve(fname, "out_shardings", s, a, f"result {i}")
                for i, (s, a) in enumerate(zip(flat, avals))]

    def out_devices(self) -> tuple | None:
        """The devices of the first result sharding (a computation with out_shardings runs
        there, even on uncommitted arguments), or None."""
        if self.out_shardings is None:
            return None
        for leaf in tree_util.tree_leaves(self.out_shardings, is_leaf=_is_leaf):
            if leaf is None:
                continue
            if isinstance(leaf, PartitionSpec):
                mesh = context_mesh()
                return tuple(mesh._internal_device_list) if mesh is not None else None
            return tuple(leaf._internal_device_list)
        return None

    @staticmethod
    def _resolve(fname: str, what: str, s: Any, aval: Any, name: str) -> Any:
        if s is None:
            return None
        if isinstance(s, PartitionSpec):
            mesh = context_mesh()
            if mesh is None:
                raise ValueError(f"jit of {fname}: {what} for {name} is a bare PartitionSpec "
                                 f"{s!r} and no mesh is set: call it under "
                                 "`fluxion.sharding.set_mesh(mesh)` (or `with mesh:`), or pass "
                                 f"NamedSharding(mesh, spec){_where()}")
            s = NamedSharding(mesh, s)
        if isinstance(s, NamedSharding):
            try:
                check_spec(f"jit of {fname}", f"{what} for {name}", s.mesh, s.spec,
                           len(aval.shape), tuple(aval.shape))
            except ValueError as e:
                raise ValueError(f"{e}{_where()}") from None
        return s


def _freeze(tree: Any) -> Any:
    if tree is None:
        return None
    leaves, treedef = tree_util.tree_flatten(tree, is_leaf=_is_leaf)
    return (treedef, tuple(leaves))


def _devs(devices: Sequence[Any]) -> str:
    return (f"device ids {[d.id for d in devices]} on platform "
            f"{devices[0].platform.upper() if devices else '?'}")


def incompatible_out_devices(fname: str, placement: "Placement | None", devices: tuple,
                             first_out: Any, out: Any, arg: tuple | None) -> ValueError:
    """JAX's error when an output sharding is on other devices (or the same devices in another
    order) than the computation: its arguments, its ``in_shardings`` or another output sharding.
    ``arg``: ``(name, aval)`` of the first argument when the arguments decide, else None.

    Example:
        >>> import fluxion
        >>> d = fluxion.devices()[0]
        >>> str(incompatible_out_devices("f", None, (d,), None, fluxion.sharding.SingleDeviceSharding(d),
        ...                               None)).split(".")[0]
        'Received incompatible devices for jitted computation'
    """
    if placement is not None and placement.in_shardings is not None:
        first = f"ARG_SHARDING with {_devs(devices)}"
    elif first_out is not None:
        first = f"explicit output sharding with {_devs(devices)}"
    elif arg is not None:
        name, aval = arg
        first = (f"argument {name} of {fname} with shape {aval.dtype.name}"
                 f"[{','.join(map(str, aval.shape))}] and with {_devs(devices)}")
    else:
        first = f"the computation's {_devs(devices)}"
    return ValueError(
        f"Received incompatible devices for jitted computation. Got {first} and explicit output "
        f"sharding with {_devs(tuple(out._internal_device_list))} (jit of {fname}){_where()}")

"""Sharding objects that jaxlib accepts, written in Python (jaxlib's NamedSharding needs jax).

- :class:`Mesh` / :class:`AbstractMesh`: devices laid out on named axes; :class:`AxisType`.
- :class:`PartitionSpec` (``P``): which mesh axes split each array dimension.
- :class:`NamedSharding` (mesh + spec), :class:`SingleDeviceSharding`, and :class:`HloSharding`
  (any sharding XLA chose that no spec over the mesh describes).

Each sharding turns into an ``xla_client.HloSharding`` (``_to_xla_hlo_sharding``) whose tile
assignment holds *positions in the sharding's device list* (XLA's logical partition ids), and
says which slice of a global array each device holds (``devices_indices_map``).

Example:
    >>> import numpy as np, fluxion
    >>> mesh = Mesh(np.array(fluxion.devices()[:1]), ("x",))
    >>> NamedSharding(mesh, PartitionSpec("x")).shard_shape((4,))
    (4,)
"""

from __future__ import annotations

import abc
import collections
import dataclasses
import enum
import itertools
import math
import threading
from typing import Any, Sequence

import numpy as np

from fluxion.backend import client as _client
from fluxion.core.avals import DuplicateSpecError
from fluxion.core.config import config
from fluxion.core.errors import user_source_line

_xc, _jax = _client._load()  # sets the log level before jaxlib is imported

__all__ = ["SingleDeviceSharding", "NamedSharding", "HloSharding", "Mesh", "AbstractMesh",
           "AbstractDevice", "DuplicateSpecError", "use_abstract_mesh", "abstract_context_mesh",
           "PartitionSpec", "AxisType", "Sharding", "mesh_hlo_sharding", "named_from_hlo",
           "check_spec", "Device"]

Device = _jax.Device
_REPLICATED = _xc.HloSharding.replicate()
_SUB_REPLICATED = _xc.OpSharding.Type.REPLICATED
_SUB_MANUAL = _xc.OpSharding.Type.MANUAL


class AxisType(enum.Enum):
    """How a mesh axis is sharded: by the compiler (``Auto``), by the array types (``Explicit``)
    or by the user inside ``shard_map`` (``Manual``)."""

    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self) -> str:
        return self.name


class _Unconstrained:
    def __repr__(self) -> str:
        return "UNCONSTRAINED"


class PartitionSpec(tuple):
    """For each array dimension: the mesh axis (a name), axes (a tuple of names) or ``None``
    (not split) that shards it. Trailing dimensions not listed are not split.

    As JAX's: an entry of one name in a tuple is that name and ``()`` is ``None``; two specs are
    equal when their entries are (``P('x', None) != P('x')``, though both shard alike: compare
    shardings with ``is_equivalent_to``), and never equal to a plain tuple.

    Example:
        >>> PartitionSpec("x", None)
        P('x', None)
        >>> PartitionSpec(("x",)) == PartitionSpec("x"), PartitionSpec("x", None) == PartitionSpec("x")
        (True, False)
    """

    UNCONSTRAINED = _Unconstrained()

    def __new__(cls, *partitions: Any) -> "PartitionSpec":
        for p in partitions:
            if not (p is None or isinstance(p, str) or p is PartitionSpec.UNCONSTRAINED
                    or (isinstance(p, (tuple, list)) and all(isinstance(a, str) for a in p))):
                raise TypeError(
                    "PartitionSpec: each entry must be a mesh axis name, a tuple of names or "
                    f"None, got {p!r}")
        return tuple.__new__(cls, tuple(_canonical_entry(p) for p in partitions))

    def __repr__(self) -> str:
        return "P" + tuple.__repr__(self)

    def __reduce__(self):
        return (PartitionSpec, tuple(self))

    def _normalized(self, ndim: int) -> tuple:
        """One entry per dimension: a tuple of axis names (empty: not split)."""
        out = []
        for p in tuple(self) + (None,) * (ndim - len(self)):
            if p is None or p is PartitionSpec.UNCONSTRAINED:
                out.append(())
            elif isinstance(p, str):
                out.append((p,))
            else:
                out.append(tuple(p))
        return tuple(out)

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, PartitionSpec):
            return tuple.__eq__(self, other)
        return False if isinstance(other, tuple) else NotImplemented

    def __ne__(self, other: Any) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(("P", *self))


def _canonical_entry(p: Any) -> Any:
    if isinstance(p, (tuple, list)):
        return None if not p else p[0] if len(p) == 1 else tuple(p)
    return p


@dataclasses.dataclass(frozen=True)
class AbstractDevice:
    """The kind of device an :class:`AbstractMesh` describes, without a device (JAX's
    ``jax.sharding.AbstractDevice``; a concrete mesh's ``abstract_mesh`` carries its own).

    Example:
        >>> AbstractDevice("cpu", None, "cpu")
        AbstractDevice(device_kind=cpu, num_cores=None, platform=cpu)
    """

    device_kind: str
    num_cores: int | None
    platform: str

    def __repr__(self) -> str:
        return f"AbstractDevice({self._repr()})"

    def _repr(self) -> str:
        return (f"device_kind={self.device_kind}, num_cores={self.num_cores}, "
                f"platform={self.platform}")


class AbstractMesh:
    """A mesh's axis names, sizes and types, without devices (``abstract_device``: the kind of
    device it describes, if known).

    Example:
        >>> AbstractMesh((2, 4), ("x", "y")).size
        8
    """

    def __init__(self, axis_sizes: Sequence[int], axis_names: Sequence[str],
                 axis_types: Any = None, *, abstract_device: AbstractDevice | None = None
                 ) -> None:
        self.axis_sizes = tuple(int(s) for s in axis_sizes)
        self.axis_names = tuple(axis_names)
        if len(self.axis_sizes) != len(self.axis_names):
            raise ValueError(f"AbstractMesh: {len(self.axis_sizes)} axis sizes but "
                             f"{len(self.axis_names)} axis names")
        self.axis_types = _axis_types("AbstractMesh", axis_types, len(self.axis_names),
                                      AxisType.Auto)
        self.abstract_device = abstract_device

    @property
    def shape(self) -> collections.OrderedDict:
        return collections.OrderedDict(zip(self.axis_names, self.axis_sizes))

    @property
    def shape_tuple(self) -> tuple:
        return tuple(zip(self.axis_names, self.axis_sizes))

    @property
    def size(self) -> int:
        return math.prod(self.axis_sizes) if self.axis_sizes else 0

    @property
    def empty(self) -> bool:
        return not self.axis_names

    @property
    def abstract_mesh(self) -> "AbstractMesh":
        return self

    # JAX's mesh predicates (False for a mesh without axes, as in JAX); flax reads them
    @property
    def are_all_axes_explicit(self) -> bool:
        return bool(self.axis_types) and all(t == AxisType.Explicit for t in self.axis_types)

    @property
    def are_all_axes_auto(self) -> bool:
        return bool(self.axis_types) and all(t == AxisType.Auto for t in self.axis_types)

    @property
    def are_all_axes_manual(self) -> bool:
        return bool(self.axis_types) and all(t == AxisType.Manual for t in self.axis_types)

    def update(self, axis_sizes: Sequence[int] | None = None,
               axis_names: Sequence[str] | None = None, axis_types: Any = None,
               **kwargs: Any) -> "AbstractMesh":
        """This mesh with the given fields replaced (JAX's ``AbstractMesh.update``).

        Example:
            >>> AbstractMesh((2,), ("x",)).update(axis_sizes=(4,)).size
            4
        """
        kwargs.setdefault("abstract_device", self.abstract_device)
        return AbstractMesh(self.axis_sizes if axis_sizes is None else axis_sizes,
                            self.axis_names if axis_names is None else axis_names,
                            self.axis_types if axis_types is None else axis_types, **kwargs)

    def update_axis_types(self, name_to_type: dict) -> "AbstractMesh":
        """This mesh with the types of the named axes replaced.

        Example:
            >>> AbstractMesh((2,), ("x",)).update_axis_types({"x": AxisType.Explicit})
            AbstractMesh('x': 2, axis_types=(Explicit,))
        """
        return self.update(axis_types=tuple(name_to_type.get(n, t)
                                            for n, t in zip(self.axis_names, self.axis_types)))

    # what only a concrete mesh has: JAX's ValueError, naming the attribute
    devices = property(lambda self: _no_devices("devices"))
    device_ids = property(lambda self: _no_devices("device_ids"))
    is_multi_process = property(lambda self: _no_devices("is_multi_process"))
    local_devices = property(lambda self: _no_devices("local_devices"))
    local_mesh = property(lambda self: _no_devices("local_mesh"))

    def __enter__(self) -> None:
        _no_devices("__enter__")

    def __exit__(self, *exc: Any) -> None:
        _no_devices("__exit__")

    def _key(self) -> tuple:
        return (self.axis_sizes, self.axis_names, self.axis_types, self.abstract_device)

    def __eq__(self, other: Any) -> bool:
        return type(other) is AbstractMesh and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        axes = ", ".join(f"'{n}': {s}" for n, s in zip(self.axis_names, self.axis_sizes))
        dev = "" if self.abstract_device is None else f", {self.abstract_device._repr()}"
        return f"AbstractMesh({axes or '()'}, axis_types={self.axis_types}{dev})"


def _no_devices(name: str) -> Any:
    raise ValueError(f"AbstractMesh does not implement {name}")


def _axis_types(fname: str, axis_types: Any, n: int, default: AxisType) -> tuple:
    if axis_types is None:
        return (default,) * n
    if isinstance(axis_types, AxisType):
        return (axis_types,) * n
    types = tuple(axis_types)
    if len(types) != n or not all(isinstance(t, AxisType) for t in types):
        raise ValueError(f"{fname}: axis_types must be {n} AxisType values, got {axis_types!r}")
    return types


_MESH_STATE = threading.local()


class Mesh:
    """Devices arranged in an n-dimensional array whose axes have names.

    ``with mesh:`` makes it the mesh that bare ``PartitionSpec`` s refer to (as in JAX).

    Example:
        >>> import numpy as np, fluxion
        >>> m = Mesh(np.array(fluxion.devices()[:1]).reshape(1, 1), ("x", "y"))
        >>> m.shape
        {'x': 1, 'y': 1}
    """

    def __init__(self, devices: Any, axis_names: Sequence[str] | str,
                 axis_types: Any = None) -> None:
        devs = np.asarray(devices, dtype=object)
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        axis_names = tuple(axis_names)
        if devs.ndim != len(axis_names):
            raise ValueError(f"Mesh: the devices array has {devs.ndim} dimensions "
                             f"(shape {devs.shape}) but {len(axis_names)} axis names were given: "
                             f"{axis_names}")
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"Mesh: repeated axis names {axis_names}")
        flat = list(devs.flat)
        if not all(isinstance(d, _jax.Device) for d in flat):
            raise TypeError(f"Mesh: devices must be Device objects, got {flat[:3]!r}...")
        if len(set(flat)) != len(flat):
            raise ValueError("Mesh: a device appears more than once")
        self.devices = devs
        self.axis_names = axis_names
        self.axis_types = _axis_types("Mesh", axis_types, len(axis_names), AxisType.Auto)
        self._internal_device_list = _jax.DeviceList(tuple(flat))
        self._hash = hash((tuple(d.id for d in flat), devs.shape, axis_names, self.axis_types))
        self._abstract: AbstractMesh | None = None

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return tuple(self.devices.shape)

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.axis_names, self.devices.shape))

    @property
    def shape_tuple(self) -> tuple:
        return tuple(zip(self.axis_names, self.devices.shape))

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def empty(self) -> bool:
        return self.devices.size == 0

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    @property
    def local_devices(self) -> list:
        return [d for d in self.devices.flat if d.process_index == d.client.process_index()]

    @property
    def abstract_mesh(self) -> AbstractMesh:
        """Its axes without its devices, with the kind of its first device (as JAX's)."""
        if self._abstract is None:
            if not self.axis_names:
                self._abstract = AbstractMesh((), ())
            else:
                d = self.devices.flat[0]
                cores = (getattr(d, "num_cores" if d.platform == "tpu" else "core_count", None)
                         if d.platform in ("tpu", "gpu") else None)
                self._abstract = AbstractMesh(
                    self.axis_sizes, self.axis_names, self.axis_types,
                    abstract_device=AbstractDevice(d.device_kind, cores, d.platform))
        return self._abstract

    @property
    def are_all_axes_explicit(self) -> bool:
        return self.abstract_mesh.are_all_axes_explicit

    @property
    def are_all_axes_auto(self) -> bool:
        return self.abstract_mesh.are_all_axes_auto

    @property
    def are_all_axes_manual(self) -> bool:
        return self.abstract_mesh.are_all_axes_manual

    def __eq__(self, other: Any) -> bool:
        return (type(other) is Mesh and self._hash == other._hash
                and self.axis_names == other.axis_names and self.axis_types == other.axis_types
                and self.devices.shape == other.devices.shape
                and all(a is b or a == b for a, b in zip(self.devices.flat, other.devices.flat)))

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        axes = ", ".join(f"'{n}': {s}" for n, s in zip(self.axis_names, self.devices.shape))
        return f"Mesh({axes}, axis_types={self.axis_types})"

    def __enter__(self) -> "Mesh":
        stack = _MESH_STATE.__dict__.setdefault("stack", [])
        stack.append(swap_context_mesh(self))
        return self

    def __exit__(self, *exc: Any) -> None:
        swap_context_mesh(_MESH_STATE.stack.pop())


def context_mesh() -> Mesh | None:
    """The mesh set in this thread by ``set_mesh`` / ``with mesh:``, or None."""
    return getattr(_MESH_STATE, "mesh", None)


config.define("fluxion_context_mesh", None,
              "Set by fluxion.set_mesh (do not set it yourself): the mesh where "
              "computations on uncommitted arrays run, as in JAX. Part of the trace context, "
              "so jit and eager caches keep programs placed on it apart.", trace=True)


def computation_mesh() -> "Mesh | None":
    """The mesh of :func:`fluxion.set_mesh` in this thread: where computations on uncommitted
    arguments (or none) run and whose NamedShardings their results carry, as in JAX (a mesh of
    one device too); None outside ``set_mesh``.

    Example:
        >>> computation_mesh() is None
        True
    """
    m = config.fluxion_context_mesh
    return m if m is not None and getattr(_MESH_STATE, "mesh", None) is m else None


def sync_computation_mesh(mesh: "Mesh | None") -> None:
    """Record ``mesh`` (from ``set_mesh``) as the computation mesh (a concrete mesh, of one
    device or more)."""
    value = mesh if isinstance(mesh, Mesh) else None
    if config.fluxion_context_mesh is not value:
        config.update("fluxion_context_mesh", value)


class use_abstract_mesh:
    """Make ``mesh`` (an :class:`AbstractMesh`) this thread's abstract mesh, as
    ``get_abstract_mesh()`` reports it, inside a ``with`` block (JAX's
    ``jax.sharding.use_abstract_mesh``; it may not change the size of a non-empty mesh).

    Example:
        >>> with use_abstract_mesh(AbstractMesh((2,), ("x",))):
        ...     abstract_context_mesh().axis_names
        ('x',)
    """

    __slots__ = ("mesh", "prev")

    def __init__(self, mesh: AbstractMesh) -> None:
        if not isinstance(mesh, AbstractMesh):
            raise ValueError("Expected mesh of type `jax.sharding.AbstractMesh`. Got type:"
                             f" {type(mesh)}")
        self.mesh = mesh

    def __enter__(self) -> None:
        self.prev = getattr(_MESH_STATE, "abstract", None)
        if self.prev is not None and not self.prev.empty and not self.mesh.empty and \
                self.prev.size != self.mesh.size:
            raise ValueError(
                "use_abstract_mesh cannot change the size of the mesh. Got new mesh:"
                f" {self.mesh} with size={self.mesh.size} and prev mesh: {self.prev} with"
                f" size={self.prev.size}")
        _MESH_STATE.abstract = self.mesh

    def __exit__(self, *exc: Any) -> None:
        _MESH_STATE.abstract = self.prev


def abstract_context_mesh() -> AbstractMesh:
    """This thread's abstract mesh: the innermost :class:`use_abstract_mesh`'s, else that of the
    ``set_mesh`` mesh, else an empty one (no axes), as JAX's ``get_abstract_mesh``.

    Example:
        >>> abstract_context_mesh().axis_names
        ()
    """
    m = getattr(_MESH_STATE, "abstract", None)
    if m is not None:
        return m
    m = context_mesh()
    return AbstractMesh((), ()) if m is None else m.abstract_mesh


def swap_context_mesh(mesh: Mesh | None) -> Mesh | None:
    """Set this thread's mesh; returns the previous one."""
    prev = getattr(_MESH_STATE, "mesh", None)
    _MESH_STATE.mesh = mesh
    return prev


class Sharding(abc.ABC):  # noqa: B024  (a registry for isinstance; no abstract members)
    """What every Fluxion sharding offers (the members are those of ``jax.sharding.Sharding``).

    jaxlib's sharding base classes accept a single base, so the concrete shardings subclass
    jaxlib's and receive these members with :func:`_shares_sharding` (``isinstance`` works)."""

    memory_kind = None

    @property
    def device_set(self) -> set:
        return set(self._internal_device_list)

    @property
    def num_devices(self) -> int:
        return len(self._internal_device_list)

    @property
    def is_fully_addressable(self) -> bool:
        return all(d.process_index == d.client.process_index()
                   for d in self._internal_device_list)

    @property
    def _device_assignment(self) -> tuple:
        return tuple(self._internal_device_list)

    @property
    def _addressable_device_assignment(self) -> tuple:
        # JAX's private name for the devices of this process (orbax reads it when restoring)
        return tuple(d for d in self._internal_device_list
                     if d.process_index == d.client.process_index())

    def addressable_devices_indices_map(self, global_shape: tuple[int, ...]) -> dict:
        return {d: ix for d, ix in self.devices_indices_map(global_shape).items()
                if d.process_index == d.client.process_index()}

    def devices_indices_map(self, global_shape: tuple[int, ...]) -> dict:
        return dict(zip(self._internal_device_list,
                        hlo_indices(self._to_xla_hlo_sharding(len(global_shape)),
                                    tuple(global_shape), len(self._internal_device_list))))

    def shard_shape(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        hs = self._to_xla_hlo_sharding(len(global_shape))
        if hs.is_replicated() or hs.is_maximal():
            return tuple(global_shape)
        dims = list(hs.tile_assignment_dimensions())
        return tuple(-(-n // dims[i]) for i, n in enumerate(global_shape))

    def is_equivalent_to(self, other: Any, ndim: int) -> bool:
        return (tuple(self._internal_device_list) == tuple(other._internal_device_list)
                and self._to_xla_hlo_sharding(ndim) == other._to_xla_hlo_sharding(ndim))


def _shares_sharding(cls: type) -> type:
    for k, v in vars(Sharding).items():
        if not k.startswith("__") and k not in vars(cls) and k != "_abc_impl":
            setattr(cls, k, v)
    Sharding.register(cls)
    return cls


@_shares_sharding
class SingleDeviceSharding(_jax.SingleDeviceSharding):
    """All of an array on one device.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> jnp.zeros(3).sharding.is_fully_replicated
        True
    """

    memory_kind = None

    def _to_xla_hlo_sharding(self, ndim: int) -> Any:
        return _REPLICATED

    @property
    def device_set(self) -> set:
        return {self._device}

    @property
    def is_fully_replicated(self) -> bool:
        return True

    @property
    def is_fully_addressable(self) -> bool:
        return self._device.process_index == self._device.client.process_index()

    @property
    def num_devices(self) -> int:
        return 1

    def shard_shape(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(global_shape)

    def devices_indices_map(self, global_shape: tuple[int, ...]) -> dict:
        return {self._device: tuple(slice(None) for _ in global_shape)}

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self.memory_kind})"

    def __reduce__(self):
        raise TypeError("SingleDeviceSharding cannot be pickled")


_single_shardings: dict[Any, SingleDeviceSharding] = {}
_client.on_reset(_single_shardings.clear)


def single_device_sharding(device: Any) -> SingleDeviceSharding:
    """The one sharding object used for arrays on ``device`` (one per device, so caches hit by
    identity)."""
    s = _single_shardings.get(device)
    if s is None:
        # setdefault: two threads racing here must still end up with the same one object.
        s = _single_shardings.setdefault(device, SingleDeviceSharding(device))
    return s


# ------------------------------------------------------------------ Shardy attributes

def _axes(entry: tuple) -> str:
    return "{" + ", ".join(f'"{a}"' for a in entry) + "}"


def module_meshes(module: Any) -> dict:
    """The meshes declared in lowering module ``module`` (abstract mesh -> symbol), kept on the
    module."""
    meshes = getattr(module, "sdy_meshes", None)
    if meshes is None:
        meshes = module.sdy_meshes = {}
    return meshes


def sdy_sharding(module: Any, sharding: Any, ndim: int, open_dims: bool = False,
                 unconstrained: Sequence[int] = ()) -> str:
    """The ``#sdy.sharding<...>`` attribute of ``sharding`` (its mesh is declared once per
    module); ``open_dims`` leaves unsplit dimensions to the compiler."""
    meshes = module_meshes(module)
    key = sharding.mesh  # a Mesh (devices in its order) or an AbstractMesh
    name = meshes.get(key)
    if name is None:
        name = "mesh" if not meshes else f"mesh_{len(meshes)}"
        meshes[key] = name
    dims = []
    for d, entry in enumerate(sharding.spec._normalized(ndim)):
        if d in unconstrained:
            dims.append("{?}")
        elif not entry and open_dims:
            dims.append("{?}")
        elif open_dims:  # split along the type's axes, and open for the compiler's
            dims.append(_axes(entry)[:-1] + ", ?}")
        else:
            dims.append(_axes(entry))
    tail = ""
    if open_dims:  # the type's unused Explicit axes stay replicated (the rest is the compiler's)
        used = {ax for entry in sharding.spec._normalized(ndim) for ax in entry}
        fixed = [n for n, t in zip(sharding.mesh.axis_names, sharding.mesh.axis_types or ())
                 if t.name == "Explicit" and n not in used]
        if fixed:
            tail = ", replicated={" + ", ".join(f'"{n}"' for n in fixed) + "}"
    return f"#sdy.sharding<@{name}, [{', '.join(dims)}]{tail}>"


def check_spec(fname: str, what: str, mesh: Mesh | AbstractMesh, spec: PartitionSpec,
               ndim: int | None = None, shape: tuple | None = None) -> None:
    """Raise a clear error when ``spec`` does not fit ``mesh`` (unknown or repeated axis) or an
    array of rank ``ndim`` / ``shape`` (too many entries, a dimension not divisible)."""
    seen: set = set()
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    for entry in spec._normalized(len(spec)):
        for ax in entry:
            if ax not in sizes:
                raise ValueError(f"{fname}: {what} uses the axis name {ax!r}, which the mesh "
                                 f"does not have (its axes are {mesh.axis_names})")
            if ax in seen:
                raise DuplicateSpecError.of(spec, mesh)
            seen.add(ax)
    if ndim is not None and len(spec) > ndim:
        raise ValueError(f"{fname}: {what} {spec} has {len(spec)} entries but the array has "
                         f"rank {ndim} (shape {shape if shape is not None else '?'})")
    if shape is not None:
        for d, entry in enumerate(spec._normalized(len(shape))):
            n = math.prod(sizes[a] for a in entry)
            if n > 1 and shape[d] % n:
                raise ValueError(
                    f"{fname}: {what} {spec} splits dimension {d} of the array of shape "
                    f"{tuple(shape)} over mesh axes {entry} of total size {n}, which does not "
                    f"divide {shape[d]}")


def mesh_hlo_sharding(mesh: Mesh | AbstractMesh, spec: PartitionSpec, ndim: int,
                      manual_axes: Sequence[str] = ()) -> Any:
    """The HloSharding of ``spec`` over ``mesh`` for a rank-``ndim`` array (device ids are
    positions in the mesh's flat device list). ``manual_axes`` become a manual subgroup."""
    names, sizes = mesh.axis_names, mesh.axis_sizes
    entries = spec._normalized(ndim)
    dims, order = [], []
    for entry in entries:
        dims.append(math.prod(sizes[names.index(a)] for a in entry))
        order += [names.index(a) for a in entry]
    manual = [names.index(a) for a in names if a in manual_axes and names.index(a) not in order]
    rest = [i for i in range(len(names)) if i not in order and i not in manual]
    subgroups = []
    rest_size = math.prod(sizes[i] for i in rest)
    man_size = math.prod(sizes[i] for i in manual)
    if man_size > 1:
        dims.append(man_size)
        order += manual
        subgroups.append(_SUB_MANUAL)
    else:
        rest += manual
    if rest_size > 1:
        dims.append(rest_size)
        order += rest
        subgroups.append(_SUB_REPLICATED)
    if math.prod(dims) == 1 or (subgroups == [_SUB_REPLICATED] and math.prod(dims) == rest_size):
        return _REPLICATED
    order += [i for i in range(len(names)) if i not in order]
    return _xc.HloSharding.iota_tile(dims, list(sizes), order, subgroups)


def hlo_indices(hs: Any, shape: tuple[int, ...], ndev: int) -> list[tuple]:
    """For each logical device 0..ndev-1: the slices of a global array of ``shape`` it holds."""
    full = tuple(slice(None) for _ in shape)
    if hs.is_replicated() or hs.is_maximal() or not shape:
        return [full] * ndev
    dims = list(hs.tile_assignment_dimensions())
    ids = list(hs.tile_assignment_devices())
    out: list[tuple] = [full] * ndev
    for flat, d in enumerate(ids):
        idx = np.unravel_index(flat, dims)
        sl = []
        for ax, n in enumerate(shape):
            if dims[ax] == 1:
                sl.append(slice(None))
                continue
            ch = -(-n // dims[ax])
            sl.append(slice(int(idx[ax]) * ch, min((int(idx[ax]) + 1) * ch, n)))
        out[d] = tuple(sl)
    return out


@_shares_sharding
class NamedSharding(_jax.Sharding):
    """An array split over a :class:`Mesh` as a :class:`PartitionSpec` says.

    Example:
        >>> import numpy as np, fluxion
        >>> mesh = Mesh(np.array(fluxion.devices()[:1]), ("x",))
        >>> NamedSharding(mesh, PartitionSpec("x")).spec
        P('x',)
    """

    def __init__(self, mesh: Mesh | AbstractMesh, spec: PartitionSpec = PartitionSpec(), *,
                 memory_kind: str | None = None) -> None:
        if not isinstance(mesh, (Mesh, AbstractMesh)):
            raise TypeError(f"NamedSharding: mesh must be a Mesh, got {type(mesh).__name__}")
        if spec is None:
            spec = PartitionSpec()
        if not isinstance(spec, PartitionSpec):
            raise TypeError(f"NamedSharding: spec must be a PartitionSpec, got {spec!r}; "
                            "wrap it as P(...)")
        try:
            check_spec("NamedSharding", "spec", mesh, spec)
        except ValueError as e:
            raise ValueError(f"{e} (at {user_source_line()})") from None
        self.mesh = mesh
        self.spec = spec
        self.memory_kind = memory_kind
        self._hlo_cache: dict[int, Any] = {}

    @property
    def _internal_device_list(self) -> Any:
        return self.mesh._internal_device_list

    def _to_xla_hlo_sharding(self, ndim: int) -> Any:
        hs = self._hlo_cache.get(ndim)
        if hs is None:
            hs = self._hlo_cache[ndim] = mesh_hlo_sharding(self.mesh, self.spec, ndim)
        return hs

    @property
    def is_fully_replicated(self) -> bool:
        return all(not e for e in self.spec._normalized(len(self.spec))) or all(
            self.mesh.shape[a] == 1 for e in self.spec._normalized(len(self.spec)) for a in e)

    def _check_fits(self, fname: str, shape: tuple) -> None:
        try:
            check_spec(fname, "the sharding's spec", self.mesh, self.spec, len(shape), shape)
        except ValueError as e:
            raise ValueError(f"{e} (at {user_source_line()})") from None

    def _constraint_attr(self, module: Any, ndim: int) -> str | None:
        """The ``#sdy.sharding`` of a constraint in ``module``, or None in a module compiled for
        one device (where constraints are the identity)."""
        if getattr(module, "sdy_meshes", None) is None:
            return None
        return sdy_sharding(module, self, ndim)

    def with_spec(self, spec: Any) -> "NamedSharding":
        if not isinstance(spec, PartitionSpec):
            spec = PartitionSpec(*spec)
        return NamedSharding(self.mesh, spec, memory_kind=self.memory_kind)

    def __eq__(self, other: Any) -> bool:
        return (type(other) is NamedSharding and self.mesh == other.mesh
                and self.spec == other.spec)

    def __hash__(self) -> int:
        return hash((self.mesh, self.spec))

    def __repr__(self) -> str:
        return (f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r}, "
                f"memory_kind={self.memory_kind or 'device'})")


@_shares_sharding
class HloSharding(_jax.Sharding):
    """A sharding given directly as XLA's HloSharding over a list of devices (what the compiler
    chose when no PartitionSpec over the mesh describes it; JAX's ``GSPMDSharding``)."""

    def __init__(self, devices: Sequence[Any], hlo_sharding: Any) -> None:
        self._dl = _jax.DeviceList(tuple(devices))
        self._hs = hlo_sharding

    @property
    def _internal_device_list(self) -> Any:
        return self._dl

    def _to_xla_hlo_sharding(self, ndim: int) -> Any:
        return self._hs

    @property
    def is_fully_replicated(self) -> bool:
        return self._hs.is_replicated()

    def __eq__(self, other: Any) -> bool:
        return (type(other) is HloSharding and tuple(self._dl) == tuple(other._dl)
                and self._hs == other._hs)

    def __hash__(self) -> int:
        return hash((tuple(self._dl), self._hs))

    def __repr__(self) -> str:
        return f"GSPMDSharding({self._hs})"


def named_from_hlo(mesh: Mesh, hs: Any, ndim: int) -> Any:
    """The NamedSharding over ``mesh`` with HloSharding ``hs`` (the simplest spec, trailing
    ``None`` entries dropped), else an :class:`HloSharding`."""
    k = len(mesh.axis_names)
    if hs.is_replicated():
        return NamedSharding(mesh, PartitionSpec())
    for assign in itertools.product(range(-1, ndim), repeat=k):
        entries: list[list[str]] = [[] for _ in range(ndim)]
        for ax, d in enumerate(assign):
            if d >= 0 and mesh.axis_sizes[ax] > 1:
                entries[d].append(mesh.axis_names[ax])
        if any(d >= 0 and mesh.axis_sizes[ax] == 1 for ax, d in enumerate(assign)):
            continue
        for perms in itertools.product(*[itertools.permutations(e) for e in entries]):
            parts = [None if not e else (e[0] if len(e) == 1 else tuple(e)) for e in perms]
            while parts and parts[-1] is None:
                parts.pop()
            spec = PartitionSpec(*parts)
            if mesh_hlo_sharding(mesh, spec, ndim) == hs:
                return NamedSharding(mesh, spec)
    return HloSharding(tuple(mesh._internal_device_list), hs)


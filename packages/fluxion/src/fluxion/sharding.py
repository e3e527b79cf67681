"""``fluxion.sharding``: meshes of devices and how arrays are split over them (``jax.sharding``).

- :class:`Mesh` (devices on named axes), :func:`make_mesh`, :class:`AbstractMesh` (its
  ``abstract_device``: an :class:`AbstractDevice`), :func:`use_abstract_mesh`,
  :class:`AxisType`; :class:`ManualAxisType` (``typeof(x).mat`` in a ``shard_map`` body);
- :class:`PartitionSpec` (also ``fluxion.P``), :class:`NamedSharding`,
  :class:`SingleDeviceSharding`, :class:`Sharding`;
- :func:`set_mesh` / :func:`get_mesh` (the mesh bare ``PartitionSpec`` s refer to) and
  :func:`reshard`; :class:`ShardingTypeError` (operands whose shardings on ``Explicit`` mesh axes
  do not fit: the sharding is part of an array's type there, ``f32[8@x,4]``);
  :func:`make_single_device_sharding`; :func:`visualize_sharding` (JAX's text grid of a
  sharding), :func:`visualize_array_sharding` and :func:`inspect_array_sharding`.

Example:
    >>> import numpy as np, fluxion
    >>> from fluxion.sharding import NamedSharding, PartitionSpec as P
    >>> mesh = fluxion.make_mesh((1,), ("x",))
    >>> x = fluxion.device_put(np.arange(4.0), NamedSharding(mesh, P("x")))
    >>> x.sharding.spec
    P('x',)
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Sequence

import numpy as np

from fluxion.backend import client as _client
from fluxion.backend.sharding_impl import (
    AbstractDevice,
    AbstractMesh,
    AxisType,
    HloSharding,
    Mesh,
    NamedSharding,
    PartitionSpec,
    Sharding,
    SingleDeviceSharding,
    abstract_context_mesh,
    context_mesh,
    single_device_sharding,
    swap_context_mesh,
    sync_computation_mesh,
    use_abstract_mesh,
)
from fluxion.backend.transfer import device_put
from fluxion.core import trace as _trace
from fluxion.core.avals import ShardingTypeError
from fluxion.core.vma import ManualAxisType
from fluxion.lax.sharding_constraint import (
    check_explicit_names,
    resolve_sharding,
    with_sharding_constraint,
)
from fluxion.lax.sharding_rules import resharding
from fluxion.tree_util import physical as tree_util

__all__ = ["Mesh", "AbstractMesh", "AxisType", "PartitionSpec", "P", "NamedSharding",
           "SingleDeviceSharding", "Sharding", "GSPMDSharding", "make_mesh", "set_mesh",
           "get_mesh", "get_abstract_mesh", "use_mesh", "reshard", "auto_axes",
           "visualize_array_sharding", "visualize_sharding", "inspect_array_sharding",
           "ShardingTypeError", "make_single_device_sharding", "ManualAxisType",
           "AbstractDevice", "use_abstract_mesh"]

P = PartitionSpec
GSPMDSharding = HloSharding


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str],
              axis_types: tuple[AxisType, ...] | None = None, *,
              devices: Sequence[Any] | None = None) -> Mesh:
    """A :class:`Mesh` of shape ``axis_shapes`` over the first devices (or ``devices``), with
    JAX 0.10's default axis type ``Explicit``.

    Example:
        >>> import fluxion
        >>> fluxion.make_mesh((1, 1), ("x", "y")).shape
        {'x': 1, 'y': 1}
    """
    axis_shapes = tuple(int(s) for s in axis_shapes)
    axis_names = tuple(axis_names)
    if len(axis_shapes) != len(axis_names):
        raise ValueError(f"make_mesh: {len(axis_shapes)} axis sizes {axis_shapes} but "
                         f"{len(axis_names)} axis names {axis_names}")
    devs = list(devices) if devices is not None else _client.devices()
    n = math.prod(axis_shapes)
    if n > len(devs):
        raise ValueError(f"make_mesh: the mesh {dict(zip(axis_names, axis_shapes))} needs {n} "
                         f"devices but only {len(devs)} are available")
    if devices is not None and n != len(devs):
        raise ValueError(f"make_mesh: the mesh needs {n} devices but {len(devs)} were given")
    arr = np.empty(n, dtype=object)
    arr[:] = devs[:n]
    if axis_types is None:
        axis_types = (AxisType.Explicit,) * len(axis_names)
    return Mesh(arr.reshape(axis_shapes), axis_names, axis_types=axis_types)


def make_single_device_sharding(device: Any, *, memory_kind: str | None = None
                                ) -> SingleDeviceSharding:
    """The sharding that puts a whole array on ``device``. Fluxion places arrays in a device's
    default memory only: ``memory_kind`` may be that memory's kind (``"device"``); another kind
    the device has (``"pinned_host"``) raises ``NotImplementedError``, and a kind it lacks
    JAX's ``ValueError``.

    Example:
        >>> import fluxion
        >>> s = fluxion.sharding.make_single_device_sharding(fluxion.devices()[0])
        >>> s.device_set == {fluxion.devices()[0]}
        True
    """
    if memory_kind is not None:
        kinds = [m.kind for m in device.addressable_memories()]
        if memory_kind not in kinds:
            raise ValueError(
                f"Could not find memory addressable by device {device.device_kind}. Device "
                f"{device.device_kind} can address the following memory kinds: "
                f"{', '.join(kinds)}. Got memory kind: {memory_kind}")
        if memory_kind != device.default_memory().kind:
            raise NotImplementedError(
                f"make_single_device_sharding: memory_kind={memory_kind!r}: Fluxion places "
                f"arrays only in a device's default memory ({device.default_memory().kind!r})")
    return single_device_sharding(device)


class set_mesh:
    """Set the mesh that bare ``PartitionSpec`` s refer to, in this thread; also a context
    manager restoring the previous one.

    Example:
        >>> import fluxion
        >>> mesh = fluxion.make_mesh((1,), ("x",))
        >>> with fluxion.set_mesh(mesh):
        ...     fluxion.sharding.get_mesh() is mesh
        True
    """

    __slots__ = ("prev",)

    def __init__(self, mesh: Mesh | None) -> None:
        if mesh is not None and not isinstance(mesh, Mesh):
            raise ValueError(f"set_mesh: expected a Mesh, got {type(mesh).__name__}")
        if _trace.STATE.interp is not _trace.EVAL:
            raise ValueError("set_mesh can only be used outside of jit and other "
                             "transformations")
        self.prev = swap_context_mesh(mesh)
        sync_computation_mesh(mesh)  # computations on uncommitted arrays run on it (JAX)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        swap_context_mesh(self.prev)
        sync_computation_mesh(self.prev)


use_mesh = set_mesh


def get_mesh() -> Mesh | None:
    """The mesh set by :func:`set_mesh` in this thread (None if none).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> mesh = fluxion.make_mesh((1,), ('x',), devices=fluxion.devices()[:1])
        >>> with fluxion.sharding.set_mesh(mesh):
        ...     print(fluxion.sharding.get_mesh().axis_names)
        ('x',)
    """
    return context_mesh()


def get_abstract_mesh() -> AbstractMesh:
    """The abstract mesh (axis names, sizes, types) of the innermost :func:`use_abstract_mesh`,
    else of :func:`get_mesh`; with no mesh set, an empty one (no axes), as in JAX.

    Example:
        >>> get_abstract_mesh().axis_sizes
        ()
    """
    return abstract_context_mesh()


def _as_sharding(fname: str, s: Any) -> Any:
    if isinstance(s, PartitionSpec):
        mesh = context_mesh()
        if mesh is None:
            raise ValueError(f"{fname}: a bare PartitionSpec {s!r} needs a mesh; use "
                             "NamedSharding(mesh, spec) or fluxion.set_mesh(mesh)")
        return NamedSharding(mesh, s)
    return s


def reshard(xs: Any, out_shardings: Any) -> Any:
    """Move the arrays of ``xs`` to ``out_shardings`` (a Sharding or PartitionSpec, or a tree of
    them); inside ``jit`` this constrains the sharding of the traced values.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> mesh = fluxion.make_mesh((1,), ("x",))
        >>> fluxion.reshard(jnp.ones(2), fluxion.NamedSharding(mesh, fluxion.P("x"))).shape
        (2,)
    """

    def is_leaf(v: Any) -> bool:
        return v is None or isinstance(v, (PartitionSpec, Sharding))

    if is_leaf(out_shardings):
        shardings = [out_shardings] * len(tree_util.tree_leaves(xs))
    else:
        shardings = tree_util.broadcast_prefix(out_shardings, xs, is_leaf=is_leaf)
    leaves, tree = tree_util.tree_flatten(xs)
    out = []
    for x, s in zip(leaves, shardings):
        s = resolve_sharding("reshard", _as_sharding("reshard", s), np.ndim(x))
        check_explicit_names("reshard", s)
        if isinstance(s, NamedSharding) and len(s.spec) < np.ndim(x) and all(
                t.name == "Explicit" for t in s.mesh.axis_types):
            # a type names every dimension, as JAX's (P() on a vector: P(None,))
            s = s.with_spec(tuple(s.spec) + (None,) * (np.ndim(x) - len(s.spec)))
        if isinstance(x, _trace.Tracer):
            with resharding():  # a change of type, not an assertion
                out.append(with_sharding_constraint(x, s))
        else:
            out.append(device_put(x, s))
    return tree_util.tree_unflatten(tree, out)


def auto_axes(f: Callable | None = None, /, *, axes: str | Sequence[str] | None = None,
              out_sharding: Any = None) -> Callable:
    """``f`` run with the mesh axes ``axes`` (all of the context mesh's by default) left to the
    compiler, its results resharded to ``out_sharding`` (given here or as the keyword
    ``out_sharding=`` of each call), as JAX's ``jax.sharding.auto_axes``: for operations whose
    sharding rules reject explicitly sharded operands. With no mesh set, ``f`` runs as it is.

    Inside ``f`` the arguments' types drop those axes (Fluxion reshards them to specs without
    the axes; the mesh stays as it is, where JAX's switches those axes to ``Auto``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> mesh = fluxion.make_mesh((1,), ("x",))
        >>> with fluxion.set_mesh(mesh):
        ...     y = auto_axes(lambda a: a * 2, out_sharding=fluxion.P("x"))(jnp.ones(2))
        >>> str(fluxion.typeof(y))
        'float32[2@x]'
    """
    if f is None:
        return lambda g: auto_axes(g, axes=axes, out_sharding=out_sharding)

    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> Any:
        target = out_sharding
        if target is None:
            if "out_sharding" not in kwargs:
                raise TypeError("Missing required keyword argument: 'out_sharding'")
            target = kwargs.pop("out_sharding")
        mesh = context_mesh()
        if mesh is None:
            for t in tree_util.tree_leaves(target, is_leaf=lambda v: isinstance(v, Sharding)):
                if isinstance(t, NamedSharding):
                    mesh = t.mesh
                    break
        if mesh is None:
            return f(*args, **kwargs)
        names = (tuple(mesh.axis_names) if axes is None else
                 (axes,) if isinstance(axes, str) else tuple(axes))
        for n in names:
            if n not in mesh.axis_names:
                raise ValueError(f"auto_axes: axis {n!r} is not an axis of the mesh "
                                 f"{tuple(mesh.axis_names)}")
        types = dict(zip(mesh.axis_names, mesh.axis_types))
        if all(types[n] == AxisType.Auto for n in names):
            return f(*args, **kwargs)
        leaves, tree = tree_util.tree_flatten(args)
        leaves = [_without_axes(x, names) for x in leaves]
        out = f(*tree_util.tree_unflatten(tree, leaves), **kwargs)
        return reshard(out, target)

    return run


def _without_axes(x: Any, names: tuple) -> Any:
    """``x`` resharded so that its type's spec no longer names the axes ``names``."""
    aval = getattr(x, "aval", None)
    sh = getattr(aval, "sharding", None)
    if not isinstance(sh, NamedSharding):
        return x
    entries = []
    for e in sh.spec:
        if isinstance(e, tuple):
            kept = tuple(n for n in e if n not in names)
            entries.append(kept if len(kept) > 1 else (kept[0] if kept else None))
        else:
            entries.append(None if e in names else e)
    if tuple(entries) == tuple(sh.spec):
        return x
    return reshard(x, NamedSharding(sh.mesh, PartitionSpec(*entries)))


def inspect_array_sharding(value: Any, *, callback: Callable[[Any], None]) -> None:
    """Call ``callback`` with the sharding of ``value`` (a concrete array here).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> seen = []
        >>> fluxion.sharding.inspect_array_sharding(jnp.ones(2), callback=seen.append)
        >>> type(seen[0]).__name__
        'SingleDeviceSharding'
    """
    callback(value.sharding)


def visualize_sharding(shape: Sequence[int], sharding: Sharding, *, use_color: bool = True,
                       scale: float = 1.0, min_width: int = 9, max_width: int = 80,
                       color_map: Any = None) -> None:
    """Print which devices hold which block of an array of ``shape`` (1-D or 2-D) placed by
    ``sharding``, as the grid JAX's ``jax.debug.visualize_sharding`` draws: one cell per block,
    labelled with the platform and the ids of the devices holding it, sized in proportion to the
    block (``scale``; widths clamped to ``[min_width, max_width]``). Fluxion draws the grid
    without colours (``use_color`` and ``color_map`` are accepted and ignored).

    Example:
        >>> import fluxion
        >>> mesh = fluxion.make_mesh((1,), ("x",))
        >>> fluxion.debug.visualize_sharding((4,), fluxion.NamedSharding(mesh, fluxion.P("x")))
        ┌───────┐
        │ CPU 0 │
        └───────┘
    """
    del use_color, color_map  # JAX colours cells through `rich` on a colour terminal only
    print(_sharding_table(tuple(shape), sharding, scale, min_width, max_width))


def visualize_array_sharding(arr: Any, *, use_color: bool = True, scale: float = 1.0,
                             min_width: int = 9, max_width: int = 80, color_map: Any = None
                             ) -> None:
    """:func:`visualize_sharding` of ``arr``'s shape and sharding.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> fluxion.sharding.visualize_array_sharding(jnp.ones(4))
        ┌───────┐
        │ CPU 0 │
        └───────┘
    """
    visualize_sharding(arr.shape, arr.sharding, use_color=use_color, scale=scale,
                       min_width=min_width, max_width=max_width, color_map=color_map)


def _block_index(size: int, sl: slice) -> int:
    """The position of the block ``sl`` along a dimension of ``size`` split evenly."""
    start, stop, _ = sl.indices(size)
    return 0 if stop - start == size else start // (stop - start)


def _sharding_table(shape: tuple[int, ...], sharding: Any, scale: float, min_width: int,
                    max_width: int) -> str:
    if len(shape) not in (1, 2):
        raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
    base_height = int(10 * scale)
    base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
    platform = next(iter(sharding.device_set)).platform.upper()
    ids: dict[tuple[int, int], list[int]] = {}
    extent: dict[tuple[int, int], tuple[float | None, float]] = {}  # (height, width) fractions
    for device, index in sharding.devices_indices_map(shape).items():
        index = tuple(slice(i, i + 1) if isinstance(i, int) else i for i in index)
        sizes = [len(range(*sl.indices(n))) for sl, n in zip(index, shape)]
        if len(shape) == 2:
            key = (_block_index(shape[0], index[0]), _block_index(shape[1], index[1]))
            extent[key] = (sizes[0] / shape[0], sizes[1] / shape[1])
        else:
            key = (0, _block_index(shape[0], index[0]))
            extent[key] = (None, sizes[0] / shape[0])
        ids.setdefault(key, []).append(device.id)
    rows = max(r for r, _ in ids) + 1
    cols = max(c for _, c in ids) + 1
    cells: dict[tuple[int, int], list[str]] = {}
    for key, devices in ids.items():
        label = f"{platform} " + ",".join(str(d) for d in sorted(devices))
        height_frac, width_frac = extent[key]
        width = min(max(int(width_frac * base_width * 2.5), min_width), max_width)
        height = 1 if height_frac is None else int(height_frac * base_height)
        left, extra = divmod(width - len(label) - 2, 2)
        right = left + extra
        top, extra = divmod(height - 2, 2)
        bottom = top + extra
        line = " " * max(left, 0) + label + " " * max(right, 0)
        cells[key] = ([""] * max(top, 0)) + [line] + ([""] * max(bottom, 0))
    widths = [max(len(cells[r, c][i]) for r in range(rows) if (r, c) in cells
                  for i in range(len(cells[r, c]))) for c in range(cols)]
    out = ["┌" + "┬".join("─" * w for w in widths) + "┐"]
    for r in range(rows):
        height = max(len(cells.get((r, c), [""])) for c in range(cols))
        for i in range(height):
            parts = []
            for c in range(cols):
                lines = cells.get((r, c), [""])
                parts.append((lines[i] if i < len(lines) else "").center(widths[c]))
            out.append("│" + "│".join(parts) + "│")
        if r + 1 < rows:
            out.append("├" + "┼".join("─" * w for w in widths) + "┤")
    out.append("└" + "┴".join("─" * w for w in widths) + "┘")
    return "\n".join(out)

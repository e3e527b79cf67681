"""``fluxion.pmap``: map a function over a leading array axis, one slice per device, built (as
in JAX ≥ 0.8) on ``jit`` and ``shard_map`` over a one-axis mesh of the devices.

Inside the function, ``axis_name`` names the mapped axis for collectives (``lax.psum``,
``lax.pmean``, ``lax.all_gather``, ...). The result is one Array split over the devices along
``out_axes``.

Example:
    >>> import numpy as np, fluxion
    >>> fluxion.pmap(lambda x: x ** 2)(np.arange(1))
    Array([0], dtype=int32)
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import numpy as np

from fluxion.backend import client as _client
from fluxion.backend.jit import jit
from fluxion.backend.sharding_impl import AxisType, Mesh, NamedSharding, PartitionSpec
from fluxion.backend.transfer import device_put
from fluxion.core.errors import user_source_line
from fluxion.core.tracebacks import api_boundary, wraps
from fluxion.lax import parallel as _par
from fluxion.shmap import shard_map
from fluxion.transforms import array_ops
from fluxion.transforms.staging import abstractify
from fluxion.tree_util import physical as tree_util

__all__ = ["pmap"]

_DEFAULT_NAME = "_internal_pmap_axis_name"


def _is_axis(x: Any) -> bool:
    return x is None or isinstance(x, int)


def _squeeze0(x: Any) -> Any:
    shape = abstractify(x).shape
    return x.reshape(shape[1:])


def pmap(fun: Callable, axis_name: Any = None, *, in_axes: Any = 0, out_axes: Any = 0,
         static_broadcasted_argnums: int | Iterable[int] = (), devices: Sequence[Any] | None = None,
         backend: str | None = None, axis_size: int | None = None,
         donate_argnums: int | Iterable[int] = ()) -> Callable:
    """Run ``fun`` on each slice of the mapped axis (``in_axes``) of its arguments, one slice per
    device, in one SPMD computation; the results are stacked along ``out_axes``.

    ``static_broadcasted_argnums`` are hashable Python values passed unchanged to every call;
    ``donate_argnums`` lets XLA reuse those arguments' buffers; ``devices`` chooses the devices
    (default: the first local devices of ``backend``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> f = fluxion.pmap(lambda x: x / lax.psum(x, "i"), axis_name="i")
        >>> f(jnp.array([2.0])).tolist()
        [1.0]
    """
    if not callable(fun):
        raise TypeError(f"pmap: expected a callable, got {type(fun).__name__}")
    statics = ((static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int)
               else tuple(static_broadcasted_argnums))
    donate = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
    name = axis_name if axis_name is not None else _DEFAULT_NAME
    cache: dict = {}
    with_keywords: dict = {}

    @api_boundary
    @wraps(fun)
    def mapped(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            return keywords_inner(len(args))(*args, kwargs)
        run, placed = prepare(args)
        return run(*placed)

    def keywords_inner(n: int) -> Callable:
        # as JAX: keyword arguments are mapped over their leading axis (in_axes covers the
        # positional ones); they travel as one more positional dict mapped at axis 0
        inner = with_keywords.get(n)
        if inner is None:
            if isinstance(in_axes, (list, tuple)):
                if len(in_axes) != n:
                    raise ValueError(f"pmap: in_axes has {len(in_axes)} entries but the "
                                     f"function was called with {n} positional arguments "
                                     f"(at {user_source_line()})")
                pos_axes = tuple(in_axes)
            else:
                pos_axes = (in_axes,) * n
            inner = with_keywords[n] = pmap(
                lambda *a: fun(*a[:-1], **a[-1]), axis_name, in_axes=pos_axes + (0,),
                out_axes=out_axes, static_broadcasted_argnums=statics, devices=devices,
                backend=backend, axis_size=axis_size, donate_argnums=donate)
        return inner

    def prepare(args: tuple) -> tuple[Callable, list]:
        # the compiled SPMD call for these arguments, and the arguments placed for it
        where = user_source_line()
        static_vals = tuple((i, args[i]) for i in statics if i < len(args))
        for i, v in static_vals:
            try:
                hash(v)
            except TypeError:
                raise ValueError(f"pmap: static_broadcasted_argnums argument {i} must be "
                                 f"hashable, got {type(v).__name__} (at {where})") from None
        dyn_pos = [i for i in range(len(args)) if i not in statics]
        dyn = tuple(args[i] for i in dyn_pos)
        if isinstance(in_axes, (list, tuple)) and not isinstance(in_axes, int):
            axes_tree = tuple(in_axes)
            if len(axes_tree) != len(args):
                raise ValueError(f"pmap: in_axes has {len(axes_tree)} entries but the function "
                                 f"was called with {len(args)} arguments (at {where})")
            axes_tree = tuple(axes_tree[i] for i in dyn_pos)
        else:
            axes_tree = (in_axes,) * len(dyn)
        try:
            axes = tree_util.broadcast_prefix(axes_tree, dyn, is_leaf=_is_axis)
        except ValueError as e:
            raise ValueError(f"pmap: in_axes is not a prefix of the arguments: {e} "
                             f"(at {where})") from None
        leaves, tree = tree_util.tree_flatten(dyn)
        sizes = set()
        norm = []
        for x, ax in zip(leaves, axes):
            nd = len(np.shape(x)) if not hasattr(x, "aval") else len(x.aval.shape)
            if ax is None:
                norm.append(None)
                continue
            if not -nd <= ax < nd:
                raise ValueError(f"pmap: in_axes {ax} is out of range for an argument of rank "
                                 f"{nd} (at {where})")
            ax = ax % nd
            sizes.add(np.shape(x)[ax] if not hasattr(x, "aval") else x.aval.shape[ax])
            norm.append(ax)
        if axis_size is not None:
            sizes.add(axis_size)
        if len(sizes) != 1:
            raise ValueError(f"pmap got inconsistent sizes for the mapped axes: {sorted(sizes)} "
                             f"(at {where})" if sizes else
                             f"pmap: no argument is mapped; pass axis_size (at {where})")
        n = sizes.pop()
        devs = list(devices) if devices is not None else _client.local_devices(backend=backend)
        if n > len(devs):
            raise ValueError(f"pmap: the mapped axis has size {n} but only {len(devs)} devices "
                             f"are available (at {where})")
        devs = devs[:n] if devices is None else devs
        if len(devs) != n:
            raise ValueError(f"pmap: {len(devs)} devices were given for a mapped axis of size "
                             f"{n} (at {where})")
        outer = getattr(_par._MANUAL, "stack", None)
        if outer:
            # JAX 0.10 (pmap on shard_map) refuses a pmap inside a pmap or shard_map body
            ctx = ", ".join(f"{k!r}: {v}" for k, v in outer[-1].items())
            raise ValueError(
                f"The context mesh AbstractMesh({ctx}, axis_types=(Manual,)) should match the "
                f"mesh passed to shard_map Mesh({name!r}: {n}, axis_types=(Auto,)): pmap inside "
                "pmap or shard_map is not supported (as in JAX 0.10); map over several axes "
                f"with one shard_map over a multi-axis mesh instead (at {where})")
        key = (tree, tuple(norm), static_vals, tuple(d.id for d in devs))
        hit = cache.get(key)
        if hit is None:
            hit = cache[key] = _build(fun, name, tree, tuple(norm), static_vals, dyn_pos,
                                      len(args), devs, out_axes, donate)
        run, shardings = hit
        # each argument goes straight to its place: mapped ones split over the devices along
        # their mapped axis, the others replicated
        placed = [x if getattr(x, "sharding", None) == s else device_put(x, s)
                  for x, s in zip(leaves, shardings)]
        return run, placed

    def lower(*args: Any, **kwargs: Any) -> Any:
        """JAX's ``pmap(f).lower(*args)``: the staged SPMD computation, whose ``compile()``
        gives a function of the same arguments as ``f``'s."""
        if kwargs:
            return keywords_inner(len(args)).lower(*args, kwargs)
        run, placed = prepare(args)
        fixed = {i: args[i] for i in statics if i < len(args)}
        return _MappedLowered(run.lower(*placed), prepare, fixed)

    mapped.lower = lower
    return mapped


def _build(fun: Callable, name: Any, tree: Any, axes: tuple, static_vals: tuple,
           dyn_pos: list, n_args: int, devs: list, out_axes: Any, donate: tuple) -> Callable:
    mesh = Mesh(np.array(devs, dtype=object), (name,), axis_types=(AxisType.Auto,))
    spec = PartitionSpec(name)
    in_specs = tuple(spec if a is not None else PartitionSpec() for a in axes)
    statics = dict(static_vals)
    out_info: dict = {}

    def body(*blocks: Any) -> Any:
        vals = [b if a is None else _squeeze0(b) for b, a in zip(blocks, axes)]
        dyn = tree_util.tree_unflatten(tree, vals)
        it = iter(dyn)
        full = [statics[i] if i in statics else next(it) for i in range(n_args)]
        out = fun(*full)
        leaves, otree = tree_util.tree_flatten(out)
        oaxes = tree_util.broadcast_prefix(out_axes, out, is_leaf=_is_axis) \
            if not _is_axis(out_axes) else [out_axes] * len(leaves)
        out_info["tree"], out_info["axes"] = otree, oaxes
        # a Python scalar output (a constant) becomes an array first, as in JAX's pmap
        return [v if a is None else array_ops.asarray(v).reshape((1,) + abstractify(v).shape)
                for v, a in zip(leaves, oaxes)]

    def outer(*leaves: Any) -> Any:
        moved = [x if a is None else array_ops.moveaxis(x, a, 0) for x, a in zip(leaves, axes)]
        # out_specs need the output structure: trace the body once for it
        sm = shard_map(body, mesh=mesh, in_specs=in_specs,
                       out_specs=_OutSpecs(out_info, spec), check_vma=False)
        outs = sm(*moved)
        res = []
        for o, a in zip(outs, out_info["axes"]):
            if a is None:
                res.append(o)
                continue
            nd = len(abstractify(o).shape)
            res.append(array_ops.moveaxis(o, 0, a % nd))
        return tree_util.tree_unflatten(out_info["tree"], res)

    don = tuple(k for k, i in enumerate(dyn_pos) if i in donate)
    leaf_donate = ()
    if don:
        counts = [len(tree_util.tree_leaves(c)) for c in tree.children()]
        starts = np.cumsum([0] + counts)
        leaf_donate = tuple(j for k in don for j in range(starts[k], starts[k + 1]))
    shardings = []
    for a in axes:
        parts = [None] * (a + 1) if a is not None else []
        if a is not None:
            parts[a] = name
        shardings.append(NamedSharding(mesh, PartitionSpec(*parts)))
    return jit(outer, donate_argnums=leaf_donate), shardings


class _MappedLowered:
    """``pmap(f).lower(...)``: the lowered SPMD call (its text, cost analysis, ...), compiling to
    a :class:`_MappedCompiled` that takes ``f``'s arguments, as JAX's does."""

    def __init__(self, lowered: Any, prepare: Callable, fixed: dict) -> None:
        self._lowered, self._prepare, self._fixed = lowered, prepare, fixed

    def compile(self, *args: Any, **kwargs: Any) -> "_MappedCompiled":
        return _MappedCompiled(self._lowered.compile(*args, **kwargs), self._prepare,
                               self._fixed)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lowered, name)


class _MappedCompiled:
    """The compiled SPMD call of a ``pmap``: called with ``f``'s arguments less the static
    ones (fixed when it was lowered, as JAX's), it places them on the devices and runs the
    executable."""

    def __init__(self, compiled: Any, prepare: Callable, fixed: dict) -> None:
        self._compiled, self._prepare, self._fixed = compiled, prepare, fixed

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:  # compiled by the keyword-taking inner pmap: its last argument
            args = (*args, kwargs)
        it = iter(args)
        full = [self._fixed[i] if i in self._fixed else next(it)
                for i in range(len(args) + len(self._fixed))]
        _, placed = self._prepare(tuple(full))
        return self._compiled(*placed)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._compiled, name)


class _OutSpecs:
    """The out_specs of pmap's shard_map, known once the body has been traced: a spec per
    result (mapped: split over the pmap axis; ``out_axes=None``: replicated)."""

    def __init__(self, info: dict, spec: PartitionSpec) -> None:
        self.info, self.spec = info, spec

    def __call__(self) -> list:
        return [self.spec if a is not None else PartitionSpec() for a in self.info["axes"]]

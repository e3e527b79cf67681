"""Sharding rules of the primitives: "sharding in types" on meshes with ``Explicit`` axes.

An array placed with a ``NamedSharding`` on a mesh with Explicit axes has that sharding in its
aval (``f32[8@x,4]``), and every primitive bound on it computes the sharding of its result at
trace time, as JAX's ``sharding_rule`` s do (``jax/_src/lax/lax.py``): elementwise operations
need compatible shardings, a reduction drops the reduced dimension's mesh axes, ``dot_general``
carries batch and free dimensions and refuses sharded contracting dimensions without an
``out_sharding``, and so on. A mismatch raises :class:`ShardingTypeError` naming the primitive,
the operand types and the user's line.

Each primitive's rule sits beside it, in its ``sharding`` slot:
``rule(prim, in_avals, out, **params)`` returns the sharding of the result (a list of them for
multiple results; None: none, the compiler chooses). This module holds what the rules share: the
spec helpers, the rule builders (``drop_dims``, ``varying_shape_rule``, ``same_as_operands``,
``unsharded_dim``, ``linalg_rule``, ``like_b_rule``), the default (broadcasting) rule for
primitives without one, and the ``out_sharding=`` / ``reshard`` machinery.

Example:
    >>> import fluxion.lax as lax
    >>> lax.reduce_sum_p.sharding is not None and lax.add_p.sharding is None
    True
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

from fluxion.core.avals import (
    CONTEXT_EXPLICIT,
    DEFAULT_SHARDING_RULE,
    DuplicateSpecError,
    ShapedArray,
    ShardingTypeError,
)
from fluxion.transforms import staging as _staging

__all__ = ["ShardingTypeError", "explicit_part", "resharding", "rules_mode"]


def entries(a: ShapedArray) -> list:
    """One spec entry per dimension of ``a`` (None: not split); all None when unsharded."""
    if a.sharding is None:
        return [None] * len(a.shape)
    sp = list(a.sharding.spec)[:len(a.shape)]
    sp += [None] * (len(a.shape) - len(sp))
    return [None if (p is None or p == () or not isinstance(p, (str, tuple))) else p for p in sp]


def spec_axes(p: Any) -> tuple:
    return () if p is None else (p,) if isinstance(p, str) else tuple(p)


#: ``[fn]``: the mesh of ``set_mesh`` in this thread, or None (installed by
#: ``lax.sharding_constraint.install_mesh_services``; the mesh lives in the backend).
CONTEXT_MESH: list = [lambda: None]


def context_base() -> Any:
    """A replicated sharding on the mesh of ``set_mesh`` when that mesh has an Explicit axis,
    else None: JAX types the elementwise results of untyped operands (NumPy arguments, constants)
    on the context mesh."""
    mesh = CONTEXT_MESH[0]()
    types = getattr(mesh, "axis_types", None)
    if not types or not any(t.name == "Explicit" for t in types):
        return None
    return explicit_part(_REPLICATED[0](mesh), 0)


#: ``[fn]``: ``NamedSharding(mesh, P())`` (installed beside ``CONTEXT_MESH``).
_REPLICATED: list = [None]
CONTEXT_EXPLICIT[0] = lambda: context_base() is not None


def common_sharding(name: str, avals: Sequence[ShapedArray]) -> Any:
    """The sharding of the first sharded operand (its mesh is the result's); all meshes equal."""
    base = None
    for a in avals:
        s = a.sharding
        if s is None:
            continue
        if base is None:
            base = s
        elif s.mesh != base.mesh:
            raise ShardingTypeError(f"{name}: the mesh of all inputs should be equal. Got one "
                                    f"mesh: {base.mesh} and another mesh: {s.mesh}")
    return base


def make_sharding(base: Any, entries: Sequence[Any]) -> Any:
    if base is None:
        return None
    used = [a for p in entries for a in spec_axes(p)]
    if len(used) != len(set(used)):  # JAX's DuplicateSpecError: "illegally sharded result"
        raise DuplicateSpecError.of(type(base.spec)(*entries), base.mesh)
    return base.with_spec(tuple(entries))


def types_str(avals: Sequence[ShapedArray]) -> str:
    return ", ".join(a.str_short(False) for a in avals)


def axis_size(mesh: Any, p: Any) -> int:
    n = 1
    for ax in spec_axes(p):
        n *= mesh.shape[ax]
    return n


# ------------------------------------------------------------------ elementwise (broadcasting)

def broadcasting(name: str, avals: Sequence[ShapedArray], ndim: int) -> Any:
    base = common_sharding(name, avals)
    if base is None:
        base = context_base()
        return None if base is None else make_sharding(base, (None,) * ndim)
    ops = [a for a in avals if a.shape]
    if not ops:
        return make_sharding(base, ())
    if any(len(a.shape) != ndim for a in ops):
        return None  # a rank error is the shape rule's to raise
    specs = [entries(a) for a in ops]
    out = []
    for d in range(ndim):
        chosen = None
        for sp in specs:
            p = sp[d]
            if p is None:
                continue
            if chosen is None:
                chosen = p
            elif spec_axes(chosen) != spec_axes(p):
                raise ShardingTypeError(
                    f"{name} got incompatible shardings for broadcasting: "
                    f"{', '.join(str(tuple(s)) for s in specs)}.")
        out.append(chosen)
    return make_sharding(base, out)


def _default_rule(prim: Any, in_avals: Sequence[ShapedArray], out: Any, **params: Any) -> Any:
    """Results shaped like every non-scalar operand take the broadcasting rule; results of
    primitives that run a traced program keep the sharding the program gave them; others get
    none (the compiler chooses, as on Auto axes)."""
    outs = out if prim.multiple_results else [out]
    res = []
    for o in outs:
        ops = [a for a in in_avals if a.shape]
        if o.shape and ops and all(len(a.shape) == len(o.shape) and all(
                n in (m, 1) for n, m in zip(a.shape, o.shape)) for a in ops):
            res.append(broadcasting(prim.name, in_avals, len(o.shape)))
        elif o.sharding is not None:
            res.append(o.sharding)
        elif not o.shape:
            res.append(make_sharding(common_sharding(prim.name, in_avals), ()))
        else:
            res.append(None)
    return res if prim.multiple_results else res[0]


DEFAULT_SHARDING_RULE[0] = _default_rule


def like_b_rule(prim: Any, in_avals: Sequence[ShapedArray], out: Any, **_: Any) -> Any:
    """``custom_linear_solve``: the solution is typed as ``b`` (the trailing operands), as
    JAX's abstract eval returns ``b``'s avals."""
    return [a.sharding for a in in_avals[len(in_avals) - len(out):]]




# ------------------------------------------------------------------ shape operations

def drop_dims(dims: Any) -> Any:
    def rule(prim: Any, in_avals: Sequence[ShapedArray], out: Any, **params: Any) -> Any:
        drop = set(params[dims])
        spec = [p for i, p in enumerate(entries(in_avals[0])) if i not in drop]
        base = common_sharding(prim.name, in_avals)
        if prim.multiple_results:
            return [make_sharding(base, spec)] * len(out)
        return make_sharding(base, spec)
    return rule


def varying_shape_rule(what: str) -> Any:
    """Slicing and padding: the operand's sharding, when each changed split dimension stays
    divisible by its mesh axes (JAX's rule)."""
    def rule(prim: Any, in_avals: Sequence[ShapedArray], out: ShapedArray, **_: Any) -> Any:
        x = in_avals[0]
        base = common_sharding(prim.name, in_avals[:1])
        if base is None:
            return None
        spec = entries(x)
        for n_in, n_out, p in zip(x.shape, out.shape, spec):
            if n_in != n_out and p is not None and n_out % axis_size(base.mesh, p):
                raise ShardingTypeError(
                    f"{what} on sharded dims where out dim ({n_out}) is not divisible by mesh "
                    f"axes ({axis_size(base.mesh, p)}) with spec ({p}) is not implemented. Got "
                    f"input type={x.str_short(False)} and output shape={out.shape}")
        return make_sharding(base, spec)
    return rule


def same_as_operands(what: str) -> Any:
    """Concatenate, dynamic_update_slice: all sharded operands alike; the result as they are."""
    def rule(prim: Any, in_avals: Sequence[ShapedArray], out: ShapedArray, **_: Any) -> Any:
        ops = [a for a in in_avals if a.shape and len(a.shape) == len(out.shape)]
        base = common_sharding(prim.name, ops)
        if base is None:
            return None
        specs = [tuple(spec_axes(p) for p in entries(a)) for a in ops]
        if any(s != specs[0] for s in specs[1:]):
            raise ShardingTypeError(f"{what}: all operands should have the same sharding. Got "
                                    f"{types_str(ops)}")
        return make_sharding(base, entries(ops[0]))
    return rule




_RESHARD = threading.local()


class resharding:
    """Within this context, ``sharding_constraint`` s are ``reshard`` s (they change the type);
    outside, they are ``with_sharding_constraint`` s, which on a mesh of only Explicit axes
    assert the type instead (as in JAX)."""

    __slots__ = ("prev",)

    def __enter__(self) -> None:
        self.prev = getattr(_RESHARD, "on", False)
        _RESHARD.on = True

    def __exit__(self, *exc: Any) -> None:
        _RESHARD.on = self.prev


def explicit_part(sharding: Any, ndim: int, otherwise: Any = None) -> Any:
    """The type-level part of ``sharding``: its spec restricted to the mesh's Explicit axes (a
    NamedSharding), or ``otherwise`` when its mesh has no Explicit axis."""
    mesh = getattr(sharding, "mesh", None)
    types = getattr(mesh, "axis_types", None)
    if not types or not any(t.name == "Explicit" for t in types):
        return otherwise
    explicit = {n for n, t in zip(mesh.axis_names, types) if t.name == "Explicit"}
    spec = []
    for p in list(sharding.spec)[:ndim]:
        ax = tuple(a for a in spec_axes(p) if a in explicit) if isinstance(p, (str, tuple)) else ()
        spec.append(None if not ax else ax[0] if len(ax) == 1 else ax)
    spec += [None] * (ndim - len(spec))  # one entry per dimension, as JAX's types have
    return sharding.with_spec(tuple(spec))


# a ShapeDtypeStruct placed on Explicit mesh axes traces with that type, as an array placed so
_staging.STAND_IN_SHARDING_TYPE[0] = explicit_part


# ------------------------------------------------------------------ dot_general

_PENDING = threading.local()


class out_sharding_pending:
    """Within this context the result's sharding will be given afterwards (an ``out_sharding=``
    argument): rules that would refuse an ambiguous sharding (sharded contracting dimensions, a
    scatter into split dimensions) give a provisional one instead."""

    __slots__ = ("prev",)

    def __enter__(self) -> None:
        self.prev = getattr(_PENDING, "on", False)
        _PENDING.on = True

    def __exit__(self, *exc: Any) -> None:
        _PENDING.on = self.prev


def rules_mode() -> tuple:
    """``()`` outside ``out_sharding=`` and ``reshard``; else which of them is on (the eager
    cache keeps executables compiled there apart: the rules accept more there).

    Example:
        >>> rules_mode()
        ()
    """
    pending, reshard = getattr(_PENDING, "on", False), getattr(_RESHARD, "on", False)
    return () if not (pending or reshard) else (pending, reshard)


# ------------------------------------------------------------------ gather / scatter


# ------------------------------------------------------------------ along one dimension

def unsharded_dim(what: str, param: str) -> Any:
    """Cumulative reductions and sorts need their dimension unsplit (JAX's rule)."""
    def rule(prim: Any, in_avals: Sequence[ShapedArray], out: Any, **params: Any) -> Any:
        d = params[param]
        base = common_sharding(prim.name, in_avals)
        for a in in_avals:
            if entries(a)[d] is not None:
                raise ShardingTypeError(what.format(t=a.str_short(False), d=d))
        spec = entries(in_avals[0])
        if prim.multiple_results:
            return [make_sharding(base, spec)] * len(out)
        return make_sharding(base, spec)
    return rule


# ------------------------------------------------------------------ FFT, convolution




# ------------------------------------------------------------------ linear algebra

def linalg_rule(ranks: tuple) -> Any:
    """JAX's ``linalg_sharding_rule``: the leading (batch) dimensions carry their sharding,
    equal across the operands; the trailing matrix (vector) dimensions must be unsplit."""
    def rule(prim: Any, in_avals: Sequence[ShapedArray], out: Any, **_: Any) -> Any:
        base = common_sharding(prim.name, in_avals)
        if base is None:
            return [None] * len(out) if prim.multiple_results else None
        batches = []
        for i, (rank, a) in enumerate(zip(ranks, in_avals)):
            spec = entries(a)
            nb = len(spec) - rank
            if any(p is not None for p in spec[nb:]):
                raise ShardingTypeError(
                    f"Input {i} to {prim.name} must be unsharded on non-batch dimensions, but "
                    f"got {spec_of(a, base)}.")
            batches.append(tuple(spec[:nb]))
        if any(b != batches[0] for b in batches[1:]):
            raise ShardingTypeError(f"All inputs to {prim.name} must have the same batch "
                                    f"sharding, but got {batches}.")
        batch = list(batches[0])
        outs = out if prim.multiple_results else [out]
        res = [make_sharding(base, batch + [None] * (len(o.shape) - len(batch))) for o in outs]
        return res if prim.multiple_results else res[0]
    return rule


def spec_of(a: ShapedArray, base: Any) -> Any:
    """``a``'s spec, one entry per dimension, as a PartitionSpec (for messages)."""
    return type(base.spec)(*entries(a))


# ------------------------------------------------------------------ random bits

def pending() -> bool:
    """True inside ``out_sharding=`` handling: rules give a provisional sharding where they would
    refuse an ambiguous one."""
    return getattr(_PENDING, "on", False)


def resharding_on() -> bool:
    """True inside ``reshard`` (a sharding constraint then sets the type, never asserts it)."""
    return getattr(_RESHARD, "on", False)

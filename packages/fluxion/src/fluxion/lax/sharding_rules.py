"""Sharding rules of the primitives: "sharding in types" on meshes with ``Explicit`` axes.

An array placed with a ``NamedSharding`` on a mesh with Explicit axes has that sharding in its
aval (``f32[8@x,4]``), and every primitive bound on it computes the sharding of its result at
trace time, as JAX's ``sharding_rule`` s do (``jax/_src/lax/lax.py``): elementwise operations
need compatible shardings, a reduction drops the reduced dimension's mesh axes, ``dot_general``
carries batch and free dimensions and refuses sharded contracting dimensions without an
``out_sharding``, and so on. A mismatch raises :class:`ShardingTypeError` naming the primitive,
the operand types and the user's line.

Each rule is ``rule(prim, in_avals, out, **params)`` and returns the sharding of the result (a
list of them for multiple results; None: none, the compiler chooses). Primitives without a rule
here get :func:`_default_rule`.

Example:
    >>> from fluxion.core.avals import SHARDING_RULES
    >>> "dot_general" in SHARDING_RULES
    True
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

from fluxion.core.avals import SHARDING_RULES, DuplicateSpecError, ShapedArray, ShardingTypeError

__all__ = ["ShardingTypeError", "with_out_sharding", "explicit_part", "resharding", "rules_mode"]


def _entries(a: ShapedArray) -> list:
    """One spec entry per dimension of ``a`` (None: not split); all None when unsharded."""
    if a.sharding is None:
        return [None] * len(a.shape)
    sp = list(a.sharding.spec)[:len(a.shape)]
    sp += [None] * (len(a.shape) - len(sp))
    return [None if (p is None or p == () or not isinstance(p, (str, tuple))) else p for p in sp]


def _axes(p: Any) -> tuple:
    return () if p is None else (p,) if isinstance(p, str) else tuple(p)


def _base(name: str, avals: Sequence[ShapedArray]) -> Any:
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


def _make(base: Any, entries: Sequence[Any]) -> Any:
    if base is None:
        return None
    used = [a for p in entries for a in _axes(p)]
    if len(used) != len(set(used)):  # JAX's DuplicateSpecError: "illegally sharded result"
        raise DuplicateSpecError(tuple(entries))
    return base.with_spec(tuple(entries))


def _types(avals: Sequence[ShapedArray]) -> str:
    return ", ".join(a.str_short(False) for a in avals)


def _axis_size(mesh: Any, p: Any) -> int:
    n = 1
    for ax in _axes(p):
        n *= mesh.shape[ax]
    return n


# ------------------------------------------------------------------ elementwise (broadcasting)

def _broadcasting(name: str, avals: Sequence[ShapedArray], ndim: int) -> Any:
    base = _base(name, avals)
    if base is None:
        return None
    ops = [a for a in avals if a.shape]
    if not ops:
        return _make(base, ())
    if any(len(a.shape) != ndim for a in ops):
        return None  # a rank error is the shape rule's to raise
    specs = [_entries(a) for a in ops]
    out = []
    for d in range(ndim):
        chosen = None
        for sp in specs:
            p = sp[d]
            if p is None:
                continue
            if chosen is None:
                chosen = p
            elif _axes(chosen) != _axes(p):
                raise ShardingTypeError(
                    f"{name} got incompatible shardings for broadcasting: "
                    f"{', '.join(str(tuple(s)) for s in specs)}.")
        out.append(chosen)
    return _make(base, out)


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
            res.append(_broadcasting(prim.name, in_avals, len(o.shape)))
        elif o.sharding is not None:
            res.append(o.sharding)
        elif not o.shape:
            res.append(_make(_base(prim.name, in_avals), ()))
        else:
            res.append(None)
    return res if prim.multiple_results else res[0]


def _keep_rule(prim: Any, in_avals: Sequence[ShapedArray], out: Any, **params: Any) -> Any:
    """The results' shardings as the traced program (jit, custom_jvp, cond, scan ...) gave."""
    outs = out if prim.multiple_results else [out]
    res = [o.sharding for o in outs]
    return res if prim.multiple_results else res[0]


def _like_b_rule(prim: Any, in_avals: Sequence[ShapedArray], out: Any, **_: Any) -> Any:
    """``custom_linear_solve``: the solution is typed as ``b`` (the trailing operands), as
    JAX's abstract eval returns ``b``'s avals."""
    return [a.sharding for a in in_avals[len(in_avals) - len(out):]]


SHARDING_RULES[None] = _default_rule
for _name in ("jit", "custom_jvp_call", "custom_vjp_call", "custom_lin", "linear_call", "remat",
              "cond", "while", "scan", "custom_root", "shard_map"):
    SHARDING_RULES[_name] = _keep_rule
SHARDING_RULES["custom_linear_solve"] = _like_b_rule


# ------------------------------------------------------------------ shape operations

def _broadcast_in_dim_rule(prim: Any, in_avals: Sequence[ShapedArray], out: ShapedArray, *,
                           shape: tuple, broadcast_dimensions: tuple, **_: Any) -> Any:
    x = in_avals[0]
    src = iter(_entries(x))
    bds = set(broadcast_dimensions)
    spec = []
    for i in range(len(shape)):
        if i in bds:
            p = next(src)
            # a size-1 dimension broadcast to a larger one is not split
            spec.append(p if x.shape[broadcast_dimensions.index(i)] == shape[i] else None)
        else:
            spec.append(None)
    return _make(_base(prim.name, in_avals), spec)


def _reshape_error(x: ShapedArray, new_sizes: tuple) -> Exception:
    if getattr(_PENDING, "on", False):
        return _Provisional()
    return ShardingTypeError(
        "This reshape is not supported. Please specify the sharding of the output via the "
        f"`out_sharding` argument of reshape. Got operand type: {x.str_short(False)}, new "
        f"sizes: {tuple(new_sizes)}")


class _Provisional(Exception):
    """An ambiguous reshape while an out_sharding is pending: no sharding until it is given."""


def _reshape_rule(prim: Any, in_avals: Sequence[ShapedArray], out: ShapedArray, *,
                  new_sizes: tuple, **_: Any) -> Any:
    try:
        return _reshape_spec(prim, in_avals, new_sizes)
    except _Provisional:
        return None


def _reshape_spec(prim: Any, in_avals: Sequence[ShapedArray], new_sizes: tuple) -> Any:
    x = in_avals[0]
    base = _base(prim.name, in_avals)
    spec = _entries(x)
    if all(p is None for p in spec):
        return _make(base, [None] * len(new_sizes))
    # Walk the dimensions as groups of equal products: a group of one operand dimension split
    # into several takes its axes on the first (major) new dimension that holds them; several
    # merged into one take their axes together, when only major ones are split.
    old, new = list(x.shape), list(new_sizes)
    out_spec: list = []
    i = j = 0
    while i < len(old) or j < len(new):
        if i < len(old) and old[i] == 1 and (j >= len(new) or new[j] != 1):
            if spec[i] is not None:
                raise _reshape_error(x, new_sizes)
            i += 1
            continue
        if j < len(new) and new[j] == 1 and (i >= len(old) or old[i] != 1):
            out_spec.append(None)
            j += 1
            continue
        if i >= len(old) or j >= len(new):
            raise _reshape_error(x, new_sizes)
        gi, gj = [i], [j]
        po, pn = old[i], new[j]
        while po != pn:
            if po < pn:
                i += 1
                gi.append(i)
                po *= old[i]
            else:
                j += 1
                gj.append(j)
                pn *= new[j]
        i += 1
        j += 1
        if len(gi) == 1 and len(gj) == 1:
            out_spec.append(spec[gi[0]])
            continue
        ax: list = []
        seen_none = False
        for k in gi:
            if spec[k] is None:
                seen_none = True
            elif seen_none:
                raise _reshape_error(x, new_sizes)
            else:
                ax.extend(_axes(spec[k]))
        if not ax:
            out_spec.extend([None] * len(gj))
            continue
        if len(gj) != 1 and len(gi) != 1:
            raise _reshape_error(x, new_sizes)
        if len(gj) == 1:  # merged: the axes together on the one new dimension
            if new[gj[0]] % _axis_size(base.mesh, tuple(ax)):
                raise _reshape_error(x, new_sizes)
            out_spec.append(ax[0] if len(ax) == 1 else tuple(ax))
            continue
        # split: the axes go, major first, to the new dimensions they divide
        rest = list(ax)
        for k in gj:
            n, mine = new[k], []
            while rest and n % base.mesh.shape[rest[0]] == 0 and n > 1:
                n //= base.mesh.shape[rest[0]]
                mine.append(rest.pop(0))
            if rest and mine and n != 1:
                raise _reshape_error(x, new_sizes)
            out_spec.append(None if not mine else mine[0] if len(mine) == 1 else tuple(mine))
            if rest and not mine:
                raise _reshape_error(x, new_sizes)
        if rest:
            raise _reshape_error(x, new_sizes)
    if len(out_spec) != len(new_sizes):
        raise _reshape_error(x, new_sizes)
    return _make(base, out_spec)


def _transpose_rule(prim: Any, in_avals: Sequence[ShapedArray], out: ShapedArray, *,
                    permutation: tuple, **_: Any) -> Any:
    spec = _entries(in_avals[0])
    return _make(_base(prim.name, in_avals), [spec[i] for i in permutation])


def _drop_dims(dims: Any) -> Any:
    def rule(prim: Any, in_avals: Sequence[ShapedArray], out: Any, **params: Any) -> Any:
        drop = set(params[dims])
        spec = [p for i, p in enumerate(_entries(in_avals[0])) if i not in drop]
        base = _base(prim.name, in_avals)
        if prim.multiple_results:
            return [_make(base, spec)] * len(out)
        return _make(base, spec)
    return rule


def _varying_shape_rule(what: str) -> Any:
    """Slicing and padding: the operand's sharding, when each changed split dimension stays
    divisible by its mesh axes (JAX's rule)."""
    def rule(prim: Any, in_avals: Sequence[ShapedArray], out: ShapedArray, **_: Any) -> Any:
        x = in_avals[0]
        base = _base(prim.name, in_avals[:1])
        if base is None:
            return None
        spec = _entries(x)
        for n_in, n_out, p in zip(x.shape, out.shape, spec):
            if n_in != n_out and p is not None and n_out % _axis_size(base.mesh, p):
                raise ShardingTypeError(
                    f"{what} on sharded dims where out dim ({n_out}) is not divisible by mesh "
                    f"axes ({_axis_size(base.mesh, p)}) with spec ({p}) is not implemented. Got "
                    f"input type={x.str_short(False)} and output shape={out.shape}")
        return _make(base, spec)
    return rule


def _same_as_operands(what: str) -> Any:
    """Concatenate, dynamic_update_slice: all sharded operands alike; the result as they are."""
    def rule(prim: Any, in_avals: Sequence[ShapedArray], out: ShapedArray, **_: Any) -> Any:
        ops = [a for a in in_avals if a.shape and len(a.shape) == len(out.shape)]
        base = _base(prim.name, ops)
        if base is None:
            return None
        specs = [tuple(_axes(p) for p in _entries(a)) for a in ops]
        if any(s != specs[0] for s in specs[1:]):
            raise ShardingTypeError(f"{what}: all operands should have the same sharding. Got "
                                    f"{_types(ops)}")
        return _make(base, _entries(ops[0]))
    return rule


SHARDING_RULES["broadcast_in_dim"] = _broadcast_in_dim_rule
SHARDING_RULES["reshape"] = _reshape_rule
SHARDING_RULES["transpose"] = _transpose_rule
SHARDING_RULES["squeeze"] = _drop_dims("dimensions")
for _name in ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and",
              "reduce_or", "reduce_xor", "argmax", "argmin"):
    SHARDING_RULES[_name] = _drop_dims("axes")
SHARDING_RULES["reduce"] = _drop_dims("dimensions")
SHARDING_RULES["slice"] = _varying_shape_rule("slicing")
SHARDING_RULES["dynamic_slice"] = _varying_shape_rule("dynamic_slice")
SHARDING_RULES["pad"] = _varying_shape_rule("padding")
SHARDING_RULES["rev"] = _varying_shape_rule("rev")
SHARDING_RULES["concatenate"] = _same_as_operands("concatenate")
SHARDING_RULES["dynamic_update_slice"] = _same_as_operands("dynamic_update_slice")


def _iota_rule(prim: Any, in_avals: Sequence[ShapedArray], out: ShapedArray, **_: Any) -> Any:
    return None


SHARDING_RULES["iota"] = _iota_rule


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


def _constraint_rule(prim: Any, in_avals: Sequence[ShapedArray], out: ShapedArray, *,
                     sharding: Any, **_: Any) -> Any:
    """``reshard``: the type becomes the given sharding (its Explicit axes);
    ``with_sharding_constraint`` on a mesh of only Explicit axes checks that the operand already
    has it; on a mesh without Explicit axes the operand's type is kept."""
    typed = explicit_part(sharding, len(out.shape), in_avals[0].sharding)
    x = in_avals[0]
    mesh = getattr(sharding, "mesh", None)
    if (not getattr(_RESHARD, "on", False) and x.sharding is not None and mesh is not None
            and all(t.name == "Explicit" for t in mesh.axis_types)):
        have = tuple(_axes(p) for p in _entries(x))
        want = tuple(_axes(p) for p in _entries(out.update(sharding=typed)))
        if have != want:
            raise AssertionError(
                "`with_sharding_constraint` acts as an assert when all axes of mesh are of type "
                f"`Explicit`. The array sharding: {x.sharding.spec!r} did not match the sharding "
                f"provided: {sharding.spec!r}. Please use `fluxion.sharding.reshard` to shard "
                "your input to the sharding you want.")
    return typed


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
        ax = tuple(a for a in _axes(p) if a in explicit) if isinstance(p, (str, tuple)) else ()
        spec.append(None if not ax else ax[0] if len(ax) == 1 else ax)
    spec += [None] * (ndim - len(spec))  # one entry per dimension, as JAX's types have
    return sharding.with_spec(tuple(spec))


SHARDING_RULES["sharding_constraint"] = _constraint_rule


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


def with_out_sharding(fname: str, out_sharding: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` placed with ``out_sharding`` (a Sharding or a PartitionSpec over
    the mesh of ``set_mesh``; None: as computed): the ``out_sharding=`` of ``jnp.dot``,
    ``jnp.zeros``, ``.at[...].set`` and the others.

    Example:
        >>> import fluxion.numpy as jnp
        >>> with_out_sharding("zeros", None, jnp.zeros, 2).shape
        (2,)
    """
    if out_sharding is None:
        return fn(*args, **kwargs)
    with out_sharding_pending():
        out = fn(*args, **kwargs)
    from fluxion.lax.parallel import _context_mesh, _named_sharding, with_sharding_constraint
    if type(out_sharding).__name__ == "PartitionSpec" and _context_mesh() is not None:
        out_sharding = _named_sharding(_context_mesh(), out_sharding)
    ndim = getattr(out, "ndim", None)
    mesh = getattr(out_sharding, "mesh", None)
    if (ndim is not None and mesh is not None and hasattr(out_sharding, "with_spec")
            and all(t.name == "Explicit" for t in mesh.axis_types)
            and len(out_sharding.spec) < ndim):  # the type's spec names every dimension (JAX)
        out_sharding = out_sharding.with_spec(
            tuple(out_sharding.spec) + (None,) * (ndim - len(out_sharding.spec)))
    with resharding():
        try:
            return with_sharding_constraint(out, out_sharding)
        except (TypeError, ValueError) as e:
            raise type(e)(str(e).replace("lax.with_sharding_constraint", f"{fname}: "
                                         "out_sharding")) from None


def rules_mode() -> tuple:
    """``()`` outside ``out_sharding=`` and ``reshard``; else which of them is on (the eager
    cache keeps executables compiled there apart: the rules accept more there).

    Example:
        >>> rules_mode()
        ()
    """
    pending, reshard = getattr(_PENDING, "on", False), getattr(_RESHARD, "on", False)
    return () if not (pending or reshard) else (pending, reshard)


def _dot_general_rule(prim: Any, in_avals: Sequence[ShapedArray], out: ShapedArray, *,
                      dimension_numbers: tuple, **_: Any) -> Any:
    lhs, rhs = in_avals
    base = _base("dot_general", in_avals)
    pending = getattr(_PENDING, "on", False)
    (lc, rc), (lb, rb) = dimension_numbers
    ls, rs = _entries(lhs), _entries(rhs)
    lcs, rcs = tuple(ls[i] for i in lc), tuple(rs[i] for i in rc)
    lbs, rbs = tuple(ls[i] for i in lb), tuple(rs[i] for i in rb)
    for a, b in zip(lbs, rbs):
        if a is not None and b is not None and _axes(a) != _axes(b):
            raise ShardingTypeError(
                "dot_general requires lhs batch dimensions and rhs batch dimensions to have the "
                f"consistent sharding, got {lbs} and {rbs}.")
    for a, b in zip(lcs, rcs):
        if a is not None and b is not None and _axes(a) != _axes(b):
            raise ShardingTypeError("dot_general requires contracting dimensions to have "
                                    f"consistent sharding, got {lcs} and {rcs}.")
    for a, b in zip(lcs, rcs):
        if a is not None and b is not None and not pending:
            raise ShardingTypeError(
                "Contracting dimensions are sharded and it is ambiguous how the output should "
                "be sharded. Please specify the output sharding via the `out_sharding` "
                f"parameter. Got lhs_contracting_spec={lcs} and rhs_contracting_spec={rcs}")
    batch = [ls[i] for i in lb]
    lfree = [p for i, p in enumerate(ls) if i not in set(lc) | set(lb)]
    rfree = [p for i, p in enumerate(rs) if i not in set(rc) | set(rb)]
    spec = batch + lfree + rfree
    used: list = [a for p in spec for a in _axes(p)]
    if len(used) != len(set(used)) and pending:
        return _make(base, [None] * len(spec))
    if len(used) != len(set(used)):
        bad = out.update(sharding=_make(base, [None] * len(spec)))
        dims = ",".join(f"{n}@{p}" if isinstance(p, str) else f"{n}@({','.join(p)})"
                        if p else str(n) for n, p in zip(out.shape, spec))
        raise ShardingTypeError(
            f"dot_general operation with inputs: {lhs.str_short()}, {rhs.str_short()} produces "
            f"an illegally sharded result: {bad.str_short().split('[')[0]}[{dims}]")
    return _make(base, spec)


SHARDING_RULES["dot_general"] = _dot_general_rule


# ------------------------------------------------------------------ gather / scatter

def _gather_rule(prim: Any, in_avals: Sequence[ShapedArray], out: ShapedArray, *,
                 dimension_numbers: Any, slice_sizes: tuple, **_: Any) -> Any:
    x, idx = in_avals
    base = _base("gather", in_avals)
    dn = dimension_numbers
    xs, ids = _entries(x), _entries(idx)
    for d in set(dn.start_index_map) | set(dn.collapsed_slice_dims):
        if xs[d] is not None:
            if getattr(_PENDING, "on", False):
                return None
            raise ShardingTypeError(
                "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the "
                "gather indexing as out sharding could not be resolved unambiguously (or would "
                f"require collectives on inputs). Got operand={x!r}, indices={idx!r}")
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    offs = iter([xs[i] if slice_sizes[i] == x.shape[i] else None
                 for i in range(len(x.shape)) if i not in dropped])
    batch = iter(ids[:-1])
    spec = [next(offs) if i in dn.offset_dims else next(batch) for i in range(len(out.shape))]
    return _make(base, spec)


def _scatter_rule(prim: Any, in_avals: Sequence[ShapedArray], out: ShapedArray, *,
                  dimension_numbers: Any, **_: Any) -> Any:
    x, idx, upd = in_avals[:3]
    base = _base(prim.name, in_avals[:3])
    dn = dimension_numbers
    xs = _entries(x)
    if (any(xs[d] is not None for d in set(dn.scatter_dims_to_operand_dims)
            | set(dn.inserted_window_dims)) or idx.sharding is not None and any(
                p is not None for p in _entries(idx))):
        if getattr(_PENDING, "on", False):
            return None
        raise ShardingTypeError(
            "Use `.at[...].set/add/mul/...(out_sharding=)` to provide output PartitionSpec for "
            "the scatter update as out sharding could not be resolved unambiguously (or would "
            f"require collectives on inputs). Got operand={x!r}, indices={idx!r}, "
            f"updates={upd!r}")
    return _make(base, xs)


SHARDING_RULES["gather"] = _gather_rule
for _name in ("scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min",
              "scatter_max"):
    SHARDING_RULES[_name] = _scatter_rule


# ------------------------------------------------------------------ along one dimension

def _unsharded_dim(what: str, param: str) -> Any:
    """Cumulative reductions and sorts need their dimension unsplit (JAX's rule)."""
    def rule(prim: Any, in_avals: Sequence[ShapedArray], out: Any, **params: Any) -> Any:
        d = params[param]
        base = _base(prim.name, in_avals)
        for a in in_avals:
            if _entries(a)[d] is not None:
                raise ShardingTypeError(what.format(t=a.str_short(False), d=d))
        spec = _entries(in_avals[0])
        if prim.multiple_results:
            return [_make(base, spec)] * len(out)
        return _make(base, spec)
    return rule


for _name in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"):
    SHARDING_RULES[_name] = _unsharded_dim(
        "Input should be unsharded over the axis being reduced. Got input type={t} and "
        "axis={d}", "axis")
SHARDING_RULES["sort"] = _unsharded_dim(
    "Arguments to sort must be unsharded over the sorting dimension. Got arg type={t} and "
    "sorting dimension={d}", "dimension")


# ------------------------------------------------------------------ FFT, convolution

def _fft_rule(prim: Any, in_avals: Sequence[ShapedArray], out: ShapedArray, **_: Any) -> Any:
    """JAX's ``fft`` keeps its operand's sharding (its abstract eval updates shape and dtype
    only), split transformed dimensions included; a split dimension whose new size (an RFFT's
    ``n // 2 + 1``) its mesh axes do not divide is JAX's ValueError."""
    base = _base(prim.name, in_avals)
    spec = _entries(in_avals[0])
    if base is not None:
        for d, (n, p) in enumerate(zip(out.shape, spec)):
            k = _axis_size(base.mesh, p)
            if p is not None and n % k:
                raise ValueError(
                    f"Sharding spec {_axes(p)} implies that array axis {d} is partitioned {k} "
                    f"times, but does not evenly divide the dimension size {n}. Got shape: "
                    f"{out.shape} and sharding {base.with_spec(tuple(spec))}")
    return _make(base, spec)


def _conv_rule(prim: Any, in_avals: Sequence[ShapedArray], out: ShapedArray, *,
               dimension_numbers: Any, **_: Any) -> Any:
    """JAX's rule: with an unsharded kernel and an unsplit lhs feature dimension, the result
    has the lhs's spec (position by position; a split dimension whose size changes must stay
    divisible); otherwise an ``out_sharding`` is required."""
    lhs, rhs = in_avals
    base = _base(prim.name, in_avals)
    if base is None:
        return None
    if any(p is not None for p in _entries(rhs)) or (
            _entries(lhs)[dimension_numbers.lhs_spec[1]] is not None):
        if getattr(_PENDING, "on", False):
            return None
        raise ShardingTypeError("Please specify the output sharding via `out_sharding` "
                                "parameter of `conv_general_dilated`")
    return _varying_shape_rule("conv_general_dilated")(prim, [lhs], out)


SHARDING_RULES["fft"] = _fft_rule
SHARDING_RULES["conv_general_dilated"] = _conv_rule


# ------------------------------------------------------------------ linear algebra

def _linalg_rule(ranks: tuple) -> Any:
    """JAX's ``linalg_sharding_rule``: the leading (batch) dimensions carry their sharding,
    equal across the operands; the trailing matrix (vector) dimensions must be unsplit."""
    def rule(prim: Any, in_avals: Sequence[ShapedArray], out: Any, **_: Any) -> Any:
        base = _base(prim.name, in_avals)
        if base is None:
            return [None] * len(out) if prim.multiple_results else None
        batches = []
        for i, (rank, a) in enumerate(zip(ranks, in_avals)):
            spec = _entries(a)
            nb = len(spec) - rank
            if any(p is not None for p in spec[nb:]):
                raise ShardingTypeError(
                    f"Input {i} to {prim.name} must be unsharded on non-batch dimensions, but "
                    f"got {_spec_of(a, base)}.")
            batches.append(tuple(spec[:nb]))
        if any(b != batches[0] for b in batches[1:]):
            raise ShardingTypeError(f"All inputs to {prim.name} must have the same batch "
                                    f"sharding, but got {batches}.")
        batch = list(batches[0])
        outs = out if prim.multiple_results else [out]
        res = [_make(base, batch + [None] * (len(o.shape) - len(batch))) for o in outs]
        return res if prim.multiple_results else res[0]
    return rule


def _spec_of(a: ShapedArray, base: Any) -> Any:
    """``a``'s spec, one entry per dimension, as a PartitionSpec (for messages)."""
    return type(base.spec)(*_entries(a))


def _triangular_solve_rule(prim: Any, in_avals: Sequence[ShapedArray], out: ShapedArray, *,
                           left_side: bool, transpose_a: bool, **_: Any) -> Any:
    """JAX's ``_tri_solve_sharding``: equal batch sharding, unsplit contracting dimensions; the
    result's matrix dimensions come from ``a``'s free one and ``b``'s."""
    a, b = in_avals
    base = _base(prim.name, in_avals)
    if base is None:
        return None
    sa, sb = _entries(a), _entries(b)
    if tuple(sa[:-2]) != tuple(sb[:-2]):
        raise ShardingTypeError("All inputs to triangular_solve must have the same batch "
                                f"sharding, but got {tuple(sa[:-2])} and {tuple(sb[:-2])}.")
    a2, b2 = sa[-2:], sb[-2:]
    if a2[int(bool(left_side) ^ bool(transpose_a))] is not None:
        raise ShardingTypeError(
            "triangular solve input `a` must be unsharded on the contracting axis, but got "
            f"{_spec_of(a, base)} with left_side={bool(left_side)} and "
            f"transpose_a={bool(transpose_a)}.")
    if b2[int(not left_side)] is not None:
        raise ShardingTypeError(
            "triangular solve input `b` must be unsharded on the contracting axis, but got "
            f"{_spec_of(b, base)} with left_side={bool(left_side)} and "
            f"transpose_a={bool(transpose_a)}.")
    mat = ([a2[int(bool(transpose_a))], b2[1]] if left_side
           else [b2[0], a2[int(not transpose_a)]])
    return _make(base, list(sa[:-2]) + mat)


for _name, _ranks in (("cholesky", (2,)), ("eig", (2,)), ("eigh", (2,)), ("hessenberg", (2,)),
                      ("householder_product", (2, 1)), ("lu", (2,)),
                      ("lu_pivots_to_permutation", (1,)), ("geqrf", (2,)), ("qr", (2,)),
                      ("schur", (2,)), ("svd", (2,)), ("tridiagonal", (2,)),
                      ("tridiagonal_solve", (1, 1, 1, 2)), ("symmetric_product", (2, 2))):
    SHARDING_RULES[_name] = _linalg_rule(_ranks)
SHARDING_RULES["triangular_solve"] = _triangular_solve_rule


# ------------------------------------------------------------------ random bits

def _rng_bit_generator_rule(prim: Any, in_avals: Sequence[ShapedArray], out: Any,
                            **_: Any) -> Any:
    """JAX's rule: the new key keeps the key's sharding; the bits are unsplit (replicated over
    the mesh)."""
    base = _base(prim.name, in_avals)
    return [in_avals[0].sharding, _make(base, [None] * len(out[1].shape))]


SHARDING_RULES["rng_bit_generator"] = _rng_bit_generator_rule

"""Automatic batching: ``vmap``.

The batching interpreter tracks, for each value of the function being vectorised, the value for
the whole batch and the position of the batch dimension in it (``bdim``), or ``not_mapped``
(``None``) when the value is the same for every member of the batch. Each primitive's batching
rule (``prim.batch``, set beside the primitive in its ``lax`` module) turns an operation on one
example into one operation on the batch::

    batch(axis_data, args, dims, **params) -> (out, out_dim)   # multiple results: (outs, out_dims)

``axis_data`` is the :class:`AxisData` of the ``vmap`` (size and name; most rules ignore it),
``args`` are the batched values (with the parent interpreter current, so a rule binds primitives
normally), ``dims`` their batch dimensions (an int or ``not_mapped``). A rule is called when at
least one argument is mapped, and also, for primitives with ``batch_unmapped`` set (the ``jit``
call primitive, control flow, named-axis collectives), whenever the ``vmap`` has an
``axis_name``.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> fluxion.vmap(lambda x: x * 2)(jnp.arange(3)).tolist()
    [0, 2, 4]
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

import numpy as np

from fluxion.core.avals import ShapedArray
from fluxion.core.errors import user_source_line
from fluxion.core.ir import Program, eval_program
from fluxion.core.refs import AbstractRef, Ref
from fluxion.core.trace import (
    STATE,
    Interpreter,
    Tracer,
    check_live,
    interpreter_scope,
    set_current,
)
from fluxion.core.tracebacks import api_boundary, wraps
from fluxion.transforms.array_ops import matchaxis, shape_of
from fluxion.transforms.staging import (
    abstractify,
    cached_transform,
    close_program,
    fun_name,
    fun_source,
    mask_flags,
    trace_to_program,
)
from fluxion.tree_util import physical as tree_util

__all__ = ["vmap", "batch_subtrace", "not_mapped", "BatchTracer", "BatchInterpreter", "AxisData", "bound_axis_names",
           "batch_program", "is_unbatched"]

not_mapped = None

_PY_SCALARS = (bool, int, float, complex)


class AxisData:
    """The axis a ``vmap`` maps over: its ``name`` (or None), ``size`` and ``spmd_name``."""

    __slots__ = ("name", "size", "spmd_name")

    def __init__(self, name: Any, size: int, spmd_name: Any = None) -> None:
        self.name = name
        self.size = size
        self.spmd_name = spmd_name

    def __repr__(self) -> str:
        return f"AxisData(name={self.name!r}, size={self.size})"


class BatchTracer(Tracer):
    """A value inside a vmapped function: the batched value ``val`` with its batch dim ``bdim``.

    Only mapped values are wrapped; unmapped values stay what they are (constants to vmap).
    """

    __slots__ = ("val", "bdim", "_aval")

    def __init__(self, interp: "BatchInterpreter", val: Any, bdim: int) -> None:
        self._interp = interp
        self.val = val
        self.bdim = bdim
        self._aval = None

    @property
    def aval(self) -> ShapedArray:
        a = self._aval
        if a is None:
            full = abstractify(self.val)
            shape = full.shape
            a = self._aval = full.update(shape=shape[:self.bdim] + shape[self.bdim + 1:])
        return a


class BatchInterpreter(Interpreter):
    """Runs a function on a batch: every primitive is replaced by its batching rule."""

    def __init__(self, axis: AxisData, description: str = "vmap") -> None:
        self.axis = axis
        self.axis_name = axis.name
        self.description = description

    def process_primitive(self, prim: Any, args: Sequence[Any], params: dict[str, Any]) -> Any:
        vals: list[Any] = []
        dims: list[Any] = []
        mapped = False
        for x in args:
            if type(x) is BatchTracer and x._interp is self:
                vals.append(x.val)
                dims.append(x.bdim)
                mapped = True
            else:
                if isinstance(x, Tracer):
                    check_live(x, self)
                vals.append(x)
                dims.append(None)
        with set_current(self.parent):
            if not mapped and not (prim.batch_unmapped and self.axis_name is not None):
                return prim.bind(*vals, **params)
            rule = prim.batch
            if rule is None:
                raise NotImplementedError(
                    f"vmap: the primitive '{prim.name}' has no batching rule yet "
                    f"(at {user_source_line()})")
            out, out_dim = rule(self.axis, vals, dims, **params)
        if prim.multiple_results:
            return [o if d is None else BatchTracer(self, o, d) for o, d in zip(out, out_dim)]
        return out if out_dim is None else BatchTracer(self, out, out_dim)


def bound_axis_names() -> list[Any]:
    """The axis names bound by the enclosing ``vmap`` s, innermost first."""
    names = []
    it = STATE.interp
    while it is not None:
        name = getattr(it, "axis_name", None)
        if name is not None and getattr(it, "active", True):
            names.append(name)
        it = it.parent
    return names


# ------------------------------------------------------------------ batching a Program

def batch_subtrace(axis: AxisData, fun: Callable[[list], Sequence[Any]], args: Sequence[Any],
                   dims: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """``fun(inputs)`` (a list to a sequence) traced along ``axis`` with ``args`` batched at
    ``dims`` (``None``: unmapped); returns the outputs' values and each one's batch dimension
    where the batching rules put it (``None``: unbatched), as JAX's ``batch_subtrace``.

    Example:
        >>> import numpy as np
        >>> from fluxion import lax
        >>> vals, dims = batch_subtrace(AxisData(None, 3, None), lambda xs: [lax.neg(xs[0])],
        ...                             [np.ones((2, 3), np.float32)], [1])
        >>> (vals[0].shape, dims)
        ((2, 3), [1])
    """
    with interpreter_scope(BatchInterpreter(axis)) as it:
        ins = [x if d is None else BatchTracer(it, x, d) for x, d in zip(args, dims)]
        vals, out_dims = [], []
        for o in fun(ins):
            if type(o) is BatchTracer and o._interp is it:
                vals.append(o.val)
                out_dims.append(o.bdim)
            else:
                if isinstance(o, Tracer):
                    check_live(o, it)
                vals.append(o)
                out_dims.append(None)
    return vals, out_dims


def batch_program(program: Program, dims: Sequence[Any], axis: AxisData, *, to_front: bool = False,
                  instantiate: bool | Sequence[bool] = False) -> tuple[Program, list[Any], list[Any]]:
    """The batched version of a closed ``program`` whose inputs are batched at ``dims``
    (``None``: unmapped), cached on the program.

    Returns ``(batched, consts, out_dims)``: ``batched`` is a closed Program over ``(*consts,
    *batched inputs)``. An output's batch dimension is where the batching rules put it, or 0 with
    ``to_front``; ``instantiate`` (one flag, or one per output) batches an output at 0 even when
    it is unmapped (broadcast).
    """
    dims = tuple(dims)
    n_out = len(program.outvars)
    inst = mask_flags(instantiate, n_out)

    def make() -> tuple:
        in_avals = []
        for v, d in zip(program.invars, dims):
            a = v.aval
            if d is not None:
                a = a.update(shape=a.shape[:d] + (axis.size,) + a.shape[d:])
            in_avals.append(a)
        out_dims: list[Any] = []

        def batched(*xs: Any) -> list[Any]:
            vals, ds = batch_subtrace(axis, lambda ins: eval_program(program, [], ins), xs, dims)
            res = []
            for val, d, force in zip(vals, ds, inst):
                if force or (to_front and d is not None):
                    val, d = matchaxis(val, d, 0, axis.size), 0
                res.append(val)
                out_dims.append(d)
            return res

        batched.__name__ = "batched"
        new, consts, _ = trace_to_program(batched, tuple(in_avals), {}, in_avals=in_avals,
                                          description="vmap of a staged program")
        return close_program(new), consts, out_dims

    key = ("vmap", dims, axis.size, axis.name, axis.spmd_name, to_front, inst)
    return cached_transform(program, key, make)


def _uses_axis(program: Program, name: Any) -> bool:
    for eqn in program.eqns:
        names = eqn.params.get("axis_name")
        if names is not None:
            names = names if isinstance(names, tuple) else (names,)
            if name in names:
                return True
        for p in eqn.params.values():
            if isinstance(p, Program) and _uses_axis(p, name):
                return True
    return False


def is_unbatched(axis: AxisData, dims: Sequence[Any], *programs: Program | None) -> bool:
    """True when a primitive holding ``programs`` needs no batching: no operand is mapped and no
    program uses the vmap's axis name (the primitive is bound as it is)."""
    return all(d is None for d in dims) and (axis.name is None or not any(
        p is not None and _uses_axis(p, axis.name) for p in programs))


# ------------------------------------------------------------------ vmap

def _leaf_ok(x: Any) -> bool:
    return (isinstance(x, (Tracer, np.ndarray, np.generic) + _PY_SCALARS)
            or isinstance(getattr(x, "aval", None), ShapedArray)
            or getattr(x, "__jax_array__", None) is not None)


def _map_ref(r: Ref, axis: int, it: Any) -> tuple:
    """Inside ``vmap`` a mapped reference holds its value batched along ``axis`` and has the
    per-example type, as JAX's; its old (value, type, level) are returned for the way out."""
    old = (r._value, r._aval, r._level)
    inner = r._aval.inner_aval
    r._aval = AbstractRef(inner.update(shape=inner.shape[:axis] + inner.shape[axis + 1:]))
    r._value, r._level = BatchTracer(it, r._value, axis), it.level
    return old


def _unmap_ref(r: Ref, axis: int, it: Any, size: int, old: tuple) -> None:
    """The reference's final value, batched back along its ``axis`` (every example's row)."""
    v = r._value
    val, d = (v.val, v.bdim) if type(v) is BatchTracer and v._interp is it else (v, None)
    if isinstance(val, Tracer):
        check_live(val, it)
    with set_current(it.parent):
        r._value = matchaxis(val, d, axis, size)
    r._aval, r._level = old[1], old[2]


def _is_none(x: Any) -> bool:
    return x is None


def _check_axes_spec(spec: Any, what: str) -> None:
    for leaf in tree_util.tree_leaves(spec, is_leaf=_is_none):
        if leaf is not None and (isinstance(leaf, bool) or not isinstance(leaf, (int, np.integer))):
            raise TypeError(f"vmap {what} must be an int, None, or (nested) container with those "
                            f"types as leaves, but got {spec!r} (a leaf {leaf!r} of type "
                            f"{type(leaf).__name__}).")


def _path_names(fun: Callable, args: tuple, kwargs: dict) -> list[str]:
    try:
        params = list(inspect.signature(fun).bind_partial(*args, **kwargs).arguments)
    except (TypeError, ValueError):
        params = []
    names = []
    for path, _ in tree_util.tree_flatten_with_path((args, kwargs))[0]:
        if path[0].idx == 0:
            i = path[1].idx
            base = params[i] if i < len(params) else f"args[{i}]"
            names.append(f"{base}{tree_util.keystr(tuple(path[2:]))}")
        else:
            names.append(f"{path[1].key}{tree_util.keystr(tuple(path[2:]))}")
    return names


def _type_str(x: Any) -> str:
    try:
        return abstractify(x).str_short()
    except TypeError:
        return type(x).__name__


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name: Any = None,
         axis_size: int | None = None, spmd_axis_name: Any = None) -> Callable:
    """Vectorise ``fun`` over an axis of its arguments.

    ``in_axes`` says which axis of each argument is mapped: an int (negative counts from the
    end), ``None`` (not mapped: the same value for every member), or a tuple/list/dict prefix of
    the positional arguments with such leaves. Keyword arguments are mapped along axis 0.
    ``out_axes`` places the batch axis in the outputs the same way. ``axis_name`` names the
    mapped axis for collectives (``lax.psum`` ...); ``axis_size`` gives the size when no
    argument is mapped. ``spmd_axis_name`` is accepted for compatibility (single device).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> fluxion.vmap(jnp.dot, in_axes=(0, None))(jnp.ones((2, 3)), jnp.arange(3.0)).tolist()
        [3.0, 3.0]
    """
    if not callable(fun):
        raise TypeError(f"vmap expects a callable as its first argument, got {fun!r}")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    _check_axes_spec(in_axes, "in_axes")
    _check_axes_spec(out_axes, "out_axes")
    fname = fun_name(fun)

    @api_boundary
    @wraps(fun)
    def vmapped(*args: Any, **kwargs: Any) -> Any:
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(
                f"vmap of {fname}: in_axes must be an int, None, or a tuple of entries "
                f"corresponding to the positional arguments passed to the function, but got "
                f"len(in_axes)={len(in_axes)}, len(args)={len(args)}")
        leaves, in_tree = tree_util.tree_flatten((args, kwargs))
        try:
            axes = (tree_util.broadcast_prefix(in_axes, args, is_leaf=_is_none)
                    + [0] * (len(leaves) - len(tree_util.tree_leaves(args))))
        except ValueError:
            errs = tree_util.prefix_errors(in_axes, args, is_leaf=_is_none)
            if not errs:
                raise
            err = errs[0]("in_axes")
            raise ValueError(f"vmap of {fname}: in_axes does not match the structure of the "
                             f"positional arguments: {err}") from None
        names = None
        sizes = []
        norm_axes = []
        hidden = None  # trailing key-data axes per leaf, for negative axes
        for i, (x, ax) in enumerate(zip(leaves, axes)):
            if ax is None:
                norm_axes.append(None)
                continue
            if not _leaf_ok(x) and type(x) is not Ref:
                names = names or _path_names(fun, args, kwargs)
                raise TypeError(f"vmap of {fname}: argument {names[i]} of type "
                                f"{type(x).__name__} is not an array and cannot be mapped "
                                f"(in_axes {ax}); use None for it in in_axes")
            shape = shape_of(x)
            nd = len(shape)
            if ax < 0:
                hidden = hidden or tree_util.hidden_dims((args, kwargs))
                nd -= hidden[i]
            a = ax + nd if ax < 0 else ax
            if not 0 <= a < nd:
                names = names or _path_names(fun, args, kwargs)
                raise ValueError(
                    f"vmap of {fname} was requested to map argument {names[i]} along axis {ax}, "
                    f"which implies that its rank should be at least "
                    f"{ax + 1 if ax >= 0 else -ax}, but is only {nd} (its shape is {shape})")
            norm_axes.append(a)
            sizes.append(shape[a])
        if axis_size is not None:
            size = int(axis_size)
        elif sizes:
            size = sizes[0]
        else:
            raise ValueError(f"vmap of {fname} must have at least one non-None value in in_axes "
                             "(or an axis_size)")
        if any(s != size for s in sizes):
            names = names or _path_names(fun, args, kwargs)
            lines = []
            for i, (x, a) in enumerate(zip(leaves, norm_axes)):
                if a is not None:
                    lines.append(f"  * argument {names[i]} of type {_type_str(x)}: in_axes "
                                 f"{axes[i]}, size {shape_of(x)[a]}")
            head = ("vmap got inconsistent sizes for array axes to be mapped"
                    + (f" (axis_size={axis_size})" if axis_size is not None else "") + ":\n")
            raise ValueError(head + "\n".join(lines))

        axis = AxisData(axis_name, size, spmd_axis_name)
        interp = BatchInterpreter(axis, f"vmap of {fname} (defined at {fun_source(fun)})")
        with interpreter_scope(interp) as it:
            tracers = [x if a is None or type(x) is Ref else BatchTracer(it, x, a)
                       for x, a in zip(leaves, norm_axes)]
            refs = [(x, a) for x, a in zip(leaves, norm_axes) if a is not None and type(x) is Ref]
            saved = [_map_ref(r, a, it) for r, a in refs]
            t_args, t_kwargs = tree_util.tree_unflatten(in_tree, tracers)
            try:
                out = fun(*t_args, **t_kwargs)
            except BaseException:
                for (r, _), old in zip(refs, saved):
                    r._value, r._aval, r._level = old
                raise
            for (r, a), old in zip(refs, saved):
                _unmap_ref(r, a, it, size, old)
            out_leaves, out_tree = tree_util.tree_flatten(out)
            try:
                oaxes = tree_util.broadcast_prefix(out_axes, out, is_leaf=_is_none)
            except ValueError:
                errs = tree_util.prefix_errors(out_axes, out, is_leaf=_is_none)
                if not errs:
                    raise
                raise ValueError(f"vmap of {fname}: out_axes does not match the structure of "
                                 f"the outputs: {errs[0]('out_axes')}") from None
            results = []
            out_hidden = None  # trailing key-data axes per output leaf, for negative axes
            for i, (o, oa) in enumerate(zip(out_leaves, oaxes)):
                if type(o) is BatchTracer and o._interp is it:
                    val, d = o.val, o.bdim
                else:
                    if not _leaf_ok(o):
                        path = tree_util.keystr(tree_util.tree_flatten_with_path(out)[0][i][0])
                        raise TypeError(
                            f"vmap of {fname}: the function returned a value of type "
                            f"{type(o).__name__} at output{path}, which is not a valid array "
                            "type (expected arrays, NumPy arrays or Python scalars)")
                    if isinstance(o, Tracer):
                        check_live(o, it)
                    val, d = o, None
                with set_current(it.parent):
                    if oa is None:
                        if d is not None:
                            path = tree_util.keystr(tree_util.tree_flatten_with_path(out)[0][i][0])
                            raise ValueError(
                                f"vmap of {fname} has mapped output{path} but out_axes is None "
                                "for it: only outputs that do not depend on the mapped inputs "
                                f"can have out_axes None (at vmap out_axes{path}, got axis spec "
                                f"None but output was batched on axis {d}, as JAX says)")
                        results.append(val)
                        continue
                    nd = len(shape_of(val)) + (1 if d is None else 0)
                    if oa < 0:
                        out_hidden = out_hidden or tree_util.hidden_dims(out)
                        nd -= out_hidden[i]
                    a = oa + nd if oa < 0 else oa
                    if not 0 <= a < nd:
                        path = tree_util.keystr(tree_util.tree_flatten_with_path(out)[0][i][0])
                        raise ValueError(
                            f"vmap of {fname}: out_axes {oa} is out of range for output{path}, "
                            f"of rank {nd - 1} per example ({nd} with the mapped axis)")
                    results.append(matchaxis(val, d, a, size))
        return tree_util.tree_unflatten(out_tree, results)

    return vmapped

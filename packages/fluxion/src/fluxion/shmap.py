"""``fluxion.shard_map``: run a function on each device's block of its arguments, with
collectives (``lax.psum``, ``all_gather``, ``ppermute``, ...) across the mesh's named axes.

``shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)`` splits ``x`` over the mesh as
the specs say, runs ``f`` on each block (the per-device program is staged once) and assembles
the results. It lowers to a Shardy manual computation, compiled by XLA's SPMD partitioner, and
composes with ``jit``, ``grad`` and ``vmap``:

- JVP: a second call on (primals, tangents) of the body's JVP;
- transpose: a call of the body's transpose; as in JAX without replication checks, output
  cotangents are divided by the size of the mesh axes their spec does not mention, and input
  cotangents are summed (``psum``) over the axes their spec does not mention (for programs that
  pass the ``check_vma`` check this gives the gradients of JAX's ``check_vma=True`` rules);
- partial evaluation (``linearize``, ``grad``): the body split into a shard_map of its known
  part, which returns each member's residuals, and a staged shard_map of its linear part;
- vmap: the body batched at dimension 0, specs shifted by one.

A ``grad`` taken inside a ``check_vma=True`` body follows JAX's rules there: the cotangent of a
value invariant over an axis is summed over it (the transpose of JAX's implicit ``pvary``) and
``psum`` transposes to a ``pvary``.

With ``check_vma=True`` (the default) the varying manual axes of the body's values are inferred
(``fluxion.lax.vma``) and ``out_specs`` are checked against them with JAX's error;
``fluxion.typeof(x).mat.varying`` reports them inside the body.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> from fluxion import lax
    >>> mesh = fluxion.make_mesh((1,), ("i",), axis_types=(fluxion.sharding.AxisType.Auto,))
    >>> f = fluxion.shard_map(lambda b: lax.psum(b.sum(), "i"), mesh=mesh,
    ...                       in_specs=fluxion.P("i"), out_specs=fluxion.P())
    >>> float(f(jnp.arange(4.0)))
    6.0
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Sequence

from fluxion.backend.jit import jit
from fluxion.backend.lowering import mlir_type
from fluxion.backend.sharding_impl import (
    AbstractMesh,
    AxisType,
    Mesh,
    NamedSharding,
    PartitionSpec,
    context_mesh,
)
from fluxion.backend.spmd import module_meshes, sdy_sharding
from fluxion.backend.transfer import device_put
from fluxion.core import vma as _vma
from fluxion.core.avals import ShapedArray, keep_sharding_rule
from fluxion.core.errors import user_source_line
from fluxion.core.hijax import HITYPES
from fluxion.core.ir import Program, eval_program
from fluxion.core.primitive import Primitive
from fluxion.core.trace import STATE, set_current
from fluxion.lax import parallel as _par
from fluxion.lax import parallel_spmd as _spmd  # noqa: F401  (the collectives' lowerings)
from fluxion.lax.conversions import convert_element_type
from fluxion.lax.elementwise import div
from fluxion.lax.shape_ops import expand_dims, squeeze
from fluxion.transforms import ad, array_ops, batching, partial_eval
from fluxion.transforms.staging import (
    StagingInterpreter,
    abstractify,
    close_program,
    trace_to_program,
)
from fluxion.tree_util import physical as tree_util

__all__ = ["shard_map", "shard_map_p", "smap", "typeof"]

shard_map_p = Primitive("shard_map", multiple_results=True)
shard_map_p.sharding = keep_sharding_rule
_P0 = PartitionSpec()


def _axes_of(spec: PartitionSpec, ndim: int) -> list[tuple]:
    return list(spec._normalized(ndim))


def _factor(mesh: Any, entry: tuple) -> int:
    return math.prod(mesh.shape[a] for a in entry)


# Known gap (session 17, vs jax 0.10.2): over some axes of a mesh whose other axes are Explicit,
# JAX types the body's blocks on those other axes (x placed P('x', 'y'), manual over 'x': the
# body sees f32[2,4@y]) and its results keep them (shard_map/smap over 'x' give P('x', 'y'),
# P(('x', 'y'), None), and a.T with out_axes=1 P('y', 'x')). Here blocks are untyped, so results
# carry only the manual axes of out_specs (P('x'), P('x', None) under jit). Closing it: give
# the local avals the input's non-manual Explicit entries (trace_to_program), rebuild results
# from out_specs plus the body's output entries (_abstract_eval, _global_aval in jvp/transpose/
# batch/partial_eval), and place _impl's in/out shardings with them.
def _local_aval(a: ShapedArray, spec: PartitionSpec, mesh: Any) -> ShapedArray:
    shape = tuple(n // _factor(mesh, e) for n, e in zip(a.shape, _axes_of(spec, len(a.shape))))
    return ShapedArray(shape, a.dtype, a.weak_type)


def _global_aval(a: ShapedArray, spec: PartitionSpec, mesh: Any) -> ShapedArray:
    shape = tuple(n * _factor(mesh, e) for n, e in zip(a.shape, _axes_of(spec, len(a.shape))))
    return ShapedArray(shape, a.dtype, a.weak_type)


def _unmentioned(spec: PartitionSpec, manual: Sequence[str], ndim: int) -> tuple:
    used = {a for e in _axes_of(spec, ndim) for a in e}
    return tuple(n for n in manual if n not in used)


# ------------------------------------------------------------------ rules

def _abstract_eval(*avals: ShapedArray, program: Program, mesh: Any, in_specs: tuple,
                   out_specs: tuple, manual_axes: tuple, check_vma: bool) -> list:
    want = [v.aval for v in program.invars]
    for i, (a, w, s) in enumerate(zip(avals, want, in_specs)):
        loc = _local_aval(a, s, mesh)
        if loc.shape != w.shape or a.dtype != w.dtype:
            raise TypeError(f"shard_map: argument {i} is {a.str_short()}, whose block under "
                            f"{s} is {loc.str_short()}, but the body takes {w.str_short()}")
    return [_global_aval(v.aval, s, mesh) for v, s in zip(program.outvars, out_specs)]


_EAGER: dict = {}


def _impl(*args: Any, **params: Any) -> list:
    # Eagerly: one jitted call holding the shard_map, with the arguments and results placed as
    # the specs say.
    key = (params["program"], params["mesh"], params["in_specs"], params["out_specs"],
           params["manual_axes"], params["check_vma"])
    fn = _EAGER.get(key)
    if fn is None:
        mesh = params["mesh"]
        fn = jit(functools.partial(_bind_flat, params),
                 in_shardings=tuple(NamedSharding(mesh, s) for s in params["in_specs"]),
                 out_shardings=[NamedSharding(mesh, s) for s in params["out_specs"]])
        _EAGER[key] = fn
        if len(_EAGER) > 256:
            _EAGER.pop(next(iter(_EAGER)))
    # arguments placed elsewhere are moved to their blocks first; an argument committed to
    # other devices than the mesh's is JAX's error (it would run there)
    mesh = params["mesh"]
    mine = set(mesh._internal_device_list)
    for i, a in enumerate(args):
        sh = getattr(a, "sharding", None)
        if getattr(a, "committed", False) and sh is not None and set(
                sh._internal_device_list) != mine:
            shape = f"{a.dtype.name}[{','.join(map(str, a.shape))}]"
            raise ValueError(
                f"Received incompatible devices for jitted computation. Got argument {i} of "
                f"shard_map with shape {shape} and with device ids "
                f"{[d.id for d in sh._internal_device_list]} and shard_map's mesh with device "
                f"ids {[d.id for d in mesh._internal_device_list]} (at {user_source_line()})")
    placed = []
    for a, spec in zip(args, params["in_specs"]):
        target = NamedSharding(mesh, spec)
        placed.append(a if getattr(a, "sharding", None) == target else device_put(a, target))
    return list(fn(*placed))


def _bind_flat(params: dict, *args: Any) -> list:
    return shard_map_p.bind(*args, **params)


def _lowering(ctx: Any, *args: str, program: Program, mesh: Any, in_specs: tuple,
              out_specs: tuple, manual_axes: tuple, check_vma: bool) -> list[str]:
    module = ctx.module
    stack = module.__dict__.setdefault("manual_stack", [])
    if getattr(module, "sdy_meshes", None) is None:
        if mesh.size > 1:
            raise ValueError(f"shard_map over the mesh {mesh} was lowered for a single device: "
                             "its arguments are committed to one device; put them on the "
                             "mesh's devices (or leave them uncommitted)")
        # a single-device module (a mesh of one device): the body runs as it is
        stack.append((mesh.axis_names, mesh.axis_sizes))
        try:
            return ctx.lower_program_inline(program, list(args))
        finally:
            stack.pop()

    if getattr(module, "gspmd", False):  # jax_use_shardy_partitioner off
        stack.append((mesh.axis_names, mesh.axis_sizes))
        try:
            return _gspmd_lowering(ctx, args, program, mesh, in_specs, out_specs, manual_axes)
        finally:
            stack.pop()

    def per_value(specs: Sequence[PartitionSpec], avals: Sequence[ShapedArray]) -> str:
        items = [sdy_sharding(module, NamedSharding(mesh, s), len(a.shape))[len("#sdy.sharding"):]
                 for s, a in zip(specs, avals)]
        return f"#sdy.sharding_per_value<[{', '.join(items)}]>"

    module_meshes(module)
    in_attr = per_value(in_specs, ctx.avals_in)
    out_attr = per_value(out_specs, ctx.avals_out)
    names = ", ".join(f'"{n}"' for n in manual_axes)
    fn = ctx.fn
    sub = type(fn)(module, fn.indent + "    ", fn.counter)
    base = sub.fresh()[1:]
    bargs = [f"%m{base}_{i}" for i in range(len(args))]
    stack.append((mesh.axis_names, mesh.axis_sizes))
    try:
        outs = sub.lower_body(program, bargs)
    finally:
        stack.pop()
    local_in = [v.aval for v in program.invars]
    local_out = [v.aval for v in program.outvars]
    head = ", ".join(f"{a}: {mlir_type(t)}" for a, t in zip(bargs, local_in))
    ret_t = ", ".join(mlir_type(a) for a in local_out)
    region = "\n".join(["{", f"{fn.indent}  ^bb0({head}):"] + sub.lines + [
        f'{sub.indent}"sdy.return"({", ".join(outs)}) : ({ret_t}) -> ()', f"{fn.indent}}}"])
    attrs = (f"in_shardings = {in_attr}, manual_axes = #sdy<manual_axes{{{names}}}>, "
             f"out_shardings = {out_attr}")
    res = ctx.op("sdy.manual_computation", list(args), attrs=attrs, regions=[region])
    return [res] if len(ctx.avals_out) == 1 else list(res)


def _gspmd_lowering(ctx: Any, args: Sequence[str], program: Program, mesh: Any,
                    in_specs: tuple, out_specs: tuple, manual_axes: tuple) -> list[str]:
    """``shard_map`` as JAX lowers it for XLA's GSPMD partitioner: each operand pinned to its
    sharding and cut to its per-device shape (``SPMDFullToShardShape``, ``{manual}``), the body
    on those, and each result put back together (``SPMDShardToFullShape``). Only over every axis
    of the mesh: JAX's partially manual form annotates every op of the body, which Fluxion's
    lowering does not write."""
    auto = [n for n, k in zip(mesh.axis_names, mesh.axis_sizes) if n not in manual_axes and k > 1]
    if auto:
        raise NotImplementedError(
            f"shard_map manual over {list(manual_axes)} of the mesh {mesh} (axes {auto} left to "
            "the compiler) lowers only for Shardy in Fluxion: set jax_use_shardy_partitioner to "
            f"True (the default) (at {user_source_line()})")

    def custom(target: str, x: str, hlo: str, src: ShapedArray, dst: ShapedArray) -> str:
        return ctx.op("stablehlo.custom_call", [x], result_avals=[dst], operand_avals=[src],
                      attrs=f'call_target_name = "{target}", backend_config = "", '
                            f'mhlo.sharding = "{hlo}"')

    def hlo(spec: PartitionSpec, aval: ShapedArray) -> str:
        return str(NamedSharding(mesh, spec)._to_xla_hlo_sharding(len(aval.shape)))

    local = []
    for x, spec, full, v in zip(args, in_specs, ctx.avals_in, program.invars):
        pinned = custom("Sharding", x, hlo(spec, full), full, full)
        local.append(custom("SPMDFullToShardShape", pinned, "{manual}", full, v.aval))
    outs = ctx.lower_program_inline(program, local)
    results = []
    for y, spec, full, v in zip(outs, out_specs, ctx.avals_out, program.outvars):
        pinned = custom("Sharding", y, "{manual}", v.aval, v.aval)
        results.append(custom("SPMDShardToFullShape", pinned, hlo(spec, full), v.aval, full))
    return results


def _jvp(primals: list, tangents: list, *, program: Program, mesh: Any, in_specs: tuple,
         out_specs: tuple, manual_axes: tuple, check_vma: bool) -> tuple[list, list]:
    params = dict(mesh=mesh, manual_axes=manual_axes, check_vma=check_vma)
    outs = shard_map_p.bind(*primals, program=program, in_specs=in_specs,
                            out_specs=out_specs, **params)
    nz = tuple(not ad.is_zero_tangent(t) for t in tangents)
    if not any(nz):
        return outs, [ad.Zero(ad.tangent_aval(abstractify(o))) for o in outs]
    jprog, consts, out_nz = ad.jvp_program(program, nz)
    specs_in = ((_P0,) * len(consts) + tuple(in_specs)
                + tuple(s for s, z in zip(in_specs, nz) if z))
    specs_out = tuple(out_specs) + tuple(s for s, z in zip(out_specs, out_nz) if z)
    res = shard_map_p.bind(*consts, *primals, *[t for t, z in zip(tangents, nz) if z],
                           program=jprog, in_specs=specs_in, out_specs=specs_out, **params)
    it = iter(res[len(outs):])
    return outs, [next(it) if z else ad.Zero(ad.tangent_aval(abstractify(o)))
                  for z, o in zip(out_nz, outs)]


def _transpose(cts: list, *args: Any, program: Program, mesh: Any, in_specs: tuple,
               out_specs: tuple, manual_axes: tuple, check_vma: bool) -> list:
    linear = tuple(ad.is_undefined(a) for a in args)
    ct_nz = tuple(not ad.is_zero_tangent(c) for c in cts)
    tprog, consts = ad.transpose_program(program, linear, ct_nz)
    out_avals = [v.aval for v in program.outvars]
    # output cotangents: divided by the size of the axes their spec leaves out
    scaled = []
    for c, nz, s, a in zip(cts, ct_nz, out_specs, out_avals):
        if not nz:
            continue
        k = math.prod(mesh.shape[n] for n in _unmentioned(s, manual_axes, len(a.shape)))
        if k != 1:
            c = div(c, convert_element_type(k, abstractify(c).dtype, True))
        scaled.append(c)
    nonlin = [a for a, lin in zip(args, linear) if not lin]
    lin_avals = [v.aval for v, lin in zip(program.invars, linear) if lin]
    lin_specs = [s for s, lin in zip(in_specs, linear) if lin]
    sums = [_unmentioned(s, manual_axes, len(a.shape)) for s, a in zip(lin_specs, lin_avals)]

    def body(*xs: Any) -> list:
        outs = eval_program(tprog, [], list(xs))
        return [_par.psum_p.bind(o, axis_name=n) if n else o for o, n in zip(outs, sums)]

    in_local = [v.aval for v in tprog.invars]
    wrapped, wconsts, _ = trace_to_program(body, tuple(in_local), {}, in_avals=in_local,
                                           description="transpose of a shard_map body")
    wrapped = close_program(wrapped)
    specs_in = ((_P0,) * (len(wconsts) + len(consts))
                + tuple(s for s, lin in zip(in_specs, linear) if not lin)
                + tuple(s for s, nz in zip(out_specs, ct_nz) if nz))
    res = shard_map_p.bind(*wconsts, *consts, *nonlin, *scaled, program=wrapped, mesh=mesh,
                           in_specs=specs_in, out_specs=tuple(lin_specs),
                           manual_axes=manual_axes, check_vma=check_vma)
    it = iter(res)
    return [next(it) if lin else None for lin in linear]


def _partial_eval(pe: partial_eval.PartialEvalInterpreter, args: Sequence[Any], *,
                  program: Program, mesh: Any, in_specs: tuple, out_specs: tuple,
                  manual_axes: tuple, check_vma: bool) -> list:
    # Split the body as JAX does: a shard_map of the known part runs now and returns its
    # residuals, each member's own one (a leading axis split over every manual axis); a
    # shard_map of the unknown (linear) part is staged. Without the split, a transpose would
    # meet primal computations mixed with tangent ones (a scan's carry, say).
    params = dict(mesh=mesh, manual_axes=manual_axes, check_vma=check_vma)
    mask = [pe.is_unknown(a) for a in args]
    known, consts, unk, out_unk, n_res = partial_eval.partial_eval_program(program, mask)
    n_k = len(known.outvars) - n_res
    res_spec = PartitionSpec(tuple(manual_axes)) if manual_axes else _P0

    def known_body(*xs: Any) -> list:
        outs = eval_program(known, [], list(xs))
        return list(outs[:n_k]) + [expand_dims(r, (0,)) for r in outs[n_k:]]

    kin = [v.aval for v in known.invars]
    kprog, kconsts, _ = trace_to_program(known_body, tuple(kin), {}, in_avals=kin,
                                         description="known part of a shard_map body")
    k_specs = ((_P0,) * (len(kconsts) + len(consts))
               + tuple(s for s, m in zip(in_specs, mask) if not m))
    k_out = tuple(s for s, u in zip(out_specs, out_unk) if not u) + (res_spec,) * n_res
    with set_current(pe.parent):
        k_outs = shard_map_p.bind(*kconsts, *consts, *[a for a, m in zip(args, mask) if not m],
                                  program=close_program(kprog), in_specs=k_specs,
                                  out_specs=k_out, **params)

    def unknown_body(*xs: Any) -> list:
        res = [squeeze(r, (0,)) for r in xs[:n_res]]
        return eval_program(unk, [], res + list(xs[n_res:]))

    uin = ([v.aval.update(shape=(1, *v.aval.shape)) for v in unk.invars[:n_res]]
           + [v.aval for v in unk.invars[n_res:]])
    uprog, uconsts, _ = trace_to_program(unknown_body, tuple(uin), {}, in_avals=uin,
                                         description="unknown part of a shard_map body")
    u_specs = ((_P0,) * len(uconsts) + (res_spec,) * n_res
               + tuple(s for s, m in zip(in_specs, mask) if m))
    u_out = tuple(s for s, u in zip(out_specs, out_unk) if u)
    u_args = [*uconsts, *k_outs[n_k:], *[a for a, m in zip(args, mask) if m]]
    u_outs = StagingInterpreter.process_primitive(
        pe, shard_map_p, u_args, dict(program=close_program(uprog), in_specs=u_specs,
                                      out_specs=u_out, **params))
    ki, ui = iter(k_outs[:n_k]), iter(u_outs)
    return [next(ui) if u else next(ki) for u in out_unk]


def _shift(spec: PartitionSpec, ndim: int) -> PartitionSpec:
    return PartitionSpec(None, *spec._normalized(ndim))


def _batch(axis: batching.AxisData, args: Sequence[Any], dims: Sequence[Any], *,
           program: Program, mesh: Any, in_specs: tuple, out_specs: tuple, manual_axes: tuple,
           check_vma: bool) -> tuple[list, list]:
    params = dict(mesh=mesh, manual_axes=manual_axes, check_vma=check_vma)
    if batching.is_unbatched(axis, dims, program):
        outs = shard_map_p.bind(*args, program=program, in_specs=in_specs,
                                out_specs=out_specs, **params)
        return outs, [None] * len(outs)
    args = [a if d is None else array_ops.moveaxis(a, d, 0) for a, d in zip(args, dims)]
    dims0 = [None if d is None else 0 for d in dims]
    new, consts, out_dims = batching.batch_program(program, dims0, axis, to_front=True,
                                                   instantiate=True)
    in_nd = [len(v.aval.shape) for v in program.invars]
    out_nd = [len(v.aval.shape) for v in program.outvars]
    specs_in = ((_P0,) * len(consts)
                + tuple(s if d is None else _shift(s, n) for s, d, n in zip(in_specs, dims0, in_nd)))
    specs_out = tuple(_shift(s, n) for s, n in zip(out_specs, out_nd))
    outs = shard_map_p.bind(*consts, *args, program=new, in_specs=specs_in,
                            out_specs=specs_out, **params)
    return outs, [0] * len(outs)


shard_map_p.abstract_eval = _abstract_eval
shard_map_p.impl = _impl
shard_map_p.lowering = _lowering
shard_map_p.jvp = _jvp
shard_map_p.transpose = _transpose
shard_map_p.partial_eval = _partial_eval
shard_map_p.batch = _batch


def _printed_params(params: dict) -> list:
    return [("mesh", params["mesh"]), ("in_specs", params["in_specs"]),
            ("out_specs", params["out_specs"]), ("jaxpr", params["program"])]


shard_map_p.print_params = _printed_params


# ------------------------------------------------------------------ the public function

def _is_spec(x: Any) -> bool:
    return x is None or isinstance(x, PartitionSpec)


def _check_spec(what: str, spec: Any, aval: ShapedArray, mesh: Any, manual: tuple,
                where: str) -> PartitionSpec:
    if spec is None:
        spec = _P0
    if not isinstance(spec, PartitionSpec):
        raise TypeError(f"shard_map: {what} must be a PartitionSpec, got "
                        f"{type(spec).__name__}: {spec!r} (at {where})")
    nd = len(aval.shape)
    if len(spec) > nd:
        raise ValueError(f"shard_map: {what} {spec} has {len(spec)} entries but the value has "
                         f"rank {nd} (shape {aval.shape}) (at {where})")
    seen: set = set()
    for entry in _axes_of(spec, nd):
        for a in entry:
            if a not in mesh.shape:
                raise ValueError(f"shard_map: {what} {spec} names the axis {a!r}, which the mesh "
                                 f"does not have (its axes are {mesh.axis_names}) (at {where})")
            if a not in manual:
                raise ValueError(f"shard_map: {what} {spec} names the axis {a!r}, which is not "
                                 f"one of axis_names {manual} (at {where})")
            if a in seen:
                raise ValueError(f"shard_map: {what} {spec} uses the axis {a!r} twice "
                                 f"(at {where})")
            seen.add(a)
    return spec


def _full_spec(spec: PartitionSpec | None, ndim: int) -> PartitionSpec:
    """``spec`` with one entry per dimension (None for the unsplit ones; P() if None)."""
    entries = tuple(spec) if spec is not None else ()
    return PartitionSpec(*entries, *(None,) * (ndim - len(entries)))


def _check_explicit_inputs(mesh: Mesh, manual: tuple, specs: Sequence[PartitionSpec],
                           avals: Sequence[ShapedArray], where: str) -> None:
    """JAX's check for a shard_map over every axis of a mesh whose axes are all ``Explicit``:
    an argument's sharding is part of its type there, so ``in_specs`` must be exactly the
    argument's own spec (an unsharded argument is P(None, ...)); shard_map does not reshard."""
    if set(manual) != set(mesh.axis_names) or not mesh.are_all_axes_explicit:
        return
    for spec, a in zip(specs, avals):
        nd = len(a.shape)
        want = _full_spec(spec, nd)
        sharding = getattr(a, "sharding", None)
        have = _full_spec(sharding.spec if sharding is not None else None, nd)
        if want != have:
            raise ValueError(
                f"in_specs passed to shard_map: {want} does not match the specs of the input: "
                f"{have} for arg: {a}. `in_specs` is an optional argument so you can omit "
                "specifying it and shard_map will infer the in_specs from the arguments. If you "
                "want to reshard your inputs, you can use `fluxion.reshard` on the arguments and "
                f"then pass those args to shard_map. (at {where})")


def _spec_vma(spec: PartitionSpec, ndim: int, manual: Sequence[str]) -> frozenset:
    return frozenset(a for e in _axes_of(spec, ndim) for a in e if a in manual)


def _spec_keys(out_specs: Any, out_tree: Any, n: int) -> list[str]:
    """For each result, the key path of its entry in ``out_specs`` (as JAX writes it)."""
    if callable(out_specs) or _is_spec(out_specs):
        return [""] * n
    paths, tdef = tree_util.tree_flatten_with_path(out_specs, is_leaf=_is_spec)
    idx = tree_util.tree_unflatten(tdef, list(range(len(paths))))
    full = tree_util.tree_unflatten(out_tree, [0] * n)
    return [tree_util.keystr(paths[i][0]) for i in tree_util.broadcast_prefix(idx, full)]


def _check_out_vma(f: Callable, mesh: Any, manual: tuple, out_specs: Any, out_tree: Any,
                   specs: list, avals: list, vmas: list, where: str) -> None:
    """JAX's check_vma=True check of ``out_specs``: a result may vary only over the mesh axes
    its spec names."""
    order = list(mesh.axis_names)
    keys = _spec_keys(out_specs, out_tree, len(specs))
    msgs = []
    for key, spec, a, got in zip(keys, specs, avals, vmas):
        named = _spec_vma(spec, len(a.shape), order)
        if not (got & set(manual)) - named:
            continue
        unmentioned = [n for n in order if n not in named]
        if len(unmentioned) > 1:
            need = ",".join(str(n) for n in order if n in named)
            have = ",".join(str(n) for n in order if n in got)
            diff = ",".join(str(n) for n in unmentioned if n in got)
            msgs.append(f"* out_specs{key} is {spec} which implies that the corresponding "
                        f"output value is only varying across mesh axes {{{need}}} and not "
                        f"{{{diff}}}, but it was inferred to be possibly varying over "
                        f"{{{have}}}")
        else:
            msgs.append(f"* out_specs{key} is {spec} which implies that the corresponding "
                        f"output value is replicated across mesh axis '{unmentioned[0]}', but "
                        "could not infer replication over any axes")
    if not msgs:
        return
    if len(msgs) == 1:
        msgs = [msgs[0][2:]]
    name = getattr(f, "__name__", str(f))
    raise ValueError(
        f"shard_map applied to the function '{name}' was given out_specs which require "
        "replication which can't be statically inferred given the mesh:\n\n"
        f"The mesh given has shape {tuple(mesh.axis_sizes)} with corresponding axis names "
        f"{tuple(mesh.axis_names)}.\n\n" + "\n\n".join(msgs) + "\n\n"
        "Check if these output values are meant to be replicated over those mesh axes. If not, "
        "consider revising the corresponding out_specs entries. If so, consider disabling the "
        "check by passing the check_vma=False argument to `fluxion.shard_map`. "
        f"(at {where})")


def typeof(x: Any) -> Any:
    """The abstract type of ``x``: its ShapedArray; inside a ``shard_map`` body (with
    ``check_vma=True``) also the mesh axes it varies over, as ``.mat.varying`` (JAX 0.10's
    spelling; ``.vma`` is the same set).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> mesh = fluxion.make_mesh((1,), ("i",), axis_types=(fluxion.sharding.AxisType.Auto,))
        >>> def body(b):
        ...     print(fluxion.typeof(b).mat.varying)
        ...     return b
        >>> _ = fluxion.shard_map(body, mesh=mesh, in_specs=fluxion.P("i"),
        ...                       out_specs=fluxion.P("i"))(jnp.ones(2))
        frozenset({'i'})
    """
    key_typeof = getattr(type(x), "_typeof", None)  # typed key arrays: their own abstract value
    if key_typeof is not None:
        return key_typeof(x)
    hi_typeof = HITYPES.get(type(x))  # values of jax.experimental.hijax types
    if hi_typeof is not None:
        return hi_typeof(x)
    aval = abstractify(x)
    body = _vma.current(x)
    if body is None:
        return aval
    return _vma.ManualAval(aval, body.of_atom(x.atom), body.manual)


def shard_map(f: Callable | None = None, /, *, out_specs: Any, in_specs: Any = None,
              mesh: Mesh | AbstractMesh | None = None, axis_names: Any = frozenset(),
              check_vma: bool = True) -> Any:
    """Map ``f`` over the blocks of its arguments on the devices of ``mesh``.

    ``in_specs`` / ``out_specs`` are PartitionSpecs (or pytree prefixes of them) saying which mesh
    axes split each dimension of the arguments / results; inside ``f`` the values are the blocks
    and collectives over the mesh axes (``axis_names``, default all) are available.
    ``in_specs=None`` takes each argument's own sharding over the mesh (P() if it has none).
    Over every axis of a mesh whose axes are all ``Explicit`` (``make_mesh``'s default), an
    argument's sharding is part of its type and ``in_specs`` must be exactly its spec (JAX's
    ``ValueError`` otherwise: ``reshard`` the argument first, or omit ``in_specs``); on ``Auto``
    axes a differently placed argument is resharded to ``in_specs``.
    ``check_vma=True`` checks that each result varies only over the mesh axes its
    ``out_specs`` entry names (JAX's varying-manual-axes check; ``check_vma=False`` skips it).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> mesh = fluxion.make_mesh((1,), ("x",), axis_types=(fluxion.sharding.AxisType.Auto,))
        >>> g = fluxion.shard_map(lambda b: b * 2, mesh=mesh, in_specs=fluxion.P("x"),
        ...                       out_specs=fluxion.P("x"))
        >>> g(jnp.arange(3.0)).tolist()
        [0.0, 2.0, 4.0]
    """
    if f is None:
        return functools.partial(shard_map, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                 axis_names=axis_names, check_vma=check_vma)
    if not callable(f):
        raise TypeError(f"shard_map: expected a callable, got {type(f).__name__}")

    @functools.wraps(f)
    def mapped(*args: Any) -> Any:
        where = user_source_line()
        m = mesh if mesh is not None else context_mesh()
        if m is None:
            raise ValueError("shard_map: no mesh: pass mesh= or call inside "
                             f"fluxion.set_mesh(mesh) (at {where})")
        if not isinstance(m, Mesh):
            raise TypeError(f"shard_map: mesh must be a concrete Mesh, got {m!r} (at {where})")
        manual = tuple(n for n in m.axis_names if not axis_names or n in set(axis_names))
        leaves, in_tree = tree_util.tree_flatten(args)
        avals = [abstractify(x) for x in leaves]
        if in_specs is None:
            specs = []
            for x in leaves:
                s = getattr(x, "sharding", None) if not hasattr(x, "_interp") else None
                specs.append(s.spec if isinstance(s, NamedSharding) and s.mesh == m else _P0)
        else:
            try:
                specs = tree_util.broadcast_prefix(
                    in_specs if not _is_spec(in_specs) else (in_specs,) * len(args),
                    tuple(args), is_leaf=_is_spec)
            except ValueError as e:
                raise ValueError(f"shard_map: in_specs is not a prefix of the arguments' "
                                 f"structure: {e} (at {where})") from None
        checked = []
        for i, (s, a) in enumerate(zip(specs, avals)):
            s = _check_spec(f"in_specs for argument {i}", s, a, m, manual, where)
            for d, entry in enumerate(_axes_of(s, len(a.shape))):
                k = _factor(m, entry)
                if a.shape[d] % k:
                    raise ValueError(
                        f"shard_map: argument {i} of shape {a.shape} cannot be split by "
                        f"{s}: dimension {d} ({a.shape[d]}) is not divisible by the size {k} of "
                        f"mesh axes {entry} (at {where})")
            checked.append(s)
        if in_specs is not None:
            _check_explicit_inputs(m, manual, checked, avals, where)
        local = [_local_aval(a, s, m) for a, s in zip(avals, checked)]
        in_vma = [_spec_vma(s, len(a.shape), manual) for s, a in zip(checked, avals)]

        def body(*xs: Any) -> Any:
            if not check_vma:
                return f(*tree_util.tree_unflatten(in_tree, list(xs)))
            interp = STATE.interp
            _vma.push(_vma.BodyVma(interp, interp.invars, in_vma, m.axis_names))
            try:
                return f(*tree_util.tree_unflatten(in_tree, list(xs)))
            finally:
                _vma.pop()

        with _par.manual_axes({n: m.shape[n] for n in manual}):
            program, consts, out_tree = trace_to_program(
                body, tuple(local), {}, in_avals=local,
                description=f"shard_map of {getattr(f, '__name__', 'f')}")
        program = close_program(program)
        out_local = [v.aval for v in program.outvars]
        try:
            if callable(out_specs):  # specs known only after tracing (pmap's out_axes)
                ospecs = list(out_specs())
            elif _is_spec(out_specs):
                ospecs = [out_specs] * len(out_local)
            else:
                ospecs = tree_util.broadcast_prefix(
                    out_specs, tree_util.tree_unflatten(out_tree, list(range(len(out_local)))),
                    is_leaf=_is_spec)
        except ValueError as e:
            raise ValueError(f"shard_map: out_specs is not a prefix of the results' structure: "
                             f"{e} (at {where})") from None
        ospecs = [_check_spec(f"out_specs for result {i}", s, a, m, manual, where)
                  for i, (s, a) in enumerate(zip(ospecs, out_local))]
        if check_vma:
            out_vma = _vma.infer(program, [frozenset()] * len(consts) + in_vma)
            _check_out_vma(f, m, manual, out_specs, out_tree, ospecs, out_local, out_vma, where)
        outs = shard_map_p.bind(*consts, *leaves, program=program, mesh=m,
                                in_specs=(_P0,) * len(consts) + tuple(checked),
                                out_specs=tuple(ospecs), manual_axes=manual,
                                check_vma=bool(check_vma))
        return tree_util.tree_unflatten(out_tree, list(outs))

    return mapped


class _InferFromArgs:
    """``smap``'s default ``in_axes``: take each argument's mapped axis from its sharding (only
    on ``Explicit`` mesh axes), as JAX's ``Infer``."""

    def __repr__(self) -> str:
        return "Infer"


Infer = _InferFromArgs()


def _axes_to_spec(axis_name: Any, axis: int | None) -> PartitionSpec:
    # As JAX 0.10.2: None is replicated, k puts the axis at dimension k (a negative k at 0).
    return _P0 if axis is None else PartitionSpec(*[None] * axis, axis_name)


def _manual_only(spec: PartitionSpec, manual: str) -> PartitionSpec:
    """An argument's spec with every mesh axis but ``manual`` dropped (JAX's _manual_spec)."""
    out: list = []
    for e in spec:
        if isinstance(e, tuple):
            kept = [a if a == manual else None for a in e]
            while kept and kept[-1] is None:
                kept.pop()
            if None in kept:
                raise ValueError(f"Invalid spec: {spec}")
            out.append(tuple(kept) if kept else None)
        else:
            out.append(e if e == manual else None)
    return PartitionSpec(*out)


def smap(f: Callable | None = None, /, *, in_axes: Any = Infer, out_axes: Any,
         axis_name: Any) -> Any:
    """``shard_map`` over the single mesh axis ``axis_name`` of the context mesh
    (``fluxion.set_mesh``), with ``vmap``-style axes: ``in_axes`` (an int, None, or a tuple per
    positional argument, nested containers of those) and ``out_axes`` say which dimension of each
    argument/result that axis splits (None: not split). Left out, ``in_axes`` is read from the
    arguments' shardings, which needs ``axis_name`` to be ``Explicit`` (JAX's ``TypeError``
    otherwise). Usable as a decorator (``f`` omitted). The other mesh axes stay automatic.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> mesh = fluxion.make_mesh((1,), ("x",), axis_types=(fluxion.sharding.AxisType.Auto,))
        >>> with fluxion.set_mesh(mesh):
        ...     y = smap(lambda b: b * 2, in_axes=0, out_axes=0, axis_name="x")(jnp.arange(3.0))
        >>> y.tolist()
        [0.0, 2.0, 4.0]
    """
    if f is None:
        return lambda g: smap(g, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)
    if isinstance(axis_name, (list, tuple)):
        raise TypeError(f"smap axis_name should be a `str` or a `Hashable`, but got {axis_name}")
    if in_axes is not None and in_axes is not Infer and not isinstance(in_axes, (int, tuple)):
        raise TypeError("smap in_axes must be an int, None, jax.sharding.Infer, or a tuple of "
                        "entries corresponding to the positional arguments passed to the "
                        f"function, but got {in_axes}.")
    if in_axes is not Infer and not all(isinstance(a, int) for a in tree_util.tree_leaves(in_axes)):
        raise TypeError("smap in_axes must be an int, None, jax.sharding.Infer, or (nested) "
                        f"container with those types as leaves, but got {in_axes}.")
    if not all(isinstance(a, int) for a in tree_util.tree_leaves(out_axes)):
        raise TypeError("smap out_axes must be an int, None, or (nested) container with those "
                        f"types as leaves, but got {out_axes}.")

    def to_specs(axes: Any) -> Any:
        return tree_util.tree_map(functools.partial(_axes_to_spec, axis_name), axes,
                                  is_leaf=lambda a: a is None)

    out_specs = to_specs(out_axes)
    in_specs = None if in_axes is Infer else to_specs(in_axes)

    @functools.wraps(f)
    def mapped(*args: Any) -> Any:
        mesh = context_mesh()
        if mesh is None or not mesh.axis_names:
            raise ValueError("The context mesh cannot be empty. Use `jax.set_mesh(mesh)` to "
                             "enter into a mesh context")
        # axes an enclosing shard_map/smap body has made manual are not the mesh's to map
        bound = {n for frame in getattr(_par._MANUAL, "stack", ()) for n in frame}
        names = frozenset(mesh.axis_names) - bound
        if axis_name not in names:
            raise ValueError(f"jax.shard_map requires axis_names={frozenset({axis_name})} to be "
                             f"a subset of mesh.axis_names={names}")
        kind = dict(zip(mesh.axis_names, mesh.axis_types))[axis_name]
        specs: Any = in_specs
        if specs is None:
            if kind != AxisType.Explicit:
                raise TypeError(f"in_axes was not specified when "
                                f"axis_name={frozenset({axis_name})} was of type {kind}")
            specs = tree_util.tree_map(
                lambda x: _manual_only(_arg_spec(x), axis_name), tuple(args))
        return shard_map(f, mesh=mesh, in_specs=specs, out_specs=out_specs,
                         axis_names=frozenset({axis_name}), check_vma=True)(*args)

    return mapped


def _arg_spec(x: Any) -> PartitionSpec:
    sharding = getattr(abstractify(x), "sharding", None)
    spec = getattr(sharding, "spec", None)
    return spec if isinstance(spec, PartitionSpec) else _P0

"""Programs over several devices: placement of arguments, Shardy annotations, SPMD executables.

A computation runs where its committed arguments are (as in JAX): every committed argument must
be on the same devices (else JAX's "incompatible devices" error), uncommitted ones are moved
there (replicated when the computation spans several devices); with no committed argument it
runs on the default device. A computation over several devices is lowered with Shardy
annotations (``sdy.mesh`` and ``sdy.sharding`` on the parameters and, when asked, the results),
compiled with ``num_partitions`` = the number of devices, and the shardings XLA chose for the
results are read back as ``NamedSharding`` s over the same mesh. With
``jax_use_shardy_partitioner`` off it is lowered for XLA's GSPMD partitioner instead, as JAX
does: ``mhlo.sharding`` attributes (sharding constraints and ``shard_map`` as JAX's GSPMD
custom calls), and no ``sdy`` dialect.

Nothing whose sharding differs from what the executable expects is ever passed to XLA (jaxlib
crashes on that): the parameter shardings of each executable are compared with the arguments'
once, at compile time, and arguments are resharded first where they differ.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> x = fluxion.device_put(jnp.ones(2), fluxion.devices()[0])
    >>> (x + 1).committed
    True
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as _np

from fluxion.backend import client as _client
from fluxion.backend.lowering import ModuleContext, _lower_function, lowering_platform, mlir_type
from fluxion.backend.sharding_impl import (
    HloSharding,
    Mesh,
    NamedSharding,
    PartitionSpec,
    computation_mesh,
    module_meshes,
    named_from_hlo,
    sdy_sharding,
    single_device_sharding,
)
from fluxion.core.config import config
from fluxion.core.errors import user_frame
from fluxion.core.ir import Program

__all__ = ["target_devices", "incompatible_devices", "lower_spmd", "SpmdText", "sdy_sharding",
           "mesh_of", "read_out_shardings", "replicated_on"]


def _where() -> str:
    f = user_frame()
    return f" (at {f.f_code.co_filename}:{f.f_lineno})" if f is not None else ""


def incompatible_devices(fname: str, specs: Sequence[Any], names: Sequence[str] | None,
                         i: int, j: int) -> ValueError:
    """JAX's error for two committed arguments on different devices."""
    def desc(k: int) -> str:
        s = specs[k]
        ids = [d.id for d in s.sharding._internal_device_list]
        nm = names[k] if names is not None and k < len(names) else f"{k}"
        shape = f"{s.aval.dtype.name}[{','.join(map(str, s.aval.shape))}]"
        return (f"argument {nm} of {fname} with shape {shape} and with device ids "
                f"{ids} on platform {s.sharding._internal_device_list[0].platform.upper()}")
    return ValueError(f"Received incompatible devices for jitted computation. Got {desc(i)} and "
                      f"{desc(j)}{_where()}")


def target_devices(fname: str, specs: Sequence[Any], names: Sequence[str] | None = None,
                   forced: tuple | None = None) -> tuple[tuple, bool, Any]:
    """``(devices, committed, sharding of the first committed multi-device argument or None)``
    for a computation on arguments of ``specs``; ``forced`` is a device list that jit's
    ``device=`` / ``in_shardings`` impose (committed arguments elsewhere are an error)."""
    first = None
    found = None
    for k, s in enumerate(specs):
        if not s.committed:
            continue
        devs = tuple(s.sharding._internal_device_list)
        if first is None:
            first, found = k, devs
        elif devs != found:
            if set(devs) == set(found) and len(devs) > 1:
                continue  # same devices in another order: resharded, not an error
            raise incompatible_devices(fname, specs, names, first, k)
    if forced is not None:
        if found is not None and set(found) != set(forced):
            raise ValueError(
                f"{fname}: committed argument {names[first] if names else first} is on devices "
                f"{[d.id for d in found]} but the computation was asked to run on "
                f"{[d.id for d in forced]}{_where()}")
        return forced, True, None
    if found is None:
        mesh = computation_mesh()  # under set_mesh: on its devices, as in JAX
        if mesh is not None:
            return tuple(mesh._internal_device_list), False, NamedSharding(mesh, PartitionSpec())
        return (_client.default_device(),), False, None
    return found, True, specs[first].sharding if len(found) > 1 else None


def replicated_on(devices: tuple, like: Any = None) -> Any:
    """A replicated sharding over ``devices`` (over ``like``'s mesh when it has one)."""
    if isinstance(like, NamedSharding) and isinstance(like.mesh, Mesh) and tuple(
            like.mesh._internal_device_list) == tuple(devices):
        return NamedSharding(like.mesh, PartitionSpec())
    if len(devices) == 1:
        return single_device_sharding(devices[0])
    return HloSharding(devices, _client.xc().HloSharding.replicate())


def mesh_of(shardings: Sequence[Any]) -> Mesh | None:
    """The mesh of the first NamedSharding among ``shardings``."""
    for s in shardings:
        if isinstance(s, NamedSharding) and isinstance(s.mesh, Mesh):
            return s.mesh
    return None


def sdy_mesh_decl(name: str, mesh: Any, devices: tuple | None = None) -> str:
    """``sdy.mesh @name = <[axes]>``; with ``device_ids`` (positions in the executable's
    ``devices``) when the mesh lists them in another order."""
    axes = ", ".join(f'"{n}"={s}' for n, s in zip(mesh.axis_names, mesh.axis_sizes))
    mine = tuple(mesh._internal_device_list) if isinstance(mesh, Mesh) else None
    if mine is None or devices is None or mine == devices:
        return f"  sdy.mesh @{name} = <[{axes}]>"
    if set(mine) != set(devices):
        raise ValueError(f"the mesh {mesh} is on devices {[d.id for d in mine]} but the "
                         f"computation runs on {[d.id for d in devices]}")
    ids = ", ".join(str(devices.index(d)) for d in mine)
    return f"  sdy.mesh @{name} = <[{axes}], device_ids=[{ids}]>"


def _as_named(mesh: Mesh, sharding: Any, ndim: int) -> Any:
    if sharding is None or isinstance(sharding, NamedSharding):
        return sharding
    if tuple(sharding._internal_device_list) != tuple(mesh._internal_device_list):
        return sharding
    return named_from_hlo(mesh, sharding._to_xla_hlo_sharding(ndim), ndim)


def _hlo_attr(sharding: Any, ndim: int) -> str:
    return f'mhlo.sharding = "{sharding._to_xla_hlo_sharding(ndim)}"'


class SpmdText(str):
    """A module's StableHLO text lowered for XLA's GSPMD partitioner, with
    ``propagate_outputs``: for each result, whether XLA chooses its sharding (no annotation),
    which jax hands XLA as ``allow_spmd_sharding_propagation_to_output`` (without it GSPMD
    replicates such results; Shardy needs no option).

    Example:
        >>> t = SpmdText("module {}")
        >>> t.propagate_outputs = (True,)
        >>> t == "module {}", t.propagate_outputs
        (True, (True,))
    """

    propagate_outputs: tuple | None = None


def lower_spmd(program: Program, name: str, in_shardings: Sequence[Any],
               out_shardings: Sequence[Any | None], donated: Sequence[bool] = ()) -> str:
    """StableHLO text of ``program`` (constvars first) with a sharding on every parameter and on
    the results that have one (``None``: chosen by the compiler). For GSPMD
    (``jax_use_shardy_partitioner`` off) an :class:`SpmdText`."""
    module = ModuleContext(name, lowering_platform(
        tuple(in_shardings[0]._internal_device_list) if in_shardings
        else (_client.default_device(),)))
    module_meshes(module)  # marks the module as multi-device: constraints are emitted
    # JAX's jax_use_shardy_partitioner off: GSPMD's annotations (read by the constraint and
    # shard_map lowerings through the module)
    module.gspmd = gspmd = not config.jax_use_shardy_partitioner
    params = list(program.constvars) + list(program.invars)
    devices0 = tuple(in_shardings[0]._internal_device_list) if in_shardings else None
    # a result on a mesh mixing Explicit and Auto axes: its type's Explicit axes are fixed, and
    # where the type leaves a dimension unsplit that dimension is the compiler's choice (open
    # dimensions); a type that splits every dimension is the result's sharding, closed, as JAX
    # lowers it (JAX's P.UNCONSTRAINED for the type's None entries only)
    open_outs = {k for k, (v, s) in enumerate(zip(program.outvars, out_shardings))
                 if s is None and typed_result_sharding(v.aval, devices0) is None
                 and _type_sharding(v.aval, devices0) is not None
                 and _has_unsplit_dim(v.aval)}
    out_shardings = [(typed_result_sharding(v.aval, devices0) or _type_sharding(v.aval, devices0)
                      if k not in open_outs else None) if s is None else s
                     for k, (v, s) in enumerate(zip(program.outvars, out_shardings))]
    out_shardings = [_type_sharding(v.aval, devices0) if k in open_outs else s
                     for k, (v, s) in enumerate(zip(program.outvars, out_shardings))]
    # Shardings given as XLA HloShardings (replicated copies, compiler choices) are written over
    # the computation's mesh when a PartitionSpec describes them: one annotation language.
    devices = tuple(in_shardings[0]._internal_device_list) if in_shardings else None
    mesh = mesh_of(list(in_shardings) + list(out_shardings))
    if mesh is None and devices is not None:
        mesh = Mesh(_np.array(devices, dtype=object), ("_devices",))
    if mesh is not None:
        in_shardings = [_as_named(mesh, sh, len(v.aval.shape))
                        for sh, v in zip(in_shardings, params)]
        out_shardings = [_as_named(mesh, sh, len(v.aval.shape))
                         for sh, v in zip(out_shardings, program.outvars)]
    all_named = not gspmd and all(isinstance(s, NamedSharding) for s in in_shardings) and all(
        s is None or isinstance(s, NamedSharding) for s in out_shardings)
    # GSPMD has no open dimensions: such a result is left to the compiler, after a Sharding
    # custom call fixing the type's split dimensions (the others unspecified), as JAX's
    gspmd_open = {k: out_shardings[k] for k in open_outs} if gspmd else {}
    if gspmd:
        out_shardings = [None if k in open_outs else s for k, s in enumerate(out_shardings)]

    def attr(s: Any, ndim: int, open_dims: bool = False) -> str:
        return (f"sdy.sharding = {sdy_sharding(module, s, ndim, open_dims)}" if all_named
                else _hlo_attr(s, ndim))

    attrs = []
    for i, (v, s) in enumerate(zip(params, in_shardings)):
        parts = [attr(s, len(v.aval.shape))]
        if i < len(donated) and donated[i]:
            parts.append("jax.buffer_donor = true")
        attrs.append(", ".join(parts))
    main = _lower_function(module, program, "main", public=True, arg_attrs=attrs)
    # the results' attributes: rewrite the header's result list
    head, _, rest = main.partition("\n")
    outs = []
    for k, (v, s) in enumerate(zip(program.outvars, out_shardings)):
        t = mlir_type(v.aval)
        outs.append(f"{t} {{{attr(s, len(v.aval.shape), k in open_outs)}}}" if s is not None
                    else t)
    head = head[:head.rindex(") -> (")] + f") -> ({', '.join(outs)}) {{"
    if gspmd_open:
        rest = _constrain_results(rest, program.outvars, gspmd_open)
    main = head + "\n" + rest
    sym = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "main"
    decls = [] if gspmd else [sdy_mesh_decl(n, m, devices)
                              for m, n in module_meshes(module).items()]
    body = "\n".join(decls + [main] + module.functions)
    n = len(in_shardings[0]._internal_device_list) if in_shardings else 1
    text = (f"module @{sym} attributes {{mhlo.num_partitions = {n} : i32, "
            f"mhlo.num_replicas = 1 : i32}} {{\n{body}\n}}\n")
    if not gspmd:
        return text
    text = SpmdText(text)
    text.propagate_outputs = tuple(s is None for s in out_shardings)
    return text


def read_out_shardings(exe: Any, devices: tuple, avals: Sequence[Any], mesh: Mesh | None,
                       given: Sequence[Any | None]) -> list[Any]:
    """The shardings of the results of ``exe``: those given, else XLA's choice over ``mesh``."""
    ops = exe.get_output_shardings()
    xc = _client.xc()
    out = []
    for k, a in enumerate(avals):
        g = given[k] if given[k] is not None else typed_result_sharding(a, devices)
        if g is not None:
            out.append(g)
            continue
        hs = xc.HloSharding.from_proto(ops[k]) if ops is not None else xc.HloSharding.replicate()
        if mesh is not None:
            ns = named_from_hlo(mesh, hs, len(a.shape))
            if all(t.name == "Explicit" for t in mesh.axis_types) and len(ns.spec) < len(a.shape):
                # a type on Explicit axes names every dimension (JAX's P(None,))
                ns = ns.with_spec(tuple(ns.spec) + (None,) * (len(a.shape) - len(ns.spec)))
            typed = _type_sharding(a, devices)
            if typed is not None and ns.is_equivalent_to(typed, len(a.shape)):
                ns = typed  # on a mixed mesh: the type's spec when the compiler's choice is it
            out.append(ns)
        else:
            out.append(HloSharding(devices, hs))
    return out


def one_device_result_shardings(out_avals: Sequence[Any], in_avals: Sequence[Any],
                                in_shardings: Sequence[Any], committed: Sequence[bool],
                                given: Sequence[Any] | None, device: Any) -> list[Any]:
    """The shardings of a one-device computation's results, by JAX's rules (pjit's results on
    one device): ``given`` (out_shardings) where set, else the result's type on Explicit mesh
    axes; else, after the first committed argument with a NamedSharding or a
    SingleDeviceSharding, that argument's sharding for a result of its rank (a NamedSharding
    keeps its spec) and its mesh replicated for other ranks; else the ``set_mesh`` mesh,
    replicated, when it is this device; else the device itself. Arguments that are not
    committed never decide (JAX treats them as unplaced).

    Example:
        >>> import fluxion
        >>> from fluxion.core.avals import ShapedArray
        >>> d = fluxion.devices()[0]
        >>> one_device_result_shardings([ShapedArray((2,), "float32")], [], [], [], None, d)
        [SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=None)]
    """
    devices = (device,)
    orig = orig_aval = None
    for s, c, a in zip(in_shardings, committed, in_avals):
        if c and isinstance(s, (NamedSharding, type(single_device_sharding(device)))):
            orig, orig_aval = s, a
            break
    cm = computation_mesh()
    if cm is not None and tuple(cm._internal_device_list) != devices:
        cm = None
    if isinstance(orig, NamedSharding) or orig is not None and (
            cm is None or not all(t.name == "Explicit" for t in cm.axis_types)):
        cm = None  # (an argument on the device itself: a result typed on an Explicit mesh
        # still goes there, as JAX types every value under such a mesh)
    else:
        orig = None
    out = []
    for k, a in enumerate(out_avals):
        g = given[k] if given is not None and given[k] is not None else None
        if g is None:
            # a type on a mesh with Explicit axes (mixed ones too: on one device the compiler's
            # choice is the type's), every dimension named as JAX's
            g = _type_sharding(a, devices)
            if g is not None and len(g.spec) < len(a.shape):
                g = g.with_spec(tuple(g.spec) + (None,) * (len(a.shape) - len(g.spec)))
        if g is None:
            if isinstance(orig, NamedSharding):
                g = orig if len(a.shape) == len(orig_aval.shape) else NamedSharding(
                    orig.mesh, _replicated_spec(orig.mesh, a), memory_kind=orig.memory_kind)
            elif orig is not None:
                g = orig
            elif cm is not None:
                g = NamedSharding(cm, _replicated_spec(cm, a))
            else:
                g = single_device_sharding(device)
        out.append(g)
    return out


def _constrain_results(body: str, outvars: Sequence[Any], typed: dict) -> str:
    """``body`` (a function's text after its header) with result ``k`` of ``typed`` passed
    through a GSPMD ``Sharding`` custom call of its type's sharding before the return, the
    dimensions the type leaves unsplit named in ``unspecified_dims`` (the compiler's)."""
    lines = body.split("\n")
    r = max(i for i, ln in enumerate(lines) if ln.startswith("    return "))
    names, _, types = lines[r][len("    return "):].partition(" : ")
    names = names.split(", ")
    added = []
    for k, sharding in sorted(typed.items()):
        ndim = len(outvars[k].aval.shape)
        free = [d for d, e in enumerate(sharding.spec._normalized(ndim)) if not e]
        t = mlir_type(outvars[k].aval)
        added.append(
            f'    %gspmd_result{k} = "stablehlo.custom_call"({names[k]}) {{call_target_name = '
            f'"Sharding", backend_config = "unspecified_dims=[{",".join(map(str, free))}]", '
            f'mhlo.sharding = "{sharding._to_xla_hlo_sharding(ndim)}"}} : ({t}) -> {t}')
        names[k] = f"%gspmd_result{k}"
    lines[r] = f"    return {', '.join(names)} : {types}"
    return "\n".join(lines[:r] + added + lines[r:])


def _has_unsplit_dim(aval: Any) -> bool:
    """Whether ``aval``'s type (its sharding's spec) leaves a dimension unsplit."""
    return any(not e for e in aval.sharding.spec._normalized(len(aval.shape)))


def _replicated_spec(mesh: Any, aval: Any) -> PartitionSpec:
    # a type on a mesh with Explicit axes names every dimension (JAX's P(None,)); else P()
    if any(t.name == "Explicit" for t in mesh.axis_types):
        return PartitionSpec(*(None,) * len(aval.shape))
    return PartitionSpec()


def typed_result_sharding(aval: Any, devices: tuple | None) -> Any:
    """The sharding a result must have from its type: its aval's sharding when that is on a mesh
    of only Explicit axes over ``devices`` (None otherwise: the compiler chooses)."""
    s = _type_sharding(aval, devices)
    if s is None or any(t.name != "Explicit" for t in s.mesh.axis_types):
        return None
    return s


def _type_sharding(aval: Any, devices: tuple | None) -> Any:
    """``aval``'s sharding (its type, on a mesh with Explicit axes) when its mesh is over
    ``devices``, else None."""
    s = aval.sharding
    if s is None or not isinstance(s.mesh, Mesh) or devices is None:
        return None
    if not any(t.name == "Explicit" for t in s.mesh.axis_types):
        return None
    if tuple(s.mesh._internal_device_list) != tuple(devices) and set(
            s.mesh._internal_device_list) != set(devices):
        return None
    return s


def read_param_shardings(exe: Any) -> list[Any] | None:
    ops = exe.get_parameter_shardings()
    if ops is None:
        return None
    xc = _client.xc()
    return [xc.HloSharding.from_proto(o) for o in ops]

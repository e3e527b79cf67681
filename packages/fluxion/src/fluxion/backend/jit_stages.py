"""Ahead-of-time stages of a jitted function, as JAX's: ``f.trace(*args)`` -> :class:`Traced`
(``.jaxpr``, ``.out_info``), ``.lower()`` -> :class:`Lowered` (``.as_text()``, ``.compiler_ir()``,
``.cost_analysis()``), ``.compile()`` -> :class:`Compiled` (callable with arguments of that
signature), and ``f.lower(*args)`` / ``f.eval_shape(*args)``.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> lowered = fluxion.jit(lambda x: x + 1).lower(jnp.ones(2))
    >>> "stablehlo.add" in lowered.as_text()
    True
    >>> lowered.compile()(jnp.ones(2)).tolist()
    [2.0, 2.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable

from fluxion.backend import compile_options as _compile_flags
from fluxion.backend import dispatch as _d
from fluxion.backend import spmd
from fluxion.backend.array import Array, Spec
from fluxion.backend.callback import parse_module
from fluxion.backend.client import jaxlib_ext as _client_jaxlib_ext
from fluxion.backend.jit_entry import _arg_array, _embed_consts, _Entry, _prune_unused
from fluxion.backend.lowering import lower_program, lower_program_multi, lowering_platform
from fluxion.backend.sharding_impl import AbstractMesh, Sharding, single_device_sharding
from fluxion.core.avals import ShapeDtypeStruct
from fluxion.core.config import config
from fluxion.core.ir import Program, typecheck
from fluxion.transforms.staging import ClosedProgram, abstractify
from fluxion.tree_util import physical as tree_util

__all__ = ["Traced", "Lowered", "Compiled"]


class Traced:
    """A function staged for one argument signature: ``.jaxpr``, ``.lower()``."""

    def __init__(self, j: Any, fun: Callable, args: tuple, kwargs: dict, statics: tuple,
                 avals: list, treedef: Any, donated: tuple) -> None:
        self._fun = fun  # keeps the function (weakly held by j) alive as long as this object
        self._j, self._args, self._kwargs, self._statics = j, args, kwargs, statics
        self._avals, self._treedef, self._donated = avals, treedef, donated
        self.program, self.consts, self.out_tree = j.program_for(args, kwargs, statics, avals, treedef)
        self._specs = self._placed_specs()

    def _placed_specs(self) -> list | None:
        """The Specs of the arguments placed as a call would place them, when the call runs on
        several devices, on another device than the default one, or with jit's placement
        options (else None: the plain path)."""
        leaves = tree_util.tree_leaves((self._args, self._kwargs))
        j = self._j
        arrays_only = all(type(x) is Array for x in leaves)
        if j.device is None and (not arrays_only or any(
                _sharding_of_struct(x) is not None for x in leaves)):
            return self._struct_specs(leaves)  # nothing moved: stand-ins, NumPy values
        if not arrays_only:
            return self._struct_specs_with_options(leaves)
        arrays = j.place(self._args, self._kwargs, list(leaves))
        if j.device is None and not any(a._k.committed for a in arrays):
            arrays = j.place_on_program_mesh(self._args, self._kwargs, self._statics, arrays)
        specs = [a._k for a in arrays]
        multi = any(len(s.sharding._internal_device_list) > 1 for s in specs)
        # arguments committed to a device other than the default one run there, as a call
        elsewhere = bool(specs) and tuple(specs[0].sharding._internal_device_list) != (
            _d._client.default_device(),)
        return specs if multi or elsewhere or j.device is not None else None

    def _struct_specs(self, leaves: list) -> list | None:
        """The Specs a call would place arrays of these stand-ins with: a ShapeDtypeStruct's
        sharding commits it there, as JAX lowers it; Arrays keep theirs; the rest (plain
        stand-ins, NumPy values) go where the committed ones are, as :func:`dispatch.place`."""
        specs = []
        for x, aval in zip(leaves, self._avals):
            if type(x) is Array:
                specs.append(x._k)
                continue
            s = _sharding_of_struct(x)
            specs.append(Spec(aval, s if s is not None else _d.default_sharding(), s is not None))
        devs, _, like = spmd.target_devices(self._j.name, specs, self._j.names(self._args,
                                                                             self._kwargs))
        target = (single_device_sharding(devs[0]) if len(devs) == 1
                  else spmd.replicated_on(devs, like))
        specs = [s if tuple(s.sharding._internal_device_list) == devs
                 else Spec(s.aval, target, s.committed) for s in specs]
        if devs == (_d._client.default_device(),):
            return None
        return specs

    def _struct_specs_with_options(self, leaves: list) -> list:
        """:meth:`_struct_specs` under jit's placement options (``in_shardings``, ``device``),
        as ``_Jitted.place`` places arrays: a leaf with an ``in_shardings`` entry goes there
        (NumPy values and plain stand-ins untyped, as JAX traces them), the others where the
        options or the committed arguments say."""
        j, pl = self._j, self._j.device
        names = j.names(self._args, self._kwargs)
        specs = []
        for x, aval in zip(leaves, self._avals):
            s = x._k.sharding if type(x) is Array else _sharding_of_struct(x)
            committed = x._k.committed if type(x) is Array else s is not None
            specs.append(Spec(aval, s if s is not None else _d.default_sharding(), committed))
        if pl.devices is not None:  # device= / backend=: every argument moves there (JAX)
            target = single_device_sharding(pl.devices[0])
            return [Spec(sp.aval, target, sp.committed) for sp in specs]
        ins = pl.arg_shardings(j.name, self._args, self._kwargs, [s.aval for s in specs], names)
        forced = None
        for i, s in enumerate(ins):
            if s is not None and forced is None:
                forced = tuple(s._internal_device_list)
            elif s is not None and tuple(s._internal_device_list) != forced:
                raise ValueError(
                    f"jit of {j.name}: in_shardings put argument {names[i]} on devices "
                    f"{[d.id for d in s._internal_device_list]} but another on "
                    f"{[d.id for d in forced]}; all arguments of one computation must be on "
                    "the same devices")
        if forced is None and not any(s.committed for s in specs):
            forced = pl.out_devices()
        rest = [(sp, nm) for sp, s, nm in zip(specs, ins, names) if s is None]
        devs, _, like = spmd.target_devices(j.name, [sp for sp, _ in rest],
                                            [nm for _, nm in rest], forced)
        target = (single_device_sharding(devs[0]) if len(devs) == 1
                  else spmd.replicated_on(devs, like))
        out = []
        for x, sp, s, nm in zip(leaves, specs, ins, names):
            if s is None:
                out.append(sp if tuple(sp.sharding._internal_device_list) == devs
                           else Spec(sp.aval, target, sp.committed))
            elif sp.committed and sp.sharding != s and (
                    sp.sharding._to_xla_hlo_sharding(len(sp.aval.shape))
                    != s._to_xla_hlo_sharding(len(sp.aval.shape))):
                raise ValueError(
                    "Sharding passed to jit does not match the sharding on the respective arg. "
                    f"Got jit sharding: {s},\narg sharding: {sp.sharding} for arg {nm} of type "
                    f"{sp.aval.str_short()} (jit of {j.name})")
            elif type(x) is Array or _sharding_of_struct(x) is not None:
                out.append(Spec(sp.aval, s, True))
            else:  # only placed by in_shardings: untyped, as JAX
                out.append(Spec.untyped(sp.aval, s, True))
        return out

    @property
    def jaxpr(self) -> Any:
        return ClosedProgram(self.program, self.consts)

    @property
    def out_info(self) -> Any:
        return tree_util.tree_unflatten(self.out_tree, [
            ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in self.program.out_avals])

    def lower(self, *, lowering_platforms: tuple[str, ...] | None = None) -> "Lowered":
        """Lower to StableHLO, as JAX's ``Traced.lower``: for the platform of the devices a
        call would run on, or for ``lowering_platforms`` (a tuple of names among ``'cpu'``,
        ``'tpu'``, ``'cuda'``, ``'rocm'``; ``'gpu'`` is ``'cuda'``), each operation with that
        platform's lowering rule, from any machine. With several platforms ``main`` takes the
        platform's index first, as ``fluxion.export``'s modules (such a module is for export:
        ``.compile()`` refuses it, where JAX fails inside its own code).

        Example:
            >>> import fluxion, fluxion.numpy as jnp
            >>> traced = fluxion.jit(jnp.linalg.eigh).trace(jnp.eye(2))
            >>> 'call_target_name = "Eigh"' in traced.lower(lowering_platforms=("tpu",)).as_text()
            True
        """
        abstract = [x for x in tree_util.tree_leaves((self._args, self._kwargs))
                    if isinstance(getattr(getattr(x, "sharding", None), "mesh", None),
                                  AbstractMesh)]
        if abstract:
            raise NotImplementedError(
                f"Traced.lower: the argument {abstract[0]} is placed on an AbstractMesh; "
                "Fluxion lowers only for devices it has (JAX lowers for the abstract mesh's "
                "device kind): give its sharding a Mesh of devices")
        if lowering_platforms is not None and lowering_platforms != ():
            return self._lower_for(_platform_names(lowering_platforms))
        if self._specs is not None:
            # placed arguments (several devices, shardings): lowered with their annotations and
            # compiled at once, as a call would be
            entry = self._j.compile_entry(self._args, self._kwargs, self._statics, self._specs,
                                          self._treedef, self._donated)
            return Lowered(self, entry.text, entry)
        full = Program([], list(self.program.constvars) + list(self.program.invars),
                       self.program.outvars, self.program.eqns)
        if config.jax_enable_checks:  # our IR's invariants (JAX's jax_enable_checks)
            typecheck(full)
        program, consts, donated, kept = _prune_unused(self.program, self.consts, self._donated,
                                                       self._j.keep_unused)
        program, consts = _embed_consts(program, consts)
        full = Program([], list(program.constvars) + list(program.invars), program.outvars,
                       program.eqns)
        don = (False,) * len(consts) + donated
        text = lower_program(full, f"jit_{self._j.name}", donated=don,
                             platform=lowering_platform(_d._no_argument_devices()))
        return Lowered(self, text, consts=consts, kept=kept,
                       devices=(_d._client.default_device(),))

    def _lower_for(self, platforms: tuple[str, ...]) -> "Lowered":
        """:meth:`lower` for ``lowering_platforms``: the one-device lowering (a computation
        over several devices is not lowered for other platforms)."""
        devices = (tuple(self._specs[0].sharding._internal_device_list) if self._specs
                   else (_d._client.default_device(),))
        if len(devices) > 1:
            raise NotImplementedError(
                f"Traced.lower of {self._j.name}: lowering_platforms={platforms} for a "
                f"computation over {len(devices)} devices; Fluxion lowers one-device "
                "computations for other platforms only")
        program, consts, donated, kept = _prune_unused(self.program, self.consts, self._donated,
                                                       self._j.keep_unused)
        program, consts = _embed_consts(program, consts)
        full = Program([], list(program.constvars) + list(program.invars), program.outvars,
                       program.eqns)
        if config.jax_enable_checks:
            typecheck(full)
        name = f"jit_{self._j.name}"
        if len(platforms) == 1:
            text = lower_program(full, name, donated=(False,) * len(consts) + donated,
                                 platform=platforms[0])
        else:  # (JAX marks no donation in a multi-platform module either)
            text = lower_program_multi(full, platforms, name)
        return Lowered(self, text, consts=consts, kept=kept, devices=devices,
                       platforms=platforms)


class Lowered:
    """A staged and lowered function: ``.as_text()`` is its StableHLO; ``.compile()``."""

    def __init__(self, traced: Traced, text: str, entry: "_Entry | None" = None,
                 consts: Sequence[Any] | None = None, kept: Sequence[int] | None = None,
                 devices: tuple | None = None, platforms: tuple[str, ...] | None = None
                 ) -> None:
        self._traced = traced
        self._platforms = platforms  # Traced.lower's lowering_platforms (None: the devices')
        self._text = text
        self._entry = entry
        # the devices it was lowered for (JAX's device assignment: the arguments' or default)
        self._devices = entry.executable.devices if entry is not None else devices
        self._consts = traced.consts if consts is None else consts  # those still parameters
        self._kept = kept  # the arguments the module takes (None: all)

    def as_text(self, dialect: str | None = None) -> str:
        return self._text

    def compiler_ir(self, dialect: str | None = None) -> Any:
        """The lowered program: a StableHLO MLIR module (``dialect`` None or ``"stablehlo"``) or
        an ``XlaComputation`` (``"hlo"``; ``.as_hlo_text()``), as JAX's ``Lowered``."""
        jaxlib_ext = _client_jaxlib_ext()
        if dialect in (None, "stablehlo"):
            return parse_module(self._text)
        if dialect == "hlo":
            return jaxlib_ext.mlir.mlir_module_to_xla_computation(
                self._text, use_tuple_args=False, return_tuple=False)
        raise ValueError(f"Lowered.compiler_ir: unknown dialect {dialect!r} "
                         f"(expected 'stablehlo' or 'hlo')")

    def cost_analysis(self) -> dict[str, float]:
        """XLA's cost estimate of the unoptimized program (``flops``, ``bytes accessed``, ...),
        as JAX's ``Lowered.cost_analysis``. As JAX, not on a platform reached through the PJRT C
        API (a TPU or CUDA plugin, whose runtime has no HLO cost analysis): there
        ``compile().cost_analysis()`` gives the compiled program's estimate."""
        jaxlib_ext = _client_jaxlib_ext()
        cl = _d._client.get_client()
        if "PJRT C API" in cl.platform_version:
            raise NotImplementedError(
                f"Lowered.cost_analysis not implemented on platform '{cl.platform}'. Use "
                "compile().cost_analysis() for post-compilation cost estimates.")
        hlo = self.compiler_ir("hlo").get_hlo_module()
        return jaxlib_ext.hlo_module_cost_analysis(cl, hlo)

    @property
    def out_info(self) -> Any:
        return self._traced.out_info

    def compile(self, compiler_options: dict[str, Any] | None = None, *,
                device_assignment: Any = None) -> "Compiled":
        """Compile the lowered module, as JAX's: ``compiler_options`` (XLA options, as
        ``jit``'s) add to those the function was jitted with (a name given in both: this one).
        ``device_assignment``: a tuple of the devices to compile for; as in JAX it must be the
        devices the function was lowered for (its arguments' devices, or the default device),
        else a ``ValueError``.

        Example:
            >>> import fluxion, fluxion.numpy as jnp
            >>> lowered = fluxion.jit(lambda x: x * 2).lower(jnp.ones(2))
            >>> lowered.compile({"xla_cpu_enable_fast_math": True})(jnp.ones(2)).tolist()
            [2.0, 2.0]
            >>> lowered.compile(device_assignment=(fluxion.devices()[0],))(jnp.ones(2)).tolist()
            [2.0, 2.0]
        """
        if device_assignment is not None:
            self._check_device_assignment(device_assignment)
        if self._platforms is not None and len(self._platforms) > 1:
            raise ValueError(
                f"Lowered.compile: this module was lowered for the platforms "
                f"{self._platforms} (its main takes the platform's index first), which only an "
                "export runs; lower for one platform to compile it")
        j = self._traced._j
        pairs = j.compiler_options + _compile_flags.overrides(compiler_options)
        if self._entry is not None:
            entry = self._entry
            if compiler_options is not None:  # placed arguments: compiled again, as a call
                t = self._traced
                entry = j.compile_entry(t._args, t._kwargs, t._statics, t._specs, t._treedef,
                                        t._donated, compiler_options=pairs)
            return Compiled(self._traced, entry.executable, entry)
        exe = _d.compile_text(self._text, self._devices, compiler_options=pairs)
        return Compiled(self._traced, exe, consts=self._consts, kept=self._kept)

    def _check_device_assignment(self, devices: Any) -> None:
        """JAX's check of ``compile(device_assignment=)``: the devices the module was lowered
        for, in that order. (JAX's own errors for a list, an empty tuple or a non-device come
        from deep inside it; here they are one ``TypeError`` that says what is expected.)"""
        if (type(devices) is not tuple or not devices
                or not all(hasattr(d, "id") and hasattr(d, "platform") for d in devices)):
            raise TypeError(
                "Lowered.compile: device_assignment must be a non-empty tuple of devices, got "
                f"{devices!r}")
        ours = tuple(self._devices)
        if devices != ours:
            raise ValueError(
                "device_assignment passed to `.compile` must match the device_assignment "
                "calculated from array shardings and out_shardings. Got device ids passed to "
                f"compile {[d.id for d in devices]} on platform {devices[0].platform.upper()} "
                f"and devices ids calculated from array shardings and out_shardings "
                f"{[d.id for d in ours]} on platform {ours[0].platform.upper()}")


class Compiled:
    """A compiled executable for one signature; call it with arguments of that signature."""

    def __init__(self, traced: Traced, executable: Any, entry: "_Entry | None" = None,
                 consts: Sequence[Any] | None = None, kept: Sequence[int] | None = None) -> None:
        self._traced = traced
        self._executable = executable
        if entry is not None:
            self._entry = entry
            return
        consts = [c if type(c) is Array else _d.to_array(c)
                  for c in (traced.consts if consts is None else consts)]
        sharding = _d._sharding_for(executable.devices[0])  # one device: where it runs
        out_specs = [Spec(a, sharding) for a in traced.program.out_avals]
        self._entry = _Entry(executable, out_specs, tuple(c._a for c in consts), traced.out_tree,
                             executable.text, traced.program, kept)

    def as_text(self) -> str:
        return self._executable.exe.hlo_modules()[0].to_string()

    def cost_analysis(self) -> Any:
        return self._executable.exe.cost_analysis()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        j = self._traced._j
        # As JAX's: a Compiled takes the dynamic arguments only; the static ones it was
        # lowered with are part of it and are left out of the call (equinox's AOT relies on it)
        dyn_args, dyn_kwargs = args, kwargs
        leaves, treedef = tree_util.tree_flatten((dyn_args, dyn_kwargs))
        arrays = [_arg_array(x, j.name) for x in leaves]
        avals = [a.aval for a in arrays]
        if treedef != self._traced._treedef or avals != list(self._traced._avals):
            raise TypeError(
                f"Compiled function {j.name} was compiled for arguments "
                f"{[a.str_short() for a in self._traced._avals]} (structure "
                f"{self._traced._treedef}) but called with {[a.str_short() for a in avals]} "
                f"(structure {treedef})")
        # The executable runs on the devices it was compiled for: uncommitted arguments move
        # there; committed ones elsewhere are an error (never handed to XLA).
        names = j.names(dyn_args, dyn_kwargs)
        specs = self._traced._specs
        if specs is None:
            arrays = _d.place(j.name, arrays, names, tuple(self._executable.devices))
        else:  # exactly the placement it was compiled for (anything else could crash XLA)
            devs = tuple(self._executable.devices)
            if j.device is None or j.device.devices is None:  # device=/backend= move them all
                _d.place(j.name, [a for a in arrays if a._k.committed], None, devs)
            arrays = [a if a._k.sharding == sp.sharding else _d.move_to(a, sp.sharding)
                      for a, sp in zip(arrays, specs)]
        return self._entry.call(tuple(a._a for a in arrays))


def _platform_names(platforms: Any) -> tuple[str, ...]:
    """``Traced.lower``'s ``lowering_platforms`` checked and named as the lowering rules name
    them. (JAX takes a string as the tuple of its letters and an unknown name as a platform
    without rules of its own; here both are errors.)"""
    if type(platforms) is not tuple or not all(type(p) is str for p in platforms):
        raise TypeError(f"Traced.lower: lowering_platforms must be a tuple of platform names "
                        f"such as ('tpu',), got {platforms!r}")
    names = tuple("cuda" if p.lower() == "gpu" else p.lower() for p in platforms)
    if any(p not in ("cpu", "tpu", "cuda", "rocm") for p in names) or len(set(names)) != len(
            names):
        raise ValueError(f"Traced.lower: lowering_platforms must be distinct names among "
                         f"'cpu', 'tpu', 'cuda' and 'rocm', got {platforms!r}")
    return names


def _sharding_of_struct(x: Any) -> Any:
    """The (Fluxion) sharding of a ShapeDtypeStruct that has one (None for anything else, and
    for a sharding over an AbstractMesh: it has no devices to place on; its Explicit axes are
    still the stand-in's type while tracing)."""
    s = x.sharding if isinstance(x, ShapeDtypeStruct) else None
    if isinstance(getattr(s, "mesh", None), AbstractMesh):
        return None
    return s if isinstance(s, Sharding) else None


def _prepare(j: Any, args: tuple, kwargs: dict) -> tuple:
    dyn_args, dyn_kwargs, statics, donated = j.split(args, kwargs)
    leaves, treedef = tree_util.tree_flatten((dyn_args, dyn_kwargs))
    avals = [abstractify(x) for x in leaves]
    return dyn_args, dyn_kwargs, statics, avals, treedef, donated


def _trace_fn(j: Any, fun: Callable, *args: Any, **kwargs: Any) -> Traced:
    dyn_args, dyn_kwargs, statics, avals, treedef, donated = _prepare(j, args, kwargs)
    return Traced(j, fun, dyn_args, dyn_kwargs, statics, avals, treedef, donated)


def _lower(j: Any, fun: Callable, *args: Any, **kwargs: Any) -> Lowered:
    return _trace_fn(j, fun, *args, **kwargs).lower()


def _eval_shape(j: Any, fun: Callable, *args: Any, **kwargs: Any) -> Any:
    return _trace_fn(j, fun, *args, **kwargs).out_info

"""The compiled entries of jitted functions, and what builds them from a call's arguments.

An :class:`_Entry` is one compiled signature of a jitted function: its executable, the result
handlers and output Specs made once, and the closed-over constants passed before the arguments.
``_embed_consts`` writes small constants into the module instead (as JAX does),
``_program_mesh`` finds the mesh a Program names (where a call without committed arguments
runs), and ``_arg_array`` turns an argument leaf into an Array (or says why it cannot).
:mod:`fluxion.backend.jit` (the general call path), :mod:`fluxion.backend.jit_dispatch` (the
generated dispatchers) and :mod:`fluxion.backend.jit_stages` (``lower``/``compile``) share them.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> from fluxion.backend.jit_entry import _Entry
    >>> f = fluxion.jit(lambda x: x + 1)
    >>> f(jnp.ones(2)).tolist()
    [2.0, 2.0]
    >>> all(type(e) is _Entry for e in f._fluxion_jit.cache.values())
    True
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

import numpy as np

from fluxion.backend import dispatch as _d
from fluxion.backend.array import Array, Spec
from fluxion.core import trace as _trace
from fluxion.core.dtypes import float0 as _FLOAT0
from fluxion.core.errors import UnexpectedTracerError
from fluxion.core.ir import Equation, Literal, Program, prune_unused_inputs
from fluxion.tree_util import physical as tree_util

__all__: list[str] = []

_new = object.__new__
_collect = _d.collect_garbage  # jaxlib's queued garbage, freed before each run (see there)


class _Entry:
    """One compiled signature of a jitted function."""

    __slots__ = ("run", "handlers", "out_specs", "out0", "single", "consts", "out_tree", "text",
                 "program", "executable", "float0", "fast_key", "call", "bare")

    def __init__(self, executable: Any, out_specs: list[Spec], consts: tuple, out_tree: Any,
                 text: str, program: Program, kept: Sequence[int] | None = None) -> None:
        self.executable = executable
        self.run = executable.exe.execute_sharded
        if kept is not None:  # the program reads only these arguments (see _prune_unused)
            self.run = _picking(self.run, [*range(len(consts)), *(len(consts) + i for i in kept)])
        self.out_specs = tuple(out_specs)
        self.handlers = _d.result_handlers(self.out_specs)
        self.out0 = self.out_specs[0] if self.out_specs else None
        # float0 outputs (integer tangents) come back as NumPy float0 zeros, as eagerly and in JAX
        self.float0 = tuple(i for i, sp in enumerate(self.out_specs) if sp.dtype == _FLOAT0)
        self.single = (out_tree.num_leaves == 1 and out_tree == _SINGLE_LEAF
                       and not self.float0)
        self.consts = consts  # tuple of jaxlib ArrayImpls passed before the arguments
        # one output and no constants: the dispatchers run it inline on the argument buffers
        self.bare = self.single and not consts
        self.out_tree = out_tree
        self.text = text
        self.program = program
        # The key under which the arity-specialised dispatcher may call this entry directly
        # (set by _Jitted.miss for plain positional Array calls: jit_dispatch.fast_key of the
        # input Specs, or a pytree call's key), else None.
        self.fast_key: Any = None
        #: ``call(impls)``: runs the executable on the argument buffers and returns the output
        #: pytree; generated for this entry (see _output_caller) where its outputs allow
        self.call = _output_caller(self) or self._call

    def _call(self, impls: tuple) -> Any:
        _collect()
        outs = self.run(self.consts + impls).consume_with_handlers(self.handlers)
        if self.single:
            w = Array()  # (cheaper than object.__new__(Array): see _output_caller)
            w._a, w._k, w._np = outs[0], self.out0, None
            return w
        # the wrap inlined in a loop (not map over _d._wrap: a Python call per output)
        leaves = []
        push = leaves.append
        for a, k in zip(outs, self.out_specs):
            w = Array()
            w._a, w._k, w._np = a, k, None
            push(w)
        if self.float0:
            for i in self.float0:
                leaves[i] = np.zeros(self.out_specs[i].aval.shape, _FLOAT0)
        return self.out_tree.unflatten(leaves)


_SINGLE_LEAF = tree_util.tree_structure(0)

# Output callers: a cached call's cost beyond the executable grows with its outputs (each one
# wrapped as an Array, then the pytree rebuilt). For outputs in tuples, lists, dicts and None
# (what jitted functions mostly return) the caller is generated code that unpacks the results,
# wraps each inline and writes the output pytree as one display expression: no Python call per
# output, no unflatten. Made once per output structure (the factories are cached by source).
_MAX_GENERATED_OUTPUTS = 64
_CALLER_MAKERS: dict[tuple[str, bool], Any] = {}


def _display(x: Any, names: list[str]) -> str | None:
    """Python source building pytree ``x`` whose leaves are the ints ``0..n-1`` (leaf ``i``
    written as ``names[i]``), or None where a node is not a plain tuple, list, dict or None."""
    t = type(x)
    if t is int:
        return names[x]
    if x is None:
        return "None"
    if t is tuple or t is list:
        parts = [_display(c, names) for c in x]
        if any(p is None for p in parts):
            return None
        body = ", ".join(parts) + ("," if t is tuple and len(parts) == 1 else "")
        return f"({body})" if t is tuple else f"[{body}]"
    if t is dict:
        items = []
        for k, v in x.items():
            if type(k) not in (str, int) or type(k) is bool:
                return None
            p = _display(v, names)
            if p is None:
                return None
            items.append(f"{k!r}: {p}")
        return "{" + ", ".join(items) + "}"
    return None


def _output_caller(entry: "_Entry") -> Any:
    """A generated ``call(impls)`` for ``entry`` (see above), or None (one output, float0
    outputs, more than 64 outputs, or a structure with other node types: the general call)."""
    n = len(entry.out_specs)
    if entry.single or entry.float0 or not 0 < n <= _MAX_GENERATED_OUTPUTS:
        return None
    try:
        sample = entry.out_tree.unflatten(list(range(n)))
    except Exception:  # a custom node whose unflatten needs real leaves
        return None
    names = [f"_w{i}" for i in range(n)]
    display = _display(sample, names)
    if display is None:
        return None
    key = (display, bool(entry.consts))
    make = _CALLER_MAKERS.get(key)
    if make is None:
        outs = ", ".join(f"_o{i}" for i in range(n))
        specs = ", ".join(f"_k{i}" for i in range(n))
        # ``_Array()`` makes the empty wrapper: CPython's type call (~50 ns) is cheaper than
        # ``object.__new__(Array)`` (~70 ns: a method-wrapper call with its safety checks), so
        # ~20 ns less per output. Array defines no __new__/__init__ (its slots are set here).
        lines = [f"def _make(_run, _consts, _handlers, _Array, _gc, {specs}):",
                 "    def call(impls):",
                 "        _gc()",
                 f"        {outs}, = _run({'_consts + impls' if entry.consts else 'impls'})"
                 ".consume_with_handlers(_handlers)"]
        for i in range(n):
            lines.append(f"        _w{i} = _Array(); _w{i}._a = _o{i}; _w{i}._k = _k{i}; "
                         f"_w{i}._np = None")
        lines += [f"        return {display}", "    return call"]
        ns: dict[str, Any] = {}
        exec(compile("\n".join(lines), f"{__file__}<output caller of {n} outputs>", "exec"), ns)
        make = _CALLER_MAKERS.setdefault(key, ns["_make"])
    return make(entry.run, entry.consts, entry.handlers, Array, _collect,
                *entry.out_specs)


def _picking(run: Any, positions: list[int]) -> Any:
    """``run`` given only the buffers at ``positions`` of the ones it is called with (picked
    by one C call, not a list built per call)."""
    if len(positions) == 1:  # itemgetter of one position gives the item, not a tuple
        only = positions[0]

        def run_kept(buffers: Sequence[Any]) -> Any:
            return run((buffers[only],))
    elif positions:
        pick = itemgetter(*positions)

        def run_kept(buffers: Sequence[Any]) -> Any:
            return run(pick(buffers))
    else:
        def run_kept(buffers: Sequence[Any]) -> Any:
            return run(())
    # the kept buffers' positions, for tools that run the executable themselves
    # (benchmarks/dispatch_args.py: jaxlib's bare execute on the same buffers)
    run_kept.positions = tuple(positions)  # type: ignore[attr-defined]
    return run_kept


def _prune_unused(program: Program, consts: Sequence[Any], donated: Sequence[bool],
                  keep_unused: bool) -> tuple[Program, list, tuple, list[int] | None]:
    """Without ``keep_unused``, ``program`` compiles without the arguments and constants it
    never reads, as JAX's ``jit(keep_unused=False)`` (its default): the executable's entry takes
    fewer buffers (the dispatcher still receives every argument, and :class:`_Entry` passes on
    those at ``kept``). Returns ``(program, consts, donated, kept)``, ``kept`` None when every
    argument stays. A donated argument that is dropped is not donated, as in JAX."""
    if keep_unused:
        return program, list(consts), tuple(donated), None
    pruned, kept_c, kept_i = prune_unused_inputs(program)
    if pruned is program:
        return program, list(consts), tuple(donated), None
    consts = [consts[i] for i in kept_c]
    kept = None if len(kept_i) == len(program.invars) else kept_i
    if donated and kept is not None:
        donated = tuple(donated[i] for i in kept)
    return pruned, consts, tuple(donated), kept
_EMBED_MAX_BYTES = 1 << 16


def _embed_consts(program: Program, consts: Sequence[Any]) -> tuple[Program, list]:
    """``program`` with its small numeric closed-over constants (at most 64 KiB each) written
    into it as literals, and the constants that stay parameters. JAX embeds closed-over constants
    in the module too: XLA sees their values (folds them into the fusions) and each call passes
    fewer buffers."""
    keep_vars, keep, sub = [], [], {}
    for v, c in zip(program.constvars, consts):
        dt = v.aval.dtype
        lit = None
        if (isinstance(c, (Array, np.ndarray)) and isinstance(dt, np.dtype) and dt.kind in "biuf"
                and dt.itemsize in (1, 2, 4, 8)
                and int(np.prod(v.aval.shape)) * dt.itemsize <= _EMBED_MAX_BYTES):
            val = np.asarray(c)
            flat = val.reshape(-1)
            if flat.size == 0:
                lit = Literal(val, v.aval)
            else:
                bits = flat.view(f"u{dt.itemsize}")
                if (bits == bits[0]).all():  # a splat: a scalar broadcast, fused where used
                    lit = Literal(flat[0], v.aval)
                elif not (flat == flat[0]).all():  # (the dense attribute would merge 0.0, -0.0)
                    lit = Literal(val, v.aval)
        if lit is None:
            keep_vars.append(v)
            keep.append(c)
        else:
            sub[v.id] = lit
    if not sub:
        return program, list(consts)

    def put(x: Any) -> Any:
        return x if isinstance(x, Literal) else sub.get(x.id, x)

    def reads_one(e: Equation) -> bool:
        return any(not isinstance(x, Literal) and x.id in sub for x in e.inputs)

    # only the equations that read an embedded constant are rebuilt (a program's few uses of
    # its constants among hundreds of equations)
    eqns = [Equation(e.prim, [put(x) for x in e.inputs], e.outputs, e.params, e.source,
                     e.name_stack) if reads_one(e) else e
            for e in program.eqns]
    return Program(keep_vars, program.invars, [put(x) for x in program.outvars], eqns), keep


_PROGRAM_MESH: "weakref.WeakKeyDictionary[Program, Any]" = weakref.WeakKeyDictionary()


def _program_mesh(program: Program) -> Any:
    """The first mesh named by ``program`` (or a program inside it), or None."""
    try:
        return _PROGRAM_MESH[program]
    except (KeyError, TypeError):
        pass
    found = None
    for eqn in program.eqns:
        mesh = eqn.params.get("mesh")
        if mesh is None and eqn.prim.name == "sharding_constraint":
            mesh = getattr(eqn.params.get("sharding"), "mesh", None)
        if mesh is not None and hasattr(mesh, "_internal_device_list"):
            found = mesh
            break
        for v in eqn.params.values():
            if isinstance(v, Program):
                found = _program_mesh(v)
                if found is not None:
                    break
        if found is not None:
            break
    try:
        _PROGRAM_MESH[program] = found
    except TypeError:
        pass
    return found


def _arg_array(x: Any, fname: str) -> Array:
    if type(x) is Array:
        return x
    if isinstance(x, _trace.Tracer):
        raise UnexpectedTracerError(
            f"jit of {fname} received a traced value {x.aval_str()} of {x._interp.description} "
            "outside of that transformation: it leaked out of the function that created it.")
    try:
        return _d.to_array(x)
    except TypeError as e:
        raise TypeError(f"jit of {fname}: argument of type {type(x).__name__} is not a valid "
                        f"array type ({e})") from None

"""Staging: tracing a Python function to a Program; ``make_jaxpr``, ``eval_shape``; closing a
Program and the cache of its transformations.

The staging interpreter records one :class:`~fluxion.core.ir.Equation` per primitive bound
while the user's function runs. Values from outside the function (arrays it closes over, tracers
of outer transformations) become the Program's ``constvars``; Python scalars become literals.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> print(fluxion.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(1.0))
    { lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b 2.0:f32[] in (c,) }
"""

from __future__ import annotations

import functools
import inspect
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core import vma as _vma
from fluxion.core.avals import CONTEXT_EXPLICIT as _CONTEXT_EXPLICIT
from fluxion.core.avals import EXPLICIT as _EXPLICIT
from fluxion.core.avals import ShapedArray, ShapeDtypeStruct
from fluxion.core.avals import apply_sharding_rule as _apply_sharding_rule
from fluxion.core.config import config
from fluxion.core.errors import ConcretizationTypeError, user_source_line
from fluxion.core.hijax import HITYPES, with_boxes
from fluxion.core.ir import Equation, Literal, Program, Var
from fluxion.core.name_stack import NAME_STACK as _NAMES
from fluxion.core.name_stack import render as _render_names
from fluxion.core.primitive import Primitive
from fluxion.core.refs import Ref
from fluxion.core.trace import Interpreter, Tracer, check_live, interpreter_scope
from fluxion.core.tracebacks import api_boundary
from fluxion.tree_util import physical as tree_util

__all__ = ["StagingInterpreter", "StagingTracer", "trace_to_program", "make_jaxpr", "eval_shape",
           "partial_at", "ClosedProgram", "abstractify", "fun_name", "fun_source", "close_program",
           "cached_transform", "mask_flags"]


def fun_name(fun: Callable) -> str:
    name = getattr(fun, "__name__", None)
    if name is None and isinstance(fun, functools.partial):
        return fun_name(fun.func)
    return name or type(fun).__name__


def fun_source(fun: Callable) -> str:
    f = inspect.unwrap(fun) if callable(fun) else fun
    if isinstance(f, functools.partial):
        f = f.func
    code = getattr(f, "__code__", None)
    if code is None:
        return "<unknown>"
    return f"{code.co_filename}:{code.co_firstlineno}"


def partial_at(fun: Callable, args: Sequence[Any], positions: Sequence[int],
               kwargs: dict | None = None) -> Callable:
    """``fun`` as a function of ``args[i] for i in positions`` only: the other positional
    arguments (and ``kwargs``) stay fixed. Transformations use it to differentiate, batch or
    stage with respect to some arguments.

    Example:
        >>> partial_at(lambda a, b, c: a + b * c, (1, 2, 3), (1,))(10)
        31
    """
    fixed_kw = kwargs or {}

    def at(*dyn: Any, **kw: Any) -> Any:
        full = list(args)
        for i, x in zip(positions, dyn):
            full[i] = x
        return fun(*full, **fixed_kw, **kw)

    return at


class StagingTracer(Tracer):
    """A value inside a function being staged: a Var (or Literal) of the Program being built."""

    __slots__ = ("atom", "creation_site")

    def __init__(self, interp: "StagingInterpreter", atom: Any, site: str | None = None) -> None:
        self._interp = interp
        self.atom = atom
        self.creation_site = site

    @property
    def aval(self) -> ShapedArray:
        return self.atom.aval


_PY_SCALARS = (bool, int, float, complex)

#: ``[fn]``: ``fn(sharding, ndim)`` is the type-level part of a stand-in's sharding (its spec on
#: the mesh's Explicit axes, JAX's "sharding in types") or None; installed by
#: ``lax.sharding_rules``, where the sharding types live.
STAND_IN_SHARDING_TYPE: list = [lambda sharding, ndim: None]


def abstractify(x: Any) -> ShapedArray:
    """The aval of a concrete value or tracer (canonical dtypes; Python scalars are weak)."""
    aval = getattr(x, "aval", None)
    if isinstance(aval, ShapedArray):
        return aval
    if type(x) in _PY_SCALARS:  # NumPy scalars subclass float/complex but are not weak
        return ShapedArray((), dtypes.python_scalar_dtype(x), type(x) is not bool)
    if isinstance(x, ShapeDtypeStruct):
        aval = ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype), x.weak_type)
        typed = None if x.sharding is None else STAND_IN_SHARDING_TYPE[0](x.sharding,
                                                                          len(x.shape))
        return aval if typed is None else aval.update(sharding=typed)
    if isinstance(x, (np.ndarray, np.generic)):
        return ShapedArray(np.shape(x), dtypes.canonicalize_dtype(x.dtype))
    jax_array = getattr(x, "__jax_array__", None)
    if jax_array is not None:
        return abstractify(jax_array())
    raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid array type: "
                    "expected an Array, a NumPy array or a Python scalar")


class StagingInterpreter(Interpreter):
    """Records the primitives bound by a function into a Program."""

    def __init__(self, description: str = "staging") -> None:
        self.description = description
        self.eqns: list[Equation] = []
        self.invars: list[Var] = []
        self.arg_names: dict[int, str] = {}
        self.constvars: list[Var] = []
        self.const_vals: list[Any] = []
        self._const_index: dict[int, Var] = {}
        # Equations record the named scopes entered since this trace began (as JAX, a staged
        # sub-program's name stacks are relative to the equation that calls it).
        self._name_base = len(_NAMES.names)
        # the name stack last seen and its rendering: the stack tuple is replaced, never changed,
        # so one rendering serves every equation staged under it (transformations push entries)
        self._names_seen: tuple | None = None
        self._stack_seen = ""

    def new_arg(self, aval: ShapedArray, name: str = "") -> StagingTracer:
        v = Var(aval)
        self.invars.append(v)
        self.arg_names[v.id] = name
        return StagingTracer(self, v, name)

    def _const(self, value: Any, aval: ShapedArray) -> Var:
        v = self._const_index.get(id(value))
        if v is None:
            v = self._const_index[id(value)] = Var(aval)
            self.constvars.append(v)
            self.const_vals.append(value)
        return v

    def atom(self, x: Any) -> Any:
        if type(x) is StagingTracer and x._interp is self:
            return x.atom
        if isinstance(x, Tracer):
            check_live(x, self)
            return self._const(x, x.aval)
        if type(x) in _PY_SCALARS:
            aval = abstractify(x)
            return Literal(np.asarray(x, aval.dtype), aval)
        if isinstance(x, (np.ndarray, np.generic)):
            aval = abstractify(x)
            if aval.shape == ():
                return Literal(np.asarray(x, aval.dtype), aval)
            return self._const(np.asarray(x, aval.dtype), aval)
        convert = getattr(x, "__jax_array__", None)
        if convert is not None:
            # An object standing for an array (an nnx.Variable) is read now: the program keeps
            # what it holds at this moment (perhaps this trace's own tracer), never the object.
            return self.atom(convert())
        return self._const(x, abstractify(x))

    def process_primitive(self, prim: Primitive, args: Sequence[Any], params: dict[str, Any]) -> Any:
        atoms = [self.atom(a) for a in args]
        fold = prim.fold
        if fold is not None and all(type(a) is Literal for a in atoms):
            folded = fold(*[a.val for a in atoms], **params)
            if folded is not None:
                return StagingTracer(self, folded)
        out = prim.abstract_eval(*[a.aval for a in atoms], **params)
        if _EXPLICIT[0]:  # sharding in types (explicit mesh axes): the primitive's rule
            in_avals = [a.aval for a in atoms]
            if any(a.sharding is not None for a in in_avals) or _CONTEXT_EXPLICIT[0]():
                out = _apply_sharding_rule(prim, in_avals, out, params)
        site = user_source_line()
        names = _NAMES.names
        if names is self._names_seen:
            stack = self._stack_seen
        else:
            stack = _render_names(names[self._name_base:]) if names else ""
            self._names_seen, self._stack_seen = names, stack
        if prim.multiple_results:
            outvars = [Var(a) for a in out]
            self.eqns.append(Equation(prim, atoms, outvars, params, site, stack))
            return [StagingTracer(self, v, site) for v in outvars]
        v = Var(out)
        self.eqns.append(Equation(prim, atoms, [v], params, site, stack))
        return StagingTracer(self, v, site)

    def to_concrete(self, tracer: Tracer) -> Any:
        atom = tracer.atom
        if type(atom) is Literal:
            return atom.val
        raise ConcretizationTypeError(self.concretization_message(tracer, "a concrete value"))

    def concretization_message(self, tracer: Tracer, what: str) -> str:
        deps = self._depends_on(tracer.atom)
        if deps:
            dep = ("This value depends on " + ", ".join(deps) + ", which "
                   + ("is" if len(deps) == 1 else "are") + " traced (abstract) here. ")
        else:
            dep = "This value is computed inside the traced function. "
        return (f"Abstract tracer value encountered where {what} is expected: {tracer.aval_str()}, "
                f"at {user_source_line()}, while tracing {self.description}. {dep}"
                "Ways out: pass that argument as static (jit's static_argnums / static_argnames), "
                "use structured control flow on traced values (lax.cond, lax.switch, "
                "lax.while_loop, lax.fori_loop), or jnp.where for elementwise choices.")

    def _depends_on(self, atom: Any) -> list[str]:
        if not isinstance(atom, Var):
            return []
        wanted = {atom.id}
        for eqn in reversed(self.eqns):
            if any(v.id in wanted for v in eqn.outputs):
                wanted.update(a.id for a in eqn.inputs if isinstance(a, Var))
        return [self.arg_names[v.id] or f"argument {i}" for i, v in enumerate(self.invars)
                if v.id in wanted]

    def build(self, out_atoms: list[Any]) -> Program:
        return Program(list(self.constvars), list(self.invars), out_atoms, list(self.eqns))


def _arg_names(fun: Callable, fname: str, args: tuple, kwargs: dict, in_tree: Any) -> list[str]:
    try:
        sig = inspect.signature(fun)
        bound = sig.bind_partial(*args, **kwargs)
        params = list(bound.arguments.keys())
    except (TypeError, ValueError):
        params = []
    paths = tree_util.tree_flatten_with_path((args, kwargs))[0]
    names = []
    for path, _ in paths:
        top, rest = path[0], path[1:]
        if getattr(top, "idx", None) == 0:  # positional
            i = path[1].idx
            base = params[i] if i < len(params) else f"args[{i}]"
            rest = path[2:]
        else:
            base = str(path[1].key)
            rest = path[2:]
        names.append(f"argument '{base}{tree_util.keystr(tuple(rest))}' of {fname}")
    return names


def trace_to_program(fun: Callable, args: tuple, kwargs: dict, *, description: str = "",
                     in_avals: Sequence[ShapedArray] | None = None) -> tuple[Program, list[Any], Any]:
    """Stage ``fun(*args, **kwargs)``. Array leaves of the arguments become the Program's inputs.

    Returns ``(program, const_values, out_tree)``; the program's outputs are the flattened
    leaves of the result.
    """
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    if in_avals is None:
        in_avals = [abstractify(x) for x in leaves]
    fname = fun_name(fun)
    names = _arg_names(fun, fname, args, kwargs, in_tree)
    interp = StagingInterpreter(description or f"{fname} (defined at {fun_source(fun)})")
    # Traced inside a check_vma shard_map body (a jit there): the values keep the mesh axes they
    # vary over, so grad inside sums what JAX's implicit pvary transposes to.
    outer = _vma.active_body()
    with interpreter_scope(interp):
        tracers = [interp.new_arg(a, n) for a, n in zip(in_avals, names)]
        t_args, t_kwargs = tree_util.tree_unflatten(in_tree, tracers)
        if outer is not None:
            _vma.push(_vma.BodyVma(interp, interp.invars,
                                   [_vma.value_vma(outer, x) for x in leaves], outer.manual,
                                   parent=outer))
        try:
            out = fun(*t_args, **t_kwargs)
        finally:
            if outer is not None:
                _vma.pop()
        out_leaves, out_tree = tree_util.tree_flatten(out)
        out_atoms = []
        for path_leaf in zip(range(len(out_leaves)), out_leaves):
            i, leaf = path_leaf
            try:
                out_atoms.append(interp.atom(leaf))
            except TypeError:
                path = tree_util.keystr(tree_util.tree_flatten_with_path(out)[0][i][0])
                raise TypeError(
                    f"{fname} returned a value of type {type(leaf).__name__} at output{path}, which "
                    "is not a valid array type (expected arrays, NumPy arrays or Python scalars)"
                ) from None
    return interp.build(out_atoms), list(interp.const_vals), out_tree


class ClosedProgram:
    """A Program together with the values of its constvars (what ``make_jaxpr`` returns)."""

    def __init__(self, program: Program, consts: Sequence[Any]) -> None:
        self.program = program
        self.consts = list(consts)

    @property
    def jaxpr(self) -> Program:
        return self.program

    @property
    def eqns(self) -> list[Equation]:
        return self.program.eqns

    @property
    def in_avals(self) -> list[ShapedArray]:
        return self.program.in_avals

    @property
    def out_avals(self) -> list[ShapedArray]:
        return self.program.out_avals

    @property
    def effects(self) -> set:
        """JAX's effect set of the program (``Program.effects``)."""
        return self.program.effects

    def __str__(self) -> str:
        return str(self.program)

    __repr__ = __str__

    def pretty_print(self) -> str:
        return str(self.program)


def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (),
               axis_env: Sequence[tuple[Any, int]] | None = None,
               return_shape: bool = False) -> Callable[..., Any]:
    """A function that stages ``fun`` on example arguments and returns the staged program.

    ``axis_env`` (JAX's ``[(axis_name, size), ...]`` binding named axes for collectives while
    tracing) is accepted empty or ``None`` (haiku passes it always); named axes there are not
    supported: trace under ``vmap(..., axis_name=)`` or ``shard_map`` instead.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> print(fluxion.make_jaxpr(lambda x: x + 1)(jnp.zeros(2)))
        { lambda ; a:f32[2]. let b:f32[2] = add a 1.0:f32[] in (b,) }
    """
    if axis_env:
        raise NotImplementedError(
            f"make_jaxpr: axis_env={list(axis_env)!r} is not supported by Fluxion; trace the "
            f"function under fluxion.vmap(..., axis_name=) or shard_map to bind axis names "
            f"(see docs/guide/coming-from-jax.md)")
    statics = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @api_boundary
    @functools.wraps(fun)
    def staged(*args: Any, **kwargs: Any) -> Any:
        if statics:
            fixed = {i: args[i] for i in statics}
            dyn = tuple(a for i, a in enumerate(args) if i not in fixed)

            def f(*dyn_args: Any, **kw: Any) -> Any:
                it = iter(dyn_args)
                full = [fixed[i] if i in fixed else next(it) for i in range(len(args))]
                return fun(*full, **kw)
            functools.update_wrapper(f, fun)
        else:
            f, dyn = fun, args
        program, consts, out_tree = trace_to_program(f, dyn, kwargs)
        closed = ClosedProgram(program, consts)
        if return_shape:
            shapes = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                      for a in program.out_avals]
            return closed, tree_util.tree_unflatten(out_tree, shapes)
        return closed

    return staged


@api_boundary
def eval_shape(fun: Callable, *args: Any, **kwargs: Any) -> Any:
    """The shapes and dtypes of ``fun(*args, **kwargs)`` without running it.

    Arguments may be arrays, :class:`ShapeDtypeStruct` s, abstract values (``ShapedArray``) or
    any object with ``shape`` and ``dtype`` attributes, as JAX's ``eval_shape`` accepts; a
    mutable array reference may be read and written by ``fun`` and keeps its value.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> fluxion.eval_shape(lambda x: x.sum(0), fluxion.ShapeDtypeStruct((3, 4), jnp.float32))
        ShapeDtypeStruct(shape=(4,), dtype=float32)
    """
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    if any(type(x) in HITYPES for x in leaves):  # boxes of hi-types: traced holding tracers
        run, dyn, states = with_boxes(fun, leaves, in_tree)
        return eval_shape(run, dyn, states)
    if any(type(x) is Ref for x in leaves):
        return eval_shape(_with_traced_refs(fun, leaves, in_tree),
                          *[x._value if type(x) is Ref else x for x in leaves])
    avals = [_shape_abstractify(x) for x in leaves]
    program, _, out_tree = trace_to_program(fun, args, kwargs, in_avals=avals)
    outs = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type,
                             sharding=_typed_sharding(a.sharding))
            for a in program.out_avals]
    return tree_util.tree_unflatten(out_tree, outs)


def _with_traced_refs(fun: Callable, leaves: list, in_tree: Any) -> Callable:
    """``fun`` of the flat leaves, where each mutable reference among ``leaves`` is passed as
    itself holding its leaf's tracer for the trace (so the function may read and write it, as
    under JAX's ``eval_shape``) and gets its own value back afterwards."""
    refs = [(i, x) for i, x in enumerate(leaves) if type(x) is Ref]

    def run(*flat: Any) -> Any:
        flat = list(flat)
        saved = [(r._value, r._level) for _, r in refs]
        try:
            for i, r in refs:
                r._value, r._level = flat[i], flat[i]._interp.level
                flat[i] = r
            args, kwargs = tree_util.tree_unflatten(in_tree, flat)
            return fun(*args, **kwargs)
        finally:
            for (_, r), (value, level) in zip(refs, saved):
                r._value, r._level = value, level
    return run


def _typed_sharding(sharding: Any) -> Any:
    """The sharding ``eval_shape`` reports for a result whose type has ``sharding``: on a mesh
    whose axes are all Explicit (or Manual) the type's spec over the mesh's abstract mesh, as
    JAX's ``Traced.out_info``; None otherwise (Auto axes leave it to the compiler)."""
    mesh = getattr(sharding, "mesh", None)
    types = getattr(mesh, "axis_types", None)
    if not types or not all(t.name in ("Explicit", "Manual") for t in types):
        return None
    abstract = getattr(mesh, "abstract_mesh", mesh)
    return type(sharding)(abstract, sharding.spec)


def _shape_abstractify(x: Any) -> ShapedArray:
    """:func:`abstractify`, also accepting what JAX's ``eval_shape`` accepts beyond values: an
    abstract value, or any object with ``shape`` and ``dtype`` (canonical dtype, its weak type)."""
    if isinstance(x, ShapedArray):
        return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype), x.weak_type)
    try:
        return abstractify(x)
    except TypeError:
        shape, dt = getattr(x, "shape", None), getattr(x, "dtype", None)
        if shape is None or dt is None:
            raise
        return ShapedArray(tuple(shape), dtypes.canonicalize_dtype(dt),
                           bool(getattr(x, "weak_type", False)))


# ------------------------------------------------------------------ transformed programs

def close_program(program: Program) -> Program:
    """``program`` with its constvars turned into leading invars: a closed Program, as the call
    and control-flow primitives hold (their operands start with the constants' values)."""
    if not program.constvars:
        return program
    # one closed Program per program, so that the transformations memoised on it (below) are
    # found again when a jitted function with constants is called again under grad
    closed = _CLOSED.get(program)
    if closed is None:
        closed = Program([], list(program.constvars) + list(program.invars), program.outvars,
                         program.eqns)
        _CLOSED[program] = closed
    return closed


_CLOSED: "weakref.WeakKeyDictionary[Program, Program]" = weakref.WeakKeyDictionary()


# The transformations of a staged Program (its JVP, partial evaluation, transpose and batched
# version) are memoised on the Program object, weakly (an entry goes away with its program), so
# the body of a jit, a loop or a checkpoint is transformed once however often it runs.
_TRANSFORMED: "weakref.WeakKeyDictionary[Program, dict]" = weakref.WeakKeyDictionary()


def mask_flags(mask: bool | Sequence[bool], n: int) -> tuple[bool, ...]:
    """One flag per output (of ``n``) from one flag for all of them or a sequence of flags."""
    return (bool(mask),) * n if isinstance(mask, bool) else tuple(bool(m) for m in mask)


def cached_transform(program: Program, key: tuple, make: Callable[[], tuple]) -> tuple:
    """``make()``, memoised per ``program`` and ``key`` and the current trace context.

    ``key`` names the transformation and everything its result depends on besides the program.
    ``make`` returns a tuple whose second item is the list of constants the transformed program
    takes: a result holding a tracer there (a value of an enclosing transformation that a rule
    captured) belongs to that transformation and is not kept.
    """
    table = _TRANSFORMED.get(program)
    if table is None:
        table = _TRANSFORMED.setdefault(program, {})
    full_key = (config.trace_context, *key)
    hit = table.get(full_key)
    if hit is None:
        hit = make()
        if not any(isinstance(c, Tracer) for c in hit[1]):
            table[full_key] = hit
    return hit

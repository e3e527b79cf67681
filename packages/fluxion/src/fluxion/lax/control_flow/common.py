"""What the control-flow primitives share: staging a user function into a closed body Program
(cached when eager), checks with messages that name pytree paths, and small operand helpers.

Every branch or body is a Python function staged *once* to a :class:`~fluxion.core.ir.Program`
with :func:`~fluxion.transforms.staging.trace_to_program`. Values it closes over become the
program's constvars; they are passed to the primitive as extra leading operands, so every program
held in a primitive's params is closed (no constvars).

Example:
    >>> program, consts, out_tree = stage(lambda x: x * 2.0, (1.0,), avals_of([1.0]))
    >>> [a.str_short() for a in program.in_avals], consts
    (['f32[]'], [])
"""

from __future__ import annotations

import contextlib
import dis
import functools
import inspect
import types
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.config import config
from fluxion.core.errors import ConcretizationTypeError
from fluxion.core.ir import Program, Var
from fluxion.core.trace import EVAL, STATE, Tracer
from fluxion.lax._base import type_error
from fluxion.lax.control_flow.refs import framed
from fluxion.lax.conversions import convert_element_type
from fluxion.transforms.array_ops import moveaxis
from fluxion.transforms.staging import (
    abstractify,
    close_program,
    fun_name,
    fun_source,
    trace_to_program,
)
from fluxion.tree_util import physical as tree_util

__all__ = ["stage", "typematch", "avals_of", "is_concrete", "concrete_value",
           "promote_weak_carry", "check_same_outputs", "check_carry", "check_program_inputs",
           "split", "merge_consts", "permute_program", "batch_to_front", "loop_consts",
           "with_consts"]


# ------------------------------------------------------------------------------- staging bodies

# Eager (outermost) staging is cached per function object, as JAX caches its traced bodies, so
# calling ``lax.fori_loop(0, n, body, x)`` again with the same ``body`` neither re-traces nor
# re-lowers: the same Program object comes back and the eager executable cache hits. Unlike a
# plain identity cache, an entry also checks a *guard*: the code, closure cells and referenced
# globals of the function (and of the functions among those, two levels deep). Rebinding a
# global or closure variable the body reads therefore re-stages instead of using stale values.
# Variables the function itself assigns (``nonlocal n; n += 1``, ``global``) are its own state,
# not inputs: they are left out of the guard, so a body that counts its traces is traced once,
# as in JAX. A callable object (a plain class instance with a Python ``__call__``, such as the
# bodies flax's nnx.scan passes) is cached like a function: its guard is its class's
# ``__call__`` and its attributes' values, except those ``__call__`` assigns itself.
# The key holds the trace context (x64, promotion modes, ...): a flag that changes what tracing
# produces re-stages. A function's table lives on the function object itself (attribute
# ``_STAGED_ATTR``), so it goes away with the function (a global weak-keyed table would keep
# functions alive through the guards, which hold their closures); a callable object's table is
# in ``_OBJECT_TABLES``, weakly keyed by the object (its guard holds its attributes, not itself;
# kept off the object so that copying or pickling it never meets staged programs).
_STAGED_ATTR = "_fluxion_staged_programs"
_OBJECT_TABLES: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()
_STAGED_PER_FUN = 8
_MISSING = object()
_ASSIGNS = frozenset({"STORE_DEREF", "DELETE_DEREF", "STORE_GLOBAL", "DELETE_GLOBAL"})
_ATTR_ASSIGNS = frozenset({"STORE_ATTR", "DELETE_ATTR"})


@functools.lru_cache(maxsize=1024)
def _assigned(code: types.CodeType, ops: frozenset = _ASSIGNS) -> frozenset:
    """The names that ``code`` assigns or deletes with the instructions ``ops`` (closure
    variables and globals by default; attributes with ``_ATTR_ASSIGNS``)."""
    return frozenset(i.argval for i in dis.get_instructions(code) if i.opname in ops)


def _inherited_call(cls: type) -> Any:
    """The ``__call__`` that instances of ``cls`` run (looked up on the class and its bases)."""
    for klass in cls.__mro__:
        if "__call__" in vars(klass):
            return vars(klass)["__call__"]
    return None


def _guard(fun: Any, depth: int = 2) -> tuple | None:
    """The objects a function's (or callable object's) behaviour visibly depends on (None: not
    cacheable)."""
    if type(fun) is types.FunctionType:
        code = fun.__code__
        own = _assigned(code)
        try:  # an empty cell (a variable assigned later) raises ValueError
            cells = [c.cell_contents for name, c in zip(code.co_freevars, fun.__closure__ or ())
                     if name not in own]
        except ValueError:
            return None
        g = fun.__globals__
        out: list = [code, fun.__defaults__, fun.__kwdefaults__]
        values = cells + [g.get(name, _MISSING) for name in code.co_names if name not in own]
    elif (depth and type(_inherited_call(type(fun))) is types.FunctionType
          and type(getattr(fun, "__dict__", None)) is dict):
        call = _inherited_call(type(fun))
        own = _assigned(call.__code__, _ATTR_ASSIGNS)
        out = [type(fun)]
        values = [call] + [v for k, v in fun.__dict__.items() if k not in own]
    else:
        return None
    for v in values:
        out.append(v)
        if depth and type(v) is types.FunctionType:
            sub = _guard(v, depth - 1)
            if sub is None:
                return None
            out.extend(sub)
    return tuple(out)


def _table(fun: Any, create: bool = False) -> dict | None:
    """The staged programs cached for ``fun`` (a function or a callable object)."""
    if type(fun) is types.FunctionType:
        return fun.__dict__.setdefault(_STAGED_ATTR, {}) if create else fun.__dict__.get(
            _STAGED_ATTR)
    try:
        return _OBJECT_TABLES.setdefault(fun, {}) if create else _OBJECT_TABLES.get(fun)
    except TypeError:  # not weakly referenceable, or not hashable
        return None


def _same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def stage(fun: Callable, args: tuple, avals: Sequence[ShapedArray]) -> tuple[Program, list, Any]:
    """Stage ``fun(*args)`` with leaf avals ``avals``: ``(closed program, consts, out_tree)``.

    The program's invars are the consts followed by the flattened arguments. Outside every
    transformation the result is cached per function (see ``_STAGED_ATTR`` above).
    """
    table = guard = key = None
    if STATE.interp is EVAL:
        guard = _guard(fun)
        if guard is not None:
            key = (tree_util.tree_structure(args), tuple(avals), config.trace_context)
            table = _table(fun)
            if table is not None:
                hit = table.get(key)
                if hit is not None and _same(hit[0], guard):
                    return hit[1]
    # Traced inside a ref frame: a body reaching a mutable reference by closure raises
    # ClosedRefs, and the op runs again with the reference threaded through it (refs.py).
    program, consts, out_tree = trace_to_program(framed(fun), args, {}, in_avals=list(avals))
    result = close_program(program), consts, out_tree
    if key is not None and not any(isinstance(c, Tracer) for c in consts):
        if table is None:
            table = _table(fun, create=True)
            if table is None:  # an object that cannot be weakly referenced or hashed
                return result
        if len(table) >= _STAGED_PER_FUN:
            # Another thread may evict the same entry at once: losing that race is harmless.
            with contextlib.suppress(KeyError, RuntimeError, StopIteration):
                del table[next(iter(table))]
        table[key] = (guard, result)
    return result


# ------------------------------------------------------------------------------- values and types

def typematch(a: ShapedArray, b: ShapedArray) -> bool:
    """Same shape and dtype (weak types are ignored, as in JAX)."""
    return a.shape == b.shape and a.dtype == b.dtype


def avals_of(leaves: Sequence[Any]) -> list[ShapedArray]:
    """The avals of operand leaves (raising a TypeError naming a non-array leaf)."""
    return [abstractify(x) for x in leaves]


def is_concrete(x: Any) -> bool:
    """True when ``x`` has a concrete value (not a tracer, or a tracer with a known value)."""
    if not isinstance(x, Tracer):
        return True
    try:
        x._interp.to_concrete(x)
    except (ConcretizationTypeError, NotImplementedError):
        return False
    return True


def concrete_value(x: Any) -> Any:
    """The concrete value of ``x`` (raising ConcretizationTypeError for an abstract tracer)."""
    if not isinstance(x, Tracer):
        return x
    return x._interp.to_concrete(x)


def promote_weak_carry(init_leaves: list, in_avals: list[ShapedArray],
                       out_avals: Sequence[ShapedArray]) -> tuple[list, list[ShapedArray], bool]:
    """Weakly typed initial carries (Python scalars) take the dtype their body produces."""
    changed = False
    new_leaves, new_avals = list(init_leaves), list(in_avals)
    for i, (x, a, b) in enumerate(zip(init_leaves, in_avals, out_avals)):
        if a.weak_type and not typematch(a, b) and a.shape == b.shape:
            dt = dtypes.result_type(x, np.dtype(b.dtype) if not b.weak_type else b.dtype)
            if b.weak_type:
                dt = b.dtype
            new_leaves[i] = convert_element_type(x, dt)
            new_avals[i] = ShapedArray(a.shape, dt, False)
            changed = True
    return new_leaves, new_avals, changed


# ------------------------------------------------------------------------------- messages

def _fun_info(fun: Callable) -> str:
    """``name at file:line`` of a user function, for messages."""
    return f"{fun_name(fun)} at {fun_source(fun)}"


def _first_param_name(fun: Callable) -> str | None:
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        return None
    return params[0] if params else None


def _describe(x: Any) -> str:
    if tree_util.treedef_is_leaf(tree_util.tree_structure(x)):
        return "a pytree leaf" if x is not None else "None"
    if isinstance(x, dict):
        return f"a dict with keys {sorted(x.keys(), key=str)}"
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of length {len(x)}"
    return f"a {type(x).__name__}"


def _structure_diffs(a: Any, b: Any, path: tuple = ()) -> list[tuple[tuple, str, str]]:
    """Where two pytrees differ in structure: ``[(path, description of a, description of b)]``."""
    if tree_util.tree_structure(a) == tree_util.tree_structure(b):
        return []
    a_leaf = tree_util.treedef_is_leaf(tree_util.tree_structure(a))
    b_leaf = tree_util.treedef_is_leaf(tree_util.tree_structure(b))
    if a_leaf or b_leaf or type(a) is not type(b):
        return [(path, _describe(a), _describe(b))]
    ka, ca = _children_with_keys(a)
    kb, cb = _children_with_keys(b)
    if [str(k) for k in ka] != [str(k) for k in kb]:
        return [(path, _describe(a), _describe(b))]
    out = []
    for k, x, y in zip(ka, ca, cb):
        out.extend(_structure_diffs(x, y, path + (k,)))
    return out or [(path, _describe(a), _describe(b))]


def _children_with_keys(x: Any) -> tuple[list, list]:
    pairs, _ = tree_util.flatten_one_level_with_keys(x)
    pairs = list(pairs)
    return [k for k, _ in pairs], [c for _, c in pairs]


def _path_str(path: tuple) -> str:
    return tree_util.keystr(tuple(path))


def check_same_outputs(api: str, name1: str, name2: str, f1: Callable, f2: Callable,
                       tree1: Any, avals1: Sequence[ShapedArray], tree2: Any,
                       avals2: Sequence[ShapedArray]) -> None:
    """TypeError when two branches' outputs differ in structure, shape or dtype, by path."""
    head = f"{name1} is {_fun_info(f1)}\n{name2} is {_fun_info(f2)}\n\n"
    if tree1 != tree2:
        s1 = tree_util.tree_unflatten(tree1, [0] * tree1.num_leaves)
        s2 = tree_util.tree_unflatten(tree2, [0] * tree2.num_leaves)
        diffs = [f"{name1} output{_at_path(p)} is {d1} but {name2} output{_at_path(p)} is {d2}"
                 for p, d1, d2 in _structure_diffs(s1, s2)]
        raise TypeError(f"{api} branch outputs must have the same pytree structure, but they "
                        f"differ:\n\n{head}" + _bullets(diffs) +
                        f"\nRevise {name1} and/or {name2} so that they return the same structure.")
    bad = []
    paths = [p for p, _ in tree_util.tree_flatten_with_path(
        tree_util.tree_unflatten(tree1, [0] * tree1.num_leaves))[0]]
    for p, a1, a2 in zip(paths, avals1, avals2):
        if not typematch(a1, a2):
            bad.append(f"the output of {name1}{_at_path(p)} has type {a1.str_short()} but the "
                       f"corresponding output of {name2} has type {a2.str_short()}"
                       f"{_mismatch_extra(a1, a2)}")
    if bad:
        bad[0] = bad[0][0].upper() + bad[0][1:]
        raise TypeError(f"{api} branches must have equal output types but they differ.\n\n{head}"
                        + _bullets(bad) +
                        f"\nRevise {name1} and/or {name2} so that all output types match.")


def _at_path(p: tuple) -> str:
    return f" at path {_path_str(p)}" if p else ""


def _bullets(items: list[str]) -> str:
    if len(items) == 1:
        return items[0] + ".\n"
    return "".join(f"  * {d};\n" for d in items[:-1]) + f"  * {items[-1]}.\n"


def _mismatch_extra(a: ShapedArray, b: ShapedArray) -> str:
    if a.shape != b.shape and a.dtype != b.dtype:
        return ", so the shapes and dtypes do not match"
    if a.shape != b.shape:
        return ", so the shapes do not match"
    return ", so the dtypes do not match"


def check_carry(api: str, fun: Callable, in_tree: Any, in_avals: Sequence[ShapedArray],
                out_tree: Any, out_avals: Sequence[ShapedArray]) -> None:
    """TypeError when a loop body's carry output differs from its input, naming each leaf path."""
    name = _first_param_name(fun)

    def component(p: tuple) -> str:
        if name:
            return f"the input carry component {name}{_path_str(p)}" if p else f"the input carry {name}"
        return f"the input carry at path {_path_str(p)}" if p else "the input carry"

    if in_tree != out_tree:
        s1 = tree_util.tree_unflatten(in_tree, [0] * in_tree.num_leaves)
        s2 = tree_util.tree_unflatten(out_tree, [0] * out_tree.num_leaves)
        diffs = [f"{component(p)} is {d1} but the corresponding component of the carry output "
                 f"is {d2}" for p, d1, d2 in _structure_diffs(s1, s2)]
        diffs[0] = diffs[0][0].upper() + diffs[0][1:]
        raise TypeError(f"{api} function carry input and carry output must have the same pytree "
                        "structure, but they differ:\n\n" + _bullets(diffs) +
                        "\nRevise the function so that the carry output has the same pytree "
                        f"structure as the carry input ({_fun_info(fun)}).")
    paths = [p for p, _ in tree_util.tree_flatten_with_path(
        tree_util.tree_unflatten(in_tree, [0] * in_tree.num_leaves))[0]]
    bad = [f"{component(p)} has type {a.str_short()} but the corresponding output carry "
           f"component has type {b.str_short()}{_mismatch_extra(a, b)}"
           for p, a, b in zip(paths, in_avals, out_avals) if not typematch(a, b)]
    if bad:
        bad[0] = bad[0][0].upper() + bad[0][1:]
        raise TypeError(f"{api} function carry input and carry output must have equal types, but "
                        "they differ:\n\n" + _bullets(bad) +
                        "\nRevise the function so that all output types match the corresponding "
                        f"input types ({_fun_info(fun)}).")


def check_program_inputs(name: str, program: Program, avals: Sequence[ShapedArray],
                         what: str) -> None:
    """TypeError (abstract evaluation) when a body is bound on operands of other types."""
    want = program.in_avals
    if len(avals) != len(want) or not all(typematch(a, b) for a, b in zip(avals, want)):
        raise type_error(name, f"{what} takes {[a.str_short() for a in want]} but is given "
                         f"{[a.str_short() for a in avals]}")


# ------------------------------------------------------------------------------- operands and bodies

def split(seq: Sequence[Any], sizes: Sequence[int]) -> list[list[Any]]:
    """``seq`` cut into consecutive groups of ``sizes``, then the rest (one more group)."""
    out, i = [], 0
    for n in sizes:
        out.append(list(seq[i:i + n]))
        i += n
    out.append(list(seq[i:]))
    return out


def merge_consts(programs: Sequence[Program], consts_list: Sequence[list]) -> tuple[list[Program], list]:
    """Give every program the same leading const inputs (the union of all their consts)."""
    merged: list = []
    index: dict[int, int] = {}
    positions = []
    for consts in consts_list:
        pos = []
        for c in consts:
            j = index.get(id(c))
            if j is None:
                j = index[id(c)] = len(merged)
                merged.append(c)
            pos.append(j)
        positions.append(pos)
    out = []
    for program, consts, pos in zip(programs, consts_list, positions):
        nc = len(consts)
        own = dict(zip(pos, program.invars[:nc]))
        cvars = [own[j] if j in own else Var(abstractify(merged[j])) for j in range(len(merged))]
        if nc == len(merged) and pos == list(range(nc)):
            out.append(program)
        else:
            out.append(Program([], cvars + list(program.invars[nc:]), program.outvars,
                               program.eqns))
    return out, merged


def permute_program(program: Program, in_order: Sequence[int] | None = None,
                    out_order: Sequence[int] | None = None) -> Program:
    """``program`` with its inputs and outputs reordered (``order[i]``: the old position of the
    new ``i``-th one; ``None`` keeps them)."""
    invars = program.invars if in_order is None else [program.invars[i] for i in in_order]
    outvars = program.outvars if out_order is None else [program.outvars[i] for i in out_order]
    return Program([], list(invars), list(outvars), program.eqns)


def batch_to_front(x: Any, d: int | None) -> Any:
    """``x`` with its batch dimension ``d`` first (unmapped values stay as they are)."""
    return x if d is None else moveaxis(x, d, 0)


# ------------------------------------------------------------------------------- loop lowerings

# A constant loop operand of at most this many bytes (or a splat) is written into the body again;
# a larger one is carried, as JAX carries its non-scalar constants (one copy in the module).
_INLINE_CONST_BYTES = 256


def _small_constant(ctx: Any, name: str) -> tuple | None:
    k = ctx.known_constant(name)
    return k if k is not None and (k[0].size == 1 or k[0].nbytes <= _INLINE_CONST_BYTES) else None


def loop_consts(ctx: Any, consts: Sequence[str]) -> tuple[list, list[str], list[ShapedArray]]:
    """Split the const operands of a loop being lowered (``ctx`` its lowering rule's context):
    ``known[i]`` is ``(value, aval)`` for a small constant, which :func:`with_consts` writes into
    the loop's body again, None for one the loop carries; then the carried names and avals."""
    avals = ctx.avals_in
    known = [_small_constant(ctx, c) for c in consts]
    carried = [i for i, k in enumerate(known) if k is None]
    return known, [consts[i] for i in carried], [avals[i] for i in carried]


def with_consts(rctx: Any, known: list, carried: Sequence[str]) -> list[str]:
    """A loop body's const values (``rctx`` the body region's context): the ``carried`` ones in
    order, and the constants of ``known`` emitted in the body, as JAX keeps a literal inside its
    loop bodies (an operand would be passed through every iteration)."""
    it = iter(carried)
    return [next(it) if k is None else rctx.constant(*k) for k in known]

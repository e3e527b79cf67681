"""Structured control flow, part 1: branching (``cond``, ``switch``) and the helpers shared with
the loops (:mod:`fluxion.lax.loops`) and solves (:mod:`fluxion.lax.solves`).

Every branch or body is a Python function staged *once* to a :class:`~fluxion.core.ir.Program`
with :func:`~fluxion.transforms.staging.trace_to_program`. Values it closes over become the
program's constvars; they are passed to the primitive as extra leading operands, so every program
held in a primitive's params is closed (no constvars). ``make_jaxpr`` prints those programs nested
inside the equation, and the lowering emits them inline in the regions of ``stablehlo.case`` /
``stablehlo.while``.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.cond(True, lambda x: x + 1.0, lambda x: x - 1.0, jnp.float32(2.0)).tolist()
    3.0
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Callable, Sequence

import numpy as np

from fluxion import tree_util
from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.config import config
from fluxion.core.errors import ConcretizationTypeError
from fluxion.core.ir import Program, Var
from fluxion.core.primitive import Primitive
from fluxion.core.trace import EVAL, STATE, Tracer
from fluxion.lax._base import type_error
from fluxion.transforms.staging import abstractify, fun_name, fun_source, trace_to_program

__all__ = ["cond", "switch", "cond_p"]


# =============================================================================== shared helpers

def close_program(program: Program) -> Program:
    """``program`` with its constvars turned into leading invars (a closed program)."""
    if not program.constvars:
        return program
    return Program([], list(program.constvars) + list(program.invars), program.outvars,
                   program.eqns)


# Eager (outermost) staging is cached per function object, as JAX caches its traced bodies, so
# calling ``lax.fori_loop(0, n, body, x)`` again with the same ``body`` neither re-traces nor
# re-lowers: the same Program object comes back and the eager executable cache hits. Unlike a
# plain identity cache, an entry also checks a *guard*: the code, closure cells and referenced
# globals of the function (and of the functions among those, two levels deep). Rebinding a
# global or closure variable the body reads therefore re-stages instead of using stale values.
# The table lives on the function object itself (attribute ``_STAGED_ATTR``), so it goes away
# with the function (a global weak-keyed table would keep functions alive through the guards).
_STAGED_ATTR = "_fluxion_staged_programs"
_STAGED_PER_FUN = 8
_config_generation = [0]
_MISSING = object()


def _bump_generation(name: str, value: Any) -> None:
    _config_generation[0] += 1


config.on_change(_bump_generation)


def _guard(fun: Any, depth: int = 2) -> tuple | None:
    """The objects a plain Python function's behaviour visibly depends on (None: not cacheable)."""
    if type(fun) is not types.FunctionType:
        return None
    try:  # an empty cell (a variable assigned later) raises ValueError
        cells = [c.cell_contents for c in fun.__closure__ or ()]
    except ValueError:
        return None
    g = fun.__globals__
    out: list = [fun.__code__, fun.__defaults__, fun.__kwdefaults__]
    for v in cells + [g.get(name, _MISSING) for name in fun.__code__.co_names]:
        out.append(v)
        if depth and type(v) is types.FunctionType:
            sub = _guard(v, depth - 1)
            if sub is None:
                return None
            out.extend(sub)
    return tuple(out)


def _same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def stage(fun: Callable, args: tuple, avals: Sequence[ShapedArray]) -> tuple[Program, list, Any]:
    """Stage ``fun(*args)`` with leaf avals ``avals``: ``(closed program, consts, out_tree)``.

    The program's invars are the consts followed by the flattened arguments. Outside every
    transformation the result is cached per function (see ``_STAGED_ATTR`` above).
    """
    table = guard = key = None
    if STATE.interp is EVAL and type(fun) is types.FunctionType:
        guard = _guard(fun)
        if guard is not None:
            key = (tree_util.tree_structure(args), tuple(avals), _config_generation[0])
            table = fun.__dict__.get(_STAGED_ATTR)
            if table is not None:
                hit = table.get(key)
                if hit is not None and _same(hit[0], guard):
                    return hit[1]
    program, consts, out_tree = trace_to_program(fun, args, {}, in_avals=list(avals))
    result = close_program(program), consts, out_tree
    if key is not None and not any(isinstance(c, Tracer) for c in consts):
        if table is None:
            table = {}
            setattr(fun, _STAGED_ATTR, table)
        if len(table) >= _STAGED_PER_FUN:
            del table[next(iter(table))]
        table[key] = (guard, result)
    return result


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
    if not isinstance(x, Tracer):
        return x
    return x._interp.to_concrete(x)


def fun_info(fun: Callable) -> str:
    """``name at file:line`` of a user function, for messages."""
    return f"{fun_name(fun)} at {fun_source(fun)}"


def first_param_name(fun: Callable) -> str | None:
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


def structure_diffs(a: Any, b: Any, path: tuple = ()) -> list[tuple[tuple, str, str]]:
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
        out.extend(structure_diffs(x, y, path + (k,)))
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
    head = f"{name1} is {fun_info(f1)}\n{name2} is {fun_info(f2)}\n\n"
    if tree1 != tree2:
        s1 = tree_util.tree_unflatten(tree1, [0] * tree1.num_leaves)
        s2 = tree_util.tree_unflatten(tree2, [0] * tree2.num_leaves)
        diffs = [f"{name1} output{_at_path(p)} is {d1} but {name2} output{_at_path(p)} is {d2}"
                 for p, d1, d2 in structure_diffs(s1, s2)]
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
                       f"{mismatch_extra(a1, a2)}")
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


def mismatch_extra(a: ShapedArray, b: ShapedArray) -> str:
    if a.shape != b.shape and a.dtype != b.dtype:
        return ", so the shapes and dtypes do not match"
    if a.shape != b.shape:
        return ", so the shapes do not match"
    return ", so the dtypes do not match"


def check_carry(api: str, fun: Callable, in_tree: Any, in_avals: Sequence[ShapedArray],
                out_tree: Any, out_avals: Sequence[ShapedArray]) -> None:
    """TypeError when a loop body's carry output differs from its input, naming each leaf path."""
    name = first_param_name(fun)

    def component(p: tuple) -> str:
        if name:
            return f"the input carry component {name}{_path_str(p)}" if p else f"the input carry {name}"
        return f"the input carry at path {_path_str(p)}" if p else "the input carry"

    if in_tree != out_tree:
        s1 = tree_util.tree_unflatten(in_tree, [0] * in_tree.num_leaves)
        s2 = tree_util.tree_unflatten(out_tree, [0] * out_tree.num_leaves)
        diffs = [f"{component(p)} is {d1} but the corresponding component of the carry output "
                 f"is {d2}" for p, d1, d2 in structure_diffs(s1, s2)]
        diffs[0] = diffs[0][0].upper() + diffs[0][1:]
        raise TypeError(f"{api} function carry input and carry output must have the same pytree "
                        "structure, but they differ:\n\n" + _bullets(diffs) +
                        "\nRevise the function so that the carry output has the same pytree "
                        f"structure as the carry input ({fun_info(fun)}).")
    paths = [p for p, _ in tree_util.tree_flatten_with_path(
        tree_util.tree_unflatten(in_tree, [0] * in_tree.num_leaves))[0]]
    bad = [f"{component(p)} has type {a.str_short()} but the corresponding output carry "
           f"component has type {b.str_short()}{mismatch_extra(a, b)}"
           for p, a, b in zip(paths, in_avals, out_avals) if not typematch(a, b)]
    if bad:
        bad[0] = bad[0][0].upper() + bad[0][1:]
        raise TypeError(f"{api} function carry input and carry output must have equal types, but "
                        "they differ:\n\n" + _bullets(bad) +
                        "\nRevise the function so that all output types match the corresponding "
                        f"input types ({fun_info(fun)}).")


def promote_weak_carry(init_leaves: list, in_avals: list[ShapedArray],
                       out_avals: Sequence[ShapedArray]) -> tuple[list, list[ShapedArray], bool]:
    """Weakly typed initial carries (Python scalars) take the dtype their body produces."""
    from fluxion.lax.elementwise import convert_element_type  # noqa: PLC0415
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


def split(seq: Sequence[Any], sizes: Sequence[int]) -> list[list[Any]]:
    out, i = [], 0
    for n in sizes:
        out.append(list(seq[i:i + n]))
        i += n
    out.append(list(seq[i:]))
    return out


def check_program_inputs(name: str, program: Program, avals: Sequence[ShapedArray],
                         what: str) -> None:
    want = program.in_avals
    if len(avals) != len(want) or not all(typematch(a, b) for a, b in zip(avals, want)):
        raise type_error(name, f"{what} takes {[a.str_short() for a in want]} but is given "
                         f"{[a.str_short() for a in avals]}")


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


# =============================================================================== cond / switch

cond_p = Primitive("cond", multiple_results=True)


def _cond_abstract_eval(index: ShapedArray, *ops: ShapedArray,
                        branches: tuple[Program, ...]) -> list[ShapedArray]:
    if index.shape != () or index.dtype != np.dtype(np.int32):
        raise type_error("lax.cond", f"the branch index must be an int32 scalar, got "
                         f"{index.str_short()}")
    for i, b in enumerate(branches):
        check_program_inputs("lax.cond", b, ops, f"branch {i}")
    return list(branches[0].out_avals)


def _cond_lowering(ctx: Any, index: str, *ops: str, branches: tuple[Program, ...]) -> list[str]:
    out_avals = list(ctx.avals_out)
    regions = []
    for b in branches:
        def body(rctx: Any, _args: list[str], b: Program = b) -> list[str]:
            return rctx.lower_program_inline(b, list(ops))
        regions.append(ctx.region([], body, out_avals))
    res = ctx.op("stablehlo.case", [index], result_avals=out_avals, regions=regions,
                 operand_avals=[ctx.avals_in[0]])
    return [res] if len(out_avals) == 1 else list(res)


cond_p.abstract_eval = _cond_abstract_eval
cond_p.lowering = _cond_lowering


def _scalar_check(api: str, what: str, x: Any) -> np.dtype:
    if x is None:
        raise TypeError(f"{api}: the {what} is None")
    if isinstance(x, (list, tuple)):
        raise TypeError(f"{api}: the {what} must be a scalar, got a {type(x).__name__}")
    shape = np.shape(x) if not hasattr(x, "shape") else tuple(x.shape)
    if shape != ():
        raise TypeError(f"{api}: the {what} must be a scalar, got a value of shape {shape}")
    try:
        return dtypes.dtype(x, canonicalize=True)
    except TypeError as e:
        raise TypeError(f"{api}: the {what} must be a boolean or a number, got {x!r}") from e


def _bind_branches(api: str, index: Any, branches: Sequence[Callable], names: Sequence[str],
                   operands: tuple) -> Any:
    leaves, in_tree = tree_util.tree_flatten(operands)
    avals = avals_of(leaves)
    staged = [stage(b, operands, avals) for b in branches]
    programs = [s[0] for s in staged]
    trees = [s[2] for s in staged]
    ref = len(branches) - 1 if api == "cond" else 0  # cond reports true_fun first, like JAX
    for i in range(len(branches)):
        if i != ref:
            check_same_outputs(api, names[ref], names[i], branches[ref], branches[i], trees[ref],
                               programs[ref].out_avals, trees[i], programs[i].out_avals)
    programs, consts = merge_consts(programs, [s[1] for s in staged])
    out = cond_p.bind(index, *consts, *leaves, branches=tuple(programs))
    return tree_util.tree_unflatten(trees[0], out)


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any,
         operand: Any = None) -> Any:
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, staged as one op.

    Both branches are traced (once each) and must return the same pytree structure with the same
    shapes and dtypes. ``pred`` is a scalar bool (numbers are compared with zero). Under ``vmap``
    with a batched ``pred`` both branches run and the results are selected elementwise.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.cond(jnp.int32(0), lambda x: x * 2, lambda x: -x, jnp.arange(3)).tolist()
        [0, -1, -2]
    """
    from fluxion.lax.elementwise import convert_element_type, ne  # noqa: PLC0415
    if not (callable(true_fun) and callable(false_fun)):
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    if operand is not None:
        if operands:
            raise TypeError("lax.cond: if the 'operand' keyword is passed, no positional operands "
                            "can be passed")
        operands = (operand,)
    dt = _scalar_check("lax.cond", "predicate", pred)
    if dt.kind != "b":
        if dt.kind in "iuf":
            pred = ne(pred, np.zeros((), dt))
        else:
            raise TypeError(f"lax.cond: the predicate must be a boolean or a number, got dtype "
                            f"{dt.name}")
    index = convert_element_type(pred, np.int32)
    return _bind_branches("cond", index, [false_fun, true_fun], ["false_fun", "true_fun"],
                          tuple(operands))


def switch(index: Any, branches: Sequence[Callable], *operands: Any, operand: Any = None) -> Any:
    """``branches[index](*operands)``, with ``index`` clamped into ``[0, len(branches) - 1]``.

    Every branch is traced once and must return the same structure, shapes and dtypes.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> fs = [lambda x: x + 1, lambda x: x * 10]
        >>> lax.switch(7, fs, jnp.int32(3)).tolist()   # index 7 is clamped to 1
        30
    """
    from fluxion.lax.elementwise import clamp, convert_element_type  # noqa: PLC0415
    if operand is not None:
        if operands:
            raise TypeError("lax.switch: if the 'operand' keyword is passed, no positional "
                            "operands can be passed")
        operands = (operand,)
    dt = _scalar_check("lax.switch", "branch index", index)
    if dt.kind not in "iu":
        raise TypeError(f"lax.switch: the branch index must be an integer, got dtype {dt.name}")
    branches = tuple(branches)
    if not branches:
        raise ValueError("lax.switch: empty sequence of branches")
    if not all(callable(b) for b in branches):
        raise TypeError("lax.switch: every branch must be callable")
    if len(branches) == 1:
        return branches[0](*operands)
    idx = convert_element_type(index, np.int32)
    idx = clamp(np.int32(0), idx, np.int32(len(branches) - 1))
    return _bind_branches("switch", idx, branches,
                          [f"branch {i}" for i in range(len(branches))], tuple(operands))


# =============================================================================== vmap rules

def batch_closed(program: Program, in_dims: Sequence[Any], axis: Any,
                 force: Sequence[bool | None]) -> tuple[Program, list, list]:
    """Batch a closed ``program`` whose inputs are batched at ``in_dims`` (None: unmapped).

    ``force[i]`` says what output ``i`` must be: True -> batched at dimension 0 (broadcast if it
    was unmapped), False -> unmapped (it is an internal error if it is not), None -> batched at 0
    when it is batched at all. Returns ``(closed program, consts, out_dims)``; the program's
    inputs are the consts followed by the batched inputs.
    """
    from fluxion.core.ir import eval_program  # noqa: PLC0415
    from fluxion.core.trace import interpreter_scope, set_current  # noqa: PLC0415
    from fluxion.transforms.array_ops import matchaxis  # noqa: PLC0415
    from fluxion.transforms.batching import BatchInterpreter, BatchTracer  # noqa: PLC0415

    in_avals = []
    for v, d in zip(program.invars, in_dims):
        a = v.aval
        if d is not None:
            a = a.update(shape=a.shape[:d] + (axis.size,) + a.shape[d:])
        in_avals.append(a)
    out_dims: list[Any] = []

    def batched(*xs: Any) -> list[Any]:
        out_dims.clear()
        with interpreter_scope(BatchInterpreter(axis)) as it:
            ins = [x if d is None else BatchTracer(it, x, d) for x, d in zip(xs, in_dims)]
            outs = eval_program(program, [], ins)
            res = []
            for o, f in zip(outs, force):
                if type(o) is BatchTracer and o._interp is it:
                    val, d = o.val, o.bdim
                else:
                    val, d = o, None
                with set_current(it.parent):
                    if f is True or (f is None and d is not None):
                        val, d = matchaxis(val, d, 0, axis.size), 0
                    elif f is False and d is not None:
                        raise AssertionError("batch_closed: an output forced unmapped is mapped")
                res.append(val)
                out_dims.append(d)
        return res

    batched.__name__ = "batched"
    new, consts, _ = trace_to_program(batched, tuple(in_avals), {}, in_avals=in_avals,
                                      description="vmap of a control-flow body")
    return close_program(new), consts, list(out_dims)


def _front(x: Any, d: Any, size: int) -> Any:
    from fluxion.transforms.array_ops import moveaxis  # noqa: PLC0415
    return x if d is None else moveaxis(x, d, 0)


def _cond_batch(axis: Any, args: Sequence[Any], dims: Sequence[Any], *,
                branches: tuple[Program, ...]) -> tuple[list, list]:
    from fluxion.core.ir import eval_program  # noqa: PLC0415
    from fluxion.lax.elementwise import select_n  # noqa: PLC0415
    from fluxion.lax.shape_ops import broadcast_in_dim  # noqa: PLC0415
    from fluxion.transforms.batching import _uses_axis  # noqa: PLC0415
    index, ops = args[0], list(args[1:])
    idim, odims = dims[0], list(dims[1:])
    if all(d is None for d in dims) and not any(_uses_axis(b, axis.name) for b in branches
                                                if axis.name is not None):
        outs = cond_p.bind(*args, branches=branches)
        return outs, [None] * len(outs)
    ops = [_front(x, d, axis.size) for x, d in zip(ops, odims)]
    odims = [None if d is None else 0 for d in odims]
    n_out = len(branches[0].outvars)
    if idim is None:
        # Same branch for the whole batch: batch every branch; outputs batched where any is.
        first = [batch_closed(b, odims, axis, [None] * n_out) for b in branches]
        force = [any(f[2][i] is not None for f in first) for i in range(n_out)]
        staged = [batch_closed(b, odims, axis, force) for b in branches]
        programs, consts = merge_consts([s[0] for s in staged], [s[1] for s in staged])
        outs = cond_p.bind(index, *consts, *ops, branches=tuple(programs))
        return list(outs), [0 if f else None for f in force]
    # A batched index: run every branch on the whole batch and select elementwise.
    index = _front(index, idim, axis.size)
    results = []
    for b in branches:
        prog, consts, _ = batch_closed(b, odims, axis, [True] * n_out)
        results.append(eval_program(prog, [], list(consts) + ops))
    outs = []
    for i in range(n_out):
        cases = [r[i] for r in results]
        shape = tuple(cases[0].shape)
        which = broadcast_in_dim(index, shape, (0,)) if len(shape) > 1 else index
        if len(branches) == 2:
            from fluxion.lax.elementwise import convert_element_type  # noqa: PLC0415
            which = convert_element_type(which, np.bool_)
        outs.append(select_n(which, *cases))
    return outs, [0] * n_out


cond_p.batch = _cond_batch
cond_p.batch_unmapped = True


# =============================================================================== autodiff rules

def is_zero_tangent(t: Any) -> bool:
    """A symbolic zero, or a float0 tangent (of an integer or boolean value)."""
    from fluxion.transforms.ad import Zero  # noqa: PLC0415
    if t is None or type(t) is Zero:
        return True
    aval = getattr(t, "aval", None)
    dt = aval.dtype if isinstance(aval, ShapedArray) else getattr(t, "dtype", None)
    return dt is not None and dt == dtypes.float0


def _leaf_aval(x: Any) -> ShapedArray:
    a = getattr(x, "aval", None)
    return a if isinstance(a, ShapedArray) else abstractify(x)


def differentiable(aval: ShapedArray) -> bool:
    return aval.dtype.kind in "fc" or (aval.dtype.kind == "V" and aval.dtype != dtypes.float0
                                       and dtypes.issubdtype(aval.dtype, np.inexact))


def jvp_closed(program: Program, nonzero: Sequence[bool],
               force_out: Sequence[bool] | None = None) -> tuple[Program, list, list[bool]]:
    """The JVP of a closed ``program``: a closed program over ``(*consts, *primals, *nonzero
    tangents)`` returning ``(*primal outputs, *output tangents where out_nz)``.

    ``force_out[i]`` instantiates output tangent ``i`` (zeros) when it is symbolically zero.
    Returns ``(program, consts, out_nz)``.
    """
    from fluxion.core.ir import eval_program  # noqa: PLC0415
    from fluxion.core.trace import interpreter_scope  # noqa: PLC0415
    from fluxion.transforms.ad import JVPInterpreter, JVPTracer, Zero, instantiate, tangent_aval  # noqa: PLC0415
    from fluxion.transforms.staging import StagingInterpreter  # noqa: PLC0415
    st = StagingInterpreter("jvp of a control-flow body")
    with interpreter_scope(st):
        ps = [st.new_arg(v.aval) for v in program.invars]
        ts = [st.new_arg(tangent_aval(v.aval)) if nz else None
              for v, nz in zip(program.invars, nonzero)]
        with interpreter_scope(JVPInterpreter("jvp of a control-flow body")) as it:
            ins = [p if t is None else JVPTracer(it, p, t) for p, t in zip(ps, ts)]
            outs = eval_program(program, [], ins)
            pairs = []
            for o in outs:
                if type(o) is JVPTracer and o._interp is it:
                    pairs.append((o.primal, o.tangent))
                else:
                    pairs.append((o, None))
        out_nz = []
        t_atoms = []
        for i, ((_, t), v) in enumerate(zip(pairs, program.outvars)):
            aval = v.aval
            nz = not is_zero_tangent(t) and differentiable(aval)
            if not nz and force_out is not None and force_out[i] and differentiable(aval):
                t, nz = instantiate(Zero(tangent_aval(aval))), True
            out_nz.append(nz)
            if nz:
                t_atoms.append(st.atom(t))
        atoms = [st.atom(p) for p, _ in pairs] + t_atoms
        prog = st.build(atoms)
    return close_program(prog), list(st.const_vals), out_nz


def split_program(program: Program, unknown_in: Sequence[bool]
                  ) -> tuple[Program, list, Program, list[bool], list[ShapedArray]]:
    """Partially evaluate a closed ``program`` with some inputs unknown (tangents).

    Returns ``(known, known_consts, unknown, out_unknown, res_avals)``: ``known`` (closed, its
    consts first) takes the known inputs and returns the known outputs followed by the
    residuals; ``unknown`` (closed) takes the residuals followed by the unknown inputs and returns
    the unknown outputs. Nested control flow is split by its own partial-evaluation rule.
    """
    from fluxion.core.ir import eval_program  # noqa: PLC0415
    from fluxion.core.trace import interpreter_scope  # noqa: PLC0415
    from fluxion.transforms.ad import PartialEvalInterpreter  # noqa: PLC0415
    from fluxion.transforms.staging import StagingInterpreter  # noqa: PLC0415
    st = StagingInterpreter("known part of a control-flow body")
    with interpreter_scope(st):
        k_args = {i: st.new_arg(v.aval) for i, (v, u) in enumerate(zip(program.invars, unknown_in))
                  if not u}
        pe = PartialEvalInterpreter("unknown part of a control-flow body")
        with interpreter_scope(pe):
            args = [pe.new_arg(v.aval) if u else k_args[i]
                    for i, (v, u) in enumerate(zip(program.invars, unknown_in))]
            outs = eval_program(program, [], args)
            out_unknown = [pe.is_unknown(o) for o in outs]
            u_atoms = [pe.atom(o) for o, u in zip(outs, out_unknown) if u]
        unknown = pe.build(u_atoms)
        residuals = list(pe.const_vals)
        res_avals = [v.aval for v in unknown.constvars]
        k_atoms = [st.atom(o) for o, u in zip(outs, out_unknown) if not u]
        k_atoms += [st.atom(r) for r in residuals]
        known = st.build(k_atoms)
    return close_program(known), list(st.const_vals), close_program(unknown), out_unknown, res_avals


def _cond_jvp(primals: list, tangents: list, *, branches: tuple[Program, ...]) -> tuple[list, list]:
    from fluxion.transforms.ad import Zero, tangent_aval  # noqa: PLC0415
    index, ops = primals[0], list(primals[1:])
    tans = list(tangents[1:])
    nz = [not is_zero_tangent(t) for t in tans]
    n_out = len(branches[0].outvars)
    staged = [jvp_closed(b, nz) for b in branches]
    out_nz = [any(s[2][i] for s in staged) for i in range(n_out)]
    if any(s[2] != out_nz for s in staged):
        staged = [jvp_closed(b, nz, out_nz) for b in branches]
    programs, consts = merge_consts([s[0] for s in staged], [s[1] for s in staged])
    outs = cond_p.bind(index, *consts, *ops, *[t for t, z in zip(tans, nz) if z],
                       branches=tuple(programs))
    it = iter(outs[n_out:])
    t_out = [next(it) if z else Zero(tangent_aval(a))
             for z, a in zip(out_nz, branches[0].out_avals)]
    return list(outs[:n_out]), t_out


def _cond_partial_eval(pe: Any, args: Sequence[Any], **params: Any) -> list:
    from fluxion.core.ir import eval_program  # noqa: PLC0415
    from fluxion.core.trace import set_current  # noqa: PLC0415
    from fluxion.transforms.ad import zeros_like_aval  # noqa: PLC0415
    from fluxion.transforms.staging import StagingInterpreter  # noqa: PLC0415
    branches = params["branches"]
    index, ops = args[0], list(args[1:])
    if pe.is_unknown(index):
        return StagingInterpreter.process_primitive(pe, cond_p, args, params)
    mask = [pe.is_unknown(a) for a in ops]
    n_out = len(branches[0].outvars)
    parts = [split_program(b, mask) for b in branches]
    out_unk = [any(p[3][i] for p in parts) for i in range(n_out)]
    out_avals = branches[0].out_avals
    # Per branch: residual slots = its residuals + its known outputs that are unknown overall.
    forced = [[i for i in range(n_out) if out_unk[i] and not p[3][i]] for p in parts]
    slot_avals = [list(p[4]) + [out_avals[i] for i in f] for p, f in zip(parts, forced)]
    sizes = [len(s) for s in slot_avals]
    k_avals = [a.aval if hasattr(a, "aval") else abstractify(a)
               for a, m in zip(ops, mask) if not m]
    u_in_avals = [abstractify(a) for a, m in zip(ops, mask) if m]
    all_slots = [a for s in slot_avals for a in s]

    def known_fn(b: int) -> Callable:
        kp, kc, _, ou, res_avals = parts[b]

        def f(*k_args: Any) -> list:
            outs = eval_program(kp, [], list(kc) + list(k_args))
            n_k = sum(not u for u in ou)
            kmap = dict(zip([i for i in range(n_out) if not ou[i]], outs[:n_k]))
            slots = []
            for c in range(len(parts)):
                if c == b:
                    slots += list(outs[n_k:]) + [kmap[i] for i in forced[b]]
                else:
                    slots += [zeros_like_aval(a) for a in slot_avals[c]]
            return [kmap[i] for i in range(n_out) if not out_unk[i]] + slots
        return f

    def unknown_fn(b: int) -> Callable:
        _, _, up, ou, res_avals = parts[b]

        def f(*u_args: Any) -> list:
            slots = split(list(u_args[:len(all_slots)]), sizes)[b]
            res, fvals = slots[:len(res_avals)], slots[len(res_avals):]
            uouts = eval_program(up, [], list(res) + list(u_args[len(all_slots):]))
            umap = dict(zip([i for i in range(n_out) if ou[i]], uouts))
            fmap = dict(zip(forced[b], fvals))
            return [umap[i] if ou[i] else fmap[i] for i in range(n_out) if out_unk[i]]
        return f

    ks = [stage(known_fn(b), tuple(k_avals), k_avals) for b in range(len(parts))]
    us = [stage(unknown_fn(b), tuple(all_slots + u_in_avals), all_slots + u_in_avals)
          for b in range(len(parts))]
    k_progs, k_consts = merge_consts([s[0] for s in ks], [s[1] for s in ks])
    u_progs, u_consts = merge_consts([s[0] for s in us], [s[1] for s in us])
    k_ops = [a for a, m in zip(ops, mask) if not m]
    with set_current(pe.parent):
        k_outs = cond_p.bind(index, *k_consts, *k_ops, branches=tuple(k_progs))
    n_k = sum(not u for u in out_unk)
    slots = list(k_outs[n_k:])
    u_args = [index, *u_consts, *slots, *[a for a, m in zip(ops, mask) if m]]
    u_outs = StagingInterpreter.process_primitive(pe, cond_p, u_args, dict(branches=tuple(u_progs)))
    ki, ui = iter(k_outs[:n_k]), iter(u_outs)
    return [next(ui) if u else next(ki) for u in out_unk]


def transpose_closed(program: Program, linear: Sequence[bool]) -> tuple[Program, list]:
    """The transpose of a closed ``program`` linear in the inputs marked ``linear``: a closed
    program over ``(*consts, *non-linear inputs, *output cotangents)`` returning the cotangent of
    every linear input (zeros instantiated)."""
    from fluxion.core.trace import interpreter_scope  # noqa: PLC0415
    from fluxion.transforms.ad import UndefinedPrimal, backward_pass, zeros_like_aval  # noqa: PLC0415
    from fluxion.transforms.staging import StagingInterpreter  # noqa: PLC0415
    st = StagingInterpreter("transpose of a control-flow body")
    with interpreter_scope(st):
        args = [UndefinedPrimal(v.aval) if lin else st.new_arg(v.aval)
                for v, lin in zip(program.invars, linear)]
        cts = [st.new_arg(v.aval) for v in program.outvars]
        cts_in = backward_pass(program, [], args, cts)
        lin_avals = [v.aval for v, lin in zip(program.invars, linear) if lin]
        atoms = [st.atom(zeros_like_aval(a) if (c is None or is_zero_tangent(c)) else c)
                 for c, a in zip(cts_in, lin_avals)]
        prog = st.build(atoms)
    return close_program(prog), list(st.const_vals)


def _cond_transpose(cts: list, index: Any, *ops: Any, branches: tuple[Program, ...]) -> list:
    from fluxion.transforms.ad import instantiate, is_undefined  # noqa: PLC0415
    linear = [is_undefined(a) for a in ops]
    if is_undefined(index):
        raise TypeError("lax.cond: cannot transpose with respect to the branch index")
    staged = [transpose_closed(b, linear) for b in branches]
    programs, consts = merge_consts([s[0] for s in staged], [s[1] for s in staged])
    cts = [instantiate(c) for c in cts]
    outs = cond_p.bind(index, *consts, *[a for a in ops if not is_undefined(a)], *cts,
                       branches=tuple(programs))
    it = iter(outs)
    return [None] + [next(it) if lin else None for lin in linear]


def _install_ad_rules() -> None:
    cond_p.jvp = _cond_jvp
    cond_p.transpose = _cond_transpose
    cond_p.partial_eval = _cond_partial_eval


_install_ad_rules()

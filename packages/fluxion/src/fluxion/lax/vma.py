"""Varying manual axes (``vma``): which ``shard_map`` mesh axes a value inside the body may differ
over, as in JAX's ``check_vma=True``.

An argument varies over the mesh axes its ``in_specs`` entry names; a value computed from
several operands varies over the union of theirs (JAX inserts an implicit ``pvary`` there);
``psum`` / ``pmax`` / ``pmin`` remove the axes they reduce over; ``pcast(..., to='varying')``
(``pvary``), ``all_gather``, ``ppermute``, ``all_to_all`` and ``psum_scatter`` add theirs;
``axis_index(name)`` varies over ``name``; constants vary over nothing. ``shard_map`` uses the
result to check its ``out_specs`` (a result whose spec leaves out an axis must not vary over
it), and ``fluxion.typeof`` inside the body reports it as ``.mat.varying``.

The inference (:mod:`fluxion.core.vma`; each primitive's rule is its ``vma`` slot) runs over
the staged equations, incrementally while the body is traced, so the values and programs are the
same with or without the check.

Example:
    >>> from fluxion.core.ir import Program, Var
    >>> from fluxion.core.avals import ShapedArray
    >>> import numpy as np
    >>> v = Var(ShapedArray((2,), np.float32))
    >>> infer(Program([], [v], [v], []), [frozenset({"x"})])
    [frozenset({'x'})]
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

from fluxion.core.ir import Literal, Var
from fluxion.core.trace import STATE
from fluxion.core.vma import EMPTY, infer, outputs_vma
from fluxion.transforms import ad as _ad

__all__ = ["infer", "BodyVma", "current", "vma_of", "vary_like", "ManualAval", "active_body",
           "value_vma", "check_carry_vma"]

class BodyVma:
    """The vma of the values of one ``shard_map`` body while it is traced (``interp`` is its
    staging interpreter); equations are processed as they are recorded."""

    def __init__(self, interp: Any, invars: Sequence[Var], in_vmas: Sequence[frozenset],
                 manual: Sequence[Any]) -> None:
        self.interp = interp
        self.manual = tuple(manual)
        self.env: dict[int, frozenset] = {v.id: frozenset(s) for v, s in zip(invars, in_vmas)}
        self.done = 0

    def of_atom(self, atom: Any) -> frozenset:
        eqns = self.interp.eqns
        while self.done < len(eqns):
            eqn = eqns[self.done]
            ins = [self.env.get(a.id, EMPTY) if isinstance(a, Var) else EMPTY
                   for a in eqn.inputs]
            for v, s in zip(eqn.outputs, outputs_vma(eqn, ins)):
                self.env[v.id] = s
            self.done += 1
        if isinstance(atom, Literal) or not isinstance(atom, Var):
            return EMPTY
        return self.env.get(atom.id, EMPTY)


_BODIES = threading.local()


def push(body: BodyVma) -> None:
    _BODIES.__dict__.setdefault("stack", []).append(body)


def pop() -> None:
    _BODIES.stack.pop()


def current(x: Any) -> BodyVma | None:
    """The body being traced that ``x`` (a tracer) belongs to, if it checks vma."""
    interp = getattr(x, "_interp", None)
    if interp is None:
        return None
    for body in reversed(getattr(_BODIES, "stack", ())):
        if body.interp is interp:
            return body
    return None


def vma_of(x: Any) -> frozenset | None:
    """The vma of ``x`` inside a ``check_vma`` shard_map body; None elsewhere."""
    body = current(x)
    return None if body is None else body.of_atom(x.atom)


def vary_like(src: Any, out: Any) -> Any:
    """``out`` marked as varying over the axes ``src`` varies over (what JAX's ``full_like`` /
    ``zeros_like`` do inside a ``check_vma`` shard_map body); ``out`` itself elsewhere."""
    if not getattr(_BODIES, "stack", None):
        return out
    have = vma_of(src)
    if not have:
        return out
    from fluxion.lax.parallel import pvary_p
    return pvary_p.bind(out, axis_name=tuple(have))


def active_body() -> BodyVma | None:
    """The ``check_vma`` body whose staging interpreter is the current one, if any."""
    stack = getattr(_BODIES, "stack", None)
    if not stack:
        return None
    interp = STATE.interp
    for body in reversed(stack):
        if body.interp is interp:
            return body
    return None


def value_vma(body: BodyVma, x: Any) -> frozenset:
    """The vma of ``x`` in ``body``: a tracer of the body, else a constant (invariant)."""
    if getattr(x, "_interp", None) is body.interp:
        return body.of_atom(x.atom)
    return EMPTY


def _primal_vmas(primals: Sequence[Any]) -> tuple | None:
    body = active_body()
    return None if body is None else tuple(value_vma(body, p) for p in primals)


def _sum_extra(ct: Any, vma: frozenset) -> Any:
    """``ct`` summed over the axes it varies over beyond its primal's ``vma`` (the transpose of
    the implicit ``pvary`` JAX inserts where an invariant value meets a varying one)."""
    body = active_body()
    if body is None:
        return ct
    extra = tuple(n for n in body.manual if n in value_vma(body, ct) - vma)
    if not extra:
        return ct
    from fluxion.lax.parallel import psum_p
    return psum_p.bind(ct, axis_name=extra, axis_index_groups=None)


_ad.VMA_COTANGENTS.update(primal_vmas=_primal_vmas, sum_extra=_sum_extra)


def check_carry_vma(api: str, fun: Any, in_tree: Any, program: Any, operands: Sequence[Any],
                    n_carry: int, carry_at: int) -> None:
    """JAX's TypeError when, inside a ``check_vma`` body, a loop's carry output varies over
    other mesh axes than its input (``operands``: the values bound to ``program``'s inputs;
    the carry is ``operands[carry_at:carry_at + n_carry]`` and the program's first outputs)."""
    body = active_body()
    if body is None:
        return
    from fluxion import tree_util
    from fluxion.lax.control_flow import common
    ins = [value_vma(body, v) for v in operands]
    outs = infer(program, ins)[:n_carry]
    carry_in = ins[carry_at:carry_at + n_carry]
    if carry_in == outs:
        return
    name = common._first_param_name(fun)

    def component(p: tuple) -> str:
        if name:
            return (f"the input carry component {name}{common._path_str(p)}" if p
                    else f"the input carry {name}")
        return f"the input carry at path {common._path_str(p)}" if p else "the input carry"

    paths = [p for p, _ in tree_util.tree_flatten_with_path(
        tree_util.tree_unflatten(in_tree, [0] * in_tree.num_leaves))[0]]
    avals = [v.aval for v in program.invars[carry_at:carry_at + n_carry]]
    bad, fixes = [], []
    for p, a, vi, vo in zip(paths, avals, carry_in, outs):
        if vi == vo:
            continue
        bad.append(f"{component(p)} has type {ManualAval(a, vi, body.manual)} but the "
                   f"corresponding output carry component has type "
                   f"{ManualAval(a, vo, body.manual)}, so the manual axis types do not match")
        extra = tuple(n for n in body.manual if n in vo - vi)
        if extra:
            fixes.append(f"applying `fluxion.lax.pcast(..., {extra}, to='varying')`, to the "
                         f"initial carry value corresponding to {component(p)}")
    bad[0] = bad[0][0].upper() + bad[0][1:]
    hint = ""
    if fixes:
        hint = ("This might be fixed by " + fixes[0] + ".\n" if len(fixes) == 1 else
                "This might be fixed by:\n" + common._bullets(fixes)) + "\n"
    raise TypeError(f"{api} function carry input and carry output must have equal types, but "
                    "they differ:\n\n" + common._bullets(bad) + "\n" + hint +
                    "Revise the function so that all output types match the corresponding "
                    f"input types ({common._fun_info(fun)}).")


class ManualAxisType:
    """``typeof(x).mat`` inside a ``shard_map`` body: the mesh axes ``x`` varies over."""

    __slots__ = ("varying", "unreduced", "reduced")

    def __init__(self, varying: frozenset) -> None:
        self.varying = frozenset(varying)
        self.unreduced = EMPTY
        self.reduced = EMPTY

    def __repr__(self) -> str:
        return f"ManualAxisType(varying={set(self.varying) or '{}'})"


class ManualAval:
    """The type of a value inside a ``check_vma`` shard_map body: its ShapedArray and the mesh
    axes it varies over (``.mat.varying``, also ``.vma``). Prints as JAX does:
    ``float32[2,1]{V:(x,y)}``."""

    __slots__ = ("aval", "mat", "_order")

    def __init__(self, aval: Any, varying: frozenset, order: Sequence[Any]) -> None:
        self.aval = aval
        self.mat = ManualAxisType(varying)
        self._order = tuple(order)

    @property
    def vma(self) -> frozenset:
        return self.mat.varying

    def __getattr__(self, name: str) -> Any:
        return getattr(self.aval, name)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ManualAval):
            return self.aval == other.aval and self.vma == other.vma
        return not self.vma and self.aval == other

    def __hash__(self) -> int:
        return hash((self.aval, self.vma))

    def __str__(self) -> str:
        base = self.aval.str_short(False)
        if not self.vma:
            return base
        names = [n for n in self._order if n in self.vma]
        names += sorted(str(n) for n in self.vma if n not in self._order)
        inner = names[0] if len(names) == 1 else "(" + ",".join(map(str, names)) + ")"
        return f"{base}{{V:{inner}}}"

    __repr__ = __str__

"""Varying manual axes (``vma``) over a program: which ``shard_map`` mesh axes each value may
differ over (JAX's ``check_vma=True``). Each primitive's rule is its ``vma`` slot,
``rule(eqn, in_vmas) -> out_vmas``, beside the primitive (collectives add or remove their axes,
control flow and call primitives look into their programs); a primitive without one gives every
output the union of its inputs' (JAX's implicit ``pvary``). The shard_map side (the body being
traced, ``typeof``) is the second half of this module: :class:`BodyVma` follows the
equations of a body as they are staged, ``vma_of`` / ``vary_like`` / :class:`ManualAval` answer
for its values, and ``vjp`` sums cotangents over the axes they vary over beyond their primal's
(``primal_vmas`` / ``sum_extra``, the transpose of JAX's implicit ``pvary``).

An argument varies over the mesh axes its ``in_specs`` entry names; ``psum`` / ``pmax`` /
``pmin`` remove the axes they reduce over; ``pcast(..., to='varying')`` (``pvary``),
``all_gather``, ``ppermute``, ``all_to_all`` and ``psum_scatter`` add theirs; constants vary
over nothing. ``shard_map`` checks its ``out_specs`` with the result, and ``fluxion.typeof``
inside the body reports it as ``.mat.varying``. The collectives (``pvary_p``, ``psum_p``) live
in ``fluxion.lax.parallel``, which installs them here when it loads (``install_collectives``):
only a shard_map body, which loads it, binds them.

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
import weakref
from typing import Any, Sequence

from fluxion.core.ir import Literal, Program, Var
from fluxion.core.trace import STATE

__all__ = ["EMPTY", "axis_names", "outputs_vma", "infer", "remove_axes", "add_axes", "call_rule",
           "union_rule", "BodyVma", "push", "pop", "current", "vma_of", "vary_like",
           "active_body", "value_vma", "primal_vmas", "sum_extra", "ManualAval",
           "install_collectives"]

EMPTY: frozenset = frozenset()


def axis_names(eqn: Any) -> frozenset:
    """The mesh axes named by a collective's ``axis_name`` parameter."""
    n = eqn.params.get("axis_name")
    return frozenset(n) if isinstance(n, tuple) else frozenset((n,))


def outputs_vma(eqn: Any, ins: Sequence[frozenset]) -> list[frozenset]:
    """The vma of ``eqn``'s outputs given those of its inputs: the primitive's rule, else the
    union of the inputs'."""
    rule = eqn.prim.vma
    return union_rule(eqn, ins) if rule is None else rule(eqn, list(ins))


def infer(program: Program, in_vmas: Sequence[frozenset]) -> list[frozenset]:
    """The vma of ``program``'s outputs given those of its inputs (constvars: none)."""
    env: dict[int, frozenset] = {v.id: frozenset(s) for v, s in zip(program.invars, in_vmas)}

    def read(a: Any) -> frozenset:
        return env.get(a.id, EMPTY) if isinstance(a, Var) else EMPTY

    for eqn in program.eqns:
        for v, s in zip(eqn.outputs, outputs_vma(eqn, [read(a) for a in eqn.inputs])):
            env[v.id] = s
    return [read(a) for a in program.outvars]


def remove_axes(eqn: Any, ins: list[frozenset]) -> list[frozenset]:
    """The rule of reductions over named axes (psum, pmax, ...): the result is invariant there."""
    return [ins[0] - axis_names(eqn)]


def add_axes(eqn: Any, ins: list[frozenset]) -> list[frozenset]:
    """The rule of collectives whose result differs along their axes (pvary, ppermute, ...)."""
    return [ins[0] | axis_names(eqn)]


def call_rule(eqn: Any, ins: list[frozenset]) -> list[frozenset]:
    """The rule of call primitives (jit, remat, custom_jvp/vjp): their program's inference."""
    for v in eqn.params.values():
        if (isinstance(v, Program) and len(v.invars) == len(eqn.inputs)
                and len(v.outvars) == len(eqn.outputs) and not v.constvars):
            return infer(v, ins)
    return union_rule(eqn, ins)


def union_rule(eqn: Any, ins: Sequence[frozenset]) -> list[frozenset]:
    """Every output varies over the union of the inputs' axes (primitives without a rule)."""
    u: frozenset = EMPTY
    for v in ins:
        u = u | v
    return [u] * len(eqn.outputs)


# ------------------------------------------------------------------ shard_map bodies

_COLLECTIVES: dict[str, Any] = {}


def install_collectives(*, pvary_p: Any, psum_p: Any) -> None:
    """Called by ``fluxion.lax.parallel`` when it loads: the collectives bound here."""
    _COLLECTIVES.update(pvary_p=pvary_p, psum_p=psum_p)


class BodyVma:
    """The vma of the values of one ``shard_map`` body while it is traced (``interp`` is its
    staging interpreter); equations are processed as they are recorded."""

    def __init__(self, interp: Any, invars: Sequence[Var], in_vmas: Sequence[frozenset],
                 manual: Sequence[Any], parent: "BodyVma | None" = None) -> None:
        # ``parent``: the body this one is traced in (a ``jit`` inside a shard_map body); the
        # values it closes over keep their vma from there.
        self.interp = interp
        self.manual = tuple(manual)
        self.parent = parent
        self.env: dict[int, frozenset] = {v.id: frozenset(s) for v, s in zip(invars, in_vmas)}
        self.done = 0

    def _read(self, var: Var) -> frozenset:
        s = self.env.get(var.id)
        if s is not None:
            return s
        if self.parent is not None:  # a value closed over from the enclosing body
            for cv, val in zip(self.interp.constvars, self.interp.const_vals):
                if cv is var:
                    s = self.env[var.id] = value_vma(self.parent, val)
                    return s
        return EMPTY

    def of_atom(self, atom: Any) -> frozenset:
        eqns = self.interp.eqns
        while self.done < len(eqns):
            eqn = eqns[self.done]
            ins = [self._read(a) if isinstance(a, Var) else EMPTY for a in eqn.inputs]
            for v, s in zip(eqn.outputs, outputs_vma(eqn, ins)):
                self.env[v.id] = s
            self.done += 1
        if isinstance(atom, Literal) or not isinstance(atom, Var):
            return EMPTY
        return self._read(atom)


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
    return _COLLECTIVES["pvary_p"].bind(out, axis_name=tuple(have))


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


def primal_vmas(primals: Sequence[Any]) -> tuple | None:
    """The mesh axes each of ``primals`` varies over inside a ``check_vma`` shard_map body (None
    outside one): what ``vjp`` records to sum cotangents with :func:`sum_extra`."""
    body = active_body()
    return None if body is None else tuple(value_vma(body, p) for p in primals)


def sum_extra(ct: Any, vma: frozenset) -> Any:
    """``ct`` summed over the axes it varies over beyond its primal's ``vma`` (the transpose of
    the implicit ``pvary`` JAX inserts where an invariant value meets a varying one)."""
    body = active_body()
    if body is None:
        return ct
    extra = tuple(n for n in body.manual if n in value_vma(body, ct) - vma)
    if not extra:
        return ct
    return _COLLECTIVES["psum_p"].bind(ct, axis_name=extra, axis_index_groups=None)


class ManualAxisType:
    """``typeof(x).mat`` inside a ``shard_map`` body, as JAX's ``jax.sharding.ManualAxisType``:
    the mesh axes ``x`` varies over (``varying``; ``unreduced`` and ``reduced`` are always empty
    for Fluxion's values). Interned: equal contents give the same object.

    Example:
        >>> ManualAxisType(varying={"x"}) is ManualAxisType(varying=frozenset({"x"}))
        True
    """

    __slots__ = ("varying", "unreduced", "reduced", "__weakref__")

    def __new__(cls, *, varying: Any = EMPTY, unreduced: Any = EMPTY,
                reduced: Any = EMPTY) -> ManualAxisType:
        varying, unreduced, reduced = frozenset(varying), frozenset(unreduced), frozenset(reduced)
        for name, other in (("unreduced", unreduced), ("reduced", reduced)):
            if varying & other:
                raise ValueError(f"varying and {name} cannot have common mesh axes. Got "
                                 f"varying={set(varying)} and {name}={set(other)}")
        key = (varying, unreduced, reduced)
        with _MAT_LOCK:
            obj = _MATS.get(key)
            if obj is None:
                obj = object.__new__(cls)
                object.__setattr__(obj, "varying", varying)
                object.__setattr__(obj, "unreduced", unreduced)
                object.__setattr__(obj, "reduced", reduced)
                _MATS[key] = obj
        return obj

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ManualAxisType is immutable")

    def __repr__(self) -> str:
        return (f"ManualAxisType(varying={self.varying}, unreduced={self.unreduced}, "
                f"reduced={self.reduced})")


_MATS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_MAT_LOCK = threading.Lock()


class ManualAval:
    """The type of a value inside a ``check_vma`` shard_map body: its ShapedArray and the mesh
    axes it varies over (``.mat.varying``, also ``.vma``). Prints as JAX does:
    ``float32[2,1]{V:(x,y)}``."""

    __slots__ = ("aval", "mat", "_order")

    def __init__(self, aval: Any, varying: frozenset, order: Sequence[Any]) -> None:
        self.aval = aval
        self.mat = ManualAxisType(varying=varying)
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

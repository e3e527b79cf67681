"""``fluxion.experimental.hijax`` (JAX's ``jax.experimental.hijax``): user-defined high-level
types and the primitives that act on them.

A library registers a Python class with :func:`register_hitype` (its values' abstract type, a
:class:`HiType` or a mutable :class:`MutableHiType`) and defines :class:`HiPrimitive` s on it.
Binding a hi-primitive runs its ``impl`` eagerly and its ``to_lojax`` (the primitive written with
low-level operations on boxes holding low-level values) inside ``jit`` and the bodies of
``scan``/``while_loop``/``cond``; under ``grad``/``jvp`` an operand with a nonzero tangent uses the
primitive's ``jvp``, and an operand without one leaves the primitive to the transformations below.

Boxes (values of a mutable hi-type) are arguments of ``jit`` and ``eval_shape``, and may be
reached through closures by jitted functions and loop and branch bodies: ``jit`` reads the box's
low-level values with ``read_loval(box.cur_qdd(), box)``, the traced function sees the same box
holding the trace's values (so ``isinstance`` and identity hold), and after the call the final
values are written back with ``update_from_loval`` (``core/hijax.py``). Unlike JAX, inside the
trace a box is the box object itself, not a tracer of its type. Not supported (listed in
docs/guide/coming-from-jax.md): a hi-primitive under ``vmap`` of a batched operand, a box
returned from ``jit`` or made by a ``jvp`` rule, and ``jit`` arguments of immutable hi-types.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> class Cell:
    ...     def __init__(self, v): self.v = v
    ...     def cur_qdd(self): return fluxion.typeof(self.v)
    >>> class CellTy(MutableHiType):
    ...     def __eq__(self, other): return isinstance(other, CellTy)
    ...     def __hash__(self): return hash(CellTy)
    ...     def read_loval(self, qdd, cell): return [cell.v]
    ...     def update_from_loval(self, qdd, cell, v): cell.v = v
    >>> register_hitype(Cell, lambda c: CellTy())
    >>> class Incr(HiPrimitive):
    ...     multiple_results = True
    ...     def impl(self, cell): cell.v = cell.v + 1; return []
    ...     to_lojax = impl
    >>> incr_p = Incr("incr")
    >>> c = Cell(jnp.float32(1))
    >>> f = fluxion.jit(lambda c: incr_p.bind(c))
    >>> _ = f(c); _ = f(c)
    >>> float(c.v)
    3.0
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from fluxion import tree_util
from fluxion.core import hijax as _box
from fluxion.core.avals import AbstractValue, ShapedArray
from fluxion.core.hijax import HiType, LoState, MutableHiType
from fluxion.core.trace import EVAL, STATE, set_current
from fluxion.extend.core import Effect
from fluxion.interpreters.ad import Zero, instantiate_zeros, is_undefined_primal
from fluxion.ref import AbstractRef
from fluxion.transforms.ad import JVPInterpreter, JVPTracer, aval_of, tangent_aval
from fluxion.transforms.batching import BatchInterpreter

__all__ = ["AbstractRef", "AbstractValue", "AvalMutableQDD", "AvalQDD", "HiPrimitive", "HiType",
           "MutableHiType", "ShapedArray", "Zero", "aval_method", "aval_property",
           "control_flow_allowed_effects", "instantiate_zeros", "is_undefined_primal",
           "register_hitype", "cur_qdd"]

try:  # a box's state is a pytree: its QDD is the node's static data
    tree_util.register_pytree_node(LoState, lambda s: (s.vals, s.qdd),
                                   lambda qdd, vals: LoState(qdd, vals))
except ValueError:  # already registered (this file imported a second time, as by doctest)
    pass


def register_hitype(cls: type, typeof_fn: Callable[[Any], Any]) -> None:
    """Register ``cls`` as a hi-type value class: ``typeof_fn(value)`` is a value's abstract
    type (a :class:`HiType` or :class:`MutableHiType`), what ``fluxion.typeof`` returns for it.

    Example:
        >>> class Pair:
        ...     pass
        >>> class PairTy(HiType):
        ...     def __eq__(self, other): return isinstance(other, PairTy)
        ...     def __hash__(self): return hash(PairTy)
        >>> register_hitype(Pair, lambda p: PairTy())
        >>> import fluxion
        >>> type(fluxion.typeof(Pair())).__name__
        'PairTy'
    """
    _box.register_hitype(cls, typeof_fn)


def cur_qdd(x: Any) -> Any:
    """The current quasi-dynamic data of the box ``x`` (what it holds now): ``x.cur_qdd()``.

    Example:
        >>> class Holder:
        ...     def cur_qdd(self): return "empty"
        >>> cur_qdd(Holder())
        'empty'
    """
    fn = getattr(x, "cur_qdd", None)
    if fn is None:
        raise TypeError(f"cur_qdd: expected a value of a mutable hi-type (with a cur_qdd "
                        f"method), got {type(x).__name__}")
    return fn()


class HiPrimitive:
    """Base class of a primitive on hi-types (JAX's ``HiPrimitive``). Subclasses define
    ``impl`` (eager), ``to_lojax`` (inside staged functions), ``abstract_eval``, and ``jvp`` /
    ``transpose`` when differentiable; ``multiple_results`` says whether results are a list.

    Example:
        >>> class Twice(HiPrimitive):
        ...     def impl(self, x): return 2 * x
        ...     to_lojax = impl
        >>> Twice("twice").bind(3)
        6
    """

    multiple_results = False

    def __init__(self, name: str) -> None:
        self.name = name

    def is_high(self, *avals: Any, **params: Any) -> bool:
        return True

    def is_effectful(self, params: Any) -> bool:
        return False

    def abstract_eval(self, *avals: Any, **params: Any) -> Any:
        raise NotImplementedError(f"{self.name}: abstract_eval is not defined")

    def impl(self, *args: Any, **params: Any) -> Any:
        raise NotImplementedError(f"{self.name}: impl is not defined")

    def to_lojax(self, *args: Any, **params: Any) -> Any:
        raise NotImplementedError(f"{self.name}: to_lojax is not defined")

    def jvp(self, primals: Any, tangents: Any, **params: Any) -> Any:
        raise NotImplementedError(f"Differentiation rule for '{self.name}' not implemented")

    def transpose(self, *args: Any, **params: Any) -> Any:
        raise NotImplementedError(f"Transpose rule for '{self.name}' not implemented")

    def bind(self, *args: Any, **params: Any) -> Any:
        """Apply the primitive in the current transformation context."""
        for a in args:
            if type(a) in _box.HITYPES and _box.is_box(a):
                _box.touch(a)
        interp = STATE.interp
        # An interpreter that owns none of the operands (a jvp with all-zero tangents, a vmap
        # with no batched operand) sees constants: the primitive runs below it.
        while isinstance(interp, (JVPInterpreter, BatchInterpreter)) and not any(
                interp.owns(x) for x in args):
            interp = interp.parent
        if isinstance(interp, JVPInterpreter):
            out = self._jvp(interp, args, params)
        elif isinstance(interp, BatchInterpreter):
            raise NotImplementedError(
                f"Batching rule for '{self.name}' not implemented: a hi-primitive under vmap "
                "with a batched operand is not supported by Fluxion (see "
                "docs/guide/coming-from-jax.md)")
        else:
            rule = self.impl if interp is EVAL else self.to_lojax
            with set_current(interp):
                out = rule(*args, **params)
        for o in (out if self.multiple_results else (out,)):
            if type(o) in _box.HITYPES and _box.is_box(o):
                _box.own(o)
        return out

    def _jvp(self, interp: JVPInterpreter, args: Sequence[Any], params: dict) -> Any:
        primals, tangents = [], []
        for x in args:
            if type(x) is JVPTracer and x._interp is interp:
                primals.append(x.primal)
                tangents.append(x.tangent)
            else:
                primals.append(x)
                fn = _box.HITYPES.get(type(x))
                tangents.append(Zero(fn(x).to_tangent_aval() if fn is not None
                                     else tangent_aval(aval_of(x))))
        with set_current(interp.parent):
            out, t_out = self.jvp(primals, tangents, **params)
        outs, t_outs = (out, t_out) if self.multiple_results else ([out], [t_out])
        res = []
        for o, t in zip(outs, t_outs):
            if type(o) in _box.HITYPES:
                raise NotImplementedError(
                    f"{self.name}: a jvp rule giving a hi-type value ({type(o).__name__}) is "
                    "not supported by Fluxion (see docs/guide/coming-from-jax.md)")
            res.append(o if t is None or type(t) is Zero else JVPTracer(interp, o, t))
        return res if self.multiple_results else res[0]

    def __repr__(self) -> str:
        return self.name


class AvalQDD:
    """An abstract value with its quasi-dynamic data (what a hi-primitive's ``abstract_eval``
    returns for a new box).

    Example:
        >>> AvalQDD("ty", "state").qdd
        'state'
    """

    def __init__(self, aval: Any, qdd: Any) -> None:
        self.aval, self.qdd = aval, qdd

    def __repr__(self) -> str:
        return f"AvalQDD({self.aval!r}, {self.qdd!r})"


class AvalMutableQDD:
    """An abstract value with quasi-dynamic data that a primitive's ``abstract_eval`` may update
    (``mutable_qdd.update(new)``).

    Example:
        >>> a = AvalMutableQDD("ty", _MutableQDD("old"))
        >>> a.mutable_qdd.update("new"); a.mutable_qdd.cur_val
        'new'
    """

    def __init__(self, aval: Any, mutable_qdd: Any) -> None:
        self.aval, self.mutable_qdd = aval, mutable_qdd


class _MutableQDD:
    def __init__(self, val: Any) -> None:
        self.init_val = self.cur_val = val

    def update(self, val: Any) -> None:
        self.cur_val = val


class aval_method:  # noqa: N801  (JAX's name)
    """A method of a hi-type that applies to values of that type (on a box it is the box's
    method; on the type itself, the plain function).

    Example:
        >>> class T:
        ...     m = aval_method(lambda self: 1)
        >>> T().m()
        1
    """

    def __init__(self, fun: Callable) -> None:
        self.fun = fun

    def __get__(self, obj: Any, cls: Any = None) -> Any:
        return self.fun if obj is None else self.fun.__get__(obj, cls)


class aval_property(property):  # noqa: N801  (JAX's name)
    """A property of a hi-type that applies to values of that type.

    Example:
        >>> class T:
        ...     p = aval_property(lambda self: 2)
        >>> T().p
        2
    """


class _EffectTypeSet:
    def __init__(self) -> None:
        self._types: set[type] = set()

    def add_type(self, t: type[Effect]) -> None:
        self._types.add(t)

    def contains(self, eff: Any) -> bool:
        return type(eff) in self._types


control_flow_allowed_effects = _EffectTypeSet()
"""Effect types allowed in control-flow bodies (JAX's registry; Fluxion threads boxes through
loops and branches whatever their effects)."""

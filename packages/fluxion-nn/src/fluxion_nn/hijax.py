"""Hijax Variables (``flax.nnx.variablelib.HijaxVariable``): a Variable kept in a mutable box of
``fluxion.experimental.hijax``, so that ``jit`` (as an argument or through a closure), the bodies
of ``scan``/``while_loop``/``cond`` and ``eval_shape`` update it in place.

``Variable(x, hijax=True)`` (or ``var_defaults(hijax=True)``, ``v.copy(hijax=True)``,
``with_vars(tree, hijax=True)``) gives a :class:`HijaxVariable`. The box holds the flat leaves of
an ordinary Variable (its value's leaves) and their structure (the Variable's type, metadata and
the value's tree structure, the box's quasi-dynamic data). Each method reads the Variable back
from the box, runs the Variable's own method on it, and writes the result back when the call
changed it, through three hi-primitives (``new_variable``, ``get_variable``, ``set_variable``) so
that the transformations see every read and write.

``isinstance(hv, nnx.Param)`` holds for a hijax ``Param`` (its ``__class__`` is the Variable type
it holds; ``type(hv)`` is :class:`HijaxVariable`), and a hijax Variable is a pytree leaf (a box),
not a node.

Example:
    >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
    >>> v = nnx.Param(jnp.float32(1), hijax=True)
    >>> @fluxion.jit
    ... def bump(v):
    ...     v[...] += 1
    >>> bump(v); bump(v)
    >>> float(v[...]), type(v).__name__, isinstance(v, nnx.Param)
    (3.0, 'HijaxVariable', True)
"""

from __future__ import annotations

import dataclasses
from typing import Any

import fluxion
import fluxion.tree_util as tree_util
from fluxion.experimental import hijax as hjx

from . import variablelib
from .variablelib import Variable

__all__ = ["HijaxVariable", "AbstractVariable", "VariableQDD", "to_hijax"]


@dataclasses.dataclass(frozen=True)
class VariableQDD:
    """What a hijax Variable's box holds now (its quasi-dynamic data): the abstract values of the
    leaves, their tree structure (with the Variable's type and metadata) and the Variable type.

    Example: ``fluxion.experimental.cur_qdd(hv).leaf_avals`` for ``hv = nnx.Param(x, hijax=True)``
    is ``(fluxion.typeof(x),)``.
    """

    leaf_avals: tuple
    treedef: Any
    var_type: type

    def to_tangent_qdd(self) -> VariableQDD:
        return VariableQDD(tuple(a.to_tangent_aval() for a in self.leaf_avals), self.treedef,
                           self.var_type)

    def normalize(self) -> VariableQDD:
        return VariableQDD(tuple(a.normalize() for a in self.leaf_avals), self.treedef,
                           self.var_type)


class _NewVariable(hjx.HiPrimitive):
    def impl(self, *leaves: Any, treedef: Any, var_type: type, has_qdd: bool, ref: bool) -> Any:
        return HijaxVariable._new(leaves, treedef, var_type, has_qdd, ref)

    to_lojax = impl

    def jvp(self, primals: Any, tangents: Any, **params: Any) -> Any:
        raise NotImplementedError(
            f"nnx.{params['var_type'].__name__}(..., hijax=True): a hijax Variable cannot be made "
            "from a value being differentiated (make it outside the differentiated function, or "
            "use hijax=False)")


class _GetVariable(hjx.HiPrimitive):
    multiple_results = True

    def impl(self, box: HijaxVariable) -> list:
        return list(object.__getattribute__(box, "_leaves"))

    to_lojax = impl


class _SetVariable(hjx.HiPrimitive):
    multiple_results = True

    def impl(self, box: HijaxVariable, *leaves: Any, treedef: Any) -> list:
        if not object.__getattribute__(box, "has_qdd"):
            raise ValueError("Trying to update Variable with 'has_qdd=False' (a hijax Variable in "
                             "ref mode holds its value in a reference: write through it)")
        object.__setattr__(box, "_leaves", tuple(leaves))
        object.__setattr__(box, "_treedef", treedef)
        return []

    to_lojax = impl

    def jvp(self, primals: Any, tangents: Any, *, treedef: Any) -> Any:
        # a value being differentiated is stored as its primal: gradients do not flow through
        # the box (flax's BatchNorm statistics written inside a grad of the parameters)
        box, *vals = primals
        set_variable_p.bind(box, *vals, treedef=treedef)
        return [], []


new_variable_p = _NewVariable("new_variable")
get_variable_p = _GetVariable("get_variable")
set_variable_p = _SetVariable("set_variable")


def _read(hv: HijaxVariable) -> Variable:
    leaves = get_variable_p.bind(hv)
    return tree_util.tree_unflatten(object.__getattribute__(hv, "_treedef"), leaves)


def _write(hv: HijaxVariable, variable: Variable) -> None:
    leaves, treedef = tree_util.tree_flatten(variable)
    set_variable_p.bind(hv, *leaves, treedef=treedef)


def _run(hv: HijaxVariable, name: str, args: tuple, kwargs: dict) -> Any:
    """``getattr(variable, name)(*args, **kwargs)`` on the Variable in the box; written back when
    the call changed the Variable (its leaves, value structure or metadata)."""
    variable = _read(hv)
    before, before_def = tree_util.tree_flatten(variable)
    out = getattr(variable, name)(*args, **kwargs)
    after, after_def = tree_util.tree_flatten(variable)
    if after_def != before_def or any(a is not b for a, b in zip(after, before)):
        _write(hv, variable)
    return out


def _forward(name: str) -> Any:
    def method(self: HijaxVariable, *args: Any, **kwargs: Any) -> Any:
        return _run(self, name, args, kwargs)

    method.__name__ = name
    return method


def to_hijax(variable: Variable) -> HijaxVariable:
    """The hijax Variable holding ``variable`` (its leaves are shared, not copied); a Variable in
    ref mode gives an immutable box whose value is written through its reference.

    Example: ``hv = to_hijax(nnx.Param(x, hijax=True))``.
    """
    if isinstance(variable, HijaxVariable):
        return variable
    leaves, treedef = tree_util.tree_flatten(variable)
    return new_variable_p.bind(*leaves, treedef=treedef, var_type=type(variable),
                               has_qdd=not variable.ref, ref=variable.ref)


class HijaxVariable:
    """A Variable in a mutable hijax box (see the module docstring). Reads and writes go through
    the box: ``hv[...]``, ``hv[...] = x``, ``hv.get_value()``, metadata attributes, arithmetic.

    Example::

        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> hv = nnx.Variable({"a": jnp.int32(0)}, hijax=True)
        >>> hv["a"] += 1; int(hv["a"]), hv.hijax
        (1, True)
    """

    __slots__ = ("_treedef", "_leaves", "_var_type", "has_qdd", "_ref")

    @classmethod
    def _new(cls, leaves: Any, treedef: Any, var_type: type, has_qdd: bool,
             ref: bool = False) -> HijaxVariable:
        hv = object.__new__(cls)
        object.__setattr__(hv, "_leaves", tuple(leaves))
        object.__setattr__(hv, "_treedef", treedef)
        object.__setattr__(hv, "_var_type", var_type)
        object.__setattr__(hv, "has_qdd", has_qdd)
        object.__setattr__(hv, "_ref", ref)
        return hv

    # isinstance(hv, nnx.Param) for a hijax Param, as flax's Variable metaclass answers it
    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return object.__getattribute__(self, "_var_type")

    @property
    def var_type(self) -> type:
        """The Variable type held (``nnx.Param``, ...)."""
        return object.__getattribute__(self, "_var_type")

    type = var_type

    @property
    def hijax(self) -> bool:
        return True

    @property
    def ref(self) -> bool:
        return object.__getattribute__(self, "_ref")

    @property
    def value(self) -> Any:
        return _run(self, "get_value", (), {})

    @value.setter
    def value(self, new: Any) -> None:
        _run(self, "set_value", (new,), {})

    # the box's quasi-dynamic data (fluxion.experimental.cur_qdd)
    def cur_qdd(self) -> VariableQDD:
        leaves = object.__getattribute__(self, "_leaves")
        return VariableQDD(tuple(fluxion.typeof(x) for x in leaves),
                           object.__getattribute__(self, "_treedef"), self.var_type)

    def copy_from(self, other: Any) -> None:
        """Take ``other``'s value and metadata (a Variable or a hijax Variable)."""
        if isinstance(other, HijaxVariable):
            other = _read(other)
        _run(self, "copy_from", (other,), {})

    def update_from_state(self, state: Any) -> None:
        """Take the value and metadata of ``state`` (a Variable or a hijax Variable)."""
        if isinstance(state, HijaxVariable):
            state = _read(state)
        _run(self, "update_from_state", (state,), {})

    @classmethod
    def from_metadata(cls, value: Any, metadata: dict) -> Any:
        raise TypeError("HijaxVariable.from_metadata: call it on a Variable type "
                        "(nnx.Param.from_metadata(value, {..., 'hijax': True}))")

    # the slots nnx's graph code reads and writes on a Variable, here through the box
    @property
    def _value(self) -> Any:
        return _read(self)._value

    @_value.setter
    def _value(self, value: Any) -> None:
        _run(self, "__setattr__", ("_value", value), {})

    @property
    def _metadata(self) -> dict:
        return _read(self).get_metadata()

    @_metadata.setter
    def _metadata(self, metadata: dict) -> None:
        _run(self, "__setattr__", ("_metadata", dict(metadata)), {})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(_read(self), name)

    def __setattr__(self, name: str, value: Any) -> None:
        _run(self, "__setattr__", (name, value), {})

    def __repr__(self) -> str:
        return repr(_read(self))

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self) -> bool:
        return bool(_read(self).get_value())

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return _read(self).__array__(dtype)

    def __jax_array__(self) -> Any:
        return _read(self).get_value()


for _name in ("get_value", "set_value", "get_raw_value", "set_raw_value", "get_metadata",
              "set_metadata", "copy", "replace", "add_axis", "remove_axis", "create_value",
              "__getitem__", "__setitem__", "__call__", "__len__", "__iter__", "__float__",
              "__int__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__neg__",
              "__pos__", "__abs__", "__invert__"):
    if hasattr(Variable, _name):
        setattr(HijaxVariable, _name, _forward(_name))
for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
              "xor", "lshift", "rshift"):
    for _n in (f"__{_name}__", f"__r{_name}__"):
        setattr(HijaxVariable, _n, _forward(_n))



def _value_property(name: str) -> property:
    return property(lambda self: getattr(_read(self), name), doc=f"The held value's ``{name}``.")


for _name in ("shape", "dtype", "ndim", "size", "T"):
    setattr(HijaxVariable, _name, _value_property(_name))


class AbstractVariable(hjx.MutableHiType):
    """The abstract type of a hijax Variable (``fluxion.typeof(hv)``): its Variable type and
    whether it is in ref mode; what it holds is the box's :class:`VariableQDD`.

    Example: ``fluxion.typeof(nnx.Param(x, hijax=True)) == AbstractVariable(nnx.Param, False)``.
    """

    def __init__(self, var_type: type, ref: bool = False) -> None:
        self.var_type = var_type
        self.ref = ref

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, AbstractVariable) and other.var_type is self.var_type
                and other.ref == self.ref)

    def __hash__(self) -> int:
        return hash((AbstractVariable, self.var_type, self.ref))

    def __repr__(self) -> str:
        return f"{self.var_type.__name__}()"

    def str_short(self, short_dtypes: bool = False, **_: Any) -> str:
        return f"{self.var_type.__name__}()"

    def to_tangent_aval(self) -> AbstractVariable:
        return self

    def lo_ty_qdd(self, qdd: VariableQDD) -> list:
        return list(qdd.leaf_avals)

    def new_from_loval(self, qdd: VariableQDD, *vals: Any) -> HijaxVariable:
        return HijaxVariable._new(vals, qdd.treedef, qdd.var_type, not self.ref, self.ref)

    def read_loval(self, qdd: VariableQDD, hv: HijaxVariable) -> list:
        return list(object.__getattribute__(hv, "_leaves"))

    def update_from_loval(self, qdd: VariableQDD, hv: HijaxVariable, *vals: Any) -> None:
        object.__setattr__(hv, "_leaves", tuple(vals))
        object.__setattr__(hv, "_treedef", qdd.treedef)


hjx.register_hitype(HijaxVariable, lambda hv: AbstractVariable(hv.var_type, hv.ref))
variablelib._register_hijax(to_hijax, HijaxVariable)

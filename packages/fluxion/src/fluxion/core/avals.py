"""Abstract values: what a transformation knows about an array without its data.

A :class:`ShapedArray` is a (shape, dtype, weak_type) triple. Instances are interned, so equal
avals are the same object: hashing and comparing them is as cheap as for ints, which matters on
the dispatch paths where tuples of avals are cache keys. The hash is ``object.__hash__`` (the
identity's, computed in C): with interning, identity is equality.

Example:
    >>> import numpy as np
    >>> a = ShapedArray((2, 3), np.float32)
    >>> a.str_short()
    'f32[2,3]'
    >>> a is ShapedArray((2, 3), np.dtype("float32"))
    True
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core.dtypes import ExtendedDType
from fluxion.core.errors import user_source_line

__all__ = ["AbstractValue", "ShapedArray", "ShapeDtypeStruct", "ExtendedShapeDtypeStruct",
           "short_dtype_name", "physical_aval", "raise_to_shaped",
           "ShardingTypeError", "DuplicateSpecError", "apply_sharding_rule",
           "keep_sharding_rule", "DEFAULT_SHARDING_RULE"]

_KEEP: Any = object()  # ShapedArray.update: keep the sharding

_SHORT = {
    "float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "complex64": "c64", "complex128": "c128", "bool": "bool",
    "int4": "i4", "uint4": "u4", "int2": "i2", "uint2": "u2",
}


def short_dtype_name(dtype: np.dtype) -> str:
    """JAX's short name of a dtype, as printed in programs (``f32``, ``i32``, ``bf16`` ...).

    Example:
        >>> short_dtype_name(np.dtype("int32"))
        'i32'
    """
    name = np.dtype(dtype).name
    short = _SHORT.get(name)
    if short is not None:
        return short
    if name.startswith("float8_"):
        return "f8_" + name[len("float8_"):]
    if name.startswith("[('float0'") or name == "void" or "float0" in str(dtype):
        return "float0"
    return name


class AbstractValue:
    """The base class of Fluxion's abstract values (JAX's ``jax.core.AbstractValue``); the one
    kind Fluxion has is :class:`ShapedArray`.

    Example:
        >>> from fluxion.core.avals import AbstractValue, ShapedArray
        >>> import numpy as np
        >>> isinstance(ShapedArray((2,), np.dtype(np.float32)), AbstractValue)
        True
    """

    __slots__ = ()

    # How a high-level type (``jax.experimental.hijax``) sees an ordinary value: it lowers to
    # itself (JAX's ``lo_ty``/``lower_val``/``raise_val``), and ``normalize`` drops what does not
    # change the type's meaning.
    def lo_ty(self) -> list:
        """The low-level types of this type: itself."""
        return [self]

    def lower_val(self, val: Any) -> list:
        """The low-level values of a value of this type: the value itself."""
        return [val]

    def raise_val(self, val: Any) -> Any:
        """The value of this type made of low-level values: the one value itself."""
        return val

    def normalize(self) -> "AbstractValue":
        """This type without weak typing."""
        return self


class ShapedArray(AbstractValue):
    """The abstract value of an array: its shape, dtype and whether its dtype is weak, and, for
    arrays on a mesh with ``Explicit`` axes, its sharding (a ``NamedSharding``; None otherwise).

    A weak dtype comes from a Python scalar: it gives way to the other operand's dtype in
    promotion (``x_f16 + 1.0`` stays float16). Instances are interned and immutable. The
    sharding is part of the type ("sharding in types", JAX's explicit sharding): it prints as
    ``f32[8@x,4]`` and the sharding rules of the primitives propagate it.
    """

    __slots__ = ("shape", "dtype", "weak_type", "sharding", "__weakref__")
    _table: dict[tuple, "ShapedArray"] = {}

    shape: tuple[int, ...]
    dtype: np.dtype
    weak_type: bool
    sharding: Any

    def __new__(cls, shape: Sequence[int], dtype: Any, weak_type: bool = False,
                sharding: Any = None) -> "ShapedArray":
        key = ((shape if type(shape) is tuple else tuple(shape), dtype, weak_type)
               if sharding is None else
               (shape if type(shape) is tuple else tuple(shape), dtype, weak_type, sharding))
        hit = cls._table.get(key)
        if hit is not None:
            return hit
        shape_t = tuple(int(d) for d in key[0])
        for d in shape_t:
            if d < 0:
                raise ValueError(f"ShapedArray: negative dimension in shape {shape_t}")
        if isinstance(dtype, ExtendedDType):
            make = getattr(dtype, "_aval", None)
            if make is not None:
                # A typed key's aval is its own (KeyAval), as JAX's ShapedArray(shape, key<fry>)
                return make(shape_t)
            # A user-defined extended dtype (flax's fp8 meta dtype): a ShapedArray whose dtype
            # is the dtype object, lowered as its rules' physical element (physical_aval).
            dt, weak = dtype, False
        else:
            dt = np.dtype(dtype)
            weak = bool(weak_type)
        canon = (shape_t, dt, weak) if sharding is None else (shape_t, dt, weak, sharding)
        obj = cls._table.get(canon)
        if obj is None:
            obj = object.__new__(cls)
            object.__setattr__(obj, "shape", shape_t)
            object.__setattr__(obj, "dtype", dt)
            object.__setattr__(obj, "weak_type", weak)
            object.__setattr__(obj, "sharding", sharding)
            cls._table[canon] = obj
            if sharding is not None:
                EXPLICIT[0] = True
        cls._table[key] = obj
        return obj

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ShapedArray is immutable; use .update(...)")

    def __reduce__(self):
        return (ShapedArray, (self.shape, self.dtype, self.weak_type, self.sharding))

    def __eq__(self, other: object) -> bool:
        return self is other

    # Interned: equal avals (same shape, dtype, weak_type and sharding: every field of the
    # interning key) are one object, so the identity's hash agrees with ``__eq__``. The C slot
    # of ``object`` is used as is: a Python ``__hash__`` was ~2.5k calls per lowering of pyhpc's
    # isoneutral kernel (the lowering's type caches and the tracers' dicts are keyed by avals).
    __hash__ = object.__hash__

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(math.prod(self.shape))  # Python ints: ~20x cheaper than np.prod

    def update(self, shape: Sequence[int] | None = None, dtype: Any = None,
               weak_type: bool | None = None, sharding: Any = _KEEP) -> "ShapedArray":
        """A copy with some fields replaced (the sharding is kept while the shape is)."""
        if sharding is _KEEP:
            sharding = self.sharding
            if sharding is not None and shape is not None and tuple(shape) != self.shape:
                sharding = None
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type, sharding)

    def strip_weak_type(self) -> "ShapedArray":
        return self.update(weak_type=False) if self.weak_type else self

    def normalize(self) -> "ShapedArray":
        """This aval without weak typing (JAX's ``normalize``)."""
        return self.strip_weak_type()

    def to_tangent_aval(self) -> "ShapedArray":
        """The aval of this aval's tangents: the same for inexact dtypes, ``float0`` otherwise.

        Example:
            >>> import numpy as np
            >>> ShapedArray((2,), np.dtype("int32")).to_tangent_aval().dtype == dtypes.float0
            True
        """
        dt = self.dtype
        if isinstance(dt, ExtendedDType):
            return self.update(dtype=dt._rules.tangent_dtype(dt))
        if dt.kind in "fc" or (dt.kind == "V" and dt != dtypes.float0
                               and dtypes.issubdtype(dt, np.inexact)):
            return self
        return ShapedArray(self.shape, dtypes.float0, self.weak_type, self.sharding)

    def strip_sharding(self) -> "ShapedArray":
        """This aval without its sharding."""
        return self if self.sharding is None else ShapedArray(self.shape, self.dtype,
                                                              self.weak_type)

    def str_short(self, short_dtypes: bool = True) -> str:
        """``f32[2,3]``: the dtype and the shape, as in printed programs (``f32[8@x,3]`` for a
        dimension split over the mesh axis ``x``)."""
        name = (short_dtype_name(self.dtype) if short_dtypes else self.dtype.name) \
            if not isinstance(self.dtype, ExtendedDType) else str(self.dtype)
        if self.sharding is None:
            return f"{name}[{','.join(map(str, self.shape))}]"
        spec = tuple(self.sharding.spec) + (None,) * (len(self.shape) - len(self.sharding.spec))
        dims = []
        for n, p in zip(self.shape, spec):
            if p is None or not isinstance(p, (str, tuple)) or p == ():
                dims.append(str(n))
            elif isinstance(p, tuple):
                dims.append(f"{n}@({','.join(p)})")
            else:
                dims.append(f"{n}@{p}")
        return f"{name}[{','.join(dims)}]"

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short(False)}{weak})"

    def __str__(self) -> str:
        # JAX's: full dtype names, ``~`` marking a weak type (printed programs use str_short)
        return ("~" if self.weak_type else "") + self.str_short(False)


# Set once an aval with a sharding exists: until then the sharding rules are never consulted.
EXPLICIT = [False]
#: ``[fn]``: whether a ``set_mesh`` mesh with Explicit axes is active in this thread (then JAX
#: types elementwise results of untyped operands on it); installed by lax.sharding_rules.
CONTEXT_EXPLICIT: list[Callable[[], bool]] = [lambda: False]
# The rule of primitives whose ``sharding`` slot is None (the broadcasting rule, set by
# fluxion.lax.sharding_rules, which needs the spec helpers that live there).
DEFAULT_SHARDING_RULE: list[Callable[..., Any] | None] = [None]


def keep_sharding_rule(prim: Any, in_avals: Sequence["ShapedArray"], out: Any,
                       **params: Any) -> Any:
    """The sharding rule of primitives running a traced program (jit, custom_jvp, cond, scan,
    ...): the results keep the shardings the program gave them."""
    outs = out if prim.multiple_results else [out]
    res = [o.sharding for o in outs]
    return res if prim.multiple_results else res[0]


class ShardingTypeError(Exception):
    """The shardings (types) of a primitive's operands do not fit (JAX's ShardingTypeError)."""


class DuplicateSpecError(Exception):
    """A PartitionSpec maps one mesh axis to more than one dimension: a NamedSharding's spec, or
    the result spec a sharding rule computed (JAX's class, an ``Exception`` but not a
    ``ValueError``). ``mesh`` (None where unknown) and ``pspec``: the mesh and the spec.

    Example:
        >>> str(DuplicateSpecError.of(("x", "x", "y", "y"))).split("duplicate entries")[1]
        ' for `x`, `y`'
    """

    def __init__(self, message: str, mesh: Any, pspec: Any) -> None:
        super().__init__(message)
        self.message = message
        self.mesh = mesh
        self.pspec = pspec

    @classmethod
    def of(cls, pspec: Any, mesh: Any = None) -> "DuplicateSpecError":
        """The error for ``pspec`` (a PartitionSpec or its tuple of entries), in JAX's words."""
        counts: dict = {}
        for entry in pspec:
            for ax in (entry if isinstance(entry, tuple) else (entry,)):
                if isinstance(ax, str):
                    counts[ax] = counts.get(ax, 0) + 1
        dup = ", ".join(sorted(f"`{a}`" for a, c in counts.items() if c > 1))
        return cls("A single NamedSharding spec specification can map every mesh axis to at "
                   f"most one positional dimension, but {pspec} has duplicate entries for {dup}",
                   mesh, pspec)


def apply_sharding_rule(prim: Any, in_avals: Sequence[ShapedArray], out: Any,
                        params: dict) -> Any:
    """``out`` (an aval or a list of them) with the shardings the rule of ``prim`` gives, when an
    operand has a sharding. Without a rule, elementwise-shaped results take the operands'
    common sharding (broadcasting rule) and others get none (the compiler chooses)."""
    rule = prim.sharding or DEFAULT_SHARDING_RULE[0]
    try:
        shs = rule(prim, in_avals, out, **params)
    except DuplicateSpecError as e:
        if prim.multiple_results:
            raise
        dims = ",".join(str(n) if not p else f"{n}@{p}" if isinstance(p, str)
                        else f"{n}@({','.join(p)})" for n, p in zip(out.shape, e.pspec))
        err = ShardingTypeError(
            f"{prim.name} operation with inputs: {', '.join(a.str_short() for a in in_avals)} "
            f"produces an illegally sharded result: {short_dtype_name(out.dtype)}[{dims}]")
        err = ShardingTypeError(f"{err} (at {user_source_line()})")
        err._fluxion_located = True
        raise err from None
    except ShardingTypeError as e:
        if getattr(e, "_fluxion_located", False):
            raise
        err = ShardingTypeError(f"{e} (in {prim.name} on "
                                f"{', '.join(a.str_short(False) for a in in_avals)}, at "
                                f"{user_source_line()})")
        err._fluxion_located = True
        raise err from None
    if prim.multiple_results:
        return [o.update(sharding=s) if s is not o.sharding else o for o, s in zip(out, shs)]
    return out.update(sharding=shs) if shs is not out.sharding else out


def physical_aval(aval: ShapedArray) -> ShapedArray:
    """The aval an array of ``aval`` is stored and lowered as: itself for NumPy dtypes; for a
    user-defined extended dtype, ``aval``'s shape followed by the shape of its rules'
    ``physical_element_aval``, of that element's dtype (JAX's ``core.physical_aval``).

    Example:
        >>> physical_aval(ShapedArray((2,), np.float32)).str_short()
        'f32[2]'
    """
    dt = aval.dtype
    if not isinstance(dt, ExtendedDType):
        return aval
    if hasattr(aval, "physical_aval"):
        return aval.physical_aval()
    el = dt._rules.physical_element_aval(dt)
    return ShapedArray((*aval.shape, *el.shape), el.dtype, sharding=None)


def raise_to_shaped(aval: ShapedArray) -> ShapedArray:
    """Identity for ShapedArray; kept as the one place where richer avals would be abstracted."""
    return aval


class ShapeDtypeStruct:
    """A shape, a dtype and optionally a sharding: a stand-in for an array in ``eval_shape`` and
    ``jit(...).lower``.

    Example:
        >>> s = ShapeDtypeStruct((2, 3), np.float32)
        >>> s.shape, s.dtype
        ((2, 3), dtype('float32'))
    """

    __slots__ = ("shape", "dtype", "sharding", "weak_type")

    def __new__(cls, shape: Sequence[int] = (), dtype: Any = None, **kwargs: Any) -> Any:
        # A struct of an extended dtype is its own type, so the transformations' pytree view
        # (fluxion.tree_util.physical) can lower it to the struct of its physical data.
        if cls is ShapeDtypeStruct and isinstance(dtype, ExtendedDType):
            cls = ExtendedShapeDtypeStruct
        return object.__new__(cls)

    def __init__(self, shape: Sequence[int], dtype: Any, *, sharding: Any = None,
                 weak_type: bool = False) -> None:
        self.shape = tuple(int(d) for d in shape)
        # An extended dtype (a typed key's key<fry>) is kept as is, as JAX's struct does.
        self.dtype = dtype if isinstance(dtype, ExtendedDType) else np.dtype(dtype)
        self.sharding = sharding
        self.weak_type = bool(weak_type)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(math.prod(self.shape))  # Python ints: ~20x cheaper than np.prod

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype and self.sharding == other.sharding
                and self.weak_type == other.weak_type)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.sharding, self.weak_type))

    def __repr__(self) -> str:
        extra = f", sharding={self.sharding!r}" if self.sharding is not None else ""
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{extra}{weak})"


class ExtendedShapeDtypeStruct(ShapeDtypeStruct):
    """What ``ShapeDtypeStruct(shape, dtype)`` makes for an extended dtype (``key<fry>``): the
    same struct, a type of its own so that transformations can see its physical struct.

    Example:
        >>> import fluxion
        >>> s = fluxion.ShapeDtypeStruct((3,), fluxion.random.key(0).dtype)
        >>> isinstance(s, ShapeDtypeStruct), str(s.dtype)
        (True, 'key<fry>')
    """

    __slots__ = ()

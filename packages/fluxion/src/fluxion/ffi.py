"""``fluxion.ffi`` (JAX's ``jax.ffi``): call C++/CUDA kernels written against XLA's FFI.

A library compiles its kernel against the headers of :func:`include_dir` (``xla/ffi/api/ffi.h``),
loads the shared library with ``ctypes``, registers the handler with
:func:`register_ffi_target` (wrapped by :func:`pycapsule`), then calls it from Python with
:func:`ffi_call`, eagerly or under ``jit``/``vmap``. The call is the primitive ``ffi_call`` (with
:class:`FfiEffect` in ``make_jaxpr(...).effects`` when it has a side effect, as in JAX): a
``stablehlo.custom_call`` of the target with the keyword arguments as the typed attributes of
its ``mhlo.backend_config`` dictionary, typed as JAX types them (a Python ``int`` is ``i64``, a
``float`` ``f64``, a NumPy scalar keeps its dtype, an array is a dense attribute, a ``dict`` a
dictionary, a tuple an array attribute, a ``str`` a string, a ``np.dtype`` a type).

XLA's registry is per process: a target registered here is seen by real ``jax`` in the same
process and the other way round (``backend/ffi.py`` does the registration through jaxlib).

Fluxion writes StableHLO as text, so a lowering rule built by :func:`ffi_lowering` (for a
primitive a library defines itself; register it with
``fluxion.interpreters.mlir.register_lowering``) takes Fluxion's lowering context and SSA names,
not MLIR objects, and arguments that are MLIR objects in JAX (``result_types``,
``result_shapes``) have no counterpart.

Example:
    >>> import numpy as np, fluxion
    >>> f = fluxion.ffi.ffi_call("my_kernel", fluxion.ShapeDtypeStruct((3,), np.float32),
    ...                          vmap_method="broadcast_all")
    >>> x = np.ones(3, np.float32)
    >>> text = fluxion.jit(lambda x: f(x, eps=np.float32(0.5))).lower(x).as_text()
    >>> 'call_target_name = "my_kernel"' in text, "mhlo.backend_config = {eps = 5.0e-01 : f32}" in text
    (True, True)
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Sequence
from typing import Any, Callable, Mapping

import numpy as np

from fluxion.backend import ffi as _backend
from fluxion.backend.lowering import dense_attr, mlir_element_type
from fluxion.callback import _sequential
from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.experimental.layout import Layout
from fluxion.lax import shape_ops as so
from fluxion.lax import sharding_rules as _sh
from fluxion.transforms.array_ops import moveaxis
from fluxion.transforms.staging import abstractify

__all__ = ["build_ffi_lowering_function", "ffi_call", "ffi_lowering", "include_dir", "pycapsule",
           "register_ffi_target", "register_ffi_target_as_batch_partitionable",
           "register_ffi_type", "register_ffi_type_id"]

FfiLayoutOptions = Any  # a sequence of ints, a Layout, or None (row-major)
_VMAP_METHODS = ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                 "legacy_vectorized", None]


# ------------------------------------------------------------------ registration

def register_ffi_target(name: str, fn: Any, platform: str = "cpu", api_version: int = 1,
                        **kwargs: Any) -> None:
    """Register the foreign function ``fn`` as custom-call target ``name`` for ``platform``.

    ``fn`` is a ``PyCapsule`` of the handler (see :func:`pycapsule`), or a dict from FFI stage
    names (``"instantiate"``, ``"prepare"``, ``"initialize"``, ``"execute"``) to capsules.
    ``api_version`` 1 is XLA's typed FFI, 0 the legacy custom call; ``kwargs`` (``traits=``)
    go to jaxlib's ``register_custom_call_target``.

    Example:
        >>> import ctypes
        >>> lib = ctypes.cdll.LoadLibrary("./libkernels.so")  # doctest: +SKIP
        >>> register_ffi_target("my_scale", pycapsule(lib.Scale), platform="cpu")  # doctest: +SKIP
    """
    return _backend.register_target(name, fn, platform, api_version, **kwargs)


def register_ffi_type_id(name: str, obj: Any, platform: str = "cpu") -> None:
    """Not supported with jaxlib 0.10.2, as in JAX 0.10.2 (use :func:`register_ffi_type`).

    Example:
        >>> register_ffi_type_id("my_state", None)
        Traceback (most recent call last):
        ValueError: register_ffi_type_id is not supported after jaxlib version 381.
    """
    raise ValueError("register_ffi_type_id is not supported after jaxlib version 381.")


def register_ffi_type(name: str, type_registration: Mapping[str, Any],
                      platform: str = "cpu") -> None:
    """Register the FFI user type ``name`` for ``platform``: ``type_registration`` is
    ``{"type_id": capsule, "type_info": capsule}`` (``type_info`` optional), capsules of the
    ``XLA_FFI_TypeId`` and ``XLA_FFI_TypeInfo`` the library defines.

    Example:
        >>> lib = ctypes.cdll.LoadLibrary("./libstate.so")  # doctest: +SKIP
        >>> register_ffi_type("state", {"type_id": pycapsule(lib.StateTypeId)})  # doctest: +SKIP
    """
    return _backend.register_type(name, type_registration, platform)


def register_ffi_target_as_batch_partitionable(name: str) -> None:
    """Mark target ``name`` as batch partitionable (XLA may split a sharded call over the
    operands' leading dimensions).

    Example:
        >>> register_ffi_target_as_batch_partitionable("doc_partitionable")
    """
    _backend.register_batch_partitionable(name)


def pycapsule(funcptr: Any) -> Any:
    """Wrap a ``ctypes`` function pointer (a function of a library loaded with ``ctypes``) in
    an unnamed ``PyCapsule``, the form :func:`register_ffi_target` takes.

    Example:
        >>> type(pycapsule(ctypes.pythonapi.Py_IncRef)).__name__
        'PyCapsule'
    """
    destructor = ctypes.CFUNCTYPE(None, ctypes.py_object)
    new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, destructor)(
        ("PyCapsule_New", ctypes.pythonapi))
    return new(ctypes.cast(funcptr, ctypes.c_void_p), None, destructor(0))


def include_dir() -> str:
    """The directory of the C++ headers bundled with jaxlib: compile FFI kernels with
    ``-I`` this directory (``#include "xla/ffi/api/ffi.h"``).

    Example:
        >>> import os
        >>> os.path.exists(os.path.join(include_dir(), "xla", "ffi", "api", "ffi.h"))
        True
    """
    return _backend.include_dir()


# ------------------------------------------------------------------ attributes

_BARE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*\Z")


def _string(s: str | bytes) -> str:
    """A StableHLO string literal: printable ASCII as is, other bytes as ``\\XX``."""
    data = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    out = []
    for b in data:
        c = chr(b)
        out.append(f"\\{b:02X}" if b < 0x20 or b > 0x7E or c in '"\\' else c)
    return '"' + "".join(out) + '"'


def _name(key: Any) -> str:
    if not isinstance(key, str):
        raise TypeError(f"dictionary attribute keys must be strings, got {key!r}")
    return key if _BARE_NAME.match(key) else _string(key)


def _float_text(x: np.generic) -> str:
    v = float(x)
    if np.isfinite(v):
        return np.format_float_scientific(v, unique=True, trim="0")
    bits = np.asarray(x).view(f"u{x.dtype.itemsize}").item()
    return f"0x{bits:0{2 * x.dtype.itemsize}X}"


def _scalar_attribute(val: Any) -> str:
    """A NumPy scalar as an integer or float attribute of its own type (JAX's typing)."""
    dt = np.asarray(val).dtype
    t = mlir_element_type(dt)
    if t == "i1":
        return "true" if bool(val) else "false"
    if t.startswith(("i", "ui")):
        return f"{int(val)} : {t}"
    if t.startswith(("f", "bf")):
        return f"{_float_text(np.asarray(val)[()])} : {t}"
    raise TypeError(f"Unsupported scalar attribute type: {type(val)}")


def _array_attribute(val: np.ndarray | np.generic) -> str:
    if dtypes.is_float0(val.dtype):
        val = np.zeros(val.shape, np.bool_)
    if np.isscalar(val):
        return _scalar_attribute(val)
    return dense_attr(val, ShapedArray(val.shape, val.dtype))


def _python_scalar(dtype: Any) -> Callable[[Any], str]:
    return lambda v: _scalar_attribute(np.array(v, dtype))


_HANDLERS: dict[type, Callable[[Any], str]] = {
    np.ndarray: _array_attribute,
    bool: _python_scalar(np.bool_), int: _python_scalar(np.int64),
    float: _python_scalar(np.float64), complex: _python_scalar(np.complex128),
    str: _string, bytes: _string,
    np.dtype: lambda d: mlir_element_type(d),
    dict: lambda d: "{" + ", ".join(f"{_name(k)} = {ir_attribute(v)}" for k, v in d.items()) + "}",
    list: lambda s: "[" + ", ".join(ir_attribute(v) for v in s) + "]",
    tuple: lambda s: "[" + ", ".join(ir_attribute(v) for v in s) + "]",
}
for _t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
           np.float16, np.float32, np.float64, np.complex64, np.complex128, np.bool_,
           np.longlong, dtypes.bfloat16):
    _HANDLERS[_t] = _array_attribute


def ir_attribute(val: Any) -> str:
    """The StableHLO attribute text of a Python value, typed as JAX's ``mlir.ir_attribute``
    types it (the first handler along ``type(val).__mro__``; ``__jax_array__`` values as the
    array they give).

    Example:
        >>> ir_attribute(3), ir_attribute(np.float32(0.5)), ir_attribute({"k": (1, "s")})
        ('3 : i64', '5.0e-01 : f32', '{k = [1 : i64, "s"]}')
    """
    for t in type(val).__mro__:
        handler = _HANDLERS.get(t)
        if handler is not None:
            return handler(val)
    as_array = getattr(val, "__jax_array__", None)
    if as_array is not None:
        return ir_attribute(np.asarray(as_array()))
    raise TypeError(f"No attribute handler defined for type: {type(val)}")


class _HashableArray:
    """An attribute array held in the primitive's parameters (hashed and compared by value)."""

    __slots__ = ("val",)

    def __init__(self, val: np.ndarray) -> None:
        self.val = np.array(val, copy=True)
        self.val.setflags(write=False)

    def __hash__(self) -> int:
        return hash((self.val.shape, self.val.dtype, self.val.tobytes()))

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, _HashableArray) and self.val.shape == other.val.shape
                and self.val.dtype == other.val.dtype and bool(np.array_equal(self.val, other.val)))

    def __repr__(self) -> str:
        return f"HashableArray({self.val!r})"


class _FrozenDict:
    """An attribute dictionary held in the primitive's parameters."""

    __slots__ = ("d",)

    def __init__(self, d: dict) -> None:
        self.d = dict(d)

    def __hash__(self) -> int:  # the keys only: the values may be arrays
        return hash(tuple(sorted(map(repr, self.d))))

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _FrozenDict) and _same(self.d, other.d)

    def __repr__(self) -> str:
        return f"FrozenDict({self.d!r})"


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def _hashable_attributes(kwargs: dict[str, Any]) -> tuple:
    out = []
    for k, v in sorted(kwargs.items()):
        if isinstance(v, np.ndarray):
            v = _HashableArray(v)
        elif isinstance(v, dict):
            v = _FrozenDict(v)
        else:
            try:
                hash(v)
            except TypeError as e:
                raise TypeError(f"Non-hashable keyword argument to ffi_call {k}: {v}") from e
        out.append((k, v))
    return tuple(out)


def _plain_attributes(attributes: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    return {k: v.val if isinstance(v, _HashableArray) else v.d if isinstance(v, _FrozenDict)
            else v for k, v in attributes}


# ------------------------------------------------------------------ lowering

def _layout_for_lowering(aval: ShapedArray, layout: FfiLayoutOptions = None) -> tuple[int, ...]:
    """A layout as XLA's minor-to-major dimension order (None: row-major)."""
    if layout is None:
        return tuple(reversed(range(len(aval.shape))))
    if isinstance(layout, Layout):
        if layout.tiling:
            raise ValueError("The FFI does not support layouts with tiling")
        return tuple(layout.major_to_minor[::-1])
    return tuple(layout)


def _layouts_text(layouts: Sequence[Sequence[int]]) -> str:
    items = []
    for lay in layouts:
        dims = ", ".join(str(int(d)) for d in lay)
        items.append(f"dense<[{dims}]> : tensor<{len(lay)}xindex>" if lay
                     else "dense<> : tensor<0xindex>")
    return "[" + ", ".join(items) + "]"


class CustomCallOp:
    """The ``stablehlo.custom_call`` a function built by :func:`build_ffi_lowering_function`
    emitted: its result values (``results``; Fluxion's SSA names), as JAX's ``OpView``."""

    __slots__ = ("results",)

    def __init__(self, results: list[str]) -> None:
        self.results = results

    @property
    def result(self) -> str:
        if len(self.results) != 1:
            raise ValueError(f"the custom call has {len(self.results)} results, not one")
        return self.results[0]


_LOWERING_ARGS = ("api_version", "has_side_effect", "operand_output_aliases")


def build_ffi_lowering_function(
        call_target_name: str, *, operand_layouts: Sequence[FfiLayoutOptions] | None = None,
        result_layouts: Sequence[FfiLayoutOptions] | None = None,
        backend_config: Mapping[str, Any] | str | None = None,
        skip_ffi_layout_processing: bool = False,
        **lowering_args: Any) -> Callable[..., CustomCallOp]:
    """A function ``(ctx, *operands, **params) -> op`` that emits a ``stablehlo.custom_call``
    of ``call_target_name`` in a lowering rule; ``op.results`` are its values.

    Operand and result types come from ``ctx.avals_in``/``ctx.avals_out``; layouts (given here
    minor-to-major, as XLA writes them, or as ``Layout``s) default to row-major. With API
    version 4 (the default, the typed FFI) ``backend_config`` is a dict of attribute values and
    the keyword ``params`` are added to it; with a lower version it is an opaque string and
    ``params`` are an error. ``lowering_args``: ``api_version``, ``has_side_effect``,
    ``operand_output_aliases`` (``{operand: result}``).

    Example:
        >>> emit = build_ffi_lowering_function("my_kernel", has_side_effect=True)
        >>> callable(emit)
        True
    """
    bad = sorted(set(lowering_args) - set(_LOWERING_ARGS))
    if bad:
        raise TypeError(f"build_ffi_lowering_function: unsupported arguments {bad} (Fluxion "
                        f"writes StableHLO text; it takes {list(_LOWERING_ARGS)})")

    def emit(ctx: Any, *operands: str, **params: Any) -> CustomCallOp:
        api_version = lowering_args.get("api_version", 4)
        attrs = [f"call_target_name = {_string(call_target_name)}", "called_computations = []",
                 f"has_side_effect = {str(bool(lowering_args.get('has_side_effect'))).lower()}"]
        config = ""
        if api_version >= 4:
            if backend_config is not None and not isinstance(backend_config, dict):
                raise ValueError("When api_version > 4, backend_config must be a dictionary.")
            items = dict(backend_config or {}, **params)
            attrs.append("mhlo.backend_config = {" + ", ".join(
                f"{_name(k)} = {ir_attribute(v)}" for k, v in items.items()) + "}")
            api_version = 1  # a dictionary config is XLA's typed FFI under this number
        else:
            if params:
                raise ValueError(
                    "The use of ffi_call attributes requires a custom call API version of at "
                    f"least 4; got api_version={api_version}.")
            config = backend_config or ""
        attrs += [f"api_version = {int(api_version)} : i32", f"backend_config = {_string(config)}"]
        if not skip_ffi_layout_processing:
            ins = operand_layouts or [None] * len(ctx.avals_in)
            outs = result_layouts or [None] * len(ctx.avals_out)
            attrs.append("operand_layouts = " + _layouts_text(
                [_layout_for_lowering(a, lay) for a, lay in zip(ctx.avals_in, ins)]))
            attrs.append("result_layouts = " + _layouts_text(
                [_layout_for_lowering(a, lay) for a, lay in zip(ctx.avals_out, outs)]))
        aliases = lowering_args.get("operand_output_aliases")
        if aliases is not None:
            single = len(ctx.avals_out) == 1
            attrs.append("output_operand_aliases = [" + ", ".join(
                f"#stablehlo.output_operand_alias<output_tuple_indices = "
                f"{'[]' if single else f'[{o}]'}, operand_index = {i}, "
                f"operand_tuple_indices = []>" for i, o in aliases.items()) + "]")
        outs = ctx.op("stablehlo.custom_call", list(operands), attrs=", ".join(sorted(attrs)))
        if not ctx.avals_out:
            return CustomCallOp([])
        return CustomCallOp([outs] if isinstance(outs, str) else list(outs))

    return emit


def ffi_lowering(call_target_name: str, *,
                 operand_layouts: Sequence[FfiLayoutOptions] | None = None,
                 result_layouts: Sequence[FfiLayoutOptions] | None = None,
                 backend_config: Mapping[str, Any] | str | None = None,
                 skip_ffi_layout_processing: bool = False,
                 **lowering_args: Any) -> Callable[..., list[str]]:
    """A lowering rule ``(ctx, *operands, **params) -> results`` calling FFI target
    ``call_target_name``, for a primitive a library defines itself: the primitive's parameters
    become the call's attributes. Arguments as :func:`build_ffi_lowering_function`.

    Example:
        >>> from fluxion.extend.core import Primitive
        >>> from fluxion.interpreters.mlir import register_lowering
        >>> p = Primitive("doc_ffi_prim")
        >>> _ = p.def_abstract_eval(lambda x, **params: x)
        >>> _ = register_lowering(p, ffi_lowering("my_kernel"), platform="cpu")
        >>> import fluxion
        >>> text = fluxion.jit(lambda x: p.bind(x, alpha=np.float32(2))).lower(
        ...     np.ones(2, np.float32)).as_text()
        >>> "alpha = 2.0e+00 : f32" in text
        True
    """
    emit = build_ffi_lowering_function(
        call_target_name, operand_layouts=operand_layouts, result_layouts=result_layouts,
        backend_config=backend_config, skip_ffi_layout_processing=skip_ffi_layout_processing,
        **lowering_args)

    def rule(ctx: Any, *operands: str, **params: Any) -> list[str]:
        return emit(ctx, *operands, **params).results

    return rule


# ------------------------------------------------------------------ the ffi_call primitive

def _abstract_eval(*avals: ShapedArray, result_avals: tuple, **params: Any) -> list:
    return list(result_avals)


def _sharding(prim: Primitive, in_avals: Sequence[ShapedArray], out: list, **params: Any
              ) -> list:
    """The results' shardings on a mesh with Explicit axes: replicated on the ``set_mesh``
    mesh, whatever the operands' (JAX's results take the current mesh's empty spec)."""
    return [_sh.context_base()] * len(out)


def _lowering(ctx: Any, *operands: str, target_name: str, has_side_effect: bool,
              input_layouts: tuple, output_layouts: tuple, input_output_aliases: tuple,
              custom_call_api_version: int, legacy_backend_config: str | None,
              attributes: tuple, **params: Any) -> list[str]:
    rule = ffi_lowering(target_name, has_side_effect=has_side_effect,
                        operand_layouts=input_layouts, result_layouts=output_layouts,
                        operand_output_aliases=dict(input_output_aliases),
                        api_version=custom_call_api_version, backend_config=legacy_backend_config)
    return rule(ctx, *operands, **_plain_attributes(attributes))


def _no_derivative(*args: Any, target_name: str, **params: Any) -> Any:
    raise ValueError(f"The FFI call to `{target_name}` cannot be differentiated. You can use "
                     "`jax.custom_jvp` or `jax.custom_jvp` to add support.")


def _with_batch_dim(layout: tuple | None) -> tuple | None:
    """A minor-to-major layout with a new leading (most major) dimension."""
    return None if layout is None else tuple(n + 1 for n in layout) + (0,)


def _batch(prim: Primitive, axis_data: Any, args: Sequence[Any], dims: Sequence[Any], *,
           vmap_method: str | None, result_avals: tuple, **params: Any) -> tuple:
    """JAX's rule: ``sequential`` maps the call over the batch with ``scan``; ``expand_dims``
    and ``broadcast_all`` make one call on operands with a leading batch dimension (unbatched
    ones of size 1, or broadcast to the batch); ``None`` is an error."""
    size = axis_data.size
    if vmap_method in ("sequential", "sequential_unrolled"):
        return _sequential(prim, args, dims, dict(params, vmap_method=vmap_method,
                                                  result_avals=result_avals),
                           vmap_method == "sequential_unrolled")
    if vmap_method not in ("expand_dims", "broadcast_all", "legacy_vectorized"):
        raise NotImplementedError(
            "vmap is only supported for the ffi_call primitive when vmap_method is one of "
            "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
            f"'legacy_vectorized'. Got vmap_method={vmap_method!r}.")
    moved = [a if d is None else moveaxis(a, d, 0) for a, d in zip(args, dims)]
    batched = tuple(ShapedArray((size, *a.shape), a.dtype, a.weak_type) for a in result_avals)
    params["output_layouts"] = tuple(map(_with_batch_dim, params["output_layouts"]))
    if vmap_method == "legacy_vectorized":
        params["input_layouts"] = tuple(lay if d is None else _with_batch_dim(lay)
                                        for lay, d in zip(params["input_layouts"], dims))
    else:
        n = size if vmap_method == "broadcast_all" else 1
        moved = [so.broadcast(a, (n,)) if d is None else a for a, d in zip(moved, dims)]
        params["input_layouts"] = tuple(map(_with_batch_dim, params["input_layouts"]))
    outs = prim.bind(*moved, vmap_method=vmap_method, result_avals=batched, **params)
    return list(outs), [0] * len(outs)


class FfiEffect:
    """The effect of an ``ffi_call`` with ``has_side_effect=True`` (JAX's ``FfiEffect``): its
    equation is in ``make_jaxpr(...).effects`` and is never removed as dead code.

    Example:
        >>> FfiEffect() == FfiEffect(), FfiEffect()
        (True, FfiEffect())
    """

    def __eq__(self, other: Any) -> bool:
        return type(other) is FfiEffect

    def __hash__(self) -> int:
        return hash(FfiEffect)

    def __repr__(self) -> str:
        return "FfiEffect()"


_SIDE_EFFECT = frozenset({FfiEffect()})

# One primitive, as JAX's: whether an equation has an effect is its has_side_effect parameter.
ffi_call_p = Primitive("ffi_call", multiple_results=True, materialized=True)
ffi_call_p.abstract_eval = _abstract_eval
ffi_call_p.sharding = _sharding
ffi_call_p.lowering = _lowering
ffi_call_p.jvp = _no_derivative
ffi_call_p.transpose = _no_derivative
ffi_call_p.batch = lambda axis_data, args, dims, **params: _batch(ffi_call_p, axis_data, args,
                                                                  dims, **params)
ffi_call_p.effects = lambda params: _SIDE_EFFECT if params["has_side_effect"] else frozenset()


# ------------------------------------------------------------------ ffi_call

def _result_avals(results: Sequence[Any]) -> tuple[ShapedArray, ...]:
    avals = []
    for i, r in enumerate(results):
        if not hasattr(r, "shape") or not hasattr(r, "dtype"):
            raise ValueError("All elements of result_shape_dtypes must have 'shape' and 'dtype' "
                             f"attributes. Got {r} at position {i}.")
        avals.append(ShapedArray(tuple(r.shape), np.dtype(r.dtype),
                                 bool(getattr(r, "weak_type", False))))
    return tuple(avals)


def _layouts_for_call(avals: Sequence[ShapedArray], layouts: Sequence[FfiLayoutOptions]
                      ) -> tuple[tuple[int, ...], ...]:
    """``ffi_call``'s layouts (major-to-minor sequences, Layouts or None) as minor-to-major."""
    return tuple(_layout_for_lowering(a, lay if lay is None or isinstance(lay, Layout)
                                      else tuple(lay)[::-1])
                 for a, lay in zip(avals, layouts))


def _same_type(a: ShapedArray, b: ShapedArray) -> bool:
    return tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype


def _call_layouts(avals: Sequence[Any], layouts: Any, values: str, side: str) -> tuple:
    """The layouts of one side of a call: the default major-to-minor ones, or the given ones
    (one per value, with JAX's error when the counts differ)."""
    if layouts is None:
        return tuple(_layout_for_lowering(a) for a in avals)
    if len(layouts) != len(avals):
        raise ValueError(f"The number of {values} ({len(avals)}) must equal the number of "
                         f"{side} layouts ({len(layouts)}).")
    return _layouts_for_call(avals, layouts)


def ffi_call(target_name: str, result_shape_dtypes: Any, *, has_side_effect: bool = False,
             vmap_method: str | None = None,
             input_layouts: Sequence[FfiLayoutOptions] | None = None,
             output_layouts: FfiLayoutOptions | Sequence[FfiLayoutOptions] | None = None,
             input_output_aliases: dict[int, int] | None = None,
             custom_call_api_version: int = 4,
             legacy_backend_config: str | None = None) -> Callable[..., Any]:
    """A function calling the FFI target ``target_name`` (registered with
    :func:`register_ffi_target`) on its positional array arguments; its keyword arguments are
    the call's attributes (see the module docstring for their types).

    ``result_shape_dtypes``: one object with ``shape`` and ``dtype`` (``ShapeDtypeStruct``), the
    function then returns one array, or a sequence of them (a list or tuple of arrays back).
    ``has_side_effect=True`` keeps the call when its results are unused. ``vmap_method`` says
    how ``vmap`` batches it: ``"sequential"`` (``"sequential_unrolled"``) calls it once per
    batch member in a loop, ``"expand_dims"`` calls it once with a leading batch dimension on
    the batched arguments and one of size 1 on the others, ``"broadcast_all"`` broadcasts every
    argument to the batch, ``None`` makes ``vmap`` an error. ``input_layouts`` and
    ``output_layouts`` are major-to-minor dimension orders (or ``Layout``s; None: row-major);
    ``input_output_aliases`` maps argument indices to the result indices written in place of
    them. ``custom_call_api_version`` below 4 calls a legacy custom call, which takes no
    attributes but the opaque string ``legacy_backend_config``. No derivative: wrap the call in
    ``custom_jvp``/``custom_vjp``.

    Example:
        >>> import fluxion
        >>> call = ffi_call("my_kernel", [fluxion.ShapeDtypeStruct((2,), np.int32)] * 2)
        >>> jaxpr = fluxion.make_jaxpr(lambda x: call(x, n=3))(np.zeros(2, np.int32))
        >>> [str(v.aval) for v in jaxpr.jaxpr.outvars]
        ['int32[2]', 'int32[2]']
    """
    if vmap_method not in _VMAP_METHODS:
        raise ValueError(f"vmap_method must be on of the allowed methods {_VMAP_METHODS}, but "
                         f"got: {vmap_method}")
    if isinstance(result_shape_dtypes, Sequence):
        multiple = True
        result_avals = _result_avals(result_shape_dtypes)
        out_layouts = output_layouts
    else:
        multiple = False
        result_avals = _result_avals([result_shape_dtypes])
        out_layouts = (output_layouts,)
    if custom_call_api_version >= 4 and legacy_backend_config is not None:
        raise ValueError("The use of the legacy_backend_config parameter requires "
                         f"custom_call_api_version < 4; got {custom_call_api_version}.")

    def call(*args: Any, **kwargs: Any) -> Any:
        in_avals = [abstractify(x) for x in args]
        in_lay = _call_layouts(in_avals, input_layouts, "input arguments", "input")
        out_lay = _call_layouts(result_avals, out_layouts, "outputs", "output")
        aliases = []
        for i, o in sorted((input_output_aliases or {}).items()):
            i, o = int(i), int(o)
            if i >= len(args):
                raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' with "
                                 f"input index {i} outside the range [0, {len(args)}).")
            if o >= len(result_avals):
                raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' with "
                                 f"output index {o} outside the range [0, {len(result_avals)}).")
            if not _same_type(in_avals[i], result_avals[o]):
                raise ValueError(
                    f"input_output_aliases contains the mapping '{i}:{o}' referring to an input "
                    f"with abstract value {in_avals[i]} and an output with a "
                    f"different abstract value {result_avals[o]}.")
            if in_lay[i] != out_lay[o]:
                raise ValueError(
                    f"input_output_aliases contains the mapping '{i}:{o}' referring to an input "
                    f"with layout {in_lay[i]} and an output with a different layout "
                    f"{out_lay[o]}.")
            aliases.append((i, o))
        outs = ffi_call_p.bind(*args, result_avals=result_avals, vmap_method=vmap_method,
                         target_name=target_name, has_side_effect=bool(has_side_effect),
                         input_layouts=in_lay, output_layouts=out_lay,
                         input_output_aliases=tuple(aliases),
                         custom_call_api_version=custom_call_api_version,
                         legacy_backend_config=legacy_backend_config,
                         attributes=_hashable_attributes(kwargs))
        if not multiple:
            return outs[0]
        return tuple(outs) if isinstance(result_shape_dtypes, tuple) else list(outs)

    return call

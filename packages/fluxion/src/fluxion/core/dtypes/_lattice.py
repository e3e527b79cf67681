"""The type-promotion lattice: a small DAG of dtypes and the three weak kinds, its upper-bound
sets per (strict, x64) mode, and least upper bounds over it. Mode-free: callers pass the mode."""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion.core.dtypes._scalars import (
    _BF16,
    _BOOL,
    _C64,
    _C128,
    _F16,
    _F32,
    _F64,
    _I8,
    _I16,
    _I32,
    _I64,
    _U8,
    _U16,
    _U32,
    _U64,
    _WEAK_PY_TYPES,
    _float4_dtypes,
    _float6_dtypes,
    _numeric_types,
    complex_types,
    custom_float_dtypes,
    float8_dtypes,
    float_types,
    int_types,
    intn_dtypes,
    signed_types,
    unsigned_types,
)

# --------------------------------------------------------------------------------------------
# The promotion lattice
# --------------------------------------------------------------------------------------------

class TypePromotionError(ValueError):
    """Raised when dtypes have no implicit promotion (strict mode, float8, sub-byte ints ...)."""


# Nodes are the strong dtypes plus the three weak kinds, numbered; an upper-bound set is a
# bitmask over node numbers. Strong dtypes and Python types live in separate index tables so
# that np.dtype's lenient __eq__ (np.dtype('int64') == int) can never confuse them.
_NODES: list[Any] = [*_numeric_types, int, float, complex]
_STRONG_INDEX: dict[np.dtype, int] = {d: i for i, d in enumerate(_numeric_types)}
_WEAK_INDEX: dict[type, int] = {t: len(_numeric_types) + k for k, t in enumerate(_WEAK_PY_TYPES)}
_W_INT, _W_FLOAT, _W_COMPLEX = (_WEAK_INDEX[t] for t in _WEAK_PY_TYPES)


def _lattice_edges(strict: bool, x64: bool) -> dict[int, list[int]]:
    """Each node's immediate successors on the lattice."""
    s = _STRONG_INDEX
    edges: dict[int, list[int]] = {i: [] for i in range(len(_NODES))}
    if strict:
        edges[_W_INT] = [_W_FLOAT, *(s[d] for d in int_types)]
        edges[_W_FLOAT] = [_W_COMPLEX, *(s[d] for d in float_types)]
        edges[_W_COMPLEX] = [s[d] for d in complex_types]
        return edges

    def up(a: Any, *bs: Any) -> None:
        ia = s[a] if isinstance(a, np.dtype) else _WEAK_INDEX[a]
        edges[ia].extend(s[b] if isinstance(b, np.dtype) else _WEAK_INDEX[b] for b in bs)

    up(_BOOL, int)
    up(int, _U8, _I8, *intn_dtypes)
    up(_U8, _U16, _I16)
    up(_U16, _U32, _I32)
    # u32 v i32 is i64 with x64; without it JAX avoids forming a 64-bit type and picks i32.
    up(_U32, _U64, _I64 if x64 else _I32)
    up(_U64, float)
    up(_I8, _I16)
    up(_I16, _I32)
    up(_I32, _I64)
    up(_I64, float)
    up(float, *custom_float_dtypes, _F16, complex)
    up(_BF16, _F32)
    up(_F16, _F32)
    up(_F32, _F64, _C64)
    up(_F64, _C128)
    up(complex, _C64)
    up(_C64, _C128)
    return edges


def _upper_bounds(strict: bool, x64: bool) -> list[int]:
    edges = _lattice_edges(strict, x64)
    ubs: list[int] = []
    for start in range(len(_NODES)):
        seen, stack = {start}, [start]
        while stack:
            for nxt in edges[stack.pop()]:
                if nxt == start:
                    raise AssertionError(f"cycle in the promotion lattice at {_NODES[start]}")
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        ubs.append(sum(1 << i for i in seen))
    return ubs


_UBS: dict[tuple[bool, bool], list[int]] = {
    (False, False): _upper_bounds(False, False),
    (False, True): _upper_bounds(False, True),
    (True, False): _upper_bounds(True, True),
    (True, True): _upper_bounds(True, True),
}


def _no_path_error(nodes: list[Any], strict: bool) -> TypePromotionError:
    names = tuple(str(n) for n in nodes)
    if strict:
        why = ("with jax_numpy_dtype_promotion='strict', values of different dtypes must be cast "
               "explicitly to a common dtype (or set jax_numpy_dtype_promotion='standard')")
    elif any(n in float8_dtypes or n in _float6_dtypes or n in _float4_dtypes
             for n in nodes if isinstance(n, np.dtype)):
        why = ("floats narrower than 16 bits (float8, float6, float4) never promote implicitly; "
               "cast explicitly, e.g. x.astype('float32')")
    elif any(n in intn_dtypes for n in nodes if isinstance(n, np.dtype)):
        why = ("1-, 2- and 4-bit integers never promote implicitly; cast explicitly, "
               "e.g. x.astype('int32')")
    else:
        why = "cast the inputs explicitly to the dtype you want"
    return TypePromotionError(f"Input dtypes {names} have no implicit promotion path: {why}.")


def _lub(indices: set[int], strict: bool, x64: bool) -> int:
    """Least upper bound of a set of lattice nodes (by number)."""
    ubs = _UBS[(strict, x64)]
    n_mask = 0
    cub = -1
    for i in indices:
        n_mask |= 1 << i
        cub &= ubs[i]
    hit = cub & n_mask
    if hit:
        return hit.bit_length() - 1
    lub = [c for c in range(len(_NODES)) if (cub >> c) & 1 and cub & ubs[c] == cub]
    if len(lub) == 1:
        return lub[0]
    nodes = [_NODES[i] for i in sorted(indices)]
    if not lub:
        raise _no_path_error(nodes, strict)
    raise TypePromotionError(f"Internal error: {nodes} have no unique least upper bound on the "
                             f"promotion lattice (candidates {[_NODES[c] for c in lub]})")


def _strong_node(dt: Any) -> int:
    i = _STRONG_INDEX.get(dt) if isinstance(dt, np.dtype) else None
    if i is None:
        raise ValueError(f"dtype={dt!r} is not a valid dtype for type promotion.")
    return i


# The weak lattice node of each dtype: bool stays bool; integers (sub-byte ones too) are weak
# int; floats (ml_dtypes ones too) weak float; complexes weak complex.
_WEAK_NODE_OF: dict[np.dtype, int] = {
    _BOOL: _STRONG_INDEX[_BOOL],
    **{d: _W_INT for d in int_types},
    **{d: _W_FLOAT for d in float_types},
    **{d: _W_COMPLEX for d in complex_types},
}
# The kind whose default dtype a weak result takes.
_KIND_OF: dict[np.dtype, str] = {
    _BOOL: "b",
    **{d: "i" for d in signed_types},
    **{d: "u" for d in unsigned_types},
    **{d: "f" for d in float_types},
    **{d: "c" for d in complex_types},
}


def _node(dt: Any, weak: bool) -> int:
    if weak:
        i = _WEAK_NODE_OF.get(dt) if isinstance(dt, np.dtype) else None
        if i is None:
            raise ValueError(f"dtype={dt!r} is not a valid dtype for type promotion.")
        return i
    return _strong_node(dt)



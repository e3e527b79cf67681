"""Every primitive defined in ``fluxion.lax`` and ``fluxion.transforms`` has a JVP rule and a
batching (vmap) rule; linear primitives also have a transpose rule.

Run this file with ``-s`` to print the table of missing rules (jvp / transpose / batch).
"""

from __future__ import annotations

import importlib
import os

import pytest

import fluxion.lax
import fluxion.transforms
from fluxion.core.primitive import Primitive

# Primitives that may lack a rule, each with the reason. Keep this short: only where JAX itself
# has no such rule, or where the rule could never be called.
ALLOWED_MISSING: dict[str, dict[str, str]] = {
    "jvp": {
        # No operands: no tangent can ever reach them (JAX has no JVP rule for them either).
        "iota": "no operands",
        "axis_index": "no operands",
        # lax.linalg factorization building blocks that JAX does not differentiate either
        # (differentiate qr / eig / eigh instead).
        "geqrf": "JAX has no JVP rule",
        "householder_product": "JAX has no JVP rule",
        "schur": "JAX has no JVP rule",
        "hessenberg": "JAX has no JVP rule",
        "tridiagonal": "JAX has no JVP rule",
    },
    "batch": {},
}

# Linear primitives: their transpose is needed by reverse mode.
LINEAR = [
    "add", "sub", "neg", "conj", "real", "imag", "complex", "convert_element_type", "copy",
    "reduce_precision", "reduce_sum", "broadcast_in_dim", "reshape", "transpose", "squeeze",
    "rev", "slice", "concatenate", "pad", "dynamic_slice", "dynamic_update_slice", "gather",
    "scatter_add", "scatter_sub", "cumsum", "dot_general", "mul", "div", "select_n",
    "conv_general_dilated", "reduce_window_sum", "select_and_scatter_add",
    "select_and_gather_add", "psum", "all_gather", "ppermute", "all_to_all", "jit",
    "triangular_solve", "tridiagonal_solve",  # linear in the right-hand side b
]


def _primitives() -> dict[str, tuple[str, Primitive]]:
    found: dict[int, tuple[str, Primitive]] = {}
    for pkg in (fluxion.lax, fluxion.transforms):
        base = os.path.dirname(pkg.__file__)
        for f in sorted(os.listdir(base)):
            if not f.endswith(".py") or f == "__init__.py":
                continue
            mod = importlib.import_module(f"{pkg.__name__}.{f[:-3]}")
            for value in vars(mod).values():
                if isinstance(value, Primitive) and id(value) not in found:
                    found[id(value)] = (mod.__name__, value)
    return {p.name: (m, p) for m, p in found.values()}


PRIMS = _primitives()


def _missing_table() -> list[tuple[str, str, list[str]]]:
    rows = []
    for name, (mod, p) in sorted(PRIMS.items()):
        miss = [r for r in ("jvp", "transpose", "batch") if getattr(p, r) is None]
        if miss:
            rows.append((mod, name, miss))
    return rows


def test_print_missing_rules() -> None:
    rows = _missing_table()
    print("\nprimitive rules missing (jvp / transpose / batch):")
    for mod, name, miss in rows:
        print(f"  {mod:40s} {name:28s} {' '.join(miss)}")
    assert len(PRIMS) > 100  # the scan found the primitive tables


@pytest.mark.parametrize("rule", ["jvp", "batch"])
def test_every_primitive_has_rule(rule: str) -> None:
    allowed = ALLOWED_MISSING[rule]
    missing = sorted(n for n, (_, p) in PRIMS.items()
                     if getattr(p, rule) is None and n not in allowed)
    assert not missing, f"primitives without a {rule} rule: {missing}"
    stale = sorted(n for n in allowed if n in PRIMS and getattr(PRIMS[n][1], rule) is not None)
    assert not stale, f"allow-listed for {rule} but now have one (remove them): {stale}"


def test_linear_primitives_have_transpose() -> None:
    missing = sorted(n for n in LINEAR if n in PRIMS and PRIMS[n][1].transpose is None)
    absent = sorted(n for n in LINEAR if n not in PRIMS)
    assert not absent, f"unknown primitive names in LINEAR: {absent}"
    assert not missing, f"linear primitives without a transpose rule: {missing}"

"""Varying manual axes (``vma``) over a program: which ``shard_map`` mesh axes each value may
differ over (JAX's ``check_vma=True``). Each primitive's rule is its ``vma`` slot,
``rule(eqn, in_vmas) -> out_vmas``, beside the primitive (collectives add or remove their axes,
control flow and call primitives look into their programs); a primitive without one gives every
output the union of its inputs' (JAX's implicit ``pvary``). The shard_map side (the body being
traced, ``typeof``) is :mod:`fluxion.lax.vma`.

Example:
    >>> from fluxion.core.ir import Program, Var
    >>> from fluxion.core.avals import ShapedArray
    >>> import numpy as np
    >>> v = Var(ShapedArray((2,), np.float32))
    >>> infer(Program([], [v], [v], []), [frozenset({"x"})])
    [frozenset({'x'})]
"""

from __future__ import annotations

from typing import Any, Sequence

from fluxion.core.ir import Program, Var

__all__ = ["EMPTY", "axis_names", "outputs_vma", "infer", "remove_axes", "add_axes", "call_rule",
           "union_rule"]

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

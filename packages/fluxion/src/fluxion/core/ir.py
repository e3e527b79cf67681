"""The staged program: variables, literals, equations and programs; type checking, DCE, printing.

A :class:`Program` is a first-order, SSA list of equations over typed variables, closed except
for its ``constvars`` (values captured from outside, supplied alongside the arguments)::

    { lambda a:f32[3]; b:f32[3]. let
        c:f32[3] = mul b b
        d:f32[3] = add c a
      in (d,) }

Example:
    >>> import numpy as np
    >>> from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
    >>> x = Var(ShapedArray((3,), np.float32))
    >>> str(Program([], [x], [x], []))
    '{ lambda ; a:f32[3]. let  in (a,) }'
"""

from __future__ import annotations

import itertools
from typing import Any, Iterable, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray

__all__ = ["Var", "Literal", "Equation", "Program", "ProgramTypeError", "typecheck", "dce", "eval_program",
           "format_program"]

_counter = itertools.count()


class Var:
    """A program variable: an SSA name with an aval."""

    __slots__ = ("aval", "id")

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval
        self.id = next(_counter)

    def __repr__(self) -> str:
        return f"Var({self.id}:{self.aval.str_short()})"


def literal_value(lit: "Literal") -> Any:
    """The value to bind for a literal: a Python scalar when that reproduces its weak aval."""
    v = lit.val
    if lit.aval.weak_type and getattr(v, "shape", ()) == ():
        py = v.item() if hasattr(v, "item") else v
        if dtypes.python_scalar_dtype(py) == lit.aval.dtype:
            return py
    return v


class Literal:
    """A constant scalar written into the program (Python scalars and 0-d constants)."""

    __slots__ = ("val", "aval")

    def __init__(self, val: Any, aval: ShapedArray) -> None:
        self.val = val
        self.aval = aval

    def __repr__(self) -> str:
        return f"Literal({self.val!r}:{self.aval.str_short()})"

    def text(self) -> str:
        v = self.val
        if isinstance(v, np.ndarray) and v.shape == ():
            v = v.item()
        if isinstance(v, (bool, np.bool_)):
            return "True" if v else "False"
        if isinstance(v, (float, np.floating)):
            r = repr(float(v))
            return r if ("e" in r or "." in r or "n" in r) else r + ".0"
        return str(v)


Atom = "Var | Literal"


class Equation:
    """``outputs = prim[params](*inputs)``, with the user's source line for error messages."""

    __slots__ = ("prim", "inputs", "outputs", "params", "source")

    def __init__(self, prim: Any, inputs: list, outputs: list[Var], params: dict[str, Any],
                 source: str | None = None) -> None:
        self.prim = prim
        self.inputs = inputs
        self.outputs = outputs
        self.params = params
        self.source = source

    def __repr__(self) -> str:
        return f"Equation({self.prim.name}, {self.inputs} -> {self.outputs})"


class Program:
    """A staged function: ``constvars``, ``invars`` -> ``outvars`` through ``eqns``.

    ``Program`` objects are compared and hashed by identity; the jit caches key on them.
    """

    __slots__ = ("constvars", "invars", "outvars", "eqns", "_text", "__weakref__")

    def __init__(self, constvars: list[Var], invars: list[Var], outvars: list, eqns: list[Equation]):
        self.constvars = constvars
        self.invars = invars
        self.outvars = outvars
        self.eqns = eqns
        self._text: str | None = None

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.invars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.outvars]

    @property
    def effectful(self) -> bool:
        return any(e.prim.effectful for e in self.eqns)

    def __str__(self) -> str:
        if self._text is None:
            self._text = format_program(self)
        return self._text

    def pretty_print(self) -> str:
        return str(self)

    def __repr__(self) -> str:
        return str(self)


class ProgramTypeError(TypeError):
    """A program that does not type-check (an internal error: a rule produced a wrong aval)."""


def _typecompat(expected: ShapedArray, got: ShapedArray) -> bool:
    return expected.shape == got.shape and expected.dtype == got.dtype


def typecheck(program: Program) -> None:
    """Check every equation's output avals against its primitive's abstract evaluation.

    Raises ProgramTypeError naming the equation and its source line. Nested programs in params
    (``jit``, control flow) are checked too.
    """
    defined: set[int] = set()
    for v in itertools.chain(program.constvars, program.invars):
        defined.add(v.id)
    for eqn in program.eqns:
        in_avals = []
        for a in eqn.inputs:
            if isinstance(a, Var):
                if a.id not in defined:
                    raise ProgramTypeError(f"{eqn.prim.name}: input {a} used before it is defined"
                                           + _where(eqn))
            in_avals.append(a.aval)
        rule = eqn.prim.abstract_eval
        if rule is None:
            raise ProgramTypeError(f"primitive {eqn.prim.name} has no abstract evaluation rule")
        out = rule(*in_avals, **eqn.params)
        outs = list(out) if eqn.prim.multiple_results else [out]
        if len(outs) != len(eqn.outputs):
            raise ProgramTypeError(f"{eqn.prim.name}: {len(eqn.outputs)} outputs, rule gives "
                                   f"{len(outs)}" + _where(eqn))
        for v, aval in zip(eqn.outputs, outs):
            if not _typecompat(aval, v.aval):
                raise ProgramTypeError(
                    f"{eqn.prim.name}: output {v.aval.str_short()} does not match "
                    f"{aval.str_short()} from its inputs {[a.str_short() for a in in_avals]}"
                    + _where(eqn))
            defined.add(v.id)
        for p in eqn.params.values():
            if isinstance(p, Program):
                typecheck(p)
    for v in program.outvars:
        if isinstance(v, Var) and v.id not in defined:
            raise ProgramTypeError(f"output {v} is never defined")


def _where(eqn: Equation) -> str:
    return f" (at {eqn.source})" if eqn.source else ""


def dce(program: Program, used_outputs: Sequence[bool] | None = None) -> Program:
    """Drop equations whose outputs are unused (effectful equations are always kept).

    ``used_outputs`` selects outputs to keep (all by default). Inputs are kept, even if unused.
    """
    outvars = list(program.outvars) if used_outputs is None else [
        v for v, keep in zip(program.outvars, used_outputs) if keep]
    live: set[int] = {v.id for v in outvars if isinstance(v, Var)}
    kept: list[Equation] = []
    for eqn in reversed(program.eqns):
        if eqn.prim.effectful or any(v.id in live for v in eqn.outputs):
            kept.append(eqn)
            for a in eqn.inputs:
                if isinstance(a, Var):
                    live.add(a.id)
    kept.reverse()
    if len(kept) == len(program.eqns) and used_outputs is None:
        return program
    return Program(program.constvars, program.invars, outvars, kept)


# ----------------------------------------------------------------------------- printing

def _names() -> Iterable[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    for n in itertools.count(1):
        for tup in itertools.product(letters, repeat=n):
            yield "".join(tup)


class _Namer:
    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.gen = _names()

    def __call__(self, v: Any) -> str:
        if isinstance(v, Literal):
            return f"{v.text()}:{v.aval.str_short()}"
        n = self.names.get(v.id)
        if n is None:
            n = self.names[v.id] = next(self.gen)
        return n


def _format_param(value: Any, indent: int) -> str:
    if isinstance(value, Program):
        return format_program(value, indent + 4)
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if isinstance(value, tuple) and value and all(isinstance(v, Program) for v in value):
        return "(" + ", ".join(format_program(v, indent + 4) for v in value) + ")"
    return repr(value) if isinstance(value, str) else str(value)


def format_program(program: Program, indent: int = 0) -> str:
    """The readable text of a program, as ``make_jaxpr`` prints it."""
    name = _Namer()

    def decl(v: Var) -> str:
        return f"{name(v)}:{v.aval.str_short()}"

    consts = " ".join(decl(v) for v in program.constvars)
    args = " ".join(decl(v) for v in program.invars)
    pad = " " * (indent + 4)
    lines = []
    for eqn in program.eqns:
        lhs = " ".join(decl(v) for v in eqn.outputs) or "_"
        params = " ".join(f"{k}={_format_param(v, indent)}" for k, v in eqn.params.items())
        head = f"{eqn.prim.name}[{params}]" if params else eqn.prim.name
        rhs = " ".join(name(a) for a in eqn.inputs)
        lines.append(f"{pad}{lhs} = {head} {rhs}".rstrip())
    outs = ", ".join(name(v) for v in program.outvars)
    outs = f"({outs},)" if len(program.outvars) == 1 else f"({outs})"
    if not lines:
        return f"{{ lambda {consts}; {args}. let  in {outs} }}"
    if indent == 0 and "\n" not in "".join(lines):
        # Like JAX's printer: a program whose one-line form fits in 80 columns is one line.
        flat = f"{{ lambda {consts}; {args}. let {'; '.join(ln.strip() for ln in lines)} in {outs} }}"
        if len(flat) <= 80:
            return flat
    body = "\n".join(lines)
    return f"{{ lambda {consts}; {args}. let\n{body}\n{' ' * (indent + 2)}in {outs} }}"


def eval_program(program: Program, consts: Sequence[Any], args: Sequence[Any]) -> list[Any]:
    """Run ``program`` by binding each equation's primitive under the current interpreter.

    This is how a transformation that has no special rule for a Program (an inlined ``jit``, a
    JVP of a call) interprets it: equation by equation.
    """
    env: dict[int, Any] = {}
    for v, x in zip(program.constvars, consts):
        env[v.id] = x
    for v, x in zip(program.invars, args):
        env[v.id] = x

    def read(a: Any) -> Any:
        return literal_value(a) if isinstance(a, Literal) else env[a.id]

    for eqn in program.eqns:
        out = eqn.prim.bind(*[read(a) for a in eqn.inputs], **eqn.params)
        if eqn.prim.multiple_results:
            for v, o in zip(eqn.outputs, out):
                env[v.id] = o
        else:
            env[eqn.outputs[0].id] = out
    return [read(v) for v in program.outvars]

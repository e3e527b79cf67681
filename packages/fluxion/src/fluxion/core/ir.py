"""The staged program: variables, literals, equations and programs; type checking, DCE, printing.

A :class:`Program` is a first-order, SSA list of equations over typed variables, closed except
for its ``constvars`` (values captured from outside, supplied alongside the arguments)::

    { lambda a:f32[3]; b:f32[3]. let
        c:f32[3] = mul b b
        d:f32[3] = add c a
      in (d,) }

Example:
    >>> import numpy as np
    >>> from fluxion.core.avals import ShapedArray
    >>> x = Var(ShapedArray((3,), np.float32))
    >>> str(Program([], [x], [x], []))
    '{ lambda ; a:f32[3]. let  in (a,) }'
"""

from __future__ import annotations

import collections
import itertools
import re
from typing import Any, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.name_stack import pushed, rendered_entries

__all__ = ["Var", "Literal", "Equation", "JaxNamedParams", "SourceInfo", "Program",
           "ProgramTypeError", "typecheck", "dce", "prune_unused_inputs", "eval_program",
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

    def __repr__(self) -> str:  # JAX's: Literal(2.0)
        return f"Literal({self.text()})"

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


# JAX's name for a parameter -> Fluxion's, per primitive whose parameters JAX spells differently
# (code that walks ``make_jaxpr`` output, such as haiku's ``jaxpr_info``, reads JAX's names).
_JAX_PARAM_NAMES: dict[str, dict[str, str]] = {
    "jit": {"jaxpr": "program"},
    "remat2": {"jaxpr": "program"},
    "custom_jvp_call": {"call_jaxpr": "call"},
    "custom_vjp_call": {"call_jaxpr": "call"},
}


class JaxNamedParams(dict):
    """An equation's parameters that also answer to JAX's names for them.

    The items are Fluxion's parameters (what the primitive's rules receive); reading a JAX name
    (``eqn.params["jaxpr"]`` of a ``jit`` equation) gives the Fluxion parameter it stands for.

    Example:
        >>> p = JaxNamedParams({"program": 1, "name": "f"}, {"jaxpr": "program"})
        >>> p["jaxpr"], "jaxpr" in p, sorted(p)
        (1, True, ['name', 'program'])
    """

    __slots__ = ("jax_names",)

    def __init__(self, params: dict[str, Any], jax_names: dict[str, str]) -> None:
        super().__init__(params)
        self.jax_names = jax_names

    def __missing__(self, key: str) -> Any:
        ours = self.jax_names.get(key)
        if ours is None or ours not in self:
            raise KeyError(key)
        return dict.__getitem__(self, ours)

    def __contains__(self, key: object) -> bool:
        if dict.__contains__(self, key):
            return True
        ours = self.jax_names.get(key) if isinstance(key, str) else None
        return ours is not None and dict.__contains__(self, ours)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def __reduce__(self) -> tuple:
        return (JaxNamedParams, (dict(self), self.jax_names))


class SourceInfo:
    """Where an equation came from, under JAX's names: ``name_stack`` (the enclosing
    ``named_scope``/``named_call`` names, outermost first, joined by ``/``) and ``traceback``
    (Fluxion keeps the user's source line instead: ``Equation.source``, so this is ``None``).

    Example:
        >>> str(SourceInfo("model/dense").name_stack)
        'model/dense'
    """

    __slots__ = ("name_stack", "traceback")

    def __init__(self, name_stack: str = "", traceback: Any = None) -> None:
        self.name_stack = name_stack
        self.traceback = traceback

    def __repr__(self) -> str:
        return f"SourceInfo(name_stack={self.name_stack!r})"


class Equation:
    """``outputs = prim[params](*inputs)``, with the user's source line for error messages and
    the name stack (``named_scope`` names) it was staged under.

    It also answers to JAX's ``JaxprEqn`` names: ``primitive``, ``invars``, ``outvars``,
    ``source_info.name_stack``, ``effects``; and its ``params`` to JAX's parameter names where
    they differ from Fluxion's (``jaxpr`` of ``jit``, ``call_jaxpr`` of ``custom_jvp_call``).
    """

    __slots__ = ("prim", "inputs", "outputs", "params", "source", "name_stack")

    def __init__(self, prim: Any, inputs: list, outputs: list[Var], params: dict[str, Any],
                 source: str | None = None, name_stack: str = "") -> None:
        self.prim = prim
        self.inputs = inputs
        self.outputs = outputs
        jax_names = _JAX_PARAM_NAMES.get(getattr(prim, "name", None))
        if jax_names is not None and type(params) is not JaxNamedParams:
            params = JaxNamedParams(params, jax_names)
        self.params = params
        self.source = source
        self.name_stack = name_stack

    # JAX's names (``jax.extend.core.JaxprEqn``)
    @property
    def primitive(self) -> Any:
        return self.prim

    @property
    def invars(self) -> list:
        return self.inputs

    @property
    def outvars(self) -> list[Var]:
        return self.outputs

    @property
    def source_info(self) -> SourceInfo:
        return SourceInfo(self.name_stack)

    @property
    def effects(self) -> set | frozenset:
        """JAX's effect set: those the primitive's ``effects`` rule gives for these parameters
        (an ``ffi_call`` with a side effect: ``{FfiEffect()}``) and those of its sub-programs
        (a ``set``, as JAX's), else ``frozenset()`` (JAX's ``no_effects``). Fluxion marks host
        callbacks on the primitive (``effectful``) without effect objects, so they add none."""
        rule = self.prim.effects
        own = set(rule(self.params)) if rule is not None else set()
        subs = list(_programs_in(self.params)) if self.params else []
        if subs:
            return own.union(*(p.effects for p in subs))
        return own or frozenset()

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
        """True when an equation, or a sub-program of one (a loop body, a branch), has effects
        (host callbacks): such equations are never removed as dead code."""
        return any(_eqn_effectful(e) for e in self.eqns)

    # JAX's names where a ClosedJaxpr is expected: the sub-programs in equation parameters
    # (``params["jaxpr"]`` of scan, ``body_jaxpr`` of while) are closed over no constants.
    @property
    def jaxpr(self) -> "Program":
        """The program itself (JAX's ``ClosedJaxpr.jaxpr``, for a program without constants)."""
        return self

    @property
    def consts(self) -> list:
        """No constants (JAX's ``ClosedJaxpr.consts``); a program with constvars has its values
        elsewhere (``make_jaxpr(...).consts``), so reading them here raises."""
        if self.constvars:
            raise ValueError(f"this program has {len(self.constvars)} constvars whose values it "
                             "does not hold; read them from its ClosedJaxpr (make_jaxpr's result)")
        return []

    @property
    def effects(self) -> set:
        """JAX's effect set: the union of its equations' (see :attr:`Equation.effects`)."""
        return set().union(*(e.effects for e in self.eqns))

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


def _eqn_effectful(eqn: Equation) -> bool:
    if eqn.prim.effectful or (eqn.prim.effects is not None and eqn.prim.effects(eqn.params)):
        return True
    return bool(eqn.params) and any(p.effectful for p in _programs_in(eqn.params))


# primitive -> ``rule(eqn, used_outputs) -> Equation | None``: an equation of which only some
# outputs are used, rewritten to compute just those, from just the inputs they need (JAX's
# ``dce_rules``; a scan drops the ``ys`` and carries nothing reads). None keeps the equation.
DCE_RULES: dict[Any, Any] = {}


def dce(program: Program, used_outputs: Sequence[bool] | None = None) -> Program:
    """Drop equations whose outputs are unused (effectful equations are always kept), and let
    the equations with a rule in ``DCE_RULES`` drop the part of their work no one reads.

    ``used_outputs`` selects outputs to keep (all by default). Inputs are kept, even if unused.
    """
    outvars = list(program.outvars) if used_outputs is None else [
        v for v, keep in zip(program.outvars, used_outputs) if keep]
    live: set[int] = {v.id for v in outvars if isinstance(v, Var)}
    kept: list[Equation] = []
    changed = False
    for eqn in reversed(program.eqns):
        used = [v.id in live for v in eqn.outputs]
        if any(used) or _eqn_effectful(eqn):  # (the cheap test first: most equations are live)
            rule = DCE_RULES.get(eqn.prim)
            if rule is not None and not all(used):
                smaller = rule(eqn, used)
                if smaller is not None:
                    eqn, changed = smaller, True
            kept.append(eqn)
            for a in eqn.inputs:
                if isinstance(a, Var):
                    live.add(a.id)
    kept.reverse()
    if len(kept) == len(program.eqns) and used_outputs is None and not changed:
        return program
    return Program(program.constvars, program.invars, outvars, kept)


def prune_unused_inputs(program: Program) -> tuple[Program, list[int], list[int]]:
    """``program`` without the constvars and invars that no equation and no output reads, and
    the positions of those kept: ``(program, kept_constvars, kept_invars)``. What ``jit`` compiles
    when ``keep_unused`` is False (JAX's default): a call passes fewer buffers, and XLA's entry
    signature is JAX's. Run :func:`dce` first, so that inputs read only by dead equations go too.

    Example:
        >>> import numpy as np
        >>> from fluxion.core.avals import ShapedArray
        >>> a, b = Var(ShapedArray((), np.dtype("float32"))), Var(ShapedArray((), np.dtype("int32")))
        >>> pruned, kc, ki = prune_unused_inputs(Program([], [a, b], [b], []))
        >>> kc, ki, pruned.invars == [b]
        ([], [1], True)
    """
    used = {v.id for v in program.outvars if isinstance(v, Var)}
    for eqn in program.eqns:
        used.update(a.id for a in eqn.inputs if isinstance(a, Var))
    kept_c = [i for i, v in enumerate(program.constvars) if v.id in used]
    kept_i = [i for i, v in enumerate(program.invars) if v.id in used]
    if len(kept_c) == len(program.constvars) and len(kept_i) == len(program.invars):
        return program, kept_c, kept_i
    return (Program([program.constvars[i] for i in kept_c], [program.invars[i] for i in kept_i],
                    program.outvars, program.eqns), kept_c, kept_i)


# ----------------------------------------------------------------------------- printing
# Programs print exactly as JAX's make_jaxpr prints jaxprs: one naming context shared by nested
# programs, unused equation outputs of the printed program as ``_``, parameters sorted by name
# (or as a primitive's printing rule orders them), and a small document-layout printer that puts a
# group of text on one line when it fits in 80 columns and breaks it into lines otherwise.

_WIDTH = 80
_ADDRESS = re.compile(r" at 0x([0-9a-fA-F]+)")


class _Doc:
    """A layout document. ``flat`` is its width when printed on one line."""

    __slots__ = ("kind", "text", "children", "indent", "flat")

    def __init__(self, kind: str, text: str = "", children: tuple = (), indent: int = 0) -> None:
        self.kind = kind            # "text", "break", "concat", "group" or "nest"
        self.text = text            # text, or what a break prints when its group is flat
        self.children = children
        self.indent = indent
        self.flat = len(text) + sum(c.flat for c in children)


def _text(s: str) -> _Doc:
    return _Doc("text", s)


def _brk(s: str = " ") -> _Doc:
    return _Doc("break", s)


def _cat(*docs: _Doc) -> _Doc:
    return _Doc("concat", children=docs)


def _group(doc: _Doc) -> _Doc:
    return _Doc("group", children=(doc,))


def _nest(n: int, doc: _Doc) -> _Doc:
    return _Doc("nest", children=(doc,), indent=n)


def _join(sep: _Doc, docs: Sequence[_Doc]) -> _Doc:
    parts: list[_Doc] = []
    for i, d in enumerate(docs):
        if i:
            parts.append(sep)
        parts.append(d)
    return _Doc("concat", children=tuple(parts))


def _layout(doc: _Doc, width: int = _WIDTH) -> str:
    """Print ``doc``: a group is flat when its own one-line width fits in the rest of the line
    (what follows the group is not counted, as in JAX's printer); breaks outside any flat group
    are newlines indented by the enclosing nests."""
    out: list[str] = []
    col = 0
    stack: list[tuple[int, bool, _Doc]] = [(0, False, doc)]
    while stack:
        indent, flat, d = stack.pop()
        kind = d.kind
        if kind == "text":
            out.append(d.text)
            col += len(d.text)
        elif kind == "concat":
            stack.extend((indent, flat, c) for c in reversed(d.children))
        elif kind == "break":
            if flat:
                out.append(d.text)
                col += len(d.text)
            else:
                out.append("\n" + " " * indent)
                col = indent
        elif kind == "nest":
            stack.append((indent + d.indent, flat, d.children[0]))
        else:  # group
            stack.append((indent, flat or d.flat <= width - col, d.children[0]))
    return "".join(out)


def _dropped(program: Program) -> set[int]:
    """Equation outputs that nothing after them reads (printed ``_``)."""
    used = {v.id for v in program.outvars if isinstance(v, Var)}
    dropped: set[int] = set()
    for eqn in reversed(program.eqns):
        dropped.update(v.id for v in eqn.outputs if v.id not in used)
        used.update(a.id for a in eqn.inputs if isinstance(a, Var))
    return dropped


def _var_name(n: int) -> str:
    """Names in JAX's order: a ... z, ba, bb, ... (base-26 digits written as letters)."""
    s = ""
    while not s or n:
        n, i = divmod(n, 26)
        s = chr(97 + i) + s
    return s


def _programs_in(params: dict[str, Any]) -> list[Program]:
    found: list[Program] = []
    for v in params.values():
        if isinstance(v, Program):
            found.append(v)
        elif isinstance(v, tuple):
            found.extend(p for p in v if isinstance(p, Program))
    return found


class _Printer:
    """One printing of a program: the names of its variables and of its shared sub-programs."""

    def __init__(self, top: Program) -> None:
        self.names: dict[int, str] = {i: "_" for i in _dropped(top)}
        self.shared: dict[int, str] = {}     # id(program) -> name of its ``let`` definition
        self.reserved: set[str] = set()
        self.next_name = 0

    def var(self, v: Any) -> str:
        if isinstance(v, Literal):
            return f"{v.text()}:{v.aval.str_short()}"
        n = self.names.get(v.id)
        if n is None:
            n = _var_name(self.next_name)
            self.next_name += 1
            while n in self.reserved:
                n = _var_name(self.next_name)
                self.next_name += 1
            self.names[v.id] = n
        return n

    def vars(self, vs: Sequence[Any], sep: str = "", types: bool = False) -> _Doc:
        items = [_text(f"{self.var(v)}:{v.aval.str_short()}" if types else self.var(v))
                 for v in vs]
        return _nest(2, _group(_join(_cat(_text(sep), _group(_brk())), items)))

    def value(self, v: Any) -> _Doc:
        if isinstance(v, Program):
            return self.program(v)
        if isinstance(v, tuple) and v and all(isinstance(p, Program) for p in v):
            return _group(_cat(_nest(2, _cat(_text("("), _brk(""),
                                             _join(_brk(), [self.program(p) for p in v]))),
                               _brk(""), _text(")")))
        if isinstance(v, type) and issubclass(v, np.generic):
            v = np.dtype(v)
        text = v.name if isinstance(v, np.dtype) else str(v)
        return _text(_ADDRESS.sub(lambda m: " at 0x" + "X" * len(m.group(1)), text))

    def equation(self, eqn: Equation) -> _Doc:
        lhs = self.vars(eqn.outputs, types=True)  # named first: outputs, then params, inputs
        rule = eqn.prim.print_params
        pairs = rule(eqn.params) if rule is not None else sorted(eqn.params.items())
        head = [_text(eqn.prim.name)]
        if pairs:
            kvs = [_cat(_text(f"{k}="), self.value(v)) for k, v in pairs]
            head.append(_group(_cat(_nest(2, _cat(_text("["), _brk(""), _join(_brk(), kvs))),
                                    _brk(""), _text("]"))))
        head.append(_cat(_text(" "), self.vars(eqn.inputs)))
        if not eqn.outputs:
            return _cat(*head)
        return _cat(lhs, _text(" = "), *head)

    def skeleton(self, program: Program) -> _Doc:
        consts = self.vars(program.constvars, types=True)
        args = self.vars(program.invars, types=True)
        eqns = _join(_brk("; "), [self.equation(e) for e in program.eqns])
        close = ")" if len(program.outvars) != 1 else ",)"
        outs = _cat(_text("("), self.vars(program.outvars, sep=","), _text(close))
        return _cat(_group(_nest(2, _cat(
            _text("{ lambda "), consts, _text("; "), args, _text(". let"),
            _nest(2, _cat(_brk(), eqns)), _brk(), _text("in "), outs))), _text(" }"))

    def program(self, program: Program) -> _Doc:
        name = self.shared.get(id(program))
        return _text(name) if name is not None else self.skeleton(program)

    def top(self, program: Program) -> _Doc:
        # Like JAX: a sub-program used more than once, or a big one (over 10 equations), is
        # printed once before the program, as ``let <name> = { ... } in``.
        counts: dict[int, int] = {}
        programs: dict[int, Program] = {}
        names: dict[int, str] = {}
        queue = collections.deque([program])
        while queue:
            p = queue.popleft()
            programs[id(p)] = p
            counts[id(p)] = counts.get(id(p), 0) + 1
            if p is not program and len(p.eqns) > 10:
                counts[id(p)] += 1
            for eqn in p.eqns:
                subs = _programs_in(eqn.params)
                queue.extend(subs)
                name = eqn.params.get("name")
                if isinstance(name, str):
                    for s in subs:
                        names.setdefault(id(s), name.strip("<>"))
        taken: dict[str, int] = {}
        docs = []
        for key, c in counts.items():
            if c == 1:
                continue
            name = names.get(key, "jaxpr")
            count = taken.get(name, 0)
            taken[name] = count + 1
            if count:
                name += str(count)
                taken[name] = taken.get(name, 0) + 1
            self.reserved.add(name)
            self.shared[key] = name
            docs.append((name, programs[key]))
        parts = [_cat(_text(f"let {name} = "), self.skeleton(p), _text(" in"), _brk())
                 for name, p in docs]
        parts.append(self.skeleton(program))
        return _cat(*parts)


def format_program(program: Program) -> str:
    """The text of a program, as JAX's ``make_jaxpr`` prints a jaxpr."""
    return _layout(_Printer(program).top(program))


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
        if eqn.name_stack:  # bound again under the names it was recorded with (JAX's eval_jaxpr)
            with pushed(rendered_entries(eqn.name_stack)):
                out = eqn.prim.bind(*[read(a) for a in eqn.inputs], **eqn.params)
        else:
            out = eqn.prim.bind(*[read(a) for a in eqn.inputs], **eqn.params)
        if eqn.prim.multiple_results:
            for v, o in zip(eqn.outputs, out):
                env[v.id] = o
        else:
            env[eqn.outputs[0].id] = out
    return [read(v) for v in program.outvars]

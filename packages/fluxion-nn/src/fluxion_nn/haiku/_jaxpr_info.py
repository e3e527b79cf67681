"""``hk.experimental.jaxpr_info``: what a function computes, grouped by Haiku module.

:func:`make_model_info` stages the function (``fluxion.make_jaxpr``), keeps the operations that
reach its outputs, and nests them by their name stack (Haiku modules name their operations, as
``fluxion.named_scope`` does) and by the sub-programs of calls (``jit``, ``scan``, ``while``,
``remat``, custom derivatives). Parameter and state counts per module come from
``hk.experimental.eval_summary``. :func:`format_module` prints the tree as text,
:func:`as_html_page` as a collapsible HTML page.
"""

from __future__ import annotations

import dataclasses
import html
import itertools
from typing import Any, Callable, Mapping, Sequence

import numpy as np

import fluxion

from ._summarise import eval_summary

__all__ = ["Module", "Expression", "ComputeFlopsFn", "make_model_info", "format_module",
           "as_html", "as_html_page", "css", "js"]


@dataclasses.dataclass
class Module:
    """A Haiku module (or name scope, or called sub-program) and what it computes.

    ``flops`` (with ``compute_flops``) counts its expressions and its submodules';
    ``total_param_size``/``param_info`` and ``total_state_size``/``state_info`` describe its
    parameters and state (submodules' included).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_nn.haiku.experimental import jaxpr_info
        >>> info = jaxpr_info.make_model_info(lambda x: jnp.cos(x) * 2, name="f")(jnp.ones(3))
        >>> isinstance(info, jaxpr_info.Module), info.name, [e.primitive for e in info.expressions]
        (True, 'f', ['cos', 'mul'])
    """

    name: str
    flops: int | None = None
    expressions: list[Expression] = dataclasses.field(default_factory=list)
    total_param_size: int = 0
    param_info: dict[str, str] = dataclasses.field(default_factory=dict)
    total_state_size: int = 0
    state_info: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Expression:
    """One operation: its primitive, its variables (named by order of binding: ``a``, ``b``,
    ...), ``details`` (``in f32[2,3], out f32[2]``), ``params`` as text, and for a call of a
    sub-program (or a name scope) the ``submodule`` it contains.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_nn.haiku.experimental import jaxpr_info
        >>> info = jaxpr_info.make_model_info(lambda x: jnp.cos(x) * 2, name="f")(jnp.ones(3))
        >>> e = info.expressions[0]
        >>> isinstance(e, jaxpr_info.Expression), e.primitive, e.invars, e.outvars
        (True, 'cos', 'a', 'b')
    """

    primitive: str
    invars: str
    outvars: str
    flops: int | None = None
    details: str = ""
    params: dict[str, str] = dataclasses.field(default_factory=dict)
    submodule: Module | None = None
    first_outvar: str = ""
    name_stack: Sequence[str] = dataclasses.field(default_factory=list)


ComputeFlopsFn = Callable[[Any, Expression], int]

_DTYPE_SHORT = {"float": "f", "bfloat": "bf", "uint": "u", "int": "i", "complex": "c"}


def _short_type(aval: Any) -> str:
    dtype = np.dtype(aval.dtype) if not hasattr(aval.dtype, "name") else aval.dtype
    name = str(getattr(dtype, "name", dtype))
    for long, short in _DTYPE_SHORT.items():
        if name.startswith(long) and name[len(long):].isdigit():
            name = short + name[len(long):]
            break
    if name == "bool":
        name = "bool"
    return f"{name}[{','.join(str(d) for d in aval.shape)}]"


def _letters(n: int) -> str:
    s = ""
    while not s or n:
        n, i = divmod(n, 26)
        s = chr(97 + i) + s
    return s


def _is_literal(atom: Any) -> bool:
    return type(atom).__name__ == "Literal"


def _is_drop(atom: Any) -> bool:
    return type(atom).__name__ == "DropVar" or str(atom) == "_"


def _sub_program(eqn: Any) -> tuple[str, Any, int] | None:
    """(name, program, flops multiplier) of an equation that calls a sub-program, else None."""
    p = eqn.params
    prim = eqn.primitive.name

    def body(x: Any) -> Any:
        return getattr(x, "jaxpr", x)

    if prim in ("jit", "pjit", "closed_call", "core_call"):
        return str(p.get("name", prim)), body(p.get("jaxpr", p.get("call_jaxpr"))), 1
    if prim in ("named_call", "xla_call"):
        return str(p["name"]), body(p["call_jaxpr"]), 1
    if prim in ("remat", "remat2", "checkpoint"):
        return "remat", body(p["jaxpr"]), 1
    if prim == "while":
        return "while", body(p["body_jaxpr"]), 1
    if prim == "scan":
        unroll = p.get("unroll", 1)
        length = p["length"]
        mult = length // unroll if isinstance(unroll, int) and unroll > 0 else length
        return f"scan length={length} unroll={unroll}", body(p["jaxpr"]), mult
    if prim in ("custom_jvp_call", "custom_vjp_call"):
        return prim[: -len("_call")], body(p.get("call_jaxpr", p.get("fun_jaxpr"))), 1
    if prim in ("custom_jvp_call_jaxpr", "custom_vjp_call_jaxpr"):
        return prim[: -len("_call_jaxpr")], body(p["fun_jaxpr"]), 1
    if prim == "shard_map":
        mesh = p.get("mesh")
        return "shard_map", body(p["jaxpr"]), int(getattr(mesh, "size", 1) or 1)
    return None


def _walk(program: Any, compute_flops: ComputeFlopsFn | None, module: Module) -> int | None:
    """Fill ``module.expressions`` with the operations of ``program`` that reach its outputs,
    in program order; returns their flops (None without ``compute_flops``)."""
    binders = itertools.chain(program.constvars, program.invars,
                              itertools.chain.from_iterable(e.outvars for e in program.eqns))
    names = {id(v): _letters(i) for i, v in enumerate(binders)}

    def name(atom: Any) -> str:
        if _is_drop(atom):
            return "_"
        if _is_literal(atom):
            return str(atom)
        return names.get(id(atom), "?")

    # liveness, from the outputs back
    live_vars = {id(v) for v in program.outvars if not _is_literal(v)}
    live = []
    for eqn in reversed(program.eqns):
        if any(id(v) in live_vars for v in eqn.outvars if not _is_drop(v)):
            live.append(eqn)
            live_vars.update(id(v) for v in eqn.invars if not _is_literal(v))
    live.reverse()

    total = None if compute_flops is None else 0
    for eqn in live:
        outs = sorted((name(v) for v in eqn.outvars), key=lambda s: (1000 if s == "_" else len(s), s))
        stack = str(eqn.source_info.name_stack) if getattr(eqn, "source_info", None) else ""
        ins = [name(v) for v in eqn.invars]
        expr = Expression(
            primitive=eqn.primitive.name,
            invars=" ".join(ins) if len(ins) < 10 else f"{len(ins)} inputs",
            outvars=" ".join(outs) if len(outs) < 10 else f"{outs[0]}, {len(outs) - 1} more outputs",
            first_outvar=outs[0] if outs else "_",
            name_stack=stack.split("/") if stack else [])
        sub = _sub_program(eqn)
        if sub is not None:
            sub_name, sub_program, mult = sub
            expr.submodule = Module(name=sub_name)
            flops = _walk(sub_program, compute_flops, expr.submodule)
            if flops is not None:
                flops *= mult
            expr.submodule.flops = expr.flops = flops
            if compute_flops is not None and not flops:
                continue
        else:
            details = []
            if eqn.invars:
                details.append("in " + ", ".join(_short_type(v.aval) for v in eqn.invars))
            if eqn.outvars:
                details.append("out " + ", ".join(_short_type(v.aval) for v in eqn.outvars))
            expr.details = ", ".join(details)
            expr.params.update({k: str(v) for k, v in eqn.params.items()})
            flops = None if compute_flops is None else compute_flops(eqn, expr)
            expr.flops = flops
        module.expressions.append(expr)
        if total is not None and flops:
            total += flops
    module.flops = total
    return total


def _scopes_to_modules(module: Module) -> None:
    """Nest ``module``'s expressions by their name stacks (each scope a ``name_scope``
    expression holding a Module), recursively into sub-programs."""
    exprs, module.expressions = module.expressions, []
    if module.flops:
        module.flops = 0
    open_scopes = [module]
    for e in exprs:
        if e.submodule is not None:
            _scopes_to_modules(e.submodule)
        depth = 1
        for part in e.name_stack:
            if depth < len(open_scopes) and open_scopes[depth].name != part:
                del open_scopes[depth:]
            if depth == len(open_scopes):
                scope = Expression(primitive="name_scope", invars="", outvars="",
                                   submodule=Module(name=part))
                open_scopes[-1].expressions.append(scope)
                open_scopes.append(scope.submodule)
            depth += 1
        del open_scopes[depth:]
        open_scopes[-1].expressions.append(e)
        if e.flops:
            for m in open_scopes:
                m.flops = (m.flops or 0) + e.flops


def _add_param_counts(info: Module, prefix: str, by_name: Mapping[str, Any]) -> None:
    found = by_name.get(prefix)
    if found is not None:
        details = found.module_details
        info.total_param_size = sum(spec.size for spec in details.params.values())
        info.total_state_size = sum(spec.size for spec in details.state.values())
        for k, spec in details.params.items():
            info.param_info[k.replace("/~/", "/").replace(prefix, ".")] = str(spec)
        for k, spec in details.state.items():
            info.state_info[k.replace("/~/", "/").replace(prefix, ".")] = str(spec)
    for e in info.expressions:
        if e.submodule is not None:
            _add_param_counts(e.submodule, f"{prefix}/{e.submodule.name}", by_name)


def make_model_info(f: Callable[..., Any], name: str | None = None,
                    include_module_info: bool = True,
                    compute_flops: ComputeFlopsFn | None = None,
                    axis_env: Sequence[tuple[Any, int]] | None = None) -> Callable[..., Module]:
    """A function that, given ``f``'s arguments, returns a :class:`Module` tree of what ``f``
    computes: Haiku modules and named scopes as nested Modules (with their parameter and state
    counts when ``include_module_info``), operations as :class:`Expression`\\ s, flops when
    ``compute_flops(eqn, expression)`` is given. ``axis_env`` names mapped axes (as
    ``fluxion.make_jaxpr``'s).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_nn.haiku.experimental import jaxpr_info
        >>> def add(x, y):
        ...     return jnp.cos(x) + y
        >>> info = jaxpr_info.make_model_info(add)(jnp.ones(3), jnp.ones(3))
        >>> print(jaxpr_info.format_module(info).strip())
        add
          cos in f32[3], out f32[3]
          add in f32[3], f32[3], out f32[3]
    """
    root_name = name or getattr(f, "__name__", "fn")
    staged = fluxion.make_jaxpr(f, axis_env=axis_env) if axis_env else fluxion.make_jaxpr(f)
    summary = eval_summary(lambda *a, **k: f(*a, **k)) if include_module_info else None

    def make_module(*args: Any, **kwargs: Any) -> Module:
        program = staged(*args, **kwargs).jaxpr
        module = Module(name=root_name)
        _walk(program, compute_flops, module)
        _scopes_to_modules(module)
        if summary is not None:
            by_name = {i.module_details.module.module_name.replace("/~/", "/"): i
                       for i in summary(*args, **kwargs)}
            for e in module.expressions:
                if e.submodule is not None:
                    _add_param_counts(e.submodule, e.submodule.name, by_name)
        return module

    return make_module


def _decimal(n: int, unit: str) -> str:
    for prefix, exponent in (("E", 18), ("P", 15), ("T", 12), ("G", 9), ("M", 6), ("k", 3)):
        if n > 10 ** exponent:
            return f"{n / 10 ** exponent:.4g} {prefix}{unit}"
    return f"{n} {unit}"


def format_module(module: Module, depth: int = 0) -> str:
    """``module`` as indented text: one line per module (flops, params, state) and per
    expression (primitive, flops, in/out types).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> from fluxion_nn.haiku.experimental import jaxpr_info
        >>> f = hk.transform(lambda x: hk.Linear(2)(x))
        >>> x = jnp.ones((1, 3))
        >>> params = f.init(fluxion.random.PRNGKey(0), x)
        >>> info = jaxpr_info.make_model_info(f.apply, name="apply")(params, None, x)
        >>> print(jaxpr_info.format_module(info).strip())
        apply
          linear 8 params
            dot_general in f32[1,3], f32[3,2], out f32[1,2]
            broadcast_in_dim in f32[2], out f32[1,2]
            add in f32[1,2], f32[1,2], out f32[1,2]
    """
    line = "  " * depth + module.name
    if module.flops is not None:
        line += " " + _decimal(module.flops, "flops")
    if module.total_param_size > 0:
        line += " " + _decimal(module.total_param_size, "params")
    if module.total_state_size > 0:
        line += " " + _decimal(module.total_state_size, "state")
    return line + "\n" + "".join(_format_expression(e, depth + 1) for e in module.expressions)


def _format_expression(e: Expression, depth: int) -> str:
    if e.submodule is not None:
        return format_module(e.submodule, depth)
    line = "  " * depth + e.primitive
    if e.flops is not None:
        line += " " + _decimal(e.flops, "flops")
    return line + " " + e.details + "\n"


def css() -> str:
    """The style sheet of :func:`as_html` trees (collapsible nested lists).

    Example:
        >>> from fluxion_nn.haiku.experimental import jaxpr_info
        >>> style = jaxpr_info.css()
        >>> isinstance(style, str) and "{" in style
        True
    """
    return ("ol.hk-tree, .hk-tree ol { list-style: none; padding-left: 1.5em; margin: 0; }\n"
            ".hk-tree li > details > summary { cursor: pointer; }\n"
            ".hk-tree .hk-module { font-weight: bold; }\n"
            ".hk-tree .hk-stats { color: #666; margin-left: 0.5em; }\n"
            ".hk-tree .hk-details { color: #444; margin-left: 0.5em; font-family: monospace; }\n")


def js() -> str:
    """The script of :func:`as_html_page`: expands every tree node on a double click.

    Example:
        >>> from fluxion_nn.haiku.experimental import jaxpr_info
        >>> script = jaxpr_info.js()
        >>> isinstance(script, str) and "function" in script
        True
    """
    return ("document.addEventListener('dblclick', function () {\n"
            "  document.querySelectorAll('.hk-tree details').forEach("
            "function (d) { d.open = !d.open; });\n"
            "});\n")


def _stats(m: Module) -> str:
    parts = []
    if m.flops is not None:
        parts.append(_decimal(m.flops, "flops"))
    if m.total_param_size:
        parts.append(_decimal(m.total_param_size, "params"))
    if m.total_state_size:
        parts.append(_decimal(m.total_state_size, "state"))
    return ", ".join(parts)


def as_html(module: Module, min_flop: int = 1000) -> str:
    """``module`` as a collapsible HTML list (modules open and close; expressions with flops
    below ``min_flop`` are left out when flops were computed).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_nn.haiku.experimental import jaxpr_info
        >>> info = jaxpr_info.make_model_info(lambda x: jnp.cos(x), name="f")(jnp.ones(3))
        >>> html = jaxpr_info.as_html(info, min_flop=0)
        >>> html.startswith("<"), "cos" in html
        (True, True)
    """
    def render(m: Module, depth: int) -> str:
        items = []
        for e in m.expressions:
            if e.submodule is not None:
                items.append(f"<li>{render(e.submodule, depth + 1)}</li>")
            elif e.flops is None or e.flops >= min_flop:
                stats = f'<span class="hk-stats">{_decimal(e.flops, "flops")}</span>' if e.flops else ""
                items.append(f"<li>{html.escape(e.primitive)}{stats}"
                             f'<span class="hk-details">{html.escape(e.details)}</span></li>')
        head = (f'<span class="hk-module">{html.escape(m.name)}</span>'
                f'<span class="hk-stats">{html.escape(_stats(m))}</span>')
        opened = " open" if depth < 2 else ""
        return f"<details{opened}><summary>{head}</summary><ol>{''.join(items)}</ol></details>"

    return f'<ol class="hk-tree"><li>{render(module, 0)}</li></ol>'


def as_html_page(module: Module, min_flop: int = 1000) -> str:
    """A whole HTML page showing ``module`` (:func:`as_html` with :func:`css` and :func:`js`).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_nn.haiku.experimental import jaxpr_info
        >>> info = jaxpr_info.make_model_info(lambda x: jnp.cos(x), name="f")(jnp.ones(3))
        >>> page = jaxpr_info.as_html_page(info)
        >>> "<html" in page, "<style>" in page, "<script>" in page
        (True, True, True)
    """
    return (f"<html>\n<head>\n<style>{css()}</style>\n<script>{js()}</script>\n</head>\n"
            f"<body>{as_html(module, min_flop=min_flop)}</body>\n</html>\n")

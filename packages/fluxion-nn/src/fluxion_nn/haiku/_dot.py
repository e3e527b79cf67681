"""``hk.to_dot`` / ``hk.experimental.abstract_to_dot``: a function's operations as a graphviz
graph, clustered by Haiku module.

The function is staged (``fluxion.make_jaxpr``, so abstract ``ShapeDtypeStruct`` inputs work as
well as concrete ones); each operation is a node, each value flowing between operations an edge,
and operations are grouped into nested clusters by their name stack (Haiku modules name their
operations, as ``fluxion.named_scope`` does). Calls of sub-programs (``jit``, ``scan``, ...) are
clusters of their own.
"""

from __future__ import annotations

import functools
import html
import itertools
from typing import Any, Callable

import fluxion

from ._jaxpr_info import _short_type, _sub_program

__all__ = ["to_dot", "abstract_to_dot"]


class _Cluster:
    def __init__(self, title: str):
        self.title = title
        self.nodes: list[str] = []
        self.children: dict[str, _Cluster] = {}

    def child(self, title: str) -> _Cluster:
        if title not in self.children:
            self.children[title] = _Cluster(title)
        return self.children[title]

    def depth(self) -> int:
        return 1 + max((c.depth() for c in self.children.values()), default=0)


def _esc(x: Any) -> str:
    return html.escape(str(x))


def _graph(program: Any, title: str, arg_labels: list[str], out_labels: list[str]) -> str:
    ids = itertools.count()
    producer: dict[int, str] = {}   # id(var) -> node id
    lines: list[str] = []
    edges: list[str] = []
    root = _Cluster(title)

    for var, label in zip(program.invars, arg_labels):
        node = f"n{next(ids)}"
        producer[id(var)] = node
        lines.append(f'{node} [label=<<b>{_esc(label)}</b><br/>{_esc(_short_type(var.aval))}>, '
                     'shape=rect, style="filled", color="#FF8A4F", fillcolor="#FFDEAF"];')
    for var in program.constvars:
        node = f"n{next(ids)}"
        producer[id(var)] = node
        lines.append(f'{node} [label=<<b>{_esc(_short_type(var.aval))}</b>>, shape=rect, '
                     'style="filled", color="#A261FF", fillcolor="#E6D6FF"];')

    def add(prog: Any, cluster: _Cluster) -> None:
        for eqn in prog.eqns:
            stack = str(eqn.source_info.name_stack) if getattr(eqn, "source_info", None) else ""
            where = cluster
            for part in (stack.split("/") if stack else []):
                where = where.child(part)
            node = f"n{next(ids)}"
            outs = "".join(f"<br/>{_esc(_short_type(v.aval))}" for v in eqn.outvars)
            sub = _sub_program(eqn)
            where.nodes.append(f'{node} [label=<<b>{_esc(eqn.primitive.name)}</b>{outs}>, '
                               'shape=rect, style="filled", color="#FFDB13", fillcolor="#FFF26E"];')
            for v in eqn.invars:
                src = producer.get(id(v))
                if src is not None:
                    edges.append(f"{src} -> {node};")
            for v in eqn.outvars:
                producer[id(v)] = node
            if sub is not None:
                inner_name, inner, _ = sub
                inner_cluster = where.child(f"{eqn.primitive.name} ({inner_name})")
                for outer_v, inner_v in zip(eqn.invars, inner.invars):
                    if id(outer_v) in producer:
                        producer[id(inner_v)] = producer[id(outer_v)]
                add(inner, inner_cluster)

    add(program, root)

    def render(c: _Cluster, depth: int) -> None:
        for sub in c.children.values():
            lines.append(f"subgraph cluster_{next(ids)} {{")
            lines.append('  style="rounded,filled"; fillcolor="#F0F5F5"; color="#14234B";')
            lines.append(f"  fontsize={int(1.4 ** depth * 14)}; label = <<b>{_esc(sub.title)}</b>>; "
                         "labelloc = t;")
            render(sub, depth - 1)
            lines.append("}")
        lines.extend(c.nodes)

    render(root, root.depth())
    for var, label in zip(program.outvars, out_labels):
        node = f"n{next(ids)}"
        lines.append(f'{node} [label=<<b>{_esc(label)}</b><br/>{_esc(_short_type(var.aval))}>, '
                     'shape=rect, style="filled,bold", color="#0053D6", fillcolor="#AABFFF"];')
        src = producer.get(id(var))
        if src is not None:
            edges.append(f"{src} -> {node};")
    head = ["digraph G {", "rankdir = TD;", "compound = true;",
            f"label = <<b>{_esc(title)}</b>>;", f"fontsize={int(1.4 ** root.depth() * 14)};",
            "labelloc = t;"]
    return "\n".join(head + lines + edges + ["} // digraph G"]) + "\n"


def _paths(tree: Any, prefix: str) -> list[str]:
    leaves = fluxion.tree_util.tree_flatten_with_path(tree)[0]
    return [prefix + fluxion.tree_util.keystr(p) for p, _ in leaves]


def to_dot(fun: Callable[..., Any]) -> Callable[..., str]:
    """A function returning graphviz source of what ``fun`` computes on its arguments: one node
    per operation, clustered by the Haiku module (or named scope) that ran it.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.transform(lambda x: hk.Linear(2)(x))
        >>> params = f.init(fluxion.random.PRNGKey(0), jnp.ones((1, 3)))
        >>> dot = hk.to_dot(f.apply)(params, None, jnp.ones((1, 3)))
        >>> dot.startswith("digraph"), "linear" in dot
        (True, True)
    """
    @functools.wraps(fun)
    def wrapped(*args: Any) -> str:
        staged, out_shape = fluxion.make_jaxpr(fun, return_shape=True)(*args)
        title = getattr(fun, "__name__", str(fun))
        return _graph(staged.jaxpr, title, _paths(args, "args"), _paths(out_shape, "output"))

    return wrapped


def abstract_to_dot(fun: Callable[..., Any]) -> Callable[..., str]:
    """:func:`to_dot` for abstract arguments (``fluxion.ShapeDtypeStruct``, or arrays): the
    function is only staged, never run.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.transform(lambda x: hk.Linear(2)(x))
        >>> params = f.init(fluxion.random.PRNGKey(0), jnp.ones((1, 3)))
        >>> dot = hk.experimental.abstract_to_dot(f.apply)(params, None, jnp.ones((1, 3)))
        >>> dot.startswith("digraph"), "linear" in dot
        (True, True)
    """
    return to_dot(fun)

"""``tabulate``: a table of the method calls a model makes on an input, with each object's
Variables grouped by type (shapes, metadata, counts and bytes), as ``flax.nnx.tabulate``.

The table is drawn by ``rich`` and its cells are written as YAML by ``pyyaml``, so the layout is
flax's line for line. Both are optional dependencies, the ``summary`` extra
(``pip install -e packages/fluxion-nn[summary]`` in the repository, or ``pip install rich pyyaml``).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import io
import itertools
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

import fluxion
import fluxion.tree_util as tree_util

from ._sizes import SizeBytes
from .graph import clone, merge, split
from .graph import state as graph_state
from .module import Module
from .pytreelib import Pytree
from .rnglib import RngState, RngStream
from .statelib import State
from .variablelib import Variable

try:  # optional: only tabulate needs them (flax depends on both)
    import rich.console
    import rich.table
    import rich.text
    import yaml
except ImportError:  # pragma: no cover - the test extra installs them
    rich = None
    yaml = None

__all__ = ["tabulate", "CallInfo", "SizeBytes"]

# metadata every Variable carries; not shown in the table (flax's Variable.required_metadata)
_REQUIRED_METADATA = frozenset({"eager_sharding", "hijax", "ref"})


class _ObjectInfo(NamedTuple):
    path: tuple
    stats: dict  # Variable type -> SizeBytes, this object and everything below it
    groups: dict  # Variable type -> {attribute name: Variable}, this object's own


@dataclasses.dataclass
class CallInfo:
    """One recorded method call (a row of the table): its order, the object called (id, type,
    path), the inputs as text, the outputs (arrays as shapes) and the FLOPs estimates."""

    call_order: int
    object_id: int
    type: type
    path: tuple
    inputs_repr: str
    outputs: Any
    flops: int | None
    vjp_flops: int | None


def filter_rng_streams(row: CallInfo) -> bool:
    """The default ``row_filter``: every call except those of ``RngStream`` objects."""
    return not issubclass(row.type, RngStream)


def _children(node: Any) -> list[tuple[Any, Any]]:
    if isinstance(node, Pytree):
        return list(vars(node).items())
    if isinstance(node, State):
        return list(node._mapping.items())
    if isinstance(node, dict):
        return list(node.items())
    if isinstance(node, (list, tuple)):
        return list(enumerate(node))
    return []


def _is_node(x: Any) -> bool:
    return isinstance(x, (Pytree, State, dict, list, tuple))


def _var_type(v: Variable) -> type:
    return RngState if isinstance(v, RngState) else type(v)


def _collect_stats(path: tuple, node: Any, infos: dict[int, _ObjectInfo | None],
                   object_types: dict[type, None]) -> None:
    if id(node) in infos:
        return
    info = _ObjectInfo(path, {}, {})
    infos[id(node)] = info
    if isinstance(node, Pytree):
        object_types[type(node)] = None
        # survives split/merge (a static attribute), so a merged copy inside jit is found
        object.__setattr__(node, "_nnx_tabulate_id", id(node))
    for key, value in _children(node):
        if key == "_nnx_tabulate_id":
            continue
        if id(value) in infos:
            continue
        if isinstance(value, Variable):
            t = _var_type(value)
            info.stats[t] = info.stats.get(t, SizeBytes(0, 0)) + SizeBytes.from_any(value.value)
            info.groups.setdefault(t, {})[key] = value
            infos[id(value)] = None
        elif _is_node(value):
            _collect_stats((*path, key), value, infos, object_types)
            child = infos[id(value)]
            for t, sb in child.stats.items():
                info.stats[t] = info.stats.get(t, SizeBytes(0, 0)) + sb


class _ArrayRepr:
    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple, dtype: Any) -> None:
        self.shape, self.dtype = tuple(shape), dtype

    def __str__(self) -> str:
        return f"[dim]{self.dtype}[/dim][{','.join(str(d) for d in self.shape)}]"

    __repr__ = __str__


class _ObjectRepr:
    __slots__ = ("type",)

    def __init__(self, obj: Any) -> None:
        self.type = type(obj)

    def __str__(self) -> str:
        return f"{self.type.__name__}(...)"

    __repr__ = __str__


def _summarize(x: Any) -> Any:
    if isinstance(x, fluxion.ShapeDtypeStruct) or (hasattr(x, "shape") and hasattr(x, "dtype")
                                                   and not isinstance(x, Variable)):
        return _ArrayRepr(x.shape, x.dtype)
    if isinstance(x, (Pytree, Variable)):
        return _ObjectRepr(x)
    return x


def _summary_tree(x: Any) -> Any:
    # arrays -> shapes, graph objects -> ``Type(...)``, everything else kept
    return tree_util.tree_map(_summarize, x, is_leaf=lambda v: isinstance(v, (Pytree, Variable)))


def _plain(x: Any) -> Any:
    """A structure of lists, dicts and strings for YAML (containers kept even when empty)."""
    if x is None:
        return None
    if isinstance(x, type):
        return f"type[{x.__name__}]"
    if isinstance(x, (_ArrayRepr, _ObjectRepr)):
        return str(x)
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, (dict, State)):
        d = x._mapping if isinstance(x, State) else x
        try:  # keys in pytree order (sorted), as flax shows them
            keys = sorted(d)
        except TypeError:
            keys = list(d)
        return {k: _plain(d[k]) for k in keys}
    try:
        flat, treedef = tree_util.tree_flatten_with_path(x)
    except Exception:  # noqa: BLE001 - not a pytree
        return repr(x)
    if treedef.num_nodes == 1 and treedef.num_leaves == 1:  # a leaf
        return repr(x)
    out: dict = {}
    for kp, leaf in flat:  # another pytree node: its leaves by key path
        out[tree_util.keystr(kp)] = _plain(leaf)
    return out


if yaml is not None:
    class _Dumper(yaml.SafeDumper):
        """YAML with ``None`` written as ``None`` (not ``null``)."""

    _Dumper.add_representer(
        type(None), lambda d, _: d.represent_scalar("tag:yaml.org,2002:str", "None"))


def _as_yaml_str(value: Any) -> str:
    if value is None or (hasattr(value, "__len__") and not isinstance(value, _ArrayRepr)
                         and len(value) == 0):
        return ""
    buf = io.StringIO()
    yaml.dump(_plain(value), buf, Dumper=_Dumper, default_flow_style=False, indent=2,
              sort_keys=False, explicit_end=False)
    return buf.getvalue().replace("\n...", "").replace("'", "").strip()


def _inputs_repr(args: tuple, kwargs: dict) -> str:
    args, kwargs = _summary_tree(args), _summary_tree(kwargs)
    out = ""
    if args:
        out += _as_yaml_str(args[0] if len(args) == 1 and not kwargs else args)
        if kwargs:
            out += "\n"
    if kwargs:
        out += _as_yaml_str(kwargs)
    return out


def _flops(lowered: Any) -> int:
    try:
        cost = lowered.cost_analysis()
    except NotImplementedError:
        cost = None
    if not cost:
        cost = lowered.compile().cost_analysis()
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else None
    return 0 if not cost or "flops" not in cost else int(cost["flops"])


def _methods(object_types: dict[type, None]) -> dict[tuple[type, str], Callable]:
    # the public methods (and __call__) of each object type; the module system's own helpers
    # (sow, perturb, iter_modules, ...) are not the model's calls and are left alone
    base = {name: getattr(Module, name) for name in dir(Module)}
    out = {}
    for cls in object_types:
        for name, fn in inspect.getmembers(cls, inspect.isfunction):
            if name.startswith("_") and name != "__call__":
                continue
            if base.get(name) is fn:
                continue
            out[(cls, name)] = fn
    return out


def _recorder(fn: Callable, rows: list[CallInfo], infos: dict, counter: Any, seen: set,
              compute_flops: bool, compute_vjp_flops: bool) -> Callable:
    name = fn.__name__

    def pure(graphdef: Any, st: Any) -> Any:
        args, kwargs = merge(graphdef, st)
        return fn(*args, **kwargs)

    jitted = fluxion.jit(pure)

    def backward(*args: Any, **kwargs: Any) -> Any:
        out, f_vjp = fluxion.vjp(functools.partial(fn, **kwargs), *args)
        return f_vjp(out)

    @functools.wraps(fn)
    def wrapper(obj: Any, *args: Any, **kwargs: Any) -> Any:
        info = infos.get(getattr(obj, "_nnx_tabulate_id", None))
        if info is None:  # an object made during the call: not in the table
            return fn(obj, *args, **kwargs)
        inputs = _inputs_repr(args, kwargs)
        path = info.path if name == "__call__" else (*info.path, name)
        order = next(counter)
        graphdef, st = split(((obj, *args), kwargs))
        if compute_flops:
            lowered = jitted.lower(graphdef, st)
            flops: int | None = _flops(lowered)
            outputs = lowered.out_info
        else:
            flops = None
            outputs = jitted(graphdef, st)
        oid = obj._nnx_tabulate_id
        key = (inputs, oid)
        if key not in seen:
            seen.add(key)
            vjp_flops = (_flops(fluxion.jit(backward).lower(obj, *args, **kwargs))
                         if compute_vjp_flops else None)
            rows.append(CallInfo(order, oid, type(obj), path, inputs, _summary_tree(outputs),
                                 flops, vjp_flops))
        return jitted(graphdef, st)

    return wrapper


def tabulate(obj: Any, *input_args: Any, depth: int | None = None, method: str = "__call__",
             row_filter: Callable[[CallInfo], bool] = filter_rng_streams,
             table_kwargs: Mapping[str, Any] = MappingProxyType({}),
             column_kwargs: Mapping[str, Any] = MappingProxyType({}),
             console_kwargs: Mapping[str, Any] = MappingProxyType({}),
             compute_flops: bool = False, compute_vjp_flops: bool = False,
             **input_kwargs: Any) -> str:
    """A table of the calls ``obj.<method>(*input_args, **input_kwargs)`` makes: one row per
    method call of each object in the graph (path, type, inputs, outputs, optional FLOPs), then
    one column per Variable type with the object's own Variables (shape, dtype, metadata) and
    the counts and bytes of everything below it; the footer totals each type and the caption
    the whole model. The call runs on a copy (``obj`` is not changed), each method under
    ``fluxion.jit``. ``depth`` limits the path length shown, ``row_filter`` picks the rows
    (default: no ``RngStream`` calls); ``table_kwargs``, ``column_kwargs`` and
    ``console_kwargs`` go to ``rich``'s ``Table``, ``add_column`` and ``Console``.
    ``compute_flops`` / ``compute_vjp_flops`` add XLA's FLOPs estimate of each call's forward /
    backward pass. Needs ``rich`` and ``pyyaml``.

    Example::

        >>> import fluxion.numpy as jnp
        >>> import fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> table = nnx.tabulate(model, jnp.ones((1, 2)), console_kwargs={"no_color": True})
        >>> "Total Parameters: 9" in table
        True
    """
    if rich is None or yaml is None:
        raise ImportError("nnx.tabulate needs the packages 'rich' and 'pyyaml' "
                          "(pip install rich pyyaml, or the summary extra: "
                          "pip install -e packages/fluxion-nn[summary])")
    options = {"force_terminal": True, "force_jupyter": False, **console_kwargs}
    obj = clone(obj)  # the call runs on a copy: no side effects on the caller's model
    infos: dict[int, _ObjectInfo | None] = {}
    object_types: dict[type, None] = {}
    _collect_stats((), obj, infos, object_types)
    st = graph_state(obj)
    leaves = [st] if isinstance(st, Variable) else [v for _, v in st.flat_state()]
    var_types = sorted({_var_type(v) for v in leaves if isinstance(v, Variable)},
                       key=lambda t: t.__name__)

    originals = _methods(object_types)
    rows: list[CallInfo] = []
    counter, seen = itertools.count(), set()
    wrapped = {k: _recorder(fn, rows, infos, counter, seen, compute_flops, compute_vjp_flops)
               for k, fn in originals.items()}
    owned = {k: k[1] in vars(k[0]) for k in originals}
    try:
        for (cls, name), fn in wrapped.items():
            setattr(cls, name, fn)
        wrapped[(type(obj), method)](obj, *input_args, **input_kwargs)
    finally:
        for (cls, name), fn in originals.items():
            if owned[(cls, name)]:
                setattr(cls, name, fn)
            else:
                delattr(cls, name)
    rows.sort(key=lambda r: r.call_order)
    rows = [r for r in rows if (depth is None or len(r.path) <= depth) and row_filter(r)]

    table = rich.table.Table(show_header=True, show_lines=True, show_footer=True,
                             title=f"{type(obj).__name__} Summary", **table_kwargs)
    names = ["path", "type", "inputs", "outputs"]
    names += ["flops"] * compute_flops + ["vjp_flops"] * compute_vjp_flops
    for n in names + [t.__name__ for t in var_types]:
        table.add_column(n, **column_kwargs)
    for row in rows:
        info = infos[row.object_id]
        cells = ["/".join(map(str, row.path)), row.type.__name__, row.inputs_repr,
                 _as_yaml_str(row.outputs)]
        if compute_flops:
            cells.append(str(row.flops))
        if compute_vjp_flops:
            cells.append(str(row.vjp_flops))
        for t in var_types:
            cells.append(_variables_cell(info, t))
        table.add_row(*cells)
    first = 3 + int(compute_flops) + int(compute_vjp_flops)
    table.columns[first].footer = rich.text.Text.from_markup("Total", justify="right")
    root = infos[id(obj)]
    for i, t in enumerate(var_types):
        table.columns[first + 1 + i].footer = str(root.stats.get(t, SizeBytes(0, 0)))
    table.caption_style = "bold"
    table.caption = f"\nTotal Parameters: {sum(root.stats.values(), SizeBytes(0, 0))}"
    buf = io.StringIO()
    rich.console.Console(file=buf, **options).print(table)
    return buf.getvalue()


def _variables_cell(info: _ObjectInfo, var_type: type) -> str:
    attrs: dict = {}
    for name, var in info.groups.get(var_type, {}).items():
        value = var.value
        shown = (_ArrayRepr(value.shape, value.dtype)
                 if hasattr(value, "shape") and hasattr(value, "dtype") else "")
        meta = {k: v for k, v in var.get_metadata().items() if k not in _REQUIRED_METADATA}
        if meta:
            attrs[name] = {"value": shown, **meta}
        elif shown:
            attrs[name] = shown
    cell = _as_yaml_str(attrs) + "\n\n" if attrs else ""
    sb = info.stats.get(var_type)
    if sb:
        cell += f"[bold]{sb}[/bold]"
    return cell


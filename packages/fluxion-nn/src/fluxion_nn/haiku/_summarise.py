"""``hk.experimental.eval_summary`` and ``hk.experimental.tabulate``: which module methods a
Haiku function calls, with their inputs', outputs' and parameters' shapes, found by running the
function abstractly (``fluxion.eval_shape``, nothing computed) with a method interceptor."""

from __future__ import annotations

import dataclasses
import functools
import pprint
from typing import Any, Callable, Mapping, Sequence

import numpy as np

try:  # optional: only hk.experimental.tabulate's tables need it
    import tabulate as tabulate_lib
except ImportError:  # pragma: no cover - the test extra installs it
    tabulate_lib = None

import fluxion
import fluxion.random as random

from ._base import _frame
from ._module import MethodContext, intercept_methods
from ._src import utils
from ._transform import get_original_fn, transform_with_state

__all__ = ["ArraySpec", "ModuleDetails", "MethodInvocation", "eval_summary", "tabulate"]


@dataclasses.dataclass(frozen=True)
class ArraySpec:
    """The shape and dtype of an array (printed ``f32[2,3]``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> rows = hk.experimental.eval_summary(hk.transform(lambda x: hk.Linear(2)(x)))(jnp.ones((1, 3)))
        >>> spec = rows[0].args_spec[0]
        >>> isinstance(spec, hk.experimental.ArraySpec), spec.shape, spec.dtype
        (True, (1, 3), dtype('float32'))
    """

    shape: Sequence[int]
    dtype: Any

    __repr__ = __str__ = utils.format_array

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @classmethod
    def from_array(cls, array: Any) -> "ArraySpec":
        return ArraySpec(array.shape, array.dtype)


@dataclasses.dataclass(frozen=True)
class ModuleDetails:
    """A module, the method that ran and the specs of its (and its submodules') parameters and
    state at that point.

    Example: ``ModuleDetails.of(module, "__call__")`` inside a transformed function.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> rows = hk.experimental.eval_summary(hk.transform(lambda x: hk.Linear(2)(x)))(jnp.ones((1, 3)))
        >>> details = rows[0].module_details
        >>> isinstance(details, hk.experimental.ModuleDetails), details.method_name
        (True, '__call__')
        >>> [(name, p.shape) for name, p in details.params.items()]  # key-sorted, as haiku's
        [('linear/b', (2,)), ('linear/w', (3, 2))]
    """

    module: Any
    method_name: str
    params: Mapping[str, ArraySpec]
    state: Mapping[str, ArraySpec]

    @classmethod
    def of(cls, module: Any, method_name: str) -> "ModuleDetails":
        # mapped as a pytree, as haiku's: the dicts come back key-sorted, not in creation order
        params = fluxion.tree_util.tree_map(ArraySpec.from_array, module.params_dict())
        state = fluxion.tree_util.tree_map(ArraySpec.from_array, module.state_dict())
        return ModuleDetails(module, method_name, params, state)


@dataclasses.dataclass(frozen=True)
class MethodInvocation:
    """One module method call: the module's details, the specs of the arguments and output, the
    interceptor context and the modules running at that point (innermost, the module itself, first).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> rows = hk.experimental.eval_summary(hk.transform(lambda x: hk.Linear(2)(x)))(jnp.ones((1, 3)))
        >>> row = rows[0]
        >>> isinstance(row, hk.experimental.MethodInvocation)
        True
        >>> row.module_details.module.module_name, row.output_spec.shape
        ('linear', (1, 2))
    """

    module_details: ModuleDetails
    args_spec: tuple
    kwargs_spec: dict
    output_spec: Any
    context: MethodContext
    call_stack: Sequence[ModuleDetails]


def _to_spec(tree: Any) -> Any:
    return fluxion.tree.map(lambda x: ArraySpec.from_array(x) if isinstance(x, fluxion.Array)
                            else x, tree)


_IGNORED = ("__init__", "params_dict", "state_dict")


def _log(calls: list, next_fun: Callable, args: tuple, kwargs: dict,
         context: MethodContext) -> Any:
    if context.method_name in _IGNORED:
        return next_fun(*args, **kwargs)
    slot = len(calls)
    calls.append(None)  # in call order: the outer call's slot comes first
    out = next_fun(*args, **kwargs)
    stack = tuple(ModuleDetails.of(m, name)  # innermost first, as Haiku's
                  for m, name, _ in reversed(_frame("eval_summary").module_stack))
    calls[slot] = MethodInvocation(ModuleDetails.of(context.module, context.method_name),
                                   _to_spec(args), _to_spec(kwargs), _to_spec(out), context,
                                   stack)
    return out


def eval_summary(f: Callable[..., Any] | Any) -> Callable[..., Sequence[MethodInvocation]]:
    """A function taking ``f``'s arguments and returning the :class:`MethodInvocation` of every
    module method ``f`` calls (constructors left out), in call order. ``f`` is a function that
    uses Haiku modules, or a ``Transformed``/``TransformedWithState`` (or its ``init``/``apply``);
    it runs abstractly (``fluxion.eval_shape``): init then apply, on fixed keys.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.transform(lambda x: hk.nets.MLP([4, 2])(x))
        >>> rows = hk.experimental.eval_summary(f)(jnp.ones((1, 3)))
        >>> [(row.module_details.module.module_name, row.module_details.method_name) for row in rows]
        [('mlp', '__call__'), ('mlp/~/linear_0', '__call__'), ('mlp/~/linear_1', '__call__')]
    """
    try:
        f = get_original_fn(f)
    except AttributeError:
        pass
    current: list = []

    def f_logged(*args: Any, **kwargs: Any) -> None:
        with intercept_methods(functools.partial(_log, current[-1])):
            f(*args, **kwargs)

    f_orig = transform_with_state(lambda *a, **k: f(*a, **k))
    f_log = transform_with_state(f_logged)

    def init_apply(*args: Any, **kwargs: Any) -> None:
        init_rng, apply_rng = random.split(random.PRNGKey(42))
        params, state = f_orig.init(init_rng, *args, **kwargs)
        f_log.apply(params, state, apply_rng, *args, **kwargs)

    def wrapper(*args: Any, **kwargs: Any) -> Sequence[MethodInvocation]:
        calls: list = []
        current.append(calls)
        try:
            with fluxion.disable_jit():
                fluxion.eval_shape(init_apply, *args, **kwargs)
        finally:
            current.pop()
        return calls

    return wrapper


@dataclasses.dataclass(frozen=True)
class _Filter:
    f: Callable[[MethodInvocation], bool]


@dataclasses.dataclass(frozen=True)
class _Column:
    header: str
    f: Callable[[MethodInvocation], str]
    align: str = "left"


def _owned_params(details: ModuleDetails) -> dict:
    out = {}
    for full, spec in details.params.items():
        module_name, name = full.rsplit("/", 1)
        if module_name == details.module.module_name:
            out[name] = spec
    return out


def _format_owned_params(inv: MethodInvocation) -> str:
    params = _owned_params(inv.module_details)
    order = sorted(params.items(), key=lambda kv: (-np.prod(kv[1].shape), kv[0]))
    return "\n".join(f"{k}: {utils.format_array(v)}" for k, v in order)


def _format_input(inv: MethodInvocation) -> str:
    out = ", ".join(map(pprint.pformat, inv.args_spec))
    if inv.kwargs_spec:
        out += "\n" + ", ".join(f"{k}={pprint.pformat(v)}" for k, v in inv.kwargs_spec.items())
    return out


def _format_call_stack(inv: MethodInvocation) -> str:
    def entry(d: ModuleDetails) -> str:
        cls = type(d.module).__name__
        suffix = cls if d.method_name == "__call__" else f"{cls}.{d.method_name}"
        return f"{d.module.module_name} ({suffix})"

    return "\n └ ".join(map(entry, inv.call_stack))


_FILTERS = {
    "has_output": _Filter(lambda r: r.output_spec is not None),
    "has_params": _Filter(lambda r: bool(r.module_details.params)),
}
_COLUMNS = {
    "module": _Column("Module", _format_call_stack),
    "config": _Column("Config", lambda r: repr(r.module_details.module)),
    "owned_params": _Column("Module params", _format_owned_params),
    "input": _Column("Input", _format_input),
    "output": _Column("Output", lambda r: pprint.pformat(r.output_spec)),
    "params_size": _Column("Param count",
                           lambda r: f"{utils.tree_size(r.module_details.params):,}", "right"),
    "params_bytes": _Column("Param bytes", lambda r: utils.format_bytes(
        utils.tree_bytes(r.module_details.params)), "right"),
}
DEFAULT_COLUMNS = ("module", "config", "owned_params", "input", "output", "params_size",
                   "params_bytes")
DEFAULT_FILTERS = ("has_output",)


def tabulate(f: Callable[..., Any] | Any, *, columns: Sequence[str] | None = DEFAULT_COLUMNS,
             filters: Sequence[str] | None = DEFAULT_FILTERS,
             tabulate_kwargs: Mapping[str, Any] | None = None) -> Callable[..., str]:
    """A function taking ``f``'s arguments and returning a table (text) of the module methods it
    calls: one row per call (see :func:`eval_summary`), with the chosen ``columns`` (``module``,
    ``config``, ``owned_params``, ``input``, ``output``, ``params_size``, ``params_bytes``) for
    the calls that pass every filter (``has_output``, ``has_params``). ``tabulate_kwargs`` go to
    the ``tabulate`` package (default ``{"tablefmt": "grid"}``), which must be installed.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.transform(lambda x: hk.Linear(2)(x))
        >>> table = hk.experimental.tabulate(f, columns=("module", "input", "output", "params_size"))
        >>> print(table(jnp.ones((1, 3))))
        +-----------------+----------+----------+---------------+
        | Module          | Input    | Output   |   Param count |
        +=================+==========+==========+===============+
        | linear (Linear) | f32[1,3] | f32[1,2] |             8 |
        +-----------------+----------+----------+---------------+
    """
    summary = eval_summary(f)
    if columns is None:
        columns = DEFAULT_COLUMNS
    bad = [c for c in columns if c not in _COLUMNS]
    if bad:
        raise ValueError(f"Invalid column(s) {bad}, valid columns {list(_COLUMNS)}")
    if filters is None:
        filters = DEFAULT_FILTERS
    bad = [x for x in filters if x not in _FILTERS]
    if bad:
        raise ValueError(f"Invalid filter(s) {bad}, valid filters {list(_FILTERS)}")
    cols = [_COLUMNS[c] for c in columns]
    keep = [_FILTERS[x] for x in filters]
    kwargs = dict(tabulate_kwargs) if tabulate_kwargs is not None else {"tablefmt": "grid"}

    def generate(*args: Any, **kw: Any) -> str:
        rows = [[c.f(inv) for c in cols] for inv in summary(*args, **kw)
                if all(flt.f(inv) for flt in keep)]
        if not rows:
            return "No modules matching filters."
        if tabulate_lib is None:
            raise ImportError("hk.experimental.tabulate needs the `tabulate` package "
                              "(pip install tabulate); eval_summary works without it")
        return tabulate_lib.tabulate(rows, headers=[c.header for c in cols],
                                     colalign=[c.align for c in cols], **kwargs)

    return generate

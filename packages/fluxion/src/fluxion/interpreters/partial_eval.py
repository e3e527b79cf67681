"""``fluxion.interpreters.partial_eval`` (JAX's ``jax.interpreters.partial_eval``):
``PartialVal`` and ``trace_to_jaxpr_nounits``, partial evaluation of a function whose inputs are
partly known (concrete) and partly unknown (only their abstract values).

Operations whose operands are all known run now; the rest are staged into a jaxpr over the
unknown inputs. Each output is known (its value) or unknown (its abstract value, computed by the
jaxpr). This is what flax's ``nn.scan`` and ``lazy_init`` use. JAX's other partial-evaluation
internals (``JaxprTracer``, the rule tables) have no counterpart in Fluxion and raise an
``AttributeError`` (listed in docs/guide/coming-from-jax.md).

Example:
    >>> import numpy as np
    >>> import fluxion.numpy as jnp
    >>> from fluxion.core import ShapedArray
    >>> from fluxion.extend import linear_util as lu
    >>> f = lu.wrap_init(lambda k, u: [k * 2.0, jnp.sin(u) + k])
    >>> pvals = [PartialVal.known(np.float32(3)), PartialVal.unknown(ShapedArray((), np.float32))]
    >>> jaxpr, out_pvals, consts = trace_to_jaxpr_nounits(f, pvals)
    >>> float(out_pvals[0].get_known()), out_pvals[1].is_known(), len(jaxpr.invars)
    (6.0, False, 1)
"""

from __future__ import annotations

from typing import Any, Sequence

from fluxion.core.avals import AbstractValue, ShapedArray
from fluxion.core.ir import Program
from fluxion.core.trace import Interpreter, Tracer, current, interpreter_scope, set_current
from fluxion.transforms.staging import abstractify, trace_to_program
from fluxion.tree_util import physical

__all__ = ["PartialVal", "trace_to_jaxpr_nounits"]


class PartialVal(tuple):
    """``(aval, const)``: a known value (``aval`` is None, ``const`` the value) or an unknown
    one (``aval`` its abstract value, ``const`` None).

    Example:
        >>> PartialVal.known(2.0).is_known(), PartialVal.known(2.0).get_known()
        (True, 2.0)
    """

    def __new__(cls, xs: tuple[Any, Any]) -> PartialVal:
        aval, const = xs
        if aval is not None and not isinstance(aval, AbstractValue):
            raise TypeError(f"PartialVal: the abstract value must be a ShapedArray (or the "
                            f"aval of a typed key), got {type(aval).__name__}")
        return tuple.__new__(cls, (aval, const))

    @classmethod
    def known(cls, const: Any) -> PartialVal:
        """A known value."""
        return cls((None, const))

    @classmethod
    def unknown(cls, aval: ShapedArray) -> PartialVal:
        """An unknown value of abstract value ``aval``."""
        return cls((aval, None))

    def is_known(self) -> bool:
        """Whether the value is known."""
        return self[0] is None

    def get_known(self) -> Any:
        """The value if known, else None."""
        return self[1] if self[0] is None else None

    def get_aval(self) -> ShapedArray:
        """The abstract value (of the known value, or the unknown one's)."""
        return abstractify(self[1]) if self[0] is None else self[0]


class _KnownFirst(Interpreter):
    """Runs an operation in the enclosing context when no operand depends on an unknown input,
    else stages it into the partial-evaluation program."""

    description = "partial evaluation (trace_to_jaxpr_nounits)"

    def __init__(self, staging: Interpreter) -> None:
        self.staging = staging

    def unknown(self, x: Any) -> bool:
        return isinstance(x, Tracer) and x._interp is self.staging

    def process_primitive(self, prim: Any, args: Sequence[Any], params: dict[str, Any]) -> Any:
        where = self.staging if any(self.unknown(a) for a in args) else self.staging.parent
        with set_current(where):
            return prim.bind(*args, **params)


def trace_to_jaxpr_nounits(fun: Any, pvals: Sequence[PartialVal], instantiate: bool |
                           Sequence[bool] = False) -> tuple[Program, list[PartialVal], list[Any]]:
    """Partially evaluates ``fun`` (a ``linear_util.WrappedFun`` taking and returning flat
    lists of arrays) on ``pvals``: returns ``(jaxpr, out_pvals, consts)``, where ``jaxpr`` takes
    the unknown inputs (its constants ``consts``) and returns the unknown outputs, and
    ``out_pvals`` gives each output as known (its value) or unknown (its abstract value).
    ``instantiate`` (one flag, or one per output) makes known outputs unknown outputs of the
    jaxpr.

    Example:
        >>> import numpy as np
        >>> from fluxion.extend import linear_util as lu
        >>> f = lu.wrap_init(lambda a: [a + 1.0])
        >>> _, out, _ = trace_to_jaxpr_nounits(f, [PartialVal.known(np.float32(1))])
        >>> float(out[0].get_known())
        2.0
    """
    pvals = list(pvals)
    unknown_at = [i for i, p in enumerate(pvals) if not p.is_known()]
    state: dict[str, Any] = {}

    def staged(*unknowns: Any) -> list[Any]:
        args = [p.get_known() for p in pvals]
        for i, u in zip(unknown_at, unknowns):
            aval = pvals[i][0]
            # an unknown typed key is traced as its key data and rebuilt for fun
            args[i] = aval.from_physical(u) if hasattr(aval, "from_physical") else u
        staging = current()
        with interpreter_scope(_KnownFirst(staging)) as known_first:
            outs = list(fun.call_wrapped(*args))
        flags = ([bool(instantiate)] * len(outs) if isinstance(instantiate, bool)
                 else list(instantiate))
        # a typed key is unknown when any of its physical data is
        kinds = [flag or any(known_first.unknown(x) for x in physical.tree_leaves(o))
                 for o, flag in zip(outs, flags)]
        state["outs"], state["kinds"] = outs, kinds
        return [x for o, k in zip(outs, kinds) if k for x in physical.tree_leaves(o)]

    in_avals = [_physical_aval(pvals[i][0]) for i in unknown_at]
    program, consts, _ = trace_to_program(staged, tuple(in_avals), {},
                                          description="trace_to_jaxpr_nounits",
                                          in_avals=in_avals)
    out_avals = iter(program.out_avals)
    out_pvals = []
    for o, k in zip(state["outs"], state["kinds"]):
        if not k:
            out_pvals.append(PartialVal.known(o))
            continue
        n = len(physical.tree_leaves(o))
        data_avals = [next(out_avals) for _ in range(n)]
        typed = getattr(o, "_typeof", None) if type(o) in physical.physical_types() else None
        out_pvals.append(PartialVal.unknown(typed() if typed is not None else data_avals[0]))
    return program, out_pvals, list(consts)


def _physical_aval(aval: Any) -> Any:
    to_physical = getattr(aval, "physical_aval", None)
    return to_physical() if to_physical is not None else aval


def __getattr__(name: str) -> Any:
    raise AttributeError(f"jax.interpreters.partial_eval.{name} is not provided by Fluxion: "
                         f"of JAX's partial-evaluation internals it has PartialVal and "
                         f"trace_to_jaxpr_nounits (see docs/guide/coming-from-jax.md)")


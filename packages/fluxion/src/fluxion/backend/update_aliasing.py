"""In-place updates that XLA:CPU computes wrongly, found while lowering (openxla/xla#49176).

XLA:CPU fuses a dynamic-update-slice with the ops that compute its update and writes the result
in place, into its operand's buffer. When that operand is a *bitcast* (a reshape) of a buffer the
update also reads, the kernel reads elements it has already overwritten: ``x.reshape(2, 3, 2)
.at[:, 1:].set(x[:4].reshape(2, 2, 2))`` and ``x.at[1:].set(x[:-1]).reshape(1, 6, 2)`` (XLA's
simplifier moves that reshape in front of the update) give wrong numbers under ``jax.jit`` on
the CPU. Eager execution, the TPU and an update whose operand is not reshaped are right.

The lowering keeps a small graph of the values it emits (SSA name -> the values it is a bitcast
of, and the values a fusion computing it may read). An update rule asks :func:`reads_operand`
whether its update may read its operand's buffer through such a reshape; on the CPU it then
writes into :func:`fresh_operand` instead, an identity XLA does not remove, which makes the
update out of place (and right). Updates whose update does not read their operand's buffer, the
usual ``x.at[i].set(v)``, lower exactly as before.

Example:
    >>> g = {"%1": ((("%0", True),), ("%0",)), "%2": ((), ("%0",))}  # %1 = reshape %0; %2 = slice %0
    >>> reads_operand(g, "%1", "%2", False), reads_operand(g, "%0", "%2", False)
    (True, False)
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import ml_dtypes
import numpy as np

__all__ = ["entry_for", "reads_operand", "sharing_classes", "call_summary",
           "reshaped_vars", "fresh_operand"]

# graph entry of a value: (bitcast_of, reads) where bitcast_of is ((name, through_reshape), ...)
# (the value is that buffer viewed in another shape) and reads is (name, ...) (a fusion computing
# the value may read those buffers). Names not in the graph are buffers of their own.
Entry = tuple[tuple[tuple[str, bool], ...], tuple[str, ...]]

# What each primitive does with its result's buffer is declared beside the primitive
# (``Primitive.in_place``, ``materialized`` and ``bitcast``; see fluxion.core.primitive).
_BUDGET = 4096  # graph nodes one search visits before it answers conservatively
_ML_FLOATS = frozenset(np.dtype(getattr(ml_dtypes, n)) for n in (
    "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "float8_e4m3b11fnuz", "float8_e3m4", "float8_e4m3") if hasattr(ml_dtypes, n))
_ML_INTS = frozenset(np.dtype(getattr(ml_dtypes, n)) for n in ("int2", "uint2", "int4", "uint4")
                     if hasattr(ml_dtypes, n))


def _bitcast(eqn: Any) -> str | None:
    """``'reshape'``, ``'same'`` or None: the primitive's ``bitcast`` rule for ``eqn``."""
    rule = eqn.prim.bitcast
    return None if rule is None else rule(eqn)


def entry_for(eqn: Any, in_names: Sequence[str | None], k: int) -> Entry:
    """The graph entry of output ``k`` of ``eqn`` whose inputs are the SSA values ``in_names``
    (None for a literal).

    Example:
        >>> eqn = fluxion.make_jaxpr(lambda x: x.reshape(2, 3))(jnp.ones(6)).jaxpr.eqns[0]
        >>> entry_for(eqn, ["%0"], 0)
        ((('%0', True),), ('%0',))
    """
    names = tuple(n for n in in_names if n is not None)
    prim = eqn.prim
    if prim.materialized or prim.effectful:
        return (), ()
    first = in_names[0] if in_names else None
    view = _bitcast(eqn)
    if view == "reshape":
        return (((first, True),), (first,)) if first is not None else ((), ())
    if view == "same":
        src = in_names[k] if k < len(in_names) else None
        return (((src, False),) if src is not None else ()), names
    if prim.in_place is not None:  # written in place into its operand
        operand = in_names[prim.in_place[0]] if prim.in_place[0] < len(in_names) else None
        if operand is not None:
            return ((operand, False),), names
    return (), names


def _entry(graph: dict[str, Any], name: str) -> Entry | None:
    """The entry of ``name``: the lowering stores ``(equation, input names, output index)``,
    made into an entry here, when first read."""
    e = graph.get(name)
    if e is not None and len(e) == 3:
        e = graph[name] = entry_for(e[0], e[1], e[2])
    return e


def _bitcast_sources(graph: dict[str, Entry], name: str) -> dict[str, bool]:
    """The buffers ``name`` is a bitcast of (itself included) -> whether through a reshape."""
    seen: dict[str, bool] = {}
    stack = [(name, False)]
    while stack:
        n, hop = stack.pop()
        if seen.get(n) is True or (n in seen and not hop):
            continue
        seen[n] = hop or seen.get(n, False)
        entry = _entry(graph, n)
        if entry is not None:
            stack.extend((m, hop or h) for m, h in entry[0])
    return seen


def _read_set(graph: dict[str, Entry], name: str, stop: Iterable[str] = (),
              targets: frozenset[str] | set[str] = frozenset()) -> set[str] | None:
    """The buffers a fusion computing ``name`` may read (itself included); None past the
    search budget. The search does not go past the names in ``stop``, and ends early (with
    what it has seen) at a name in ``targets``."""
    stop = set(stop)
    seen = {name}
    stack = [name]
    while stack:
        n = stack.pop()
        if n in targets:
            return seen
        if n in stop:
            continue
        entry = _entry(graph, n)
        if entry is None:
            continue
        for m in entry[1]:
            if m not in seen:
                if len(seen) >= _BUDGET:
                    return None
                seen.add(m)
                stack.append(m)
    return seen


def reads_operand(graph: dict[str, Entry], operand: str, update: str, reshaped: bool) -> bool:
    """Whether an in-place update of ``operand`` by ``update`` may read the operand's buffer
    through a bitcast: ``operand`` is a reshape of a buffer the update reads, or is such a buffer
    itself and the update's result is ``reshaped`` (XLA then moves the reshape in front).

    Example:
        >>> g = {"%2": ((), ("%0",))}  # %2 = slice %0
        >>> reads_operand(g, "%0", "%2", True), reads_operand(g, "%1", "%2", True)
        (True, False)
    """
    risky = {n for n, hop in _bitcast_sources(graph, operand).items() if hop or reshaped}
    if not risky:
        return False
    reads = _read_set(graph, update, targets=risky)
    return reads is None or not reads.isdisjoint(risky)


def sharing_classes(graph: dict[str, Entry], names: Sequence[str]) -> tuple[int, ...]:
    """For the arguments ``names`` of a call: a class number per argument, equal for arguments
    that may read one buffer (the called function sees them as one buffer).

    Example:
        >>> sharing_classes({"%2": ((), ("%0",))}, ["%0", "%1", "%2"])
        (0, 1, 0)
    """
    reads = [_read_set(graph, n) for n in names]
    parent = list(range(len(names)))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i in range(len(names)):
        for j in range(i):
            a, b = reads[i], reads[j]
            if a is None or b is None or not a.isdisjoint(b):
                parent[find(i)] = find(j)
    roots: dict[int, int] = {}
    return tuple(roots.setdefault(find(i), len(roots)) for i in range(len(names)))


def call_summary(graph: dict[str, Entry], args: Sequence[str], outs: Sequence[str]
                 ) -> tuple[tuple[tuple[tuple[int, bool], ...], tuple[int, ...]], ...]:
    """Per output of a lowered function: (the arguments it is a bitcast of, with whether through
    a reshape; the arguments a fusion computing it may read), by argument index.

    Example:
        >>> g = {"%1": ((("%arg0", True),), ("%arg0",)), "%2": ((), ("%1", "%arg1"))}
        >>> call_summary(g, ["%arg0", "%arg1"], ["%1", "%2"])
        ((((0, True),), (0,)), ((), (0, 1)))
    """
    index = {a: i for i, a in enumerate(args)}
    summary = []
    for out in outs:
        bitcast = tuple((index[n], hop) for n, hop in _bitcast_sources(graph, out).items()
                        if n in index)
        reads = _read_set(graph, out, stop=index)
        read_args = (tuple(range(len(args))) if reads is None
                     else tuple(sorted(index[n] for n in reads if n in index)))
        summary.append((bitcast, read_args))
    return tuple(summary)


def reshaped_vars(program: Any) -> set[int]:
    """Ids of the variables of ``program`` that a reshape reads (directly, or through
    same-buffer ops).

    Example:
        >>> p = fluxion.make_jaxpr(lambda x: (x + 1).reshape(2, 3))(jnp.ones(6)).jaxpr
        >>> reshaped_vars(p) == {p.eqns[0].outputs[0].id}
        True
    """
    marked: set[int] = set()
    for eqn in reversed(program.eqns):
        view = _bitcast(eqn)
        if view == "reshape" or (view == "same" and any(v.id in marked for v in eqn.outputs)):
            marked.update(a.id for a in eqn.inputs if hasattr(a, "id"))
    return marked


def fresh_operand(ctx: Any, x: str, aval: Any) -> str:
    """``x`` through an elementwise identity that XLA keeps, so that an update of it is written
    into a new buffer (floats: ``reduce_precision`` to their own precision, bit for bit;
    integers: a clamp to their own range; booleans: a maximum with false; complex numbers: both
    parts; other dtypes are returned as they are).

    Example:
        >>> from fluxion.backend.lowering import lower_program
        >>> f = lambda x: x.reshape(2, 3).at[:, 1:].set(x[:4].reshape(2, 2))
        >>> program = fluxion.make_jaxpr(f)(jnp.ones(6)).jaxpr
        >>> "reduce_precision" in lower_program(program, platform="cpu")
        True
        >>> "reduce_precision" in lower_program(program, platform="tpu")
        False
    """
    dt = np.dtype(aval.dtype)
    plain = aval.update(weak_type=False)
    if dt.kind == "c":
        part = plain.update(dtype=np.dtype(np.float32 if dt.itemsize == 8 else np.float64))
        re = ctx.op1("stablehlo.real", [x], part, [plain])
        im = ctx.op1("stablehlo.imag", [x], part, [plain])
        re, im = fresh_operand(ctx, re, part), fresh_operand(ctx, im, part)
        return ctx.op1("stablehlo.complex", [re, im], plain, [part, part])
    if dt.kind == "f" or dt in _ML_FLOATS:
        fi = ml_dtypes.finfo(dt)
        return ctx.op1("stablehlo.reduce_precision", [x], plain, [plain],
                       f"exponent_bits = {fi.nexp} : i32, mantissa_bits = {fi.nmant} : i32")
    scalar = plain.update(shape=())
    if dt == np.bool_:  # XLA:CPU has no clamp of booleans
        false = ctx.constant(np.asarray(False), plain)
        return ctx.op1("stablehlo.maximum", [x, false], plain, [plain, plain])
    if dt.kind in "iu" or dt in _ML_INTS:
        ii = ml_dtypes.iinfo(dt)
        lo, hi = ii.min, ii.max
    else:  # no identity known to survive XLA for this dtype: left as it is
        return x
    lo_c = ctx.constant(np.asarray(lo, dt), scalar)
    hi_c = ctx.constant(np.asarray(hi, dt), scalar)
    return ctx.op1("stablehlo.clamp", [lo_c, x, hi_c], plain, [scalar, plain, scalar])


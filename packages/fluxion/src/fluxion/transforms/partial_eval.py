"""Partial evaluation: splitting a computation into the part that can run now (known inputs) and
the part that must be staged (unknown inputs).

- :class:`PartialEvalInterpreter` stages operations on its own (unknown) tracers and evaluates
  every all-known operation at once at its parent; ``linearize`` runs the JVP interpreter on top
  of it, so the primal computation runs and the tangent computation becomes a linear Program
  whose constvars are the residuals. A primitive with sub-programs (control flow, ``jit``,
  ``checkpoint``) splits itself with its ``partial_eval`` rule.
- :func:`partial_eval_program` splits a whole closed Program the same way (cached on it), for
  the call primitives and control flow; :func:`partial_eval_call` is the rule of a call
  primitive built on it.

Example:
    >>> import fluxion
    >>> from fluxion.transforms.staging import trace_to_program
    >>> prog, _, _ = trace_to_program(lambda x, y: (x * 2.0, x * y), (1.0, 1.0), {})
    >>> known, _, unknown, out_unknown, n_res = partial_eval_program(prog, [False, True])
    >>> out_unknown, n_res
    ([False, True], 1)
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from fluxion.core.avals import ShapedArray
from fluxion.core.ir import Equation, Program, Var, dce, literal_value
from fluxion.core.primitive import Primitive
from fluxion.core.trace import interpreter_scope, set_current
from fluxion.transforms.staging import (
    StagingInterpreter,
    StagingTracer,
    cached_transform,
    mask_flags,
)

__all__ = ["PartialEvalInterpreter", "partial_eval_program", "partial_eval_call"]


class PartialEvalInterpreter(StagingInterpreter):
    """Stages operations on its own (unknown) tracers; evaluates all-known operations at once at
    its parent. The Program it builds is the linear (tangent) part of a linearization; the known
    values it references are the residuals (its constvars)."""

    def process_primitive(self, prim: Any, args: Sequence[Any], params: dict[str, Any]) -> Any:
        for a in args:
            if type(a) is StagingTracer and a._interp is self:
                break
        else:
            with set_current(self.parent):
                return prim.bind(*args, **params)
        rule = prim.partial_eval
        if rule is not None:
            return rule(self, args, **params)
        return StagingInterpreter.process_primitive(self, prim, args, params)

    def is_unknown(self, x: Any) -> bool:
        return type(x) is StagingTracer and x._interp is self


def _inline(program: Program, env: dict[int, Any], dest: list[Equation]) -> list[Any]:
    """Append ``program``'s equations to ``dest`` with its inputs renamed by ``env`` (a Var id to
    an atom); returns its outputs, renamed."""
    def read(a: Any) -> Any:
        return env.get(a.id, a) if type(a) is Var else a
    for e in program.eqns:
        dest.append(Equation(e.prim, [read(a) for a in e.inputs], e.outputs, e.params, e.source,
                             e.name_stack))
    return [read(a) for a in program.outvars]


def _fresh_vars(program: Program) -> Program:
    """A copy of a closed ``program`` with new Vars: the parts of a split share none with each
    other or with the program split (each prints with its own names, as a staged one would)."""
    env: dict[int, Var] = {}

    def new(v: Var) -> Var:
        w = env[v.id] = Var(v.aval)
        return w

    def read(a: Any) -> Any:
        return env[a.id] if type(a) is Var else a

    invars = [new(v) for v in program.invars]
    eqns = [Equation(e.prim, [read(a) for a in e.inputs], [new(v) for v in e.outputs], e.params,
                     e.source, e.name_stack) for e in program.eqns]
    return Program([], invars, [read(a) for a in program.outvars], eqns)


def _split_by_rule(eqn: Equation, ins: list, mask: Sequence[bool]) -> tuple[Program, list,
                                                                               Program, list]:
    """Split one equation with some unknown inputs by its primitive's partial-evaluation rule
    (control flow), run on staged inputs: ``(known, known_consts, unknown, out_unknown)``.
    ``known`` (constvars: ``known_consts``) takes the known Var inputs and returns the known
    outputs followed by the residuals; ``unknown`` (constvars: the residuals) takes the unknown
    inputs and returns the unknown outputs."""
    st = StagingInterpreter("known part of a partial evaluation")
    with interpreter_scope(st):
        known_in = {i: st.new_arg(a.aval) for i, (a, m) in enumerate(zip(ins, mask))
                    if not m and type(a) is Var}
        pe = PartialEvalInterpreter("unknown part of a partial evaluation")
        with interpreter_scope(pe):
            args = [pe.new_arg(a.aval) if m else
                    (known_in[i] if i in known_in else literal_value(a))
                    for i, (a, m) in enumerate(zip(ins, mask))]
            outs = eqn.prim.partial_eval(pe, args, **eqn.params)
            outs = list(outs) if eqn.prim.multiple_results else [outs]
            out_unknown = [pe.is_unknown(o) for o in outs]
            unknown = pe.build([pe.atom(o) for o, u in zip(outs, out_unknown) if u])
        k_atoms = [st.atom(o) for o, u in zip(outs, out_unknown) if not u]
        known = st.build(k_atoms + [st.atom(r) for r in pe.const_vals])
    return known, list(st.const_vals), unknown, out_unknown


def partial_eval_program(program: Program, unknown_in: Sequence[bool], policy: Any = None,
                         instantiate: bool | Sequence[bool] = False
                         ) -> tuple[Program, list, Program, list[bool], int]:
    """Split a closed ``program`` whose inputs marked ``unknown_in`` are unknown (tangents) into
    the part computable now and the rest.

    Returns ``(known, consts, unknown, out_unknown, n_res)``: ``known`` is a closed Program over
    ``(*consts, *known inputs)`` returning the known outputs followed by ``n_res`` residuals;
    ``unknown`` takes the residuals followed by the unknown inputs and returns the unknown
    outputs. ``instantiate`` (one flag, or one per output) makes a known output unknown: its
    value is a residual (after the others) that ``unknown`` returns.

    Equations with a partial-evaluation rule (``jit``, ``checkpoint``, control flow) are split
    by their rule, inline: a nested ``jit`` becomes a known and an unknown call, a nested
    ``checkpoint`` runs its known half inline. ``policy(prim, *avals, **params) -> bool``
    (the body of a ``checkpoint``) says which known equations' outputs may be saved as
    residuals; the others are recomputed in ``unknown`` from saved values and known inputs.
    ``None`` saves everything. Under a policy a nested checkpoint (``prim.split_policy``) is
    split recursively instead, its known half one call that the policy judges as a whole.
    """
    unknown_in = tuple(bool(u) for u in unknown_in)
    inst = mask_flags(instantiate, len(program.outvars))

    def make() -> tuple:
        unknown: set[int] = {v.id for v, u in zip(program.invars, unknown_in) if u}
        env: dict[int, Any] = {}  # outputs of equations split by a rule -> their new atoms
        known_eqns: list[Equation] = []
        unk_eqns: list[Equation] = []
        constvars: list[Var] = []
        consts: list[Any] = []
        const_index: dict[int, Var] = {}

        def const_var(value: Any, aval: ShapedArray) -> Var:
            v = const_index.get(id(value))
            if v is None:
                v = const_index[id(value)] = Var(aval)
                constvars.append(v)
                consts.append(value)
            return v

        for eqn in program.eqns:
            ins = [env.get(a.id, a) if type(a) is Var else a for a in eqn.inputs]
            mask = [type(a) is Var and a.id in unknown for a in ins]
            if env and any(a is not b for a, b in zip(ins, eqn.inputs)):
                eqn = Equation(eqn.prim, ins, eqn.outputs, eqn.params, eqn.source, eqn.name_stack)
            if not any(mask):
                known_eqns.append(eqn)
                continue
            if all(mask):
                unk_eqns.append(eqn)
                unknown.update(v.id for v in eqn.outputs)
                continue
            splitter = eqn.prim.split_policy
            if policy is not None and splitter is not None:
                # Under a policy, a checkpoint's known half stays one call: the policy judges
                # its outputs as a whole.
                kp, kc, up, out_unk, n_res = partial_eval_program(eqn.params["program"], mask,
                                                                  splitter(eqn))
                res_vars = [Var(a) for a in up.in_avals[:n_res]]
                k_in = ([const_var(c, a) for c, a in zip(kc, kp.in_avals)]
                        + [a for a, m in zip(ins, mask) if not m])
                u_in = [a for a, m in zip(ins, mask) if m]
                k_outs = [v for v, u in zip(eqn.outputs, out_unk) if not u]
                u_outs = [v for v, u in zip(eqn.outputs, out_unk) if u]
                kparams, uparams = dict(eqn.params), dict(eqn.params)
                kparams["program"], uparams["program"] = kp, up
                known_eqns.append(Equation(eqn.prim, k_in, k_outs + res_vars, kparams,
                                           eqn.source, eqn.name_stack))
                unk_eqns.append(Equation(eqn.prim, res_vars + u_in, u_outs, uparams, eqn.source,
                                         eqn.name_stack))
                unknown.update(v.id for v in u_outs)
                continue
            if eqn.prim.partial_eval is not None:
                kp, kc, up, out_unk = _split_by_rule(eqn, ins, mask)
                k_env = {v.id: a for v, a in zip(kp.invars, [a for a, m in zip(ins, mask)
                                                              if not m and type(a) is Var])}
                k_env.update((v.id, const_var(c, v.aval)) for v, c in zip(kp.constvars, kc))
                k_outs = _inline(kp, k_env, known_eqns)
                n_k = len(k_outs) - len(up.constvars)
                u_env = {v.id: a for v, a in zip(up.constvars, k_outs[n_k:])}
                u_env.update((v.id, a) for v, a in zip(up.invars, [a for a, m in zip(ins, mask)
                                                                    if m]))
                u_outs = _inline(up, u_env, unk_eqns)
                unknown.update(v.id for e in up.eqns for v in e.outputs)
                ki, ui = iter(k_outs[:n_k]), iter(u_outs)
                for v, u in zip(eqn.outputs, out_unk):
                    env[v.id] = next(ui) if u else next(ki)
                continue
            unk_eqns.append(eqn)
            unknown.update(v.id for v in eqn.outputs)
        outs = [env.get(a.id, a) if type(a) is Var else a for a in program.outvars]
        out_unknown = [type(a) is Var and a.id in unknown for a in outs]
        if policy is not None:
            unk_eqns = _recompute(known_eqns, unk_eqns, unknown, policy)
        # residuals: the known Vars the unknown equations read, then the instantiated outputs
        res: list[Var] = []
        seen: set[int] = set()
        defined_in_unk = {v.id for e in unk_eqns for v in e.outputs}
        for eqn in unk_eqns:
            for a in eqn.inputs:
                if (type(a) is Var and a.id not in unknown and a.id not in seen
                        and a.id not in defined_in_unk):
                    seen.add(a.id)
                    res.append(a)
        forced = [a for a, u, f in zip(outs, out_unknown, inst) if f and not u]
        forced_in = [Var(a.aval) for a in forced]
        fi = iter(forced_in)
        k_out = [a for a, u, f in zip(outs, out_unknown, inst) if not (u or f)]
        u_out = [a if u else next(fi) for a, u, f in zip(outs, out_unknown, inst) if u or f]
        k_in = constvars + [v for v, u in zip(program.invars, unknown_in) if not u]
        u_in = [v for v, u in zip(program.invars, unknown_in) if u]
        known = _fresh_vars(dce(Program([], k_in, k_out + res + forced, known_eqns)))
        unk = _fresh_vars(dce(Program([], res + forced_in + u_in, u_out, unk_eqns)))
        return (known, consts, unk, [u or f for u, f in zip(out_unknown, inst)],
                len(res) + len(forced))
    return cached_transform(program, ("pe", unknown_in, policy, inst), make)


def _recompute(known_eqns: list, unk_eqns: list, unknown: set, policy: Any) -> list:
    """Move the known equations whose outputs the policy does not let us save (and that the
    unknown part needs) into the unknown part, to be recomputed there."""
    producer: dict[int, Equation] = {}
    for e in known_eqns:
        for v in e.outputs:
            producer[v.id] = e
    chosen: set[int] = set()
    stack = [a for e in unk_eqns for a in e.inputs if type(a) is Var and a.id not in unknown]
    while stack:
        a = stack.pop()
        e = producer.get(a.id)
        if e is None or id(e) in chosen:
            continue  # a known input of the program, or already recomputed
        if policy(e.prim, *[x.aval for x in e.inputs], **e.params):
            continue  # saveable: stays a residual
        chosen.add(id(e))
        stack.extend(x for x in e.inputs if type(x) is Var)
    if not chosen:
        return unk_eqns
    return [e for e in known_eqns if id(e) in chosen] + unk_eqns


def partial_eval_call(pe: PartialEvalInterpreter, prim: Primitive, program: Program,
                      args: Sequence[Any], policy: Any,
                      run_known: Callable[[Program, list], Sequence[Any]],
                      unknown_params: Callable[[Program, int], dict]) -> list:
    """The partial-evaluation rule of a call primitive holding the closed ``program``.

    ``run_known(known, operands)`` computes the known outputs and residuals now (at the parent
    interpreter); ``unknown_params(unknown, n_operands)`` gives the parameters of the call of the
    unknown part, which is staged.
    """
    mask = [pe.is_unknown(a) for a in args]
    known, consts, unk, out_unk, n_res = partial_eval_program(program, mask, policy)
    with set_current(pe.parent):
        k_outs = run_known(known, [*consts, *[a for a, m in zip(args, mask) if not m]])
    n_k = len(k_outs) - n_res
    u_args = [*k_outs[n_k:], *[a for a, m in zip(args, mask) if m]]
    u_outs = StagingInterpreter.process_primitive(pe, prim, u_args,
                                                  unknown_params(unk, len(u_args)))
    ki, ui = iter(k_outs[:n_k]), iter(u_outs)
    return [next(ui) if u else next(ki) for u in out_unk]

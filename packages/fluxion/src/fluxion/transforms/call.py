"""The call primitive ``jit`` and all of its rules: a staged Program run as one compiled unit.

``jit_p`` holds a closed Program (``program``), a ``name`` and which operands are ``donated``,
and, when ``jit`` was given some, its ``compiler_options`` (``(name, value)`` pairs; the
parameter is left out when there are none).
Its rules transform the Program with the shared program transformations (cached on the Program)
and bind ``jit`` again on the result, so a transformed jitted function still runs as one call:

- JVP: one call of the Program's JVP (:func:`~fluxion.transforms.ad.jvp_program`);
- partial evaluation (linearize, grad): a known call computing the primal outputs and the
  residuals, now, and an unknown call for the tangents, staged
  (:func:`~fluxion.transforms.partial_eval.partial_eval_program`); nested calls split the same way;
- transpose: one call of the transposed Program (:func:`~fluxion.transforms.ad.transpose_program`);
- batching: one call of the batched Program (:func:`~fluxion.transforms.batching.batch_program`).

Compiler options go with the JVP and batched calls; staging a call with options (into another
``jit``, ``make_jaxpr``, or by partial evaluation) raises :func:`nested_options_error`, as JAX's
staging of such a call does. Every derived call keeps the function's ``name``, as JAX's do (so
printed programs and that error name the user's function, never ``jvp(f)``).

Its eager implementation, running the compiled Program, is set by :mod:`fluxion.backend.jit`
(the compiler sits above the transformations).

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> f = fluxion.jit(lambda x: jnp.sin(x) * x)
    >>> fluxion.vmap(fluxion.grad(f))(jnp.zeros(2)).tolist()
    [0.0, 0.0]
"""

from __future__ import annotations

from typing import Any, Sequence

from fluxion.core import vma as _vma_rules
from fluxion.core.avals import ShapedArray, keep_sharding_rule
from fluxion.core.errors import user_frame
from fluxion.core.ir import DCE_RULES, Equation, Program, dce
from fluxion.core.primitive import Primitive
from fluxion.transforms import ad, batching, jet, partial_eval
from fluxion.transforms.staging import cached_transform, close_program

__all__ = ["jit_p", "closed_call", "nested_options_error"]

jit_p = Primitive("jit", multiple_results=True, batch_unmapped=True)
jit_p.sharding = keep_sharding_rule
jit_p.vma = _vma_rules.call_rule


def nested_options_error(name: str, compiler_options: tuple) -> ValueError:
    """JAX's error for a jitted function with compiler options staged into another program
    (another ``jit``, ``make_jaxpr``, the tangent program of ``grad``), with the user's line as
    JAX writes a source location (``file:line:column (qualified function name)``).

    Example:
        >>> str(nested_options_error("f", (("xla_cpu_enable_fast_math", True),)))[:56]
        '`compiler_options` can only be passed to top-level `jax.'
    """
    return ValueError(
        "`compiler_options` can only be passed to top-level `jax.jit`. Got "
        f"compiler_options={dict(compiler_options)} specified on a nested jit with name: {name} "
        f"and source info: {_source_info()}")


def _source_info() -> str:
    """The innermost user frame as JAX's ``source_info_util.summarize`` writes it: the column
    (0-based) is where the running call's expression starts."""
    f = user_frame()
    if f is None:
        return "<unknown>"
    code = f.f_code
    col = None
    for i, pos in enumerate(code.co_positions()):
        if i == f.f_lasti // 2:
            col = pos[2]
            break
    where = f"{code.co_filename}:{f.f_lineno}" + ("" if col is None else f":{col}")
    return f"{where} ({code.co_qualname})"


def _options(compiler_options: tuple) -> dict[str, Any]:
    return {"compiler_options": compiler_options} if compiler_options else {}


def _jit_abstract_eval(*avals: ShapedArray, program: Program, name: str,
                       donated: tuple[bool, ...], compiler_options: tuple = ()
                       ) -> list[ShapedArray]:
    if compiler_options:  # staged into a program (the eager call never asks): JAX's error
        raise nested_options_error(name, compiler_options)
    want = program.in_avals
    if len(avals) != len(want) or any(a.shape != b.shape or a.dtype != b.dtype
                                      for a, b in zip(avals, want)):
        raise TypeError(f"jit of {name}: called with {[a.str_short() for a in avals]} but the "
                        f"program takes {[a.str_short() for a in want]}")
    return program.out_avals


def _jit_lowering(ctx: Any, *args: str, program: Program, name: str,
                  donated: tuple[bool, ...], compiler_options: tuple = ()) -> list[str]:
    return ctx.call_program(program, list(args), name)


def _call(program: Program, args: Sequence[Any], name: str,
          compiler_options: tuple = ()) -> list[Any]:
    """Bind ``jit`` on a closed Program derived from another one (nothing donated)."""
    return jit_p.bind(*args, program=program, name=name, donated=(False,) * len(args),
                      **_options(compiler_options))


def _jit_jvp(primals: list, tangents: list, *, program: Program, name: str,
             donated: tuple, compiler_options: tuple = ()) -> tuple[list, list]:
    return ad.jvp_call(program, primals, tangents,
                       lambda jvp, args: _call(jvp, args, name, compiler_options))


def _jit_partial_eval(pe: partial_eval.PartialEvalInterpreter, args: Sequence[Any], *, program: Program,
                      name: str, donated: tuple, compiler_options: tuple = ()) -> list:
    if compiler_options:
        raise nested_options_error(name, compiler_options)
    return partial_eval.partial_eval_call(
        pe, jit_p, program, args, None, lambda known, k_args: _call(known, k_args, name),
        lambda unknown, n_args: dict(program=unknown, name=name,
                                     donated=(False,) * n_args))


def _jit_transpose(cts: list, *args: Any, program: Program, name: str, donated: tuple,
                   compiler_options: tuple = ()) -> list:
    linear = tuple(ad.is_undefined(a) for a in args)
    ct_nz = tuple(not ad.is_zero_tangent(c) for c in cts)
    body = _vma_rules.active_body()  # a grad taken inside a check_vma shard_map body
    vma = None if body is None else (body.manual, tuple(
        _vma_rules.value_vma(body, x) for x in
        [a for a in args if not ad.is_undefined(a)] + [c for c, nz in zip(cts, ct_nz) if nz]))
    tprog, consts = ad.transpose_program(program, linear, ct_nz, vma)
    call_args = [*consts, *[a for a in args if not ad.is_undefined(a)],
                 *[c for c, nz in zip(cts, ct_nz) if nz]]
    outs = iter(_call(tprog, call_args, name))
    return [next(outs) if lin else None for lin in linear]


def _jit_batch(axis: batching.AxisData, args: Sequence[Any], dims: Sequence[Any], *,
               program: Program, name: str, donated: tuple[bool, ...],
               compiler_options: tuple = ()) -> tuple[list, list]:
    if batching.is_unbatched(axis, dims, program):
        outs = jit_p.bind(*args, program=program, name=name, donated=donated,
                          **_options(compiler_options))
        return outs, [None] * len(outs)
    new, consts, out_dims = batching.batch_program(program, dims, axis)
    outs = _call(new, [*consts, *args], name, compiler_options)
    return outs, list(out_dims)


jit_p.abstract_eval = _jit_abstract_eval
jit_p.lowering = _jit_lowering
jit_p.jvp = _jit_jvp
jit_p.partial_eval = _jit_partial_eval
jit_p.transpose = _jit_transpose
jit_p.batch = _jit_batch
jit_p.jet = jet.program_prop(lambda program, args, *, name, donated, compiler_options=():
                             _call(program, args, name, compiler_options))


def _jit_printed_params(params: dict[str, Any]) -> list[tuple[str, Any]]:
    # JAX's names and order; donated_invars only when something is donated.
    out: list[tuple[str, Any]] = [("name", params["name"])]
    if any(params["donated"]):
        out.append(("donated_invars", params["donated"]))
    return out + [("jaxpr", params["program"])]


jit_p.print_params = _jit_printed_params


def _jit_dce(eqn: Equation, used: list[bool]) -> Equation | None:
    # JAX's pjit DCE rule: a jit whose outputs are partly unused computes only the used ones
    # (in a linearized program, the unused ones' custom_vjp bwd then never runs, as in JAX);
    # the pruned body is memoised per body and mask, so its transformations are found again
    body: Program = eqn.params["program"]
    if body.effectful:
        return None
    pruned = cached_transform(body, ("dce", tuple(used)), lambda: (dce(body, used), []))[0]
    outs = [o for o, u in zip(eqn.outputs, used) if u]
    return Equation(eqn.prim, list(eqn.inputs), outs, dict(eqn.params, program=pruned),
                    eqn.source, eqn.name_stack)


DCE_RULES[jit_p] = _jit_dce


def closed_call(program: Program, consts: Sequence[Any], args: Sequence[Any], name: str,
                donated: Sequence[bool] = (), compiler_options: tuple = ()) -> list[Any]:
    """Bind ``jit`` on a staged program: its constvars become leading inputs (``jit``'s
    ``compiler_options`` pairs, if any, go with it to the compile).

    Example:
        >>> from fluxion.transforms.staging import trace_to_program
        >>> program, consts, _ = trace_to_program(lambda x: x * 2.0, (1.0,), {})
        >>> [float(y) for y in closed_call(program, consts, [3.0], "double")]
        [6.0]
    """
    n_consts = len(consts)
    don = (False,) * n_consts + tuple(donated) + (False,) * (len(args) - len(donated))
    return jit_p.bind(*consts, *args, name=name, program=close_program(program), donated=don,
                      **_options(compiler_options))

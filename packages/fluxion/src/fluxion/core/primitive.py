"""Primitives: the closed set of operations that every transformation knows how to interpret.

A :class:`Primitive` is a name plus one slot per rule. Each rule is set in the primitive's own
``lax`` module on the lines right after its definition (``docs/internals.md``):

- ``abstract_eval(*avals, **params)``: the output aval(s) (shape rule, dtype rule, weak type);
- ``lowering(ctx, *values, **params)``: StableHLO text for it (``fluxion.backend.lowering``);
- ``platform_lowerings``: ``{platform: rule}`` (``'cpu'``, ``'tpu'``, ``'cuda'``, ``'rocm'``), the
  lowering for one platform where it differs (LAPACK custom calls on the CPU, the TPU's own
  linalg calls); ``lowering`` serves every other platform, and with no rule for the platform
  being compiled for, lowering raises an error naming the primitive and the platform;
- ``jvp(primals, tangents, **params) -> (primal_out, tangent_out)``: forward-mode derivative,
  with symbolic zero tangents;
- ``transpose(ct, *args, **params)``: one cotangent per input for a primitive linear in the
  inputs marked undefined;
- ``batch(axis_data, args, dims, **params) -> (out, out_dims)``: the vmap rule;
- ``jet(primals, series, **params) -> (primal_out, series_out)``: the Taylor-mode rule
  (``fluxion.transforms.jet``: each input's list of Taylor coefficients to the output's);
- ``partial_eval(pe, args, **params)``: how linearisation splits a primitive with sub-programs
  into a known and an unknown part (default: the whole primitive is unknown if any input is);
- ``split_policy(eqn)``: for a call primitive whose body partial evaluation splits as a whole
  under a rematerialisation policy (``checkpoint``), the policy of that body;
- ``fold(*args, **params)``: a trace-time constant fold for host scalars (or ``None``);
- ``print_params(params) -> [(name, value), ...]``: the parameters ``make_jaxpr`` prints, in
  order, where they differ from JAX's names or defaults (default: all of them, sorted);
- ``impl(*args, **params)``: an eager implementation, for primitives that are not compiled alone
  (call primitives such as ``jit``); by default eager evaluation compiles the primitive alone.

- ``sharding(prim, in_avals, out, **params)``: the sharding of the result(s) when an operand has
  a sharding on a mesh with Explicit axes ("sharding in types"; see :mod:`fluxion.lax.sharding_rules`
  for the shared rules); None takes the default (broadcasting) rule.

- ``vma(eqn, in_vmas) -> out_vmas``: which ``shard_map`` mesh axes the outputs vary over
  (``check_vma``; see :mod:`fluxion.core.vma`); None: the union of the inputs'.

- ``extended(*args, **params)``: the rule for operands of an extended dtype held as physical
  data (:class:`~fluxion.core.trace.ExtendedArray`, e.g. typed PRNG keys): ``bind`` calls it
  instead of the interpreter when an operand is one. Structural primitives set it (see
  ``fluxion.lax._rules.extended_operands``): the primitive applied to the physical data with the
  element's trailing dimensions kept whole. A primitive without it refuses such operands with
  JAX's TypeError (``add does not accept dtype key<fry> at position 0``).

- ``host(*values, **params)``: the result computed by NumPy from host values (or ``None`` where
  it cannot be), exactly what the compiled program gives for integer and bool operands; an eager
  call of a new signature may use it in place of compiling (``fluxion.backend.host_fill``).

- ``effects(params)``: JAX's effect objects of one equation of the primitive, where they depend
  on its parameters (``ffi_call`` has an effect only with ``has_side_effect=True``); an equation
  with effects is kept as an ``effectful`` primitive's is, and ``Program.effects`` lists them.

Flags: ``multiple_results``; ``effectful`` (never removed or cached as pure); ``batch_unmapped``
(the batch rule also runs when no argument is mapped but the ``vmap`` names an axis:
collectives and primitives with sub-programs that may use the axis name).

What XLA does with the result's buffer, read by the workaround for XLA:CPU's in-place update
bug (``fluxion.backend.update_aliasing``, openxla/xla#49176) and given where the primitive is
defined (``in_place`` and ``materialized`` as arguments of ``Primitive``, the ``bitcast`` rule on
the next lines), so that a new primitive declares it there:

- ``in_place``: ``(operand index, update index)`` when XLA writes the result in place into that
  operand's buffer (``dynamic_update_slice``, the scatters); default ``None``;
- ``materialized``: XLA computes the result into a buffer of its own, never fused into a
  consumer's loop (``dot_general``, loops, decompositions, callbacks, some collectives), so a
  fusion reading it reads that buffer and not the primitive's inputs; default ``False``;
- ``bitcast(eqn) -> 'reshape' | 'same' | None``: the result of ``eqn`` is an operand's buffer
  as it is once XLA has simplified it: ``'reshape'``, the first operand in another shape
  (``reshape``, ``squeeze``, a ``broadcast_in_dim`` adding dimensions of size 1); ``'same'``,
  output ``k`` is operand ``k`` unchanged (``copy``, ``optimization_barrier``, a
  ``convert_element_type`` to the same dtype); ``None``, a buffer of its own (default: no rule).

``bind`` hands the primitive to the current interpreter (see :mod:`fluxion.core.trace`).

Example:
    >>> from fluxion.core.avals import ShapedArray
    >>> p = Primitive("my_neg")
    >>> p.abstract_eval = lambda x: x
    >>> p.abstract_eval(ShapedArray((3,), "float32")).str_short()
    'f32[3]'
"""

from __future__ import annotations

from typing import Any, Callable

from fluxion.core import trace as _trace
from fluxion.core.trace import ExtendedArray as _ExtendedArray

__all__ = ["Primitive"]


def _refuse_extended(prim: "Primitive", args: tuple) -> None:
    """JAX's TypeError when ``prim``, which has no ``extended`` rule, failed on an operand of
    an extended dtype held as physical data (a key array): ``add does not accept dtype
    key<fry> at position 0``."""
    if prim.extended is not None:
        return
    for i, a in enumerate(args):
        if isinstance(a, _ExtendedArray):
            at = f" at position {i}" if len(args) > 1 else ""
            raise TypeError(f"{prim.name} does not accept dtype {a.dtype}{at} (shape "
                            f"{tuple(a.shape)}): it has no rule for extended dtypes, as in "
                            f"JAX") from None


class Primitive:
    """An operation with a rule per transformation. See the module docstring."""

    __slots__ = ("name", "multiple_results", "effectful", "batch_unmapped", "abstract_eval",
                 "lowering", "impl", "jvp", "transpose", "batch", "jet", "partial_eval",
                 "split_policy", "fold", "print_params", "sharding", "vma", "platform_lowerings", "extended", "host",
                 "in_place", "materialized", "bitcast", "effects", "__weakref__")

    def __init__(self, name: str, *, multiple_results: bool = False, effectful: bool = False,
                 batch_unmapped: bool = False, materialized: bool = False,
                 in_place: tuple[int, int] | None = None):
        self.name = name
        self.multiple_results = multiple_results
        self.effectful = effectful
        self.batch_unmapped = batch_unmapped
        self.abstract_eval: Callable[..., Any] | None = None
        self.lowering: Callable[..., Any] | None = None
        self.platform_lowerings: dict[str, Callable[..., Any]] = {}
        self.impl: Callable[..., Any] | None = None
        self.jvp: Callable[..., Any] | None = None
        self.transpose: Callable[..., Any] | None = None
        self.batch: Callable[..., Any] | None = None
        self.jet: Callable[..., Any] | None = None
        self.partial_eval: Callable[..., Any] | None = None
        self.split_policy: Callable[..., Any] | None = None
        self.fold: Callable[..., Any] | None = None
        self.print_params: Callable[..., Any] | None = None
        self.sharding: Callable[..., Any] | None = None
        self.vma: Callable[..., Any] | None = None
        self.extended: Callable[..., Any] | None = None
        self.host: Callable[..., Any] | None = None
        self.in_place = in_place
        self.materialized = materialized
        self.bitcast: Callable[[Any], str | None] | None = None
        self.effects: Callable[[dict], frozenset] | None = None

    def bind(self, *args: Any, **params: Any) -> Any:
        """Apply the primitive under the current interpreter (operands of an extended dtype go
        to the ``extended`` rule, which binds the primitive on their physical data)."""
        if self.extended is not None:
            for a in args:
                if isinstance(a, _ExtendedArray):
                    return self.extended(*args, **params)
        try:  # no cost on success: operands are looked at only when the primitive fails
            return _trace.STATE.interp.process_primitive(self, args, params)
        except Exception:
            _refuse_extended(self, args)
            raise

    def get_bind_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments that re-bind an equation of this primitive with parameters
        ``params`` (JAX 0.10.2's ``Primitive.get_bind_params``; interpreters such as equinox's
        ``finalise_jaxpr`` call ``prim.bind(*inputs, **prim.get_bind_params(eqn.params))``).
        Fluxion's equations keep the parameters they were bound with, so this is a copy of
        ``params`` for every primitive, the sub-program parameters included.

        Example:
            >>> import fluxion, fluxion.numpy as jnp
            >>> eqn = fluxion.make_jaxpr(lambda x: jnp.sum(x, axis=0))(jnp.ones((2, 3))).eqns[0]
            >>> out = eqn.primitive.bind(jnp.ones((2, 3)), **eqn.primitive.get_bind_params(eqn.params))
            >>> out.tolist()
            [2.0, 2.0, 2.0]
        """
        return dict(params)

    def bind_with_trace(self, trace: Any, args: Any, avals: Any, params: dict[str, Any]) -> Any:
        """Apply the primitive under ``trace`` (an interpreter) rather than the current one, as
        JAX's ``Primitive.bind_with_trace`` (``avals``, the operands' types, are not needed).

        Example:
            >>> import fluxion.numpy as jnp
            >>> from fluxion.extend.core import primitives, take_current_trace
            >>> with take_current_trace() as t:
            ...     y = primitives.sin_p.bind_with_trace(t, [jnp.float32(0)], None, {})
            >>> float(y)
            0.0
        """
        del avals
        with _trace.set_current(trace):
            return trace.process_primitive(self, tuple(args), params)

    # JAX's spelling of the rule slots (``jax.extend.core.Primitive``), for primitives that
    # libraries define themselves; each returns the rule, so it can be used as a decorator.
    def def_impl(self, impl: Callable[..., Any]) -> Callable[..., Any]:
        """Sets the eager implementation (JAX's ``Primitive.def_impl``).

        Example:
            >>> p = Primitive("twice_doc")
            >>> _ = p.def_impl(lambda x: 2 * x)
            >>> p.bind(3)
            6
        """
        self.impl = impl
        return impl

    def def_abstract_eval(self, abstract_eval: Callable[..., Any]) -> Callable[..., Any]:
        """Sets the abstract evaluation rule: avals in, aval(s) out (JAX's
        ``Primitive.def_abstract_eval``).

        Example:
            >>> from fluxion.core.avals import ShapedArray
            >>> p = Primitive("same_doc")
            >>> _ = p.def_abstract_eval(lambda x: x)
            >>> p.abstract_eval(ShapedArray((2,), "float32")).str_short()
            'f32[2]'
        """
        self.abstract_eval = abstract_eval
        return abstract_eval

    def def_effectful_abstract_eval(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """Sets an abstract evaluation rule returning ``(aval(s), effects)`` (JAX's
        ``Primitive.def_effectful_abstract_eval``); a rule naming effects marks the primitive
        effectful (never removed as dead code).

        Example:
            >>> from fluxion.core.avals import ShapedArray
            >>> p = Primitive("eff_doc")
            >>> _ = p.def_effectful_abstract_eval(lambda x: (x, set()))
            >>> p.abstract_eval(ShapedArray((), "int32")).str_short()
            'i32[]'
        """
        def abstract_eval(*avals: Any, **params: Any) -> Any:
            out, effects = rule(*avals, **params)
            if effects:
                self.effectful = True
            return out
        self.abstract_eval = abstract_eval
        return rule

    def __repr__(self) -> str:
        return self.name

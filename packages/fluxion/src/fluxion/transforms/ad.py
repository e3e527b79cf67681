"""Automatic differentiation: forward mode (JVP), linearization by partial evaluation, and
reverse mode by transposing the linear program.

How it works:

- **JVP.** :class:`JVPInterpreter` wraps values in :class:`JVPTracer` s carrying a primal and a
  tangent. Each primitive's ``jvp`` rule ``rule(primals, tangents, **params) -> (primal_out,
  tangent_out)`` runs with the interpreter's parent current. A tangent that is known to be zero is
  the symbolic :class:`Zero` (it carries the tangent aval), so unused inputs cost nothing; values
  with a zero tangent are never wrapped. Integer and boolean values have ``float0`` tangents.
- **Linearize.** :func:`linearize` runs the JVP interpreter on top of a
  :class:`~fluxion.transforms.partial_eval.PartialEvalInterpreter`: a staging interpreter whose tangent inputs are *unknown*.
  Every primitive whose inputs are all known (the primal computation) is evaluated at once at the
  outer level; every primitive touching an unknown (the tangent computation) is recorded into a
  linear Program whose constvars are the residuals (known values the tangents need).
- **Transpose.** :func:`backward_pass` runs a linear Program backwards: each linear primitive's
  ``transpose(ct, *args, **params)`` rule receives the output cotangent and the inputs, linear
  ones marked :class:`UndefinedPrimal`, and returns one cotangent per input (``None`` for zero).
  Cotangents accumulate with symbolic zeros.
- **Programs.** :func:`jvp_program`, ``partial_eval.partial_eval_program`` and :func:`transpose_program`
  transform a whole staged Program into another (cached on it). The call primitives (``jit``,
  ``checkpoint``) and control flow use them for their bodies, so ``grad(jit(f))`` runs the
  forward and backward passes as one compiled executable each.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> float(fluxion.grad(lambda x: jnp.sin(x) * x)(0.0))
    0.0
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, Sequence

import numpy as np

from fluxion import tree_util as public_tree_util
from fluxion.core import dtypes
from fluxion.core import vma as _vma
from fluxion.core.avals import ShapedArray
from fluxion.core.errors import ConcretizationTypeError
from fluxion.core.ir import Literal, Program, Var, dce, eval_program, literal_value
from fluxion.core.name_stack import Transform
from fluxion.core.name_stack import pushed as pushed_names
from fluxion.core.name_stack import rendered_entries as rendered_names
from fluxion.core.trace import (
    Interpreter,
    Tracer,
    check_live,
    derivative_message,
    interpreter_scope,
    set_current,
)
from fluxion.core.tracebacks import api_boundary, wraps
from fluxion.transforms import array_ops, partial_eval
from fluxion.transforms.staging import (
    StagingInterpreter,
    _shape_abstractify,
    abstractify,
    cached_transform,
    close_program,
    fun_name,
    mask_flags,
    partial_at,
    trace_to_program,
)
from fluxion.transforms.tangents import (
    UndefinedPrimal,
    Zero,
    add_any,
    add_any_p,
    add_tangents,
    aval_of,
    instantiate,
    is_float,
    is_undefined,
    tangent_aval,
    zeros_like_aval,
)
from fluxion.tree_util import physical as tree_util

__all__ = [
    "Zero", "UndefinedPrimal", "JVPInterpreter", "JVPTracer",
    "jvp", "linearize", "vjp", "VJPFunction", "grad", "value_and_grad", "linear_transpose", "add_any",
    "add_any_p", "aval_of", "is_float", "backward_pass", "tangent_aval", "instantiate",
    "zeros_like_aval", "add_tangents", "is_undefined", "is_zero_tangent", "jvp_program",
    "jvp_call", "transpose_program",
]

# ----------------------------------------------------------------------------- JVP interpreter

class JVPTracer(Tracer):
    """A value inside a JVP: its ``primal`` and its (never symbolic-zero) ``tangent``."""

    __slots__ = ("primal", "tangent")

    def __init__(self, interp: "JVPInterpreter", primal: Any, tangent: Any) -> None:
        self._interp = interp
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self) -> ShapedArray:
        p = self.primal
        a = getattr(p, "aval", None)
        return a if isinstance(a, ShapedArray) else abstractify(p)


class JVPInterpreter(Interpreter):
    """Forward-mode differentiation: propagates tangents beside primals through every primitive.

    Its rules run with its parent current; under :func:`linearize` the parent is a
    :class:`~fluxion.transforms.partial_eval.PartialEvalInterpreter`, so tangent operations are staged and primal ones run.
    """

    def __init__(self, description: str = "jvp") -> None:
        self.description = description

    def process_primitive(self, prim: Any, args: Sequence[Any], params: dict[str, Any]) -> Any:
        primals = []
        tangents = []
        nonzero = False
        for x in args:
            if type(x) is JVPTracer and x._interp is self:
                primals.append(x.primal)
                tangents.append(x.tangent)
                nonzero = True
            else:
                if isinstance(x, Tracer):
                    check_live(x, self)
                primals.append(x)
                tangents.append(None)
        parent = self.parent
        if not nonzero:
            with set_current(parent):
                return prim.bind(*primals, **params)
        rule = prim.jvp
        if rule is None:
            raise NotImplementedError(
                f"Differentiation rule for '{prim.name}' not implemented: fluxion cannot "
                f"differentiate lax.{prim.name} yet.")
        for i, t in enumerate(tangents):
            if t is None:
                tangents[i] = Zero(tangent_aval(aval_of(primals[i])))
        with set_current(parent):
            out, t_out = rule(primals, tangents, **params)
        if prim.multiple_results:
            return [o if (t is None or type(t) is Zero) else JVPTracer(self, o, t)
                    for o, t in zip(out, t_out)]
        if t_out is None or type(t_out) is Zero:
            return out
        return JVPTracer(self, out, t_out)

    def to_concrete(self, tracer: Tracer) -> Any:
        p = tracer.primal
        if isinstance(p, Tracer):
            return p._interp.to_concrete(p)
        return p

    def concretization_message(self, tracer: Tracer, what: str) -> str:
        p = tracer.primal
        if isinstance(p, Tracer):
            return p._interp.concretization_message(p, what)
        return super().concretization_message(tracer, what)

    def to_constant(self, tracer: Tracer, what: str) -> Any:
        p = tracer.primal  # an abstract primal (under jit) names its own transformation
        if isinstance(p, Tracer) and p.to_concrete_value() is None:
            return p._interp.to_constant(p, what)
        raise ConcretizationTypeError(derivative_message(tracer, what))


# ----------------------------------------------------------------------------- core drivers

def _check_output_leaf(fname: str, x: Any, what: str = "output") -> ShapedArray:
    try:
        return aval_of(x)
    except TypeError:
        if type(x).__name__ == "Ref":  # fluxion.new_ref: a reference is not differentiable
            raise TypeError(f"{fname}: a mutable array reference of type {x.aval} was given as "
                            f"an {what}; differentiate with respect to its value instead "
                            "(ref[...] or fluxion.freeze(ref))") from None
        verb = "was given" if what == "argument" else "returned"
        raise TypeError(f"{fname}: the function {verb} a value of type {type(x).__name__} as "
                        f"an {what}, which is not an array (expected arrays, NumPy arrays or "
                        "Python scalars)") from None


def _unwrap(it: JVPInterpreter, x: Any, fname: str) -> tuple[Any, Any]:
    if type(x) is JVPTracer and x._interp is it:
        return x.primal, x.tangent
    return x, Zero(tangent_aval(_check_output_leaf(fname, x)))


class _AuxLeaves:
    """Auxiliary outputs as leaves and structure: rebuilt (:meth:`tree`) only once every
    transformation's scope is left, as JAX does, so objects rebuilt from the structure (flax's
    Variables, which remember the trace they were made in) belong to the caller's trace."""

    __slots__ = ("leaves", "treedef")

    def __init__(self, leaves: list, treedef: Any) -> None:
        self.leaves = leaves
        self.treedef = treedef

    def tree(self) -> Any:
        return tree_util.tree_unflatten(self.treedef, self.leaves)


def _strip_aux(it: JVPInterpreter, aux: Any) -> _AuxLeaves:
    def strip(x: Any) -> Any:
        while type(x) is JVPTracer and x._interp is it:
            x = x.primal
        return x
    leaves, treedef = tree_util.tree_flatten(aux)
    return _AuxLeaves([strip(x) for x in leaves], treedef)


def _split_aux(fname: str, out: Any, has_aux: bool) -> tuple[Any, Any]:
    if not has_aux:
        return out, None
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(f"{fname}: with has_aux=True the function must return a pair (output, "
                        f"auxiliary data), got {type(out).__name__}")
    return out[0], out[1]


def _jvp_flat(fun: Callable, primals: list, tangents: list, in_tree: Any, has_aux: bool,
              fname: str) -> tuple[list, list, Any, Any]:
    """JVP of ``fun`` on flat primals/tangents; the auxiliary output (``has_aux``) comes back as
    :class:`_AuxLeaves`, for the caller to rebuild outside its own scopes."""
    with interpreter_scope(JVPInterpreter(f"jvp of {fname}")) as it:
        ins = [p if (t is None or type(t) is Zero) else JVPTracer(it, p, t)
               for p, t in zip(primals, tangents)]
        args = tree_util.tree_unflatten(in_tree, ins)
        with pushed_names((Transform("jvp"),)):  # JAX's jvp name-stack entry: jvp(scope)/...
            res = fun(*args)
        out, aux = _split_aux(fname, res, has_aux)
        out_flat, out_tree = tree_util.tree_flatten(out)
        pairs = [_unwrap(it, o, fname) for o in out_flat]
        if has_aux:
            aux = _strip_aux(it, aux)
    return [p for p, _ in pairs], [t for _, t in pairs], out_tree, aux


class LinearFunction:
    """The linear part of a linearization: a Program over tangent inputs with its residuals.

    A pytree whose leaves are the residuals (the rest is static), so it can be returned from a
    jitted function and passed into one.
    """

    __slots__ = ("program", "residuals", "in_avals", "out_zero", "out_avals")

    def __init__(self, program: Program, residuals: list, in_avals: list, out_zero: list,
                 out_avals: list) -> None:
        self.program = program
        self.residuals = residuals
        self.in_avals = in_avals     # tangent avals of the (differentiable) inputs
        self.out_zero = out_zero     # per output: True when its tangent is a symbolic zero
        self.out_avals = out_avals   # tangent avals of the outputs

    def apply(self, tangents: Sequence[Any]) -> list[Any]:
        args = [instantiate(t) for t in tangents]
        outs = iter(eval_program(self.program, self.residuals, args))
        return [zeros_like_aval(a) if z else next(outs)
                for z, a in zip(self.out_zero, self.out_avals)]

    def transpose(self, cts: Sequence[Any]) -> list[Any]:
        """Cotangents of the inputs (``None`` where zero) for output cotangents ``cts``."""
        nz_cts = [c for c, z in zip(cts, self.out_zero) if not z]
        args = [UndefinedPrimal(a) for a in self.in_avals]
        return backward_pass(self.program, self.residuals, args, nz_cts, transform_stack=True)


tree_util.register_pytree_node(
    LinearFunction,
    lambda f: (f.residuals, (f.program, tuple(f.in_avals), tuple(f.out_zero),
                             tuple(f.out_avals))),
    lambda static, residuals: LinearFunction(static[0], list(residuals), *map(list, static[1:])))


def _linearize_flat(fun: Callable, primals: list, diff: list, in_tree: Any, has_aux: bool,
                    fname: str) -> tuple[list, LinearFunction, Any, Any]:
    """Linearize ``fun`` at ``primals``; ``diff[i]`` says whether input i is differentiated."""
    pe = partial_eval.PartialEvalInterpreter(f"linearization of {fname}")
    in_avals = []
    with interpreter_scope(pe):
        t_in = []
        for p, d in zip(primals, diff):
            if d:
                ta = tangent_aval(aval_of(p))
                if ta.dtype == dtypes.float0:
                    t_in.append(None)
                    in_avals.append(None)
                else:
                    t_in.append(pe.new_arg(ta))
                    in_avals.append(ta)
            else:
                t_in.append(None)
        out_p, out_t, out_tree, aux = _jvp_flat(fun, primals, t_in, in_tree, has_aux, fname)
        out_zero = [type(t) is Zero for t in out_t]
        out_tavals = [tangent_aval(aval_of(p)) for p in out_p]
        atoms = [pe.atom(t) for t in out_t if type(t) is not Zero]
    program = dce(pe.build(atoms))
    lin = LinearFunction(program, list(pe.const_vals), [a for a in in_avals if a is not None],
                         out_zero, out_tavals)
    return out_p, lin, out_tree, (aux.tree() if has_aux else None)


# ----------------------------------------------------------------------------- transposition

_NO_NAMES = contextlib.nullcontext()


# Primitives whose transpose runs even when all their output cotangents are zero: custom_vjp's
# bwd (custom_lin) is user code that may give nonzero input cotangents from zero ones (flax's
# fp8 ops return new statistics as cotangents), and JAX calls it whenever the backward pass
# runs at all. Filled in by custom_derivatives.py.
TRANSPOSED_ON_ZEROS: set = set()


def backward_pass(program: Program, consts: Sequence[Any], args: Sequence[Any],
                  cts_out: Sequence[Any], *, transform_stack: bool = False) -> list[Any]:
    """Transpose ``program``: ``args`` are values, with linear inputs marked
    :class:`UndefinedPrimal`; ``cts_out`` are the outputs' cotangents (``None``/:class:`Zero`
    for zero). Returns the cotangent of each linear input (``None`` when zero), in order.

    Equations whose inputs are all known are evaluated first (forward); the others must be
    linear in the undefined inputs and are transposed in reverse order. Each runs under the name
    stack it was recorded with; ``transform_stack`` (the user-facing vjp, grad and
    linear_transpose, as in JAX) adds a ``transpose`` entry before the transposed ones'
    (``transpose(jvp(model))/dense``).
    """
    env: dict[int, Any] = {}
    linear: set[int] = set()
    for v, c in zip(program.constvars, consts):
        env[v.id] = c
    for v, a in zip(program.invars, args):
        if type(a) is UndefinedPrimal:
            linear.add(v.id)
        else:
            env[v.id] = a

    def read(a: Any) -> Any:
        return literal_value(a) if type(a) is Literal else env[a.id]

    lin_eqns = []
    for eqn in program.eqns:
        if any(type(a) is Var and a.id in linear for a in eqn.inputs):
            lin_eqns.append(eqn)
            for v in eqn.outputs:
                linear.add(v.id)
        else:
            with pushed_names(rendered_names(eqn.name_stack)) if eqn.name_stack else _NO_NAMES:
                out = eqn.prim.bind(*[read(a) for a in eqn.inputs], **eqn.params)
            if eqn.prim.multiple_results:
                for v, o in zip(eqn.outputs, out):
                    env[v.id] = o
            else:
                env[eqn.outputs[0].id] = out

    ct_env: dict[int, Any] = {}
    transposed = (Transform("transpose"),) if transform_stack else ()

    def accum(v: Var, ct: Any) -> None:
        if ct is None or type(ct) is Zero:
            return
        prev = ct_env.get(v.id)
        ct_env[v.id] = ct if prev is None else add_any(prev, ct)

    for v, ct in zip(program.outvars, cts_out):
        if type(v) is Var and v.id in linear:
            accum(v, ct)
    any_cts = any(ct is not None and type(ct) is not Zero for ct in cts_out)
    for eqn in reversed(lin_eqns):
        cts = [ct_env.pop(v.id, None) for v in eqn.outputs]
        if all(c is None for c in cts) and not (any_cts and eqn.prim in TRANSPOSED_ON_ZEROS):
            continue
        ins = [UndefinedPrimal(a.aval) if type(a) is Var and a.id in linear else read(a)
               for a in eqn.inputs]
        rule = eqn.prim.transpose
        if rule is None:
            raise NotImplementedError(
                f"Transpose rule (for reverse-mode differentiation) for '{eqn.prim.name}' not "
                "implemented")
        if eqn.prim.multiple_results:
            ct_arg = [Zero(v.aval) if c is None else c for v, c in zip(eqn.outputs, cts)]
        else:
            ct_arg = cts[0]
        names = transposed + rendered_names(eqn.name_stack)
        # the sums of cotangents (add_any) are recorded under the transposed equation's names, as
        # JAX's: transpose(jvp(model))/dense, not a bare stack
        with pushed_names(names) if names else _NO_NAMES:
            cts_in = rule(ct_arg, *ins, **eqn.params)
            for a, x, c in zip(eqn.inputs, ins, cts_in):
                if type(x) is UndefinedPrimal:
                    accum(a, c)
    return [ct_env.get(v.id) for v, a in zip(program.invars, args) if type(a) is UndefinedPrimal]


# ----------------------------------------------------------------------------- public API

def _is_array(x: Any) -> bool:
    # by name: transforms/ does not import backend/'s Array class
    return isinstance(x, Tracer) or type(x).__name__ == "Array"


def _as_array(x: Any) -> Any:
    if _is_array(x) or (isinstance(x, np.ndarray) and x.dtype == dtypes.float0):
        return x
    return array_ops.asarray(x)


@api_boundary
def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: bool = False) -> Any:
    """Forward-mode: ``(fun(*primals), J(primals) @ tangents)``.

    ``primals`` and ``tangents`` are tuples (or lists) with the same pytree structure, shapes and
    dtypes (``float0`` tangents for integer inputs).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> y, t = fluxion.jvp(jnp.sin, (0.0,), (1.0,))
        >>> float(y), float(t)
        (0.0, 1.0)
    """
    fname = fun_name(fun)
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(f"jvp of {fname}: primal and tangent arguments must be tuples or lists; "
                        f"found {type(primals).__name__} and {type(tangents).__name__}")
    p_flat, p_tree = tree_util.tree_flatten(tuple(primals))
    t_flat, t_tree = tree_util.tree_flatten(tree_util.tangents_like(tuple(primals),
                                                                    tuple(tangents)))
    if p_tree != t_tree:
        raise TypeError(f"jvp of {fname}: primal and tangent arguments must have the same tree "
                        f"structure; primals have {p_tree} and tangents have {t_tree}")
    ts = []
    for i, (p, t) in enumerate(zip(p_flat, t_flat)):
        pa, ta = aval_of(p), aval_of(t)
        want = tangent_aval(pa)
        if pa.shape != ta.shape:
            raise ValueError(f"jvp of {fname}: primal and tangent arguments must have equal "
                             f"shapes; primal {i} has shape {pa.shape} and its tangent has shape "
                             f"{ta.shape}")
        if want.dtype != ta.dtype:
            raise TypeError(f"jvp of {fname}: the tangent of primal {i} ({pa.str_short()}) must "
                            f"have dtype {want.dtype.name if want.dtype != dtypes.float0 else 'float0'}, "
                            f"got {ta.dtype.name if ta.dtype != dtypes.float0 else 'float0'}")
        ts.append(None if want.dtype == dtypes.float0 else t)
    out_p, out_t, out_tree, aux = _jvp_flat(fun, p_flat, ts, p_tree, has_aux, fname)
    # as JAX's, an output that is an input passed through (or a value a custom rule returns)
    # comes back as it is with its tangent, a Python scalar included; a computed output's
    # tangent is an array (JAX's rules broadcast a raw tangent into one)
    out_t = [_as_array(instantiate(t)) if _is_array(p) else instantiate(t)
             for p, t in zip(out_p, out_t)]
    res = (tree_util.tree_unflatten(out_tree, out_p), tree_util.tree_unflatten(out_tree, out_t))
    return (*res, aux.tree()) if has_aux else res


@api_boundary
def linearize(fun: Callable, *primals: Any, has_aux: bool = False) -> Any:
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` evaluates the JVP from the saved
    linearization (the primal computation is done once, now).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> y, f_jvp = fluxion.linearize(jnp.sin, 0.0)
        >>> float(f_jvp(2.0))
        2.0
    """
    fname = fun_name(fun)
    p_flat, p_tree = tree_util.tree_flatten(primals)
    out_p, lin, out_tree, aux = _linearize_flat(fun, p_flat, [True] * len(p_flat), p_tree,
                                                has_aux, fname)
    # As JAX's, the function is a ``tree_util.Partial`` whose leaves are the residuals, so it
    # can be returned from ``jit``/``vmap``; everything else it needs is static: per primal leaf
    # its shape and dtype, whether it is a key array (a leaf over physical arrays, whose
    # tangent is float0) and the tangent avals of its physical leaves.
    pub_leaves, pub_tree = public_tree_util.tree_flatten(primals)
    tavals = iter(tangent_aval(aval_of(p)) for p in p_flat)
    physical = tree_util.physical_types()
    leaf_info = tuple((tuple(np.shape(p)), getattr(p, "dtype", None), type(p) in physical,
                       tuple(next(tavals) for _ in tree_util.tree_leaves(p)))
                      for p in pub_leaves)
    f_jvp = public_tree_util.Partial(
        functools.partial(_linearized_jvp, fname, pub_tree, leaf_info, out_tree), lin)
    out = tree_util.tree_unflatten(out_tree, [_as_array(p) for p in out_p])
    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


@api_boundary
def _linearized_jvp(fname: str, pub_tree: Any, leaf_info: tuple, out_tree: Any,
                    lin: LinearFunction, *tangents: Any) -> Any:
    t_leaves, t_tree = public_tree_util.tree_flatten(tangents)
    if t_tree != pub_tree:
        raise TypeError(f"linearized {fname}: expected tangents with structure {pub_tree}, "
                        f"got {t_tree}")
    ts = []
    for t, (shape, dtype, is_key, tavals) in zip(t_leaves, leaf_info):
        if is_key or all(a.dtype == dtypes.float0 for a in tavals):
            if is_key and (getattr(t, "dtype", None) != dtypes.float0
                           or tuple(np.shape(t)) != shape):
                raise TypeError(f"the tangent of a value of dtype {dtype} and shape {shape} "
                                f"must be float0 of shape {shape}; got {type(t).__name__} of "
                                f"dtype {getattr(t, 'dtype', None)} and shape {np.shape(t)}")
            continue
        (a,) = tavals
        if aval_of(t).shape != a.shape:
            raise ValueError(f"linearized {fname}: tangent of shape {aval_of(t).shape} where "
                             f"{a.shape} is expected")
        ts.append(t)
    outs = [_as_array(o) for o in lin.apply(ts)]
    return tree_util.tree_unflatten(out_tree, outs)


# Inside a shard_map body traced with check_vma=True, ``_vma.primal_vmas(primals)`` gives the
# mesh axes each primal varies over (None outside such a body) and ``_vma.sum_extra(ct, vma)``
# sums a cotangent over the axes it varies over beyond ``vma``: the transpose of JAX's implicit
# ``pvary`` (a psum), applied where the cotangent reaches its primal (the linear maps between
# invariant values are the same on every member, so the sum commutes with them).


class VJPFunction:
    """The function :func:`vjp` returns: ``f_vjp(ct)`` is the tuple of cotangents of the
    primals for an output cotangent ``ct``.

    As JAX's, it is a pytree whose leaves are the residuals of the linearization, so it can be
    returned from a jitted function and passed into one.
    """

    __slots__ = ("lin", "fname", "in_tree", "out_tree", "in_tavals", "out_avals", "in_vmas")

    def __init__(self, lin: LinearFunction, fname: str, in_tree: Any, out_tree: Any,
                 in_tavals: Sequence[ShapedArray], out_avals: Sequence[ShapedArray],
                 in_vmas: tuple | None = None) -> None:
        self.in_vmas = in_vmas  # the primals' varying mesh axes in a check_vma body, else None
        self.lin = lin
        self.fname = fname
        self.in_tree = in_tree            # structure of the primals (a tuple)
        self.out_tree = out_tree          # structure of the output
        self.in_tavals = tuple(in_tavals)  # tangent avals of the primal leaves
        self.out_avals = tuple(out_avals)  # avals of the output leaves

    @api_boundary
    def __call__(self, *cts: Any) -> tuple:
        fname, out_avals = self.fname, self.out_avals
        if len(cts) != 1:
            raise TypeError(f"the vjp function of {fname} takes one argument (a cotangent with "
                            f"the structure of the output), got {len(cts)}")
        ct = tree_util.tangents_for(self.out_tree, [a.shape for a in out_avals], cts[0])
        c_flat, c_tree = tree_util.tree_flatten(ct)
        if c_tree != self.out_tree:
            raise TypeError(f"vjp of {fname}: the cotangent has tree structure {c_tree} but the "
                            f"primal output has {self.out_tree}")
        for i, (c, a) in enumerate(zip(c_flat, out_avals)):
            ca = aval_of(c)
            if ca.shape != a.shape:
                raise ValueError(f"vjp of {fname}: cotangent {i} has shape {ca.shape} but the "
                                 f"output has shape {a.shape}")
        nz_cts = []
        for c, a in zip(c_flat, out_avals):
            ca = aval_of(c)
            if not is_float(a.dtype) or not is_float(ca.dtype):
                nz_cts.append(None)
                continue
            if ca.dtype != a.dtype and not isinstance(c, Tracer) and type(c).__name__ != "Array":
                c = array_ops.convert(c, a.dtype, a.weak_type)
            nz_cts.append(c)
        it = iter(self.lin.transpose(nz_cts))
        res = []
        for a in self.in_tavals:
            if a.dtype == dtypes.float0:
                res.append(zeros_like_aval(a))
                continue
            c = next(it)
            res.append(_as_array(zeros_like_aval(a) if c is None else c))
        if self.in_vmas is not None:
            res = [_vma.sum_extra(c, v) for c, v in zip(res, self.in_vmas)]
        return tuple(tree_util.tree_unflatten(self.in_tree, res))

    def __repr__(self) -> str:
        return f"VJPFunction(of {self.fname})"


tree_util.register_pytree_node(
    VJPFunction,
    lambda f: ((f.lin,), (f.fname, f.in_tree, f.out_tree, f.in_tavals, f.out_avals,
                          f.in_vmas)),
    lambda static, children: VJPFunction(children[0], *static))


def _vjp(fun: Callable, primals: tuple, has_aux: bool, fname: str) -> Any:
    p_flat, p_tree = tree_util.tree_flatten(primals)
    out_p, lin, out_tree, aux = _linearize_flat(fun, p_flat, [True] * len(p_flat), p_tree,
                                                has_aux, fname)
    vmas = _vma.primal_vmas(p_flat)
    f_vjp = VJPFunction(lin, fname, p_tree, out_tree, [tangent_aval(aval_of(p)) for p in p_flat],
                        [aval_of(p) for p in out_p], vmas)
    out = tree_util.tree_unflatten(out_tree, [_as_array(p) for p in out_p])
    return (out, f_vjp, aux) if has_aux else (out, f_vjp)


@api_boundary
def vjp(fun: Callable, *primals: Any, has_aux: bool = False) -> Any:
    """Reverse-mode: ``(fun(*primals), f_vjp)`` where ``f_vjp(ct)`` returns the tuple of
    cotangents of ``primals`` (one per argument) for an output cotangent ``ct``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> y, f_vjp = fluxion.vjp(jnp.sin, 0.0)
        >>> float(f_vjp(1.0)[0])
        1.0
    """
    return _vjp(fun, primals, has_aux, fun_name(fun))


def _argnums(fname: str, argnums: Any, nargs: int, what: str = "grad") -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise ValueError(f"{what} of {fname}: argnums must not be empty")
    out = []
    for a in nums:
        if not isinstance(a, (int, np.integer)):
            raise TypeError(f"{what} of {fname}: argnums must be ints, got {a!r}")
        i = int(a)
        if not -nargs <= i < nargs:
            raise TypeError(f"{what} of {fname}: differentiating with respect to argnums="
                            f"{argnums} requires at least {(i if i >= 0 else -i - 1) + 1} "
                            f"positional arguments, but got only {nargs}")
        out.append(i % nargs)
    return tuple(out)


def _check_input_dtypes(fname: str, what: str, args: tuple, nums: tuple, holomorphic: bool,
                        allow_int: bool) -> None:
    for i, a in zip(nums, args):
        for leaf in tree_util.tree_leaves(a):
            dt = _check_output_leaf(fname, leaf, "argument").dtype
            if holomorphic:
                if dt.kind != "c":
                    raise TypeError(f"{what} of {fname} with holomorphic=True requires inputs "
                                    f"with complex dtype, but argument {i} has dtype {dt.name}")
            elif not is_float(dt) and not allow_int:
                raise TypeError(
                    f"{what} of {fname} requires real- or complex-valued inputs (input dtype that "
                    f"is a sub-dtype of np.inexact), but argument {i} has dtype {dt.name}. If you "
                    "want to use Boolean- or integer-valued inputs, use vjp or set "
                    "allow_int to True.")


def _check_scalar_output(fname: str, what: str, out: Any, holomorphic: bool) -> ShapedArray:
    leaves, tree = tree_util.tree_flatten(out)
    if len(leaves) != 1 or tree != tree_util.tree_structure(0):
        raise TypeError(f"{what} of {fname} requires the function to return a single scalar "
                        f"array, got a value of structure {tree}")
    a = _check_output_leaf(fname, leaves[0])
    if a.shape != ():
        raise TypeError(f"Gradient only defined for scalar-output functions: {what} of {fname} "
                        f"returned shape {a.shape} (expected shape ())")
    if holomorphic:
        if a.dtype.kind != "c":
            raise TypeError(f"{what} of {fname} with holomorphic=True requires a complex output, "
                            f"got {a.dtype.name}")
    elif not is_float(a.dtype) or a.dtype.kind == "c":
        raise TypeError(f"{what} of {fname} requires real-valued outputs (output dtype that is a "
                        f"sub-dtype of np.floating), but got {a.dtype.name}. For holomorphic "
                        "differentiation pass holomorphic=True; for complex outputs of "
                        "non-holomorphic functions use vjp directly.")
    return a


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False,
                   reduce_axes: Sequence[Any] = ()) -> Callable[..., Any]:
    """A function returning ``(fun(*args), grad(fun)(*args))`` (with ``has_aux``:
    ``((value, aux), grad)``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> v, g = fluxion.value_and_grad(lambda x: x ** 2)(3.0)
        >>> float(v), float(g)
        (9.0, 6.0)
    """
    return _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, "value_and_grad")


def _value_and_grad(fun: Callable, argnums: Any, has_aux: bool, holomorphic: bool,
                    allow_int: bool, what: str) -> Callable[..., Any]:
    fname = fun_name(fun)

    @api_boundary
    @wraps(fun)
    def value_and_grad_f(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums(fname, argnums, len(args), what)
        dyn = tuple(args[i] for i in nums)
        _check_input_dtypes(fname, what, dyn, nums, holomorphic, allow_int)

        f_partial = partial_at(fun, args, nums, kwargs)

        if has_aux:
            out, f_vjp, aux = _vjp(f_partial, dyn, True, fname)
        else:
            out, f_vjp = _vjp(f_partial, dyn, False, fname)
        a = _check_scalar_output(fname, what, out, holomorphic)
        one = array_ops.convert(1, a.dtype, a.weak_type)
        g = f_vjp(tree_util.tree_unflatten(tree_util.tree_structure(out), [one]))
        g = g[0] if isinstance(argnums, int) else g
        return ((out, aux), g) if has_aux else (out, g)

    return value_and_grad_f


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False,
         reduce_axes: Sequence[Any] = ()) -> Callable[..., Any]:
    """The gradient of scalar-valued ``fun`` with respect to the arguments ``argnums``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> float(fluxion.grad(jnp.tanh)(1.0))  # doctest: +ELLIPSIS
        0.419974...
    """
    vg = _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, "grad")

    @api_boundary
    @wraps(fun)
    def grad_f(*args: Any, **kwargs: Any) -> Any:
        if has_aux:
            (_, aux), g = vg(*args, **kwargs)
            return g, aux
        return vg(*args, **kwargs)[1]

    return grad_f


@api_boundary
def _primal_aval(x: Any) -> ShapedArray:
    # a value, or (as JAX's linear_transpose takes) a ShapedArray / ShapeDtypeStruct / any
    # object with shape and dtype: only the primals' shapes and dtypes are used
    try:
        return aval_of(x)
    except TypeError:
        return _shape_abstractify(x)


def linear_transpose(fun: Callable, *primals: Any, reduce_axes: Sequence[Any] = ()) -> Callable:
    """The transpose of the linear function ``fun`` at the shapes/dtypes of ``primals``.

    Returns ``f_t(ct)`` giving the tuple of input cotangents.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> f_t = fluxion.linear_transpose(lambda x: 3.0 * x, 1.0)
        >>> float(f_t(1.0)[0])
        3.0
    """
    fname = fun_name(fun)
    p_flat, p_tree = tree_util.tree_flatten(primals)
    in_avals = [_primal_aval(p) for p in p_flat]
    for a in in_avals:
        if not is_float(a.dtype):
            raise TypeError(f"linear_transpose of {fname}: inputs must be floating or complex, "
                            f"got {a.dtype.name}")
    program, consts, out_tree = trace_to_program(
        lambda *xs: fun(*tree_util.tree_unflatten(p_tree, xs)), tuple(p_flat), {},
        in_avals=in_avals, description=f"linear_transpose of {fname}")
    out_avals = program.out_avals

    @api_boundary
    def f_t(ct: Any) -> tuple:
        c_flat, c_tree = tree_util.tree_flatten(ct)
        if c_tree != out_tree:
            raise TypeError(f"linear_transpose of {fname}: cotangent structure {c_tree} does "
                            f"not match the output structure {out_tree}")
        for c, a in zip(c_flat, out_avals):
            if aval_of(c).shape != a.shape:
                raise ValueError(f"linear_transpose of {fname}: cotangent of shape "
                                 f"{aval_of(c).shape} where {a.shape} is expected")
        cts = backward_pass(program, consts, [UndefinedPrimal(a) for a in in_avals], c_flat,
                            transform_stack=True)
        outs = [_as_array(zeros_like_aval(a) if c is None else c) for c, a in zip(cts, in_avals)]
        return tuple(tree_util.tree_unflatten(p_tree, outs))

    return f_t


# ----------------------------------------------------------------------------- program transformations
# The JVP, partial evaluation and transpose of a closed Program (no constvars), shared by the call
# primitives (jit, checkpoint), control flow and custom derivatives. Each result is cached on the
# Program (staging.cached_transform); a transformed Program is closed too: its leading inputs are
# the constants it captured, returned beside it. One zero policy throughout: a tangent or cotangent
# is zero when it is symbolic (``None`` or :class:`Zero`) or of type ``float0``, and zero inputs are
# not passed; a zero output is not returned unless the caller asks to instantiate it.

def is_zero_tangent(t: Any) -> bool:
    """True for a symbolic zero (``None`` or :class:`Zero`) or a ``float0`` tangent (of an
    integer or boolean value)."""
    if t is None or type(t) is Zero:
        return True
    aval = getattr(t, "aval", None)
    dt = aval.dtype if isinstance(aval, ShapedArray) else getattr(t, "dtype", None)
    return dt is not None and dt == dtypes.float0


def jvp_program(program: Program, nonzero: Sequence[bool], instantiate: bool | Sequence[bool] = False
                ) -> tuple[Program, list, list[bool]]:
    """The JVP of a closed ``program`` for nonzero tangents of the inputs marked ``nonzero``.

    Returns ``(jvp, consts, out_nonzero)``: ``jvp`` is a closed Program over ``(*consts,
    *primals, *nonzero tangents)`` returning ``(*primal outputs, *nonzero output tangents)``. An
    output tangent is zero when it is symbolically zero or its output is not differentiable;
    ``instantiate`` (one flag, or one per output) makes it explicit zeros instead (for a
    differentiable output).
    """
    nonzero = tuple(bool(nz) for nz in nonzero)
    inst = mask_flags(instantiate, len(program.outvars))

    def make() -> tuple:
        st = StagingInterpreter("jvp of a staged program")
        with interpreter_scope(st):
            ps = [st.new_arg(v.aval) for v in program.invars]
            ts = [st.new_arg(tangent_aval(v.aval)) if nz else None
                  for v, nz in zip(program.invars, nonzero)]
            with interpreter_scope(JVPInterpreter("jvp of a staged program")) as it:
                ins = [p if t is None else JVPTracer(it, p, t) for p, t in zip(ps, ts)]
                outs = eval_program(program, [], ins)
                pairs = [(o.primal, o.tangent) if type(o) is JVPTracer and o._interp is it
                         else (o, None) for o in outs]
            out_nz, t_outs = [], []
            for (_, t), v, force in zip(pairs, program.outvars, inst):
                differentiable = is_float(v.aval.dtype)
                nz = differentiable and not is_zero_tangent(t)
                if differentiable and force and not nz:
                    t, nz = zeros_like_aval(tangent_aval(v.aval)), True
                out_nz.append(nz)
                if nz:
                    t_outs.append(t)
            prog = st.build([st.atom(p) for p, _ in pairs] + [st.atom(t) for t in t_outs])
        return close_program(prog), list(st.const_vals), out_nz
    return cached_transform(program, ("jvp", nonzero, inst), make)


def jvp_call(program: Program, primals: Sequence[Any], tangents: Sequence[Any],
             bind: Callable[[Program, list], Sequence[Any]]) -> tuple[list, list]:
    """The JVP rule of a call primitive holding the closed ``program``.

    ``bind(jvp, operands)`` binds the primitive again on the JVP program. Returns the primal
    outputs and the output tangents (symbolic zeros where zero).
    """
    nz = tuple(not is_zero_tangent(t) for t in tangents)
    jprog, consts, out_nz = jvp_program(program, nz)
    outs = bind(jprog, [*consts, *primals, *[t for t, z in zip(tangents, nz) if z]])
    n = len(program.outvars)
    it = iter(outs[n:])
    return list(outs[:n]), [next(it) if z else Zero(tangent_aval(a))
                            for z, a in zip(out_nz, program.out_avals)]


def transpose_program(program: Program, linear: Sequence[bool], ct_nonzero: Sequence[bool],
                      vma: tuple | None = None) -> tuple[Program, list]:
    """The transpose of a closed ``program`` linear in the inputs marked ``linear``: a closed
    Program over ``(*consts, *non-linear inputs, *nonzero output cotangents)`` returning the
    cotangent of each linear input (zeros instantiated), and its constants. ``vma``: inside a
    ``check_vma`` shard_map body, ``(manual axes, the vma of each of those inputs)``: the
    collectives then transpose by that body's rules (JAX's check_vma=True ones)."""
    linear = tuple(bool(lin) for lin in linear)
    ct_nonzero = tuple(bool(nz) for nz in ct_nonzero)

    def make() -> tuple:
        st = StagingInterpreter("transpose of a staged program")
        with interpreter_scope(st):
            args = [UndefinedPrimal(v.aval) if lin else st.new_arg(v.aval)
                    for v, lin in zip(program.invars, linear)]
            cts = [st.new_arg(v.aval) if nz else None
                   for v, nz in zip(program.outvars, ct_nonzero)]
            if vma is not None:
                _vma.push(_vma.BodyVma(st, st.invars, vma[1], vma[0]))
            try:
                cts_in = backward_pass(program, [], args, cts)
            finally:
                if vma is not None:
                    _vma.pop()
            lin_avals = [v.aval for v, lin in zip(program.invars, linear) if lin]
            atoms = [st.atom(zeros_like_aval(a) if c is None else c)
                     for c, a in zip(cts_in, lin_avals)]
            prog = st.build(atoms)
        return close_program(prog), list(st.const_vals)
    return cached_transform(program, ("T", linear, ct_nonzero, vma), make)

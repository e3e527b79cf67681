"""User-defined derivatives: ``custom_jvp``, ``custom_vjp``, ``custom_gradient``,
``closure_convert``.

A decorated function called under a transformation is staged to a Program and bound as a call
primitive (``custom_jvp_call`` / ``custom_vjp_call``) that carries the user's rule, so the rule
survives ``jit`` and is used by any later differentiation. Outside every transformation the
function simply runs.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> @fluxion.custom_jvp
    ... def f(x):
    ...     return jnp.sin(x)
    >>> @f.defjvp
    ... def f_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return f(x), 2.0 * t
    >>> float(fluxion.grad(f)(0.0))
    2.0
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from fluxion import tree_util
from fluxion.core import dtypes
from fluxion.core.ir import Program, eval_program
from fluxion.core.primitive import Primitive
from fluxion.core.trace import EVAL, STATE
from fluxion.transforms import ad
from fluxion.transforms.staging import abstractify, fun_name, partial_at, trace_to_program

__all__ = ["custom_jvp", "custom_vjp", "custom_gradient", "closure_convert",
           "custom_jvp_call_p", "custom_vjp_call_p", "custom_lin_p"]


def _stage(fun: Callable, args: tuple, name: str) -> tuple[Program, list, Any, list]:
    leaves, tree = tree_util.tree_flatten(args)
    avals = [abstractify(x) for x in leaves]
    program, consts, out_tree = trace_to_program(fun, args, {}, in_avals=avals,
                                                 description=f"custom derivative of {name}")
    closed, consts = ad._close(program, consts)
    return closed, consts, out_tree, leaves


def _check_tangents(name: str, what: str, got: list, want_avals: list) -> None:
    for i, (t, a) in enumerate(zip(got, want_avals)):
        ta = ad.tangent_aval(a)
        if t is None or type(t) is ad.Zero:
            continue
        g = ad._aval(t)
        if g.shape != ta.shape or (g.dtype != ta.dtype and ta.dtype != dtypes.float0):
            raise TypeError(
                f"custom_jvp rule of {name}: {what} {i} should have the shape and dtype of the "
                f"primal output ({ta.str_short()}), got {g.str_short()}")


# ----------------------------------------------------------------------------- custom_jvp

custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True)
custom_jvp_call_p.abstract_eval = lambda *avals, call, jvp, num_consts, name: call.out_avals
custom_jvp_call_p.impl = lambda *args, call, jvp, num_consts, name: eval_program(call, [], args)
custom_jvp_call_p.lowering = (
    lambda ctx, *args, call, jvp, num_consts, name: ctx.lower_program_inline(call, list(args)))


def _custom_jvp_call_jvp(primals: list, tangents: list, *, call: Program, jvp: Callable,
                         num_consts: int, name: str) -> tuple:
    if any(type(t) is not ad.Zero for t in tangents[:num_consts]):
        # The function closes over values being differentiated: differentiate it directly.
        jprog, consts, out_nz = ad.jvp_program(call, [type(t) is not ad.Zero for t in tangents])
        outs = eval_program(jprog, consts,
                            [*primals, *[t for t in tangents if type(t) is not ad.Zero]])
        n = len(call.outvars)
        it = iter(outs[n:])
        return outs[:n], [next(it) if z else ad.Zero(ad.tangent_aval(a))
                          for z, a in zip(out_nz, call.out_avals)]
    return jvp(primals[num_consts:], tangents[num_consts:])


custom_jvp_call_p.jvp = _custom_jvp_call_jvp


def _custom_jvp_call_batch(axis_data: Any, args: list, dims: list, *, call: Program, jvp: Callable,
                           num_consts: int, name: str) -> tuple:
    """vmap of a custom_jvp call: a custom_jvp call of the batched program whose rule is the
    user's rule under vmap (so the rule survives ``grad(vmap(f))``)."""
    from fluxion.transforms import batching as B  # noqa: PLC0415
    size = B.batch_size(args, dims)
    args = [x if d is None else B.moveaxis(x, d, 0) for x, d in zip(args, dims)]
    dims = [None if d is None else 0 for d in dims]
    bprog, bconsts, out_dims = B.batch_program(call, dims, B.AxisData(None, size),
                                               out_at_front=True)
    pdims = dims[num_consts:]
    if any(d is not None for d in dims[:num_consts]) or all(d is None for d in pdims):
        # Batched closed-over values reach the user's rule only through its closure: use the
        # batched program itself (the function is differentiated directly).
        return eval_program(bprog, bconsts, args), out_dims
    closed, cconsts = ad._close(bprog, bconsts)

    def batched_jvp(primals: list, tangents: list) -> tuple:
        nz = [type(t) is not ad.Zero for t in tangents]

        def one(ps: list, ts: list) -> tuple:
            it = iter(ts)
            full = [next(it) if z else ad.Zero(ad.tangent_aval(ad._aval(p)))
                    for z, p in zip(nz, ps)]
            outs, touts = jvp(list(ps), full)
            return list(outs), [ad.instantiate(t) for t in touts]

        tdims = [d for d, z in zip(pdims, nz) if z]
        return B.vmap(one, in_axes=(list(pdims), tdims))(
            list(primals), [t for t, z in zip(tangents, nz) if z])

    outs = custom_jvp_call_p.bind(*cconsts, *args, call=closed, jvp=batched_jvp,
                                  num_consts=len(cconsts) + num_consts, name=name)
    return outs, out_dims


custom_jvp_call_p.batch = _custom_jvp_call_batch


class _CustomRuleFunction:
    """What custom_jvp and custom_vjp share: method binding and argument splitting."""

    fun: Callable
    nondiff_argnums: tuple[int, ...]

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        return functools.partial(self, obj)

    def _positional(self, args: tuple, kwargs: dict) -> tuple:
        if not kwargs:
            return args
        import inspect  # noqa: PLC0415
        return inspect.signature(self.fun).bind(*args, **kwargs).args

    def _split(self, args: tuple) -> tuple[list, list[int], tuple]:
        """(non-differentiable values, positions of the others, the others)."""
        nd = tuple(i % len(args) for i in self.nondiff_argnums)
        dyn_idx = [i for i in range(len(args)) if i not in nd]
        return [args[i] for i in nd], dyn_idx, tuple(args[i] for i in dyn_idx)


class custom_jvp(_CustomRuleFunction):
    """A function with a user-defined JVP rule (``@f.defjvp`` or ``f.defjvps``).

    ``nondiff_argnums`` name arguments that are not differentiated; they are passed first to the
    rule: ``rule(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> @fluxion.custom_jvp
        ... def relu(x):
        ...     return jnp.maximum(x, 0.0)
        >>> relu.defjvps(lambda g, ans, x: jnp.where(x > 0, g, 0.0))
        >>> float(fluxion.grad(relu)(0.0))
        0.0
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()) -> None:
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp: Callable | None = None
        self.symbolic_zeros = False
        functools.update_wrapper(self, fun)

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """Set the rule ``jvp(primals, tangents) -> (primal_out, tangent_out)``."""
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """Set the rule from one function per argument, ``jvp_i(g_i, ans, *primals)``, giving
        that argument's contribution (``None``: no contribution)."""
        def jvp(primals: tuple, tangents: tuple) -> tuple:
            ans = self(*primals)
            acc = None
            for fn, t in zip(jvps, tangents):
                if fn is None:
                    continue
                c = fn(t, ans, *primals)
                acc = c if acc is None else tree_util.tree_map(lambda a, b: a + b, acc, c)
            if acc is None:
                acc = tree_util.tree_map(lambda a: ad.zeros_like_aval(ad.tangent_aval(
                    ad._aval(a))), ans)
            return ans, acc
        self.defjvp(jvp)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = fun_name(self.fun)
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
        args = self._positional(args, kwargs)
        if STATE.interp is EVAL:
            return self.fun(*args)
        static, dyn_idx, dyn = self._split(args)
        f_dyn = partial_at(self.fun, args, dyn_idx)

        call, consts, out_tree, leaves = _stage(f_dyn, dyn, name)
        in_tree = tree_util.tree_structure(dyn)
        user_jvp = self.jvp
        out_avals = call.out_avals

        def flat_jvp(primals: list, tangents: list) -> tuple:
            ps = tree_util.tree_unflatten(in_tree, primals)
            ts = tree_util.tree_unflatten(in_tree, [ad.instantiate(t) for t in tangents])
            res = user_jvp(*static, tuple(ps), tuple(ts))
            if not isinstance(res, (tuple, list)) or len(res) != 2:
                raise TypeError(f"custom_jvp rule of {name} must return a pair (primal_out, "
                                f"tangent_out), got {type(res).__name__}")
            p_out, t_out = res
            p_flat, p_tree = tree_util.tree_flatten(p_out)
            t_flat, t_tree = tree_util.tree_flatten(t_out)
            if p_tree != out_tree:
                raise TypeError(f"custom_jvp rule of {name}: the primal output has structure "
                                f"{p_tree}, but {name} returns {out_tree}")
            if t_tree != out_tree:
                raise TypeError(f"custom_jvp rule of {name}: the tangent output has structure "
                                f"{t_tree}, expected the primal output's structure {out_tree}")
            _check_tangents(name, "tangent output", t_flat, out_avals)
            return p_flat, t_flat

        outs = custom_jvp_call_p.bind(*consts, *leaves, call=call, jvp=flat_jvp,
                                      num_consts=len(consts), name=name)
        return tree_util.tree_unflatten(out_tree, outs)


# ----------------------------------------------------------------------------- custom_vjp

custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
custom_vjp_call_p.abstract_eval = lambda *avals, call, fwd, bwd, num_consts, name: call.out_avals
custom_vjp_call_p.impl = (
    lambda *args, call, fwd, bwd, num_consts, name: eval_program(call, [], args))
custom_vjp_call_p.lowering = (
    lambda ctx, *args, call, fwd, bwd, num_consts, name: ctx.lower_program_inline(call,
                                                                                    list(args)))

custom_lin_p = Primitive("custom_lin", multiple_results=True)
custom_lin_p.abstract_eval = lambda *avals, bwd, num_res, out_avals, name: list(out_avals)


def _custom_lin_impl(*args: Any, bwd: Any, num_res: int, out_avals: tuple, name: str) -> Any:
    raise TypeError(f"can't apply forward-mode autodiff (jvp) to the custom_vjp function {name}; "
                    "use reverse mode (grad, vjp) or define it with custom_jvp instead.")


custom_lin_p.impl = _custom_lin_impl


def _custom_lin_transpose(cts: list, *args: Any, bwd: Callable, num_res: int, out_avals: tuple,
                          name: str) -> list:
    res = args[:num_res]
    cts_in = bwd(list(res), [ad.instantiate(c) for c in cts])
    return [None] * num_res + list(cts_in)


custom_lin_p.transpose = _custom_lin_transpose


def _custom_vjp_call_jvp(primals: list, tangents: list, *, call: Program, fwd: Callable,
                         bwd: Callable, num_consts: int, name: str) -> tuple:
    if any(type(t) is not ad.Zero for t in tangents[:num_consts]):
        raise TypeError(
            f"custom_vjp function {name} closes over a value that is being differentiated; "
            "pass it as an explicit argument, or use fluxion.closure_convert to hoist it.")
    res, outs = fwd(primals[num_consts:])
    diff = [t for t in tangents[num_consts:]]
    out_tavals = tuple(ad.tangent_aval(a) for a in call.out_avals)
    t_outs = custom_lin_p.bind(*res, *[ad.instantiate(t) for t in diff], bwd=bwd,
                               num_res=len(res), out_avals=out_tavals, name=name)
    return outs, list(t_outs)


custom_vjp_call_p.jvp = _custom_vjp_call_jvp


def _is_arraylike(x: Any) -> bool:
    try:
        abstractify(x)
        return True
    except TypeError:
        return False


class custom_vjp(_CustomRuleFunction):
    """A function with user-defined reverse-mode rules ``f.defvjp(fwd, bwd)``.

    ``fwd(*args) -> (out, residuals)``; ``bwd(*nondiff_args, residuals, ct) -> tuple`` with one
    cotangent per (differentiable) argument (``None`` for zero).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> @fluxion.custom_vjp
        ... def f(x):
        ...     return jnp.sin(x)
        >>> f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (3.0 * g,))
        >>> float(fluxion.grad(f)(1.0))
        3.0
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()) -> None:
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        functools.update_wrapper(self, fun)

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False,
               optimize_remat: bool = False) -> None:
        """Set the forward (``fwd(*args) -> (out, res)``) and backward (``bwd(res, ct)``)
        rules."""
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = fun_name(self.fun)
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
        args = self._positional(args, kwargs)
        if STATE.interp is EVAL:
            return self.fun(*args)
        static, dyn_idx, dyn = self._split(args)
        f_dyn = partial_at(self.fun, args, dyn_idx)

        call, consts, out_tree, leaves = _stage(f_dyn, dyn, name)
        in_tree = tree_util.tree_structure(dyn)
        in_avals = [abstractify(x) for x in leaves]
        user_fwd, user_bwd = self.fwd, self.bwd
        cell: dict[str, Any] = {}

        def flat_fwd(primals: list) -> tuple:
            ps = tree_util.tree_unflatten(in_tree, primals)
            r = partial_at(user_fwd, args, dyn_idx)(*ps)
            if not isinstance(r, (tuple, list)) or len(r) != 2:
                raise TypeError(f"custom_vjp fwd rule of {name} must return a pair (output, "
                                f"residuals), got {type(r).__name__}")
            out, res = r
            o_flat, o_tree = tree_util.tree_flatten(out)
            if o_tree != out_tree:
                raise TypeError(f"custom_vjp fwd rule of {name}: its output has structure "
                                f"{o_tree}, but {name} returns {out_tree}")
            r_flat, r_tree = tree_util.tree_flatten(res)
            arr = [_is_arraylike(x) for x in r_flat]
            cell["res"] = (r_tree, arr, [x for x, a in zip(r_flat, arr) if not a])
            return [x for x, a in zip(r_flat, arr) if a], o_flat

        def flat_bwd(res: list, cts: list) -> list:
            r_tree, arr, others = cell["res"]
            it_a, it_o = iter(res), iter(others)
            r = tree_util.tree_unflatten(r_tree, [next(it_a) if a else next(it_o) for a in arr])
            ct = tree_util.tree_unflatten(out_tree, cts)
            got = user_bwd(*static, r, ct)
            if not isinstance(got, (tuple, list)):
                raise TypeError(f"custom_vjp bwd rule of {name} must return a tuple with one "
                                f"cotangent per differentiable argument ({len(dyn)}), got "
                                f"{type(got).__name__}")
            if len(got) != len(dyn):
                raise ValueError(f"custom_vjp bwd rule of {name} must return a tuple of length "
                                 f"{len(dyn)} (one cotangent per differentiable argument), got "
                                 f"length {len(got)}")
            flat: list = []
            for i, (g, a) in enumerate(zip(got, dyn)):
                a_leaves, a_tree = tree_util.tree_flatten(a)
                if g is None:
                    flat += [None] * len(a_leaves)
                    continue
                g_leaves, g_tree = tree_util.tree_flatten(g, is_leaf=lambda x: x is None)
                if g_tree != a_tree and len(g_leaves) != len(a_leaves):
                    raise TypeError(f"custom_vjp bwd rule of {name}: cotangent {i} has "
                                    f"structure {g_tree}, expected the argument's {a_tree}")
                flat += g_leaves
            for i, (g, a) in enumerate(zip(flat, in_avals)):
                if g is None:
                    continue
                ga, ta = ad._aval(g), ad.tangent_aval(a)
                if ga.shape != ta.shape:
                    raise ValueError(f"custom_vjp bwd rule of {name}: cotangent for input {i} has "
                                     f"shape {ga.shape}, expected {ta.shape}")
                if ga.dtype != ta.dtype and ta.dtype != dtypes.float0:
                    flat[i] = _convert(g, ta)
            return [None if ad.tangent_aval(a).dtype == dtypes.float0 else g
                    for g, a in zip(flat, in_avals)]

        outs = custom_vjp_call_p.bind(*consts, *leaves, call=call, fwd=flat_fwd, bwd=flat_bwd,
                                      num_consts=len(consts), name=name)
        return tree_util.tree_unflatten(out_tree, outs)


def _convert(x: Any, aval: Any) -> Any:
    from fluxion import lax  # noqa: PLC0415
    return lax.convert_element_type(x, aval.dtype, weak_type=aval.weak_type)


def custom_gradient(fun: Callable) -> Callable:
    """``fun(*args) -> (out, vjp_fn)`` becomes a function whose reverse-mode derivative is
    ``vjp_fn(ct) -> tuple of input cotangents``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> @fluxion.custom_gradient
        ... def f(x):
        ...     return x ** 2, lambda g: (g * 10.0,)
        >>> float(fluxion.grad(f)(3.0))
        10.0
    """
    @custom_vjp
    def wrapped(*args: Any) -> Any:
        return fun(*args)[0]

    def fwd(*args: Any) -> tuple:
        out, vjp_fn = fun(*args)
        return out, vjp_fn

    def bwd(vjp_fn: Callable, ct: Any) -> tuple:
        r = vjp_fn(ct)
        return tuple(r) if isinstance(r, (tuple, list)) else (r,)

    wrapped.defvjp(fwd, bwd)
    functools.update_wrapper(wrapped, fun)
    return wrapped


def closure_convert(fun: Callable, *example_args: Any) -> tuple[Callable, list]:
    """Hoist the values ``fun`` closes over into explicit arguments.

    Returns ``(converted, consts)`` with ``converted(*args, *consts) == fun(*args)``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> w = jnp.ones(2)
        >>> g, consts = fluxion.closure_convert(lambda x: x * w, jnp.ones(2))
        >>> g(jnp.ones(2), *consts).tolist()
        [1.0, 1.0]
    """
    leaves, in_tree = tree_util.tree_flatten(example_args)
    avals = [abstractify(x) for x in leaves]
    program, consts, out_tree = trace_to_program(fun, example_args, {}, in_avals=avals)
    n_args = len(example_args)

    def converted(*args: Any) -> Any:
        xs, cs = args[:n_args], args[n_args:]
        flat, tree = tree_util.tree_flatten(tuple(xs))
        if tree != in_tree:
            raise TypeError(f"closure_convert of {fun_name(fun)}: arguments with structure "
                            f"{tree} where {in_tree} was expected")
        return tree_util.tree_unflatten(out_tree, eval_program(program, list(cs), flat))

    functools.update_wrapper(converted, fun)
    return converted, list(consts)




# ----------------------------------------------------------------------------- batching (vmap)
# vmap of a custom_jvp / custom_vjp function stays a custom_jvp_call / custom_vjp_call: the
# staged function is batched as a Program, and the user's rules are wrapped in a vmap of the same
# axis, so the custom rule survives vmap (grad(vmap(f)) and vmap(grad(f)) both use it).

def _batch_inputs(args: Sequence[Any], dims: Sequence[Any]) -> tuple[list, list]:
    from fluxion.transforms import batching as bt  # noqa: PLC0415
    xs = [x if d is None else bt.moveaxis(x, d, 0) for x, d in zip(args, dims)]
    return xs, [None if d is None else 0 for d in dims]


def _per_example(aval: Any, d: Any) -> Any:
    return aval if d is None else aval.update(shape=aval.shape[:d] + aval.shape[d + 1:])


def _custom_jvp_call_batch(axis: Any, args: Sequence[Any], dims: Sequence[Any], *, call: Program,
                           jvp: Callable, num_consts: int, name: str) -> tuple:
    from fluxion.transforms import batching as bt  # noqa: PLC0415
    if all(d is None for d in dims) and (axis.name is None or not bt._uses_axis(call, axis.name)):
        outs = custom_jvp_call_p.bind(*args, call=call, jvp=jvp, num_consts=num_consts, name=name)
        return outs, [None] * len(outs)
    xs, in_dims = _batch_inputs(args, dims)
    bprog, bconsts, _ = bt.batch_program(call, in_dims, axis, out_at_front=True)
    bcall, bconsts = ad._close(bprog, bconsts)
    rule_dims = in_dims[num_consts:]
    per_avals = [_per_example(ad._aval(x), d) for x, d in zip(xs[num_consts:], rule_dims)]

    def batched_jvp(primals: list, tangents: list) -> tuple:
        nz = [type(t) is not ad.Zero for t in tangents]
        t_dims = [d if z else None for d, z in zip(rule_dims, nz)]
        # a tangent of an unmapped primal is unmapped too (same shape as its primal)

        def one(ps: list, ts: list) -> tuple:
            it = iter(ts)
            full = [next(it) if z else ad.Zero(ad.tangent_aval(a))
                    for z, a in zip(nz, per_avals)]
            p_out, t_out = jvp(list(ps), full)
            return list(p_out), [ad.instantiate(t) for t in t_out]

        nz_ts = [t for t in tangents if type(t) is not ad.Zero]
        nz_dims = [d for d, z in zip(t_dims, nz) if z]
        p_out, t_out = bt.vmap(one, in_axes=(list(rule_dims), nz_dims), out_axes=0,
                               axis_name=axis.name, axis_size=axis.size)(list(primals), nz_ts)
        return list(p_out), list(t_out)

    outs = custom_jvp_call_p.bind(*bconsts, *xs, call=bcall, jvp=batched_jvp,
                                  num_consts=len(bconsts) + num_consts, name=name)
    return outs, [0] * len(outs)


def _custom_vjp_call_batch(axis: Any, args: Sequence[Any], dims: Sequence[Any], *, call: Program,
                           fwd: Callable, bwd: Callable, num_consts: int, name: str) -> tuple:
    from fluxion import lax  # noqa: PLC0415
    from fluxion.transforms import batching as bt  # noqa: PLC0415
    if all(d is None for d in dims) and (axis.name is None or not bt._uses_axis(call, axis.name)):
        outs = custom_vjp_call_p.bind(*args, call=call, fwd=fwd, bwd=bwd, num_consts=num_consts,
                                      name=name)
        return outs, [None] * len(outs)
    xs, in_dims = _batch_inputs(args, dims)
    bprog, bconsts, _ = bt.batch_program(call, in_dims, axis, out_at_front=True)
    bcall, bconsts = ad._close(bprog, bconsts)
    rule_dims = list(in_dims[num_consts:])
    cell: dict[str, Any] = {}

    def batched_fwd(primals: list) -> tuple:
        def one(ps: list) -> tuple:
            res, outs = fwd(list(ps))
            return list(res), list(outs)
        res, outs = bt.vmap(one, in_axes=(rule_dims,), out_axes=0, axis_name=axis.name,
                            axis_size=axis.size)(list(primals))
        return list(res), list(outs)

    def batched_bwd(res: list, cts: list) -> list:
        def one(r: list, c: list) -> list:
            got = bwd(list(r), list(c))
            cell["none"] = [g is None for g in got]
            return [ad.instantiate(g) for g in got if g is not None]
        got = bt.vmap(one, in_axes=(0, 0), out_axes=0, axis_name=axis.name,
                      axis_size=axis.size)(list(res), [ad.instantiate(c) for c in cts])
        it = iter(got)
        out: list = []
        for is_none, d in zip(cell["none"], rule_dims):
            if is_none:
                out.append(None)
                continue
            g = next(it)
            out.append(lax.reduce_sum(g, (0,)) if d is None else g)  # unmapped input: sum
        return out

    outs = custom_vjp_call_p.bind(*bconsts, *xs, call=bcall, fwd=batched_fwd, bwd=batched_bwd,
                                  num_consts=len(bconsts) + num_consts, name=name)
    return outs, [0] * len(outs)


def _custom_lin_no_jvp(*args: Any, name: str, **params: Any) -> Any:
    raise TypeError(f"can't apply forward-mode autodiff (jvp) or vmap to the linearized "
                    f"custom_vjp function {name}; use reverse mode (grad, vjp) instead.")


custom_jvp_call_p.batch = _custom_jvp_call_batch
custom_jvp_call_p.batch_unmapped = True
custom_vjp_call_p.batch = _custom_vjp_call_batch
custom_vjp_call_p.batch_unmapped = True
# As in JAX, the linearized custom_vjp (reached only inside a linear program being transposed)
# has no forward-mode or batching rule: both raise a clear error.
custom_lin_p.jvp = lambda primals, tangents, **params: _custom_lin_no_jvp(**params)
custom_lin_p.batch = lambda axis_data, args, dims, **params: _custom_lin_no_jvp(**params)

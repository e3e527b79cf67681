"""``sparsify``: run a function written for dense arrays on BCOO arrays, as JAX's
``jax.experimental.sparse.sparsify`` (its interpreter form, ``use_tracer=False``).

The function is staged to a program with each BCOO argument standing for a dense array of its
shape; the program is then evaluated equation by equation. An equation whose inputs are all
dense runs as usual; one with a sparse input runs the sparse rule of its primitive (the table
below, JAX's set), which keeps the result sparse where the operation preserves zeros and
densifies only where JAX does (sparse + dense, sparse @ dense). A primitive without a rule
raises JAX's ``NotImplementedError``. The BCOO operators (``+``, ``*``, ``@``, ``.sum()``,
``.reshape``, indexing, ...) are ``sparsify`` of the ``fluxion.numpy`` functions, as in JAX.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.experimental.sparse import BCOO
    >>> m = BCOO.fromdense(jnp.array([[0.0, 1.0], [2.0, 0.0]]))
    >>> sparsify(lambda a, v: 2 * jnp.sin(a) @ v)(m, jnp.ones(2)).round(3).tolist()
    [1.683, 1.819]
"""

from __future__ import annotations

import functools
import itertools
from typing import Any, Callable, Sequence

import numpy as np

from fluxion import lax, tree_util
from fluxion import numpy as jnp
from fluxion.core.avals import ShapedArray
from fluxion.core.ir import Literal, literal_value
from fluxion.experimental.sparse import products, shape_ops
from fluxion.experimental.sparse._base import JAXSparse
from fluxion.experimental.sparse.bcoo import BCOO, bcoo_sum_duplicates, bcoo_transpose
from fluxion.transforms.staging import trace_to_program

__all__ = ["sparsify"]

_refs = itertools.count()


class _Sparse:
    """A sparse value in the evaluation: the BCOO array and a token naming its indices (two
    values with one token share their indices, so their sum or product is elementwise on
    ``data``; JAX's ``indices_ref``)."""

    __slots__ = ("mat", "ref")

    def __init__(self, mat: BCOO, ref: int | None = None) -> None:
        self.mat = mat
        self.ref = next(_refs) if ref is None else ref


def _is_sparse(x: Any) -> bool:
    return isinstance(x, _Sparse)


def _same_indices(mat: BCOO, data: Any, ref: int) -> _Sparse:
    return _Sparse(BCOO((data, mat.indices), shape=mat.shape, indices_sorted=mat.indices_sorted,
                        unique_indices=mat.unique_indices), ref)


def _unique(v: _Sparse) -> _Sparse:
    """``v`` with duplicate indices summed (needed before a nonlinear elementwise function)."""
    if v.mat.unique_indices:
        return v
    return _Sparse(bcoo_sum_duplicates(v.mat, nse=v.mat.nse))


_DENSIFYING = {"acos", "acosh", "bessel_i0e", "cos", "cosh", "eq", "exp", "ge", "gt", "le", "lt",
               "log", "ne", "xor"}


def _unimplemented(name: str) -> NotImplementedError:
    if name in _DENSIFYING:
        return NotImplementedError(
            f"sparse rule for {name} is not implemented because it would result in dense "
            "output. If this is your intent, use sparse.todense() to convert your arguments to "
            "dense matrices.")
    return NotImplementedError(f"sparse rule for {name} is not implemented.")


_RULES: dict[str, Callable[..., Any]] = {}


def _unary(prim: Any, linear: bool) -> Callable[..., Any]:
    def rule(x: Any, **params: Any) -> Any:
        if not linear:
            x = _unique(x)
        return _same_indices(x.mat, prim.bind(x.mat.data, **params), x.ref)
    return rule


def _integer_pow(prim: Any, x: Any, *, y: int) -> Any:
    if y <= 0:
        raise NotImplementedError(
            f"sparse rule for integer_pow with non-positive exponent {y} is not implemented "
            "because it would result in dense output. If this is your intent, use "
            "sparse.todense() to convert your argument to a dense array.")
    return _unary(prim, False)(x, y=y)


def _dense_of(v: Any) -> Any:
    return v.mat if _is_sparse(v) else v


def _standard(fn: Callable[..., Any]) -> Callable[..., Any]:
    def rule(*args: Any, **params: Any) -> Any:
        out = fn(*(_dense_of(a) for a in args), **params)
        return _Sparse(out) if isinstance(out, BCOO) else out
    return rule


def _transpose(x: Any, *, permutation: Any) -> Any:
    return _Sparse(bcoo_transpose(x.mat, permutation=tuple(permutation)))


def _add(x: Any, y: Any) -> Any:
    if _is_sparse(x) and _is_sparse(y):
        a, b = x.mat, y.mat
        if a.shape != b.shape:
            raise NotImplementedError("Addition between sparse matrices of different shapes.")
        if x.ref == y.ref:
            return _same_indices(a, lax.add(a.data, b.data), x.ref)
        if a.indices.ndim != b.indices.ndim or a.data.ndim != b.data.ndim:
            raise NotImplementedError("Addition between sparse matrices with different "
                                      "batch/dense dimensions.")
        axis = a.indices.ndim - 2
        indices = lax.concatenate([a.indices, b.indices], axis)
        data = lax.concatenate([a.data, b.data], axis)
        return _Sparse(BCOO((data, indices), shape=a.shape))
    sp, dense = (x, y) if _is_sparse(x) else (y, x)
    out_shape = lax.broadcast_shapes(tuple(sp.mat.shape), tuple(np.shape(dense)))
    if tuple(np.shape(dense)) != out_shape:
        raise NotImplementedError(
            "Addition between a sparse array X and a dense array Y is not implemented when the "
            "output shape is larger than Y.shape. This is to prevent silent densification of a "
            "large sparse array. If this is your intent, you can explicitly cast the sparse "
            "array to a dense matrix.")
    return sp.mat.todense() + dense


def _sub(x: Any, y: Any) -> Any:
    if _is_sparse(x) and _is_sparse(y):
        return _add(x, _same_indices(y.mat, lax.neg(y.mat.data), y.ref))
    raise NotImplementedError("Subtraction between sparse and dense array.")


def _mul(x: Any, y: Any) -> Any:
    if _is_sparse(x) and _is_sparse(y):
        if x.ref == y.ref and x.mat.unique_indices:
            return _same_indices(x.mat, lax.mul(x.mat.data, y.mat.data), x.ref)
        return _Sparse(products.bcoo_multiply_sparse(x.mat, y.mat))
    sp, dense = (x, y) if _is_sparse(x) else (y, x)
    return _same_indices(sp.mat, products.bcoo_multiply_dense(sp.mat, dense), sp.ref)


def _div(x: Any, y: Any) -> Any:
    if _is_sparse(y):
        raise NotImplementedError(
            "Division by a sparse array is not implemented because it would result in dense "
            "output. If this is your intent, use sparse.todense() to convert your arguments to "
            "a dense array.")
    one = jnp.ones((), jnp.asarray(y).dtype)
    return _same_indices(x.mat, products.bcoo_multiply_dense(x.mat, one / y), x.ref)


def _reduce_sum(x: Any, *, axes: Any, **_: Any) -> Any:
    out = products.bcoo_reduce_sum(x.mat, axes=tuple(axes))
    if out.shape == ():
        return out.data.sum()
    return _Sparse(out)


def _dot_general(x: Any, y: Any, *, dimension_numbers: Any, preferred_element_type: Any = None,
                 **_: Any) -> Any:
    out = products.bcoo_dot_general(_dense_of(x), _dense_of(y),
                                    dimension_numbers=dimension_numbers,
                                    preferred_element_type=preferred_element_type)
    return _Sparse(out) if isinstance(out, BCOO) else out


def _dynamic_slice(x: Any, *starts: Any, slice_sizes: Any) -> Any:
    if any(_is_sparse(s) for s in starts):
        raise NotImplementedError("sparse rule for dynamic_slice is not implemented for sparse "
                                  "start indices.")
    return _Sparse(shape_ops.bcoo_dynamic_slice(x.mat, starts, slice_sizes))


def _concatenate(*xs: Any, dimension: int) -> Any:
    mats = [_dense_of(x) for x in xs]
    if not all(isinstance(m, BCOO) for m in mats):
        raise NotImplementedError("sparse rule for concatenate of sparse and dense arrays is "
                                  "not implemented.")
    return _Sparse(shape_ops.bcoo_concatenate(mats, dimension=dimension))


def _gather(operand: Any, indices: Any, **params: Any) -> Any:
    if _is_sparse(indices):
        raise NotImplementedError("sparse rule for gather with sparse indices is not "
                                  "implemented.")
    return _Sparse(shape_ops.bcoo_gather(operand.mat, indices, **params))


def _drop(fn: Callable[..., Any], *names: str) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any, **params: Any) -> Any:
        for n in names:
            params.pop(n, None)
        return fn(*args, **params)
    return call


def _program_rule(key: str) -> Callable[..., Any]:
    """Calls (``jit``, ``custom_jvp_call``/``custom_vjp_call``): the called program is
    evaluated sparsely in place (JAX sparsifies the callee; the derivative rule is dropped)."""
    def rule(*args: Any, **params: Any) -> Any:
        program = params[key]
        n_consts = params.get("num_consts", 0) if key == "call" else 0
        del n_consts
        return _eval(program, [], list(args))
    return rule


def _as_tree(v: Any) -> Any:
    return v.mat if _is_sparse(v) else v


def _as_value(x: Any) -> Any:
    return _Sparse(x) if isinstance(x, BCOO) else x


def _run(program: Any, args: Sequence[Any]) -> list[Any]:
    """Evaluate a sub-program sparsely on pytree values (BCOO or arrays): a loop body or a
    branch, traced by the loop's own API with the BCOO arrays as pytree carries."""
    return [_as_tree(o) for o in _eval(program, [], [_as_value(a) for a in args])]


def _scan(*ins: Any, jaxpr: Any, num_consts: int, num_carry: int, length: int,
          reverse: bool = False, unroll: Any = 1, **_: Any) -> list[Any]:
    consts, carry, xs = ins[:num_consts], ins[num_consts:num_consts + num_carry], \
        ins[num_consts + num_carry:]
    if any(_is_sparse(x) for x in xs):
        raise NotImplementedError("sparse rule for scan with x values.")
    consts = [_as_tree(c) for c in consts]

    def body(c: list, x: list) -> tuple[list, list]:
        outs = _run(jaxpr, [*consts, *c, *x])
        return outs[:num_carry], outs[num_carry:]

    carry_out, ys = lax.scan(body, [_as_tree(c) for c in carry], list(xs), length=length,
                             reverse=reverse, unroll=unroll)
    return [_as_value(v) for v in [*carry_out, *ys]]


def _while(*ins: Any, cond_jaxpr: Any, cond_nconsts: int, body_jaxpr: Any, body_nconsts: int,
           **_: Any) -> list[Any]:
    trees = [_as_tree(v) for v in ins]
    cond_consts, body_consts = trees[:cond_nconsts], trees[cond_nconsts:cond_nconsts
                                                           + body_nconsts]
    init = trees[cond_nconsts + body_nconsts:]
    out = lax.while_loop(lambda c: _run(cond_jaxpr, [*cond_consts, *c])[0],
                         lambda c: _run(body_jaxpr, [*body_consts, *c]), init)
    return [_as_value(v) for v in out]


def _cond(index: Any, *ops: Any, branches: Any, **_: Any) -> list[Any]:
    if _is_sparse(index):
        raise NotImplementedError("sparse rule for cond with a sparse predicate.")
    trees = [_as_tree(v) for v in ops]
    fns = [functools.partial(lambda prog, *a: _run(prog, a), b) for b in branches]
    return [_as_value(v) for v in lax.switch(index, fns, *trees)]


def _register() -> None:
    prims = _primitives()
    for name in ("abs", "asin", "asinh", "atan", "atanh", "bessel_i1e", "expm1", "log1p",
                 "sign", "sin", "sinh", "sqrt", "square", "tan", "tanh",
                 "convert_element_type"):
        if name in prims:
            _RULES[name] = _unary(prims[name], linear=False)
    for name in ("conj", "copy", "copy_p", "imag", "neg", "real"):
        if name in prims:
            _RULES[name] = _unary(prims[name], linear=True)
    if "integer_pow" in prims:
        _RULES["integer_pow"] = functools.partial(_integer_pow, prims["integer_pow"])
    _RULES.update({
        "transpose": _transpose, "add": _add, "sub": _sub, "mul": _mul, "div": _div,
        "reduce_sum": _reduce_sum, "dot_general": _dot_general,
        "broadcast_in_dim": _standard(_drop(shape_ops.bcoo_broadcast_in_dim, "sharding")),
        "concatenate": _concatenate, "dynamic_slice": _dynamic_slice,
        "reshape": _standard(_drop(shape_ops.bcoo_reshape, "sharding")),
        "rev": _standard(shape_ops.bcoo_rev), "slice": _standard(shape_ops.bcoo_slice),
        "squeeze": _standard(shape_ops.bcoo_squeeze),
        "sparse_todense": lambda x: x.mat.todense(),
        "jit": _program_rule("program"), "custom_jvp_call": _program_rule("call"),
        "scan": _scan, "while": _while, "cond": _cond, "gather": _gather,
    })


def _primitives() -> dict[str, Any]:
    out = {}
    for name in dir(lax):
        value = getattr(lax, name, None)
        if name.endswith("_p") and hasattr(value, "bind") and hasattr(value, "name"):
            out[value.name] = value
    return out


def _eval(program: Any, consts: list[Any], args: list[Any]) -> list[Any]:
    if not _RULES:
        _register()
    env: dict[int, Any] = {}
    for v, x in zip(program.constvars, consts):
        env[v.id] = x
    for v, x in zip(program.invars, args):
        env[v.id] = x

    def read(a: Any) -> Any:
        return literal_value(a) if isinstance(a, Literal) else env[a.id]

    for eqn in program.eqns:
        ins = [read(a) for a in eqn.inputs]
        if any(_is_sparse(x) for x in ins):
            rule = _RULES.get(eqn.prim.name)
            if rule is None:
                raise _unimplemented(eqn.prim.name)
            out = rule(*ins, **dict(eqn.params))
            outs = list(out) if eqn.prim.multiple_results else [out]
        else:
            out = eqn.prim.bind(*ins, **eqn.params)
            outs = list(out) if eqn.prim.multiple_results else [out]
        for v, o in zip(eqn.outputs, outs):
            env[v.id] = o
    return [read(v) for v in program.outvars]


def sparsify(f: Callable, use_tracer: bool = False) -> Callable:
    """``f`` made to accept BCOO arrays wherever it takes arrays: its operations on them stay
    sparse where JAX's sparse rules do (elementwise functions that keep zeros, products with
    scalars and dense arrays, ``@``, sums, reshapes, slices, concatenation), and BCOO results
    come back as BCOO arrays. ``use_tracer=True`` (JAX's tracer form) behaves the same.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.experimental.sparse import BCOO
        >>> m = BCOO.fromdense(jnp.arange(6.0).reshape(2, 3))
        >>> out = sparsify(lambda a: 2 * a.T)(m)
        >>> out, out.todense().tolist()
        (BCOO(float32[3, 2], nse=5), [[0.0, 6.0], [2.0, 8.0], [4.0, 10.0]])
    """
    del use_tracer

    @functools.wraps(f)
    def wrapped(*args: Any, **params: Any) -> Any:
        leaves, tree = tree_util.tree_flatten(args, is_leaf=lambda x: isinstance(x, JAXSparse))
        values, avals = [], []
        for x in leaves:
            if isinstance(x, JAXSparse) and not isinstance(x, BCOO):
                raise NotImplementedError(
                    f"sparsify of {type(x).__name__} arguments is not provided by Fluxion "
                    "(BCOO only; convert with .to_bcoo(), see docs/guide/coming-from-jax.md)")
            if isinstance(x, BCOO):
                values.append(_Sparse(x))
                avals.append(ShapedArray(x.shape, x.dtype))
            else:
                x = jnp.asarray(x)
                values.append(x)
                avals.append(ShapedArray(x.shape, x.dtype, getattr(x, "weak_type", False)))

        def flat(*xs: Any) -> Any:
            return f(*tree_util.tree_unflatten(tree, list(xs)), **params)

        program, consts, out_tree = trace_to_program(flat, tuple(avals), {}, in_avals=avals)
        outs = _eval(program, consts, values)
        return tree_util.tree_unflatten(out_tree, [o.mat if _is_sparse(o) else o
                                                   for o in outs])

    return wrapped


# ------------------------------------------------------------------ BCOO methods from sparsify

def _swap(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda a, b: fn(b, a)


def _sum(self: BCOO, *args: Any, **kwargs: Any) -> Any:
    """The sum over ``axis`` (all axes by default), as ``jnp.sum``; a BCOO array unless every
    axis is summed.

    Example:
        >>> import fluxion.numpy as jnp
        >>> BCOO.fromdense(jnp.array([[0.0, 1.0], [2.0, 0.0]])).sum(0).todense().tolist()
        [2.0, 1.0]
    """
    return sparsify(lambda x: x.sum(*args, **kwargs))(self)


def _reshape(self: BCOO, *args: Any, **kwargs: Any) -> BCOO:
    """The array with a new shape (batch, sparse and dense dimensions may not mix).

    Example:
        >>> import fluxion.numpy as jnp
        >>> BCOO.fromdense(jnp.array([0.0, 1.0, 2.0, 0.0])).reshape(2, 2).shape
        (2, 2)
    """
    return sparsify(lambda x: x.reshape(*args, **kwargs))(self)


def _astype(self: BCOO, *args: Any, **kwargs: Any) -> BCOO:
    """The array with its data cast to another dtype.

    Example:
        >>> import fluxion.numpy as jnp
        >>> BCOO.fromdense(jnp.array([0.0, 1.5])).astype("int32").data.tolist()
        [1]
    """
    return sparsify(lambda x: x.astype(*args, **kwargs))(self)


def _getitem(self: BCOO, idx: Any) -> Any:
    return sparsify(lambda x: x[idx])(self)


def _iter(self: BCOO) -> Any:
    return iter(self[i] for i in range(self.shape[0]))


def _methods() -> dict[str, Any]:
    return {
        "astype": _astype, "reshape": _reshape, "sum": _sum,
        "__abs__": sparsify(jnp.abs), "__neg__": sparsify(jnp.negative),
        "__pos__": sparsify(jnp.positive),
        "__matmul__": sparsify(jnp.matmul), "__rmatmul__": sparsify(_swap(jnp.matmul)),
        "__mul__": sparsify(jnp.multiply), "__rmul__": sparsify(_swap(jnp.multiply)),
        "__truediv__": sparsify(jnp.divide), "__rtruediv__": sparsify(_swap(jnp.divide)),
        "__add__": sparsify(jnp.add), "__radd__": sparsify(_swap(jnp.add)),
        "__sub__": sparsify(jnp.subtract), "__rsub__": sparsify(_swap(jnp.subtract)),
        "__pow__": lambda x, y: sparsify(lambda a: jnp.power(a, y))(x),
        "__rpow__": sparsify(_swap(jnp.power)),
        "__getitem__": _getitem, "__iter__": _iter,
        "__gt__": sparsify(jnp.greater), "__ge__": sparsify(jnp.greater_equal),
        "__lt__": sparsify(jnp.less), "__le__": sparsify(jnp.less_equal),
        "__eq__": sparsify(jnp.equal), "__ne__": sparsify(jnp.not_equal),
    }


for _name, _impl in _methods().items():
    setattr(BCOO, _name, _impl)
BCOO.__hash__ = None  # type: ignore[assignment]  (unhashable, as JAX's)

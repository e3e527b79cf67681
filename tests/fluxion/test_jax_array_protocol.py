"""Objects with ``__jax_array__`` (flax's ``nnx.Variable`` and the like) as JAX treats them: array
operators convert them first, and a traced function that uses one reads the value it holds at
that moment (the object itself is never kept in the staged program)."""

from __future__ import annotations

import operator

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _compare import assert_same

import fluxion
import fluxion.numpy as fnp


class Box:
    """Like ``nnx.Variable``: converts with ``__jax_array__``, forwards unknown attributes
    (``aval``, ``shape``) to the value, and its own reflected operators defer to the value's
    (which, for a Python float, answers NotImplemented)."""

    def __init__(self, value):
        self.__dict__["value"] = value

    def __jax_array__(self):
        return self.value

    def __getattr__(self, name):
        return getattr(self.__dict__["value"], name)

    def __radd__(self, other):
        return self.value.__radd__(other)

    def __rmul__(self, other):
        return self.value.__rmul__(other)


# A pytree node too, as nnx.Variable is (JAX's jitted jnp functions flatten it at their boundary).
for _tu in (jax.tree_util, fluxion.tree_util):
    _tu.register_pytree_node(Box, lambda b: ((b.value,), None), lambda _, c: Box(c[0]))


_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
        operator.lt, operator.eq, operator.ne, operator.ge]


@pytest.mark.parametrize("op", _OPS, ids=lambda o: o.__name__)
@pytest.mark.parametrize("held", [1.5, "array"])
def test_array_operators_convert_jax_array_objects(op, held):
    def run(lib, m):
        a = m.asarray([1.0, 2.0, 3.0], dtype=np.float32)
        v = Box(m.asarray(1.5, dtype=np.float32) if held == "array" else held)
        return op(a, v), op(v, a) if held == "array" else op(a, v)

    ours, theirs = run(fluxion, fnp), run(jax, jnp)
    for o, t in zip(ours, theirs):
        assert isinstance(o, fluxion.Array)
        assert_same(o, t)


def test_unknown_operand_still_defers():
    class Other:
        def __radd__(self, other):
            return "other"

    assert fnp.ones(2) + Other() == "other"
    with pytest.raises(TypeError):
        fnp.ones(2) + object()


def _sin_of_box(m):
    def f(x):
        return m.sin(Box(x)) * 2.0
    return f


def test_staged_function_reads_a_jax_array_object_when_it_is_used():
    # The Box holds this trace's own input: the program uses that input, not a constant holding
    # the Box (which would leak the tracer when the jitted function runs).
    x = np.float32(0.5)
    assert_same(fluxion.jit(_sin_of_box(fnp))(x), jax.jit(_sin_of_box(jnp))(x))
    ours = fluxion.make_jaxpr(_sin_of_box(fnp))(x)
    theirs = jax.make_jaxpr(_sin_of_box(jnp))(x)
    assert str(ours) == str(theirs)
    assert len(ours.consts) == len(theirs.consts) == 0


def test_checkpoint_inside_custom_vjp_reads_holders_once():
    # flax's nnx.custom_vjp over nnx.remat: the checkpointed function's inputs are read through
    # holders, whose values change after the checkpoint was traced; grad under jit.
    def make(lib, m):
        def body(x, y):
            hx, hy = Box(x), Box(y)
            out = m.sin(hx) * hy
            hx.__dict__["value"] = None  # the holders are emptied once the trace has read them
            hy.__dict__["value"] = None
            return out

        ck = lib.checkpoint(body)

        @lib.custom_vjp
        def f(x, y):
            return ck(x, y)

        def fwd(x, y):
            return f(x, y), (m.cos(x), m.sin(x), y)

        def bwd(res, g):
            cos_x, sin_x, y = res
            return (cos_x * g * y, sin_x * g)

        f.defvjp(fwd, bwd)
        return lib.jit(lib.grad(lambda x, y: f(x, y), argnums=(0, 1)))

    x, y = np.float32(0.3), np.float32(0.7)
    assert_same(make(fluxion, fnp)(x, y), make(jax, jnp)(x, y))

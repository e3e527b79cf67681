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

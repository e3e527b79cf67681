"""``nnx.data`` / ``nnx.static`` marks, the ``nnx.Data`` / ``nnx.Static`` annotations,
``nnx.dataclass`` field specifiers, ``register_data_type`` and ``pytree=False``, side by side
with flax.nnx: the same leaves, states and errors. (No ``from __future__ import annotations``:
the annotations of the classes below must be evaluated, as the ``nnx.Data[int]`` marks are read
from them.)"""

import dataclasses

import jax
import numpy as np
import pytest
from flax import nnx as fnnx

import fluxion
import fluxion.numpy as jnp
import fluxion_nn as nnx

LIBS = [(nnx, fluxion, jnp), (fnnx, jax, jax.numpy)]


def _leaf_values(tree_lib, obj):
    return [np.asarray(x).tolist() if hasattr(x, "shape") else x for x in tree_lib.tree.leaves(obj)]


@pytest.mark.parametrize("lib,jx,np_", LIBS)
def test_marks_switch_an_attribute_between_data_and_static(lib, jx, np_):
    class Foo(lib.Pytree):
        def __init__(self):
            self.a = lib.data(1)
            self.b = lib.static(2)
            self.c = np_.array(3)

    foo = Foo()
    assert _leaf_values(jx, foo) == [1, 3]
    foo.a = "x"  # an explicit mark stays
    assert _leaf_values(jx, foo) == ["x", 3]
    foo.a = lib.static(3)
    foo.b = lib.data(4)
    foo.c = lib.static(5)
    assert _leaf_values(jx, foo) == [4]
    with pytest.raises(ValueError, match="Found data on value of type"):
        foo.a = ["hi", np_.array(6)]
    with pytest.raises(ValueError, match="Found data in value of type"):
        foo.b = lib.static(np_.array(4))
    # graph mode: a data mark makes a plain value a State leaf; static is in the GraphDef
    st = lib.state(foo)
    assert "b" in st and st["b"] == 4 and "a" not in st and "c" not in st
    foo2 = lib.merge(*lib.split(foo))
    assert (foo2.a, foo2.b, foo2.c) == (3, 4, 5)


@pytest.mark.parametrize("lib,jx,np_", LIBS)
def test_annotations_and_dataclass_field_specifiers(lib, jx, np_):
    @dataclasses.dataclass
    class A(lib.Pytree):
        a: lib.Data[int]
        b: lib.Static[int]
        c: jx.Array

    assert _leaf_values(jx, A(a=1, b=2, c=np_.array(3))) == [1, 3]

    @lib.dataclass
    class B(lib.Pytree):
        a: int = lib.static()
        b: int = lib.data(default=7)

    b = B(a=1)
    assert _leaf_values(jx, b) == [7] and b.a == 1
    assert "Foo" not in repr(b)  # nnx.dataclass keeps the object's own repr

    @lib.dataclass
    class C(lib.Pytree):
        a: jx.Array = lib.static()

    with pytest.raises(ValueError, match="Found unexpected data on value of type"):
        C(a=np_.array(3))
    with pytest.raises(TypeError, match="either a single positional argument or keyword"):
        lib.data(1, default=2)


@pytest.mark.parametrize("lib,jx,np_", LIBS)
def test_list_marks_and_registered_data_type(lib, jx, np_):
    ls = lib.List([lib.data(10), lib.static("hello"), lib.data(20)])
    leaves, treedef = jx.tree_util.tree_flatten(ls)
    assert leaves == [10, 20]
    back = jx.tree_util.tree_unflatten(treedef, [2 * x for x in leaves])
    assert list(back) == [20, "hello", 40]

    @lib.register_data_type
    @dataclasses.dataclass(frozen=True)
    class Step:
        value: int

    class Holder(lib.Pytree):
        def __init__(self):
            self.step = Step(3)

    assert lib.is_data(Step(1)) and jx.tree.leaves(Holder()) == [Step(3)]


@pytest.mark.parametrize("lib,jx,np_", LIBS)
def test_pytree_false_objects_are_refused_in_tree_mode(lib, jx, np_):
    class NotAPytree(lib.Pytree, pytree=False):
        def __init__(self):
            self.x = np_.ones(2)

    node = NotAPytree()
    assert jx.tree.leaves(node) == [node]  # not a JAX pytree: a leaf
    for call in (lambda: lib.graphlib.flatten([node], graph=False),
                 lambda: list(lib.iter_graph(lib.List([node]), graph=False)),
                 lambda: lib.recursive_map(lambda p, n: n, lib.List([node]), graph=False)):
        with pytest.raises(ValueError, match="pytree=False.*Found at path"):
            call()
    with pytest.raises(ValueError, match="pytree=False"):
        list(lib.iter_children(node, graph=False))
    gd, st = lib.split(node)  # graph mode works
    assert lib.merge(gd, st).x.shape == (2,)


@pytest.mark.parametrize("lib,jx,np_", LIBS)
def test_tree_mode_prefix_keeps_data_attributes_for_vmap(lib, jx, np_):
    class Foo(lib.Module):
        def __init__(self):
            self.w = lib.Param(np_.ones((4, 2, 3)))

    model = Foo()
    axes = lib.prefix(model, {lib.Param: 0}, graph=False)
    assert jx.tree.leaves(axes) == [0]  # the replaced Param's attribute stays data
    y = jx.vmap(lambda m, x: x @ m.w, in_axes=(axes, None))(model, np_.ones((2,)))
    assert y.shape == (4, 3) and y.dtype == np.float32
    mapped = lib.recursive_map(lambda p, v: 7 if isinstance(v, lib.Variable) else v, model)
    assert jx.tree.leaves(mapped) == [7]


@pytest.mark.parametrize("lib,jx,np_", LIBS)
def test_plain_containers_holding_data_must_be_marked(lib, jx, np_):
    class Foo(lib.Pytree):
        pass

    foo = Foo()
    for value in ([lib.Variable(1)], {"a": np_.ones(2)}, (lib.Linear(1, 1, rngs=lib.Rngs(0)),)):
        with pytest.raises(ValueError, match="Found data on value of type"):
            foo.a = value
    foo.b = lib.List([lib.Variable(1)])
    foo.c = lib.data([np_.ones(1)])
    foo.d = [1, 2]  # no data: static
    foo.e = np_.ones(2)
    foo.e = [np_.ones(1)]  # an attribute that is data stays data
    assert len(jx.tree.leaves(foo)) == 3
    seq = lib.Sequential(lib.Linear(2, 2, rngs=lib.Rngs(0)), lib.relu)
    assert isinstance(seq.layers, lib.List) and len(jx.tree.leaves(seq)) == 2


@pytest.mark.parametrize("lib,jx,np_", LIBS)
def test_pytree_state_initializing_during_lazy_init(lib, jx, np_):
    seen = []

    class Foo(lib.Module):
        def __init__(self):
            self.child = lib.Linear(1, 1, rngs=lib.Rngs(0))

        def __call__(self):
            seen.append(self.child._pytree__state.initializing)
            copy = lib.merge(*lib.split(self))  # the flag travels with the graph
            seen.append(copy._pytree__state.initializing)

    m = Foo()
    assert m._pytree__state.initializing is False
    lib.bridge.lazy_init(m)
    assert seen == [True, True] and m._pytree__state.initializing is False
    assert jx.tree.leaves(m) == jx.tree.leaves(lib.merge(*lib.split(m)))


@pytest.mark.parametrize("lib,jx,np_", LIBS)
def test_has_data_returns_the_data_it_finds(lib, jx, np_):
    """``has_data`` is a list of the data leaves (falsy when none), not a bool, in both."""
    linear = lib.Linear(2, 2, rngs=lib.Rngs(0))
    assert lib.has_data([1.0, "a", (2, None)]) == []
    found = lib.has_data({"w": np_.ones(2), "n": 3, "nested": [linear, "s"]})
    assert isinstance(found, list) and len(found) == 2
    assert any(x is linear for x in found)
    assert lib.has_data(linear) == [linear]

"""``fluxion.experimental.hijax`` against real JAX: one mutable hi-type (a box holding any pytree,
the pattern flax's ``HijaxVariable`` follows) defined the same way on both libraries, and the same
programs run on each (eager, jit arguments and closures, scan closures, eval_shape, grad)."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.experimental
import jax.numpy as jjnp
import numpy as np
import pytest
from jax.experimental import hijax as jhjx
from jax.extend.core import Effect as JEffect

import fluxion
import fluxion.experimental
import fluxion.numpy as fjnp
from fluxion.experimental import hijax as fhjx
from fluxion.extend.core import Effect as FEffect


def _box_api(jx: Any, hjx: Any, effect_base: type) -> Any:
    """A box type and its primitives written against ``jx``'s public API."""

    @dataclasses.dataclass(frozen=True)
    class State:
        leaf_avals: tuple
        treedef: Any

        def to_tangent_qdd(self) -> "State":
            return State(tuple(a.to_tangent_aval() for a in self.leaf_avals), self.treedef)

        def normalize(self) -> "State":
            return State(tuple(a.normalize() for a in self.leaf_avals), self.treedef)

    class BoxEffect(effect_base):
        pass

    eff = BoxEffect()
    hjx.control_flow_allowed_effects.add_type(BoxEffect)

    class Box:
        __slots__ = ("val",)

        def __init__(self, val: Any) -> None:
            self.val = val

        def cur_qdd(self) -> State:
            leaves, treedef = jx.tree_util.tree_flatten(self.val)
            return State(tuple(jx.typeof(x) for x in leaves), treedef)

    class BoxTy(hjx.MutableHiType):
        def __eq__(self, other: Any) -> bool:
            return isinstance(other, BoxTy)

        def __hash__(self) -> int:
            return hash(BoxTy)

        def str_short(self, short_dtypes: bool = False, **_: Any) -> str:
            return "BoxTy"

        def lo_ty_qdd(self, state: State) -> list:
            return [t for a in state.leaf_avals for t in a.lo_ty()]

        def new_from_loval(self, state: State, *vals: Any) -> Box:
            return Box(jx.tree_util.tree_unflatten(state.treedef, vals))

        def read_loval(self, state: State, box: Box) -> list:
            return jx.tree_util.tree_leaves(get(box))

        def update_from_loval(self, state: State, box: Box, *vals: Any) -> None:
            set_p.bind(box, *vals, treedef=state.treedef)

        def to_tangent_aval(self) -> "BoxTy":
            return BoxTy()

    hjx.register_hitype(Box, lambda b: BoxTy())

    class GetBox(hjx.HiPrimitive):
        multiple_results = True

        def impl(self, box: Box, *, avals: tuple) -> list:
            return jx.tree_util.tree_leaves(box.val)

        to_lojax = impl

        def abstract_eval(self, box_ty: Any, *, avals: tuple) -> Any:
            return list(avals), {eff}

    class SetBox(hjx.HiPrimitive):
        multiple_results = True

        def impl(self, box: Box, *leaves: Any, treedef: Any) -> list:
            box.val = jx.tree_util.tree_unflatten(treedef, leaves)
            return []

        to_lojax = impl

        def abstract_eval(self, box_ty: Any, *leaf_avals: Any, treedef: Any) -> Any:
            box_ty.mutable_qdd.update(State(tuple(leaf_avals), treedef))
            return [], {eff}

    get_p, set_p = GetBox("box_get"), SetBox("box_set")

    def get(box: Box) -> Any:
        state = jx.experimental.cur_qdd(box)
        leaves = get_p.bind(box, avals=state.leaf_avals)
        return jx.tree_util.tree_unflatten(state.treedef, leaves)

    def set_(box: Box, val: Any) -> None:
        leaves, treedef = jx.tree_util.tree_flatten(val)
        set_p.bind(box, *leaves, treedef=treedef)

    return Box, BoxTy, get, set_


OURS = (fluxion, fjnp, *_box_api(fluxion, fhjx, FEffect))
THEIRS = (jax, jjnp, *_box_api(jax, jhjx, JEffect))


def _same(ours: Any, theirs: Any) -> None:
    lo, lt = fluxion.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(lo) == len(lt)
    for a, b in zip(lo, lt):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
        assert np.asarray(a).dtype == np.asarray(b).dtype
        assert getattr(a, "weak_type", False) == getattr(b, "weak_type", False)


@pytest.mark.parametrize("side", [OURS, THEIRS], ids=["fluxion", "jax"])
def test_typeof_and_cur_qdd(side):
    jx, jnp, Box, BoxTy, get, set_ = side
    b = Box({"a": jnp.float32(1)})
    assert isinstance(jx.typeof(b), BoxTy)
    state = jx.experimental.cur_qdd(b)
    assert [a.shape for a in state.leaf_avals] == [()]
    assert state.treedef == jx.tree_util.tree_structure({"a": 0})


def _run(side: tuple, program: Any) -> Any:
    jx, jnp, Box, BoxTy, get, set_ = side
    return program(jx, jnp, Box, get, set_)


def _both(program: Any) -> None:
    _same(_run(OURS, program), _run(THEIRS, program))


def test_eager_get_set():
    def program(jx, jnp, Box, get, set_):
        b = Box(jnp.arange(3.0))
        set_(b, get(b) * 2 + 1)
        return get(b)
    _both(program)


def test_jit_argument_written_back_and_reused():
    def program(jx, jnp, Box, get, set_):
        @jx.jit
        def step(b, x):
            set_(b, get(b) + x)
            return get(b) * 2
        b = Box(jnp.zeros(2, jnp.float32))
        y1 = step(b, 1.0)
        y2 = step(b, jnp.ones(2))
        return y1, y2, get(b)
    _both(program)


def test_jit_changes_the_structure_of_the_contents():
    def program(jx, jnp, Box, get, set_):
        @jx.jit
        def add_entry(b, x):
            d = dict(get(b))
            d["total"] = jnp.sum(x)
            set_(b, d)
        b = Box({})
        add_entry(b, jnp.ones((2, 3)))
        assert sorted(get(b)) == ["total"]
        return get(b)["total"]
    _both(program)


def test_jit_closure_over_a_box():
    def program(jx, jnp, Box, get, set_):
        b = Box(jnp.float32(1))

        @jx.jit
        def f(x):
            set_(b, get(b) * x)
            return get(b) + 1

        return f(2.0), f(3.0), get(b)
    _both(program)


def test_scan_body_closure_over_a_box():
    def program(jx, jnp, Box, get, set_):
        b = Box(jnp.float32(3))

        def body(c, x):
            set_(b, get(b) + x)
            return c + get(b), None

        c, _ = jx.lax.scan(body, jnp.float32(0), jnp.arange(4.0))
        return c, get(b)
    _both(program)


def test_scan_closure_over_a_box_whose_contents_lose_their_weak_type():
    # scan carries a box by its normalized QDD (weak types dropped), as JAX's: the body's
    # strongly typed write into a box holding a weakly typed value is the same carry;
    # while_loop refuses that change on both
    def program(jx, jnp, Box, get, set_):
        b = Box(jnp.array(3.0))

        def body(c, x):
            set_(b, get(b) + x)
            return c + get(b), None

        c, _ = jx.lax.scan(body, jnp.float32(0), jnp.arange(4.0))
        assert not jx.typeof(get(b)).weak_type
        w = Box(jnp.array(1.0))

        def grow(i):
            set_(w, get(w) * jnp.float32(2))
            return i + 1

        with pytest.raises(TypeError):
            jx.lax.while_loop(lambda i: i < 3, grow, 0)
        return c, get(b)
    _both(program)


def test_eval_shape_leaves_the_box_alone():
    def program(jx, jnp, Box, get, set_):
        b = Box(jnp.int32(5))

        def f(b):
            set_(b, get(b) + 1)
            return get(b)[None].astype(jnp.float32)

        s = jx.eval_shape(f, b)
        assert s.shape == (1,) and s.dtype == jnp.float32
        return get(b)
    _both(program)


@pytest.mark.slow  # ~2.5 s under load, most of it real JAX's compiles
def test_grad_with_a_box_set_to_a_constant():
    def program(jx, jnp, Box, get, set_):
        b = Box(jnp.float32(2))

        def loss(x):
            set_(b, jx.lax.stop_gradient(x * 3))
            return x ** 2 + get(b)

        g = jx.grad(loss)(jnp.float32(4))
        return g, get(b)
    _both(program)


def test_one_box_twice_among_jit_arguments():
    Box, get, set_ = OURS[2], OURS[4], OURS[5]
    b = Box(fjnp.float32(1))

    @fluxion.jit
    def f(u, v):
        assert u is v
        set_(u, get(v) + 1)
        return get(u)

    assert float(f(b, b)) == 2.0 and float(get(b)) == 2.0


def test_hi_primitive_under_vmap_of_a_batched_operand_is_refused():
    Box, set_ = OURS[2], OURS[5]
    b = Box(fjnp.float32(0))

    def f(x):
        set_(b, x)
        return x

    with pytest.raises(NotImplementedError, match="box_set"):
        fluxion.vmap(f)(fjnp.arange(3.0))

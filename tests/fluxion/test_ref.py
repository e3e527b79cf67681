"""Mutable array references (``fluxion.new_ref``/``Ref``/``freeze``) against real JAX."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import ref as fref


def _same(ours, theirs):
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert getattr(ours, "weak_type", False) == getattr(theirs, "weak_type", False)


def test_eager_reads_writes_like_jax():
    ours, theirs = fluxion.new_ref(jnp.arange(4.0)), jax.new_ref(jjnp.arange(4.0))
    for r in (ours, theirs):
        r[1] = 5.0
        r[...] += 1.0
        r[0] += 2.0
        r[1:3] = r[1:3] * 2.0
    _same(ours[...], theirs[...])
    _same(fluxion.freeze(ours), jax.freeze(theirs))
    _same(ours[2], theirs[2])
    assert repr(ours) == repr(theirs)
    assert (ours.shape, ours.dtype, ours.ndim, len(ours)) == (
        theirs.shape, theirs.dtype, theirs.ndim, len(theirs))
    assert isinstance(ours, fluxion.Ref) and not isinstance(ours[...], fluxion.Ref)
    assert str(fluxion.typeof(ours)) == str(jax.typeof(theirs)) == "Ref{float32[4]}"
    assert isinstance(fluxion.typeof(ours), fref.AbstractRef)


def test_weak_scalar_refs_keep_their_type():
    ours, theirs = fluxion.new_ref(1), jax.new_ref(1)
    assert repr(ours) == repr(theirs)
    ours[...] = jnp.int32(4)
    theirs[...] = jjnp.int32(4)
    _same(ours[...], theirs[...])


def test_module_functions_like_jax():
    ours, theirs = fluxion.new_ref(jnp.ones(3)), jax.new_ref(jjnp.ones(3))
    _same(fref.swap(ours, (0,), 9.0), jax.ref.swap(theirs, (0,), 9.0))
    fref.addupdate(ours, (), jnp.ones(3))
    jax.ref.addupdate(theirs, (), jjnp.ones(3))
    fref.set(ours, (2,), 0.0)
    jax.ref.set(theirs, (2,), 0.0)
    _same(fref.get(ours), jax.ref.get(theirs))
    assert fref.free_ref(ours) == ()
    e = fluxion.empty_ref(fluxion.ShapeDtypeStruct((2,), jnp.int32))
    assert e.shape == (2,) and e.dtype == np.int32


@pytest.mark.parametrize("write,msg", [
    (lambda r: r.__setitem__(1, 5), "Invalid dtype for `swap`. Ref dtype: float32. Value dtype: int32"),
    (lambda r: r.__setitem__(..., 1.0), "Invalid shape for `swap`"),
    (lambda r: r.__setitem__(0, np.ones(2, np.float32)), "Invalid shape for `swap`"),
    (lambda r: r.addupdate(1.0), "Invalid shape for `addupdate`"),
])
def test_bad_writes_raise_like_jax(write, msg):
    with pytest.raises(ValueError, match=msg.replace("[", r"\[")):
        write(fluxion.new_ref(jnp.arange(3.0)))
    with pytest.raises(ValueError, match=msg.split(".")[0]):
        write(jax.new_ref(jjnp.arange(3.0)))


def test_jit_reference_arguments_are_written_back():
    def f(r, x):
        r[...] += x
        return x * 2

    ours, theirs = fluxion.new_ref(jnp.zeros(2)), jax.new_ref(jjnp.zeros(2))
    jf = fluxion.jit(f)
    for x in (1.0, 2.0, 3.0):
        _same(jf(ours, x), jax.jit(f)(theirs, x))
    _same(ours[...], theirs[...])
    # a second reference at the same place reuses the trace and updates only itself
    other = fluxion.new_ref(jnp.ones(2))
    jf(other, 1.0)
    assert other[...].tolist() == [2.0, 2.0] and ours[...].tolist() == [6.0, 6.0]
    assert jf._cache_size() == 0  # the plain-argument cache is untouched; the ref body's holds it


def test_jit_equals_eager_in_pytrees_and_closures():
    state = {"count": fluxion.new_ref(jnp.int32(0)), "w": fluxion.new_ref(jnp.ones(2))}
    closed = fluxion.new_ref(jnp.float32(1.0))

    def step(s, x):
        s["count"][...] += 1
        s["w"][...] = s["w"][...] * closed[...] + x
        closed[...] = closed[...] * 2.0
        return s["w"][...].sum()

    eager_state = {"count": fluxion.new_ref(jnp.int32(0)), "w": fluxion.new_ref(jnp.ones(2))}
    eager_closed = closed
    outs = [fluxion.jit(step)(state, jnp.float32(i)) for i in range(3)]
    closed_after = float(closed[...])
    closed[...] = jnp.float32(1.0)
    eager = [step(eager_state, jnp.float32(i)) for i in range(3)]
    assert [float(o) for o in outs] == [float(e) for e in eager]
    assert int(state["count"][...]) == 3 and closed_after == float(eager_closed[...]) == 8.0


def test_jit_closed_over_reference_is_read_at_each_call():
    r = fluxion.new_ref(jnp.float32(2.0))
    g = fluxion.jit(lambda x: x * r[...])
    assert float(g(1.0)) == 2.0
    r[...] = jnp.float32(5.0)
    assert float(g(1.0)) == 5.0


def test_jit_errors_like_jax():
    r = fluxion.new_ref(jnp.zeros(3))
    with pytest.raises(ValueError, match="mutable array references cannot be returned"):
        fluxion.jit(lambda q: q)(r)
    with pytest.raises(ValueError, match="cannot be returned"):
        fluxion.jit(lambda x: fluxion.new_ref(x))(1.0)
    with pytest.raises(ValueError, match="only one reference to a mutable array may be passed"):
        fluxion.jit(lambda a, b: a[...] + b[...])(r, r)


def test_nested_jit_and_local_references():
    r = fluxion.new_ref(jnp.float32(1.0))
    inner = fluxion.jit(lambda q: q.__setitem__((), q[...] + 1.0))
    fluxion.jit(lambda q: inner(q))(r)
    assert float(r[...]) == 2.0

    def h(x):
        q = fluxion.new_ref(x)
        q[...] = q[...] * 3.0
        return fluxion.freeze(q)

    x = jnp.arange(3.0)
    np.testing.assert_allclose(fluxion.jit(h)(x), h(x))
    np.testing.assert_allclose(fluxion.grad(lambda x: h(x).sum())(x), np.full(3, 3.0))
    np.testing.assert_allclose(fluxion.vmap(h)(jnp.ones((2, 3))), np.full((2, 3), 3.0))


def test_writing_an_inner_transformations_value_outside_raises():
    r = fluxion.new_ref(jnp.zeros(3))
    with pytest.raises(ValueError, match="cannot write a value traced by"):
        fluxion.vmap(lambda x: r.__setitem__(0, x))(jnp.ones(3))
    assert r[...].tolist() == [0.0, 0.0, 0.0]


def test_bad_new_ref_arguments():
    with pytest.raises(TypeError, match="new_ref"):
        fluxion.new_ref([1.0])
    with pytest.raises(TypeError, match="new_ref"):
        fluxion.new_ref(fluxion.new_ref(1.0))


def test_grad_of_a_reference_argument_says_so():
    r = fluxion.new_ref(jnp.ones(3))
    with pytest.raises(TypeError, match="mutable array reference of type Ref"):
        fluxion.grad(lambda q: q[...].sum())(r)


def _loops(lib, lax_, np_):
    r = lib.new_ref(np_.arange(3.0))

    def body(c, x):
        r[...] += x
        return c + 1, r[0]

    c, ys = lax_.scan(body, 0, np_.ones(3))

    def wbody(i):
        r[1] += 1.0
        return i + 1

    n = lax_.while_loop(lambda i: i < 3, wbody, 0)
    lax_.cond(True, lambda: r.__setitem__(0, 7.0), lambda: None)
    lax_.fori_loop(0, 4, lambda i, a: (r.__setitem__(2, r[2] + a), a + 1.0)[1], 0.0)
    return c, ys, n, lib.freeze(r)


def test_loops_and_branches_thread_closed_over_references_like_jax():
    ours = _loops(fluxion, fluxion.lax, jnp)
    theirs = _loops(jax, jax.lax, jjnp)
    for o, t in zip(ours, theirs):
        _same(o, t)
    jitted = fluxion.jit(lambda: _loops(fluxion, fluxion.lax, jnp))()
    for o, t in zip(jitted, theirs):
        _same(o, t)


def test_grad_through_a_scan_writing_a_local_reference():
    def f(x, lib, lax_, np_):
        acc = lib.new_ref(np_.float32(1.0))

        def body(c, y):
            acc[...] = acc[...] * y
            return c, None

        lax_.scan(body, 0, np_.stack([x, x, x]))
        return lib.freeze(acc)

    _same(fluxion.grad(f)(jnp.float32(2.0), fluxion, fluxion.lax, jnp),
          jax.grad(f)(jjnp.float32(2.0), jax, jax.lax, jjnp))

"""hk.cond / hk.switch / hk.vmap argument handling vs dm-haiku: parameters created inside a
branch at init, the older five-argument cond, ``operand=``, vmap's split_rng requirement and
in_axes check (issue 24: haiku's stateful_test in mirror mode)."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion.numpy as jnp
import fluxion.random as fr
import fluxion_nn.haiku as hk

rhk = pytest.importorskip("haiku")
jax = pytest.importorskip("jax")


def _square(mod, np_):
    class Square(mod.Module):
        def __call__(self, x):
            p = mod.get_parameter("p", [], np_.int32, init=lambda *_: np_.array(2))
            y = x ** p
            mod.set_state("y", y)
            return y
    return Square


@pytest.mark.parametrize("form", ["new", "old", "operand"])
def test_cond_creates_params_in_branches_like_haiku(form):
    def run(mod, np_):
        def f(x):
            m = _square(mod, np_)()
            if form == "new":
                return mod.cond(x == 2, m, lambda x: m(x + 1), x)
            if form == "old":
                return mod.cond(x == 2, x, m, x, lambda x: m(x + 1))
            return mod.cond(x == 2, m, lambda x: m(x + 1), operand=x)
        t = mod.transform_with_state(f)
        outs = []
        for v in (1, 2, 3):
            x = np_.array(v)
            params, state = t.init(None, x)
            out, state = t.apply(params, state, None, x)
            outs.append((int(out), int(state["square"]["y"]), int(params["square"]["p"])))
        return outs
    assert run(hk, jnp) == \
        run(rhk, jax.numpy)


def test_cond_and_vmap_argument_errors_like_haiku():
    def errors(mod):
        out = []
        for call in (lambda: mod.cond(True, lambda x: x, lambda x: x, 1, operand=1),
                     lambda: mod.vmap(lambda x: x, in_axes=None, split_rng=False),
                     lambda: mod.vmap(lambda x: x)):
            try:
                call()
                out.append(None)
            except (TypeError, ValueError) as e:
                out.append(type(e).__name__)
        return out
    ours, ref = [], []
    hk.transform(lambda: ours.extend(errors(hk))).init(None)
    rhk.transform(lambda: ref.extend(errors(rhk))).init(None)
    assert ours == ref == ["ValueError", "ValueError", "TypeError"]
    hk.vmap.require_split_rng = False
    try:
        keys = hk.transform(lambda: hk.vmap(hk.next_rng_key, axis_size=2)()).apply(
            {}, fr.key(0))
    finally:
        hk.vmap.require_split_rng = True
    k = np.asarray(fr.key_data(keys))
    assert (k[0] == k[1]).all()  # split_rng=False implied


def test_internal_state_difference_like_haiku():
    from haiku._src import stateful as rstateful

    from fluxion_nn.haiku._src import stateful

    def run(mod, st, np_):
        out = []

        def f():
            mod.get_parameter("a", [], init=np_.zeros)
            mod.get_state("s", [], init=np_.zeros)
            before = st.internal_state()
            mod.get_parameter("b", [], init=np_.ones)
            mod.set_state("s", np_.ones([]))
            mod.next_rng_key()
            diff = st.difference(before, st.internal_state())
            out.append(({m: {n: None if v is None else float(v) for n, v in e.items()}
                         for m, e in diff.params.items()},
                        {m: {n: None if v is None else (float(v.initial), float(v.current))
                             for n, v in e.items()} for m, e in diff.state.items()},
                        diff.rng is not None,
                        st.difference(before, before).rng is None))
            with st.temporary_internal_state(st.internal_state()):
                out.append(mod.Module(name="foo").module_name)
            out.append(mod.Module(name="foo").module_name)
            out.append(list(st.map(lambda x: x * 2, np_.arange(3.0))))
        mod.transform_with_state(f).init(fr.key(0) if mod is hk else jax.random.key(0))
        return out
    ours, ref = run(hk, stateful, jnp), run(rhk, rstateful, jax.numpy)
    assert ours[:3] == ref[:3]
    np.testing.assert_allclose(np.asarray(ours[3], np.float32), np.asarray(ref[3], np.float32))


def test_init_with_a_non_key_says_where_the_rng_goes():
    with pytest.raises(ValueError, match="Init must be called with an RNG as the first argument"):
        hk.transform(hk.next_rng_key).init([1, 2])
    with pytest.raises(ValueError, match="Init must be called with an RNG as the first argument"):
        rhk.transform(rhk.next_rng_key).init([1, 2])

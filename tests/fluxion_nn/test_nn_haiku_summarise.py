"""hk.experimental.eval_summary / tabulate and the automatic Module repr vs dm-haiku: the same
table text (module call stacks, configs, owned parameters, input/output specs, sizes), the same
invocations, the same reprs and the same errors."""

from __future__ import annotations

import pytest

import fluxion.numpy as jnp
import fluxion_nn.haiku as hk

rhk = pytest.importorskip("haiku")
rjnp = pytest.importorskip("jax.numpy")
pytest.importorskip("tabulate")


def _net(mod):
    class Block(mod.Module):
        def __call__(self, x, *, scale=1.0):
            c = mod.get_state("c", [], init=jnp.zeros if mod is hk else rjnp.zeros)
            mod.set_state("c", c + 1)
            return mod.Linear(2)(x) * scale

    def f(x):
        return Block(name="block")(mod.nets.MLP([3, 4])(x), scale=2.0)

    return f


@pytest.mark.parametrize("columns,filters", [
    (None, None),
    (("module", "owned_params", "params_size"), ("has_params",)),
])
def test_tabulate_matches_haiku(columns, filters):
    kw = {} if columns is None else dict(columns=columns, filters=filters)
    ours = hk.experimental.tabulate(_net(hk), **kw)(jnp.ones([2, 5]))
    ref = rhk.experimental.tabulate(_net(rhk), **kw)(rjnp.ones([2, 5]))
    assert ours == ref


def test_eval_summary_and_repr_match_haiku():
    ours = hk.experimental.eval_summary(_net(hk))(jnp.ones([2, 5]))
    ref = rhk.experimental.eval_summary(_net(rhk))(rjnp.ones([2, 5]))

    def view(calls):
        return [(c.module_details.module.module_name, c.module_details.method_name,
                 repr(c.module_details.module), str(c.output_spec),
                 [d.module.module_name for d in c.call_stack]) for c in calls]

    assert view(ours) == view(ref)
    empty = hk.experimental.tabulate(lambda: None)()
    assert empty == rhk.experimental.tabulate(lambda: None)() == "No modules matching filters."


def test_invalid_column_and_filter_errors():
    with pytest.raises(ValueError, match="Invalid column.*nonsense"):
        hk.experimental.tabulate(lambda: None, columns=("nonsense",))
    with pytest.raises(ValueError, match="Invalid filter.*nonsense"):
        hk.experimental.tabulate(lambda: None, filters=("nonsense",))

"""hk.experimental.jaxpr_info and hk.to_dot vs dm-haiku: the same module tree text (expressions,
name scopes of modules, parameter counts, flops), an HTML page, a dot graph clustered by module
(issue 24: haiku's jaxpr_info_test, integration jaxpr_info/to_dot tests in mirror mode)."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
import fluxion_nn.haiku as hk
from fluxion_nn.haiku.experimental import jaxpr_info

rhk = pytest.importorskip("haiku")
jax = pytest.importorskip("jax")
from haiku.experimental import jaxpr_info as rjaxpr_info  # noqa: E402


def _model(mod):
    tanh = jnp.tanh if mod is hk else jax.numpy.tanh  # (jax.nn.relu is a jit of its own in jax)

    def f(x):
        return mod.nets.MLP([3, 2], activation=tanh, name="mlp")(x)
    return mod.transform_with_state(f)


def _flops(eqn, expr):
    return max(int(np.prod(v.aval.shape)) for v in eqn.invars)


def test_format_module_matches_haiku():
    x = np.ones([2, 4], np.float32)
    rf = _model(rhk)
    rp, rs = rf.init(jax.random.key(0), x)
    ref = rjaxpr_info.format_module(rjaxpr_info.make_model_info(rf.apply, compute_flops=_flops)(rp, rs, None, x))
    f = _model(hk)
    p = jax.tree.map(np.asarray, rp)
    info = jaxpr_info.make_model_info(f.apply, compute_flops=_flops)(p, {}, None, x)
    assert jaxpr_info.format_module(info) == ref
    assert info.expressions[0].submodule.total_param_size == 4 * 3 + 3 + 3 * 2 + 2
    assert "<html>" in jaxpr_info.as_html_page(info)

    def plain(a, b):
        return jnp.sign(a) + jnp.cos(b)

    def rplain(a, b):
        return jax.numpy.sign(a) + jax.numpy.cos(b)
    assert jaxpr_info.format_module(jaxpr_info.make_model_info(plain)(x, x)).replace("plain", "f") == \
        rjaxpr_info.format_module(rjaxpr_info.make_model_info(rplain)(x, x)).replace("rplain", "f")


def test_to_dot_clusters_by_module():
    x = np.ones([2, 4], np.float32)
    f = _model(hk)
    p, s = fluxion.eval_shape(f.init, fluxion.random.key(0), x)
    dot = hk.experimental.abstract_to_dot(f.apply)(p, s, None, x)
    assert dot.startswith("digraph G {") and dot.rstrip().endswith("} // digraph G")
    for name in ("apply_fn", "mlp", "linear_0", "linear_1", "dot_general"):
        assert name in dot
    assert dot.count("subgraph cluster_") == 3  # mlp, mlp/linear_0, mlp/linear_1
    assert hk.to_dot(f.apply)(jax.tree.map(np.asarray, _model(rhk).init(jax.random.key(0), x)[0]),
                              {}, None, x).count("->") == dot.count("->")

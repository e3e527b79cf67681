"""``hk.experimental.flax`` (Haiku's bridge to Linen) against dm-haiku's on real jax and flax:
``lift`` of a Linen-protocol module (a ``fluxion_nn.bridge.Module`` here; flax's Linen on real jax
for the reference) registers the same parameter and state names, shapes, dtypes and values and
threads the state the same way; ``flatten_flax_to_haiku`` gives the same dicts; ``Module`` (a real
``flax.linen.Module`` once flax runs on Fluxion) gives haiku's variables and outputs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fjnp
import fluxion_nn as nnx
import fluxion_nn.haiku as hk
from fluxion_nn.haiku._src.flax import transform_flax

haiku = pytest.importorskip("haiku")
flax_linen = pytest.importorskip("flax.linen")
jax = pytest.importorskip("jax")
fnnx = pytest.importorskip("flax.nnx")
jjnp = jax.numpy


def _counter(lib, jnp):
    # the same source on both sides: a Linen-protocol bridge Module (fluxion_nn's, flax.nnx's)
    class Counter(lib.bridge.Module):
        @lib.bridge.compact
        def __call__(self, x):
            w = self.param("w", lib.initializers.ones_init(), (x.shape[-1], 2))
            count = self.variable("counts", "count", lambda: jnp.zeros((), jnp.int32))
            if not self.is_initializing():
                count[...] += 1
            return x @ w + count[...]

    class Outer(lib.bridge.Module):
        @lib.bridge.compact
        def __call__(self, x):
            return Counter(name="inner")(x)

    return Outer()


def _run(lib, mod, key, x):
    def f(x):
        return lib.experimental.flax.lift(mod, name="outer")(x)

    t = lib.transform_with_state(f)
    params, state = t.init(key, x)
    outs, states = [], [state]
    for _ in range(2):
        out, state = t.apply(params, state, None, x)
        outs.append(out)
        states.append(state)
    return params, states, outs


def _check_same(ours, theirs):
    assert sorted(ours) == sorted(theirs)
    for mod in ours:
        assert sorted(ours[mod]) == sorted(theirs[mod]), mod
        for name in ours[mod]:
            a, b = ours[mod][name], theirs[mod][name]
            assert a.shape == b.shape and str(a.dtype) == str(b.dtype), (mod, name)
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_lift_registers_params_and_threads_state_like_haiku():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    p1, s1, o1 = _run(hk, _counter(nnx, fjnp), fluxion.random.PRNGKey(0), fjnp.asarray(x))
    p2, s2, o2 = _run(haiku, _counter(fnnx, jjnp), jax.random.PRNGKey(0), jjnp.asarray(x))
    # a bridge Module's apply gives back every collection, so its params are also state
    assert sorted(p1) == ["outer/inner"]
    assert sorted(s1[0]) == ["outer/counts/inner", "outer/params/inner"]
    _check_same(p1, p2)
    for a, b in zip(s1, s2):
        _check_same(a, b)
    assert [int(s["outer/counts/inner"]["count"]) for s in s1] == [0, 1, 2]
    for a, b in zip(o1, o2):
        assert a.shape == b.shape == (2, 2) and a.dtype == b.dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_lift_rejects_rngs_that_are_not_a_mapping():
    def f(lib, key):
        model = _counter(nnx, fjnp) if lib is hk else _counter(fnnx, jjnp)
        return lib.experimental.flax.lift(model, name="m")(np.ones((1, 3), np.float32), rngs=key)

    with pytest.raises(Exception, match="should be a dictionary") as theirs:
        haiku.transform(lambda: f(haiku, jax.random.PRNGKey(0))).init(None)
    # flax on real jax here: ours is fluxion_nn's InvalidRngError (flax's when flax runs on
    # Fluxion), with haiku's message
    with pytest.raises(transform_flax.InvalidRngError,
                       match="should be a dictionary"):
        hk.transform(lambda: f(hk, fluxion.random.PRNGKey(0))).init(None)
    assert type(theirs.value).__name__ == "InvalidRngError"


def test_flatten_flax_to_haiku_like_haiku():
    from haiku._src.flax.utils import flatten_flax_to_haiku as theirs

    for tree in ({"mod1": {"mod2": {"w": 0}}, "~": {"w": 1}}, {"w": 0},
                 {"a": {"b": 1, "c": {"d": 2}}, "e": 3}, {}):
        assert hk.experimental.flax.flatten_flax_to_haiku(tree) == theirs(tree)
    with pytest.raises(TypeError, match="flatten_flax_to_haiku"):
        hk.experimental.flax.flatten_flax_to_haiku(3)


def test_module_needs_flax_on_fluxion():
    # flax in this process runs on real jax (or is absent): Module is not made
    with pytest.raises(ImportError, match="flax's Linen running on Fluxion"):
        hk.experimental.flax.Module  # noqa: B018


_MODULE_CASE = """
def counter_fn():
    c = hk.get_state("c", [], init=jnp.zeros)
    hk.set_state("c", c + 1)
    return c

class Counter(hk.Module):
    def __call__(self):
        return counter_fn()

m = hk.experimental.flax.Module.create(hk.Linear, 2)
x = jnp.arange(6, dtype=jnp.float32).reshape(2, 3) / 6
variables = m.init(jax.random.PRNGKey(42), x)
y = m.apply(variables, x)
c = hk.experimental.flax.Module.create(Counter)
cv = c.init(jax.random.PRNGKey(0))
counts = []
for _ in range(3):
    out, cv = c.apply(cv, mutable=["state"])
    counts.append(int(out))
out = {
    "is_linen": isinstance(m, nn.Module),
    "vars": {"/".join(k): [list(np.shape(v)), str(v.dtype), np.asarray(v).tolist()] for k, v in
             flax.traverse_util.flatten_dict(dict(variables)).items()},
    "y": np.asarray(y).tolist(), "ydtype": str(y.dtype), "counts": counts,
    "cstate": {"/".join(k): np.asarray(v).tolist() for k, v in
               flax.traverse_util.flatten_dict(dict(cv)).items()},
}
"""

_CHILD = """
import json
import fluxion.compat
fluxion.compat.install_jax_alias()
import jax, jax.numpy as jnp, numpy as np
import flax, flax.linen as nn, flax.traverse_util
import fluxion_nn.haiku as hk
from fluxion_nn.haiku._src.flax import transform_flax
""" + _MODULE_CASE + """
print(json.dumps(out))
"""


@pytest.mark.slow  # 6-10 s under load: a child process importing flax on the jax alias
def test_module_runs_a_haiku_transform_as_linen_like_haiku():
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ours = json.loads(proc.stdout.strip().splitlines()[-1])
    import flax
    import flax.traverse_util  # noqa: F401
    scope = {"hk": haiku, "jax": jax, "jnp": jjnp, "np": np, "nn": flax_linen, "flax": flax}
    exec(_MODULE_CASE, scope)  # noqa: S102 - the same source on real haiku, flax and jax
    ref = scope["out"]
    assert ours["is_linen"] and ref["is_linen"]
    assert sorted(ours["vars"]) == sorted(ref["vars"]) == ["params/linear/b", "params/linear/w"]
    for k, (shape, dtype, value) in ref["vars"].items():
        assert ours["vars"][k][:2] == [shape, dtype]
        np.testing.assert_allclose(ours["vars"][k][2], value, rtol=1e-6, atol=1e-6)
    assert ours["ydtype"] == ref["ydtype"] == "float32"
    np.testing.assert_allclose(ours["y"], ref["y"], rtol=1e-5, atol=1e-6)
    assert ours["counts"] == ref["counts"] == [0, 1, 2]
    assert ours["cstate"] == ref["cstate"] == {"state/counter/c": 3.0}


_NO_FLAX_CHILD = """
import json, sys
import fluxion.compat
fluxion.compat.install_jax_alias()
fluxion.compat.install_module_alias({"haiku": "fluxion_nn.haiku"})
from haiku._src import no_flax
linen = sys.modules.get("flax.linen")
# haiku's no_flax_test.py: setUpModule, test_import_shim, tearDownModule
for name in list(sys.modules):
    if name.startswith("flax"):
        sys.modules[name] = no_flax.FlaxNotInstalled("haiku.experimental.flax")
    elif name.startswith("haiku"):
        del sys.modules[name]
import haiku as hk
try:
    hk.experimental.flax.lift
    raised = None
except ImportError as e:
    raised = str(e)
for name in list(sys.modules):
    if name.startswith(("flax", "haiku")):
        del sys.modules[name]
from fluxion_nn.haiku._src.flax import flax_module
print(json.dumps({"imported": linen is not None, "raised": raised,
                  "kept": issubclass(flax_module.module_type(), linen.Module)}))
"""


def test_haiku_imports_flax_under_the_jax_alias_only_like_haiku():
    # haiku imports flax with itself: its no_flax_test swaps the flax modules already imported
    # for stand-ins and expects hk.experimental.flax's names to raise; the bridge keeps the flax
    # it was imported with after the test drops flax from sys.modules (a later test file's Linen)
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", _NO_FLAX_CHILD], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["imported"] and out["kept"]
    assert re.search(r"lift.*require `flax`", out["raised"])
    # without the alias importing flax would import the real jax: neither is imported
    code = ("import sys, fluxion_nn.haiku as hk; "
            "print(sorted({'jax', 'flax', 'flax.linen'} & set(sys.modules)), "
            "callable(hk.experimental.flax.lift))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "[] True"

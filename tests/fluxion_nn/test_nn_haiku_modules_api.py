"""Module naming and protocol details vs dm-haiku: hk.force_name, explicit/zero-padded numbering,
uniqueness and invalid names, @dataclass modules, hook_methods, ModuleProtocol/SupportsCall,
MLP.reverse/output_size (issue 24: haiku's own module_test/typing_test/mlp_test in mirror mode)."""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np
import pytest

import fluxion.numpy as jnp
import fluxion.random as fr
import fluxion_nn.haiku as hk
from fluxion_nn.haiku._src import module as hk_module

rhk = pytest.importorskip("haiku")
jax = pytest.importorskip("jax")
from haiku._src import module as rhk_module  # noqa: E402


def _run(mod, fn):
    out = []
    mod.transform(lambda: out.append(fn(mod))).init(None)
    return out[0]


def _naming(mod):
    names = [mod.Module(name=n).module_name for n in ("c_000", "c_001", "c_7", "c")]
    names.append(mod.Module(name=mod.force_name("f/g")).module_name)
    names.append(mod.Module(name=mod.force_name("c")).module_name)
    names.append(mod.Module(name="c").module_name)
    for bad in ("1bad-name", "c_7"):
        try:
            mod.Module(name=bad)
            names.append("no error")
        except ValueError as e:
            names.append(str(e).split("(")[0].strip())
    return names


def test_naming_matches_haiku():
    ours, ref = _run(hk, _naming), _run(rhk, _naming)
    assert ours == ref


def test_protocols_and_no_subclassing():
    def check(mod):
        return (isinstance(mod.Linear(1), mod.ModuleProtocol), isinstance(mod.Linear(1), mod.SupportsCall),
                isinstance(mod.Module(), mod.SupportsCall), isinstance(object(), mod.ModuleProtocol))
    assert _run(hk, check) == _run(rhk, check) == (True, True, False, False)
    with pytest.raises(TypeError, match="should not be subclassed"):
        type("Concrete", (hk.ModuleProtocol,), {})
    assert hk.Module._is_protocol is False


def _dataclass_and_hooks(mod, modmod, np_):
    @dataclasses.dataclass
    class Data(mod.Module):
        size: int
        name: str | None = None

        def __call__(self, x):
            return mod.Linear(self.size, name="lin")(x)

    events = []

    @contextlib.contextmanager
    def hook(m, method):
        events.append(("enter", method))
        yield
        events.append(("exit", method, m.module_name))

    with modmod.hook_methods(hook):
        y = Data(3)(np_.ones([1, 2]))
    return y.shape, events


def test_dataclass_module_and_method_hooks():
    def f(mod, modmod, np_):
        out = []

        def fn():
            out.append(_dataclass_and_hooks(mod, modmod, np_))
        params = mod.transform(fn).init(fr.key(0) if mod is hk else jax.random.key(0))
        return out[0], {k: sorted(v) for k, v in params.items()}
    assert f(hk, hk_module, jnp) == f(rhk, rhk_module, jax.numpy)


def test_mlp_reverse_matches_haiku():
    def fwd(mod):
        def f(x):
            mlp = mod.nets.MLP([3, 4])
            y = mlp(x)
            back = mlp.reverse()
            return back(y), mlp.output_size, back.module_name
        return mod.transform(f)
    x = np.ones([2, 5], np.float32)
    p = fwd(hk).init(fr.key(1), x)
    rp = fwd(rhk).init(jax.random.key(1), x)
    assert {k: {n: v.shape for n, v in d.items()} for k, d in p.items()} == \
        {k: {n: v.shape for n, v in d.items()} for k, d in rp.items()}
    rp = jax.tree.map(np.asarray, rp)
    out, size, name = fwd(hk).apply(rp, None, x)
    rout, rsize, rname = fwd(rhk).apply(rp, None, x)
    assert (size, name) == (rsize, rname) == (4, "mlp/~reverse/mlp_reversed")
    np.testing.assert_allclose(np.asarray(out), np.asarray(rout), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="only be passed when using dropout"):
        hk.transform(lambda x: hk.nets.MLP([2])(x, rng=fr.key(0))).init(fr.key(0), x)


def test_private_modules_hk_namespace_like_haiku():
    from haiku._src import basic as rbasic
    from haiku._src.nets import mlp as rmlp

    from fluxion_nn.haiku._src import basic
    from fluxion_nn.haiku._src.nets import mlp
    assert rbasic.hk.Module is rhk.Module and rmlp.hk.Linear is rhk.Linear
    assert basic.hk.Module is hk.Module and mlp.hk.Linear is hk.Linear

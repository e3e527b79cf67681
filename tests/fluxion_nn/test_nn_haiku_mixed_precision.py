"""hk.intercept_methods and hk.mixed_precision vs dm-haiku: interceptors see the same calls
(module, method, defining class) in the same order; a policy gives the same parameter dtypes, the
same dtypes inside the modules and the same output dtype and values."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion.numpy as jnp
import fluxion.random as fr
import fluxion_nn.haiku as hk

rhk = pytest.importorskip("haiku")
jax = pytest.importorskip("jax")
jmp = pytest.importorskip("jmp")

X = np.random.RandomState(0).randn(2, 4).astype(np.float32)


class FluxionPolicy:
    """jmp.Policy's interface over Fluxion arrays (jmp itself casts only real-jax arrays when
    both libraries share a process; under the compat alias jmp runs on Fluxion directly)."""

    def __init__(self, ref):
        self.param_dtype = ref.param_dtype
        self.compute_dtype, self.output_dtype = ref.compute_dtype, ref.output_dtype

    @staticmethod
    def _cast(tree, dtype):
        import fluxion

        def cast(x):
            if hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.floating):
                return x.astype(dtype)
            return x

        return fluxion.tree.map(cast, tree)

    def cast_to_compute(self, tree):
        return self._cast(tree, self.compute_dtype)

    def cast_to_output(self, tree):
        return self._cast(tree, self.output_dtype)


def _run(mod, np_, key, policy_cls=None, policy=None):
    seen = []

    def spy(next_fun, args, kwargs, context):
        dts = [str(a.dtype) for a in args if hasattr(a, "dtype")]
        seen.append((type(context.module).__name__, context.method_name,
                     context.orig_class.__name__, tuple(dts)))
        return next_fun(*args, **kwargs)

    def f(x):
        with mod.intercept_methods(spy):
            return mod.nets.MLP([3, 2], name="mlp")(x)

    t = mod.transform(f)
    if policy_cls is not None:
        mod.mixed_precision.set_policy(getattr(mod.nets, policy_cls), policy)
    try:
        params = t.init(key, np_.asarray(X))
        seen.clear()
        out = t.apply(params, None, np_.asarray(X))
    finally:
        if policy_cls is not None:
            mod.mixed_precision.clear_policy(getattr(mod.nets, policy_cls))
    dtypes = {k: {n: str(v.dtype) for n, v in d.items()} for k, d in params.items()}
    return seen, dtypes, np.asarray(out.astype(np_.float32)), str(out.dtype)


@pytest.mark.parametrize("with_policy", [False, True])
def test_interceptors_and_policy_match_haiku(with_policy):
    kw = {}
    if with_policy:
        kw = dict(policy_cls="MLP",
                  policy=jmp.get_policy("params=float32,compute=bfloat16,output=float16"))
    ref = _run(rhk, jax.numpy, jax.random.PRNGKey(0), **kw)
    if with_policy:
        kw["policy"] = FluxionPolicy(kw["policy"])
    ours = _run(hk, jnp, fr.PRNGKey(0), **kw)
    assert ours[0] == ref[0]
    assert ours[1] == ref[1] and ours[3] == ref[3]
    np.testing.assert_allclose(ours[2], ref[2], rtol=2e-2, atol=2e-2)


def test_push_policy_restores_and_refuses_inside_same_class():
    policy = FluxionPolicy(jmp.get_policy("float16"))
    assert hk.mixed_precision.get_policy(hk.Linear) is None
    with hk.mixed_precision.push_policy(hk.Linear, policy):
        assert hk.mixed_precision.get_policy(hk.Linear) is policy
    assert hk.mixed_precision.get_policy(hk.Linear) is None

    class Pusher(hk.Module):
        def __call__(self):
            with hk.mixed_precision.push_policy(Pusher, policy):
                pass

    with pytest.raises(ValueError, match="Pushing a policy inside a method on the same class"):
        hk.transform(lambda: Pusher()()).init(None)
    assert hk.mixed_precision.current_policy() is None

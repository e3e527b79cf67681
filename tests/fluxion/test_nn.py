"""fluxion.nn against jax.nn 0.10.2: activations (values, dtypes, weak types, gradients, stability
at extreme inputs), softmax/logsumexp family, standardize, one_hot, dot_product_attention, and
the initializers (same key -> same numbers)."""

from __future__ import annotations

import importlib

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from _compare import assert_close, assert_same

import fluxion
import fluxion.numpy as jnp
from fluxion import nn
from fluxion.nn import initializers as finit
from fluxion.test_util import check_grads

jinit = jax.nn.initializers

# One input vector for every element-wise test (so each function compiles once): negative,
# zero, the kinks of relu6/hard_* and large magnitudes.
X = np.array([-1000.0, -50.0, -6.0, -3.0, -1.0, -0.5, 0.0, 0.25, 1.0, 3.0, 6.0, 50.0, 1000.0],
             np.float32)

ELEMENTWISE = [
    "relu", "relu6", "elu", "celu", "selu", "gelu", "silu", "swish", "mish", "softplus",
    "soft_sign", "sigmoid", "log_sigmoid", "hard_tanh", "hard_sigmoid", "hard_silu",
    "hard_swish", "leaky_relu", "squareplus", "sparse_plus", "sparse_sigmoid", "identity", "tanh",
]


def _fgrad(f, argnums=0):
    """jit(grad(f)) in Fluxion: one compile instead of one per eagerly run primitive."""
    return fluxion.jit(fluxion.grad(f, argnums=argnums))


def _jgrad(f, argnums=0):
    """The reference gradient, jitted likewise (the compared values are within tolerances)."""
    return jax.jit(jax.grad(f, argnums=argnums))


def _same_lowp(ours, theirs, tol=1e-2):
    """bfloat16/float16 results: dtype and shape exactly, values to ``tol``."""
    assert_close(ours, theirs, tol)


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_values_and_grads(name):
    ours, theirs = getattr(nn, name), getattr(jax.nn, name)
    assert_same(ours(X), theirs(X), rtol=1e-6, atol=1e-6)
    g_ours = fluxion.grad(lambda x: jnp.sum(ours(x)))(X)
    g_theirs = _jgrad(lambda x: jjnp.sum(theirs(x)))(X)
    assert np.all(np.isfinite(np.asarray(g_ours))), (name, g_ours)
    assert_same(g_ours, g_theirs, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["relu", "gelu", "softplus"])
def test_elementwise_scalar_weak_and_low_precision(name):
    ours, theirs = getattr(nn, name), getattr(jax.nn, name)
    assert_same(ours(0.5), theirs(0.5), rtol=1e-6)            # weakly typed Python scalar
    xb = X[2:-2].astype(jjnp.bfloat16)
    _same_lowp(ours(xb), theirs(xb))                          # bfloat16 stays bfloat16


def test_elementwise_parameters():
    x = X[2:-2]
    assert_same(nn.elu(x, 0.5), jax.nn.elu(x, 0.5), rtol=1e-6)
    assert_same(nn.celu(x, 2.0), jax.nn.celu(x, 2.0), rtol=1e-6)
    assert_same(nn.leaky_relu(x, 0.2), jax.nn.leaky_relu(x, 0.2), rtol=1e-6)
    assert_same(nn.squareplus(x, 1.0), jax.nn.squareplus(x, 1.0), rtol=1e-6)
    assert_same(nn.gelu(x, approximate=False), jax.nn.gelu(x, approximate=False), rtol=1e-6,
                atol=1e-7)
    gx = fluxion.grad(lambda v: jnp.sum(nn.gelu(v, approximate=False)))(x)
    gj = _jgrad(lambda v: jjnp.sum(jax.nn.gelu(v, approximate=False)))(x)
    assert_same(gx, gj, rtol=1e-6, atol=1e-7)
    xi = np.array([-2, 0, 3], np.int32)
    assert_same(nn.relu(xi), jax.nn.relu(xi))
    assert_same(nn.relu6(xi), jax.nn.relu6(xi))
    xp = np.array([0.01, 0.5, 1.0, 5.0, 30.0], np.float32)
    assert_same(nn.log1mexp(xp), jax.nn.log1mexp(xp), rtol=1e-6)
    assert_same(fluxion.grad(lambda v: jnp.sum(nn.log1mexp(v)))(xp),
                _jgrad(lambda v: jjnp.sum(jax.nn.log1mexp(v)))(xp), rtol=1e-6)


def test_kink_derivatives_like_jax():
    assert float(fluxion.grad(nn.relu)(0.0)) == 0.0
    assert float(fluxion.grad(nn.relu6)(0.0)) == 0.0
    assert float(fluxion.grad(nn.relu6)(6.0)) == 0.0
    assert float(fluxion.grad(nn.relu6)(3.0)) == 1.0
    for f in ("relu", "relu6", "hard_tanh", "hard_sigmoid", "leaky_relu", "elu"):
        pts = np.array([-1.0, 0.0, 1.0, 6.0], np.float32)
        ours = fluxion.vmap(fluxion.grad(getattr(nn, f)))(pts)
        theirs = jax.jit(jax.vmap(jax.grad(getattr(jax.nn, f))))(pts)
        assert_same(ours, theirs)
    # vmap of a custom_jvp function keeps the rule: grad(vmap(relu)) at 0 is 0
    g = fluxion.grad(lambda x: jnp.sum(fluxion.vmap(nn.relu)(x)))(np.array([0.0, 2.0]))
    assert np.asarray(g).tolist() == [0.0, 1.0]
    # second derivative through the custom rule, and jit of the rule
    assert float(fluxion.grad(fluxion.grad(nn.relu))(2.0)) == 0.0
    assert float(fluxion.jit(fluxion.grad(nn.relu))(0.0)) == 0.0


@pytest.mark.parametrize("name", ["softplus", "gelu", "silu", "mish", "log_sigmoid", "selu"])
def test_check_grads_elementwise(name):
    x = np.array([-2.3, -0.7, 0.4, 1.9], np.float32)
    check_grads(getattr(nn, name), (x,), order=2, modes=("fwd", "rev"), atol=2e-2, rtol=2e-2)


# ============================================================================ softmax family

M = np.array([[1.0, 2.0, 3.0, -1.0], [0.5, -2.0, 4.0, 1.5], [0.0, 0.0, 0.0, 0.0]], np.float32)
W = np.array([[True, False, True, True], [False, False, True, True], [True, True, True, True]])
T = np.arange(12, dtype=np.float32).reshape(3, 4) / 7.0 - 0.5   # cotangent / tangent weights


@pytest.mark.parametrize("axis", [-1, 0, None, (0, 1)])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_family(name, axis):
    ours, theirs = getattr(nn, name), getattr(jax.nn, name)
    assert_same(ours(M, axis=axis), theirs(M, axis=axis), rtol=1e-6, atol=1e-6)
    g = _fgrad(lambda x: jnp.sum(ours(x, axis=axis) * T))(M)
    gj = _jgrad(lambda x: jjnp.sum(theirs(x, axis=axis) * T))(M)
    assert_same(g, gj, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_where_and_large(name):
    ours, theirs = getattr(nn, name), getattr(jax.nn, name)
    assert_same(ours(M, where=W), theirs(M, where=W), rtol=1e-6, atol=1e-6)
    g = _fgrad(lambda x: jnp.sum(jnp.where(W, ours(x, where=W), 0.0) * T))(M)
    gj = _jgrad(lambda x: jjnp.sum(jjnp.where(W, theirs(x, where=W), 0.0) * T))(M)
    assert_same(g, gj, rtol=1e-5, atol=1e-6)
    big = M * 1e4
    out = ours(big)
    assert np.all(np.isfinite(np.asarray(out)))
    assert_same(out, theirs(big), rtol=1e-6, atol=1e-6)
    g = _fgrad(lambda x: jnp.sum(ours(x) * T))(big)
    assert np.all(np.isfinite(np.asarray(g)))
    assert_same(g, _jgrad(lambda x: jjnp.sum(theirs(x) * T))(big), rtol=1e-5, atol=1e-6)


def test_softmax_custom_jvp_and_initial():
    # forward mode uses the custom rule y * (t - sum(y t)) exactly like jax
    y, t = fluxion.jvp(nn.softmax, (M,), (T,))
    yj, tj = jax.jit(lambda m, t: jax.jvp(jax.nn.softmax, (m,), (t,)))(M, T)
    assert_same(y, yj, rtol=1e-6, atol=1e-7)
    assert_same(t, tj, rtol=1e-5, atol=1e-7)
    # `initial` (older JAX's argument) is the floor of the max used for the shift
    assert_same(nn.softmax(M, initial=5.0), jax.nn.softmax(M), rtol=1e-5, atol=1e-6)
    assert_same(nn.log_softmax(M, initial=5.0), jax.nn.log_softmax(M), rtol=1e-5, atol=1e-6)
    check_grads(lambda x: nn.softmax(x), (M,), order=2, modes=("fwd", "rev"), atol=2e-2,
                rtol=2e-2)


def test_logsumexp_variants():
    f, j = nn.logsumexp, jax.nn.logsumexp
    assert fluxion.nn.logsumexp is nn.logsumexp
    for kw in [{}, {"axis": 1}, {"axis": 0, "keepdims": True}, {"axis": (0, 1)},
               {"axis": 1, "where": W}, {"axis": 1, "b": T}, {"axis": 1, "b": T,
                                                               "return_sign": True}]:
        assert_same(f(M, **kw), j(M, **kw), rtol=1e-6, atol=1e-6, err_msg=str(kw))
    big = M * 1e4
    assert np.all(np.isfinite(np.asarray(f(big, axis=1))))
    assert_same(f(big, axis=1), j(big, axis=1), rtol=1e-6)
    g = fluxion.grad(lambda x: jnp.sum(f(x, axis=1) * T[:, 0]))(big)    # eager
    assert np.all(np.isfinite(np.asarray(g)))
    assert_same(g, _jgrad(lambda x: jjnp.sum(j(x, axis=1) * T[:, 0]))(big), rtol=1e-6)
    gb = _fgrad(lambda x, b: f(x, b=b), argnums=(0, 1))(M, np.abs(T) + 0.1)
    gbj = _jgrad(lambda x, b: j(x, b=b), argnums=(0, 1))(M, np.abs(T) + 0.1)
    assert_same(gb, gbj, rtol=1e-5, atol=1e-6)
    # -inf rows stay -inf with a zero (not NaN) gradient, like jax
    ninf = np.array([[-np.inf, -np.inf], [0.0, 1.0]], np.float32)
    assert_same(f(ninf, axis=1), j(ninf, axis=1))
    check_grads(lambda x: f(x, axis=1), (M,), order=2, modes=("fwd", "rev"), atol=2e-2,
                rtol=2e-2)


def test_logmeanexp():
    for kw in [{}, {"axis": 1}, {"axis": 0, "keepdims": True}, {"axis": 1, "where": W}]:
        assert_same(nn.logmeanexp(M, **kw), jax.nn.logmeanexp(M, **kw), rtol=1e-6, atol=1e-6,
                    err_msg=str(kw))
    g = _fgrad(lambda x: jnp.sum(nn.logmeanexp(x, axis=1)))(M)
    assert_same(g, _jgrad(lambda x: jjnp.sum(jax.nn.logmeanexp(x, axis=1)))(M), rtol=1e-6)


def test_standardize():
    mean = np.array([[0.5], [1.0], [0.0]], np.float32)
    var = np.array([[2.0], [1.0], [3.0]], np.float32)
    for kw in [{}, {"axis": 0}, {"axis": None}, {"mean": mean, "variance": var},
               {"where": W}, {"epsilon": 0.1}, {"algorithm": "stable"}]:
        assert_same(nn.standardize(M, **kw), jax.nn.standardize(M, **kw), rtol=1e-5, atol=1e-5,
                    err_msg=str(kw))
    g = _fgrad(lambda x: jnp.sum(nn.standardize(x) * T))(M)
    assert_same(g, _jgrad(lambda x: jjnp.sum(jax.nn.standardize(x) * T))(M), rtol=1e-4,
                atol=1e-4)
    with pytest.raises(ValueError, match="algorithm"):
        nn.standardize(M, algorithm="bogus")


def test_glu_and_one_hot():
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 5 - 1
    assert_same(nn.glu(x), jax.nn.glu(x), rtol=1e-6)
    assert_same(nn.glu(x, axis=0 if x.shape[0] % 2 == 0 else -1), jax.nn.glu(x), rtol=1e-6)
    with pytest.raises(ValueError, match="divisible by 2"):
        nn.glu(np.ones((3,), np.float32))
    idx = np.array([[0, 2, -1], [3, 1, 5]], np.int32)
    assert_same(nn.one_hot(idx, 4), jax.nn.one_hot(idx, 4))
    assert_same(nn.one_hot(idx, 4, axis=0), jax.nn.one_hot(idx, 4, axis=0))
    assert_same(nn.one_hot(idx, 4, dtype=jjnp.int32, axis=1),
                jax.nn.one_hot(idx, 4, dtype=jjnp.int32, axis=1))
    assert_same(nn.one_hot([1, 0], 2, dtype=np.bool_), jax.nn.one_hot(jjnp.array([1, 0]), 2,
                                                                      dtype=np.bool_))


def test_x64_dtypes(x64):
    x = X[2:-2].astype(np.float64)
    for name in ("gelu", "softplus", "softmax", "logsumexp"):
        assert_same(getattr(nn, name)(x), getattr(jax.nn, name)(x), rtol=1e-12, atol=1e-12,
                    err_msg=name)
    assert_same(nn.one_hot(np.array([0, 1]), 2), jax.nn.one_hot(np.array([0, 1]), 2))
    assert_same(nn.gelu(1.5), jax.nn.gelu(1.5), rtol=1e-12)


def test_jit_and_vmap_identities():
    f = lambda x: nn.softmax(nn.gelu(x) + nn.relu(x))
    assert_same(fluxion.jit(f)(M), f(M), rtol=1e-6, atol=1e-7)
    assert_same(fluxion.vmap(f)(M), jnp.stack([f(r) for r in M]), rtol=1e-6, atol=1e-7)
    assert_same(fluxion.vmap(nn.softmax, in_axes=1, out_axes=1)(M), jax.nn.softmax(M, axis=0),
                rtol=1e-6, atol=1e-7)
    assert_same(fluxion.jacrev(nn.softmax)(M[1]), jax.jit(jax.jacrev(jax.nn.softmax))(M[1]),
                rtol=1e-5,
                atol=1e-7)
    assert_same(fluxion.jacfwd(nn.softmax)(M[1]), jax.jit(jax.jacfwd(jax.nn.softmax))(M[1]),
                rtol=1e-5,
                atol=1e-7)
    gj = fluxion.jit(fluxion.grad(lambda x: jnp.sum(nn.log_softmax(x) * T)))(M)
    assert_same(gj, _jgrad(lambda x: jjnp.sum(jax.nn.log_softmax(x) * T))(M), rtol=1e-5,
                atol=1e-6)


def test_lazy_module_access():
    assert fluxion.nn is importlib.import_module("fluxion.nn")
    assert fluxion.nn.initializers is finit
    assert "nn" in dir(fluxion)


# ============================================================================ attention

def _qkv(B=2, T=3, S=4, N=2, K=2, H=4, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((B, T, N, H)).astype(dtype)
    k = rng.standard_normal((B, S, K, H)).astype(dtype)
    v = rng.standard_normal((B, S, K, H)).astype(dtype)
    return q, k, v


ATTN_CASES = {
    "plain": {},
    "scale": {"scale": 0.3},
    "causal": {"is_causal": True},
    "bias": {"bias": "bias"},
    "mask": {"mask": "mask"},
    "bias_mask_causal": {"bias": "bias1", "mask": "mask", "is_causal": True},
    "seq_lengths": {"query_seq_lengths": np.array([2, 3], np.int32),
                    "key_value_seq_lengths": np.array([4, 1], np.int32)},
    "window": {"local_window_size": (1, 0)},
}


def _attn_kwargs(case, N, T, S):
    rng = np.random.default_rng(1)
    kw = dict(ATTN_CASES[case])
    if kw.get("bias") == "bias":
        kw["bias"] = rng.standard_normal((2, N, T, S)).astype(np.float32)
    elif kw.get("bias") == "bias1":
        kw["bias"] = rng.standard_normal((T, S)).astype(np.float32)
    if kw.get("mask") == "mask":
        m = rng.uniform(size=(2, 1, T, S)) > 0.3
        m[..., 0] = True
        kw["mask"] = m
    return kw


@pytest.mark.parametrize("case", list(ATTN_CASES))
def test_dot_product_attention(case):
    q, k, v = _qkv(N=4, K=2)   # grouped-query attention (2 query heads per kv head)
    kw = _attn_kwargs(case, 4, q.shape[1], k.shape[1])
    out = nn.dot_product_attention(q, k, v, **kw)
    ref = jax.nn.dot_product_attention(q, k, v, implementation="xla", **kw)
    assert_same(out, ref, rtol=1e-5, atol=1e-6)
    if case not in ("plain", "bias_mask_causal", "seq_lengths"):
        return

    def loss(fn, np_):
        return lambda q, k, v: np_.sum(fn(q, k, v, **kw) * np.cos(np.arange(4.0)))

    g = _fgrad(loss(nn.dot_product_attention, jnp), argnums=(0, 1, 2))(q, k, v)
    gj = _jgrad(loss(jax.nn.dot_product_attention, jjnp), argnums=(0, 1, 2))(q, k, v)
    assert_same(g, gj, rtol=1e-4, atol=1e-5)


def test_dot_product_attention_shapes_residual_and_errors():
    q, k, v = _qkv(B=1)
    out = nn.dot_product_attention(q[0], k[0], v[0])
    assert_same(out, jax.nn.dot_product_attention(q[0], k[0], v[0]), rtol=1e-5, atol=1e-6)
    o, r = nn.dot_product_attention(q, k, v, is_causal=True, return_residual=True)
    oj, rj = jax.nn.dot_product_attention(q, k, v, is_causal=True, return_residual=True)
    assert_same((o, r), (oj, rj), rtol=1e-5, atol=1e-6)
    qb = q.astype(jjnp.bfloat16)
    kb, vb = k.astype(jjnp.bfloat16), v.astype(jjnp.bfloat16)
    _same_lowp(nn.dot_product_attention(qb, kb, vb), jax.nn.dot_product_attention(qb, kb, vb),
               tol=3e-2)
    with pytest.raises(ValueError, match="dtype"):
        nn.dot_product_attention(q, k, v.astype(np.float16))
    with pytest.raises(ValueError, match="multiple"):
        nn.dot_product_attention(q[:, :, :1].repeat(3, 2), k, v)
    with pytest.raises(ValueError, match="mask dtype"):
        nn.dot_product_attention(q, k, v, mask=np.ones((1, 1, 3, 4), np.float32))


# ============================================================================ initializers

KEYS = {"typed": (fluxion.random.key, jax.random.key), "raw": (fluxion.random.PRNGKey,
                                                              jax.random.PRNGKey)}

INITS = [
    ("zeros", None, (4, 5)),
    ("constant", (-0.25,), (4, 5)),
    ("uniform", (), (4, 5)),
    ("uniform", (2.5,), (2, 3, 4)),
    ("normal", (), (4, 5)),
    ("truncated_normal", (), (4, 5)),
    ("truncated_normal", (1.0, None, -1.0, 0.5), (4, 5)),
    ("glorot_uniform", (), (4, 5)),
    ("glorot_normal", (), (2, 3, 4)),
    ("he_uniform", (), (4, 5)),
    ("he_normal", (), (2, 3, 4)),
    ("lecun_uniform", (), (4, 5)),
    ("lecun_normal", (), (2, 3, 4)),
    ("variance_scaling", (0.5, "fan_out", "normal"), (4, 5)),
    ("variance_scaling", (1.0, "fan_in", "uniform"), (4, 5), np.complex64),
    ("variance_scaling", (3.0, "fan_geo_avg", "uniform", 0, (1, 2)), (2, 3, 4)),
    ("variance_scaling", (1.0, "fan_avg", "truncated_normal", -2, -1, 0), (2, 3, 4)),
]


@pytest.mark.parametrize("i", range(len(INITS)), ids=[c[0] for c in INITS])
def test_initializers_match_jax(i):
    name, args, shape, *dtype = INITS[i]
    fk, jk = KEYS["typed" if i % 2 == 0 else "raw"]   # both key kinds, alternately
    ours, theirs = getattr(finit, name), getattr(jinit, name)
    if args is not None:
        ours, theirs = ours(*args), theirs(*args)
    a, b = ours(fk(3), shape, *dtype), theirs(jk(3), shape, *dtype)
    if dtype:
        assert_same(a, b, rtol=1e-6, atol=1e-6)
    else:
        assert_same(a, b)  # bit-identical: same random stream, same arithmetic


def test_initializer_aliases():
    assert finit.xavier_uniform is finit.glorot_uniform
    assert finit.xavier_normal is finit.glorot_normal
    assert finit.kaiming_uniform is finit.he_uniform
    assert finit.kaiming_normal is finit.he_normal


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_initializer_dtypes(dtype):
    dt = jjnp.dtype(dtype)
    for name in ("normal", "uniform", "he_normal"):
        a = getattr(finit, name)()(fluxion.random.key(5), (4, 5), dt)
        b = getattr(jinit, name)()(jax.random.key(5), (4, 5), dt)
        assert_same(a, b, err_msg=name)
    a = finit.normal(dtype=dt)(fluxion.random.key(5), (4, 5))          # builder default dtype
    assert_same(a, jinit.normal(dtype=dt)(jax.random.key(5), (4, 5)))


def test_initializers_x64_and_complex(x64):
    for name in ("glorot_normal", "he_uniform"):
        a = getattr(finit, name)()(fluxion.random.key(2), (4, 5))
        b = getattr(jinit, name)()(jax.random.key(2), (4, 5))
        assert_same(a, b, err_msg=name)
    for dist in ("truncated_normal",):
        a = finit.variance_scaling(1.0, "fan_in", dist)(fluxion.random.key(2), (4, 5),
                                                         np.complex64)
        b = jinit.variance_scaling(1.0, "fan_in", dist)(jax.random.key(2), (4, 5), np.complex64)
        assert_same(a, b, rtol=1e-6, atol=1e-6, err_msg=dist)


ORTHO = [((4, 4), -1, "typed"), ((4, 5), -1, "raw"), ((5, 4), -1, "typed"),
         ((2, 3, 4), -1, "typed"), ((2, 3, 4), 0, "raw"), ((2, 3, 4), 1, "typed")]


@pytest.mark.parametrize("shape,column_axis,keykind", ORTHO)
def test_orthogonal_matches_jax(shape, column_axis, keykind):
    fk, jk = KEYS[keykind]
    a = finit.orthogonal(1.5, column_axis)(fk(11), shape)
    b = jinit.orthogonal(1.5, column_axis)(jk(11), shape)
    assert_same(a, b, rtol=1e-5, atol=2e-6)
    cols = shape[column_axis]
    mat = np.moveaxis(np.asarray(a), column_axis, -1).reshape(-1, cols) / 1.5
    small = min(mat.shape)
    gram = mat.T @ mat if mat.shape[0] >= mat.shape[1] else mat @ mat.T
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-5)


def test_orthogonal_larger_and_x64(x64):
    a = finit.orthogonal()(fluxion.random.key(0), (24, 16))
    b = jinit.orthogonal()(jax.random.key(0), (24, 16))
    assert_same(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(3, 4, 5), (3, 3, 4, 5), (1, 3, 2, 4, 5)])
def test_delta_orthogonal(shape):
    a = finit.delta_orthogonal(0.5)(fluxion.random.key(4), shape)
    b = jinit.delta_orthogonal(0.5)(jax.random.key(4), shape)
    assert_same(a, b, rtol=1e-5, atol=2e-6)


def test_initializer_errors():
    key, jkey = fluxion.random.key(0), jax.random.key(0)
    with pytest.raises(ValueError, match="2D"):
        finit.orthogonal()(key, (3,))
    with pytest.raises(ValueError, match="3D, 4D or 5D"):
        finit.delta_orthogonal()(key, (3, 3))
    with pytest.raises(ValueError, match="fan_in"):
        finit.delta_orthogonal()(key, (3, 4, 2))
    with pytest.raises(ValueError, match="in_axis"):
        finit.glorot_uniform()(key, (3,))
    with pytest.raises(ValueError, match="mode"):
        finit.variance_scaling(1.0, "fan_bad", "normal")(key, (2, 2))
    with pytest.raises(ValueError, match="distribution"):
        finit.variance_scaling(1.0, "fan_in", "cauchy")(key, (2, 2))
    assert_same(finit.orthogonal()(key, (0, 3)), jinit.orthogonal()(jkey, (0, 3)))
    assert isinstance(finit.he_normal(), finit.Initializer)


def test_initializers_under_jit():
    init = finit.glorot_normal()
    a = fluxion.jit(lambda k: init(k, (4, 5)))(fluxion.random.key(9))
    assert_same(a, jinit.glorot_normal()(jax.random.key(9), (4, 5)), rtol=1e-6, atol=1e-7)
    o = fluxion.jit(lambda k: finit.orthogonal()(k, (3, 3)))(fluxion.random.key(9))
    assert_same(o, jinit.orthogonal()(jax.random.key(9), (3, 3)), rtol=1e-5, atol=2e-6)

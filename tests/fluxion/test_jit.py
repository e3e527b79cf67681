"""fluxion.jit against its identity (jit(f)(x) == f(x)) and against jax.jit 0.10.2.

Static and donated arguments, pytrees, kwargs, closures, AOT (.trace/.lower/.compile),
make_jaxpr text, eval_shape, the compile caches (in memory, explain-misses, persistent on disk)
and the device helpers.
"""

from __future__ import annotations

import collections
import logging
import os
import re
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _compare import assert_same, x64_both

import fluxion
import fluxion.numpy as fnp
from fluxion import lax as flax

X = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
Y = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
I = np.arange(6, dtype=np.int32).reshape(2, 3)


# ------------------------------------------------------------------------------ identity

def _mlp(m):
    def f(x, w):
        h = m.tanh(x @ w)
        return m.sum(h * h, axis=-1) + m.mean(h)
    return f


FUNCS = {
    "arith": lambda m: (lambda x, y: x * y + 2.0 * x - y / 3.0),
    "trans": lambda m: (lambda x, y: m.exp(m.sin(x)) + m.log(m.abs(y) + 1.0)),
    "where": lambda m: (lambda x, y: m.where(x > y, x, y * 2)),
    "reduce": lambda m: (lambda x, y: (m.sum(x, axis=0), m.max(y), m.mean(x * y, axis=1))),
    "shape": lambda m: (lambda x, y: m.concatenate([x.reshape(3, 2), y.T], axis=1).ravel()),
    "dot": lambda m: (lambda x, y: m.dot(x, y.T).sum() + m.matmul(x.T, y)),
    "index": lambda m: (lambda x, y: x[0] + y[:, 1].sum() + x[1, ::2].mean()),
    "int": lambda m: (lambda x, y: (x * 3).astype(m.int32) // 2 + 1),
    "cmp": lambda m: (lambda x, y: ((x < y) | (x > 0.5)).astype(m.float32)),
    "mlp": lambda m: (lambda x, y: _mlp(m)(x, y.T)),
    "scalar_out": lambda m: (lambda x, y: m.sum(x) * 2),
    "const": lambda m: (lambda x, y: x + m.ones(3) + m.arange(3.0)),
}


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_jit_equals_eager_and_jax(name):
    f, g = FUNCS[name](fnp), FUNCS[name](jnp)
    eager = f(X, Y)
    jitted = fluxion.jit(f)(X, Y)
    theirs = jax.jit(g)(X, Y)
    assert_same(jitted, eager, rtol=1e-6, atol=1e-6)
    assert_same(jitted, theirs, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("args", [(1.0,), (2,), (True,), (np.float32(1.5),), (np.int32(3),),
                                  (np.ones(3, np.float16),), ([1.0, 2.0],)], ids=repr)
def test_python_and_numpy_arguments(args):
    f = lambda x: x * 2 + 1
    if isinstance(args[0], list):
        with pytest.raises(TypeError):
            fluxion.jit(f)(*args)
        with pytest.raises(TypeError):
            jax.jit(f)(*args)
        return
    assert_same(fluxion.jit(f)(*args), jax.jit(f)(*args))


def test_weak_type_outputs():
    f = lambda x: x + 1
    assert_same(fluxion.jit(f)(1.0), jax.jit(f)(1.0))
    assert_same(fluxion.jit(lambda: 2.0)(), jax.jit(lambda: 2.0)())
    assert_same(fluxion.jit(lambda x: x)(3), jax.jit(lambda x: x)(3))


# ------------------------------------------------------------------------------ static args

def test_static_argnums_and_argnames():
    calls = []

    def f(x, n, *, mode="add"):
        calls.append(n)
        return x + n if mode == "add" else x * n

    jf = fluxion.jit(f, static_argnums=1, static_argnames="mode")
    jg = jax.jit(f, static_argnums=1, static_argnames="mode")
    assert_same(jf(X, 2), jg(X, 2))
    assert_same(jf(X, 3, mode="mul"), jg(X, 3, mode="mul"))
    n = len(calls)
    jf(X, 2)
    jf(X, 3, mode="mul")
    assert len(calls) == n  # no retrace
    jf(X, 4)
    assert len(calls) == n + 1


def test_static_argnames_inferred_from_argnums_and_back():
    def f(x, k):
        return x * k

    for jf in (fluxion.jit(f, static_argnums=1), fluxion.jit(f, static_argnames="k")):
        assert_same(jf(X, 3), jax.jit(f, static_argnums=1)(X, 3))
        assert_same(jf(X, k=3), jax.jit(f, static_argnames="k")(X, k=3))


def test_static_argument_must_be_hashable():
    f = fluxion.jit(lambda x, s: x, static_argnums=1)
    with pytest.raises((TypeError, ValueError), match="hash"):
        f(X, [1, 2])


def test_static_python_control_flow():
    def f(x, flag):
        return x * 2 if flag else -x
    jf = fluxion.jit(f, static_argnums=(1,))
    assert_same(jf(X, True), jax.jit(f, static_argnums=(1,))(X, True))
    assert_same(jf(X, False), jax.jit(f, static_argnums=(1,))(X, False))


# ------------------------------------------------------------------------------ donation

def test_donate_argnums():
    f = fluxion.jit(lambda x, y: x + y, donate_argnums=0)
    x = fnp.asarray(X)
    out = f(x, Y)
    assert_same(out, X + Y)
    assert x.is_deleted()
    with pytest.raises(RuntimeError, match="(?i)delet|donat"):
        f(x, Y)
    with pytest.raises(RuntimeError, match="(?i)delet|donat"):
        np.asarray(x)
    assert "deleted" in repr(x)


def test_donate_argnames():
    f = fluxion.jit(lambda x, y: x * y, donate_argnames="y")
    y = fnp.asarray(Y)
    out = f(X, y=y)
    assert_same(out, X * Y, rtol=1e-7)
    assert y.is_deleted()
    with pytest.raises(RuntimeError):
        y + 1


def test_donated_buffers_go_to_outputs_of_their_shape_and_dtype_like_jax():
    # JAX pairs a donated input with the first output of its shape and dtype (never with an
    # int32 output of the same byte size, as equinox's filter_jit marker is) and warns about
    # donated inputs no output fits
    import warnings

    def run(lib, m):
        f = lib.jit(lambda d: (m.array(0), d["x"] + 1), donate_argnums=0)
        x = m.asarray(np.float32(0.0))
        ptr = x.unsafe_buffer_pointer()
        marker, y = f({"x": x})
        g = lib.jit(lambda a, b: a + m.sum(b), donate_argnums=(0, 1))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            g(m.asarray(np.float32(1.0)), m.ones((10,)))
        msgs = [str(i.message).split("\n")[0] for i in w if "donated" in str(i.message)]
        return (x.is_deleted(), y.unsafe_buffer_pointer() == ptr,
                marker.unsafe_buffer_pointer() == ptr, msgs)

    ours, theirs = run(fluxion, fnp), run(jax, jnp)
    assert ours == theirs == (True, True, False,
                              ["Some donated buffers were not usable: float32[10]."])


def test_donated_buffer_reuse_in_subprocess():
    code = textwrap.dedent("""
        import fluxion, fluxion.numpy as jnp
        f = fluxion.jit(lambda x: x * 2, donate_argnums=0)
        x = jnp.ones(4)
        f(x)
        for g in (lambda: f(x), lambda: x + 1, lambda: float(x.sum()), lambda: x.tolist()):
            try:
                g()
            except Exception as e:
                print(type(e).__name__)
        print("alive")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.split()
    assert lines[-1] == "alive" and len(lines) == 5, r.stdout
    assert all("Error" in ln for ln in lines[:-1]), r.stdout


# ------------------------------------------------------------------------------ pytrees

Point = collections.namedtuple("Point", ["x", "y"])


def test_pytrees_in_and_out():
    def f(tree):
        a, b = tree["pair"]
        p = tree["point"]
        return {"sum": a + b, "pt": Point(p.x * 2, p.y), "none": None, "list": [a, (b,)]}

    tree = {"pair": (X, Y), "point": Point(I, 1.0), "extra": None}
    ours, theirs = fluxion.jit(f)(tree), jax.jit(f)(tree)
    assert isinstance(ours["pt"], Point) and ours["none"] is None
    assert isinstance(ours["list"], list) and isinstance(ours["list"][1], tuple)
    assert_same(ours, theirs)


def test_kwargs_and_defaults():
    def f(x, y=2.0, *, z):
        return x * y + z

    jf, jg = fluxion.jit(f), jax.jit(f)
    assert_same(jf(X, z=1.0), jg(X, z=1.0))
    assert_same(jf(X, Y, z=I), jg(X, Y, z=I))
    assert_same(jf(x=X, y=Y, z=0), jg(x=X, y=Y, z=0))
    with pytest.raises(TypeError):
        jf(X)


def test_closure_over_arrays_is_a_constant():
    c = fnp.asarray(X) * 3
    jc = jnp.asarray(X) * 3
    assert_same(fluxion.jit(lambda y: y + c)(Y), jax.jit(lambda y: y + jc)(Y))
    text = fluxion.make_jaxpr(lambda y: y + c)(Y)
    assert "f32[2,3]" in str(text)


def test_no_outputs_and_unused_inputs():
    assert fluxion.jit(lambda x: None)(X) is None
    assert fluxion.jit(lambda x: ())(X) == ()
    assert_same(fluxion.jit(lambda x, y: y)(X, Y), Y)


# ------------------------------------------------------------------------------ AOT

def test_lower_as_text_and_compile():
    f = lambda x, y: fnp.sin(x) * y
    lowered = fluxion.jit(f).lower(X, Y)
    text = lowered.as_text()
    assert "stablehlo" in text and "func.func public @main" in text
    assert "tensor<2x3xf32>" in text
    compiled = lowered.compile()
    assert_same(compiled(X, Y), jax.jit(lambda x, y: jnp.sin(x) * y)(X, Y))
    with pytest.raises(TypeError):
        compiled(I, Y)  # wrong dtype
    with pytest.raises(TypeError):
        compiled(X[0], Y)  # wrong shape
    with pytest.raises(TypeError):
        compiled(X)  # wrong arity


def test_lower_with_shape_dtype_struct():
    spec = fluxion.ShapeDtypeStruct((2, 3), np.float32)
    lowered = fluxion.jit(lambda x: x * 2).lower(spec)
    assert "tensor<2x3xf32>" in lowered.as_text()
    assert_same(lowered.compile()(X), X * 2)


def test_trace_jaxpr_and_eval_shape():
    f = lambda x, y: (x @ y.T, fnp.sum(x))
    traced = fluxion.jit(f).trace(X, Y)
    text = str(traced.jaxpr)
    assert "dot_general" in text and "reduce_sum" in text
    ours = fluxion.jit(f).eval_shape(X, Y)
    theirs = jax.eval_shape(lambda x, y: (x @ y.T, jnp.sum(x)), X, Y)
    for o, t in zip(ours, theirs):
        assert (o.shape, o.dtype) == (t.shape, t.dtype)
    o = fluxion.eval_shape(f, fluxion.ShapeDtypeStruct((4, 5), np.float16),
                           fluxion.ShapeDtypeStruct((7, 5), np.float16))
    assert o[0].shape == (4, 7) and o[0].dtype == np.float16 and o[1].shape == ()


def test_eval_shape_weak_type():
    o = fluxion.eval_shape(lambda x: x * 2, 1.0)
    t = jax.eval_shape(lambda x: x * 2, 1.0)
    assert (o.shape, o.dtype, o.weak_type) == (t.shape, t.dtype, t.weak_type)


# ------------------------------------------------------------------------------ make_jaxpr

def _jaxpr_text(f, *args):
    return str(fluxion.make_jaxpr(f)(*args)), str(jax.make_jaxpr(f.__jax__ if hasattr(
        f, "__jax__") else f)(*args))


@pytest.mark.parametrize("case", ["sin_mul", "add_scalar", "convert", "reduce", "tuple_out"])
def test_make_jaxpr_text_matches_jax(case):
    pairs = {
        "sin_mul": (lambda x: fnp.sin(x) * 2, lambda x: jnp.sin(x) * 2),
        "add_scalar": (lambda x: x + 1.0, lambda x: x + 1.0),
        "convert": (lambda x: flax.convert_element_type(x, np.int32),
                    lambda x: jax.lax.convert_element_type(x, np.int32)),
        "reduce": (lambda x: flax.reduce_sum(x, (1,)), lambda x: jax.lax.reduce_sum(x, (1,))),
        "tuple_out": (lambda x: (flax.neg(x), flax.exp(x)), lambda x: (jax.lax.neg(x),
                                                                     jax.lax.exp(x))),
    }
    f, g = pairs[case]
    ours = str(fluxion.make_jaxpr(f)(X))
    theirs = str(jax.make_jaxpr(g)(X))
    if " out_sharding=None" in theirs:  # a newer JAX param we do not have: layout differs too
        ours, theirs = (" ".join(t.replace(" out_sharding=None", "").replace(";", " ").split())
                        for t in (ours, theirs))
    assert ours == theirs, f"\nours:\n{ours}\njax:\n{theirs}"


def test_make_jaxpr_nested_jit_is_one_equation():
    inner = fluxion.jit(lambda x: fnp.sin(x) + 1.0)
    text = str(fluxion.make_jaxpr(lambda x: inner(x) * 2)(X))
    lines = [ln.strip() for ln in text.splitlines()]
    assert sum(1 for ln in lines if " jit[" in ln or "= jit[" in ln) == 1, text
    assert "name=<lambda>" in text or "name=" in text
    assert "sin" in text  # the inner program is printed inside the jit equation
    outer_eqns = [ln for ln in lines if "=" in ln and ln.startswith(("b:", "c:", "d:"))]
    assert outer_eqns, text


def test_make_jaxpr_constvars_and_literals():
    c = fnp.ones((2, 3))
    text = str(fluxion.make_jaxpr(lambda x: x * c + 2.0)(X))
    assert text.startswith("{ lambda a:f32[2,3]; b:f32[2,3]. let")
    assert "2.0:f32[]" in text


# ------------------------------------------------------------------------------ caches

def test_second_call_does_not_retrace():
    traces = []

    @fluxion.jit
    def f(x):
        traces.append(1)
        return x * 2

    f(X)
    f(X)
    f(fnp.asarray(X))
    assert len(traces) == 1
    f(I)
    assert len(traces) == 2
    f(X[0])
    assert len(traces) == 3
    f(1.0)
    f(2.0)
    assert len(traces) == 4  # weak scalars share one executable


def test_x64_toggle_recompiles():
    traces = []

    @fluxion.jit
    def f(x):
        traces.append(1)
        return x + 1

    r32 = f(1.0)
    assert r32.dtype == np.float32
    with x64_both():
        r64 = f(1.0)
        assert r64.dtype == np.float64
        assert_same(r64, jax.jit(lambda x: x + 1)(1.0))
    assert len(traces) == 2
    assert f(1.0).dtype == np.float32


def _explain_scenario(lib, m, rank_promotion):
    """Calls that re-trace in various ways; run once with fluxion and once with jax, the same
    source lines give the same call sites in both logs."""
    def f(x, y):
        return x + y

    def h(x, y=None):  # a default: keyword calls take the general path (as in JAX)
        return lib.tree_util.tree_leaves(x)[0] + y

    lib.jit(f)(m.ones(3), m.ones(3))                       # never seen
    for _ in range(3):
        lib.jit(f)(m.ones(3), m.ones(3))                   # same f in a loop: no miss
    lib.jit(f)(m.ones(2), m.ones(2))                       # new shapes
    lib.jit(f)(m.ones(2, m.int32), m.ones(2, m.int32))     # new dtypes
    fs = [lambda x: x * 2 for _ in range(3)]               # kept alive: distinct ids
    for g in fs:
        lib.jit(g)(m.ones(3))                              # a new function on the same line
    with rank_promotion("raise"):
        lib.jit(h)(m.ones(3), m.ones(3))
        lib.jit(h)((m.ones(3),), m.ones(3))                # new pytree
        lib.jit(h)({"a": m.ones(3)}, m.ones(3))
        lib.jit(h)({"a": m.ones(3)}, y=m.ones(3))          # keyword instead of positional
    lib.jit(h)(m.ones(3), m.ones(3))                       # only the trace context differs


def _miss_logs(caplog, lib, m, rank_promotion, flag_module):
    caplog.clear()
    flag_module.update("jax_explain_cache_misses", True)
    try:
        with caplog.at_level(logging.WARNING):
            _explain_scenario(lib, m, rank_promotion)
    finally:
        flag_module.update("jax_explain_cache_misses", False)
    text = "\n".join(r.getMessage() for r in caplog.records if "TRACING CACHE MISS" in
                     r.getMessage())
    return re.sub(r"id=\d+", "id=N", text)


def test_explain_cache_misses_like_jax(caplog):
    from fluxion.core.config import numpy_rank_promotion
    ours = _miss_logs(caplog, fluxion, fnp, numpy_rank_promotion, fluxion.config)
    theirs = _miss_logs(caplog, jax, jnp, jax.numpy_rank_promotion, jax.config)
    assert ours.count("TRACING CACHE MISS") == 11, ours
    assert ours == theirs, f"fluxion:\n{ours}\n\njax:\n{theirs}"


def test_explain_cache_misses_static_and_weak(caplog):
    def g(x, n):
        return x * n

    def g2(x, n):
        return x * n

    k = fluxion.jit(g, static_argnums=1)
    k(fnp.ones(3), 2)
    fluxion.jit(g2)(fnp.ones(3), fnp.ones(3))
    fluxion.config.update("jax_explain_cache_misses", True)
    try:
        with caplog.at_level(logging.WARNING, logger="fluxion"):
            k(fnp.ones(3), 3)
            fluxion.jit(g2)(1.0, fnp.ones(3))
    finally:
        fluxion.config.update("jax_explain_cache_misses", False)
    first, second = [r.getMessage() for r in caplog.records]
    assert "for g defined at" in first and "different input pytree" in first, first
    assert ("at input path [0][1], now static argument 3 and before static argument 2, so the "
            "static argument values do not match") in first, first
    assert "* at x, now f32[]{weak_type=True} and before f32[3]{weak_type=False}" in second, second


def test_explain_skips_fluxion_internal_functions(caplog):
    fluxion.config.update("jax_explain_cache_misses", True)
    try:
        with caplog.at_level(logging.WARNING, logger="fluxion"):
            fluxion.random.split(fluxion.random.key(3), 5)
    finally:
        fluxion.config.update("jax_explain_cache_misses", False)
    assert not [r for r in caplog.records if "TRACING CACHE MISS" in r.getMessage()]


@pytest.mark.clears_caches
def test_persistent_cache(tmp_path):
    code = textwrap.dedent(f"""
        import os, fluxion, fluxion.numpy as jnp
        from fluxion.backend import dispatch
        fluxion.config.update("jax_enable_compilation_cache", True)
        fluxion.config.update("jax_compilation_cache_dir", {str(tmp_path)!r})
        f = fluxion.jit(lambda x: jnp.tanh(x) * 3 + 1)
        print(f(jnp.arange(4.0)).tolist())
        dispatch.clear_caches()
        g = fluxion.jit(lambda x: jnp.tanh(x) * 3 + 1)
        print(g(jnp.arange(4.0)).tolist())
        print(sorted(os.listdir({str(tmp_path)!r})))
    """)
    r1 = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r1.returncode == 0, r1.stderr[-2000:]
    out1 = r1.stdout.splitlines()
    assert out1[0] == out1[1]
    files = [f for f in os.listdir(tmp_path) if not f.startswith(".")]
    assert files, "nothing written to the persistent cache"
    assert not [f for f in os.listdir(tmp_path) if "tmp" in f.lower()], os.listdir(tmp_path)
    contents = {f: (tmp_path / f).read_bytes() for f in files}
    r2 = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r2.returncode == 0, r2.stderr[-2000:]
    assert r2.stdout.splitlines()[0] == out1[0]
    for f, data in contents.items():  # reused (a hit refreshes the mtime: LRU), not replaced
        assert (tmp_path / f).read_bytes() == data
    assert sorted(x for x in os.listdir(tmp_path) if not x.startswith(".")) == sorted(files)
    # a corrupt entry is ignored (recompiled), not fatal
    for f in files:
        (tmp_path / f).write_bytes(b"garbage")
    r3 = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r3.returncode == 0, r3.stderr[-2000:]
    assert r3.stdout.splitlines()[0] == out1[0]


def test_disable_jit_flag():
    traces = []

    def f(x):
        traces.append(type(x).__name__)
        return x * 2

    fluxion.config.update("jax_disable_jit", True)
    try:
        out = fluxion.jit(f)(fnp.asarray(X))
    finally:
        fluxion.config.update("jax_disable_jit", False)
    assert_same(out, X * 2)
    assert traces == ["Array"]


# ------------------------------------------------------------------------------ devices

def test_devices_and_transfer():
    devs = fluxion.devices()
    assert len(devs) == fluxion.device_count() == len(fluxion.local_devices()) >= 1
    # the platform the suite runs Fluxion on (--platform; the reference jax stays on the CPU)
    assert fluxion.default_backend() == os.environ.get("FLUXION_TEST_PLATFORM", "cpu")
    assert jax.default_backend() == "cpu"
    assert fluxion.local_device_count() == fluxion.device_count()
    assert fluxion.process_index() == 0 and fluxion.process_count() == 1
    x = fluxion.device_put(X)
    assert isinstance(x, fluxion.Array)
    assert_same(x, jax.device_put(X))
    x2 = fluxion.device_put(X, devs[0])
    assert x2.devices() == {devs[0]}
    assert_same(fluxion.device_put(1.5), jax.device_put(1.5))
    tree = fluxion.device_put({"a": X, "b": (I, 2.0)})
    assert isinstance(tree["b"][0], fluxion.Array)
    back = fluxion.device_get(tree)
    assert isinstance(back["a"], np.ndarray) and back["a"].dtype == np.float32
    np.testing.assert_array_equal(back["b"][0], I)
    assert fluxion.device_get(3) == 3
    assert_same(fluxion.device_put(fnp.asarray(X)), X)


def test_float0_outputs_and_arguments_under_jit():
    # integer tangents are float0: a jitted jvp returns them as NumPy float0 zeros, as jax does
    x = np.ones(3, np.float32)
    f = lambda x: (x * 2, fnp.arange(3), 5)
    ours = fluxion.jit(lambda x: fluxion.jvp(f, (x,), (x,)))(x)
    theirs = jax.jit(lambda x: jax.jvp(lambda x: (x * 2, jax.numpy.arange(3), 5), (x,), (x,)))(x)
    for o, t in zip(fluxion.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        assert o.dtype == t.dtype and np.shape(o) == np.shape(t)
    assert isinstance(ours[1][1], np.ndarray) and ours[1][1].dtype == fluxion.dtypes.float0
    np.testing.assert_array_equal(np.asarray(ours[1][0]), np.asarray(theirs[1][0]))
    # a float0 argument passes through a jitted function
    z = np.zeros((2, 2), fluxion.dtypes.float0)
    out = fluxion.jit(lambda t, y: (t, y + 1))(z, 1.0)
    assert out[0].dtype == fluxion.dtypes.float0 and out[0].shape == (2, 2)


def test_dtypes_module_matches_jax():
    assert set(fluxion.dtypes.__all__) == {n for n in dir(jax.dtypes) if not n.startswith("_")}
    assert fluxion.dtypes.float0 == jax.dtypes.float0
    assert fluxion.dtypes.canonicalize_dtype(np.float64) == jax.dtypes.canonicalize_dtype(np.float64)
    assert fluxion.dtypes.result_type(np.int8, 1.0) == jax.dtypes.result_type(np.int8, 1.0)
    assert fluxion.dtypes.issubdtype(fluxion.random.key(0).dtype, fluxion.dtypes.prng_key)


def test_varargs_and_multi_output_calls_hit_the_dispatcher_cache():
    # ``lambda *a`` and several outputs take the Spec-keyed dispatcher after the first call;
    # the results, the trace count and the retrace on a new arity/dtype/flag are as in jax
    def run(lib, m):
        traces = []

        def f(*a):
            traces.append(len(a))
            return a[0] * 2, (a[-1] + 1, a[0].dtype.name)[0]

        def g(a, b):
            traces.append(-1)
            return a - b, {"s": a * b}

        jf, jg = lib.jit(f), lib.jit(g)
        x, y = m.arange(3.0), m.ones(3, np.int32)
        outs = [jf(x, y), jf(x, y), jf(x), jf(x, x, x), jf(y, x), jf(x, y),
                jg(x, x), jg(x, x), jg(x, 2.0), jf(np.arange(3.0), y)]
        return traces, [np.asarray(o) for o in lib.tree_util.tree_leaves(outs)]

    got, want = run(fluxion, fnp), run(jax, jnp)
    assert got[0] == want[0]
    for o, w in zip(got[1], want[1]):
        assert_same(o, w)


def test_small_closed_over_constants_are_embedded_in_the_module():
    # as in JAX: small numeric constants become module constants (no extra parameter); signed
    # zeros survive; large ones stay parameters; results match jax either way
    small = np.array([-0.0, 0.0, 1.5]).astype(np.float32)
    zeros = np.array([-0.0, 0.0], np.float32)     # equal by ==, not bitwise: stays a parameter
    splat = np.full((2, 3), 7, np.int32)
    big = np.arange(20000.0, dtype=np.float32)    # 80 KB

    def f(lib, m):
        return lambda x: (x * m.asarray(small), 1.0 / (x[:1] * small), splat + 1,
                          x.sum() + m.asarray(big), 1.0 / (x[:2] * zeros))

    x = np.array([1.0, 2.0, 3.0], np.float32)
    ours, theirs = fluxion.jit(f(fluxion, fnp))(x), jax.jit(f(jax, jnp))(x)
    for o, t in zip(ours, theirs):
        assert_same(o, t)
    head = fluxion.jit(f(fluxion, fnp)).lower(x).as_text().split("func.func public @main(")[1]
    params = head.split(")")[0]
    assert params.count("tensor<") == 3 and "tensor<20000xf32>" in params
    lowered = fluxion.jit(lambda x: x * small).lower(x)
    assert_same(lowered.compile()(x), x * small)

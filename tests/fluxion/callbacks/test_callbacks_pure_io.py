"""``fluxion.pure_callback`` and ``fluxion.experimental.io_callback`` against JAX: values, dtypes,
the vmap methods, control flow, ordering, and the errors (wrong shapes/dtypes, exceptions)."""

from __future__ import annotations

import numpy as np
import pytest
from _compare import assert_close

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion.experimental import io_callback

jax = pytest.importorskip("jax")
from jax.experimental import io_callback as jax_io_callback  # noqa: E402

F32 = np.float32


def _sin_prog(lib):
    def f(x):
        y = lib.pure_callback(lambda v: np.sin(np.asarray(v)).astype(F32),
                              lib.ShapeDtypeStruct(x.shape, x.dtype), x)
        return y * 2 + x
    return f


@pytest.mark.parametrize("jit", [False, True])
def test_pure_callback_matches_jax(jit):
    x = np.linspace(-1, 1, 5, dtype=F32)
    ours = (fluxion.jit(_sin_prog(fluxion)) if jit else _sin_prog(fluxion))(x)
    theirs = (jax.jit(_sin_prog(jax)) if jit else _sin_prog(jax))(x)
    assert_close(ours, theirs, 1e-6)


def test_pure_callback_pytrees_and_kwargs():
    def prog(lib):
        def f(x, y):
            def cb(a, b, *, scale):
                return {"s": (np.asarray(a) + np.asarray(b["k"])) * scale,
                        "n": np.int32(np.asarray(a).size)}
            spec = {"s": lib.ShapeDtypeStruct((3,), F32), "n": lib.ShapeDtypeStruct((), np.int32)}
            return lib.pure_callback(cb, spec, x, {"k": y}, scale=np.float32(2.0))
        return lib.jit(f)
    x, y = np.arange(3, dtype=F32), np.ones(3, F32)
    assert_close(prog(fluxion)(x, y), prog(jax)(x, y), 0)


@pytest.mark.parametrize("method", ["sequential", "sequential_unrolled", "expand_dims",
                                    "broadcast_all", "legacy_vectorized"])
def test_pure_callback_vmap_methods(method):
    shapes = {fluxion: [], jax: []}

    def prog(lib):
        def cb(a, b):
            shapes[lib].append((np.shape(a), np.shape(b)))
            return (np.asarray(a) * 2 + np.asarray(b)).astype(F32)

        def f(x, y):
            return lib.pure_callback(cb, lib.ShapeDtypeStruct(x.shape, F32), x, y,
                                     vmap_method=method)
        return lib.vmap(f, in_axes=(0, None))
    x, y = np.arange(6, dtype=F32).reshape(3, 2), np.ones(2, F32)
    assert_close(prog(fluxion)(x, y), prog(jax)(x, y), 0)
    assert shapes[fluxion] == shapes[jax]


def test_pure_callback_vmap_without_method_raises_like_jax():
    for lib in (fluxion, jax):
        f = lib.vmap(lambda x: lib.pure_callback(np.sin, lib.ShapeDtypeStruct((), F32), x))
        with pytest.raises(NotImplementedError, match="vmap_method"):
            f(np.arange(3, dtype=F32))


def test_pure_callback_no_jvp_but_custom_jvp_works():
    for lib in (fluxion, jax):
        with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
            lib.grad(lambda x: lib.pure_callback(np.sin, lib.ShapeDtypeStruct((), F32), x))(
                F32(1.0))

    def prog(lib):
        @lib.custom_jvp
        def f(x):
            return lib.pure_callback(lambda v: np.sin(v).astype(F32),
                                     lib.ShapeDtypeStruct((), F32), x)

        @f.defjvp
        def f_jvp(p, t):
            return f(p[0]), lib.numpy.cos(p[0]) * t[0]
        return lib.jit(lib.grad(lambda x: f(x) * x))
    assert_close(prog(fluxion)(F32(0.7)), prog(jax)(F32(0.7)), 1e-6)


def test_pure_callback_in_scan_and_cond():
    def prog(lib):
        def body(c, x):
            y = lib.pure_callback(lambda a, b: (np.asarray(a) * np.asarray(b)).astype(F32),
                                  lib.ShapeDtypeStruct((), F32), c, x)
            return c + y, lib.lax.cond(y > 1, lambda v: v * 10, lambda v: -v, y)
        return lib.jit(lambda xs: lib.lax.scan(body, F32(1.0), xs))
    xs = np.arange(1, 5, dtype=F32)
    assert_close(prog(fluxion)(xs), prog(jax)(xs), 0)


@pytest.mark.parametrize("ret,what", [(np.ones(2, F32), "shape"), (np.ones(3, np.int32), "dtype"),
                                      ((np.ones(3, F32), np.ones(3, F32)), "number")])
@pytest.mark.parametrize("jit", [False, True])
def test_wrong_result_raises_naming_the_callback(ret, what, jit):
    def my_bad_callback(x):
        return ret
    f = lambda x: fluxion.pure_callback(my_bad_callback, fluxion.ShapeDtypeStruct((3,), F32), x)
    f = fluxion.jit(f) if jit else f
    with pytest.raises(RuntimeError, match=f"(?i)my_bad_callback.*{what}"):
        f(np.ones(3, F32))
    # JAX raises (as a runtime error) too
    g = jax.jit(lambda x: jax.pure_callback(my_bad_callback, jax.ShapeDtypeStruct((3,), F32), x))
    with pytest.raises(RuntimeError):
        g(np.ones(3, F32))
    assert fluxion.jit(lambda x: x * 2)(F32(2.0)).item() == 4.0


@pytest.mark.parametrize("jit", [False, True])
def test_exception_in_callback_propagates_as_itself(jit):
    def boom(x):
        raise ZeroDivisionError("no way")
    f = lambda x: fluxion.pure_callback(boom, fluxion.ShapeDtypeStruct((), F32), x)
    f = fluxion.jit(f) if jit else f
    with pytest.raises(ZeroDivisionError, match="no way"):
        f(F32(1.0))
    with pytest.raises(ZeroDivisionError):  # inside a loop body too
        fluxion.jit(lambda xs: lax.map(f, xs))(np.ones(2, F32))


def test_result_64bit_without_x64_raises_like_jax():
    for lib in (fluxion, jax):
        with pytest.raises(ValueError, match="64-bit"):
            lib.pure_callback(np.sin, lib.ShapeDtypeStruct((), np.float64), F32(1.0))


def test_invalid_vmap_method():
    with pytest.raises(ValueError, match="vmap_method"):
        fluxion.pure_callback(np.sin, fluxion.ShapeDtypeStruct((), F32), F32(1.0),
                              vmap_method="bogus")


def test_pure_callback_dead_code_removed_like_jax():
    calls = []

    def cb(x):
        calls.append(1)
        return x
    fluxion.jit(lambda x: (fluxion.pure_callback(cb, fluxion.ShapeDtypeStruct((), F32), x), x)[1])(
        F32(1.0))
    assert calls == []


# ------------------------------------------------------------------ io_callback

def _io_prog(lib, io, log, ordered):
    def rec(x):
        log.append(float(np.asarray(x)))
        return np.float32(len(log))

    def f(x):
        spec = lib.ShapeDtypeStruct((), F32)
        a = io(rec, spec, x, ordered=ordered)
        b = io(rec, spec, x + 1, ordered=ordered)
        c = lib.lax.cond(x > 0, lambda: io(rec, spec, x + 10, ordered=ordered), lambda: x)

        def body(carry, v):
            return carry + io(rec, spec, v, ordered=ordered), None
        d, _ = lib.lax.scan(body, F32(0), lib.numpy.arange(3.0) + 100)
        e = io(rec, spec, x + 1000, ordered=ordered)
        return a + b + c + d + e
    return f


@pytest.mark.parametrize("jit", [False, True])
def test_ordered_io_callback_runs_in_program_order(jit):
    logs = {}
    outs = {}
    for lib, io in ((fluxion, io_callback), (jax, jax_io_callback)):
        logs[lib] = []
        f = _io_prog(lib, io, logs[lib], True)
        f = lib.jit(f) if jit else f
        outs[lib] = f(F32(1.0))
    assert logs[fluxion] == logs[jax] == [1.0, 2.0, 11.0, 100.0, 101.0, 102.0, 1001.0]
    assert_close(outs[fluxion], outs[jax], 0)


def test_io_callback_is_never_dead_code():
    log = []
    f = fluxion.jit(lambda x: (io_callback(lambda v: log.append(1) or np.float32(0),
                                           fluxion.ShapeDtypeStruct((), F32), x), x)[1])
    f(F32(1.0))
    f(F32(2.0))
    assert log == [1, 1]


def test_io_callback_vmap():
    log = {fluxion: [], jax: []}

    def prog(lib, io):
        def f(x):
            return io(lambda v: log[lib].append(float(np.asarray(v))) or np.float32(v * 2),
                      lib.ShapeDtypeStruct((), F32), x)
        return lib.vmap(f)
    xs = np.arange(3, dtype=F32)
    assert_close(prog(fluxion, io_callback)(xs), prog(jax, jax_io_callback)(xs), 0)
    assert log[fluxion] == log[jax]
    for lib, io in ((fluxion, io_callback), (jax, jax_io_callback)):
        with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback"):
            lib.vmap(lambda x: io(np.sin, lib.ShapeDtypeStruct((), F32), x, ordered=True))(xs)
        with pytest.raises(ValueError, match="IO callbacks do not support JVP"):
            lib.grad(lambda x: io(np.sin, lib.ShapeDtypeStruct((), F32), x))(F32(1.0))


def test_callbacks_survive_garbage_collection():
    import gc

    def make():
        scale = np.float32(3.0)
        return fluxion.jit(lambda x: fluxion.pure_callback(
            lambda v: (np.asarray(v) * scale).astype(F32), fluxion.ShapeDtypeStruct((), F32), x))
    f = make()
    gc.collect()
    assert f(F32(2.0)).item() == 6.0
    assert jnp.asarray(f(F32(1.0))).item() == 3.0


def test_callback_module_text_alone_is_refused_not_crashed():
    from fluxion.backend import dispatch
    f = fluxion.jit(lambda x: (fluxion.debug.print("{}", x), x + 1)[1])
    text = str(f.lower(jnp.ones(2)).as_text())
    with pytest.raises(ValueError, match="host callbacks"):
        dispatch.compile_text(text)
    # the AOT path keeps its callables
    assert f.lower(jnp.ones(2)).compile()(jnp.ones(2)).tolist() == [2.0, 2.0]

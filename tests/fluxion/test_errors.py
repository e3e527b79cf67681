"""Errors are part of the API: traced values used as concrete ones, leaked tracers, shape and
dtype mismatches, nasty inputs that must raise (not crash the process), and import hygiene
(fluxion never imports the real ``jax``; ``import fluxion`` does not load jaxlib).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
from fluxion import errors

THIS_FILE = "test_errors.py"


def _line_of(marker: str) -> int:
    with open(__file__) as f:
        for i, line in enumerate(f, 1):
            if marker in line and "_line_of" not in line:
                return i
    raise AssertionError(marker)


# ------------------------------------------------------------------------------ concretization

def f_bool(x):
    return bool(x > 0)  # MARK-bool


def f_if(x):
    if x > 0:  # MARK-if
        return x
    return -x


def f_int(x):
    return int(x)  # MARK-int


def f_float(x):
    return float(x)  # MARK-float


def f_range(x):
    return sum(range(x))  # MARK-range


def f_list_index(x):
    return [1.0, 2.0, 3.0][x]  # MARK-listidx


def f_np_asarray(x):
    return np.asarray(x)  # MARK-asarray


CASES = [
    (f_bool, "MARK-bool", errors.TracerBoolConversionError, jax.errors.TracerBoolConversionError),
    (f_if, "MARK-if", errors.TracerBoolConversionError, jax.errors.TracerBoolConversionError),
    (f_int, "MARK-int", errors.ConcretizationTypeError, jax.errors.ConcretizationTypeError),
    (f_float, "MARK-float", errors.ConcretizationTypeError, jax.errors.ConcretizationTypeError),
    (f_range, "MARK-range", errors.TracerIntegerConversionError,
     jax.errors.TracerIntegerConversionError),
    (f_list_index, "MARK-listidx", errors.TracerIntegerConversionError,
     jax.errors.TracerIntegerConversionError),
    (f_np_asarray, "MARK-asarray", errors.TracerArrayConversionError,
     jax.errors.TracerArrayConversionError),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[1])
def test_concretization_errors(case):
    fn, marker, ours_cls, jax_cls = case
    arg = np.int32(2)
    with pytest.raises(jax_cls):
        jax.jit(fn)(arg)
    with pytest.raises(ours_cls) as info:
        fluxion.jit(fn)(arg)
    assert isinstance(info.value, TypeError)  # JAX's classes are TypeErrors too
    msg = str(info.value)
    assert "argument 'x'" in msg, msg
    assert f"{THIS_FILE}:{_line_of(marker)}" in msg, msg
    assert "static_argnums" in msg, msg
    assert "lax.cond" in msg or "jnp.where" in msg, msg


def test_concretization_names_the_argument_among_several():
    def f(a, b, c):
        return a + (1 if c > 0 else 2) * b

    with pytest.raises(errors.ConcretizationTypeError) as info:
        fluxion.jit(f)(1.0, 2.0, 3.0)
    assert "argument 'c'" in str(info.value)
    assert "argument 'a'" not in str(info.value)
    # and the way out works
    assert float(fluxion.jit(f, static_argnums=2)(1.0, 2.0, 3.0)) == 3.0


def test_concretization_errors_are_also_raised_by_make_jaxpr():
    with pytest.raises(errors.TracerBoolConversionError):
        fluxion.make_jaxpr(f_if)(1.0)


def test_error_classes_match_jax_hierarchy():
    assert issubclass(errors.TracerBoolConversionError, errors.ConcretizationTypeError)
    for name in ("ConcretizationTypeError", "TracerBoolConversionError",
                 "TracerIntegerConversionError", "TracerArrayConversionError"):
        assert issubclass(getattr(errors, name), TypeError), name
        assert issubclass(getattr(jax.errors, name), TypeError), name
    assert issubclass(errors.UnexpectedTracerError, Exception)


# ------------------------------------------------------------------------------ leaked tracers

_LEAK = []


def test_leaked_tracer_raises_unexpected_tracer_error():
    @fluxion.jit
    def leak(x):
        _LEAK.append(x)  # MARK-leak
        return x * 2

    leak(fnp.ones(3))
    t = _LEAK.pop()
    for use in (lambda: t + 1, lambda: fnp.sin(t), lambda: fluxion.jit(lambda v: v)(t),
                lambda: fnp.sum(t)):
        with pytest.raises(errors.UnexpectedTracerError) as info:
            use()
        msg = str(info.value)
        assert "leak" in msg.lower(), msg
        assert THIS_FILE in msg, msg  # where it was created or used


def test_leaked_tracer_in_concretization():
    @fluxion.jit
    def leak(x):
        _LEAK.append(x)
        return x

    leak(1.0)
    t = _LEAK.pop()
    with pytest.raises((errors.UnexpectedTracerError, errors.ConcretizationTypeError)):
        bool(t > 0)


# ------------------------------------------------------------------------------ shapes / dtypes

def test_shape_mismatch_names_function_shapes_and_line():
    with pytest.raises((TypeError, ValueError)) as info:
        fnp.add(fnp.ones(2), fnp.ones(3))  # MARK-shape
    msg = str(info.value)
    assert "add" in msg and "(2,)" in msg and "(3,)" in msg, msg
    assert f"{THIS_FILE}:{_line_of('MARK-shape')}" in msg, msg
    assert isinstance(info.value, TypeError)  # as JAX's
    with pytest.raises(TypeError):
        jnp.add(jnp.ones(2), jnp.ones(3))


def test_shape_mismatch_under_jit_names_the_user_line():
    def f(x, y):
        return x * y  # MARK-jitshape

    with pytest.raises((TypeError, ValueError)) as info:
        fluxion.jit(f)(np.ones(2, np.float32), np.ones(3, np.float32))
    msg = str(info.value)
    assert "(2,)" in msg and "(3,)" in msg, msg
    assert f"{THIS_FILE}:{_line_of('MARK-jitshape')}" in msg, msg


def test_lax_dtype_mismatch_names_dtypes():
    with pytest.raises(TypeError) as info:
        fluxion.lax.add(np.ones(2, np.float32), np.ones(2, np.int32))
    msg = str(info.value)
    assert "add" in msg and "float32" in msg and "int32" in msg and THIS_FILE in msg, msg


def test_matmul_shape_error():
    with pytest.raises((TypeError, ValueError)) as info:
        fnp.ones((2, 3)) @ fnp.ones((4, 5))
    msg = str(info.value)
    assert "(2, 3)" in msg and "(4, 5)" in msg and THIS_FILE in msg, msg


# ------------------------------------------------------------------------------ no crashes

CRASH_SCRIPT = textwrap.dedent("""
    import sys, numpy as np
    import fluxion, fluxion.numpy as jnp

    def attempt(name, fn):
        try:
            fn()
        except Exception as e:
            print(name, "raised", type(e).__name__, flush=True)
        else:
            print(name, "ok", flush=True)

    compiled = fluxion.jit(lambda x, y: x @ y).lower(np.ones((2, 3), np.float32),
                                                     np.ones((3, 4), np.float32)).compile()
    attempt("compiled_dtype", lambda: compiled(np.ones((2, 3), np.int32),
                                               np.ones((3, 4), np.float32)))
    attempt("compiled_shape", lambda: compiled(np.ones((3, 3), np.float32),
                                               np.ones((3, 4), np.float32)))
    attempt("compiled_weak", lambda: compiled(np.ones((2, 3), np.float32), 1.0))
    attempt("compiled_tree", lambda: compiled((np.ones((2, 3), np.float32),),
                                              np.ones((3, 4), np.float32)))
    f = fluxion.jit(lambda x: x + 1, donate_argnums=0)
    x = jnp.ones(3)
    f(x)
    attempt("donated_jit", lambda: f(x))
    attempt("donated_eager", lambda: x * 2)
    attempt("donated_host", lambda: np.asarray(x))
    attempt("donated_repr", lambda: repr(x))
    y = jnp.ones(3)
    y.delete()
    attempt("deleted_jit", lambda: fluxion.jit(lambda v: v * 2)(y))
    attempt("deleted_item", lambda: y.tolist())
    attempt("object_array", lambda: jnp.asarray(np.array([object()])))
    attempt("string", lambda: jnp.asarray("abc"))
    attempt("huge_int", lambda: jnp.asarray(2**80))
    attempt("bad_reshape", lambda: jnp.ones(6).reshape(4, 2))
    attempt("negative_shape", lambda: jnp.zeros((-1, 2)))
    attempt("bad_dtype", lambda: jnp.zeros(2, dtype="not-a-dtype"))
    attempt("jit_bad_return", lambda: fluxion.jit(lambda v: "str")(1.0))
    attempt("jit_bad_arg", lambda: fluxion.jit(lambda v: v)(object()))
    attempt("bf16_dot_int", lambda: jnp.ones(3, jnp.bfloat16) @ jnp.ones(3, jnp.int32))
    attempt("empty_reduce_max", lambda: jnp.max(jnp.ones((0,))))
    attempt("index_oob", lambda: jnp.ones(3)[5])
    print("survived", flush=True)
""")


def test_nasty_inputs_raise_python_exceptions_in_subprocess():
    r = subprocess.run([sys.executable, "-c", CRASH_SCRIPT], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, f"process died with {r.returncode}\n{r.stdout}\n{r.stderr[-3000:]}"
    out = dict(ln.split(" ", 1) for ln in r.stdout.splitlines() if " " in ln)
    assert "survived" in r.stdout, r.stdout
    for name in ("compiled_dtype", "compiled_shape", "compiled_tree", "donated_jit",
                 "donated_eager", "donated_host", "deleted_jit", "deleted_item", "object_array",
                 "string", "huge_int", "bad_reshape", "negative_shape", "bad_dtype",
                 "jit_bad_return", "jit_bad_arg", "empty_reduce_max"):
        assert out.get(name, "").startswith("raised"), (name, r.stdout)
    assert out["donated_repr"] == "ok"  # repr of a deleted array says so instead of failing
    assert out["index_oob"] == "ok"  # static out-of-bounds integer indices clamp, like JAX


# ------------------------------------------------------------------------------ import hygiene

def _fresh(code: str) -> str:
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_fluxion_never_imports_jax():
    out = _fresh("""
        import sys, pickle, numpy as np
        import fluxion, fluxion.numpy as jnp
        from fluxion import lax
        x = jnp.arange(6.0).reshape(2, 3)
        y = fluxion.jit(lambda a: jnp.tanh(a @ a.T) + 1)(x)
        np.asarray(y); repr(y); y.tolist(); float(y.sum()); y.block_until_ready()
        z = jnp.ones(3, jnp.bfloat16) * 2
        np.asarray(z); repr(z)
        np.from_dlpack(x)
        pickle.loads(pickle.dumps(x))
        fluxion.make_jaxpr(lambda a: a * 2)(x)
        fluxion.jit(lambda a: a).lower(x).compile()(x)
        fluxion.device_get(fluxion.device_put({"a": x}))
        x.devices(); x.sharding; x.is_fully_replicated
        try:
            fluxion.jit(lambda a: bool(a))(x)
        except Exception:
            pass
        g = fluxion.jit(lambda a: a + 1, donate_argnums=0)
        w = jnp.ones(2); g(w)
        try:
            np.asarray(w)
        except Exception:
            pass
        print(sorted(m for m in sys.modules if m == "jax" or m.startswith("jax.")))
    """)
    assert out.strip() == "[]", out


def test_import_fluxion_does_not_import_jaxlib():
    out = _fresh("""
        import sys
        import fluxion
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("jaxlib", "jax")))
    """)
    assert out.strip() == "[]", out


def test_jax_runtime_error_is_jaxlibs_class_as_in_jax():
    # orbax names jax.errors.JaxRuntimeError at import; it is jaxlib's class on both sides
    jax = pytest.importorskip("jax")
    assert fluxion.errors.JaxRuntimeError is jax.errors.JaxRuntimeError
    assert issubclass(fluxion.errors.JaxRuntimeError, RuntimeError)


def test_extend_ifrt_programs_is_jaxlibs_module_as_in_jax():
    # orbax imports jax.extend.ifrt_programs at import time; both are jaxlib's module
    import jax.extend.ifrt_programs as j

    import fluxion.extend
    import fluxion.extend.ifrt_programs as f
    assert f.ifrt_programs is j.ifrt_programs
    assert "ifrt_programs" in dir(fluxion.extend)

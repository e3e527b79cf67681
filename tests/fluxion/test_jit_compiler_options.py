"""``jit(f, compiler_options=...)`` and ``Lowered.compile(compiler_options)`` against jax 0.10.2:
the options XLA is handed, the optimized HLO under an option that changes it, the errors for an
unknown option or a value of the wrong kind, and the executable caches (in memory and on disk)
keeping executables compiled under different options apart."""

from __future__ import annotations

import os
import re

import jax
import jax._src.compiler as jax_compiler
import jax.numpy as jnp_ref
import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion.backend import compile_cache, compile_hook
from fluxion.core.config import flag_context

X = np.array([0.5, 1.0, -1.0, 2.0], np.float32)
CASES = [
    {"xla_cpu_enable_fast_math": True},
    {"xla_disable_hlo_passes": "fusion", "xla_backend_optimization_level": 0},
    {"optimization_level": 9, "exec_time_optimization_effort": 0.5},
    {"memory_fitting_level": 19, "memory_fitting_effort": -0.25, "xla_llvm_disable_expensive_passes": True},
]


def _body(m):
    return lambda x: m.maximum(m.exp(x), 0.5) + m.tanh(x) * m.sin(x)


def _summary(options):
    b = options.executable_build_options
    return (sorted(options.env_option_overrides), b.optimization_level, b.memory_fitting_level,
            b.exec_time_optimization_effort, b.memory_fitting_effort)


@pytest.fixture
def seen(monkeypatch):
    """The options of every XLA compile, Fluxion's and jax's: {"flx": [...], "jax": [...]}."""
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    out = {"flx": [], "jax": []}
    ours, theirs = compile_hook.backend_compile_and_load, jax_compiler.backend_compile_and_load

    def spy_ours(backend, module, devices, options, *rest):
        out["flx"].append(_summary(options))
        return ours(backend, module, devices, options, *rest)

    def spy_theirs(backend, module, devices, options, *rest):
        out["jax"].append(_summary(options))
        return theirs(backend, module, devices, options, *rest)

    monkeypatch.setattr(compile_hook, "backend_compile_and_load", spy_ours)
    monkeypatch.setattr(jax_compiler, "backend_compile_and_load", spy_theirs)
    with flag_context("fluxion_cpu_fast_compile", False):
        yield out


@pytest.mark.parametrize("options", CASES, ids=lambda o: "+".join(o))
def test_jit_options_reach_xla_as_in_jax(seen, options):
    got = fluxion.jit(_body(jnp), compiler_options=options)(X)
    ref = jax.jit(_body(jnp_ref), compiler_options=options)(X)
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-6)
    assert seen["flx"] and seen["flx"][-1] == seen["jax"][-1]
    assert seen["flx"][-1] != _summary(_plain_options())  # the options were applied


def _plain_options():
    from fluxion.backend import dispatch
    return dispatch._compile_options((fluxion.devices()[0],), False)


def test_lowered_compile_adds_to_jit_options_as_in_jax(seen):
    jit_opts, more = {"xla_backend_optimization_level": 0}, {"xla_cpu_enable_fast_math": True,
                                                             "xla_backend_optimization_level": 1}
    c = fluxion.jit(_body(jnp), compiler_options=jit_opts).lower(X).compile(more)
    r = jax.jit(_body(jnp_ref), compiler_options=jit_opts).lower(X).compile(more)
    np.testing.assert_allclose(np.asarray(c(X)), np.asarray(r(X)), rtol=1e-6)
    assert seen["flx"][-1] == seen["jax"][-1]
    assert ("xla_backend_optimization_level", 1) in seen["flx"][-1][0]
    # jit's options alone through .lower().compile() (a module no other test compiles)
    g = fluxion.jit(lambda x: jnp.cos(x) * 0.6875, compiler_options={"xla_cpu_enable_fast_math": True})
    g.lower(X).compile()
    assert seen["flx"][-1][0] == [("xla_cpu_enable_fast_math", True)]


def _fusions(text):
    return sum(" fusion(" in line for line in text.splitlines())


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the CPU compiler's fusion pass")
def test_optimized_hlo_under_an_option_as_in_jax():
    # without the fusion pass each op is a kernel of its own: more fusion instructions
    opts = {"xla_disable_hlo_passes": "fusion"}
    counts = {}
    for name, jit, m in [("flx", fluxion.jit, jnp), ("jax", jax.jit, jnp_ref)]:
        counts[name] = (_fusions(jit(_body(m)).lower(X).compile().as_text()),
                        _fusions(jit(_body(m), compiler_options=opts).lower(X).compile().as_text()),
                        _fusions(jit(_body(m)).lower(X).compile(opts).as_text()))
    assert counts["flx"] == counts["jax"]
    assert counts["flx"][1] == counts["flx"][2] > counts["flx"][0] >= 1


@pytest.mark.parametrize("options,message", [
    ({"xla_no_such_option": True}, "No such compile option: 'xla_no_such_option'"),
    ({"xla_cpu_enable_fast_math": "true"}, "'true' is not a valid bool value"),
    ({"xla_backend_optimization_level": "O1"}, "'O1' is not a valid int32 value"),
])
def test_bad_option_raises_as_jax(options, message):
    errors = []
    for jit, m in [(fluxion.jit, jnp), (jax.jit, jnp_ref)]:
        with pytest.raises(Exception, match=message) as call:
            jit(_body(m), compiler_options=options)(X)
        with pytest.raises(Exception, match=message) as aot:
            jit(_body(m)).lower(X).compile(options)
        errors.append((type(call.value), str(call.value), type(aot.value), str(aot.value)))
    assert errors[0] == errors[1]
    assert errors[0][0] is jax.errors.JaxRuntimeError


def test_build_option_of_the_wrong_type_raises_type_error_as_jax():
    for jit, m in [(fluxion.jit, jnp), (jax.jit, jnp_ref)]:
        with pytest.raises(TypeError, match="incompatible function arguments"):
            jit(_body(m)).lower(X).compile({"optimization_level": "O1"})


def test_options_are_part_of_the_executable_cache_key(seen):
    f = lambda x: x * 3.0 + 0.8125  # noqa: E731  (one function, several jits)
    fluxion.jit(f)(X)
    fast = fluxion.jit(f, compiler_options={"xla_cpu_enable_fast_math": True})
    fast(X)
    assert [s[0] for s in seen["flx"]] == [[], [("xla_cpu_enable_fast_math", True)]]
    fast(X)
    fluxion.jit(f, compiler_options={"xla_cpu_enable_fast_math": True})(X)  # its caches again
    fluxion.jit(f)(X)
    assert len(seen["flx"]) == 2
    fluxion.jit(f, compiler_options={"xla_cpu_enable_fast_math": False})(X)
    # the same module under the same options: fast's executable; under others: a compile
    fluxion.jit(f).lower(X).compile({"xla_cpu_enable_fast_math": True})
    fluxion.jit(f).lower(X).compile({"xla_backend_optimization_level": 1})
    assert [s[0] for s in seen["flx"][2:]] == [[("xla_cpu_enable_fast_math", False)],
                                                [("xla_backend_optimization_level", 1)]]


def test_placed_call_compiles_again_under_lowered_options(seen):
    # device= places the arguments: .lower() compiles as a call would, .compile(options) again
    f = fluxion.jit(lambda x: x * 7.0 - 0.3125, device=fluxion.devices()[0],
                    compiler_options={"xla_cpu_enable_fast_math": True})
    lowered = f.lower(jnp.asarray(X))
    assert seen["flx"][-1][0] == [("xla_cpu_enable_fast_math", True)]
    n = len(seen["flx"])
    c = lowered.compile({"xla_backend_optimization_level": 1})
    assert len(seen["flx"]) == n + 1
    assert seen["flx"][-1][0] == [("xla_backend_optimization_level", 1),
                                  ("xla_cpu_enable_fast_math", True)]
    np.testing.assert_array_equal(np.asarray(c(X)), np.asarray(f(X)))


@pytest.mark.clears_caches
def test_options_are_part_of_the_disk_cache_key(disk_cache, seen):
    f = lambda x: x * 5.0 - 0.4375  # noqa: E731
    fluxion.jit(f)(X)
    compile_cache.flush()
    files = sorted(os.listdir(disk_cache))
    assert files
    fluxion.clear_caches()
    n = len(seen["flx"])
    fluxion.jit(f, compiler_options={"xla_cpu_enable_fast_math": True})(X)
    assert len(seen["flx"]) == n + 1  # compiled, not f's entry loaded
    compile_cache.flush()
    assert len(sorted(os.listdir(disk_cache))) > len(files)
    fluxion.clear_caches()
    fluxion.jit(f, compiler_options={"xla_cpu_enable_fast_math": True})(X)
    fluxion.jit(f)(X)
    assert len(seen["flx"]) == n + 1  # both read back from their own entries


def test_staged_jit_with_options_raises_as_jax():
    def inner(x):
        return x * 2.0

    opts = {"xla_cpu_enable_fast_math": True}
    message = re.escape("`compiler_options` can only be passed to top-level `jax.jit`. Got "
                        "compiler_options={'xla_cpu_enable_fast_math': True} specified on a "
                        "nested jit with name: ")
    for lib, m in [(fluxion, jnp), (jax, jnp_ref)]:
        g = lib.jit(inner, compiler_options=opts)
        with pytest.raises(ValueError, match=message + "inner"):
            lib.jit(lambda x: g(x))(1.0)
        with pytest.raises(ValueError, match=message + "inner"):
            lib.make_jaxpr(g)(1.0)
        with pytest.raises(ValueError, match=message + "inner"):  # the batched call is staged
            lib.jit(lib.vmap(g))(m.ones(2))
        with pytest.raises(ValueError, match=message):  # its tangent program is staged
            lib.grad(g)(1.0)


def test_vmap_and_jvp_compile_with_the_options_as_jax(seen):
    opts = {"xla_cpu_enable_fast_math": True, "xla_backend_optimization_level": 1}
    for lib, m, who in [(fluxion, jnp, "flx"), (jax, jnp_ref, "jax")]:
        g = lib.jit(lambda x: m.sin(x) * 1.4375, compiler_options=opts)
        xs = m.ones(2)  # before counting: an eager fill may compile in a fresh process
        n = len(seen[who])
        batched = lib.vmap(g)(xs)
        primal, tangent = lib.jvp(g, (1.0,), (1.0,))
        assert len(seen[who]) == n + 2, who
        assert all(s[0] == sorted(opts.items()) for s in seen[who][n:]), who
        np.testing.assert_allclose(np.asarray(batched), np.sin(1.0) * 1.4375, rtol=1e-6)
        np.testing.assert_allclose([float(primal), float(tangent)],
                                   [np.sin(1.0) * 1.4375, np.cos(1.0) * 1.4375], rtol=1e-6)


# One line per case, shared by both libraries, so that the user's line and column in the message
# are the same for both.
_STAGED = {
    "grad": lambda lib, g, m: lib.grad(g)(1.0),
    "vjp": lambda lib, g, m: lib.vjp(g, 1.0),
    "linearize": lambda lib, g, m: lib.linearize(g, 1.0),
    "vmap_grad": lambda lib, g, m: lib.vmap(lib.grad(g))(m.ones(2)),
    "jit": lambda lib, g, m: lib.jit(lambda x: g(x) + 1.0)(1.0),
}


@pytest.mark.parametrize("case", list(_STAGED))
def test_staged_options_error_names_the_function_and_line_as_jax(case):
    # under grad the message named jvp(inner), and the line had no column
    def inner(x):
        return x * 3.0

    messages = []
    for lib, m in [(fluxion, jnp), (jax, jnp_ref)]:
        g = lib.jit(inner, compiler_options={"xla_cpu_enable_fast_math": True})
        with pytest.raises(ValueError) as err:
            _STAGED[case](lib, g, m)
        messages.append(str(err.value))
    assert f"name: inner and source info: {__file__}:" in messages[0]
    assert messages[0] == messages[1]


def test_staged_options_error_names_the_line_where_jax_names_none():
    # JAX 0.10.2 leaves the source info empty when an outer trace (jit, make_jaxpr) stages the
    # call; Fluxion names the user's line there too (docs/api/jit.md)
    g = fluxion.jit(lambda x: x * 3.0, compiler_options={"xla_cpu_enable_fast_math": True})
    for run in (lambda: fluxion.jit(fluxion.grad(g))(1.0), lambda: fluxion.make_jaxpr(g)(1.0)):
        with pytest.raises(ValueError, match=re.escape(f"source info: {__file__}:")):
            run()

"""``fluxion.debug.print`` / ``debug.callback`` against ``jax.debug``: the same printed output
(captured stdout) through jit, vmap, grad, scan, while_loop and cond, ordered and not."""

from __future__ import annotations

import os

import numpy as np
import pytest

import fluxion

jax = pytest.importorskip("jax")


def _printed(capsys, lib, fn, *args):
    """What ``fn(lib)(*args)`` prints (after JAX's effects have flushed)."""
    capsys.readouterr()
    out = fn(lib)(*args)
    if lib is jax:
        jax.effects_barrier()
    else:
        fluxion.effects_barrier()
    return capsys.readouterr().out, out


def _same_output(capsys, fn, *args, sort=False):
    ours, o1 = _printed(capsys, fluxion, fn, *args)
    theirs, o2 = _printed(capsys, jax, fn, *args)
    if sort:  # unordered prints: JAX does not promise an order
        ours, theirs = sorted(ours.splitlines()), sorted(theirs.splitlines())
    assert ours == theirs
    assert ours
    if o2 is not None:
        np.testing.assert_allclose(np.asarray(o1), np.asarray(o2), rtol=1e-6)
    return ours


def _simple(lib):
    def f(x):
        lib.debug.print("x = {x}", x=x)
        lib.debug.print("two {} and {}", x * 2, x.sum())
        lib.debug.print("no placeholders", x, 3, skip_format_check=True)
        lib.debug.print("{x:.3f} {y}", x=x[0], y="str")
        return x + 1
    return f


@pytest.mark.parametrize("jit", [False, True])
def test_print_formats_like_jax(capsys, jit):
    fn = (lambda lib: lib.jit(_simple(lib))) if jit else _simple
    out = _same_output(capsys, fn, np.arange(3.0, dtype=np.float32))
    assert "x = [0. 1. 2.]" in out


def test_print_ints_bools_and_printoptions(capsys):
    def fn(lib):
        def f(x, b):
            lib.debug.print("{} {} {}", x, b, x.astype("float32") / 3)
        return lib.jit(f)
    with np.printoptions(precision=2):
        _same_output(capsys, fn, np.arange(4, dtype=np.int32), np.array([True, False]))


def test_print_under_vmap(capsys):
    def fn(lib):
        return lib.vmap(lambda x, y: lib.debug.print("{} {}", x, y), in_axes=(0, None))
    _same_output(capsys, fn, np.arange(3, dtype=np.int32), np.float32(2.0))


def test_print_under_jit_of_vmap(capsys):
    def fn(lib):
        return lib.jit(lib.vmap(lambda x: lib.debug.print("v={}", x) or x * 2))
    _same_output(capsys, fn, np.arange(4.0, dtype=np.float32), sort=True)


def test_print_under_grad_sees_primals(capsys):
    def fn(lib):
        def f(x):
            lib.debug.print("primal {}", x)
            return lib.numpy.sin(x) * x
        return lib.grad(f)
    _same_output(capsys, fn, np.float32(0.5))
    _same_output(capsys, lambda lib: lib.jit(fn(lib)), np.float32(0.5))


def _control(lib):
    lax = lib.lax

    def f(x):
        lib.debug.print("start {}", x, ordered=True)

        def body(c, v):
            lib.debug.print("body {c} {v}", c=c, v=v, ordered=True)
            return c + v, c * 2
        c, ys = lax.scan(body, x[0], x)
        lib.debug.print("mid {}", c, ordered=True)

        def wb(s):
            lib.debug.print("while {i}", i=s[0], ordered=True)
            return s[0] + 1, s[1] + s[0]
        _, acc = lax.while_loop(lambda s: s[0] < 3, wb, (0, c))
        r = lax.cond(acc > 5, lambda a: (lib.debug.print("big {}", a, ordered=True), a * 2)[1],
                     lambda a: a, acc)
        lib.debug.print("end {} {}", r, ys, ordered=True)
        return r
    return f


@pytest.mark.parametrize("jit", [False, True])
def test_ordered_prints_through_control_flow(capsys, jit):
    fn = (lambda lib: lib.jit(_control(lib))) if jit else _control
    out = _same_output(capsys, fn, np.arange(4.0, dtype=np.float32))
    lines = out.splitlines()
    assert lines[0].startswith("start") and lines[-1].startswith("end")
    assert [ln.split()[0] for ln in lines] == (["start"] + ["body"] * 4 + ["mid"]
                                               + ["while"] * 3 + ["big", "end"])


def test_two_call_form_and_callback(capsys):
    def fn(lib):
        def f(x):
            lib.debug.print(ordered=True)("two-call {}", x)
            lib.debug.callback(lambda v, tag: print("cb", tag, np.asarray(v)), x, "t")
            lib.debug.callback(ordered=True)(lambda v: print("cb2", np.asarray(v) + 1), x)
        return lib.jit(f)
    # the unordered callback's place among the ordered ones is not promised (on a TPU it runs
    # as soon as its send arrives): there the lines are compared as a set
    _same_output(capsys, fn, np.arange(2, dtype=np.int32),
                 sort=os.environ.get("FLUXION_TEST_PLATFORM", "cpu") != "cpu")


def test_callback_receives_arrays_and_pytrees():
    seen = []
    fluxion.jit(lambda d: fluxion.debug.callback(lambda t: seen.append(t), d))(
        {"a": np.ones(2, np.float32), "b": (np.int32(3), None)})
    (t,) = seen
    assert isinstance(t["a"], fluxion.Array) and t["a"].tolist() == [1.0, 1.0]
    assert int(t["b"][0]) == 3 and t["b"][1] is None


def test_format_errors_match_jax():
    for lib in (fluxion, jax):
        with pytest.raises(ValueError, match="Unused positional arguments"):
            lib.debug.print("x", 1.0)
        with pytest.raises(ValueError, match="Unused keyword arguments"):
            lib.debug.print("{}", 1.0, y=2.0)
        with pytest.raises(TypeError, match="two-call form"):
            lib.debug.print(None, 1.0)
        with pytest.raises(TypeError, match="must be callable"):
            lib.debug.callback(3, 1.0)


def test_callback_exception_propagates():
    def bad(x):
        raise KeyError("from callback")
    with pytest.raises(KeyError, match="from callback"):
        fluxion.jit(lambda x: fluxion.debug.callback(bad, x))(1.0)
    with pytest.raises(KeyError, match="from callback"):
        fluxion.debug.callback(bad, 1.0)
    # the process survives and later calls work
    assert fluxion.jit(lambda x: x + 1)(1.0).item() == 2.0


def test_print_kept_when_result_unused(capsys):
    def fn(lib):
        def f(x):
            lib.lax.scan(lambda c, v: (lib.debug.print("dead {}", v) or c, None), 0.0, x)
            return x
        return lib.jit(f)
    _same_output(capsys, fn, np.arange(2.0, dtype=np.float32))


def test_make_jaxpr_shows_the_effect():
    text = str(fluxion.make_jaxpr(lambda x: fluxion.debug.print("{}", x))(1.0))
    assert "debug_callback" in text


def test_debug_log_goes_to_logging(caplog):
    import logging
    with caplog.at_level(logging.INFO, logger="fluxion.debug"):
        fluxion.jit(lambda x: fluxion.debug.log("logged {}", x))(np.int32(7))
    (rec,) = [r for r in caplog.records if r.name == "fluxion.debug"]
    assert rec.getMessage() == "logged 7" and rec.levelno == logging.INFO
    assert rec.pathname == __file__


def test_ordered_prints_through_nested_jit(capsys):
    def fn(lib):
        @lib.jit
        def g(x):
            lib.debug.print("g1 {}", x, ordered=True)
            lib.debug.print("g2 {}", x + 1, ordered=True)
            return x * 2

        def f(x):
            lib.debug.print("f1 {}", x, ordered=True)
            y = g(x)
            lib.debug.print("f2 {}", y, ordered=True)
            z = g(y)
            lib.debug.print("f3 {}", z, ordered=True)
            return z
        return lib.jit(f)
    out = _same_output(capsys, fn, np.int32(1))
    assert out == "f1 1\ng1 1\ng2 2\nf2 2\ng1 2\ng2 3\nf3 4\n"

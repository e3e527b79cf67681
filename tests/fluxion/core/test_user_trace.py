"""User-defined traces (``jax.core.Trace``/``Tracer`` subclasses, as haiku's ``to_dot``), against
real JAX 0.10.2: the same recording trace is written once against each library's public API
(``jax.core``, ``jax.extend.core``, ``jax.extend.linear_util``) and run on the same functions."""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.extend.core
import jax.extend.linear_util
import numpy as np
import pytest
from _compare import assert_same

import fluxion
import fluxion.core
import fluxion.extend.core
import fluxion.extend.linear_util

JAX = SimpleNamespace(api=jax, core=jax.core, ext=jax.extend.core, lax=jax.lax)
FLX = SimpleNamespace(api=fluxion, core=fluxion.core, ext=fluxion.extend.core, lax=fluxion.lax)


def _recording(lib: SimpleNamespace) -> tuple[type, type]:
    """A trace recording the primitives it sees (haiku's DotTrace, reduced), for ``lib``."""

    class Rec(lib.core.Tracer):
        def __init__(self, trace, val):
            super().__init__(trace, lib.api.typeof(val))
            self.val = val

    class RecTrace(lib.core.Trace):
        use_rule = False

        def __init__(self, parent, tag):
            super().__init__()
            self.parent_trace, self.tag = parent, tag
            self.seen: list[str] = []
            self.under: list[object] = []

        def lower(self, x):
            return x.val if isinstance(x, Rec) and x._trace.tag is self.tag else x

        def process_primitive(self, prim, tracers, params):
            self.seen.append(prim.name)
            self.under.append(lib.ext.find_top_trace(()))
            vals = [self.lower(t) for t in tracers]
            out = prim.bind_with_trace(self.parent_trace, vals,
                                       [lib.api.typeof(v) for v in vals], params)
            if prim.multiple_results:
                return [Rec(self, o) for o in out]
            return Rec(self, out)

        def process_custom_jvp_call(self, prim, fun, jvp, tracers, *, symbolic_zeros):
            self.seen.append(f"custom_jvp({fun.__name__})")
            vals = [self.lower(t) for t in tracers]
            with lib.ext.set_current_trace(self.parent_trace):
                if self.use_rule:
                    # JAX's calling convention: (*primals, *tangents) -> outputs, then tangents
                    ones = [lib.api.numpy.ones_like(v) for v in vals]
                    both = jvp.call_wrapped(*vals, *ones)
                    out, self.tangents = both[:len(both) // 2], both[len(both) // 2:]
                else:
                    out = fun.call_wrapped(*vals)
            return [Rec(self, o) for o in out]

    return Rec, RecTrace


def _run(lib: SimpleNamespace, f, *args, use_rule: bool = False):
    Rec, RecTrace = _recording(lib)
    with lib.ext.take_current_trace() as parent:
        trace = RecTrace(parent, lib.ext.TraceTag())
        trace.use_rule = use_rule
        with lib.ext.set_current_trace(trace):
            out = f(*[Rec(trace, a) for a in args])
    return trace, parent, trace.lower(out)


def _prog(lib):
    lax = lib.lax

    def f(x, y):
        z = lax.mul(lax.sin(x), y)
        return lax.reduce_sum(lax.add(z, x), (0,))

    return f


X = np.array([0.5, 1.0, 2.0], np.float32)
Y = np.array([3.0, -1.0, 0.25], np.float32)


def test_recording_trace_sees_the_primitives_like_jax():
    ours, fparent, fout = _run(FLX, _prog(FLX), X, Y)
    theirs, jparent, jout = _run(JAX, _prog(JAX), X, Y)
    assert ours.seen == theirs.seen == ["sin", "mul", "add", "reduce_sum"]
    assert_same(fout, jout)
    # the trace taken at the top is the eager one; the rule runs with it current (JAX's bind)
    assert all(t is fparent for t in ours.under) and all(t is jparent for t in theirs.under)
    assert isinstance(fparent, FLX.core.Trace) and isinstance(jparent, JAX.core.Trace)


def test_recording_trace_inside_jit_and_eval_shape_like_jax():
    for transform in ("jit", "eval_shape"):
        seen = {}
        outs = {}
        for name, lib in (("flx", FLX), ("jax", JAX)):
            def g(x, y, lib=lib, name=name):
                trace, parent, out = _run(lib, _prog(lib), x, y)
                seen[name] = (trace.seen, isinstance(out, lib.core.Tracer),
                              isinstance(parent, lib.core.Trace))
                return out
            outs[name] = (lib.api.jit(g)(X, Y) if transform == "jit" else
                          lib.api.eval_shape(g, X, Y))
        assert seen["flx"] == seen["jax"] == (["sin", "mul", "add", "reduce_sum"], True, True)
        if transform == "jit":
            assert_same(outs["flx"], outs["jax"])
        else:
            assert (outs["flx"].shape, outs["flx"].dtype) == (outs["jax"].shape,
                                                             outs["jax"].dtype)


def _custom(lib):
    @lib.api.custom_jvp
    def cube(x):
        return x * x * x

    @cube.defjvp
    def cube_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return cube(x), 10.0 * t

    return cube


def test_custom_jvp_call_goes_to_process_custom_jvp_call_like_jax():
    ours, _, fout = _run(FLX, _custom(FLX), X)
    theirs, _, jout = _run(JAX, _custom(JAX), X)
    assert ours.seen == theirs.seen == ["custom_jvp(cube)"]
    assert_same(fout, jout)
    assert_same(fout, X ** 3)
    # the rule handed over, called: the primal output, then its tangent
    ours, _, fout = _run(FLX, _custom(FLX), X, use_rule=True)
    theirs, _, jout = _run(JAX, _custom(JAX), X, use_rule=True)
    assert ours.seen == theirs.seen == ["custom_jvp(cube)"]
    assert_same(fout, jout)
    assert_same(ours.tangents, theirs.tangents)
    assert_same(ours.tangents[0], np.full(3, 10.0, np.float32))


def test_tracer_and_trace_api_like_jax():
    for lib in (FLX, JAX):
        Rec, RecTrace = _recording(lib)
        with lib.ext.take_current_trace() as parent:
            t = RecTrace(parent, lib.ext.TraceTag())
        r = Rec(t, X)
        assert r._trace is t and (r.shape, r.dtype, r.ndim, r.size) == ((3,), np.float32, 1, 3)
        assert r.full_lower() is r and t.main is t.tag and t.full_raise(r) is r
        assert t.is_valid()
        t.invalidate()
        assert not t.is_valid()
        assert repr(t) == "RecTrace"
        with pytest.raises(NotImplementedError):
            t.process_call(None, None, [], {})
        with pytest.raises(NotImplementedError):
            lib.core.Trace().process_primitive(None, [], {})
        a, b = lib.ext.TraceTag(), lib.ext.TraceTag()
        assert a is not b and a == b and hash(a) == hash(b) and a != 1
        assert issubclass(RecTrace, lib.core.Trace) and not isinstance(r, lib.core.Trace)


def test_bind_with_trace_like_jax():
    outs = {}
    for lib in (FLX, JAX):
        sin_p = lib.ext.primitives.sin_p
        params = dict(fluxion.make_jaxpr(fluxion.numpy.sin)(X).eqns[0].params) if lib is FLX \
            else dict(jax.make_jaxpr(jax.numpy.sin)(X).eqns[0].params)

        def g(x, lib=lib, sin_p=sin_p, params=params):
            with lib.ext.take_current_trace() as t:
                return sin_p.bind_with_trace(t, [x], [lib.api.typeof(x)], params)

        with lib.ext.take_current_trace() as t:
            eager = sin_p.bind_with_trace(t, [X], [lib.api.typeof(X)], params)
        outs[lib is FLX] = (eager, lib.api.jit(g)(X))
    assert_same(outs[True], outs[False])

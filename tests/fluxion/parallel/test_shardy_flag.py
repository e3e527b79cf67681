"""``jax_use_shardy_partitioner`` against jax 0.10.2: on (the default) a program over several
devices is lowered with Shardy's ``sdy`` annotations; off, with GSPMD's ``mhlo.sharding``
attributes, sharding constraints as ``Sharding`` custom calls and ``shard_map`` as
``SPMDFullToShardShape`` / ``SPMDShardToFullShape``, compiled by XLA's GSPMD partitioner. The
annotations (in order) and the numbers and result shardings are compared with JAX's."""

from __future__ import annotations

import re

import numpy as np
import pytest
from _compare import flags_both

import fluxion
from fluxion.backend import compile_hook
from fluxion.core.config import flag_context
from fluxion.sharding import Mesh, NamedSharding
from fluxion.sharding import PartitionSpec as P

jax = pytest.importorskip("jax")
from jax.sharding import Mesh as JMesh  # noqa: E402
from jax.sharding import NamedSharding as JNS  # noqa: E402
from jax.sharding import PartitionSpec as JP  # noqa: E402


def _shardy(value):
    return flags_both("jax_use_shardy_partitioner", value)


def _programs(lib, mesh, ns, p):
    wsc = lib.lax.with_sharding_constraint
    return {
        "argument": (lib.jit(lambda v: v * 2.0 + 1.0), p("x")),
        "constraint": (lib.jit(lambda v: wsc(v * 2.0, ns(mesh, p())) + 1.0), p("x")),
        "unconstrained": (lib.jit(lambda v: wsc(v * 2.0, ns(mesh, p(p.UNCONSTRAINED, None)))),
                          p(None, "x")),
        "out_shardings": (lib.jit(lambda v: v.sum(0), out_shardings=ns(mesh, p())), p("x")),
        "shard_map": (lib.jit(lib.shard_map(lambda v: lib.lax.psum(v, "x") * 2.0, mesh=mesh,
                                            in_specs=p("x"), out_specs=p())), p("x")),
    }


_ANNOTATION = re.compile(r'call_target_name = "(\w+)"|@(Sharding|SPMD\w+)\(|'
                         r'mhlo\.sharding = "([^"]*)"|backend_config = "([^"]*)"')


def _annotations(text):
    """The GSPMD annotations of a module in order: custom-call targets, shardings, configs."""
    return [next(g for g in m.groups() if g is not None) for m in _ANNOTATION.finditer(text)]


def _run(lib, case, shardy):
    if lib is fluxion:
        mesh, ns, p = Mesh(np.array(fluxion.devices()[:4]), ("x",)), NamedSharding, P
    else:
        mesh, ns, p = JMesh(np.array(jax.devices()[:4]), ("x",)), JNS, JP
    with _shardy(shardy):
        f, spec = _programs(lib, mesh, ns, p)[case]
        x = lib.device_put(np.arange(16.0, dtype=np.float32).reshape(4, 4), ns(mesh, spec))
        text = f.lower(x).as_text()
        y = f(x)
    return text, np.asarray(y), tuple(y.sharding.spec)


CASES = ["argument", "constraint", "unconstrained", "out_shardings", "shard_map"]


@pytest.mark.parametrize("case", CASES)
def test_the_flag_selects_the_partitioner_as_jax(eight, case):
    ours, theirs = _run(fluxion, case, False), _run(jax, case, False)
    assert "sdy" not in ours[0] and "mhlo.sharding" in ours[0]
    assert _annotations(ours[0]) == _annotations(theirs[0])
    np.testing.assert_array_equal(ours[1], theirs[1])
    assert ours[2] == theirs[2]
    ours, theirs = _run(fluxion, case, True), _run(jax, case, True)  # the default
    assert "sdy.sharding" in ours[0] and "sdy.sharding" in theirs[0]
    assert "mhlo.sharding" not in ours[0]
    np.testing.assert_array_equal(ours[1], theirs[1])
    assert ours[2] == theirs[2]


def test_the_flag_is_part_of_the_jit_key_and_reaches_xla(eight):
    seen, inner = [], compile_hook.backend_compile_and_load

    def spy(backend, module, devices, options, *rest):
        seen.append(options.executable_build_options.use_shardy_partitioner)
        return inner(backend, module, devices, options, *rest)

    mesh = Mesh(np.array(fluxion.devices()[:2]), ("x",))
    f = fluxion.jit(lambda v: v * 1.8125 - 3.0)
    x = fluxion.device_put(np.arange(6.0, dtype=np.float32), NamedSharding(mesh, P("x")))
    compile_hook.backend_compile_and_load = spy
    try:
        want = np.arange(6.0, dtype=np.float32) * 1.8125 - 3.0
        np.testing.assert_array_equal(f(x), want)
        with flag_context("jax_use_shardy_partitioner", False):
            np.testing.assert_array_equal(f(x), want)
        f(x)  # back on: the first executable
    finally:
        compile_hook.backend_compile_and_load = inner
    assert seen == [True, False]


def test_partly_manual_shard_map_needs_shardy(eight):
    mesh = Mesh(np.array(fluxion.devices()[:4]).reshape(2, 2), ("x", "y"))
    g = fluxion.jit(fluxion.shard_map(lambda v: v * 2.0, mesh=mesh, in_specs=P("x"),
                                      out_specs=P("x"), axis_names={"x"}))
    x = fluxion.device_put(np.ones((4, 2), np.float32), NamedSharding(mesh, P("x", "y")))
    with flag_context("jax_use_shardy_partitioner", False):
        with pytest.raises(NotImplementedError, match="jax_use_shardy_partitioner"):
            g(x)
    np.testing.assert_array_equal(g(x), 2.0 * np.ones((4, 2)))

"""The StableHLO of loops is no larger than JAX's for the same function (issue 28: a first call's
compile time grows with the program): each ``stablehlo.while`` carries at most the operands of
JAX's, a constant the loop reads stays a constant inside its body (JAX keeps a literal there; a
value Fluxion computed eagerly while tracing is a known constant too), a closed-over array read
by several loops is one constant, and results no one reads are not computed (loop_dce.py, JAX's
DCE rules). Both modules are parsed with JAX's MLIR bindings."""

from __future__ import annotations

import numpy as np
import pytest
from _compare import platform_tol

import fluxion
import fluxion.numpy as fnp
from fluxion import lax as flax_

jax = pytest.importorskip("jax")
jnp = jax.numpy
jlax = jax.lax

from jax._src.interpreters import mlir as _jmlir  # noqa: E402  (test-only: parse both modules)
from jax._src.lib.mlir import ir as _ir  # noqa: E402


def module_stats(text: str) -> dict:
    """Per ``stablehlo.while`` its operand count (in program order), the ``main`` parameters,
    the constants by type, and the op count with every ``func.call`` replaced by its callee's
    ops (JAX outlines nested jits as functions; Fluxion inlines them)."""
    ctx = _jmlir.make_ir_context()
    with ctx:
        module = _ir.Module.parse(text)
        funcs = {_ir.StringAttr(f.attributes["sym_name"]).value: f for f in module.body.operations}
        whiles: list[int] = []
        consts: dict[str, int] = {}
        memo: dict[str, int] = {}

        def walk(op: object, record: bool) -> int:
            n = 0
            for region in op.regions:
                for block in region.blocks:
                    for o in block.operations:
                        name = o.operation.name
                        if name in ("func.return", "stablehlo.return"):
                            continue
                        if name == "func.call":
                            n += ops_of(_ir.FlatSymbolRefAttr(o.attributes["callee"]).value)
                            continue
                        if record and name == "stablehlo.while":
                            whiles.append(len(o.operation.operands))
                        if record and name == "stablehlo.constant":
                            t = str(o.operation.results[0].type)
                            consts[t] = consts.get(t, 0) + 1
                        n += 1 + walk(o.operation, record)
            return n

        def ops_of(name: str) -> int:
            if name not in memo:
                memo[name] = walk(funcs[name].operation, False)
            return memo[name]

        for f in funcs.values():  # every function's loops and constants, once each
            walk(f.operation, True)
        n_params = len(funcs["main"].regions[0].blocks[0].arguments)
        return {"whiles": whiles, "params": n_params, "consts": consts, "ops": ops_of("main")}


A = np.arange(12.0, dtype=np.float32).reshape(3, 4)


def _loops(np_, lax, scale, mask):
    """A fori_loop, a scan and a while_loop, each reading the closed-over ``A`` (a NumPy
    constant), a closed-over argument ``y`` and the concrete ``scale``/``mask``."""
    def f(x, y):
        c = np_.asarray(A)

        def fbody(i, carry):
            return carry * scale + np_.sum(c) + y[i % 3]
        r = lax.fori_loop(0, 4, fbody, x)

        def sbody(carry, xi):
            return carry + xi * np_.cos(c).sum() + y, carry.sum()
        r2, ys = lax.scan(sbody, r, np_.ones((5, 3), np.float32))

        def wbody(v):
            return v[0] + np_.sum(c) + y.sum(), np_.where(mask, v[1] * 2, v[1])
        return lax.while_loop(lambda v: v[0] < 100.0, wbody, (ys.sum(), r2))
    return f


def _eager_consts(np_, lax):
    """Values known while tracing (Fluxion computes them eagerly under jit, JAX stages them):
    a bound, a step, a reversed arange scanned over inside a while body."""
    def f(x):
        lim = np_.asarray(6, np.int32)
        step = np_.asarray(1.5, np.float32)
        rev = np_.arange(4, -1, -1)

        def body(v):
            k, acc = v
            acc, _ = lax.scan(lambda a, i: (a + i * step, None), acc, rev)
            return k + 1, acc
        return lax.while_loop(lambda v: v[0] < lim, body, (np_.asarray(0, np.int32), x))
    return f


def _compare(f_flx, f_jax, *args, values=True):
    tf = fluxion.jit(f_flx).lower(*args).as_text()
    tj = jax.jit(f_jax).lower(*args).as_text()
    if not values:
        return module_stats(tf), module_stats(tj)
    out_f, out_j = fluxion.jit(f_flx)(*args), jax.jit(f_jax)(*args)
    for a, b in zip(jax.tree_util.tree_leaves(out_f), jax.tree_util.tree_leaves(out_j)):
        assert np.shape(a) == np.shape(b) and np.asarray(a).dtype == np.asarray(b).dtype
        assert getattr(a, "weak_type", False) == getattr(b, "weak_type", False)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), **platform_tol(1e-6))
    return module_stats(tf), module_stats(tj)


def test_loops_carry_no_more_operands_than_jax():
    x, y = np.ones(3, np.float32), np.arange(3, dtype=np.float32)
    mask = np.array([True, False, True])
    sf, sj = _compare(_loops(fnp, flax_, fnp.asarray(0.5), fnp.asarray(mask)),
                      _loops(jnp, jlax, jnp.asarray(0.5), jnp.asarray(mask)), x, y,
                      values=False)
    assert len(sf["whiles"]) == len(sj["whiles"]) == 3
    # JAX carries the closed-over scalar and mask through its loops; here they are constants
    assert all(a <= b for a, b in zip(sf["whiles"], sj["whiles"])), (sf, sj)
    assert sum(sf["whiles"]) < sum(sj["whiles"])
    assert sf["params"] == sj["params"] == 2  # closed-over arrays are no parameters
    # the small ``A`` is a constant in each body (JAX carries it), emitted once in main
    assert sj["consts"]["tensor<3x4xf32>"] == 1
    assert sf["consts"]["tensor<3x4xf32>"] == 1 + len(sf["whiles"])
    assert sf["ops"] <= sj["ops"] + len(sf["whiles"])


def test_large_constant_is_carried_once_as_jax():
    big = np.linspace(0.0, 1.0, 32 * 32, dtype=np.float32).reshape(32, 32)  # 4 KiB

    def f(np_, lax):
        def g(x):
            w = np_.asarray(big)
            x = lax.fori_loop(0, 3, lambda i, v: np_.tanh(w @ v) * i, x)
            return lax.fori_loop(0, 2, lambda i, v: v + w[i], x)
        return g
    sf, sj = _compare(f(fnp, flax_), f(jnp, jlax), np.ones(32, np.float32), values=False)
    assert sf["whiles"] == sj["whiles"]
    assert sf["consts"]["tensor<32x32xf32>"] == sj["consts"]["tensor<32x32xf32>"] == 1


def test_values_known_while_tracing_stay_in_the_loop_body():
    x = np.zeros((), np.float32)
    sf, sj = _compare(_eager_consts(fnp, flax_), _eager_consts(jnp, jlax), x)
    # the while carries (k, acc), the scan (counter, acc, xs): the bound, the step and the
    # arange are constants in the bodies (JAX carries its concrete arrays: [5, 4])
    assert sf["whiles"] == [2, 3]
    assert all(a <= b for a, b in zip(sf["whiles"], sj["whiles"])), (sf, sj)
    assert sf["params"] == sj["params"] == 1


def test_constant_operands_of_nested_loops_and_unrolled_scans():
    # a constant carried into an outer loop's body is known there: the inner loop keeps it too;
    # an unrolled scan step reads it directly
    table = np.linspace(0.0, 1.0, 6, dtype=np.float32).reshape(2, 3)

    def f(np_, lax):
        def g(x):
            t = np_.asarray(table)

            def outer(i, acc):
                inner = lax.fori_loop(0, 3, lambda j, a: a + t[j % 2] * i, acc)
                s, _ = lax.scan(lambda a, r: (a * 0.5 + r, None), inner, t, unroll=2)
                return s
            return lax.fori_loop(0, 3, outer, x)
        return g
    sf, sj = _compare(f(fnp, flax_), f(jnp, jlax), np.ones(3, np.float32))
    assert len(sf["whiles"]) == len(sj["whiles"])
    assert all(a <= b for a, b in zip(sf["whiles"], sj["whiles"])), (sf, sj)


def test_loop_in_a_cond_branch_keeps_the_captured_constant():
    def f(np_, lax):
        def g(p, x):
            s = np_.asarray(0.25)
            return lax.cond(p > 0, lambda v: lax.fori_loop(0, 3, lambda i, a: a * s + i, v),
                            lambda v: v, x)
        return g
    sf, sj = _compare(f(fnp, flax_), f(jnp, jlax), np.float32(1.0), np.ones(3, np.float32))
    assert sf["whiles"] == [3] and sj["whiles"] == [4]  # (counter, i, a); JAX also carries s


def _dead_parts(np_, lax):
    """Loops with results no one reads (JAX's DCE rules drop them)."""
    def fori_index_unused(x):
        return lax.fori_loop(0, 3, lambda i, v: np_.tanh(v) * 2.0, x)

    def scan_ys_unused(x):
        return lax.scan(lambda c, xi: (c + xi, np_.sin(xi) * c), x[0], x)[0]

    def scan_carry_unused(x):
        return lax.scan(lambda c, xi: (c + xi, xi * 2.0), 0.0, x)[1]

    def while_dead_carry(x):
        def body(v):
            k, acc, junk = v
            return k + 1, acc * 1.5, junk + np_.cos(acc)
        return lax.while_loop(lambda v: v[0] < 4, body, (0, x, x))[1]

    def nested_ys_unused(x):
        return lax.fori_loop(0, 2, lambda i, v: lax.scan(
            lambda c, xi: (c * 0.5 + xi, c + xi), v, x)[0], x)
    return {f.__name__: f for f in (fori_index_unused, scan_ys_unused, scan_carry_unused,
                                    while_dead_carry, nested_ys_unused)}


@pytest.mark.parametrize("name", list(_dead_parts(np, None)))
def test_loops_drop_what_no_one_reads(name):
    x = np.linspace(0.1, 1.0, 4).astype(np.float32)
    sf, sj = _compare(_dead_parts(fnp, flax_)[name], _dead_parts(jnp, jlax)[name], x)
    assert len(sf["whiles"]) == len(sj["whiles"])
    assert all(a <= b for a, b in zip(sf["whiles"], sj["whiles"])), (sf, sj)
    assert sf["ops"] <= sj["ops"]


def test_reverse_mode_through_a_pruned_scan_matches_jax():
    x = np.linspace(0.1, 1.0, 4).astype(np.float32)
    f, g = _dead_parts(fnp, flax_)["scan_ys_unused"], _dead_parts(jnp, jlax)["scan_ys_unused"]
    ours = fluxion.jit(fluxion.grad(lambda v: f(v).sum()))(x)
    ref = jax.jit(jax.grad(lambda v: g(v).sum()))(x)
    assert ours.shape == ref.shape and ours.dtype == ref.dtype
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=1e-6)


@pytest.mark.slow  # jnp.linalg.solve traced and lowered by both (~3 s of CPU)
def test_lu_permutation_loop_carries_jax_operands():
    a = np.array([[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0]], np.float32)
    b = np.arange(3.0, dtype=np.float32)
    sf, sj = _compare(fnp.linalg.solve, jnp.linalg.solve, a, b, values=False)
    assert sf["whiles"] == sj["whiles"] == [4]  # the pivots, counter, index, permutation

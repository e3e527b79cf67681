"""Fluxion on a TPU chip (``tools/bootstrap.py test --platform tpu``): linalg through the TPU's
own lowerings with gradients and batching, against jax on the CPU; the errors for what the TPU
cannot run; a second process asking for the held chip. Skipped where Fluxion is not on a TPU
(CI runs the CPU)."""

from __future__ import annotations

import os
import subprocess
import sys

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion.backend.lowering import PlatformLoweringError

pytestmark = pytest.mark.skipif(
    os.environ.get("FLUXION_TEST_PLATFORM") != "tpu",
    reason="needs Fluxion on a TPU (tools/bootstrap.py test --platform tpu)")

RNG = np.random.default_rng(0)
A = (np.eye(4) * 3 + RNG.standard_normal((4, 4)) / 3).astype(np.float32)
SPD = (A @ A.T + np.eye(4)).astype(np.float32)
B = RNG.standard_normal((4, 2)).astype(np.float32)
AB = np.stack([A, A.T + np.eye(4, dtype=np.float32)])


def _cases(np_mod, lax_mod, grad, vmap):
    lin = np_mod.linalg
    return {
        "cholesky": (lambda a: lin.cholesky(a), (SPD,)),
        "triangular_solve": (lambda a, b: lax_mod.linalg.triangular_solve(
            lin.cholesky(a), b, left_side=True, lower=True), (SPD, B)),
        "solve": (lambda a, b: lin.solve(a, b), (A, B)),
        "inv": (lambda a: lin.inv(a), (A,)),
        "det": (lambda a: lin.det(a), (A,)),
        "slogdet": (lambda a: lin.slogdet(a), (A,)),
        "qr": (lambda a: lin.qr(a), (A,)),
        "qr_complete": (lambda a: lin.qr(a[:, :3], mode="complete"), (A,)),
        "eigh": (lambda a: lin.eigh(a)[0], (SPD,)),
        "eigh_vectors_abs": (lambda a: np_mod.abs(lin.eigh(a)[1]), (SPD,)),
        "lu": (lambda a: lax_mod.linalg.lu(a), (A,)),
        "grad_det": (grad(lambda a: lin.det(a)), (A,)),
        "grad_solve": (grad(lambda a, b: lin.solve(a, b).sum()), (A, B)),
        "grad_cholesky": (grad(lambda a: lin.cholesky(a).sum()), (SPD,)),
        "grad_eigh": (grad(lambda a: lin.eigh(a)[0].sum()), (SPD,)),
        "tridiagonal_solve": (lambda a, b: lax_mod.linalg.tridiagonal_solve(
            a[0] * 0 + 0.5, a[1] * 0 + 4.0, a[2] * 0 - 0.5, b), (A, B)),
        "svd_values": (lambda a: lin.svd(a, compute_uv=False), (A,)),
        "svd_reconstruct": (lambda a: (lambda u, s, vt: (u * s) @ vt)(*lin.svd(a)), (A,)),
        "pinv": (lambda a: lin.pinv(a), (A,)),
        "vmap_inv": (vmap(lin.inv), (AB,)),
        "vmap_slogdet": (vmap(lambda a: lin.slogdet(a)[1]), (AB,)),
        "vmap_cholesky": (vmap(lambda a: lin.cholesky(a @ a.T + np_mod.eye(4))), (AB,)),
    }


OURS = _cases(jnp, lax, fluxion.grad, fluxion.vmap)
THEIRS = _cases(jjnp, jax.lax, jax.grad, jax.vmap)


def _leaves(x):
    return [np.asarray(v) for v in jax.tree_util.tree_leaves(x)]


@pytest.mark.parametrize("name", list(OURS))
def test_linalg_on_tpu_matches_jax_on_cpu(name: str) -> None:
    f, args = OURS[name]
    g, _ = THEIRS[name]
    with fluxion.default_matmul_precision("highest"):
        ours = fluxion.jit(f)(*args)
    theirs = jax.jit(g)(*args)
    assert fluxion.default_backend() == "tpu"
    for o, t in zip(_leaves(ours), _leaves(theirs)):
        assert o.shape == t.shape and o.dtype == t.dtype, (name, o.shape, t.shape)
        np.testing.assert_allclose(o, t, rtol=2e-3, atol=2e-3, err_msg=name)


def test_what_the_tpu_cannot_run_raises_before_xla() -> None:
    with pytest.raises(PlatformLoweringError, match="eig has no lowering for platform 'tpu'"):
        jnp.linalg.eig(A)
    with fluxion.enable_x64(True):
        with pytest.raises(NotImplementedError, match="float64 .* not supported on the TPU"):
            jnp.linalg.inv(A.astype(np.float64))
        # float64 arithmetic is emulated by XLA there (pairs of float32: more digits than
        # float32, float32's exponent range) and runs
        x = jnp.asarray(np.float64(1.0)) + 1e-10
        assert x.dtype == np.float64 and float(x - 1.0) == pytest.approx(1e-10, rel=1e-3)


def test_second_process_is_told_the_tpu_is_held() -> None:
    fluxion.devices()  # this process holds the chip
    env = {k: v for k, v in os.environ.items()}
    code = ("import warnings, fluxion\n"
            "warnings.simplefilter('always')\n"
            "print('BACKEND', fluxion.default_backend())\n")
    env["FLUXION_PLATFORMS"] = "tpu"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=240)
    assert r.returncode != 0 and "the TPU is held by another process" in r.stderr, r.stderr[-2000:]
    env["FLUXION_PLATFORMS"] = "tpu,cpu"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=240)
    assert "BACKEND cpu" in r.stdout, r.stdout + r.stderr[-2000:]
    assert "platform 'tpu' could not be opened" in r.stderr and "held by another" in r.stderr


def test_host_callbacks_in_jit_on_tpu(capsys) -> None:
    seen = []
    f = fluxion.jit(lambda x: fluxion.pure_callback(
        lambda v: np.asarray(v) * 2, fluxion.ShapeDtypeStruct((4, 2), np.float32), x) + 1)
    np.testing.assert_allclose(np.asarray(f(B)), B * 2 + 1, rtol=1e-6)

    def g(x):
        fluxion.debug.print("sum={s}", s=x.sum())
        fluxion.experimental.io_callback(lambda v: seen.append(np.asarray(v)), None, x,
                                         ordered=True)
        return x * 2
    out = fluxion.jit(g)(B)
    fluxion.effects_barrier()
    assert np.allclose(np.asarray(out), B * 2)
    assert "sum=" in capsys.readouterr().out
    assert len(seen) == 1 and np.allclose(seen[0], B)


def test_callbacks_get_cpu_arrays_and_may_compute_on_them() -> None:
    # as jax: a callback's arguments are Arrays on the CPU, and the CPU is its default device,
    # so a callback that computes on them (here `v * 2`, also inside the loop of an eager vmap)
    # never waits on the chip that is waiting for it
    seen = []

    def cb(v):
        seen.append(v.devices().pop().platform)
        return (v * 2).astype(np.float32)

    spec = fluxion.ShapeDtypeStruct((), np.float32)
    xs = np.arange(3, dtype=np.float32)
    out = fluxion.vmap(lambda x: fluxion.experimental.io_callback(cb, spec, x))(xs)
    np.testing.assert_allclose(np.asarray(out), xs * 2)
    out = fluxion.jit(lambda x: fluxion.pure_callback(cb, spec, x) + 1)(np.float32(3))
    assert float(out) == 7.0
    assert seen and set(seen) == {"cpu"}

"""Per-platform lowering rules, checked from a CPU machine: modules exported for the TPU (and
for several platforms at once) call the same custom-call targets as ``jax.export`` emits for the
same programs; an operation with no lowering for the target platform fails while lowering, with
an error naming it and the platform; 64-bit operands of the TPU's linalg kernels are refused
before XLA sees them."""

from __future__ import annotations

import re

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import export as fexport
from fluxion import lax
from fluxion.backend.lowering import PlatformLoweringError

A = (np.eye(3, dtype=np.float32) * 3 + np.arange(9, dtype=np.float32).reshape(3, 3) / 10)
SPD = (A @ A.T).astype(np.float32)
B = np.arange(6, dtype=np.float32).reshape(3, 2)


def _programs(np_mod, lax_mod, grad):
    """The same programs written against fluxion or jax."""
    lin = np_mod.linalg
    return {
        "cholesky": (lambda a: lin.cholesky(a), (SPD,)),
        "triangular_solve": (lambda a, b: lax_mod.linalg.triangular_solve(
            a, b, left_side=True, lower=True), (SPD, B)),
        "solve": (lambda a, b: lin.solve(a, b), (A, B)),
        "inv": (lambda a: lin.inv(a), (A,)),
        "det": (lambda a: lin.det(a), (A,)),
        "slogdet": (lambda a: lin.slogdet(a), (A,)),
        "qr": (lambda a: lin.qr(a), (A,)),
        "qr_wide": (lambda a: lin.qr(a[:2]), (A,)),
        "eigh": (lambda a: lin.eigh(a), (SPD,)),
        "lu": (lambda a: lax_mod.linalg.lu(a), (A,)),
        "grad_det": (grad(lambda a: lin.det(a)), (A,)),
        "grad_cholesky": (grad(lambda a: lin.cholesky(a).sum()), (SPD,)),
        "grad_eigh": (grad(lambda a: lin.eigh(a)[0].sum()), (SPD,)),
        "batched_solve": (lambda a, b: lin.solve(np_mod.stack([a, a]), np_mod.stack([b, b])),
                          (A, B)),
        "svd": (lambda a: lin.svd(a), (A,)),
        "svd_values_tall": (lambda a: lin.svd(np_mod.concatenate([a, a]), compute_uv=False),
                            (A,)),
        "pinv": (lambda a: lin.pinv(a), (A,)),
        "tridiagonal_solve": (lambda a, b: lax_mod.linalg.tridiagonal_solve(
            a[0] * 0, a[1], a[2] * 0, b), (A, B)),
    }


OURS = _programs(jnp, lax, fluxion.grad)
THEIRS = _programs(jjnp, jax.lax, jax.grad)


def _targets_ours(text: str) -> set[str]:
    return set(re.findall(r'call_target_name = "([^"]+)"', text))


def _targets_jax(text: str) -> set[str]:
    return set(re.findall(r"custom_call @([\w.$-]+)\(", text))


@pytest.mark.parametrize("platforms", [("tpu",), ("cpu", "tpu")], ids=["tpu", "cpu+tpu"])
@pytest.mark.parametrize("name", list(OURS))
def test_export_custom_call_targets_match_jax(name: str, platforms: tuple) -> None:
    f, args = OURS[name]
    g, _ = THEIRS[name]
    ours = fexport.export(fluxion.jit(f), platforms=platforms)(*args).mlir_module()
    theirs = jax.export.export(jax.jit(g), platforms=list(platforms))(*args).mlir_module()
    assert _targets_ours(ours) == _targets_jax(theirs), (name, platforms)
    if platforms == ("tpu",):
        assert "lapack" not in ours
    if len(platforms) > 1:
        assert '"stablehlo.case"' in ours and 'jax.global_constant = "_platform_index"' in ours


def test_multi_platform_export_runs_here_and_round_trips() -> None:
    f = fluxion.jit(lambda a, b: (jnp.linalg.solve(a, b), jnp.linalg.cholesky(a @ a.T)))
    exp = fexport.export(f, platforms=["tpu", "cpu"])(A, B)
    want = f(A, B)
    for e in (exp, fexport.deserialize(exp.serialize())):
        got = e.call(A, B)
        for o, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(o), np.asarray(w), rtol=1e-6, atol=1e-6)
    here = fluxion.default_backend()
    other = "cuda" if here != "cuda" else "tpu"
    elsewhere = fexport.export(fluxion.jit(lambda a: jnp.linalg.cholesky(a @ a.T)),
                               platforms=[other])(A)
    with pytest.raises(ValueError, match=rf"exported for platforms \('{other}',\).*called on "
                                         rf"'{here}'"):
        elsewhere.call(A)


@pytest.mark.parametrize("fn,op", [
    (lambda a: jnp.linalg.eig(a), "eig"),
    (lambda a: lax.linalg.schur(a), "schur"),
])
def test_no_lowering_for_platform_raises_before_xla(fn, op) -> None:
    with pytest.raises(PlatformLoweringError, match=rf"{op} has no lowering for platform 'tpu'.*"
                       r"implemented on cpu only") as e:
        fexport.export(fluxion.jit(fn), platforms=["tpu"])(A)
    assert isinstance(e.value, NotImplementedError)
    assert "Custom emitter" not in str(e.value)


def test_float64_tpu_custom_call_names_op_and_dtype() -> None:
    with fluxion.enable_x64(True):
        a64 = A.astype(np.float64)
        with pytest.raises(NotImplementedError,
                           match=r"lax.linalg.lu: float64 operands .* not supported on the TPU"):
            fexport.export(fluxion.jit(jnp.linalg.inv), platforms=["tpu"])(a64)
        # what XLA emulates (float64 arithmetic, cholesky) still lowers for the TPU
        text = fexport.export(fluxion.jit(lambda a: jnp.linalg.cholesky(a) * 2.0),
                              platforms=["tpu"])(a64 @ a64.T).mlir_module()
        assert "stablehlo.cholesky" in text and "tensor<3x3xf64>" in text


@pytest.mark.parametrize("kind,fn", [
    ("pure_callback", lambda x: fluxion.pure_callback(
        lambda v: np.asarray(v) * 2, fluxion.ShapeDtypeStruct((3,), np.float32), x)),
    ("debug_callback", lambda x: (fluxion.debug.print("x={}", x), x * 2)[1]),
])
def test_host_callback_lowers_to_send_recv_for_tpu(kind, fn) -> None:
    # the TPU's host callbacks are host transfers (as jax emits them there), no custom call
    text = fexport.export(fluxion.jit(fn), platforms=["tpu"])(np.ones(3, np.float32)).mlir_module()
    assert "custom_call" not in text
    assert '"stablehlo.send"' in text and '"stablehlo.recv"' in text
    assert "is_host_transfer = true" in text and '"pjrt_rendezvous"' in text


def _callback_calls(text: str) -> list[tuple]:
    """(target, has_side_effect, index, operand types, result types) of each FFI host callback
    in a module's text, in either printed form (jax's pretty form, Fluxion's generic one)."""
    calls = []
    for line in text.splitlines():
        m = re.search(r'custom_call"?\s*@?\(?.*?(xla_ffi_python_\w+_callback)', line)
        if not m:
            continue
        index = int(re.search(r"index = (\d+) : ui64", line).group(1))
        effect = "has_side_effect = true" in line
        sig = re.search(r":\s*\(([^)]*)\)\s*->\s*(.*?)\s*$", line)
        results = sig.group(2).strip("()")
        calls.append((m.group(1), effect, index, sig.group(1), results))
    return calls


@pytest.mark.parametrize("platform", ["cuda", "rocm"])
def test_host_callbacks_lower_as_jax_for_gpu(platform) -> None:
    # On CUDA/ROCm jax 0.10.2 emits the GPU FFI callback (xla_ffi_python_gpu_callback) with the
    # CPU's operands, token and backend_config. jax refuses to lower callbacks for a platform
    # other than its backend's (it asks the backend only for the TPU's send/recv), so its CPU
    # client stands in for that lookup here.
    from jax._src import xla_bridge
    from jax._src.interpreters import mlir as jmlir
    from jax.experimental import io_callback as jio

    from fluxion.experimental import io_callback

    def body(lib, cb):
        def f(x):
            y = lib.pure_callback(np.sin, lib.ShapeDtypeStruct((3,), np.float32), x) * 2
            cb(lambda v: None, None, y, ordered=True)
            lib.debug.print("x={}", x)
            return y
        return f

    x = np.ones(3, np.float32)
    real = jmlir.ModuleContext.get_backend
    jmlir.ModuleContext.get_backend = lambda self: xla_bridge.get_backend("cpu")
    try:
        want = jax.jit(body(jax, jio)).trace(x).lower(lowering_platforms=(platform,)).as_text()
    finally:
        jmlir.ModuleContext.get_backend = real
    got = fexport.export(fluxion.jit(body(fluxion, io_callback)), platforms=[platform])(x)
    assert _callback_calls(got.mlir_module()) == _callback_calls(want)
    assert [c[0] for c in _callback_calls(want)] == ["xla_ffi_python_gpu_callback"] * 3


def test_ordered_callbacks_after_a_loop_wait_for_it_on_tpu() -> None:
    # an ordered callback after a loop whose body runs ordered callbacks must run after them:
    # on the TPU a host round trip takes the token and a loop result (the CPU's no-op host call
    # does the same), and the later callback's send takes the token that round trip returns
    from fluxion.experimental import io_callback

    def f(x):
        def body(i, c):
            io_callback(lambda v: None, None, c, ordered=True)
            return c + 1
        y = lax.fori_loop(0, 3, body, x)
        io_callback(lambda v: None, None, y, ordered=True)
        return y

    text = fexport.export(fluxion.jit(f), platforms=["tpu"])(np.float32(1)).mlir_module()
    loop = re.search(r'(%\w+):\d+ = "stablehlo.while"', text).group(1)
    sends = re.findall(rf'(%\w+) = "stablehlo.send"\({loop}#\d+, (%\w+(?:#\d+)?)\)', text)
    assert len(sends) == 2  # the round trip, then the callback after the loop
    back = re.search(rf'(%\w+):2 = "stablehlo.recv"\({sends[0][0]}\)', text).group(1)
    assert sends[1][1] == f"{back}#1"


def test_tridiagonal_solve_lax_lowering_matches_lapack() -> None:
    # the TPU's lowering is plain lax (no custom call): run that module here on the CPU
    from fluxion.backend.export import call_module, lower_module
    from fluxion.transforms.staging import trace_to_program
    rng = np.random.default_rng(0)
    dl, du = rng.standard_normal((2, 2, 5)).astype(np.float32)
    dl[:, 0] = du[:, -1] = 0
    d = (rng.standard_normal((2, 5)) + 4).astype(np.float32)
    b = rng.standard_normal((2, 5, 3)).astype(np.float32)
    f = lax.linalg.tridiagonal_solve
    program, _, _ = trace_to_program(f, (dl, d, du, b), {})
    text = lower_module(program, "tpu")
    assert "custom_call" not in text
    # both on the CPU (LAPACK's gtsv is the reference), also in a run on a TPU
    cpu = fluxion.devices("cpu")[0]
    dl, d, du, b = (fluxion.device_put(v, cpu) for v in (dl, d, du, b))
    got = call_module(text, program.out_avals, [dl, d, du, b])[0]
    np.testing.assert_allclose(np.asarray(got), np.asarray(f(dl, d, du, b)), rtol=1e-5,
                               atol=1e-5)


def test_tridiagonal_perturbed_has_no_lowering_off_the_cpu() -> None:
    # jax's lax fallback raises NotImplementedError for perturb_singular=True there too
    args = (np.zeros(3, np.float32), np.ones(3, np.float32), np.zeros(3, np.float32),
            np.ones((3, 1), np.float32))
    f = fluxion.jit(lambda *a: lax.linalg.tridiagonal_solve(*a, perturb_singular=True))
    with pytest.raises(NotImplementedError, match="perturb_singular=True is not supported on 'tpu'"):
        fexport.export(f, platforms=["tpu"])(*args)
    assert "tridiagonal_solve_perturbed_ffi" in fexport.export(f, platforms=["cpu"])(
        *args).mlir_module()


def test_threefry_form_follows_the_lowering_platform() -> None:
    # as jax: the rolled 5-iteration loop for the CPU, the 20 unrolled rounds elsewhere, chosen
    # for the platform the program is lowered for (not the default backend); only that branch
    # of platform_dependent is emitted
    key = fluxion.random.key(0)
    ours = {p: fexport.export(fluxion.jit(lambda k: fluxion.random.bits(k, (8,))),
                              platforms=[p])(key).mlir_module() for p in ("cpu", "tpu")}
    theirs = {p: jax.export.export(jax.jit(lambda k: jax.random.bits(k, (8,))),
                                   platforms=[p])(jax.random.key(0)).mlir_module()
              for p in ("cpu", "tpu")}
    for p in ("cpu", "tpu"):
        assert ("stablehlo.while" in ours[p]) == ("stablehlo.while" in theirs[p]) == (p == "cpu")
        assert "stablehlo.case" not in ours[p]
    both = fexport.export(fluxion.jit(lambda k: fluxion.random.bits(k, (8,))),
                          platforms=["cpu", "tpu"])(key)
    cpu_key = fluxion.device_put(key, fluxion.devices("cpu")[0])
    np.testing.assert_array_equal(np.asarray(both.call(cpu_key)),
                                  np.asarray(jax.random.bits(jax.random.key(0), (8,))))


@pytest.mark.clears_caches
@pytest.mark.parametrize("shape,full,uv", [((2, 5, 3), False, True), ((3, 4), True, True),
                                           ((2, 4, 4), False, False)])
def test_qdwh_svd_lowering_matches_numpy(shape, full, uv) -> None:
    # the TPU's svd (QDWH polar decomposition + eigh, as jax there) is lax over the linalg
    # primitives: compiled here with the CPU's rules for those, the algorithm itself is checked
    from fluxion.lax.linalg.svd import svd_p
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    cpu_rule = svd_p.platform_lowerings.pop("cpu")
    try:
        fluxion.clear_caches()
        outs = fluxion.jit(lambda x: lax.linalg.svd(x, full_matrices=full, compute_uv=uv))(a)
        text = fluxion.jit(lambda x: lax.linalg.svd(x, compute_uv=uv)).lower(a).as_text()
    finally:
        svd_p.platform_lowerings["cpu"] = cpu_rule
        fluxion.clear_caches()
    assert "gesdd" not in text and "gesvd" not in text
    want = np.linalg.svd(a, full_matrices=full, compute_uv=uv)
    if not uv:
        np.testing.assert_allclose(np.asarray(outs), want, rtol=1e-5, atol=1e-5)
        return
    u, s, vt = (np.asarray(o) for o in outs)
    np.testing.assert_allclose(s, want[1], rtol=1e-5, atol=1e-5)
    k = s.shape[-1]
    rec = np.einsum("...ik,...k,...kj->...ij", u[..., :k], s, vt[..., :k, :])
    np.testing.assert_allclose(rec, a, atol=2e-5 * np.abs(a).max())
    eye = np.eye(u.shape[-1])
    np.testing.assert_allclose(np.swapaxes(u.conj(), -1, -2) @ u,
                               np.broadcast_to(eye, u.shape[:-2] + eye.shape), atol=2e-5)


def test_platform_that_cannot_be_opened_is_warned_once_then_next_one() -> None:
    import os
    import subprocess
    import sys
    code = ("import warnings, fluxion\n"
            "from fluxion.backend import plugins\n"
            "plugins.tpu_library_path = lambda: '/nonexistent/libtpu.so'\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    b = fluxion.default_backend(); fluxion.devices()\n"
            "print(b, len([x for x in w if 'could not be opened' in str(x.message)]))\n"
            "print([str(x.message) for x in w][0])\n")
    env = dict(os.environ, FLUXION_PLATFORMS="tpu,cpu")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    first, msg = r.stdout.strip().splitlines()[-2:]
    assert first == "cpu 1", r.stdout
    assert "platform 'tpu' could not be opened" in msg and "falling back to 'cpu'" in msg
    assert "/nonexistent/libtpu.so" in msg


def test_held_tpu_error_names_the_cause() -> None:
    from fluxion.backend.client import _open_error
    e = _open_error("tpu", RuntimeError(
        "INTERNAL: Internal error when accessing libtpu multi-process lockfile. Run "
        "\"$ sudo lsof -w /tmp/libtpu_lockfile\""))
    assert "the TPU is held by another process" in str(e) and "FLUXION_PLATFORMS=cpu" in str(e)
    assert "could not open platform 'cuda'" in str(_open_error("cuda", RuntimeError("no GPU")))

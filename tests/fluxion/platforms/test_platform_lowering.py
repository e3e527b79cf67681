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
from jax._src.lax import linalg as jax_linalg  # geqrf: jax.lax.linalg does not export it

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


def _lowered(fun, *args, platforms) -> str:
    """The module Fluxion lowers ``fun`` (jitted here if it is not) to for ``platforms``, as
    jax's ``jit(f).trace(*args).lower(lowering_platforms=...)``: unlike export, it keeps host
    callbacks and custom calls without a compatibility promise (export refuses both, as jax's)."""
    jitted = fun if hasattr(fun, "trace") else fluxion.jit(fun)
    return jitted.trace(*args).lower(lowering_platforms=tuple(platforms)).as_text()


@pytest.mark.parametrize("platforms", [("tpu",), ("cpu", "tpu"), ("cuda",), ("rocm",)],
                         ids=["tpu", "cpu+tpu", "cuda", "rocm"])
@pytest.mark.parametrize("name", list(OURS))
def test_export_custom_call_targets_match_jax(name: str, platforms: tuple) -> None:
    f, args = OURS[name]
    g, _ = THEIRS[name]
    if platforms[0] in ("cuda", "rocm"):
        ours = _lowered(f, *args, platforms=platforms)
        # jax's lowered module: its export refuses the targets it makes no compatibility
        # promise for (ROCm's gtsv2) and drops calls whose results are unused (slogdet's
        # permutation), which XLA drops when it compiles
        theirs = jax.jit(g).trace(*args).lower(lowering_platforms=platforms).as_text()
    else:
        ours = fexport.export(fluxion.jit(f), platforms=platforms)(*args).mlir_module()
        theirs = jax.export.export(jax.jit(g), platforms=list(platforms))(*args).mlir_module()
    assert _targets_ours(ours) == _targets_jax(theirs), (name, platforms)
    if platforms == ("tpu",):
        assert "lapack" not in ours
    if len(platforms) > 1:
        assert '"stablehlo.case"' in ours and 'jax.global_constant = "_platform_index"' in ours


def _gpu_programs(np_mod, ll, grad, vmap):
    """Programs whose GPU lowerings differ from one another (dtypes, batch dimensions, each
    kernel's options and size thresholds), written against fluxion or jax (``ll``: its
    lax.linalg, with geqrf and householder_product)."""
    lin = np_mod.linalg
    big = np.ones((40, 36), np.float32)
    tall = np.ones((1025, 2), np.float32)  # past 1024 rows: gesvd instead of Jacobi
    piv = np.array([[2, 2, 3], [1, 2, 3]], np.int32)
    c64 = (SPD + 1j * np.triu(SPD, 1) - 1j * np.tril(SPD, -1)).astype(np.complex64)
    return {
        "cholesky_c64": (lambda a: lin.cholesky(a), (c64,)),
        "vmap_cholesky": (vmap(lambda a: lin.cholesky(a)), (np.stack([SPD, SPD]),)),
        "lu_wide": (lambda a: ll.lu(a[:2]), (A,)),
        "lu_tall_c64": (lambda a: ll.lu(a.astype(np.complex64)[:, :2]), (A,)),
        "lu_pivots_batched": (lambda p: ll.lu_pivots_to_permutation(p, 5), (piv,)),
        "geqrf_householder": (lambda a: ll.householder_product(*ll.geqrf(a)), (A[:, :2],)),
        "qr_thin_tall": (lambda a: lin.qr(np_mod.concatenate([a, a]), mode="reduced"), (A,)),
        "qr_pivoting": (lambda a: ll.qr(a, pivoting=True), (A,)),
        "eigh_upper_jacobi": (lambda a: ll.eigh(a, lower=False,
                                                implementation=ll.EighImplementation.JACOBI),
                              (SPD,)),
        "eigh_qr_batched_c64": (lambda a: ll.eigh(np_mod.stack([a, a]),
                                                  implementation=ll.EighImplementation.QR),
                                (c64,)),
        "svd_thin_small": (lambda a: lin.svd(a, full_matrices=False), (A[:, :2],)),
        "svd_thin_econ": (lambda a: lin.svd(a, full_matrices=False), (big,)),
        "svd_full_big": (lambda a: lin.svd(a), (big,)),
        "svd_past_1024": (lambda a: ll.svd(a, full_matrices=False), (tall,)),
        "svd_past_1024_values": (lambda a: ll.svd(a, compute_uv=False), (tall,)),
        "svd_qr_wide": (lambda a: ll.svd(a[:2], algorithm=ll.SvdAlgorithm.QR), (A,)),
        "svd_qr_wide_values": (lambda a: ll.svd(a[:2], compute_uv=False,
                                                algorithm=ll.SvdAlgorithm.QR), (A,)),
        "svd_polar_thin": (lambda a: ll.svd(a, full_matrices=False,
                                            algorithm=ll.SvdAlgorithm.POLAR), (A,)),
        "svd_jacobi_c64": (lambda a: ll.svd(a, algorithm=ll.SvdAlgorithm.JACOBI), (c64,)),
        "grad_svd": (grad(lambda a: lin.svd(a, compute_uv=False).sum()), (A,)),
        "lstsq": (lambda a, b: lin.lstsq(a, b)[0], (A, B)),
        "tridiagonal": (lambda a: ll.tridiagonal(a), (SPD,)),
        "tridiagonal_upper_c64": (lambda a: ll.tridiagonal(a, lower=False), (c64,)),
        "tridiagonal_solve_batched": (lambda a, b: ll.tridiagonal_solve(
            np_mod.stack([a[0] * 0] * 2), np_mod.stack([a[1]] * 2), np_mod.stack([a[2] * 0] * 2),
            np_mod.stack([b, b])), (A, B)),
        # one solve with the batch among b's columns, as jax's batching rule
        "vmap_tridiagonal_solve_rhs": (lambda a, b: vmap(lambda c: ll.tridiagonal_solve(
            a[0] * 0, a[1], a[2] * 0, c))(np_mod.stack([b, b, b])), (A, B)),
        "tridiagonal_solve_perturbed": (lambda a, b: ll.tridiagonal_solve(
            a[0] * 0, a[1], a[2] * 0, b, perturb_singular=True), (A, B)),
        "eig": (lambda a: lin.eig(a), (A,)),
        "eigvals": (lambda a: lin.eigvals(a), (A,)),
        "eig_left_c64": (lambda a: ll.eig(a.astype(np.complex64)), (A,)),
        "eig_magma_off": (lambda a: ll.eig(a, compute_left_eigenvectors=False,
                                           implementation=ll.EigImplementation.LAPACK), (A,)),
    }


# (the programs above with no custom call on a GPU, triangular_solve and det, are left out)
_NO_GPU_CALL = ("triangular_solve", "det", "grad_det")
GPU_OURS = {**{k: v for k, v in OURS.items() if k not in _NO_GPU_CALL},
            **_gpu_programs(jnp, lax.linalg, fluxion.grad, fluxion.vmap)}
GPU_THEIRS = {**THEIRS, **_gpu_programs(jjnp, jax_linalg, jax.grad, jax.vmap)}

# attributes of a custom call and the value MLIR leaves out of the printed form when it is
# the default (jax's pretty printer omits them)
_CALL_ATTRS = {"call_target_name": None, "api_version": "1 : i32", "has_side_effect": "false",
               "backend_config": '""', "operand_layouts": None, "result_layouts": None,
               "output_operand_aliases": "[]", "mhlo.backend_config": None,
               "mhlo.frontend_attributes": None}


def _custom_calls(text: str) -> list[tuple]:
    """Each ``stablehlo.custom_call`` of a module (jax's pretty form or Fluxion's generic one,
    both read by MLIR's parser): its attributes above, operand types and result types.
    ``sdy.sharding_rule`` (Shardy's partitioning rule, which jax adds) is left out."""
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import ir

    calls = []

    def walk(op):
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    inner = inner.operation
                    if inner.name == "stablehlo.custom_call":
                        attrs = tuple(
                            (k, str(inner.attributes[k]) if k in inner.attributes else d)
                            for k, d in _CALL_ATTRS.items())
                        calls.append((attrs, tuple(str(v.type) for v in inner.operands),
                                      tuple(str(r.type) for r in inner.results)))
                    walk(inner)

    with jmlir.make_ir_context():
        walk(ir.Module.parse(text).operation)
    return sorted(calls)


@pytest.mark.parametrize("platform", ["cuda", "rocm"])
@pytest.mark.parametrize("name", list(GPU_OURS))
def test_gpu_custom_calls_match_jax(name: str, platform: str) -> None:
    # each custom call of the module Fluxion exports for CUDA / ROCm equals one of jax's
    # lowered module for that platform: target, operand and result types, layouts, aliases,
    # backend_config attributes and batch dimensions (jax's eig, qr(pivoting=True) and ROCm
    # gtsv2 lower but do not export: their targets have no compatibility promise)
    f, args = GPU_OURS[name]
    g, _ = GPU_THEIRS[name]
    ours = _lowered(f, *args, platforms=[platform])
    theirs = jax.jit(g).trace(*args).lower(lowering_platforms=(platform,)).as_text()
    want = _custom_calls(theirs)
    assert want and _custom_calls(ours) == want, name
    assert "lapack" not in ours


@pytest.mark.parametrize("platform", ["cuda", "rocm"])
def test_gpu_svd_and_eig_choices_jax_refuses_are_refused(platform: str) -> None:
    # cuSOLVER has no divide-and-conquer SVD (as jax, NotImplementedError while lowering); on
    # ROCm jax's divide and conquer is hipSOLVER's gesdd
    dc = fluxion.jit(lambda a: lax.linalg.svd(
        a, algorithm=lax.linalg.SvdAlgorithm.DIVIDE_AND_CONQUER))
    if platform == "cuda":
        with pytest.raises(NotImplementedError, match="DIVIDE_AND_CONQUER"):
            _lowered(dc, A, platforms=["cuda"])
    else:
        ours = _lowered(dc, A, platforms=["rocm"])
        theirs = jax.jit(lambda a: jax.lax.linalg.svd(
            a, algorithm=jax.lax.linalg.SvdAlgorithm.DIVIDE_AND_CONQUER)).trace(A).lower(
            lowering_platforms=("rocm",)).as_text()
        assert _custom_calls(ours) == _custom_calls(theirs)
        assert "hipsolver_gesdd_ffi" in ours


class _CusolverVersions:
    """Stands in for jax's ``cuda_versions`` (the CUDA plugin's ``_versions`` module)."""

    def __init__(self, version: int) -> None:
        self.version = version

    def cusolver_get_version(self) -> int:
        return self.version


@pytest.mark.parametrize("version", [None, 11700, 11701])
@pytest.mark.parametrize("platform", ["cuda", "rocm"])
def test_gpu_eig_picks_geev_by_cusolver_version_as_jax(monkeypatch, platform, version) -> None:
    # jax 0.10.2 asks the CUDA plugin for cuSOLVER's version while lowering: 11.7.1 or newer ->
    # geev by default (right eigenvectors only) and for EigImplementation.CUSOLVER; older, no
    # plugin or ROCm -> the hybrid kernel by default and a RuntimeError for CUSOLVER
    import jax._src.lax.linalg as jax_linalg

    from fluxion.backend import plugins
    monkeypatch.setattr(jax_linalg, "cuda_versions",
                        None if version is None else _CusolverVersions(version))
    monkeypatch.setattr(plugins, "cusolver_version", lambda: version)
    cases = [(dict(compute_left_eigenvectors=False), None),
             (dict(compute_left_eigenvectors=True), None),
             (dict(compute_left_eigenvectors=False), "CUSOLVER")]
    for kwargs, impl in cases:
        ours_impl = None if impl is None else lax.linalg.EigImplementation.CUSOLVER
        their_impl = None if impl is None else jax.lax.linalg.EigImplementation.CUSOLVER
        ours_f = lambda a: lax.linalg.eig(a, implementation=ours_impl, **kwargs)  # noqa: E731
        their_f = lambda a: jax.lax.linalg.eig(a, implementation=their_impl,  # noqa: E731
                                               **kwargs)
        try:
            theirs = jax.jit(their_f).trace(A).lower(lowering_platforms=(platform,)).as_text()
        except RuntimeError as e:
            assert "11.7.1" in str(e)
            with pytest.raises(RuntimeError, match="cuSOLVER 11.7.1 or newer"):
                _lowered(ours_f, A, platforms=[platform])
            continue
        ours = _lowered(ours_f, A, platforms=[platform])
        assert _custom_calls(ours) == _custom_calls(theirs), (kwargs, impl)
    geev = platform == "cuda" and (version or 0) >= 11701
    default = _lowered(lambda a: lax.linalg.eig(a, compute_left_eigenvectors=False), A,
                       platforms=[platform])
    assert ("cusolver_geev_ffi" in default) == geev


@pytest.mark.parametrize("platform", ["cuda", "rocm"])
def test_gpu_tridiagonal_solve_uses_gtsv2_from_three_rows(platform: str) -> None:
    # the GPU sparse solver needs m >= 3: below that, the lax solve (no custom call), as jax
    def f(rows):
        return fluxion.jit(lambda a, b: lax.linalg.tridiagonal_solve(
            a[0, :rows] * 0, a[1, :rows], a[2, :rows] * 0, b[:rows]))

    two = _lowered(f(2), A, B, platforms=[platform])
    three = _lowered(f(3), A, B, platforms=[platform])
    assert "custom_call" not in two and '"stablehlo.while"' in two
    prefix = "cu" if platform == "cuda" else "hip"
    assert _targets_ours(three) == {f"{prefix}sparse_gtsv2_ffi"}


@pytest.mark.parametrize("platform", ["cuda", "rocm"])
def test_cuda_only_kernels_match_jax(platform: str) -> None:
    # cholesky_update and symmetric_product call the CUDA plugin's kernels (a plain FFI call:
    # default layouts, no batch attribute); on ROCm, as jax, they lower to lax operations
    r = np.triu(SPD)
    programs = [
        (fluxion.jit(lax.linalg.cholesky_update), jax.jit(jax.lax.linalg.cholesky_update),
         (r, B[:, 0]), "cu_cholesky_update_ffi"),
        (fluxion.jit(lambda a, c: lax.linalg.symmetric_product(a, c, alpha=2.0, beta=0.5)),
         jax.jit(lambda a, c: jax.lax.linalg.symmetric_product(a, c, alpha=2.0, beta=0.5)),
         (B, SPD), "cusolver_syrk_ffi"),
    ]
    for f, g, args, target in programs:
        ours = _lowered(f, *args, platforms=[platform])
        theirs = g.trace(*args).lower(lowering_platforms=(platform,)).as_text()
        assert _custom_calls(ours) == _custom_calls(theirs), target
        assert _targets_ours(ours) == ({target} if platform == "cuda" else set())


def test_unpack_conjugate_pairs_matches_numpy_eig() -> None:
    # cuSOLVER's geev packs a real matrix's complex eigenvectors as LAPACK's does: unpacked
    # from LAPACK's own output here, they are numpy's eigenvectors
    from scipy.linalg import lapack as scipy_lapack

    from fluxion.lax.linalg.eig import unpack_conjugate_pairs
    a = np.random.default_rng(0).standard_normal((3, 6, 6))
    w, v = [], []
    for m in a:
        wr, wi, _, vr, info = scipy_lapack.dgeev(m)
        assert info == 0 and (wi != 0).any()
        w.append(wr + 1j * wi)
        v.append(vr)
    got = unpack_conjugate_pairs(np.array(w).astype(np.complex64), np.array(v, np.float32))
    np.testing.assert_allclose(np.asarray(got), np.linalg.eig(a)[1], atol=1e-6)


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


@pytest.mark.parametrize("fn,op,have", [
    (lambda a: jnp.linalg.eig(a), "eig", "cpu, cuda, rocm"),
    (lambda a: lax.linalg.schur(a), "schur", "cpu"),
])
def test_no_lowering_for_platform_raises_before_xla(fn, op, have) -> None:
    with pytest.raises(PlatformLoweringError, match=rf"{op} has no lowering for platform 'tpu'.*"
                       rf"implemented on {have} only") as e:
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
    text = _lowered(fn, np.ones(3, np.float32), platforms=["tpu"])
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
    got = _lowered(body(fluxion, io_callback), x, platforms=[platform])
    assert _callback_calls(got) == _callback_calls(want)
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

    text = _lowered(f, np.float32(1), platforms=["tpu"])
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
    assert "tridiagonal_solve_perturbed_ffi" in _lowered(f, *args, platforms=["cpu"])


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

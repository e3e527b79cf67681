"""Repository-wide pytest set-up: the ``slow`` marker.

Tests marked ``slow`` (each spends many seconds in XLA compiles without covering new code paths)
run only when ``FLUXION_SLOW=1``; CI's scheduled job sets it, the per-commit job does not.
"""

from __future__ import annotations

import os
import sys

# Every test process gets 8 host CPU devices (as JAX's own test suite does), for the tests of
# devices, shardings, shard_map and pmap. Set before anything imports jaxlib or jax, which read it
# when they create their CPU client; single-device code keeps running on device 0.
if "--xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + " --xla_force_host_platform_device_count=8").strip()

# The persistent executable cache (on by default in ~/.cache/fluxion) stays off in the test
# suite, in this process and in the subprocesses tests start: a test run must not write into the
# user's cache, and tests must not depend on what an earlier run left there. The cache's own tests
# (tests/fluxion/test_compile_cache.py) turn it on with a temporary directory.
os.environ["FLUXION_ENABLE_COMPILATION_CACHE"] = "0"

# Fluxion's internal invariant checks (jax_enable_checks: every program jit compiles is
# type-checked against its primitives' rules) are off for users, as in JAX, and on for the whole
# test suite and the subprocesses it starts, so that every program a test builds is checked.
# FLUXION_ENABLE_CHECKS rather than JAX_ENABLE_CHECKS: the reference jax keeps its default.
os.environ["FLUXION_ENABLE_CHECKS"] = "1"


def _test_platform() -> str:
    """The platform Fluxion runs on in this test process: ``--platform NAME`` on the pytest
    command line or ``FLUXION_TEST_PLATFORM`` (default cpu). Read here, at the first conftest's
    import, because it must be in the environment before fluxion or jax opens a backend."""
    argv = sys.argv
    for i, a in enumerate(argv):
        if a == "--platform" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--platform="):
            return a.split("=", 1)[1]
    return os.environ.get("FLUXION_TEST_PLATFORM", "cpu")


# ``--platform tpu`` (tools/bootstrap.py test --platform tpu): Fluxion on the chip, the
# reference jax on the CPU (one process at a time may hold a TPU, so jax must not open it),
# per-platform tolerances in tests/fluxion/_compare.py, and one test process (no xdist).
TEST_PLATFORM = _test_platform().lower()
if TEST_PLATFORM != "cpu":
    os.environ["FLUXION_TEST_PLATFORM"] = TEST_PLATFORM
    os.environ["FLUXION_PLATFORMS"] = f"{TEST_PLATFORM},cpu"
    os.environ["JAX_PLATFORMS"] = "cpu"

# The comparison helpers of tests/fluxion/_compare.py (assert_same, platform_tol, ...) serve the
# tests of every package, so that each compares with its reference under the same per-platform
# tolerances: ``from _compare import platform_tol`` works in any test file.
_FLUXION_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fluxion")
if _FLUXION_TESTS not in sys.path:
    sys.path.insert(0, _FLUXION_TESTS)

# On a TPU, float32 matmuls and convolutions at default precision run in bf16 passes (about 3
# digits): every package's tests compare them with the CPU reference under "highest" precision
# (about 7), so that a difference shows the lowering, not the chip's default
# (docs/guide/platforms.md). Tests that check the flag itself set it. The reference jax gets the
# same setting (on its CPU it changes no value), so that jaxprs, which record the default
# precision, and flags compare equal; the ecosystem references (flax, haiku, jax_md, optax, rlax)
# run on that jax.
if TEST_PLATFORM != "cpu":
    import jax

    import fluxion

    fluxion.config.update("jax_default_matmul_precision", "highest")
    jax.config.update("jax_default_matmul_precision", "highest")

    # Every package's tests that call np.testing.assert_allclose with a tolerance written for
    # the CPU get the platform's float tolerance instead, where it is wider (as jax's suite).
    from _compare import install_platform_tolerances

    install_platform_tolerances(TEST_PLATFORM)

import pytest

# The heaviest cases of the per-commit run (8-27 s each, nearly all XLA compile time; measured
# with --durations on 2 cores), kept for the nightly run so the per-commit suite stays under its
# 25-minute budget. Each file still runs its other cases per commit. Remove an entry once the case
# is made cheaper.
NIGHTLY_ONLY = (
    "tests/fluxion_md/test_md_simulate.py::test_minimizers_match_jax_md",
    "tests/fluxion_md/test_md_simulate.py::test_trajectories_match_jax_md[temp_csvr]",
    "tests/fluxion/test_random_gamma.py::test_beta_and_dirichlet_grads_match_jax",
    "tests/fluxion_nn/test_nn_haiku.py::test_multi_head_attention_and_deep_rnn",
    "tests/fluxion_rl/test_rl_agents.py::test_ppo_update_runs_one_jit",
    "tests/fluxion_md/test_md_energy.py::test_neighbor_list_matches_jax_md_and_pair[lennard_jones]",
    "tests/fluxion_md/test_md_simulate.py::test_quantities_match_jax_md",
    "tests/fluxion/test_random_gamma.py::test_gamma_under_vmap_matches_jax",
    "tests/fluxion/test_random_multivariate.py::test_orthogonal_matches_jax[x64-0]",
    "tests/fluxion/test_random_multivariate.py::test_orthogonal_dtypes[x64]",
    "tests/fluxion_md/test_md_energy.py::test_against_ase_lennard_jones_and_morse",
    "tests/fluxion_scipy/test_scipy_misc.py::test_dct_family_vs_scipy",
    "tests/fluxion/test_random_multivariate.py::test_multivariate_normal_matches_jax[x64-0-svd]",
    "tests/fluxion_md/test_md_space.py::test_spaces_and_maps[general_real]",
    "tests/fluxion/test_nn.py::test_logsumexp_variants",
    "tests/fluxion/test_random_multivariate.py::test_multivariate_normal_matches_jax[x64-0-cholesky]",
    "tests/fluxion/test_random_multivariate.py::test_multivariate_normal_matches_jax[x32-0-eigh]",
    "tests/fluxion_rl/test_rl_vs_rlax_more.py::test_transform_pairs",
    "tests/fluxion_md/test_md_simulate.py::test_trajectories_match_jax_md[nvt_nose_hoover]",
    "tests/fluxion_scipy/test_scipy_spatial.py::test_conversions_vs_scipy",
    "tests/fluxion/test_random_multivariate.py::test_multivariate_normal_matches_jax[x32-0-cholesky]",
    "tests/fluxion/test_random_multivariate.py::test_multivariate_normal_matches_jax[x64-0-eigh]",
    "tests/fluxion/test_random_multivariate.py::test_orthogonal_matches_jax[x32-0]",
    "tests/fluxion/test_random_multivariate.py::test_multivariate_normal_matches_jax[x32-0-svd]",
    "tests/fluxion/numpy/test_linalg.py::test_grad_det_slogdet[4]",
    "tests/fluxion/test_random_gamma.py::test_loggamma_grad_and_jvp_match_jax",
    "tests/fluxion/test_nn.py::test_initializers_x64_and_complex",
    "tests/fluxion/numpy/test_namespace.py::test_x64_dtypes",
    "tests/fluxion_rl/test_rl_vs_rlax_more.py::test_memory_and_subsequences",
    "tests/fluxion_rl/test_rl_vs_rlax_more.py::test_squashed_gaussian[None]",
    "tests/fluxion/test_nn.py::test_dot_product_attention_shapes_residual_and_errors",
    "tests/fluxion_nn/test_nn_layers.py::test_multi_head_attention[kw0]",
    "tests/fluxion/test_random_multivariate.py::test_vmap_over_keys[x32]",
    "tests/fluxion_nn/test_nn_haiku.py::test_conv_layernorm_pool_embed",
    "tests/fluxion_scipy/test_scipy_misc.py::test_map_coordinates_cubic_vs_scipy",
    "tests/fluxion_nn/test_nn_haiku_lifted.py::test_remat_matches_and_differentiates",
    "tests/fluxion_scipy/test_scipy_integrate.py::test_odeint_pytree_closure_jit_vmap",
    "tests/fluxion_scipy/test_scipy_signal.py::test_spectral_estimates_vs_scipy",
    "tests/fluxion_rl/test_rl_vs_rlax_more.py::test_discrete_distributions[softmax]",
    "tests/fluxion_scipy/test_scipy_optimize.py::test_minimize_vs_scipy_and_jax[BFGS]",
    "tests/fluxion/test_random_gamma.py::test_gamma_grad_matches_jax",
    "tests/fluxion_rl/test_rl_vs_rlax_more.py::test_discrete_distributions[clipped_entropy_softmax]",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--platform", default="cpu",
                     help="platform Fluxion runs the tests on (cpu, tpu, cuda); the reference "
                          "jax stays on the CPU. Use one process (-p no:xdist) on a TPU.")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: long-running; run with FLUXION_SLOW=1")
    config.addinivalue_line("markers", "tpu: needs Fluxion running on a TPU (skipped elsewhere)")
    config.addinivalue_line("markers", "clears_caches: empties the test process's compile caches "
                            "(fluxion.clear_caches, a one-byte cache budget); runs after the "
                            "other tests")
    if TEST_PLATFORM != "cpu" and getattr(config.option, "numprocesses", None):
        raise pytest.UsageError(f"--platform {TEST_PLATFORM}: run the tests in one process "
                                "(-p no:xdist or -n 0): one process at a time may hold the chip")


# Tests that cannot apply on a TPU (reason given in the skip), by node-id pattern.
PLATFORM_INAPPLICABLE = {
    "tpu": [
        (r"tests/fluxion/lax/test_linalg\.py::test_lowering_uses_lapack_and_cpu_only",
         "checks the CPU's LAPACK lowering"),
        (r"tests/fluxion/lax/test_linalg\.py::test_\w*_x64",
         "float64 linalg: the TPU's linalg kernels are 32-bit (jax raises there too)"),
        (r"tests/fluxion/lax/test_linalg\.py::\S*(\beig\b|eig\[|eig_|schur|hessenberg|"
         r"qr_pivot)", "no TPU lowering: eig/schur/hessenberg have none in jax either, "
         "geqp3 (qr pivoting) is LAPACK's"),
        (r"tests/fluxion/numpy/test_linalg\.py::test_\w*x64",
         "float64 linalg: the TPU's linalg kernels are 32-bit (jax raises there too)"),
        (r"tests/fluxion/numpy/test_linalg\.py::test_eig\[",
         "no TPU lowering: eig has none in jax either"),
        (r"tests/fluxion/lax/test_windowed\.py::test_reduce_window\[.*-add-1\.5\]",
         "a reduction's init value that is not its identity is applied an implementation-defined "
         "number of times (XLA's semantics; the TPU adds it once per padding element, the CPU once)"),
        (r"tests/fluxion/lax/test_reductions\.py::test_reduce_non_identity_init$",
         "a reduction's init value that is not its identity is applied an implementation-defined "
         "number of times (XLA's semantics; a 3x4 sum with init 2.0 gave 4074.4 on a v5e, 4.38 on "
         "the CPU; jax lowers lax.reduce to the same stablehlo.reduce)"),
        (r"tests/fluxion/lax/test_reductions\.py::test_reduce_order_dependent_computation$",
         "a reducer that is not associative (x * 2 + y) gives a result that depends on XLA's "
         "implementation-defined combining order (sequential on the CPU; a 3x4 int32 reduce gave "
         "-458752 for 7 on a v5e; jax lowers lax.reduce to the same stablehlo.reduce)"),
        (r"tests/fluxion/(test_jit_keep_unused\.py::test_scan_loop_counter_width_like_jax\[|"
         r"lax/test_extremum_jvp\.py::test_relu_gradient_program_like_jax$)",
         "compares Fluxion's optimized HLO with the reference jax's, which is compiled for the "
         "CPU in a TPU run (the TPU's compiled text has other layouts and fusions)"),
        (r"tests/fluxion/test_random\.py::test_sampler_matches_jax\[truncated_normal-x64\]$",
         "float64 nextafter on the TPU: XLA's TPU compiler rejects its expansion of "
         "chlo.next_after after the 64-bit rewrite ('Binary op and with different element types: "
         "s32[] and u32[]', seen on a v5e); jax lowers truncated_normal's clip to the same "
         "chlo.next_after"),
        (r"tests/fluxion/lax/test_windowed\.py::(test_select_and_scatter_add|"
         r"test_max_pool_gradient_matches_jax)$",
         "XLA's TPU select-and-scatter needs window 1 in the two minor-most dimensions (a 2-D "
         "operand: UNIMPLEMENTED there, seen on a v5e)"),
        (r"tests/fluxion/transforms/test_rules_extra\.py::(test_reduce_window_rules\[[01]-(max|min)\]"
         r"|test_select_and_scatter_add_rules$)",
         "XLA's TPU select-and-scatter needs window 1 in the two minor-most dimensions (the "
         "gradient of a 2-D max/min window: UNIMPLEMENTED there, seen on a v5e)"),
        (r"tests/fluxion/test_jit_compiler_options\.py::test_optimized_hlo_under_an_option_as_in_jax$",
         "compares Fluxion's optimized HLO with the reference jax's, which is compiled for the "
         "CPU in a TPU run"),
        (r"tests/fluxion/test_transfer_guard\.py::(test_device_to_host_as_jax\[|"
         r"test_the_readback_of_other_platforms_passes_the_guard$)",
         "compares with the reference jax on the CPU, whose reads are in place (no transfer); "
         "on a TPU every first read copies and is guarded "
         "(test_every_first_read_of_a_tpu_array_is_guarded)"),
        (r"tests/fluxion_scipy/(test_scipy_linalg\.py::(test_lu_family|test_qr_svd_polar|"
         r"test_eigh_family|test_solvers|test_matrix_functions)$|test_scipy_misc\.py::"
         r"test_sparse_solvers$|test_scipy_optimize\.py::(test_minimize_lbfgsb_bounded_jit_vmap_"
         r"and_limits_as_scipy|test_minimize_implicit_gradient_jit_vmap|test_root_vs_scipy|"
         r"test_least_squares_vs_scipy\[\w+\]|test_least_squares_bounds)$|test_scipy_spatial\.py::"
         r"test_composition_apply_mean$)",
         "float64 linalg (LU, QR, Eigh against SciPy): the TPU's linalg kernels are 32-bit "
         "(Fluxion raises NotImplementedError there, jax raises too)"),
        (r"tests/fluxion_scipy/test_scipy_signal\.py::(test_convolutions_vs_scipy\[\w+\]|"
         r"test_fftconvolve_axes_and_errors|test_stft_istft_vs_scipy)$",
         "float64 FFT against SciPy: the TPU's FFT is 32-bit (XLA rejects float64 there, in jax "
         "too; Fluxion raises NotImplementedError first)"),
        (r"tests/fluxion_scipy/test_scipy_special\.py::test_sph_harm_y_vs_scipy$",
         "float64 to complex128: XLA's TPU compiler aborts the process on a convert to "
         "complex128 (in jax too); Fluxion's TPU rule now builds it from its parts instead "
         "(lax/conversions.py), not yet run on a chip here, where an abort ends the whole run"),
        (r"tests/fluxion/test_cpu_compile_options\.py::(test_override_only_with_flag|"
         r"test_disk_cache_key_depends_on_setting|test_same_results_either_way)$",
         "checks the XLA options Fluxion sets for CPU compiles (fluxion_cpu_fast_compile)"),
        (r"tests/fluxion/surface/(test_surface_compat_names\.py::test_mesh_utils_like_jax$|"
         r"test_surface_array_api\.py::test_namespace_info_like_jax$)",
         "compares device lists with the reference jax's 8 CPU devices (the TPU run has one chip)"),
        (r"tests/fluxion/surface/test_surface_lax\.py::test_rng_bit_generator_matches_jax\[",
         "RNG_DEFAULT is an implementation-defined algorithm in XLA (the same StableHLO gives "
         "other bits on the TPU than on the CPU reference, seen on a v5e)"),
        (r"tests/fluxion/numpy/test_numpy_fft\.py::test_x64_dtypes$",
         "complex128 on the TPU: XLA's TPU compiler aborted the process compiling the float64 to "
         "complex128 conversion (seen on a v5e; no 128-bit complex emulation there; jax's float64 "
         "fft was reported to raise on such a chip)"),
        (r"tests/fluxion/test_random_multivariate\.py::((test_under_jit|test_vmap_over_keys|"
         r"test_orthogonal_matches_jax|test_orthogonal_dtypes)\[x64|"
         r"test_multivariate_normal_matches_jax\[x64-\d+-(eigh|svd)\])",
         "float64 eigh/qr/svd: the TPU's linalg kernels are 32-bit (Fluxion raises "
         "NotImplementedError naming them, as jax raises there)"),
        (r"tests/fluxion/lax/test_slicing\.py::test_scatter_apply_with_captured_constant$",
         "XLA's TPU compiler rejects a scatter combiner that computes with a vector constant "
         "('Attempted to compile iota as an elementwise vector operation', seen on a v5e)"),
        (r"tests/fluxion/test_prng_impls\.py::(test_rbg_keys_and_a_key_batch_like_jax|"
         r"test_rng_bit_generator_vmap_like_jax|test_default_impl_rbg_for_raw_keys|"
         r"(test_key_operations_match_jax|test_samplers_match_jax|"
         r"test_rbg_under_jit_vmap_grad_like_jax)\[(unsafe_)?rbg\])$",
         "rbg's bits are XLA's RngBitGenerator with RNG_DEFAULT, an implementation-defined "
         "algorithm: other bits and output keys on the TPU than on the CPU reference (seen on a "
         "v5e; rbg's threefry-based split and fold_in keys matched there)"),
        (r"tests/fluxion/test_nested_jits_like_jax\.py::test_ppo_style_loss_gradient_gets_jaxs_"
         r"fusions$",
         "compares Fluxion's optimized HLO with the reference jax's, which is compiled for the "
         "CPU in a TPU run (the TPU's compiled text has other layouts and fusions)"),
        (r"tests/fluxion_md/test_md_partition\.py::(test_dr_threshold_and_fractional_coordinates|"
         r"test_box_matrix_in_real_coordinates_uses_no_cell_list_like_jax_md)$",
         "float64 box matrices: periodic_general inverts the box (jnp.linalg.inv, an LU), and the "
         "TPU's LuDecomposition kernel is 32-bit (Fluxion raises NotImplementedError there; jax_md "
         "on jax emits the same float64 LuDecomposition custom call for the TPU, which XLA rejects)"),
    ],
}


def _without_group(nodeid: str) -> str:
    """A test id without xdist's ``@<group>`` suffix (an ``@`` inside ``[...]`` is a parameter's)."""
    at = nodeid.rfind("@")
    return nodeid[:at] if at > nodeid.rfind("]") else nodeid


def _apply_xdist_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--dist loadgroup`` on an xdist worker: give each ``xdist_group``-marked test the id
    suffix ``@<group>`` by which the controller keeps a group on one worker.

    pytest-xdist (3.8) appends it by assigning ``item._nodeid``, but pytest 9.2 reads an item's id
    from ``item._id`` (a NodeId), so the suffix never reached the controller and every group was
    split over both workers (a module fixture such as the optax runs or the docs build was then
    computed once per worker). Applied here, after xdist's own hook, only when the id has no
    suffix yet (so an xdist that sets it itself is left alone)."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        nodeid = item.nodeid
        if not names or _without_group(nodeid) != nodeid:
            continue
        tagged = f"{nodeid}@{'_'.join(names)}"
        if isinstance(getattr(item, "_id", None), str) or not hasattr(item, "_id"):
            item._nodeid = tagged
        else:
            item._id = type(item._id).parse(tagged)


def _clearing_tests_last(items: list[pytest.Item]) -> None:
    """Move the ``clears_caches`` tests to the end of the collection, keeping both parts' order.

    A test worker shares its compiled executables across tests (the common conversions and
    arithmetic of small shapes, the library's jitted functions); a test that empties those caches
    in the middle of a run made the tests after it compile them all again. xdist hands out the
    tests in collection order (groups first), so these now run last on each worker."""
    clearing = [it for it in items if it.get_closest_marker("clears_caches") is not None]
    if clearing:
        keep = [it for it in items if it.get_closest_marker("clears_caches") is None]
        items[:] = keep + clearing


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    import re
    _clearing_tests_last(items)
    if TEST_PLATFORM != "tpu":  # the marker's promise (pytest_configure)
        needs_tpu = pytest.mark.skip(reason="needs Fluxion on a TPU (tools/bootstrap.py test "
                                            "--platform tpu)")
        for item in items:
            if item.get_closest_marker("tpu") is not None:
                item.add_marker(needs_tpu)
    for pattern, reason in PLATFORM_INAPPLICABLE.get(TEST_PLATFORM, []):
        rx = re.compile(pattern)
        for item in items:
            if rx.search(_without_group(item.nodeid)):
                item.add_marker(pytest.mark.skip(reason=f"not on {TEST_PLATFORM}: {reason}"))
    if os.environ.get("FLUXION_SLOW") != "1":
        skip = pytest.mark.skip(reason="slow test: set FLUXION_SLOW=1 to run it")
        nightly = set(NIGHTLY_ONLY)
        for item in items:
            if "slow" in item.keywords or _without_group(item.nodeid) in nightly:
                item.add_marker(skip)
    _apply_xdist_groups(config, items)

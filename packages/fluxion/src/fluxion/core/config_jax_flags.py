"""JAX's other configuration flags, accepted by ``fluxion.config.update`` for compatibility.

Each row is ``(name, JAX's default, allowed values or None)``. These flags select things Fluxion
does not have or does differently (TPU/GPU compiler knobs, jax2tf, Pallas, distributed
runtime details...): setting one is checked (known name, allowed value)
and recorded, so ``config.<name>`` reads it back, but it changes nothing in Fluxion. The flags
that do act are defined in :mod:`fluxion.core.config` (or by the module that implements them,
which then replaces the row's definition).

Example:
    >>> from fluxion.core.config_jax_flags import INERT_FLAGS
    >>> any(name == "jax_xla_backend" for name, _, _ in INERT_FLAGS)
    True
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["INERT_FLAGS"]

INERT_FLAGS: tuple[tuple[str, Any, tuple | None], ...] = (
    ('check_vma', False, None),
    ('eager_constant_folding', False, None),
    ('jax2tf_associative_scan_reductions', False, None),
    ('jax2tf_default_native_serialization', True, None),
    ('jax_allow_f16_reductions', True, None),
    ('jax_array_garbage_collection_guard', None, ('allow', 'log', 'fatal')),
    ('jax_auto_pcast', True, None),
    ('jax_backend_target', '', None),
    ('jax_bcoo_cusparse_lowering', False, None),
    ('jax_captured_constants_report_frames', 0, None),
    ('jax_captured_constants_warn_bytes', 2000000000, None),
    ('jax_check_proxy_envs', True, None),
    ('jax_check_static_indices', False, None),
    ('jax_compilation_cache_check_contents', False, None),
    ('jax_compilation_cache_expect_pgle', False, None),
    ('jax_compilation_cache_include_metadata_in_key', False, None),
    ('jax_compilation_cache_max_size', -1, None),
    ('jax_compiler_detailed_logging_min_ops', 10, None),
    ('jax_cpu_collectives_implementation', 'gloo', ('gloo', 'mpi', 'megascale')),
    ('jax_cpu_get_global_topology_timeout_minutes', 5, None),
    ('jax_cpu_get_local_topology_timeout_minutes', 2, None),
    ('jax_cross_host_transfer_socket_address', '', None),
    ('jax_cross_host_transfer_timeout_seconds', None, None),
    ('jax_cross_host_transfer_transfer_size', None, None),
    ('jax_cross_host_transport_addresses', '', None),
    ('jax_cuda_visible_devices', 'all', None),
    ('jax_custom_vjp3', False, None),
    ('jax_debug_leaked_clients_on_clear_backends', False, None),
    ('jax_debug_log_modules', '', None),
    ('jax_disable_bwd_checks', False, None),
    ('jax_disable_vmap_shmap_error', False, None),
    ('jax_disallow_mesh_context_manager', False, None),
    ('jax_distributed_debug', False, None),
    ('jax_dump_ir_modes', 'stablehlo', None),
    ('jax_dump_ir_to', '', None),
    ('jax_embedded_constants_max_bytes', 32, None),
    ('jax_enable_compilation_cache', True, None),
    ('jax_enable_pgle', False, None),
    ('jax_enable_preemption_service', True, None),
    ('jax_enable_recoverability', False, None),
    ('jax_error_checking_behavior_divide', 'ignore', ('ignore', 'raise')),
    ('jax_error_checking_behavior_nan', 'ignore', ('ignore', 'raise')),
    ('jax_error_checking_behavior_oob', 'ignore', ('ignore', 'raise')),
    ('jax_experimental_unsafe_xla_runtime_errors', False, None),
    ('jax_explicit_x64_dtypes', 1, None),
    ('jax_export_calling_convention_version', 10, None),
    ('jax_export_ignore_forward_compatibility', False, None),
    ('jax_force_dcn_cross_host_transfers', False, None),
    ('jax_high_dynamic_range_gumbel', False, None),
    ('jax_hlo_source_file_canonicalization_regex', None, None),
    ('jax_include_debug_info_in_dumps', True, None),
    ('jax_include_full_tracebacks_in_locations', True, None),
    ('jax_log_checkpoint_residuals', False, None),
    ('jax_logging_level', 'NOTSET', ('NOTSET', 'DEBUG', 'INFO', 'WARNING', 'ERROR', 'CRITICAL')),
    ('jax_mock_gpu_topology', '', None),
    ('jax_mosaic_allow_hlo', False, None),
    ('jax_mutable_array_checks', True, None),
    ('jax_num_cpu_devices', -1, None),
    ('jax_oneapi_visible_devices', 'all', None),
    ('jax_pallas_enable_debug_checks', False, None),
    ('jax_pallas_poison_buffers', False, None),
    ('jax_pallas_use_mosaic_gpu', True, None),
    ('jax_pallas_verbose_errors', False, None),
    ('jax_persistent_cache_enable_xla_caches', 'xla_gpu_per_fusion_autotune_cache_dir', None),
    ('jax_persistent_cache_min_entry_size_bytes', 0, None),
    ('jax_pgle_aggregation_percentile', 90, None),
    ('jax_pgle_profiling_runs', 3, None),
    ('jax_platform_name', '', None),
    ('jax_platforms', None, None),
    ('jax_pprint_use_color', True, None),
    ('jax_ragged_dot_use_gpu_pallas_triton_lowering', False, None),
    ('jax_ragged_dot_use_ragged_dot_instruction', True, None),
    ('jax_raise_persistent_cache_errors', False, None),
    ('jax_random_seed_offset', 0, None),
    ('jax_refs_to_pins', False, None),
    ('jax_remat3', False, None),
    ('jax_remove_custom_partitioning_ptr_from_cache_key', False, None),
    ('jax_remove_size_one_mesh_axis_from_type', False, None),
    ('jax_rocm_visible_devices', 'all', None),
    ('jax_scan3', False, None),
    ('jax_send_traceback_to_runtime', 'off', None),
    ('jax_serialization_version', 0, None),
    ('jax_share_binary_between_hosts', False, None),
    ('jax_share_binary_between_hosts_timeout_ms', 1200000, None),
    ('jax_sort_devices_by_process_index', True, None),
    ('jax_source_url_schema', None, None),
    ('jax_thread_guard', False, None),
    ('jax_threefry_gpu_kernel_lowering', False, None),
    ('jax_traceback_in_locations_limit', 100, None),
    ('jax_tracer_error_num_traceback_frames', 5, None),
    ('jax_use_direct_linearize', True, None),
    ('jax_use_emit_pipeline_primitive', False, None),
    # read where it acts: the CUDA/ROCm eig lowering writes it as its hybrid kernel's `magma`
    ('jax_use_magma', 'auto', ('off', 'on', 'auto')),
    # acts in backend/compile_options.py; its default is JAX_USE_SHARDY_PARTITIONER's, as JAX's,
    # readable before the backend loads
    ('jax_use_shardy_partitioner', os.environ.get("JAX_USE_SHARDY_PARTITIONER", "1").lower()
     not in ("0", "false", "no", "off"), None),
    ('jax_use_simplified_jaxpr_constants', False, None),
    ('jax_xla_backend', '', None),
    ('mock_num_gpu_processes', 0, None),
    ('jax_debug_infs', False, None),
    ('jax_default_device', None, None),
    ('jax_enable_custom_prng', False, None),
    ('jax_legacy_prng_key', 'allow', ('allow', 'warn', 'error')),
    ('jax_no_execution', False, None),
    ('jax_no_tracing', False, None),
    ('jax_softmax_custom_jvp', False, None),
)

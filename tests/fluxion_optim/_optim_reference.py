"""The optax reference's ``jax.jit`` for the fluxion_optim tests: the same program, compiled with
XLA's cheapest CPU settings.

optax's programs are the oracle here, not what is measured: compiled without LLVM's
optimisations and with XLA's loop emitters (as ``fluxion_cpu_fast_compile``) they compile in
under half the time (the one-program-per-library fixtures of test_optim_transforms/alias/contrib:
58 -> 37 CPU-s under load) and compute the same values to rounding. The options are passed per
compile (``jax.jit(..., compiler_options=...)``), so they are part of jax's executable cache key
and no other test reuses these executables.
"""

from __future__ import annotations

import functools

import jax

REFERENCE_COMPILE_OPTIONS = {"xla_backend_optimization_level": 0,
                             "xla_llvm_disable_expensive_passes": True,
                             "xla_cpu_use_fusion_emitters": False}

ref_jit = functools.partial(jax.jit, compiler_options=REFERENCE_COMPILE_OPTIONS)

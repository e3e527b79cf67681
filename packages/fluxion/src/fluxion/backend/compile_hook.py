"""The one function through which Fluxion compiles a StableHLO module with XLA, looked up as a
module attribute at every compile so that it can be wrapped (JAX's
``jax._src.compiler.backend_compile_and_load``, which ``chex.restrict_backends`` wraps to forbid
compiling for some platforms; this module is ``jax._src.compiler`` under
:func:`fluxion.compat.install_jax_alias`).

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> from fluxion.backend import compile_hook
    >>> seen, inner = [], compile_hook.backend_compile_and_load
    >>> def spy(backend, *args, **kwargs):
    ...     seen.append(backend.platform)
    ...     return inner(backend, *args, **kwargs)
    >>> compile_hook.backend_compile_and_load = spy
    >>> try:
    ...     _ = fluxion.jit(lambda x: x * 7.0 + 0.125)(jnp.ones(3))
    ... finally:
    ...     compile_hook.backend_compile_and_load = inner
    >>> seen[:1] == [fluxion.default_backend()]
    True
"""

from __future__ import annotations

from typing import Any, Sequence

__all__ = ["backend_compile_and_load"]


def backend_compile_and_load(backend: Any, module: Any, executable_devices: Any, options: Any,
                             host_callbacks: Sequence[Any] = ()) -> Any:
    """Compiles ``module`` with the PJRT client ``backend`` for ``executable_devices``.

    Example:
        >>> callable(backend_compile_and_load)
        True
    """
    if host_callbacks:
        return backend.compile_and_load(module, executable_devices, options, host_callbacks)
    return backend.compile_and_load(module, executable_devices, options)

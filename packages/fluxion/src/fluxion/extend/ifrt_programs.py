"""``fluxion.extend.ifrt_programs`` (JAX's ``jax.extend.ifrt_programs``): the runtime's IFRT
program builders, which is jaxlib's own ``ifrt_programs`` module, as in JAX (Fluxion runs on
the same jaxlib). It makes the programs an IFRT client compiles besides HLO: plugin programs and
colocated Python programs, with their compile options.

Example:
    >>> from fluxion.extend.ifrt_programs import ifrt_programs
    >>> callable(ifrt_programs.make_plugin_compile_options)
    True
"""

from fluxion.backend import client as _client

#: jaxlib's ``ifrt_programs`` module (``make_plugin_program``, ``make_hlo_program``, ...)
ifrt_programs = _client._load()[1].ifrt_programs

__all__ = ["ifrt_programs"]

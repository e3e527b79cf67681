"""``haiku._src.module``: the ``Module`` base class and method interceptors (implemented in
``fluxion_nn.haiku._module``)."""

from .._module import (  # noqa: F401
    FORCE_PREFIX,
    OVERRIDE_PREFIX,
    MethodContext,
    Module,
    NameScope,
    NameScopeModule,
    force_name,
    hook_methods,
    intercept_methods,
    intercept_methods_global,
    name_like,
    name_scope,
    run_interceptors,
    transparent,
)

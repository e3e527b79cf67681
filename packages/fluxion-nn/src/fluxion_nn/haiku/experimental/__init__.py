"""``hk.experimental``: Haiku's experimental names that fluxion_nn.haiku provides
(``custom_creator``, ``custom_getter``, ``get_params``, ``jaxpr_info``, ``abstract_to_dot``, ...)."""

from .._base import (  # noqa: F401
    DO_NOT_STORE,
    GetterContext,
    current_name,
    custom_creator,
    custom_getter,
    get_current_state,
    get_initial_state,
    get_params,
    maybe_get_rng_sequence_state,
    replace_rng_sequence_state,
)
from .._dot import abstract_to_dot, to_dot  # noqa: F401
from .._lift import (  # noqa: F401
    LiftWithStateUpdater,
    lift,
    lift_with_state,
    transparent_lift,
    transparent_lift_with_state,
)
from .._lifted import fast_eval_shape, optimize_rng_use  # noqa: F401
from .._module import intercept_methods, name_scope  # noqa: F401
from .._src.config import check_jax_usage, module_auto_repr, rng_reserve_size  # noqa: F401
from .._summarise import ArraySpec, MethodInvocation, ModuleDetails, eval_summary, tabulate  # noqa: F401
from . import flax, jaxpr_info  # noqa: F401

__all__ = ["DO_NOT_STORE", "GetterContext", "current_name", "custom_creator", "custom_getter",
           "get_current_state", "get_initial_state", "get_params",
           "maybe_get_rng_sequence_state", "replace_rng_sequence_state",
           "check_jax_usage", "module_auto_repr", "rng_reserve_size", "fast_eval_shape",
           "optimize_rng_use", "lift",
           "lift_with_state", "transparent_lift", "transparent_lift_with_state",
           "LiftWithStateUpdater", "ArraySpec", "MethodInvocation", "ModuleDetails",
           "eval_summary", "tabulate", "intercept_methods", "name_scope", "abstract_to_dot", "to_dot",
           "jaxpr_info", "flax"]

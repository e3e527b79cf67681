"""``haiku._src.mixed_precision`` (implemented in ``fluxion_nn.haiku._mixed_precision``)."""

from .._mixed_precision import (  # noqa: F401
    ClassInfo,
    clear_policy,
    current_policy,
    get_policy,
    key_for_module,
    push_policy,
    set_policy,
)


def reset_thread_local_state_for_test() -> None:
    """Forget every policy of this thread (Haiku's test helper).

    Example: ``reset_thread_local_state_for_test()``.
    """
    from .. import _mixed_precision as mp  # reason: reach the module's state

    mp._state.by_class.clear()
    mp._state.current.clear()

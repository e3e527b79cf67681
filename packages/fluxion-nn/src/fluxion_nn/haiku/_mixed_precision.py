"""Mixed precision per module class (``hk.mixed_precision``): a policy (a ``jmp.Policy``, or any
object with ``param_dtype``, ``cast_to_compute`` and ``cast_to_output``) set for a module class
makes every instance create its parameters in ``param_dtype``, read parameters and state cast to
the compute dtype, receive its inputs cast to the compute dtype and return outputs cast to the
output dtype. Modules called inside a policy-bearing module follow the outer policy unless they
have their own. Policies are per thread."""

from __future__ import annotations

import collections
import contextlib
import threading
from typing import Any, Iterator

from ._base import _frames, custom_creator, custom_getter
from ._module import MethodContext, intercept_methods_global

__all__ = ["clear_policy", "current_policy", "get_policy", "push_policy", "set_policy"]

ClassInfo = collections.namedtuple("ClassInfo", "module,qualname")


def key_for_module(cls: type) -> Any:
    """The key a policy is stored under: the class itself for classes made inside functions
    (``hk.to_module``), else its module and qualified name (survives reloading).

    Example: ``key_for_module(hk.Linear)``.
    """
    if "<locals>" in cls.__qualname__:
        return cls
    return ClassInfo(cls.__module__, cls.__qualname__)


class _State(threading.local):
    def __init__(self) -> None:
        self.installed = False
        self.by_class: dict = {}
        self.current: list = []


_state = _State()


def current_policy() -> Any:
    """The policy of the innermost running module that has one (``None`` outside).

    Example: ``hk.mixed_precision.current_policy()``.
    """
    return _state.current[-1] if _state.current else None


def get_policy(cls: type) -> Any:
    """The policy set for ``cls`` itself with :func:`set_policy` (``None`` if none).

    Example: ``hk.mixed_precision.get_policy(hk.Linear)``.
    """
    return _state.by_class.get(key_for_module(cls))


def set_policy(cls: type, policy: Any) -> None:
    """Use ``policy`` for every instance of module class ``cls`` created in this thread.

    Example::

        policy = jmp.get_policy("params=float32,compute=float16,output=float32")
        hk.mixed_precision.set_policy(hk.nets.MLP, policy)
    """
    assert policy is not None, "To unset policies use clear_policy."
    if not _state.installed:
        intercept_methods_global(_interceptor)
        _state.installed = True
    _state.by_class[key_for_module(cls)] = policy


def clear_policy(cls: type) -> None:
    """Remove the policy set for ``cls`` (nothing if none).

    Example: ``hk.mixed_precision.clear_policy(hk.nets.MLP)``.
    """
    _state.by_class.pop(key_for_module(cls), None)


@contextlib.contextmanager
def push_policy(cls: type, policy: Any) -> Iterator[None]:
    """Use ``policy`` for ``cls`` while the context is active (the previous one, or none,
    afterwards). Refused inside a method of ``cls`` itself.

    Example::

        with hk.mixed_precision.push_policy(hk.Linear, policy):
            y = hk.Linear(3)(x)
    """
    assert policy is not None, "To unset policies use clear_policy."
    frames = _frames()
    if frames and frames[-1].module_stack:
        running = frames[-1].module_stack[-1][0]
        if key_for_module(type(running)) == key_for_module(cls):
            raise ValueError("Pushing a policy inside a method on the same class is not "
                             f"supported. (push_policy: {cls.__qualname__} is running)")
    old = get_policy(cls)
    set_policy(cls, policy)
    try:
        yield
    finally:
        if old is not None:
            set_policy(cls, old)
        else:
            clear_policy(cls)


def _creator(next_creator: Any, shape: Any, dtype: Any, init: Any, context: Any) -> Any:
    return next_creator(shape, current_policy().param_dtype, init)


def _getter(next_getter: Any, value: Any, context: Any) -> Any:
    return next_getter(current_policy().cast_to_compute(value))


def _interceptor(next_fun: Any, args: tuple, kwargs: dict, context: MethodContext) -> Any:
    policy = get_policy(type(context.module))
    if policy is None:
        return next_fun(*args, **kwargs)
    with contextlib.ExitStack() as stack:
        if not _state.current and _frames():
            # the outermost policy-bearing module installs the creator and getter once; inner
            # ones only change which policy they read
            stack.enter_context(custom_creator(_creator))
            stack.enter_context(custom_getter(_getter, state=True))
        _state.current.append(policy)
        stack.callback(_state.current.pop)
        args, kwargs = policy.cast_to_compute((args, kwargs))
        return policy.cast_to_output(next_fun(*args, **kwargs))



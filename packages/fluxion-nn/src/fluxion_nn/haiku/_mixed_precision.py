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

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> class Identity:  # a policy that changes no dtype (jmp.Policy's three members)
        ...     param_dtype = jnp.float32
        ...     cast_to_compute = cast_to_output = staticmethod(lambda tree: tree)
        >>> policy = Identity()
        >>> class Probe(hk.Module):
        ...     def __call__(self):
        ...         return hk.mixed_precision.current_policy() is policy
        >>> hk.mixed_precision.set_policy(Probe, policy)
        >>> hk.transform(lambda: Probe()()).apply({}, None), hk.mixed_precision.current_policy() is None
        (True, True)
        >>> hk.mixed_precision.clear_policy(Probe)
    """
    return _state.current[-1] if _state.current else None


def get_policy(cls: type) -> Any:
    """The policy set for ``cls`` itself with :func:`set_policy` (``None`` if none).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> class Identity:  # a policy that changes no dtype (jmp.Policy's three members)
        ...     param_dtype = jnp.float32
        ...     cast_to_compute = cast_to_output = staticmethod(lambda tree: tree)
        >>> hk.mixed_precision.get_policy(hk.Linear) is None
        True
        >>> policy = Identity()
        >>> hk.mixed_precision.set_policy(hk.Linear, policy)
        >>> hk.mixed_precision.get_policy(hk.Linear) is policy
        True
        >>> hk.mixed_precision.clear_policy(hk.Linear)
    """
    return _state.by_class.get(key_for_module(cls))


def set_policy(cls: type, policy: Any) -> None:
    """Use ``policy`` for every instance of module class ``cls`` created in this thread.

    Example::

        policy = jmp.get_policy("params=float32,compute=float16,output=float32")
        hk.mixed_precision.set_policy(hk.nets.MLP, policy)

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def cast(dtype):
        ...     def cast_leaf(x):
        ...         return x.astype(dtype) if hasattr(x, "dtype") else x
        ...     return lambda tree: fluxion.tree_util.tree_map(cast_leaf, tree)
        >>> class HalfCompute:  # like jmp.get_policy("params=float32,compute=bfloat16,output=float32")
        ...     param_dtype = jnp.float32
        ...     cast_to_compute = staticmethod(cast(jnp.bfloat16))
        ...     cast_to_output = staticmethod(cast(jnp.float32))
        >>> hk.mixed_precision.set_policy(hk.Linear, HalfCompute())
        >>> f = hk.transform(lambda x: hk.Linear(2)(x))
        >>> params = f.init(fluxion.random.PRNGKey(0), jnp.ones((1, 3)))
        >>> params["linear"]["w"].dtype, f.apply(params, None, jnp.ones((1, 3))).dtype  # f32 in and out
        (dtype('float32'), dtype('float32'))
        >>> hk.mixed_precision.clear_policy(hk.Linear)
    """
    assert policy is not None, "To unset policies use clear_policy."
    if not _state.installed:
        intercept_methods_global(_interceptor)
        _state.installed = True
    _state.by_class[key_for_module(cls)] = policy


def clear_policy(cls: type) -> None:
    """Remove the policy set for ``cls`` (nothing if none).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> class Identity:  # a policy that changes no dtype (jmp.Policy's three members)
        ...     param_dtype = jnp.float32
        ...     cast_to_compute = cast_to_output = staticmethod(lambda tree: tree)
        >>> hk.mixed_precision.set_policy(hk.Linear, Identity())
        >>> hk.mixed_precision.clear_policy(hk.Linear)
        >>> hk.mixed_precision.get_policy(hk.Linear) is None
        True
    """
    _state.by_class.pop(key_for_module(cls), None)


@contextlib.contextmanager
def push_policy(cls: type, policy: Any) -> Iterator[None]:
    """Use ``policy`` for ``cls`` while the context is active (the previous one, or none,
    afterwards). Refused inside a method of ``cls`` itself.

    Example::

        with hk.mixed_precision.push_policy(hk.Linear, policy):
            y = hk.Linear(3)(x)

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def cast(dtype):
        ...     def cast_leaf(x):
        ...         return x.astype(dtype) if hasattr(x, "dtype") else x
        ...     return lambda tree: fluxion.tree_util.tree_map(cast_leaf, tree)
        >>> class HalfCompute:  # like jmp.get_policy("params=float32,compute=bfloat16,output=float32")
        ...     param_dtype = jnp.float32
        ...     cast_to_compute = staticmethod(cast(jnp.bfloat16))
        ...     cast_to_output = staticmethod(cast(jnp.float32))
        >>> seen = []
        >>> class Probe(hk.Module):
        ...     def __call__(self, x):
        ...         seen.append(x.dtype)  # the input as the method sees it: cast to the compute dtype
        ...         return x
        >>> with hk.mixed_precision.push_policy(Probe, HalfCompute()):
        ...     out = hk.transform(lambda x: Probe()(x)).apply({}, None, jnp.ones(2))
        >>> seen, out.dtype, hk.mixed_precision.get_policy(Probe) is None
        ([dtype(bfloat16)], dtype('float32'), True)
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



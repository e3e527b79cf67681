"""``haiku._src.typing``: the type aliases Haiku's signatures use, and its module protocols."""

from __future__ import annotations

import abc
from collections.abc import Mapping, MutableMapping
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

Initializer = Callable[[Sequence[int], Any], Any]
Params = Mapping[str, Mapping[str, Any]]
MutableParams = MutableMapping[str, MutableMapping[str, Any]]
State = Mapping[str, Mapping[str, Any]]
MutableState = MutableMapping[str, MutableMapping[str, Any]]
PRNGKey = Any


class LiftingModuleType:
    """The common base of lifting modules (``hk.lift``'s), named here as in Haiku."""


class StrictProtocol(Protocol):
    """A protocol that only protocols may extend: a plain class listing it as a base is an error
    (conformance is structural, so there is nothing to inherit).

    Example::

        class MyProtocol(ModuleProtocol, Protocol): ...   # fine
        class Concrete(ModuleProtocol): ...               # TypeError
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if Protocol not in cls.__bases__:
            bases = ", ".join(b.__name__ for b in cls.__bases__)
            raise TypeError(
                f"{cls.__name__} is a Protocol and should not be subclassed by a non-Protocol "
                "type. If you intended your subclass to be a protocol then you need to "
                f"explicitly additionally extend Protocol: `class {cls.__name__}({bases}, Protocol)`.")


@runtime_checkable
class ModuleProtocol(StrictProtocol, Protocol):
    """What a Haiku module looks like: ``name``, ``module_name``, ``params_dict()`` and
    ``state_dict()``; ``isinstance(m, hk.ModuleProtocol)`` checks it structurally.

    Example: ``isinstance(hk.Linear(1), hk.ModuleProtocol)`` is True inside a transform.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> class Named:
        ...     params_dict = state_dict = lambda self: {}
        ...     module_name, name = "named", "named"
        >>> isinstance(Named(), hk.ModuleProtocol), isinstance(object(), hk.ModuleProtocol)
        (True, False)
    """

    name: str
    module_name: str

    @abc.abstractmethod
    def params_dict(self) -> Mapping[str, Any]:
        raise NotImplementedError

    @abc.abstractmethod
    def state_dict(self) -> Mapping[str, Any]:
        raise NotImplementedError


@runtime_checkable
class SupportsCall(ModuleProtocol, Protocol):
    """A module that can be called (has ``__call__``).

    Example: ``isinstance(hk.Linear(1), hk.SupportsCall)`` is True inside a transform.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> class Doubler:
        ...     params_dict = state_dict = lambda self: {}
        ...     module_name, name = "doubler", "doubler"
        ...     def __call__(self, x):
        ...         return 2 * x
        >>> isinstance(Doubler(), hk.SupportsCall)
        True
    """

    @abc.abstractmethod
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

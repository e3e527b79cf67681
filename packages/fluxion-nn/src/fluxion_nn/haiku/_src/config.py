"""Haiku's global options (as ``haiku._src.config`` / ``hk.config``): ``check_jax_usage``,
``module_auto_repr``, ``restore_flatmap``, ``rng_reserve_size``; per thread, main-thread
defaults."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from typing import Any, Callable, Iterator

__all__ = ["Config", "get_config", "context", "set", "assign", "with_config",
           "check_jax_usage", "module_auto_repr", "rng_reserve_size"]


@dataclasses.dataclass
class Config:
    """The option values (see ``context``)."""

    check_jax_usage: bool
    module_auto_repr: bool
    restore_flatmap: bool
    rng_reserve_size: int

    @classmethod
    def default(cls) -> "Config":
        """Haiku's defaults."""
        return cls(check_jax_usage=False, module_auto_repr=True, restore_flatmap=False,
                   rng_reserve_size=1)


def write(config: Config, **overrides: Any) -> None:
    """Set fields of ``config``."""
    for name, value in overrides.items():
        assert hasattr(config, name)
        setattr(config, name, value)


def _given(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}


@contextlib.contextmanager
def assign(**overrides: Any) -> Iterator[None]:
    """Override options inside the block.

    Example: ``with assign(rng_reserve_size=4): ...``.
    """
    config = get_config()
    previous = {name: getattr(config, name) for name in overrides}
    write(config, **overrides)
    try:
        yield
    finally:
        write(config, **previous)


def context(*, check_jax_usage: bool | None = None, module_auto_repr: bool | None = None,
            restore_flatmap: bool | None = None, rng_reserve_size: int | None = None) -> Any:
    """Options set inside the block only (others keep their value).

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> with hk.config.context(rng_reserve_size=8):
        ...     print(hk.experimental.rng_reserve_size(8))  # each setter returns the value it replaces
        8
        >>> hk.experimental.rng_reserve_size(1)  # the context restored the default
        1
    """
    return assign(**_given(dict(check_jax_usage=check_jax_usage,
                                module_auto_repr=module_auto_repr,
                                restore_flatmap=restore_flatmap,
                                rng_reserve_size=rng_reserve_size)))


def set(*, check_jax_usage: bool | None = None, module_auto_repr: bool | None = None,  # noqa: A001
        restore_flatmap: bool | None = None, rng_reserve_size: int | None = None) -> None:
    """Set options for this thread.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> hk.config.set(rng_reserve_size=8)
        >>> hk.experimental.rng_reserve_size(1)  # returns the value it replaces: the one set above
        8
    """
    write(get_config(), **_given(dict(check_jax_usage=check_jax_usage,
                                      module_auto_repr=module_auto_repr,
                                      restore_flatmap=restore_flatmap,
                                      rng_reserve_size=rng_reserve_size)))


def with_config(**overrides: Any) -> Callable:
    """Decorator running the function with ``overrides``.

    Example: ``@with_config(check_jax_usage=True)``.
    """
    def decorator(f: Callable) -> Callable:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with assign(**overrides):
                return f(*args, **kwargs)
        return wrapper
    return decorator


main_thread_config = Config.default()


class ThreadLocalStorage(threading.local):
    """Per-thread configs, each starting from the main thread's values."""

    def __init__(self) -> None:
        super().__init__()
        self.config = Config(**dataclasses.asdict(main_thread_config))


tls = ThreadLocalStorage()
tls.config = main_thread_config


def get_config() -> Config:
    """This thread's options.

    Example: ``get_config().rng_reserve_size``.
    """
    return tls.config


def module_auto_repr(enabled: bool) -> bool:
    """Turn the automatic ``Module.__repr__`` on or off; returns the previous value.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> previous = hk.experimental.module_auto_repr(False)  # module reprs without their arguments
        >>> previous, hk.experimental.module_auto_repr(previous)
        (True, False)
    """
    config = get_config()
    previous, config.module_auto_repr = config.module_auto_repr, enabled
    return previous


def check_jax_usage(enabled: bool = True) -> bool:
    """Make Haiku raise ``JaxUsageError`` when a Haiku side effect runs inside a raw JAX
    transform (use ``hk.vmap``, ``hk.cond``, ... instead); returns the previous value.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> previous = hk.experimental.check_jax_usage(True)  # complain about raw jax transforms in modules
        >>> previous, hk.experimental.check_jax_usage(previous)
        (False, True)
    """
    config = get_config()
    previous, config.check_jax_usage = config.check_jax_usage, enabled
    return previous


def rng_reserve_size(size: int) -> int:
    """Keys split at once when ``next_rng_key`` needs new ones; returns the previous value.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> previous = hk.experimental.rng_reserve_size(4)  # split 4 keys at a time in next_rng_key
        >>> previous, hk.experimental.rng_reserve_size(previous)
        (1, 4)
    """
    if size <= 0:
        raise ValueError(f"RNG reserve size needs to be more than 0, got {size}.")
    config = get_config()
    previous, config.rng_reserve_size = config.rng_reserve_size, size
    return previous

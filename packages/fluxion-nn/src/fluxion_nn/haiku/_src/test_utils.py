"""Haiku's test helpers (as ``haiku._src.test_utils``; ``transform_and_run`` is public as
``hk.testing.transform_and_run``)."""

from __future__ import annotations

import functools
import inspect
import itertools
import os
import types
from typing import Any, Callable, Iterator, Sequence

import fluxion.random as random

from .. import _transform
from . import config, transform  # noqa: F401 (Haiku's test_utils exposes both)

__all__ = ["transform_and_run", "find_internal_python_modules", "find_subclasses",
           "combined_named_parameters", "named_bools", "named_range", "with_environ",
           "with_guardrails", "clone"]


def transform_and_run(f: Callable | None = None, seed: int | None = 42, run_apply: bool = True,
                      jax_transform: Callable | None = None, *,
                      map_rng: Callable | None = None) -> Any:
    """Transform ``f`` with ``transform_with_state``, run ``init`` (key ``seed``) and then
    ``apply`` (key ``seed + 1``); returns ``apply``'s output.

    Example::

        @hk.testing.transform_and_run
        def test_linear():
            return hk.Linear(1)(jnp.ones([1, 1]))

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> @hk.testing.transform_and_run
        ... def run():
        ...     return hk.Linear(2)(jnp.ones((1, 3))).shape
        >>> run()
        (1, 2)
    """
    if f is None:
        return functools.partial(transform_and_run, seed=seed, run_apply=run_apply,
                                 jax_transform=jax_transform, map_rng=map_rng)

    @functools.wraps(f)
    def wrapper(*a: Any, **k: Any) -> Any:
        if seed is not None:
            init_rng, apply_rng = random.PRNGKey(seed), random.PRNGKey(seed + 1)
            if map_rng is not None:
                init_rng, apply_rng = map_rng(init_rng), map_rng(apply_rng)
        else:
            init_rng = apply_rng = None
        init, apply = _transform.transform_with_state(lambda: f(*a, **k))
        if jax_transform:
            init, apply = jax_transform(init), jax_transform(apply)
        params, state = init(init_rng)
        if run_apply:
            out, state = apply(params, state, apply_rng)
            return out
        return None

    return wrapper


def find_internal_python_modules(root_module: types.ModuleType) -> Sequence[tuple]:
    """``(name, module)`` of every module reachable from ``root_module`` whose name starts with
    ``root_module``'s (as Haiku: its public modules, ``hk.nets``, ``hk.experimental``, ...).

    Example: ``find_internal_python_modules(hk)``.
    """
    prefix = root_module.__name__
    modules = {(root_module.__name__, root_module)}
    visited: set = set()
    to_visit = [root_module]
    while to_visit:
        mod = to_visit.pop()
        visited.add(mod)
        for name in dir(mod):
            obj = getattr(mod, name)
            if inspect.ismodule(obj) and obj not in visited and obj.__name__.startswith(prefix):
                to_visit.append(obj)
                modules.add((obj.__name__, obj))
    return sorted(modules, key=lambda t: t[0])


def find_subclasses(root_python_module: types.ModuleType, base_class: type) -> Iterator[type]:
    """The subclasses of ``base_class`` defined in the modules under ``root_python_module``.

    Example: ``list(find_subclasses(hk, hk.Module))``.
    """
    seen: set = set()
    for _, module in find_internal_python_modules(root_python_module):
        for value in vars(module).values():
            if not inspect.isclass(value) or isinstance(value, types.GenericAlias):
                continue
            if issubclass(value, base_class) and value not in seen:
                seen.add(value)
                yield value


def combined_named_parameters(*parameters: Any) -> Any:
    """``absl.testing.parameterized.named_parameters`` over the product of the given
    ``(name, *values)`` sequences (names joined with ``_``).

    Example: ``@combined_named_parameters(named_bools("a"), named_range("n", 2))``.
    """
    from absl.testing import parameterized  # reason: optional dependency (test helpers)

    def combine(a: tuple, b: tuple) -> tuple:
        return ("_".join((a[0], b[0])),) + tuple(a[1:]) + tuple(b[1:])

    return parameterized.named_parameters(
        functools.reduce(combine, r) for r in itertools.product(*parameters))


def named_bools(name: str) -> Sequence[tuple[str, bool]]:
    """``((name, True), ("not_" + name, False))``.

    Example: ``named_bools("jit")``.
    """
    return (name, True), (f"not_{name}", False)


def named_range(name: str, stop: int) -> Sequence[tuple[str, int]]:
    """``((f"{name}_0", 0), ..., (f"{name}_{stop-1}", stop - 1))``.

    Example: ``named_range("n", 3)``.
    """
    return tuple((f"{name}_{i}", i) for i in range(stop))


def with_environ(key: str, value: str | None) -> Callable:
    """Decorator running the function with environment variable ``key`` set to ``value``
    (removed when None).

    Example: ``@with_environ("HAIKU_FLAX", "1")``.
    """
    def set_env(v: str | None) -> None:
        if v is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = v

    def decorator(f: Callable) -> Callable:
        def wrapper(*a: Any, **k: Any) -> Any:
            before = os.environ.get(key)
            set_env(value)
            try:
                return f(*a, **k)
            finally:
                set_env(before)
        return wrapper
    return decorator


def with_guardrails(f: Callable) -> Callable:
    """Decorator running the function with ``check_jax_usage`` on.

    Example: ``@with_guardrails``.
    """
    @functools.wraps(f)
    def wrapper(*a: Any, **k: Any) -> Any:
        old = config.check_jax_usage(True)
        try:
            return f(*a, **k)
        finally:
            config.check_jax_usage(old)
    return wrapper


def clone(key: Any) -> Any:
    """A copy of a random key (``jax.random.clone``).

    Example: ``k2 = clone(k)``.
    """
    return random.clone(key) if hasattr(random, "clone") else key



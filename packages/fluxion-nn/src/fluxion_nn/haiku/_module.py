"""``Module``: the base class of Haiku-style modules, its unique naming
(``"mlp/~/linear_0"``) and the method wrapping that keeps the frame's module stack."""

from __future__ import annotations

import collections
import contextlib
import functools
import re
import threading
from typing import Any, Callable, Iterator, NamedTuple

import fluxion

from ._base import _check_not_closed_over, _frame, _frames
from ._src import config as _config
from ._src import utils as _utils

__all__ = ["Module", "MethodContext", "intercept_methods", "intercept_methods_global",
           "name_scope", "transparent", "name_like"]


def _snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return s.lower()


def _notify_parents(stack: list, module: Any) -> None:
    # as Haiku: every module on the stack learns that `module` ran inside it (params_dict)
    name = getattr(module, "module_name", None)
    if name is None:
        return
    for entry in stack:
        if entry[0] is not module:
            subs = getattr(entry[0], "_submodules", None)
            if subs is not None:
                subs.add(name)


class MethodContext(NamedTuple):
    """What an interceptor (:func:`intercept_methods`) is told about the method call it wraps:
    the module, the method's name, the method itself (bound; calling it skips the remaining
    interceptors) and the class that defined it.

    Example::

        def log(next_fun, args, kwargs, context):
            print(context.module.module_name, context.method_name)
            return next_fun(*args, **kwargs)

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> calls = []
        >>> def log(next_f, args, kwargs, context):
        ...     calls.append((type(context.module).__name__, context.method_name))
        ...     return next_f(*args, **kwargs)
        >>> def f(x):
        ...     with hk.intercept_methods(log):
        ...         return hk.Linear(2)(x)
        >>> _ = hk.transform(f).init(fluxion.random.PRNGKey(0), jnp.ones((1, 3)))
        >>> calls
        [('Linear', '__init__'), ('Linear', '__call__')]
    """

    module: Any
    method_name: str
    orig_method: Callable[..., Any]
    orig_class: type


class _Interceptors(threading.local):
    def __init__(self) -> None:
        self.stack: collections.deque = collections.deque()


_interceptors = _Interceptors()


@contextlib.contextmanager
def intercept_methods(interceptor: Callable) -> Iterator[None]:
    """Within the context, every ``hk.Module`` method call (``__init__`` included) runs through
    ``interceptor(next_fun, args, kwargs, context)`` (a :class:`MethodContext`); interceptors
    entered earlier run first, each calling ``next_fun`` to go on (the last one reaches the
    method).

    Example::

        def no_bias(next_fun, args, kwargs, context):
            if context.method_name == "__init__" and isinstance(context.module, hk.Linear):
                kwargs = {**kwargs, "with_bias": False}
            return next_fun(*args, **kwargs)

        with hk.intercept_methods(no_bias):
            y = hk.Linear(3)(x)

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def double_inputs(next_f, args, kwargs, context):
        ...     if context.method_name == "__call__":
        ...         args = tuple(2 * a for a in args)
        ...     return next_f(*args, **kwargs)
        >>> def f(x):
        ...     with hk.intercept_methods(double_inputs):
        ...         return hk.Linear(1, with_bias=False, w_init=hk.initializers.Constant(1.0))(x)
        >>> f = hk.transform(f)
        >>> f.apply(f.init(None, jnp.ones((1, 2))), None, jnp.ones((1, 2))).tolist()
        [[4.0]]
    """
    stack = _interceptors.stack
    stack.append(interceptor)
    try:
        yield
    finally:
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is interceptor:
                del stack[i]
                break


def intercept_methods_global(interceptor: Callable) -> None:
    """Install ``interceptor`` for the rest of this thread, before (outside of) every
    interceptor entered with :func:`intercept_methods` (Haiku's mixed precision uses it).

    Example: ``intercept_methods_global(my_interceptor)``.
    """
    _interceptors.stack.appendleft(interceptor)


def run_interceptors(bound_method: Callable, method_name: str, module: Any, orig_class: type,
                     /, *args: Any, **kwargs: Any) -> Any:
    """Call ``bound_method(*args, **kwargs)`` through this thread's method interceptors.

    Example: ``run_interceptors(module.__call__, "__call__", module, type(module), x)``.
    """
    if not _interceptors.stack:
        return bound_method(*args, **kwargs)
    context = MethodContext(module, method_name, bound_method, orig_class)
    pending = collections.deque(_interceptors.stack)

    def next_fun(*a: Any, **k: Any) -> Any:
        if pending:
            return pending.popleft()(next_fun, a, k, context)
        return bound_method(*a, **k)

    return next_fun(*args, **kwargs)


class _MethodHooks(threading.local):
    def __init__(self) -> None:
        self.stack: list = []


_method_hooks = _MethodHooks()


@contextlib.contextmanager
def hook_methods(method_hook: Callable) -> Iterator[None]:
    """Within the context, every ``hk.Module`` method call (``__init__`` included) runs inside
    the context manager ``method_hook(module, method_name)`` (entered in the order the hooks
    were registered, after the module's submodules are recorded on exit).

    Example::

        @contextlib.contextmanager
        def log_calls(module, method_name):
            print("enter", method_name)
            yield

        with hook_methods(log_calls):
            hk.Linear(3)(x)
    """
    _method_hooks.stack.append(method_hook)
    try:
        yield
    finally:
        _method_hooks.stack.remove(method_hook)


def _call(fn: Callable, self: Any, name: str, cls: type | None, args: tuple, kwargs: dict) -> Any:
    if _method_hooks.stack:
        with contextlib.ExitStack() as hooks:
            for hook in list(_method_hooks.stack):
                hooks.enter_context(hook(self, name))
            return _call_intercepted(fn, self, name, cls, args, kwargs)
    return _call_intercepted(fn, self, name, cls, args, kwargs)


def _call_intercepted(fn: Callable, self: Any, name: str, cls: type | None, args: tuple,
                      kwargs: dict) -> Any:
    if not _interceptors.stack:
        return fn(self, *args, **kwargs)
    return run_interceptors(functools.partial(fn, self), name, self,
                            cls if cls is not None else type(self), *args, **kwargs)


def _wrap_method(fn: Callable, name: str | None = None, cls: type | None = None) -> Callable:
    name = name or fn.__name__

    @functools.wraps(fn)
    def method(self: "Module", *args: Any, **kwargs: Any) -> Any:
        frames = _frames()
        if not frames or not hasattr(self, "module_name"):
            return fn(self, *args, **kwargs)
        stack = frames[-1].module_stack
        naming = getattr(fn, "_hk_name_like", fn.__name__)  # hk.name_like
        stack.append((self, naming, collections.Counter()))
        try:
            # as Haiku: the method's operations are named by the module (and the method, when it
            # is not __call__: outside the module's name), e.g. for hk.experimental.jaxpr_info
            with contextlib.ExitStack() as scopes:
                if name != "__call__":
                    scopes.enter_context(fluxion.named_scope(name))
                scopes.enter_context(fluxion.named_scope(self.module_name.rsplit("/", 1)[-1]))
                out = _call(fn, self, name, cls, args, kwargs)
        finally:
            stack.pop()
        _notify_parents(stack, self)
        return out

    method._hk_wrapped = True  # type: ignore[attr-defined]
    return method


def _wrap_init(fn: Callable, auto_repr: bool = True) -> Callable:
    @functools.wraps(fn)
    def init(self: "Module", *args: Any, **kwargs: Any) -> None:
        frames = _frames()
        if not frames:
            raise ValueError(f"{type(self).__name__}: all `hk.Module`s must be initialized inside an "
                             "`hk.transform` (haiku modules are created inside a transformed function)")
        stack = frames[-1].module_stack
        pushed = not stack or stack[-1][0] is not self
        if pushed:
            stack.append((self, getattr(fn, "_hk_name_like", "__init__"), collections.Counter()))
        try:
            if pushed:  # as Haiku: the construction is intercepted once, as type(self)'s
                if (auto_repr and _config.get_config().module_auto_repr
                        and getattr(type(self), "AUTO_REPR", True)):
                    self._auto_repr = _utils.auto_repr(type(self), *args, **kwargs)
                _call(fn, self, "__init__", type(self), args, kwargs)
            else:
                fn(self, *args, **kwargs)
        finally:
            if pushed:
                stack.pop()
        _notify_parents(stack, self)

    init._hk_wrapped = True  # type: ignore[attr-defined]
    return init


FORCE_PREFIX = "FORCE:"  # as Haiku's OVERRIDE_PREFIX (':' is never part of a module name)
OVERRIDE_PREFIX = FORCE_PREFIX


def force_name(name: str) -> str:
    """A ``name=`` value that makes a module take exactly ``name`` (``"foo"`` or ``"foo/bar"``),
    whatever module or name scope it is created in; modules forced to one name share parameters.

    Example::

        a = hk.Linear(1)
        b = hk.Linear(1, name=hk.force_name(a.module_name))   # the same weights as a

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def f(x):
        ...     shared = hk.Linear(2, name="shared")
        ...     again = hk.Linear(2, name=hk.force_name(shared.module_name))  # reuses shared's parameters
        ...     return again(shared(x))
        >>> sorted(hk.transform(f).init(fluxion.random.PRNGKey(0), jnp.ones((1, 2))))
        ['shared']
    """
    return f"{FORCE_PREFIX}{name}"


def _name_and_number(name: str) -> tuple[str, int | None]:
    m = re.match(r"^(.*)_(0|[1-9][0-9]*)$", name)  # as Haiku: a zero-padded suffix is no number
    return (m.group(1), int(m.group(2))) if m else (name, None)


def _check_name(component: str, name: str, *, allow_empty: bool = False) -> None:
    if allow_empty and not component:
        return  # "~" alone is a valid part of a forced name ("foo/~/bar")
    if not component.isidentifier():
        raise ValueError(f"'{name}' is not a valid module name (must be a valid Python identifier)")


def _used_names(counter: collections.Counter) -> set:
    """The full module names already taken in the scope that ``counter`` numbers."""
    return counter.__dict__.setdefault("_hk_used", set())


class Module:
    """Base class of Haiku-style modules: parameters created with ``hk.get_parameter`` inside
    its methods belong to the module's unique name (``"mlp/~/linear_0"``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> class Scale(hk.Module):
        ...     def __call__(self, x):
        ...         s = hk.get_parameter('s', [], init=hk.initializers.Constant(2.0))
        ...         return s * x
        >>> f = hk.transform(lambda x: Scale()(x))
        >>> params = f.init(None, jnp.ones(2))
        >>> params
        {'scale': {'s': Array(2.0, dtype=float32)}}
        >>> f.apply(params, None, jnp.array([1.0, 3.0])).tolist()
        [2.0, 6.0]
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for k, v in list(vars(cls).items()):
            if k == "__init__":
                setattr(cls, k, _wrap_init(v))
            elif getattr(v, "_hk_transparent", False):
                continue  # hk.transparent: runs in its caller's name scope, not intercepted
            elif (callable(v) and not isinstance(v, (staticmethod, classmethod, type))
                  and (not k.startswith("_") or k == "__call__") and not getattr(v, "_hk_wrapped", False)):
                setattr(cls, k, _wrap_method(v, k, cls))
            elif isinstance(v, property) and v.fget is not None:
                setattr(cls, k, property(_wrap_method(v.fget, k, cls), v.fset, v.fdel, v.__doc__))

    _is_protocol = False  # as Haiku's Module (typing.Protocol reads it on subclasses)

    def __init__(self, name: str | None = None):
        frame = _frame("Module")
        self._creation_frame_id = frame.frame_id
        entries = [e for e in frame.module_stack if e[0] is not self and hasattr(e[0], "module_name")]
        if name is None and isinstance(getattr(self, "name", None), str):
            name = self.name  # a dataclass module's ``name`` field
        counter = entries[-1][2] if entries else frame.root_counter
        if name is not None and name.startswith(FORCE_PREFIX):  # hk.force_name: taken as given
            full = name[len(FORCE_PREFIX):]
            for part in full.split("/"):
                _check_name(part[1:] if part.startswith("~") else part, full, allow_empty=True)
            stem, n = _name_and_number(full)
            _used_names(counter).add(full)
            counter[stem] = max(counter[stem], (n or 0) + 1)  # reserved where it is created
            self.module_name = full
            self.name = full.rsplit("/", 1)[-1]
            self._submodules = set()
            return
        if name is not None:
            _check_name(name, name)
        base = name if name is not None else _snake(type(self).__name__)
        if entries:
            parent, method, counter = entries[-1]
            _check_not_closed_over(parent)
            if method == "__init__":
                base = "~/" + base
            elif method != "__call__":
                base = f"~{method}/" + base
            base = f"{parent.module_name}/{base}"
        else:
            counter = frame.root_counter
        stem, n = _name_and_number(base)
        explicit = n is not None
        if n is None:
            n = counter[stem]
        full = f"{stem}_{n}" if explicit or n else stem
        used = _used_names(counter)
        if full in used:
            raise ValueError(f"Module name '{full}' is not unique.")
        used.add(full)
        counter[stem] = max(counter[stem], n + 1)
        self.module_name = full
        self.name = full.rsplit("/", 1)[-1]
        self._submodules: set = set()

    def __repr__(self) -> str:
        auto = self.__dict__.get("_auto_repr")
        return auto if auto is not None else object.__repr__(self)

    def params_dict(self) -> dict:
        """This module's parameters and its submodules', as ``{"module/name": value}``."""
        frame = _frame("params_dict")
        return {f"{k}/{n}": v for k, p in frame.params.items()
                if k == self.module_name or k.startswith(self.module_name + "/")
                or k in self._submodules for n, v in p.items()}

    def state_dict(self) -> dict:
        """This module's state and its submodules', as ``{"module/name": value}``."""
        frame = _frame("state_dict")
        return {f"{k}/{n}": v for k, p in frame.state.items()
                if k == self.module_name or k.startswith(self.module_name + "/")
                or k in self._submodules for n, v in p.items()}


# @dataclass modules: the generated __init__ sets the fields, then names the module here, as Haiku
Module.__post_init__ = _wrap_init(Module.__init__, auto_repr=False)  # type: ignore[attr-defined]
Module.__init__ = _wrap_init(Module.__init__)  # type: ignore[method-assign]


def transparent(method: Callable) -> Callable:
    """Mark a module method as transparent: the modules, parameters and state it creates are
    named in the scope it is called from (not under the module and method), and method
    interceptors do not see it.

    Example::

        class Wrapper(hk.Module):
            @hk.transparent
            def __call__(self, x):
                return hk.Linear(3)(x)   # parameters under "linear", not "wrapper/linear"

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> class Wrapper(hk.Module):
        ...     @hk.transparent
        ...     def __call__(self, x):
        ...         return hk.Linear(2)(x)
        >>> sorted(hk.transform(lambda x: Wrapper()(x)).init(fluxion.random.PRNGKey(0), jnp.ones((1, 3))))
        ['linear']
    """
    method._hk_transparent = True  # type: ignore[attr-defined]
    return method


def name_like(method_name: str) -> Callable[[Callable], Callable]:
    """Name the modules a method creates as if it were method ``method_name`` (for renamed or
    refactored methods that must keep their parameter names); interceptors still see the real
    method name.

    Example::

        class Net(hk.Module):
            @hk.name_like("__call__")
            def encode(self, x):
                return hk.Linear(3)(x)   # "net/linear", not "net/~encode/linear"

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> class Net(hk.Module):
        ...     def __call__(self, x):
        ...         return self.encode(x)
        ...     @hk.name_like("__call__")
        ...     def encode(self, x):
        ...         return hk.Linear(2)(x)
        >>> sorted(hk.transform(lambda x: Net()(x)).init(fluxion.random.PRNGKey(0), jnp.ones((1, 3))))
        ['net/linear']
    """
    def decorator(method: Callable) -> Callable:
        method._hk_name_like = method_name  # type: ignore[attr-defined]
        return method

    return decorator


class NameScopeModule(Module):
    """The module a :func:`name_scope` stands for (it has no methods of its own)."""


class _Simulated:
    """A method of ``module`` seen as running: pushes it on the frame's module stack."""

    def __init__(self, module: Module, method_name: str):
        self.entry = (module, method_name, collections.Counter())

    def __enter__(self) -> None:
        _frame("name_scope").module_stack.append(self.entry)

    def __exit__(self, *exc: Any) -> None:
        stack = _frame("name_scope").module_stack
        if stack and stack[-1] is self.entry:
            stack.pop()
        _notify_parents(stack, self.entry[0])


class NameScope:
    """A single-use context manager: modules, parameters and state created inside it are named
    as if created in method ``method_name`` of a module named ``name`` (see :func:`name_scope`)."""

    def __init__(self, name: str, method_name: str):
        if not name or name[0] == "/":
            raise ValueError("Name scopes must not start with / "
                             f"(hk.name_scope: got name={name!r})")
        module = None
        with contextlib.ExitStack() as stack:
            for part in ([name] if name.startswith(FORCE_PREFIX) else name.split("/")):
                module = NameScopeModule(name=part)
                stack.enter_context(_Simulated(module, method_name))
        self._module = module
        self._method = method_name
        self._stack: contextlib.ExitStack | None = contextlib.ExitStack()
        self._entered = False

    def __enter__(self) -> None:
        if self._stack is None:
            raise ValueError("name_scope is not reusable")
        if self._entered:
            raise ValueError("name_scope is not reentrant")
        self._entered = True
        self._stack.enter_context(_Simulated(self._module, self._method))

    def __exit__(self, *exc: Any) -> Any:
        stack, self._stack, self._entered = self._stack, None, False
        return stack.__exit__(*exc) if stack is not None else None


def name_scope(name: str, *, method_name: str = "__call__") -> NameScope:
    """Prefix the modules, parameters and state created inside the context with ``name``
    (``"foo"`` or ``"foo/bar"``), as if the code ran in method ``method_name`` of a module of
    that name. Single use; the same name twice gives ``foo`` then ``foo_1``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> def f(x):
        ...     with hk.name_scope('encoder'):
        ...         return hk.Linear(3)(x)
        >>> params = hk.transform(f).init(key, jnp.ones((1, 2)))
        >>> list(params)
        ['encoder/linear']
    """
    _frame("name_scope")
    return NameScope(name, method_name)

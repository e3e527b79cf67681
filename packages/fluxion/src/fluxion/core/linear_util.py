"""JAX's ``jax.extend.linear_util`` (public as ``fluxion.extend.linear_util``): functions
wrapped with a generator-based transformations, called once, with side outputs in stores.

A :class:`WrappedFun` holds a function ``f`` and the transformations added to it; each
transformation is a generator function called with the (transformed) arguments, which yields the
arguments to pass on, receives the result and returns the result to hand back (or, with aux,
``(result, aux)`` whose ``aux`` goes to a :class:`Store`). ``call_wrapped`` runs the stack. It is a
pure-Python utility; Fluxion's own transformations take plain functions, and hand
WrappedFuns only to user-defined traces (``jax.core.Trace.process_custom_jvp_call``).

Example:
    >>> import fluxion.extend.linear_util as lu
    >>> @lu.transformation
    ... def scale_args(k, *args):
    ...     out = yield tuple(a * k for a in args), {}
    ...     yield out + 1
    >>> f = scale_args(lu.wrap_init(lambda x, y: x + y), 10)
    >>> f.call_wrapped(1, 2)
    31
"""

from __future__ import annotations

import functools
import weakref
from typing import Any, Callable

__all__ = ["StoreException", "Store", "EqualStore", "WrappedFun", "wrap_init", "transformation",
           "transformation2", "transformation_with_aux", "transformation_with_aux2",
           "merge_linear_aux", "cache"]


class StoreException(Exception):
    """A store read while empty, or written twice."""


_EMPTY = object()


class Store:
    """Holds one value, written once (``store``) and read back (``val``).

    Example:
        >>> s = Store(); s.store(3); s.val
        3
    """

    __slots__ = ("_val",)

    def __init__(self) -> None:
        self._val: Any = _EMPTY

    def store(self, val: Any) -> None:
        if self._val is not _EMPTY:
            raise StoreException("Store occupied")
        self._val = val

    def reset(self) -> None:
        self._val = _EMPTY

    @property
    def val(self) -> Any:
        if self._val is _EMPTY:
            raise StoreException("Store empty")
        return self._val

    def __nonzero__(self) -> bool:
        return self._val is not _EMPTY

    __bool__ = __nonzero__


class EqualStore(Store):
    """A :class:`Store` that accepts a second write of an equal value.

    Example:
        >>> s = EqualStore(); s.store(2); s.store(2); s.val
        2
    """

    __slots__ = ()

    def store(self, val: Any) -> None:
        if self._val is not _EMPTY and self._val == val:
            return
        super().store(val)


class WrappedFun:
    """A function with a stack of transformations; ``call_wrapped`` calls the stack.

    Example:
        >>> wrap_init(lambda x: x * 2).call_wrapped(4)
        8
    """

    __slots__ = ("f", "f_transformed", "transforms", "stores", "params", "in_type", "debug_info")

    def __init__(self, f: Callable, f_transformed: Callable, transforms: tuple, stores: tuple,
                 params: tuple, in_type: Any, debug_info: Any) -> None:
        self.f = f
        self.f_transformed = f_transformed
        self.transforms = transforms
        self.stores = stores
        self.params = params
        self.in_type = in_type
        self.debug_info = debug_info

    @property
    def __name__(self) -> str:
        return getattr(self.f, "__name__", "<unnamed wrapped function>")

    def wrap(self, gen: Callable, gen_static_args: tuple, out_store: Store | None) -> WrappedFun:
        """This function with ``gen`` added on top (``out_store`` receives its aux output)."""
        inner = self.f_transformed
        call = (functools.partial(gen, inner, *gen_static_args) if out_store is None else
                functools.partial(gen, inner, out_store, *gen_static_args))
        return WrappedFun(self.f, call, ((gen, gen_static_args),) + self.transforms,
                          (out_store,) + self.stores, self.params, None, self.debug_info)

    def call_wrapped(self, *args: Any, **kwargs: Any) -> Any:
        """Calls the function through its transformations."""
        return self.f_transformed(*args, **kwargs)

    def populate_stores(self, stores: tuple) -> None:
        """Copies the values of ``stores`` (of an equal WrappedFun) into this one's."""
        for mine, theirs in zip(self.stores, stores):
            if mine is not None:
                mine._val = theirs._val

    def _key(self) -> tuple:
        return (self.f, self.transforms, self.params, self.in_type)

    def __hash__(self) -> int:
        return hash(self._key())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WrappedFun) and self._key() == other._key()

    def __repr__(self) -> str:
        names = [getattr(g, "__name__", repr(g)) for g, _ in self.transforms]
        return f"WrappedFun({self.__name__}, transforms={names})"


def wrap_init(f: Callable, params: dict[str, Any] | None = None, *,
              debug_info: Any = None) -> WrappedFun:
    """``f`` as a :class:`WrappedFun` with no transformations (``params`` are keyword arguments
    always passed to ``f``).

    Example:
        >>> wrap_init(lambda x, k: x + k, {"k": 1}).call_wrapped(2)
        3
    """
    kw = {} if params is None else dict(params)
    return WrappedFun(f, functools.partial(f, **kw), (), (), tuple(sorted(kw.items())), None,
                      debug_info)


def _curry(f: Callable) -> Callable:
    return functools.partial(functools.partial, f)


@_curry
def transformation2(gen: Callable, fun: WrappedFun, *gen_static_args: Any) -> WrappedFun:
    """Adds ``gen(f, *static_args, *args, **kwargs)`` on top of ``fun`` (it calls ``f`` itself).

    Example:
        >>> def plus_one(f, *args):
        ...     return f(*args) + 1
        >>> transformation2(plus_one, wrap_init(abs))().call_wrapped(-2)
        3
    """
    return fun.wrap(gen, gen_static_args, None)


@_curry
def transformation(gen: Callable, fun: WrappedFun, *gen_static_args: Any) -> WrappedFun:
    """Adds the generator transformation ``gen`` on top of ``fun`` (see the module docstring).

    Example:
        >>> @transformation
        ... def twice(*args):
        ...     out = yield args, {}
        ...     yield 2 * out
        >>> twice(wrap_init(abs)).call_wrapped(-3)
        6
    """
    def run(f: Callable, *args: Any, **kwargs: Any) -> Any:
        g = gen(*args, **kwargs)
        new_args, new_kwargs = next(g)
        return g.send(f(*new_args, **new_kwargs))

    run.__name__ = getattr(gen, "__name__", "transformation")
    return transformation2(run, fun, *gen_static_args)()


@_curry
def transformation_with_aux2(gen: Callable, fun: WrappedFun, *gen_static_args: Any,
                             use_eq_store: bool = False) -> tuple[WrappedFun, Callable[[], Any]]:
    """Adds ``gen(f, store, *static_args, *args)`` on top of ``fun``; returns the new function
    and a thunk reading the store after a call.

    Example:
        >>> def with_aux(f, store, *args):
        ...     out = f(*args)
        ...     store.store(out * 10)
        ...     return out
        >>> g, aux = transformation_with_aux2(with_aux, wrap_init(abs))()
        >>> g.call_wrapped(-2), aux()
        (2, 20)
    """
    out_store = EqualStore() if use_eq_store else Store()
    return fun.wrap(gen, gen_static_args, out_store), (lambda: out_store.val)


@_curry
def transformation_with_aux(gen: Callable, fun: WrappedFun,
                            *gen_static_args: Any) -> tuple[WrappedFun, Callable[[], Any]]:
    """Like :func:`transformation`, for a generator whose final yield is ``(result, aux)``.

    Example:
        >>> @transformation_with_aux
        ... def count(*args):
        ...     out = yield args, {}
        ...     yield out, len(args)
        >>> g, aux = count(wrap_init(lambda *a: sum(a)))
        >>> g.call_wrapped(1, 2, 3), aux()
        (6, 3)
    """
    def run(f: Callable, store: Store, *args: Any, **kwargs: Any) -> Any:
        g = gen(*args, **kwargs)
        new_args, new_kwargs = next(g)
        ans, aux = g.send(f(*new_args, **new_kwargs))
        store.store(aux)
        return ans

    run.__name__ = getattr(gen, "__name__", "transformation_with_aux")
    return transformation_with_aux2(run, fun, *gen_static_args)()


def merge_linear_aux(aux1: Callable[[], Any], aux2: Callable[[], Any]) -> tuple[bool, Any]:
    """``(True, aux1())`` if the first store was written, else ``(False, aux2())``; exactly one
    of the two must have been written.

    Example:
        >>> s = Store(); s.store(5)
        >>> merge_linear_aux(lambda: s.val, lambda: Store().val)
        (True, 5)
    """
    try:
        first = aux1()
    except StoreException:
        try:
            return False, aux2()
        except StoreException:
            raise StoreException("neither store occupied") from None
    try:
        aux2()
    except StoreException:
        return True, first
    raise StoreException("both stores occupied")


def cache(call: Callable, *, explain: Callable | None = None) -> Callable:
    """Memoizes ``call(fun: WrappedFun, *args)`` on ``fun`` and ``args`` (entries live as long
    as ``fun.f``).

    Example:
        >>> calls = []
        >>> @cache
        ... def trace(fun, n):
        ...     calls.append(n)
        ...     return fun.call_wrapped(n)
        >>> f = lambda x: x + 1
        >>> trace(wrap_init(f), 1), trace(wrap_init(f), 1), calls
        (2, 2, [1])
    """
    del explain
    tables: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    @functools.wraps(call)
    def memoized(fun: WrappedFun, *args: Any) -> Any:
        table = tables.setdefault(fun.f, {})
        key = (fun.transforms, fun.params, fun.in_type, args)
        if key in table:
            ans, stores = table[key]
            fun.populate_stores(stores)
            return ans
        ans = call(fun, *args)
        table[key] = (ans, fun.stores)
        return ans

    memoized.cache_clear = tables.clear  # type: ignore[attr-defined]
    return memoized

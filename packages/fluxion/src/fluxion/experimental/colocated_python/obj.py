"""Colocated Python classes: an object built lazily on the devices' host, methods run there.

Each wrapper instance gets an id; the real object is built from the recorded constructor
arguments on the first method call and kept in a process-wide store under that id (a method
caller that went through serialization finds it there again), and dropped when the wrapper is.
"""

from __future__ import annotations

import functools
import inspect
import random
import threading
import weakref
from typing import Any

from fluxion.experimental.colocated_python.func import make_callable

__all__ = ["wrap_class"]


class _ObjectStore:
    """Live colocated objects by id; built once even when two threads ask at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[int, Any] = {}
        self._building: dict[int, threading.Lock] = {}

    def get_or_create(self, uid: int, make: Any) -> Any:
        with self._lock:
            if uid in self._objects:
                return self._objects[uid]
            build_lock = self._building.setdefault(uid, threading.Lock())
        with build_lock:
            with self._lock:
                if uid in self._objects:
                    return self._objects[uid]
            obj = make()
            with self._lock:
                self._objects[uid] = obj
                self._building.pop(uid, None)
            return obj

    def drop(self, uid: int) -> None:
        with self._lock:
            self._objects.pop(uid, None)
            self._building.pop(uid, None)

    def __contains__(self, uid: int) -> bool:
        with self._lock:
            return uid in self._objects


SINGLETON_OBJECT_STORE = _ObjectStore()


class _MethodCaller:
    """Calls ``method_name`` of the object stored under ``uid``, building it on first use.
    Serializable: it carries the class and constructor arguments, not the object."""

    def __init__(self, cls: type, uid: int, init_args: tuple, init_kwargs: dict,
                 method_name: str) -> None:
        self.cls, self.uid, self.method_name = cls, uid, method_name
        self.init_args, self.init_kwargs = init_args, init_kwargs

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        obj = SINGLETON_OBJECT_STORE.get_or_create(
            self.uid, lambda: self.cls(*self.init_args, **self.init_kwargs))
        return getattr(obj, self.method_name)(*args, **kwargs)


def wrap_class(cls: type) -> type:
    """The wrapper class of ``colocated_python_class(cls)``."""

    class WrappedClass:
        def __init__(self, *init_args: Any, **init_kwargs: Any) -> None:
            uid = self._colocated_python_uid = random.getrandbits(63)
            weakref.finalize(self, SINGLETON_OBJECT_STORE.drop, uid)
            for name in dir(cls):
                member = getattr(cls, name)
                if not inspect.isfunction(member) or name in (
                        "__init__", "__del__", "__reduce__", "__reduce_ex__"):
                    continue
                caller = _MethodCaller(cls, uid, init_args, init_kwargs, name)
                method = make_callable(caller)
                functools.update_wrapper(method, member, updated=())
                setattr(self, name, method)

    functools.update_wrapper(WrappedClass.__init__, cls.__init__)
    WrappedClass.__name__ = cls.__name__
    WrappedClass.__qualname__ = cls.__qualname__
    WrappedClass.__doc__ = cls.__doc__
    return WrappedClass

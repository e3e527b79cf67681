"""Compiled executables: StableHLO text compiled once per (text, devices, options), and run.

- :func:`compile_text` compiles a module for its devices, shares identical texts through a weak
  index plus a byte-bounded keep-alive of recent ones, and goes through the persistent on-disk
  cache of serialized executables (backend/compile_cache.py) and its prefetch
  (backend/cache_prefetch.py). Modules with host callbacks are compiled per lowering.
- :class:`ExecEntry` is an executable with its result handlers and output Specs, and
  :func:`execute` runs one on Arrays (what the eager dispatcher in backend/dispatch.py and the
  fused jnp programs of backend/fused.py call).

Split out of backend/dispatch.py, which re-exports every name here that other modules use.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> text = fluxion.jit(lambda x: x + 1).lower(jnp.ones(2)).as_text()
    >>> exe = compile_text(text)
    >>> compile_text(text) is exe, exe.devices == (fluxion.devices()[0],)
    (True, True)
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
import weakref
from operator import attrgetter
from typing import Any, Sequence

import numpy as np

from fluxion.backend import cache_prefetch as _prefetch
from fluxion.backend import caches as _caches
from fluxion.backend import callback as _callback
from fluxion.backend import client as _client
from fluxion.backend import compile_cache as _disk
from fluxion.backend import compile_hook as _compile_hook
from fluxion.backend import compile_options as _compile_flags
from fluxion.backend import lapack as _lapack
from fluxion.backend.array import Array, Spec
from fluxion.backend.device_values import _wrap
from fluxion.core import avals as _avals
from fluxion.core import dtypes as _dtypes
from fluxion.core import monitoring as _monitoring
from fluxion.core.config import config

__all__ = ["Executable", "compile_text", "ExecEntry", "execute", "result_handlers",
           "collect_garbage"]

logger = logging.getLogger("fluxion")

_xc, _jax = _client._load()
#: Frees the Python objects jaxlib let go of without holding the GIL (each execution's and each
#: readiness query's traceback, ~70 bytes), which it only queues. jax's C++ jit frees them at
#: the start of every call; nothing else here does, so every path that runs an executable calls
#: this first, or a loop of cached calls grows by ~60 MB per million calls. An empty queue costs
#: one C call (~0.1 µs; in a loop of ``jit(lambda t: t + 1)(x)`` no slower than not freeing).
collect_garbage = _jax.collect_garbage
GET_K = attrgetter("_k")
GET_A = attrgetter("_a")


class Executable:
    """A loaded executable plus what is needed to feed and read it."""

    __slots__ = ("exe", "text", "devices", "compile_time", "nbytes", "__weakref__")

    def __init__(self, exe: Any, text: str, devices: tuple, compile_time: float) -> None:
        self.exe, self.text, self.devices, self.compile_time = exe, text, devices, compile_time
        self.nbytes = _caches.executable_nbytes(text)  # an estimate (backend/caches.py)


# Identical texts share one executable while anything uses it: ``_EXE_CACHE`` is a weak index
# (entries leave with the last jitted function or eager cache holding them), and
# ``_EXE_RECENT`` keeps the recently used ones alive a while longer, within
# ``fluxion_executable_cache_max_bytes``.
_EXE_CACHE: "weakref.WeakValueDictionary[tuple, Executable]" = weakref.WeakValueDictionary()
_EXE_RECENT = _caches.ByteCache(
    "recent executables", "fluxion_executable_cache_max_bytes",
    "compiled executables kept after their last user is gone (least recently used first out)",
    lru=True)
_compile_lock = threading.RLock()


def _cpu_overrides() -> list:
    """XLA options set for CPU compiles: the loop emitters when ``fluxion_cpu_fast_compile`` is
    on (off by default) and XLA_FLAGS does not choose the emitters itself. XLA's default MLIR
    fusion emitters build MLIR contexts and run an MLIR pipeline per fused kernel on every
    compile (~60 ms CPU for a module's first kernel, ~20 ms for each further one); the loop
    emitters compile the same optimized HLO in about half that, but lack some ops (complex
    max/min: those modules are recompiled with the default) and take the log of a subnormal
    as -inf where JAX gives the finite value."""
    if not config.fluxion_cpu_fast_compile or "xla_cpu_use_fusion_emitters" in os.environ.get(
            "XLA_FLAGS", ""):
        return []
    return [("xla_cpu_use_fusion_emitters", False)]


def _compile_options(devices: Sequence[Any], fast: bool = True, compiler_options: tuple = (),
                     propagate_outputs: tuple | None = None) -> Any:
    o = _xc.CompileOptions()
    n = len(devices)
    if fast and devices[0].platform == "cpu":
        overrides = _cpu_overrides()
        if overrides:
            o.env_option_overrides = overrides
    # [replica][partition] -> device id; without it XLA assigns replica 0 to device 0
    o.device_assignment = _xc.DeviceAssignment.create(
        np.array([[d.id for d in devices]], dtype=np.int64))
    if n > 1:
        o.num_replicas = 1
        o.num_partitions = n
    if propagate_outputs is not None:  # GSPMD (spmd.SpmdText): results XLA may shard, as jax
        o.executable_build_options.allow_spmd_sharding_propagation_to_output = list(
            propagate_outputs)
    # the rest as jax sets it from its flags (SPMD + Shardy, effort levels, profile version),
    # then the call's own compiler options (jit's / Lowered.compile's)
    return _compile_flags.apply_overrides(_compile_flags.apply_flags(o), compiler_options)


def compile_text(text: str, devices: Sequence[Any] | None = None,
                 compiler_options: tuple = ()) -> Executable:
    """Compile StableHLO ``text`` for ``devices`` (default: the default device), cached.

    ``compiler_options``: ``(name, value)`` pairs (``compile_options.overrides``), part of the
    cache keys: the same text under other options is another executable.

    Identical texts share one executable. Unless ``jax_enable_compilation_cache`` is off,
    executables are also written to (and read back from) disk: see :mod:`compile_cache`.
    """
    devs = tuple(devices) if devices else (_client.default_device(),)
    # the devices' own client: a CPU computation in a process whose default backend is a TPU
    # (a host callback's body, a module called on a CPU Array) compiled on the TPU's client
    # with CPU devices crashed the process there
    cl = devs[0].client
    prop = getattr(text, "propagate_outputs", None)
    if getattr(text, "host_callbacks", None):
        # Host callbacks (backend/callback.py): the callables are bound at compile time, so such
        # modules are compiled per lowering and never shared through the caches.
        t0 = time.perf_counter()
        with _compile_lock:
            exe = _callback.compile_with_callbacks(cl, text, _jax.DeviceList(devs),
                                                   _compile_options(devs, True, compiler_options,
                                                                    prop))
        return Executable(exe, text, devs, time.perf_counter() - t0)
    key = (text, devs, _compile_flags.key(), compiler_options)  # a new option, a new compile
    hit = _EXE_CACHE.get(key)
    if hit is not None:
        _keep_recent(key, hit)
        return hit
    with _compile_lock:
        hit = _EXE_CACHE.get(key)
        if hit is not None:
            _keep_recent(key, hit)
            return hit
        dl = _jax.DeviceList(devs)
        if "xla_ffi_python_" in text or "is_host_transfer = true" in text:
            # Host callbacks without their Python callables (a module rebuilt from text, e.g.
            # deserialized): XLA would crash at execution, so refuse to compile it.
            raise ValueError("compile: this module calls Python host callbacks (debug.print, "
                             "pure_callback, io_callback) but the callables are not available; "
                             "such programs cannot be compiled from their text alone")
        lapack = _lapack.needs_lapack(text)
        if lapack:
            _lapack.ensure_lapack()  # registered + initialised before compile/deserialize
        opts = _compile_options(devs, True, compiler_options, prop)
        t0 = time.perf_counter()
        exe, pkey, cdir = None, None, _disk.cache_dir()
        pf = _prefetch.active()  # a jitted call's entry read while it was traced
        if cdir is not None:
            pkey = _disk.entry_key(text, cl, devs, opts)
            exe = pf.take(pkey, devs) if pf is not None else None
            blob = _disk.load(cdir, pkey) if exe is None else None
            if blob is not None:
                try:
                    exe = cl.deserialize_executable(blob, dl, opts)
                except Exception as e:  # a bad entry is recompiled (and rewritten), not fatal
                    logger.warning("fluxion: ignoring unloadable compilation cache entry: %s", e)
            if exe is not None:
                _monitoring.record_event(_disk.CACHE_HIT_EVENT)
        if exe is None:
            try:
                exe = _compile_hook.backend_compile_and_load(cl, text, dl, opts)
            except _jax.JaxRuntimeError:
                plain = _compile_options(devs, False, compiler_options, prop)
                if len(opts.env_option_overrides) == len(plain.env_option_overrides):
                    raise  # no option of fluxion_cpu_fast_compile's to leave out
                # fluxion_cpu_fast_compile's loop emitters lack some ops: XLA's default then
                exe = _compile_hook.backend_compile_and_load(cl, text, dl, plain)
            elapsed = time.perf_counter() - t0
            _monitoring.record_event_duration_secs(_monitoring.BACKEND_COMPILE_EVENT, elapsed)
            if pkey is not None and elapsed >= config.jax_persistent_cache_min_compile_time_secs:
                # serialized and written on the cache's writer thread: the call runs meanwhile
                _disk.store_later(cdir, pkey, functools.partial(cl.serialize_executable, exe),
                                  config.jax_persistent_cache_min_entry_size_bytes)
            else:
                pkey = None  # not written: no hint may name it
        entry = Executable(exe, text, devs, time.perf_counter() - t0)
        if pkey is not None:
            _prefetch.LOADED[pkey] = entry
            if pf is not None:
                pf.settle(pkey, devs, _prefetch.LAPACK if lapack else "")
        _EXE_CACHE[key] = entry
        _EXE_RECENT.put(key, entry, entry.nbytes)
        return entry


def _keep_recent(key: tuple, exe: Executable) -> None:
    if key in _EXE_RECENT:
        _EXE_RECENT.touch(key)
    else:
        _EXE_RECENT.put(key, exe, exe.nbytes)


def _buffer_spec(s: Spec) -> Spec:
    """The Spec jaxlib reads an output buffer as: bool for float0, the physical aval for a
    user-defined extended dtype (the Array made from it keeps ``s``, the logical aval)."""
    if isinstance(s.dtype, _dtypes.ExtendedDType):
        return Spec(_avals.physical_aval(s.aval), s.sharding)
    if s.dtype == _dtypes.float0:
        return Spec(s.aval.update(dtype=np.dtype(np.bool_), weak_type=False), s.sharding)
    return s


def result_handlers(specs: Sequence[Spec]) -> list:
    return [_jax.array_result_handler(_buffer_spec(s), s.sharding, True, True) for s in specs]


class ExecEntry:
    """A cached executable with its result handlers and output Specs."""

    __slots__ = ("exe", "handlers", "out_specs", "single", "run", "executable", "out0", "lru")

    def __init__(self, executable: Executable, out_specs: Sequence[Spec], single: bool) -> None:
        self.executable = executable  # holds it in the shared index (_EXE_CACHE is weak)
        self.exe = executable.exe
        self.out_specs = tuple(out_specs)
        self.handlers = result_handlers(self.out_specs)
        self.single = single
        self.run = self.exe.execute_sharded
        self.out0 = self.out_specs[0] if self.out_specs else None
        self.lru = None  # its key in _EAGER_BYTES, once an eager table holds it


def execute(entry: ExecEntry, arrays: Sequence[Array]) -> list[Array]:
    collect_garbage()
    outs = entry.run(tuple(map(GET_A, arrays))).consume_with_handlers(entry.handlers)
    return list(map(_wrap, outs, entry.out_specs))

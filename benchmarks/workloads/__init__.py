"""Workload discovery and the workload module protocol.

A workload is one module in this folder (names starting with ``_`` are ignored). It must not
import any backend at module level; it defines:

``NAME``         the workload's name (by convention, the module's name).
``DESCRIPTION``  one line saying what is timed.
``VARIANTS``     the variants it implements, in display order. A variant is a backend name
                 (``"numpy"``) or a backend name and a suffix (``"jax-jit"``, ``"fluxion-eager"``).
``SIZES``        the sizes of a full run: JSON values (ints, lists used as shapes, ...).
``setup(variant, size)`` returning a zero-argument callable that runs one repetition and blocks
                 until its result is ready; *or* ``IMPLS``, a dict ``variant -> factory(size)``
                 doing the same (then ``VARIANTS`` defaults to its keys).

and optionally:

``QUICK_SIZES``  the sizes of a ``--quick`` run (default: ``SIZES``).
``PHASES``       the names of the timings one repetition reports (default ``("total",)``). With
                 more than one phase, the callable times itself and returns a dict
                 ``phase -> seconds``; otherwise the worker times the call.
                 Exception: a ``"first_call"`` phase next to one other phase needs no
                 self-timing: the worker times the loop as the other phase and takes the first
                 call from the callable's ``first_call_s`` attribute (set it when ``setup`` made
                 and timed the first call itself, e.g. to check the result), else from the
                 first warmup call.
``VARIANT_PHASES``  ``variant -> phases`` for variants that report only some of ``PHASES``
                 (numpy has no compile phase); the others are expected to report all of them.
``DEFAULT_REPS`` / ``QUICK_REPS``  repetitions when ``--reps`` is not given.
``size_label(size)``  a short string for tables and plots.

Example:
    >>> from benchmarks import workloads
    >>> "eager_dispatch" in workloads.discover()
    True
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
import types
from typing import Any, Callable

__all__ = ["WorkloadSpec", "discover", "load_module", "spec_of", "make_callable",
           "default_size_label"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def discover() -> dict[str, str]:
    """The workloads shipped in this folder: ``name -> path of its module``, sorted by name.

    Example:
        >>> sorted(discover())[:1]
        ['eager_dispatch']
    """
    found = {}
    for fname in sorted(os.listdir(_HERE)):
        if fname.endswith(".py") and not fname.startswith("_"):
            found[fname[:-3]] = os.path.join(_HERE, fname)
    return found


def load_module(path: str) -> types.ModuleType:
    """Import the workload module at ``path`` (a file; need not be inside this package).

    Example:
        >>> load_module(discover()["eager_dispatch"]).NAME
        'eager_dispatch'
    """
    path = os.path.abspath(path)
    mod_name = "_fluxion_bench_workload_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load a workload from {path!r}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    spec.loader.exec_module(module)
    return module


def default_size_label(size: Any) -> str:
    """A short label for a size: ``[] -> "()"``, ``[500, 500] -> "500x500"``, ``128 -> "128"``.

    Example:
        >>> default_size_label([]), default_size_label([500, 500]), default_size_label(7)
        ('()', '500x500', '7')
    """
    if isinstance(size, (list, tuple)):
        return "()" if len(size) == 0 else "x".join(str(s) for s in size)
    return str(size)


@dataclasses.dataclass(frozen=True)
class WorkloadSpec:
    """A workload's metadata, read without importing any backend."""

    name: str
    description: str
    path: str
    variants: tuple[str, ...]
    sizes: tuple[Any, ...]
    quick_sizes: tuple[Any, ...]
    phases: tuple[str, ...]
    default_reps: int | None
    quick_reps: int | None
    module: types.ModuleType = dataclasses.field(repr=False, compare=False)
    variant_phases: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict,
                                                                   compare=False)

    def label(self, size: Any) -> str:
        """The display label of ``size``."""
        fn = getattr(self.module, "size_label", None)
        return str(fn(size)) if fn is not None else default_size_label(size)

    def phases_of(self, variant: str) -> tuple[str, ...]:
        """The phases ``variant`` reports: its ``VARIANT_PHASES`` entry, else all ``phases``."""
        return self.variant_phases.get(variant, self.phases)


def spec_of(module: types.ModuleType, path: str | None = None) -> WorkloadSpec:
    """Validate a workload module and return its :class:`WorkloadSpec`.

    Example:
        >>> spec_of(load_module(discover()["jit_tiny_call"])).phases
        ('total',)
    """
    impls = getattr(module, "IMPLS", None)
    has_setup = callable(getattr(module, "setup", None))
    if impls is None and not has_setup:
        raise TypeError(f"workload {module.__name__} defines neither setup() nor IMPLS")
    variants = tuple(getattr(module, "VARIANTS", None) or (tuple(impls) if impls else ()))
    if not variants:
        raise TypeError(f"workload {module.__name__} declares no VARIANTS")
    sizes = tuple(getattr(module, "SIZES", ()))
    if not sizes:
        raise TypeError(f"workload {module.__name__} declares no SIZES")
    phases = tuple(getattr(module, "PHASES", ("total",)))
    variant_phases = {str(v): tuple(ph) for v, ph in
                      (getattr(module, "VARIANT_PHASES", None) or {}).items()}
    for v, ph in variant_phases.items():
        if not ph or not set(ph) <= set(phases):
            raise TypeError(f"workload {module.__name__}: VARIANT_PHASES[{v!r}] = {ph} must be "
                            f"a non-empty subset of PHASES {phases}")
    return WorkloadSpec(
        name=str(getattr(module, "NAME", module.__name__)),
        description=str(getattr(module, "DESCRIPTION", "")),
        path=os.path.abspath(path or module.__file__ or ""),
        variants=variants,
        sizes=sizes,
        quick_sizes=tuple(getattr(module, "QUICK_SIZES", None) or sizes),
        phases=phases,
        default_reps=getattr(module, "DEFAULT_REPS", None),
        quick_reps=getattr(module, "QUICK_REPS", None),
        module=module,
        variant_phases=variant_phases,
    )


def make_callable(module: types.ModuleType, variant: str, size: Any) -> Callable[[], Any]:
    """Build the zero-argument repetition callable of ``variant`` at ``size``.

    Example:
        >>> fn = make_callable(load_module(discover()["eager_dispatch"]), "numpy", [3])
        >>> fn().shape
        (3,)
    """
    impls = getattr(module, "IMPLS", None)
    if impls is not None and variant in impls:
        return impls[variant](size)
    setup = getattr(module, "setup", None)
    if setup is None:
        name = getattr(module, "NAME", module.__name__)
        raise KeyError(f"workload {name} has no variant {variant!r}")
    return setup(variant, size)

"""The benchmark subprocess: times one workload's variants on one backend.

Started by the runner as::

    python -m benchmarks.worker --workload PATH --backend NAME --variants a,b \
        --sizes JSON --reps N --warmup W --min-rep-time SECONDS --out FILE

It appends one JSON object per line to ``FILE`` (flushed as it goes, so a crash mid-way keeps
what was measured): first a ``{"kind": "backend", ...}`` header, then one ``{"kind": "record",
...}`` per (variant, size, phase). Every failure (backend import, setup, a repetition) becomes an
error record; the worker itself exits 0 unless it could not even start.

Example:
    >>> from benchmarks.worker import summarize
    >>> summarize([3.0, 1.0, 2.0])["median_s"]
    2.0
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
import traceback
from typing import Any, Callable, TextIO

from benchmarks import backends, workloads

__all__ = ["FIRST_CALL", "summarize", "measure", "run_delay_s", "wait_share", "main"]

#: The phase name of a first call (trace + compile + run), reported apart from steady state.
FIRST_CALL = "first_call"


def summarize(times: list[float]) -> dict[str, Any]:
    """Statistics of per-call times in seconds: median, min, max, mean, stdev, reps.

    Example:
        >>> summarize([1.0, 3.0])["mean_s"]
        2.0
    """
    return {
        "reps": len(times),
        "median_s": statistics.median(times),
        "min_s": min(times),
        "max_s": max(times),
        "mean_s": statistics.fmean(times),
        "stdev_s": statistics.stdev(times) if len(times) > 1 else 0.0,
        "times_s": list(times),
    }


def _timed_loop(fn: Callable[[], Any], number: int) -> float:
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        return time.perf_counter() - t0
    finally:
        if gc_was_enabled:
            gc.enable()


def run_delay_s() -> float | None:
    """Seconds the calling thread has spent runnable but waiting for a core, since it started
    (Linux ``/proc/thread-self/schedstat``); None where the kernel does not say.

    On a loaded machine a timed loop's wall time counts these waits; the difference of two
    readings around a loop says how much of it was spent waiting, not running.

    Example:
        >>> d = run_delay_s()
        >>> d is None or d >= 0.0
        True
    """
    try:
        with open("/proc/thread-self/schedstat", "rb") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def wait_share(waits: list[float], times: list[float]) -> float | None:
    """The share of the repetitions' wall time spent waiting for a core: the sum of the waits
    over the sum of the times (both per call, one entry per repetition). The kernel adds a
    wait to the thread's count when the thread gets a core back, in steps of milliseconds, so
    one short repetition's wait can land in the next: only the sum over repetitions is right.

    Example:
        >>> wait_share([0.0, 3.0], [2.0, 4.0])
        0.5
    """
    total = sum(times)
    return min(1.0, sum(waits) / total) if waits and total > 0 else None


def _calibrate(fn: Callable[[], Any], min_rep_time: float) -> int:
    # timeit-style: the smallest number in 1, 2, 5, 10, 20, ... whose loop lasts min_rep_time.
    number = 1
    while True:
        for factor in (1, 2, 5):
            n = number * factor
            if _timed_loop(fn, n) >= min_rep_time or n >= 10_000_000:
                return n
        number *= 10


def measure(fn: Callable[[], Any], *, reps: int, warmup: int, min_rep_time: float,
            phases: tuple[str, ...] = ("total",), first_call: dict[str, float] | None = None,
            cpu: dict[str, list[float]] | None = None,
            wait: dict[str, list[float]] | None = None) -> tuple[int, dict[str, list[float]]]:
    """Time ``fn`` and return ``(number, {phase: per-call seconds for each rep})``.

    The first call (part of warmup, which is at least one call) decides the mode: if it returns
    a dict, ``fn`` times itself and each call is one repetition whose phases are the dict's
    items; otherwise each repetition runs ``fn`` ``number`` times in a loop (``number``
    calibrated so a repetition lasts at least ``min_rep_time``) and records the mean per call
    as phase ``phases[0]``. Warmup calls are never timed into the repetitions; when
    ``first_call`` is a dict, the duration of the very first call is stored in it as ``"s"``.
    When ``cpu`` is a dict, a looped phase's per-call process CPU seconds for each repetition
    go in it under the phase's name (on a loaded machine wall time also counts the waits for a
    core; CPU time does not). When ``wait`` is a dict, it gets the per-call seconds the timing
    thread waited for a core in each such repetition (:func:`run_delay_s`; nothing where the
    kernel does not say; see :func:`wait_share` for why only their sum is right).

    Example:
        >>> number, times = measure(lambda: None, reps=3, warmup=1, min_rep_time=1e-4)
        >>> len(times["total"]), number > 1
        (3, True)
    """
    t0 = time.perf_counter()
    first = fn()
    if first_call is not None:
        first_call["s"] = time.perf_counter() - t0
    for _ in range(max(0, warmup - 1)):
        fn()
    if isinstance(first, dict):
        out: dict[str, list[float]] = {}
        for _ in range(reps):
            gc.collect()
            for phase, seconds in fn().items():
                out.setdefault(str(phase), []).append(float(seconds))
        return 1, out
    number = _calibrate(fn, min_rep_time)
    gc.collect()
    times, cpu_times, wait_times = [], [], []
    for _ in range(reps):
        d0 = run_delay_s()
        c0 = time.process_time()
        times.append(_timed_loop(fn, number) / number)
        cpu_times.append((time.process_time() - c0) / number)
        d1 = run_delay_s()
        if d0 is not None and d1 is not None:
            wait_times.append((d1 - d0) / number)
    if cpu is not None:
        cpu[phases[0]] = cpu_times
    if wait is not None and len(wait_times) == reps:
        wait[phases[0]] = wait_times
    return number, {phases[0]: times}


def _short_error(exc: BaseException) -> str:
    last = traceback.format_exception_only(type(exc), exc)[-1].strip()
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {tb[-1].filename}:{tb[-1].lineno})" if tb else ""
    return (last + where)[:2000]


def _emit(out: TextIO, obj: dict[str, Any]) -> None:
    out.write(json.dumps(obj) + "\n")
    out.flush()


def main(argv: list[str] | None = None) -> int:
    """Run the worker (see the module docstring); returns the process exit status."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.worker")
    p.add_argument("--workload", required=True, help="path of the workload module")
    p.add_argument("--backend", required=True)
    p.add_argument("--variants", required=True, help="comma-separated variant names")
    p.add_argument("--sizes", required=True, help="JSON list of sizes")
    p.add_argument("--phases", default='["total"]', help="JSON list of expected phase names")
    p.add_argument("--reps", type=int, required=True)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--min-rep-time", type=float, default=0.005)
    p.add_argument("--out", required=True, help="file to append JSON lines to")
    args = p.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    sizes = json.loads(args.sizes)
    phases = tuple(json.loads(args.phases))

    with open(args.out, "a", encoding="utf-8") as out:
        base = {"backend": args.backend}

        def error_records(variant: str, size: Any, message: str,
                          only: tuple[str, ...] = ()) -> None:
            for phase in only or phases:
                _emit(out, {"kind": "record", **base, "variant": variant, "size": size,
                            "phase": phase, "status": "error", "error": message})

        module = workloads.load_module(args.workload)
        variant_phases = getattr(module, "VARIANT_PHASES", None) or {}
        try:
            t0 = time.perf_counter()
            b = backends.load(args.backend)
            import_s = time.perf_counter() - t0
        except BaseException as exc:
            msg = f"importing backend {args.backend!r} failed: {_short_error(exc)}"
            _emit(out, {"kind": "backend", **base, "version": None, "import_error": msg})
            for v in variants:
                for s in sizes:
                    error_records(v, s, msg, only=tuple(variant_phases.get(v, phases)))
            return 0
        _emit(out, {"kind": "backend", **base, "version": b.version, "import_error": None,
                    "import_s": import_s})

        for variant in variants:
            expected = tuple(variant_phases.get(variant, phases))
            for size in sizes:
                try:
                    fn = workloads.make_callable(module, variant, size)
                    # A "first_call" phase of a callable that does not time itself is its
                    # first call: ``fn.first_call_s`` when setup made (and timed) it, else the
                    # first warmup call. Phases in ``fn.once_s`` (``{phase: seconds}``, e.g.
                    # an eager ``setup`` timed once in the workload's setup) are recorded as
                    # one repetition each. The other phase is the steady state.
                    once = {str(k): float(v) for k, v in
                            (getattr(fn, "once_s", None) or {}).items() if k in expected}
                    steady = tuple(ph for ph in expected
                                   if ph != FIRST_CALL and ph not in once) or expected
                    first: dict[str, float] | None = {} if FIRST_CALL in expected else None
                    cpu: dict[str, list[float]] = {}
                    wait: dict[str, list[float]] = {}
                    number, times = measure(fn, reps=args.reps, warmup=args.warmup,
                                            min_rep_time=args.min_rep_time, phases=steady,
                                            first_call=first, cpu=cpu, wait=wait)
                    if first is not None and FIRST_CALL not in times:
                        times[FIRST_CALL] = [float(getattr(fn, "first_call_s", first["s"]))]
                    for ph, seconds in once.items():
                        times.setdefault(ph, [seconds])
                except Exception as exc:
                    error_records(variant, size, _short_error(exc), only=expected)
                    continue
                # what the timed calls did (e.g. an optimizer's iterations), where the
                # workload's callable says so in a ``work`` dict of numbers
                work = getattr(fn, "work", None)
                extra = {"work": dict(work)} if isinstance(work, dict) else {}
                for phase, ts in times.items():
                    cpu_extra = ({"cpu_times_s": cpu[phase],
                                  "cpu_median_s": statistics.median(cpu[phase])}
                                 if phase in cpu else {})
                    if phase in wait:  # the timing thread's waits for a core, per call
                        cpu_extra |= {"wait_times_s": wait[phase],
                                      "wait_share": wait_share(wait[phase], ts)}
                    _emit(out, {"kind": "record", **base, "variant": variant, "size": size,
                                "phase": phase, "status": "ok", "error": None,
                                "number": 1 if phase == FIRST_CALL or phase in once else number,
                                "warmup": (0 if phase == FIRST_CALL or phase in once
                                           else max(1, args.warmup)),
                                **summarize(ts), **extra, **cpu_extra})
                missing = tuple(ph for ph in expected if ph not in times)
                if missing:
                    error_records(variant, size, "the workload did not report this phase",
                                  only=missing)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""pytest plugin loaded (``-p compat_plugin``) by the child processes that ``run_suites.py`` starts.

It is imported before any test file, so it sets the process up the way the libraries' own test
entry points (``absltest.main``) do, and the same way on both sides:

* the mode (``FLUXION_COMPAT_MODE``): ``real`` leaves ``jax`` alone; ``alias`` resolves ``jax`` to
  Fluxion (``fluxion.compat.install_jax_alias`` when it exists, else ``compat_alias``'s fallback);
  ``mirror`` also resolves the library (``FLUXION_COMPAT_LIB``) to its Fluxion mirror (for flax:
  ``flax.nnx`` only, the rest real; each test's event lists the real flax parts it read, under
  ``real_flax``);
* absl flags parsed once (``FLAGS(["pytest"])``), a derandomized hypothesis profile;
* an optional keep-list / skip-list of node ids (``FLUXION_COMPAT_ONLY`` / ``FLUXION_COMPAT_SKIP``:
  files with one node id a line), so the runner can run a sample or resume after a crash;
* one JSON line per event appended to ``FLUXION_COMPAT_OUT``: ``start`` before each test, ``test``
  with its outcome and the first failure's exception type and message, ``collect`` for a file that
  failed to import.
"""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

_MODE = os.environ.get("FLUXION_COMPAT_MODE", "real")
_LIB = os.environ.get("FLUXION_COMPAT_LIB", "")
_OUT = os.environ.get("FLUXION_COMPAT_OUT")
_ALIAS_USED = "none"


def _install() -> None:
    global _ALIAS_USED
    if _MODE not in ("real", "alias", "mirror"):
        raise SystemExit(f"compat_plugin: unknown FLUXION_COMPAT_MODE {_MODE!r}")
    if _MODE == "real":
        return
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import compat_alias

    try:
        from fluxion.compat import install_jax_alias
    except ImportError:
        compat_alias.install_jax_alias_fallback()
        _ALIAS_USED = "tests/compat fallback"
    else:
        install_jax_alias()
        _ALIAS_USED = "fluxion.compat.install_jax_alias"
    if _MODE == "mirror":
        compat_alias.install_mirror_alias(_LIB)


_install()

if _LIB == "jax_md":
    # jax-md's node ids depend on x64: its files parametrize float64 cases only when
    # jax_enable_x64 is on, which tests/a2c_test.py (the first file of a whole-suite run) sets at
    # import. Set it before collection, so that a run of some files (the sample, --files, a chunk)
    # has the same ids as the whole suite.
    import jax as _jax

    _jax.config.update("jax_enable_x64", True)

# absltest.main() parses the flags before running; module-level FLAGS reads need it under pytest.
from absl import flags as _absl_flags  # noqa: E402

if not _absl_flags.FLAGS.is_parsed():
    _absl_flags.FLAGS(["pytest"], known_only=True)

try:
    import hypothesis as _hyp
except ImportError:  # pragma: no cover - hypothesis is in the test extra
    _hyp = None
else:
    _hyp.settings.register_profile(
        "fluxion-compat", derandomize=True, database=None, deadline=None, print_blob=False,
        suppress_health_check=list(_hyp.HealthCheck))
    _hyp.settings.load_profile("fluxion-compat")


def _write(rec: dict) -> None:
    if not _OUT:
        return
    line = (json.dumps(rec) + "\n").encode()
    fd = os.open(_OUT, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _read_ids(var: str) -> set[str] | None:
    path = os.environ.get(var)
    if not path:
        return None
    with open(path) as f:
        return {ln.rstrip("\n") for ln in f if ln.strip()}


def _cause(exc: BaseException) -> str:
    tp = type(exc)
    name = tp.__qualname__ if tp.__module__ in ("builtins", "__main__") else f"{tp.__module__}.{tp.__qualname__}"
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ is itself the cause
        text = "<unprintable>"
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return f"{name}: {first}"[:400]


def pytest_configure(config: pytest.Config) -> None:
    _write({"kind": "session", "mode": _MODE, "lib": _LIB, "alias": _ALIAS_USED, "pid": os.getpid(),
            "time": time.time()})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    only = _read_ids("FLUXION_COMPAT_ONLY")
    skip = _read_ids("FLUXION_COMPAT_SKIP") or set()
    keep, drop = [], []
    for item in items:
        if (only is not None and item.nodeid not in only) or item.nodeid in skip:
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _real_flax_used() -> set[str] | None:
    """The flax mirror's record of real flax parts read (None in every other mode/library)."""
    if _MODE != "mirror" or _LIB != "flax":
        return None
    return sys.modules["compat_alias"].REAL_FLAX_USED


# test file -> the real flax parts its import (module-level code) read: its tests use them too
_FILE_USES: dict[str, set[str]] = {}


def pytest_collectstart(collector: pytest.Collector) -> None:
    used = _real_flax_used()
    if used is not None and isinstance(collector, pytest.Module):
        used.clear()


def pytest_collectreport(report: pytest.CollectReport) -> None:
    used = _real_flax_used()
    if used is not None and "::" not in report.nodeid and report.nodeid.endswith(".py"):
        _FILE_USES[report.nodeid] = set(used)
        used.clear()
    if report.failed:
        text = str(report.longrepr)
        lines = [ln[1:].strip() for ln in text.splitlines() if ln.startswith("E ")]
        cause = lines[0] if lines else (text.strip().splitlines() or ["collection error"])[-1]
        _write({"kind": "collect", "nodeid": report.nodeid, "cause": cause[:400]})


_STATE: dict[str, dict] = {}


_LAST_FILE: list[str] = [""]


def _release_memory() -> None:
    """Between test files: drop jax's (or Fluxion's) compiled-function caches, the same way on
    every side, so that a whole suite's executables do not pile up in one process (GBs)."""
    jax = sys.modules.get("jax")
    clear = getattr(jax, "clear_caches", None)
    if callable(clear):
        try:
            clear()
        except Exception:  # noqa: BLE001 - housekeeping must not fail a test
            pass
    import gc

    gc.collect()


def pytest_runtest_logstart(nodeid: str, location) -> None:
    fileid = nodeid.split("::", 1)[0]
    if fileid != _LAST_FILE[0]:
        if _LAST_FILE[0]:
            _release_memory()
        _LAST_FILE[0] = fileid
    _STATE[nodeid] = {"outcome": "passed", "cause": None, "t0": time.time()}
    used = _real_flax_used()
    if used is not None:
        used.clear()
    _write({"kind": "start", "nodeid": nodeid})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    rep = outcome.get_result()
    st = _STATE.setdefault(item.nodeid, {"outcome": "passed", "cause": None, "t0": time.time()})
    if st["outcome"] == "failed":
        return
    if rep.failed:
        st["outcome"] = "failed"
        exc = call.excinfo.value if call.excinfo is not None else None
        st["cause"] = _cause(exc) if exc is not None else str(rep.longrepr).splitlines()[-1][:400]
        if call.when != "call":
            st["cause"] = f"[{call.when}] " + st["cause"]
    elif rep.skipped and st["outcome"] == "passed":
        st["outcome"] = "xfailed" if hasattr(rep, "wasxfail") else "skipped"
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        st["cause"] = f"skipped: {reason}"[:400]


def pytest_runtest_logfinish(nodeid: str, location) -> None:
    st = _STATE.pop(nodeid, {"outcome": "passed", "cause": None, "t0": time.time()})
    rec = {"kind": "test", "nodeid": nodeid, "outcome": st["outcome"], "cause": st["cause"],
           "duration": round(time.time() - st["t0"], 3), "t": round(time.time(), 1)}
    used = _real_flax_used()
    if used is not None:
        # flax mirror: the real flax parts (linen, struct, ...) this test or its file's import read
        parts = used | _FILE_USES.get(nodeid.split("::", 1)[0], set())
        if parts:
            rec["real_flax"] = sorted(parts)
    _write(rec)

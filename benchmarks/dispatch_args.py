"""Host-side cost of a cached jitted call by its number of array arguments and outputs.

Fluxion and jax interleaved in one process: for each ``(arguments, outputs)`` case a jitted
function of that many f32[4] arguments returning a tuple of that many outputs (so XLA's work
is negligible and the figure is the host's dispatch), called in blocks of ``--calls``
pipelined calls on device arrays that a previous jitted call returned (as in a training loop),
one wait at the end of each block. Also the ``mlp`` case: ``jit(grad(loss))(params, x, y)``
of benchmarks/workloads/mlp_grad.py at 8-4-4-2 (8 argument leaves in a list of ``(w, b)``
tuples, 6 outputs) and ``mlp_dict`` (the same with haiku's ``{"linear": {"b", "w"}, ..}``
parameter dicts). Prints µs per call, the minimum over ``--blocks`` blocks per library.

Run: ``nice -n 10 .venv/bin/python -m benchmarks.dispatch_args [--calls 200 --blocks 15]``;
``--split`` adds Fluxion's entry call on prepared buffers and jaxlib's bare execute (where a
call's time goes), and jaxlib's bare execute of jax's executable on jax's buffers
(``jax_exec``); ``--libs fluxion`` times Fluxion alone (on a TPU, where jax and Fluxion
cannot hold the chip in one process: ``JAX_PLATFORMS=tpu``).

``--cases tke,eos`` (any of :data:`PYHPC`) times a pyhpc kernel of benchmarks/kernels at
``--size`` cells (default 4096), float64 with x64 on, jitted over its arguments placed with
``device_put`` as the ``pyhpc_*`` workloads do, each call waited for (``block_until_ready``,
the workload's steady call): the same columns, and with ``--split`` a ``layouts`` line per
library saying whether each argument buffer's layout is the one the executable's parameter
takes (a mismatch may cost a relayout per call on an accelerator).

On a TPU (issue 32: pyhpc_tke 1.97 ms under Fluxion against 1.14 under jax on a v5e with the
same optimized HLO), from the repository root, one process per library (each holds the chip),
then Fluxion again with jax's client setup (the environment jax's ``cloud_tpu_init`` sets
before libtpu loads, and jax's client create options)::

    export PYTHONPATH=$PYTHONPATH:$(ls -d $PWD/packages/*/src | paste -sd:):$PWD
    for L in fluxion jax; do JAX_PLATFORMS=tpu python3 -m benchmarks.dispatch_args \
        --cases tke,eos --libs $L --split --jax-options --jax-text --calls 50 --blocks 10; done
    TPU_ML_PLATFORM=JAX LIBTPU_INIT_ARGS=--xla_tpu_use_enhanced_launch_barrier=true \
        JAX_PLATFORMS=tpu python3 -m benchmarks.dispatch_args --cases tke,eos --libs fluxion \
        --split --calls 50 --blocks 10 \
        --client-options "ml_framework_name:JAX;ml_framework_version:0.10.2"

Reading it: the whole calls and ``entry`` wait once for all outputs (one batched wait, in
both libraries), ``execute`` and ``jax_exec`` for each output in turn. ``fluxion`` >> ``entry``
is Python before the entry (dispatch, argument checks); ``entry`` >> ``execute`` is the entry's
own call (output wrapping, the wait); ``execute`` >> ``jax_exec`` is below Python (the
executable, the argument buffers or the client), which the other columns tell apart:
``jaxopts`` (``--jax-options``: Fluxion's module compiled with jax's ``CompileOptions``, bare
execute on Fluxion's buffers) near ``jax_exec`` names the compile options, ``jaxtext``
(``--jax-text``: jax's module of the kernel compiled with Fluxion's options, bare execute on
Fluxion's buffers) near ``jax_exec`` the module, a ``layouts`` mismatch the buffers, and the
third run's ``execute`` near ``jax_exec`` the client's setup (libtpu's environment or the
client's create options).

Example:
    >>> from benchmarks import dispatch_args
    >>> dispatch_args.CASES[:2]
    ((1, 1), (1, 6))
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import time
from typing import Any, Callable

import numpy as np

__all__ = ["CASES", "PYHPC", "make_case", "make_mlp", "make_dict_mlp", "make_pyhpc",
           "split_calls", "jax_split_calls", "jax_options_call", "jax_text_call",
           "layout_mismatches", "time_block", "main"]

#: ``(arguments, outputs)`` pairs timed by default.
CASES = tuple((n, m) for n in (1, 4, 8, 16) for m in (1, 6, 12))
#: pyhpc kernels (benchmarks/kernels) timed by name in ``--cases`` (float64, x64 on).
PYHPC = ("tke", "eos", "isoneutral")


def _flat_fun(n: int, m: int) -> Callable:
    """A function of ``n`` named positional parameters returning ``m`` outputs (one bare, else
    a tuple): output ``i`` is argument ``i % n`` times ``i + 1``."""
    names = [f"a{i}" for i in range(n)]
    outs = [f"a{i % n} * {i + 1}.0" for i in range(m)]
    body = outs[0] if m == 1 else "(" + ", ".join(outs) + ",)"
    ns: dict[str, Any] = {}
    exec(f"def f({', '.join(names)}):\n    return {body}\n", ns)
    return ns["f"]


def make_case(lib: Any, xnp: Any, n: int, m: int) -> tuple[Callable, tuple]:
    """``(jitted function, arguments)`` of case ``(n, m)`` for library ``lib`` (jax or fluxion);
    the arguments are outputs of a jitted call."""
    make = lib.jit(lambda x: tuple(x + i for i in range(n)))
    args = make(xnp.asarray(np.arange(4, dtype=np.float32)))
    f = lib.jit(_flat_fun(n, m))
    lib.block_until_ready(f(*args))
    return f, tuple(args)


def make_mlp(lib: Any, xnp: Any) -> tuple[Callable, tuple]:
    """The mlp_grad step (8 leaves in, 6 out) at layers 8-4-4-2, batch 2."""
    from benchmarks.workloads.mlp_grad import make_loss

    rng = np.random.default_rng(0)
    sizes = (8, 4, 4, 2)
    params = [(xnp.asarray(rng.standard_normal((a, b)).astype(np.float32)),
               xnp.asarray(np.zeros((b,), np.float32))) for a, b in zip(sizes[:-1], sizes[1:])]
    x = xnp.asarray(rng.standard_normal((2, 8)).astype(np.float32))
    y = xnp.asarray(rng.standard_normal((2, 2)).astype(np.float32))
    ident = lib.jit(lambda t: t)
    params, x, y = ident((params, x, y))  # device arrays returned by a jitted call
    step = lib.jit(lib.grad(make_loss(xnp)))
    lib.block_until_ready(step(params, x, y))
    return step, (params, x, y)


def make_dict_mlp(lib: Any, xnp: Any) -> tuple[Callable, tuple]:
    """:func:`make_mlp` with haiku's parameter layout: ``{"linear": {"b": .., "w": ..}, ..}``."""
    step, (params, x, y) = make_mlp(lib, xnp)
    names = ["linear", "linear_1", "linear_2"]
    tree = {n: {"b": b, "w": w} for n, (w, b) in zip(names, params)}

    def loss(p: Any, x: Any, y: Any) -> Any:
        for n in names[:-1]:
            x = xnp.tanh(x @ p[n]["w"] + p[n]["b"])
        return xnp.sum((x @ p[names[-1]]["w"] + p[names[-1]]["b"] - y) ** 2)

    step = lib.jit(lib.grad(loss))
    lib.block_until_ready(step(tree, x, y))
    return step, (tree, x, y)


def _pyhpc_inputs(kernel: str, size: int) -> tuple:
    if kernel not in PYHPC:
        raise ValueError(f"unknown pyhpc kernel {kernel!r} (one of {', '.join(PYHPC)})")
    return importlib.import_module(f"benchmarks.kernels.{kernel}").make_inputs(size)


def _pyhpc_fn(lib: Any, xnp: Any, kernel: str) -> Callable:
    """The function of all the kernel's arrays that ``make_pyhpc`` jits, over ``xnp``."""
    kmod = importlib.import_module(f"benchmarks.kernels.{kernel}")
    if kernel == "tke":
        solve = kmod.make_solve_scan(xnp, importlib.import_module(lib.__name__ + ".lax"))
        return lambda *a: kmod.kernel(xnp, solve, *a)
    return lambda *a: kmod.kernel(xnp, *a)


def make_pyhpc(lib: Any, xnp: Any, kernel: str, size: int = 4096) -> tuple[Callable, tuple]:
    """``(jitted kernel, arguments)`` of pyhpc ``kernel`` (one of :data:`PYHPC`) at ``size``
    cells for ``lib`` (jax or fluxion), as the ``pyhpc_*`` workloads build them: the NumPy
    float64 inputs placed with ``device_put``, the kernel jitted over all of them and called
    once. The caller turns x64 on first (float64 inputs are narrowed otherwise)."""
    args = tuple(lib.device_put(v) for v in _pyhpc_inputs(kernel, size))
    f = lib.jit(_pyhpc_fn(lib, xnp, kernel))
    lib.block_until_ready(f(*args))
    return f, args


def time_block(lib: Any, f: Callable, args: tuple, calls: int) -> float:
    """µs per call of ``calls`` pipelined calls of ``f(*args)``, waiting once at the end."""
    t = time.perf_counter()
    for _ in range(calls):
        out = f(*args)
    lib.block_until_ready(out)
    return (time.perf_counter() - t) / calls * 1e6


def _wait_all(outs: Any) -> None:
    """``block_until_ready`` on each of jaxlib's output arrays ``outs``."""
    for o in outs:
        o.block_until_ready()


def split_calls(f: Callable, args: tuple,
                wait: bool = False) -> dict[str, Callable[[], Any]] | None:
    """For a Fluxion jitted ``f`` with one compiled entry: thunks of the whole call, of the
    entry's ``call`` on the prepared argument buffers (outputs wrapped, no dispatch), and of the
    bare ``execute_sharded`` + ``consume_with_handlers`` (jaxlib alone, on the buffers the
    executable takes: constants first, unused arguments left out); None otherwise. With
    ``wait`` each thunk also waits for its outputs (Fluxion's ``block_until_ready`` for the
    first two, each output buffer's for the third)."""
    import fluxion

    entries = list(f._fluxion_jit.cache.values())
    if len(entries) != 1:
        return None
    e = entries[0]
    impls = tuple(x._a for x in fluxion.tree_util.tree_leaves(args))
    handlers = e.handlers
    run = e.executable.exe.execute_sharded
    buffers = e.consts + impls
    picked = getattr(e.run, "positions", None)  # a pruned entry's kept buffers (jit_entry)
    if picked is not None:
        buffers = tuple(buffers[i] for i in picked)
    if not wait:
        return {"call": lambda: f(*args), "entry": lambda: e.call(impls),
                "execute": lambda: run(buffers).consume_with_handlers(handlers)}
    ready = fluxion.block_until_ready
    return {"call": lambda: ready(f(*args)), "entry": lambda: ready(e.call(impls)),
            "execute": lambda: _wait_all(run(buffers).consume_with_handlers(handlers))}


def jax_options_call(f: Callable, args: tuple, wait: bool = False) -> Callable[[], Any] | None:
    """For a Fluxion jitted ``f`` with one compiled entry: the thunk of jaxlib's bare execute
    (as ``split_calls``' ``"execute"``) of the entry's own module compiled again on Fluxion's
    client with the ``CompileOptions`` jax builds for a one-device ``jit``
    (``jax._src.compiler.get_compile_options``: SPMD partitioning on, effort levels, profile
    version, detailed logging), on the same buffers; None for a module on several devices.
    Imports jax: call it after Fluxion's client exists (jax's import sets libtpu's environment,
    which the client reads when it starts)."""
    from jax._src import compiler
    from jaxlib import _jax

    import fluxion

    (e,) = f._fluxion_jit.cache.values()
    devs = e.executable.devices
    if len(devs) != 1:
        return None
    opts = compiler.get_compile_options(num_replicas=1, num_partitions=1,
                                        device_assignment=np.array([[devs[0].id]]),
                                        detailed_logging=True)
    exe = devs[0].client.compile_and_load(e.text, _jax.DeviceList(tuple(devs)), opts)
    impls = tuple(x._a for x in fluxion.tree_util.tree_leaves(args))
    buffers = e.consts + impls
    picked = getattr(e.run, "positions", None)
    if picked is not None:
        buffers = tuple(buffers[i] for i in picked)
    run, handlers = exe.execute_sharded, e.handlers
    if wait:
        return lambda: _wait_all(run(buffers).consume_with_handlers(handlers))
    return lambda: run(buffers).consume_with_handlers(handlers)


def jax_text_call(f: Callable, args: tuple, kernel: str,
                  wait: bool = False) -> Callable[[], Any] | None:
    """For Fluxion's jitted pyhpc ``kernel`` ``f`` (from :func:`make_pyhpc`): the thunk of
    jaxlib's bare execute of the module *jax* lowers for the same kernel and platform (its
    StableHLO for Fluxion's device's platform, traced on abstract arguments), compiled on
    Fluxion's client with Fluxion's options, on Fluxion's buffers; None unless that module takes
    exactly the buffers Fluxion's executable takes (same shapes, in order). jax stays off the
    accelerator: where its backends have not started, it is put on the CPU first."""
    import jax
    from jax._src import xla_bridge
    from jaxlib import _jax

    import fluxion
    from fluxion.backend import dispatch as _d

    if not xla_bridge.backends_are_initialized():
        jax.config.update("jax_platforms", "cpu")  # the chip is Fluxion's in this process
    (e,) = f._fluxion_jit.cache.values()
    devs = tuple(e.executable.devices)
    impls = tuple(x._a for x in fluxion.tree_util.tree_leaves(args))
    buffers = e.consts + impls
    picked = getattr(e.run, "positions", None)
    if picked is not None:
        buffers = tuple(buffers[i] for i in picked)
    old = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        sds = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args]
        lowered = jax.jit(_pyhpc_fn(jax, jax.numpy, kernel)).trace(*sds).lower(
            lowering_platforms=(devs[0].platform,))
        kept = sorted(lowered._lowering.compile_args["kept_var_idx"])
    finally:
        jax.config.update("jax_enable_x64", old)
    if [tuple(args[i].shape) for i in kept] != [tuple(b.shape) for b in buffers] or e.consts:
        return None
    exe = devs[0].client.compile_and_load(lowered.as_text(), _jax.DeviceList(devs),
                                          _d._compile_options(devs))
    run, handlers = exe.execute_sharded, e.handlers
    if wait:
        return lambda: _wait_all(run(buffers).consume_with_handlers(handlers))
    return lambda: run(buffers).consume_with_handlers(handlers)


def _jax_compiled(f: Callable, args: tuple) -> tuple[Any, list] | None:
    """jax's loaded executable of ``f`` at ``args`` and the argument buffers it takes (unused
    ones left out), or None where that is not plain (constants passed as arguments)."""
    import jax

    ex = f.lower(*args).compile()._executable
    kept = sorted(getattr(ex, "_kept_var_idx", ()))
    leaves = jax.tree_util.tree_leaves(args)
    if len(kept) != len(ex.in_avals) or (kept and kept[-1] >= len(leaves)):
        return None
    return ex.xla_executable, [leaves[i] for i in kept]


def jax_split_calls(f: Callable, args: tuple, wait: bool = False) -> dict[str, Callable] | None:
    """For a jax jitted ``f``: the thunk of jaxlib's bare ``execute_sharded`` +
    ``consume_with_handlers`` of jax's executable on jax's argument buffers (``"execute"``;
    waiting for each output with ``wait``), or None where the executable takes constants."""
    import jax
    from jax._src.lib import _jax

    found = _jax_compiled(f, args)
    if found is None:
        return None
    exe, buffers = found
    outs = jax.tree_util.tree_leaves(f(*args))
    handlers = [_jax.array_result_handler(o.aval, o.sharding, True, True) for o in outs]
    run = exe.execute_sharded
    if wait:
        return {"execute": lambda: _wait_all(run(buffers).consume_with_handlers(handlers))}
    return {"execute": lambda: run(buffers).consume_with_handlers(handlers)}


def layout_mismatches(lib: Any, f: Callable, args: tuple) -> tuple[int, int, list[str]]:
    """``(mismatched, compared, notes)``: of the argument buffers the executable of ``f`` (a
    jitted function of ``lib``, called on ``args`` before) takes, how many have a device
    layout other than its parameter's, and ``"i: buffer != parameter"`` for each. Arguments
    whose layout jaxlib does not report are not compared.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> f = fluxion.jit(lambda x: x * 2)
        >>> x = jnp.ones((2, 3))
        >>> _ = f(x)
        >>> layout_mismatches(fluxion, f, (x,))
        (0, 1, [])
    """
    if lib.__name__ == "fluxion":
        (e,) = f._fluxion_jit.cache.values()
        exe = e.executable.exe
        buffers = e.consts + tuple(x._a for x in lib.tree_util.tree_leaves(args))
        picked = getattr(e.run, "positions", None)
        if picked is not None:
            buffers = tuple(buffers[i] for i in picked)
    else:
        found = _jax_compiled(f, args)
        if found is None:
            return 0, 0, ["(jax passes constants: not compared)"]
        exe, buffers = found
    params = exe.get_parameter_layouts()
    bad, seen, notes = 0, 0, []
    for i, (b, p) in enumerate(zip(buffers, params)):
        have = getattr(b, "_pjrt_layout", None)
        if have is None:
            continue
        seen += 1
        if str(have) != str(p):
            bad += 1
            notes.append(f"{i}: {have} != {p}")
    return bad, seen, notes


def _case_calls(case: str, mod: Any, xnp: Any, split: bool, size: int, notes: list[str],
                jax_options: bool = False,
                jax_text: bool = False) -> list[tuple[str, Any, Callable[[], Any]]]:
    """``(column, library, thunk)`` of one case for library ``mod``: its whole call, with
    ``split`` Fluxion's ``entry``/``execute`` or jax's ``jax_exec``, with ``jax_options``
    Fluxion's ``jaxopts``, with ``jax_text`` (pyhpc cases) ``jaxtext`` (see :func:`main`)."""
    name = mod.__name__
    wait = case in PYHPC
    if case in ("mlp", "mlp_dict"):
        f, args = (make_mlp if case == "mlp" else make_dict_mlp)(mod, xnp)
    elif wait:
        f, args = make_pyhpc(mod, xnp, case, size)
    else:
        n, m = map(int, case.split("x"))
        f, args = make_case(mod, xnp, n, m)
    whole = (lambda: mod.block_until_ready(f(*args))) if wait else functools.partial(f, *args)
    out = [(name, mod, whole)]
    if jax_options and name == "fluxion":
        call = jax_options_call(f, args, wait)
        if call is not None:
            out.append(("jaxopts", mod, call))
    if jax_text and wait and name == "fluxion":
        call = jax_text_call(f, args, case, wait)
        if call is None:
            notes.append(f"{case}: jax's module takes other buffers than Fluxion's (no jaxtext)")
        else:
            out.append(("jaxtext", mod, call))
    if not split:
        return out
    if name == "fluxion":
        parts = split_calls(f, args, wait)
        if parts:
            out += [("entry", mod, parts["entry"]), ("execute", mod, parts["execute"])]
    else:
        parts = jax_split_calls(f, args, wait)
        if parts:
            out.append(("jax_exec", mod, parts["execute"]))
    if wait:
        bad, seen, diffs = layout_mismatches(mod, f, args)
        notes.append(f"{case} {name} layouts: {bad} of {seen} argument buffers differ from "
                     "the executable's parameters" + "".join("\n    " + d for d in diffs))
    return out


def main(argv: list[str] | None = None) -> None:
    """Time every case on both libraries and print a table (µs per call, min of blocks)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--blocks", type=int, default=15)
    p.add_argument("--cases", default="",
                   help="e.g. '8x6,16x12,mlp' or pyhpc kernels 'tke,eos' (default: all but those)")
    p.add_argument("--size", type=int, default=4096, help="cells of the pyhpc kernels")
    p.add_argument("--libs", default="fluxion,jax",
                   help="'fluxion' alone where jax cannot share the device (a TPU chip)")
    p.add_argument("--split", action="store_true",
                   help="also Fluxion's entry call and bare execute and jax's bare execute "
                        "(where the time goes)")
    p.add_argument("--jax-options", action="store_true",
                   help="also Fluxion's module compiled with jax's CompileOptions, bare execute "
                        "(column jaxopts; imports jax after Fluxion's client started)")
    p.add_argument("--jax-text", action="store_true",
                   help="also the module jax lowers for a pyhpc kernel, compiled and run bare "
                        "by Fluxion on its buffers (column jaxtext; imports jax, kept off the chip)")
    p.add_argument("--client-options", default="",
                   help="Fluxion's jax_pjrt_client_create_options, 'key:value;..', the create "
                        "options of its TPU/CUDA client (jax's TPU client: "
                        "'ml_framework_name:JAX;ml_framework_version:0.10.2')")
    a = p.parse_args(argv)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    if a.client_options:  # before Fluxion's client starts: its plugin clients (TPU, CUDA) are
        # created with the flag's options, as jax's are (backend/compile_options.py)
        importlib.import_module("fluxion").config.update("jax_pjrt_client_create_options",
                                                         a.client_options)
    names = [n for n in a.libs.split(",") if n]
    libs = []
    for name in names:
        mod = importlib.import_module(name)
        libs.append((mod, importlib.import_module(name + ".numpy")))
    wanted = [c for c in a.cases.split(",") if c] or [f"{n}x{m}" for n, m in CASES] + [
        "mlp", "mlp_dict"]
    if any(c in PYHPC for c in wanted):
        for mod, _ in libs:  # float64 kernels; the f32 cases' arguments are typed, unaffected
            mod.config.update("jax_enable_x64", True)
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}  calls/block {a.calls}, "
          f"blocks {a.blocks}  devices: {libs[0][0].devices()[0].platform}"
          + (f"  pyhpc size {a.size}" if any(c in PYHPC for c in wanted) else "")
          + (f"  client create options {a.client_options}" if a.client_options else ""))
    cols = list(names)
    if a.split:
        cols += (["entry", "execute"] if "fluxion" in names else []) + (
            ["jax_exec"] if "jax" in names else [])
    if a.jax_options and "fluxion" in names:
        cols.append("jaxopts")
    if a.jax_text and "fluxion" in names and any(c in PYHPC for c in wanted):
        cols.append("jaxtext")
    print(f"{'case':>8} " + " ".join(f"{c:>9}" for c in cols)
          + (" ratio" if len(names) == 2 else ""))
    for case in wanted:
        notes: list[str] = []
        thunks: list[tuple[str, Any, Callable[[], Any]]] = []
        for mod, xnp in libs:
            thunks += _case_calls(case, mod, xnp, a.split, a.size, notes, a.jax_options,
                                  a.jax_text)
        best = {col: float("inf") for col, _, _ in thunks}
        for _ in range(a.blocks):
            for col, mod, thunk in thunks:
                best[col] = min(best[col], time_block(mod, thunk, (), a.calls))
        ratio = f" {best[names[0]] / best[names[1]]:5.2f}" if len(names) == 2 else ""
        print(f"{case:>8} " + " ".join(f"{best[c]:9.2f}" if c in best else f"{'-':>9}"
                                       for c in cols) + ratio, flush=True)
        for note in notes:
            print("   " + note, flush=True)


if __name__ == "__main__":
    main()

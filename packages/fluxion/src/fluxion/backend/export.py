"""Running exported StableHLO modules: lower a Program to a self-contained module text, and
compile and call such a text on concrete arguments (``fluxion.export``'s backend half).

Example:
    >>> import numpy as np
    >>> from fluxion.core.avals import ShapedArray
    >>> from fluxion.transforms.staging import trace_to_program
    >>> program, _, _ = trace_to_program(lambda x: x * 2.0, (np.ones(2, np.float32),), {})
    >>> text = lower_module(program)
    >>> call_module(text, [ShapedArray((2,), np.float32)], [np.ones(2, np.float32)])[0].tolist()
    [2.0, 2.0]
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np

from fluxion.backend import client as _client
from fluxion.backend import dispatch as _d
from fluxion.backend.array import Spec
from fluxion.backend.lowering import lower_program, lower_program_multi, lowering_platform
from fluxion.backend.sharding_impl import single_device_sharding
from fluxion.core.avals import ShapedArray
from fluxion.core.ir import Program

__all__ = ["lower_module", "call_module", "specialize_platform"]


def lower_module(program: Program, platform: "str | Sequence[str]" = "cpu") -> str:
    """The StableHLO text of ``program``: its constvars, then its invars, as parameters of a
    public ``main``. For several platforms, ``main`` takes the platform's index first (see
    :func:`~fluxion.backend.lowering.lower_program_multi`)."""
    if isinstance(platform, str):
        return lower_program(program, "main", platform=platform)
    return lower_program_multi(program, platform, "main")


def call_module(text: str, out_avals: Sequence[ShapedArray], args: Sequence[Any],
                name: str = "exported", platforms: Sequence[str] = ("cpu",),
                check_platform: bool = True) -> list:
    """Compile ``text`` (cached by its text) for the default device and run it on ``args``
    (arrays or host values, in parameter order); returns the outputs as Arrays. ``platforms``:
    those the module was lowered for; the device's platform must be one of them unless
    ``check_platform`` is off (then the first platform's function runs, as in JAX)."""
    arrays = _d.place(name, [_d.to_array(a) for a in args])
    devices = (tuple(arrays[0]._k.sharding._internal_device_list) if arrays
               else (_client.default_device(),))
    here = lowering_platform(devices)
    plats = [p.lower() for p in platforms]
    if here not in plats and check_platform:
        raise ValueError(f"{name}: the module was exported for platforms {tuple(plats)}, "
                         f"but it is called on {here!r} (export it with "
                         f"platforms=[..., {here!r}])")
    if len(plats) > 1:
        chosen = here if here in plats else plats[0]
        text = specialize_platform(text, chosen)
        index = _d.to_array(np.int32(plats.index(chosen)))
        arrays = _d.place(name, [index, *arrays])
    executable = _d.compile_text(text, devices)
    sharding = single_device_sharding(devices[0])
    entry = _d.ExecEntry(executable, [Spec(a, sharding) for a in out_avals], single=False)
    return _d.execute(entry, arrays)


def _functions(text: str) -> tuple[list[str], dict[str, list[str]], list[str]]:
    """Split a module text written by :mod:`fluxion.backend.lowering` into its header lines,
    its functions (symbol -> lines) and its closing lines."""
    lines = text.splitlines()
    head, funcs, tail, cur = [], {}, [], None
    for ln in lines:
        if cur is None and ln.startswith("  func.func "):
            sym = ln.split("@", 1)[1].split("(", 1)[0]
            cur = funcs.setdefault(sym, [])
        if cur is not None:
            cur.append(ln)
            if ln == "  }":
                cur = None
        elif not funcs:
            head.append(ln)
        else:
            tail.append(ln)
    return head, funcs, tail


def specialize_platform(text: str, platform: str) -> str:
    """A multi-platform module (:func:`lower_module` with several platforms) reduced to the
    branch of ``platform``: ``main`` calls that platform's function directly (its index
    parameter stays, unused) and the functions it does not reach are dropped, so that XLA never
    sees another platform's custom calls."""
    head, funcs, tail = _functions(text)
    main = funcs["main"]
    target = f"@_platform_{platform}("
    call = next(ln for ln in main if "func.call " + target in ln)
    m = re.match(r"\s*%b\d+((?::\d+)?) = (.*)$", call)
    body = f"    %0{m.group(1)} = {m.group(2)}" if m else "    " + call.strip()
    funcs["main"] = [main[0], body, *[ln for ln in main if ln.startswith("    return")], "  }"]
    keep, todo = set(), ["main"]
    while todo:
        sym = todo.pop()
        if sym in keep or sym not in funcs:
            continue
        keep.add(sym)
        for ln in funcs[sym]:
            todo.extend(re.findall(r"func\.call @([\w.$-]+)\(", ln))
    out = head + [ln for sym, fn in funcs.items() if sym in keep for ln in fn] + tail
    return "\n".join(out) + "\n"

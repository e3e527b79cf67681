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

from typing import Any, Sequence

from fluxion.backend import client as _client
from fluxion.backend import dispatch as _d
from fluxion.backend.array import Spec
from fluxion.backend.lowering import lower_program
from fluxion.core.avals import ShapedArray
from fluxion.core.ir import Program

__all__ = ["lower_module", "call_module"]


def lower_module(program: Program, platform: str = "cpu") -> str:
    """The StableHLO text of ``program``: its constvars, then its invars, as parameters of a
    public ``main``."""
    return lower_program(program, "main", platform=platform)


def call_module(text: str, out_avals: Sequence[ShapedArray], args: Sequence[Any],
                name: str = "exported") -> list:
    """Compile ``text`` (cached by its text) for the default device and run it on ``args``
    (arrays or host values, in parameter order); returns the outputs as Arrays."""
    arrays = _d.place(name, [_d.to_array(a) for a in args])
    devices = (tuple(arrays[0]._k.sharding._internal_device_list) if arrays
               else (_client.default_device(),))
    executable = _d.compile_text(text, devices)
    sharding = _client.single_device_sharding(devices[0])
    entry = _d.ExecEntry(executable, [Spec(a, sharding) for a in out_avals], single=False)
    return _d.execute(entry, arrays)

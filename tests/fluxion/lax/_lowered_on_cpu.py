"""Run a program lowered for another platform (the TPU) on the CPU, for the platform lowering
rules that emit only portable StableHLO (no custom call of that platform)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import fluxion
from fluxion.backend.export import call_module, lower_module
from fluxion.transforms.staging import trace_to_program


def lowered_on_cpu(f: Callable, *args: Any, platform: str = "tpu") -> tuple[list[np.ndarray], str]:
    """``f``'s program lowered for ``platform``, compiled and run on the CPU: (outputs, text)."""
    program, consts, _ = trace_to_program(f, args, {})
    text = lower_module(program, platform)  # parameters: the constants, then the arguments
    cpu = fluxion.devices("cpu")[0]
    outs = call_module(text, program.out_avals,
                       [fluxion.device_put(np.asarray(a), cpu) for a in [*consts, *args]])
    return [np.asarray(o) for o in outs], text

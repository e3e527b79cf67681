"""pytest set-up for tests/fluxion_optim: puts this folder on sys.path, so that the test files
import the optax reference's jit from ``_optim_reference`` (``from _optim_reference import
ref_jit``)."""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

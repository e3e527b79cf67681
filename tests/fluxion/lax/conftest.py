"""Puts this folder on sys.path so the lax tests can ``from _lax_cases import ...`` (the shared
dtypes, tolerances and comparison helpers), as tests/fluxion/conftest.py does for ``_compare``."""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

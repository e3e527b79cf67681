"""Entry point for Bazel's py_test targets: run pytest over the test tree(s) given as arguments.

Example (what BUILD.bazel's ``fluxion_tests`` does)::

    python tools/bazel_pytest.py tests/fluxion
"""

from __future__ import annotations

import sys

import pytest

if __name__ == "__main__":
    sys.exit(pytest.main(["-q", *sys.argv[1:]]))

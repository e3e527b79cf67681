"""Fluxion's benchmark suite: workloads timed across backends, one subprocess per backend.

Run it with ``python benchmarks/run.py`` (see ``benchmarks/README.md``). The pieces:

- ``benchmarks.run``        the command line
- ``benchmarks.runner``     process orchestration, statistics, ratios, JSON, table, plot
- ``benchmarks.worker``     the per-(backend, workload) subprocess that does the timing
- ``benchmarks.backends``   a uniform handle on numpy / fluxion / jax / numba / torch
- ``benchmarks.workloads``  one module per workload
"""

__all__: list[str] = []

"""``haiku._src.summarise`` (implemented in ``fluxion_nn.haiku._summarise``)."""

from .._summarise import (  # noqa: F401
    DEFAULT_COLUMNS,
    DEFAULT_FILTERS,
    ArraySpec,
    MethodInvocation,
    ModuleDetails,
    eval_summary,
    tabulate,
)

try:  # Haiku's module holds the table library as `tabulate_lib` (its tests patch it there)
    import tabulate as tabulate_lib  # noqa: F401
except ImportError:  # optional: only hk.experimental.tabulate's text needs it
    tabulate_lib = None

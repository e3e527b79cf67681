"""``hk.experimental.jaxpr_info``: a function's operations grouped by Haiku module, with flop,
parameter and state counts, as text or HTML (implemented in ``fluxion_nn.haiku._jaxpr_info``)."""

from .._jaxpr_info import (  # noqa: F401
    ComputeFlopsFn,
    Expression,
    Module,
    as_html,
    as_html_page,
    css,
    format_module,
    js,
    make_model_info,
)

__all__ = ["ComputeFlopsFn", "Expression", "Module", "as_html", "as_html_page", "css",
           "format_module", "js", "make_model_info"]

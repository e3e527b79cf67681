"""Haiku's private module layout (``haiku._src.base``, ``haiku._src.basic``, ...) over
fluxion_nn.haiku, so that code and tests importing ``haiku._src.X`` find the same names here.
The public API is ``fluxion_nn.haiku``."""

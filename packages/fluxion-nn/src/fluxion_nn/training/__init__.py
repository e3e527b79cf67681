"""Training helpers: ``Optimizer`` and ``metrics``."""

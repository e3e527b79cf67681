"""``jax._src.dispatch`` (equinox's ``filter_jit`` calls ``wait_for_tokens`` after each call, and
at exit, so that host callbacks issued by a computation have run): ``wait_for_tokens``.

JAX keeps a runtime token per ordered effect and ``wait_for_tokens`` blocks until those tokens are
ready. Fluxion runs a program's host callbacks synchronously (``fluxion.effects_barrier`` has
nothing to wait for), so once a call has returned its callbacks have run and there is nothing
left to wait for here either.

Example:
    >>> from fluxion.compat.jax_src import dispatch
    >>> dispatch.wait_for_tokens() is None
    True
"""

from __future__ import annotations

from fluxion.callback import effects_barrier

__all__ = ["wait_for_tokens"]


def wait_for_tokens() -> None:
    """Block until the host callbacks of ordered effects issued so far have run (JAX's
    ``jax._src.dispatch.wait_for_tokens``); Fluxion's are done once their call returns.

    Example:
        >>> wait_for_tokens()
    """
    effects_barrier()

"""Differentiable molecular dynamics for Fluxion (mirrors jax_md) with self-managing neighbor lists.

``import fluxion_md as jax_md`` runs jax_md programs over the modules below: ``space``,
``energy``, ``smap``, ``partition``, ``simulate``, ``minimize``, ``quantity``, ``util``,
``dataclasses``, ``interpolate``, ``rigid_body`` and ``nn`` (graph networks, built on
:mod:`fluxion_nn` as jax_md's are on ``flax.nnx``). Beyond jax_md, :func:`fluxion_md.simulate.run` drives a
simulation in jitted chunks and re-allocates overflowed neighbor lists by itself.
"""

from __future__ import annotations

from fluxion_md import (
    dataclasses,
    energy,
    interpolate,
    minimize,
    nn,
    partition,
    quantity,
    rigid_body,
    simulate,
    smap,
    space,
    util,
)

__all__ = ["dataclasses", "energy", "interpolate", "minimize", "nn", "partition", "quantity",
           "rigid_body", "simulate", "smap", "space", "util"]

"""Helpers of the learned potentials (mirrors part of ``jax_md._nn.util``): converting a
Haiku-era graph-network checkpoint onto the module parameter tree."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import fluxion.numpy as jnp

__all__ = ["convert_checkpoint_to_params"]

# Haiku module names of the old checkpoints -> the attribute names of fluxion_md.nn's modules.
_HAIKU_TO_MODULE = {"linear": "layers", "EdgeFunction": "edge_fns", "NodeFunction": "node_fns",
                    "GlobalFunction": "global_fns"}
_LEAF_NAMES = {"w": "kernel", "b": "bias"}


def _segment(segment: str) -> str:
    for old, new in _HAIKU_TO_MODULE.items():
        if segment == old:
            return f"{new}_0"
        rest = segment[len(old) + 1:]
        if segment.startswith(old + "_") and rest.isdigit():
            return f"{new}_{rest}"
    return segment


def _module_path(module_name: str) -> tuple[str, ...]:
    prefix = "Energy/~/"
    if not module_name.startswith(prefix):
        raise ValueError(f"Unexpected checkpoint module path: {module_name}")
    return tuple(_segment(s) for s in module_name[len(prefix):].replace("/~/", "/").split("/"))


def _flatten(tree: Mapping, prefix: tuple = ()) -> dict[tuple, Any]:
    flat: dict[tuple, Any] = {}
    for key, value in tree.items():
        if isinstance(value, Mapping):
            flat.update(_flatten(value, prefix + (key,)))
        else:
            flat[prefix + (key,)] = value
    return flat


def convert_checkpoint_to_params(checkpoint_params: Mapping, template_params: Mapping) -> dict:
    """A Haiku-era checkpoint (``{'Energy/~/GraphNetEncoder/~/linear_1': {'w': ..., 'b': ...}}``)
    as a nested dict shaped like ``template_params`` (``linear_k`` -> ``layers_k``, ``w`` ->
    ``kernel``, ``b`` -> ``bias``, ``EdgeFunction_k`` -> ``edge_fns_k``, ...), each leaf cast to
    the template leaf's dtype, as ``jax_md._nn.util.convert_checkpoint_to_params``.

    Raises ``ValueError`` when the keys differ (listing up to five of each) or a shape differs.

    Example:
        >>> import numpy as np
        >>> out = convert_checkpoint_to_params({"Energy/~/m": {"w": np.ones((2, 3)), "b": np.zeros(3)}},
        ...                                    {"m": {"kernel": np.empty((2, 3), np.float32),
        ...                                           "bias": np.empty(3, np.float32)}})
        >>> out["m"]["kernel"].dtype
        dtype('float32')
    """
    ckpt: dict[tuple, Any] = {}
    for module_name, leaves in checkpoint_params.items():
        base = _module_path(module_name)
        for leaf, value in leaves.items():
            ckpt[base + (_LEAF_NAMES.get(leaf, leaf),)] = value
    template = _flatten(template_params)
    missing = sorted(set(template) - set(ckpt))
    extra = sorted(set(ckpt) - set(template))
    if missing or extra:
        lines = ["Checkpoint and template parameter tree have different keys."]
        if missing:
            lines.append(f"Missing in checkpoint: {missing[:5]}")
        if extra:
            lines.append(f"Extra in checkpoint: {extra[:5]}")
        raise ValueError("\n".join(lines))
    out: dict = {}
    for path, leaf in template.items():
        value = ckpt[path]
        if value.shape != leaf.shape:
            raise ValueError(f"Shape mismatch at {path}: {value.shape} vs {leaf.shape}")
        cursor = out
        for key in path[:-1]:
            cursor = cursor.setdefault(key, {})
        cursor[path[-1]] = jnp.asarray(value, dtype=leaf.dtype)
    return out

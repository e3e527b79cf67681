"""Pretrained UMA helpers, as ``jax_md._nn.uma.pretrained``: the catalogue of FairChem's UMA
checkpoints (:data:`PRETRAINED_MODELS`) and :func:`extract_energy_correction`, which reads a
checkpoint's energy normaliser (mean, rmsd) and per-element reference energies from its task
configuration (plain dicts, attribute objects or OmegaConf-like mappings; torch tensors are read
through ``detach().cpu().numpy()``). Downloading and converting the torch checkpoints is not
mirrored here."""

from __future__ import annotations

from typing import Any

import numpy as np

import fluxion.numpy as jnp
from fluxion_md.util import Array

__all__ = ["PRETRAINED_MODELS", "extract_energy_correction"]

PRETRAINED_MODELS: dict[str, dict[str, str]] = {
    "uma-s-1p1": {"filename": "uma-s-1p1.pt", "repo_id": "facebook/UMA",
                  "subfolder": "checkpoints",
                  "description": "UMA Small v1.1 (1.2 GB, 32 experts, 4 layers)"},
    "uma-s-1p2": {"filename": "uma-s-1p2.pt", "repo_id": "facebook/UMA",
                  "subfolder": "checkpoints", "description": "UMA Small v1.2 (2.3 GB)"},
    "uma-m-1p1": {"filename": "uma-m-1p1.pt", "repo_id": "facebook/UMA",
                  "subfolder": "checkpoints", "description": "UMA Medium v1.1 (11.2 GB)"},
}


def _lookup(config: Any, key: str, default: Any = None) -> Any:
    """``config[key]`` for dicts, ``config.get`` for mappings, else the attribute or item."""
    if config is None:
        return default
    if isinstance(config, dict):
        return config.get(key, default)
    getter = getattr(config, "get", None)
    if callable(getter):
        try:
            return getter(key, default)
        except TypeError:
            pass
    if hasattr(config, key):
        return getattr(config, key)
    try:
        return config[key]
    except (KeyError, IndexError, TypeError):
        return default


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    try:
        return list(value)
    except TypeError:
        return [value]


def _numpy(value: Any) -> Any:
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    return value


def _first_float(value: Any, default: float) -> float:
    if value is None:
        return default
    flat = np.asarray(_numpy(value)).reshape(-1)
    return default if flat.size == 0 else float(flat[0])


def _element_refs(spec: Any) -> Array | None:
    if spec is None:
        return None
    values = _lookup(spec, "element_references")
    # Hydra-style ``{'_args_': [table]}``: the table is the first positional argument.
    args = _lookup(values, "_args_")
    if args is not None and _as_list(args):
        values = _as_list(args)[0]
    values = _numpy(values)
    if values is None:
        return None
    return jnp.asarray(values, dtype=jnp.float32)


def extract_energy_correction(tasks_config: Any, dataset: str = "omat") -> dict[str, Any]:
    """The energy task of ``dataset`` in a FairChem ``tasks_config`` (the task named
    ``f'{dataset}_energy'``, or the first with ``property == 'energy'`` listing ``dataset``):
    ``{'mean', 'rmsd'}`` of its normaliser as float32 scalars (defaults 0 and 1) and
    ``'element_refs'``, its element reference energies as float32 (or None).

    Example:
        >>> tasks = [{"name": "omat_energy", "property": "energy", "datasets": ["omat"],
        ...           "normalizer": {"mean": 1.5, "rmsd": 2.0},
        ...           "element_references": {"element_references": {"_args_": [[0.0, -1.0]]}}}]
        >>> c = extract_energy_correction(tasks, "omat")
        >>> float(c["rmsd"]), c["element_refs"].tolist()
        (2.0, [0.0, -1.0])
    """
    wanted = f"{dataset}_energy"
    task = None
    for candidate in tasks_config:
        if _lookup(candidate, "name") == wanted or (
                _lookup(candidate, "property") == "energy"
                and dataset in _as_list(_lookup(candidate, "datasets"))):
            task = candidate
            break
    if task is None:
        raise ValueError(f"No energy task found for dataset {dataset!r}.")
    normalizer = _lookup(task, "normalizer")
    return {
        "mean": jnp.asarray(_first_float(_lookup(normalizer, "mean"), 0.0), dtype=jnp.float32),
        "rmsd": jnp.asarray(_first_float(_lookup(normalizer, "rmsd"), 1.0), dtype=jnp.float32),
        "element_refs": _element_refs(_lookup(task, "element_references")),
    }

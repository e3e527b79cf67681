"""Reading and changing an optimizer state by name (beyond optax).

``inspect(state)`` flattens every scalar in a state (step counts, injected hyper-parameters,
loss-scale and plateau counters ...) into a flat dict keyed by readable names:
``{"count": 3, "adam/learning_rate": 0.001, "adam/b1": 0.9, "adam/count": 3}``.
``set_hyperparams(state, learning_rate=...)`` returns a new state with injected
hyper-parameters replaced by arrays of the same dtype and shape, so a jitted train step keeps
its compiled executable.
"""


from typing import Any

import fluxion
import fluxion.numpy as jnp
from fluxion_optim.schedules._inject import InjectHyperparamsState, InjectStatefulHyperparamsState

__all__ = ["inspect", "set_hyperparams"]

_INJECT = (InjectHyperparamsState, InjectStatefulHyperparamsState)


def _is_scalar(x: Any) -> bool:
    return not fluxion.tree_util.is_tree_node(type(x)) and x is not None and jnp.ndim(x) == 0


def _collect(node: Any, prefix: tuple, path: tuple, out: list) -> None:
    if isinstance(node, _INJECT):
        name = getattr(node, "name", "") or "inject"
        out.append(((*prefix, "count"), (*path, "count"), node.count))
        for hp, value in node.hyperparams.items():
            if _is_scalar(value):
                out.append(((*prefix, name, hp), (*path, "hyperparams", hp), value))
        _collect(node.inner_state, (*prefix, name), (*path, "inner_state"), out)
        return
    if isinstance(node, tuple) and hasattr(node, "_fields"):
        for field, value in zip(node._fields, node):
            if _is_scalar(value):
                out.append(((*prefix, field), (*path, field), value))
            elif isinstance(value, (tuple, dict)):
                _collect(value, prefix, (*path, field), out)
        return
    if isinstance(node, (tuple, list)):
        for i, value in enumerate(node):
            if isinstance(value, tuple):
                _collect(value, prefix, (*path, str(i)), out)
        return
    if isinstance(node, dict):
        # named_chain states and partition's inner states: {name: state}. Parameter-shaped
        # dicts (moments) hold arrays, not states, and are skipped.
        for key, value in node.items():
            if isinstance(value, tuple):
                _collect(value, (*prefix, str(key)), (*path, str(key)), out)


def inspect(state: Any) -> dict[str, Any]:
    """A flat ``{name: scalar}`` view of an optimizer state: step counts and other scalar
    fields, and the hyper-parameters injected with ``inject_hyperparams`` under
    ``"<optimizer>/<name>"``. Names use ``/`` for nesting (``named_chain`` names and
    ``partition`` labels become prefixes); when two entries would share a name, both get their
    full path instead. Parameter-shaped buffers (``mu``, ``nu`` ...) are not included.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.inject_hyperparams(optax.adam)(learning_rate=1e-3)
        >>> info = optax.inspect(opt.init({"w": jnp.zeros(2)}))
        >>> sorted(info)
        ['adam/b1', 'adam/b2', 'adam/count', 'adam/eps', 'adam/eps_root', 'adam/learning_rate', 'count']
    """
    entries: list = []
    _collect(state, (), (), entries)
    short = ["/".join(s) for s, _, _ in entries]
    counts: dict[str, int] = {}
    for name in short:
        counts[name] = counts.get(name, 0) + 1
    result: dict[str, Any] = {}
    for name, (_, full, value) in zip(short, entries):
        result[name if counts[name] == 1 else "/".join(full)] = value
    return result


def _replace_hparams(node: Any, values: dict[str, Any], found: set) -> Any:
    if isinstance(node, _INJECT):
        hps = dict(node.hyperparams)
        for key, new in values.items():
            if key in hps:
                old = hps[key]
                hps[key] = jnp.asarray(new, dtype=jnp.asarray(old).dtype)
                if jnp.shape(hps[key]) != jnp.shape(old):
                    raise ValueError(f"set_hyperparams: {key} has shape {jnp.shape(old)}, got "
                                     f"a value of shape {jnp.shape(hps[key])}")
                found.add(key)
        inner = _replace_hparams(node.inner_state, values, found)
        return node._replace(hyperparams=hps, inner_state=inner)
    if isinstance(node, tuple) and hasattr(node, "_fields"):
        return node._replace(**{f: _replace_hparams(v, values, found)
                                for f, v in zip(node._fields, node)
                                if isinstance(v, (tuple, dict))})
    if isinstance(node, tuple):
        return tuple(_replace_hparams(v, values, found) for v in node)
    if isinstance(node, dict):
        return type(node)((k, _replace_hparams(v, values, found)) for k, v in node.items())
    return node


def set_hyperparams(state: Any, **values: Any) -> Any:
    """A copy of ``state`` whose injected hyper-parameters named in ``values`` are replaced
    (every ``inject_hyperparams`` state in the tree that has them). New values keep the old
    dtype and shape, so a jitted step taking the state does not recompile.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.inject_hyperparams(optax.sgd)(learning_rate=0.1)
        >>> state = optax.set_hyperparams(opt.init(jnp.zeros(1)), learning_rate=0.5)
        >>> float(optax.inspect(state)["sgd/learning_rate"])
        0.5
    """
    found: set = set()
    new_state = _replace_hparams(state, values, found)
    missing = sorted(set(values) - found)
    if missing:
        raise KeyError(f"set_hyperparams: no injected hyper-parameter named {missing} in the "
                       f"state; injected ones: {sorted(_injected_names(state))}")
    return new_state


def _injected_names(state: Any) -> set:
    return {name.rsplit("/", 1)[-1] for name in inspect(state) if "/" in name}

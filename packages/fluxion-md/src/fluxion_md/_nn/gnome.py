"""GNoME models and their checkpoints (mirrors ``jax_md._nn.gnome``).

A GNoME checkpoint directory holds ``config.json`` (a JSON string of the training config) and one
``checkpoint*`` file: flax's msgpack serialisation of ``(step, params, optimizer_state)``.
:func:`load_model` rebuilds the model from the config, takes the structure of
``(step, params, optimizer state)`` from an abstract ``init`` (:func:`fluxion.eval_shape`, no
compute) and fills it from the checkpoint, read by :func:`msgpack_restore` /
:func:`restore_state` (a msgpack decoder with flax's array extension types; no flax or msgpack
needed). Optimizers come from :mod:`fluxion_optim`.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

import fluxion
import fluxion.numpy as jnp
import fluxion_optim as optax
from fluxion import eval_shape, random
from fluxion.tree_util import tree_map
from fluxion_md import partition
from fluxion_md._nn import nequip
from fluxion_md._nn.util import ConfigDict
from fluxion_md.util import Array

__all__ = ["model_from_config", "minimum_batch_size", "ScaleLROnPlateau", "scale_lr_on_plateau",
           "optimizer", "load_model", "msgpack_restore", "restore_state", "NUM_ELEMENTS"]

f32 = jnp.float32
i32 = jnp.int32
GraphsTuple = partition.GraphsTuple
NUM_ELEMENTS = 94
PyTree = Any


def model_from_config(cfg: Any) -> nequip.NequIPEnergyModel:
    """The model of ``cfg.model_family`` (default ``'nequip'``, the only family) built from
    ``cfg``, as ``jax_md._nn.gnome.model_from_config``.

    Example:
        >>> cfg = nequip.default_config()
        >>> cfg.train_dataset = ["harder_silicon"]
        >>> type(model_from_config(cfg)).__name__
        'NequIPEnergyModel'
    """
    family = cfg.get("model_family", "nequip")
    if family == "nequip":
        return nequip.model_from_config(cfg)
    raise ValueError(f"Unrecognized model family: {family}")


def minimum_batch_size(cfg: Any) -> int:
    """The smallest training batch size of ``cfg`` (1 when it sets none).

    Example:
        >>> minimum_batch_size(ConfigDict(train_batch_size=[4, 2]))
        2
    """
    if not hasattr(cfg, "train_batch_size"):
        return 1
    if isinstance(cfg.train_batch_size, int):
        return cfg.train_batch_size
    return min(cfg.train_batch_size)


class ScaleLROnPlateau(NamedTuple):
    """The state of :func:`scale_lr_on_plateau`.

    Example:
        >>> from fluxion_md._nn.gnome import scale_lr_on_plateau
        >>> state = scale_lr_on_plateau(-0.1, 10, 0.8).init(None)
        >>> type(state).__name__, float(state.step_size), int(state.max_steps_without_reduction)
        ('ScaleLROnPlateau', -0.1, 10)
    """

    step_size: Array
    minimum_loss: Array
    steps_without_reduction: Array
    max_steps_without_reduction: Array
    reduction_factor: Array


def scale_lr_on_plateau(initial_step_size: float, max_steps_without_reduction: int,
                        reduction_factor: float) -> optax.GradientTransformation:
    """A gradient transformation multiplying updates by the step size in its state
    (:class:`ScaleLROnPlateau`, starting at ``initial_step_size``); the training loop lowers
    that step size on a plateau.

    Example:
        >>> tx = scale_lr_on_plateau(-0.1, 10, 0.8)
        >>> updates, _ = tx.update({"w": jnp.ones(2)}, tx.init(None))
        >>> updates["w"].tolist()
        [-0.10000000149011612, -0.10000000149011612]
    """
    def init_fn(params: Any) -> ScaleLROnPlateau:
        del params
        return ScaleLROnPlateau(initial_step_size, jnp.inf, 0, max_steps_without_reduction,
                                reduction_factor)

    def update_fn(updates: Any, state: ScaleLROnPlateau, params: Any = None) -> tuple:
        del params
        return tree_map(lambda g: g * state.step_size, updates), state

    return optax.GradientTransformation(init_fn, update_fn)


def optimizer(cfg: Any) -> optax.GradientTransformation:
    """The training optimizer named by ``cfg``: Adam (AdamW when ``l2_regularization`` is set)
    over ``cfg.schedule`` (``'constant'``, ``'linear_decay'``, ``'cosine_decay'``,
    ``'warmup_cosine_decay'``), or Adam scaled by :func:`scale_lr_on_plateau` for
    ``'scale_on_plateau'``, as ``jax_md._nn.gnome.optimizer``.

    Example:
        >>> cfg = ConfigDict(epochs=1, schedule="constant", learning_rate=1e-3)
        >>> type(optimizer(cfg).init({"w": jnp.zeros(2)})[0]).__name__
        'ScaleByAdamState'
    """
    epoch_size = cfg.epoch_size if hasattr(cfg, "epoch_size") else -1
    total_steps = cfg.epochs * (epoch_size // minimum_batch_size(cfg))
    warmup_steps = cfg.get("warmup_steps", 0)
    if cfg.schedule == "constant":
        schedule = cfg.learning_rate
    elif cfg.schedule == "linear_decay":
        schedule = optax.polynomial_schedule(cfg.learning_rate, 0.0, 1, total_steps)
    elif cfg.schedule == "cosine_decay":
        schedule = optax.cosine_decay_schedule(cfg.learning_rate, total_steps)
    elif cfg.schedule == "warmup_cosine_decay":
        schedule = optax.warmup_cosine_decay_schedule(1e-7, cfg.learning_rate, warmup_steps,
                                                      total_steps)
    elif cfg.schedule == "scale_on_plateau":
        plateau_steps = cfg.max_lr_plateau_epochs // cfg.epochs_per_eval
        return optax.chain(optax.scale_by_adam(),
                           scale_lr_on_plateau(-cfg.learning_rate, plateau_steps, 0.8))
    else:
        raise ValueError(f'Unknown learning rate schedule, "{cfg.schedule}".')
    if not hasattr(cfg, "l2_regularization") or cfg.l2_regularization == 0.0:
        return optax.adam(schedule)
    return optax.adamw(schedule, weight_decay=cfg.l2_regularization)


# ---- flax's msgpack checkpoint format --------------------------------------------------------

# flax's extension type codes: an ndarray, a Python complex, a NumPy scalar
_EXT_NDARRAY, _EXT_COMPLEX, _EXT_NPSCALAR = 1, 2, 3
_CHUNKED = "__msgpack_chunked_array__"


class _Reader:
    """A msgpack decoder (the whole format; strings decoded as UTF-8 unless ``raw``)."""

    def __init__(self, data: bytes, raw: bool = False) -> None:
        self.data = memoryview(data)
        self.pos = 0
        self.raw = raw

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ValueError(f"msgpack_restore: the data ends inside an object (offset {self.pos}, "
                             f"{n} bytes wanted, {len(self.data)} in all)")
        out = self.data[self.pos:self.pos + n].tobytes()
        self.pos += n
        return out

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(">" + fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self, n: int) -> Any:
        b = self.take(n)
        return b if self.raw else b.decode("utf-8")

    def ext(self, n: int) -> Any:
        code = self.unpack("b")
        payload = self.take(n)
        if code == _EXT_NDARRAY:
            return _ndarray(payload)
        if code == _EXT_NPSCALAR:
            return _ndarray(payload)[()]
        if code == _EXT_COMPLEX:
            re, im = _Reader(payload).read()
            return complex(re, im)
        raise ValueError(f"msgpack_restore: unknown extension type {code}")

    def read(self) -> Any:
        b = self.unpack("B")
        if b <= 0x7F:
            return b
        if b >= 0xE0:
            return b - 0x100
        if 0x80 <= b <= 0x8F:
            return self.mapping(b & 0x0F)
        if 0x90 <= b <= 0x9F:
            return [self.read() for _ in range(b & 0x0F)]
        if 0xA0 <= b <= 0xBF:
            return self.string(b & 0x1F)
        simple = {0xC0: None, 0xC2: False, 0xC3: True}
        if b in simple:
            return simple[b]
        sized = {0xC4: "B", 0xC5: "H", 0xC6: "I"}  # bin 8/16/32
        if b in sized:
            return self.take(self.unpack(sized[b]))
        if b in (0xC7, 0xC8, 0xC9):  # ext 8/16/32
            return self.ext(self.unpack({0xC7: "B", 0xC8: "H", 0xC9: "I"}[b]))
        numbers = {0xCA: "f", 0xCB: "d", 0xCC: "B", 0xCD: "H", 0xCE: "I", 0xCF: "Q",
                   0xD0: "b", 0xD1: "h", 0xD2: "i", 0xD3: "q"}
        if b in numbers:
            return self.unpack(numbers[b])
        if 0xD4 <= b <= 0xD8:  # fixext 1/2/4/8/16
            return self.ext(1 << (b - 0xD4))
        if b in (0xD9, 0xDA, 0xDB):  # str 8/16/32
            return self.string(self.unpack({0xD9: "B", 0xDA: "H", 0xDB: "I"}[b]))
        if b in (0xDC, 0xDD):
            return [self.read() for _ in range(self.unpack("H" if b == 0xDC else "I"))]
        if b in (0xDE, 0xDF):
            return self.mapping(self.unpack("H" if b == 0xDE else "I"))
        raise ValueError(f"msgpack_restore: byte 0x{b:02x} at offset {self.pos - 1} starts no "
                         "msgpack object")

    def mapping(self, n: int) -> dict:
        out = {}
        for _ in range(n):
            key = self.read()
            out[key] = self.read()
        return out


def _ndarray(payload: bytes) -> np.ndarray:
    shape, dtype_name, buffer = _Reader(payload, raw=True).read()
    dtype = jnp.bfloat16 if dtype_name == b"bfloat16" else np.dtype(dtype_name.decode())
    return np.frombuffer(buffer, dtype=dtype).reshape(shape, order="C")


def _unchunk(tree: Any) -> Any:
    if not isinstance(tree, dict):
        return tree
    if _CHUNKED in tree:  # an array over flax's 1 GiB chunk size, stored flat in pieces
        shape = tuple(tree["shape"][str(i)] for i in range(len(tree["shape"])))
        chunks = [tree["chunks"][str(i)] for i in range(len(tree["chunks"]))]
        return np.concatenate(chunks).reshape(shape)
    return {k: _unchunk(v) for k, v in tree.items()}


def msgpack_restore(encoded: bytes) -> Any:
    """The state dict in ``encoded`` (bytes written by ``flax.serialization.msgpack_serialize``
    / ``to_bytes``): nested dicts with NumPy array and Python scalar leaves.

    Example:
        >>> msgpack_restore(bytes([0x81, 0xA1, 0x61, 0x07]))   # {'a': 7}
        {'a': 7}
    """
    reader = _Reader(bytes(encoded))
    out = reader.read()
    if reader.pos != len(reader.data):
        raise ValueError(f"msgpack_restore: {len(reader.data) - reader.pos} bytes follow the "
                         "first object")
    return _unchunk(out)


def restore_state(target: Any, state: Any, path: str = "") -> Any:
    """``target`` (dicts, lists, tuples, NamedTuples; anything else is a leaf) with its leaves
    replaced by those of ``state`` (a state dict as :func:`msgpack_restore` gives: sequences and
    NamedTuples are dicts keyed ``'0', '1', ...`` / by field name), as
    ``flax.serialization.from_state_dict``. Keys must match.

    Example:
        >>> restore_state((0, {"w": None}), {"0": 5, "1": {"w": 2.0}})
        (5, {'w': 2.0})
    """
    if isinstance(target, Mapping):
        keys = [str(k) for k in target]
    elif isinstance(target, tuple) and hasattr(target, "_fields"):
        keys = list(target._fields)
    elif isinstance(target, (list, tuple)):
        keys = [str(i) for i in range(len(target))]
    else:
        return state
    if not isinstance(state, Mapping) or set(state) != set(keys):
        got = sorted(state) if isinstance(state, Mapping) else type(state).__name__
        raise ValueError(f"restore_state: at {path or '/'} the target has keys {sorted(keys)}, "
                         f"the state has {got}")
    if isinstance(target, Mapping):
        return type(target)({k: restore_state(v, state[str(k)], f"{path}/{k}")
                             for k, v in target.items()})
    values = [restore_state(v, state[k], f"{path}/{k}") for k, v in zip(keys, target)]
    if hasattr(target, "_fields"):
        return type(target)(*values)
    return type(target)(values)


def load_model(directory: str) -> tuple[ConfigDict, nequip.NequIPEnergyModel, PyTree]:
    """``(config, model, params)`` of the GNoME checkpoint in ``directory`` (``config.json`` and
    one file whose name contains ``'checkpoint'``), params cast to float32, as
    ``jax_md._nn.gnome.load_model``. ``config.json`` may hold the config as a JSON string (as
    GNoME's files do, the only form jax_md reads) or as a plain JSON object.

    Example:
        >>> # cfg, model, params = load_model("tests/data/nequip_silicon_test/")
        >>> # energy = model.apply(params, graph)[0, 0]
    """
    with open(os.path.join(directory, "config.json")) as f:
        cfg = json.loads(f.read())
    if isinstance(cfg, str):  # GNoME's files hold the config's JSON text as a JSON string
        cfg = json.loads(cfg)
    cfg = ConfigDict(cfg)
    model = model_from_config(cfg)
    opt_init, _ = optimizer(cfg)
    shape = fluxion.ShapeDtypeStruct
    graph = GraphsTuple(nodes=shape((1, NUM_ELEMENTS), f32), edges=shape((1, 3), f32),
                        receivers=shape((1,), i32), senders=shape((1,), i32),
                        globals=shape((1, 1), f32), n_node=shape((1,), i32),
                        n_edge=shape((1,), i32))

    def init_opt_and_model(graph: GraphsTuple) -> tuple:
        params = model.init(random.PRNGKey(0), graph)
        return params, opt_init(params)

    abstract_params, abstract_state = eval_shape(init_opt_and_model, graph)
    found = [c for c in os.listdir(directory) if "checkpoint" in c]
    if len(found) != 1:
        raise ValueError(f"load_model: {directory!r} must hold exactly one checkpoint file, "
                         f"found {sorted(found)}")
    with open(os.path.join(directory, found[0]), "rb") as f:
        ckpt = restore_state((0, abstract_params, abstract_state), msgpack_restore(f.read()))
    params = tree_map(lambda x: jnp.asarray(x, dtype=f32), ckpt[1])
    return cfg, model, params


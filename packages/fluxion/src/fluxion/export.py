"""``fluxion.export``: a function staged to StableHLO, serialized to bytes, and called again
later, in this process or another one (JAX's ``jax.export``).

``export(jitted_fun)(*arg_specs)`` traces the function for arguments of the given shapes and
dtypes (arrays or ``ShapeDtypeStruct``) and returns an :class:`Exported`: its StableHLO module
(``mlir_module()``), the argument and result types and pytree structures, and the values of the
arrays the function closes over. ``serialize()`` gives bytes that ``deserialize`` turns back into
an ``Exported`` whose ``call`` compiles the module (once) and runs it, without the function's
Python code.

``export(f, platforms=["cpu", "tpu"])`` lowers the program once per platform, with each
platform's lowering rules, into one module whose ``main`` takes the platform's index first and
picks that platform's function (as ``jax.export`` does); the custom calls are those jax emits for
each platform. Export works for any platform from any machine; ``call`` runs the branch of the
platform it is called on.

The serialized form is Fluxion's own (a JSON header, the module text and the constants), not JAX's
flatbuffer: Fluxion and JAX cannot read each other's artifacts. Pytree structures of tuples,
lists, dicts (string keys) and None are serialized; other node types raise ``ValueError``.
``call`` takes concrete arrays (not tracers).

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> from fluxion import export
    >>> exp = export.export(fluxion.jit(lambda x: jnp.sin(x) * 2))(fluxion.ShapeDtypeStruct((3,), jnp.float32))
    >>> again = export.deserialize(exp.serialize())
    >>> again.call(jnp.zeros(3)).tolist()
    [0.0, 0.0, 0.0]
"""

from __future__ import annotations

import dataclasses
import io
import json
from typing import Any, Callable, Sequence

import numpy as np

from fluxion.backend.client import default_device
from fluxion.backend.export import call_module, lower_module
from fluxion.backend.lowering import lowering_platform
from fluxion.core.avals import ShapedArray
from fluxion.core.trace import Tracer
from fluxion.transforms.staging import abstractify, trace_to_program
from fluxion.tree_util import physical as tree_util

__all__ = ["Exported", "export", "deserialize", "default_export_platform",
           "minimum_supported_calling_convention_version",
           "maximum_supported_calling_convention_version"]

_MAGIC = b"FLUXION-EXPORT\n"
_VERSION = 1
minimum_supported_calling_convention_version = 1
maximum_supported_calling_convention_version = 1


_PLATFORM_NAMES = {"gpu": "cuda"}


def default_export_platform() -> str:
    """The platform modules are exported for by default: the default backend's (``'cpu'``,
    ``'tpu'``, ``'cuda'``), as in JAX. ``export(..., platforms=[...])`` exports for any others,
    from any machine, and for several at once.

    Example:
        >>> from fluxion import export
        >>> export.default_export_platform()
        'cpu'
    """
    return lowering_platform((default_device(),))


def _encode_tree(tree: Any) -> Any:
    """A JSON form of a pytree structure (leaves numbered)."""
    skeleton = tree_util.tree_unflatten(tree, list(range(tree.num_leaves)))

    def enc(node: Any) -> Any:
        if isinstance(node, int) and not isinstance(node, bool):
            return {"leaf": node}
        if node is None:
            return {"none": True}
        if type(node) is tuple:
            return {"tuple": [enc(c) for c in node]}
        if type(node) is list:
            return {"list": [enc(c) for c in node]}
        if type(node) is dict and all(isinstance(k, str) for k in node):
            return {"dict": [[k, enc(v)] for k, v in node.items()]}
        raise ValueError(f"fluxion.export: cannot serialize pytree node of type "
                         f"{type(node).__name__}; tuples, lists, dicts with string keys and None "
                         "are supported")

    return enc(skeleton)


def _decode_tree(data: Any) -> Any:
    def dec(node: dict) -> Any:
        if "leaf" in node:
            return object()
        if "none" in node:
            return None
        if "tuple" in node:
            return tuple(dec(c) for c in node["tuple"])
        if "list" in node:
            return [dec(c) for c in node["list"]]
        return {k: dec(v) for k, v in node["dict"]}

    return tree_util.tree_structure(dec(data))


def _aval_json(a: ShapedArray) -> list:
    return [list(a.shape), np.dtype(a.dtype).name, bool(a.weak_type)]


def _aval_from(data: list) -> ShapedArray:
    return ShapedArray(tuple(data[0]), np.dtype(data[1]), bool(data[2]))


@dataclasses.dataclass(frozen=True)
class Exported:
    """A function exported to StableHLO (see the module docstring).

    Fields: ``fun_name``; ``in_tree``/``in_avals`` (of ``(args, kwargs)``); ``out_tree``/
    ``out_avals``; ``platforms``; ``calling_convention_version``; the module text and the
    closed-over constants (``consts``, NumPy arrays passed before the arguments).
    """

    fun_name: str
    in_tree: Any
    in_avals: tuple
    out_tree: Any
    out_avals: tuple
    platforms: tuple
    calling_convention_version: int
    module_text: str
    consts: tuple

    def mlir_module(self) -> str:
        """The StableHLO module, as text."""
        return self.module_text

    def serialize(self, vjp_order: int = 0) -> bytearray:
        """The exported function as bytes (``vjp_order > 0`` is not supported)."""
        if vjp_order:
            raise NotImplementedError("fluxion.export: serializing VJPs is not supported")
        header = {"version": _VERSION, "fun_name": self.fun_name,
                  "in_tree": _encode_tree(self.in_tree), "out_tree": _encode_tree(self.out_tree),
                  "in_avals": [_aval_json(a) for a in self.in_avals],
                  "out_avals": [_aval_json(a) for a in self.out_avals],
                  "platforms": list(self.platforms),
                  "calling_convention_version": self.calling_convention_version,
                  "n_consts": len(self.consts)}
        buf = io.BytesIO()
        np.savez(buf, *self.consts)
        head, consts, text = (json.dumps(header).encode(), buf.getvalue(),
                              self.module_text.encode())
        out = bytearray(_MAGIC)
        for part in (head, consts, text):
            out += len(part).to_bytes(8, "little") + part
        return out

    def call(self, *args: Any, **kwargs: Any) -> Any:
        """Run the exported module on arguments of the exported types and structure."""
        leaves, tree = tree_util.tree_flatten((args, kwargs))
        if tree != self.in_tree:
            raise TypeError(f"Exported {self.fun_name}: called with arguments of structure "
                            f"{tree}, but it was exported for {self.in_tree}")
        if any(isinstance(x, Tracer) for x in leaves):
            raise TypeError(f"Exported {self.fun_name}: call takes concrete arrays; calling an "
                            "Exported inside jit, vmap or grad is not supported")
        avals = [abstractify(x) for x in leaves]
        for i, (got, want) in enumerate(zip(avals, self.in_avals)):
            if got.shape != want.shape or got.dtype != want.dtype:
                raise TypeError(f"Exported {self.fun_name}: argument {i} has type "
                                f"{got.str_short()}, but it was exported for "
                                f"{want.str_short()}")
        outs = call_module(self.module_text, self.out_avals, [*self.consts, *leaves],
                           self.fun_name, self.platforms)
        return tree_util.tree_unflatten(self.out_tree, outs)


def export(fun_jit: Callable[..., Any], *, platforms: Sequence[str] | None = None,
           disabled_checks: Sequence[Any] = ()) -> Callable[..., Exported]:
    """A function taking argument specs (arrays or ``ShapeDtypeStruct``) and returning the
    :class:`Exported` of ``fun_jit`` for them.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion import export
        >>> exp = export.export(fluxion.jit(jnp.cos))(jnp.zeros(2))
        >>> [a.shape for a in exp.out_avals]
        [(2,)]
    """
    plats = tuple(_PLATFORM_NAMES.get(str(p).lower(), str(p).lower())
                  for p in (platforms or (default_export_platform(),)))
    bad = [p for p in plats if p not in ("cpu", "tpu", "cuda", "rocm")]
    if bad or len(set(plats)) != len(plats) or not plats:
        raise ValueError(f"fluxion.export: platforms must be distinct names among 'cpu', "
                         f"'tpu', 'cuda' and 'rocm', got {tuple(platforms or ())}")
    name = getattr(fun_jit, "__name__", "fun")

    def do_export(*args: Any, **kwargs: Any) -> Exported:
        leaves, in_tree = tree_util.tree_flatten((args, kwargs))
        in_avals = [abstractify(x) for x in leaves]
        program, consts, out_tree = trace_to_program(fun_jit, args, kwargs, in_avals=in_avals,
                                                     description=f"export of {name}")
        text = lower_module(program, plats[0] if len(plats) == 1 else plats)
        return Exported(name, in_tree, tuple(in_avals), out_tree, tuple(program.out_avals),
                        plats, maximum_supported_calling_convention_version, text,
                        tuple(np.asarray(c) for c in consts))

    return do_export


def deserialize(blob: bytes | bytearray) -> Exported:
    """The :class:`Exported` that :meth:`Exported.serialize` wrote.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion import export
        >>> blob = export.export(fluxion.jit(lambda x: x + 1))(jnp.zeros(2)).serialize()
        >>> export.deserialize(blob).call(jnp.ones(2)).tolist()
        [2.0, 2.0]
    """
    data = bytes(blob)
    if not data.startswith(_MAGIC):
        raise ValueError("fluxion.export.deserialize: not a Fluxion export (bad header)")
    pos, parts = len(_MAGIC), []
    for _ in range(3):
        n = int.from_bytes(data[pos:pos + 8], "little")
        parts.append(data[pos + 8:pos + 8 + n])
        pos += 8 + n
    header = json.loads(parts[0].decode())
    if header["version"] != _VERSION:
        raise ValueError(f"fluxion.export.deserialize: format version {header['version']} is "
                         f"not supported (this Fluxion reads version {_VERSION})")
    npz = np.load(io.BytesIO(parts[1]))
    consts = tuple(npz[f"arr_{i}"] for i in range(header["n_consts"]))
    return Exported(header["fun_name"], _decode_tree(header["in_tree"]),
                    tuple(_aval_from(a) for a in header["in_avals"]),
                    _decode_tree(header["out_tree"]),
                    tuple(_aval_from(a) for a in header["out_avals"]),
                    tuple(header["platforms"]), header["calling_convention_version"],
                    parts[2].decode(), consts)

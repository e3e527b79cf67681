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

As in JAX, a module is exported only if its custom calls are among those whose compatibility
is guaranteed (LAPACK, cuSOLVER, the TPU's linalg kernels ...; ``DisabledSafetyCheck.custom_call
(name)`` allows another), and programs with host callbacks (``pure_callback``, ``io_callback``,
``debug.print``) are refused: their Python functions cannot be serialized.

The serialized form is Fluxion's own (a JSON header, the module text and the constants), not JAX's
flatbuffer: Fluxion and JAX cannot read each other's artifacts. Pytree structures of tuples,
lists, dicts (string keys) and None are serialized, and node types registered with
``register_pytree_node_serialization`` or ``register_namedtuple_serialization``; other node types
raise ``ValueError``, as in JAX.
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

import base64
import dataclasses
import io
import json
import re
from typing import Any, Callable, Sequence

import numpy as np

from fluxion.backend.client import default_device
from fluxion.backend.export import call_module, lower_module
from fluxion.backend.lowering import lowering_platform
from fluxion.core.avals import ShapedArray
from fluxion.core.trace import Tracer
from fluxion.transforms.staging import abstractify, trace_to_program
from fluxion.tree_util import _nodes as _tree_nodes
from fluxion.tree_util import physical as tree_util

__all__ = ["Exported", "DisabledSafetyCheck", "export", "deserialize", "default_export_platform",
           "register_pytree_node_serialization", "register_namedtuple_serialization",
           "minimum_supported_calling_convention_version",
           "maximum_supported_calling_convention_version"]

_MAGIC = b"FLUXION-EXPORT\n"
_VERSION = 1
minimum_supported_calling_convention_version = 1
maximum_supported_calling_convention_version = 1


_PLATFORM_NAMES = {"gpu": "cuda"}

# Custom-call targets whose compatibility over time jax 0.10.2 guarantees (its export refuses
# any other unless a DisabledSafetyCheck allows it); the lists are jax's.
_LAPACK = ("potrf", "geqrf", "orgqr", "syevd", "geev", "gesdd", "getrf", "sytrd", "gehrd",
           "gees", "trsm", "gtsv")
_COMPLEX_NAME = {"orgqr": "ungqr", "syevd": "heevd", "sytrd": "hetrd"}
_STABLE_TARGETS = frozenset(
    [f"lapack_{t}{_COMPLEX_NAME.get(op, op) if t in 'cz' else op}_ffi"
     for op in _LAPACK for t in "sdcz"]
    + ["cu_lu_pivots_to_permutation", "cusolver_getrf_ffi", "hip_lu_pivots_to_permutation",
       "hipsolver_getrf_ffi", "cusolver_geqrf_ffi", "cusolver_orgqr_ffi", "hipsolver_geqrf_ffi",
       "hipsolver_orgqr_ffi", "cusolver_potrf_ffi", "hipsolver_potrf_ffi", "cusolver_syevd_ffi",
       "hipsolver_syevd_ffi", "cusolver_gesvd_ffi", "cusolver_gesvdj_ffi", "hipsolver_gesvd_ffi",
       "hipsolver_gesvdj_ffi", "hipsolver_gesdd_ffi", "cusolver_sytrd_ffi",
       "hipsolver_sytrd_ffi", "cusparse_gtsv2_ffi",
       "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "annotate_device_placement",
       "cu_threefry2x32_ffi", "hip_threefry2x32_ffi", "Eigh", "Qr",
       "ProductOfElementaryHouseholderReflectors", "LuDecomposition", "ApproxTopK",
       "stablehlo.dynamic_approx_top_k", "tf.call_tf_function", "tpu_custom_call",
       "AllocateBuffer", "mosaic_gpu_v2", "stablehlo.dynamic_reduce_window",
       "stablehlo.dynamic_rng_bit_generator", "stablehlo.dynamic_top_k", "shape_assertion"])


class DisabledSafetyCheck:
    """A safety check of :func:`export` to skip (JAX's ``jax.export.DisabledSafetyCheck``):
    ``custom_call(name)`` exports a custom call whose compatibility is not guaranteed;
    ``platform()`` lets :meth:`Exported.call` run on a platform the module was not exported for
    (its first platform's function runs there).

    Example:
        >>> from fluxion.export import DisabledSafetyCheck
        >>> DisabledSafetyCheck.custom_call("my_kernel"), DisabledSafetyCheck.platform()
        (custom_call:my_kernel, platform)
    """

    def __init__(self, _impl: str) -> None:
        self._impl = _impl

    @classmethod
    def platform(cls) -> "DisabledSafetyCheck":
        """Allow calling on a platform other than the exported ones."""
        return cls("platform")

    @classmethod
    def custom_call(cls, target_name: str) -> "DisabledSafetyCheck":
        """Allow exporting custom calls to ``target_name``."""
        return cls(f"custom_call:{target_name}")

    def is_custom_call(self) -> str | None:
        """The custom-call target this check allows, or None."""
        return self._impl[len("custom_call:"):] if self._impl.startswith("custom_call:") else None

    def __str__(self) -> str:
        return self._impl

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DisabledSafetyCheck) and self._impl == other._impl

    def __hash__(self) -> int:
        return hash(self._impl)


def _check_module(name: str, text: str, disabled: Sequence[DisabledSafetyCheck]) -> None:
    """JAX's export checks: no host callbacks; only custom calls with guaranteed
    compatibility, or ones ``disabled`` allows."""
    if getattr(text, "host_callbacks", None) or "is_host_transfer = true" in text or re.search(
            r'call_target_name = "xla_ffi(_partitioned)?_python_\w+_callback"', text):
        raise NotImplementedError(
            f"fluxion.export of {name}: serialization of host callbacks (pure_callback, "
            "io_callback, debug.print, debug.callback) is not yet implemented, as in JAX: their "
            "Python functions cannot be written out. To look at the lowered module, use "
            "fluxion.jit(f).trace(*args).lower(lowering_platforms=(...)).as_text().")
    allowed = _STABLE_TARGETS | {d.is_custom_call() for d in disabled} - {None}
    bad: dict[str, str] = {}
    for line in text.splitlines():
        m = re.search(r'call_target_name = "([^"]+)"', line)
        if m and m.group(1) not in allowed and "ALL" not in allowed:
            bad.setdefault(m.group(1), line.strip())
    if bad:
        examples = "\n".join(bad.values())
        raise ValueError(
            f"fluxion.export of {name}: Cannot serialize code with custom calls whose targets "
            f"have no compatibility guarantees ({', '.join(sorted(bad))}), as in JAX; pass "
            "disabled_checks=[fluxion.export.DisabledSafetyCheck.custom_call(name)] to export "
            f"them anyway. Examples are:\n{examples}")


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


# pytree node types that in_tree/out_tree may hold beyond tuple, list, dict and None:
# type -> (serialized name, serialize_auxdata); serialized name -> (type, deserialize_auxdata,
# from_children)
_SERIALIZERS: dict[type, tuple[str, Callable[[Any], bytes]]] = {}
_DESERIALIZERS: dict[str, tuple[type, Callable[[bytes], Any], Callable[[Any, list], Any]]] = {}


def register_pytree_node_serialization(
        nodetype: type, *, serialized_name: str, serialize_auxdata: Callable[[Any], bytes],
        deserialize_auxdata: Callable[[bytes], Any],
        from_children: Callable[[Any, list], Any] | None = None) -> type:
    """Let :meth:`Exported.serialize` write pytree nodes of ``nodetype`` (registered with
    ``fluxion.tree_util.register_pytree_node``) in ``in_tree``/``out_tree``, as JAX's
    ``jax.export.register_pytree_node_serialization``: ``serialize_auxdata`` turns the node's
    auxiliary data into bytes, ``deserialize_auxdata`` back; ``from_children(aux, children)``
    builds a node (default: the type's unflatten function). Returns ``nodetype``.

    Example:
        >>> import json, fluxion
        >>> from fluxion import export
        >>> class Pair:
        ...     def __init__(self, a, b): self.a, self.b = a, b
        >>> _ = fluxion.tree_util.register_pytree_node(
        ...     Pair, lambda p: ((p.a, p.b), None), lambda aux, ch: Pair(*ch))
        >>> _ = export.register_pytree_node_serialization(
        ...     Pair, serialized_name="doc.Pair", serialize_auxdata=lambda aux: b"",
        ...     deserialize_auxdata=lambda b: None)
        >>> exp = export.export(fluxion.jit(lambda p: p.a + p.b))(Pair(1.0, 2.0))
        >>> float(export.deserialize(exp.serialize()).call(Pair(1.0, 2.0)))
        3.0
    """
    if nodetype in _SERIALIZERS:
        raise ValueError(f"Duplicate serialization registration for type `{nodetype}`. "
                         f"Previous registration was with serialized_name "
                         f"`{_SERIALIZERS[nodetype][0]}`.")
    if serialized_name in _DESERIALIZERS:
        raise ValueError(f"Duplicate serialization registration for serialized_name "
                         f"`{serialized_name}`. Previous registration was for type "
                         f"`{_DESERIALIZERS[serialized_name][0]}`.")
    if from_children is None:
        kind = _tree_nodes._registered.get(nodetype)
        if kind is None or not hasattr(kind, "unflatten"):
            raise ValueError(f"If `from_children` is not present, you must call first "
                             f"`fluxion.tree_util.register_pytree_node` for `{nodetype}`")
        from_children = kind.unflatten
    _SERIALIZERS[nodetype] = (serialized_name, serialize_auxdata)
    _DESERIALIZERS[serialized_name] = (nodetype, deserialize_auxdata, from_children)
    return nodetype


def register_namedtuple_serialization(nodetype: type, *, serialized_name: str) -> type:
    """Let :meth:`Exported.serialize` write ``collections.namedtuple`` nodes of ``nodetype``
    (JAX's ``jax.export.register_namedtuple_serialization``); its field names are written with
    them. Returns ``nodetype``.

    Example:
        >>> import collections, fluxion
        >>> from fluxion import export
        >>> Point = collections.namedtuple("Point", "x y")
        >>> _ = export.register_namedtuple_serialization(Point, serialized_name="doc.Point")
        >>> exp = export.export(fluxion.jit(lambda p: Point(p.y, p.x)))(Point(1.0, 2.0))
        >>> export.deserialize(exp.serialize()).call(Point(1.0, 2.0)).x.tolist()
        2.0
    """
    if not (isinstance(nodetype, type) and issubclass(nodetype, tuple)
            and hasattr(nodetype, "_fields")):
        raise ValueError("Use `fluxion.export.register_pytree_node_serialization` for types "
                         "other than `collections.namedtuple`.")
    return register_pytree_node_serialization(
        nodetype, serialized_name=serialized_name,
        serialize_auxdata=lambda aux: json.dumps(list(nodetype._fields)).encode(),
        deserialize_auxdata=lambda data: json.loads(data.decode()),
        from_children=lambda fields, children: nodetype(**dict(zip(fields, children))))


def _encode_tree(tree: Any) -> Any:
    """A JSON form of a pytree structure."""
    data = tree.node_data()
    if data is None:
        return {"leaf": 0}
    kids = [_encode_tree(c) for c in tree.children()]
    t, aux = data
    if t is type(None):
        return {"none": True}
    if t is tuple:
        return {"tuple": kids}
    if t is list:
        return {"list": kids}
    if t is dict:
        for k in aux:
            if not isinstance(k, str):
                raise TypeError(f"fluxion.export: serialization is supported only for "
                                f"dictionaries with string keys; found key {k!r} of type "
                                f"{type(k).__name__}")
        return {"dict": [[k, c] for k, c in zip(aux, kids)]}
    if t in _SERIALIZERS:
        name, ser = _SERIALIZERS[t]
        blob = ser(aux)
        if not isinstance(blob, (bytes, bytearray)):
            raise ValueError(f"fluxion.export: the serialize_auxdata of {name!r} must return "
                             f"bytes; it returned a {type(blob).__name__}")
        return {"custom": name, "aux": base64.b64encode(bytes(blob)).decode(), "children": kids}
    raise ValueError(f"Cannot serialize PyTreeDef containing an unregistered type `{t}`. Use "
                     "`fluxion.export.register_pytree_node_serialization` or "
                     "`fluxion.export.register_namedtuple_serialization`.")


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
        if "custom" in node:
            entry = _DESERIALIZERS.get(node["custom"])
            if entry is None:
                raise ValueError(f"fluxion.export.deserialize: no pytree node type is registered "
                                 f"for serialized_name {node['custom']!r}; call "
                                 "register_pytree_node_serialization (or "
                                 "register_namedtuple_serialization) before deserializing")
            _, de, from_children = entry
            aux = de(base64.b64decode(node["aux"]))
            return from_children(aux, [dec(c) for c in node["children"]])
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
    disabled_safety_checks: tuple = ()

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
                  "n_consts": len(self.consts),
                  "disabled_checks": [str(d) for d in self.disabled_safety_checks]}
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
                           self.fun_name, self.platforms,
                           DisabledSafetyCheck.platform() not in self.disabled_safety_checks)
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
    checks = tuple(disabled_checks)
    for d in checks:
        if not isinstance(d, DisabledSafetyCheck):
            raise TypeError(f"fluxion.export: disabled_checks takes DisabledSafetyCheck values "
                            f"(DisabledSafetyCheck.custom_call(name), .platform()), got {d!r}")

    def do_export(*args: Any, **kwargs: Any) -> Exported:
        leaves, in_tree = tree_util.tree_flatten((args, kwargs))
        in_avals = [abstractify(x) for x in leaves]
        program, consts, out_tree = trace_to_program(fun_jit, args, kwargs, in_avals=in_avals,
                                                     description=f"export of {name}")
        text = lower_module(program, plats[0] if len(plats) == 1 else plats)
        _check_module(name, text, checks)
        return Exported(name, in_tree, tuple(in_avals), out_tree, tuple(program.out_avals),
                        plats, maximum_supported_calling_convention_version, str(text),
                        tuple(np.asarray(c) for c in consts), checks)

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
                    parts[2].decode(), consts,
                    tuple(DisabledSafetyCheck(d) for d in header.get("disabled_checks", ())))

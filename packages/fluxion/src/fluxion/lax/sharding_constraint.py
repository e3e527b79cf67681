"""Sharding constraints: ``with_sharding_constraint``, ``out_sharding=``, and the mesh services.

``sharding_constraint_p`` places (eagerly) or constrains (staged) a value to a sharding; its
rules sit beside it. The current mesh, the ``NamedSharding`` constructor and eager placement
live in the backend, above lax: the backend's dispatcher installs them here when it loads
(:func:`install_mesh_services`). ``with_out_sharding`` is the ``out_sharding=`` argument of
``jnp.zeros``, ``jnp.dot``, ``random.normal`` and the others.

Example:
    >>> import fluxion.numpy as jnp
    >>> with_out_sharding("zeros", None, jnp.zeros, 2).shape
    (2,)
"""

from __future__ import annotations

from typing import Any, Sequence

from fluxion.core.errors import user_source_line, user_source_summary
from fluxion.core.primitive import Primitive
from fluxion.core.trace import Tracer
from fluxion.lax import _rules
from fluxion.lax import sharding_rules as _sh
from fluxion.transforms import batching as _bt
from fluxion.tree_util import physical as tree_util

__all__ = ["sharding_constraint_p", "with_sharding_constraint", "with_out_sharding",
           "install_mesh_services"]

sharding_constraint_p = Primitive("sharding_constraint")
sharding_constraint_p.bitcast = lambda eqn: "same"  # its operand, once XLA has simplified it


def _sharding_constraint_abstract_eval(x: Any, *, sharding: Any) -> Any:
    """The operand's aval with the type-level part of ``sharding`` (its Explicit axes); on a
    mesh without Explicit axes the operand's type is kept. ``with_sharding_constraint`` (not
    ``reshard``) keeps a typed operand's type, as JAX: on a mixed mesh its spec names only Auto
    axes, on an all-Explicit one it asserts the type."""
    if x.sharding is not None and not _sh.resharding_on():
        return x
    typed = _sh.explicit_part(sharding, len(x.shape), x.sharding)
    return x if typed is x.sharding else x.update(sharding=typed)


def _sharding_constraint_sharding(prim: Any, in_avals: Sequence[Any], out: Any, *,
                                  sharding: Any) -> Any:
    """``reshard`` sets the type (the abstract eval's); ``with_sharding_constraint`` on a mesh
    of only Explicit axes checks that the operand already has it (JAX's assertion)."""
    x = in_avals[0]
    mesh = getattr(sharding, "mesh", None)
    if (not _sh.resharding_on() and x.sharding is not None and mesh is not None
            and all(t.name == "Explicit" for t in mesh.axis_types)):
        have = tuple(_sh.spec_axes(p) for p in _sh.entries(x))
        want = tuple(_sh.spec_axes(p) for p in _sh.entries(out))
        if have != want:
            raise AssertionError(
                "`with_sharding_constraint` acts as an assert when all axes of mesh are of type "
                f"`Explicit`. The array sharding: {x.sharding.spec!r} did not match the sharding "
                f"provided: {sharding.spec!r}. Please use `fluxion.sharding.reshard` to shard "
                "your input to the sharding you want.")
    return out.sharding


sharding_constraint_p.abstract_eval = _sharding_constraint_abstract_eval
sharding_constraint_p.sharding = _sharding_constraint_sharding
_rules.deflinear(sharding_constraint_p,
                 lambda ct, x, *, sharding: [sharding_constraint_p.bind(ct, sharding=sharding)])


def _sharding_constraint_impl(x: Any, *, sharding: Any) -> Any:
    # Eagerly the constraint is a placement: the array moves to ``sharding``.
    return _MESH_SERVICES["device_put"](x, sharding)


def _sharding_constraint_batch(axis: _bt.AxisData, args: Any, dims: Any, *,
                               sharding: Any) -> Any:
    x, d = args[0], dims[0]
    if d is None:
        return sharding_constraint_p.bind(x, sharding=sharding), None
    ndim = len(_bt.abstractify(x).shape)
    entries = list(sharding.spec) + [None] * (ndim - 1 - len(sharding.spec))
    entries.insert(d, None)
    spec = type(sharding.spec)(*entries)
    return sharding_constraint_p.bind(x, sharding=sharding.with_spec(spec)), d


def _sharding_constraint_lowering(ctx: Any, x: str, *, sharding: Any) -> str:
    # The sharding object writes its own annotation (it knows the module's meshes); in a
    # single-device module the constraint is the identity. On a mesh mixing Explicit and Auto
    # axes the operand's type (its Explicit axes) comes first in each dimension, then the
    # constraint's Auto axes, as in JAX.
    aval = ctx.avals_in[0]
    typed = aval.sharding
    if (typed is not None and getattr(typed, "mesh", None) == getattr(sharding, "mesh", None)
            and not _sh.resharding_on() and hasattr(sharding, "with_spec")):
        ndim = len(aval.shape)
        have = [_sh.spec_axes(p) for p in _sh.entries(aval)]
        want = sharding.spec._normalized(ndim)
        if any(have) and all(not set(h) & set(w) for h, w in zip(have, want)):
            merged = [tuple(h) + tuple(w) for h, w in zip(have, want)]
            sharding = sharding.with_spec(type(sharding.spec)(
                *[None if not m else m[0] if len(m) == 1 else m for m in merged]))
    ndim = len(ctx.avals_in[0].shape)
    attr = sharding._constraint_attr(ctx.module, ndim)
    if attr is None:
        return x
    if getattr(ctx.module, "gspmd", False):  # jax_use_shardy_partitioner off: JAX's GSPMD op
        return _gspmd_constraint(ctx, x, sharding, ndim)
    return ctx.op("sdy.sharding_constraint", [x], attrs=f"sharding = {attr}")


def _gspmd_constraint(ctx: Any, x: str, sharding: Any, ndim: int) -> str:
    """The constraint as JAX lowers it for XLA's GSPMD partitioner: a ``Sharding`` custom call
    carrying the ``mhlo.sharding``; the spec's ``UNCONSTRAINED`` dimensions are named in its
    backend config (``unspecified_dims=[..]``)."""
    spec = getattr(sharding, "spec", ())
    free = [d for d, p in enumerate(spec) if d < ndim and p is type(spec).UNCONSTRAINED]
    config = f"unspecified_dims=[{','.join(map(str, free))}]" if free else ""
    return ctx.op("stablehlo.custom_call", [x], attrs=(
        f'call_target_name = "Sharding", backend_config = "{config}", '
        f'mhlo.sharding = "{sharding._to_xla_hlo_sharding(ndim)}"'))


sharding_constraint_p.impl = _sharding_constraint_impl
sharding_constraint_p.batch = _sharding_constraint_batch
sharding_constraint_p.lowering = _sharding_constraint_lowering


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """Ask the compiler to place ``x`` (a pytree of arrays) with ``shardings`` at this point of
    a jitted program (a NamedSharding, a PartitionSpec over the mesh of ``set_mesh``, or a tree
    of them). Outside ``jit`` the arrays are moved there.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> mesh = fluxion.make_mesh((1,), ("x",), axis_types=(fluxion.sharding.AxisType.Auto,),
        ...                          devices=fluxion.devices()[:1])
        >>> s = fluxion.NamedSharding(mesh, fluxion.P("x"))
        >>> fluxion.jit(lambda a: lax.with_sharding_constraint(a * 2, s))(jnp.ones(2)).tolist()
        [2.0, 2.0]
    """
    def is_leaf(v: Any) -> bool:
        return v is None or hasattr(v, "_to_xla_hlo_sharding") or (
            isinstance(v, tuple) and type(v).__name__ == "PartitionSpec")

    leaves, tree = tree_util.tree_flatten(x)
    if is_leaf(shardings):
        flat = [shardings] * len(leaves)
    else:
        flat = tree_util.broadcast_prefix(shardings, x, is_leaf=is_leaf)
    out = []
    for v, s in zip(leaves, flat):
        s = format_sharding("lax.with_sharding_constraint", s, len(_bt.abstractify(v).shape))
        if s is None:
            out.append(v)
            continue
        if type(s).__name__ == "PartitionSpec":
            mesh = _context_mesh()
            if mesh is None:
                raise ValueError(f"lax.with_sharding_constraint: a bare PartitionSpec {s!r} "
                                 "needs a mesh; use NamedSharding(mesh, spec) or set_mesh(mesh)")
            s = _named_sharding(mesh, s)
        s = _concrete(s)
        if not hasattr(s, "_constraint_attr"):
            raise TypeError(f"lax.with_sharding_constraint: expected a NamedSharding or a "
                            f"PartitionSpec, got {type(s).__name__}: {s!r}")
        aval = _bt.abstractify(v)
        if not _sh.resharding_on() and _explicit_context_assert(aval, s):
            out.append(v)  # an assertion only (JAX's): x already has that sharding
            continue
        if _sh.resharding_on() or not isinstance(v, Tracer):
            # Under jit an uneven constraint (on Auto axes: Explicit ones raised above) is the
            # compiler's to satisfy, padding the shards, as in JAX; eager ones must divide.
            s._check_fits("lax.with_sharding_constraint", tuple(aval.shape))
        out.append(sharding_constraint_p.bind(v, sharding=s))
    return tree_util.tree_unflatten(tree, out)


def format_sharding(fname: str, s: Any, ndim: int) -> Any:
    """The sharding of ``s`` when it is a ``Format`` (``jax.experimental.layout.Format``: a
    layout with a sharding), else ``s``. Fluxion lays every array out in XLA's default
    (row-major) layout: a Format naming another layout raises NotImplementedError.

    Example:
        >>> from fluxion.experimental.layout import Format, Layout
        >>> format_sharding("device_put", Format(Layout((1, 0)), None), 2) is None
        True
    """
    if type(s).__name__ != "Format" or not hasattr(s, "layout"):
        return s
    layout = s.layout
    if layout is not None and (tuple(layout.major_to_minor) != tuple(range(ndim - 1, -1, -1))
                               or layout.tiling):
        raise NotImplementedError(
            f"{fname}: the layout {layout} of a rank-{ndim} array is not XLA's default "
            "row-major layout, the only one Fluxion uses (see docs/guide/coming-from-jax.md)")
    return s.sharding


def resolve_sharding(fname: str, s: Any, ndim: int) -> Any:
    """``s`` as a sharding to place or constrain a rank-``ndim`` array with: a Format's sharding
    (:func:`format_sharding`), and a NamedSharding over an abstract mesh as one over the
    ``set_mesh`` mesh it describes (flax builds shardings on ``get_abstract_mesh()``).

    Example:
        >>> resolve_sharding("device_put", None, 1) is None
        True
    """
    return _concrete(format_sharding(fname, s, ndim))


def _concrete(s: Any) -> Any:
    """A NamedSharding over an abstract mesh as one over the ``set_mesh`` mesh it describes (as
    JAX resolves it: flax builds its shardings on ``get_abstract_mesh()``)."""
    mesh = getattr(s, "mesh", None)
    if mesh is None or type(mesh).__name__ != "AbstractMesh":
        return s
    ctx = _context_mesh()
    if ctx is not None and ctx.abstract_mesh == mesh:
        return _named_sharding(ctx, s.spec)
    return s


def _explicit_context_assert(aval: Any, s: Any) -> bool:
    """JAX's checks of a sharding constraint: under a ``set_mesh`` of only Explicit axes it
    asserts that the operand's type already has ``s`` (True: nothing to bind); elsewhere its
    spec may name only Auto axes (else use ``reshard``)."""
    ctx = _context_mesh()
    mesh, spec = getattr(s, "mesh", None), getattr(s, "spec", None)
    if mesh is None or spec is None:
        return False
    if ctx is not None and ctx.axis_types and all(t.name == "Explicit" for t in ctx.axis_types):
        have = tuple(_sh.spec_axes(p) for p in _sh.entries(aval))
        want = spec._normalized(len(aval.shape))
        for d, (h, w) in enumerate(zip(have, want)):
            if d < len(spec) and spec[d] is type(spec).UNCONSTRAINED:
                continue
            if h != w:
                have_spec = aval.sharding.spec if aval.sharding is not None else type(spec)(
                    *(None,) * len(aval.shape))
                raise AssertionError(
                    "`with_sharding_constraint` acts as an assert when all axes of mesh are of "
                    f"type `Explicit`. The array sharding: {have_spec!r} did not match the "
                    f"sharding provided: {spec!r}. Please use `fluxion.sharding.reshard` to "
                    "shard your input to the sharding you want.")
        return True
    types = dict(zip(mesh.axis_names, mesh.axis_types))
    named = [a for d in spec._normalized(len(aval.shape)) for a in d]
    if any(types.get(a) is not None and types[a].name != "Auto" for a in named):
        raise ValueError(
            "The spec of NamedSharding passed to with_sharding_constraint can only refer to Auto "
            f"axes of the mesh. Got spec={spec!r} and mesh={mesh!r}. You probably meant to use "
            f"`reshard` API? (lax.with_sharding_constraint) (at {user_source_line()})")
    return False


_MESH_SERVICES: dict[str, Any] = {}


def install_mesh_services(context_mesh: Any, named_sharding: Any, device_put: Any) -> None:
    """Set by ``fluxion.backend`` when it defines shardings: the current mesh, the NamedSharding
    constructor and ``device_put`` (they live in the backend, above this layer)."""
    _MESH_SERVICES["context_mesh"] = context_mesh
    _MESH_SERVICES["named_sharding"] = named_sharding
    _MESH_SERVICES["device_put"] = device_put
    # the PartitionSpec class beside the NamedSharding class (both in the backend)
    spec_type = named_sharding.__init__.__globals__["PartitionSpec"]
    _sh.CONTEXT_MESH[0] = context_mesh
    _sh._REPLICATED[0] = lambda m: named_sharding(m, spec_type())


def _context_mesh() -> Any:
    fn = _MESH_SERVICES.get("context_mesh")
    return fn() if fn is not None else None


def _named_sharding(mesh: Any, spec: Any) -> Any:
    return _MESH_SERVICES["named_sharding"](mesh, spec)


def check_explicit_names(fname: str, sharding: Any) -> None:
    """JAX's check of an ``out_sharding=`` (and ``reshard``'s target): its spec may name only
    Explicit mesh axes (a ValueError for Auto or Manual ones, whose placement is the compiler's or
    ``shard_map``'s). Anything without a mesh and a spec passes.

    Example:
        >>> import fluxion
        >>> m = fluxion.make_mesh((1,), ("i",), axis_types=(fluxion.sharding.AxisType.Auto,))
        >>> check_explicit_names("zeros", fluxion.NamedSharding(m, fluxion.P("i")))
        Traceback (most recent call last):
        ...
        ValueError: PartitionSpec passed to zeros cannot contain axis names that are of type Auto or Manual. Got PartitionSpec: P('i',) with axis name: i of type: AxisType.Auto. This error occurs at source:  ...
    """
    mesh, spec = getattr(sharding, "mesh", None), getattr(sharding, "spec", None)
    if mesh is None or spec is None or not getattr(mesh, "axis_types", None):
        return
    types = dict(zip(mesh.axis_names, mesh.axis_types))
    for entry in spec:
        for name in (entry if isinstance(entry, (tuple, list)) else (entry,)):
            t = types.get(name) if isinstance(name, str) else None
            if t is not None and t.name in ("Auto", "Manual"):
                raise ValueError(
                    f"PartitionSpec passed to {fname} cannot contain axis names that are of type "
                    f"Auto or Manual. Got PartitionSpec: {spec} with axis name: {name} of type: "
                    f"AxisType.{t.name}. This error occurs at source:  {user_source_summary()}")


def with_out_sharding(fname: str, out_sharding: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` placed with ``out_sharding`` (a Sharding or a PartitionSpec over
    the mesh of ``set_mesh``; None: as computed): the ``out_sharding=`` of ``jnp.dot``,
    ``jnp.zeros``, ``.at[...].set`` and the others.

    Example:
        >>> import fluxion.numpy as jnp
        >>> with_out_sharding("zeros", None, jnp.zeros, 2).shape
        (2,)
    """
    if out_sharding is None:
        return fn(*args, **kwargs)
    if type(out_sharding).__name__ == "PartitionSpec" and _context_mesh() is not None:
        check_explicit_names(fname, _named_sharding(_context_mesh(), out_sharding))
    else:
        check_explicit_names(fname, out_sharding)
    with _sh.out_sharding_pending():
        out = fn(*args, **kwargs)
    if type(out_sharding).__name__ == "PartitionSpec" and _context_mesh() is not None:
        out_sharding = _named_sharding(_context_mesh(), out_sharding)
    ndim = getattr(out, "ndim", None)
    mesh = getattr(out_sharding, "mesh", None)
    if (ndim is not None and mesh is not None and hasattr(out_sharding, "with_spec")
            and all(t.name == "Explicit" for t in mesh.axis_types)
            and len(out_sharding.spec) < ndim):  # the type's spec names every dimension (JAX)
        out_sharding = out_sharding.with_spec(
            tuple(out_sharding.spec) + (None,) * (ndim - len(out_sharding.spec)))
    with _sh.resharding():
        try:
            return with_sharding_constraint(out, out_sharding)
        except (TypeError, ValueError) as e:
            raise type(e)(str(e).replace("lax.with_sharding_constraint", f"{fname}: "
                                         "out_sharding")) from None

"""``fluxion.experimental.pallas`` (JAX's ``jax.experimental.pallas``): kernels written against
mutable references, run with the semantics of JAX's interpret mode.

``pallas_call(kernel, out_shape, grid=..., in_specs=..., out_specs=...)`` returns a function
that runs ``kernel`` once per point of ``grid`` (in row-major order, one after another); the
kernel gets one reference per input and per output (a block of it when a :class:`BlockSpec`
is given), reads them with ``ref[idx]`` / ``load`` and writes the outputs with
``ref[idx] = v`` / ``store``; ``program_id(axis)`` and ``num_programs(axis)`` say where in the
grid it is. Fluxion has no Triton or Mosaic backend: every ``pallas_call`` runs this way, on
every platform, as one staged loop over the grid (``interpret=True`` is what JAX's CPU path
requires; ``compiler_params`` are accepted and unused). Outputs not aliased to an input
(``input_output_aliases``) start as JAX's interpret mode fills them: NaN for floats, the
smallest integer for integers. Not provided: scratch shapes, semaphores, ``run_scoped``, DMA
and the TPU/GPU-specific primitives (docs/guide/coming-from-jax.md).

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> from fluxion.experimental import pallas as pl
    >>> def add_kernel(x_ref, y_ref, o_ref):
    ...     o_ref[...] = x_ref[...] + y_ref[...]
    >>> add = pl.pallas_call(add_kernel, out_shape=fluxion.ShapeDtypeStruct((4,), jnp.float32),
    ...                      grid=(2,), in_specs=[pl.BlockSpec((2,), lambda i: (i,))] * 2,
    ...                      out_specs=pl.BlockSpec((2,), lambda i: (i,)))
    >>> add(jnp.arange(4.0), jnp.ones(4)).tolist()
    [1.0, 2.0, 3.0, 4.0]
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import threading
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from fluxion import lax, tree_util
from fluxion import numpy as jnp
from fluxion.lax._ds import Slice, ds, dslice

__all__ = ["BlockSpec", "CompilerParams", "GridSpec", "Slice", "cdiv", "dslice", "ds", "load",
           "next_power_of_2", "num_programs", "pallas_call", "program_id", "store", "when"]


# ----------------------------------------------------------------------------- references

class _Buffer:
    """The current value of one kernel operand (replaced on every write)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class _At:
    __slots__ = ("_ref",)

    def __init__(self, ref: "_Ref") -> None:
        self._ref = ref

    def __getitem__(self, idx: Any) -> "_Ref":
        return _Ref(self._ref._buf, self._ref._path + (_norm(idx),))


def _norm(idx: Any) -> Any:
    """An index with ``Slice``s (``pl.ds``) turned into what array indexing takes."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    out = []
    for i in idx:
        if isinstance(i, Slice):
            if isinstance(i.start, (int, np.integer)) and i.stride == 1:
                out.append(slice(int(i.start), int(i.start) + i.size))
            else:
                out.append(i.start + i.stride * jnp.arange(i.size))
        else:
            out.append(i)
    return tuple(out)


class _Ref:
    """A kernel's reference to (a view of) an operand: ``ref[idx]`` reads, ``ref[idx] = v``
    writes, ``ref.at[idx]`` is the view at ``idx``."""

    __slots__ = ("_buf", "_path")

    def __init__(self, buf: _Buffer, path: tuple = ()) -> None:
        self._buf = buf
        self._path = path

    def _read(self) -> Any:
        v = self._buf.value
        for idx in self._path:
            v = v[idx]
        return v

    @property
    def at(self) -> _At:
        return _At(self)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._read().shape)

    @property
    def dtype(self) -> np.dtype:
        return self._buf.value.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, idx: Any) -> Any:
        return self._read()[_norm(idx)]

    def __setitem__(self, idx: Any, value: Any) -> None:
        _write(self._buf, self._path + (_norm(idx),), value, None)

    def __repr__(self) -> str:
        return f"Ref({self.dtype}{list(self.shape)})"


def _write(buf: _Buffer, path: tuple, value: Any, mask: Any) -> None:
    def put(v: Any, path: tuple) -> Any:
        idx, rest = path[0], path[1:]
        if rest:
            return v.at[idx].set(put(v[idx], rest))
        new = jnp.asarray(value, dtype=v.dtype)
        if mask is None:
            return v.at[idx].set(jnp.broadcast_to(new, v[idx].shape))
        # a masked store writes only where mask is True: which elements it reaches and their
        # values are gathered by scatter-max/add, so masked-off lanes that alias a written
        # element (clamped indices) never overwrite it
        shape = v[idx].shape
        m = jnp.broadcast_to(mask, shape)
        hit = jnp.zeros(v.shape, jnp.bool_).at[idx].max(m)
        acc_dt = jnp.int32 if v.dtype == jnp.bool_ else v.dtype
        written = jnp.zeros(v.shape, acc_dt).at[idx].add(
            jnp.where(m, jnp.broadcast_to(new, shape), 0).astype(acc_dt))
        return jnp.where(hit, written.astype(v.dtype), v)
    buf.value = put(buf.value, path if path else (Ellipsis,))


def load(ref: _Ref, idx: Any = None, *, mask: Any = None, other: Any = None,
         cache_modifier: str | None = None, eviction_policy: str | None = None,
         volatile: bool = False) -> Any:
    """Reads ``ref`` (at ``idx``); where ``mask`` is False the result is ``other`` (0 when not
    given).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> def k(x_ref, o_ref):
        ...     o_ref[...] = load(x_ref, mask=jnp.arange(3) < 2, other=-1.0)
        >>> pallas_call(k, fluxion.ShapeDtypeStruct((3,), jnp.float32))(jnp.ones(3)).tolist()
        [1.0, 1.0, -1.0]
    """
    v = ref._read() if idx is None else ref[idx]
    if mask is None:
        return v
    return jnp.where(mask, v, jnp.asarray(0 if other is None else other, dtype=v.dtype))


def store(ref: _Ref, idx: Any = None, val: Any = None, *, mask: Any = None,
          eviction_policy: str | None = None) -> None:
    """Writes ``val`` into ``ref`` (at ``idx``), only where ``mask`` is True when given.
    ``store(ref, val, mask=...)`` (Triton's argument order) is accepted too.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> def k(o_ref):
        ...     o_ref[...] = jnp.zeros(3)
        ...     store(o_ref, jnp.ones(3), mask=jnp.arange(3) != 1)
        >>> pallas_call(k, fluxion.ShapeDtypeStruct((3,), jnp.float32))().tolist()
        [1.0, 0.0, 1.0]
    """
    if val is None:
        idx, val = None, idx
    path = ref._path + ((_norm(idx),) if idx is not None else ())
    _write(ref._buf, path, val, mask)


# ----------------------------------------------------------------------------- indexing

# ``Slice``/``dslice``/``ds`` are fluxion.lax._ds's (the class ``fluxion.ds`` makes too).


def cdiv(a: int, b: int) -> int:
    """``ceil(a / b)`` for positive integers.

    Example:
        >>> cdiv(7, 2)
        4
    """
    return (a + b - 1) // b


def next_power_of_2(x: int) -> int:
    """The smallest power of two ``>= x``.

    Example:
        >>> next_power_of_2(5)
        8
    """
    if x < 0:
        raise ValueError("next_power_of_2: x must be non-negative")
    return 1 if x == 0 else 1 << (x - 1).bit_length()


def when(condition: Any) -> Callable[[Callable[[], None]], None]:
    """Decorator: runs the decorated kernel code only where ``condition`` holds (on the
    references' values: both outcomes are computed and selected).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> def k(o_ref):
        ...     o_ref[...] = jnp.zeros(2)
        ...     @when(program_id(0) == 1)
        ...     def _():
        ...         o_ref[1] = 5.0
        >>> pallas_call(k, fluxion.ShapeDtypeStruct((2,), jnp.float32), grid=(2,))().tolist()
        [0.0, 5.0]
    """
    def decorate(body: Callable[[], None]) -> None:
        state = _STATE.grid
        if state is None:
            raise RuntimeError("pallas.when: used outside a kernel run by pallas_call")
        before = [b.value for b in state.buffers]
        body()
        for b, old in zip(state.buffers, before):
            if b.value is not old:
                b.value = jnp.where(condition, b.value, old)
    return decorate


# ----------------------------------------------------------------------------- grid state

class _Grid:
    __slots__ = ("ids", "sizes", "buffers")

    def __init__(self, ids: Sequence[Any], sizes: Sequence[int], buffers: list[_Buffer]) -> None:
        self.ids = ids
        self.sizes = sizes
        self.buffers = buffers


class _State(threading.local):
    grid: _Grid | None = None


_STATE = _State()


@contextlib.contextmanager
def _grid_scope(g: _Grid) -> Iterator[None]:
    prev, _STATE.grid = _STATE.grid, g
    try:
        yield
    finally:
        _STATE.grid = prev


def _grid(fname: str) -> _Grid:
    g = _STATE.grid
    if g is None:
        raise RuntimeError(f"pallas.{fname}: called outside a kernel run by pallas_call")
    return g


def program_id(axis: int) -> Any:
    """The position of the running kernel instance along grid axis ``axis`` (an int32 scalar).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> def k(o_ref):
        ...     o_ref[program_id(0)] = program_id(0) * 10
        >>> pallas_call(k, fluxion.ShapeDtypeStruct((3,), jnp.int32), grid=(3,))().tolist()
        [0, 10, 20]
    """
    g = _grid("program_id")
    if not 0 <= axis < len(g.ids):
        raise ValueError(f"pallas.program_id: axis {axis} out of range for a grid of rank "
                         f"{len(g.ids)}")
    return g.ids[axis]


def num_programs(axis: int) -> int:
    """The size of grid axis ``axis``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> def k(o_ref):
        ...     o_ref[...] = jnp.full((1,), num_programs(0))
        >>> pallas_call(k, fluxion.ShapeDtypeStruct((1,), jnp.int32), grid=(4,))().tolist()
        [4]
    """
    g = _grid("num_programs")
    if not 0 <= axis < len(g.sizes):
        raise ValueError(f"pallas.num_programs: axis {axis} out of range for a grid of rank "
                         f"{len(g.sizes)}")
    return g.sizes[axis]


# ----------------------------------------------------------------------------- specs

@dataclasses.dataclass(frozen=True)
class BlockSpec:
    """The block of an operand each kernel instance sees: ``block_shape`` (``None`` entries:
    a dimension of size 1 squeezed away) at block index ``index_map(*program_ids)`` (a tuple of
    block indices, one per dimension). ``BlockSpec()`` is the whole operand."""

    block_shape: Sequence[int | None] | None = None
    index_map: Callable[..., Any] | None = None
    memory_space: Any = None
    pipeline_mode: Any = None


@dataclasses.dataclass(frozen=True)
class GridSpec:
    """``grid``, ``in_specs`` and ``out_specs`` of a :func:`pallas_call` as one value."""

    grid: Sequence[int] = ()
    in_specs: Any = None
    out_specs: Any = None
    scratch_shapes: Sequence[Any] = ()


@dataclasses.dataclass(frozen=True)
class CompilerParams:
    """Backend compiler options (accepted; Fluxion runs every kernel in interpret mode)."""


def _block_bounds(spec: BlockSpec | None, shape: tuple[int, ...], ids: Sequence[Any],
                  what: str) -> tuple[list[Any], tuple[int, ...], tuple[int, ...]] | None:
    """(start indices, block shape with squeezed dims as 1, shape seen by the kernel), or None
    for the whole operand."""
    if spec is None or spec.block_shape is None:
        return None
    bs = tuple(spec.block_shape)
    if len(bs) != len(shape):
        raise ValueError(f"pallas_call: the block shape {bs} of {what} does not have the rank of "
                         f"its shape {shape}")
    full = tuple(1 if b is None else int(b) for b in bs)
    for b, s in zip(full, shape):
        if s % b:
            raise NotImplementedError(
                f"pallas_call: the block shape {bs} of {what} does not divide its shape {shape} "
                f"(padded edge blocks are not supported by Fluxion)")
    if spec.index_map is None:
        blocks = (0,) * len(shape)
    else:
        blocks = spec.index_map(*ids)
        blocks = tuple(blocks) if isinstance(blocks, (tuple, list)) else (blocks,)
    if len(blocks) != len(shape):
        raise ValueError(f"pallas_call: the index_map of {what} returned {len(blocks)} block "
                         f"indices for an operand of rank {len(shape)}")
    starts = [jnp.asarray(b, jnp.int32) * f for b, f in zip(blocks, full)]
    seen = tuple(f for f, b in zip(full, bs) if b is not None)
    return starts, full, seen


def _read_block(x: Any, bounds: Any) -> Any:
    if bounds is None:
        return x
    starts, full, seen = bounds
    return jnp.reshape(lax.dynamic_slice(x, starts, full), seen)


def _write_block(x: Any, block: Any, bounds: Any) -> Any:
    if bounds is None:
        return block
    starts, full, _ = bounds
    return lax.dynamic_update_slice(x, jnp.reshape(block, full), starts)


def _uninitialized(shape: tuple[int, ...], dtype: Any) -> Any:
    dt = np.dtype(dtype)
    if np.issubdtype(dt, np.floating) or np.issubdtype(dt, np.complexfloating):
        return jnp.full(shape, np.nan, dt)
    if np.issubdtype(dt, np.integer):
        return jnp.full(shape, np.iinfo(dt).min, dt)
    return jnp.zeros(shape, dt)


def _specs(specs: Any, n: int, what: str) -> list[BlockSpec | None]:
    if specs is None:
        return [None] * n
    if isinstance(specs, BlockSpec):
        return [specs] * n
    specs = list(specs)
    if len(specs) != n:
        raise ValueError(f"pallas_call: {len(specs)} {what} for {n} operands")
    return specs


def pallas_call(kernel: Callable[..., None], out_shape: Any, *, grid_spec: GridSpec | None = None,
                grid: int | Sequence[int] = (), in_specs: Any = None, out_specs: Any = None,
                scratch_shapes: Sequence[Any] = (), input_output_aliases: dict[int, int] | None = None,
                debug: bool = False, interpret: Any = False, name: str | None = None,
                compiler_params: Any = None, cost_estimate: Any = None, backend: str | None = None,
                metadata: Any = None) -> Callable[..., Any]:
    """A function running ``kernel`` over ``grid`` (see the module docstring).

    ``out_shape``: a ``ShapeDtypeStruct`` (or a pytree of them) per output;
    ``in_specs``/``out_specs``: a :class:`BlockSpec` per input/output (or None: the whole
    operand); ``input_output_aliases``: ``{input index: output index}``, the output starting
    as that input's value.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> def double(x_ref, o_ref):
        ...     o_ref[...] = 2 * x_ref[...]
        >>> pallas_call(double, fluxion.ShapeDtypeStruct((2,), jnp.float32))(jnp.ones(2)).tolist()
        [2.0, 2.0]
    """
    if grid_spec is not None:
        grid, in_specs, out_specs = grid_spec.grid, grid_spec.in_specs, grid_spec.out_specs
        scratch_shapes = grid_spec.scratch_shapes
    if scratch_shapes:
        raise NotImplementedError("pallas_call: scratch_shapes are not supported by Fluxion "
                                  "(see docs/guide/coming-from-jax.md)")
    grid_t = (int(grid),) if isinstance(grid, (int, np.integer)) else tuple(int(g) for g in grid)
    out_leaves, out_tree = tree_util.tree_flatten(out_shape)
    aliases = dict(input_output_aliases or {})
    fname = name or getattr(kernel, "__name__", "kernel")

    def run(*args: Any) -> Any:
        in_leaves, in_tree = tree_util.tree_flatten(args)
        ins = [jnp.asarray(a) for a in in_leaves]
        n_in, n_out = len(ins), len(out_leaves)
        ispecs = _specs(in_specs, n_in, "in_specs")
        ospecs = _specs(out_specs, n_out, "out_specs")
        outs = []
        for j, o in enumerate(out_leaves):
            src = [i for i, k in aliases.items() if k == j]
            if src:
                a = ins[src[0]]
                if tuple(a.shape) != tuple(o.shape) or a.dtype != np.dtype(o.dtype):
                    raise ValueError(f"pallas_call {fname}: input {src[0]} "
                                     f"({a.dtype}{list(a.shape)}) aliased to output {j} "
                                     f"({np.dtype(o.dtype)}{list(o.shape)}) differs from it")
                outs.append(a)
            else:
                outs.append(_uninitialized(tuple(o.shape), o.dtype))

        def step(ids: Sequence[Any], outs: list) -> list:
            in_bounds = [_block_bounds(s, tuple(x.shape), ids, f"input {i}")
                         for i, (s, x) in enumerate(zip(ispecs, ins))]
            out_bounds = [_block_bounds(s, tuple(x.shape), ids, f"output {i}")
                          for i, (s, x) in enumerate(zip(ospecs, outs))]
            in_bufs = [_Buffer(_read_block(x, b)) for x, b in zip(ins, in_bounds)]
            out_bufs = [_Buffer(_read_block(x, b)) for x, b in zip(outs, out_bounds)]
            state = _Grid(ids, grid_t, in_bufs + out_bufs)
            with _grid_scope(state):
                in_refs = tree_util.tree_unflatten(in_tree, [_Ref(b) for b in in_bufs])
                kernel(*in_refs, *[_Ref(b) for b in out_bufs])
            return [_write_block(x, b.value, bd) for x, b, bd in zip(outs, out_bufs, out_bounds)]

        n = math.prod(grid_t)
        if n == 1:
            outs = step([jnp.int32(0)] * len(grid_t), outs)
        elif n > 1:
            def body(k: Any, outs: list) -> list:
                ids, rem = [], k
                for size in reversed(grid_t):
                    ids.append(rem % size)
                    rem = rem // size
                return step(ids[::-1], list(outs))
            outs = lax.fori_loop(0, n, body, outs)
        return tree_util.tree_unflatten(out_tree, list(outs))

    run.__name__ = f"pallas_call({fname})"
    return run


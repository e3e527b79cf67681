"""Irreducible representations of O(3) as plain Python metadata (e3nn_jax's ``Irrep``,
``MulIrrep`` and ``Irreps``).

An :class:`Irrep` is a degree ``l >= 0`` and a parity ``p`` in {1, -1}, written ``"1o"``; an
:class:`Irreps` is a tuple of ``(mul, Irrep)`` pairs, written ``"16x0e+8x1o"``. They hold no data:
they describe how the last axis of an :class:`~fluxion_md._nn.e3nn.IrrepsArray` is laid out, and
layers derive their weight shapes and parameter names from them (so their ``str`` must be
e3nn_jax's exactly).
"""

from __future__ import annotations

import itertools
import math
from collections import namedtuple
from typing import Any, Callable, Iterator

import fluxion.numpy as fnp
from fluxion import tree_util
from fluxion_md._nn.e3nn import _upper

__all__ = ["Irrep", "MulIrrep", "Irreps"]

_PARITY_LETTER = {1: "e", -1: "o"}


class Irrep:
    """An irreducible representation of O(3): degree ``l`` and parity ``p``.

    Accepts ``Irrep(1, -1)``, ``Irrep("1o")``, ``Irrep("2y")`` (parity ``(-1)**l``, the spherical
    harmonics' one), ``Irrep((l, p))``, another ``Irrep`` or a ``MulIrrep``.

    Example:
        >>> Irrep("1o"), Irrep(2, 1).dim, list(Irrep("1o") * Irrep("1o"))
        (1o, 5, [0e, 1e, 2e])
    """

    __slots__ = ("l", "p")
    l: int
    p: int

    def __init__(self, l: Any, p: int | None = None):
        if p is None:
            l, p = _parse_irrep(l)
        if not (isinstance(l, int) and l >= 0):
            raise ValueError(f"Irrep: l must be a non-negative int, got {l!r}")
        if p not in (1, -1):
            raise ValueError(f"Irrep: p must be 1 or -1, got {p!r}")
        object.__setattr__(self, "l", l)
        object.__setattr__(self, "p", p)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Irrep is immutable")

    def __repr__(self) -> str:
        return f"{self.l}{_PARITY_LETTER[self.p]}"

    @classmethod
    def iterator(cls, lmax: int | None = None) -> Iterator[Irrep]:
        """All irreps in e3nn's order ``0e, 0o, 1o, 1e, 2e, 2o, ...`` (up to ``lmax``)."""
        for l in itertools.count():
            natural = (-1) ** l
            yield Irrep(l, natural)
            yield Irrep(l, -natural)
            if l == lmax:
                return

    @property
    def dim(self) -> int:
        """``2 l + 1``."""
        return 2 * self.l + 1

    def is_scalar(self) -> bool:
        """True for ``0e``."""
        return self.l == 0 and self.p == 1

    def D_from_matrix(self, R: Any) -> Any:  # noqa: N802 - e3nn_jax's name
        """The representation matrices ``[..., 2l+1, 2l+1]`` of ``R[..., 3, 3]`` (rotations,
        possibly times the inversion, which contributes the parity ``p``).

        Example:
            >>> import fluxion.numpy as jnp
            >>> [round(v, 4) + 0.0 for v in Irrep("1o").D_from_matrix(-jnp.eye(3)).tolist()[0]]
            [-1.0, 0.0, 0.0]
        """
        return _upper.get("irrep_d_from_matrix")(self.l, self.p, R)

    def __mul__(self, other: Any) -> Iterator[Irrep]:
        """The irreps in the tensor product of two irreps: ``|l1-l2| .. l1+l2``, parity ``p1 p2``."""
        other = Irrep(other)
        parity = self.p * other.p
        for l in range(abs(self.l - other.l), self.l + other.l + 1):
            yield Irrep(l, parity)

    def __rmul__(self, mul: int) -> Irreps:
        if not isinstance(mul, int):
            raise TypeError(f"Irrep: only an int times an Irrep is defined, got {type(mul)}")
        return Irreps([(mul, self)])

    def __add__(self, other: Any) -> Irreps:
        return Irreps(self) + Irreps(other)

    def __radd__(self, other: Any) -> Irreps:
        return Irreps(other) + Irreps(self)

    def __iter__(self) -> Iterator[int]:
        yield self.l
        yield self.p

    def _order_key(self) -> tuple[int, int]:
        # e3nn's order: by l, and within an l the natural parity (-1)^l first.
        return (self.l, -self.p * (-1) ** self.l)

    def __lt__(self, other: Irrep) -> bool:
        return self._order_key() < Irrep(other)._order_key()

    def __eq__(self, other: object) -> bool:
        try:
            other = Irrep(other)
        except (ValueError, TypeError):
            return False
        return (self.l, self.p) == (other.l, other.p)

    def __hash__(self) -> int:
        return hash((self.l, self.p))


def _parse_irrep(x: Any) -> tuple[int, int]:
    if isinstance(x, Irrep):
        return x.l, x.p
    if isinstance(x, MulIrrep):
        return x.ir.l, x.ir.p
    if isinstance(x, str):
        name = x.strip()
        try:
            l = int(name[:-1])
            if l < 0:
                raise ValueError
            p = {"e": 1, "o": -1, "y": (-1) ** l}[name[-1]]
        except (ValueError, KeyError, IndexError):
            raise ValueError(f'Irrep: unable to convert string "{name}" into an Irrep') from None
        return l, p
    if isinstance(x, tuple) and len(x) == 2:
        return x[0], x[1]
    raise ValueError(f"Irrep: cannot interpret {x!r} as an Irrep")


class MulIrrep:
    """An :class:`Irrep` with a multiplicity; unpacks as ``mul, ir``; ``str`` is ``"4x1o"``.

    Example:
        >>> m = MulIrrep(4, Irrep("1o")); m, m.dim
        (4x1o, 12)
    """

    __slots__ = ("mul", "ir")
    mul: int
    ir: Irrep

    def __init__(self, mul: Any, ir: Irrep | None = None):
        if ir is None:
            mul, ir = mul
        object.__setattr__(self, "mul", mul)
        object.__setattr__(self, "ir", ir)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("MulIrrep is immutable")

    @property
    def dim(self) -> int:
        """``mul * ir.dim``."""
        return self.mul * self.ir.dim

    def __repr__(self) -> str:
        return f"{self.mul}x{self.ir}"

    def __iter__(self) -> Iterator[Any]:
        yield self.mul
        yield self.ir

    def __lt__(self, other: MulIrrep) -> bool:
        return (self.ir, self.mul) < (other.ir, other.mul)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MulIrrep):
            return (self.mul, self.ir) == (other.mul, other.ir)
        if isinstance(other, tuple) and len(other) == 2:
            return (self.mul, self.ir) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.mul, self.ir))


def _mul_irrep(item: Any) -> MulIrrep:
    if isinstance(item, MulIrrep):
        return item
    if isinstance(item, str):
        return MulIrrep(1, Irrep(item))
    if isinstance(item, Irrep):
        return MulIrrep(1, item)
    if isinstance(item, int):
        return MulIrrep(1, Irrep(item, 1))
    if isinstance(item, (tuple, list)) and len(item) == 2:
        mul, ir = item
        if isinstance(mul, int) and mul >= 0:
            return MulIrrep(mul, Irrep(ir))
    raise ValueError(f'Irreps: unable to interpret "{item}" as an irrep.')


def _parse_irreps_string(text: str) -> list[MulIrrep]:
    out = []
    if text.strip() == "":
        return out
    for term in text.split("+"):
        try:
            if "x" in term:
                mul_text, ir_text = term.split("x")
                mul = int(mul_text)
                if mul < 0:
                    raise ValueError
            else:
                mul, ir_text = 1, term
            out.append(MulIrrep(mul, Irrep(ir_text)))
        except ValueError:
            raise ValueError(f'Irreps: unable to convert string "{text}" into an Irreps') from None
    return out


class Irreps(tuple):
    """A direct sum of irreps: a tuple of :class:`MulIrrep` (e3nn_jax's ``Irreps``).

    Accepts a string ``"2x0e+1x1o"``, an ``Irrep``, a ``MulIrrep``, another ``Irreps``, ``None``
    (empty), or a list of strings / irreps / ``(mul, ir)`` pairs.

    Example:
        >>> irreps = Irreps("2x0e+1x1o"); irreps, irreps.dim, irreps.num_irreps, irreps.ls
        (2x0e+1x1o, 5, 3, [0, 0, 1])
        >>> Irreps("1o+0e+1o").sort()
        sort(irreps=1x0e+1x1o+1x1o, p=(1, 0, 2), inv=(1, 0, 2))
    """

    def __new__(cls, irreps: Any = None) -> Irreps:
        if isinstance(irreps, Irreps):
            return super().__new__(cls, irreps)
        if irreps is None:
            items = []
        elif isinstance(irreps, Irrep):
            items = [MulIrrep(1, irreps)]
        elif isinstance(irreps, MulIrrep):
            items = [irreps]
        elif isinstance(irreps, str):
            items = _parse_irreps_string(irreps)
        else:
            items = [_mul_irrep(item) for item in irreps]
        return super().__new__(cls, items)

    @staticmethod
    def spherical_harmonics(lmax: int, p: int = -1) -> Irreps:
        """``1x0e+1x1o+1x2e+...`` up to ``lmax`` (parity ``p**l``)."""
        return Irreps([(1, (l, p**l)) for l in range(lmax + 1)])

    def slices(self) -> list[slice]:
        """The slice of the last axis that each entry occupies."""
        out, start = [], 0
        for mul_ir in self:
            out.append(slice(start, start + mul_ir.dim))
            start += mul_ir.dim
        return out

    def __getitem__(self, i: Any) -> Any:
        item = super().__getitem__(i)
        return Irreps(item) if isinstance(i, slice) else item

    def __contains__(self, ir: Any) -> bool:
        ir = Irrep(ir)
        return any(entry == ir for _, entry in self)

    def count(self, ir: Any) -> int:
        """Total multiplicity of ``ir``."""
        ir = Irrep(ir)
        return sum(mul for mul, entry in self if entry == ir)

    def index(self, _object: Any) -> int:
        raise NotImplementedError("Irreps.index is not defined (as in e3nn_jax)")

    def is_scalar(self) -> bool:
        """True when every entry is ``0e``."""
        return {ir for _, ir in self} == {Irrep("0e")}

    def __add__(self, other: Any) -> Irreps:
        return Irreps(tuple(self) + tuple(Irreps(other)))

    def __radd__(self, other: Any) -> Irreps:
        return Irreps(other) + self

    def __mul__(self, factor: int) -> Irreps:
        if isinstance(factor, Irreps):
            raise NotImplementedError("Use e3nn.tensor_product for the product of two Irreps")
        return Irreps([(mul * factor, ir) for mul, ir in self])

    def __rmul__(self, factor: int) -> Irreps:
        return self * factor

    def __floordiv__(self, factor: int) -> Irreps:
        return Irreps([(mul // factor, ir) for mul, ir in self])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = Irreps(other)
            except ValueError:
                return False
        return tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return tuple.__hash__(self)

    def repeat(self, n: int) -> Irreps:
        """The entries repeated ``n`` times."""
        return Irreps(list(self) * n)

    def unify(self) -> Irreps:
        """Merges neighbouring entries of the same irrep."""
        out: list[tuple[int, Irrep]] = []
        for mul, ir in self:
            if out and out[-1][1] == ir:
                out[-1] = (out[-1][0] + mul, ir)
            else:
                out.append((mul, ir))
        return Irreps(out)

    def remove_zero_multiplicities(self) -> Irreps:
        """Drops entries of multiplicity 0."""
        return Irreps([(mul, ir) for mul, ir in self if mul > 0])

    def simplify(self) -> Irreps:
        """Drops zero multiplicities, then merges neighbours (no sorting)."""
        return self.remove_zero_multiplicities().unify()

    def sort(self) -> Any:
        """``(irreps, p, inv)``: the entries sorted by irrep (stable), ``p[i]`` the new position
        of entry ``i`` and ``inv`` its inverse."""
        order = sorted(range(len(self)), key=lambda i: (self[i].ir._order_key(), i, self[i].mul))
        inv = tuple(order)
        p = tuple(inv.index(i) for i in range(len(inv)))
        return _Sort(Irreps([self[i] for i in inv]), p, inv)

    def regroup(self) -> Irreps:
        """``sort`` then ``simplify``."""
        return self.sort().irreps.simplify()

    def set_mul(self, mul: int) -> Irreps:
        """Every multiplicity set to ``mul``."""
        return Irreps([(mul, ir) for _, ir in self])

    def filter(self, keep: Any = None, *, drop: Any = None, lmax: int | None = None) -> Irreps:
        """The entries whose irrep is in ``keep`` (or not in ``drop``, or has ``l <= lmax``);
        ``keep``/``drop`` may be irreps, a list of irreps, or a predicate on ``MulIrrep``."""
        given = [x is not None for x in (keep, drop, lmax)]
        if sum(given) == 0:
            return self
        if sum(given) > 1:
            raise ValueError("Irreps.filter: give only one of keep, drop and lmax")
        if lmax is not None:
            return Irreps([(mul, ir) for mul, ir in self if ir.l <= lmax])
        selector = keep if keep is not None else drop
        wanted = _selection(selector)
        keep_it = (lambda m: wanted(m)) if keep is not None else (lambda m: not wanted(m))
        return Irreps([mul_ir for mul_ir in self if keep_it(mul_ir)])

    @property
    def slice_by_mul(self) -> _IrrepsSlicer:
        """``irreps.slice_by_mul[a:b]``: the irreps of multiplicity positions ``a .. b``."""
        return _IrrepsSlicer(self, "mul")

    @property
    def slice_by_dim(self) -> _IrrepsSlicer:
        """``irreps.slice_by_dim[a:b]``: the irreps of last-axis positions ``a .. b``."""
        return _IrrepsSlicer(self, "dim")

    @property
    def slice_by_chunk(self) -> _IrrepsSlicer:
        """``irreps.slice_by_chunk[a:b]``: entries ``a .. b``."""
        return _IrrepsSlicer(self, "chunk")

    @property
    def dim(self) -> int:
        """Total size of the last axis."""
        return sum(mul * ir.dim for mul, ir in self)

    @property
    def num_irreps(self) -> int:
        """Sum of the multiplicities."""
        return sum(mul for mul, _ in self)

    @property
    def mul_gcd(self) -> int:
        """Greatest common divisor of the multiplicities."""
        return math.gcd(*[mul for mul, _ in self])

    @property
    def ls(self) -> list[int]:
        """Each irrep's ``l``, repeated by its multiplicity."""
        return [ir.l for mul, ir in self for _ in range(mul)]

    @property
    def lmax(self) -> int:
        """The largest ``l``."""
        if len(self) == 0:
            raise ValueError("Irreps.lmax: the Irreps is empty")
        return max(self.ls)

    def D_from_matrix(self, R: Any) -> Any:  # noqa: N802 - e3nn_jax's name
        """The block-diagonal representation matrices ``[..., dim, dim]`` of ``R[..., 3, 3]``.

        Example:
            >>> import fluxion.numpy as jnp
            >>> Irreps("2x0e+1x1o").D_from_matrix(jnp.eye(3)).shape
            (5, 5)
        """
        R = fnp.asarray(R)
        blocks = {ir: ir.D_from_matrix(R) for _, ir in self}
        out = fnp.zeros(R.shape[:-2] + (self.dim, self.dim), R.dtype)
        start = 0
        for mul, ir in self:
            for _ in range(mul):
                out = out.at[..., start:start + ir.dim, start:start + ir.dim].set(blocks[ir])
                start += ir.dim
        return out

    def __repr__(self) -> str:
        if len(self) == 0:
            return "Irreps()"
        return "+".join(str(mul_ir) for mul_ir in self)

    __str__ = __repr__


_Sort = namedtuple("sort", ["irreps", "p", "inv"])


def _selection(selector: Any) -> Callable[[MulIrrep], bool]:
    if isinstance(selector, str):
        selector = Irreps(selector)
    if isinstance(selector, Irrep):
        selector = [selector]
    if isinstance(selector, MulIrrep):
        selector = [selector.ir]
    if callable(selector):
        return selector
    chosen = {Irrep(ir) for ir in selector}
    return lambda mul_ir: mul_ir.ir in chosen


class _IrrepsSlicer:
    def __init__(self, irreps: Irreps, unit: str):
        self.irreps, self.unit = irreps, unit

    def __getitem__(self, index: slice) -> Irreps:
        name = f"Irreps.slice_by_{self.unit}"
        if not isinstance(index, slice):
            raise IndexError(f"{name} only supports slices")
        if self.unit == "chunk":
            return Irreps(self.irreps[index])
        size = self.irreps.num_irreps if self.unit == "mul" else self.irreps.dim
        start, stop, step = index.indices(size)
        if step != 1:
            raise NotImplementedError(f"{name} does not support strides")
        out, pos = [], 0
        for mul, ir in self.irreps:
            width = mul if self.unit == "mul" else mul * ir.dim
            lo, hi = max(start, pos), min(stop, pos + width)
            if lo < hi or (width == 0 and start <= pos and pos + width <= stop):
                taken = hi - lo if width else 0
                if self.unit == "dim":
                    if taken % ir.dim:
                        raise ValueError(f"{name}: {start}:{stop} splits {mul}x{ir} of "
                                         f"{self.irreps} inside an irrep")
                    taken //= ir.dim
                out.append((taken, ir))
            pos += width
        return Irreps(out)


for _cls in (Irrep, MulIrrep, Irreps):
    tree_util.register_pytree_node(_cls, lambda x: ((), x), lambda x, _: x)


IntoIrreps = None | Irrep | MulIrrep | str | Irreps | list

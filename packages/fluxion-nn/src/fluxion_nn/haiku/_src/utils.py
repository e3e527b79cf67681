"""Haiku's small utilities (as ``haiku._src.utils``): ``get_channel_index``, ``replicate``,
``tree_size``/``tree_bytes``, ``format_array``/``format_bytes``, ``indent``."""

from __future__ import annotations

import collections.abc
import decimal
import inspect
import pprint
import re
from typing import Any

import numpy as np

import fluxion.tree_util as tree_util

__all__ = ["get_channel_index", "replicate", "tree_size", "tree_bytes", "format_array",
           "format_bytes", "indent", "simple_dtype", "assert_minimum_rank", "auto_repr",
           "fancy_repr", "compare_or_false"]


def compare_or_false(a: Any, b: Any) -> bool:
    """``bool(a == b)``, False when the comparison raises (arrays, odd types).

    Example: ``compare_or_false(1, 1)``.
    """
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 (any failing comparison counts as different)
        return False


def auto_repr(cls: type, *args: Any, **kwargs: Any) -> str:
    """A ``repr`` of the call ``cls(*args, **kwargs)`` leaving out arguments equal to their
    defaults (Haiku's module repr).

    Example: ``auto_repr(hk.Linear, 3) == "Linear(output_size=3)"``.
    """
    init = inspect.unwrap(cls.__init__)  # a Module's __init__ is wrapped (functools.wraps)
    spec = inspect.getfullargspec(init)
    names = spec.args[1:len(args) + 1]
    names.extend(n for n in spec.args if n in kwargs)
    values = inspect.getcallargs(init, None, *args, **kwargs)
    defaults = spec.defaults or ()
    default_of = dict(zip(spec.args[-len(defaults):], defaults)) if defaults else {}

    def is_default(n: str, v: Any) -> bool:
        return n in default_of and compare_or_false(v, default_of[n])

    items = [(n + "=", values[n]) for n in names if not is_default(n, values[n])]
    items.extend(("", a) for a in args[len(spec.args) - 1:])
    items.extend((n + "=", kwargs[n]) for n in kwargs if n not in spec.args)
    line = cls.__name__ + "({})".format(", ".join(n + repr(v) for n, v in items))
    if len(line) <= 80:
        return line
    return "{}(\n{},\n)".format(cls.__name__,
                                indent(4, ",\n".join(fancy_repr(n, v) for n, v in items)))


def fancy_repr(name: str, value: Any) -> str:
    """``name`` followed by the pretty-printed ``value`` (continuation lines indented).

    Example: ``fancy_repr("x=", 1) == "x=1"``.
    """
    try:
        text = pprint.pformat(value)
    except TypeError:
        text = repr(value)
    if name:
        text = indent(len(name), text).strip()
    return name + text

_SPATIAL_CHANNELS_FIRST = re.compile("^NC[^C]*$")
_SPATIAL_CHANNELS_LAST = re.compile("^N[^C]*C$")
_SEQUENTIAL = re.compile("^((BT)|(TB))[^D]*D$")


def get_channel_index(data_format: str) -> int:
    """``1`` for channels-first formats (``NCHW``, ``channels_first``), ``-1`` for
    channels-last ones (``NHWC``, ``BTHWD``, ``channels_last``).

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> hk.get_channel_index("NHWC"), hk.get_channel_index("NCHW"), hk.get_channel_index("channels_first")
        (-1, 1, 1)
    """
    if data_format == "channels_first":
        return 1
    if data_format == "channels_last":
        return -1
    if _SPATIAL_CHANNELS_FIRST.match(data_format):
        return 1
    if _SPATIAL_CHANNELS_LAST.match(data_format) or _SEQUENTIAL.match(data_format):
        return -1
    raise ValueError(
        f"Unable to extract channel information from {data_format!r}. Valid data formats are "
        "spatial (e.g.`NCHW`), sequential (e.g. `BTHWD`), `channels_first` and "
        "`channels_last`).")


def replicate(element: Any, num_times: int, name: str) -> tuple:
    """``element`` as a tuple of length ``num_times`` (a scalar or a length-1 sequence is
    repeated).

    Example: ``replicate(3, 2, "kernel_shape") == (3, 3)``.
    """
    if isinstance(element, (str, bytes)) or not isinstance(element, collections.abc.Sequence):
        return (element,) * num_times
    if len(element) == 1:
        return tuple(element) * num_times
    if len(element) == num_times:
        return tuple(element)
    raise TypeError(f"{name} must be a scalar or sequence of length 1 or sequence of "
                    f"length {num_times}.")


def assert_minimum_rank(inputs: Any, rank: int) -> None:
    """Raise if ``inputs.ndim < rank``.

    Example: ``assert_minimum_rank(jnp.ones([2, 3]), 2)``.
    """
    if inputs.ndim < rank:
        raise ValueError("Input %r must have rank >= %d" % (inputs, rank))


def tree_size(tree: Any) -> int:
    """The number of elements of all arrays in ``tree``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> params = {"linear": {"w": jnp.ones((3, 4)), "b": jnp.ones(4)}}
        >>> hk.data_structures.tree_size(params)
        16
    """
    return sum(int(np.prod(x.shape)) for x in tree_util.tree_leaves(tree))


def tree_bytes(tree: Any) -> int:
    """The size in bytes of all arrays in ``tree``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> params = {"linear": {"w": jnp.ones((3, 4)), "b": jnp.ones(4, jnp.bfloat16)}}
        >>> hk.data_structures.tree_bytes(params)  # 12 float32 + 4 bfloat16
        56
    """
    return sum(int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize
               for x in tree_util.tree_leaves(tree))


def indent(amount: int, s: str) -> str:
    """Every line of ``s`` indented by ``amount`` spaces.

    Example: ``indent(2, "a\\nb") == "  a\\n  b"``.
    """
    return "\n".join(" " * amount + line for line in s.splitlines())


def simple_dtype(dtype: Any) -> str:
    """A short dtype name: ``f32``, ``s32``, ``u8``, ``bf16``.

    Example: ``simple_dtype(jnp.float32) == "f32"``.
    """
    name = np.dtype(dtype).name if not hasattr(dtype, "name") else dtype.name
    for long, short in (("complex", "c"), ("double", "d"), ("float", "f"), ("uint", "u"),
                        ("int", "s")):
        name = name.replace(long, short)
    return name


def format_array(x: Any) -> str:
    """``dtype[shape]`` of an array, e.g. ``f32[2,3]``.

    Example: ``format_array(jnp.ones([2, 3])) == "f32[2,3]"``.
    """
    return simple_dtype(x.dtype) + "[" + ",".join(map(str, x.shape)) + "]"


def format_bytes(num_bytes: Any) -> str:
    """A byte count with two decimals and a decimal unit (``1.50 KB``).

    Example: ``format_bytes(1500) == "1.50 KB"``.
    """
    suffix = "B"
    suffixes = ["KB", "MB", "GB", "TB"]
    n = decimal.Decimal(num_bytes)
    while suffixes and n >= 1000:
        n /= 1000
        suffix = suffixes.pop(0)
    return f"{n:.2f} {suffix}"

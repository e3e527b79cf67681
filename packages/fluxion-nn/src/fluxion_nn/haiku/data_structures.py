"""``hk.data_structures``: operations on ``{module: {name: value}}`` structures and the
conversions between Haiku's mapping types."""

from ._src.data_structures import to_haiku_dict, to_immutable_dict, to_mutable_dict  # noqa: F401
from ._src.filtering import (  # noqa: F401
    filter,
    is_subset,
    map,
    merge,
    partition,
    partition_n,
    traverse,
)
from ._src.utils import tree_bytes, tree_size  # noqa: F401

__all__ = ["filter", "is_subset", "map", "merge", "partition", "partition_n", "traverse",
           "to_haiku_dict", "to_immutable_dict", "to_mutable_dict", "tree_bytes", "tree_size"]

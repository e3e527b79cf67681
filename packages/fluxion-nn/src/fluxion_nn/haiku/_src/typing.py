"""``haiku._src.typing``: the type aliases Haiku's signatures use."""

from collections.abc import Mapping, MutableMapping
from typing import Any, Callable, Sequence

Initializer = Callable[[Sequence[int], Any], Any]
Params = Mapping[str, Mapping[str, Any]]
MutableParams = MutableMapping[str, MutableMapping[str, Any]]
State = Mapping[str, Mapping[str, Any]]
MutableState = MutableMapping[str, MutableMapping[str, Any]]
PRNGKey = Any

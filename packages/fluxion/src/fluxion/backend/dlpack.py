"""Importing DLPack tensors as Arrays (``fluxion.dlpack``'s backend half).

Host memory is shared without a copy when it is suitably aligned for XLA (64 bytes), and copied
otherwise or when ``copy=True``; the buffer is then held by a Fluxion Array.

Example:
    >>> import numpy as np
    >>> from fluxion.backend.dlpack import import_dlpack
    >>> import_dlpack(np.arange(3.0, dtype=np.float32)).tolist()
    [0.0, 1.0, 2.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion.backend import client as _client
from fluxion.backend import dispatch as _d
from fluxion.backend.array import Array, Spec
from fluxion.backend.sharding_impl import single_device_sharding
from fluxion.core import dtypes as _dtypes
from fluxion.core.avals import ShapedArray

__all__ = ["import_dlpack"]

_CPU, _CUDA, _CUDA_HOST, _ROCM = 1, 2, 3, 10
_PLATFORM = {_CPU: "cpu", _CUDA_HOST: "cpu", _CUDA: "cuda", _ROCM: "rocm"}


def import_dlpack(external: Any, copy: bool | None = None) -> Array:
    """An Array holding the DLPack tensor ``external`` (an object with ``__dlpack__`` and
    ``__dlpack_device__``).

    Host tensors are viewed through NumPy (``np.from_dlpack``: no copy) and placed on the
    default CPU device with XLA's zero-copy host-buffer semantics, so aligned memory is shared;
    ``copy=True`` forces a copy. Tensors on accelerators go through jaxlib's DLPack import on
    their own device."""
    if not (hasattr(external, "__dlpack__") and hasattr(external, "__dlpack_device__")):
        raise TypeError("The array passed to from_dlpack must have __dlpack__ and "
                        "__dlpack_device__ methods.")
    kind, device_id = external.__dlpack_device__()
    platform = _PLATFORM.get(int(kind))
    if platform is None:
        raise TypeError(f"Array passed to from_dlpack is on unsupported device type "
                        f"(DLDeviceType: {kind}, array: {external!r})")
    if platform == "cpu":
        host = external if isinstance(external, np.ndarray) else np.from_dlpack(external)
        device = _client.get_client("cpu").local_devices()[0]
    else:
        cl = _client.get_client(platform)
        device = next((d for d in cl.local_devices()
                       if getattr(d, "local_hardware_id", d.id) == device_id),
                      cl.local_devices()[0])
        host = None
    sharding = single_device_sharding(device)
    if host is not None:
        canon = _dtypes.canonicalize_dtype(host.dtype)
        if canon != host.dtype:  # 64-bit without x64: narrowed here (a copy), as an eager
            # convert of the placed array would run on the default device (a TPU, say)
            host = host.astype(canon)
        dtype = np.dtype(host.dtype)
        spec = Spec(ShapedArray(host.shape, dtype), sharding, False)
        impl = _d._jax.batched_device_put(spec, sharding, [host], [device], False, bool(copy),
                                          enable_x64=True)
    else:
        buf = _d._jax.dlpack_managed_tensor_to_buffer(external.__dlpack__(stream=None), device,
                                                      None, copy, int(kind))
        dtype = np.dtype(buf.dtype)
        spec = Spec(ShapedArray(tuple(buf.shape), dtype), sharding, False)
        impl = _d._jax.ArrayImpl(spec, sharding, [buf], False, True)
    out = _d._wrap(impl, spec)
    canon = _dtypes.canonicalize_dtype(dtype)
    return out if canon == dtype else out.astype(canon)

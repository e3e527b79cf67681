"""What XLA's TPU compiler cannot take in 64 bits, checked on the CPU by lowering for ``tpu``.

Measured on a v5e with jaxlib 0.10.2 (docs/guide/platforms.md, "What differs on a TPU"), in jax
0.10.2 too: any ``convert`` to complex128 (from float64 and from complex64 alike) aborts the
process in the compiler ("Unsupported CVT X{64|128} expansion from c64[2] to c128[2]"), while
``stablehlo.complex`` of two float64 arrays runs there. So Fluxion's TPU rule builds a complex128
from its parts (and runs what jax aborts on). A float64 FFT is rejected by XLA: it is refused
while lowering, with the operation, the dtype and the user's line, before XLA sees it. complex128
add, mul, exp and real run there, so they are not refused."""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion.backend.export import call_module, lower_module
from fluxion.core.avals import ShapedArray
from fluxion.transforms.staging import trace_to_program

ON_TPU = os.environ.get("FLUXION_TEST_PLATFORM", "cpu") == "tpu"


@pytest.fixture(autouse=True)
def x64():
    with fluxion.enable_x64(True):
        yield


def _lower(f, *args, platform="tpu"):
    program, _, _ = trace_to_program(f, args, {})
    return lower_module(program, platform)


def _to_c128(x):
    return x.astype(jnp.complex128)


def _times_1j(x):
    return 1j * x


def _on_cpu(f, arg):
    """``f`` jitted for the CPU (on a TPU run the chip is the default device)."""
    return fluxion.jit(f)(fluxion.device_put(arg, fluxion.local_devices(backend="cpu")[0]))


def _converts_to_c128(text):
    """The module's ``stablehlo.convert`` lines whose result is complex128."""
    return [line for line in text.splitlines()
            if "stablehlo.convert" in line and "complex<f64>>" in line.rsplit("->", 1)[-1]]


@pytest.mark.parametrize("f,arg,what", [
    (jnp.fft.rfft, np.ones(4), "fft (RFFT): float64 values (f64[4])"),
    (jnp.fft.fft, np.ones(4, np.complex128), "fft (FFT): complex128 values (c128[4])"),
    (jnp.fft.irfft, np.ones(3, np.complex128), "fft (IRFFT): complex128 values (c128[3])"),
])
def test_refused_for_the_tpu_with_the_op_dtype_and_line(f, arg, what):
    with pytest.raises(NotImplementedError) as e:
        _lower(f, arg)
    msg = str(e.value)
    assert msg.startswith(what), msg
    assert "not supported on the TPU" in msg
    assert "test_tpu_wide_refusals.py" in msg or "fluxion/numpy/fft" in msg, msg
    _lower(f, arg, platform="cpu")  # the CPU's module is unchanged


SOURCES = {
    "f64": np.array([0.5, -2.25, 1e300, np.nan, -0.0]),
    "c64": np.array([1 + 2j, 3 - 1j, complex(np.inf, -1.5), complex(0, np.nan)], np.complex64),
    "f32": np.array([1.5, -3e38, 1e-45], np.float32),
    "f16": np.array([1.5, -65504], np.float16),
    "bf16": np.array([1.5, -3e38], ml_dtypes.bfloat16),
    "bool": np.array([True, False]),
    "i32": np.array([3, -7, 2**31 - 1], np.int32),
    "i64": np.array([2**62 + 1, -5], np.int64),
    "u8": np.array([7, 255], np.uint8),
}


# 1j * x is complex128 only for float64, integer and bool x (complex64 for 32-bit floats)
@pytest.mark.parametrize("src,f", [(s, _to_c128) for s in sorted(SOURCES)] + [
    (s, _times_1j) for s in ("f64", "bool", "i32", "i64", "u8")])
def test_complex128_from_its_parts_for_the_tpu(src, f):
    # No convert to complex128 reaches XLA's TPU compiler (it aborts the process on one: on a
    # v5e Fluxion's c64 -> c128 did, and float64 -> c128 was refused with NotImplementedError);
    # the module, run on the CPU, gives the CPU module's values bit for bit.
    arg = SOURCES[src]
    text = _lower(f, arg)
    assert _converts_to_c128(text) == [] and "stablehlo.complex" in text
    cpu = _on_cpu(f, arg)
    out, = call_module(text, [ShapedArray(arg.shape, cpu.dtype)], [arg], platforms=("tpu",),
                       check_platform=False)
    assert out.dtype == np.complex128
    np.testing.assert_array_equal(np.asarray(out), np.asarray(cpu))
    assert _converts_to_c128(_lower(f, arg, platform="cpu"))  # the CPU's plain convert


@pytest.mark.parametrize("f,arg", [
    (lambda z: z * z + z, np.ones(2, np.complex128)),       # complex128 arithmetic runs there
    (lambda z: jnp.exp(z).real, np.ones(2, np.complex128)),
    (lambda x: x.astype(jnp.complex64), np.ones(2)),        # a 32-bit complex result
    (lambda z: z.astype(jnp.complex128), np.ones(2, np.complex64)),
    (jnp.fft.rfft, np.ones(4, np.float32)),
    (jnp.fft.fft, np.ones(4, np.complex64)),
])
def test_what_the_tpu_takes_is_lowered(f, arg):
    text = _lower(f, arg)
    assert "func.func public @main" in text


def test_only_the_tpu_rules_differ():
    from fluxion.lax.conversions import convert_element_type_p
    from fluxion.lax.fft import fft_p
    assert "tpu" in convert_element_type_p.platform_lowerings
    assert "tpu" in fft_p.platform_lowerings
    out = _on_cpu(_to_c128, np.ones(2))  # the CPU: converts as before
    assert out.dtype == np.complex128 and np.asarray(out).tolist() == [1 + 0j, 1 + 0j]
    assert list(out.devices())[0].platform == "cpu"


@pytest.mark.tpu
@pytest.mark.parametrize("src", sorted(SOURCES))
def test_complex128_conversions_run_on_the_tpu(src):
    # jax 0.10.2 aborts the process on these conversions on a v5e (session 17's probe)
    arg = SOURCES[src]
    out = fluxion.jit(_to_c128)(arg)
    assert list(out.devices())[0].platform == "tpu"
    np.testing.assert_array_equal(np.asarray(out), np.asarray(_on_cpu(_to_c128, arg)))

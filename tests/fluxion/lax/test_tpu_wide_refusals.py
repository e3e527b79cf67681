"""What XLA's TPU compiler cannot take in 64 bits is refused while lowering for the TPU, with
the operation, the dtype and the user's line, before XLA sees it (checked on the CPU by lowering
for ``tpu``). Measured on a v5e with jaxlib 0.10.2 (docs/guide/platforms.md, "Tenth run"), in
jax 0.10.2 too: a real-to-complex128 conversion aborts the process in the compiler ("Unsupported
CVT X{64|128} expansion"), a float64 FFT is rejected by XLA; complex128 add, mul, exp and real
run there, so they are not refused."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion.backend.export import lower_module
from fluxion.transforms.staging import trace_to_program


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


@pytest.mark.parametrize("f,arg,what", [
    (_to_c128, np.ones(2), "convert_element_type: f64[2] to complex128"),
    (_to_c128, np.ones(3, np.int32), "convert_element_type: i32[3] to complex128"),
    (_times_1j, np.ones(2), "convert_element_type: f64[2] to complex128"),
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


def test_only_the_tpu_rules_refuse():
    from fluxion.lax.conversions import convert_element_type_p
    from fluxion.lax.fft import fft_p
    assert "tpu" in convert_element_type_p.platform_lowerings
    assert "tpu" in fft_p.platform_lowerings
    out = fluxion.jit(_to_c128)(np.ones(2))  # the CPU: converts as before
    assert out.dtype == np.complex128 and np.asarray(out).tolist() == [1 + 0j, 1 + 0j]

"""``fluxion.ffi`` against ``jax.ffi`` in the same process: C++ kernels built with g++ at test time
against ``include_dir()``, registered once (XLA's registry is per process, so both libraries call
the same handler), then called eagerly, under ``jit`` and under ``vmap`` with each
``vmap_method``; the values, the lowered ``stablehlo.custom_call`` (target, API version, layouts,
aliases, the typed attributes of ``mhlo.backend_config``) and the errors are compared with JAX's.
The lowering and error tests need no compiler; the kernel tests skip without g++."""

from __future__ import annotations

import ctypes
import inspect
import os
import re
import shutil
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

F32 = np.float32

KERNELS = r"""
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

// y = x * factor, any shape
static ffi::Error ScaleImpl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y,
                            float factor) {
  for (size_t i = 0; i < x.element_count(); ++i) y->typed_data()[i] = x.typed_data()[i] * factor;
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(Scale, ScaleImpl,
    ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>()
        .Attr<float>("factor"));

// (x + y read cyclically, the number of elements of y): shows the shapes vmap handed over
static ffi::Error AddSizeImpl(ffi::Buffer<ffi::F32> x, ffi::Buffer<ffi::F32> y,
                              ffi::ResultBuffer<ffi::F32> s, ffi::ResultBuffer<ffi::F32> n) {
  size_t m = y.element_count();
  for (size_t i = 0; i < x.element_count(); ++i) {
    s->typed_data()[i] = x.typed_data()[i] + y.typed_data()[i % m];
    n->typed_data()[i] = static_cast<float>(m);
  }
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(AddSize, AddSizeImpl,
    ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Arg<ffi::Buffer<ffi::F32>>()
        .Ret<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>());

// The attributes of each type, written into an f64 vector
static ffi::Error AttrsImpl(ffi::ResultBuffer<ffi::F64> out, int64_t i, double f, float f32,
                            bool b, int8_t i8, uint8_t u8, ffi::Span<const int32_t> arr,
                            std::string_view s, ffi::Dictionary d) {
  double* o = out->typed_data();
  o[0] = static_cast<double>(i);
  o[1] = f;
  o[2] = f32;
  o[3] = b ? 1.0 : 0.0;
  o[4] = i8;
  o[5] = u8;
  double sum = 0;
  for (int32_t v : arr) sum += v;
  o[6] = sum;
  o[7] = static_cast<double>(arr.size());
  o[8] = static_cast<double>(s.size()) + (s.empty() ? 0 : s[0]) / 1000.0;
  auto x = d.get<int64_t>("x");
  o[9] = x.has_value() ? static_cast<double>(*x) : -1.0;
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(Attrs, AttrsImpl,
    ffi::Ffi::Bind().Ret<ffi::Buffer<ffi::F64>>().Attr<int64_t>("i").Attr<double>("f")
        .Attr<float>("f32").Attr<bool>("b").Attr<int8_t>("i8").Attr<uint8_t>("u8")
        .Attr<ffi::Span<const int32_t>>("arr").Attr<std::string_view>("s")
        .Attr<ffi::Dictionary>("d"));

// y = x, counting its calls (the side effect, read with counter_value)
static std::atomic<int64_t> counter{0};
extern "C" int64_t counter_value() { return counter.load(); }
static ffi::Error CountImpl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y) {
  counter.fetch_add(1);
  std::memcpy(y->typed_data(), x.typed_data(), x.element_count() * sizeof(float));
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(Count, CountImpl,
    ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>());

// y = x + 1; last_aliased() says whether y was x's buffer (input_output_aliases)
static std::atomic<int64_t> aliased{-1};
extern "C" int64_t last_aliased() { return aliased.load(); }
static ffi::Error AddOneImpl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y) {
  aliased.store(x.untyped_data() == y->untyped_data() ? 1 : 0);
  for (size_t i = 0; i < x.element_count(); ++i) y->typed_data()[i] = x.typed_data()[i] + 1.0f;
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(AddOne, AddOneImpl,
    ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>());

// A column-major matrix in, row-major out: y[r][c] = x(r, c) + 10 r
using Matrix = ffi::Buffer<ffi::F32, 2>;
using MatrixResult = ffi::ResultBuffer<ffi::F32, 2>;
static ffi::Error ColumnMajorImpl(Matrix x, MatrixResult y) {
  auto dims = x.dimensions();
  int64_t rows = dims[0], cols = dims[1];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      y->typed_data()[r * cols + c] = x.typed_data()[c * rows + r] + 10.0f * r;
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(ColumnMajor, ColumnMajorImpl,
    ffi::Ffi::Bind().Arg<Matrix>().Ret<Matrix>());

// A user type (register_ffi_type) held per executable: made by the instantiate stage, updated
// by the execute stage (a target registered as a dict of stages)
struct Accum {
  static ffi::TypeId id;
  explicit Accum(float s) : start(s) {}
  float start;
  int64_t runs = 0;
};
ffi::TypeId Accum::id = {};
static const ffi::TypeInfo accum_info = ffi::MakeTypeInfo<Accum>();
extern "C" XLA_FFI_TypeId* accum_type_id() { return &Accum::id; }
extern "C" const XLA_FFI_TypeInfo* accum_type_info() { return &accum_info; }

static ffi::ErrorOr<std::unique_ptr<Accum>> AccumMake(float start) {
  return std::make_unique<Accum>(start);
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(AccumInstantiate, AccumMake,
    ffi::Ffi::BindInstantiate().Attr<float>("start"));

// y = x + start + the number of runs of this executable so far (this one included)
static ffi::Error AccumRun(Accum* state, ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y,
                           float start) {
  state->runs += 1;
  for (size_t i = 0; i < x.element_count(); ++i)
    y->typed_data()[i] = x.typed_data()[i] + state->start + static_cast<float>(state->runs);
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(AccumExecute, AccumRun,
    ffi::Ffi::Bind().Ctx<ffi::State<Accum>>().Arg<ffi::Buffer<ffi::F32>>()
        .Ret<ffi::Buffer<ffi::F32>>().Attr<float>("start"));
"""

# target name (registered through fluxion.ffi, seen by jax) -> exported symbol
TARGETS = {"fxt_scale": "Scale", "fxt_add_size": "AddSize", "fxt_attrs": "Attrs",
           "fxt_count": "Count", "fxt_add_one": "AddOne", "fxt_column_major": "ColumnMajor"}


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """The kernels' library, its targets registered once, through fluxion.ffi (and ``Scale``
    once more through jax.ffi as ``fxt_scale_by_jax``)."""
    cxx = shutil.which("g++")
    if cxx is None:
        pytest.skip("no C++ compiler (g++) on PATH: the FFI kernel tests build their kernels "
                    "at test time")
    d = tmp_path_factory.mktemp("ffi_kernels")
    src, lib_path = d / "kernels.cc", d / "libkernels.so"
    src.write_text(KERNELS)
    built = subprocess.run([cxx, "-O1", "-shared", "-fPIC", "-std=c++17", "-w",
                            f"-I{fluxion.ffi.include_dir()}", str(src), "-o", str(lib_path)],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-4000:]
    lib = ctypes.cdll.LoadLibrary(str(lib_path))
    for name, symbol in TARGETS.items():
        fluxion.ffi.register_ffi_target(name, fluxion.ffi.pycapsule(getattr(lib, symbol)),
                                        platform="cpu")
    jax.ffi.register_ffi_target("fxt_scale_by_jax", jax.ffi.pycapsule(lib.Scale))
    lib.counter_value.restype = ctypes.c_int64
    lib.last_aliased.restype = ctypes.c_int64
    _register_accum(fluxion, lib)
    return lib


def _register_accum(fx, lib):
    """The user type and the two-stage target of ``Accum`` (``fx`` is the fluxion module)."""
    lib.accum_type_id.restype = lib.accum_type_info.restype = ctypes.c_void_p
    cap = fx.ffi.pycapsule
    fx.ffi.register_ffi_type("fxt_accum_state", {"type_id": cap(lib.accum_type_id()),
                                                 "type_info": cap(lib.accum_type_info())})
    fx.ffi.register_ffi_target("fxt_accum", {"instantiate": cap(lib.AccumInstantiate),
                                             "execute": cap(lib.AccumExecute)})


def _custom_calls(text: str) -> list[str]:
    """The module's custom-call lines as MLIR prints them, SSA names blanked."""
    return [re.sub(r"%[\w#:]+", "%", line.strip()) for line in text.splitlines()
            if "stablehlo.custom_call" in line]


def _lowered_calls(prog, *args) -> tuple[list[str], list[str]]:
    ours = _custom_calls(str(fluxion.jit(prog(fluxion)).lower(*args).compiler_ir()))
    theirs = _custom_calls(jax.jit(prog(jax)).lower(*args).as_text())
    return ours, theirs


def _error(fn, *args) -> tuple[str, str]:
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - the error itself is compared
        return type(e).__name__, str(e).split("\n")[0]
    return "no error", ""


# ------------------------------------------------------------------ no compiler needed

def test_include_dir_is_jaxlibs_headers():
    assert fluxion.ffi.include_dir() == jax.ffi.include_dir()
    assert os.path.isfile(os.path.join(fluxion.ffi.include_dir(), "xla", "ffi", "api", "ffi.h"))


def test_public_names_are_jaxs():
    theirs = {n for n in dir(jax.ffi) if not n.startswith("_")}
    assert theirs <= set(dir(fluxion.ffi))
    assert sorted(fluxion.ffi.__all__) == sorted(theirs)


def test_pycapsule_and_register_ffi_type_id():
    cap = fluxion.ffi.pycapsule(ctypes.pythonapi.Py_IncRef)
    assert type(cap).__name__ == "PyCapsule"
    assert (_error(fluxion.ffi.register_ffi_type_id, "t", cap)
            == _error(jax.ffi.register_ffi_type_id, "t", cap))


def _scale(lib, vmap_method=None, **kw):
    def f(x):
        return lib.ffi.ffi_call("fxt_scale", lib.ShapeDtypeStruct(x.shape, x.dtype),
                                vmap_method=vmap_method, **kw)(x, factor=F32(2.5))
    return f


ATTRS = dict(
    i=7, big=-(2 ** 40), f=1.5, tiny=1e-5, inf=float("inf"), b=True, nb=np.bool_(False),
    f32=F32(0.25), nan32=F32("nan"), f16=np.float16(1e-5), f64=np.float64(-2.0),
    bf=ml_dtypes.bfloat16(1.5), i8=np.int8(-3), u8=np.uint8(200), u64=np.uint64(2 ** 40),
    i32=np.int32(-7), arr=np.arange(3, dtype=np.int32), mat=np.ones((2, 2), F32),
    barr=np.array([True, False]), zero_d=np.array(7, np.int16), empty=np.zeros(0, F32),
    s='a"b\\c\n\t\u00e9', by=b"\x00\xff", d={"x": 1, "a b": 2.0, "n": (1, "z")},
    t=(1, 2.0, "three"), e=(), dt=np.dtype(np.float32), dt_b=np.dtype(np.bool_))


def _lowering_progs():
    sds = lambda lib, x: lib.ShapeDtypeStruct(x.shape, x.dtype)  # noqa: E731
    return {
        "one_result": _scale,
        "results_list": lambda lib: lambda x: lib.ffi.ffi_call(
            "fxt_add_size", [sds(lib, x)] * 2)(x, x[:1]),
        "results_tuple_f64_scalar": lambda lib: lambda x: lib.ffi.ffi_call(
            "k", (sds(lib, x), lib.ShapeDtypeStruct((), np.float64)))(x, 3.0),
        "attributes_of_each_type": lambda lib: lambda x: lib.ffi.ffi_call(
            "k", sds(lib, x))(x, **ATTRS),
        "side_effect_no_results": lambda lib: lambda x: (lib.ffi.ffi_call(
            "k", (), has_side_effect=True)(x), x)[1],
        "side_effect_and_alias": lambda lib: lambda x: lib.ffi.ffi_call(
            "k", sds(lib, x), has_side_effect=True, input_output_aliases={0: 0})(x),
        "alias_of_second_result": lambda lib: lambda x: lib.ffi.ffi_call(
            "k", [sds(lib, x[0]), sds(lib, x)], input_output_aliases={1: 1})(x[0], x),
        "layouts": lambda lib: lambda x: lib.ffi.ffi_call(
            "k", sds(lib, x), input_layouts=[(1, 0)], output_layouts=(0, 1))(x),
        "layout_objects": lambda lib: lambda x: lib.ffi.ffi_call(
            "k", [sds(lib, x)], input_layouts=[None],
            output_layouts=[_layout(lib, (1, 0))])(x),
        "legacy_api": lambda lib: lambda x: lib.ffi.ffi_call(
            "k", sds(lib, x), custom_call_api_version=2, legacy_backend_config='6 "1.5"\n')(x),
        "legacy_api_no_config": lambda lib: lambda x: lib.ffi.ffi_call(
            "k", sds(lib, x), custom_call_api_version=1)(x),
    }


def _layout(lib, major_to_minor):
    if lib is jax:
        from jax.experimental.layout import Layout
    else:
        from fluxion.experimental.layout import Layout
    return Layout(major_to_minor)


@pytest.mark.parametrize("name", sorted(_lowering_progs()))
def test_lowered_custom_call_matches_jax(name):
    x = np.arange(6, dtype=F32).reshape(2, 3)
    ours, theirs = _lowered_calls(_lowering_progs()[name], x)
    assert ours and ours == theirs


def test_attribute_typing_text():
    ours, theirs = _lowered_calls(_lowering_progs()["attributes_of_each_type"], np.ones(2, F32))
    for piece in ["i = 7 : i64", "f = 1.500000e+00 : f64", "b = true", "i8 = -3 : i8",
                  "u8 = 200 : ui8", "bf = 1.500000e+00 : bf16", "dt = f32",
                  "arr = dense<[0, 1, 2]> : tensor<3xi32>", "zero_d = dense<7> : tensor<i16>"]:
        assert piece in ours[0] and piece in theirs[0], piece


@pytest.mark.parametrize("method", ["sequential", "sequential_unrolled", "expand_dims",
                                    "broadcast_all", "legacy_vectorized"])
def test_vmap_lowering_matches_jax(method):
    def prog(lib):
        def f(x, y):
            return lib.ffi.ffi_call("fxt_add_size", [lib.ShapeDtypeStruct(x.shape, x.dtype)] * 2,
                                    vmap_method=method, input_layouts=[None, (0,)],
                                    output_layouts=[(0,), None])(x, y)
        return lambda x, y: lib.vmap(f, in_axes=(1, None))(x, y)
    x, y = np.ones((3, 4), F32), np.ones(3, F32)
    ours, theirs = _lowered_calls(prog, x, y)
    # (jax calls one outlined function per unrolled iteration; Fluxion inlines the four calls)
    assert ours and set(ours) == set(theirs)
    assert len(ours) == (4 if method == "sequential_unrolled" else 1)

    def nested(lib):  # a second vmap: the layouts gain a second batch dimension
        return lambda x, y: lib.vmap(prog(lib), in_axes=(0, 0))(x, y)
    ours, theirs = _lowered_calls(nested, np.ones((2, 3, 4), F32), np.ones((2, 3), F32))
    assert ours and set(ours) == set(theirs)


def test_jaxpr_prints_as_jaxs():
    x = np.ones(3, F32)
    assert str(fluxion.make_jaxpr(_scale(fluxion))(x)) == str(jax.make_jaxpr(_scale(jax))(x))


def test_side_effecting_call_in_a_jaxpr_as_jaxs():
    # one primitive, ffi_call, whose equation carries jax's FfiEffect when has_side_effect=True
    def prog(lib, side_effect):
        def f(x):
            y = lib.ffi.ffi_call("k", lib.ShapeDtypeStruct(x.shape, x.dtype),
                                 has_side_effect=side_effect)(x, a=np.int32(3))
            lib.ffi.ffi_call("k2", (), has_side_effect=side_effect)(x)  # unused: kept or dropped
            return y
        return f
    x = np.ones(3, F32)
    for side_effect in (False, True):
        ours = fluxion.make_jaxpr(prog(fluxion, side_effect))(x)
        theirs = jax.make_jaxpr(prog(jax, side_effect))(x)
        assert str(ours) == str(theirs)
        assert repr(ours.effects) == repr(theirs.effects) == ("{FfiEffect()}" if side_effect
                                                                  else "set()")
        assert repr(ours.jaxpr.effects) == repr(theirs.jaxpr.effects)
        assert [repr(e.effects) for e in ours.eqns] == [repr(e.effects) for e in theirs.eqns]
        assert [e.primitive.name for e in ours.eqns] == [e.primitive.name for e in theirs.eqns]
        # under jit the outer equation carries the effects of its program, as jax's
        ours = fluxion.make_jaxpr(fluxion.jit(prog(fluxion, side_effect)))(x)
        theirs = jax.make_jaxpr(jax.jit(prog(jax, side_effect)))(x)
        assert repr(ours.eqns[0].effects) == repr(theirs.eqns[0].effects)
        assert repr(ours.effects) == repr(theirs.effects)


def _errors_progs():
    sds = lambda lib, x: lib.ShapeDtypeStruct(x.shape, x.dtype)  # noqa: E731
    call = lambda lib, x, **kw: lib.ffi.ffi_call("k", sds(lib, x), **kw)  # noqa: E731
    return {
        "object_attribute": lambda lib: lambda x: call(lib, x)(x, a=object()),
        "complex_attribute": lambda lib: lambda x: call(lib, x)(x, a=1 + 2j),
        "complex64_attribute": lambda lib: lambda x: call(lib, x)(x, a=np.complex64(1)),
        "list_attribute": lambda lib: lambda x: call(lib, x)(x, a=[1, 2]),
        "attributes_need_api_4": lambda lib: lambda x: call(
            lib, x, custom_call_api_version=2)(x, a=1),
        "legacy_config_needs_api_below_4": lambda lib: lambda x: call(
            lib, x, legacy_backend_config="c")(x),
        "bad_vmap_method": lambda lib: lambda x: call(lib, x, vmap_method="loop")(x),
        "vmap_method_none": lambda lib: lib.vmap(lambda x: call(lib, x)(x)),
        "vmap_method_none_side_effect": lambda lib: lib.vmap(
            lambda x: call(lib, x, has_side_effect=True)(x)),
        "grad": lambda lib: lib.grad(lambda x: call(lib, x)(x).sum()),
        "jvp": lambda lib: lambda x: lib.jvp(lambda x: call(lib, x)(x), (x,), (x,)),
        "result_without_dtype": lambda lib: lambda x: lib.ffi.ffi_call("k", [(2,)])(x),
        "input_layout_count": lambda lib: lambda x: call(lib, x, input_layouts=[None] * 2)(x),
        "output_layout_count": lambda lib: lambda x: lib.ffi.ffi_call(
            "k", [sds(lib, x)], output_layouts=[])(x),
        "tiled_layout": lambda lib: lambda x: call(
            lib, x, input_layouts=[_tiled(lib)])(x),
        "alias_input_range": lambda lib: lambda x: call(lib, x, input_output_aliases={1: 0})(x),
        "alias_output_range": lambda lib: lambda x: call(lib, x, input_output_aliases={0: 2})(x),
        "alias_type": lambda lib: lambda x: call(lib, x, input_output_aliases={0: 0})(x[0]),
        "alias_layout": lambda lib: lambda x: call(
            lib, x, input_output_aliases={0: 0}, input_layouts=[(1, 0)])(x),
    }


def _tiled(lib):
    if lib is jax:
        from jax.experimental.layout import Layout
    else:
        from fluxion.experimental.layout import Layout
    return Layout((0, 1), tiling=((8, 128),))


@pytest.mark.parametrize("name", sorted(_errors_progs()))
def test_errors_match_jax(name):
    x = np.ones((2, 2), F32)
    prog = _errors_progs()[name]
    ours = _error(lambda: fluxion.jit(prog(fluxion))(x))
    theirs = _error(lambda: jax.jit(prog(jax))(x))
    assert ours[0] != "no error"
    assert ours == theirs


# ------------------------------------------------------------------ kernels (g++)

@pytest.mark.parametrize("jit", [False, True])
def test_values_match_jax(kernels, jit):
    x = np.arange(6, dtype=F32).reshape(2, 3)
    wrap = (lambda lib, f: lib.jit(f)) if jit else (lambda lib, f: f)
    ours, theirs = wrap(fluxion, _scale(fluxion))(x), wrap(jax, _scale(jax))(x)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    np.testing.assert_array_equal(np.asarray(ours), x * 2.5)

    def pair(lib, results):
        return lambda a, b: lib.ffi.ffi_call("fxt_add_size", results(lib, a))(a, b)
    for results in (lambda lib, a: [lib.ShapeDtypeStruct(a.shape, a.dtype)] * 2,
                    lambda lib, a: (lib.ShapeDtypeStruct(a.shape, a.dtype),) * 2):
        y = np.array([10, 20, 30], F32)
        ours = wrap(fluxion, pair(fluxion, results))(x, y)
        theirs = wrap(jax, pair(jax, results))(x, y)
        assert type(ours) is type(theirs)
        for o, t in zip(ours, theirs):
            np.testing.assert_array_equal(np.asarray(o), np.asarray(t))


def test_target_registered_by_jax_is_seen(kernels):
    x = np.arange(4, dtype=F32)
    f = fluxion.ffi.ffi_call("fxt_scale_by_jax", fluxion.ShapeDtypeStruct(x.shape, x.dtype))
    np.testing.assert_array_equal(np.asarray(fluxion.jit(lambda x: f(x, factor=F32(3)))(x)),
                                  x * 3)


@pytest.mark.parametrize("method", ["sequential", "sequential_unrolled", "expand_dims",
                                    "broadcast_all"])
def test_vmap_methods_match_jax(kernels, method):
    def prog(lib):
        def f(a, b):
            return lib.ffi.ffi_call("fxt_add_size", [lib.ShapeDtypeStruct(a.shape, a.dtype)] * 2,
                                    vmap_method=method)(a, b)
        return lib.vmap(f, in_axes=(1, None))
    x, y = np.arange(12, dtype=F32).reshape(3, 4), np.array([10, 20, 30], F32)
    ours, theirs = prog(fluxion)(x, y), prog(jax)(x, y)
    for o, t in zip(ours, theirs):
        assert o.shape == t.shape == (4, 3)
        np.testing.assert_array_equal(np.asarray(o), np.asarray(t))
    # the kernel saw y whole (sequential, expand_dims) or broadcast to the batch (broadcast_all)
    assert float(ours[1][0, 0]) == (12.0 if method == "broadcast_all" else 3.0)
    np.testing.assert_array_equal(np.asarray(ours[0]), x.T + y)
    jitted = fluxion.jit(prog(fluxion))(x, y)
    np.testing.assert_array_equal(np.asarray(jitted[0]), np.asarray(theirs[0]))


@pytest.mark.parametrize("jit", [False, True])
def test_attributes_reach_the_kernel(kernels, jit):
    def prog(lib):
        def f():
            return lib.ffi.ffi_call("fxt_attrs", lib.ShapeDtypeStruct((10,), np.float64))(
                i=-(2 ** 40), f=1.5, f32=F32(0.25), b=True, i8=np.int8(-3), u8=np.uint8(200),
                arr=np.array([1, 2, 3], np.int32), s="hello", d={"x": 42, "y": "z"})
        return lib.jit(f) if jit else f
    ours, theirs = prog(fluxion)(), prog(jax)()
    assert ours.dtype == theirs.dtype  # f64 results even without x64, as in JAX
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    np.testing.assert_array_equal(np.asarray(ours),
                                  [-(2 ** 40), 1.5, 0.25, 1, -3, 200, 6, 3, 5.104, 42])


@pytest.mark.parametrize("side_effect", [False, True])
def test_side_effect_keeps_an_unused_call(kernels, side_effect):
    def prog(lib):
        def f(x):
            lib.ffi.ffi_call("fxt_count", lib.ShapeDtypeStruct(x.shape, x.dtype),
                             has_side_effect=side_effect)(x)
            return x * 2
        return lib.jit(f)
    x = np.ones(3, F32)
    counts = []
    for lib in (fluxion, jax):
        before = kernels.counter_value()
        prog(lib)(x).block_until_ready()
        counts.append(kernels.counter_value() - before)
    assert counts == [int(side_effect)] * 2
    before = kernels.counter_value()
    for _ in range(2):  # eagerly: one run per call
        fluxion.ffi.ffi_call("fxt_count", fluxion.ShapeDtypeStruct(x.shape, x.dtype),
                             has_side_effect=side_effect)(x).block_until_ready()
    assert kernels.counter_value() - before == 2


@pytest.mark.parametrize("donate", [False, True])
def test_input_output_aliases(kernels, donate):
    def prog(lib):
        f = lambda x: lib.ffi.ffi_call(  # noqa: E731
            "fxt_add_one", lib.ShapeDtypeStruct(x.shape, x.dtype), input_output_aliases={0: 0})(x)
        return lib.jit(f, donate_argnums=0 if donate else ())
    x = np.arange(6, dtype=F32).reshape(2, 3)
    for lib, asarray in ((fluxion, fnp.asarray), (jax, jnp.asarray)):
        out = prog(lib)(asarray(x))
        np.testing.assert_array_equal(np.asarray(out), x + 1)
        assert kernels.last_aliased() == 1  # the kernel wrote into its operand's buffer


def test_column_major_input_layout(kernels):
    def prog(lib):
        return lib.jit(lambda x: lib.ffi.ffi_call(
            "fxt_column_major", lib.ShapeDtypeStruct(x.shape, x.dtype),
            input_layouts=[(1, 0)])(x))
    x = np.arange(6, dtype=F32).reshape(2, 3)
    ours, theirs = prog(fluxion)(x), prog(jax)(x)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    np.testing.assert_array_equal(np.asarray(ours), x + 10 * np.arange(2, dtype=F32)[:, None])


@pytest.mark.parametrize("jit", [False, True])
def test_unknown_target_errors_as_jax(jit):
    def prog(lib):
        f = lambda x: lib.ffi.ffi_call(  # noqa: E731
            "fxt_no_such_target", lib.ShapeDtypeStruct(x.shape, x.dtype))(x)
        return lib.jit(f) if jit else f
    x = np.ones(3, F32)
    ours, theirs = _error(prog(fluxion), x), _error(prog(jax), x)
    assert ours == theirs
    assert "No FFI handler registered for fxt_no_such_target" in ours[1]


def test_side_effect_in_control_flow_matches_jax(kernels):
    def progs(lib):
        def count(x):
            return lib.ffi.ffi_call("fxt_count", lib.ShapeDtypeStruct(x.shape, x.dtype),
                                    has_side_effect=True)(x)

        def body(carry, _):
            count(carry)
            return carry + 1, ()
        return {
            "scan": lambda x: lib.lax.scan(body, x, None, length=3)[0],
            "cond": lambda x: lib.lax.cond(x[0] > 0, lambda x: (count(x), x)[1], lambda x: x, x),
            "while": lambda x: lib.lax.while_loop(lambda c: c[0] < 4,
                                                  lambda c: (count(c), c + 1)[1], x),
            "checkpoint": lib.checkpoint(lambda x: (count(x), x * 2)[1]),
        }
    x = np.ones(3, F32)
    for name in progs(fluxion):
        counts = []
        for lib in (fluxion, jax):
            before = kernels.counter_value()
            np.asarray(lib.jit(progs(lib)[name])(x))
            counts.append(kernels.counter_value() - before)
        assert counts[0] == counts[1] > 0, (name, counts)


def test_export_refuses_unregistered_custom_calls_as_jax(kernels):
    x = np.ones(3, F32)
    f = fluxion.jit(_scale(fluxion))
    with pytest.raises(ValueError, match="custom calls whose targets have no compatibility"):
        fluxion.export.export(f)(x)
    with pytest.raises(ValueError, match="custom calls whose targets have no compatibility"):
        jax.export.export(jax.jit(_scale(jax)))(x)
    ok = fluxion.export.export(f, disabled_checks=[
        fluxion.export.DisabledSafetyCheck.custom_call("fxt_scale")])(x)
    np.testing.assert_array_equal(np.asarray(ok.call(x)), x * 2.5)
    again = fluxion.export.deserialize(ok.serialize())
    np.testing.assert_array_equal(np.asarray(again.call(x)), x * 2.5)


def test_ffi_lowering_of_a_library_primitive(kernels):
    from fluxion.extend.core import Primitive
    from fluxion.interpreters.mlir import register_lowering

    scale_p = Primitive("test_ffi_scale")
    scale_p.def_abstract_eval(lambda x, **params: x)
    register_lowering(scale_p, fluxion.ffi.ffi_lowering("fxt_scale"), platform="cpu")
    x = np.arange(4, dtype=F32)
    def scale(x):
        return scale_p.bind(x, factor=F32(-2))
    for run in (scale, fluxion.jit(scale)):  # eagerly, the primitive is compiled alone
        np.testing.assert_array_equal(np.asarray(run(x)), x * -2)

    emit = fluxion.ffi.build_ffi_lowering_function("fxt_add_size")
    pair_p = Primitive("test_ffi_pair", multiple_results=True)
    pair_p.def_abstract_eval(lambda x, y: [x, x])
    register_lowering(pair_p, lambda ctx, *args: emit(ctx, *args).results, platform="cpu")
    s, n = fluxion.jit(pair_p.bind)(x, np.ones(2, F32))
    np.testing.assert_array_equal(np.asarray(s), x + 1)
    np.testing.assert_array_equal(np.asarray(n), np.full(4, 2, F32))


def test_results_are_replicated_on_an_explicit_mesh_as_jax():
    # JAX types the results on the current mesh with an empty spec, whatever the operands'
    n = min(fluxion.device_count(), jax.device_count())
    if n < 2:
        pytest.skip("needs 2 CPU devices (tests/conftest.py asks XLA for 8)")
    x = np.arange(2 * n, dtype=F32)
    for lib in (fluxion, jax):
        mesh = lib.make_mesh((n,), ("i",), axis_types=(lib.sharding.AxisType.Explicit,))
        xs = lib.device_put(x, lib.NamedSharding(mesh, lib.P("i")))
        types = []

        def f(x, lib=lib, types=types):
            y = _scale(lib)(x)
            types.append((str(lib.typeof(x)), str(lib.typeof(y))))
            return y
        with lib.set_mesh(mesh):
            lib.jit(f).trace(xs)
        assert types == [(f"float32[{2 * n}@i]", f"float32[{2 * n}]")], lib.__name__


def test_derivatives_around_a_call_match_jax(kernels):
    # grad through other arguments and through stop_gradient needs no rule of ffi_call; a
    # custom_jvp around the call (what the error message advises) gives the derivative
    x = np.arange(1, 4, dtype=F32)

    def progs(lib):
        def f(a, b):
            return (_scale(lib)(b) * a).sum()

        @lib.custom_jvp
        def scaled(v):
            return _scale(lib, "expand_dims")(v)

        @scaled.defjvp
        def scaled_jvp(primals, tangents):
            return scaled(primals[0]), 2.5 * tangents[0]
        return [lib.grad(f), lib.jit(lib.grad(f)),
                lib.grad(lambda a, b: f(a, lib.lax.stop_gradient(b)), argnums=(0, 1)),
                lib.grad(lambda v: (scaled(v) ** 2).sum()),
                lib.jit(lib.vmap(lib.grad(lambda v: (scaled(v) ** 2).sum())))]
    args = [(x, x), (x, x), (x, x), (x,), (np.stack([x, 2 * x]),)]
    for ours, theirs, a in zip(progs(fluxion), progs(jax), args):
        for o, t in zip(*(np.atleast_2d(np.asarray(r)) for r in (ours(*a), theirs(*a)))):
            np.testing.assert_allclose(o, t, rtol=1e-6)


def _accum(lib):
    return lambda x: lib.ffi.ffi_call("fxt_accum", lib.ShapeDtypeStruct(x.shape, x.dtype))(
        x, start=F32(10))


def test_user_type_state_and_handler_stages_match_jax(kernels):
    # register_ffi_type + a target given as {"instantiate": ..., "execute": ...}: the state
    # lives as long as the executable, so each run of one executable counts on
    x = np.zeros(2, F32)
    for wrap in (lambda lib, f: lib.jit(f), lambda lib, f: f):
        runs = [[float(np.asarray(f(x))[0]) for _ in range(3)]
                for f in (wrap(fluxion, _accum(fluxion)), wrap(jax, _accum(jax)))]
        assert runs[0] == runs[1] == [11.0, 12.0, 13.0]


def test_type_and_handler_registered_before_any_client(kernels):
    # Both kept by jaxlib until its CPU client exists, they must still reach XLA type first
    # (jax 0.10.2 fails here: "Types used by FFI handlers must be registered before the
    # handler registration"); in a fresh process, before any computation
    code = "\n".join([
        "import ctypes, numpy as np, fluxion",
        inspect.getsource(_register_accum), inspect.getsource(_accum), "F32 = np.float32",
        f"lib = ctypes.cdll.LoadLibrary({kernels._name!r})",
        "_register_accum(fluxion, lib)",
        "print(np.asarray(fluxion.jit(_accum(fluxion))(np.zeros(2, np.float32))))"])
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["[11.", "11.]"]


def test_shard_map_matches_jax(kernels):
    n = min(fluxion.device_count(), jax.device_count(), 4)
    if n < 2:
        pytest.skip("needs 2 CPU devices (tests/conftest.py asks XLA for 8)")
    x, y = np.arange(4 * n, dtype=F32).reshape(n, 4), np.ones(4, F32)
    outs = []
    for lib in (fluxion, jax):
        mesh = lib.make_mesh((n,), ("i",), axis_types=(lib.sharding.AxisType.Auto,))

        def body(a, b, lib=lib):  # each device calls the kernel on its block
            return lib.ffi.ffi_call("fxt_add_size", [lib.ShapeDtypeStruct(a.shape, a.dtype)] * 2)(
                a, b)
        f = lib.shard_map(body, mesh=mesh, in_specs=(lib.P("i"), lib.P()),
                          out_specs=[lib.P("i"), lib.P("i")])
        outs.append([np.asarray(o) for o in lib.jit(f)(x, y)])
    for o, t in zip(*outs):
        np.testing.assert_array_equal(o, t)
    np.testing.assert_array_equal(outs[0][0], x + 1)
    np.testing.assert_array_equal(outs[0][1], np.full((n, 4), 4, F32))  # y whole on each device

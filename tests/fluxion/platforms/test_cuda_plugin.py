"""Finding and registering the CUDA PJRT plugin (backend/plugins.py), checked without a GPU.

A stand-in kernels package (``jax_cuda13_plugin`` / ``jax_cuda12_plugin`` with the module names
and ``registrations()`` tables of the real wheels, each value a marker object) goes on
``sys.path``; jaxlib's own ``gpu_solver``/``gpu_linalg``/``gpu_sparse``/``gpu_prng`` read the same
package, so the targets, API versions and batch-partitionable names Fluxion registers are
compared with what jax 0.10.2 registers for them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

_TABLES = {
    "_solver": ["cusolver_getrf_ffi", "cusolver_potrf_ffi", "cusolver_syevd_ffi",
                "cusolver_gesvdj_ffi", "cusolver_sytrd_ffi", "cusolver_legacy"],
    "_hybrid": ["cuhybrid_eig_real", "cuhybrid_eig_comp"],
    "_linalg": ["cu_lu_pivots_to_permutation", "cu_cholesky_update_ffi"],
    "_prng": ["cu_threefry2x32_ffi"],
    "_sparse": ["cusparse_gtsv2_ffi", "cusparse_csr_matvec_ffi", "cusparse_legacy"],
}


def _make_plugin(root: str, generation: int) -> None:
    pjrt = os.path.join(root, "jax_plugins", f"xla_cuda{generation}")
    os.makedirs(pjrt)
    open(os.path.join(pjrt, "xla_cuda_plugin.so"), "wb").close()
    pkg = os.path.join(root, f"jax_cuda{generation}_plugin")
    os.makedirs(pkg)
    open(os.path.join(pkg, "__init__.py"), "w").close()
    with open(os.path.join(pkg, "version.py"), "w") as f:
        f.write('__version__ = "0.10.2"\n')
    for mod, names in {**_TABLES, "cuda_plugin_extension": []}.items():
        with open(os.path.join(pkg, f"{mod}.py"), "w") as f:
            f.write(f"def registrations():\n    return {{n: 'capsule:' + n for n in {names!r}}}\n"
                    "initialized = []\n"
                    "def initialize():\n    initialized.append(True)\n"
                    "def ffi_handlers():\n    return {'xla_ffi_python_gpu_callback': 'cb'}\n"
                    "def ffi_types():\n    return {'state': 't'}\n"
                    "def register_custom_call_target(*a):\n    pass\n"
                    "def register_custom_type(*a):\n    pass\n")


_PROBE = textwrap.dedent("""
    import importlib, json, sys
    from fluxion.backend import plugins
    print("PATH", json.dumps([plugins.cuda_plugin_path(), plugins.available()]))

    class Recorder:
        def __init__(self):
            self.targets, self.partitionable, self.types = [], [], []
        def register_custom_call_target(self, name, fn, platform, api_version=0):
            self.targets.append([name, platform, api_version])
        def register_custom_call_as_batch_partitionable(self, name):
            self.partitionable.append(name)
        def register_custom_type(self, name, fn, platform):
            self.types.append([name, platform])
        def register_custom_type_handler(self, platform, fn):
            pass
        def register_custom_call_handler(self, platform, fn):
            pass

    rec = Recorder()
    kernels = plugins._cuda_plugin()[1]
    plugins._register_cuda_targets(rec, object(), kernels)
    hybrid = importlib.import_module(kernels + "._hybrid")
    ours = {"targets": sorted(rec.targets), "partitionable": sorted(rec.partitionable),
            "types": rec.types, "hybrid_initialized": bool(hybrid.initialized)}

    from jaxlib import gpu_linalg, gpu_prng, gpu_solver, gpu_sparse  # the reference's rules
    want_t, want_p = [], []
    for m in (gpu_linalg, gpu_solver, gpu_sparse, gpu_prng):
        for name, _, api in m.registrations()["CUDA"]:
            want_t.append([name, "CUDA", api])
        want_p += getattr(m, "batch_partitionable_targets", list)()
    want_t.append(["xla_ffi_python_gpu_callback", "CUDA", 1])  # the plugin's ffi_handlers
    print("RESULT", json.dumps({"ours": ours, "targets": sorted(want_t),
                                "partitionable": sorted(want_p)}))
""")


def _run(path: str) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([path, os.environ.get("PYTHONPATH", "")]),
               JAX_PLATFORMS="cpu")
    env.pop("FLUXION_DISABLE_PLUGINS", None)
    r = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    out = {}
    for line in r.stdout.splitlines():
        key, _, rest = line.partition(" ")
        out[key] = json.loads(rest)
    return out


@pytest.mark.parametrize("generations", [(13,), (12,), (12, 13)], ids=["cuda13", "cuda12", "both"])
def test_cuda_plugin_is_found_and_registered_as_jax_registers_it(tmp_path, generations) -> None:
    for g in generations:
        _make_plugin(str(tmp_path), g)
    out = _run(str(tmp_path))
    path, available = out["PATH"]
    newest = max(generations)
    assert path == str(tmp_path / "jax_plugins" / f"xla_cuda{newest}" / "xla_cuda_plugin.so")
    assert "cuda" in available
    res = out["RESULT"]
    assert res["ours"]["targets"] == res["targets"]
    assert res["ours"]["partitionable"] == res["partitionable"]
    assert res["ours"]["types"] == [["state", "CUDA"]]
    assert res["ours"]["hybrid_initialized"]
    # what the rules give on these tables: the hybrid and LU-pivot kernels are FFI (version 1)
    # without the suffix; the legacy solver/sparse kernels are version 0
    versions = {n: v for n, _, v in res["targets"]}
    assert versions["cuhybrid_eig_real"] == 1 and versions["cu_lu_pivots_to_permutation"] == 1
    assert versions["cusolver_legacy"] == 0 and versions["cusparse_legacy"] == 0

"""``import fluxion, fluxion.numpy`` stays cheap: the rarely used families load on first access.

``fluxion``, ``fluxion.numpy``, ``fluxion.lax`` and ``fluxion.random`` import some of their
modules only when one of their names is first used (a module ``__getattr__``, PEP 562). These
tests run in fresh interpreters (the test process has imported everything already) and check
both halves of that contract: the heavy modules stay out of ``sys.modules`` after the import, and
every public name still resolves, to the very object its defining module holds, and is listed by
``dir()``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

# Modules a plain ``import fluxion, fluxion.numpy`` must not load (each is loaded on first use).
HEAVY = [
    # the XLA runtime and the backend (loaded by the first eager operation)
    "jax", "jaxlib", "fluxion.backend.dispatch", "fluxion.backend.jit", "fluxion.backend.lowering",
    # lax families off the numpy path
    "fluxion.lax.control_flow", "fluxion.lax.control_flow.loops", "fluxion.lax.convolution",
    "fluxion.lax.special", "fluxion.lax.special_zeta_beta", "fluxion.lax.parallel",
    "fluxion.lax.parallel_spmd", "fluxion.lax.linalg", "fluxion.lax.windowed",
    "fluxion.lax.cumulative", "fluxion.lax.sorting", "fluxion.lax.rng", "fluxion.lax.patches",
    # numpy families and submodules
    "fluxion.numpy.linalg", "fluxion.numpy.fft", "fluxion.numpy.polynomial",
    "fluxion.numpy.histograms", "fluxion.numpy.windows", "fluxion.numpy.interpolation",
    "fluxion.numpy.nanfunctions", "fluxion.numpy.quantiles", "fluxion.numpy.padding",
    "fluxion.numpy.ufunc_objects", "fluxion.numpy.dtype_utils", "fluxion.numpy.array_api_info",
    "fluxion.numpy.grids", "fluxion.numpy.calculus",
    # the rest of the package
    "fluxion.transforms.custom_derivatives", "fluxion.jacobians", "fluxion.transforms.remat",
    "fluxion.random", "fluxion.nn", "fluxion.sharding", "fluxion.shmap", "fluxion.pmapping",
    "fluxion.distributed", "fluxion.debug", "fluxion.experimental", "fluxion.export",
    # standard library modules only error paths need
    "difflib",
]

LAZY_PACKAGES = ["fluxion", "fluxion.numpy", "fluxion.lax", "fluxion.random"]


def _run(code: str) -> str:
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_plain_import_loads_no_heavy_module() -> None:
    out = _run(f"""
        import sys
        import fluxion, fluxion.numpy
        print(sorted(m for m in {HEAVY!r} if m in sys.modules))
    """)
    assert out.strip() == "[]", f"loaded by `import fluxion, fluxion.numpy`: {out}"


def test_every_public_name_resolves_and_is_listed() -> None:
    out = _run(f"""
        import importlib, sys
        import fluxion
        packages = {LAZY_PACKAGES!r}
        mods = [importlib.import_module(p) for p in packages]
        # dir() lists every public name before any lazy family is loaded
        for p, m in zip(packages, mods):
            missing = sorted(set(m.__all__) - set(dir(m)))
            assert not missing, (p, "dir() lacks", missing)
        assert "fluxion.numpy.polynomial" not in sys.modules
        for p, m in zip(packages, mods):
            for name in m.__all__:
                assert hasattr(m, name), (p, name)
                obj = getattr(m, name)
                # the object its own module defines, not a stand-in
                owner = getattr(obj, "__module__", None)
                if callable(obj) and isinstance(owner, str) and owner.startswith("fluxion"):
                    src = sys.modules.get(owner)
                    if src is not None and hasattr(src, name):
                        assert getattr(src, name) is obj, (p, name, owner)
            print(p, len(m.__all__))
        for p, m in zip(packages, mods):
            try:
                getattr(m, "no_such_name")
            except AttributeError as e:
                assert "no_such_name" in str(e)
            else:
                raise AssertionError(p)
    """)
    checked = dict(line.split() for line in out.strip().splitlines())
    assert list(checked) == LAZY_PACKAGES and all(int(n) > 0 for n in checked.values()), out


def test_star_import_and_submodules_resolve() -> None:
    out = _run("""
        import fluxion
        import fluxion.numpy as jnp
        from fluxion import lax
        ns = {}
        exec("from fluxion.numpy import *", ns)
        missing = sorted(set(jnp.__all__) - set(ns))
        assert not missing, missing
        ns = {}
        exec("from fluxion.lax import *", ns)
        assert set(lax.__all__) <= set(ns)
        # names that are also submodule names stay the functions, even after the submodule loads
        import fluxion.lax.fft, fluxion.lax.dot, fluxion.numpy.vectorize, fluxion.numpy.einsum
        assert callable(lax.fft) and lax.fft.__module__ == "fluxion.lax.fft"
        assert callable(lax.dot) and lax.dot.__module__ == "fluxion.lax.dot"
        assert type(jnp.vectorize).__name__ == "function" and type(jnp.einsum).__name__ == "function"
        # submodules on attribute access
        assert jnp.fft.fft.__module__ == "fluxion.numpy.fft"
        assert jnp.linalg.inv.__module__.startswith("fluxion.numpy.linalg")
        assert lax.linalg.cholesky.__module__.startswith("fluxion.lax.linalg")
        assert lax.control_flow.fori_loop is lax.fori_loop
        assert jnp.polynomial.polyval is jnp.polyval
        assert jnp.bool is jnp.bool_
        # a family imported directly first still resolves through the package
        import fluxion.random._gamma
        assert fluxion.random.gamma is fluxion.random._gamma.gamma
        print("ok")
    """)
    assert out.strip() == "ok"


def test_first_maximum_loads_only_the_ufunc_objects() -> None:
    """``jnp.maximum`` (a ufunc object) loads its module, not the accumulations' lax families:
    ``lax.cumulative`` and ``lax.windowed`` wait for the first ``accumulate``."""
    out = _run("""
        import sys
        import fluxion.numpy as jnp
        x = jnp.arange(3)
        before = set(sys.modules)
        y = jnp.maximum(x, 1)
        print(sorted(m for m in set(sys.modules) - before
                     if m.startswith(("fluxion.lax", "fluxion.numpy"))))
        print(jnp.maximum.accumulate(jnp.array([1, 3, 2])).tolist(),
              "fluxion.lax.cumulative" in sys.modules)
    """)
    loaded, acc = out.strip().splitlines()
    assert loaded == "['fluxion.numpy.ufunc_objects']", loaded
    assert acc == "[1, 3, 3] True", acc


def test_control_flow_families_load_apart() -> None:
    """``lax.scan`` loads the loops (and their DCE rules), not the conditionals or the solves;
    ``lax.cond`` the conditionals alone; the loop DCE module imported first changes nothing."""
    out = _run("""
        import sys
        from fluxion import lax
        from fluxion.core.ir import DCE_RULES
        before = set(sys.modules)
        lax.scan
        print(sorted(m[len("fluxion.lax.control_flow."):] for m in set(sys.modules) - before
                     if m.startswith("fluxion.lax.control_flow.")))
        print(lax.scan_p in DCE_RULES and lax.while_p in DCE_RULES)
        before = set(sys.modules)
        lax.cond
        print(sorted(set(sys.modules) - before))
    """)
    assert out.split("\n")[:3] == ["['common', 'loop_dce', 'loops', 'refs']", "True",
                                    "['fluxion.lax.control_flow.conditionals']"], out
    out = _run("""
        import fluxion.lax.control_flow.loop_dce
        from fluxion import lax
        from fluxion.core.ir import DCE_RULES
        print(lax.while_loop(lambda c: c < 3, lambda c: c + 1, 0),
              lax.scan_p in DCE_RULES and lax.while_p in DCE_RULES)
    """)
    assert out.strip() == "3 True", out


def test_first_convolution_loads_only_its_family() -> None:
    """A convolution (and its gradient) loads ``lax.convolution``, not the windowed family
    (its padding helpers live in ``lax.padding``)."""
    out = _run("""
        import sys
        import fluxion, fluxion.numpy as jnp
        from fluxion import lax
        x, k = jnp.ones((1, 1, 5, 5)), jnp.ones((1, 1, 3, 3))
        before = set(sys.modules)
        f = lambda x: lax.conv_general_dilated(x, k, (2, 2), "SAME").sum()
        print(float(fluxion.grad(f)(x).sum()))
        print(sorted(m for m in set(sys.modules) - before if m.startswith("fluxion.lax")))
    """)
    assert out.split("\n")[1] == "['fluxion.lax.convolution']", out


def test_lazy_families_work_in_a_fresh_process() -> None:
    """Primitives of late-loaded families bind, lower and differentiate on first use."""
    out = _run("""
        import fluxion, fluxion.numpy as jnp
        from fluxion import lax
        x = jnp.arange(4.0)
        y = fluxion.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: c + jnp.cumsum(x), x))(x)
        g = fluxion.grad(lambda x: lax.lgamma(x + 1.0).sum())(x)
        print(y.tolist(), jnp.sort(-x).tolist(), [round(v, 4) for v in g.tolist()])
    """)
    import numpy as np
    from scipy.special import digamma

    y, s, g = out.strip().split("] [")
    xs = np.arange(4.0)
    assert y.strip("[]") == ", ".join(str(v) for v in (xs + 3 * np.cumsum(xs)).tolist())
    assert s.strip("[]") == ", ".join(str(v) for v in np.sort(-xs).tolist())
    np.testing.assert_allclose([float(v) for v in g.strip("[]").split(",")], digamma(xs + 1.0),
                               atol=1e-4)


def test_first_jit_call_loads_only_the_call_path() -> None:
    # backend/jit.py loads the helpers of the rarer paths on first use: the ahead-of-time stages,
    # placement options and cache-miss explanations stay out of a plain first jit call
    out = _run("""
        import sys
        import fluxion, fluxion.numpy as jnp
        f = fluxion.jit(lambda x: x * 2)
        print(f(jnp.arange(3.0)).tolist())
        rare = ["fluxion.backend.jit_stages", "fluxion.backend.jit_sharding",
                "fluxion.backend.cache_miss"]
        print(sorted(m for m in rare if m in sys.modules))
        from fluxion.backend import jit as jit_module
        print("Lowered" in f.lower(jnp.arange(3.0)).__class__.__name__)
        from fluxion.backend import jit_stages
        print(all(getattr(jit_module, n) is getattr(jit_stages, n)
                  for n in ("Traced", "Lowered", "Compiled")))
        g = fluxion.jit(lambda x: x + 1, device=fluxion.devices()[0])
        print(g(jnp.arange(2.0)).tolist())
    """)
    assert out.splitlines()[:5] == ["[0.0, 2.0, 4.0]", "[]", "True", "True", "[1.0, 2.0]"], out

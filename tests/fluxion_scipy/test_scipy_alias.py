"""``fluxion.scipy``: resolves to fluxion_scipy (the same module objects), loads lazily, and says
what to install when the package is missing."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import fluxion
import fluxion_scipy
import fluxion_scipy.special


def test_attribute_and_import_forms_give_the_same_modules():
    assert fluxion.scipy is fluxion_scipy
    assert fluxion.scipy.special is fluxion_scipy.special
    import fluxion.scipy.stats.norm as norm_alias
    from fluxion_scipy.stats import norm
    assert norm_alias is norm
    from fluxion.scipy.special import logsumexp
    assert logsumexp is fluxion_scipy.special.logsumexp
    import fluxion.numpy as jnp
    assert abs(float(fluxion.scipy.special.logsumexp(jnp.zeros(2))) - 0.6931472) < 1e-6


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120)


def test_import_fluxion_does_not_load_the_package():
    out = _run("""
        import sys, fluxion
        assert "fluxion_scipy" not in sys.modules, "loaded eagerly"
        fluxion.scipy
        assert "fluxion_scipy" in sys.modules
    """)
    assert out.returncode == 0, out.stderr


def test_missing_package_raises_import_error_naming_it():
    out = _run("""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "fluxion_scipy" or name.startswith("fluxion_scipy."):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        sys.meta_path.insert(0, Block())
        import fluxion
        import fluxion.numpy as jnp
        assert float(jnp.ones(2).sum()) == 2.0   # the core keeps working
        try:
            fluxion.scipy
        except ImportError as e:
            assert "fluxion-scipy" in str(e), str(e)
        else:
            raise AssertionError("no ImportError")
        try:
            import fluxion.scipy.special
        except ImportError as e:
            assert "fluxion-scipy" in str(e), str(e)
        else:
            raise AssertionError("no ImportError")
    """)
    assert out.returncode == 0, out.stderr

"""``fluxion.compat``: ``import jax`` resolved to Fluxion (install_jax_alias, run_as_jax, the
pytest plugin) and general module aliases. Each check runs in a fresh interpreter, since this
test process has the real ``jax`` imported (it is the suite's reference)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def _run(code: str, *args: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args, "-c", textwrap.dedent(code)] if code else
                          [sys.executable, *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd)


def _ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_jax_alias_gives_fluxion_modules():
    out = _ok(_run("""
        import importlib.machinery, os, sys
        # where the real packages live (site-packages here, elsewhere on some machines)
        real_jax = importlib.machinery.PathFinder.find_spec("jax").submodule_search_locations[0]
        real_jaxlib = importlib.machinery.PathFinder.find_spec("jaxlib").submodule_search_locations[0]
        from fluxion.compat import install_jax_alias, installed_aliases
        install_jax_alias()
        install_jax_alias()  # idempotent
        import jax, jax.numpy as jnp, jax.lax, jax.random, jax.tree_util, jax.core
        from jax import nn, dtypes
        import fluxion, fluxion.numpy, fluxion.lax, fluxion.core.trace, jaxlib
        assert jax.jit is fluxion.jit and jax.config is fluxion.config
        assert jnp is fluxion.numpy and jax.lax is fluxion.lax
        assert jax.__version_info__ == (0, 10, 2) and jax.__version__ == "0.10.2"
        import jax.version
        assert jax.version.__version_info__ == (0, 10, 2)
        import jax.lib, jaxlib.version  # jax.lib.__version__: the jaxlib's, as in JAX
        assert jax.lib.__version__ == jaxlib.version.__version__
        assert jax.random is fluxion.random and nn is fluxion.nn and dtypes is fluxion.dtypes
        assert sys.modules["jax.tree_util"] is fluxion.tree_util
        assert jax.core is fluxion.core and jax.core.Tracer is fluxion.core.trace.Tracer
        try:
            jax.no_such_name
        except AttributeError as e:
            assert "jax.no_such_name" in str(e) and "coming-from-jax.md" in str(e)
        # the target keeps its own identity; jaxlib is the real one; real jax never loads
        assert jnp.__name__ == jnp.__spec__.name == "fluxion.numpy"
        assert jaxlib.__file__.startswith(os.path.join(real_jaxlib, "")) and jaxlib.__name__ == "jaxlib"
        assert not [n for n, m in list(sys.modules.items())
                    if (getattr(m, "__file__", None) or "").startswith(os.path.join(real_jax, ""))]
        assert installed_aliases()["jax"] == "fluxion.compat.jax_root"
        y = jax.jit(lambda x: jnp.sin(x) * 2)(jnp.float32(0.5))
        print(type(y).__module__, float(y))
        try:
            import jax.no_such_module
        except ModuleNotFoundError as e:
            print("missing:", e.name, "coming-from-jax.md" in str(e))
        """))
    result, missing = out.strip().splitlines()
    mod, val = result.split()
    assert mod.startswith("fluxion.") and abs(float(val) - 0.958851077) < 1e-6
    assert missing == "missing: jax.no_such_module True"


def test_jax_alias_refuses_after_real_jax():
    proc = _run("""
        import jax
        from fluxion.compat import install_jax_alias
        install_jax_alias()
        """)
    assert proc.returncode != 0
    assert "RuntimeError" in proc.stderr and "already imported" in proc.stderr
    assert "fluxion.run_as_jax" in proc.stderr


def test_module_alias_submodules_and_errors():
    out = _ok(_run("""
        import sys
        from fluxion.compat import install_module_alias, uninstall_module_alias
        install_module_alias({"mailx": "email", "mailx.deep": "email.mime"})
        import mailx.mime.text, email.mime.text, email.mime.base, mailx.deep.base
        assert mailx.mime.text is email.mime.text and sys.modules["mailx"] is sys.modules["email"]
        assert mailx.deep.base is email.mime.base          # longest aliased prefix wins
        assert email.mime.text.__spec__.name == "email.mime.text"
        try:
            import mailx._nothing_here
        except ModuleNotFoundError as e:
            print(e.name, "email._nothing_here" in str(e))
        for bad in ({"a": "a.b"}, {"": "json"}):
            try:
                install_module_alias(bad)
            except ValueError:
                print("ValueError")
        try:
            install_module_alias({"mailx": "json"})
        except RuntimeError:
            print("RuntimeError")
        uninstall_module_alias("mailx", "mailx.deep")
        """))
    assert out.split() == ["mailx._nothing_here", "True", "ValueError", "ValueError",
                           "RuntimeError"]


def test_run_as_jax_and_pytest_plugin(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text("import sys, jax, jax.numpy as jnp, fluxion\n"
                    "print(jax.jit is fluxion.jit, sys.argv[1:], int(jnp.arange(4).sum()))\n")
    out = _ok(_run("", "-m", "fluxion.run_as_jax", str(prog), "a", "--b"))
    assert out.split() == ["True", "['a',", "'--b']", "6"]
    (tmp_path / "test_uses_jax.py").write_text(
        "import jax, jax.numpy as jnp\n\n"
        "def test_it():\n"
        "    assert jax.jit.__module__.startswith('fluxion') and float(jnp.ones(3).sum()) == 3.0\n")
    out = _ok(_run("", "-m", "pytest", "-q", "-p", "fluxion.compat.pytest_plugin",
                   "-p", "no:cacheprovider", "-p", "no:xdist", "--rootdir", str(tmp_path),
                   str(tmp_path / "test_uses_jax.py"), cwd=str(tmp_path)))
    assert "1 passed" in out


@pytest.mark.parametrize("argv", [[], ["--alias", "x"]])
def test_run_as_jax_usage(argv):
    proc = _run("", "-m", "fluxion.run_as_jax", *argv)
    assert proc.returncode != 0 and "usage: python -m fluxion.run_as_jax" in proc.stderr


def test_private_jax_parts_for_chex():
    out = _ok(_run("""
        from fluxion.compat import install_jax_alias
        install_jax_alias()
        import chex, jax, jax.numpy as jnp
        from chex._src.restrict_backends import RestrictedBackendError
        assert jax._src.xla_bridge._backends == {}   # nothing computed yet (chex reads this)
        f = jax.jit(lambda x: x * 3 + 1)
        with chex.restrict_backends(forbidden=["cpu"]):
            try:
                f(jnp.ones(2))
            except RestrictedBackendError:
                print("restricted")
        print(float(f(jnp.ones(2))[0]), sorted(jax._src.xla_bridge._backends))
        try:
            import jax._src.no_such_part
        except ModuleNotFoundError as e:
            print("missing", "coming-from-jax.md" in str(e))
        """))
    assert out.split() == ["restricted", "4.0", "['cpu']", "missing", "True"]


def test_parse_flags_with_absl_like_jax():
    # jax_md calls jax.config.parse_flags_with_absl() at import; the --jax_* options of argv
    # set the flags, once per process, as in JAX
    code = """
        import sys
        sys.argv = ["prog", "--jax_enable_x64", "--jax_numpy_rank_promotion=raise", "--x", "--",
                    "--jax_disable_jit"]
        import {lib} as lib, {lib}.numpy as np_
        lib.config.parse_flags_with_absl()
        lib.config.parse_flags_with_absl()
        print(lib.config.jax_enable_x64, lib.config.jax_numpy_rank_promotion,
              lib.config.jax_disable_jit, np_.ones(1).dtype)
        """
    ours = _ok(_run(code.replace("{lib}", "fluxion")))
    theirs = _ok(_run(code.replace("{lib}", "jax")))
    assert ours.split() == theirs.split() == ["True", "raise", "False", "float64"]

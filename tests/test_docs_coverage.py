"""Every public function and class is documented.

For each public module below, every name in its ``__all__`` that is a function, a class or a callable
Fluxion object (a ufunc, a jitted or custom-derivative wrapper) must

* be mentioned in some ``docs/**/*.md`` page, either in backticks (``name``, ``fluxion.numpy.name``,
  ``jnp.name(x)``) outside fenced code blocks, or as a heading (``## fluxion.numpy.name``), and
* have a non-empty docstring.

Each test lists every missing name of its module in one message, so one run shows the whole to-do
list.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

MODULES = [
    "fluxion",
    "fluxion.numpy",
    "fluxion.numpy.linalg",
    "fluxion.lax",
    "fluxion.lax.linalg",
    "fluxion.tree_util",
    "fluxion.dtypes",
    "fluxion.random",
    "fluxion.nn",
    "fluxion_nn",
    "fluxion_nn.checkpoint",
    "fluxion_nn.haiku",
    "fluxion_nn.haiku.initializers",
    "fluxion_optim",
    "fluxion_optim.schedules",
    "fluxion_optim.transforms",
    "fluxion_optim.losses",
    "fluxion_optim.contrib",
    "fluxion_optim.projections",
    "fluxion_optim.assignment",
    "fluxion_optim.perturbations",
    "fluxion_optim.microbatching",
    "fluxion_optim.second_order",
    "fluxion_optim.tree",
    "fluxion_optim.tree_utils",
    "fluxion.numpy.fft",
    "fluxion.debug",
    "fluxion.experimental",
    "fluxion.experimental.checkify",
    "fluxion.compat",
    "fluxion.core",
    "fluxion.extend.core",
    "fluxion.extend.linear_util",
    "fluxion.api_util",
    "fluxion.interpreters.partial_eval",
    "fluxion.experimental.mesh_utils",
    "fluxion.experimental.layout",
    "fluxion.experimental.sparse",
    "fluxion.experimental.multihost_utils",
    "fluxion.experimental.ode",
    "fluxion.experimental.jet",
    "fluxion.ffi",
    "fluxion_scipy.special",
    "fluxion_scipy.stats",
    "fluxion_scipy.linalg",
    "fluxion_scipy.integrate",
    "fluxion_scipy.optimize",
    "fluxion_scipy.fft",
    "fluxion_scipy.sparse.linalg",
    "fluxion_scipy.interpolate",
    "fluxion_md.space",
    "fluxion_md.energy",
    "fluxion_md.smap",
    "fluxion_md.partition",
    "fluxion_md.simulate",
    "fluxion_md.minimize",
    "fluxion_md.quantity",
    "fluxion_md.util",
    "fluxion_md.dataclasses",
    "fluxion_md.interpolate",
    "fluxion_md.nn",
    "fluxion_md._nn.behler_parrinello",
    "fluxion_md._nn.util",
    "fluxion_md._nn.nequip",
    "fluxion_md._nn.gnome",
    "fluxion_md._nn.e3nn_layer",
    "fluxion_md._nn.uma",
    "fluxion_md._nn.uma.common.so3",
    "fluxion_md._nn.uma.common.rotation",
    "fluxion_md._nn.uma.kernels",
    "fluxion_md._nn.uma.nn.radial",
    "fluxion_md._nn.uma.nn.so3_layers",
    "fluxion_md._nn.uma.nn.so2_layers",
    "fluxion_md._nn.uma.nn.layer_norm",
    "fluxion_md._nn.uma.nn.activation",
    "fluxion_md._nn.uma.nn.mole",
    "fluxion_md._nn.uma.nn.embedding",
    "fluxion_md._nn.uma.heads",
    "fluxion_md._nn.uma.model_moe_layers",
    "fluxion_md._nn.uma.blocks",
    "fluxion_md._nn.uma.model",
    "fluxion_md._nn.uma.model_moe",
    "fluxion_md._nn.uma.featurizer",
    "fluxion_md._nn.uma.pretrained",
    "fluxion_md.test_util",
    "fluxion_md.rigid_body",
    "fluxion_md.tpu",
    "fluxion_scipy.ndimage",
    "fluxion_scipy.cluster.vq",
    "fluxion_scipy.signal",
    "fluxion_scipy.spatial.transform",
    "fluxion.sharding",
    "fluxion.distributed",
    "fluxion.ad_checkpoint",
    "fluxion.custom_batching",
    "fluxion.flatten_util",
    "fluxion.ops",
    "fluxion.typing",
    "fluxion.naming",
    "fluxion.example_libraries.stax",
    "fluxion.example_libraries.optimizers",
    "fluxion_rl",
    "fluxion_rl.envs",
] + [f"fluxion_scipy.stats.{_d}" for _d in (
    "bernoulli", "beta", "betabinom", "binom", "cauchy", "chi2", "dirichlet", "expon", "gamma",
    "gennorm", "geom", "gumbel_l", "gumbel_r", "laplace", "logistic", "multinomial",
    "multivariate_normal", "nbinom", "norm", "pareto", "poisson", "t", "truncnorm", "uniform",
    "vonmises", "wrapcauchy")]

# Deliberate exceptions, by module: names that need neither a docs entry nor a docstring. Keep this
# empty unless there is a written reason next to the name.
EXEMPT: dict[str, set[str]] = {}

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
_BACKTICK = re.compile(r"`([^`\n]+)`")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
_DOTTED = re.compile(r"[A-Za-z_][\w.]*")


_TYPING_MODULES = {"typing", "typing_extensions", "collections.abc", "types"}


def _is_api_object(obj: object) -> bool:
    if inspect.ismodule(obj):
        return False
    # Type aliases (KeyEntry = Any, ArrayLike = Union[...]) name typing objects: no docstring of their own.
    if getattr(obj, "__module__", None) in _TYPING_MODULES:
        return False
    if inspect.isroutine(obj) or inspect.isclass(obj):
        return True
    # Callable instances of Fluxion's own classes: ufuncs, jit wrappers, custom_jvp/custom_vjp ...
    return callable(obj) and type(obj).__module__.split(".")[0].startswith("fluxion")


def _public_api(modname: str) -> dict[str, object]:
    module = importlib.import_module(modname)
    names = getattr(module, "__all__", None)
    assert names is not None, f"{modname} declares no __all__ (public modules must)"
    missing_attrs = [n for n in names if not hasattr(module, n)]
    assert not missing_attrs, f"{modname}.__all__ lists names the module lacks: {missing_attrs}"
    exempt = EXEMPT.get(modname, set())
    return {n: getattr(module, n) for n in names
            if n not in exempt and _is_api_object(getattr(module, n))}


def _last_component(text: str) -> str | None:
    text = text.strip().split("(", 1)[0].strip()
    if text.startswith("class "):
        text = text[len("class "):].strip()
    m = _DOTTED.fullmatch(text)
    return m.group(0).rstrip(".").rsplit(".", 1)[-1] if m else None


def _documented_names() -> set[str]:
    """Names that docs/**/*.md mention in backticks (outside code blocks) or as a heading."""
    found: set[str] = set()
    for page in DOCS.rglob("*.md"):
        text = _FENCE.sub("", page.read_text(encoding="utf-8"))
        for span in _BACKTICK.findall(text):
            name = _last_component(span)
            if name:
                found.add(name)
        for heading in _HEADING.findall(text):
            name = _last_component(heading.replace("`", ""))
            if name:
                found.add(name)
    return found


@pytest.fixture(scope="module")
def documented() -> set[str]:
    return _documented_names()


@pytest.mark.parametrize("modname", MODULES)
def test_public_names_are_in_docs(modname: str, documented: set[str]) -> None:
    api = _public_api(modname)
    missing = sorted(n for n in api if n not in documented)
    assert not missing, (f"{len(missing)} public name(s) of {modname} appear in no docs/**/*.md page "
                         f"(as `name` or a heading): {', '.join(missing)}")


@pytest.mark.parametrize("modname", MODULES)
def test_public_names_have_docstrings(modname: str) -> None:
    api = _public_api(modname)
    missing = sorted(n for n, obj in api.items() if not (getattr(obj, "__doc__", None) or "").strip())
    assert not missing, f"{len(missing)} public name(s) of {modname} have no docstring: {', '.join(missing)}"


def test_docs_scanner() -> None:
    """The scanner itself: backticks and headings count, fenced code does not."""
    assert _last_component("fluxion.numpy.sum(a, axis=None)") == "sum"
    assert _last_component("jnp.where") == "where"
    assert _last_component("class fluxion.Array") == "Array"
    assert _last_component("import fluxion as jax") is None
    sample = "## fluxion.jit\n\nUse `vmap` here.\n\n```python\n`grad`\n```\n"
    stripped = _FENCE.sub("", sample)
    assert "grad" not in stripped and "`vmap`" in stripped

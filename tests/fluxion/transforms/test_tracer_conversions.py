"""Python and NumPy conversions of traced values (``float(x)``, ``np.asarray(x)``, ``x.item()``,
pickling, ...) under every transformation that makes tracers, against jax 0.10.2.

A ``grad``/``jvp`` tracer whose primal is known may be read by ``int``, ``bool``, ``index`` and
``.item()`` (``if x > 0`` works under ``grad``), but ``float``, ``complex`` and NumPy conversions
are refused, since the Python or NumPy value would silently drop the derivative; under ``jit``
and ``vmap`` every conversion is refused. Where the value is not known, a wrong shape or dtype
fails first as it does for any array (a ValueError for ``bool`` of a vector, a TypeError for
``index`` of a float). Each cell compares the outcome: the error class, or the value returned.
"""

from __future__ import annotations

import copy
import math
import operator
import pickle
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
from fluxion import errors

CONVERSIONS = {
    "float": float, "int": int, "bool": bool, "complex": complex, "index": operator.index,
    "hex": hex, "math.floor": math.floor, "np.asarray": np.asarray, "np.array": np.array,
    "__array__": lambda v: v.__array__(), "np.sin": np.sin, "tolist": lambda v: v.tolist(),
    "item": lambda v: v.item(), "tobytes": lambda v: v.tobytes(), "pickle": pickle.dumps,
    "hash": hash, "format": format, "copy": copy.copy, "deepcopy": copy.deepcopy,
    "len": len,
}


def _outcome(conv, v):
    try:
        r = conv(v)
    except Exception as e:  # the class is the outcome compared
        return "raises " + type(e).__name__
    if isinstance(r, (bool, int, float, complex)):
        return f"{type(r).__name__} {r!r}"
    if isinstance(r, (np.ndarray, np.generic)):
        return f"ndarray {np.asarray(r).tolist()!r}"
    if isinstance(r, (jax.Array, fluxion.Array)):
        return "traced" if isinstance(r, (jax.core.Tracer, fluxion.core.Tracer)) else "array"
    return type(r).__name__


def _scenarios(lib, np_):
    """name -> run(probe, x): runs ``probe`` on a value made by a transformation of ``lib``."""
    sq = lambda v: (v * v).sum()  # noqa: E731
    at = lambda probe: lambda v: (probe(v), sq(v))[1]  # noqa: E731
    stack = lambda x: np_.stack([x, x])  # noqa: E731

    def custom_jvp(where, outer):
        def run(probe, x):
            f = lib.custom_jvp(sq)
            f.defjvp(lambda p, t: (probe(p[0] if where == "primal" else t[0]), sq(p[0]),
                                   (2 * p[0] * t[0]).sum())[1:])
            return outer(f, x)
        return run

    def custom_vjp(where):
        def run(probe, x):
            f = lib.custom_vjp(sq)
            f.defvjp(lambda v: (probe(v) if where == "fwd" else None, (sq(v), v))[1],
                     lambda r, g: (probe(g) if where == "bwd" else None, (2 * r * g,))[1])
            return lib.grad(f)(x)
        return run

    by_grad = lambda f, x: lib.grad(f)(x)  # noqa: E731
    by_jvp = lambda f, x: lib.jvp(f, (x,), (x,))  # noqa: E731
    return {
        "grad": lambda p, x: lib.grad(at(p))(x),
        "value_and_grad": lambda p, x: lib.value_and_grad(at(p))(x),
        "jvp": lambda p, x: lib.jvp(at(p), (x,), (x,)),
        "vjp": lambda p, x: lib.vjp(at(p), x)[1](np_.float32(1.0)),
        "linearize": lambda p, x: lib.linearize(at(p), x)[1](x),
        "jacfwd": lambda p, x: lib.jacfwd(at(p))(x),
        "jacrev": lambda p, x: lib.jacrev(at(p))(x),
        "hessian": lambda p, x: lib.hessian(at(p))(x),
        "grad_of_grad": lambda p, x: lib.grad(lambda y: lib.grad(at(p))(y).sum())(x),
        "outer_grad_in_inner": lambda p, x: lib.grad(
            lambda y: lib.grad(lambda z: (p(y), (z * y).sum())[1])(y).sum())(x),
        "custom_jvp_rule_primal": custom_jvp("primal", by_grad),
        "custom_jvp_rule_tangent_grad": custom_jvp("tangent", by_grad),
        "custom_jvp_rule_tangent_jvp": custom_jvp("tangent", by_jvp),
        "custom_vjp_fwd": custom_vjp("fwd"),
        "custom_vjp_bwd": custom_vjp("bwd"),
        "checkpoint_grad": lambda p, x: lib.grad(lib.checkpoint(at(p)))(x),
        "checkpoint": lambda p, x: lib.checkpoint(at(p))(x),
        "jit_of_grad": lambda p, x: lib.jit(lib.grad(at(p)))(x),
        "grad_of_jit": lambda p, x: lib.grad(lib.jit(at(p)))(x),
        "vmap_of_grad": lambda p, x: lib.vmap(lib.grad(at(p)))(stack(x)),
        "grad_of_vmap": lambda p, x: lib.grad(lambda y: lib.vmap(at(p))(y).sum())(stack(x)),
        "jit": lambda p, x: lib.jit(at(p))(x),
        "vmap": lambda p, x: lib.vmap(at(p))(stack(x)),
    }


def _table(lib, np_, scenario, value):
    run = _scenarios(lib, np_)[scenario]
    out = {}
    for name, conv in CONVERSIONS.items():
        seen = []
        run(lambda v: seen.append(_outcome(conv, v)), np_.asarray(np.float32(value)))
        out[name] = seen
    return out


_NAMES = list(_scenarios(fluxion, fnp))


@pytest.mark.parametrize("value", [2.0, [2.0, -3.0]], ids=["scalar", "vector"])
@pytest.mark.parametrize("scenario", _NAMES)
def test_conversions_match_jax(scenario, value):
    theirs = _table(jax, jnp, scenario, value)
    ours = _table(fluxion, fnp, scenario, value)
    wrong = {k: (ours[k], theirs[k]) for k in CONVERSIONS if ours[k] != theirs[k]}
    assert not wrong, f"(fluxion, jax) outcomes that differ: {wrong}"


def test_allowed_reads_under_grad_give_the_primal():
    got = {}

    def f(x):
        got.update(int=int(x), bool=bool(x > 1), item=x.item(), index=[0, 1, 2, 3][x.astype(int)],
                   stopped=float(fluxion.lax.stop_gradient(x)))  # the way out the error names
        return x * x

    assert float(fluxion.grad(f)(fnp.float32(2.0))) == 4.0
    assert got == {"int": 2, "bool": True, "item": 2.0, "index": 2, "stopped": 2.0}
    assert type(got["item"]) is float


def _line_of(marker: str) -> int:
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if marker in line and "_line_of" not in line)


def lossy_loss(x):
    return x * float(x)  # MARK-float


def numpy_loss(x):
    return (x * np.asarray(x)).sum()  # MARK-asarray


@pytest.mark.parametrize("fn, marker, cls", [
    (lossy_loss, "MARK-float", errors.ConcretizationTypeError),
    (numpy_loss, "MARK-asarray", errors.TracerArrayConversionError),
])
@pytest.mark.parametrize("transform", ["grad", "jvp", "vjp", "linearize"])
def test_refused_conversion_names_the_function_and_the_line(fn, marker, cls, transform):
    call = {"grad": lambda: fluxion.grad(fn)(2.0), "jvp": lambda: fluxion.jvp(fn, (2.0,), (1.0,)),
            "vjp": lambda: fluxion.vjp(fn, 2.0), "linearize": lambda: fluxion.linearize(fn, 2.0)}
    with pytest.raises(cls) as info:
        call[transform]()
    msg = str(info.value)
    assert re.search(rf"\b{fn.__name__}\b", msg), msg
    assert f"test_tracer_conversions.py:{_line_of(marker)}" in msg, msg
    assert "stop_gradient" in msg, msg


"""What XLA does with a primitive's result buffer, declared beside each primitive.

The XLA:CPU in-place update workaround (``fluxion.backend.update_aliasing``, openxla/xla#49176)
reads ``Primitive.in_place``, ``Primitive.materialized`` and the ``Primitive.bitcast`` rule. They
used to be tables of names in that module; the sets below are those tables as they were (commit
aa4f5eb), so a primitive that loses its declaration fails here, and a primitive that declares
nothing gets the defaults (a fused op with a buffer of its own).
"""

from __future__ import annotations

from types import SimpleNamespace

from _primitives import find_primitives

import fluxion
import fluxion.numpy as jnp
from fluxion.backend import update_aliasing
from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive

# the tables of fluxion/backend/update_aliasing.py at aa4f5eb
OLD_UPDATE_PRIMITIVES = {
    "dynamic_update_slice": (0, 1), "scatter": (0, 2), "scatter_add": (0, 2),
    "scatter_sub": (0, 2), "scatter_mul": (0, 2), "scatter_min": (0, 2), "scatter_max": (0, 2)}
OLD_MATERIALIZED = {
    "dot_general", "conv_general_dilated", "while", "scan", "cond", "sort", "top_k", "fft",
    "cholesky", "eig", "eigh", "lu", "qr", "svd", "schur", "hessenberg", "geqrf",
    "householder_product", "triangular_solve", "tridiagonal", "tridiagonal_solve",
    "custom_linear_solve", "custom_root", "rng_bit_generator", "rng_uniform", "pure_callback",
    "io_callback", "debug_callback", "all_gather", "all_to_all", "psum_scatter", "ppermute",
    "reduce_window", "select_and_scatter_add", "select_and_gather_add"}
OLD_SAME_BUFFER = {"copy", "optimization_barrier", "sharding_constraint", "pvary",
                   "stop_gradient"}
OLD_RESHAPES = {"reshape", "squeeze"}  # and broadcast_in_dim when it adds size-1 dimensions only


PRIMS = find_primitives()


def _eqn(in_shape, in_dtype, out_shape, out_dtype):
    return SimpleNamespace(inputs=[SimpleNamespace(aval=ShapedArray(in_shape, in_dtype))],
                           outputs=[SimpleNamespace(aval=ShapedArray(out_shape, out_dtype))])


def test_every_listed_primitive_still_exists():
    listed = (set(OLD_UPDATE_PRIMITIVES) | OLD_MATERIALIZED | OLD_SAME_BUFFER | OLD_RESHAPES
              | {"broadcast_in_dim", "convert_element_type"})
    assert not listed - set(PRIMS), sorted(listed - set(PRIMS))


def test_in_place_updates_keep_their_operand_and_update():
    lost = {n: PRIMS[n].in_place for n, idx in OLD_UPDATE_PRIMITIVES.items()
            if PRIMS[n].in_place != idx}
    assert not lost, lost


def test_materialized_primitives_keep_the_flag():
    lost = sorted(n for n in OLD_MATERIALIZED if not PRIMS[n].materialized)
    assert not lost, lost


def test_bitcast_rules():
    eqn = _eqn((6,), "float32", (2, 3), "float32")
    for n in OLD_SAME_BUFFER:
        assert PRIMS[n].bitcast is not None and PRIMS[n].bitcast(eqn) == "same", n
    for n in OLD_RESHAPES:
        assert PRIMS[n].bitcast is not None and PRIMS[n].bitcast(eqn) == "reshape", n
    bcast = PRIMS["broadcast_in_dim"].bitcast
    assert bcast(_eqn((3,), "float32", (1, 3, 1), "float32")) == "reshape"
    assert bcast(_eqn((3,), "float32", (2, 3), "float32")) is None
    convert = PRIMS["convert_element_type"].bitcast
    assert convert(_eqn((3,), "float32", (3,), "float32")) == "same"
    assert convert(_eqn((3,), "float32", (3,), "int32")) is None


def test_a_primitive_that_declares_nothing_gets_the_defaults():
    p = Primitive("buffer_facts_doc")
    assert (p.in_place, p.materialized, p.bitcast) == (None, False, None)
    for n in ("add", "gather", "slice", "dynamic_slice", "concatenate"):
        assert (PRIMS[n].in_place, PRIMS[n].materialized, PRIMS[n].bitcast) == (None, False, None)
    # an equation of such a primitive: a fused op that may read its inputs, no view of them
    eqn = fluxion.make_jaxpr(lambda x, y: x + y)(jnp.ones(3), jnp.ones(3)).jaxpr.eqns[0]
    assert update_aliasing.entry_for(eqn, ["%0", "%1"], 0) == ((), ("%0", "%1"))


def test_the_declarations_drive_the_value_graph():
    def first(f, *args):  # the last equation of f's program
        return fluxion.make_jaxpr(f)(*args).jaxpr.eqns[-1]
    x = jnp.ones((2, 3))
    upd = first(lambda a, b: a.at[0].set(b), x, jnp.ones(3))  # scatter, or a DUS
    assert upd.prim.in_place is not None
    assert update_aliasing.entry_for(upd, ["%0", "%1"], 0)[0] == (("%0", False),)
    dot = first(lambda a, b: a @ b, x, jnp.ones((3, 2)))
    assert dot.prim.name == "dot_general"
    assert update_aliasing.entry_for(dot, ["%0", "%0"], 0) == ((), ())
    reshape = first(lambda a: a.reshape(6), x)
    assert reshape.prim.name == "reshape"
    assert update_aliasing.entry_for(reshape, ["%0"], 0) == ((("%0", True),), ("%0",))
    # a primitive defined outside fluxion declares the same facts and is read the same way
    view = Primitive("buffer_facts_view")
    view.bitcast = lambda eqn: "same"
    eqn = SimpleNamespace(prim=view, inputs=upd.inputs[:1], outputs=upd.outputs)
    assert update_aliasing.entry_for(eqn, ["%0"], 0) == ((("%0", False),), ("%0",))

"""``fluxion.experimental.sparse`` against ``jax.experimental.sparse`` on the same inputs: the
BCOO layouts JAX fixes (data, indices, nse, flags), dense values, shapes and dtypes of every
operation, gradients through ``data``, ``jit``/``vmap`` identities and JAX's errors."""

from __future__ import annotations

import jax
import jax.experimental.sparse as js
import jax.numpy as jjnp
import numpy as np
import pytest
from _compare import assert_same

import fluxion
import fluxion.numpy as jnp
from fluxion.experimental import sparse as fs

RNG = np.random.default_rng(0)


def _rand(shape: tuple[int, ...], density: float = 0.5) -> np.ndarray:
    x = RNG.normal(size=shape).astype(np.float32)
    return np.where(RNG.random(shape) < density, x, 0).astype(np.float32)


def _both(x: np.ndarray, **kw) -> tuple[fs.BCOO, js.BCOO]:
    return fs.BCOO.fromdense(x, **kw), js.BCOO.fromdense(x, **kw)


def _same(ours, theirs, rtol: float | None = None) -> None:
    """A BCOO result equals JAX's in layout and values; a dense one in values and dtype."""
    if isinstance(theirs, js.BCOO):
        assert isinstance(ours, fs.BCOO), type(ours)
        assert ours.shape == theirs.shape
        assert (ours.n_batch, ours.n_dense, ours.nse) == (theirs.n_batch, theirs.n_dense,
                                                          theirs.nse)
        assert (ours.indices_sorted, ours.unique_indices) == (theirs.indices_sorted,
                                                              theirs.unique_indices)
        assert_same(ours.indices, theirs.indices, check_weak_type=False)
        assert_same(ours.data, theirs.data, rtol=rtol, atol=None if rtol is None else 1e-6,
                    check_weak_type=False)
        assert repr(ours) == repr(theirs)
        return
    assert_same(ours, theirs, rtol=rtol, atol=None if rtol is None else 1e-6,
                check_weak_type=False)



def _jitted_pairs(program, ours_args: tuple, theirs_args: tuple) -> list[tuple]:
    """``program(lib, sp, np_)`` is a function of the arrays that returns a list of results; it
    runs as one compiled program per library, and the pairs (Fluxion's, JAX's) come back.

    The sparse rules (``sparsify``, the ``bcoo_*`` functions) trace the same way eagerly and under
    ``jit``, but eagerly each dense operation inside them is a compile of its own, in both
    libraries (hundreds per test). So a test checks its operations here and Fluxion's eager path
    on one or two of them, against JAX's compiled result (JAX's eager result is the same)."""
    got = fluxion.jit(program(fluxion, fs, jnp))(*ours_args)
    want = jax.jit(program(jax, js, jjnp))(*theirs_args)
    assert len(got) == len(want)
    return list(zip(got, want))


def _slow(*values: object) -> object:
    """A parametrization run only nightly (FLUXION_SLOW=1): its layout repeats, at many more
    compiles, what the default cases of the same test check."""
    return pytest.param(*values, marks=pytest.mark.slow)

LAYOUTS = [((3, 4), 0, 0), ((3, 4), 1, 0), ((3, 4), 0, 1), ((2, 3, 4), 1, 1),
           ((2, 3, 4), 2, 0), ((2, 3, 4), 0, 0), ((2, 3, 4), 1, 0), ((2, 3, 4), 0, 2)]


@pytest.mark.parametrize("shape,n_batch,n_dense", LAYOUTS)
def test_fromdense_todense_layouts_like_jax(shape, n_batch, n_dense):
    x = _rand(shape)
    for nse in (None, 7):
        ours, theirs = _both(x, n_batch=n_batch, n_dense=n_dense, nse=nse)
        _same(ours, theirs)
        _same(ours.todense(), theirs.todense())
        _same(fs.bcoo_todense(ours), js.bcoo_todense(theirs))
    o16, t16 = _both(x, n_batch=n_batch, n_dense=n_dense, index_dtype=np.int16)
    _same(o16, t16)
    assert (ours.n_sparse, ours.ndim, ours.size, len(ours)) == (theirs.n_sparse, theirs.ndim,
                                                                theirs.size, len(theirs))


@pytest.mark.parametrize("shape,n_batch,n_dense", LAYOUTS[:5])
def test_update_layout_like_jax(shape, n_batch, n_dense):
    ours, theirs = _both(_rand(shape), n_batch=n_batch, n_dense=n_dense, nse=5)
    layouts = [(nb, nd) for nb in range(len(shape) + 1) for nd in range(len(shape) + 1 - nb)]
    # JAX's results in one compiled program (eagerly, a compile per operation), Fluxion's eagerly
    want = jax.jit(lambda m: [m.update_layout(n_batch=nb, n_dense=nd, on_inefficient=None)
                              for nb, nd in layouts])(theirs)
    for (nb, nd), theirs_nb_nd in zip(layouts, want, strict=True):
        _same(ours.update_layout(n_batch=nb, n_dense=nd, on_inefficient=None), theirs_nb_nd)
        growing = (nb > n_batch and any(d > 1 for d in shape[n_batch:nb])) or (
            nd > n_dense and any(d > 1 for d in shape[len(shape) - nd:len(shape) - n_dense]))
        if growing:  # JAX's efficiency error and warning
            with pytest.raises(fs.SparseEfficiencyError, match="inefficient storage"):
                ours.update_layout(n_batch=nb, n_dense=nd)
            with pytest.warns(fs.SparseEfficiencyWarning):
                fs.bcoo_update_layout(ours, n_batch=nb, n_dense=nd, on_inefficient="warn")
    with pytest.raises(ValueError, match="cannot be larger than"):
        ours.update_layout(n_batch=len(shape), n_dense=1)


def test_duplicates_sort_and_extract_like_jax():
    data = np.array([1.0, 2.0, 3.0, 0.0, 4.0], np.float32)
    idx = np.array([[1, 0], [0, 1], [1, 0], [2, 1], [3, 3]], np.int32)  # [3, 3]: padding
    ours, theirs = fs.BCOO((data, idx), shape=(3, 3)), js.BCOO((data, idx), shape=(3, 3))
    _same(ours.todense(), theirs.todense())
    _same(ours.sum_duplicates(), theirs.sum_duplicates())
    _same(ours.sum_duplicates(nse=6, remove_zeros=False),
          theirs.sum_duplicates(nse=6, remove_zeros=False))
    _same(fs.bcoo_sum_duplicates(ours, nse=2), js.bcoo_sum_duplicates(theirs, nse=2))
    _same(ours.sort_indices(), theirs.sort_indices())
    dense = np.arange(9, dtype=np.float32).reshape(3, 3)
    _same(fs.bcoo_extract(ours, dense), js.bcoo_extract(theirs, dense))
    _same(fs.bcoo_extract(ours, dense, assume_unique=True),
          js.bcoo_extract(theirs, dense, assume_unique=True))
    for o, t in [_both(_rand((2, 3, 4)), n_batch=1, n_dense=1)]:
        dense3 = _rand((2, 3, 4), 1.0)
        _same(fs.bcoo_extract(o, dense3), js.bcoo_extract(t, dense3))
        _same((o * 0.0).sum_duplicates(), (t * 0.0).sum_duplicates())
    with pytest.raises(ValueError, match="shape mismatch"):
        fs.bcoo_extract(ours, np.ones((3, 4), np.float32))


def test_transpose_like_jax():
    ours, theirs = _both(_rand((2, 3, 4)))
    _same(ours.T, theirs.T)
    _same(ours.transpose((0, 2, 1)), theirs.transpose((0, 2, 1)))
    _same(fs.bcoo_transpose(ours, permutation=(1, 0, 2)),
          js.bcoo_transpose(theirs, permutation=(1, 0, 2)))
    ob, tb = _both(_rand((2, 3, 4)), n_batch=1, n_dense=1)
    _same(ob.transpose((0, 1, 2)), tb.transpose((0, 1, 2)))
    with pytest.raises(NotImplementedError, match="cannot permute batch axes"):
        ob.transpose((1, 0, 2))
    with pytest.raises(NotImplementedError, match="cannot permute dense axes"):
        ob.transpose((0, 2, 1))
    with pytest.raises(TypeError, match="isn't a permutation"):
        fs.bcoo_transpose(ours, permutation=(0, 0, 1))


DOT_CASES = [
    ((3, 4), (4, 5), (([1], [0]), ([], [])), 0, 0),
    ((3, 4), (4,), (([1], [0]), ([], [])), 0, 0),
    ((3, 4), (4, 5), (([1], [0]), ([], [])), 1, 0),
    ((3, 4), (3, 5), (([0], [0]), ([], [])), 1, 0),
    _slow((2, 3, 4), (2, 4, 5), (([2], [1]), ([0], [0])), 1, 0),
    ((2, 3, 4), (4, 5), (([2], [0]), ([], [])), 0, 0),
    ((2, 3, 4), (2, 5), (([0], [0]), ([], [])), 1, 0),
    ((2, 3, 4), (3, 5), (([1], [0]), ([], [])), 1, 1),
]


@pytest.mark.parametrize("lhs_shape,rhs_shape,dn,n_batch,n_dense", DOT_CASES)
def test_dot_general_like_jax(lhs_shape, rhs_shape, dn, n_batch, n_dense):
    ours, theirs = _both(_rand(lhs_shape), n_batch=n_batch, n_dense=n_dense)
    y = RNG.normal(size=rhs_shape).astype(np.float32)
    swapped = ((dn[0][1], dn[0][0]), (dn[1][1], dn[1][0]))
    # sparse x sparse (JAX's bcoo_spdot_general), each rhs layout JAX takes; the ones it refuses
    # (while tracing) Fluxion refuses with the same exception
    rhs = []
    if n_dense == 0:
        ys = _rand(rhs_shape)
        for rhs_batch in range(len(rhs_shape)):
            o_r, t_r = _both(ys, n_batch=rhs_batch)
            try:
                jax.eval_shape(lambda a, b: js.bcoo_dot_general(a, b, dimension_numbers=dn),
                               theirs, t_r)
            except (NotImplementedError, ValueError) as err:
                with pytest.raises(type(err)):
                    fs.bcoo_dot_general(ours, o_r, dimension_numbers=dn)
                continue
            rhs.append((o_r, t_r))

    def program(lib, sp, np_):
        return lambda m, d, rs: [sp.bcoo_dot_general(m, d, dimension_numbers=dn),
                                 sp.bcoo_dot_general(d, m, dimension_numbers=swapped),
                                 *[sp.bcoo_dot_general(m, r, dimension_numbers=dn) for r in rs]]

    pairs = _jitted_pairs(program, (ours, jnp.asarray(y), [r[0] for r in rhs]),
                          (theirs, y, [r[1] for r in rhs]))
    for got, want in pairs:
        _same(got, want, rtol=1e-6)
    _same(fs.bcoo_dot_general(ours, jnp.asarray(y), dimension_numbers=dn), pairs[0][1],
          rtol=1e-6)  # eagerly


def test_dot_general_errors_like_jax():
    ours, _ = _both(_rand((3, 4)), n_dense=1)
    with pytest.raises(NotImplementedError, match="contracting over dense dimensions"):
        fs.bcoo_dot_general(ours, jnp.ones(4), dimension_numbers=(([1], [0]), ([], [])))
    ours, _ = _both(_rand((2, 3, 4)))
    with pytest.raises(NotImplementedError, match="must be among the batch dimensions"):
        fs.bcoo_dot_general(ours, jnp.ones((2, 4)), dimension_numbers=(([2], [1]), ([0], [0])))
    with pytest.raises(TypeError):
        fs.bcoo_dot_general(ours, jnp.ones(5), dimension_numbers=(([2], [0]), ([], [])))


def test_operators_like_jax():
    x = _rand((3, 4))
    v, w = RNG.normal(size=4).astype(np.float32), RNG.normal(size=(5, 3)).astype(np.float32)
    o, t = _both(x)
    o2, t2 = _both(_rand((3, 4)))

    def program(lib, sp, np_):
        return lambda a, b: [
            a @ np_.asarray(v), np_.asarray(w) @ a, a @ b.T, a * 3.0, 3.0 * a,
            a * np_.asarray(x), a * np_.asarray(v), a * b, a * a, a / 2.0, -a, +a, abs(a),
            a ** 3, a + b, a - b, a + np_.asarray(x), a.sum(), a.sum(0), a.sum(axis=1),
            a.astype("int32"), a.reshape(2, 6), a[1], a[:, 1:3], list(a)[2]]

    pairs = _jitted_pairs(program, (o, o2), (t, t2))
    for k, (got, want) in enumerate(pairs):
        assert isinstance(got, fs.BCOO) == isinstance(want, js.BCOO), k
        _same(got, want, rtol=1e-6)
    # eagerly: a product with a dense vector, a sparse-sparse product and a sum
    for k, got in [(0, o @ jnp.asarray(v)), (7, o * o2), (14, o + o2)]:
        _same(got, pairs[k][1], rtol=1e-6)
    with pytest.raises(NotImplementedError, match="would result in dense output"):
        o > 0  # noqa: B015
    with pytest.raises(NotImplementedError, match="Subtraction between sparse and dense"):
        o - jnp.asarray(x)
    with pytest.raises(NotImplementedError, match="Division by a sparse array"):
        1.0 / o


@pytest.mark.parametrize("n_batch,n_dense", [(0, 0), (0, 1), _slow(1, 1), _slow(2, 0)])
def test_shape_ops_and_sums_like_jax(n_batch, n_dense):
    x = _rand((2, 3, 4))
    o, t = _both(x, n_batch=n_batch, n_dense=n_dense)
    _same(o, t)

    def program(lib, sp, np_):
        def run(m, i):
            out = [sp.bcoo_reduce_sum(m, axes=axes)
                   for axes in [(0,), (1,), (2,), (0, 2), (0, 1, 2)]]
            out += [sp.bcoo_slice(m, start_indices=(0, 1, 1), limit_indices=(2, 3, 4)),
                    sp.bcoo_slice(m, start_indices=(0, 0, 0), limit_indices=(2, 3, 4),
                                  strides=(1, 2, 2)),
                    sp.bcoo_dynamic_slice(m, (1, 1, 2), (1, 2, 2)),
                    sp.bcoo_dynamic_slice(m, (i, i, i), (1, 2, 2)),  # traced start indices
                    sp.bcoo_concatenate([m, m], dimension=0),
                    sp.bcoo_concatenate([m, m], dimension=1),
                    sp.bcoo_broadcast_in_dim(m, shape=(5, 2, 3, 4),
                                             broadcast_dimensions=(1, 2, 3)),
                    sp.bcoo_rev(m, (0, 1, 2)), m * np_.asarray(x), m * m]
            if n_dense == 0:
                out += [sp.bcoo_squeeze(sp.bcoo_reshape(m, new_sizes=(2, 3, 1, 4)),
                                        dimensions=(2,)), m @ np_.ones(4)]
            if (n_batch, n_dense) != (1, 1):  # there JAX's own reshape fails to lower
                out.append(sp.bcoo_reshape(m, new_sizes=(2, 3, 2, 2)))
            return out
        return run

    pairs = _jitted_pairs(program, (o, 1), (t, 1))
    for ours, theirs in pairs:
        _same(ours, theirs, rtol=1e-6 if isinstance(theirs, jax.Array) else None)
    # eagerly: a reduction, a slice and a concatenation
    for k, got in [(3, fs.bcoo_reduce_sum(o, axes=(0, 2))),
                   (5, fs.bcoo_slice(o, start_indices=(0, 1, 1), limit_indices=(2, 3, 4))),
                   (10, fs.bcoo_concatenate([o, o], dimension=1))]:
        _same(got, pairs[k][1])
    with pytest.raises(ValueError, match="cannot select an axis to squeeze"):
        fs.bcoo_squeeze(o, dimensions=(0,))
    with pytest.raises(ValueError, match="invalid indices"):
        fs.bcoo_slice(o, start_indices=(0, 0, 0), limit_indices=(3, 3, 4))


def test_eye_empty_and_constructors_like_jax():
    for args, kw in [((3, 4), {"k": 1}), ((4, 3), {"k": -2}), ((3, 4), {"k": 1, "n_batch": 1}),
                     ((4, 3), {"k": -1, "n_batch": 1}), ((3,), {"k": 5}),
                     ((3, 3), {"n_dense": 1})]:
        _same(fs.eye(*args, **kw), js.eye(*args, **kw))
    _same(fs.empty((2, 3), n_batch=1, nse=2), js.empty((2, 3), n_batch=1, nse=2))
    _same(fs.empty((2, 3), dtype=np.int32), js.empty((2, 3), dtype=np.int32))
    import scipy.sparse
    s = scipy.sparse.random(4, 5, density=0.4, random_state=0, dtype=np.float32)
    _same(fs.BCOO.from_scipy_sparse(s), js.BCOO.from_scipy_sparse(s))
    m = fs.BCOO((jnp.ones(2), jnp.array([[0], [2]])), shape=(3,))
    assert m.block_until_ready() is m
    with pytest.raises(ValueError, match="Invalid data.shape"):
        fs.BCOO((jnp.ones(3), jnp.array([[0], [2]])), shape=(3,))
    with pytest.raises(ValueError, match="not recognized"):
        fs.empty((2,), sparse_format="csr")


def test_sparsify_like_jax():
    m = np.array([[0.0, 1.0, 0.0, 2.0], [3.0, 0.0, 0.0, 0.0], [0.0, 0.0, 4.0, 0.0]], np.float32)
    y = np.array([3.0, 6.0, 5.0], np.float32)
    o, t = _both(m)

    def program(lib, sp, np_):
        f = lambda mat, v: 2 * np_.dot(np_.log1p(mat.T), v) + 1  # noqa: E731
        g = lambda mat: np_.sin(mat) * 2 + mat  # noqa: E731  (same indices: stays sparse)
        h = lambda mat: (mat @ mat.T).sum(0)  # noqa: E731
        k = lambda mat: lib.jit(lambda q: np_.stack([q, 2 * q]))(mat)  # noqa: E731
        # a pytree of arguments, a dense argument and todense inside
        d = lambda t: sp.todense(t["a"]) + t["b"]  # noqa: E731
        return lambda mat, v: [sp.sparsify(f)(mat, v), sp.sparsify(g)(mat), sp.sparsify(h)(mat),
                               sp.sparsify(k)(mat), sp.sparsify(d)({"a": mat, "b": np_.ones(4)})]

    pairs = _jitted_pairs(program, (o, jnp.asarray(y)), (t, y))
    for ours, theirs in pairs:
        _same(ours, theirs, rtol=1e-6)
    for ours, (_, theirs) in zip(program(fluxion, fs, jnp)(o, jnp.asarray(y)), pairs):
        _same(ours, theirs, rtol=1e-6)  # Fluxion eagerly
    with pytest.raises(NotImplementedError, match="sparse rule for exp is not implemented "
                                                  "because it would result in dense output"):
        fs.sparsify(jnp.exp)(o)
    with pytest.raises(NotImplementedError, match="sparse rule for cumsum is not implemented"):
        fs.sparsify(lambda q: jnp.cumsum(q, axis=0))(o)
    with pytest.raises(NotImplementedError, match="non-positive exponent"):
        fs.sparsify(lambda q: q ** -1)(o)
    with pytest.raises(NotImplementedError, match="larger than Y.shape"):
        fs.sparsify(lambda q: q + jnp.ones(4))(o)


def test_gradients_through_data_like_jax():
    x = _rand((3, 4))
    v = RNG.normal(size=4).astype(np.float32)
    o, t = _both(x)

    def loss(lib, sp, mat_of):
        return lambda d: ((mat_of(d) @ lib.asarray(v)) ** 2).sum()

    _same(fluxion.grad(loss(jnp, fs, lambda d: fs.BCOO((d, o.indices), shape=o.shape)))(o.data),
          jax.grad(loss(jjnp, js, lambda d: js.BCOO((d, t.indices), shape=t.shape)))(t.data),
          rtol=1e-6)
    go = fluxion.grad(lambda mat: (mat @ jnp.asarray(v)).sum(), allow_int=True)(o)
    gt = jax.grad(lambda mat: (mat @ v).sum(), allow_int=True)(t)
    assert isinstance(go, fs.BCOO)
    _same(go.data, gt.data, rtol=1e-6)
    assert go.indices.dtype == gt.indices.dtype  # float0: no gradient for indices
    _same(fluxion.grad(lambda w: (o @ w).sum())(jnp.asarray(v)),
          jax.grad(lambda w: (t @ w).sum())(v), rtol=1e-6)
    _same(fluxion.grad(lambda a: fs.BCOO.fromdense(a, nse=6).data.sum())(jnp.asarray(x)),
          jax.grad(lambda a: js.BCOO.fromdense(a, nse=6).data.sum())(x))
    _same(fluxion.grad(lambda mat: fs.sparsify(lambda q: (jnp.sin(q) @ jnp.ones(4)).sum())(mat),
                       allow_int=True)(o).data,
          jax.grad(lambda mat: js.sparsify(lambda q: (jjnp.sin(q) @ jjnp.ones(4)).sum())(mat),
                   allow_int=True)(t).data, rtol=1e-6)
    # <vjp(ct), t> == <ct, jvp(t)> for the product as a function of data
    f = lambda d: fs.BCOO((d, o.indices), shape=o.shape) @ jnp.asarray(v)  # noqa: E731
    tan, ct = jnp.asarray(RNG.normal(size=o.nse).astype(np.float32)), jnp.arange(3.0)
    _, jvp_out = fluxion.jvp(f, (o.data,), (tan,))
    (vjp_out,) = fluxion.vjp(f, o.data)[1](ct)
    np.testing.assert_allclose(float((vjp_out * tan).sum()), float((ct * jvp_out).sum()),
                               rtol=1e-5)


def test_jit_and_vmap_over_bcoo_like_jax():
    x = _rand((2, 3, 4))
    v = RNG.normal(size=4).astype(np.float32)
    o, t = _both(x[0])
    _same(fluxion.jit(lambda mat, w: mat @ w)(o, jnp.asarray(v)), (o @ jnp.asarray(v)))
    _same(fluxion.jit(lambda mat: mat * 2)(o), jax.jit(lambda mat: mat * 2)(t))
    seen = []
    fluxion.jit(lambda mat: seen.append(repr(mat)) or mat)(o)
    assert seen[0].endswith(f"[{o!r}]")  # JAX: DynamicJaxprTracer[BCOO(float32[3, 4], nse=..)]
    ob, tb = _both(x, n_batch=1)
    _same(fluxion.vmap(lambda mat: mat @ jnp.asarray(v))(ob),
          jax.vmap(lambda mat: mat @ v)(tb), rtol=1e-6)
    _same(fluxion.vmap(lambda mat: mat.todense())(ob), x)
    _same(fluxion.vmap(lambda mat: mat * 2.0)(ob), jax.vmap(lambda mat: mat * 2.0)(tb))
    _same(fluxion.vmap(lambda r: fs.BCOO.fromdense(r, nse=4))(jnp.asarray(x)),
          jax.vmap(lambda r: js.BCOO.fromdense(r, nse=4))(x))
    stacked = jnp.stack([fs.BCOO((ob.data[i], ob.indices[i]), shape=(3, 4)) @ jnp.asarray(v)
                         for i in range(2)])
    _same(fluxion.vmap(lambda mat: mat @ jnp.asarray(v))(ob), stacked)
    with pytest.raises(ValueError, match="Cannot map in_axis=0 for BCOO array with n_batch=0"):
        fluxion.vmap(lambda mat: mat.todense())(o)
    with pytest.raises(fluxion.errors.ConcretizationTypeError, match="nse argument of "
                                                                      "bcoo_fromdense"):
        fluxion.jit(lambda a: fs.BCOO.fromdense(a))(x)


def test_module_names_and_layout_of_the_package():
    import fluxion.experimental.sparse.bcoo as bcoo_mod
    assert fs.BCOO is bcoo_mod.BCOO
    assert set(fs.__all__) <= set(dir(js)) | {"bcoo_eliminate_zeros", "bcsr_eliminate_zeros"}


def _same_csr(ours, theirs) -> None:
    assert isinstance(ours, fs.BCSR) and repr(ours) == repr(theirs)
    assert ours.shape == theirs.shape
    for a, b in zip(ours._bufs, theirs._bufs):
        assert_same(a, b, check_weak_type=False)


@pytest.mark.parametrize("shape,n_batch,n_dense", [((3, 4), 0, 0), _slow((2, 3, 4), 1, 0),
                                                   ((3, 4, 2), 0, 1)])
def test_bcsr_like_jax(shape, n_batch, n_dense):
    x = _rand(shape)
    for nse in (None, 9):
        ours = fs.BCSR.fromdense(x, n_batch=n_batch, n_dense=n_dense, nse=nse)
        theirs = js.BCSR.fromdense(x, n_batch=n_batch, n_dense=n_dense, nse=nse)
        _same_csr(ours, theirs)
        _same(ours.todense(), theirs.todense())
        _same(ours.to_bcoo(), theirs.to_bcoo())
        _same_csr(fs.BCSR.from_bcoo(ours.to_bcoo()), js.BCSR.from_bcoo(theirs.to_bcoo()))
        _same(fs.bcsr_extract(ours.indices, ours.indptr, x),
              js.bcsr_extract(theirs.indices, theirs.indptr, x))
        _same_csr(ours.sum_duplicates(), theirs.sum_duplicates())
        _same_csr(fs.bcsr_concatenate([ours, ours], dimension=n_batch),
                  js.bcsr_concatenate([theirs, theirs], dimension=n_batch))
        _same_csr(fluxion.jit(lambda m: m)(ours), jax.jit(lambda m: m)(theirs))
    if n_dense == 0:
        y = RNG.normal(size=(shape[-1], 3)).astype(np.float32)
        dn = (([n_batch + 1], [0]), ([], []))
        _same(fs.bcsr_dot_general(ours, y, dimension_numbers=dn),
              js.bcsr_dot_general(theirs, y, dimension_numbers=dn), rtol=1e-6)
        _same(ours @ jnp.asarray(y[:, 0]), theirs @ jjnp.asarray(y[:, 0]), rtol=1e-6)
        g = lambda lib, m, np_: lambda d: (lib.BCSR((d, m.indices, m.indptr), shape=m.shape)  # noqa: E731
                                           @ np_.asarray(y)).sum()
        _same(fluxion.grad(g(fs, ours, jnp))(ours.data), jax.grad(g(js, theirs, jjnp))(theirs.data),
              rtol=1e-6)
    if n_batch:
        _same(fluxion.vmap(lambda m: m.todense())(ours), x)
        _same_csr(fluxion.vmap(lambda r: fs.BCSR.fromdense(r, nse=5))(jnp.asarray(x)),
                  jax.vmap(lambda r: js.BCSR.fromdense(r, nse=5))(x))
    with pytest.raises(NotImplementedError, match="BCSR lhs and ndarray rhs"):
        fs.bcsr_dot_general(jnp.ones(shape[::-1]), ours, dimension_numbers=(([0], [0]), ([], [])))
    _same_csr(fs.empty(shape, sparse_format="bcsr", n_batch=n_batch, n_dense=n_dense, nse=2),
              js.empty(shape, sparse_format="bcsr", n_batch=n_batch, n_dense=n_dense, nse=2))


def test_sparse_aware_grad_and_jacobians_like_jax():
    x, y = _rand((3, 4)), RNG.normal(size=4).astype(np.float32)
    o, t = _both(x)

    def same_tree(ours, theirs):
        lo, lt = fluxion.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
        assert len(lo) == len(lt)
        assert repr(fluxion.tree_util.tree_structure(ours)).count("BCOO") == \
            repr(jax.tree_util.tree_structure(theirs)).count("BCOO")
        for a, b in zip(lo, lt):
            _same(a, b, rtol=1e-6)

    f = lambda m, v: ((m @ v) ** 2).sum()  # noqa: E731
    same_tree(fs.grad(f)(o, jnp.asarray(y)), js.grad(f)(t, y))
    same_tree(fs.grad(f, argnums=(0, 1))(o, jnp.asarray(y)), js.grad(f, argnums=(0, 1))(t, y))
    same_tree(fs.grad(f, argnums=1)(o, jnp.asarray(y)), js.grad(f, argnums=1)(t, y))
    same_tree(fs.value_and_grad(f)(o, jnp.asarray(y)), js.value_and_grad(f)(t, y))
    same_tree(fs.grad(lambda m: (f(m, jnp.asarray(y)), 2.0), has_aux=True)(o),
              js.grad(lambda m: (f(m, y), 2.0), has_aux=True)(t))
    same_tree(fs.jacfwd(lambda m: m @ jnp.asarray(y))(o), js.jacfwd(lambda m: m @ y)(t))
    same_tree(fs.jacrev(lambda m: m @ jnp.asarray(y))(o), js.jacobian(lambda m: m @ y)(t))
    same_tree(fs.grad(lambda d: f(d["m"], d["v"]))({"m": o, "v": jnp.asarray(y)}),
              js.grad(lambda d: f(d["m"], d["v"]))({"m": t, "v": y}))


def test_dot_general_sampled_like_jax():
    a, b = RNG.normal(size=(3, 5)).astype(np.float32), RNG.normal(size=(5, 4)).astype(np.float32)
    cases = []  # (lhs, rhs, indices, dimension numbers)
    for n_batch in (0, 1, 2):
        idx = np.asarray(fs.BCOO.fromdense(_rand((3, 4)), n_batch=n_batch).indices)
        cases += [(a, b, idx, (([1], [0]), ([], []))),
                  (a.T.copy(), b.T.copy(), idx, (([0], [1]), ([], [])))]
    idx = np.asarray(fs.BCOO.fromdense(_rand((3, 4))).indices)
    cases.append((a[:, 0].copy(), b[0].copy(), idx, (([], []), ([], []))))  # an outer product
    dn = (([1], [0]), ([], []))
    # JAX's in one compiled program (eagerly, a compile per operation), Fluxion's eagerly
    want = jax.jit(lambda: [js.bcoo_dot_general_sampled(*c[:3], dimension_numbers=c[3])
                            for c in cases] + [jax.grad(lambda m: js.bcoo_dot_general_sampled(
                                m, b, idx, dimension_numbers=dn).sum())(a)])()
    for c, theirs in zip(cases, want):
        _same(fs.bcoo_dot_general_sampled(*c[:3], dimension_numbers=c[3]), theirs,
              rtol=1e-5 if c[3][0][0] else None)
    _same(fluxion.grad(lambda m: fs.bcoo_dot_general_sampled(m, b, idx, dimension_numbers=dn)
                       .sum())(a), want[-1], rtol=1e-5)


def test_sparsify_control_flow_like_jax():
    x, v = _rand((3, 3), 0.6), RNG.normal(size=3).astype(np.float32)
    o, t = _both(x)

    def programs(lib, np_):
        lax = lib.lax
        return [
            lambda m, w: lax.fori_loop(0, 3, lambda i, c: m @ c, w),
            lambda m, w: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, m @ c[1]),
                                        (0, w)),
            lambda m, w: lax.cond(w[0] > 0, lambda: m @ w, lambda: w),
            lambda m, w: lax.cond(w[0] > 0, lambda a: a * 2.0, lambda a: a * 3.0, m),
            lambda m, w: lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, c[1] * 2.0),
                                        (0, m))[1],
        ]

    for ours, theirs in zip(programs(fluxion, jnp), programs(jax, jjnp)):
        got, want = fs.sparsify(ours)(o, jnp.asarray(v)), js.sparsify(theirs)(t, v)
        for a, b in zip(fluxion.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            _same(a, b, rtol=1e-5)
    # JAX refuses any scanned-over values; Fluxion takes dense ones (the dense result)
    scanned = fs.sparsify(lambda m, w: fluxion.lax.scan(lambda c, s: (m @ c * s, c.sum()), w,
                                                        jnp.arange(3.0)))(o, jnp.asarray(v))
    dense = jax.lax.scan(lambda c, s: (x @ c * s, c.sum()), v, jjnp.arange(3.0))
    for a, b in zip(fluxion.tree_util.tree_leaves(scanned), jax.tree_util.tree_leaves(dense)):
        _same(a, b, rtol=1e-5)
    with pytest.raises(NotImplementedError, match="sparse rule for scan with x values"):
        fs.sparsify(lambda m: fluxion.lax.scan(lambda c, r: (c + r.sum(), r), 0.0, m))(o)


@pytest.mark.parametrize("shape,n_batch", [((4, 3), 0), _slow((4, 3), 1), _slow((2, 4, 3), 1)])
def test_gather_and_integer_indexing_like_jax(shape, n_batch):
    o, t = _both(_rand(shape), n_batch=n_batch)
    starts = np.array([[1], [0]], np.int32)

    def program(lib, sp, np_):
        dn = lib.lax.GatherDimensionNumbers(offset_dims=tuple(range(1, len(shape))),
                                            collapsed_slice_dims=(0,), start_index_map=(0,))
        return lambda m: [m[np_.asarray(np.array([1, 0, 1]))],
                          m[np_.asarray(np.array([[1, 1], [0, 1]]))], m[..., np_.array([0, 2])],
                          sp.bcoo_gather(m, starts, dn, (1, *shape[1:]))]

    pairs = _jitted_pairs(program, (o,), (t,))
    for ours, theirs in pairs:
        _same(ours, theirs)
    _same(o[jnp.asarray(np.array([1, 0, 1]))], pairs[0][1])  # eagerly
    with pytest.raises(NotImplementedError, match="bcoo_gather: mode=.*not yet supported"):
        fs.sparsify(lambda m: jnp.take(m, jnp.array([1, 0]), axis=0))(o)


@pytest.mark.filterwarnings("ignore:Explicitly requested dtype")
def test_random_bcoo_like_jax():
    cases = [dict(shape=(3, 4)), dict(shape=(3, 4), nse=3, n_batch=1),
             dict(shape=(2, 3, 4), nse=0.5, n_dense=1, sorted_indices=True),
             dict(shape=(5, 5), nse=7, unique_indices=False),
             dict(shape=(3, 4), dtype=np.int32, minval=0, maxval=5, generator="randint")]
    for kw in cases:
        ours_kw, jax_kw = dict(kw), dict(kw)
        if "generator" in kw:
            ours_kw["generator"] = getattr(fluxion.random, kw["generator"])
            jax_kw["generator"] = getattr(jax.random, kw["generator"])
        _same(fs.random_bcoo(fluxion.random.key(3), **ours_kw),
              js.random_bcoo(jax.random.key(3), **jax_kw))
    with pytest.raises(ValueError, match="expected to be between 0 and 12"):
        fs.random_bcoo(fluxion.random.key(0), (3, 4), nse=12)


def test_jaxsparse_base_like_jax():
    o, t = fs.BCSR.fromdense(np.eye(3, dtype=np.float32)), js.BCSR.fromdense(np.eye(3))
    assert isinstance(o, fs.JAXSparse) and isinstance(fs.BCOO.fromdense(jnp.eye(2)), fs.JAXSparse)
    assert (len(o), o.size, o.ndim) == (len(t), t.size, t.ndim)
    for op in (lambda m: m * 2, lambda m: m.sum(), lambda m: -m, lambda m: m + m):
        with pytest.raises(NotImplementedError) as want:
            op(t)
        with pytest.raises(NotImplementedError) as got:
            op(o)
        assert str(got.value).rsplit(".", 1)[-1] == str(want.value).rsplit(".", 1)[-1]
    with pytest.raises(NotImplementedError, match="Transpose is not implemented"):
        o.transpose()
    with pytest.raises(NotImplementedError, match="sparsify of BCSR arguments"):
        fs.sparsify(jnp.sin)(o)
    _same(fs.todense(o), js.todense(t).astype(np.float32))

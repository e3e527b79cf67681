"""fluxion_optim.assignment against optax.assignment and scipy.optimize.linear_sum_assignment:
same pairs, same order, same dtypes; jit and vmap; optax's signature annotations."""

import inspect

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
import fluxion_optim

optax = pytest.importorskip("optax")
jax = pytest.importorskip("jax")
scipy_optimize = pytest.importorskip("scipy.optimize")

FNS = ["hungarian_algorithm", "base_hungarian_algorithm"]


def _costs(n: int, m: int, seed: int, ties: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if ties:  # few distinct values: many optimal assignments, so the tie-breaking shows
        return rng.integers(0, 3, (n, m)).astype(np.float32)
    return rng.random((n, m)).astype(np.float32)


@pytest.mark.parametrize("fn", FNS)
@pytest.mark.parametrize("shape,ties", [
    ((4, 3), True), ((3, 5), False),
    pytest.param((5, 5), True, marks=pytest.mark.slow),
    pytest.param((5, 5), False, marks=pytest.mark.slow),
    pytest.param((6, 2), False, marks=pytest.mark.slow)])
def test_same_pairs_as_optax_and_scipy(fn: str, shape: tuple[int, int], ties: bool) -> None:
    c = _costs(*shape, seed=sum(shape), ties=ties)
    i, j = getattr(fluxion_optim.assignment, fn)(jnp.asarray(c))
    ri, rj = getattr(optax.assignment, fn)(jax.numpy.asarray(c))
    np.testing.assert_array_equal(np.asarray(i), np.asarray(ri))
    np.testing.assert_array_equal(np.asarray(j), np.asarray(rj))
    assert i.dtype == ri.dtype and j.dtype == rj.dtype
    assert i.shape == (min(shape),) and j.shape == (min(shape),)
    si, sj = scipy_optimize.linear_sum_assignment(c)
    np.testing.assert_allclose(c[np.asarray(i), np.asarray(j)].sum(), c[si, sj].sum(), rtol=1e-6)
    if fn == "base_hungarian_algorithm":  # SciPy's algorithm: SciPy's pairs, in SciPy's order
        np.testing.assert_array_equal(np.asarray(i), si)
        np.testing.assert_array_equal(np.asarray(j), sj)


@pytest.mark.slow
@pytest.mark.parametrize("fn", FNS)
def test_integer_costs_docstring_example(fn: str) -> None:
    cost = [[90, 80, 75, 70], [35, 85, 55, 65], [125, 95, 90, 95], [45, 110, 95, 115],
            [50, 100, 90, 100]]
    i, j = getattr(fluxion_optim.assignment, fn)(jnp.array(cost))
    ri, rj = getattr(optax.assignment, fn)(jax.numpy.array(cost))
    assert np.asarray(i).tolist() == np.asarray(ri).tolist()
    assert np.asarray(j).tolist() == np.asarray(rj).tolist()
    assert int(jnp.array(cost)[i, j].sum()) == 265


@pytest.mark.parametrize("fn", FNS)
def test_empty(fn: str) -> None:
    for shape in [(0, 3), (2, 0)]:
        i, j = getattr(fluxion_optim.assignment, fn)(jnp.zeros(shape))
        ri, _ = getattr(optax.assignment, fn)(jax.numpy.zeros(shape))
        assert i.shape == j.shape == (0,) and i.dtype == ri.dtype


def test_jit_and_vmap() -> None:
    c = np.stack([_costs(3, 4, seed=s, ties=False) for s in range(3)])
    i, j = fluxion.vmap(fluxion.jit(fluxion_optim.assignment.hungarian_algorithm))(jnp.asarray(c))
    ri, rj = jax.vmap(optax.assignment.hungarian_algorithm)(jax.numpy.asarray(c))
    assert i.shape == (3, 3)
    np.testing.assert_array_equal(np.asarray(i), np.asarray(ri))
    np.testing.assert_array_equal(np.asarray(j), np.asarray(rj))


def test_not_a_matrix_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"hungarian_algorithm: cost_matrix must be a 2-D"):
        fluxion_optim.assignment.hungarian_algorithm(jnp.zeros(3))


def test_learning_rate_annotations_are_optax_types() -> None:
    """optax's schedule tests read ``learning_rate``'s annotation: it must be the type itself."""
    ref_types = (optax.ScalarOrSchedule, optax.Schedule)
    ours = (fluxion_optim.ScalarOrSchedule, fluxion_optim.Schedule)
    checked = 0
    for mod, ref in ((fluxion_optim, optax), (fluxion_optim.contrib, optax.contrib)):
        for name in dir(ref):
            f, g = getattr(ref, name), getattr(mod, name, None)
            if not inspect.isfunction(f) or g is None:
                continue
            p = inspect.signature(f).parameters.get("learning_rate")
            if p is None:
                continue
            q = inspect.signature(g).parameters.get("learning_rate")
            assert q is not None, name
            assert (p.annotation in ref_types) == (q.annotation in ours), (name, q.annotation)
            checked += 1
    assert checked > 30


def test_lion_bad_mode_raises_in_update_as_optax() -> None:
    tx = fluxion_optim.scale_by_lion(mode="invalid_mode")  # builds, as optax's does
    state = tx.init(jnp.zeros(2))
    with pytest.raises(ValueError, match=r"Unknown lion mode: invalid_mode"):
        tx.update(jnp.ones(2), state)

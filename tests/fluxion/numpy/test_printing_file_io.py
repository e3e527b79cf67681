"""``fluxion.numpy``'s printing and file names against ``jax.numpy`` 0.10.2: print options,
``array_repr``/``array_str``, ``save``/``savez``/``load`` (bfloat16 round trip) and ``fromfile``."""

from __future__ import annotations

import io

import jax.numpy as jnp
import numpy as np
import pytest

import fluxion.numpy as fnp


def test_printing_names_are_numpys_and_format_like_jax() -> None:
    assert fnp.array_repr is jnp.array_repr is np.array_repr
    assert fnp.array_str is jnp.array_str is np.array_str
    x, y = fnp.arange(5.0) / 3, jnp.arange(5.0) / 3
    # NumPy names the class: jax's is ArrayImpl, Fluxion's is Array
    assert fnp.array_repr(x, precision=3) == jnp.array_repr(y, precision=3).replace(
        "ArrayImpl", "Array")
    assert fnp.array_str(x, precision=2) == jnp.array_str(y, precision=2)


def test_printoptions_govern_array_printing_as_in_jax() -> None:
    before = fnp.get_printoptions()
    assert before == jnp.get_printoptions()
    x, y = fnp.array([1 / 3, 1e-9, 2.0]), jnp.array([1 / 3, 1e-9, 2.0])
    with fnp.printoptions(precision=2, suppress=True) as opts:
        assert opts["precision"] == 2 and jnp.get_printoptions()["precision"] == 2
        assert repr(x) == repr(y) == "Array([0.33, 0.  , 2.  ], dtype=float32)"
        assert str(x) == str(y)
    assert fnp.get_printoptions() == before
    try:
        assert fnp.set_printoptions(precision=3, threshold=4) is None
        assert jnp.get_printoptions()["precision"] == 3
        assert repr(fnp.arange(10.0)) == repr(jnp.arange(10.0))
        assert "..." in repr(fnp.arange(10.0))
    finally:
        np.set_printoptions(**before)
    with pytest.raises(TypeError):
        fnp.set_printoptions(no_such_option=1)


@pytest.mark.parametrize("dtype", ["float32", "int32", "bfloat16", "bool", "complex64", "uint8"])
def test_save_load_round_trip_matches_jax(dtype: str) -> None:
    values = np.array([[0, 1, 2], [3, 4, 5]]).astype(jnp.dtype(dtype))
    ours, theirs = io.BytesIO(), io.BytesIO()
    fnp.save(ours, fnp.asarray(values))
    jnp.save(theirs, jnp.asarray(values))
    assert ours.getvalue() == theirs.getvalue()
    for save_buf in (ours, theirs):
        save_buf.seek(0)
        got = fnp.load(save_buf)
        assert isinstance(got, fnp.ndarray)
        assert got.dtype == jnp.dtype(dtype) and got.shape == (2, 3)
        np.testing.assert_array_equal(np.asarray(got), values)
    theirs.seek(0)
    assert jnp.load(theirs).dtype == fnp.load(io.BytesIO(ours.getvalue())).dtype


def test_load_of_npz_and_unsupported_dtypes_gives_numpy(tmp_path) -> None:
    path = tmp_path / "arrays.npz"
    fnp.savez(path, a=fnp.arange(3), b=fnp.ones((2,), fnp.float32))
    ours, theirs = fnp.load(path), jnp.load(path)
    assert type(ours) is type(theirs) is np.lib.npyio.NpzFile
    assert sorted(ours.files) == ["a", "b"]
    np.testing.assert_array_equal(ours["a"], theirs["a"])
    text = tmp_path / "text.npy"
    np.save(text, np.array(["ab", "c"]))
    got, ref = fnp.load(text), jnp.load(text)
    assert type(got) is type(ref) is np.ndarray and got.dtype == ref.dtype


def test_fromfile_is_refused_as_in_jax(tmp_path) -> None:
    path = tmp_path / "raw.bin"
    np.arange(3, dtype=np.int32).tofile(path)
    with pytest.raises(NotImplementedError) as theirs:
        jnp.fromfile(path, dtype=np.int32)
    with pytest.raises(NotImplementedError, match=r"jnp.asarray\(np.fromfile") as ours:
        fnp.fromfile(path, dtype=np.int32)
    assert str(ours.value)[:60] == str(theirs.value)[:60]

"""SparsityPattern: conversions from every accepted input, and the errors for bad ones."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from sparsejac.pattern import PatternFileError, SparsityPattern, as_pattern, read_pattern_file

from .conftest import requires_shared, shared_matrix_files


def _dense(p: SparsityPattern) -> np.ndarray:
    return p.to_csr_array().toarray()


@pytest.mark.parametrize(
    "fmt", ["csr_array", "csc_array", "coo_array", "lil_array", "csr_matrix", "dok_array"]
)
def test_from_scipy_formats(fmt, rng):
    """Every scipy sparse format gives the same pattern as the dense nonzeros."""
    a = sp.random_array((7, 5), density=0.4, rng=rng).toarray()
    p = as_pattern(getattr(sp, fmt)(a))
    np.testing.assert_array_equal(_dense(p), a != 0)


def test_explicit_zeros_dropped():
    """A stored zero is not a structural nonzero."""
    a = sp.csr_array((np.array([1.0, 0.0]), np.array([0, 1]), np.array([0, 2, 2])), shape=(2, 2))
    assert a.nnz == 2
    assert as_pattern(a).nnz == 1


def test_duplicates_merged():
    """Duplicate coordinates count once."""
    p = SparsityPattern((2, 2), [0, 0, 1], [1, 1, 0])
    assert p.nnz == 2


def test_csc_matches_csr(rng):
    """The CSC arrays describe the same entries, rows sorted within each column."""
    a = sp.random_array((30, 20), density=0.2, rng=rng)
    p = as_pattern(a)
    c = sp.csc_array(a != 0)
    c.sort_indices()
    np.testing.assert_array_equal(p.col_indptr, c.indptr)
    np.testing.assert_array_equal(p.col_indices, c.indices)
    np.testing.assert_array_equal(p.rows[p.csc_to_csr], p.col_indices)
    np.testing.assert_array_equal(p.indices[p.csc_to_csr], np.repeat(np.arange(20), p.col_counts))


def test_transpose(rng):
    """`T` swaps rows and columns."""
    a = sp.random_array((6, 9), density=0.3, rng=rng)
    p = as_pattern(a)
    np.testing.assert_array_equal(_dense(p.T), _dense(p).T)
    assert p == p.T.T


def test_immutable():
    """Patterns cannot be modified."""
    p = as_pattern(np.eye(3))
    with pytest.raises(AttributeError):
        p.nnz = 4
    with pytest.raises(ValueError, match="read-only"):
        p.indices[0] = 2


def test_symmetric_mtx_expanded(tmp_path):
    """Symmetric Matrix Market storage gives both triangles."""
    path = tmp_path / "s.mtx"
    path.write_text(
        "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 1.0\n2 1 2.0\n3 2 0.0\n"
    )
    p = read_pattern_file(path)
    np.testing.assert_array_equal(
        _dense(p), np.array([[1, 1, 0], [1, 0, 0], [0, 0, 0]], dtype=bool)
    )


def test_npz_sparse_and_dense(tmp_path, rng):
    """.npz files with a saved sparse matrix or one dense array both read."""
    a = sp.random_array((5, 4), density=0.5, rng=rng, format="csr")
    sp.save_npz(tmp_path / "a.npz", a)
    np.savez(tmp_path / "b.npz", a.toarray())
    assert read_pattern_file(tmp_path / "a.npz") == as_pattern(a)
    assert as_pattern(str(tmp_path / "b.npz")) == as_pattern(a)


@pytest.mark.parametrize(
    ("obj", "exc", "match"),
    [
        (np.ones(3), ValueError, r"`sparsity` must be 2-D; got an array of shape \(3,\)"),
        (np.ones((2, 2, 2)), ValueError, "must be 2-D"),
        (np.ones((0, 3)), ValueError, r"at least one row.*\(0, 3\)"),
        (None, TypeError, "got NoneType"),
        (np.array([["a", "b"]]), TypeError, "dtype <U1"),
        ({1: 2}, TypeError, "got dict"),
    ],
)
def test_bad_input(obj, exc, match):
    """Bad inputs raise errors that name the argument and what was received."""
    with pytest.raises(exc, match=match):
        as_pattern(obj)


def test_bad_files(tmp_path):
    """Missing, mistyped and malformed files raise PatternFileError naming the file."""
    with pytest.raises(PatternFileError, match="no such file"):
        read_pattern_file(tmp_path / "missing.mtx")
    (tmp_path / "x.txt").write_text("1 2 3")
    with pytest.raises(PatternFileError, match=r"x\.txt: unsupported file type"):
        read_pattern_file(tmp_path / "x.txt")
    (tmp_path / "bad.mtx").write_text("this is not matrix market\n")
    with pytest.raises(PatternFileError, match=r"bad\.mtx: not a readable matrix"):
        read_pattern_file(tmp_path / "bad.mtx")
    with pytest.raises(PatternFileError, match="is a directory"):
        read_pattern_file(tmp_path)
    (tmp_path / "bad.npz").write_bytes(b"garbage")  # np.load would suggest allow_pickle
    with pytest.raises(PatternFileError, match=r"bad\.npz: .*not an \.npz archive") as info:
        read_pattern_file(tmp_path / "bad.npz")
    assert "pickle" not in str(info.value)


def test_extensions_in_any_case(tmp_path):
    """A.MTX and B.NPZ (files from case-insensitive file systems) read as .mtx and .npz."""
    scipy.io.mmwrite(tmp_path / "a.mtx", sp.coo_array(np.eye(3)))
    (tmp_path / "a.mtx").rename(tmp_path / "A.MTX")
    sp.save_npz(tmp_path / "b.npz", sp.csr_array(np.eye(2)))
    (tmp_path / "b.npz").rename(tmp_path / "B.NPZ")
    assert read_pattern_file(tmp_path / "A.MTX").nnz == 3
    assert read_pattern_file(tmp_path / "B.NPZ").shape == (2, 2)


@requires_shared
@pytest.mark.parametrize("path", shared_matrix_files(), ids=lambda p: p.stem)
def test_shared_matrices_read(path):
    """Every shared matrix reads with the nonzero count scipy gives after dropping zeros."""
    a = sp.coo_array(scipy.io.mmread(path))
    p = read_pattern_file(path)
    b = sp.csr_array(a)
    b.sum_duplicates()
    b.eliminate_zeros()
    assert p.shape == a.shape
    assert p.nnz == b.nnz


def _coordinate_pattern(a: object) -> SparsityPattern:
    """The general path: coordinates of the stored nonzeros, sorted by the constructor."""
    coo = sp.coo_array(a)
    keep = coo.data != 0
    return SparsityPattern(coo.shape, coo.row[keep], coo.col[keep])


@pytest.mark.parametrize("fmt", ["csr", "csc", "csr_matrix", "csc_matrix"])
def test_compressed_inputs_convert_without_sort_and_match_coordinates(fmt: str) -> None:
    rng = np.random.default_rng(7)
    for _ in range(60):
        m, n = (int(k) for k in rng.integers(1, 25, 2))
        a = sp.random_array((m, n), density=float(rng.random()), rng=rng, format="csr")
        given = {"csr": a, "csc": a.tocsc(), "csr_matrix": sp.csr_matrix(a),
                 "csc_matrix": sp.csc_matrix(a)}[fmt]
        before = (given.indptr.copy(), given.indices.copy(), given.data.copy())
        got, want = as_pattern(given), _coordinate_pattern(given)
        assert got == want
        for name in ("indptr", "indices", "rows", "col_indptr", "col_indices", "csc_to_csr"):
            arr = getattr(got, name)
            assert np.array_equal(arr, getattr(want, name)), name
            assert arr.dtype == np.int64
            assert not arr.flags.writeable
        # the caller's arrays are neither changed nor frozen
        for old, new in zip(before, (given.indptr, given.indices, given.data), strict=True):
            assert np.array_equal(old, new)
            assert new.flags.writeable


def test_non_canonical_and_stored_zeros_take_the_general_path() -> None:
    dup = sp.csr_array((np.array([1.0, 2.0, 0.0]), np.array([1, 1, 0]), np.array([0, 2, 3])),
                       shape=(2, 2))
    assert not dup.has_canonical_format
    p = as_pattern(dup)
    assert p.nnz == 1
    assert p.indices.tolist() == [1]
    zeros = sp.csr_array(np.array([[1.0, 0.0], [0.0, 2.0]]))
    zeros.data[0] = 0.0  # an explicit zero in canonical storage
    assert as_pattern(zeros).nnz == 1


@pytest.mark.parametrize("fmt", ["csr", "csc", "coordinates"])
def test_released_csc_arrays_are_rebuilt_equal(fmt: str) -> None:
    rng = np.random.default_rng(11)
    a = sp.random_array((30, 40), density=0.1, rng=rng, format="csr")
    p = {"csr": lambda: as_pattern(a), "csc": lambda: as_pattern(a.tocsc()),
         "coordinates": lambda: _coordinate_pattern(a)}[fmt]()
    want = {name: np.array(getattr(p, name)) for name in
            ("col_indptr", "col_indices", "csc_to_csr")}
    p.release_csc()
    assert p._col_indptr is None
    for name in ("csc_to_csr", "col_indices", "col_indptr"):  # any of them first
        p.release_csc()
        got = getattr(p, name)
        np.testing.assert_array_equal(got, want[name])
        assert not got.flags.writeable
    assert p == _coordinate_pattern(a)


def test_small_linear_maps_of_dependency_sets_match_scipys_product() -> None:
    """The sort path of ``apply_linear`` (small maps: a 2 x 2 product in a loop) gives scipy's
    boolean product, canonical, stored zeros of R dropped; larger ones take scipy's."""
    import scipy.sparse as sp

    from sparsejac.primitives import depsets

    rng = np.random.default_rng(7)
    for _ in range(200):
        m, k, n = (int(v) for v in rng.integers(0, 7, 3))
        dense = np.where(rng.random((m, k)) < 0.5, rng.integers(0, 2, (m, k)), 0)
        r = sp.csr_array(dense.astype(float))
        r.data[:] = np.where(rng.random(r.nnz) < 0.2, 0.0, r.data)  # stored zeros
        d = depsets.DepSet.of(sp.csr_array(rng.random((k, n)) < 0.4))
        got = depsets.apply_linear(r, d)
        want = sp.csr_array((r.toarray() != 0).astype(int) @ d.toarray().astype(int)) != 0
        assert got.shape == (m, n)
        np.testing.assert_array_equal(got.toarray(), want.toarray())
        for i in range(m):  # canonical: sorted, no duplicates per row
            row = got.indices[got.indptr[i]:got.indptr[i + 1]]
            assert np.all(np.diff(row) > 0)

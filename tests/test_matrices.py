"""The matrices and value arrays a prepared Jacobian hands to solvers.

Oracles: scipy's own methods on a copy built from dense arrays, ``J.tocsc()``, and the
structure/values pairs reassembled with ``coo_array``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import splu

import sparsejac


def f(x: Any) -> Any:
    r = x ** 2 - 3.0 * x
    r[1:] += x[:-1] * x[1:]
    r[:-1] -= np.sin(x[1:])
    r[0] = r[0] + 0.0 * x[-1]  # a structural nonzero that is zero in value
    return r


X0 = np.linspace(0.2, 1.4, 12)


def test_every_in_place_method_works_and_changes_nothing_inside() -> None:
    jac = sparsejac.SparseJacobian(f, X0)
    want = jac(X0).toarray()
    a = jac(X0)
    a.eliminate_zeros()               # rewrites indices and indptr in place
    a.sum_duplicates()
    a.sort_indices()
    a.data *= 2.0
    a.prune()
    a.resize((12, 12))
    np.testing.assert_array_equal(a.toarray(), 2.0 * want)
    b = jac(X0)                       # the next call is untouched
    np.testing.assert_array_equal(b.toarray(), want)
    assert b.nnz == jac.sparsity.nnz
    splu(jac(X0).tocsc())             # and a factorisation takes it as it is


def test_int64_only_where_int32_does_not_fit() -> None:
    from types import SimpleNamespace

    from sparsejac.pipeline import index_dtype

    # index_dtype reads only the sizes (a real pattern of 2**31 columns would take gigabytes)
    assert index_dtype(SimpleNamespace(nnz=2, shape=(3, 3))) is np.int32  # type: ignore[arg-type]
    assert index_dtype(SimpleNamespace(nnz=1, shape=(3, 2**31))) is np.int64  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["forward", "reverse", "fd"])
def test_csc_output_matches_tocsc(mode: str) -> None:
    jac = sparsejac.SparseJacobian(f, X0, mode=mode)
    x = X0[::-1].copy()
    csr = jac(x)
    csc = jac.evaluate(x, format="csc")
    assert csc.format == "csc"
    assert csc.has_canonical_format
    ref = csr.tocsc()
    ref.sort_indices()
    np.testing.assert_array_equal(csc.indptr, ref.indptr)
    np.testing.assert_array_equal(csc.indices, ref.indices)
    np.testing.assert_array_equal(csc.data, ref.data)


@pytest.mark.parametrize("order", ["csr", "csc"])
def test_structure_and_values_reassemble_the_jacobian(order: str) -> None:
    jac = sparsejac.SparseJacobian(f, X0)
    x = X0 * 1.1
    rows, cols = jac.structure(order)
    vals = jac.values(x, order=order)
    assert rows.size == cols.size == vals.size == jac.sparsity.nnz
    rebuilt = sp.coo_array((vals, (rows, cols)), shape=(12, 12)).toarray()
    np.testing.assert_array_equal(rebuilt, jac(x).toarray())
    if order == "csc":
        assert np.all(np.diff(cols) >= 0)
    else:
        assert np.all(np.diff(rows) >= 0)
    rows[:] = -1  # the caller's copies
    assert jac.structure(order)[0].min() == 0


def test_values_out_is_filled_in_place_and_checked() -> None:
    jac = sparsejac.SparseJacobian(f, X0)
    buf = np.full(jac.sparsity.nnz, np.nan)
    got = jac.values(X0, out=buf)
    assert got is buf
    np.testing.assert_array_equal(buf, jac(X0).data)
    csc = np.empty_like(buf)
    assert jac.values(X0, out=csc, order="csc") is csc
    with pytest.raises(ValueError, match=r"`out` must be a writeable float64 array of shape"):
        jac.values(X0, out=np.empty(3))
    with pytest.raises(ValueError, match=r"`order` must be 'csr' or 'csc'"):
        jac.values(X0, order="coo")
    with pytest.raises(ValueError, match=r"`format` must be 'csr' or 'csc'"):
        jac.evaluate(X0, format="coo")

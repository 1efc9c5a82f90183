"""Zero-dimensional and empty operands, and constants made in ``f`` (found from outside).

A hunt of numpy's argument variants found foreign errors from inside sparsejac where numpy
itself answers: an ``np.einsum`` of 0-d operands only, a sort or running extremum of an empty
array, and a percentile's ``q`` made in ``f`` with ``np.array`` (a constant, refused as a
traced ``q``). Each case here compares with hand-derived Jacobians.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import sparsejac

X = np.array([0.5, -1.0, 2.0])


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_einsum_of_zero_dimensional_operands(mode: str) -> None:
    def f(x: Any) -> Any:
        return np.atleast_1d(np.einsum(",", x[0], x[1]) + np.einsum("->", x[2] ** 2)
                             + np.tensordot(x[0], x[2], axes=0))

    want = [[X[1] + X[2], X[0], 2 * X[2] + X[0]]]
    np.testing.assert_allclose(sparsejac.jacobian(f, X, mode=mode).toarray(), want)


@pytest.mark.parametrize("select", [np.sort, np.maximum.accumulate])
def test_selections_of_empty_arrays(select: Any) -> None:
    def f(x: Any) -> Any:
        return np.concatenate([select(x[:0]), x ** 2])

    np.testing.assert_array_equal(sparsejac.jacobian(f, X).toarray(), np.diag(2 * X))
    np.testing.assert_array_equal(sparsejac.SparseJacobian(f, X)(X[::-1]).toarray(),
                                  np.diag(2 * X[::-1]))


def test_a_quantile_made_in_f_is_a_constant() -> None:
    """``q = np.array([25.0, 75.0])`` in ``f`` is a constant buffer, not a traced ``q``."""
    def f(x: Any) -> Any:
        return np.percentile(x, np.array([0.0, 100.0])) + np.quantile(x, np.full(2, 0.5))

    # min and max, then the median (x[0] = 0.5) twice
    want = [[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]]
    np.testing.assert_allclose(sparsejac.jacobian(f, X).toarray(), want)


@pytest.mark.parametrize("mode", ["auto", "forward", "reverse", "mixed"])
def test_an_empty_output_in_every_mode(mode: str) -> None:
    """An f returning an empty array: a (0, n) Jacobian in every mode (a forced mode said
    "`sparsity` must have at least one row", though no sparsity was given)."""
    got = sparsejac.jacobian(lambda x: x[:0] * 2.0, X, mode=mode)
    assert got.shape == (0, 3)
    assert got.nnz == 0


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_contractions_over_an_empty_axis(mode: str) -> None:
    """An optional block of size 0 in generic code (``A[:, :0] @ x[:0]``, an empty batch):
    numpy's broadcasting error came from inside sparsejac (its index sizes took 0 as 1)."""
    a = np.arange(6.0).reshape(2, 3)

    def f(x: Any) -> Any:
        empty = np.einsum("i,i->", x[:0], x[:0]) + np.outer(x[:0], x).sum()
        return a[:, :0] @ x[:0] + x[:2] ** 2 + empty

    np.testing.assert_array_equal(sparsejac.jacobian(f, X, mode=mode).toarray(),
                                  [[2 * X[0], 0, 0], [0, 2 * X[1], 0]])


def test_a_single_precision_quantile_is_refused_by_name() -> None:
    """numpy interpolates in a float32 ``q``'s precision: the trace's value check refused it
    blaming ``f``; the refusal now names ``q`` and the way out."""
    from sparsejac.errors import UnsupportedPrimitiveError

    for q in (np.float32(33.3), np.array([10.0, 33.3], np.float32)):
        with pytest.raises(UnsupportedPrimitiveError, match=r"float32 `q`.*float64"):
            sparsejac.jacobian(lambda x, q=q: np.atleast_1d(np.percentile(x, q)), X)
    got = sparsejac.jacobian(lambda x: np.atleast_1d(np.percentile(x, np.float64(50.0))), X)
    np.testing.assert_array_equal(got.toarray(), [[1.0, 0.0, 0.0]])

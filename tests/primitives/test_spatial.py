"""scipy.spatial.distance's pdist, cdist and squareform at traced points.

Oracles: the Lennard-Jones gradient derived by hand (pair by pair), central differences of it
for the Hessian, and central differences of numpy/scipy for the others.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy.spatial.distance import cdist, pdist, squareform

import sparsejac
from sparsejac.errors import UnsupportedPrimitiveError


def _lj(x: Any) -> Any:
    r = pdist(x.reshape(-1, 3))
    return np.sum(4 * (r ** -12 - r ** -6))


def _lj_gradient(x: np.ndarray) -> np.ndarray:
    """By hand: dE/dx_a = sum_b 4 (-12 r^-14 + 6 r^-8) (x_a - x_b)."""
    X = x.reshape(-1, 3)
    d = X[:, None, :] - X[None, :, :]
    r = np.sqrt((d ** 2).sum(-1)) + np.eye(len(X))  # (the diagonal is masked below)
    w = 4 * (-12 * r ** -14 + 6 * r ** -8) * (1 - np.eye(len(X)))
    return (w[:, :, None] * d).sum(1).ravel()


def _cd(f: Any, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    return np.array([(np.ravel(f(x + h * e)) - np.ravel(f(x - h * e))) / (2 * h)
                     for e in np.eye(x.size)]).T


def test_a_lennard_jones_cluster_by_pdist() -> None:
    """Gradient (by hand) and Hessian (central differences of the hand gradient) of a
    6-atom Lennard-Jones energy written with pdist, one-off and prepared."""
    x = np.random.default_rng(0).uniform(0.0, 2.5, 18)
    grad = sparsejac.jacobian(lambda z: np.atleast_1d(_lj(z)), x).toarray().ravel()
    np.testing.assert_allclose(grad, _lj_gradient(x), rtol=1e-13, atol=1e-12)
    want = _cd(_lj_gradient, x)
    scale = np.abs(want).max()
    np.testing.assert_allclose(sparsejac.hessian(_lj, x).toarray(), want, atol=1e-7 * scale)
    hess = sparsejac.SparseHessian(_lj, x)
    y = x + 0.05
    np.testing.assert_allclose(hess(y).toarray(), _cd(_lj_gradient, y),
                               atol=1e-7 * np.abs(want).max())


@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean", "cityblock"])
def test_cdist_and_squareform_against_central_differences(metric: str) -> None:
    anchors = np.array([[0.0, 0.0], [1.0, 2.0], [-1.0, 0.5]])

    def f(z: Any) -> Any:
        pts = z.reshape(-1, 2)
        return np.concatenate([cdist(pts, anchors, metric).ravel(),
                               squareform(pdist(pts, metric)).ravel(),
                               squareform(squareform(pdist(pts ** 2, metric)))])

    z = np.random.default_rng(1).uniform(-1.0, 1.0, 8)
    np.testing.assert_allclose(sparsejac.jacobian(f, z).toarray(), _cd(f, z),
                               rtol=1e-6, atol=1e-8)
    got = sparsejac.SparseJacobian(f, z)(z + 0.1).toarray()
    np.testing.assert_allclose(got, _cd(f, z + 0.1), rtol=1e-6, atol=1e-8)


def test_other_metrics_and_bad_shapes_are_refused() -> None:
    z = np.ones(6)
    with pytest.raises(UnsupportedPrimitiveError, match="metric='cosine'"):
        sparsejac.jacobian(lambda u: pdist(u.reshape(-1, 2), "cosine"), z)
    with pytest.raises(UnsupportedPrimitiveError, match="w"):
        sparsejac.jacobian(lambda u: pdist(u.reshape(-1, 2), "euclidean", w=np.ones(2)), z)
    with pytest.raises(ValueError, match="same number of columns"):
        sparsejac.jacobian(lambda u: cdist(u.reshape(-1, 2), np.ones((2, 3))), z)

"""The package surface: every public name is documented with a doctested example."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize._numdiff import approx_derivative

import sparsejac
import sparsejac.cli
import sparsejac.coloring
from sparsejac.coloring import orders

PUBLIC = [
    *(getattr(sparsejac.coloring, name) for name in sparsejac.coloring.__all__),
    *(getattr(sparsejac.cli, name) for name in sparsejac.cli.__all__),
    *orders.ORDERS.values(),
    sparsejac.ColoringResult.seed_matrices,
    sparsejac.ColoringResult.compress,
    sparsejac.ColoringResult.decompress,
    sparsejac.ColoringResult.decompress_data,
    sparsejac.ColoringResult.stats,
]


@pytest.mark.parametrize(
    "obj",
    [o for o in PUBLIC if inspect.isfunction(o) or inspect.isclass(o)],
    ids=lambda o: o.__qualname__,
)
def test_public_callables_have_examples(obj):
    """Every public function and class has a numpydoc docstring with an Examples section."""
    doc = inspect.getdoc(obj) or ""
    assert "Examples\n--------" in doc, f"{obj.__qualname__} has no Examples section"


def test_top_level_exports():
    """sparsejac exports color and ColoringResult."""
    assert sparsejac.color is sparsejac.coloring.color
    assert {"color", "ColoringResult"} <= set(sparsejac.__all__)


def test_groups_work_in_scipy_approx_derivative():
    """(structure, groups) from sparsejac drive scipy's sparse finite differences exactly."""
    rng = np.random.default_rng(4)
    A = sp.random_array((30, 40), density=0.1, rng=rng, format="csr")

    def f(x):
        return A @ (x**2) + np.sin(x[:30])

    x0 = rng.random(40)
    r = sparsejac.color(A + sp.eye_array(30, 40), "column")
    J = approx_derivative(f, x0, method="cs", sparsity=(r.pattern.to_csr_array(), r.column_groups))
    expected = A.toarray() * (2 * x0) + np.cos(x0[:30])[:, None] * np.eye(30, 40)
    np.testing.assert_allclose(J.toarray(), expected, rtol=1e-12, atol=1e-14)

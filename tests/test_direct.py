"""Direct assembly: J's values written from the prepared program's entries, no seeds.

Oracles: the compressed (coloured) path of the same program, which must agree bit for bit,
and hand-derived Jacobians.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import sparsejac


def stencil(x: Any) -> Any:
    return 3.0 * (np.roll(x, 1) - 2 * x + np.roll(x, -1)) + x ** 2


def stencil_jacobian(x: np.ndarray) -> np.ndarray:
    n = x.size
    j = 3.0 * (np.roll(np.eye(n), 1, axis=0) - 2 * np.eye(n) + np.roll(np.eye(n), -1, axis=0))
    return j + np.diag(2 * x)


def test_stencil_takes_the_direct_path_and_agrees_bit_for_bit() -> None:
    rng = np.random.default_rng(3)
    x0, x1 = rng.uniform(-1, 1, 500), rng.uniform(-1, 1, 500)
    auto = sparsejac.SparseJacobian(stencil, x0, engine="chain")
    forced = sparsejac.SparseJacobian(stencil, x0, mode=auto.mode, engine="chain")
    assert auto.stats()["engine"]["path"] == "direct"
    assert forced.stats()["engine"]["path"] == "compressed"
    got, want = auto(x1), forced(x1)
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.data, want.data)
    np.testing.assert_allclose(got.toarray(), stencil_jacobian(x1), rtol=0, atol=1e-14)


def test_returned_data_is_the_callers() -> None:
    """Changing a returned matrix's values changes nothing inside (constant entries too)."""
    jac = sparsejac.SparseJacobian(lambda x: 2.0 * np.roll(x, 1) - x, np.ones(6),
                                   engine="chain")
    assert jac.stats()["engine"]["path"] == "direct"
    first = jac(np.ones(6))
    keep = first.toarray()
    first.data[:] = 99.0
    np.testing.assert_array_equal(jac(np.ones(6)).toarray(), keep)


def test_out_and_a_larger_user_pattern() -> None:
    """A user pattern with extra nonzeros gets zeros there; ``out=`` is filled in place."""
    n = 40
    d = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    user = sp.csr_array(np.minimum(d, n - d) <= 2)  # periodic band, wider than the stencil
    jac = sparsejac.SparseJacobian(stencil, np.ones(n), sparsity=user, engine="chain")
    x = np.linspace(-1, 1, n)
    assert jac.stats()["engine"]["path"] == "direct"
    out = jac(np.zeros(n))
    same = jac(x, out=out)
    assert same is out
    assert out.nnz == user.nnz
    np.testing.assert_allclose(out.toarray(), stencil_jacobian(x), rtol=0, atol=1e-14)


def test_dense_output_through_a_sum() -> None:
    """Every output reads sum(sin x): dense rows, written directly all the same."""
    def f(x: Any) -> Any:
        return np.concatenate([x[1:] * x[:-1], [np.sum(x ** 2)]]) * np.sum(np.sin(x))

    jac = sparsejac.SparseJacobian(f, np.ones(30), engine="chain")
    x = np.linspace(0.1, 1, 30)
    np.testing.assert_allclose(jac(x).toarray(), sparsejac.ad.jvp(f, x, np.eye(30)),
                               rtol=1e-12, atol=1e-12)


def test_direct_programs_skip_the_colour_search() -> None:
    """The search cannot pay off without seeds; it still runs for an explicit mode."""
    x = np.ones(10_000)
    auto = sparsejac.SparseJacobian(stencil, x, engine="chain")
    forward = sparsejac.SparseJacobian(stencil, x, engine="chain", mode="forward")
    assert auto.stats()["engine"]["path"] == "direct"
    assert auto.stats()["coloring_budget"] == 0.0
    assert forward.stats()["coloring_budget"] > 0.0
    # the colouring kept for the reports and explicit modes is still a valid one
    assert auto.coloring.n_colors >= auto.stats()["lower_bound"]["column"]


def test_one_off_jacobian_keeps_natural_colours_when_they_are_good() -> None:
    """A stencil: natural-order column/row colourings only; an arrowhead: the full passes."""
    x = np.linspace(0.1, 1.0, 300)
    plan = sparsejac.pipeline.prepare(stencil, x, one_shot=True)
    assert set(plan.colorings) == {"forward", "reverse"}
    assert "one-off" in plan.reason
    np.testing.assert_allclose(plan.matrix(plan.evaluate(x)).toarray(), stencil_jacobian(x),
                               rtol=0, atol=1e-14)

    def arrow(x: Any) -> Any:
        r = x ** 2
        r[0] = r[0] + np.sum(x)
        return r + x[0]

    plan = sparsejac.pipeline.prepare(arrow, x, one_shot=True)
    assert plan.mode == "mixed"  # natural one-sided colourings need n colours here
    want = np.diag(2 * x)
    want[0, :] += 1.0
    want[:, 0] += 1.0
    np.testing.assert_allclose(sparsejac.jacobian(arrow, x).toarray(), want, rtol=0,
                               atol=1e-13)


@pytest.mark.parametrize(("m", "n", "identity"), [(16, 16, True), (64, 10, True), (1, 16, True),
                                                  (16, 17, False), (65, 10, False)])
def test_tiny_one_off_jacobian_is_uncoloured(m: int, n: int, identity: bool) -> None:
    """A one-off Jacobian of at most ONE_SHOT_IDENTITY columns and ONE_SHOT_IDENTITY_ROWS rows
    takes one forward product per column, with no colouring; a larger one is coloured. Both
    are exact against the hand-derived Jacobian of ``sin(A @ x)`` (A sparse)."""
    from sparsejac.pipeline import ONE_SHOT_IDENTITY, ONE_SHOT_IDENTITY_ROWS

    assert identity == (n <= ONE_SHOT_IDENTITY and m <= ONE_SHOT_IDENTITY_ROWS)
    rng = np.random.default_rng(m * 100 + n)
    a = rng.standard_normal((m, n)) * (rng.random((m, n)) < 0.3)
    x = rng.standard_normal(n)

    def f(z: Any) -> Any:
        return np.sin(a @ z)

    plan = sparsejac.pipeline.prepare(f, x, one_shot=True)
    assert (plan.colorings[plan.mode].order == "identity") == identity
    if identity:
        assert (plan.mode, plan.n_products, set(plan.colorings)) == ("forward", n, {"forward"})
        assert "identity seeds" in plan.reason
    want = np.cos(a @ x)[:, None] * a
    got = sparsejac.jacobian(f, x)
    np.testing.assert_allclose(got.toarray(), want, rtol=1e-15, atol=1e-15)
    assert got.nnz == int((a != 0).sum())


def test_in_order_assembly_keeps_only_csr_arrays_and_csc_still_works() -> None:
    """Entries in the pattern's own order keep no positions, share the pattern's index
    arrays, keep no rows (rebuilt from the row pointer when a path reads them), and the
    pattern's CSC arrays are released; CSC output rebuilds them, equal."""
    rng = np.random.default_rng(5)
    x0, x1 = rng.uniform(-1, 1, 300), rng.uniform(-1, 1, 300)
    jac = sparsejac.SparseJacobian(stencil, x0, engine="chain")
    engine = jac.plan.engine
    assert engine.in_order
    assert engine.direct.size == 0
    pattern = jac.plan.pattern
    assert pattern._col_indices is None  # released
    out = engine.program.out_entries
    assert out.cols is pattern.indices
    assert out._rows is None  # 8 bytes per nonzero not kept
    assert pattern._rows is None
    csr = jac(x1)
    assert out._rows is None  # the direct path never reads them
    csc = jac.evaluate(x1, format="csc")
    np.testing.assert_array_equal(csc.toarray(), csr.toarray())
    np.testing.assert_allclose(csr.toarray(), stencil_jacobian(x1), rtol=0, atol=1e-14)
    rows, cols = jac.structure("csc")
    np.testing.assert_array_equal(jac.values(x1, order="csc"), csr.toarray()[rows, cols])
    op = jac.linear_operator(x1)  # the seeded sweeps of the same entries
    v = rng.uniform(-1, 1, 300)
    np.testing.assert_allclose(op @ v, stencil_jacobian(x1) @ v, rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(out.rows, pattern.rows)  # rebuilt: the seeded sweeps


def _stencil_3d(y: Any) -> Any:
    u = y.reshape(12, 12, 12)
    lap = sum(np.roll(u, s, a) for a in range(3) for s in (1, -1)) - 6 * u
    return (lap + u * u).ravel()


def test_one_off_3d_stencil_skips_passes_that_cannot_pay() -> None:
    """Found from outside: a 3-D 7-point stencil's natural colourings have 19 colours, 12 over
    the lower bound, so a one-off ran the mandatory DSATUR passes (0.3 s a partition at
    n = 2·10⁵) to save 3 products: 2.5 times scipy's finite differences. Passes whose
    distance-2 work exceeds the products they could save are skipped."""
    x = np.linspace(0.5, 1.5, 12 ** 3)
    plan = sparsejac.pipeline.prepare(_stencil_3d, x, one_shot=True)
    assert set(plan.colorings) == {"forward", "reverse"}
    assert plan.coloring.n_colors > 7  # natural order, more than the lower bound
    jac = sparsejac.jacobian(_stencil_3d, x)
    e = np.eye(x.size)[:, :40]
    np.testing.assert_allclose(jac.toarray()[:, :40], (
        np.stack([_stencil_3d(x + 1e-6 * c) - _stencil_3d(x - 1e-6 * c) for c in e.T], 1)
        / 2e-6), rtol=1e-6, atol=1e-6)


def test_a_prepared_small_3d_stencil_does_not_load_numba() -> None:
    """Found from outside: preparing a 10³ grid's Jacobian loaded numba (its DSATUR pass has
    no numpy path at that size), doubling a short script's time; the natural colourings now
    serve until calls pay for the search."""
    import subprocess
    import sys

    code = ("import sys, numpy as np, sparsejac\n"
            "def f(y):\n"
            "    u = y.reshape(10, 10, 10)\n"
            "    return (sum(np.roll(u, s, a) for a in range(3) for s in (1, -1)) - 6 * u"
            " - u ** 3).ravel()\n"
            "y = np.linspace(0.5, 1.5, 1000)\n"
            "jac = sparsejac.SparseJacobian(f, y)\n"
            "J = jac(y)\n"
            "print('numba' in sys.modules, J.nnz)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "7000"]

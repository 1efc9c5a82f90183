"""The colour search of a prepared Jacobian waits until calls have paid for it (item 1 of the
time-to-the-answer work): deterministic, by nominal work, and exact before and after."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import sparsejac
import sparsejac.pattern
from sparsejac import deferred
from sparsejac.coloring._kernels import ORDER_INTERPRET_BELOW
from sparsejac.coloring.budget import EFFORT_UNIT
from sparsejac.deferred import search_due
from sparsejac.pipeline import prepare

_RNG = np.random.default_rng(0)
_N = 20
_T = sp.diags([np.ones(_N - 1), -2 * np.ones(_N), np.ones(_N - 1)], [-1, 0, 1])
_L = sp.csr_array(sp.kron(sp.identity(_N), _T) + sp.kron(_T, sp.identity(_N)))
_P = _RNG.permutation(_N * _N)
_L = sp.csr_array(_L[_P][:, _P])  # a 2-D Laplacian in a scrambled order


def dense_coupled(x: Any) -> Any:
    """A stencil and a dense row (a total): no direct assembly, the seeds matter."""
    return np.concatenate([(_L @ x) ** 2, [np.sum(x ** 2)]])


X0 = np.linspace(0.2, 1.4, 400)


@pytest.fixture(autouse=True)
def _no_start_charge(monkeypatch: Any, request: Any) -> None:
    """The search of these small patterns (under ORDER_INTERPRET_BELOW entries) is charged
    numba's start, and would wait for thousands of calls: the tests of its order and results
    do without that charge (its own test below keeps it)."""
    if "start" not in request.node.name:
        monkeypatch.setattr(deferred, "KERNEL_START_NS", 0.0)


def test_a_small_pattern_s_search_is_charged_the_kernels_start() -> None:
    """A pattern small enough to be coloured without compiled kernels: its search would start
    them (0.2 s, found by a Burgers solve of 200 unknowns whose search after call 20 made the
    solve 3.7 times slower than finite differences), so it waits until the calls' work pays
    for that too; a larger pattern's search is charged its budget alone."""
    jac = sparsejac.SparseJacobian(dense_coupled, X0)
    plan = jac.plan
    assert plan.pattern.nnz <= ORDER_INTERPRET_BELOW
    price = plan.pending * EFFORT_UNIT + deferred.KERNEL_START_NS
    assert search_due(plan) == math.ceil(price / (deferred.SEARCH_SHARE * plan.call_work))
    assert search_due(plan) * plan.call_work * deferred.SEARCH_SHARE >= 2.5e8
    big = dataclasses.replace(plan, pattern=sparsejac.pattern.as_pattern(
        sp.random(200, 200, density=0.5, random_state=0)))
    assert big.pattern.nnz > ORDER_INTERPRET_BELOW
    assert search_due(big) == math.ceil(plan.pending * EFFORT_UNIT
                                        / (deferred.SEARCH_SHARE * plan.call_work))


def test_the_search_runs_after_the_calls_that_pay_for_it() -> None:
    jac = sparsejac.SparseJacobian(dense_coupled, X0)
    plan = jac.plan
    due = search_due(plan)
    assert plan.pending > 0
    assert due >= 1
    first = {m: c.n_colors for m, c in plan.colorings.items()}
    for k in range(1, due):
        jac(X0 * (1 + 1e-3 * k))
        assert jac.plan is plan, f"searched at call {k}, before call {due}"
    jac(X0)
    assert jac.plan is not plan
    assert jac.plan.pending == 0.0
    assert jac.stats()["deferred_search"] is None
    after = {m: c.n_colors for m, c in jac.plan.colorings.items()}
    assert all(after[m] <= first[m] for m in first)
    assert jac.plan.seconds["deferred_search_after_calls"] == due


def test_same_colourings_as_the_search_at_once() -> None:
    """The deferred search finds exactly what preparing with the search would."""
    at_once = prepare(dense_coupled, X0)
    jac = sparsejac.SparseJacobian(dense_coupled, X0)
    jac.search()
    for m, c in at_once.colorings.items():
        np.testing.assert_array_equal(jac.plan.colorings[m].groups if m != "mixed" else
                                      jac.plan.colorings[m].column_groups,
                                      c.groups if m != "mixed" else c.column_groups)
    assert jac.mode == at_once.mode


def test_same_call_sequence_same_colourings_and_exact_values() -> None:
    a = sparsejac.SparseJacobian(dense_coupled, X0)
    b = sparsejac.SparseJacobian(dense_coupled, X0)
    want = sparsejac.jacobian(dense_coupled, X0).toarray()
    for _ in range(search_due(a.plan) + 1):
        ja, jb = a(X0), b(X0)
        np.testing.assert_allclose(ja.toarray(), want, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(ja.toarray(), jb.toarray())
        assert a.coloring.n_colors == b.coloring.n_colors
        assert a.mode == b.mode


def test_explicit_effort_or_order_searches_at_preparation() -> None:
    for kw in ({"effort": 0.01}, {"order": "natural"}, {"mode": "forward"},
               {"calibrate": True}):
        jac = sparsejac.SparseJacobian(dense_coupled, X0, **kw)
        assert jac.stats()["deferred_search"] is None, kw


def test_mandatory_passes_run_once_at_preparation(monkeypatch: Any) -> None:
    """A pattern whose natural colourings are poor (an arrowhead) gets the mandatory passes
    once: the deferred plan reuses them instead of colouring again after recording."""
    import sparsejac.coloring.by_mode as by_mode
    import sparsejac.pipeline as pipeline

    calls: list[tuple[Any, float]] = []
    colour = by_mode.colour_modes

    def counted(*args: Any) -> Any:
        calls.append((args[2], args[3]))  # the order and the effort
        return colour(*args)

    monkeypatch.setattr(pipeline, "colour_modes", counted)
    monkeypatch.setattr(by_mode, "colour_modes", counted)  # the natural-order pass

    def arrow(x: Any) -> Any:
        r = x ** 2 + np.cos(x[0])
        r[0] = np.sum(np.sin(x))
        return r

    x = np.linspace(0.1, 1.0, 300)
    jac = sparsejac.SparseJacobian(arrow, x)
    assert jac.stats()["deferred_search"] is not None  # the search still waits for calls
    assert calls.count(("best", 0.0)) == 1  # besides the natural-order pass
    assert (jac.mode, jac.n_products) == ("mixed", 3)
    exact = np.diag(2 * x)
    exact[:, 0] -= np.sin(x[0])
    exact[0] = np.cos(x)
    assert np.allclose(jac(x).toarray(), exact, rtol=1e-14, atol=1e-14)


def test_rows_that_cannot_beat_the_columns_are_not_coloured():
    """A column of many nonzeros (a bundle adjustment's camera parameters, a rate shared by
    every residual) bounds every row colouring below by its count: where the column colouring
    is no dearer, the rows are left uncoloured (seconds, on such columns, in the benchmark
    hunt's bundle adjustment) and reverse mode is never chosen. Oracle: by hand."""
    from sparsejac.coloring.by_mode import colour_modes

    def f(p):
        return p[0] * p[1:] ** 2  # every row reads p[0]

    x = np.linspace(1.0, 2.0, 200)
    jac = sparsejac.SparseJacobian(f, x)
    found = colour_modes(jac.plan.pattern, ["forward", "reverse"], "best", 0.0, None, 1.0)
    assert found["reverse"].order == "uncoloured"
    assert found["reverse"].n_colors == 199
    assert jac.mode == "forward"
    want = np.zeros((199, 200))
    want[:, 0] = x[1:] ** 2
    want[np.arange(199), np.arange(1, 200)] = 2 * x[0] * x[1:]
    np.testing.assert_allclose(jac(x).toarray(), want, rtol=1e-15)
    found = colour_modes(jac.plan.pattern, ["forward", "reverse"], "best", 0.0, None, 0.001)
    assert found["reverse"].order != "uncoloured"  # cheap reverse products: rows coloured

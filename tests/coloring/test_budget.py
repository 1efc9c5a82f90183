"""The work budget (coloring/budget.py): colourings are the same whatever the clock says."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest
import scipy.sparse as sp

import sparsejac
from sparsejac.coloring.budget import (
    Budget,
    PassCosts,
    check_effort,
    dynamic_cost,
    greedy_cost,
    prepared_effort,
)

from .helpers import banded, random_pattern


def _arrowhead(n: int) -> np.ndarray:
    a = np.eye(n)
    a[0, :] = a[:, 0] = 1
    return a


def _with_dense(a: np.ndarray, row: bool, column: bool) -> np.ndarray:
    a = a.copy()
    if row:
        a[-1, :] = 1
    if column:
        a[:, 0] = 1
    return a


PATTERNS = {
    "banded": banded(40, 2, 1),
    "banded+dense_row": _with_dense(banded(40, 1, 1), True, False),
    "banded+dense_column": _with_dense(banded(40, 1, 1), False, True),
    "arrowhead": _arrowhead(30),
    "random": random_pattern(50, 45, 0.12, 7),
}


def _clock(step: float):
    """A perf_counter that advances ``step`` seconds at every call."""
    ticks = itertools.count()
    return lambda: 1000.0 + step * next(ticks)


def _groups(r: sparsejac.ColoringResult) -> tuple:
    cg = None if r.column_groups is None else r.column_groups.tolist()
    rg = None if r.row_groups is None else r.row_groups.tolist()
    return r.partition, r.n_colors, cg, rg, r.work


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_same_colouring_under_any_clock(name, monkeypatch):
    """A very fast and a very slow clock give the colourings of the real clock, every partition."""
    a = PATTERNS[name]
    parts = ("column", "row", "bidirectional", "auto")
    real = {p: _groups(r) for p, r in sparsejac.coloring.color_partitions(a, parts).items()}
    for step in (1e-9, 10.0):
        monkeypatch.setattr(time, "perf_counter", _clock(step))
        got = {p: _groups(r) for p, r in sparsejac.coloring.color_partitions(a, parts).items()}
        monkeypatch.undo()
        assert got == real, f"{name}: the clock changed a colouring (step {step} s)"


def test_the_search_is_bounded_by_work():
    """A smaller effort stops earlier: work spent is within the limit (bar mandatory passes)."""
    a = random_pattern(60, 60, 0.12, 3)
    small = sparsejac.color(a, effort=1e-4)
    big = sparsejac.color(a, effort=2.0)
    assert 0 < small.work <= big.work
    assert small.n_colors >= big.n_colors
    zero = sparsejac.color(a, effort=0)
    assert [c.name for c in zero.candidates] == ["natural", "dsatur"]


def test_time_budget_is_an_opt_in_limit(monkeypatch):
    """With `time_budget`, a slow clock cuts the search to its mandatory passes."""
    a = random_pattern(60, 60, 0.12, 3)
    monkeypatch.setattr(time, "perf_counter", _clock(10.0))
    r = sparsejac.color(a, time_budget=1.0)
    assert [c.name for c in r.candidates] == ["natural", "dsatur"]


def test_budget_accounting():
    """fits/charge/share keep the books; a deadline in the past fits nothing."""
    b = Budget(100.0)
    assert b.fits(100.0)
    assert not b.fits(100.5)
    b.charge(40.0, "x", 0.1)
    assert (b.spent, b.left, b.slowest) == (40.0, 60.0, {"x": 0.1})
    assert b.fits(20.0, share=0.6)
    assert not b.fits(21.0, share=0.6)
    assert b.share(0.5).work == 30.0
    assert not Budget(math.inf, deadline=time.perf_counter() - 1.0).fits(0.0)
    assert Budget(math.inf).fits(1e300)


def test_cost_model():
    """Costs grow with the graph's sizes and a dynamic pass costs more than a greedy one."""
    assert greedy_cost(100, 10, 5) < greedy_cost(200, 10, 5)
    assert dynamic_cost(100, 5) > greedy_cost(100, 10, 5)
    c = PassCosts.of(1000, 200, 100)
    assert c.greedy < c.order < c.dynamic
    assert prepared_effort(0) == 0.0
    assert prepared_effort(10**12) == sparsejac.coloring.budget.PREPARED_EFFORT


@pytest.mark.parametrize(("effort", "error"), [(-1, ValueError), (math.nan, ValueError),
                                                ("1", TypeError), (True, TypeError)])
def test_bad_effort(effort, error):
    """A negative, NaN or non-numeric effort is rejected naming `effort`."""
    with pytest.raises(error, match="`effort` must be a non-negative number"):
        check_effort(effort)
    with pytest.raises(error, match="`effort`"):
        sparsejac.color(sp.eye(3), effort=effort)


def test_a_mandatory_pass_that_cannot_pay_is_skipped():
    """Found from outside: a one-off jacobian of tanh(cumsum(x)) (a lower-triangular
    pattern) ran the bidirectional search's first star step whatever the budget, O(n * nnz):
    1.5 s at n = 1,000, 45 s at n = 3,000, where dense finite differences took 0.2 s. Such a
    step is now skipped where it costs more than the products it could save in one
    Jacobian; on an arrowhead (linear cost, n passes saved) it still runs. Oracle: the
    triangle needs one colour per column one-sided; the arrowhead three passes mixed."""
    triangle = sparsejac.color(np.tril(np.ones((600, 600))), "bidirectional", order="best",
                               effort=0)
    assert [c.name for c in triangle.candidates] == ["column", "row", "largest_first(skipped)"]
    assert triangle.n_colors == 600
    arrow = np.eye(3000)
    arrow[0, :] = arrow[:, 0] = 1
    mixed = sparsejac.color(arrow, "bidirectional", order="best", effort=0)
    assert mixed.n_colors == 3
    assert "largest_first" in [c.name for c in mixed.candidates]
    # given the budget for it, the step runs
    paid = sparsejac.color(np.tril(np.ones((200, 200))), "bidirectional", order="best",
                           effort=1.0)
    assert "largest_first" in [c.name for c in paid.candidates]
    assert paid.n_colors <= 200

"""The one-sided `best` search (coloring/search.py): candidates, lower bound, budget checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sparsejac.coloring import BipartiteGraph, check_structurally_orthogonal
from sparsejac.coloring.budget import Budget, check_time_budget
from sparsejac.coloring.search import best_groups
from sparsejac.pattern import as_pattern

from .helpers import laplacian_2d, random_pattern


@pytest.mark.parametrize("partition", ["column", "row"])
def test_best_groups_is_valid_and_lists_candidates(partition):
    """The groups are structurally orthogonal, never worse than any candidate, and counted."""
    a = random_pattern(25, 30, 0.15, 3)
    s = best_groups(BipartiteGraph(as_pattern(a), partition), np.random.default_rng(0),
                    Budget(0.5e9))
    check_structurally_orthogonal(a, s.groups, partition)
    assert s.n_colors == int(s.groups.max()) + 1
    assert s.candidates[0].name == "natural"
    assert s.n_colors <= min(c.n_colors for c in s.candidates if c.name != "tabu")


def test_best_groups_stops_at_lower_bound():
    """DSATUR reaches the bound on a 2D Laplacian: nothing runs after it."""
    g = BipartiteGraph(as_pattern(laplacian_2d(12)), "column")
    s = best_groups(g, np.random.default_rng(0), Budget(math.inf))
    assert (s.n_colors, s.done) == (5, True)
    assert [c.name for c in s.candidates] == ["natural", "dsatur"]


@pytest.mark.parametrize(
    ("budget", "error"), [(-0.5, ValueError), (math.nan, ValueError), ("1", TypeError)]
)
def test_check_budget(budget, error):
    """Time budgets must be non-negative numbers or None; the message names `time_budget`."""
    with pytest.raises(error, match=r"`time_budget` must be a non-negative number of seconds"):
        check_time_budget(budget)
    assert check_time_budget(2.0) == 2.0
    assert check_time_budget(math.inf) == math.inf
    assert check_time_budget(None) is None


def test_dsatur_is_skipped_only_when_costly_and_natural_is_near_the_bound(monkeypatch):
    """A nearly dense pattern (dense without its diagonal): natural is one colour above the
    bound, and DSATUR (O(n nnz) there) is skipped when it costs more than MANDATORY_WORK
    beyond the budget; a pattern where natural is far from the bound still runs it."""
    from sparsejac.coloring import budget

    monkeypatch.setattr(budget, "MANDATORY_WORK", 0.0)  # every pass "costly"
    n = 40
    almost = BipartiteGraph(as_pattern(np.ones((n, n)) - np.eye(n)), "column")
    s = best_groups(almost, np.random.default_rng(0), Budget(0.0))
    names = [c.name for c in s.candidates]
    assert names == ["natural", "dsatur(skipped)"]
    assert (s.n_colors, s.target) == (n, n - 1)  # within the documented slack
    check_structurally_orthogonal(almost.pattern, s.groups, "column")
    # a crown graph (columns a_i = 2i and b_j = 2j + 1 share a row when i != j): natural
    # needs k colours, far from the bound of 2, so DSATUR runs whatever the cost
    k = 10
    pairs = [(i, j) for i in range(k) for j in range(k) if i != j]
    crown = np.zeros((len(pairs), 2 * k))
    for r, (i, j) in enumerate(pairs):
        crown[r, 2 * i] = crown[r, 2 * j + 1] = 1
    g = BipartiteGraph(as_pattern(crown), "column")
    s = best_groups(g, np.random.default_rng(0), Budget(0.0))
    assert [c.name for c in s.candidates][:2] == ["natural", "dsatur"]
    assert s.candidates[0].n_colors == k
    monkeypatch.undo()
    s = best_groups(almost, np.random.default_rng(0), Budget(0.0))  # cheap here: it runs
    assert [c.name for c in s.candidates][:2] == ["natural", "dsatur"]

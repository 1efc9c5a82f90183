"""The one-sided `best` search (coloring/search.py): candidates, lower bound, budget checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sparsejac.coloring import BipartiteGraph, check_structurally_orthogonal
from sparsejac.coloring.search import DEFAULT_TIME_BUDGET, best_groups, check_budget
from sparsejac.pattern import as_pattern

from .helpers import laplacian_2d, random_pattern


@pytest.mark.parametrize("partition", ["column", "row"])
def test_best_groups_is_valid_and_lists_candidates(partition):
    """The groups are structurally orthogonal, never worse than any candidate, and counted."""
    a = random_pattern(25, 30, 0.15, 3)
    s = best_groups(BipartiteGraph(as_pattern(a), partition), np.random.default_rng(0), 0.5)
    check_structurally_orthogonal(a, s.groups, partition)
    assert s.n_colors == int(s.groups.max()) + 1
    assert s.candidates[0].name == "natural"
    assert s.n_colors <= min(c.n_colors for c in s.candidates if c.name != "tabu")


def test_best_groups_stops_at_lower_bound():
    """DSATUR reaches the bound on a 2D Laplacian: nothing runs after it."""
    g = BipartiteGraph(as_pattern(laplacian_2d(12)), "column")
    s = best_groups(g, np.random.default_rng(0), math.inf)
    assert (s.n_colors, s.done) == (5, True)
    assert [c.name for c in s.candidates] == ["natural", "dsatur"]


@pytest.mark.parametrize(
    ("budget", "error"), [(-0.5, ValueError), (math.nan, ValueError), (None, TypeError)]
)
def test_check_budget(budget, error):
    """Budgets must be non-negative numbers; the message names `time_budget`."""
    with pytest.raises(error, match=r"`time_budget` must be a non-negative number of seconds"):
        check_budget(budget)
    assert check_budget(DEFAULT_TIME_BUDGET) == 2.0
    assert check_budget(math.inf) == math.inf

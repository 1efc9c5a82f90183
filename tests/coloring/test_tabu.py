"""Tabu search: valid colourings only, never worse, finds known optima, respects limits."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from sparsejac.coloring import BipartiteGraph, _kernels, check_structurally_orthogonal, tabu
from sparsejac.coloring.budget import Budget
from sparsejac.coloring.greedy import dsatur_color
from sparsejac.coloring.tabu import tabu_reduce
from sparsejac.pattern import as_pattern

from .helpers import banded, laplacian_2d, random_pattern


def test_reaches_bandwidth_from_one_colour_each():
    """From n colours, tabu search reaches the optimum l+u+1 of a banded matrix."""
    a = banded(12, 1, 2)
    g = BipartiteGraph(as_pattern(a), "column")
    out = tabu_reduce(g, np.arange(12), np.random.default_rng(0), target=g.lower_bound)
    assert out.n_colors == 4
    assert out.improved
    check_structurally_orthogonal(a, out.groups)


@pytest.mark.parametrize("partition", ["column", "row"])
@pytest.mark.parametrize("seed", range(4))
def test_valid_and_never_worse(partition, seed):
    """On random patterns the result is valid and uses at most the starting colours."""
    a = random_pattern(40, 30, 0.15, seed)
    g = BipartiteGraph(as_pattern(a), partition)
    start, _ = dsatur_color(g)
    out = tabu_reduce(g, start, np.random.default_rng(seed), patience=2000)
    assert out.n_colors <= int(start.max()) + 1
    assert out.n_colors == int(out.groups.max()) + 1
    check_structurally_orthogonal(a, out.groups, partition)


def test_objective_counts_same_colour_pairs_per_net():
    """tabu_init's objective is the number of same-colour pairs on each net."""
    a = random_pattern(15, 12, 0.3, 1)
    g = BipartiteGraph(as_pattern(a), "column")
    colors = np.random.default_rng(0).integers(0, 3, size=12)
    expected = sum(
        int(np.count_nonzero(colors[np.flatnonzero(row)] == c))
        * (int(np.count_nonzero(colors[np.flatnonzero(row)] == c)) - 1)
        // 2
        for row in a != 0
        for c in range(3)
    )
    *_, f = _kernels.tabu_init(*g.arrays, colors.copy(), 3, 0)
    assert f == expected


def test_limits():
    """No work left or a past deadline runs nothing; too large state tables skip the search."""
    g = BipartiteGraph(as_pattern(laplacian_2d(6)), "column")
    start = np.arange(36)
    for budget in (Budget(0.0), Budget(math.inf, deadline=time.perf_counter() - 1)):
        out = tabu_reduce(g, start, np.random.default_rng(0), budget=budget)
        assert (out.n_colors, out.iterations, out.improved) == (36, 0, False)
    old = tabu.MAX_TABLE_BYTES
    try:
        tabu.MAX_TABLE_BYTES = 10
        out = tabu_reduce(g, start, np.random.default_rng(0))
        assert out.iterations == 0
        assert out.n_colors == 36
    finally:
        tabu.MAX_TABLE_BYTES = old

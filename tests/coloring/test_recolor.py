"""Iterated greedy recolouring: never more colours, class orders contiguous, stopping rules."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from sparsejac.coloring import BipartiteGraph, check_structurally_orthogonal
from sparsejac.coloring.budget import Budget
from sparsejac.coloring.recolor import CLASS_ORDERS, class_order, iterated_greedy
from sparsejac.pattern import as_pattern

from .helpers import laplacian_2d, random_pattern


@pytest.mark.parametrize("kind", sorted(CLASS_ORDERS))
def test_class_order_lists_classes_contiguously(kind, rng):
    """Every class order is a permutation that lists each class as one contiguous block."""
    groups = rng.integers(0, 7, size=50)
    order = class_order(groups, kind, rng)
    np.testing.assert_array_equal(np.sort(order), np.arange(50))
    seq = groups[order]
    changes = np.count_nonzero(seq[1:] != seq[:-1])
    assert changes == np.unique(groups).size - 1


def test_class_order_unknown_kind(rng):
    """An unknown class order is rejected with the allowed ones."""
    with pytest.raises(ValueError, match=r"Unknown class order `kind` 'sideways'"):
        class_order(np.array([0, 1]), "sideways", rng)


@pytest.mark.parametrize("seed", range(5))
def test_never_more_colours(seed):
    """Each round keeps a valid colouring with no more colours than it started with."""
    a = random_pattern(30, 40, 0.12, seed)
    g = BipartiteGraph(as_pattern(a), "column")
    start = np.random.default_rng(seed).permutation(40)  # 40 colours, one per column
    out = iterated_greedy(g, start, np.random.default_rng(seed), max_rounds=20, patience=20)
    assert out.n_colors <= 40
    assert out.improved
    assert out.n_colors == int(out.groups.max()) + 1
    check_structurally_orthogonal(a, out.groups)


def test_stops_at_target_and_limits():
    """Stops at the target; respects max_rounds and a past deadline."""
    g = BipartiteGraph(as_pattern(laplacian_2d(8)), "column")
    start = np.arange(64)
    out = iterated_greedy(g, start, np.random.default_rng(0), target=64)
    assert out.rounds == 0
    assert not out.improved
    assert out.n_colors == 64
    out = iterated_greedy(g, start, np.random.default_rng(0), max_rounds=3, patience=100)
    assert out.rounds == 3
    past = Budget(math.inf, deadline=time.perf_counter() - 1)
    for budget in (Budget(0.0), past):
        out = iterated_greedy(g, start, np.random.default_rng(0), budget=budget, cost=1.0)
        assert out.rounds == 0

"""BipartiteGraph: orientation, lower bound, distance-2 degrees; partition validation."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from sparsejac.coloring import BipartiteGraph
from sparsejac.coloring.graph import (
    ONE_SIDED,
    PARTITIONS,
    bidirectional_lower_bound,
    check_partition,
)
from sparsejac.pattern import as_pattern

from .helpers import intersection_graph, small_matrices


@pytest.mark.parametrize("name", sorted(small_matrices()))
@pytest.mark.parametrize("partition", ONE_SIDED)
def test_degrees_equal_intersection_graph(name, partition):
    """Distance-2 degrees are the degrees of the intersection graph."""
    a = small_matrices()[name]
    g = BipartiteGraph(as_pattern(a), partition)
    nxg = intersection_graph(a, partition)
    assert g.degrees.tolist() == [nxg.degree(v) for v in range(g.n_vertices)]
    assert not g.degrees.flags.writeable


@pytest.mark.parametrize("partition", ONE_SIDED)
def test_orientation_and_bound(partition):
    """Column: vertices are columns, bound is the largest row count; row: the reverse."""
    a = np.array([[1, 1, 1, 0], [0, 0, 1, 0], [0, 0, 1, 1]])
    g = BipartiteGraph(as_pattern(a), partition)
    if partition == "column":
        assert (g.n_vertices, g.lower_bound, g.work) == (4, 3, 9 + 1 + 4)
        assert g.vidx[g.vptr[2] : g.vptr[3]].tolist() == [0, 1, 2]  # rows of column 2
    else:
        assert (g.n_vertices, g.lower_bound, g.work) == (3, 3, 1 + 1 + 9 + 1)
        assert g.vidx[g.vptr[0] : g.vptr[1]].tolist() == [0, 1, 2]  # columns of row 0


def test_lower_bound_of_empty_pattern_is_one():
    """An all-zero pattern still needs one group."""
    assert BipartiteGraph(as_pattern(np.zeros((2, 3))), "column").lower_bound == 1


@pytest.mark.parametrize("bad", ["columns", "auto", "", None, 1])
def test_check_partition_rejects(bad):
    """Unknown partitions raise, naming `partition`, the value and the allowed ones."""
    with pytest.raises(
        ValueError,
        match=r"Unknown `partition` .*; expected one of \['column', 'row', 'bidirectional'\]",
    ):
        check_partition(bad)


def test_check_partition_auto():
    """'auto' is accepted only where asked for, and then listed."""
    assert PARTITIONS == ("column", "row", "bidirectional")
    assert check_partition("auto", allow_auto=True) == "auto"
    with pytest.raises(ValueError, match=r"'bidirectional', 'auto'\]"):
        check_partition("both", allow_auto=True)


@pytest.mark.parametrize("name", sorted(small_matrices()))
def test_bidirectional_graph_is_augmented(name):
    """Bidirectional: vertices are columns then rows, nets the nonzeros, degrees in H."""
    a = small_matrices()[name]
    p = as_pattern(a)
    m, n = p.shape
    g = BipartiteGraph(p, "bidirectional")
    assert g.n_vertices == n + m
    assert g.net_sizes.tolist() == [2] * p.nnz
    assert g.degrees.tolist() == [*p.col_counts.tolist(), *p.row_counts.tolist()]
    h = nx.Graph()
    h.add_nodes_from(range(n + m))
    h.add_edges_from((int(j), n + int(i)) for i, j in zip(p.rows, p.indices, strict=True))
    for v in range(n + m):
        nets = g.vidx[g.vptr[v] : g.vptr[v + 1]]
        ends = {int(u) for net in nets for u in g.nidx[g.nptr[net] : g.nptr[net + 1]]} - {v}
        assert ends == set(h.neighbors(v))
    assert g.lower_bound == bidirectional_lower_bound(p)


@pytest.mark.parametrize(
    ("a", "bound"),
    [
        pytest.param(np.zeros((2, 3)), 0, id="all_zero"),
        pytest.param(np.eye(3, 4), 1, id="diagonal"),
        pytest.param(np.ones((1, 4)), 1, id="one_row"),
        pytest.param(np.ones((3, 1)), 1, id="one_column"),
        pytest.param(np.ones((2, 3)), 2, id="dense"),
    ],
)
def test_bidirectional_lower_bound(a, bound):
    """0 passes for no nonzero, 1 when rows or columns hold one nonzero each, else 2."""
    assert bidirectional_lower_bound(as_pattern(a)) == bound


def _growth_strings(k: int):
    """Every colouring of k items up to renaming colours, -1 (neutral) allowed."""
    def rec(prefix: list[int], top: int):
        if len(prefix) == k:
            yield list(prefix)
            return
        for c in range(-1, top + 2):
            yield from rec([*prefix, c], max(top, c))
    yield from rec([], -1)


def _fewest_passes(a: np.ndarray) -> int:
    """The fewest forward + reverse passes of any direct bidirectional colouring (exhaustive)."""
    rows, cols = np.nonzero(a)

    def readable(cg: list[int], rg: list[int]) -> bool:
        for i, j in zip(rows, cols, strict=True):
            if cg[j] >= 0 and sum(cg[o] == cg[j] for o in np.flatnonzero(a[i])) == 1:
                continue
            if rg[i] >= 0 and sum(rg[o] == rg[i] for o in np.flatnonzero(a[:, j])) == 1:
                continue
            return False
        return True

    best = a.shape[0] + a.shape[1]
    for cg in _growth_strings(a.shape[1]):
        p = max(cg) + 1
        if p >= best:
            continue
        for rg in _growth_strings(a.shape[0]):
            q = max(rg) + 1
            if p + q < best and readable(cg, rg):
                best = p + q
    return best


@pytest.mark.parametrize(
    ("a", "bound", "fewest"),
    [
        pytest.param(np.ones((3, 3)), 3, 3, id="dense_3x3"),
        pytest.param(np.ones((3, 4)), 3, 3, id="dense_3x4"),
        pytest.param(np.ones((4, 2)), 2, 2, id="dense_4x2"),
        pytest.param(np.vstack([np.ones((3, 4)), np.eye(1, 4)]), 3, 4, id="three_full_rows"),
        pytest.param(np.hstack([np.ones((4, 3)), np.eye(4, 1)]), 3, 4, id="three_full_columns"),
    ],
)
def test_full_rows_and_columns_raise_the_bidirectional_bound(a, bound, fewest):
    """t full rows (s full columns) need min(t, n) (min(s, m)) passes: never more than the
    exhaustive minimum over every direct bicolouring, equal to it for a dense pattern."""
    assert bidirectional_lower_bound(as_pattern(a)) == bound
    assert _fewest_passes(a) == fewest


def test_bidirectional_bound_never_exceeds_the_exhaustive_minimum():
    """Random small patterns, many with full rows or columns: bound <= the true minimum."""
    rng = np.random.default_rng(3)
    for _ in range(25):
        m, n = rng.integers(2, 5, size=2)
        a = (rng.random((m, n)) < 0.5).astype(float)
        a[rng.random(m) < 0.4] = 1.0
        a[:, rng.random(n) < 0.3] = 1.0
        if not a.any():
            continue
        assert bidirectional_lower_bound(as_pattern(a)) <= _fewest_passes(a), a


def test_dense_jacobian_skips_the_bicolouring_search():
    """A dense Jacobian: the bound is min(m, n), so the one-sided colouring ends the search
    (a star bicolouring of a dense pattern costs O(n * nnz))."""
    from sparsejac.coloring import color_partitions

    found = color_partitions(np.ones((60, 50)), ("bidirectional",))["bidirectional"]
    assert (found.n_colors, found.lower_bound) == (50, 50)
    assert found.order == "best:column"

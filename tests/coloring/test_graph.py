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

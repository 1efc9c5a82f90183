"""BipartiteGraph: orientation, lower bound, distance-2 degrees; partition validation."""

from __future__ import annotations

import numpy as np
import pytest

from sparsejac.coloring import PARTITIONS, BipartiteGraph
from sparsejac.coloring.graph import check_partition
from sparsejac.pattern import as_pattern

from .helpers import intersection_graph, small_matrices


@pytest.mark.parametrize("name", sorted(small_matrices()))
@pytest.mark.parametrize("partition", PARTITIONS)
def test_degrees_equal_intersection_graph(name, partition):
    """Distance-2 degrees are the degrees of the intersection graph."""
    a = small_matrices()[name]
    g = BipartiteGraph(as_pattern(a), partition)
    nxg = intersection_graph(a, partition)
    assert g.degrees.tolist() == [nxg.degree(v) for v in range(g.n_vertices)]
    assert not g.degrees.flags.writeable


@pytest.mark.parametrize("partition", PARTITIONS)
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


@pytest.mark.parametrize("bad", ["columns", "bidirectional", "", None, 1])
def test_check_partition_rejects(bad):
    """Unknown partitions raise, naming `partition`, the value and the allowed ones."""
    with pytest.raises(
        ValueError, match=r"Unknown `partition` .*; expected one of \['column', 'row'\]"
    ):
        check_partition(bad)

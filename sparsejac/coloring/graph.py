"""The bipartite graph of a pattern, seen from the side being coloured.

This module owns :class:`BipartiteGraph`: the four ``int64`` index arrays the compiled kernels
walk (vertex -> nets, net -> vertices), the partition names, the trivial lower bound and the
distance-2 degrees (computed once, on first use). It never builds a graph object; networkx is
only used by the tests to cross-check the kernels.

For a ``"column"`` partition the vertices are the columns and the nets are the rows: two
columns conflict when some row has a nonzero in both (they are neighbours in the
*column-intersection graph*). A ``"row"`` partition is the same with rows and columns
swapped. See Gebremedhin, Manne and Pothen (2005), "What color is your Jacobian? Graph
coloring for computing derivatives", SIAM Review 47(4), section 3.
"""

from __future__ import annotations

from functools import cached_property
from typing import Literal, get_args

import numpy as np

from sparsejac.coloring import _kernels
from sparsejac.pattern import SparsityPattern

__all__ = ["MAX_MASK_BYTES", "PARTITIONS", "BipartiteGraph", "Partition", "check_partition"]

#: Largest per-net colour-mask table of the ``O(nnz * p / 64)`` greedy kernel; beyond it
#: greedy falls back to the ``O(W)`` kernel, which needs no table.
MAX_MASK_BYTES = 128 * 2**20

#: The one-sided partitions. A later issue adds ``"bidirectional"`` and ``"auto"``; every
#: function that takes a ``partition`` validates it with :func:`check_partition`.
Partition = Literal["column", "row"]
PARTITIONS: tuple[str, ...] = get_args(Partition)


def check_partition(partition: object) -> Partition:
    """Return ``partition`` if it names a supported partition, else raise.

    Parameters
    ----------
    partition : object
        The value to check.

    Returns
    -------
    str
        ``partition`` itself, ``"column"`` or ``"row"``.

    Raises
    ------
    ValueError
        ``partition`` is not one of :data:`PARTITIONS`.

    Examples
    --------
    >>> from sparsejac.coloring.graph import check_partition
    >>> check_partition("row")
    'row'
    >>> check_partition("columns")
    Traceback (most recent call last):
        ...
    ValueError: Unknown `partition` 'columns'; expected one of ['column', 'row'].
    """
    if isinstance(partition, str) and partition in PARTITIONS:
        return partition  # type: ignore[return-value]
    raise ValueError(f"Unknown `partition` {partition!r}; expected one of {list(PARTITIONS)}.")


class BipartiteGraph:
    """Index arrays of a pattern's bipartite graph, oriented for one partition.

    Parameters
    ----------
    pattern : SparsityPattern
        The m×n pattern.
    partition : {"column", "row"}
        Which side is coloured: the *vertices* are the columns (``"column"``) or the rows
        (``"row"``); the other side are the *nets*.

    Attributes
    ----------
    pattern : SparsityPattern
    partition : str
    vptr, vidx : ndarray of int64
        For each vertex, the nets it touches (CSC arrays for ``"column"``, CSR for ``"row"``).
    nptr, nidx : ndarray of int64
        For each net, the vertices it touches.
    n_vertices : int
        Number of vertices (n for ``"column"``, m for ``"row"``).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.graph import BipartiteGraph
    >>> g = BipartiteGraph(as_pattern(np.array([[1, 1, 0], [0, 1, 1]])), "column")
    >>> g.n_vertices, g.lower_bound
    (3, 2)
    >>> g.degrees.tolist()  # column 1 shares a row with columns 0 and 2
    [1, 2, 1]
    """

    def __init__(self, pattern: SparsityPattern, partition: Partition) -> None:
        self.pattern = pattern
        self.partition = check_partition(partition)
        if partition == "column":
            self.vptr, self.vidx = pattern.col_indptr, pattern.col_indices
            self.nptr, self.nidx = pattern.indptr, pattern.indices
        else:
            self.vptr, self.vidx = pattern.indptr, pattern.indices
            self.nptr, self.nidx = pattern.col_indptr, pattern.col_indices
        self.n_vertices = int(self.vptr.size - 1)

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(vptr, vidx, nptr, nidx)``, the arguments of every kernel."""
        return self.vptr, self.vidx, self.nptr, self.nidx

    @cached_property
    def net_sizes(self) -> np.ndarray:
        """Number of vertices on each net (row counts for ``"column"``)."""
        return np.diff(self.nptr)

    @cached_property
    def lower_bound(self) -> int:
        """Largest net size, at least 1: every vertex on a net needs its own colour."""
        sizes = self.net_sizes
        return max(1, int(sizes.max()) if sizes.size else 0)

    @cached_property
    def work(self) -> int:
        """Sum of squared net sizes: the cost, in edge visits, of one greedy pass."""
        sizes = self.net_sizes
        return int(np.dot(sizes, sizes))

    @cached_property
    def color_bound(self) -> int:
        """An upper bound on the colours first-fit greedy can use, from the index pointers.

        A vertex has at most (its net count) × (largest net size - 1) distance-2
        neighbours, so first-fit never needs more than that plus one colour, nor more
        than the number of vertices. ``O(n + m)``.
        """
        per_vertex = np.diff(self.vptr)
        most_nets = int(per_vertex.max()) if per_vertex.size else 0
        biggest_net = int(self.net_sizes.max()) if self.net_sizes.size else 0
        return max(1, min(self.n_vertices, most_nets * max(biggest_net - 1, 0) + 1))

    @cached_property
    def mask_words(self) -> int:
        """64-bit words per net for the mask-based greedy kernel, or 0 if too large.

        ``ceil(color_bound / 64)``, or 0 when a ``(nets, words)`` table would exceed
        :data:`MAX_MASK_BYTES`.
        """
        words = -(-self.color_bound // 64)
        return words if (self.nptr.size - 1) * words * 8 <= MAX_MASK_BYTES else 0

    @cached_property
    def degrees(self) -> np.ndarray:
        """Distance-2 degree of every vertex (its degree in the intersection graph)."""
        deg: np.ndarray = _kernels.distance2_degrees(*self.arrays)
        deg.setflags(write=False)
        return deg

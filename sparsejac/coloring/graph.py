"""The bipartite graph of a pattern, seen from the side being coloured.

This module owns :class:`BipartiteGraph`: the four ``int64`` index arrays the compiled kernels
walk (vertex -> nets, net -> vertices), the partition names, the trivial lower bound and the
distance-2 degrees (computed once, on first use). It never builds a graph object (a
``networkx.Graph`` is available from :func:`sparsejac.coloring.interop.intersection_graph`).

For a ``"column"`` partition the vertices are the columns and the nets are the rows: two
columns conflict when some row has a nonzero in both (they are neighbours in the
*column-intersection graph*). A ``"row"`` partition is the same with rows and columns
swapped. See Gebremedhin, Manne and Pothen (2005), "What color is your Jacobian? Graph
coloring for computing derivatives", SIAM Review 47(4), section 3.

For a ``"bidirectional"`` partition the vertices are the n columns (``0..n-1``) and the m
rows (``n..n+m-1``) of the augmented graph ``H = [[0, Jᵀ], [J, 0]]``, and every nonzero is
a net of two vertices (its column and its row); so distance-2 neighbours here are the
neighbours in H, the degree of a vertex is its nonzero count, and every order of
:mod:`~sparsejac.coloring.orders` orders the vertices of H.
"""

from __future__ import annotations

from functools import cached_property
from typing import Literal, get_args

import numpy as np

from sparsejac.coloring import _kernels
from sparsejac.coloring.dense import DenseNets, select_dense_nets
from sparsejac.pattern import SparsityPattern

__all__ = [
    "DEFAULT_REVERSE_COST",
    "MAX_MASK_BYTES",
    "ONE_SIDED",
    "PARTITIONS",
    "BipartiteGraph",
    "Partition",
    "bidirectional_lower_bound",
    "check_partition",
]

#: Largest per-net colour-mask table of the ``O(nnz * p / 64)`` greedy kernel; beyond it
#: greedy falls back to the ``O(W)`` kernel, which needs no table.
MAX_MASK_BYTES = 128 * 2**20

#: The partitions a colouring can have: columns only (forward mode), rows only (reverse
#: mode), or both (mixed mode). ``sparsejac.color`` also accepts ``"auto"``, which picks one
#: of them; every function that takes a ``partition`` validates it with
#: :func:`check_partition`.
Partition = Literal["column", "row", "bidirectional"]
PARTITIONS: tuple[str, ...] = get_args(Partition)

#: Cost of a reverse product relative to a forward one, used by ``partition="auto"`` and by
#: ``SparseJacobian(mode="auto", calibrate=False)``. Measured by ``benchmarks/reverse_cost.py``
#: (8 seeds each way, eager and prepared evaluation, five benchmark problems): the ratios run
#: from 0.65 to 1.49 with median 1.00. Ties go to forward mode.
DEFAULT_REVERSE_COST = 1.0
#: The one-sided partitions.
ONE_SIDED: tuple[str, ...] = ("column", "row")


def check_partition(partition: object, *, allow_auto: bool = False) -> str:
    """Return ``partition`` if it names a supported partition, else raise.

    Parameters
    ----------
    partition : object
        The value to check.
    allow_auto : bool, optional
        Also accept ``"auto"``.

    Returns
    -------
    str
        ``partition`` itself: one of :data:`PARTITIONS` (or ``"auto"``).

    Raises
    ------
    ValueError
        ``partition`` is not one of :data:`PARTITIONS` (nor ``"auto"`` when allowed).

    Examples
    --------
    >>> from sparsejac.coloring.graph import check_partition
    >>> check_partition("row")
    'row'
    >>> check_partition("columns")
    Traceback (most recent call last):
        ...
    ValueError: Unknown `partition` 'columns'; expected one of ['column', 'row', \
'bidirectional'].
    """
    allowed = [*PARTITIONS, "auto"] if allow_auto else list(PARTITIONS)
    if isinstance(partition, str) and partition in allowed:
        return partition
    raise ValueError(f"Unknown `partition` {partition!r}; expected one of {allowed}.")


class BipartiteGraph:
    """Index arrays of a pattern's bipartite graph, oriented for one partition.

    Parameters
    ----------
    pattern : SparsityPattern
        The m×n pattern.
    partition : {"column", "row", "bidirectional"}
        Which side is coloured: the *vertices* are the columns (``"column"``) or the rows
        (``"row"``), and the other side are the *nets*; or (``"bidirectional"``) the
        vertices are the columns then the rows, and the nets are the nonzeros.

    Attributes
    ----------
    pattern : SparsityPattern
    partition : str
    vptr, vidx : ndarray of int64
        For each vertex, the nets it touches (CSC arrays for ``"column"``, CSR for ``"row"``;
        the CSR positions of its nonzeros for ``"bidirectional"``).
    nptr, nidx : ndarray of int64
        For each net, the vertices it touches.
    n_vertices : int
        Number of vertices (n for ``"column"``, m for ``"row"``, n + m for
        ``"bidirectional"``).

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

    def __init__(self, pattern: SparsityPattern, partition: str) -> None:
        self.pattern = pattern
        self.partition = check_partition(partition)
        if partition == "column":
            self.vptr, self.vidx = pattern.col_indptr, pattern.col_indices
            self.nptr, self.nidx = pattern.indptr, pattern.indices
        elif partition == "row":
            self.vptr, self.vidx = pattern.indptr, pattern.indices
            self.nptr, self.nidx = pattern.col_indptr, pattern.col_indices
        else:
            nnz = pattern.nnz
            self.vptr = _readonly(np.concatenate((pattern.col_indptr, pattern.indptr[1:] + nnz)))
            self.vidx = _readonly(np.concatenate((pattern.csc_to_csr, np.arange(nnz))))
            self.nptr = _readonly(np.arange(0, 2 * nnz + 1, 2, dtype=np.int64))
            # nidx (2 nnz entries) is made on first use: the star bicolouring never reads it
        self.n_vertices = int(self.vptr.size - 1)

    @cached_property
    def nidx(self) -> np.ndarray:
        """For each net, the vertices it touches (set at construction when one-sided)."""
        pattern = self.pattern
        nidx = np.empty(2 * pattern.nnz, dtype=np.int64)  # each net: a column, then a row
        nidx[0::2] = pattern.indices
        nidx[1::2] = pattern.rows + pattern.shape[1]
        return _readonly(nidx)

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
        """No colouring has fewer colours.

        One-sided: the largest net size, at least 1 (every vertex on a net needs its own
        colour). Bidirectional: :func:`bidirectional_lower_bound` (in passes).
        """
        if self.partition == "bidirectional":
            return bidirectional_lower_bound(self.pattern)
        sizes = self.net_sizes
        return max(1, int(sizes.max()) if sizes.size else 0)

    @cached_property
    def pair_work(self) -> int:
        """Sum of squared net sizes: the pairs a walk over every net visits."""
        sizes = self.net_sizes
        return int(np.dot(sizes, sizes))

    @cached_property
    def work(self) -> int:
        """The walk work of one pass: what the kernels visit, in edge visits.

        Without dense nets, :attr:`pair_work` (the sum of squared net sizes). With dense
        nets (:attr:`dense`), the sum of squared sizes of the other nets plus ``n_vertices``
        per group of the dense structure: the dense nets are never walked pair by pair.
        """
        if self.dense is None:
            return self.pair_work
        light = np.delete(self.net_sizes, self.dense.nets)
        return int(np.dot(light, light)) + self.dense.n_groups * self.n_vertices

    @cached_property
    def dense(self) -> DenseNets | None:
        """The dense nets and their group structure (:mod:`~sparsejac.coloring.dense`).

        None when no net is dense, and always for ``"bidirectional"`` (every net is one
        nonzero). Computed once, on first use, in ``O(nnz + W_light)``.
        """
        if self.partition == "bidirectional":
            return None
        candidates = select_dense_nets(self.net_sizes, self.n_vertices)
        if candidates.size == 0:
            return None
        return DenseNets.for_graph(self.arrays, candidates)

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

    @property
    def seen_table_bytes(self) -> int:
        """Bytes of DSATUR's seen-colour bit table (larger colours go to a hash set).

        At most 64 MiB and 16 bytes per incidence (nonzero), so memory stays linear in nnz.
        """
        return int(min(_kernels.SEEN_TABLE_BYTES, _kernels.SEEN_BYTES_PER_INCIDENCE
                       * max(int(self.vidx.size), self.n_vertices, 1)))

    @cached_property
    def degrees(self) -> np.ndarray:
        """Distance-2 degree of every vertex (its degree in the intersection graph).

        For ``"bidirectional"``: the degree in H, the nonzero count of the column or row.
        """
        if self.partition == "bidirectional":
            deg = np.diff(self.vptr)
        elif self.dense is not None:
            deg = self.dense.degrees
        else:
            deg = _kernels.distance2_degrees(*self.arrays)
        deg.setflags(write=False)
        return deg


def _readonly(a: np.ndarray) -> np.ndarray:
    out = np.ascontiguousarray(a, dtype=np.int64)
    out.setflags(write=False)
    return out


def bidirectional_lower_bound(pattern: SparsityPattern) -> int:
    """A lower bound on the passes (forward + reverse) of any bidirectional colouring.

    0 for an all-zero pattern; 1 when every row or every column has at most one nonzero
    (one forward or one reverse pass then recovers everything); else 2, since one pass of
    either kind recovers only patterns of that shape.

    Rows with many nonzeros raise it: if ``k`` rows each have at least ``c`` of the ``n``
    columns, any two of them share at least ``2c - n`` columns, and at least
    ``min(k, 2c - n)`` passes are needed (a dense Jacobian needs ``min(m, n)``, a dense one
    without its diagonal ``n - 2``); the same holds for columns. Proof: unless the ``k`` rows
    have ``k`` different reverse colours (``k`` passes), two of them share a colour, or one
    has none. Take two rows sharing a colour: in each column ``j`` they share, the reverse
    product holds both entries, so the first row's entry ``(i, j)`` must be read from a
    forward product, alone among row ``i``'s nonzeros in its colour; these ``2c - n`` or
    more columns then need different forward colours. A row without a reverse colour has
    all its ``c >= 2c - n`` entries read that way.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.graph import bidirectional_lower_bound
    >>> bidirectional_lower_bound(as_pattern(np.eye(3)))
    1
    >>> bidirectional_lower_bound(as_pattern(np.ones((2, 2))))
    2
    >>> bidirectional_lower_bound(as_pattern(np.ones((5, 7))))
    5
    >>> bidirectional_lower_bound(as_pattern(np.ones((9, 9)) - np.eye(9)))
    7
    """
    if pattern.nnz == 0:
        return 0
    m, n = pattern.shape
    most_in_row = int(pattern.row_counts.max())
    most_in_col = int(pattern.col_counts.max())
    bound = 1 if min(most_in_row, most_in_col) <= 1 else 2
    if 2 * most_in_row - n >= 3:  # else no row can raise it (the usual sparse pattern)
        bound = max(bound, _overlap_bound(pattern.row_counts, n))
    if 2 * most_in_col - m >= 3:
        bound = max(bound, _overlap_bound(pattern.col_counts, m))
    return bound


def _overlap_bound(counts: np.ndarray, width: int) -> int:
    """``max over k of min(k, 2 c_k - width)``, ``c_k`` the k-th largest count.

    Only counts with ``2 c - width >= 3`` can raise the bound past the 2 that any pattern
    with such rows already has, so only those are sorted (usually none: one pass).
    """
    big = counts[2 * np.asarray(counts, dtype=np.int64) - width >= 3]
    if not big.size:
        return 0
    c = np.sort(big.astype(np.int64))[::-1]
    k = np.arange(1, c.size + 1, dtype=np.int64)
    return int(np.minimum(k, 2 * c - width).max())

"""Bidirectional colouring (mixed mode): star bicolouring, neutral colours, and its ``best``.

A bidirectional colouring gives *forward* colours to some columns and *reverse* colours to
some rows (-1, the *neutral* colour, elsewhere); ``p`` forward products ``B = J @ S`` and
``q`` reverse products ``C = W @ J`` then hold every nonzero alone, in ``B[i, colour of
j]`` or in ``C[colour of i, j]``. One dense row costs a column colouring n colours and one
dense column costs a row colouring m, but a bicolouring only a few: an arrowhead (dense
first row and column plus the diagonal) needs 3 passes instead of n.

This module owns the constructions and the ``order="best"`` search for
``partition="bidirectional"``:

* :func:`star_bicoloring` -- a greedy star colouring of the augmented graph ``H = [[0,
  Jᵀ], [J, 0]]`` (columns and rows are its vertices, nonzeros its edges), with forward and
  reverse colours numbered separately (Gebremedhin, Manne and Pothen 2005, section 5;
  Gebremedhin, Tarafdar, Manne and Pothen 2007, Algorithm 4.1, as in
  SparseMatrixColorings.jl). With ``covering="implicit"`` (the default, after ColPack's
  implicit-covering star bicolouring) a vertex whose nonzeros all have a coloured end
  when its turn comes stays neutral; ``covering="full"`` colours every vertex.
* :func:`neutralize` -- the neutral-colour post-processing (Montoison, Dalle and
  Gebremedhin 2025): a colour class whose nonzeros are all readable from the other side
  is not needed. Which classes to keep is a minimum vertex cover in a small bipartite
  graph (column classes × row classes, an edge per nonzero readable from both), solved
  exactly by König's theorem, so no class-level post-processing keeps fewer colours.
* :func:`color_assignment` -- given which nonzeros to read from ``C`` (the others from
  ``B``), colour the columns and the rows with the one-sided ``best`` search of
  :mod:`~sparsejac.coloring.search` (DSATUR, restarts, recolouring, tabu search) on the
  exact conflicts. This gives the *split* constructions (dense rows in reverse,
  everything else forward, or the transpose), and re-colours a star bicolouring with
  stronger one-sided colourings.
* :func:`best_bicoloring` -- the search, below.

``order="best"`` for ``"bidirectional"`` -- in this sequence, keeping the fewest passes
(ties: the lower cost ``p + reverse_cost * q``):

1. the best column colouring and the best row colouring (every row, or every column,
   neutral): so ``best`` never needs more passes than either one-sided colouring;
2. star bicolourings (implicit covering, then full) in :data:`STAR_ORDERS`, each stopped
   early once it needs more than ``2 * best + 8`` colours before post-processing (a dense
   row makes a bad order cost ``O(n)`` colours; the kernel keeps bit sets for the few
   vertices of high degree, so the time stays near-linear);
3. the split constructions for the ``k`` densest rows (or columns), ``k`` growing while
   a split can still win (fewer passes, or as many at a lower cost), coloured by DSATUR;
4. :data:`N_RANDOM` star bicolourings in seeded random orders;
5. the best candidate of each kind (star, split) re-coloured by :func:`color_assignment`
   (the nonzeros readable from both sides read from B, then from C), then the best
   bicolouring so far, alternately, until :data:`MAX_STALE` rounds bring nothing, with the
   time that is left.

Each step starts only if its cost, predicted by the fixed cost model of
:mod:`~sparsejac.coloring.budget`, fits in the work budget (the one-sided searches of step 1
have their own budget of the same size each, unless the caller passes their results), except
the first star order of step 2 and, where some row or column has more than
:data:`~sparsejac.coloring.orders.DENSE_FACTOR` times the mean count, the two dense-first
orders: these always run, so that even ``effort=0`` colours an arrowhead in 3 passes rather
than n, except on a nearly dense pattern, where the best one-sided colouring is near the
lower bound and a star pass costs ``O(n * nnz)`` (:func:`~.budget.skip_mandatory`).
With the opt-in wall-clock limit a step must also be predicted to end in time. The search
stops at the lower bound.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from sparsejac.coloring import _bikernels
from sparsejac.coloring.budget import Budget, PassCosts, dynamic_cost, skip_mandatory, star_cost
from sparsejac.coloring.graph import (
    DEFAULT_REVERSE_COST,
    BipartiteGraph,
    bidirectional_lower_bound,
)
from sparsejac.coloring.greedy import dsatur_color, kernel_array
from sparsejac.coloring.orders import BIDIRECTIONAL_ORDERS, dense_lines
from sparsejac.coloring.result import Candidate
from sparsejac.coloring.search import best_groups
from sparsejac.pattern import SparsityPattern

__all__ = [
    "MAX_NET_ENTRIES",
    "MAX_ROUNDS",
    "MAX_STALE",
    "NET_ENTRIES_PER_NONZERO",
    "N_RANDOM",
    "STAR_ORDERS",
    "BiSearch",
    "augmented_arrays",
    "best_bicoloring",
    "color_assignment",
    "compact",
    "neutralize",
    "passes",
    "star_bicoloring",
]

#: Orders tried by ``best`` for star bicolourings, in this sequence.
STAR_ORDERS = (
    "largest_first",
    "dynamic_largest_first",
    "dsatur",
    "dense_rows_first",
    "dense_columns_first",
    "smallest_last",
    "incidence_degree",
)
#: Seeded random orders tried by ``best`` (step 4).
N_RANDOM = 2
#: Rounds of step 5 that re-colour the best bicolouring so far, at most.
MAX_ROUNDS = 8
#: Step 5 stops after this many rounds in a row without fewer passes.
MAX_STALE = 3
#: Entries per nonzero of the pattern that the exact conflict nets of :func:`color_assignment`
#: may have (and never more than :data:`MAX_NET_ENTRIES`); a row whose nonzeros are read
#: partly from B and partly from C and that would exceed this becomes one net (more
#: conflicts), the rows with the most entries first.
NET_ENTRIES_PER_NONZERO = 8
#: The most entries of the conflict nets, whatever the pattern's size.
MAX_NET_ENTRIES = 20_000_000

Covering = Literal["implicit", "full"]


# -- small helpers ------------------------------------------------------------------------


def passes(groups: np.ndarray) -> int:
    """Number of colours of a groups array with -1 for neutral (``max + 1``, at least 0).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.coloring.bicolor import passes
    >>> passes(np.array([-1, 2, 0])), passes(np.array([-1, -1]))
    (3, 0)
    """
    return max(int(groups.max()) + 1, 0) if groups.size else 0


def compact(groups: np.ndarray) -> np.ndarray:
    """Renumber the colours in use to ``0..k-1`` (in increasing order); -1 stays -1.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.coloring.bicolor import compact
    >>> compact(np.array([4, -1, 2, 4])).tolist()
    [1, -1, 0, 1]
    """
    groups = np.asarray(groups, dtype=np.int64)
    used = groups >= 0
    out = np.full(groups.shape, -1, dtype=np.int64)
    if used.any():
        _, out[used] = np.unique(groups[used], return_inverse=True)
    return out


def augmented_arrays(
    pattern: SparsityPattern, graph: BipartiteGraph | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ptr, adj, eid)``: neighbours of every vertex of H and the nonzero joining them.

    Vertices ``0..n-1`` are the columns, ``n..n+m-1`` the rows; ``eid`` holds CSR positions.
    ``ptr`` and ``eid`` are the ``vptr`` and ``vidx`` of the bidirectional
    :class:`~sparsejac.coloring.graph.BipartiteGraph`, shared when ``graph`` is given.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.bicolor import augmented_arrays
    >>> ptr, adj, eid = augmented_arrays(as_pattern(np.array([[1, 1], [0, 1]])))
    >>> ptr.tolist(), adj.tolist(), eid.tolist()  # column 1 meets rows 0, 1 (vertices 2, 3)
    ([0, 1, 3, 5, 6], [2, 2, 3, 0, 1, 1], [0, 1, 2, 0, 1, 2])
    """
    n = pattern.shape[1]
    if graph is None:
        graph = BipartiteGraph(pattern, "bidirectional")
    adj = np.concatenate((pattern.col_indices + n, pattern.indices))
    return kernel_array(graph.vptr), kernel_array(adj), kernel_array(graph.vidx)


# -- star bicolouring ---------------------------------------------------------------------


def star_bicoloring(
    pattern: SparsityPattern,
    order: np.ndarray,
    *,
    covering: Covering = "implicit",
    postprocess: bool = True,
    shared_colors: bool = False,
    limit: int | None = None,
    arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray] | None:
    """Star bicolouring of ``pattern`` by greedy star colouring of H in ``order``.

    Parameters
    ----------
    pattern : SparsityPattern
        The m×n pattern.
    order : ndarray of int
        A permutation of the ``n + m`` vertices of H (columns ``0..n-1``, then rows).
    covering : {"implicit", "full"}, default "implicit"
        ``"implicit"``: a vertex whose nonzeros already all have a coloured end stays
        neutral (ColPack's implicit covering); ``"full"``: every non-empty vertex is
        coloured (then post-processing finds the neutral ones).
    postprocess : bool, default True
        Remove the colours not needed for recovery (:func:`neutralize`).
    shared_colors : bool, default False
        Draw column and row colours from one sequence, as a symmetric star colouring of H
        does (SparseMatrixColorings.jl), then renumber each side; by default each side has
        its own sequence, which never needs more colours.
    limit : int, optional
        Give up (return None) once more than ``limit`` colours are used before
        post-processing.
    arrays : tuple, optional
        :func:`augmented_arrays` of ``pattern``, if already computed.

    Returns
    -------
    (column_groups, row_groups) or None
        Forward colours of the columns and reverse colours of the rows, -1 for neutral.

    References
    ----------
    A. H. Gebremedhin, A. Tarafdar, F. Manne and A. Pothen, "New acyclic and star coloring
    algorithms with application to computing Hessians", SIAM J. Sci. Comput. 29(3) (2007),
    Algorithm 4.1.

    A. Montoison, G. Dalle and A. H. Gebremedhin, "Revisiting sparse matrix coloring and
    bicoloring" (2025).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.bicolor import star_bicoloring
    >>> J = as_pattern(np.fliplr(np.eye(4)))  # anti-diagonal: one pass suffices
    >>> cg, rg = star_bicoloring(J, np.arange(8), covering="full", postprocess=False)
    >>> cg.tolist(), rg.tolist()
    ([0, 0, 0, 0], [0, 0, 0, 0])
    >>> cg, rg = star_bicoloring(J, np.arange(8), covering="full")
    >>> cg.tolist(), rg.tolist()
    ([0, 0, 0, 0], [-1, -1, -1, -1])
    """
    m, n = pattern.shape
    if covering not in ("implicit", "full"):
        raise ValueError(f"Unknown `covering` {covering!r}; expected 'implicit' or 'full'.")
    ptr, adj, eid = augmented_arrays(pattern) if arrays is None else arrays
    cap = n + m if limit is None else min(int(limit), n + m)
    color, n_side = _bikernels.star_bicolor(
        ptr,
        adj,
        eid,
        pattern.rows,
        pattern.indices,
        n,
        kernel_array(order),
        covering == "implicit",
        shared_colors,
        cap,
        _bikernels.BIG_MIN,  # every argument given: numba's fast dispatch skips defaults
        _bikernels.MAX_BIG,
    )
    if int(n_side[0] + n_side[1]) > cap:
        return None
    cg, rg = compact(color[:n]), compact(color[n:])
    if postprocess:
        return neutralize(pattern, cg, rg)
    return cg, rg


# -- neutral-colour post-processing -------------------------------------------------------


def _readable(pattern: SparsityPattern, cg: np.ndarray, rg: np.ndarray) -> tuple[Any, Any]:
    return _bikernels.recoverable(  # type: ignore[no-any-return]
        pattern.indptr,
        pattern.indices,
        pattern.col_indptr,
        pattern.col_indices,
        pattern.csc_to_csr,
        kernel_array(cg),
        kernel_array(rg),
        passes(cg),
        passes(rg),
    )


def _min_cover(a: np.ndarray, b: np.ndarray, p: int, q: int) -> tuple[np.ndarray, np.ndarray]:
    """Minimum vertex cover of the bipartite graph with edges ``(a[k], b[k])`` (König)."""
    # scipy.sparse.csgraph imports scipy.sparse.linalg (a tenth of a second): only here
    from scipy.sparse.csgraph import breadth_first_order, maximum_bipartite_matching

    graph = sp.csr_array((np.ones(a.size, dtype=np.int8), (a, b)), shape=(p, q))
    graph.sum_duplicates()
    match = maximum_bipartite_matching(graph, perm_type="column")  # right vertex per left
    has_edge = np.diff(graph.indptr) > 0
    # Alternating paths from the unmatched left vertices: left -> right along any edge,
    # right -> left along the matching. Node p + q is a source joined to their starts.
    coo = graph.tocoo()
    matched = np.flatnonzero(match >= 0)
    starts = np.flatnonzero(has_edge & (match < 0))
    src = np.concatenate((coo.row, p + match[matched], np.full(starts.size, p + q)))
    dst = np.concatenate((p + coo.col, matched, starts))
    walk = sp.csr_array((np.ones(src.size, dtype=np.int8), (src, dst)), shape=(p + q + 1,) * 2)
    reached = np.zeros(p + q + 1, dtype=bool)
    reached[breadth_first_order(walk, p + q, directed=True, return_predecessors=False)] = True
    keep_left = has_edge & ~reached[:p]
    keep_right = reached[p : p + q]
    return keep_left, keep_right


def neutralize(
    pattern: SparsityPattern, column_groups: np.ndarray, row_groups: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Make neutral every colour class not needed for recovery (fewest classes kept).

    A nonzero readable only from B needs its column's class, one readable only from C its
    row's class, and one readable from both needs either. Removing whole classes changes
    no other class's readability, so the classes to keep are the forced ones plus a
    minimum vertex cover of the bipartite graph (column classes × row classes) of the
    nonzeros readable from both and not yet covered: König's theorem gives it from a
    maximum matching. The result is renumbered without gaps.

    Parameters
    ----------
    pattern : SparsityPattern
        The m×n pattern.
    column_groups, row_groups : ndarray of int
        A valid bicolouring (-1 for neutral).

    Returns
    -------
    (column_groups, row_groups)
        The bicolouring with the classes not needed made neutral.

    Raises
    ------
    ValueError
        The input does not recover every nonzero.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.bicolor import neutralize
    >>> J = as_pattern(np.eye(3))  # every nonzero readable from both sides
    >>> cg, rg = neutralize(J, np.array([0, 0, 0]), np.array([0, 0, 0]))
    >>> cg.tolist(), rg.tolist()
    ([0, 0, 0], [-1, -1, -1])
    """
    cg = np.asarray(column_groups, dtype=np.int64)
    rg = np.asarray(row_groups, dtype=np.int64)
    p, q = passes(cg), passes(rg)
    from_b, from_c = _readable(pattern, cg, rg)
    lost = np.flatnonzero(~(from_b | from_c))
    if lost.size:
        k = int(lost[0])
        raise ValueError(
            f"the groups do not recover J[{int(pattern.rows[k])}, {int(pattern.indices[k])}]"
        )
    col_class = cg[pattern.indices]
    row_class = rg[pattern.rows]
    keep_col = np.zeros(p, dtype=bool)
    keep_row = np.zeros(q, dtype=bool)
    keep_col[col_class[from_b & ~from_c]] = True
    keep_row[row_class[from_c & ~from_b]] = True
    both = from_b & from_c
    both[both] = ~keep_col[col_class[both]] & ~keep_row[row_class[both]]
    if both.any():
        extra_col, extra_row = _min_cover(col_class[both], row_class[both], p, q)
        keep_col |= extra_col
        keep_row |= extra_row
    return _drop_classes(cg, keep_col), _drop_classes(rg, keep_row)


def _drop_classes(groups: np.ndarray, keep: np.ndarray) -> np.ndarray:
    out = groups.copy()
    coloured = groups >= 0
    out[coloured] = np.where(keep[groups[coloured]], groups[coloured], -1)
    return compact(out)


# -- colouring a given assignment of nonzeros to B and C ----------------------------------


def _conflict_nets(
    pattern: SparsityPattern, to_b: np.ndarray
) -> tuple[SparsityPattern, np.ndarray]:
    """Conflict nets making every nonzero of ``to_b`` readable from B: ``(nets, active)``.

    Distinct colours on every net (a pattern over the active columns) suffice.
    A column is active when one of its nonzeros is read from B. In row i, let F be the
    columns read from B and A the active ones: each column of F needs a colour of its own
    within A. If F = A the row is one net; else every active column j' outside F gives
    the net F + {j'} (so columns outside F may share colours), unless those nets would
    exceed the budget of entries (:data:`NET_ENTRIES_PER_NONZERO` per nonzero, at most
    :data:`MAX_NET_ENTRIES`): rows are kept exact cheapest first (``(|A| - |F|) * (|F| +
    1)`` entries, ties to the lower row), and the others become the net A. So the nets
    never hold more than a constant times nnz entries: a dense row read half from B and half
    from C would need ``n**2 / 4``.
    """
    m, n = pattern.shape
    rows, cols = pattern.rows, pattern.indices
    active = np.zeros(n, dtype=bool)
    active[cols[to_b]] = True
    act = active[cols]
    n_f = np.bincount(rows[to_b], minlength=m)
    n_a = np.bincount(rows[act], minlength=m)
    partial = (n_f > 0) & (n_f < n_a)
    cost = (n_a - n_f) * (n_f + 1)
    cap = min(NET_ENTRIES_PER_NONZERO * pattern.nnz, MAX_NET_ENTRIES)
    if int(cost[partial].sum()) > cap:
        rows_p = np.flatnonzero(partial)
        cheapest = rows_p[np.argsort(cost[rows_p], kind="stable")]
        keep = cheapest[np.cumsum(cost[cheapest]) <= cap]
        partial[:] = False
        partial[keep] = True
    whole = (n_f > 0) & ~partial
    k_whole = np.flatnonzero(act & whole[rows])
    others = np.flatnonzero(act & ~to_b & partial[rows])
    k_f = np.flatnonzero(to_b & partial[rows])
    f_start = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[k_f], minlength=m), out=f_start[1:])
    r_o = rows[others]
    sizes = n_f[r_o]
    ends = np.cumsum(sizes)
    offsets = np.repeat(f_start[r_o] - (ends - sizes), sizes) + np.arange(
        int(ends[-1]) if ends.size else 0
    )
    net_of_other = m + np.arange(others.size, dtype=np.int64)
    net_rows = np.concatenate((rows[k_whole], np.repeat(net_of_other, sizes), net_of_other))
    net_cols = np.concatenate((cols[k_whole], cols[k_f[offsets]], cols[others]))
    new_id = np.cumsum(active) - 1
    nets = SparsityPattern((m + others.size, int(active.sum())), net_rows, new_id[net_cols])
    return nets, np.flatnonzero(active)


def _color_nets(
    nets: SparsityPattern, rng: np.random.Generator, budget: Budget | None
) -> np.ndarray:
    if nets.shape[1] == 0:
        return np.zeros(0, dtype=np.int64)
    graph = BipartiteGraph(nets, "column")
    if budget is None:
        return dsatur_color(graph)[0]
    search = best_groups(graph, rng, budget)
    assert search.groups is not None
    return search.groups


def color_assignment(
    pattern: SparsityPattern,
    to_c: np.ndarray,
    rng: np.random.Generator,
    budget: Budget | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Colour columns and rows so that each nonzero is read where ``to_c`` says.

    The nonzeros with ``to_c`` false are read from ``B``: the columns holding one are
    coloured (the others stay neutral) so that no coloured column of such a nonzero's row
    shares its colour; likewise for rows and ``C``. Each side is a one-sided colouring of
    its conflict nets (see the module docstring), solved by DSATUR (``budget=None``) or
    by the one-sided ``best`` search within ``budget`` (half of it for the columns, the
    rest for the rows; the work spent is charged to it); the result is post-processed by
    :func:`neutralize`.

    Parameters
    ----------
    pattern : SparsityPattern
        The m×n pattern.
    to_c : ndarray of bool, shape (nnz,)
        Per nonzero in CSR order: read it from ``C = W @ J`` (True) or from ``B = J @ S``.
    rng : numpy.random.Generator
        Seeds the one-sided searches.
    budget : Budget, optional
        What the one-sided ``best`` searches may spend; DSATUR alone if omitted.

    Returns
    -------
    (column_groups, row_groups)
        A valid bicolouring, -1 for neutral.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.bicolor import color_assignment
    >>> J = as_pattern(np.array([[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 1, 1]]))
    >>> to_c = J.rows == 0  # the dense first row in reverse, the rest forward
    >>> cg, rg = color_assignment(J, to_c, np.random.default_rng(0))
    >>> cg.tolist(), rg.tolist()
    ([0, 1, 0, 1], [0, -1, -1])
    """
    m, n = pattern.shape
    to_c = np.asarray(to_c, dtype=bool)
    to_b = ~to_c
    cg = np.full(n, -1, dtype=np.int64)
    rg = np.full(m, -1, dtype=np.int64)
    for side, share in ((0, 0.5), (1, 1.0)):
        if not (to_b if side == 0 else to_c).any():
            continue
        if side == 0:
            nets, active = _conflict_nets(pattern, to_b)
        else:
            nets, active = _conflict_nets(pattern.T, to_c[pattern.csc_to_csr])
        sub = None if budget is None else budget.share(share)
        (cg if side == 0 else rg)[active] = _color_nets(nets, rng, sub)
        if budget is not None and sub is not None:
            budget.charge(sub.spent)
    return neutralize(pattern, cg, rg)


def _assignment(
    pattern: SparsityPattern, cg: np.ndarray, rg: np.ndarray, prefer_c: bool
) -> np.ndarray:
    """Where a valid bicolouring reads each nonzero (both sides possible: ``prefer_c``)."""
    from_b, from_c = _readable(pattern, cg, rg)
    return from_c & (prefer_c | ~from_b)  # type: ignore[no-any-return]


# -- the search ---------------------------------------------------------------------------


@dataclass
class BiSearch:
    """Bookkeeping of the bidirectional ``best``: best bicolouring, candidates, budget.

    Attributes
    ----------
    column_groups, row_groups : ndarray of int64 or None
        The best bicolouring so far.
    n_passes : int
        Its passes ``p + q``.
    cost : float
        Its ``p + reverse_cost * q`` (breaks ties between equal passes).
    name : str
        What produced it.
    candidates : list of Candidate
        Everything tried, in order.
    budget : Budget
        What steps 2-5 may spend, and what they spent.
    """

    pattern: SparsityPattern
    budget: Budget
    reverse_cost: float
    target: int
    column_groups: np.ndarray | None = None
    row_groups: np.ndarray | None = None
    n_passes: int = 1 << 62
    cost: float = math.inf
    name: str = ""
    candidates: list[Candidate] = field(default_factory=list)
    kept: dict[str, tuple[int, np.ndarray, np.ndarray]] = field(default_factory=dict)
    costs: dict[str, float] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        """Whether the best bicolouring reaches the lower bound."""
        return self.n_passes <= self.target

    @property
    def limit(self) -> int:
        """Colours after which a star bicolouring pass gives up: ``2 * best + 8``."""
        return 2 * min(self.n_passes, 1 << 40) + 8

    def fits(self, kind: str) -> bool:
        """Whether a step of ``kind`` (its predicted cost) fits in the budget."""
        return self.budget.fits(self.costs[kind], kind)

    def charge(self, kind: str, seconds: float) -> None:
        """Charge a step of ``kind`` its predicted cost."""
        self.budget.charge(self.costs[kind], kind, seconds)

    def offer(self, name: str, kind: str, cg: np.ndarray, rg: np.ndarray, seconds: float) -> None:
        """Record a candidate; keep it if it has fewer passes (or equal passes, lower cost)."""
        p, q = passes(cg), passes(rg)
        self.candidates.append(Candidate(name, p + q, seconds, p, q))
        if p + q < self.kept.get(kind, (1 << 62,))[0]:
            self.kept[kind] = (p + q, cg, rg)
        cost = p + self.reverse_cost * q
        if (p + q, cost) < (self.n_passes, self.cost):
            self.column_groups, self.row_groups = cg, rg
            self.n_passes, self.cost, self.name = p + q, cost, name


def _one_sided(
    pattern: SparsityPattern, partition: str, rng: np.random.Generator, budget: Budget
) -> tuple[np.ndarray, float]:
    t0 = time.perf_counter()
    search = best_groups(BipartiteGraph(pattern, partition), rng, budget)
    assert search.groups is not None
    return search.groups, time.perf_counter() - t0


def _split_sizes(counts: np.ndarray) -> list[int]:
    """How many of the densest lines a split puts on the other side: 1, 2, 3, 4, 6, 8, ..."""
    out, k = [], 1
    while k < counts.size:
        out.append(k)
        k = k + 1 if k < 4 else (3 * k) // 2
    return out


def _splits(s: BiSearch, rng: np.random.Generator) -> None:
    """Step 3: the k densest rows in reverse and the rest forward (and the transpose)."""
    pat = s.pattern
    for side in ("rows", "columns"):
        counts = pat.row_counts if side == "rows" else pat.col_counts
        by_count = np.argsort(-counts, kind="stable")
        ranked = counts[by_count]
        for k in _split_sizes(counts):
            if s.done or not s.fits("split"):
                return
            # The rest alone needs ranked[k] colours, the dense lines at least one: stop
            # once that cannot beat the best (fewer passes, or as many at a lower cost).
            rest = int(ranked[k])
            cost = rest + s.reverse_cost if side == "rows" else 1 + s.reverse_cost * rest
            if (rest + 1, cost) >= (s.n_passes, s.cost):
                break
            dense = np.zeros(counts.size, dtype=bool)
            dense[by_count[:k]] = True
            to_c = dense[pat.rows] if side == "rows" else ~dense[pat.indices]
            t0 = time.perf_counter()
            cg, rg = color_assignment(pat, to_c, rng)
            seconds = time.perf_counter() - t0
            s.charge("split", seconds)
            s.offer(f"split:{side}@{k}", "split", cg, rg, seconds)


def _star(
    s: BiSearch,
    name: str,
    order: np.ndarray,
    covering: Covering,
    arrays: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    t0 = time.perf_counter()
    res = star_bicoloring(s.pattern, order, covering=covering, limit=s.limit, arrays=arrays)
    seconds = time.perf_counter() - t0
    s.charge("star", seconds)
    label = name if covering == "implicit" else f"{name}/full"
    if res is None:
        s.candidates.append(Candidate(f"{label}(stopped)", -1, seconds))
        return
    s.offer(label, "star", res[0], res[1], seconds)


def best_bicoloring(
    pattern: SparsityPattern,
    rng: np.random.Generator,
    work: float,
    *,
    seconds: float | None = None,
    reverse_cost: float = DEFAULT_REVERSE_COST,
    column: np.ndarray | None = None,
    row: np.ndarray | None = None,
    times: tuple[float, float] = (0.0, 0.0),
) -> BiSearch:
    """Run the bidirectional ``best`` search (see the module docstring).

    Parameters
    ----------
    pattern : SparsityPattern
        The m×n pattern.
    rng : numpy.random.Generator
        Seeds every random choice.
    work : float
        Work units (:mod:`~sparsejac.coloring.budget`) for steps 2-5, and for each one-sided
        search of step 1 that runs here.
    seconds : float, optional
        The opt-in wall-clock limit, likewise.
    reverse_cost : float, optional
        Breaks ties between bicolourings with equal passes: lower ``p + reverse_cost * q``.
    column, row : ndarray of int64, optional
        Results of the one-sided ``best`` searches, if the caller has them.
    times : tuple of float, optional
        Their times, for the candidate list.

    Returns
    -------
    BiSearch
        ``column_groups``, ``row_groups``, ``n_passes``, ``name``, ``candidates`` and
        ``budget``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.bicolor import best_bicoloring
    >>> A = np.eye(6)
    >>> A[0, :] = A[:, 0] = 1  # arrowhead: 6 passes one-sided
    >>> s = best_bicoloring(as_pattern(A), np.random.default_rng(0), 1e9)
    >>> s.n_passes, passes(s.column_groups), passes(s.row_groups)
    (3, 2, 1)
    """
    m, n = pattern.shape
    t_col, t_row = times
    if column is None:
        column, t_col = _one_sided(pattern, "column", rng, Budget(work, seconds))
    s = BiSearch(pattern, Budget(work, seconds), reverse_cost,
                 bidirectional_lower_bound(pattern))
    none_c, none_r = np.full(n, -1, dtype=np.int64), np.full(m, -1, dtype=np.int64)
    s.offer("column", "column", np.asarray(column, dtype=np.int64), none_r, t_col)
    if s.done:
        return s
    if row is None:
        row, t_row = _one_sided(pattern, "row", rng, Budget(work, seconds))
    s.offer("row", "row", none_c, np.asarray(row, dtype=np.int64), t_row)
    s.budget = Budget(work, seconds)  # steps 2-5 start now
    if s.done:
        return s
    graph = BipartiteGraph(pattern, "bidirectional")
    col_graph, row_graph = BipartiteGraph(pattern, "column"), BipartiteGraph(pattern, "row")
    star = star_cost(col_graph.work + row_graph.work, pattern.nnz)
    s.costs.update({
        "star": star,
        "star-step": 2 * star + PassCosts.of(graph.work, pattern.nnz, n + m).order,
        "split": (dynamic_cost(col_graph.work, n) + dynamic_cost(row_graph.work, m)),
    })
    arrays = augmented_arrays(pattern, graph)
    has_dense = bool(dense_lines(pattern.row_counts).any() or dense_lines(pattern.col_counts).any())
    for i, name in enumerate(STAR_ORDERS):
        # A step is one order and its two star passes. Whatever the budget, the first step
        # runs, and the dense-first orders where a row or column is dense (as the one-sided
        # search always runs natural and dsatur): without them a dense row and column would
        # leave only the one-sided colourings, n passes.
        mandatory = i == 0 or (has_dense and name.startswith("dense_"))
        if s.done:
            break
        if not (mandatory or s.fits("star-step")):
            continue  # a later, mandatory step may still run
        if skip_mandatory(s.costs["star-step"], s.fits("star-step"), s.n_passes, s.target,
                          lines=m + n):
            s.candidates.append(Candidate(f"{name}(skipped)", -1, 0.0))
            continue
        order = BIDIRECTIONAL_ORDERS[name](graph, "bidirectional", rng)  # type: ignore[arg-type]
        for covering in ("implicit", "full"):
            if s.done:
                break
            _star(s, name, order, covering, arrays)
    _splits(s, rng)
    for i in range(N_RANDOM):
        if s.done or not s.fits("star"):
            break
        _star(s, f"random#{i}", rng.permutation(n + m), "implicit", arrays)
    _refine(s, rng)
    return s


def _refine(s: BiSearch, rng: np.random.Generator) -> None:
    """Step 5: re-colour the best candidate of each kind, then the best so far, in turn.

    Each round reads the nonzeros where the colouring to improve reads them (those readable
    from both sides: from B, or from C, alternately) and colours both sides again with the
    one-sided search, with a share of the work left. It stops after :data:`MAX_STALE`
    rounds in a row without fewer passes, or :data:`MAX_ROUNDS` rounds from the best.
    """
    plan: list[tuple[str, bool]] = [
        (kind, prefer_c)
        for kind in ("star", "split")
        if kind in s.kept
        for prefer_c in (False, True)
    ]
    stale = 0
    for t in range(len(plan) + MAX_ROUNDS):
        if s.done or stale >= MAX_STALE:
            return
        # a round runs at least the two mandatory passes of both one-sided searches
        if not s.fits("split"):
            return
        if t < len(plan):
            kind, prefer_c = plan[t]
            _, cg, rg = s.kept[kind]
        else:
            kind, prefer_c = "best", (t - len(plan)) % 2 == 1
            assert s.column_groups is not None
            assert s.row_groups is not None
            cg, rg = s.column_groups, s.row_groups
        sub = s.budget.share(1.0 / max(len(plan) - t, 2))
        before = s.n_passes
        t0 = time.perf_counter()
        ncg, nrg = color_assignment(
            s.pattern, _assignment(s.pattern, cg, rg, prefer_c), rng, sub
        )
        s.budget.charge(max(sub.spent, s.costs["split"]), "refine", time.perf_counter() - t0)
        side = "C" if prefer_c else "B"
        s.offer(f"{kind}+recolor{side}", "refine", ncg, nrg, time.perf_counter() - t0)
        if t >= len(plan):
            stale = stale + 1 if s.n_passes >= before else 0

"""Symmetric colouring for Hessians: star colouring and acyclic colouring, with a search.

A Hessian ``H`` is symmetric, so ``H[i, j]`` may be read from row ``i`` or from row ``j``
of ``B = H @ S``. Colouring the vertices of the *adjacency graph* (vertex ``i`` is row and
column ``i``; an edge joins ``i != j`` when ``H[i, j]`` is a structural nonzero) exploits it:

* a **star colouring** (a distance-1 colouring in which every path on four vertices uses at
  least three colours) recovers every nonzero directly;
* an **acyclic colouring** (every cycle uses at least three colours) recovers them by
  substitution, and usually needs fewer colours still.

Both need at most as many colours as a column colouring of the same pattern (which is a
distance-2 colouring: a star colouring a fortiori).

This module owns :class:`AdjacencyGraph` (the graph as kernel arrays, also seen as a
bipartite graph whose nets are the edges, so that every order of
:mod:`~sparsejac.coloring.orders` orders its vertices by distance-1 degrees),
:func:`symmetric_lower_bound`, the colouring in one order (:func:`symmetric_groups`), the
``order="best"`` search (:func:`best_symmetric`) and :func:`color_symmetric`, which
``sparsejac.color(..., partition="symmetric")`` calls. The kernels are in ``_symmetric``;
recovery is :class:`~sparsejac.coloring.recovery.SymmetricRecovery`.

The ``best`` search, in this sequence (stopping at the lower bound):

1. ``natural``, then every named order of :data:`~sparsejac.coloring.orders.ORDERS` on the
   adjacency graph (``dsatur``: the sequence in which DSATUR colours it) and
   :data:`N_RANDOM` seeded random orders;
2. for star colouring, the one-sided ``best`` search of :mod:`~sparsejac.coloring.search`
   for a *column* colouring, within :data:`COLUMN_SHARE` of the budget: a distance-2
   colouring is a star colouring, so star colouring never needs more colours than that
   search finds with the same work, and on some patterns (bcsstk13, dwt_992) it is the
   best star colouring found (acyclic colourings are far fewer: the search skips it);
3. random-tie restarts of ``incidence_degree``, ``smallest_last`` and
   ``dynamic_largest_first`` (vertices renamed at random before the order is computed);
4. recolouring: the best colouring so far is coloured again visiting its colour classes in
   turn (largest class first, or in reverse colour order), as Culberson's iterated greedy
   does for ordinary colouring (for star and acyclic colouring it may also add colours: a
   candidate is kept only when it has fewer).

Each step runs only if its cost, predicted from the graph's sizes by a fixed cost model
(:data:`PASS_COST`, in the units of :mod:`~sparsejac.coloring.budget`), fits in the budget:
the result depends on the pattern, method, seed and effort only.
"""

from __future__ import annotations

import time
from functools import cached_property
from typing import Any

import numpy as np

from sparsejac.coloring import _kernels, _symmetric
from sparsejac.coloring.budget import Budget, dynamic_cost
from sparsejac.coloring.graph import BipartiteGraph
from sparsejac.coloring.greedy import kernel_array, relabel
from sparsejac.coloring.orders import ORDERS, check_permutation, resolve_order
from sparsejac.coloring.recovery import SYMMETRIC_METHODS, check_method, check_symmetric
from sparsejac.coloring.result import Candidate, ColoringResult
from sparsejac.coloring.search import best_groups
from sparsejac.pattern import SparsityPattern

__all__ = [
    "COLUMN_SHARE",
    "MAX_RESTARTS",
    "N_RANDOM",
    "PASS_COST",
    "SYMMETRIC_METHODS",
    "AdjacencyGraph",
    "SymmetricSearch",
    "best_symmetric",
    "color_symmetric",
    "symmetric_groups",
    "symmetric_lower_bound",
]

#: Seeded random orders tried by ``best``.
N_RANDOM = 3
#: Largest number of random-tie restarts of the dynamic orders.
MAX_RESTARTS = 24
#: Largest number of recolouring rounds.
MAX_RECOLOR = 12
#: Fraction of the work left that the column colouring search (step 2) may spend.
COLUMN_SHARE = 0.35
#: Nominal cost of one star or acyclic colouring pass: per unit of ``sum(degree**2)``, per
#: nonzero and per vertex (fitted on the shared symmetric matrices, see the module legend
#: of :mod:`~sparsejac.coloring.budget`).
PASS_COST = (4.0, 10.0, 40.0)
#: The symmetric colourings keep colour tables for vertices of more than this many neighbours
#: (and four times the mean), instead of walking their neighbours (:attr:`AdjacencyGraph.big`).
BIG_DEGREE = 64
#: At most this many such vertices.
MAX_BIG = 64
_RESTART_ORDERS = ("incidence_degree", "smallest_last", "dynamic_largest_first")
_DYNAMIC = frozenset({"dsatur", "smallest_last", "incidence_degree", "dynamic_largest_first"})


class AdjacencyGraph(BipartiteGraph):
    """The adjacency graph of a structurally symmetric pattern, as kernel arrays.

    Parameters
    ----------
    pattern : SparsityPattern
        A square, structurally symmetric pattern; the diagonal is ignored.

    Attributes
    ----------
    ptr, adj : ndarray of int64
        CSR arrays of the off-diagonal pattern: the neighbours of every vertex.
    eid : ndarray of int64
        For each position of ``adj``, the id of its undirected edge.
    n_edges : int
        Number of edges (off-diagonal nonzero pairs).

    Notes
    -----
    As a :class:`~sparsejac.coloring.graph.BipartiteGraph` (``partition == "symmetric"``)
    the vertices are the rows and the nets are the edges, two vertices each: distance-2
    neighbours through nets are the neighbours in the graph, so the orders of
    :mod:`~sparsejac.coloring.orders` applied to this object order the vertices by their
    distance-1 degrees, as ColPack does for star and acyclic colouring.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.symmetric import AdjacencyGraph
    >>> g = AdjacencyGraph(as_pattern(np.eye(4) + np.eye(4, k=1) + np.eye(4, k=-1)))
    >>> g.n_edges, g.degrees.tolist(), g.eid.tolist()
    (3, [1, 2, 2, 1], [0, 0, 1, 1, 2, 2])
    """

    def __init__(self, pattern: SparsityPattern) -> None:
        check_symmetric(pattern)
        self.pattern = pattern
        self.partition = "symmetric"
        n = pattern.shape[0]
        off = pattern.rows != pattern.indices
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(pattern.rows[off], minlength=n), out=ptr[1:])
        self.ptr = kernel_array(ptr)
        self.adj = kernel_array(pattern.indices[off])
        eid, n_edges = _symmetric.adjacency_edges(self.ptr, self.adj)
        self.eid = kernel_array(eid)
        self.n_edges = int(n_edges)
        ends = np.empty(2 * self.n_edges, dtype=np.int64)
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
        upper = self.adj > rows
        ends[2 * self.eid[upper]] = rows[upper]
        ends[2 * self.eid[upper] + 1] = self.adj[upper]
        self.vptr, self.vidx = self.ptr, self.eid
        self.nptr = kernel_array(np.arange(0, 2 * self.n_edges + 1, 2, dtype=np.int64))
        self.nidx = kernel_array(ends)
        self.n_vertices = n

    @cached_property
    def dense(self) -> None:
        """None: every net is one edge, never dense."""
        return None

    @cached_property
    def degrees(self) -> np.ndarray:
        """Number of neighbours of every vertex."""
        deg = np.diff(self.ptr)
        deg.setflags(write=False)
        return deg

    @cached_property
    def lower_bound(self) -> int:
        """:func:`symmetric_lower_bound` of the pattern."""
        return symmetric_lower_bound(self.n_vertices, self.n_edges)

    @cached_property
    def big(self) -> np.ndarray:
        """Row of each big vertex in the symmetric colourings' colour tables, -1 for others.

        Big: degree above :data:`BIG_DEGREE` and four times the mean, at most
        :data:`MAX_BIG` of the highest degrees and as many as two tables of ``n + 1``
        entries per vertex hold within 32 bytes per adjacency entry.
        """
        n = self.n_vertices
        deg = self.degrees
        cap = min(MAX_BIG, 2 * int(self.adj.size) // (n + 1))
        out = np.full(n, -1, dtype=np.int64)
        if cap > 0 and n:
            mean = float(self.adj.size) / n
            by_degree = np.argsort(-deg, kind="stable")[:cap]
            chosen = by_degree[deg[by_degree] > max(BIG_DEGREE, 4.0 * mean)]
            out[np.sort(chosen)] = np.arange(chosen.size, dtype=np.int64)
        return kernel_array(out)

    @cached_property
    def pass_cost(self) -> float:
        """Nominal work of one star or acyclic colouring pass (:data:`PASS_COST`)."""
        deg = self.degrees.astype(np.float64)
        a, b, c = PASS_COST
        # (no BLAS dot: its threads would spin on the second core after a long one)
        return float(a * np.add.reduce(deg * deg) + b * self.adj.size + c * self.n_vertices)


def _with_diagonal(pattern: SparsityPattern) -> SparsityPattern:
    """The pattern with its whole diagonal.

    Its structurally orthogonal column partitions are distance-2 colourings of the adjacency
    graph; without the diagonal, two adjacent vertices ``i, j`` whose columns share no row
    could share a colour.
    """
    n = pattern.shape[1]
    if n == 0 or int(np.count_nonzero(pattern.rows == pattern.indices)) == n:
        return pattern
    ar = np.arange(n, dtype=np.int64)
    return SparsityPattern(pattern.shape, np.concatenate([np.asarray(pattern.rows), ar]),
                           np.concatenate([np.asarray(pattern.indices), ar]))


def symmetric_lower_bound(n: int, n_edges: int) -> int:
    """A lower bound on the colours of any star or acyclic colouring of a graph.

    In an acyclic colouring (a star colouring is one) the edges between two colour classes
    of sizes ``a`` and ``b`` form a forest, so there are at most ``a + b - 1`` of them;
    summed over the pairs of ``k`` classes, ``n_edges <= (k - 1) * (n - k / 2)``. The bound
    is the smallest such ``k`` (1 without edges, 2 with). Unlike the column colouring's
    largest row count it holds for symmetric colourings: an arrowhead of any size needs 2.

    Examples
    --------
    >>> from sparsejac.coloring.symmetric import symmetric_lower_bound
    >>> symmetric_lower_bound(5, 0), symmetric_lower_bound(5, 4), symmetric_lower_bound(4, 6)
    (1, 2, 4)
    """
    if n_edges <= 0:
        return 1
    k = max(2, int(n_edges // max(n, 1)))
    while k > 2 and (k - 2) * (n - (k - 1) / 2) >= n_edges:
        k -= 1
    while (k - 1) * (n - k / 2) < n_edges:
        k += 1
    return k


def symmetric_groups(graph: AdjacencyGraph, method: str, order: np.ndarray) -> np.ndarray:
    """Star (``method="star"``) or acyclic colouring of ``graph``'s vertices in ``order``.

    Parameters
    ----------
    graph : AdjacencyGraph
        The adjacency graph.
    method : {"star", "acyclic"}
        Which colouring.
    order : ndarray of int
        A permutation of the vertices (not checked here).

    Returns
    -------
    ndarray of int64
        The colour of every vertex, ``0..p-1``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.symmetric import AdjacencyGraph, symmetric_groups
    >>> path = np.eye(5) + np.eye(5, k=1) + np.eye(5, k=-1)
    >>> g = AdjacencyGraph(as_pattern(path))
    >>> symmetric_groups(g, "star", np.arange(5)).tolist()
    [0, 1, 0, 2, 0]
    >>> symmetric_groups(g, "acyclic", np.arange(5)).tolist()
    [0, 1, 0, 1, 0]

    A complete graph (a dense Hessian) gets what a first-fit pass gives it, without the pass
    (``O(n^3)`` there): every vertex the next colour, in ``order``.
    """
    n = graph.n_vertices
    if n > 1 and graph.n_edges == n * (n - 1) // 2:
        colors_: np.ndarray = np.empty(n, dtype=np.int64)
        colors_[np.asarray(order, dtype=np.int64)] = np.arange(n, dtype=np.int64)
        return colors_
    kernel = _symmetric.star_color if method == "star" else _symmetric.acyclic_color
    colors: np.ndarray = kernel(graph.ptr, graph.adj, graph.eid, graph.n_edges,
                                kernel_array(order), graph.big)
    return colors


def _restart_order(graph: AdjacencyGraph, name: str, rng: np.random.Generator) -> np.ndarray:
    """The dynamic order ``name`` after renaming the vertices at random (random ties)."""
    perm = rng.permutation(graph.n_vertices).astype(np.int64)
    arrays = relabel(graph, perm)
    if name == "incidence_degree":
        new = _kernels.incidence_degree(*arrays)
    elif name == "smallest_last":
        new = _kernels.smallest_last(*arrays, kernel_array(graph.degrees[perm]))
    else:
        new = _kernels.dynamic_largest_first(*arrays, kernel_array(graph.degrees[perm]))
    out: np.ndarray = perm[new]
    return out


def _class_order(groups: np.ndarray, rng: np.random.Generator, round_: int) -> np.ndarray:
    """Vertices grouped by colour class: largest classes first, reverse, or shuffled."""
    k = int(groups.max()) + 1
    sizes = np.bincount(groups, minlength=k)
    if round_ % 3 == 0:
        rank = np.argsort(-sizes, kind="stable")
    elif round_ % 3 == 1:
        rank = np.arange(k)[::-1]
    else:
        rank = rng.permutation(k)
    position = np.empty(k, dtype=np.int64)
    position[rank] = np.arange(k)
    out: np.ndarray = np.argsort(position[groups], kind="stable").astype(np.int64)
    return out


class SymmetricSearch:
    """Bookkeeping of the symmetric ``best`` search: best colouring, candidates, budget."""

    def __init__(self, graph: AdjacencyGraph, method: str, budget: Budget) -> None:
        self.graph = graph
        self.method = method
        self.budget = budget
        self.target = graph.lower_bound
        self.groups: np.ndarray | None = None
        self.n_colors = graph.n_vertices + 1
        self.name = ""
        self.candidates: list[Candidate] = []

    @property
    def done(self) -> bool:
        """Whether the best colouring reaches the lower bound."""
        return self.n_colors <= self.target

    def cost(self, kind: str) -> float:
        """Predicted work of a pass of ``kind`` (its order, then the colouring)."""
        g = self.graph
        extra = dynamic_cost(g.work, g.n_vertices) if kind in _DYNAMIC else 0.0
        return g.pass_cost + extra

    def run(self, name: str, kind: str, order: Any) -> None:
        """Colour in ``order()`` (a callable), charge the predicted work, keep if better."""
        t0 = time.perf_counter()
        groups = symmetric_groups(self.graph, self.method, order())
        seconds = time.perf_counter() - t0
        self.budget.charge(self.cost(kind), kind, seconds)
        self.offer(name, groups, seconds)

    def offer(self, name: str, groups: np.ndarray, seconds: float) -> None:
        """Record a candidate colouring; keep it if it has fewer colours."""
        k = int(groups.max()) + 1 if groups.size else 0
        self.candidates.append(Candidate(name, k, seconds))
        if k < self.n_colors:
            self.groups, self.n_colors, self.name = groups, k, name


def best_symmetric(graph: AdjacencyGraph, method: str, rng: np.random.Generator,
                   budget: Budget) -> SymmetricSearch:
    """Run the symmetric ``best`` search (see the module docstring).

    Parameters
    ----------
    graph : AdjacencyGraph
        The adjacency graph.
    method : {"star", "acyclic"}
        Which colouring.
    rng : numpy.random.Generator
        Seeds the random orders, restarts and recolourings.
    budget : Budget
        Work the search may spend; the ``natural`` pass always runs.

    Returns
    -------
    SymmetricSearch
        ``groups``, ``n_colors``, ``name``, ``candidates`` and ``budget``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.budget import Budget
    >>> from sparsejac.coloring.symmetric import AdjacencyGraph, best_symmetric
    >>> path = np.eye(5) + np.eye(5, k=1) + np.eye(5, k=-1)
    >>> s = best_symmetric(AdjacencyGraph(as_pattern(path)), "star",
    ...                    np.random.default_rng(0), Budget(1e9))
    >>> s.n_colors, s.name
    (3, 'natural')
    """
    s = SymmetricSearch(graph, method, budget)
    n = graph.n_vertices
    s.run("natural", "natural", lambda: np.arange(n, dtype=np.int64))
    plan = [(name, name) for name in ORDERS if name not in ("natural", "random")]
    plan += [(f"random#{i}", "random") for i in range(N_RANDOM)]
    for name, kind in plan:
        if s.done:
            return s
        if budget.fits(s.cost(kind), kind):
            fn = ORDERS[kind]
            s.run(name, kind, lambda fn=fn: fn(graph, "symmetric", rng))
    if method == "star" and not s.done:
        t0 = time.perf_counter()
        column = best_groups(BipartiteGraph(_with_diagonal(graph.pattern), "column"), rng,
                             budget.share(COLUMN_SHARE), beat=s.n_colors)
        budget.charge(column.budget.spent)
        if column.groups is not None:
            s.offer(f"column:{column.name}", column.groups, time.perf_counter() - t0)
    for i in range(MAX_RESTARTS):
        kind = _RESTART_ORDERS[i % len(_RESTART_ORDERS)]
        if s.done or not budget.fits(s.cost(kind), kind, 0.6):
            break
        s.run(f"{kind}@{i}", kind, lambda kind=kind: _restart_order(graph, kind, rng))
    base = s.name
    for i in range(MAX_RECOLOR):
        if s.done or s.groups is None or not budget.fits(s.cost("recolor"), "recolor"):
            break
        best = s.groups
        before = s.n_colors
        s.run(f"recolor#{i}", "recolor", lambda best=best, i=i: _class_order(best, rng, i))
        if s.n_colors < before:
            s.name = f"{base}+recolor"
    return s


def color_symmetric(
    pattern: SparsityPattern,
    method: str,
    order: Any,
    rng: np.random.Generator,
    work: float,
    seconds: float | None,
) -> ColoringResult:
    """Star or acyclic colouring of a symmetric pattern, as a :class:`ColoringResult`.

    ``sparsejac.color(pattern, "symmetric", order, method=...)`` calls this after checking
    its arguments; see :func:`sparsejac.color`.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.symmetric import color_symmetric
    >>> A = np.eye(6)
    >>> A[0, :] = A[:, 0] = 1  # arrowhead: 6 colours for columns, 2 here
    >>> r = color_symmetric(as_pattern(A), "star", "natural", np.random.default_rng(0), 0, None)
    >>> r.n_colors, r.groups.tolist()
    (2, [0, 1, 1, 1, 1, 1])
    """
    method = check_method(method)
    t0 = time.perf_counter()
    graph = AdjacencyGraph(pattern)
    candidates: tuple[Candidate, ...] = ()
    spent = 0.0
    if isinstance(order, str) and order == "best":
        search = best_symmetric(graph, method, rng, Budget(work, seconds))
        assert search.groups is not None
        groups, name = search.groups, f"best:{search.name}"
        candidates = tuple(search.candidates)
        spent = search.budget.spent
    else:
        name, fn = resolve_order(order, "column")
        from sparsejac.coloring.interop import is_networkx_strategy

        if is_networkx_strategy(order):
            raise ValueError(
                "a networkx strategy orders the vertices of a column-intersection graph; use "
                "a named order or a function (pattern, partition, rng) with "
                "partition='symmetric'")
        source: Any = graph if fn in ORDERS.values() else pattern
        perm = check_permutation(fn(source, "symmetric", rng),  # type: ignore[arg-type]
                                 graph.n_vertices, name="order")
        groups = symmetric_groups(graph, method, perm)
    n_colors = int(groups.max()) + 1 if groups.size else 0
    return ColoringResult(
        pattern=pattern,
        partition="symmetric",
        order=name,
        n_colors=n_colors,
        column_groups=groups,
        row_groups=None,
        lower_bound=graph.lower_bound,
        seconds=time.perf_counter() - t0,
        candidates=candidates,
        work=spent,
        method=method,
    )

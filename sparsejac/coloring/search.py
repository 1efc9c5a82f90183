"""The one-sided ``order="best"`` search: many orders, restarts, recolouring, tabu search.

This module owns :func:`best_groups`, the search behind ``sparsejac.color(...,
order="best")`` for a ``"column"`` or ``"row"`` partition; the bidirectional search of
:mod:`~sparsejac.coloring.bicolor` runs it on both sides and on its sub-problems. The
steps, in this sequence:

1. ``natural`` then ``dsatur``. These two always run, whatever the budget: a greedy pass
   costs ``O(W)`` edge visits (``W``, :attr:`~.graph.BipartiteGraph.work`: the sum of
   squared net sizes, the dense nets excepted) and DSATUR ``O(W log n)``, so ``best`` never
   costs less than these two passes. The one exception: on a nearly dense pattern, where
   ``natural`` is already near the lower bound and ``W`` is ``O(n * nnz)``, a DSATUR pass
   beyond the budget is skipped (:func:`~sparsejac.coloring.budget.skip_mandatory`).
2. ``incidence_degree``, ``smallest_last``, ``largest_first``, ``dynamic_largest_first``
   and :data:`N_RANDOM` seeded ``random`` orders.
3. Up to :data:`MAX_RESTARTS` restarts of ``incidence_degree``, ``dsatur`` and
   ``smallest_last`` (cycled) with random tie-breaking (:func:`~.greedy.restart`), while
   the work spent stays within :data:`RESTART_SHARE` of the budget.
4. Culberson's iterated greedy recolouring of the best colouring so far
   (:func:`~.recolor.iterated_greedy`, never more colours), within :data:`RECOLOR_SHARE`
   of the budget, or until it stalls.
5. Tabu search (:func:`~.tabu.tabu_reduce`) to remove further colours, one at a time, with
   the work that is left, until it fails :data:`~.tabu.MAX_ATTEMPTS` times in a row.

The search stops as soon as a colouring reaches the lower bound (it is then optimal). A step
of steps 2-5 starts only if its cost, predicted from the graph's sizes by the fixed cost model
of :mod:`~sparsejac.coloring.budget`, fits in the budget (a number of work units, from
``effort``): the result depends only on the pattern, the partition, the seed and the effort,
never on the machine's speed or load. With the opt-in ``time_budget`` the steps must also be
predicted (by the slowest step of their kind so far) to end in time. Every step has an
iteration limit as well, so on small inputs the search ends before the budget.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from sparsejac.coloring.budget import Budget, PassCosts, skip_mandatory
from sparsejac.coloring.graph import BipartiteGraph
from sparsejac.coloring.greedy import dsatur_color, greedy_color, restart
from sparsejac.coloring.orders import ORDERS
from sparsejac.coloring.recolor import iterated_greedy
from sparsejac.coloring.result import Candidate
from sparsejac.coloring.tabu import tabu_reduce

__all__ = [
    "BEST_ORDERS",
    "MAX_RESTARTS",
    "N_RANDOM",
    "RECOLOR_SHARE",
    "RESTART_SHARE",
    "Search",
    "best_groups",
]

#: Named orders tried by ``best`` after ``natural`` and ``dsatur``, in this sequence.
BEST_ORDERS = ("incidence_degree", "smallest_last", "largest_first", "dynamic_largest_first")
#: Number of seeded ``random`` orders tried by ``best``.
N_RANDOM = 3
#: Largest number of random-tie restarts of the dynamic orders.
MAX_RESTARTS = 24
#: Fraction of the budget within which the restarts must end.
RESTART_SHARE = 0.35
#: Fraction of the budget within which iterated greedy recolouring ends (the rest: tabu).
RECOLOR_SHARE = 0.45
_RESTART_ORDERS = ("incidence_degree", "dsatur", "smallest_last")
_DYNAMIC = frozenset({"dsatur", "smallest_last", "incidence_degree", "dynamic_largest_first"})


class Search:
    """Bookkeeping of ``best``: the best colouring so far, candidates, the budget."""

    def __init__(self, graph: BipartiteGraph, budget: Budget) -> None:
        self.graph = graph
        self.budget = budget
        self.costs = PassCosts.of(graph.work, int(graph.vidx.size), graph.n_vertices,
                                  dense=graph.dense is not None)
        self.target = graph.lower_bound
        self.groups: np.ndarray | None = None
        self.n_colors = graph.n_vertices + 1
        self.name = ""
        self.candidates: list[Candidate] = []

    @property
    def done(self) -> bool:
        """Whether the best colouring reaches the lower bound (it is optimal)."""
        return self.n_colors <= self.target

    def cost(self, kind: str) -> float:
        """Predicted work of a pass of ``kind``."""
        if kind in _DYNAMIC:
            return self.costs.dynamic
        return self.costs.greedy if kind in ("natural", "random") else self.costs.order

    def fits(self, kind: str, share: float = 1.0) -> bool:
        """Whether a pass of ``kind`` fits in ``share`` of the budget."""
        return self.budget.fits(self.cost(kind), kind, share)

    def offer(self, name: str, kind: str, groups: np.ndarray, seconds: float) -> None:
        """Record a candidate colouring; keep it if it has fewer colours."""
        k = int(groups.max()) + 1 if groups.size else 0
        self.candidates.append(Candidate(name, k, seconds))
        if k < self.n_colors:
            self.groups, self.n_colors, self.name = groups, k, name

    def run(self, name: str, kind: str, fn: Any) -> None:
        """Run ``fn()`` (returning groups), charge its predicted work and offer its result."""
        t0 = time.perf_counter()
        groups = fn()
        seconds = time.perf_counter() - t0
        self.budget.charge(self.cost(kind), kind, seconds)
        self.offer(name, kind, groups, seconds)


def best_groups(graph: BipartiteGraph, rng: np.random.Generator, budget: Budget,
                beat: int | None = None) -> Search:
    """Run the one-sided ``best`` search on ``graph`` (see the module docstring).

    Parameters
    ----------
    graph : BipartiteGraph
        A ``"column"`` or ``"row"`` graph.
    rng : numpy.random.Generator
        Seeds the random orders, restarts, recolouring and tabu search.
    budget : Budget
        Work (and optionally time) the search may spend; the first two passes always run.
    beat : int, optional
        Colours another colouring already reaches (a Hessian's star colouring): the
        mandatory DSATUR pass is weighed against what it could save below that.

    Returns
    -------
    Search
        ``groups`` (the best colouring), ``n_colors``, ``name`` (what produced it),
        ``candidates`` and ``budget`` (with the work spent).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.budget import Budget
    >>> from sparsejac.coloring.graph import BipartiteGraph
    >>> from sparsejac.coloring.search import best_groups
    >>> g = BipartiteGraph(as_pattern(np.eye(4) + np.eye(4, k=1)), "column")
    >>> s = best_groups(g, np.random.default_rng(0), Budget(1e9))
    >>> s.n_colors, s.name
    (2, 'natural')
    """
    s = Search(graph, budget)
    n = graph.n_vertices
    if graph.lower_bound >= n:
        # One net holds every vertex: all conflict, one colour each is optimal.
        s.offer("natural", "natural", np.arange(n, dtype=np.int64), 0.0)
        return s
    s.run("natural", "natural", lambda: greedy_color(graph))
    if s.done:
        return s
    if skip_mandatory(s.cost("dsatur"), s.fits("dsatur"),
                      s.n_colors if beat is None else min(s.n_colors, beat), s.target,
                      lines=sum(graph.pattern.shape)):
        s.candidates.append(Candidate("dsatur(skipped)", -1, 0.0))
    else:
        s.run("dsatur", "dsatur", lambda: dsatur_color(graph)[0])
    plan = [(name, name) for name in BEST_ORDERS] + [
        (f"random#{i}", "random") for i in range(N_RANDOM)
    ]
    for name, kind in plan:
        if s.done:
            return s
        if s.fits(kind):
            fn = ORDERS[kind]
            s.run(name, kind, lambda fn=fn: greedy_color(graph, fn(graph, graph.partition, rng)))
    for i in range(MAX_RESTARTS):
        kind = _RESTART_ORDERS[i % len(_RESTART_ORDERS)]
        if s.done or not s.fits(kind, RESTART_SHARE):
            break
        s.run(f"{kind}@{i}", kind, lambda kind=kind: restart(graph, kind, rng))
    if not s.done and s.groups is not None:
        t0 = time.perf_counter()
        out = iterated_greedy(graph, s.groups, rng, budget=budget, share=RECOLOR_SHARE,
                              cost=s.costs.greedy, target=s.target)
        if out.rounds:
            s.candidates.append(Candidate("recolor", out.n_colors, time.perf_counter() - t0))
        if out.improved:
            s.groups, s.n_colors, s.name = out.groups, out.n_colors, s.name + "+recolor"
    if not s.done and s.groups is not None:
        t0 = time.perf_counter()
        tabu = tabu_reduce(graph, s.groups, rng, budget=budget, target=s.target)
        if tabu.iterations:
            s.candidates.append(Candidate("tabu", tabu.n_colors, time.perf_counter() - t0))
        if tabu.improved:
            s.groups, s.n_colors, s.name = tabu.groups, tabu.n_colors, s.name + "+tabu"
    return s

"""The one-sided ``order="best"`` search: many orders, restarts, recolouring, tabu search.

This module owns :func:`best_groups`, the search behind ``sparsejac.color(...,
order="best")`` for a ``"column"`` or ``"row"`` partition; the bidirectional search of
:mod:`~sparsejac.coloring.bicolor` runs it on both sides and on its sub-problems. The
steps, in this sequence:

1. ``natural`` then ``dsatur``. These two always run, whatever the budget: a greedy pass
   costs ``O(W)`` edge visits (``W`` = sum of squared net sizes) and DSATUR ``O(W log n)``,
   so ``best`` never costs less than these two passes.
2. ``incidence_degree``, ``smallest_last``, ``largest_first``, ``dynamic_largest_first``
   and :data:`N_RANDOM` seeded ``random`` orders.
3. Up to :data:`MAX_RESTARTS` restarts of ``incidence_degree``, ``dsatur`` and
   ``smallest_last`` (cycled) with random tie-breaking (:func:`~.greedy.restart`), until
   :data:`RESTART_SHARE` of the budget has elapsed.
4. Culberson's iterated greedy recolouring of the best colouring so far
   (:func:`~.recolor.iterated_greedy`, never more colours), until :data:`RECOLOR_SHARE` of
   the budget has elapsed or it stalls.
5. Tabu search (:func:`~.tabu.tabu_reduce`) to remove further colours, one at a time, with
   the time that is left, until it fails :data:`~.tabu.MAX_ATTEMPTS` times in a row.

The search stops as soon as a colouring reaches the lower bound (it is then optimal). A
pass of steps 2-5 starts only if it is predicted to end within ``time_budget`` seconds of
the start: the prediction is the measured duration of the same kind of pass (for a dynamic
order not yet run, DSATUR's; for a tabu chunk, the slowest chunk so far). So the wall time
of ``best`` is at most about ``max(time_budget, t_natural + t_dsatur)``: the budget is a
constant number of seconds, independent of the input's size, and on inputs so large that
the two mandatory passes exceed it, ``best`` costs exactly those two passes. For example,
on the 1000×1000 5-point Laplacian (``n = 10**6``) DSATUR reaches the lower bound 5 in
about a second and the search ends there.

Every step has an iteration limit as well as the deadline, so on small inputs the search
ends before the budget and the result depends only on ``seed``; on large ones, how far
steps 2-5 get depends on the machine's speed (pass ``time_budget=math.inf`` for a result
that depends on ``seed`` alone).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from sparsejac.coloring.graph import BipartiteGraph
from sparsejac.coloring.greedy import dsatur_color, greedy_color, restart
from sparsejac.coloring.orders import ORDERS
from sparsejac.coloring.recolor import iterated_greedy
from sparsejac.coloring.result import Candidate
from sparsejac.coloring.tabu import tabu_reduce

__all__ = [
    "BEST_ORDERS",
    "DEFAULT_TIME_BUDGET",
    "MAX_RESTARTS",
    "N_RANDOM",
    "RECOLOR_SHARE",
    "RESTART_SHARE",
    "Search",
    "best_groups",
    "check_budget",
]

#: Seconds ``order="best"`` may spend (its two mandatory passes always run; see module docs).
DEFAULT_TIME_BUDGET = 2.0
#: Named orders tried by ``best`` after ``natural`` and ``dsatur``, in this sequence.
BEST_ORDERS = ("incidence_degree", "smallest_last", "largest_first", "dynamic_largest_first")
#: Number of seeded ``random`` orders tried by ``best``.
N_RANDOM = 3
#: Largest number of random-tie restarts of the dynamic orders.
MAX_RESTARTS = 24
#: Fraction of the budget after which no restart starts.
RESTART_SHARE = 0.35
#: Fraction of the budget by which iterated greedy recolouring stops (the rest: tabu search).
RECOLOR_SHARE = 0.45
_RESTART_ORDERS = ("incidence_degree", "dsatur", "smallest_last")
_DYNAMIC = frozenset({"dsatur", "smallest_last", "incidence_degree", "dynamic_largest_first"})


def check_budget(time_budget: Any) -> float:
    """Return ``time_budget`` as a float if it is a non-negative number of seconds, else raise.

    Examples
    --------
    >>> from sparsejac.coloring.search import check_budget
    >>> check_budget(1)
    1.0
    >>> check_budget(-1)
    Traceback (most recent call last):
        ...
    ValueError: `time_budget` must be a non-negative number of seconds (math.inf allowed); got -1
    """
    if isinstance(time_budget, bool) or not isinstance(time_budget, (int, float)):
        raise TypeError(
            "`time_budget` must be a non-negative number of seconds (math.inf allowed); "
            f"got {type(time_budget).__name__}"
        )
    if math.isnan(time_budget) or time_budget < 0:
        raise ValueError(
            "`time_budget` must be a non-negative number of seconds (math.inf allowed); "
            f"got {time_budget!r}"
        )
    return float(time_budget)


class Search:
    """Bookkeeping of ``best``: the best colouring so far, candidates, time predictions."""

    def __init__(self, graph: BipartiteGraph, time_budget: float) -> None:
        self.graph = graph
        self.start = time.perf_counter()
        self.deadline = self.start + time_budget
        self.budget = time_budget
        self.target = graph.lower_bound
        self.groups: np.ndarray | None = None
        self.n_colors = graph.n_vertices + 1
        self.name = ""
        self.candidates: list[Candidate] = []
        self.durations: dict[str, float] = {}

    @property
    def done(self) -> bool:
        """Whether the best colouring reaches the lower bound (it is optimal)."""
        return self.n_colors <= self.target

    def predicted(self, kind: str) -> float:
        """Predicted seconds of a pass of ``kind``: the slowest such pass so far."""
        if kind in self.durations:
            return self.durations[kind]
        if kind in _DYNAMIC:
            return self.durations.get("dsatur", 0.0)
        return self.durations.get("natural", 0.0)

    def fits(self, kind: str, until: float | None = None) -> bool:
        """Whether a pass of ``kind`` is predicted to end before ``until`` (the deadline)."""
        end = self.deadline if until is None else until
        return time.perf_counter() + self.predicted(kind) <= end

    def offer(self, name: str, kind: str, groups: np.ndarray, seconds: float) -> None:
        """Record a candidate colouring; keep it if it has fewer colours."""
        k = int(groups.max()) + 1 if groups.size else 0
        self.candidates.append(Candidate(name, k, seconds))
        self.durations[kind] = max(self.durations.get(kind, 0.0), seconds)
        if k < self.n_colors:
            self.groups, self.n_colors, self.name = groups, k, name

    def run(self, name: str, kind: str, fn: Any) -> None:
        """Time ``fn()`` (returning groups) and offer its result."""
        t0 = time.perf_counter()
        groups = fn()
        self.offer(name, kind, groups, time.perf_counter() - t0)


def best_groups(graph: BipartiteGraph, rng: np.random.Generator, time_budget: float) -> Search:
    """Run the one-sided ``best`` search on ``graph`` (see the module docstring).

    Parameters
    ----------
    graph : BipartiteGraph
        A ``"column"`` or ``"row"`` graph.
    rng : numpy.random.Generator
        Seeds the random orders, restarts, recolouring and tabu search.
    time_budget : float
        Seconds (the first two passes always run).

    Returns
    -------
    Search
        ``groups`` (the best colouring), ``n_colors``, ``name`` (what produced it) and
        ``candidates``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.graph import BipartiteGraph
    >>> from sparsejac.coloring.search import best_groups
    >>> g = BipartiteGraph(as_pattern(np.eye(4) + np.eye(4, k=1)), "column")
    >>> s = best_groups(g, np.random.default_rng(0), 1.0)
    >>> s.n_colors, s.name
    (2, 'natural')
    """
    s = Search(graph, time_budget)
    n = graph.n_vertices
    if graph.lower_bound >= n:
        # One net holds every vertex: all conflict, one colour each is optimal.
        s.run("natural", "natural", lambda: np.arange(n, dtype=np.int64))
        return s
    s.run("natural", "natural", lambda: greedy_color(graph))
    if s.done:
        return s
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
    restart_until = s.start + RESTART_SHARE * time_budget
    for i in range(MAX_RESTARTS):
        kind = _RESTART_ORDERS[i % len(_RESTART_ORDERS)]
        if s.done or not s.fits(kind, restart_until):
            break
        s.run(f"{kind}@{i}", kind, lambda kind=kind: restart(graph, kind, rng))
    if not s.done and s.groups is not None:
        t0 = time.perf_counter()
        recolor_until = s.start + RECOLOR_SHARE * time_budget
        out = iterated_greedy(graph, s.groups, rng, deadline=recolor_until, target=s.target)
        if out.rounds:
            s.candidates.append(Candidate("recolor", out.n_colors, time.perf_counter() - t0))
        if out.improved:
            s.groups, s.n_colors, s.name = out.groups, out.n_colors, s.name + "+recolor"
    if not s.done and s.groups is not None:
        t0 = time.perf_counter()
        tabu = tabu_reduce(graph, s.groups, rng, deadline=s.deadline, target=s.target)
        if tabu.iterations:
            s.candidates.append(Candidate("tabu", tabu.n_colors, time.perf_counter() - t0))
        if tabu.improved:
            s.groups, s.n_colors, s.name = tabu.groups, tabu.n_colors, s.name + "+tabu"
    return s

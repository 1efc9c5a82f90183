"""``sparsejac.color``: the one entry point of the colouring engine, and ``order="best"``.

This module composes the pieces: it converts the input with
:func:`~sparsejac.pattern.as_pattern`, orients it (:class:`~.graph.BipartiteGraph`), runs one
named order or the ``"best"`` search, and wraps the groups in a
:class:`~.result.ColoringResult`.

``order="best"`` (the default) -- the search, in this sequence:

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
about a second and the search ends there. The first ``best`` call of a process first loads
every compiled kernel (:func:`warm_up`), outside the budget and outside the reported time.

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

from sparsejac.coloring.check import check_result
from sparsejac.coloring.graph import BipartiteGraph, check_partition
from sparsejac.coloring.greedy import dsatur_color, greedy_color, restart
from sparsejac.coloring.orders import ORDERS, check_permutation, resolve_order
from sparsejac.coloring.recolor import iterated_greedy
from sparsejac.coloring.result import Candidate, ColoringResult
from sparsejac.coloring.tabu import tabu_reduce
from sparsejac.pattern import as_pattern

__all__ = [
    "BEST_ORDERS",
    "DEFAULT_TIME_BUDGET",
    "MAX_RESTARTS",
    "N_RANDOM",
    "RECOLOR_SHARE",
    "RESTART_SHARE",
    "color",
    "warm_up",
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


def _check_budget(time_budget: Any) -> float:
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


class _Search:
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
        return self.n_colors <= self.target

    def predicted(self, kind: str) -> float:
        if kind in self.durations:
            return self.durations[kind]
        if kind in _DYNAMIC:
            return self.durations.get("dsatur", 0.0)
        return self.durations.get("natural", 0.0)

    def fits(self, kind: str, until: float | None = None) -> bool:
        end = self.deadline if until is None else until
        return time.perf_counter() + self.predicted(kind) <= end

    def offer(self, name: str, kind: str, groups: np.ndarray, seconds: float) -> None:
        k = int(groups.max()) + 1 if groups.size else 0
        self.candidates.append(Candidate(name, k, seconds))
        self.durations[kind] = max(self.durations.get(kind, 0.0), seconds)
        if k < self.n_colors:
            self.groups, self.n_colors, self.name = groups, k, name

    def run(self, name: str, kind: str, fn: Any) -> None:
        t0 = time.perf_counter()
        groups = fn()
        self.offer(name, kind, groups, time.perf_counter() - t0)


def _best(graph: BipartiteGraph, rng: np.random.Generator, time_budget: float) -> _Search:
    s = _Search(graph, time_budget)
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


def color(
    sparsity: Any,
    partition: str = "column",
    order: Any = "best",
    *,
    check: bool = False,
    seed: int | np.random.Generator | None = 0,
    time_budget: float = DEFAULT_TIME_BUDGET,
) -> ColoringResult:
    """Colour the columns or rows of a sparsity pattern (partial distance-2 colouring).

    Columns in the same group share no row, so one Jacobian-vector product per group
    (``B = J @ S``) recovers every nonzero of the Jacobian; likewise rows with
    vector-Jacobian products (``C = W @ J``). Fewer groups means fewer AD passes.

    Parameters
    ----------
    sparsity : SparsityPattern, scipy sparse matrix or array, array_like, str or path
        The m×n Jacobian pattern; nonzero entries are structural nonzeros (explicit zeros
        are dropped). A string or path names a ``.mtx`` or ``.npz`` file.
    partition : {"column", "row"}, default "column"
        Colour the columns (forward mode) or the rows (reverse mode).
    order : str or callable, default "best"
        ``"best"``, a name in :data:`sparsejac.coloring.ORDERS` (``"natural"``,
        ``"random"``, ``"largest_first"``, ``"smallest_last"``, ``"incidence_degree"``,
        ``"dynamic_largest_first"``, ``"dsatur"``) or a function
        ``(pattern, partition, rng) -> permutation``.
    check : bool, default False
        Verify the result with the slow checkers of :mod:`sparsejac.coloring.check`.
    seed : int, numpy.random.Generator or None, default 0
        Seeds the random orders and the ``best`` search.
    time_budget : float, default 2.0
        Seconds ``order="best"`` may spend in all (at least its two mandatory passes,
        natural and DSATUR, always run); ignored by the other orders. See
        :mod:`sparsejac.coloring.interface` for how the budget is spent.

    Returns
    -------
    ColoringResult
        Groups, seed matrices and exact decompression.

    Raises
    ------
    TypeError
        ``sparsity`` is not a matrix, ``order`` is neither a string nor callable, or
        ``time_budget`` is not a number.
    ValueError
        ``sparsity`` is not 2-D or is empty, ``partition`` or ``order`` is unknown, an
        ``order`` callable does not return a permutation, or ``time_budget`` is negative.
    AssertionError
        ``check=True`` and the colouring is wrong (a bug: please report it).

    See Also
    --------
    scipy.optimize._numdiff.group_columns : the natural-order column grouping of scipy.

    Notes
    -----
    Greedy colouring visits the vertices (columns or rows) in an order and gives each the
    smallest group not used by any vertex sharing a nonzero line with it (Gebremedhin,
    Manne and Pothen 2005, Algorithm 3.2). ``order="best"`` tries every order, seeded
    random orders and random-tie restarts, then Culberson's iterated greedy recolouring and
    a tabu search, and keeps the fewest groups; it stops early at the lower bound (the
    largest number of nonzeros in a row, for columns).

    References
    ----------
    A. H. Gebremedhin, F. Manne and A. Pothen, "What color is your Jacobian? Graph coloring
    for computing derivatives", SIAM Review 47(4) (2005), 629-705.

    A. R. Curtis, M. J. D. Powell and J. K. Reid, "On the estimation of sparse Jacobian
    matrices", J. Inst. Math. Appl. 13 (1974), 117-119.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> J = np.array([[1.0, 2.0, 0.0, 0.0],
    ...               [0.0, 3.0, 4.0, 0.0],
    ...               [0.0, 0.0, 5.0, 6.0]])
    >>> r = sparsejac.color(J)
    >>> r.n_colors, r.column_groups.tolist()
    (2, [0, 1, 0, 1])
    >>> S, _ = r.seed_matrices()
    >>> r.decompress(J @ S).toarray()
    array([[1., 2., 0., 0.],
           [0., 3., 4., 0.],
           [0., 0., 5., 6.]])
    >>> sparsejac.color(J, "row", order="dsatur").row_groups.tolist()
    [1, 0, 1]
    >>> sparsejac.color(J, "diagonal")
    Traceback (most recent call last):
        ...
    ValueError: Unknown `partition` 'diagonal'; expected one of ['column', 'row'].
    """
    pattern = as_pattern(sparsity, name="sparsity")
    part = check_partition(partition)
    budget = _check_budget(time_budget)
    if not (isinstance(order, str) and order == "best"):
        order_name, order_fn = resolve_order(order)
    rng = np.random.default_rng(seed)
    if isinstance(order, str) and order == "best":
        _warm_once()
    t0 = time.perf_counter()
    graph = BipartiteGraph(pattern, part)
    candidates: tuple[Candidate, ...] = ()
    if isinstance(order, str) and order == "best":
        search = _best(graph, rng, budget)
        assert search.groups is not None
        groups, name = search.groups, f"best:{search.name}"
        candidates = tuple(search.candidates)
    elif order_fn is ORDERS["dsatur"]:
        groups, name = dsatur_color(graph)[0], order_name
    elif order_fn is ORDERS["natural"]:
        groups, name = greedy_color(graph), order_name
    else:
        perm = order_fn(pattern, part, rng)
        perm = check_permutation(perm, graph.n_vertices, name="order")
        groups, name = greedy_color(graph, perm), order_name
    seconds = time.perf_counter() - t0
    n_colors = int(groups.max()) + 1
    result = ColoringResult(
        pattern=pattern,
        partition=part,
        order=name,
        n_colors=n_colors,
        column_groups=groups if part == "column" else None,
        row_groups=groups if part == "row" else None,
        lower_bound=graph.lower_bound,
        seconds=seconds,
        candidates=candidates,
    )
    if check:
        check_result(result)
    return result


_warm = False


def _warm_once() -> None:
    """Load every kernel before the first ``best`` search of a process, outside its budget."""
    global _warm
    if not _warm:
        _warm = True
        warm_up()


def warm_up() -> None:
    """Load (or, on first use after installation, compile) every colouring kernel now.

    numba compiles the kernels on first use and caches the machine code on disk; loading
    it still costs a few tenths of a second in a new process. Call this before timing.

    Examples
    --------
    >>> from sparsejac.coloring import warm_up
    >>> warm_up()
    """
    # Rows are the edges of a 5-cycle: lower bound 2, but 3 colours are needed, so "best"
    # runs every kernel (orders, DSATUR, restarts, recolouring).
    cycle = np.zeros((5, 5))
    cycle[np.arange(5), np.arange(5)] = 1
    cycle[np.arange(5), (np.arange(5) + 1) % 5] = 1
    for partition in ("column", "row"):
        color(cycle, partition, "best", time_budget=math.inf)

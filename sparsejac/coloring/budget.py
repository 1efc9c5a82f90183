"""What a colouring search may spend: work by a fixed cost model, and optionally seconds.

The ``order="best"`` searches try many orders, restarts, recolourings and tabu moves, and
keep the fewest colours. Bounding them by wall-clock seconds would make the result depend on
the machine and its load, so they are bounded by *work* instead: before each step its cost is
predicted from the sizes of the graph by the fixed formulas below, and the step runs only if
the work spent so far plus that cost stays within the limit. The same pattern, partition,
order, seed and effort therefore give the same colouring on every machine and under any load.

Work is counted in *nominal nanoseconds*: the coefficients were fitted to the kernels' times
on the reference machine (a 2-core x86-64 VM), so one unit of :data:`EFFORT_UNIT` (10⁹) is
about one second of searching there. Legend of the cost model (``W``: the walk work of the
graph, :attr:`~sparsejac.coloring.graph.BipartiteGraph.work` -- the sum of squared net sizes,
the edge visits of a pass; where some nets are dense (:mod:`~sparsejac.coloring.dense`) their
squares are replaced by ``n`` per vertex group, as the kernels never walk their pairs, so a
dense row costs ``O(n)``, not ``O(n**2)``; ``n``: vertices; ``nnz``: nonzeros):

* a first-fit greedy pass (any static order, a recolouring round): ``0.5 W + 2 nnz + 10 n``
  (with dense nets, as a dynamic order: measured 2-20 times slower than the mask kernel);
* a dynamic order (DSATUR, incidence degree, smallest last, dynamic largest first, their
  random-tie restarts): ``5 W + 300 n``;
* a tabu-search kernel call: ``5`` per candidate evaluation (a fixed number per call; ``12``
  with dense nets, whose walks at every move read the tables at random); its
  set-up walks every pair of every net, so it is charged as a dynamic order on the sum of
  squared net sizes (dense nets included; the search is skipped when its tables, vertices ×
  colours, would be too large, which bounds that sum);
* a star bicolouring pass: ``2 W + 150 nnz`` over both sides.

A wall-clock limit (``time_budget=`` seconds) remains available as an opt-in: a step then
also has to be predicted (by the slowest step of its kind so far) to end before the deadline.
Without it no clock is read to decide anything.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_EFFORT",
    "EFFORT_UNIT",
    "MANDATORY_MIN_WORK",
    "MANDATORY_WORK",
    "NEAR_BOUND_PASSES",
    "NEAR_BOUND_SHARE",
    "PREPARED_EFFORT",
    "PREPARED_WORK_PER_NONZERO",
    "PRODUCT_WORK_PER_LINE",
    "Budget",
    "PassCosts",
    "check_effort",
    "check_time_budget",
    "dynamic_cost",
    "greedy_cost",
    "near_bound",
    "prepared_effort",
    "skip_mandatory",
    "star_cost",
    "tabu_cost",
]

#: Work units (nominal nanoseconds) per unit of ``effort``: about a second of search on the
#: reference machine.
EFFORT_UNIT = 1e9
#: Effort of ``sparsejac.color(..., order="best")`` per search (column, row, bidirectional):
#: about the two seconds of search of earlier versions on the reference machine.
DEFAULT_EFFORT = 2.0

#: The most effort a prepared Jacobian's colouring search gets (a quarter of ``color``'s): a
#: colour fewer saves one product per Jacobian, which repays a long search only where
#: products are expensive.
PREPARED_EFFORT = 0.5
#: Below that cap, a prepared Jacobian's search gets this many work units per nonzero of the
#: pattern (about ten times the cost of detecting it), so that preparing a small or cheap
#: problem stays cheap.
PREPARED_WORK_PER_NONZERO = 400.0

_GREEDY = (0.5, 2.0, 10.0)  # per W, per nnz, per vertex
_DYNAMIC = (5.0, 300.0)  # per W, per vertex
_TABU_PER_EVALUATION = 5.0
_TABU_DENSE_PER_EVALUATION = 12.0  # moves walk dense nets: random access into the tables
_STAR = (2.0, 150.0)  # per W, per nnz


def greedy_cost(work: int, nnz: int, n: int) -> float:
    """Nominal cost of one first-fit greedy pass (see the module legend)."""
    return _GREEDY[0] * work + _GREEDY[1] * nnz + _GREEDY[2] * n


def dynamic_cost(work: int, n: int) -> float:
    """Nominal cost of one dynamic-order pass (DSATUR, restarts; see the module legend)."""
    return _DYNAMIC[0] * work + _DYNAMIC[1] * n


def tabu_cost(evaluations: int, dense: bool = False) -> float:
    """Nominal cost of a tabu kernel call of ``evaluations`` candidate evaluations.

    ``dense``: the graph has dense nets, whose walks dominate the moves (see the legend).
    """
    return (_TABU_DENSE_PER_EVALUATION if dense else _TABU_PER_EVALUATION) * evaluations


def star_cost(work: int, nnz: int) -> float:
    """Nominal cost of one star bicolouring pass (``work``: both sides' W)."""
    return _STAR[0] * work + _STAR[1] * nnz


@dataclass(frozen=True)
class PassCosts:
    """Nominal costs of the passes of a one-sided search on one graph."""

    greedy: float  # a first-fit pass in a given order (natural, random, a recolouring round)
    order: float  # a static named order (its degrees) and its greedy pass
    dynamic: float  # DSATUR, a dynamic order, a random-tie restart

    @staticmethod
    def of(work: int, nnz: int, n: int, dense: bool = False) -> PassCosts:
        """The costs for a graph with ``work`` (W), ``nnz`` incidences and ``n`` vertices.

        With ``dense`` (the graph has dense nets), a greedy pass costs as a dynamic order:
        its kernel walks the light nets and visits every vertex's dense colour sets, with
        the random memory access of a dynamic order.
        """
        g = dynamic_cost(work, n) if dense else greedy_cost(work, nnz, n)
        return PassCosts(g, g + _GREEDY[0] * 2 * work, dynamic_cost(work, n))


#: Nominal work (about a second) beyond which a pass that runs whatever the budget (the
#: one-sided search's DSATUR, the bidirectional search's first star orders) is skipped when
#: the best colouring so far is already near the lower bound (:func:`near_bound`): on a
#: nearly dense pattern such a pass costs ``O(n * nnz)`` and can gain only those few colours.
MANDATORY_WORK = EFFORT_UNIT
#: What a product (a Jacobian-vector or vector-Jacobian product) is assumed to cost at least,
#: in nominal nanoseconds per row and column of the pattern: its seed and result vectors
#: through a few operations of the function. A pass that runs whatever the budget is also
#: skipped when it costs more than the products it could save in one Jacobian at that price
#: (:func:`skip_mandatory`): a star bicolouring of a lower-triangular pattern of 1,000
#: columns (``O(n * nnz)``, 1.5 s) to save at most 1,000 products of 2,000 entries each.
PRODUCT_WORK_PER_LINE = 50.0
#: ... when the pass predicts more work than this (about a tenth of a second: a pass of
#: linear cost on 10^5 nonzeros runs, whatever it may save).
MANDATORY_MIN_WORK = 1e8
#: "Near the lower bound": at most this many colours (passes) above it ...
NEAR_BOUND_PASSES = 2
#: ... or this share of it, whichever is larger.
NEAR_BOUND_SHARE = 0.05


def near_bound(n_colors: int, lower_bound: int) -> bool:
    """Whether ``n_colors`` is near ``lower_bound`` (see :data:`NEAR_BOUND_PASSES`).

    Examples
    --------
    >>> from sparsejac.coloring.budget import near_bound
    >>> near_bound(1000, 999), near_bound(12, 8), near_bound(1040, 1000)
    (True, False, True)
    """
    return n_colors <= lower_bound + max(NEAR_BOUND_PASSES,
                                         math.ceil(NEAR_BOUND_SHARE * lower_bound))


def skip_mandatory(cost: float, fits: bool, n_colors: int, lower_bound: int,
                   lines: int = 0) -> bool:
    """Whether a pass that runs whatever the budget is skipped this time.

    Only when it does not fit in the budget, and either its predicted ``cost`` exceeds
    :data:`MANDATORY_WORK` while the best colouring so far is already near the lower bound
    (:func:`near_bound`: a nearly dense pattern, where the pass costs ``O(n * nnz)``), or it
    exceeds :data:`MANDATORY_MIN_WORK` and what the colours it could save at most are worth
    in one Jacobian: ``n_colors - lower_bound`` products of :data:`PRODUCT_WORK_PER_LINE`
    per row and column (``lines``: rows plus columns; 0 leaves this test out). A search
    given the budget for it runs it.

    Examples
    --------
    >>> from sparsejac.coloring.budget import skip_mandatory
    >>> skip_mandatory(5e9, False, 1000, 999), skip_mandatory(5e9, False, 1000, 2)
    (True, False)
    >>> skip_mandatory(3e9, False, 1000, 2, lines=2000)   # a triangle of 1,000 columns
    True
    >>> skip_mandatory(3e7, False, 7, 2, lines=32_000)  # a cheap pass runs whatever it saves
    False
    """
    if fits:
        return False
    if cost > MANDATORY_WORK and near_bound(n_colors, lower_bound):
        return True
    return lines > 0 and cost > max(MANDATORY_MIN_WORK,
                                    (n_colors - lower_bound) * lines * PRODUCT_WORK_PER_LINE)


def prepared_effort(nnz: int) -> float:
    """The default ``effort`` of a prepared Jacobian's colouring search, for ``nnz`` nonzeros.

    ``min(PREPARED_EFFORT, PREPARED_WORK_PER_NONZERO * nnz / EFFORT_UNIT)``: deterministic
    (a function of the pattern's size alone), small for small patterns.

    Examples
    --------
    >>> from sparsejac.coloring.budget import prepared_effort
    >>> prepared_effort(10_000), prepared_effort(10**8)
    (0.004, 0.5)
    """
    return min(PREPARED_EFFORT, PREPARED_WORK_PER_NONZERO * max(int(nnz), 0) / EFFORT_UNIT)


def check_effort(effort: Any) -> float:
    """Return ``effort`` as a float if it is a non-negative number (``math.inf`` allowed).

    Examples
    --------
    >>> from sparsejac.coloring.budget import check_effort
    >>> check_effort(2)
    2.0
    >>> check_effort(-1)
    Traceback (most recent call last):
        ...
    ValueError: `effort` must be a non-negative number (math.inf allowed); got -1
    """
    if isinstance(effort, bool) or not isinstance(effort, (int, float)):
        raise TypeError(
            f"`effort` must be a non-negative number (math.inf allowed); got "
            f"{type(effort).__name__}")
    if math.isnan(effort) or effort < 0:
        raise ValueError(
            f"`effort` must be a non-negative number (math.inf allowed); got {effort!r}")
    return float(effort)


def check_time_budget(time_budget: Any) -> float | None:
    """Return ``time_budget`` (seconds, ``math.inf`` allowed) as a float, or None for None.

    Examples
    --------
    >>> from sparsejac.coloring.budget import check_time_budget
    >>> check_time_budget(1), check_time_budget(None)
    (1.0, None)
    >>> check_time_budget(-1)
    Traceback (most recent call last):
        ...
    ValueError: `time_budget` must be a non-negative number of seconds (math.inf allowed) or \
None; got -1
    """
    if time_budget is None:
        return None
    if isinstance(time_budget, bool) or not isinstance(time_budget, (int, float)):
        raise TypeError(
            "`time_budget` must be a non-negative number of seconds (math.inf allowed) or None; "
            "got "
            f"{type(time_budget).__name__}"
        )
    if math.isnan(time_budget) or time_budget < 0:
        raise ValueError(
            "`time_budget` must be a non-negative number of seconds (math.inf allowed) or None; "
            f"got {time_budget!r}"
        )
    return float(time_budget)


class Budget:
    """Work (and optionally time) a search may spend, and what it has spent.

    Parameters
    ----------
    work : float
        Limit in work units (nominal nanoseconds); ``math.inf`` for none.
    seconds : float, optional
        A wall-clock limit from now (opt-in); ``None`` reads no clock.
    deadline : float, optional
        An absolute :func:`time.perf_counter` deadline instead of ``seconds`` (shared with a
        parent search).

    Examples
    --------
    >>> from sparsejac.coloring.budget import Budget
    >>> b = Budget(100.0)
    >>> b.fits(60.0), b.charge(60.0), b.fits(60.0), b.spent
    (True, None, False, 60.0)
    """

    __slots__ = ("deadline", "slowest", "spent", "start", "work")

    def __init__(self, work: float, seconds: float | None = None, *,
                 deadline: float | None = None) -> None:
        self.work = float(work)
        self.spent = 0.0
        self.start = time.perf_counter() if (seconds is not None or deadline is not None) \
            else 0.0
        if seconds is not None:
            deadline = self.start + seconds
        self.deadline = deadline
        self.slowest: dict[str, float] = {}

    @property
    def left(self) -> float:
        """Work units still available."""
        return max(self.work - self.spent, 0.0)

    def fits(self, cost: float, kind: str = "", share: float = 1.0) -> bool:
        """Whether a step of predicted ``cost`` (and, with a clock, of ``kind``) fits.

        ``share`` limits the step to end within that fraction of the work limit (and of the
        time limit): the search's stages get a share each.
        """
        if self.spent + cost > share * self.work:
            return False
        if self.deadline is None:
            return True
        end = self.start + share * (self.deadline - self.start)
        return time.perf_counter() + self.slowest.get(kind, 0.0) <= end

    def charge(self, cost: float, kind: str = "", seconds: float = 0.0) -> None:
        """Record a step of ``cost`` work units (and its duration, for clock predictions)."""
        self.spent += cost
        if kind and seconds > self.slowest.get(kind, 0.0):
            self.slowest[kind] = seconds

    def share(self, fraction: float) -> Budget:
        """A budget of ``fraction`` of the work left, with the same deadline."""
        child = Budget(self.left * fraction, deadline=self.deadline)
        return child

    def __repr__(self) -> str:
        clock = "" if self.deadline is None else ", with a deadline"
        return f"Budget(spent {self.spent:.3g} of {self.work:.3g} work units{clock})"

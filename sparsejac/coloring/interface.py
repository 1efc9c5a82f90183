"""``sparsejac.color``: the one entry point of the colouring engine.

This module composes the pieces: it converts the input with
:func:`~sparsejac.pattern.as_pattern`, runs one named order or the ``"best"`` search for
the requested partition, and wraps the groups in a :class:`~.result.ColoringResult`:

* ``"column"`` / ``"row"`` -- partial distance-2 colouring of the columns (forward mode) or
  rows (reverse mode); ``order="best"`` is the search of :mod:`~sparsejac.coloring.search`.
* ``"bidirectional"`` -- star bicolouring with neutral colours (mixed mode);
  ``order="best"`` is the search of :mod:`~sparsejac.coloring.bicolor`, which starts from
  the two one-sided ``best`` colourings, so it never needs more passes than either.
* ``"auto"`` -- the column, row and bidirectional colourings, and the cheapest of the three
  by cost = forward passes + ``reverse_cost`` × reverse passes.

The first ``best`` call of a process first loads every compiled kernel (:func:`warm_up`),
outside the budget and outside the reported time.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sparsejac.coloring.bicolor import best_bicoloring, passes, star_bicoloring
from sparsejac.coloring.budget import (
    DEFAULT_EFFORT,
    EFFORT_UNIT,
    Budget,
    check_effort,
    check_time_budget,
)
from sparsejac.coloring.check import check_result
from sparsejac.coloring.graph import (
    DEFAULT_REVERSE_COST,
    PARTITIONS,
    BipartiteGraph,
    bidirectional_lower_bound,
    check_partition,
)
from sparsejac.coloring.greedy import dsatur_color, greedy_color
from sparsejac.coloring.orders import ORDERS, check_permutation, resolve_order
from sparsejac.coloring.recovery import check_method
from sparsejac.coloring.result import Candidate, ColoringResult
from sparsejac.coloring.search import (
    BEST_ORDERS,
    MAX_RESTARTS,
    N_RANDOM,
    RECOLOR_SHARE,
    RESTART_SHARE,
    best_groups,
)
from sparsejac.coloring.symmetric import color_symmetric
from sparsejac.pattern import SparsityPattern, as_pattern

__all__ = [
    "BEST_ORDERS",
    "DEFAULT_EFFORT",
    "DEFAULT_REVERSE_COST",
    "MAX_RESTARTS",
    "MODE_PARTITIONS",
    "N_RANDOM",
    "RECOLOR_SHARE",
    "RESTART_SHARE",
    "check_reverse_cost",
    "color",
    "color_partitions",
    "partition_cost",
    "partition_for_mode",
    "warm_up",
]


#: The partition each evaluation mode decompresses with: forward mode (and finite
#: differences) read columns of ``B = J @ S``, reverse mode rows of ``C = W @ J``, mixed mode
#: both; ``"auto"`` compares the three.
MODE_PARTITIONS: dict[str, str] = {
    "forward": "column", "fd": "column", "reverse": "row", "mixed": "bidirectional",
    "auto": "auto",
}


def partition_for_mode(mode: str) -> str:
    """The partition whose colouring an evaluation ``mode`` needs.

    Examples
    --------
    >>> from sparsejac.coloring import partition_for_mode
    >>> partition_for_mode("reverse"), partition_for_mode("mixed")
    ('row', 'bidirectional')
    >>> partition_for_mode("backward")
    Traceback (most recent call last):
        ...
    ValueError: Unknown `mode` 'backward'; expected one of ['forward', 'fd', 'reverse', \
'mixed', 'auto'].
    """
    try:
        return MODE_PARTITIONS[mode]
    except (KeyError, TypeError):
        raise ValueError(
            f"Unknown `mode` {mode!r}; expected one of {list(MODE_PARTITIONS)}.") from None


def check_reverse_cost(reverse_cost: Any) -> float:
    """Return ``reverse_cost`` as a float if it is a positive finite number, else raise.

    The one rule for ``reverse_cost`` wherever it is accepted (colouring and Jacobians).

    Examples
    --------
    >>> from sparsejac.coloring import check_reverse_cost
    >>> check_reverse_cost(2)
    2.0
    >>> check_reverse_cost(0)
    Traceback (most recent call last):
        ...
    ValueError: `reverse_cost` must be a positive finite number (the cost of a reverse \
product relative to a forward one); got 0
    """
    if isinstance(reverse_cost, bool) or not isinstance(reverse_cost, (int, float)):
        raise TypeError(
            "`reverse_cost` must be a positive number (the cost of a reverse product relative "
            f"to a forward one); got {type(reverse_cost).__name__}"
        )
    if not (math.isfinite(reverse_cost) and reverse_cost > 0):
        raise ValueError(
            "`reverse_cost` must be a positive finite number (the cost of a reverse product "
            f"relative to a forward one); got {reverse_cost!r}"
        )
    return float(reverse_cost)


def partition_cost(result: ColoringResult, reverse_cost: float = DEFAULT_REVERSE_COST) -> float:
    """Cost of a colouring: forward passes + ``reverse_cost`` × reverse passes.

    Parameters
    ----------
    result : ColoringResult
        Any colouring.
    reverse_cost : float, optional
        Cost of a reverse product relative to a forward one.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np, sparsejac
    >>> from sparsejac.coloring.interface import partition_cost
    >>> partition_cost(sparsejac.color(np.eye(3), "row"), reverse_cost=2.0)
    2.0
    """
    if not isinstance(result, ColoringResult):
        raise TypeError("`result` must be a ColoringResult (from sparsejac.color); got "
                        f"{type(result).__name__}")
    return result.n_forward + reverse_cost * result.n_reverse


def _generators(seed: int | np.random.Generator | None) -> Callable[[], np.random.Generator]:
    """A source of generators, one per search.

    Each is fresh from ``seed`` (so the column search inside ``"auto"`` or
    ``"bidirectional"`` equals ``partition="column"`` with the same seed), or, for a
    Generator, the Generator itself, drawn on in sequence.
    """
    if isinstance(seed, np.random.Generator):
        return lambda: seed
    if seed is not None and not (isinstance(seed, (int, np.integer))
                                 and not isinstance(seed, bool) and seed >= 0):
        raise ValueError("`seed` must be an integer >= 0, a numpy.random.Generator or None; "
                         f"got {seed!r}")
    return lambda: np.random.default_rng(seed)


def _one_sided(
    pattern: SparsityPattern,
    part: str,
    order: Any,
    rng: np.random.Generator,
    work: float,
    seconds: float | None,
    names_of: str | None = None,
) -> ColoringResult:
    t0 = time.perf_counter()
    graph = BipartiteGraph(pattern, part)
    candidates: tuple[Candidate, ...] = ()
    spent = 0.0
    if isinstance(order, str) and order == "best":
        search = best_groups(graph, rng, Budget(work, seconds))
        assert search.groups is not None
        groups, name = search.groups, f"best:{search.name}"
        candidates = tuple(search.candidates)
        spent = search.budget.spent
    else:
        # `auto` looks names up among the bidirectional orders: the dense-first ones then
        # order the vertices of one side by decreasing nonzero count.
        order_name, order_fn = resolve_order(order, names_of or part if isinstance(order, str)
                                             else part)
        if order_fn is ORDERS["dsatur"]:
            groups, name = dsatur_color(graph)[0], order_name
        elif order_fn is ORDERS["natural"]:
            groups, name = greedy_color(graph), order_name
        else:
            perm = order_fn(pattern, part, rng)  # type: ignore[arg-type]
            perm = check_permutation(perm, graph.n_vertices, name="order")
            groups, name = greedy_color(graph, perm), order_name
    return ColoringResult(
        pattern=pattern,
        partition=part,
        order=name,
        n_colors=int(groups.max()) + 1,
        column_groups=groups if part == "column" else None,
        row_groups=groups if part == "row" else None,
        lower_bound=graph.lower_bound,
        seconds=time.perf_counter() - t0,
        candidates=candidates,
        work=spent,
    )


def _bidirectional(
    pattern: SparsityPattern,
    order: Any,
    rngs: Callable[[], np.random.Generator],
    work: float,
    seconds: float | None,
    reverse_cost: float,
    sides: tuple[ColoringResult, ColoringResult] | None,
) -> ColoringResult:
    """One star bicolouring for a named order; for ``"best"`` the search.

    The search starts from ``sides`` (the best column and row colourings), and its time
    includes theirs.
    """
    t0 = time.perf_counter()
    candidates: tuple[Candidate, ...] = ()
    spent = 0.0
    if isinstance(order, str) and order == "best":
        assert sides is not None
        t0 -= sides[0].seconds + sides[1].seconds
        search = best_bicoloring(
            pattern,
            rngs(),
            work,
            seconds=seconds,
            reverse_cost=reverse_cost,
            column=sides[0].groups,
            row=sides[1].groups,
            times=(sides[0].seconds, sides[1].seconds),
        )
        spent = search.budget.spent + sides[0].work + sides[1].work
        assert search.column_groups is not None
        assert search.row_groups is not None
        cg, rg, name = search.column_groups, search.row_groups, f"best:{search.name}"
        candidates = tuple(search.candidates)
    else:
        order_name, order_fn = resolve_order(order, "bidirectional")
        perm = order_fn(pattern, "bidirectional", rngs())
        perm = check_permutation(perm, sum(pattern.shape), name="order")
        found = star_bicoloring(pattern, perm)
        assert found is not None  # no limit: never stops early
        (cg, rg), name = found, order_name
    return ColoringResult(
        pattern=pattern,
        partition="bidirectional",
        order=name,
        n_colors=passes(cg) + passes(rg),
        column_groups=cg,
        row_groups=rg,
        lower_bound=bidirectional_lower_bound(pattern),
        seconds=time.perf_counter() - t0,
        candidates=candidates,
        work=spent,
    )


def color(
    sparsity: Any,
    partition: str = "column",
    order: Any = "best",
    *,
    check: bool = False,
    seed: int | np.random.Generator | None = 0,
    effort: float = DEFAULT_EFFORT,
    time_budget: float | None = None,
    reverse_cost: float = DEFAULT_REVERSE_COST,
    method: str | None = None,
) -> ColoringResult:
    """Colour the columns and/or rows of a sparsity pattern.

    Columns in the same group share no row, so one Jacobian-vector product per group
    (``B = J @ S``) recovers every nonzero of the Jacobian; likewise rows with
    vector-Jacobian products (``C = W @ J``). A bidirectional colouring uses both kinds of
    products, each nonzero being read from one of them. Fewer groups means fewer AD passes.

    Parameters
    ----------
    sparsity : SparsityPattern, scipy sparse matrix or array, array_like, str or path
        The m×n Jacobian pattern; nonzero entries are structural nonzeros (explicit zeros
        are dropped). A string or path names a ``.mtx`` or ``.npz`` file.
    partition : {"column", "row", "bidirectional", "auto", "symmetric"}, default "column"
        Colour the columns (forward mode), the rows (reverse mode), some of both (mixed
        mode: star bicolouring with neutral colours), or (``"auto"``) compute all three
        and return the cheapest by forward passes + ``reverse_cost`` × reverse passes.
        ``"symmetric"``: a structurally symmetric pattern (a Hessian's), whose rows and
        columns share one colour each, by the ``method`` given; ``B = H @ S``.
    order : str or callable, default "best"
        ``"best"``, a name in :data:`sparsejac.coloring.ORDERS` (``"natural"``,
        ``"random"``, ``"largest_first"``, ``"smallest_last"``, ``"incidence_degree"``,
        ``"dynamic_largest_first"``, ``"dsatur"``; for ``"bidirectional"`` also
        ``"dense_rows_first"`` and ``"dense_columns_first"``), a function
        ``(pattern, partition, rng) -> permutation``, or (column and row partitions) a
        networkx colouring strategy such as ``networkx.coloring.strategy_largest_first``,
        run on :func:`~sparsejac.coloring.intersection_graph` (slow on large patterns; see
        :func:`~sparsejac.coloring.interop.networkx_order`). For ``"bidirectional"`` a named order
        orders the columns and rows together (columns first in ``"natural"``) for one star
        bicolouring with implicit covering and neutral-colour post-processing.
    check : bool, default False
        Verify the result with the slow checkers of :mod:`sparsejac.coloring.check`.
    seed : int, numpy.random.Generator or None, default 0
        Seeds the random orders and the ``best`` searches. With an int (or None), each
        search (column, row, bidirectional) starts from a fresh generator of the seed, so
        the column colouring inside ``"auto"`` is ``partition="column"``'s.
    effort : float, default :data:`~sparsejac.coloring.budget.DEFAULT_EFFORT` (2.0)
        How much ``order="best"`` may search, per search (the column, the row and the
        bidirectional one: a bidirectional or auto colouring runs all three). The search is
        bounded by *work*, predicted from the pattern's sizes by a fixed cost model, not by
        the clock, so the result is the same on every machine and under any load; one unit
        is about a second of search on a 2-core reference machine. ``0``: only the
        mandatory first passes; ``math.inf``: until every step's own limits. Ignored by the
        other orders. See :mod:`sparsejac.coloring.budget`.
    time_budget : float, optional
        An opt-in wall-clock limit in seconds per search, on top of ``effort`` (the result
        then depends on the machine's speed). The first passes always run.
    reverse_cost : float, default :data:`DEFAULT_REVERSE_COST` (1.0)
        Cost of a reverse product relative to a forward one; ``"auto"`` minimises forward
        passes + ``reverse_cost`` × reverse passes, and the bidirectional search uses it to
        break ties between equal pass counts. Checked for every partition.
    method : {"star", "acyclic"}, optional
        Only for ``partition="symmetric"`` (default ``"star"``): star colouring, whose
        decompression is a direct gather, or acyclic colouring, usually with fewer colours,
        decompressed by substitution (Gebremedhin, Tarafdar, Manne and Pothen 2007). Named
        orders are computed on the adjacency graph (distance-1 degrees); see
        :mod:`sparsejac.coloring.symmetric`.

    Returns
    -------
    ColoringResult
        Groups, seed matrices and exact decompression. For ``"auto"``, its ``partition`` is
        the one chosen and its ``candidates`` list the three colourings compared.

    Raises
    ------
    TypeError
        ``sparsity`` is not a matrix, ``order`` is neither a string nor callable, or
        ``effort``, ``time_budget`` or ``reverse_cost`` is not a number.
    ValueError
        ``sparsity`` is not 2-D or is empty, ``partition`` or ``order`` is unknown, an
        ``order`` callable does not return a permutation, ``effort`` or ``time_budget`` is
        negative or
        ``reverse_cost`` is not positive; ``method`` is unknown or given for a partition
        other than ``"symmetric"``; a symmetric colouring of a pattern that is not square
        and structurally symmetric.
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
    largest number of nonzeros in a row, for columns). The bidirectional search adds star
    bicolourings of ``[[0, Jᵀ], [J, 0]]`` in several orders, with neutral-colour
    post-processing, and split constructions (the dense rows in reverse, the rest
    forward), each re-coloured by the one-sided search.

    References
    ----------
    A. H. Gebremedhin, F. Manne and A. Pothen, "What color is your Jacobian? Graph coloring
    for computing derivatives", SIAM Review 47(4) (2005), 629-705.

    A. R. Curtis, M. J. D. Powell and J. K. Reid, "On the estimation of sparse Jacobian
    matrices", J. Inst. Math. Appl. 13 (1974), 117-119.

    A. Montoison, G. Dalle and A. H. Gebremedhin, "Revisiting sparse matrix coloring and
    bicoloring" (2025).

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

    An arrowhead needs 5 passes one-sided but 3 in mixed mode:

    >>> A = np.eye(5) + 1.0
    >>> A[1:, 1:] = np.eye(4)
    >>> b = sparsejac.color(A, "bidirectional")
    >>> b.n_forward, b.n_reverse, b.column_groups.tolist(), b.row_groups.tolist()
    (2, 1, [0, 1, 1, 1, 1], [0, -1, -1, -1, -1])
    >>> S, W = b.seed_matrices()
    >>> np.array_equal(b.decompress(B=A @ S, C=W @ A).toarray(), A)
    True
    >>> sparsejac.color(A, "auto").partition
    'bidirectional'

    A Hessian pattern (symmetric) needs fewer products with a symmetric colouring:

    >>> H = np.eye(6)
    >>> H[0, :] = H[:, 0] = 2.0
    >>> sparsejac.color(H).n_colors, sparsejac.color(H, "symmetric").n_colors
    (6, 2)
    >>> a = sparsejac.color(H + np.eye(6, k=1) + np.eye(6, k=-1), "symmetric",
    ...                     method="acyclic")
    >>> a.method, a.n_colors
    ('acyclic', 3)
    >>> sparsejac.color(J, "diagonal")
    Traceback (most recent call last):
        ...
    ValueError: Unknown `partition` 'diagonal'; expected one of ['column', 'row', \
'bidirectional', 'auto', 'symmetric'].
    """
    if not isinstance(partition, str):
        raise ValueError(f"`partition` must be a string such as 'column'; got "
                         f"{type(partition).__name__} {partition!r:.60}")
    if partition == "symmetric":
        return _symmetric_color(sparsity, order, check, seed, effort, time_budget,
                                reverse_cost, "star" if method is None else method)
    if method is not None:
        raise ValueError(
            f"`method` applies to partition='symmetric' only; got method={method!r} with "
            f"partition={partition!r}")
    if partition not in (*PARTITIONS, "auto"):
        raise ValueError(
            f"Unknown `partition` {partition!r}; expected one of "
            f"{[*PARTITIONS, 'auto', 'symmetric']}.")
    return color_partitions(
        sparsity,
        (partition,),
        order,
        check=check,
        seed=seed,
        effort=effort,
        time_budget=time_budget,
        reverse_cost=reverse_cost,
    )[partition]


def _symmetric_color(sparsity: Any, order: Any, check: bool,
                     seed: int | np.random.Generator | None, effort: float,
                     time_budget: float | None, reverse_cost: float,
                     method: str) -> ColoringResult:
    """``color`` for ``partition="symmetric"``: check the arguments, colour, check."""
    pattern = as_pattern(sparsity, name="sparsity")
    method = check_method(method)
    work = check_effort(effort) * EFFORT_UNIT
    seconds = check_time_budget(time_budget)
    check_reverse_cost(reverse_cost)
    best = isinstance(order, str) and order == "best"
    if not best:
        resolve_order(order, "column")
    elif seconds is not None:
        _warm_once()
    result = color_symmetric(pattern, method, order, _generators(seed)(), work, seconds)
    if check:
        check_result(result)
    return result


def color_partitions(
    sparsity: Any,
    partitions: Sequence[str] = ("column", "row", "bidirectional", "auto"),
    order: Any = "best",
    *,
    check: bool = False,
    seed: int | np.random.Generator | None = 0,
    effort: float = DEFAULT_EFFORT,
    time_budget: float | None = None,
    reverse_cost: float = DEFAULT_REVERSE_COST,
) -> dict[str, ColoringResult]:
    """Colour several partitions of one pattern, sharing the work they have in common.

    The bidirectional search starts from the best column and row colourings, and
    ``"auto"`` compares all three: asked together, each is computed once. With an integer
    seed (or None) every search starts from a fresh generator, so each result equals what
    :func:`color` returns for that partition alone.

    Parameters
    ----------
    sparsity : SparsityPattern, scipy sparse matrix or array, array_like, str or path
        The m×n pattern (see :func:`color`).
    partitions : sequence of str, default all four
        Any of ``"column"``, ``"row"``, ``"bidirectional"`` and ``"auto"``.
    order, check, seed, effort, time_budget, reverse_cost
        As for :func:`color`.

    Returns
    -------
    dict
        One :class:`ColoringResult` per partition asked for, keyed by it.

    Raises
    ------
    TypeError, ValueError
        As for :func:`color` (a partition, the order for a partition, the effort, the time
        budget, the cost).

    See Also
    --------
    color : one partition.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.coloring import color_partitions
    >>> A = np.eye(6)
    >>> A[0, :] = A[:, 0] = 1  # arrowhead
    >>> found = color_partitions(A)
    >>> {k: (r.partition, r.n_forward, r.n_reverse) for k, r in found.items()}
    ... # doctest: +NORMALIZE_WHITESPACE
    {'column': ('column', 6, 0), 'row': ('row', 0, 6),
     'bidirectional': ('bidirectional', 2, 1), 'auto': ('bidirectional', 2, 1)}
    """
    pattern = as_pattern(sparsity, name="sparsity")
    if isinstance(partitions, str):
        raise TypeError(
            f"`partitions` must be a sequence of partition names; got the string {partitions!r} "
            f"(use color() for one partition, or ({partitions!r},))"
        )
    parts = [check_partition(p, allow_auto=True) for p in partitions]
    work = check_effort(effort) * EFFORT_UNIT
    seconds = check_time_budget(time_budget)
    cost = check_reverse_cost(reverse_cost)
    best = isinstance(order, str) and order == "best"
    if not best:
        for part in parts:  # a one-sided partition refuses the bidirectional-only orders
            resolve_order(order, "bidirectional" if part in ("bidirectional", "auto") else part)
    rngs = _generators(seed)
    if best and seconds is not None:
        _warm_once()
    done: dict[str, ColoringResult] = {}

    def get(part: str) -> ColoringResult:
        if part not in done:
            if part in ("column", "row"):
                # auto also looks names up among the bidirectional orders: the dense-first
                # ones then order one side by decreasing nonzero count
                done[part] = _one_sided(
                    pattern, part, order, rngs(), work, seconds, names_of="bidirectional"
                )
            elif part == "bidirectional":
                sides = (get("column"), get("row")) if best else None
                done[part] = _bidirectional(pattern, order, rngs, work, seconds, cost, sides)
            else:
                done[part] = _auto(get("column"), get("row"), get("bidirectional"), cost, best)
        return done[part]

    out = {part: get(part) for part in parts}
    if check:
        for result in out.values():
            check_result(result)
    return out


def _auto(
    column: ColoringResult,
    row: ColoringResult,
    both: ColoringResult,
    reverse_cost: float,
    shared: bool,
) -> ColoringResult:
    """The cheapest of the three colourings (ties: fewer passes, then column, row, both)."""
    results = (column, row, both)
    chosen = min(results, key=lambda r: (partition_cost(r, reverse_cost), r.n_colors))
    summary = tuple(
        Candidate(f"{r.partition}:{r.order}", r.n_colors, r.seconds, r.n_forward, r.n_reverse)
        for r in results
    )
    # `both` already counts the one-sided searches it started from (order="best")
    seconds = both.seconds + (0.0 if shared else column.seconds + row.seconds)
    work = both.work + (0.0 if shared else column.work + row.work)
    return ColoringResult(
        pattern=chosen.pattern,
        partition=chosen.partition,
        order=f"auto:{chosen.partition}:{chosen.order}",
        n_colors=chosen.n_colors,
        column_groups=chosen.column_groups,
        row_groups=chosen.row_groups,
        lower_bound=chosen.lower_bound,
        seconds=seconds,
        candidates=summary,
        work=work,
    )


_warm = False


def _warm_once() -> None:
    """Load every kernel before the first timed ``best`` search (``time_budget=``).

    Outside its budget; a search bounded by work alone needs no warm-up.
    """
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
        color(cycle, partition, "best", effort=math.inf)
    # An arrowhead with a dense row and column: the bidirectional search runs its star
    # bicolouring, post-processing and decompression kernels.
    arrow = np.eye(6)
    arrow[0, :] = arrow[:, 0] = 1
    result = color(arrow, "bidirectional", "best", effort=0.0)
    result.decompress_data(B=np.zeros((6, result.n_forward)), C=np.zeros((result.n_reverse, 6)))
    # A symmetric 5-cycle: the star and acyclic kernels, the orders on the adjacency graph and
    # both recoveries.
    ring = cycle + cycle.T
    for method in ("star", "acyclic"):
        sym = color(ring, "symmetric", "best", method=method, effort=0.0)
        sym.decompress_data(np.zeros((5, sym.n_colors)))

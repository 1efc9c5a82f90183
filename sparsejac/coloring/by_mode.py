"""Colourings by mode: the pipeline's one entry into colouring, and the one-off policy.

A mode needs the colouring of its partition (:func:`colour_modes`). A one-off Jacobian does
not repay a search: it is uncoloured when tiny (:data:`ONE_SHOT_IDENTITY`), else it keeps
natural-order colourings when they are good (:func:`one_shot_colour`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sparsejac.coloring.graph import bidirectional_lower_bound
from sparsejac.coloring.interface import color_partitions, partition_for_mode
from sparsejac.coloring.result import ColoringResult
from sparsejac.pattern import SparsityPattern

__all__ = ["ONE_SHOT_FEW", "ONE_SHOT_IDENTITY", "ONE_SHOT_IDENTITY_ROWS", "ONE_SHOT_MANY",
           "ONE_SHOT_SLACK", "colour_modes", "column_as_bidirectional", "identity_colouring",
           "one_shot_colour", "one_sided_as_mixed"]


def colour_modes(pattern: SparsityPattern, modes: Sequence[str], order: Any, effort: float,
            time_budget: float | None, reverse_cost: float) -> dict[str, ColoringResult]:
    """The colouring of every mode (the one place the pipeline colours)."""
    partitions = {m: partition_for_mode(m) for m in modes}
    if 0 in pattern.shape:  # an f returning an empty array (or of an empty x): no product
        return {m: _no_products(pattern, p) for m, p in partitions.items()}
    if pattern.nnz == pattern.shape[0] * pattern.shape[1]:  # dense: nothing to colour
        return {m: _dense_colouring(pattern, p, reverse_cost) for m, p in partitions.items()}
    wanted = sorted(set(partitions.values()))
    one_sided_only = False
    if callable(order) and len(wanted) > 1 and "bidirectional" in wanted:
        from sparsejac.coloring.interop import is_networkx_strategy

        # a networkx strategy orders one intersection graph: mode="auto" compares the
        # one-sided colourings, and mixed mode is forward mode's colouring
        one_sided_only = is_networkx_strategy(order)
    if one_sided_only:
        wanted = sorted(set(wanted) - {"bidirectional"} | {"column"})
    found: dict[str, ColoringResult] = {}
    # a bicolouring cannot cost less than this (mixed mode's passes, reverse ones weighed)
    bound = (min(1.0, reverse_cost) * bidirectional_lower_bound(pattern)
             if "bidirectional" in wanted else 0.0)
    if wanted == ["column", "row"] or (wanted == ["bidirectional", "column", "row"] and max(
            1, int(np.diff(pattern.indptr).max(initial=0))) <= bound):
        # the column side first: the others may not be needed (a column colouring at the
        # bound leaves nothing to a bicolouring: a curve fit's nearly dense 5,000 x 7
        # Jacobian spent 4 ms of a 7 ms preparation finding its 7 columns again)
        found = color_partitions(pattern, ["column"], order=order, effort=effort,
                                 time_budget=time_budget, reverse_cost=reverse_cost)
        col = found["column"]
        rows = identity_colouring(pattern, "row", "uncoloured")
        if col.n_colors <= reverse_cost * rows.lower_bound:
            found["row"] = rows
        if "bidirectional" in wanted and col.n_colors <= bound:
            found["bidirectional"] = column_as_bidirectional(col)
        wanted = [p for p in wanted if p not in found]
    if wanted:
        found.update(color_partitions(pattern, wanted, order=order, effort=effort,
                                      time_budget=time_budget, reverse_cost=reverse_cost))
    if one_sided_only:
        found["bidirectional"] = column_as_bidirectional(found["column"])
    return {m: found[p] for m, p in partitions.items()}


#: A one-off Jacobian keeps the natural-order colourings (one pass each, as scipy's
#: ``group_columns``) when the better one-sided one has at most :data:`ONE_SHOT_FEW` colours,
#: or at most this many more than its lower bound while staying below
#: :data:`ONE_SHOT_MANY`; otherwise it runs the mandatory passes of every partition (DSATUR,
#: bidirectional: a dense row and column make every one-sided colouring need n colours).
ONE_SHOT_SLACK = 4
ONE_SHOT_FEW = 12
ONE_SHOT_MANY = 64


def column_as_bidirectional(c: ColoringResult) -> ColoringResult:
    """A column (or row) colouring as the bidirectional colouring that seeds no row (column).

    Where natural-order one-sided colourings are good, a bidirectional pass (a star
    bicolouring, seconds on millions of nonzeros) cannot beat them by much; the mode choice
    then sees mixed mode as the forward (reverse) mode it is.
    """
    m, n = c.pattern.shape
    column = c.partition == "column"
    return ColoringResult(
        pattern=c.pattern, partition="bidirectional", order=f"{c.partition}:{c.order}",
        n_colors=c.n_colors,
        column_groups=c.column_groups if column else np.full(n, -1, dtype=np.int64),
        row_groups=np.full(m, -1, dtype=np.int64) if column else c.row_groups,
        lower_bound=bidirectional_lower_bound(c.pattern), seconds=0.0, candidates=(),
        work=0.0)


def one_sided_as_mixed(found: dict[str, ColoringResult], reverse_cost: float
                       ) -> ColoringResult:
    """The cheaper of the forward and reverse colourings, as mixed mode's (one-sided)."""
    cheaper = min((found["forward"], found["reverse"]),
                  key=lambda c: (c.n_forward + reverse_cost * c.n_reverse, c.partition != "column"))
    return column_as_bidirectional(cheaper)


#: A one-off Jacobian with at most this many columns and :data:`ONE_SHOT_IDENTITY_ROWS` rows
#: is evaluated in forward mode with identity seeds, one product per column, uncoloured:
#: its products cost as little as a colouring's (tangents of at most 16 x 64 values),
#: and a colouring would cost more than the whole evaluation.
ONE_SHOT_IDENTITY = 16
ONE_SHOT_IDENTITY_ROWS = 64


def _no_products(pattern: SparsityPattern, partition: str) -> ColoringResult:
    """The colouring of a pattern without rows or columns (no two lines share a nonzero).

    A one-sided partition puts every line in one group (a product that reads nothing); a
    bidirectional one seeds none.
    """
    m, n = pattern.shape
    cols: np.ndarray | None
    rows: np.ndarray | None
    if partition == "bidirectional":
        cols, rows, k = np.full(n, -1, dtype=np.int64), np.full(m, -1, dtype=np.int64), 0
    else:
        size = n if partition == "column" else m
        groups, k = np.zeros(size, dtype=np.int64), int(size > 0)
        cols, rows = (groups, None) if partition == "column" else (None, groups)
    return ColoringResult(pattern=pattern, partition=partition, order="none", n_colors=k,
                          column_groups=cols, row_groups=rows, lower_bound=0)


def _dense_colouring(pattern: SparsityPattern, partition: str, reverse_cost: float
                     ) -> ColoringResult:
    """The colouring of a dense pattern: one group per column (row), its lower bound.

    Every two columns (rows) share a nonzero, so no colouring has fewer groups, and no
    bicolouring fewer than the smaller side (mixed mode takes the cheaper one-sided one).
    A search would only confirm it: 5 ms of a 0.02 s curve fit (5,000 residuals, 7
    parameters) went to colouring its dense Jacobian.
    """
    if partition != "bidirectional":
        return identity_colouring(pattern, partition, "dense")
    m, n = pattern.shape
    return column_as_bidirectional(identity_colouring(
        pattern, "column" if n <= reverse_cost * m else "row", "dense"))


def identity_colouring(pattern: SparsityPattern, partition: str = "column",
                       order: str = "identity") -> ColoringResult:
    """Every column (or row) its own group: one product per column (row), uncoloured.

    The row form is the stand-in :func:`colour_modes` gives for reverse mode where it cannot
    be the cheapest (``order="uncoloured"``): a column colouring with at most
    ``reverse_cost`` times as many colours as the most nonzeros in a column (a bundle
    adjustment's camera parameters), which no row colouring undercuts; colouring those rows
    (seconds, on such columns) would be wasted. It is valid, and never chosen.
    """
    column = partition == "column"
    size = pattern.shape[1 if column else 0]
    groups = np.arange(size, dtype=np.int64)
    counts = pattern.row_counts if column else pattern.col_counts
    return ColoringResult(pattern=pattern, partition=partition, order=order, n_colors=size,
                          column_groups=groups if column else None,
                          row_groups=None if column else groups,
                          lower_bound=max(int(counts.max(initial=0)), 1))


def one_shot_colour(pattern: SparsityPattern, reverse_cost: float, program: Any = None,
                    calls: float = 8.0) -> dict[str, ColoringResult] | None:
    """Natural-order column and row colourings for a one-off Jacobian, if they are good.

    Good: few colours, or few more than the lower bound (:data:`ONE_SHOT_SLACK`); or, at most
    :data:`ONE_SHOT_MANY` and given the traced ``program`` (its nodes' sizes: what a product
    costs), where the mandatory passes would cost more than the products they could save in
    ``calls`` Jacobians (one for a one-off Jacobian; for a prepared one, whose search waits
    for calls, eight)
    (:func:`passes_pay`: a 3-D stencil's distance-2 passes take 0.3 s a partition at
    n = 2·10⁵ to save 3 of its 19 natural colours).
    """
    found = colour_modes(pattern, ["forward", "reverse"], "natural", 0.0, None, reverse_cost)
    best = min(found.values(), key=lambda c: c.n_colors)
    p = best.n_colors
    if p <= ONE_SHOT_FEW or (p <= best.lower_bound + ONE_SHOT_SLACK and p <= ONE_SHOT_MANY):
        return found
    if program is not None and p <= ONE_SHOT_MANY and not passes_pay(
            pattern, p - min(best.lower_bound, bidirectional_lower_bound(pattern)), program,
            calls):  # (a bicolouring may beat both one-sided bounds: a dense row and column)
        return found
    return None


#: nominal nanoseconds of the mandatory passes per distance-2 pair of the pattern (its rows'
#: and columns' squared counts: DSATUR on a 3-D stencil, 31 ns a pair a partition, measured)
PASS_NS_PER_PAIR = 40.0
#: nominal nanoseconds of one product per element of the traced program (an eager or
#: recorded product on a few seed directions, numpy-vectorised)
PRODUCT_NS_PER_ELEMENT = 2.0
#: numba's start where it is not loaded yet: the mandatory passes take its kernels
NUMBA_START_NS = 250e6


def passes_pay(pattern: SparsityPattern, excess: int, program: Any, calls: float) -> bool:
    """Whether the mandatory colouring passes can cost less than the products they save.

    ``excess`` colours over the lower bound at most, each a product in each of ``calls``
    Jacobians, against the passes' distance-2 work (and numba's start if it is not loaded).

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from sparsejac.coloring.by_mode import passes_pay
    >>> from sparsejac.pattern import as_pattern
    >>> tiny_program = SimpleNamespace(nodes=[], n_in=10)
    >>> passes_pay(as_pattern(np.eye(10)), 0, tiny_program, 1.0)
    False
    """
    from sparsejac import kernels

    rows = np.diff(pattern.indptr).astype(np.float64)
    cols = np.bincount(pattern.indices, minlength=pattern.shape[1]).astype(np.float64)
    cost = PASS_NS_PER_PAIR * float(rows @ rows + cols @ cols)
    if not kernels.loaded():
        cost += NUMBA_START_NS
    elements = sum(int(nd.out.size) for nd in program.nodes) + int(program.n_in)
    return cost < calls * excess * PRODUCT_NS_PER_ELEMENT * elements

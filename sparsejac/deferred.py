"""The colour search of a prepared Jacobian, deferred until calls have paid for it.

:func:`sparsejac.pipeline.prepare` with ``defer=True`` leaves the ``order="best"`` search of
a Jacobian that needs seeds for later; :class:`~sparsejac.SparseJacobian` counts its calls
and asks :func:`deferred_search` for the better plan between two calls. Everything is
counted in nominal work (the colouring budget's nominal nanoseconds), never timed.
"""

from __future__ import annotations

import dataclasses
import math
import time
import weakref

import numpy as np

from sparsejac.coloring import partition_cost
from sparsejac.coloring._kernels import ORDER_INTERPRET_BELOW
from sparsejac.coloring.budget import EFFORT_UNIT
from sparsejac.coloring.by_mode import colour_modes
from sparsejac.pipeline import Plan, _choose

__all__ = ["KERNEL_START_NS", "SEARCH_SHARE", "deferred_search", "search_due"]

#: The deferred colour search runs once the calls' nominal work times this share reaches its
#: budget: it may cost at most this fraction of the evaluation work done so far.
SEARCH_SHARE = 0.5

#: What the search of a small pattern is charged beyond its budget, in nominal nanoseconds:
#: the start of the compiled colouring kernels (numba's import and runtime, about a quarter of
#: a second, as :data:`sparsejac.kernels.FALLBACK_BUDGET`). A pattern of at most
#: ``ORDER_INTERPRET_BELOW`` entries is coloured at preparation without them, and its search
#: would start them (interpreted, it would cost more); a larger one has started them to
#: prepare. Decided by the pattern's size, not by what this process loaded before, so the
#: call after which the search runs is the same in every process; a short solve of a small
#: problem never pays for the start.
KERNEL_START_NS = 2.5e8


def search_due(plan: Plan) -> int:
    """The call after which the plan's deferred search runs (0: none pending).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.deferred import search_due
    >>> from sparsejac.pipeline import prepare
    >>> search_due(prepare(lambda x: x ** 2, np.ones(3)))   # prepared at once
    0
    >>> plan = prepare(lambda x: np.append(x, np.sum(x) ** 2), np.ones(300), defer=True)
    >>> search_due(plan) > 1                               # after a number of calls
    True
    """
    if not plan.pending:
        return 0
    hit = _DUE.get(id(plan))  # (asked after every call of a small Jacobian)
    if hit is not None and hit[0]() is plan:
        return hit[1]
    start = KERNEL_START_NS if plan.pattern.nnz <= ORDER_INTERPRET_BELOW else 0.0
    price = plan.pending * EFFORT_UNIT + start
    due = max(1, math.ceil(price / (SEARCH_SHARE * max(plan.call_work, 1.0))))
    if len(_DUE) >= 64:
        _DUE.clear()
    _DUE[id(plan)] = (weakref.ref(plan), due)
    return due


#: search_due's answers by plan (each plan's, while it lives)
_DUE: dict[int, tuple[weakref.ref[Plan], int]] = {}


def deferred_search(plan: Plan, calls: int) -> Plan | None:
    """The plan after its deferred colour search, once ``calls`` calls have paid for it.

    A prepared Jacobian that needs seeds starts with one-pass colourings: the natural-order
    ones of the one-sided partitions where they are good (mixed mode is then the cheaper of
    them, :func:`~sparsejac.coloring.by_mode.one_sided_as_mixed`), else the mandatory
    passes of every candidate mode. Its search (``order="best"`` at the default effort) runs between
    two calls once :data:`SEARCH_SHARE` of the calls' nominal work (``calls`` times
    ``plan.call_work``, in the colouring budget's nominal nanoseconds) reaches the search's
    budget; then the colourings and the mode are chosen again. Everything is counted in
    nominal work, never timed, so the same call sequence gives the same colourings.

    Returns
    -------
    Plan or None
        The new plan, or None when the search is not due (or none is pending).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.deferred import deferred_search
    >>> from sparsejac.pipeline import prepare
    >>> def f(x):                     # a dense intermediate: the Jacobian needs seeds
    ...     return np.concatenate([x[1:] * x[:-1], [np.sum(np.sin(x)) ** 2]])
    >>> plan = prepare(f, np.ones(3000), defer=True)
    >>> plan.pending > 0, deferred_search(plan, 1) is None
    (True, True)
    >>> later = deferred_search(plan, 10 ** 9)
    >>> later.pending, later.coloring.n_colors <= plan.coloring.n_colors
    (0.0, True)
    """
    if not plan.pending or calls < search_due(plan):
        return None
    modes, order, reverse_cost = plan.search_args
    t0 = time.perf_counter()
    colorings = colour_modes(plan.pattern, list(modes), order, plan.pending, None, reverse_cost)
    costs = {m: partition_cost(c, reverse_cost) for m, c in colorings.items()}
    chosen, reason, _ = _choose(list(modes), colorings, costs, reverse_cost, False,
                                plan.engine, plan.pattern, np.empty(0), ())
    seconds = {**plan.seconds, "deferred_search": time.perf_counter() - t0,
               "deferred_search_after_calls": calls}
    return dataclasses.replace(
        plan, colorings=colorings, mode=chosen, costs=costs, effort=plan.pending,
        reason=reason,
        seconds=seconds, pending=0.0, call_work=0.0, search_args=(), _matrices={})

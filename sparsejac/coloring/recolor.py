"""Culberson's iterated greedy recolouring: never more colours, often fewer.

Given a colouring with classes ``V_0, ..., V_{k-1}``, first-fit greedy that visits the
vertices class by class (each class contiguous, classes in any order) uses at most ``k``
colours: a vertex of the ``t``-th visited class always finds a colour among the first
``t + 1``, since its class mates share no net with it. Repeating this with varied class
orders lets classes merge and shrinks the count (Culberson and Luo 1996).

Class orders, drawn at random per round, with Culberson's weights:

* ``reverse`` (50%) -- classes in decreasing colour number;
* ``largest_first`` (30%) -- classes by decreasing size;
* ``random`` (20%) -- a random permutation of the classes.

Each round is one compiled greedy pass (``O(W)``) plus a stable argsort (``O(n log n)``).

References
----------
J. C. Culberson and F. Luo, "Exploring the k-colorable landscape with iterated greedy", in
*Cliques, Coloring, and Satisfiability*, DIMACS Series 26 (1996), 245-284.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from sparsejac.coloring.budget import Budget
from sparsejac.coloring.graph import BipartiteGraph
from sparsejac.coloring.greedy import greedy_color

__all__ = ["CLASS_ORDERS", "RecolorOutcome", "class_order", "iterated_greedy"]

#: Class orders and their probabilities per round.
CLASS_ORDERS: dict[str, float] = {"reverse": 0.5, "largest_first": 0.3, "random": 0.2}


@dataclass(frozen=True)
class RecolorOutcome:
    """What :func:`iterated_greedy` returns.

    Attributes
    ----------
    groups : ndarray of int64
        The best colouring found (the input if no round improved on it).
    n_colors : int
        Its number of colours.
    rounds : int
        Rounds run.
    improved : bool
        Whether ``n_colors`` is below the input's.
    """

    groups: np.ndarray
    n_colors: int
    rounds: int
    improved: bool


def class_order(groups: np.ndarray, kind: str, rng: np.random.Generator) -> np.ndarray:
    """Vertices listed class by class, classes in the order ``kind`` prescribes.

    Within a class vertices keep increasing index (the sort is stable).

    Parameters
    ----------
    groups : ndarray of int
        Current colouring, values ``0..k-1``.
    kind : {"reverse", "largest_first", "random"}
        How to order the classes.
    rng : numpy.random.Generator
        Used by ``"random"``.

    Returns
    -------
    ndarray of int64
        A permutation of the vertices.

    Raises
    ------
    ValueError
        ``kind`` is not a key of :data:`CLASS_ORDERS`.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.coloring.recolor import class_order
    >>> g = np.array([0, 1, 0, 2, 1, 1])
    >>> class_order(g, "reverse", np.random.default_rng(0)).tolist()
    [3, 1, 4, 5, 0, 2]
    >>> class_order(g, "largest_first", np.random.default_rng(0)).tolist()
    [1, 4, 5, 0, 2, 3]
    """
    k = int(groups.max()) + 1 if groups.size else 0
    if kind == "reverse":
        rank = np.arange(k - 1, -1, -1)
    elif kind == "largest_first":
        sizes = np.bincount(groups, minlength=k)
        position = np.argsort(-sizes, kind="stable")
        rank = np.empty(k, dtype=np.int64)
        rank[position] = np.arange(k)
    elif kind == "random":
        rank = rng.permutation(k)
    else:
        raise ValueError(
            f"Unknown class order `kind` {kind!r}; expected one of {list(CLASS_ORDERS)}."
        )
    return np.argsort(rank[groups], kind="stable").astype(np.int64)


def iterated_greedy(
    graph: BipartiteGraph,
    groups: np.ndarray,
    rng: np.random.Generator,
    *,
    max_rounds: int = 100,
    patience: int = 30,
    budget: Budget | None = None,
    share: float = 1.0,
    cost: float = 0.0,
    target: int = 1,
) -> RecolorOutcome:
    """Improve a colouring by iterated greedy recolouring.

    Stops after ``max_rounds`` rounds, after ``patience`` rounds in a row without fewer
    colours, when the count reaches ``target`` (e.g. the lower bound), or when the next
    round (of predicted work ``cost``) would not fit in ``share`` of ``budget``.

    Parameters
    ----------
    graph : BipartiteGraph
        The pattern seen from the coloured side.
    groups : ndarray of int
        A valid colouring to start from.
    rng : numpy.random.Generator
        Draws the class orders.
    max_rounds, patience : int, optional
        Round limits.
    budget : Budget, optional
        What the rounds may spend (charged ``cost`` each); no limit if omitted.
    share : float, optional
        The fraction of ``budget`` within which the rounds must end.
    cost : float, optional
        Predicted work of one round (a greedy pass).
    target : int, optional
        Stop as soon as this many colours are reached.

    Returns
    -------
    RecolorOutcome

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.graph import BipartiteGraph
    >>> from sparsejac.coloring.recolor import iterated_greedy
    >>> g = BipartiteGraph(as_pattern(np.eye(4) + np.eye(4, k=1)), "column")
    >>> out = iterated_greedy(g, np.array([0, 1, 2, 3]), np.random.default_rng(0))
    >>> out.n_colors, out.improved
    (2, True)
    """
    best = np.asarray(groups, dtype=np.int64)
    start_k = best_k = int(best.max()) + 1 if best.size else 0
    current = best
    kinds = list(CLASS_ORDERS)
    weights = np.array(list(CLASS_ORDERS.values()))
    rounds = stall = 0
    while rounds < max_rounds and stall < patience and best_k > target:
        if budget is not None and not budget.fits(cost, "recolor", share):
            break
        t0 = time.perf_counter()
        kind = kinds[int(rng.choice(len(kinds), p=weights))]
        current = greedy_color(graph, class_order(current, kind, rng))
        k = int(current.max()) + 1
        rounds += 1
        if k < best_k:
            best, best_k, stall = current, k, 0
        else:
            stall += 1
        if budget is not None:
            budget.charge(cost, "recolor", time.perf_counter() - t0)
    return RecolorOutcome(best, best_k, rounds, best_k < start_k)

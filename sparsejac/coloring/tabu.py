"""Tabu search to remove colours from a valid colouring (TabuCol on the bipartite graph).

Given a valid colouring with ``k`` colours, drop its smallest class, put each of its vertices
in the colour where it conflicts least, and let tabu search move conflicting vertices
between the ``k - 1`` colours until no two vertices of one colour share a net. Success gives
a valid ``k - 1`` colouring and the next level starts. An attempt is abandoned after
``patience`` iterations without a new best objective; the next attempt drops another class
(chosen at random, small ones more likely); after :data:`MAX_ATTEMPTS` failed attempts the
search stops. The result is never worse than the input.

The search works on per-net colour counts rather than on the intersection graph: the
objective is the number of same-colour pairs on a net (zero exactly when the partition is
structurally orthogonal) and ``gamma[v, c]``, the number of colour-``c`` vertices on the nets
of ``v``, gives every move's effect in O(1). A move updates ``gamma`` for the vertices on the
moved vertex's nets. Kernels: :func:`sparsejac.coloring._kernels.tabu_init` and
:func:`~sparsejac.coloring._kernels.tabu_search`.

Memory is two ``(n_vertices, k)`` int32 tables; the search is skipped when they would exceed
:data:`MAX_TABLE_BYTES`.

References
----------
A. Hertz and D. de Werra, "Using tabu search techniques for graph coloring", Computing 39
(1987), 345-351.

P. Galinier and J.-K. Hao, "Hybrid evolutionary algorithms for graph coloring", Journal of
Combinatorial Optimization 3 (1999), 379-397 (the tenure rule ``0.6 * conflicts + rand(10)``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from sparsejac.coloring import _kernels
from sparsejac.coloring.budget import Budget, dynamic_cost, tabu_cost
from sparsejac.coloring.graph import BipartiteGraph

__all__ = ["MAX_TABLE_BYTES", "TabuOutcome", "default_patience", "tabu_reduce"]

#: Largest size of the two state tables together; larger problems skip the tabu search.
MAX_TABLE_BYTES = 256 * 2**20
#: Attempts per level before the search gives up.
MAX_ATTEMPTS = 6
#: Candidate evaluations per kernel call; the budget is checked between calls.
CHUNK_WORK = 2_000_000


def default_patience(n_vertices: int) -> int:
    """Return the iterations without a new best objective that end an attempt.

    ``10_000 + 10 * n_vertices``.

    Examples
    --------
    >>> from sparsejac.coloring.tabu import default_patience
    >>> default_patience(1000)
    20000
    """
    return 10_000 + 10 * n_vertices


@dataclass(frozen=True)
class TabuOutcome:
    """What :func:`tabu_reduce` returns.

    Attributes
    ----------
    groups : ndarray of int64
        The best valid colouring found (the input if no level succeeded).
    n_colors : int
        Its number of colours.
    iterations : int
        Tabu iterations run, over all levels.
    improved : bool
        Whether ``n_colors`` is below the input's.
    """

    groups: np.ndarray
    n_colors: int
    iterations: int
    improved: bool


def _drop_class(groups: np.ndarray, attempt: int, rng: np.random.Generator) -> np.ndarray:
    """Colours ``0..k-2`` for all but one class, whose vertices get -1 (to be placed).

    The first attempt drops the smallest class (ties: the highest colour); later attempts
    drop a random class, smaller classes more likely (weight 1 / size).
    """
    k = int(groups.max()) + 1
    sizes = np.bincount(groups, minlength=k)
    if attempt == 0:
        drop = k - 1 - int(np.argmin(sizes[::-1]))
    else:
        weights = 1.0 / np.maximum(sizes, 1)
        drop = int(rng.choice(k, p=weights / weights.sum()))
    out = groups.copy()
    out[groups == drop] = -1
    out[groups > drop] -= 1
    return out


def tabu_reduce(
    graph: BipartiteGraph,
    groups: np.ndarray,
    rng: np.random.Generator,
    *,
    budget: Budget | None = None,
    target: int = 1,
    patience: int | None = None,
    max_attempts: int = MAX_ATTEMPTS,
) -> TabuOutcome:
    """Remove colours from a valid colouring by tabu search, one level at a time.

    Parameters
    ----------
    graph : BipartiteGraph
        The pattern seen from the coloured side.
    groups : ndarray of int
        A valid colouring to start from.
    rng : numpy.random.Generator
        Seeds the kernels (tie-breaking and tabu tenures).
    budget : Budget, optional
        What the search may spend: each kernel call is charged its fixed number of candidate
        evaluations (:func:`~sparsejac.coloring.budget.tabu_cost`) and runs only if that fits;
        no limit if omitted.
    target : int, optional
        Stop when this many colours are reached (e.g. the lower bound).
    patience : int, optional
        Iterations without progress before an attempt is abandoned; default
        :func:`default_patience`.
    max_attempts : int, optional
        Attempts per level (each drops another class) before giving up.

    Returns
    -------
    TabuOutcome

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.graph import BipartiteGraph
    >>> from sparsejac.coloring.tabu import tabu_reduce
    >>> g = BipartiteGraph(as_pattern(np.eye(6) + np.eye(6, k=1)), "column")
    >>> out = tabu_reduce(g, np.arange(6), np.random.default_rng(0), target=2)
    >>> out.n_colors, out.improved
    (2, True)
    """
    best = np.asarray(groups, dtype=np.int64)
    k = int(best.max()) + 1 if best.size else 0
    start_k = k
    n = graph.n_vertices
    patience = default_patience(n) if patience is None else int(patience)
    init_cost = dynamic_cost(graph.pair_work, n)  # tabu_init walks every pair, dense nets too
    chunk_cost = tabu_cost(CHUNK_WORK, dense=graph.dense is not None)
    iterations = 0
    attempt = 0
    while k > max(target, 1) and 2 * n * (k - 1) * 4 <= MAX_TABLE_BYTES:
        if attempt >= max_attempts or (budget is not None
                                       and not budget.fits(init_cost + chunk_cost, "tabu")):
            break
        colors = _drop_class(best, attempt, rng)
        seed = int(rng.integers(2**31 - 1))
        t0 = time.perf_counter()
        gamma, conf_list, conf_pos, nconf, f = _kernels.tabu_init(
            *graph.arrays, colors, k - 1, seed
        )
        if budget is not None:
            budget.charge(init_cost, "tabu", time.perf_counter() - t0)
        tabu = np.zeros((n, k - 1), dtype=np.int32)
        it = last_gain = 0
        best_f = f
        while f > 0 and it - last_gain < patience:
            if budget is not None and not budget.fits(chunk_cost, "tabu"):
                break
            t0 = time.perf_counter()
            seed = int(rng.integers(2**31 - 1))
            f, nconf, it, best_f, last_gain = _kernels.tabu_search(
                *graph.arrays,
                colors,
                gamma,
                conf_list,
                conf_pos,
                nconf,
                f,
                tabu,
                it,
                best_f,
                last_gain,
                patience,
                CHUNK_WORK,
                seed,
            )
            if budget is not None:
                budget.charge(chunk_cost, "tabu", time.perf_counter() - t0)
        iterations += int(it)
        if f == 0:
            best, k, attempt = colors, k - 1, 0
        else:
            attempt += 1
    return TabuOutcome(best, k, iterations, k < start_k)

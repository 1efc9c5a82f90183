"""Vertex orders for greedy colouring, registered in one dict, :data:`ORDERS`.

An *order* is a function ``order(pattern, partition, rng) -> permutation``:

* ``pattern`` -- the :class:`~sparsejac.pattern.SparsityPattern`;
* ``partition`` -- ``"column"``, ``"row"`` or ``"bidirectional"``: which vertices are ordered;
* ``rng`` -- a :class:`numpy.random.Generator` (ignored by deterministic orders);
* returns an ``int64`` permutation of ``range(n)`` (columns), ``range(m)`` (rows) or
  ``range(n + m)`` (bidirectional: the columns are vertices ``0..n-1`` and the rows
  ``n..n+m-1`` of the augmented graph ``H = [[0, Jᵀ], [J, 0]]``).

First-fit greedy colouring then visits the vertices in that order
(:func:`sparsejac.coloring.greedy.greedy_color`). Any callable with this signature may be
passed as ``order`` to :func:`sparsejac.color`; a new named order is one function plus one
line in :data:`ORDERS`.

Degrees are distance-2 degrees: the number of other vertices sharing a net (a row, for a
column partition); for a bidirectional partition, degrees in H (nonzero counts), so every
order below orders the vertices of H. Every order is deterministic given its ``rng``.
Ties: static orders and
DSATUR break them by the smaller vertex index (so ``largest_first`` and ``dsatur`` equal
networkx's ``greedy_color`` strategies exactly); the three degree-driven dynamic orders keep
vertices in bucket queues (one linked list per degree, O(1) updates, as in ColPack), where
the vertex that reached the extreme degree most recently is taken first and, before any
update, the smaller index. Where the graph has dense nets (:mod:`~sparsejac.coloring.dense`:
a net far longer than the rest, whose pairs are never walked), a step changes the keys of
the vertices on the taken vertex's dense nets at once, after the changes through its other
nets, and "most recently" counts that joint change as one, later than those (vertices
changed together keep their previous order among themselves); the tests replay this rule.
Definitions follow ColPack and Gebremedhin, Manne and Pothen (2005), section 3.4;
``dsatur`` follows Brélaz (1979) and networkx:

``natural``
    ``0, 1, ..., n-1``.
``random``
    ``rng.permutation(n)``.
``largest_first``
    Decreasing degree (Welsh and Powell 1967); stable, so ties stay in index order.
``smallest_last``
    Matula and Beck (1983): repeatedly remove a vertex of smallest degree in the remaining
    graph; colour in the reverse of the removal sequence.
``incidence_degree``
    Next is the vertex with most neighbours already ordered (starts at vertex 0).
``dynamic_largest_first``
    Next is the vertex with most neighbours not yet ordered.
``dsatur``
    A dynamic colouring rather than a fixed order: next is the uncoloured vertex whose
    neighbours already carry the most distinct colours, ties by larger degree then smaller
    index. Its entry returns the sequence in which DSATUR visits the vertices; first-fit
    greedy in that sequence reproduces DSATUR's colouring exactly.
``dense_rows_first``, ``dense_columns_first`` (in :data:`BIDIRECTIONAL_ORDERS` only)
    For bidirectional colouring: the dense rows (more than :data:`DENSE_FACTOR` times the
    mean row count), then the columns, then the other rows -- or the same with rows and
    columns swapped -- each by decreasing nonzero count, ties by index. In a star
    bicolouring with implicit covering, the dense rows then take reverse colours first
    and the columns cover the rest. For a one-sided partition both are the vertices by
    decreasing nonzero count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sparsejac.coloring import _kernels
from sparsejac.coloring.graph import BipartiteGraph, Partition
from sparsejac.pattern import SparsityPattern

__all__ = [
    "BIDIRECTIONAL_ORDERS",
    "DENSE_FACTOR",
    "ORDERS",
    "OrderFunction",
    "dense_columns_first",
    "dense_lines",
    "dense_rows_first",
    "dsatur",
    "dynamic_largest_first",
    "incidence_degree",
    "largest_first",
    "natural",
    "random",
    "resolve_order",
    "smallest_last",
]

OrderFunction = Callable[[SparsityPattern, Partition, np.random.Generator], np.ndarray]

#: A line is *dense* when it has more than this many times the mean count of its kind.
DENSE_FACTOR = 4.0


def _graph(pattern: SparsityPattern | BipartiteGraph, partition: Partition) -> BipartiteGraph:
    if isinstance(pattern, BipartiteGraph):
        return pattern
    return BipartiteGraph(pattern, partition)


def natural(
    pattern: SparsityPattern, partition: Partition = "column", rng: Any = None
) -> np.ndarray:
    """Natural order: vertices by increasing index.

    Parameters
    ----------
    pattern : SparsityPattern
        The pattern.
    partition : {"column", "row", "bidirectional"}
        Order the columns, the rows, or both (the vertices of H).
    rng : numpy.random.Generator, optional
        Ignored.

    Returns
    -------
    ndarray of int64
        ``arange(n)`` (or ``arange(m)`` for rows).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.orders import natural
    >>> natural(as_pattern(np.eye(2, 3)), "column").tolist()
    [0, 1, 2]
    """
    return np.arange(_graph(pattern, partition).n_vertices, dtype=np.int64)


def random(
    pattern: SparsityPattern,
    partition: Partition = "column",
    rng: np.random.Generator | int | None = 0,
) -> np.ndarray:
    """Random order: a permutation drawn from ``rng``.

    Parameters
    ----------
    pattern : SparsityPattern
        The pattern.
    partition : {"column", "row", "bidirectional"}
        Order the columns, the rows, or both (the vertices of H).
    rng : numpy.random.Generator or int, optional
        Source of randomness (an int is a seed).

    Returns
    -------
    ndarray of int64
        ``rng.permutation(n)``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.orders import random
    >>> p = as_pattern(np.eye(4))
    >>> sorted(random(p, "column", np.random.default_rng(1)).tolist())
    [0, 1, 2, 3]
    """
    n = _graph(pattern, partition).n_vertices
    return np.random.default_rng(rng).permutation(n).astype(np.int64)


def largest_first(
    pattern: SparsityPattern, partition: Partition = "column", rng: Any = None
) -> np.ndarray:
    """Largest-first order: decreasing distance-2 degree, ties by increasing index.

    Parameters
    ----------
    pattern : SparsityPattern
        The pattern.
    partition : {"column", "row", "bidirectional"}
        Order the columns, the rows, or both (the vertices of H).
    rng : numpy.random.Generator, optional
        Ignored.

    Returns
    -------
    ndarray of int64
        The permutation.

    References
    ----------
    D. J. A. Welsh and M. B. Powell, "An upper bound for the chromatic number of a graph
    and its application to timetabling problems", The Computer Journal 10 (1967).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.orders import largest_first
    >>> largest_first(as_pattern(np.array([[1, 1, 0], [0, 1, 1]])), "column").tolist()
    [1, 0, 2]
    """
    deg = _graph(pattern, partition).degrees
    return np.argsort(-deg, kind="stable").astype(np.int64)


def smallest_last(
    pattern: SparsityPattern, partition: Partition = "column", rng: Any = None
) -> np.ndarray:
    """Smallest-last order (Matula and Beck) on the distance-2 graph.

    Repeatedly removes a vertex of smallest degree in the graph that remains and returns
    the removal sequence reversed. Ties: the vertex whose degree most recently dropped to
    the minimum is removed first; initially the smallest index.

    Parameters
    ----------
    pattern : SparsityPattern
        The pattern.
    partition : {"column", "row", "bidirectional"}
        Order the columns, the rows, or both (the vertices of H).
    rng : numpy.random.Generator, optional
        Ignored.

    Returns
    -------
    ndarray of int64
        The permutation.

    References
    ----------
    D. W. Matula and L. L. Beck, "Smallest-last ordering and clustering and graph coloring
    algorithms", J. ACM 30(3) (1983), 417-427.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.orders import smallest_last
    >>> smallest_last(as_pattern(np.array([[1, 1, 0], [0, 1, 1]])), "column").tolist()
    [2, 1, 0]
    """
    g = _graph(pattern, partition)
    if g.dense is not None:
        return g.dense.dynamic_order("smallest_last")
    order: np.ndarray = _kernels.smallest_last(*g.arrays, g.degrees)
    return order


def incidence_degree(
    pattern: SparsityPattern, partition: Partition = "column", rng: Any = None
) -> np.ndarray:
    """Incidence-degree order: next, the vertex with most neighbours already ordered.

    Ties: the vertex whose count most recently reached the maximum; initially the smallest
    index, so the order starts at vertex 0.

    Parameters
    ----------
    pattern : SparsityPattern
        The pattern.
    partition : {"column", "row", "bidirectional"}
        Order the columns, the rows, or both (the vertices of H).
    rng : numpy.random.Generator, optional
        Ignored.

    Returns
    -------
    ndarray of int64
        The permutation.

    References
    ----------
    T. F. Coleman and J. J. Moré, "Estimation of sparse Jacobian matrices and graph
    coloring problems", SIAM J. Numer. Anal. 20(1) (1983), 187-209.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.orders import incidence_degree
    >>> incidence_degree(as_pattern(np.array([[1, 0, 1], [0, 1, 1]])), "column").tolist()
    [0, 2, 1]
    """
    g = _graph(pattern, partition)
    if g.dense is not None:
        return g.dense.dynamic_order("incidence_degree")
    order: np.ndarray = _kernels.incidence_degree(*g.arrays)
    return order


def dynamic_largest_first(
    pattern: SparsityPattern, partition: Partition = "column", rng: Any = None
) -> np.ndarray:
    """Dynamic largest-first order: next, the vertex with most neighbours not yet ordered.

    Ties: the vertex whose count most recently dropped to the maximum; initially the
    smallest index.

    Parameters
    ----------
    pattern : SparsityPattern
        The pattern.
    partition : {"column", "row", "bidirectional"}
        Order the columns, the rows, or both (the vertices of H).
    rng : numpy.random.Generator, optional
        Ignored.

    Returns
    -------
    ndarray of int64
        The permutation.

    References
    ----------
    A. H. Gebremedhin, D. Nguyen, M. M. A. Patwary and A. Pothen, "ColPack: Software for
    graph coloring and related problems in scientific computing", ACM TOMS 40(1) (2013).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.orders import dynamic_largest_first
    >>> p = as_pattern(np.array([[1, 1, 0], [0, 1, 1]]))
    >>> dynamic_largest_first(p, "column").tolist()  # 2 reached degree 0 last: taken first
    [1, 2, 0]
    """
    g = _graph(pattern, partition)
    if g.dense is not None:
        return g.dense.dynamic_order("dynamic_largest_first")
    order: np.ndarray = _kernels.dynamic_largest_first(*g.arrays, g.degrees)
    return order


def dsatur(
    pattern: SparsityPattern, partition: Partition = "column", rng: Any = None
) -> np.ndarray:
    """Return the sequence in which DSATUR colours the vertices.

    DSATUR (saturation degree) picks next the uncoloured vertex whose distance-2
    neighbours carry the most distinct colours, ties by larger distance-2 degree, then by
    smaller index (networkx's ``strategy_saturation_largest_first`` rule), and gives it the
    smallest free colour. First-fit greedy in the returned sequence reproduces that
    colouring; :func:`sparsejac.color` with ``order="dsatur"`` runs the kernel directly.

    Parameters
    ----------
    pattern : SparsityPattern
        The pattern.
    partition : {"column", "row", "bidirectional"}
        Order the columns, the rows, or both (the vertices of H).
    rng : numpy.random.Generator, optional
        Ignored.

    Returns
    -------
    ndarray of int64
        The permutation.

    References
    ----------
    D. Brélaz, "New methods to color the vertices of a graph", Comm. ACM 22(4) (1979),
    251-256.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.orders import dsatur
    >>> dsatur(as_pattern(np.array([[1, 1, 0], [0, 1, 1]])), "column").tolist()
    [1, 0, 2]
    """
    g = _graph(pattern, partition)
    if g.dense is not None:
        return g.dense.dsatur(g.degrees, g.seen_table_bytes)[1]
    _, seq = _kernels.dsatur(*g.arrays, g.degrees, g.seen_table_bytes)
    out: np.ndarray = seq
    return out


def dense_lines(counts: np.ndarray) -> np.ndarray:
    """Which rows (or columns) are dense: more than :data:`DENSE_FACTOR` times the mean count.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.coloring.orders import dense_lines
    >>> dense_lines(np.array([1, 1, 1, 1, 1, 1, 1, 8])).tolist()
    [False, False, False, False, False, False, False, True]
    """
    out: np.ndarray = counts > DENSE_FACTOR * counts.mean() if counts.size else \
        np.zeros(0, dtype=bool)
    return out


def _dense_first(g: BipartiteGraph, rows_first: bool) -> np.ndarray:
    pat = g.pattern
    if g.partition != "bidirectional":
        return np.argsort(-np.diff(g.vptr), kind="stable").astype(np.int64)
    n = pat.shape[1]
    rc, cc = pat.row_counts, pat.col_counts
    rows = n + np.argsort(-rc, kind="stable")  # vertex numbers, densest first
    cols = np.argsort(-cc, kind="stable")
    if rows_first:
        dense = dense_lines(rc)[rows - n]
        parts = (rows[dense], cols, rows[~dense])
    else:
        dense = dense_lines(cc)[cols]
        parts = (cols[dense], rows, cols[~dense])
    return np.concatenate(parts).astype(np.int64)


def dense_rows_first(
    pattern: SparsityPattern, partition: Partition = "bidirectional", rng: Any = None
) -> np.ndarray:
    """Dense rows, then the columns, then the other rows, by decreasing nonzero count.

    A row is dense when it has more than :data:`DENSE_FACTOR` times the mean row count.
    For a one-sided partition: the vertices by decreasing nonzero count.

    Parameters
    ----------
    pattern : SparsityPattern
        The pattern.
    partition : {"bidirectional", "column", "row"}
        Which vertices to order.
    rng : numpy.random.Generator, optional
        Ignored.

    Returns
    -------
    ndarray of int64
        The permutation (of ``range(n + m)`` for a bidirectional partition).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.orders import dense_rows_first
    >>> A = np.eye(8)
    >>> A[3, :] = 1  # row 3 is dense: vertex 8 + 3 = 11, then columns, then rows
    >>> dense_rows_first(as_pattern(A)).tolist()
    [11, 0, 1, 2, 4, 5, 6, 7, 3, 8, 9, 10, 12, 13, 14, 15]
    """
    return _dense_first(_graph(pattern, partition), rows_first=True)


def dense_columns_first(
    pattern: SparsityPattern, partition: Partition = "bidirectional", rng: Any = None
) -> np.ndarray:
    """Dense columns, then the rows, then the other columns, by decreasing nonzero count.

    A column is dense when it has more than :data:`DENSE_FACTOR` times the mean column
    count. For a one-sided partition: the vertices by decreasing nonzero count.

    Parameters
    ----------
    pattern : SparsityPattern
        The pattern.
    partition : {"bidirectional", "column", "row"}
        Which vertices to order.
    rng : numpy.random.Generator, optional
        Ignored.

    Returns
    -------
    ndarray of int64
        The permutation (of ``range(n + m)`` for a bidirectional partition).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.orders import dense_columns_first
    >>> A = np.eye(8)
    >>> A[:, 1] = 1  # column 1 is dense, then the rows (vertices 8..15), then columns
    >>> dense_columns_first(as_pattern(A)).tolist()
    [1, 8, 10, 11, 12, 13, 14, 15, 9, 0, 2, 3, 4, 5, 6, 7]
    """
    return _dense_first(_graph(pattern, partition), rows_first=False)


#: Every named order. Keys are the names accepted by ``sparsejac.color(order=...)``.
ORDERS: dict[str, OrderFunction] = {
    "natural": natural,
    "random": random,
    "largest_first": largest_first,
    "smallest_last": smallest_last,
    "incidence_degree": incidence_degree,
    "dynamic_largest_first": dynamic_largest_first,
    "dsatur": dsatur,
}

#: The orders of a bidirectional colouring: every order of :data:`ORDERS` (on the vertices
#: of H) and two that put the dense rows or the dense columns first.
BIDIRECTIONAL_ORDERS: dict[str, OrderFunction] = {
    **ORDERS,
    "dense_rows_first": dense_rows_first,
    "dense_columns_first": dense_columns_first,
}


def resolve_order(order: object, partition: str = "column") -> tuple[str, OrderFunction]:
    """Look up ``order`` (a name or a callable) and return ``(name, fn)``.

    Parameters
    ----------
    order : str or callable
        A key of :data:`ORDERS` (of :data:`BIDIRECTIONAL_ORDERS` for a bidirectional
        partition), a function ``(pattern, partition, rng) -> permutation``, or a networkx
        colouring strategy ``(G, colors) -> iterable`` (see
        :func:`sparsejac.coloring.interop.networkx_order`).
    partition : str, optional
        The partition the order is for.

    Returns
    -------
    name : str
        The key, or the callable's ``__name__``.
    fn : callable
        The order function.

    Raises
    ------
    ValueError
        ``order`` is a string that is not a known name.
    TypeError
        ``order`` is neither a string nor callable.

    Examples
    --------
    >>> from sparsejac.coloring.orders import resolve_order
    >>> resolve_order("natural")[0]
    'natural'
    >>> resolve_order("fastest")
    Traceback (most recent call last):
        ...
    ValueError: Unknown `order` 'fastest'; expected one of ['dsatur', 'dynamic_largest_first', \
'incidence_degree', 'largest_first', 'natural', 'random', 'smallest_last'], 'best' or a callable.
    >>> resolve_order("dense_rows_first", "bidirectional")[0]
    'dense_rows_first'
    """
    names = BIDIRECTIONAL_ORDERS if partition == "bidirectional" else ORDERS
    if isinstance(order, str):
        if order in names:
            return order, names[order]
        raise ValueError(
            f"Unknown `order` {order!r}; expected one of {sorted(names)}, 'best' or a callable."
        )
    if callable(order):
        from sparsejac.coloring.interop import is_networkx_strategy, networkx_order

        if is_networkx_strategy(order):  # (G, colors) -> iterable, networkx's convention
            if partition == "bidirectional":
                raise ValueError(
                    "a networkx strategy orders the vertices of one intersection graph; "
                    "use it with partition='column' or 'row', not 'bidirectional'")
            fn = networkx_order(order)
            return fn.__name__, fn
        return str(getattr(order, "__name__", type(order).__name__)), order
    raise TypeError(
        f"`order` must be a string or a callable; got {type(order).__name__}. "
        f"Names: {sorted(names)} or 'best'."
    )


def check_permutation(perm: object, n: int, *, name: str = "order") -> np.ndarray:
    """Return ``perm`` as an ``int64`` array if it is a permutation of ``range(n)``.

    Parameters
    ----------
    perm : array_like
        Candidate permutation.
    n : int
        Expected length.
    name : str, optional
        Argument name for the error message.

    Returns
    -------
    ndarray of int64

    Raises
    ------
    ValueError
        ``perm`` is not a permutation of ``range(n)``.

    Examples
    --------
    >>> from sparsejac.coloring.orders import check_permutation
    >>> check_permutation([2, 0, 1], 3).tolist()
    [2, 0, 1]
    >>> check_permutation([0, 0, 1], 3)
    Traceback (most recent call last):
        ...
    ValueError: `order` must return a permutation of range(3); got [0, 0, 1]
    """
    a = np.asarray(perm)
    ok = a.shape == (n,) and a.dtype.kind in "iu" and np.array_equal(np.sort(a), np.arange(n))
    if not ok:
        shown = np.array2string(a, threshold=8, separator=", ")
        raise ValueError(f"`{name}` must return a permutation of range({n}); got {shown}")
    return a.astype(np.int64, copy=False)

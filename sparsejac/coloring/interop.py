"""networkx at the boundary: the intersection graph as a ``networkx.Graph``, and its strategies.

Colouring columns (rows) of a Jacobian pattern so that no two in one group share a row
(column) is ordinary vertex colouring of the *column-intersection graph* (row-intersection
graph). The engine never builds that graph (its kernels walk the pattern's index arrays), but
users who work with networkx can have it, and can use networkx's greedy-colouring strategies
(``networkx.algorithms.coloring.strategy_largest_first`` and the others, or their own
``(G, colors) -> iterable`` functions in networkx's convention) as ``order=`` of
:func:`sparsejac.color`. networkx is imported here only when one of these is called.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.coloring.graph import check_partition
from sparsejac.pattern import SparsityPattern, as_pattern

__all__ = ["intersection_graph", "is_networkx_strategy", "networkx_order"]


def _networkx() -> Any:
    try:
        import networkx
    except ImportError as exc:  # pragma: no cover - networkx is a dependency
        raise ImportError(
            "this needs networkx (a dependency of sparsejac): pip install networkx") from exc
    return networkx


def intersection_graph(sparsity: Any, partition: str = "column") -> Any:
    """The column-intersection graph (row-intersection for ``"row"``) as a ``networkx.Graph``.

    Vertices ``0..n-1`` are the columns (rows), all present; an edge joins two columns that
    have a nonzero in a common row. Its vertex colourings are exactly the valid column
    groupings (scipy's ``group_columns``), so networkx's colouring functions apply to it.

    Parameters
    ----------
    sparsity : SparsityPattern, scipy sparse matrix or array, array_like, str or path
        The m×n pattern.
    partition : {"column", "row"}, default "column"
        Which side is the vertex set.

    Returns
    -------
    networkx.Graph

    Examples
    --------
    >>> import numpy as np
    >>> import networkx as nx
    >>> from sparsejac.coloring import intersection_graph
    >>> J = np.array([[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]])
    >>> g = intersection_graph(J)
    >>> sorted(g.edges())
    [(0, 1), (1, 2), (2, 3)]
    >>> max(nx.greedy_color(g).values()) + 1        # two groups, as sparsejac.color finds
    2
    """
    part = check_partition(partition)
    if part == "bidirectional":
        raise ValueError(
            "`partition` must be 'column' or 'row' for an intersection graph; got "
            "'bidirectional'")
    nx = _networkx()
    pattern = as_pattern(sparsity, name="sparsity")
    a = pattern.to_csr_array().astype(np.int32)
    if part == "row":
        a = sp.csr_array(a.T)
    gram = sp.triu(sp.csr_array(a.T @ a), k=1).tocoo()
    g = nx.Graph()
    g.add_nodes_from(range(a.shape[1]))
    g.add_edges_from(zip(gram.row.tolist(), gram.col.tolist(), strict=True))
    return g


def is_networkx_strategy(order: Any) -> bool:
    """Whether ``order`` is a networkx colouring strategy rather than a sparsejac order.

    A callable defined in networkx, or one whose parameters are exactly ``(G, colors)``
    (networkx's convention for strategies); sparsejac's orders take ``(pattern, partition,
    rng)``.

    Examples
    --------
    >>> import networkx as nx
    >>> from sparsejac.coloring.interop import is_networkx_strategy
    >>> is_networkx_strategy(nx.coloring.strategy_smallest_last)
    True
    >>> is_networkx_strategy(lambda pattern, partition, rng: None)
    False
    """
    if not callable(order):
        return False
    if str(getattr(order, "__module__", "") or "").startswith("networkx"):
        return True
    try:
        params = list(inspect.signature(order).parameters)
    except (TypeError, ValueError):
        return False
    return params == ["G", "colors"]


def networkx_order(strategy: Callable[..., Any]) -> Callable[[SparsityPattern, str, Any],
                                                              np.ndarray]:
    """A sparsejac order that visits the vertices as networkx's ``greedy_color`` would.

    networkx runs the strategy on the intersection graph while it colours (interactive
    strategies such as ``strategy_saturation_largest_first`` read the colours given so far);
    the order is the sequence in which it coloured the vertices, so first-fit greedy in that
    order reproduces networkx's colouring exactly. It runs networkx's Python code: fine for
    comparisons and small patterns, slow for large ones.

    Examples
    --------
    >>> import numpy as np
    >>> import networkx as nx
    >>> import sparsejac
    >>> J = np.eye(5) + np.eye(5, k=1)
    >>> r = sparsejac.color(J, order=nx.coloring.strategy_largest_first)
    >>> r.order, r.n_colors
    ('strategy_largest_first', 2)
    """

    def order(pattern: SparsityPattern, partition: str, rng: Any) -> np.ndarray:
        g = intersection_graph(pattern, partition)
        colors = _networkx().greedy_color(g, strategy=strategy)
        return np.fromiter(colors.keys(), dtype=np.int64, count=len(colors))

    order.__name__ = str(getattr(strategy, "__name__", "networkx_strategy"))
    return order

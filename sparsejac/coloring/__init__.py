"""Colouring engine: partial distance-2 colouring of Jacobian patterns, and decompression.

Knows nothing of AD; everything here is testable on plain matrices.

Modules (each owns one thing):

* :mod:`~sparsejac.coloring.graph` -- the pattern's bipartite graph, oriented for a
  partition (``"column"`` or ``"row"``), with lower bound and distance-2 degrees;
* :mod:`~sparsejac.coloring.orders` -- the vertex orders, registered in :data:`ORDERS`;
* :mod:`~sparsejac.coloring.greedy` -- first-fit greedy colouring, DSATUR, random-tie
  restarts (compiled kernels in ``_kernels``);
* :mod:`~sparsejac.coloring.recolor` -- Culberson's iterated greedy recolouring;
* :mod:`~sparsejac.coloring.interface` -- :func:`color`, including ``order="best"``;
* :mod:`~sparsejac.coloring.result` -- :class:`ColoringResult`: groups, seed matrices,
  compression, decompression by one gather;
* :mod:`~sparsejac.coloring.check` -- slow, obviously correct checkers.

Examples
--------
>>> import numpy as np
>>> from sparsejac.coloring import ORDERS, color
>>> tridiagonal = np.eye(6) + np.eye(6, k=1) + np.eye(6, k=-1)
>>> {name: color(tridiagonal, order=name).n_colors for name in sorted(ORDERS)}
... # doctest: +NORMALIZE_WHITESPACE
{'dsatur': 3, 'dynamic_largest_first': 3, 'incidence_degree': 3, 'largest_first': 3,
 'natural': 3, 'random': 3, 'smallest_last': 3}
"""

from sparsejac.coloring.check import (
    check_groups,
    check_result,
    check_structurally_orthogonal,
)
from sparsejac.coloring.graph import PARTITIONS, BipartiteGraph, Partition
from sparsejac.coloring.interface import DEFAULT_TIME_BUDGET, color, warm_up
from sparsejac.coloring.orders import ORDERS, OrderFunction
from sparsejac.coloring.result import Candidate, ColoringResult

__all__ = [
    "DEFAULT_TIME_BUDGET",
    "ORDERS",
    "PARTITIONS",
    "BipartiteGraph",
    "Candidate",
    "ColoringResult",
    "OrderFunction",
    "Partition",
    "check_groups",
    "check_result",
    "check_structurally_orthogonal",
    "color",
    "warm_up",
]

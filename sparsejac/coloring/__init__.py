"""Colouring engine: partial distance-2 colouring of Jacobian patterns, and decompression.

Knows nothing of AD; everything here is testable on plain matrices.

Modules (each owns one thing):

* :mod:`~sparsejac.coloring.graph` -- the pattern's bipartite graph, oriented for a
  partition (``"column"``, ``"row"`` or ``"bidirectional"``), with lower bound and degrees;
* :mod:`~sparsejac.coloring.orders` -- the vertex orders, registered in :data:`ORDERS`
  (and :data:`BIDIRECTIONAL_ORDERS`);
* :mod:`~sparsejac.coloring.greedy` -- first-fit greedy colouring, DSATUR, random-tie
  restarts (compiled kernels in ``_kernels``);
* :mod:`~sparsejac.coloring.dense` -- dense nets (rows or columns far longer than the
  rest): which they are, and the kernels (``_dense``) that never walk their pairs, so that
  every order stays near-linear in nnz;
* :mod:`~sparsejac.coloring.recolor` -- Culberson's iterated greedy recolouring;
* :mod:`~sparsejac.coloring.tabu` -- tabu search removing colours;
* :mod:`~sparsejac.coloring.budget` -- the work a ``best`` search may spend, by a fixed
  cost model (reproducible), and the opt-in wall-clock limit;
* :mod:`~sparsejac.coloring.search` -- the one-sided ``order="best"`` search;
* :mod:`~sparsejac.coloring.bicolor` -- bidirectional colouring: star bicolouring,
  neutral-colour post-processing, its ``best`` search (kernels in ``_bikernels``);
* :mod:`~sparsejac.coloring.symmetric` -- symmetric colouring of Hessian patterns: star
  and acyclic colouring (kernels in ``_symmetric``) and their ``best`` search;
* :mod:`~sparsejac.coloring.recovery` -- decompressing a symmetric colouring: directly
  (star) or by substitution (acyclic);
* :mod:`~sparsejac.coloring.interface` -- :func:`color`, including ``partition="auto"``
  and ``partition="symmetric"``;
* :mod:`~sparsejac.coloring.result` -- :class:`ColoringResult`: groups, seed matrices,
  compression, decompression by one gather;
* :mod:`~sparsejac.coloring.check` -- slow, obviously correct checkers;
* :mod:`~sparsejac.coloring.interop` -- the intersection graph as a ``networkx.Graph`` and
  networkx's colouring strategies as orders.

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

from sparsejac.coloring.budget import DEFAULT_EFFORT, EFFORT_UNIT
from sparsejac.coloring.check import (
    check_acyclic_coloring,
    check_bicoloring,
    check_groups,
    check_result,
    check_star_coloring,
    check_structurally_orthogonal,
)
from sparsejac.coloring.graph import PARTITIONS, BipartiteGraph, Partition
from sparsejac.coloring.interface import (
    DEFAULT_REVERSE_COST,
    MODE_PARTITIONS,
    check_reverse_cost,
    color,
    color_partitions,
    partition_cost,
    partition_for_mode,
    warm_up,
)
from sparsejac.coloring.interop import intersection_graph
from sparsejac.coloring.orders import BIDIRECTIONAL_ORDERS, ORDERS, OrderFunction
from sparsejac.coloring.recovery import SYMMETRIC_METHODS, SymmetricRecovery
from sparsejac.coloring.result import Candidate, ColoringResult
from sparsejac.coloring.symmetric import AdjacencyGraph

__all__ = [
    "BIDIRECTIONAL_ORDERS",
    "DEFAULT_EFFORT",
    "DEFAULT_REVERSE_COST",
    "EFFORT_UNIT",
    "MODE_PARTITIONS",
    "ORDERS",
    "PARTITIONS",
    "SYMMETRIC_METHODS",
    "AdjacencyGraph",
    "BipartiteGraph",
    "Candidate",
    "ColoringResult",
    "OrderFunction",
    "Partition",
    "SymmetricRecovery",
    "check_acyclic_coloring",
    "check_bicoloring",
    "check_groups",
    "check_result",
    "check_reverse_cost",
    "check_star_coloring",
    "check_structurally_orthogonal",
    "color",
    "color_partitions",
    "intersection_graph",
    "partition_cost",
    "partition_for_mode",
    "warm_up",
]

"""Dense nets: which nets are dense, their group structure, and the kernels that use it.

A *net* of a :class:`~sparsejac.coloring.graph.BipartiteGraph` (a row, for a column
partition) on ``s`` vertices makes them pairwise neighbours in the intersection graph, so the
usual walk over every pair of vertices on a net costs ``s**2`` there: a dense row of n
entries costs every greedy pass, degree computation or dynamic order ``n**2`` steps (and
the colour choice can scan ``n`` colours per vertex). This module owns the alternative:

* :func:`select_dense_nets` decides which nets are *dense* (the rule below);
* :class:`DenseNets` builds, once per graph, the structure the kernels of
  :mod:`sparsejac.coloring._dense` use: each dense net keeps the colours used on it as a bit
  set, and vertices are grouped by the set of dense nets they lie on, so that an event on a
  dense net updates one number per group instead of one key per vertex;
* :meth:`DenseNets.greedy`, :meth:`DenseNets.dsatur` and :meth:`DenseNets.dynamic_order`
  run first-fit greedy, DSATUR and the bucket orders in ``O(W_light + nnz)`` steps (plus
  ``n`` per group for the dynamic orders), ``W_light`` being the sum of squared sizes of the
  other (*light*) nets.

Greedy and DSATUR give exactly the colourings of the pairwise kernels and the degrees are
exact; the bucket orders keep their rule with one refinement for ties (see
:mod:`sparsejac.coloring.orders`).

**The rule.** A net is dense when its size ``s`` is at least :data:`DENSE_NET_MIN`, more than
:data:`DENSE_NET_FACTOR` times the mean net size, and ``s**2 >= DENSE_NET_RATIO * n`` for
``n`` vertices (walking its pairs would cost more than a few passes over the vertices).
At most :data:`MAX_DENSE_NETS` nets are dense (the largest; ties to the lower index), and
fewer while their signatures make more than :data:`MAX_DENSE_GROUPS` groups (the
dynamic orders scan the groups at every step).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparsejac.coloring import _dense

__all__ = [
    "DENSE_NET_FACTOR",
    "DENSE_NET_MIN",
    "DENSE_NET_RATIO",
    "MAX_DENSE_GROUPS",
    "MAX_DENSE_NETS",
    "DenseNets",
    "select_dense_nets",
]

#: Smallest size of a dense net.
DENSE_NET_MIN = 128
#: A dense net has more than this many times the mean net size.
DENSE_NET_FACTOR = 8.0
#: A dense net of size s has ``s**2 >= DENSE_NET_RATIO * n_vertices``.
DENSE_NET_RATIO = 16.0
#: Most dense nets per graph (the largest ones).
MAX_DENSE_NETS = 64
#: Most groups of vertices (distinct sets of dense nets, the empty set included).
MAX_DENSE_GROUPS = 64

_Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _ro(a: object) -> np.ndarray:
    """``a`` as a C-contiguous read-only int64 array: one compiled signature per kernel."""
    arr = np.asarray(a)
    if not (arr.dtype == np.int64 and arr.flags.c_contiguous and not arr.flags.writeable):
        arr = np.array(arr, dtype=np.int64, order="C", copy=True)
        arr.setflags(write=False)
    return arr


def select_dense_nets(net_sizes: np.ndarray, n_vertices: int) -> np.ndarray:
    """Indices (ascending) of the nets the rule of this module calls dense, before the caps.

    Parameters
    ----------
    net_sizes : ndarray of int
        Vertices on each net.
    n_vertices : int
        Vertices of the graph.

    Returns
    -------
    ndarray of int64
        The dense candidates, at most :data:`MAX_DENSE_NETS` of them (the largest).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.coloring.dense import select_dense_nets
    >>> sizes = np.full(1000, 3)
    >>> sizes[7] = 1000  # one dense row
    >>> select_dense_nets(sizes, 1000).tolist()
    [7]
    >>> select_dense_nets(np.full(1000, 3), 1000).tolist()
    []
    """
    sizes = np.asarray(net_sizes, dtype=np.int64)
    if sizes.size == 0:
        return np.zeros(0, dtype=np.int64)
    mean = float(sizes.mean())
    ok = ((sizes >= DENSE_NET_MIN) & (sizes > DENSE_NET_FACTOR * mean)
          & (sizes.astype(np.float64) ** 2 >= DENSE_NET_RATIO * n_vertices))
    found = np.flatnonzero(ok)
    if found.size > MAX_DENSE_NETS:
        by_size = found[np.argsort(-sizes[found], kind="stable")]
        found = np.sort(by_size[:MAX_DENSE_NETS])
    return found.astype(np.int64)


@dataclass(frozen=True, eq=False)
class DenseNets:
    """The dense nets of a graph and the group structure of its vertices.

    Attributes
    ----------
    nets : ndarray of int64
        The dense nets, ascending.
    hid : ndarray of int64
        Per net: its dense index (position in ``nets``) or -1.
    hptr, hidx : ndarray of int64
        The dense indices of each vertex's dense nets (CSR over the vertices).
    grp : ndarray of int64
        The group of each vertex: 0 for no dense net, else groups of equal sets of dense
        nets, numbered by first appearance.
    gptr, gidx : ndarray of int64
        The dense indices of each group (CSR over the groups).
    hgptr, hgidx : ndarray of int64
        The groups on each dense net, ascending.
    gsize : ndarray of int64
        Per group, the vertices on the union of its dense nets.
    lex : ndarray of int64
        Per vertex, its neighbours through light nets that share no dense net with it.
    arrays : tuple of ndarray
        The kernel arrays ``(vptr, vidx, nptr, nidx)`` the structure describes.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.graph import BipartiteGraph
    >>> from sparsejac.coloring.dense import DenseNets
    >>> g = BipartiteGraph(as_pattern(np.array([[1, 1, 1, 1], [1, 0, 0, 0], [0, 0, 1, 1]])),
    ...                    "column")
    >>> d = DenseNets.build(g.arrays, np.array([0]))  # row 0 taken as dense
    >>> d.grp.tolist(), d.degrees.tolist()
    ([1, 1, 1, 1], [3, 3, 3, 3])
    >>> d.greedy().tolist(), d.dsatur()[0].tolist()
    ([0, 1, 2, 3], [0, 1, 2, 3])
    """

    nets: np.ndarray
    hid: np.ndarray
    hptr: np.ndarray
    hidx: np.ndarray
    grp: np.ndarray
    gptr: np.ndarray
    gidx: np.ndarray
    hgptr: np.ndarray
    hgidx: np.ndarray
    gsize: np.ndarray
    lex: np.ndarray
    arrays: _Arrays

    @staticmethod
    def build(arrays: _Arrays, nets: np.ndarray, max_groups: int | None = None
              ) -> DenseNets | None:
        """The structure of ``arrays`` (``vptr, vidx, nptr, nidx``) with dense ``nets``.

        None when the vertices fall into more than ``max_groups`` groups (found in
        ``O(nnz)``, before the costlier parts).
        """
        arrays = (_ro(arrays[0]), _ro(arrays[1]), _ro(arrays[2]), _ro(arrays[3]))
        n_nets = arrays[2].size - 1
        nets = _ro(nets)
        hid = np.full(n_nets, -1, dtype=np.int64)
        hid[nets] = np.arange(nets.size, dtype=np.int64)
        hid = _ro(hid)
        cap = arrays[0].size if max_groups is None else int(max_groups)
        hptr, hidx, grp, gptr, gidx, hgptr, hgidx, gsize, lex = (
            _ro(a) for a in _dense.dense_structure(*arrays, hid, nets.size, cap))
        if gsize.size != gptr.size - 1:
            return None
        return DenseNets(nets, hid, hptr, hidx, grp, gptr, gidx, hgptr, hgidx, gsize, lex,
                         arrays)

    @staticmethod
    def for_graph(arrays: _Arrays, candidates: np.ndarray) -> DenseNets | None:
        """:meth:`build` with the largest ``candidates`` whose groups stay within the cap.

        Halves the number of dense nets (keeping the largest) while there are more than
        :data:`MAX_DENSE_GROUPS` groups; None when no net is left.
        """
        nets = np.asarray(candidates, dtype=np.int64)
        sizes = np.diff(arrays[2])[nets]
        ranked = nets[np.argsort(-sizes, kind="stable")]
        k = ranked.size
        while k > 0:
            found = DenseNets.build(arrays, np.sort(ranked[:k]), MAX_DENSE_GROUPS)
            if found is not None:
                return found
            k //= 2
        return None

    def relabel(self, arrays: _Arrays) -> DenseNets:
        """The structure of the same dense nets on renamed ``arrays`` (same nets)."""
        found = DenseNets.build(arrays, self.nets)
        assert found is not None  # no cap
        return found

    @property
    def n_dense(self) -> int:
        """Number of dense nets."""
        return int(self.nets.size)

    @property
    def n_groups(self) -> int:
        """Number of groups, group 0 (no dense net) included."""
        return int(self.gptr.size - 1)

    @property
    def degrees(self) -> np.ndarray:
        """Distance-2 degree of every vertex: ``gsize[grp] - 1 + lex`` (``lex`` in group 0)."""
        return _ro(np.where(self.grp > 0, self.gsize[self.grp] - 1, 0) + self.lex)

    def greedy(self, order: np.ndarray | None = None) -> np.ndarray:
        """First-fit greedy in ``order`` (natural if omitted): the pairwise kernel's colouring."""
        natural = order is None
        visit = _ro(np.zeros(0, dtype=np.int64) if order is None else order)
        colors: np.ndarray = _dense.dense_greedy(
            *self.arrays, self.hid, self.hptr, self.hidx, self.n_dense, visit, natural)
        return colors

    def dsatur(self, degrees: np.ndarray | None = None, table_bytes: int | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """DSATUR: ``(colours, sequence)``, those of the pairwise kernel.

        ``table_bytes`` bounds the seen-colour bit table (default: 16 bytes per incidence).
        """
        deg = self.degrees if degrees is None else degrees
        if table_bytes is None:
            table_bytes = 16 * max(int(self.arrays[1].size), int(self.lex.size), 1)
        colors, seq = _dense.dense_dsatur(
            *self.arrays, self.hid, self.hptr, self.hidx, self.grp, self.gptr, self.gidx,
            self.hgptr, self.hgidx, _ro(deg), int(table_bytes))
        return colors, seq

    def dynamic_order(self, name: str) -> np.ndarray:
        """``"smallest_last"``, ``"incidence_degree"`` or ``"dynamic_largest_first"``."""
        if name == "incidence_degree":
            x0 = np.zeros(self.lex.size, dtype=np.int64)
            off0 = np.zeros(self.n_groups, dtype=np.int64)
            step, take_max, reverse = 1, True, False
        elif name in ("smallest_last", "dynamic_largest_first"):
            x0 = self.lex
            off0 = np.maximum(self.gsize - 1, 0)
            step, take_max, reverse = -1, name == "dynamic_largest_first", \
                name == "smallest_last"
        else:
            raise ValueError(
                f"Unknown dynamic `name` {name!r}; expected 'smallest_last', "
                "'incidence_degree' or 'dynamic_largest_first'.")
        order: np.ndarray = _dense.dense_dynamic_order(
            *self.arrays, self.hid, self.hptr, self.hidx, self.grp, self.gptr, self.hgptr,
            self.hgidx, _ro(x0), self.lex, _ro(off0), step, take_max, reverse)
        return order

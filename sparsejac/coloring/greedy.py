"""Greedy partial distance-2 colouring: first-fit in a given order, DSATUR, random ties.

This module owns the step from an order to groups. :func:`greedy_color` visits the
vertices in the given order and gives each the smallest colour not used by a vertex sharing
a net with it (Gebremedhin, Manne and Pothen 2005, Algorithm 3.2; in natural order this is
exactly scipy's ``group_columns`` with ``order=np.arange(n)``, the Curtis-Powell-Reid
grouping). It keeps one colour bit mask per net, so a vertex's forbidden colours are the OR
of its nets' masks: ``O(nnz * p / 64)`` work instead of the ``O(sum of squared net
sizes)`` of walking every pair of vertices on a net (ColPack's and SMC's way, kept as the
fallback when the masks would take too much memory). Where some nets are dense (a dense row
makes ``p`` about n, so neither is linear), the kernels of :mod:`~sparsejac.coloring.dense`
run instead: ``O(W_light + nnz)``, the same colouring. :func:`dsatur_color` runs the DSATUR
kernel directly. :func:`restart` reruns a dynamic order with random tie-breaking, which
``order="best"`` uses to diversify.

The kernels are in :mod:`sparsejac.coloring._kernels`; every array handed to them goes
through :func:`kernel_array` (C-contiguous, read-only ``int64``) so that each kernel is
compiled for exactly one signature.
"""

from __future__ import annotations

import sys

import numpy as np

from sparsejac import kernels
from sparsejac.coloring import _kernels
from sparsejac.coloring.graph import BipartiteGraph

__all__ = ["dsatur_color", "first_fit_units", "greedy_color", "kernel_array", "relabel", "restart"]

RESTART_ORDERS = ("incidence_degree", "dsatur", "smallest_last")


def kernel_array(a: object) -> np.ndarray:
    """Return ``a`` as a C-contiguous, read-only ``int64`` array (copied only if needed).

    Examples
    --------
    >>> from sparsejac.coloring.greedy import kernel_array
    >>> kernel_array([2, 0, 1]).flags.writeable
    False
    """
    arr = np.asarray(a)
    if arr.dtype == np.int64 and arr.flags.c_contiguous and not arr.flags.writeable:
        return arr
    out = np.array(arr, dtype=np.int64, order="C", copy=True)
    out.setflags(write=False)
    return out


_NO_ORDER = kernel_array(np.empty(0, dtype=np.int64))


#: Below this many nonzeros, first-fit colouring of a process's first Jacobians runs in Python
#: (:func:`_greedy_python`, the same colouring; :func:`sparsejac.kernels.use_fallback`): a
#: small first Jacobian in a fresh process then never imports numba.
PYTHON_BELOW = 400_000
#: budget units (about 10 ns) the Python first fit draws per nonzero (0.14-0.18 µs measured
#: on 2026-11-29, tridiagonal and 5-point patterns of 3·10^4 to 9·10^5 nonzeros)
PYTHON_WEIGHT = 20


def _greedy_python(vptr: np.ndarray, vidx: np.ndarray, order: np.ndarray | None
                   ) -> np.ndarray:
    """First-fit colouring with Python integers as the nets' colour masks."""
    nv = vptr.size - 1
    ptr = vptr.tolist()
    nets = vidx.tolist()
    masks = [0] * (max(nets) + 1 if nets else 0)
    colors = [0] * nv
    for v in range(nv) if order is None else order.tolist():
        acc = 0
        for r in nets[ptr[v]:ptr[v + 1]]:
            acc |= masks[r]
        c = (~acc & (acc + 1)).bit_length() - 1  # the lowest colour no net of v has
        colors[v] = c
        bit = 1 << c
        for r in nets[ptr[v]:ptr[v + 1]]:
            masks[r] |= bit
    return np.array(colors, dtype=np.int64)


#: The natural-order first fit takes scipy's compiled Curtis-Powell-Reid grouping (the same
#: colouring) while numba is not loaded, where scipy.optimize is imported already and no
#: vertex can need more than this many colours: that grouping scans every vertex once per
#: colour, so a dense net would make it quadratic.
SCIPY_MAX_COLOURS = 64


def first_fit_units() -> int:
    """Budget units per nonzero a natural first fit draws before numba is loaded, beyond one.

    0 where scipy's grouping serves it (:func:`_greedy_scipy`: ``scipy.optimize`` imported),
    else :data:`PYTHON_WEIGHT` (the Python first fit).

    Examples
    --------
    >>> from sparsejac.coloring.greedy import PYTHON_WEIGHT, first_fit_units
    >>> first_fit_units() in (0, PYTHON_WEIGHT)
    True
    """
    return 0 if "scipy.optimize" in sys.modules else PYTHON_WEIGHT


def _greedy_scipy(vptr: np.ndarray, vidx: np.ndarray) -> np.ndarray | None:
    """Natural-order first fit by scipy's ``group_columns`` kernel, or None where not apt.

    scipy's grouping fills one colour at a time, visiting the vertices in order and adding
    each that shares no net with the colour's earlier members: vertex ``v`` gets colour
    ``c`` exactly when first fit gives it ``c`` (the same colouring, compiled). Used only
    where ``scipy.optimize`` is imported already (importing it costs more than a colouring
    of this size) and the distance-2 degree bounds the colours by
    :data:`SCIPY_MAX_COLOURS`.
    """
    if "scipy.optimize" not in sys.modules or vidx.size >= 2**31:
        return None
    try:
        from scipy.optimize._group_columns import group_sparse
    except ImportError:  # pragma: no cover - a scipy without it: the Python first fit
        return None
    nv = vptr.size - 1
    if nv == 0 or vidx.size == 0:
        return np.zeros(nv, dtype=np.int64)
    sizes = np.bincount(vidx)
    # colours a vertex can be refused: the other members of its nets, at most
    owner = np.repeat(np.arange(nv), np.diff(vptr))
    degree2 = np.bincount(owner, weights=sizes[vidx] - 1, minlength=nv)
    if float(degree2.max()) + 1 > SCIPY_MAX_COLOURS:
        return None
    groups = group_sparse(int(sizes.size), nv, vidx.astype(np.int32), vptr.astype(np.int32))
    return np.asarray(groups, dtype=np.int64)


def _greedy_arrays(
    arrays: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    order: np.ndarray | None,
    n_words: int,
) -> np.ndarray:
    nnz = arrays[1].size
    if nnz <= PYTHON_BELOW and not kernels.loaded():
        fast = _greedy_scipy(arrays[0], arrays[1]) if order is None else None
        if fast is not None and kernels.use_fallback(nnz):  # (compiled: a unit per nonzero)
            return fast
    if nnz <= PYTHON_BELOW and kernels.use_fallback(PYTHON_WEIGHT * nnz):
        return _greedy_python(arrays[0], arrays[1], order)
    if n_words:
        natural = order is None
        colors: np.ndarray = _kernels.greedy_masks(
            *arrays, _NO_ORDER if natural else kernel_array(order), n_words, natural
        )
        return colors
    if order is None:
        order = np.arange(arrays[0].size - 1)
    colors = _kernels.greedy(*arrays, kernel_array(order))
    return colors


def greedy_color(graph: BipartiteGraph, order: np.ndarray | None = None) -> np.ndarray:
    """First-fit colouring of ``graph``'s vertices visited in ``order``.

    Uses the per-net colour-mask kernel (``O(nnz * p / 64)``) when its table fits in
    :data:`~sparsejac.coloring.graph.MAX_MASK_BYTES`, else the ``O(W)`` kernel that walks
    every pair of vertices on a net, and with dense nets the kernel of
    :class:`~sparsejac.coloring.dense.DenseNets`; all give the same colouring.

    Parameters
    ----------
    graph : BipartiteGraph
        The pattern seen from the coloured side.
    order : ndarray of int, optional
        A permutation of the vertices (not checked here); natural order if omitted.

    Returns
    -------
    ndarray of int64
        The group of every vertex, ``0..p-1``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.graph import BipartiteGraph
    >>> from sparsejac.coloring.greedy import greedy_color
    >>> g = BipartiteGraph(as_pattern(np.array([[1, 1, 0], [0, 1, 1]])), "column")
    >>> greedy_color(g).tolist()
    [0, 1, 0]
    >>> greedy_color(g, np.array([1, 0, 2])).tolist()
    [1, 0, 1]
    """
    nv = graph.n_vertices
    if nv > 1 and graph.partition != "bidirectional" and graph.lower_bound == nv:
        # a net holds every vertex: each conflicts with all visited before it and takes the
        # next colour (what first fit gives, without its pass: a curve fit's 5,000 x 7
        # Jacobian spent 3.5 ms in the Python first fit finding its 7 columns)
        colors = np.empty(nv, dtype=np.int64)
        colors[np.arange(nv) if order is None else order] = np.arange(nv)
        return colors
    if graph.dense is not None:
        return graph.dense.greedy(None if order is None else kernel_array(order))
    return _greedy_arrays(graph.arrays, order, graph.mask_words)


def dsatur_color(graph: BipartiteGraph) -> tuple[np.ndarray, np.ndarray]:
    """DSATUR colouring of ``graph``; returns ``(groups, visiting sequence)``.

    See :func:`sparsejac.coloring.orders.dsatur` for the rule.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.graph import BipartiteGraph
    >>> from sparsejac.coloring.greedy import dsatur_color
    >>> g = BipartiteGraph(as_pattern(np.array([[1, 1, 0], [0, 1, 1]])), "column")
    >>> [a.tolist() for a in dsatur_color(g)]
    [[1, 0, 1], [1, 0, 2]]
    """
    if graph.dense is not None:
        return graph.dense.dsatur(graph.degrees, graph.seen_table_bytes)
    colors, seq = _kernels.dsatur(*graph.arrays, graph.degrees, graph.seen_table_bytes)
    return colors, seq


def relabel(
    graph: BipartiteGraph, perm: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Kernel arrays of ``graph`` with vertex ``i`` renamed to be old vertex ``perm[i]``.

    Vectorised, ``O(nnz)``. Used to break the kernels' index-based ties at random.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.graph import BipartiteGraph
    >>> from sparsejac.coloring.greedy import relabel
    >>> g = BipartiteGraph(as_pattern(np.array([[1, 1, 0], [0, 0, 1]])), "column")
    >>> vptr, vidx, nptr, nidx = relabel(g, np.array([2, 0, 1]))
    >>> vidx.tolist(), nidx.tolist()  # new vertex 0 is old column 2, on row 1
    ([1, 0, 0], [1, 2, 0])
    """
    perm = np.asarray(perm, dtype=np.int64)
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size, dtype=np.int64)
    counts = np.diff(graph.vptr)[perm]
    vptr = np.zeros(perm.size + 1, dtype=np.int64)
    np.cumsum(counts, out=vptr[1:])
    gather = np.repeat(graph.vptr[perm] - vptr[:-1], counts) + np.arange(vptr[-1])
    vidx = graph.vidx[gather]
    nidx = inv[graph.nidx]
    return kernel_array(vptr), kernel_array(vidx), graph.nptr, kernel_array(nidx)


def restart(graph: BipartiteGraph, name: str, rng: np.random.Generator) -> np.ndarray:
    """Colour with the dynamic order ``name`` after renaming the vertices at random.

    The kernels break ties by vertex index; renaming the vertices by a random permutation
    makes every tie a fair coin, so repeated restarts explore different colourings of
    the same order (Culberson's "random tie-breaking" restarts).

    Parameters
    ----------
    graph : BipartiteGraph
        The pattern seen from the coloured side.
    name : {"incidence_degree", "dsatur", "smallest_last", "dynamic_largest_first"}
        The dynamic order.
    rng : numpy.random.Generator
        Draws the renaming.

    Returns
    -------
    ndarray of int64
        The group of every (original) vertex.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.graph import BipartiteGraph
    >>> from sparsejac.coloring.greedy import restart
    >>> g = BipartiteGraph(as_pattern(np.eye(3) + np.eye(3, k=1)), "column")
    >>> int(restart(g, "dsatur", np.random.default_rng(0)).max()) + 1
    2
    """
    perm = rng.permutation(graph.n_vertices).astype(np.int64)
    arrays = relabel(graph, perm)
    deg = kernel_array(graph.degrees[perm])
    if name not in (*RESTART_ORDERS, "dynamic_largest_first"):
        raise ValueError(
            f"Unknown restart order {name!r}; expected one of "
            f"{[*RESTART_ORDERS, 'dynamic_largest_first']}."
        )
    if graph.dense is not None:
        dense = graph.dense.relabel(arrays)
        if name == "dsatur":
            colors_new = dense.dsatur(deg, graph.seen_table_bytes)[0]
        else:
            colors_new = dense.greedy(dense.dynamic_order(name))
    elif name == "dsatur":
        colors_new, _ = _kernels.dsatur(*arrays, deg, graph.seen_table_bytes)
    else:
        if name == "incidence_degree":
            order = _kernels.incidence_degree(*arrays)
        elif name == "smallest_last":
            order = _kernels.smallest_last(*arrays, deg)
        else:
            order = _kernels.dynamic_largest_first(*arrays, deg)
        colors_new = _greedy_arrays(arrays, order, graph.mask_words)
    colors: np.ndarray = np.empty_like(colors_new)
    colors[perm] = colors_new
    return colors

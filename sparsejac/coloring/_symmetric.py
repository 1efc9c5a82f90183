"""Compiled kernels of symmetric colouring: star and acyclic colouring, and their recovery.

The graph is the *adjacency graph* of a structurally symmetric n×n pattern: vertex ``i`` is
row and column ``i``, and every off-diagonal nonzero pair ``(i, j), (j, i)`` is one edge.
The kernels take it as CSR arrays without the diagonal:

* ``ptr, adj`` -- for each vertex, its neighbours (sorted);
* ``eid`` -- for each CSR position, the id ``0..n_edges-1`` of its undirected edge (both
  directions of an edge carry the same id).

Colouring follows Gebremedhin, Tarafdar, Manne and Pothen (2007), "New acyclic and star
coloring algorithms with application to computing Hessians", SIAM J. Sci. Comput. 29(3):
:func:`star_color` is their Algorithm 4.1 (greedy star colouring that keeps the collection
of two-coloured stars and their hubs, so a vertex never has to look further than distance
2), :func:`acyclic_color` their Algorithm 3.1 (greedy acyclic colouring that keeps the
two-coloured trees in a disjoint-set forest over the edges). Both give each vertex, in the
given order, the smallest colour not forbidden; ``forbidden[c] == v`` records that colour
``c`` is forbidden for the vertex ``v`` being coloured, so the array is never cleared.

Recovery works on the CSR arrays of the full pattern (diagonal included), with ``trans``
mapping each CSR position to the position of its transposed entry:

* :func:`star_sources` -- direct recovery: for each nonzero, the row and column of ``B = H @
  S`` that holds it alone;
* :func:`substitution_order` -- recovery by substitution for an acyclic colouring: the
  edges of every two-coloured tree, leaves first (each tree peeled like a topological
  sort), with the level of every edge;
* :func:`substitute` -- runs that order on one compressed matrix.

All kernels are compiled with ``numba.njit(cache=True)`` and take ``int64`` arrays.
"""

from __future__ import annotations

import numpy as np

from sparsejac.coloring._kernels import ORDER_INTERPRET_BELOW, ORDER_INTERPRET_WEIGHT
from sparsejac.kernels import kernel

__all__: list[str] = []

_njit = kernel(nogil=True)
#: one pass over the input, run interpreted on small inputs before numba is loaded
#: (sparsejac.kernels): the same results
_linear = kernel(nogil=True, interpret=True)
#: the greedy star and acyclic colourings: interpreted on small inputs too, at the orderings'
#: bound and cost (a neighbourhood walk per vertex)
_greedy = kernel(nogil=True, interpret=ORDER_INTERPRET_BELOW,
                 interpret_weight=ORDER_INTERPRET_WEIGHT)


@kernel(nogil=True, inline="always")
def _position(adj, lo, hi, v):  # type: ignore[no-untyped-def]
    """The position of ``v`` in the sorted ``adj[lo:hi]`` (binary search)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if adj[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@_linear
def adjacency_edges(ptr, adj):  # type: ignore[no-untyped-def]
    """Edge id of every CSR position of a symmetric adjacency structure, and the edge count.

    Edge ids are given in CSR order of the upper triangle (``i < j``); the lower position of
    an edge finds its id by a binary search in the neighbour list of ``j``.
    """
    n = ptr.size - 1
    eid = np.full(adj.size, -1, dtype=np.int64)
    k = 0
    for i in range(n):
        for a in range(ptr[i], ptr[i + 1]):
            if adj[a] > i:
                eid[a] = k
                k += 1
    for i in range(n):
        for a in range(ptr[i], ptr[i + 1]):
            j = adj[a]
            if j < i:
                eid[a] = eid[_position(adj, ptr[j], ptr[j + 1], i)]
    return eid, k


@kernel(nogil=True, inline="always")
def _treat(ptr, adj, color, forbidden, treated, v, w, big, clist, ccnt):  # type: ignore[no-untyped-def]
    """Forbid for ``v`` the colours of every coloured neighbour of ``w``; mark ``w`` treated.

    A big vertex (``big[w] >= 0``) keeps the distinct colours around it (``clist``): its
    neighbours are not walked.
    """
    bw = big[w]
    if bw >= 0:
        for k in range(ccnt[bw]):
            forbidden[clist[bw, k]] = v
    else:
        for b in range(ptr[w], ptr[w + 1]):
            x = adj[b]
            if color[x] >= 0:
                forbidden[color[x]] = v
    treated[w] = v


@kernel(nogil=True, inline="always")
def _leaf_of(lhead, lnext, lhub, e, leaf, hub_vertex):  # type: ignore[no-untyped-def]
    """Record that ``leaf`` is a leaf, through edge ``e``, of a star whose hub is ``hub_vertex``."""
    if lhub[e] < 0:
        lhub[e] = hub_vertex
        lnext[e] = lhead[leaf]
        lhead[leaf] = e


@kernel(nogil=True, inline="always")
def _colour_tables(big, n):  # type: ignore[no-untyped-def]
    """Empty colour tables of the big vertices: a neighbour per colour, distinct colours."""
    n_big = 0
    for i in range(n):
        if big[i] >= 0:
            n_big += 1
    cmap = np.full((n_big, n + 1), -1, dtype=np.int64)
    clist = np.zeros((n_big, n + 1), dtype=np.int64)
    ccnt = np.zeros(max(n_big, 1), dtype=np.int64)
    return cmap, clist, ccnt


@kernel(nogil=True, inline="always")
def _learn_colour(ptr, adj, big, cmap, clist, ccnt, v, c):  # type: ignore[no-untyped-def]
    """The big neighbours of ``v``, just coloured ``c``, learn it.

    ``v``'s position in their neighbour lists under colour ``c`` (the first one only), and
    ``c`` among their colours.
    """
    for a in range(ptr[v], ptr[v + 1]):
        w = adj[a]
        bw = big[w]
        if bw >= 0 and cmap[bw, c] < 0:
            cmap[bw, c] = _position(adj, ptr[w], ptr[w + 1], v)
            clist[bw, ccnt[bw]] = c
            ccnt[bw] += 1


@_greedy
def star_color(ptr, adj, eid, n_edges, order, big):  # type: ignore[no-untyped-def]
    """Star colouring of the vertices in ``order`` (GTMP 2007, Algorithm 4.1).

    A star colouring is a distance-1 colouring in which every path on four vertices uses at
    least three colours: every two-coloured connected subgraph is a star. The kernel keeps
    the two-coloured stars (``star``: the star of every edge whose ends are both coloured;
    ``hub``: the centre of every star, -1 while it has one edge), and for each colour the
    first neighbour of the current vertex with that colour (``fn_v, fn_w``), so that
    ``v`` is forbidden

    * the colours of its neighbours (distance-1);
    * Case 1: when two neighbours ``w, q`` share a colour (``v`` is to be the hub of a star
      through them), every colour around ``w`` and ``q``;
    * Case 2: the colour of the hub ``x`` of a star through a neighbour ``w`` (``v`` would
      make ``v-w-x-...`` a two-coloured path on four vertices).

    Nothing walks the neighbours of a neighbour, so a hub coloured before its many
    neighbours costs no more than one coloured after them (that walk made a natural-order
    star colouring of an arrowhead with its hub first quadratic): every vertex keeps the
    hubs of the stars it is a leaf of (``lhead``, ``lnext``, ``lhub``: a list through the
    edges), and each big vertex (``big[w]``, the row of its tables, or -1), for each colour,
    a neighbour with that colour (``cmap``: its position in the adjacency list) and the
    distinct colours around it (``clist``). The colours are those of the walking kernel: the
    neighbours of ``w`` with one colour ``c`` all lie in one star (two of them and ``w``
    make a two-coloured path, whose star has hub ``w``), so any of them finds it.
    """
    n = ptr.size - 1
    m = max(n_edges, 1)
    color = np.full(n, -1, dtype=np.int64)
    forbidden = np.full(n + 1, -1, dtype=np.int64)
    fn_v = np.full(n + 1, -1, dtype=np.int64)
    fn_w = np.full(n + 1, -1, dtype=np.int64)
    fn_e = np.full(n + 1, -1, dtype=np.int64)
    treated = np.full(n, -1, dtype=np.int64)
    star = np.full(m, -1, dtype=np.int64)
    hub = np.full(m, -1, dtype=np.int64)
    lhead = np.full(n, -1, dtype=np.int64)
    lnext = np.full(m, -1, dtype=np.int64)
    lhub = np.full(m, -1, dtype=np.int64)
    cmap, clist, ccnt = _colour_tables(big, n)
    n_stars = 0
    for t in range(order.size):
        v = order[t]
        for a in range(ptr[v], ptr[v + 1]):
            w = adj[a]
            cw = color[w]
            if cw < 0:
                continue
            forbidden[cw] = v
            if fn_v[cw] == v:  # Case 1: w is the second neighbour of v with colour cw
                q = fn_w[cw]
                if treated[q] != v:
                    _treat(ptr, adj, color, forbidden, treated, v, q, big, clist, ccnt)
                _treat(ptr, adj, color, forbidden, treated, v, w, big, clist, ccnt)
            else:
                fn_v[cw] = v
                fn_w[cw] = w
                fn_e[cw] = eid[a]
                e = lhead[w]  # Case 2: the hubs of the stars w is a leaf of
                while e >= 0:
                    forbidden[color[lhub[e]]] = v
                    e = lnext[e]
        c = 0
        while forbidden[c] == v:
            c += 1
        color[v] = c
        # updateStars(v): join every new edge vw to a star
        for a in range(ptr[v], ptr[v + 1]):
            w = adj[a]
            if color[w] < 0:
                continue
            found = -1
            bw = big[w]
            if bw >= 0:
                found = cmap[bw, c]
            else:
                for b in range(ptr[w], ptr[w + 1]):
                    x = adj[b]
                    if x != v and color[x] == c:
                        found = b
                        break
            if found >= 0:  # v-w-x two-coloured: w is the hub
                b = found
                s = star[eid[b]]
                hub[s] = w
                star[eid[a]] = s
                _leaf_of(lhead, lnext, lhub, eid[b], adj[b], w)
                _leaf_of(lhead, lnext, lhub, eid[a], v, w)
            else:
                cw = color[w]
                if fn_v[cw] == v and fn_w[cw] != w:  # w-v-q two-coloured: v is the hub
                    s = star[fn_e[cw]]
                    hub[s] = v
                    star[eid[a]] = s
                    _leaf_of(lhead, lnext, lhub, fn_e[cw], fn_w[cw], v)
                    _leaf_of(lhead, lnext, lhub, eid[a], w, v)
                else:  # a new star of one edge, hub undetermined
                    star[eid[a]] = n_stars
                    hub[n_stars] = -1
                    n_stars += 1
        _learn_colour(ptr, adj, big, cmap, clist, ccnt, v, c)
    return color


@kernel(nogil=True, inline="always")
def _find(parent, e):  # type: ignore[no-untyped-def]
    """Root of ``e``'s set, halving the path on the way."""
    while parent[e] != e:
        parent[e] = parent[parent[e]]
        e = parent[e]
    return e


@kernel(nogil=True, inline="always")
def _union(parent, rank, a, b):  # type: ignore[no-untyped-def]
    """Join the sets of roots ``a`` and ``b`` (union by rank)."""
    if a == b:
        return
    if rank[a] < rank[b]:
        parent[a] = b
    elif rank[a] > rank[b]:
        parent[b] = a
    else:
        parent[b] = a
        rank[a] += 1


@_greedy
def acyclic_color(ptr, adj, eid, n_edges, order, big):  # type: ignore[no-untyped-def]
    """Acyclic colouring of the vertices in ``order`` (GTMP 2007, Algorithm 3.1).

    An acyclic colouring is a distance-1 colouring in which every cycle uses at least three
    colours: every two-coloured subgraph is a forest. The two-coloured trees are sets of
    edges in a disjoint-set forest (``parent``, ``rank``); ``first_visit`` records, per
    tree root, the vertex and neighbour through which the current vertex first reached the
    tree, so a second edge from ``v`` into the same tree through a colour ``color[x]``
    forbids that colour (it would close a two-coloured cycle). After colouring ``v``, its
    edges to neighbours of one colour form a star (``grow star``) and trees joined through
    ``v`` are merged.

    Invariant (kept by the merges): for every coloured ``w`` and colour ``c``, the edges from
    ``w`` to its neighbours of colour ``c`` lie in one tree. So around a neighbour ``w`` only
    the first ``x`` of each colour needs a ``find`` (``seen`` stamps the colours met through
    the current pair ``v, w``), and one union per ``w`` joins ``vw`` to its tree. A big
    vertex (``big[w] >= 0``) is not walked at all: its colour tables (as in
    :func:`star_color`: a neighbour per colour, the distinct colours) give one ``x`` of each
    colour around it, so a hub coloured before its many neighbours costs each of them the
    number of colours around it, not its degree.
    """
    n = ptr.size - 1
    m = max(n_edges, 1)
    color = np.full(n, -1, dtype=np.int64)
    forbidden = np.full(n + 1, -1, dtype=np.int64)
    fn_v = np.full(n + 1, -1, dtype=np.int64)
    fn_e = np.full(n + 1, -1, dtype=np.int64)
    visit_v = np.full(m, -1, dtype=np.int64)
    visit_w = np.full(m, -1, dtype=np.int64)
    parent = np.arange(m, dtype=np.int64)
    rank = np.zeros(m, dtype=np.int64)
    seen = np.full(n + 1, -1, dtype=np.int64)
    stamp = 0
    cmap, clist, ccnt = _colour_tables(big, n)
    for t in range(order.size):
        v = order[t]
        for a in range(ptr[v], ptr[v + 1]):
            w = adj[a]
            if color[w] >= 0:
                forbidden[color[w]] = v
        for a in range(ptr[v], ptr[v + 1]):
            w = adj[a]
            if color[w] < 0:
                continue
            stamp += 1
            bw = big[w]
            k = ptr[w] if bw < 0 else 0
            end = ptr[w + 1] if bw < 0 else ccnt[bw]
            while k < end:  # the neighbours of w, or one of each colour around a big w
                b = k if bw < 0 else cmap[bw, clist[bw, k]]
                k += 1
                x = adj[b]
                if color[x] < 0 or forbidden[color[x]] == v or seen[color[x]] == stamp:
                    continue
                seen[color[x]] = stamp  # the other x of this colour are in the same tree
                # preventCycle(v, w, x)
                r = _find(parent, eid[b])
                if visit_v[r] != v:
                    visit_v[r] = v
                    visit_w[r] = w
                elif visit_w[r] != w:
                    forbidden[color[x]] = v
        c = 0
        while forbidden[c] == v:
            c += 1
        color[v] = c
        for a in range(ptr[v], ptr[v + 1]):  # growStar(v, w)
            w = adj[a]
            cw = color[w]
            if cw < 0 or w == v:
                continue
            if fn_v[cw] != v:
                fn_v[cw] = v
                fn_e[cw] = eid[a]
            else:
                _union(parent, rank, _find(parent, eid[a]), _find(parent, fn_e[cw]))
        for a in range(ptr[v], ptr[v + 1]):  # mergeTrees(v, w, x)
            w = adj[a]
            if color[w] < 0:
                continue
            bw = big[w]
            if bw >= 0:
                b = cmap[bw, c]
                if b >= 0:
                    _union(parent, rank, _find(parent, eid[a]), _find(parent, eid[b]))
                continue
            for b in range(ptr[w], ptr[w + 1]):
                x = adj[b]
                if x != v and color[x] == c:
                    _union(parent, rank, _find(parent, eid[a]), _find(parent, eid[b]))
                    break  # every edge from w to colour c is in that tree
        _learn_colour(ptr, adj, big, cmap, clist, ccnt, v, c)
    return color


# -- recovery ---------------------------------------------------------------------------


@_linear
def star_sources(indptr, indices, trans, colors, n_colors):  # type: ignore[no-untyped-def]
    """For each nonzero of ``H`` (CSR order), the row and column of ``B`` that holds it alone.

    ``H[i, j] = B[i, colors[j]]`` when ``j`` is the only neighbour of ``i`` with its colour
    (and ``H[i, i] = B[i, colors[i]]``); else the transposed entry must be alone in ``B[j,
    colors[i]]``. Returns ``(rows, cols, lost, clash)``: the first CSR position alone in
    neither (the colouring is not a star colouring) and the first off-diagonal position whose
    two vertices share a colour (not even a distance-1 colouring), each -1 if there is none.
    """
    n = indptr.size - 1
    nnz = indices.size
    count = np.zeros(n_colors, dtype=np.int64)
    alone = np.zeros(nnz, dtype=np.bool_)
    rows = np.empty(nnz, dtype=np.int64)
    cols = np.empty(nnz, dtype=np.int64)
    lost = -1
    clash = -1
    for i in range(n):
        for a in range(indptr[i], indptr[i + 1]):
            j = indices[a]
            if j != i:
                count[colors[j]] += 1
                if clash < 0 and colors[j] == colors[i]:
                    clash = a
        for a in range(indptr[i], indptr[i + 1]):
            alone[a] = indices[a] == i or count[colors[indices[a]]] == 1
        for a in range(indptr[i], indptr[i + 1]):
            j = indices[a]
            if j != i:
                count[colors[j]] = 0
    for i in range(n):
        for a in range(indptr[i], indptr[i + 1]):
            j = indices[a]
            if alone[a]:
                rows[a] = i
                cols[a] = colors[j]
            elif alone[trans[a]]:
                rows[a] = j
                cols[a] = colors[i]
            else:
                if lost < 0:
                    lost = a
                rows[a] = i
                cols[a] = colors[j]
    return rows, cols, lost, clash


@_linear
def substitution_order(indptr, indices, trans, colors, n_colors):  # type: ignore[no-untyped-def]
    """The order in which substitution recovers the off-diagonal nonzeros of ``H``.

    A *slot* is a vertex ``i`` with a colour ``c`` of its neighbours: ``B[i, c]`` sums
    ``H[i, j]`` over the neighbours ``j`` of colour ``c``, which all lie in one two-coloured
    tree when the colouring is acyclic. Peeling every tree from its leaves: a slot with one
    unrecovered edge ``(i, j)`` gives ``H[i, j]`` = what is left of ``B[i, c]``, which is
    then subtracted from the slot ``(j, colors[i])`` at the other end. A slot's last edge is
    the XOR of its unrecovered edge ids (no list per slot is needed).

    Returns ``(source, level, ok)``: the CSR positions ``a = (i, j)`` in recovery order (the
    value is read from slot ``(i, colors[j])``), the level of each (0 for a leaf; an edge's
    value depends only on edges of lower levels), and ``ok``, False when some edges are left
    (a two-coloured cycle: the colouring is not acyclic).
    """
    n = indptr.size - 1
    nnz = indices.size
    slot = np.full(nnz, -1, dtype=np.int64)
    slot_of_color = np.full(n_colors, -1, dtype=np.int64)
    n_slots = 0
    n_edges = 0
    for i in range(n):
        first = n_slots
        for a in range(indptr[i], indptr[i + 1]):
            j = indices[a]
            if j == i:
                continue
            if j > i:
                n_edges += 1
            c = colors[j]
            if slot_of_color[c] < first:
                slot_of_color[c] = n_slots
                n_slots += 1
            slot[a] = slot_of_color[c]
    degree = np.zeros(n_slots, dtype=np.int64)
    xor = np.zeros(n_slots, dtype=np.int64)
    level = np.zeros(n_slots, dtype=np.int64)
    for a in range(nnz):
        s = slot[a]
        if s >= 0:
            degree[s] += 1
            xor[s] ^= min(a, trans[a])
    queue = np.empty(n_slots, dtype=np.int64)
    head = 0
    tail = 0
    for s in range(n_slots):
        if degree[s] == 1:
            queue[tail] = s
            tail += 1
    source = np.empty(n_edges, dtype=np.int64)
    source_level = np.empty(n_edges, dtype=np.int64)
    done = 0
    while head < tail:
        s = queue[head]
        head += 1
        if degree[s] != 1:
            continue  # its last edge went from the other end
        e = xor[s]
        a = e if slot[e] == s else trans[e]
        t = slot[trans[a]]
        source[done] = a
        source_level[done] = level[s]
        done += 1
        degree[s] = 0
        degree[t] -= 1
        xor[t] ^= e
        if level[t] < level[s] + 1:
            level[t] = level[s] + 1
        if degree[t] == 1:  # degrees only fall: a slot enters the queue at most once
            queue[tail] = t
            tail += 1
    return source[:done], source_level[:done], done == n_edges


@_linear
def substitute(flat, n_colors, indptr, indices, trans, colors, source, out):  # type: ignore[no-untyped-def]
    """Recover ``H``'s nonzeros (CSR order) into ``out`` from ``flat`` = C-order ``B``, copied.

    ``flat`` is overwritten: each recovered ``H[i, j]`` is subtracted from ``B[j,
    colors[i]]``, so when a slot is a leaf what is left of it is its last edge's value.
    """
    n = indptr.size - 1
    for i in range(n):
        for a in range(indptr[i], indptr[i + 1]):
            if indices[a] == i:
                out[a] = flat[i * n_colors + colors[i]]
    for t in range(source.size):
        a = source[t]
        b = trans[a]
        i = indices[b]
        j = indices[a]
        value = flat[i * n_colors + colors[j]]
        flat[j * n_colors + colors[i]] -= value
        out[a] = value
        out[b] = value
    return out

"""Compiled kernels of the colouring engine: greedy colouring, dynamic orders and DSATUR.

Every kernel works on the bipartite graph of a sparsity pattern given as two pairs of
``int64`` index arrays, never on graph objects:

* ``vptr, vidx`` -- for each *vertex* (the objects being coloured: columns for a column
  partition, rows for a row partition), the *nets* it touches (rows of that column, or
  columns of that row);
* ``nptr, nidx`` -- for each net, the vertices it touches.

For a column partition these are the CSC arrays (``col_indptr``, ``col_indices``) and the CSR
arrays (``indptr``, ``indices``) of the pattern; for a row partition the roles swap. Two
vertices are *distance-2 neighbours* when they share a net: they must get different colours
(partial distance-2 colouring, Gebremedhin, Manne and Pothen 2005, Algorithm 3.2). The
distance-2 neighbourhoods are never materialised; most kernels walk vertex -> net -> vertex
and de-duplicate with a marker array stamped by the current vertex, so a pass costs
``O(W)`` with ``W = sum over nets of (net size)**2``. First-fit greedy avoids that walk:
:func:`greedy_masks` keeps one colour bit mask per net and costs ``O(nnz * p / 64)``. A
dense net makes ``W`` quadratic (and ``p`` about n): graphs with dense nets use the kernels
of :mod:`sparsejac.coloring._dense` instead, which give the same colourings.

Dynamic orders keep their priorities in an *indexed* binary max-heap (``heap``: vertices,
``pos``: slot of each vertex or -1, ``key``: priority per vertex). Ties are broken by the
smaller vertex index, which makes every order deterministic and lets the tests compare them
exactly with slow reference implementations and with networkx.

All kernels are compiled with ``numba.njit(cache=True)``; they take and return ``int64``
arrays only. The public entry points live in :mod:`sparsejac.coloring.orders` and
:mod:`sparsejac.coloring.greedy`.
"""

from __future__ import annotations

import numpy as np

from sparsejac.kernels import kernel

__all__: list[str] = []

_njit = kernel(nogil=True)
#: The one-pass orderings and first fit run interpreted on inputs of at most this many
#: entries (the arrays passed) before numba is loaded (sparsejac.kernels), drawing
#: ORDER_INTERPRET_WEIGHT budget units per entry: their heap and bucket updates cost about
#: 7 µs per entry interpreted (the mandatory passes of a 1,391-nonzero pattern: 41 ms against
#: 1.6 ms compiled), 700 budget units of about 10 ns.
ORDER_INTERPRET_BELOW = 16_384
ORDER_INTERPRET_WEIGHT = 700
_order_kernel = kernel(nogil=True, interpret=ORDER_INTERPRET_BELOW,
                       interpret_weight=ORDER_INTERPRET_WEIGHT)


# -- distance-2 degrees and first-fit greedy --------------------------------------------


@_order_kernel
def distance2_degrees(vptr, vidx, nptr, nidx):  # type: ignore[no-untyped-def]
    """Count the distinct distance-2 neighbours of every vertex."""
    nv = vptr.size - 1
    mark = np.full(nv, -1, dtype=np.int64)
    deg = np.zeros(nv, dtype=np.int64)
    for v in range(nv):
        mark[v] = v
        d = 0
        for a in range(vptr[v], vptr[v + 1]):
            r = vidx[a]
            for b in range(nptr[r], nptr[r + 1]):
                w = nidx[b]
                if mark[w] != v:
                    mark[w] = v
                    d += 1
        deg[v] = d
    return deg


@_order_kernel
def greedy(vptr, vidx, nptr, nidx, order):  # type: ignore[no-untyped-def]
    """First-fit colouring of the vertices in ``order``; returns the colour of each vertex.

    Walks vertex -> net -> vertex (``O(W)``): ``forbidden[c] == v`` records that colour ``c``
    is taken by a distance-2 neighbour of the vertex ``v`` being coloured, so the array is
    never cleared. :func:`greedy_masks` computes the same colouring in ``O(nnz * p / 64)``;
    this version needs no extra memory and is the fallback when its masks would not fit.
    """
    nv = vptr.size - 1
    colors = np.full(nv, -1, dtype=np.int64)
    forbidden = np.full(nv + 1, -1, dtype=np.int64)
    for t in range(order.size):
        v = order[t]
        for a in range(vptr[v], vptr[v + 1]):
            r = vidx[a]
            for b in range(nptr[r], nptr[r + 1]):
                c = colors[nidx[b]]
                if c >= 0:
                    forbidden[c] = v
        c = 0
        while forbidden[c] == v:
            c += 1
        colors[v] = c
    return colors


_ONE = np.uint64(1)
# De Bruijn multiplication finds the index of a word's lowest set bit without branches
# (a data-dependent branch per vertex costs more than the rest of the work on a mesh).
_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
_SHIFT58 = np.uint64(58)
_DEBRUIJN_TABLE = np.zeros(64, dtype=np.int64)
for _i in range(64):
    _DEBRUIJN_TABLE[int(((1 << _i) * 0x03F79D71B4CB0A89 % 2**64) >> 58)] = _i


@kernel(nogil=True, inline="always")
def _lowest_zero(x):  # type: ignore[no-untyped-def]
    """``(index, bit)`` of the lowest zero bit of the uint64 ``x`` (``x`` is not all ones)."""
    y = ~x
    low = y & (~y + _ONE)
    return _DEBRUIJN_TABLE[(low * _DEBRUIJN) >> _SHIFT58], low


@kernel(nogil=True, inline="always")
def _color_one_word(vptr, vidx, mask1, colors, v):  # type: ignore[no-untyped-def]
    a0 = vptr[v]
    a1 = vptr[v + 1]
    m = np.uint64(0)
    for a in range(a0, a1):
        m |= mask1[vidx[a]]
    c, bit = _lowest_zero(m)
    colors[v] = c
    for a in range(a0, a1):
        mask1[vidx[a]] |= bit


@_order_kernel
def greedy_masks(vptr, vidx, nptr, nidx, order, n_words, natural):  # type: ignore[no-untyped-def]
    """First-fit colouring in ``order`` from per-net colour masks, in ``O(nnz * p / 64)``.

    ``masks[r]`` (``n_words`` 64-bit words) holds the colours already given to vertices on
    net ``r``. The colours forbidden for ``v`` are the OR of the masks of its nets, and the
    colour chosen is the lowest zero bit; then ``v``'s colour is set in each of its nets'
    masks. This reads every nonzero twice instead of every pair of nonzeros on a net, and
    gives exactly the colouring of :func:`greedy`. ``64 * n_words`` must exceed every
    colour used: an upper bound on the distance-2 degree, plus one, is enough. With
    ``natural`` true, ``order`` is ignored and the vertices are visited as 0, 1, 2, ...
    (saves reading an order array: a fifth of the time on a 2D mesh).
    """
    nv = vptr.size - 1
    n_nets = nptr.size - 1
    colors = np.empty(nv, dtype=np.int64)  # every vertex is visited: no fill needed
    full = ~np.uint64(0)
    if n_words == 1:  # fewer than 64 colours: one register per vertex
        mask1 = np.zeros(n_nets, dtype=np.uint64)
        if natural:
            for v in range(nv):
                _color_one_word(vptr, vidx, mask1, colors, v)
        else:
            for t in range(order.size):
                _color_one_word(vptr, vidx, mask1, colors, order[t])
        return colors
    n_visit = nv if natural else order.size
    masks = np.zeros((n_nets, n_words), dtype=np.uint64)
    acc = np.empty(n_words, dtype=np.uint64)
    live = 1  # words in use: colours < 64 * live so far
    for t in range(n_visit):
        v = t if natural else order[t]
        for k in range(live):
            acc[k] = 0
        for a in range(vptr[v], vptr[v + 1]):
            r = vidx[a]
            for k in range(live):
                acc[k] |= masks[r, k]
        word = live
        bit = _ONE
        c = 64 * live
        for k in range(live):
            if acc[k] != full:
                c, bit = _lowest_zero(acc[k])
                c += 64 * k
                word = k
                break
        colors[v] = c
        if word >= live:
            live = word + 1
        for a in range(vptr[v], vptr[v + 1]):
            masks[vidx[a], word] |= bit
    return colors


# -- indexed binary max-heap (ties: smaller vertex first) --------------------------------


@kernel(nogil=True, inline="always")
def _above(key, a, b):  # type: ignore[no-untyped-def]
    """Whether vertex ``a`` has priority over vertex ``b``."""
    return key[a] > key[b] or (key[a] == key[b] and a < b)


@_njit
def _sift_up(heap, pos, key, i):  # type: ignore[no-untyped-def]
    v = heap[i]
    while i > 0:
        parent = (i - 1) >> 1
        u = heap[parent]
        if not _above(key, v, u):
            break
        heap[i] = u
        pos[u] = i
        i = parent
    heap[i] = v
    pos[v] = i


@_njit
def _sift_down(heap, pos, key, i, size):  # type: ignore[no-untyped-def]
    v = heap[i]
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and _above(key, heap[child + 1], heap[child]):
            child += 1
        u = heap[child]
        if not _above(key, u, v):
            break
        heap[i] = u
        pos[u] = i
        i = child
    heap[i] = v
    pos[v] = i


@_njit
def _heap_build(key):  # type: ignore[no-untyped-def]
    n = key.size
    heap = np.arange(n, dtype=np.int64)
    pos = np.arange(n, dtype=np.int64)
    for i in range(n // 2 - 1, -1, -1):
        _sift_down(heap, pos, key, i, n)
    return heap, pos


@_njit
def _heap_pop(heap, pos, key, size):  # type: ignore[no-untyped-def]
    """Remove and return the top vertex; the caller decrements ``size``."""
    top = heap[0]
    pos[top] = -1
    last = size - 1
    if last > 0:
        heap[0] = heap[last]
        pos[heap[0]] = 0
        _sift_down(heap, pos, key, 0, last)
    return top


@_njit
def _heap_change(heap, pos, key, v, new_key, size):  # type: ignore[no-untyped-def]
    old = key[v]
    key[v] = new_key
    if new_key > old:
        _sift_up(heap, pos, key, pos[v])
    elif new_key < old:
        _sift_down(heap, pos, key, pos[v], size)


# -- bucket queue (smallest_last, incidence_degree, dynamic_largest_first) -----------------

# Vertices are kept in doubly linked lists, one per key value (``head[k]``, ``nxt``, ``prv``,
# ``bkt[v]`` = current key), so a key change by +-1 is O(1) and a whole order costs O(W).
# A vertex moved to a bucket goes to its front and is taken first: among equal keys, the
# vertex that reached that key most recently wins (last in, first out). Vertices are first
# inserted from the largest index down, so initially the smallest index is at the front.
# ``tests/coloring/test_orders.py`` replays this rule with Python lists.


@_njit
def _bucket_insert(head, nxt, prv, bkt, v, k):  # type: ignore[no-untyped-def]
    h = head[k]
    nxt[v] = h
    prv[v] = -1
    if h != -1:
        prv[h] = v
    head[k] = v
    bkt[v] = k


@_njit
def _bucket_remove(head, nxt, prv, bkt, v):  # type: ignore[no-untyped-def]
    p = prv[v]
    q = nxt[v]
    if p != -1:
        nxt[p] = q
    else:
        head[bkt[v]] = q
    if q != -1:
        prv[q] = p


@_njit
def _dynamic_order(vptr, vidx, nptr, nidx, key0, step, take_max, reverse):  # type: ignore[no-untyped-def]
    """Shared loop of the three degree-driven dynamic orders.

    Starting from keys ``key0``, repeatedly take the vertex of largest (``take_max``) or
    smallest key, then add ``step`` to the key of each of its distance-2 neighbours not yet
    taken. Returns the sequence taken, reversed when ``reverse``.
    """
    nv = vptr.size - 1
    n_keys = nv + 1  # keys stay within 0..nv-1 for every caller
    head = np.full(n_keys, -1, dtype=np.int64)
    nxt = np.empty(nv, dtype=np.int64)
    prv = np.empty(nv, dtype=np.int64)
    bkt = np.empty(nv, dtype=np.int64)
    top = 0 if take_max else n_keys - 1
    for v in range(nv - 1, -1, -1):
        k = key0[v]
        _bucket_insert(head, nxt, prv, bkt, v, k)
        if (take_max and k > top) or (not take_max and k < top):
            top = k
    mark = np.full(nv, -1, dtype=np.int64)
    done = np.zeros(nv, dtype=np.bool_)
    order = np.empty(nv, dtype=np.int64)
    for t in range(nv):
        if take_max:
            while head[top] == -1:
                top -= 1
        else:
            while head[top] == -1:
                top += 1
        v = head[top]
        _bucket_remove(head, nxt, prv, bkt, v)
        done[v] = True
        order[nv - 1 - t if reverse else t] = v
        mark[v] = v
        for a in range(vptr[v], vptr[v + 1]):
            r = vidx[a]
            for b in range(nptr[r], nptr[r + 1]):
                w = nidx[b]
                if mark[w] != v:
                    mark[w] = v
                    if not done[w]:
                        _bucket_remove(head, nxt, prv, bkt, w)
                        k = bkt[w] + step
                        _bucket_insert(head, nxt, prv, bkt, w, k)
                        if (take_max and k > top) or (not take_max and k < top):
                            top = k
    return order


@_order_kernel
def smallest_last(vptr, vidx, nptr, nidx, deg):  # type: ignore[no-untyped-def]
    """Smallest-last order (Matula and Beck 1983) on the distance-2 graph.

    Repeatedly removes a vertex of minimum degree in the remaining graph and returns the
    removal sequence reversed.
    """
    return _dynamic_order(vptr, vidx, nptr, nidx, deg, -1, False, True)


@_order_kernel
def incidence_degree(vptr, vidx, nptr, nidx):  # type: ignore[no-untyped-def]
    """Incidence-degree order: next is the vertex with most already-ordered neighbours."""
    key0 = np.zeros(vptr.size - 1, dtype=np.int64)
    return _dynamic_order(vptr, vidx, nptr, nidx, key0, 1, True, False)


@_order_kernel
def dynamic_largest_first(vptr, vidx, nptr, nidx, deg):  # type: ignore[no-untyped-def]
    """Dynamic largest-first order: next is the vertex with most not-yet-ordered neighbours."""
    return _dynamic_order(vptr, vidx, nptr, nidx, deg, -1, True, False)


# -- DSATUR ------------------------------------------------------------------------------

# Which colours each uncoloured vertex already sees among its distance-2 neighbours. Colours
# below 64 * n_words live in a bit table of shape (vertices, n_words); n_words covers every
# colour DSATUR can use (at most the largest degree + 1) unless that table would exceed
# SEEN_TABLE_BYTES, in which case larger colours go to an open-addressing hash set of
# ``vertex * (n + 1) + colour`` keys. Memory thus stays bounded on huge inputs, and the hash
# (slower) is only used when a huge input also needs many colours.

SEEN_TABLE_BYTES = 64 * 2**20
# The callers also keep the table within SEEN_BYTES_PER_INCIDENCE bytes per vertex-net
# incidence (BipartiteGraph.seen_table_bytes), so that its memory stays linear in the
# pattern's size: a dense line makes colours numerous, not the colours a vertex sees.
SEEN_BYTES_PER_INCIDENCE = 16
_EMPTY = -1


@_njit
def _hash_insert(table, k):  # type: ignore[no-untyped-def]
    """Insert ``k``; return True when it was not present. ``table`` size is a power of 2."""
    mask = table.size - 1
    h = (k * np.int64(0x5851F42D4C957F2D)) & np.int64(0x7FFFFFFFFFFFFFFF)
    i = (h >> 17) & mask
    while True:
        s = table[i]
        if s == k:
            return False
        if s == _EMPTY:
            table[i] = k
            return True
        i = (i + 1) & mask


@_njit
def _hash_grow(table):  # type: ignore[no-untyped-def]
    new = np.full(table.size * 2, _EMPTY, dtype=np.int64)
    for i in range(table.size):
        if table[i] != _EMPTY:
            _hash_insert(new, table[i])
    return new


@_order_kernel
def dsatur(vptr, vidx, nptr, nidx, deg, table_bytes=SEEN_TABLE_BYTES):  # type: ignore[no-untyped-def]
    """DSATUR (Brélaz 1979) on the distance-2 graph; returns ``(colors, sequence)``.

    The next vertex has the most distinct colours among its distance-2 neighbours
    (saturation), ties by larger distance-2 degree, then by smaller index -- the rule of
    networkx's ``strategy_saturation_largest_first``. It gets the smallest colour free among
    its neighbours, so first-fit greedy in ``sequence`` reproduces ``colors``.
    """
    nv = vptr.size - 1
    base = np.int64(0)
    for v in range(nv):
        if deg[v] > base:
            base = deg[v]
    base += 1  # colours used <= max degree + 1 = base
    n_words = (base + 63) // 64
    cap_words = max(np.int64(1), table_bytes // (8 * max(nv, 1)))
    if n_words > cap_words:
        n_words = cap_words
    n_bits = 64 * n_words
    # key = saturation * base + degree, saturation <= degree < base.
    key = deg.copy()
    heap, pos = _heap_build(key)
    size = nv
    colors = np.full(nv, -1, dtype=np.int64)
    seq = np.empty(nv, dtype=np.int64)
    forbidden = np.full(nv + 1, -1, dtype=np.int64)
    seen = np.zeros((nv, n_words), dtype=np.uint64)
    table = np.full(1024, _EMPTY, dtype=np.int64)
    n_high = 0
    slots = np.int64(nv + 1)
    one = np.uint64(1)
    for t in range(nv):
        v = _heap_pop(heap, pos, key, size)
        size -= 1
        seq[t] = v
        for a in range(vptr[v], vptr[v + 1]):
            r = vidx[a]
            for b in range(nptr[r], nptr[r + 1]):
                c = colors[nidx[b]]
                if c >= 0:
                    forbidden[c] = v
        c = 0
        while forbidden[c] == v:
            c += 1
        colors[v] = c
        # Every uncoloured neighbour now sees colour c; raise its saturation if c is new.
        word = c >> 6
        bit = one << np.uint64(c & 63)
        for a in range(vptr[v], vptr[v + 1]):
            r = vidx[a]
            for b in range(nptr[r], nptr[r + 1]):
                w = nidx[b]
                if colors[w] >= 0:
                    continue
                if c < n_bits:
                    if seen[w, word] & bit:
                        continue
                    seen[w, word] |= bit
                else:
                    if 2 * (n_high + 1) > table.size:
                        table = _hash_grow(table)
                    if not _hash_insert(table, w * slots + c):
                        continue
                    n_high += 1
                _heap_change(heap, pos, key, w, key[w] + base, size)
    return colors, seq


# -- tabu search (TabuCol) for a conflict-free colouring with k colours ------------------

# State, for k colours: ``gamma[v, c]`` = sum over the nets r of v of the number of vertices
# of colour c on r (v itself included once per net). Vertex v is in conflict when
# ``gamma[v, colors[v]] > (number of nets of v)``; the objective ``f`` is the number of
# conflicting pairs counted per net, sum_r sum_c C(count[r, c], 2), and moving v from c to
# c' changes it by ``gamma[v, c'] - (gamma[v, c] - nets(v))``. ``conf_list[:nconf]`` lists
# the conflicting vertices (``conf_pos`` = slot or -1). ``tabu[v, c] > it`` forbids moving v
# back to c until iteration ``it``.


@_njit
def tabu_init(vptr, vidx, nptr, nidx, colors, k, seed):  # type: ignore[no-untyped-def]
    """Build the tabu state for ``k`` colours from ``colors`` (updated in place).

    Vertices with colour -1 are first placed, one by one, in the colour with fewest
    conflicts (ties at random).
    """
    np.random.seed(seed)
    nv = vptr.size - 1
    gamma = np.zeros((nv, k), dtype=np.int32)
    for r in range(nptr.size - 1):
        for b in range(nptr[r], nptr[r + 1]):
            c = colors[nidx[b]]
            if c < 0:
                continue
            for b2 in range(nptr[r], nptr[r + 1]):
                gamma[nidx[b2], c] += 1
    for v in range(nv):
        if colors[v] >= 0:
            continue
        best = np.int64(1) << 40
        pick = 0
        ties = 0
        for c in range(k):
            g = gamma[v, c]
            if g < best:
                best, pick, ties = g, c, 1
            elif g == best:
                ties += 1
                if np.random.randint(ties) == 0:
                    pick = c
        colors[v] = pick
        for a in range(vptr[v], vptr[v + 1]):
            r = vidx[a]
            for b in range(nptr[r], nptr[r + 1]):
                gamma[nidx[b], pick] += 1
    conf_list = np.empty(nv, dtype=np.int64)
    conf_pos = np.full(nv, -1, dtype=np.int64)
    nconf = 0
    f = 0
    for v in range(nv):
        excess = gamma[v, colors[v]] - (vptr[v + 1] - vptr[v])
        f += excess
        if excess > 0:
            conf_pos[v] = nconf
            conf_list[nconf] = v
            nconf += 1
    return gamma, conf_list, conf_pos, nconf, f // 2


@_njit
def tabu_search(  # type: ignore[no-untyped-def]
    vptr,
    vidx,
    nptr,
    nidx,
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
    max_work,
    seed,
):
    """Run TabuCol moves until no conflict is left or a limit is reached.

    The limits: ``patience`` iterations without a new best objective (``best_f``, last
    lowered at iteration ``last_gain``), or about ``max_work`` candidate evaluations.

    Each iteration makes the best non-tabu move of a conflicting vertex to another colour
    (ties at random; a tabu move is allowed when it beats the best objective seen, the
    aspiration rule), then forbids the vertex's old colour for ``0.6 * nconf + rand(10)``
    iterations (Galinier and Hao 1999). Returns ``(f, nconf, it, best_f, last_gain)``; the
    state arrays are updated in place.
    """
    np.random.seed(seed)
    k = gamma.shape[1]
    work = 0
    while f > 0 and work < max_work and it - last_gain < patience:
        it += 1
        bd = np.int64(1) << 40
        bv = -1
        bc = -1
        ties = 0
        for t in range(nconf):
            v = conf_list[t]
            cv = colors[v]
            excess = gamma[v, cv] - (vptr[v + 1] - vptr[v])
            for c in range(k):
                if c == cv:
                    continue
                d = gamma[v, c] - excess
                if tabu[v, c] > it and f + d >= best_f:
                    continue
                if d < bd:
                    bd, bv, bc, ties = d, v, c, 1
                elif d == bd:
                    ties += 1
                    if np.random.randint(ties) == 0:
                        bv, bc = v, c
        work += nconf * k
        if bv < 0:  # every move is tabu: make a random one
            bv = conf_list[np.random.randint(nconf)]
            bc = np.random.randint(k - 1)
            if bc >= colors[bv]:
                bc += 1
            bd = gamma[bv, bc] - (gamma[bv, colors[bv]] - (vptr[bv + 1] - vptr[bv]))
        old = colors[bv]
        colors[bv] = bc
        f += bd
        if f < best_f:
            best_f = f
            last_gain = it
        tabu[bv, old] = it + np.random.randint(10) + (6 * nconf) // 10
        for a in range(vptr[bv], vptr[bv + 1]):
            r = vidx[a]
            for b in range(nptr[r], nptr[r + 1]):
                w = nidx[b]
                gamma[w, old] -= 1
                gamma[w, bc] += 1
        for a in range(vptr[bv], vptr[bv + 1]):
            r = vidx[a]
            work += nptr[r + 1] - nptr[r]
            for b in range(nptr[r], nptr[r + 1]):
                w = nidx[b]
                excess = gamma[w, colors[w]] - (vptr[w + 1] - vptr[w])
                if excess > 0 and conf_pos[w] < 0:
                    conf_pos[w] = nconf
                    conf_list[nconf] = w
                    nconf += 1
                elif excess == 0 and conf_pos[w] >= 0:
                    slot = conf_pos[w]
                    last = conf_list[nconf - 1]
                    conf_list[slot] = last
                    conf_pos[last] = slot
                    nconf -= 1
                    conf_pos[w] = -1
    return f, nconf, it, best_f, last_gain

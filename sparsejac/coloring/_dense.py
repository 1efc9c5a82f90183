"""Compiled kernels for patterns with *dense nets*: colouring in near-linear time.

A net (a row, for a column partition) on ``s`` vertices makes them pairwise distance-2
neighbours, so walking vertex -> net -> vertex costs ``s**2`` on that net alone: one dense row
of n entries costs a greedy pass, a degree computation or DSATUR ``n**2`` steps. The kernels
here walk only the *light* nets; the few *dense* nets (chosen by
:func:`sparsejac.coloring.graph.BipartiteGraph.dense_nets`) are never walked pair by pair:

* every dense net keeps the set of colours used on it as a two-level bit set (one bit per
  colour, one bit per full 64-bit word), so the smallest colour free on a vertex's dense
  nets and not taken by its light neighbours is found by leap-frogging between the sets
  (:func:`_next_free`), and recording a colour is ``O(1)`` per dense net;
* vertices are grouped by their *signature*, the set of dense nets they lie on (group 0:
  none). Every vertex of a group has the same neighbours on dense nets, so the part of a
  dynamic key that comes from dense nets (colours seen there, for DSATUR; ordered or
  remaining neighbours there, for the bucket orders) is one number per group, an *offset*,
  and an event on a dense net changes one offset per group instead of one key per vertex.

The *structure* (:func:`dense_structure`) holds, as ``int64`` arrays: ``hid`` (dense index
of each net or -1), ``hptr, hidx`` (the dense nets of each vertex), ``grp`` (group of each
vertex, numbered by first appearance), ``gptr, gidx`` (the signature of each group),
``hgptr, hgidx`` (the groups on each dense net, ascending), ``gsize`` (vertices on the union
of a group's dense nets) and ``lex`` (each vertex's neighbours through light nets that are
not on its dense nets). ``deg = gsize[grp] - 1 + lex`` is the distance-2 degree.

Costs, with ``W_light`` the sum of squared light-net sizes and ``k`` dense nets: structure
and degrees ``O(W_light + nnz + G * (dense incidences))`` for ``G`` groups; first-fit greedy
``O(W_light + nnz)`` plus the leap-frogs; DSATUR ``O(W_light (1 + k) + n G + n log n)`` in
the worst case (a colour class is walked again when its colour enters a dense net); the
bucket orders ``O(W_light + nnz + n G)``. Memory: ``k`` bit sets of ``n`` bits.

Results: greedy and DSATUR give exactly the colourings of :mod:`._kernels`; the degrees are
exact. The bucket orders (smallest last, incidence degree, dynamic largest first) keep their
rule -- the extreme key, ties to the vertex whose key changed last -- where a change through a
dense net counts for all of a group's vertices at once, after the changes through light nets
of the same step (groups in increasing number), and the vertices of a group keep their order
among themselves. Without dense nets this is exactly :func:`._kernels._dynamic_order`.
"""

from __future__ import annotations

import numpy as np

from sparsejac.coloring._kernels import (
    _EMPTY,
    SEEN_TABLE_BYTES,
    _above,
    _hash_grow,
    _hash_insert,
    _lowest_zero,
)
from sparsejac.kernels import kernel

__all__: list[str] = []

_njit = kernel(nogil=True)

_ONE = np.uint64(1)
_FULL = ~np.uint64(0)
_SIX = np.int64(6)


# -- structure: dense nets of each vertex, signature groups, light degrees ---------------


@_njit
def dense_structure(vptr, vidx, nptr, nidx, hid, n_dense, max_groups):  # type: ignore[no-untyped-def]
    """The group structure of the dense nets ``hid >= 0`` (see the module docstring).

    Returns ``(hptr, hidx, grp, gptr, gidx, hgptr, hgidx, gsize, lex)``; with more than
    ``max_groups`` groups it stops there (``O(nnz)``) and ``gsize`` and ``lex`` are empty.
    """
    nv = vptr.size - 1
    n_nets = nptr.size - 1
    hptr = np.zeros(nv + 1, dtype=np.int64)
    for v in range(nv):
        c = 0
        for a in range(vptr[v], vptr[v + 1]):
            if hid[vidx[a]] >= 0:
                c += 1
        hptr[v + 1] = hptr[v] + c
    hidx = np.empty(hptr[nv], dtype=np.int64)
    for v in range(nv):
        k = hptr[v]
        for a in range(vptr[v], vptr[v + 1]):
            h = hid[vidx[a]]
            if h >= 0:
                # insertion sort: signatures are compared as sorted lists
                j = k
                while j > hptr[v] and hidx[j - 1] > h:
                    hidx[j] = hidx[j - 1]
                    j -= 1
                hidx[j] = h
                k += 1
    # Groups by signature, numbered by first appearance: an open-addressing table of
    # (hash -> first group), chained through `same` for hashes that collide.
    grp = np.zeros(nv, dtype=np.int64)
    rep = np.empty(nv + 1, dtype=np.int64)  # a vertex of each group
    rep[0] = -1
    n_groups = 1
    cap = 64
    keys = np.full(cap, _EMPTY, dtype=np.int64)
    first = np.full(cap, -1, dtype=np.int64)
    same = np.full(nv + 1, -1, dtype=np.int64)
    used = 0
    for v in range(nv):
        a0 = hptr[v]
        a1 = hptr[v + 1]
        if a0 == a1:
            continue
        h = np.int64(1469598103934665603)
        for a in range(a0, a1):
            h = (h ^ (hidx[a] + 1)) * np.int64(1099511628211)
        h &= np.int64(0x3FFFFFFFFFFFFFFF)
        if 2 * (used + 1) > cap:  # grow and rehash
            new_cap = cap * 2
            nk = np.full(new_cap, _EMPTY, dtype=np.int64)
            nf = np.full(new_cap, -1, dtype=np.int64)
            for s in range(cap):
                if keys[s] != _EMPTY:
                    i = (keys[s] * np.int64(0x5851F42D4C957F2D) >> 17) & (new_cap - 1)
                    while nk[i] != _EMPTY:
                        i = (i + 1) & (new_cap - 1)
                    nk[i] = keys[s]
                    nf[i] = first[s]
            keys, first, cap = nk, nf, new_cap
        i = (h * np.int64(0x5851F42D4C957F2D) >> 17) & (cap - 1)
        while keys[i] != _EMPTY and keys[i] != h:
            i = (i + 1) & (cap - 1)
        g = -1
        if keys[i] == h:
            cand = first[i]
            last = cand
            while cand != -1:
                u = rep[cand]
                if hptr[u + 1] - hptr[u] == a1 - a0:
                    equal = True
                    for t in range(a1 - a0):
                        if hidx[hptr[u] + t] != hidx[a0 + t]:
                            equal = False
                            break
                    if equal:
                        g = cand
                        break
                last = cand
                cand = same[cand]
            if g < 0:
                g = n_groups
                n_groups += 1
                rep[g] = v
                same[last] = g
        else:
            keys[i] = h
            used += 1
            g = n_groups
            n_groups += 1
            rep[g] = v
            first[i] = g
        grp[v] = g
    if n_groups > max_groups:  # too many groups: the caller keeps fewer dense nets
        empty = np.zeros(0, dtype=np.int64)
        return hptr, hidx, grp, np.zeros(n_groups + 1, dtype=np.int64), empty, \
            np.zeros(n_dense + 1, dtype=np.int64), empty, empty, empty
    gptr = np.zeros(n_groups + 1, dtype=np.int64)
    for g in range(1, n_groups):
        u = rep[g]
        gptr[g + 1] = gptr[g] + hptr[u + 1] - hptr[u]
    gidx = np.empty(gptr[n_groups], dtype=np.int64)
    for g in range(1, n_groups):
        u = rep[g]
        for t in range(hptr[u + 1] - hptr[u]):
            gidx[gptr[g] + t] = hidx[hptr[u] + t]
    hgptr = np.zeros(n_dense + 1, dtype=np.int64)
    for a in range(gidx.size):
        hgptr[gidx[a] + 1] += 1
    for h in range(n_dense):
        hgptr[h + 1] += hgptr[h]
    hgidx = np.empty(gidx.size, dtype=np.int64)
    fill = hgptr[:-1].copy()
    for g in range(1, n_groups):
        for a in range(gptr[g], gptr[g + 1]):
            h = gidx[a]
            hgidx[fill[h]] = g
            fill[h] += 1
    # The net of each dense index, then the size of the union of each group's dense nets.
    hnet = np.empty(n_dense, dtype=np.int64)
    for r in range(n_nets):
        if hid[r] >= 0:
            hnet[hid[r]] = r
    gsize = np.zeros(n_groups, dtype=np.int64)
    mark = np.full(nv, -1, dtype=np.int64)
    for g in range(1, n_groups):
        s = 0
        for a in range(gptr[g], gptr[g + 1]):
            r = hnet[gidx[a]]
            for b in range(nptr[r], nptr[r + 1]):
                w = nidx[b]
                if mark[w] != g:
                    mark[w] = g
                    s += 1
        gsize[g] = s
    # Light neighbours not on one of the vertex's dense nets.
    lex = np.zeros(nv, dtype=np.int64)
    hmark = np.full(n_dense, -1, dtype=np.int64)
    mark[:] = -1
    for v in range(nv):
        for a in range(hptr[v], hptr[v + 1]):
            hmark[hidx[a]] = v
        mark[v] = v
        d = 0
        for a in range(vptr[v], vptr[v + 1]):
            r = vidx[a]
            if hid[r] >= 0:
                continue
            for b in range(nptr[r], nptr[r + 1]):
                w = nidx[b]
                if mark[w] == v:
                    continue
                mark[w] = v
                shared = False
                for t in range(hptr[w], hptr[w + 1]):
                    if hmark[hidx[t]] == v:
                        shared = True
                        break
                if not shared:
                    d += 1
        lex[v] = d
    return hptr, hidx, grp, gptr, gidx, hgptr, hgidx, gsize, lex


# -- colour sets of the dense nets ---------------------------------------------------------


@_njit
def _lowest_set(y):  # type: ignore[no-untyped-def]
    """Index of the lowest set bit of the nonzero uint64 ``y``."""
    return _lowest_zero(~y)[0]


@_njit
def _has(bits0, h, c):  # type: ignore[no-untyped-def]
    return (bits0[h, c >> _SIX] >> np.uint64(c & 63)) & _ONE


@_njit
def _put(bits0, full1, h, c):  # type: ignore[no-untyped-def]
    w = c >> _SIX
    bits0[h, w] |= _ONE << np.uint64(c & 63)
    if bits0[h, w] == _FULL:
        full1[h, w >> _SIX] |= _ONE << np.uint64(w & 63)


@_njit
def _next_free(bits0, full1, h, c):  # type: ignore[no-untyped-def]
    """Smallest colour ``>= c`` not used on dense net ``h``."""
    w = c >> _SIX
    x = ~bits0[h, w] & (_FULL << np.uint64(c & 63))
    if x != 0:
        return (w << _SIX) + _lowest_set(x)
    w += 1
    u = w >> _SIX
    y = ~full1[h, u] & (_FULL << np.uint64(w & 63))
    while y == 0:
        u += 1
        y = ~full1[h, u]
    w = (u << _SIX) + _lowest_set(y)
    return (w << _SIX) + _lowest_set(~bits0[h, w])


@_njit
def _colour_sets(n_sets, n_colors):  # type: ignore[no-untyped-def]
    """``n_sets`` empty sets of colours ``< n_colors``: ``(bits, full words, lowest free)``."""
    words = (n_colors >> 6) + 2
    return (np.zeros((n_sets, words), dtype=np.uint64),
            np.zeros((n_sets, (words >> 6) + 2), dtype=np.uint64),
            np.zeros(n_sets, dtype=np.int64))


@_njit
def _add(bits0, full1, low, h, c):  # type: ignore[no-untyped-def]
    """Put colour ``c`` in set ``h`` (``low[h]``: its smallest free colour)."""
    _put(bits0, full1, h, c)
    if c == low[h]:
        low[h] = _next_free(bits0, full1, h, c + 1)


@_njit
def _discard(bits0, full1, low, h, c):  # type: ignore[no-untyped-def]
    w = c >> _SIX
    bits0[h, w] &= ~(_ONE << np.uint64(c & 63))
    full1[h, w >> _SIX] &= ~(_ONE << np.uint64(w & 63))
    if c < low[h]:
        low[h] = c


@_njit
def _pick(v, hptr, hidx, bits0, full1, low, forbidden):  # type: ignore[no-untyped-def]
    """Smallest colour free on ``v``'s dense nets with ``forbidden[c] != v``."""
    c = 0
    while True:
        moved = True
        while moved:
            moved = False
            for a in range(hptr[v], hptr[v + 1]):
                h = hidx[a]
                c2 = low[h] if c <= low[h] else _next_free(bits0, full1, h, c)
                if c2 != c:
                    c = c2
                    moved = True
        if forbidden[c] == v:
            c += 1
            continue
        return c


@_njit
def _forbid_light(v, vptr, vidx, nptr, nidx, hid, colors, forbidden):  # type: ignore[no-untyped-def]
    for a in range(vptr[v], vptr[v + 1]):
        r = vidx[a]
        if hid[r] >= 0:
            continue
        for b in range(nptr[r], nptr[r + 1]):
            c = colors[nidx[b]]
            if c >= 0:
                forbidden[c] = v


# -- first-fit greedy --------------------------------------------------------------------


@_njit
def dense_greedy(vptr, vidx, nptr, nidx, hid, hptr, hidx, n_dense, order, natural):  # type: ignore[no-untyped-def]
    """First-fit colouring in ``order`` (or 0, 1, ... with ``natural``); = ``greedy``."""
    nv = vptr.size - 1
    colors = np.full(nv, -1, dtype=np.int64)
    forbidden = np.full(nv + 2, -1, dtype=np.int64)
    bits0, full1, low = _colour_sets(n_dense, nv + 1)
    n_visit = nv if natural else order.size
    for t in range(n_visit):
        v = t if natural else order[t]
        _forbid_light(v, vptr, vidx, nptr, nidx, hid, colors, forbidden)
        c = _pick(v, hptr, hidx, bits0, full1, low, forbidden)
        colors[v] = c
        for a in range(hptr[v], hptr[v + 1]):
            h = hidx[a]
            _put(bits0, full1, h, c)
            if c == low[h]:
                low[h] = _next_free(bits0, full1, h, c + 1)
    return colors


# -- heaps over segments (one segment per group) --------------------------------------------


@_njit
def _seg_up(heap, pos, key, s, i):  # type: ignore[no-untyped-def]
    v = heap[i]
    while i > s:
        parent = s + ((i - s - 1) >> 1)
        u = heap[parent]
        if not _above(key, v, u):
            break
        heap[i] = u
        pos[u] = i
        i = parent
    heap[i] = v
    pos[v] = i


@_njit
def _seg_down(heap, pos, key, s, i, size):  # type: ignore[no-untyped-def]
    v = heap[i]
    end = s + size
    while True:
        child = s + 2 * (i - s) + 1
        if child >= end:
            break
        if child + 1 < end and _above(key, heap[child + 1], heap[child]):
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
def _group_segments(grp, n_groups):  # type: ignore[no-untyped-def]
    """``(start, count, members)``: each group's vertices, ascending, in one array."""
    nv = grp.size
    count = np.zeros(n_groups, dtype=np.int64)
    for v in range(nv):
        count[grp[v]] += 1
    start = np.zeros(n_groups + 1, dtype=np.int64)
    for g in range(n_groups):
        start[g + 1] = start[g] + count[g]
    members = np.empty(nv, dtype=np.int64)
    fill = start[:-1].copy()
    for v in range(nv):
        members[fill[grp[v]]] = v
        fill[grp[v]] += 1
    return start, count, members


# -- DSATUR ------------------------------------------------------------------------------


@_njit
def dense_dsatur(vptr, vidx, nptr, nidx, hid, hptr, hidx, grp, gptr, gidx, hgptr, hgidx,  # type: ignore[no-untyped-def]
                 deg, table_bytes=SEEN_TABLE_BYTES):
    """DSATUR with dense nets; returns ``(colors, sequence)``, those of ``_kernels.dsatur``.

    The saturation of an uncoloured vertex w in group g is ``|U_g| + x(w)``: ``U_g`` the
    colours used on g's dense nets (``off[g]`` counts them) and ``x(w)`` the colours of its
    light neighbours outside ``U_g``. Each group keeps its vertices in a heap keyed by ``x *
    base + degree``; the next vertex is the best group top by ``(off + x) * base + degree``,
    ties to the smaller index. When a colour c enters ``U_g``, the vertices of g that
    already saw c through a light net lose one from ``x``: they are the light neighbours of
    the vertices coloured c so far (a walk of c's colour class).
    """
    nv = vptr.size - 1
    n_groups = gptr.size - 1
    n_dense = hgptr.size - 1
    base = np.int64(0)
    for v in range(nv):
        if deg[v] > base:
            base = deg[v]
    base += 1
    n_words = (base + 63) // 64
    cap_words = max(np.int64(1), table_bytes // (8 * max(nv, 1)))
    if n_words > cap_words:
        n_words = cap_words
    n_bits = 64 * n_words
    key = deg.copy()
    start, size, heap = _group_segments(grp, n_groups)
    pos = np.empty(nv, dtype=np.int64)
    for g in range(n_groups):
        s = start[g]
        for i in range(s, s + size[g]):
            pos[heap[i]] = i
        for i in range(s + size[g] // 2 - 1, s - 1, -1):
            _seg_down(heap, pos, key, s, i, size[g])
    off = np.zeros(n_groups, dtype=np.int64)
    gmark = np.full(n_groups, -1, dtype=np.int64)
    gained = np.full(n_groups, -1, dtype=np.int64)
    wmark = np.full(nv, -1, dtype=np.int64)
    colors = np.full(nv, -1, dtype=np.int64)
    seq = np.empty(nv, dtype=np.int64)
    forbidden = np.full(nv + 2, -1, dtype=np.int64)
    bits0, full1, low = _colour_sets(n_dense, base + 1)
    class_head = np.full(base + 1, -1, dtype=np.int64)
    class_next = np.full(nv, -1, dtype=np.int64)
    seen = np.zeros((nv, n_words), dtype=np.uint64)
    table = np.full(1024, _EMPTY, dtype=np.int64)
    n_high = 0
    slots = np.int64(nv + 1)
    for t in range(nv):
        # the best group top: (off + x) * base + degree, ties to the smaller index
        v = -1
        best = np.int64(-1)
        for g in range(n_groups):
            if size[g] == 0:
                continue
            u = heap[start[g]]
            k = key[u] + off[g] * base
            if k > best or (k == best and u < v):
                best = k
                v = u
        gv = grp[v]
        s = start[gv]
        last = s + size[gv] - 1
        pos[v] = -1
        if last > s:
            heap[s] = heap[last]
            pos[heap[s]] = s
            _seg_down(heap, pos, key, s, s, size[gv] - 1)
        size[gv] -= 1
        seq[t] = v
        _forbid_light(v, vptr, vidx, nptr, nidx, hid, colors, forbidden)
        c = _pick(v, hptr, hidx, bits0, full1, low, forbidden)
        colors[v] = c
        # c enters v's dense nets: the groups on them that did not have c gain it
        gain = False
        for a in range(hptr[v], hptr[v + 1]):
            h = hidx[a]
            for j in range(hgptr[h], hgptr[h + 1]):
                g = hgidx[j]
                if gmark[g] == t:
                    continue
                gmark[g] = t
                if size[g] == 0:
                    continue
                present = False
                for b in range(gptr[g], gptr[g + 1]):
                    if _has(bits0, gidx[b], c):
                        present = True
                        break
                if not present:
                    gained[g] = t
                    off[g] += 1
                    gain = True
        for a in range(hptr[v], hptr[v + 1]):
            h = hidx[a]
            _put(bits0, full1, h, c)
            if c == low[h]:
                low[h] = _next_free(bits0, full1, h, c + 1)
        if gain:  # their vertices that saw c through a light net: x -= 1
            u = class_head[c]
            while u != -1:
                for a in range(vptr[u], vptr[u + 1]):
                    r = vidx[a]
                    if hid[r] >= 0:
                        continue
                    for b in range(nptr[r], nptr[r + 1]):
                        w = nidx[b]
                        if colors[w] < 0 and wmark[w] != t and gained[grp[w]] == t:
                            wmark[w] = t
                            key[w] -= base
                            g = grp[w]
                            _seg_down(heap, pos, key, start[g], pos[w], size[g])
                u = class_next[u]
        class_next[v] = class_head[c]
        class_head[c] = v
        # light neighbours see c: x += 1 where c is new to them and not on their dense nets
        word = c >> 6
        bit = _ONE << np.uint64(c & 63)
        for a in range(vptr[v], vptr[v + 1]):
            r = vidx[a]
            if hid[r] >= 0:
                continue
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
                on_dense = False
                for d in range(hptr[w], hptr[w + 1]):
                    if _has(bits0, hidx[d], c):
                        on_dense = True
                        break
                if on_dense:
                    continue
                key[w] += base
                g = grp[w]
                _seg_up(heap, pos, key, start[g], pos[w])
    return colors, seq


# -- bucket orders -----------------------------------------------------------------------


@_njit
def dense_dynamic_order(vptr, vidx, nptr, nidx, hid, hptr, hidx, grp, gptr, hgptr, hgidx,  # type: ignore[no-untyped-def]
                        x0, xmax, off0, step, take_max, reverse):
    """Smallest last, incidence degree or dynamic largest first with dense nets.

    A vertex's key is ``off[g] + x``: ``off[g]`` counts its neighbours on its group's dense
    nets (ordered or remaining, depending on the order) and ``x`` the others. Each group
    keeps bucket lists by ``x`` (last in, first out); taking a vertex moves its light
    neighbours outside its dense nets one bucket (in walk order) and then adds ``step`` to
    the offset of every group on its dense nets (in increasing group number), which stamps
    the group with the current time. The vertex taken has the extreme key, then the latest
    of (its own last move, its group's last shift), then the latest own move.
    """
    nv = vptr.size - 1
    n_groups = gptr.size - 1
    n_dense = hgptr.size - 1
    span = np.zeros(n_groups, dtype=np.int64)
    for v in range(nv):
        g = grp[v]
        if xmax[v] + 2 > span[g]:
            span[g] = xmax[v] + 2
    span[0] = nv + 1
    hbase = np.zeros(n_groups + 1, dtype=np.int64)
    for g in range(n_groups):
        hbase[g + 1] = hbase[g] + span[g]
    head = np.full(hbase[n_groups], -1, dtype=np.int64)
    nxt = np.empty(nv, dtype=np.int64)
    prv = np.empty(nv, dtype=np.int64)
    bkt = np.empty(nv, dtype=np.int64)
    own = np.empty(nv, dtype=np.int64)
    count = np.zeros(n_groups, dtype=np.int64)
    top = np.zeros(n_groups, dtype=np.int64)
    if take_max:
        for g in range(n_groups):
            top[g] = span[g] - 1
    shift = np.full(n_groups, -1, dtype=np.int64)
    off = off0.copy()
    clock = np.int64(0)
    for v in range(nv - 1, -1, -1):
        g = grp[v]
        _insert(head, nxt, prv, bkt, hbase[g], v, x0[v])
        own[v] = clock
        clock += 1
        count[g] += 1
    mark = np.full(nv, -1, dtype=np.int64)
    hmark = np.full(n_dense, -1, dtype=np.int64)
    gmark = np.full(n_groups, -1, dtype=np.int64)
    shifted = np.empty(n_groups, dtype=np.int64)
    done = np.zeros(nv, dtype=np.bool_)
    order = np.empty(nv, dtype=np.int64)
    for t in range(nv):
        v = -1
        bk = np.int64(0)
        be = np.int64(0)
        for g in range(n_groups):
            if count[g] == 0:
                continue
            if take_max:
                while head[hbase[g] + top[g]] == -1:
                    top[g] -= 1
            else:
                while head[hbase[g] + top[g]] == -1:
                    top[g] += 1
            u = head[hbase[g] + top[g]]
            k = off[g] + top[g]
            e = max(own[u], shift[g])
            if v < 0 or (k > bk if take_max else k < bk) or (
                    k == bk and (e > be or (e == be and own[u] > own[v]))):
                v, bk, be = u, k, e
        g = grp[v]
        _remove(head, nxt, prv, bkt, hbase[g], v)
        count[g] -= 1
        done[v] = True
        order[nv - 1 - t if reverse else t] = v
        for a in range(hptr[v], hptr[v + 1]):
            hmark[hidx[a]] = v
        mark[v] = v
        for a in range(vptr[v], vptr[v + 1]):
            r = vidx[a]
            if hid[r] >= 0:
                continue
            for b in range(nptr[r], nptr[r + 1]):
                w = nidx[b]
                if mark[w] == v:
                    continue
                mark[w] = v
                if done[w]:
                    continue
                shared = False
                for d in range(hptr[w], hptr[w + 1]):
                    if hmark[hidx[d]] == v:
                        shared = True
                        break
                if shared:
                    continue
                gw = grp[w]
                _remove(head, nxt, prv, bkt, hbase[gw], w)
                k = bkt[w] + step
                _insert(head, nxt, prv, bkt, hbase[gw], w, k)
                own[w] = clock
                clock += 1
                if (take_max and k > top[gw]) or (not take_max and k < top[gw]):
                    top[gw] = k
        n_shift = 0
        for a in range(hptr[v], hptr[v + 1]):
            h = hidx[a]
            for j in range(hgptr[h], hgptr[h + 1]):
                g = hgidx[j]
                if gmark[g] != t:
                    gmark[g] = t
                    i = n_shift  # insertion sort: the groups shift in increasing number
                    while i > 0 and shifted[i - 1] > g:
                        shifted[i] = shifted[i - 1]
                        i -= 1
                    shifted[i] = g
                    n_shift += 1
        for i in range(n_shift):
            g = shifted[i]
            off[g] += step
            shift[g] = clock
            clock += 1
    return order


@_njit
def _insert(head, nxt, prv, bkt, base, v, k):  # type: ignore[no-untyped-def]
    h = head[base + k]
    nxt[v] = h
    prv[v] = -1
    if h != -1:
        prv[h] = v
    head[base + k] = v
    bkt[v] = k


@_njit
def _remove(head, nxt, prv, bkt, base, v):  # type: ignore[no-untyped-def]
    p = prv[v]
    q = nxt[v]
    if p != -1:
        nxt[p] = q
    else:
        head[base + bkt[v]] = q
    if q != -1:
        prv[q] = p

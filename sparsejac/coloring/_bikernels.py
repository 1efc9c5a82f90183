"""Compiled kernels of the bidirectional colouring: star bicolouring, recoverability, gather.

The *augmented graph* ``H = [[0, Jᵀ], [J, 0]]`` of an m×n pattern is bipartite: its vertices
are the n columns (numbered ``0..n-1``) and the m rows (numbered ``n..n+m-1``), and its
edges are the structural nonzeros. The kernels read it from three ``int64`` arrays:

* ``ptr, adj`` -- for each vertex, its neighbours (rows of a column from the CSC arrays,
  shifted by n; columns of a row from the CSR arrays);
* ``eid`` -- beside each neighbour, the CSR position of the nonzero that joins them (the
  *edge id*), and ``rows``, ``cols`` -- the two ends of every edge id.

Colours are numbered separately on each side (forward colours for columns, reverse colours
for rows), from 0; -1 is the *neutral* colour (the vertex is in no seed). A forward colour
and a reverse colour never conflict, so two adjacent vertices are always distinct.

Recovery (Gebremedhin, Manne and Pothen 2005, section 5): the nonzero ``(i, j)`` is read
from ``B = J @ S`` at ``B[i, colour(j)]`` when column j is coloured and no other column of
row i has its colour, or from ``C = W @ J`` at ``C[colour(i), j]`` when row i is coloured
and no other row of column j has its colour. A bicolouring is valid when every nonzero is
readable from B or from C. All kernels are ``numba.njit(cache=True)`` on ``int64`` arrays.
"""

from __future__ import annotations

import numpy as np

from sparsejac.coloring._dense import _add, _colour_sets, _discard, _next_free
from sparsejac.kernels import kernel

__all__: list[str] = []

_njit = kernel(nogil=True)


# -- star bicolouring -------------------------------------------------------------------


@_njit
def _big_vertices(ptr, big_min, max_big):  # type: ignore[no-untyped-def]
    """Index among the *big* vertices (degree >= big_min; the max_big largest), else -1."""
    nv = ptr.size - 1
    deg = np.empty(nv, dtype=np.int64)
    n = 0
    for v in range(nv):
        deg[v] = ptr[v + 1] - ptr[v]
        if deg[v] >= big_min:
            n += 1
    big = np.full(nv, -1, dtype=np.int64)
    if n == 0 or max_big <= 0:
        return big, 0
    by_degree = np.argsort(-deg, kind="mergesort")
    k = min(n, max_big)
    chosen = np.sort(by_degree[:k])
    for i in range(k):
        big[chosen[i]] = i
    return big, k


@_njit
def _slot_find(key, val, k):  # type: ignore[no-untyped-def]
    mask = key.size - 1
    i = ((k * np.int64(0x5851F42D4C957F2D)) >> 17) & mask
    while True:
        if key[i] == k:
            return val[i]
        if key[i] == -1:
            return -1
        i = (i + 1) & mask


@_njit
def _slot_add(key, val, k, s):  # type: ignore[no-untyped-def]
    mask = key.size - 1
    i = ((k * np.int64(0x5851F42D4C957F2D)) >> 17) & mask
    while key[i] != -1:
        i = (i + 1) & mask
    key[i] = k
    val[i] = s


@_njit
def _slot_grow(key, val):  # type: ignore[no-untyped-def]
    nk = np.full(key.size * 2, -1, dtype=np.int64)
    nv = np.empty(key.size * 2, dtype=np.int64)
    for i in range(key.size):
        if key[i] != -1:
            _slot_add(nk, nv, key[i], val[i])
    return nk, nv


#: star_bicolor's defaults: vertices of at least BIG_MIN neighbours (at most MAX_BIG of them)
#: keep bit sets (callers pass them: a numba call relying on defaults takes its slow path)
BIG_MIN, MAX_BIG = 256, 64


@kernel(nogil=True, interpret=True)  # one greedy pass: tiny inputs may run interpreted
def star_bicolor(ptr, adj, eid, rows, cols, n_cols, order, implicit, shared, limit,  # type: ignore[no-untyped-def]
                 big_min=BIG_MIN, max_big=MAX_BIG):
    """Greedy star colouring of the augmented graph in ``order``; colours numbered per side.

    Follows Gebremedhin, Manne, Tarafdar and Pothen (2007), Algorithm 4.1 (star colouring
    with 2-coloured stars kept in a ``star``/``hub`` structure, as SMC's ``star_coloring``),
    on the bipartite graph H, where a path on four vertices alternates sides, so every
    colour a vertex must avoid is a colour of its own side.

    With ``implicit`` (ColPack's implicit covering), a vertex whose edges all have a
    coloured end when its turn comes is skipped and stays neutral (-1); then an uncoloured
    neighbour ``w`` of the vertex being coloured may end neutral, so the vertex also avoids
    every colour among ``w``'s coloured neighbours (they are read through ``w``'s line).

    Instead of walking the neighbours of a neighbour, each vertex keeps the distinct colours
    of its coloured neighbours in *slots* (colour, first edge to that colour, count), so a
    step costs the number of distinct colours around a neighbour, not its degree. A *big*
    vertex (degree at least ``big_min``; the ``max_big`` largest) can gather many colours
    (a dense row in a bad order: one per column), so it also keeps two bit sets of colours
    -- all its slots', and those of its slots with one edge whose star has the other end as
    hub -- and a hash from colour to slot: a neighbour's constraints through it are then one
    set each, and the colour chosen is the smallest outside the stamped colours and these
    sets (leap-frogging between them), so no step scans a big vertex's slots.

    With ``shared``, columns and rows draw their colours from one sequence, as in a
    symmetric star colouring of H (SMC's ``star_coloring``): a vertex then also avoids its
    neighbours' colours, and may open a colour that only the other side used so far. The
    caller renumbers each side; separate sequences (the default) never use more colours.

    Returns ``(color, n_side)``: colours (-1 for neutral) and the colour count per side
    ``[columns, rows]`` (with ``shared``, ``n_side[0]`` counts both); ``n_side[0] +
    n_side[1] > limit`` means the pass stopped early (more than ``limit`` colours) and
    ``color`` is incomplete.
    """
    nv = ptr.size - 1
    color = np.full(nv, -1, dtype=np.int64)
    width = limit + 2
    forb = np.full((2, width), -1, dtype=np.int64)  # forb[side, c] == v: v must avoid c
    first_v = np.full((2, width), -1, dtype=np.int64)  # first_v[side, c] == v: v has ...
    first_w = np.full((2, width), -1, dtype=np.int64)  # ... neighbour first_w of colour c
    first_e = np.full((2, width), -1, dtype=np.int64)  # through edge first_e
    treated = np.full(nv, -1, dtype=np.int64)
    n_slot = np.zeros(nv, dtype=np.int64)
    s_col = np.empty(adj.size, dtype=np.int64)
    s_edge = np.empty(adj.size, dtype=np.int64)
    s_cnt = np.empty(adj.size, dtype=np.int64)
    star = np.full(rows.size, -1, dtype=np.int64)
    hub = np.empty(rows.size, dtype=np.int64)
    n_stars = 0
    n_side = np.zeros(2, dtype=np.int64)
    big, n_big = _big_vertices(ptr, big_min, max_big)
    all0, all1, all_low = _colour_sets(n_big, width)  # colours of a big vertex's slots
    hub0, hub1, hub_low = _colour_sets(n_big, width)  # ... of its one-edge hubbed slots
    h_key = np.full(1024, -1, dtype=np.int64)  # (big index, colour) -> slot
    h_val = np.empty(1024, dtype=np.int64)
    n_keys = 0
    most = 0
    for v in range(nv):
        most = max(most, ptr[v + 1] - ptr[v])
    reg_kind = np.empty(2 * most + 2, dtype=np.int64)  # sets registered for v: (kind, big)
    reg_big = np.empty(2 * most + 2, dtype=np.int64)
    for t in range(order.size):
        v = order[t]
        a0 = ptr[v]
        a1 = ptr[v + 1]
        if a0 == a1:
            continue  # an empty row or column: neutral
        sv = 0 if (shared or v < n_cols) else 1
        so = 0 if shared else 1 - sv
        if implicit:
            uncovered = False
            for a in range(a0, a1):
                if color[adj[a]] < 0:
                    uncovered = True
                    break
            if not uncovered:
                continue
        n_reg = 0
        for a in range(a0, a1):
            w = adj[a]
            cw = color[w]
            if cw < 0:
                if implicit:
                    if big[w] >= 0:
                        reg_kind[n_reg] = 0
                        reg_big[n_reg] = big[w]
                        n_reg += 1
                    else:
                        for s in range(ptr[w], ptr[w] + n_slot[w]):
                            forb[sv, s_col[s]] = v
                continue
            if shared:
                forb[sv, cw] = v
            if first_v[so, cw] == v:
                # v has two neighbours, q and w, of colour cw: v will be the hub of a star
                # with spokes q and w, so no other neighbour of q or w may share v's colour.
                q = first_w[so, cw]
                if treated[q] != v:
                    if big[q] >= 0:
                        reg_kind[n_reg] = 0
                        reg_big[n_reg] = big[q]
                        n_reg += 1
                    else:
                        for s in range(ptr[q], ptr[q] + n_slot[q]):
                            forb[sv, s_col[s]] = v
                    treated[q] = v
                if treated[w] != v:
                    if big[w] >= 0:
                        reg_kind[n_reg] = 0
                        reg_big[n_reg] = big[w]
                        n_reg += 1
                    else:
                        for s in range(ptr[w], ptr[w] + n_slot[w]):
                            forb[sv, s_col[s]] = v
                    treated[w] = v
            else:
                first_v[so, cw] = v
                first_w[so, cw] = w
                first_e[so, cw] = eid[a]
                # w is a spoke of stars whose hubs are its unique neighbours of a colour:
                # v must avoid those hubs' colours.
                if big[w] >= 0:
                    reg_kind[n_reg] = 1
                    reg_big[n_reg] = big[w]
                    n_reg += 1
                else:
                    for s in range(ptr[w], ptr[w] + n_slot[w]):
                        if s_cnt[s] == 1:
                            e = s_edge[s]
                            x = rows[e] + n_cols if w < n_cols else cols[e]
                            if hub[star[e]] == x:
                                forb[sv, s_col[s]] = v
        c = 0
        while True:
            moved = True
            while moved:
                moved = False
                for i in range(n_reg):
                    b = reg_big[i]
                    if reg_kind[i] == 0:
                        c2 = all_low[b] if c <= all_low[b] else _next_free(all0, all1, b, c)
                    else:
                        c2 = hub_low[b] if c <= hub_low[b] else _next_free(hub0, hub1, b, c)
                    if c2 != c:
                        c = c2
                        moved = True
            if forb[sv, c] == v:
                c += 1
                continue
            break
        color[v] = c
        if c + 1 > n_side[sv]:
            n_side[sv] = c + 1
            if n_side[0] + n_side[1] > limit:
                return color, n_side
        # Grow the stars around v, and record v's colour in each neighbour's slots.
        bv = big[v]
        for a in range(a0, a1):
            w = adj[a]
            cw = color[w]
            e = eid[a]
            bw = big[w]
            found = -1
            if bw >= 0:
                found = _slot_find(h_key, h_val, bw * width + c)
            else:
                for s in range(ptr[w], ptr[w] + n_slot[w]):
                    if s_col[s] == c:
                        found = s
                        break
            if cw >= 0:
                if found >= 0:  # w already has a neighbour of colour c: w is a hub
                    st = star[s_edge[found]]
                    if hub[st] != w:  # decided now: its one spoke y gets hub w
                        hub[st] = w
                        f = s_edge[found]
                        y = rows[f] + n_cols if w < n_cols else cols[f]
                        if big[y] >= 0:
                            sy = _slot_find(h_key, h_val, big[y] * width + cw)
                            if s_cnt[sy] == 1:
                                _add(hub0, hub1, hub_low, big[y], cw)
                    star[e] = st
                    if bv >= 0:  # v is a spoke of w's star
                        sv2 = _slot_find(h_key, h_val, bv * width + cw)
                        if s_cnt[sv2] == 1:
                            _add(hub0, hub1, hub_low, bv, cw)
                elif first_v[so, cw] == v and first_w[so, cw] != w:  # v is a hub
                    st = star[first_e[so, cw]]
                    hub[st] = v
                    star[e] = st
                    q = first_w[so, cw]
                    if big[q] >= 0:
                        sq = _slot_find(h_key, h_val, big[q] * width + c)
                        if s_cnt[sq] == 1:
                            _add(hub0, hub1, hub_low, big[q], c)
                else:  # a new star of one edge, hub not decided
                    star[e] = n_stars
                    hub[n_stars] = -1
                    n_stars += 1
            if found >= 0:
                s_cnt[found] += 1
                if bw >= 0 and s_cnt[found] == 2:
                    _discard(hub0, hub1, hub_low, bw, c)
            else:
                s = ptr[w] + n_slot[w]
                n_slot[w] += 1
                s_col[s] = c
                s_edge[s] = e
                s_cnt[s] = 1
                if bw >= 0:
                    if 2 * (n_keys + 1) > h_key.size:
                        h_key, h_val = _slot_grow(h_key, h_val)
                    _slot_add(h_key, h_val, bw * width + c, s)
                    n_keys += 1
                    _add(all0, all1, all_low, bw, c)
                    if cw >= 0 and hub[star[e]] == v:
                        _add(hub0, hub1, hub_low, bw, c)
    return color, n_side


# -- recoverability ---------------------------------------------------------------------


@kernel(nogil=True, interpret=True)  # one pass over the nonzeros
def recoverable(indptr, indices, col_indptr, col_indices, csc_to_csr, cg, rg, p, q):  # type: ignore[no-untyped-def]
    """``(from_b, from_c)``: per nonzero (CSR order), whether B or C holds it alone."""
    m = indptr.size - 1
    n = col_indptr.size - 1
    nnz = indices.size
    from_b = np.zeros(nnz, dtype=np.bool_)
    from_c = np.zeros(nnz, dtype=np.bool_)
    cnt = np.zeros(max(p, q) + 1, dtype=np.int64)
    for i in range(m):
        for k in range(indptr[i], indptr[i + 1]):
            c = cg[indices[k]]
            if c >= 0:
                cnt[c] += 1
        for k in range(indptr[i], indptr[i + 1]):
            c = cg[indices[k]]
            if c >= 0:
                from_b[k] = cnt[c] == 1
        for k in range(indptr[i], indptr[i + 1]):
            c = cg[indices[k]]
            if c >= 0:
                cnt[c] = 0
    for j in range(n):
        for t in range(col_indptr[j], col_indptr[j + 1]):
            c = rg[col_indices[t]]
            if c >= 0:
                cnt[c] += 1
        for t in range(col_indptr[j], col_indptr[j + 1]):
            c = rg[col_indices[t]]
            if c >= 0:
                from_c[csc_to_csr[t]] = cnt[c] == 1
        for t in range(col_indptr[j], col_indptr[j + 1]):
            c = rg[col_indices[t]]
            if c >= 0:
                cnt[c] = 0
    return from_b, from_c


def _recoverable_numpy(indptr: np.ndarray, indices: np.ndarray, col_indptr: np.ndarray,
                       col_indices: np.ndarray, csc_to_csr: np.ndarray, cg: np.ndarray,
                       rg: np.ndarray, p: int, q: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`recoverable` with numpy: where a colour occurs once in a row (B) or column (C)."""
    m, n = indptr.size - 1, col_indptr.size - 1
    rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(indptr))
    cols = np.repeat(np.arange(n, dtype=np.int64), np.diff(col_indptr))

    def alone(line: np.ndarray, colour: np.ndarray, width: int) -> np.ndarray:
        seeded = colour >= 0
        keys = line * (int(width) + 1) + np.where(seeded, colour, int(width))
        _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
        held: np.ndarray = seeded & (counts[inverse.reshape(-1)] == 1)
        return held

    from_b = alone(rows, cg[indices], p)
    from_c = np.zeros(indices.size, dtype=np.bool_)
    from_c[csc_to_csr] = alone(cols, rg[col_indices], q)
    return from_b, from_c


# -- decompression ----------------------------------------------------------------------


@kernel(nogil=True, interpret=True)  # one pass
def gather2(b, c, index, out):  # type: ignore[no-untyped-def]
    """``out[k] = b[index[k]]`` where ``index[k] >= 0``, else ``c[~index[k]]``."""
    for k in range(index.size):
        t = index[k]
        out[k] = b[t] if t >= 0 else c[~t]
    return out


def _gather2_numpy(b: np.ndarray, c: np.ndarray, index: np.ndarray, out: np.ndarray
                   ) -> np.ndarray:
    fwd = index >= 0
    out[fwd] = b[index[fwd]]
    out[~fwd] = c[~index[~fwd]]
    return out


# the twins, registered with their kernels (the weight: benchmarks/fallback.py, rounded up)
recoverable.numpy_twin(_recoverable_numpy, weight=0.6)
gather2.numpy_twin(_gather2_numpy)

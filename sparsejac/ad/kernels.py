"""Compiled kernels of the prepared engine (numba, cached on disk).

Owns the loops that numpy cannot vectorise without temporaries: spreading entries into
compressed blocks, the fused contribution ``acc[target] += r[r_idx] * j[j_idx]``, and the
two index kernels of the symbolic chain rule (range expansion, merge of sorted key arrays).
They work on int and float arrays only; :mod:`sparsejac.ad.entries` and
:mod:`sparsejac.ad.chain` prepare their arguments.
"""

from __future__ import annotations

import numpy as np

from sparsejac.kernels import kernel
from sparsejac.numeric import sorted_unique

__all__ = ["contribute", "expand_ranges", "gather_keys", "keys_are_pattern", "merge2",
           "merge_many", "merge_rows", "move_rows", "positions_in", "rank_marked", "spread_dense",
           "spread_onehot", "union_size"]


@kernel(interpret=True)
def spread_onehot(rows, cols, vals, groups, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``out[rows[e], groups[cols[e]]] += vals[e]`` (entries with a negative group skipped)."""
    for e in range(rows.size):
        g = groups[cols[e]]
        if g >= 0:
            out[rows[e], g] += vals[e]


@kernel(interpret=True)
def spread_dense(rows, cols, vals, src, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``out[rows[e], :] += vals[e] * src[cols[e], :]``.

    A zero on either side contributes nothing, even against inf or nan: a derivative that does
    not exist (nan) stays out of the rows whose seed or cotangent does not reach it.
    """
    p = out.shape[1]
    for e in range(rows.size):
        v = vals[e]
        if v == 0.0:  # a zero derivative contributes nothing, even times inf or nan
            continue
        r = rows[e]
        c = cols[e]
        for j in range(p):
            t = src[c, j]
            if t != 0.0:
                out[r, j] += v * t


@kernel(interpret=True)
def contribute(acc, target, r, r_idx, j, j_idx, n, assign, scale):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``acc[target[k]] += r[r_idx[k]] * j[j_idx[k]]`` for k < n, fused (no temporaries).

    An empty index array means the identity; an ``r`` or ``j`` of size 1 is a scalar.
    ``assign`` writes instead of adding (the first contribution, covering every position).
    A zero factor gives zero even against inf or nan (see ``mul0``).
    """
    has_t = target.size > 0
    has_ri = r_idx.size > 0
    has_ji = j_idx.size > 0
    r_scalar = r.size == 1
    j_scalar = j.size == 1
    for k in range(n):
        if r_scalar:
            rv = r[0]
        elif has_ri:
            rv = r[r_idx[k]]
        else:
            rv = r[k]
        if j_scalar:
            jv = j[0]
        elif has_ji:
            jv = j[j_idx[k]]
        else:
            jv = j[k]
        v = 0.0 if (rv == 0.0 or jv == 0.0) else rv * jv * scale
        if has_t:
            acc[target[k]] += v
        elif assign:
            acc[k] = v
        else:
            acc[k] += v


@kernel(interpret=True)
def expand_ranges(ptr, keys, owner, pos):  # type: ignore[no-untyped-def]  # pragma: no cover
    """For each ``keys[i]``, the positions ``ptr[keys[i]] .. ptr[keys[i]+1]-1``.

    Writes ``owner`` and ``pos`` (as long as the ranges in all): ``owner[t]`` is the i that
    produced position ``pos[t]``. The caller allocates them (see :func:`merge2`).
    """
    t = 0
    for i in range(keys.size):
        for q in range(ptr[keys[i]], ptr[keys[i] + 1]):
            owner[t] = i
            pos[t] = q
            t += 1


@kernel(interpret=True)
def gather_keys(ptr, cols, keys, low_in, low, out, pos):  # type: ignore[no-untyped-def]  # pragma: no cover
    """The entries of a selection's rows: :func:`expand_ranges` and the keys' encoding fused.

    Output row ``i`` takes the entries of operand row ``cols[i]`` (positions
    ``ptr[cols[i]] .. ptr[cols[i]+1]-1`` of its sorted ``keys``): ``pos`` gets those
    positions and ``out`` their keys with the row field (bits ``low_in`` and up) replaced by
    ``i`` at bit ``low`` (the fields below keep their values: the same column field, a source
    field as wide or wider), so the output keys are sorted too. The caller allocates ``out``
    and ``pos``.
    """
    mask = (np.int64(1) << low_in) - 1
    t = 0
    for i in range(cols.size):
        c = cols[i]
        high = np.int64(i) << low
        for q in range(ptr[c], ptr[c + 1]):
            out[t] = high | (keys[q] & mask)
            pos[t] = q
            t += 1


@kernel(interpret=True)
def merge2(a, b, u, ia, ib):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Union of two strictly increasing key arrays into ``u``, each input's positions in it.

    ``u`` is as long as the union (:func:`union_size`), ``ia`` and ``ib`` as the inputs. The
    caller allocates them: numpy asks the system for huge pages for large arrays, which
    arrays allocated inside a compiled kernel do not get, and a fresh 4 KiB page costs a
    fault where a 2 MiB one serves 512 (a merge of 10^7 keys: 0.15 s against 0.04 s).
    """
    i = j = k = 0
    while i < a.size and j < b.size:
        if a[i] < b[j]:
            u[k] = a[i]
            ia[i] = k
            i += 1
        elif b[j] < a[i]:
            u[k] = b[j]
            ib[j] = k
            j += 1
        else:
            u[k] = a[i]
            ia[i] = k
            ib[j] = k
            i += 1
            j += 1
        k += 1
    while i < a.size:
        u[k] = a[i]
        ia[i] = k
        i += 1
        k += 1
    while j < b.size:
        u[k] = b[j]
        ib[j] = k
        j += 1
        k += 1


@kernel(interpret=True)
def merge_many(keys, starts, u, inv):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Union of several strictly increasing key runs, and each key's position in it.

    Run ``t`` is ``keys[starts[t]:starts[t + 1]]``. The sorted unique union goes to the head
    of ``u`` (as long as ``keys``), the position of ``keys[e]`` in it to ``inv[e]``; returns
    the union's size, or -1 (outputs undefined) when a run is not strictly increasing. One
    pass over the keys with a heap of the runs' heads: ``O(N log K)`` where merging the runs
    two at a time rewrites the growing union ``K`` times.
    """
    n_runs = starts.size - 1
    head = np.empty(max(n_runs, 1), np.int64)
    heap = np.empty(max(n_runs, 1), np.int64)
    hk = np.empty(max(n_runs, 1), np.int64)
    m = 0
    for t in range(n_runs):
        head[t] = starts[t]
        if starts[t] < starts[t + 1]:
            key = keys[starts[t]]
            i = m
            m += 1
            while i > 0:
                p = (i - 1) >> 1
                if hk[p] <= key:
                    break
                heap[i] = heap[p]
                hk[i] = hk[p]
                i = p
            heap[i] = t
            hk[i] = key
    k = -1
    last = np.int64(0)
    while m > 0:
        t = heap[0]
        key = hk[0]
        q = head[t]
        if k < 0 or key != last:
            k += 1
            u[k] = key
            last = key
        inv[q] = k
        q += 1
        head[t] = q
        if q < starts[t + 1]:
            nk = keys[q]
            if nk <= key:
                return -1
        else:
            m -= 1
            if m == 0:
                break
            t = heap[m]
            nk = hk[m]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= m:
                break
            if c + 1 < m and hk[c + 1] < hk[c]:
                c += 1
            if hk[c] >= nk:
                break
            heap[i] = heap[c]
            hk[i] = hk[c]
            i = c
        heap[i] = t
        hk[i] = nk
    return k + 1


@kernel(interpret=True)
def merge_rows(keys, starts, low, u, inv):  # type: ignore[no-untyped-def]  # pragma: no cover
    """:func:`merge_many` for bit-field keys of a few entries per row, a row at a time.

    The row of a key is ``key >> low``. Each row's entries from every run are sorted in a
    small buffer (insertion) and written once: no heap operation per entry. Returns the
    union's size, -1 when a run is not strictly increasing, -2 when a row has more than 64
    entries (the caller merges with :func:`merge_many` then).
    """
    n_runs = starts.size - 1
    none = np.iinfo(np.int64).max
    head = np.empty(max(n_runs, 1), np.int64)
    nr = np.empty(max(n_runs, 1), np.int64)  # the row of each run's head
    r = none
    for t in range(n_runs):
        head[t] = starts[t]
        nr[t] = (keys[starts[t]] >> low) if starts[t] < starts[t + 1] else none
        if nr[t] < r:
            r = nr[t]
    buf_k = np.empty(64, np.int64)
    buf_e = np.empty(64, np.int64)
    k = 0
    while r != none:
        nb = 0
        nxt = none
        for t in range(n_runs):
            if nr[t] == r:
                q = head[t]
                end = starts[t + 1]
                prev = keys[q - 1] if q > starts[t] else np.int64(-1)
                while q < end:
                    key = keys[q]
                    if (key >> low) != r:
                        break
                    if key <= prev:
                        return -1
                    prev = key
                    if nb == 64:
                        return -2
                    i = nb
                    while i > 0 and buf_k[i - 1] > key:
                        buf_k[i] = buf_k[i - 1]
                        buf_e[i] = buf_e[i - 1]
                        i -= 1
                    buf_k[i] = key
                    buf_e[i] = q
                    nb += 1
                    q += 1
                head[t] = q
                if q < end:
                    if keys[q] <= prev:
                        return -1
                    nr[t] = keys[q] >> low
                else:
                    nr[t] = none
            if nr[t] < nxt:
                nxt = nr[t]
        for i in range(nb):
            if i == 0 or buf_k[i] != buf_k[i - 1]:
                u[k] = buf_k[i]
                k += 1
            inv[buf_e[i]] = k - 1
        r = nxt
    return k


@kernel(interpret=True)
def keys_are_pattern(keys, indptr, cols, low):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Whether bit-field ``keys`` are exactly a CSR pattern's nonzeros from source 0, in order.

    Key ``q`` must be ``r << low | cols[q]`` for the row ``r`` whose range holds ``q`` (the
    source field, below bit ``low``, zero). One pass, nothing allocated.
    """
    for r in range(indptr.size - 1):
        high = np.int64(r) << low
        for q in range(indptr[r], indptr[r + 1]):
            if keys[q] != (high | cols[q]):
                return False
    return True


@kernel(interpret=True)
def move_rows(keys, low, shift, stride, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Bit-field keys with the row ``r`` (bits ``low`` and up) moved to ``shift + stride r``.

    One pass into ``out`` (as long as ``keys``; the caller allocates it), where numpy makes
    a temporary per operation.
    """
    mask = (np.int64(1) << low) - 1
    for i in range(keys.size):
        k = keys[i]
        out[i] = (((k >> low) * stride + shift) << low) | (k & mask)


@kernel(interpret=True)
def union_size(a, b):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Size of the union of two strictly increasing key arrays (one pass, no allocation)."""
    i = j = k = 0
    while i < a.size and j < b.size:
        if a[i] < b[j]:
            i += 1
        elif b[j] < a[i]:
            j += 1
        else:
            i += 1
            j += 1
        k += 1
    return k + (a.size - i) + (b.size - j)


@kernel(interpret=True)
def positions_in(a, b, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """For strictly increasing ``b`` within strictly increasing ``a``: where each is in ``a``.

    Written into ``out`` (as long as ``b``; the caller allocates it, see :func:`merge2`).
    """
    i = 0
    for j in range(b.size):
        while a[i] < b[j]:
            i += 1
        out[j] = i


@kernel(interpret=True)
def rank_marked(mark, dyn_pos, rank):  # type: ignore[no-untyped-def]  # pragma: no cover
    """The marked positions of ``mark`` into ``dyn_pos``, and ``rank[i]`` = marks up to ``i``.

    One pass for what ``np.flatnonzero`` and ``np.cumsum`` compute in two (``dyn_pos`` is
    allocated by the caller with the number of marks).
    """
    c = 0
    for i in range(mark.size):
        if mark[i]:
            dyn_pos[c] = i
            c += 1
        rank[i] = c


# -- numpy twins: the same outputs, vectorised, before numba is loaded (sparsejac.kernels) --


def _spread_onehot_numpy(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray,
                         groups: np.ndarray, out: np.ndarray) -> None:
    g = groups[cols]
    keep = g >= 0
    np.add.at(out, (rows[keep], g[keep]), vals[keep])  # in entry order, as the kernel


def _spread_dense_numpy(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray,
                        src: np.ndarray, out: np.ndarray) -> None:
    keep = vals != 0.0
    s = src[cols[keep]]
    with np.errstate(invalid="ignore"):
        add = vals[keep][:, None] * s
    r = np.broadcast_to(rows[keep][:, None], s.shape)
    j = np.broadcast_to(np.arange(s.shape[1]), s.shape)
    nz = s != 0.0  # zeros of src are skipped, as the kernel does (an out of -0.0 stays -0.0)
    np.add.at(out, (r[nz], j[nz]), add[nz])  # in entry order, then column order, as the kernel


def _contribute_numpy(acc: np.ndarray, target: np.ndarray, r: np.ndarray, r_idx: np.ndarray,
                      j: np.ndarray, j_idx: np.ndarray, n: int, assign: bool,
                      scale: float) -> None:
    n = int(n)
    rv = (np.full(n, r[0]) if r.size == 1 else r[r_idx[:n]] if r_idx.size else r[:n])
    jv = (np.full(n, j[0]) if j.size == 1 else j[j_idx[:n]] if j_idx.size else j[:n])
    v = np.where((rv == 0.0) | (jv == 0.0), 0.0, rv * jv * scale)
    if target.size:
        np.add.at(acc, target[:n], v)  # in k order, as the kernel (repeated targets)
    elif assign:
        acc[:n] = v
    else:
        acc[:n] += v


def _expand_ranges_numpy(ptr: np.ndarray, keys: np.ndarray, owner: np.ndarray,
                         pos: np.ndarray) -> None:
    starts = ptr[keys]
    counts = ptr[keys + 1] - starts
    owner[:] = np.repeat(np.arange(keys.size, dtype=np.int64), counts)
    first = np.cumsum(counts) - counts  # where each key's positions begin in the output
    pos[:] = np.arange(owner.size, dtype=np.int64) - first[owner] + starts[owner]


def _gather_keys_numpy(ptr: np.ndarray, cols: np.ndarray, keys: np.ndarray, low_in: int,
                       low: int, out: np.ndarray, pos: np.ndarray) -> None:
    owner = np.empty(pos.size, dtype=np.int64)
    _expand_ranges_numpy(ptr, cols, owner, pos)
    out[:] = np.left_shift(owner, low) | (keys[pos] & ((1 << int(low_in)) - 1))


def _merge2_numpy(a: np.ndarray, b: np.ndarray, u: np.ndarray, ia: np.ndarray,
                  ib: np.ndarray) -> None:
    u[:] = sorted_unique(np.concatenate((a, b)))
    ia[:] = np.searchsorted(u, a)
    ib[:] = np.searchsorted(u, b)


def _merge_many_numpy(keys: np.ndarray, starts: np.ndarray, u: np.ndarray,
                      inv: np.ndarray) -> int:
    inner = np.ones(max(keys.size - 1, 0), dtype=bool)  # pairs within one run
    b = starts[1:-1]
    inner[b[(b > 0) & (b < keys.size)] - 1] = False
    if not bool(np.all((keys[1:] > keys[:-1]) | ~inner)):
        return -1
    uu = sorted_unique(keys)
    u[:uu.size] = uu
    inv[:] = np.searchsorted(uu, keys)
    return int(uu.size)


def _merge_rows_numpy(keys: np.ndarray, starts: np.ndarray, low: int, u: np.ndarray,
                      inv: np.ndarray) -> int:
    return _merge_many_numpy(keys, starts, u, inv)


def _keys_are_pattern_numpy(keys: np.ndarray, indptr: np.ndarray, cols: np.ndarray,
                            low: int) -> bool:
    rows = np.repeat(np.arange(indptr.size - 1, dtype=np.int64), np.diff(indptr))
    return bool(np.array_equal(keys, np.left_shift(rows, low) | cols))


def _move_rows_numpy(keys: np.ndarray, low: int, shift: int, stride: int,
                     out: np.ndarray) -> None:
    out[:] = (((keys >> low) * stride + shift) << low) | (keys & ((1 << int(low)) - 1))


def _union_size_numpy(a: np.ndarray, b: np.ndarray) -> int:
    if not a.size or not b.size:
        return int(a.size + b.size)
    i = np.minimum(np.searchsorted(a, b), a.size - 1)
    return int(a.size + b.size - np.count_nonzero(a[i] == b))


def _positions_in_numpy(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    out[:] = np.searchsorted(a, b)


def _rank_marked_numpy(mark: np.ndarray, dyn_pos: np.ndarray, rank: np.ndarray) -> None:
    dyn_pos[:] = np.flatnonzero(mark)
    np.cumsum(mark, dtype=rank.dtype, out=rank)


# the twins, registered with their kernels; the weight is what a twin costs more than its
# kernel per entry, in budget units of about 10 ns (benchmarks/fallback.py, rounded up)
spread_onehot.numpy_twin(_spread_onehot_numpy, weight=0.2)
spread_dense.numpy_twin(_spread_dense_numpy)
contribute.numpy_twin(_contribute_numpy, weight=0.05)
expand_ranges.numpy_twin(_expand_ranges_numpy, weight=0.1)
gather_keys.numpy_twin(_gather_keys_numpy, weight=0.1)
merge2.numpy_twin(_merge2_numpy, weight=0.5)
merge_many.numpy_twin(_merge_many_numpy, weight=1.0)
merge_rows.numpy_twin(_merge_rows_numpy, weight=1.0)
keys_are_pattern.numpy_twin(_keys_are_pattern_numpy, weight=0.3)
move_rows.numpy_twin(_move_rows_numpy, weight=0.2)
union_size.numpy_twin(_union_size_numpy, weight=0.4)
positions_in.numpy_twin(_positions_in_numpy, weight=0.25)
rank_marked.numpy_twin(_rank_marked_numpy, weight=0.05)

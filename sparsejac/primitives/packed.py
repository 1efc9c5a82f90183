"""Dependency sets packed as bits: one row of ``ceil(n / 64)`` 64-bit words per element.

A dependency set in CSR form costs 8 bytes per (element, input) pair. Where the sets are
dense, as in the gradient program of a function with a dense Hessian (``N × N`` elements
that each depend on all ``N`` inputs), that is ``8 N³`` bytes: 8 GB at ``N = 1000``, where
the same sets packed as bits take ``N³ / 8`` bytes, 64 times less.
:mod:`~sparsejac.primitives.depsets` switches an operation's result to this form when its
CSR form would hold at least :data:`PACKED_MIN` pairs and the packed form is at least
:data:`PACKED_GAIN` times smaller; the sets are the same, so the pattern is too. Every
operation here is vectorised numpy, in chunks of at most :data:`CHUNK_WORDS` words of temporaries.

Bit ``j % 64`` of word ``j // 64`` of row ``k`` is set when element ``k`` depends on input
``j``.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["CHUNK_WORDS", "PACKED_GAIN", "PACKED_MIN", "from_csr", "gather", "or_rows",
           "popcount_rows", "to_csr", "words"]

#: the fewest (element, input) pairs of a result that may be packed
PACKED_MIN = 1 << 22
#: how many times smaller than its CSR indices the packed form must be
PACKED_GAIN = 4
#: the largest temporary, in 64-bit words, of one chunk of an operation
CHUNK_WORDS = 1 << 22

_ONE = np.uint64(1)
#: bits set in each byte value
_BYTE_COUNT = np.array([bin(b).count("1") for b in range(256)], dtype=np.int64)


def words(n: int) -> int:
    """Words per packed row of ``n`` inputs."""
    return max((int(n) + 63) // 64, 1)


def _chunks(rows: int, per_row: int) -> Iterator[tuple[int, int]]:
    """Row ranges whose temporaries of ``per_row`` words a row stay within CHUNK_WORDS."""
    step = max(CHUNK_WORDS // max(per_row, 1), 1)
    for a in range(0, rows, step):
        yield a, min(a + step, rows)


def popcount_rows(bits: np.ndarray) -> np.ndarray:
    """The number of set bits of each row (int64)."""
    counts: np.ndarray
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        counts = np.bitwise_count(bits).sum(axis=1, dtype=np.int64)
    else:  # pragma: no cover - numpy 1.26
        as_bytes = np.ascontiguousarray(bits).astype("<u8", copy=False).view(np.uint8)
        counts = _BYTE_COUNT[as_bytes].sum(axis=1)
    return counts


def from_csr(indptr: np.ndarray, indices: np.ndarray, n: int) -> np.ndarray:
    """The packed rows of a canonical CSR structure (sorted, no duplicates).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.primitives.packed import from_csr, or_rows, to_csr
    >>> bits = from_csr(np.array([0, 2, 3]), np.array([0, 65, 3]), 70)  # {0, 65}, {3}
    >>> bits.shape, [hex(int(w)) for w in bits[0]]
    ((2, 2), ['0x1', '0x2'])
    >>> to_csr(bits, 70)
    (array([0, 2, 3]), array([ 0, 65,  3]))
    >>> to_csr(or_rows(bits, np.array([0, 2]), np.array([0, 1])), 70)  # their union
    (array([0, 3]), array([ 0,  3, 65]))
    """
    rows = indptr.size - 1
    w = words(n)
    out = np.zeros(rows * w, dtype=np.uint64)
    counts = np.diff(indptr)
    for a, b in _chunks(rows, max(int(counts.max(initial=0)), 1)):
        lo, hi = int(indptr[a]), int(indptr[b])
        idx = indices[lo:hi]
        pos = np.repeat(np.arange(a, b, dtype=np.int64) * w, counts[a:b]) + (idx >> 6)
        # distinct bits of one word: or-ing them is adding them
        np.bitwise_or.at(out, pos, np.left_shift(_ONE, (idx & 63).astype(np.uint64)))
    return out.reshape(rows, w)


def to_csr(bits: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(indptr, indices)`` of packed rows (canonical: sorted indices)."""
    rows, w = bits.shape
    indptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(popcount_rows(bits), out=indptr[1:])
    indices = np.empty(int(indptr[-1]), dtype=np.int64)
    for a, b in _chunks(rows, 8 * w):  # 8 bytes a word unpacked: 64 one-byte flags
        flags = np.unpackbits(np.ascontiguousarray(bits[a:b]).astype("<u8", copy=False)
                              .view(np.uint8), axis=1, bitorder="little")[:, :n]
        indices[indptr[a]:indptr[b]] = np.nonzero(flags)[1]
    return indptr, indices


def gather(bits: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Row ``i`` is row ``rows[i]`` of ``bits``; empty where ``rows[i] < 0``."""
    out = bits[np.maximum(rows, 0)] if bits.shape[0] else np.zeros(
        (rows.size, bits.shape[1]), dtype=np.uint64)
    out[rows < 0] = 0
    return out


def or_rows(bits: np.ndarray, indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Row ``r`` of the result is the union of rows ``indices[indptr[r]:indptr[r + 1]]``.

    ``R @ d`` for a 0/1 matrix ``R`` in CSR form; empty rows of ``R`` give empty rows.
    """
    m, w = indptr.size - 1, bits.shape[1]
    out = np.zeros((m, w), dtype=np.uint64)
    counts = np.diff(indptr)
    nonempty = np.flatnonzero(counts)
    if not nonempty.size:
        return out
    # chunks of R's non-empty rows whose gathered operand rows stay within CHUNK_WORDS
    ends = np.cumsum(counts[nonempty])
    a = 0
    while a < nonempty.size:
        start = int(ends[a - 1]) if a else 0
        b = int(np.searchsorted(ends, start + max(CHUNK_WORDS // w, 1), side="right"))
        b = max(b, a + 1)
        sel = nonempty[a:b]
        lo, hi = int(indptr[sel[0]]), int(indptr[sel[-1] + 1])
        taken = bits[indices[lo:hi]]
        out[sel] = np.bitwise_or.reduceat(taken, indptr[sel] - lo, axis=0)
        a = b
    return out

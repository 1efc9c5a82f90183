"""Dependency sets as one boolean CSR structure per array, and the vectorised operations on them.

An array of shape ``s`` carries its dependencies as a :class:`DepSet` of shape
``(prod(s), n)``: row ``k`` lists the inputs that element ``k`` (C order) depends on (CSR
``indptr``/``indices``, no values). Every pattern rule is one of the operations below, so no
rule loops over elements:

* :func:`take_rows` – data movement (gather by position, ``-1`` for "no source");
* :func:`union` – elementwise operations (after broadcasting each operand's rows);
* :func:`apply_linear` – reductions, contractions, scatter-add: ``R @ deps`` for a 0/1 matrix R;
* :func:`vstack` – stacking the operands of a gather.

All structures are canonical (sorted indices, no duplicates). :class:`DepSet` is a plain
holder of the two index arrays: a scipy matrix validates its arrays at every construction,
which costs more than the operation itself on the many small arrays of a scalar program.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import numpy as np
import scipy.sparse as sp

from sparsejac import kernels
from sparsejac.kernels import kernel
from sparsejac.numeric import sorted_unique
from sparsejac.primitives import packed

__all__ = [
    "DepSet",
    "apply_linear",
    "broadcast_rows",
    "empty",
    "identity",
    "keep_rows",
    "take_rows",
    "union",
    "vstack",
]


class DepSet:
    """A boolean sparsity structure in CSR form: ``indptr``, ``indices`` and ``shape``.

    A large dense one may be held packed as bits instead (``bits``, see
    :mod:`sparsejac.primitives.packed`); its CSR arrays are then built when first read.

    Examples
    --------
    >>> from sparsejac.primitives.depsets import identity
    >>> d = identity(3)
    >>> d.shape, d.nnz
    ((3, 3), 3)
    >>> d.tocsr().toarray().astype(int)
    array([[1, 0, 0],
           [0, 1, 0],
           [0, 0, 1]])
    """

    __slots__ = ("_indices", "_indptr", "bits", "shape")

    def __init__(self, indices: np.ndarray | None, indptr: np.ndarray | None,
                 shape: tuple[int, int], bits: np.ndarray | None = None) -> None:
        self._indices = indices
        self._indptr = indptr
        self.bits = bits
        self.shape = (int(shape[0]), int(shape[1]))

    @property
    def indices(self) -> np.ndarray:
        """Column indices of the CSR form (sorted within each row)."""
        return self._indices if self._indices is not None else self._unpack()[1]

    @property
    def indptr(self) -> np.ndarray:
        """Row pointers of the CSR form."""
        return self._indptr if self._indptr is not None else self._unpack()[0]

    def _unpack(self) -> tuple[np.ndarray, np.ndarray]:
        """The CSR arrays of a packed structure, made once."""
        assert self.bits is not None
        self._indptr, self._indices = packed.to_csr(self.bits, self.shape[1])
        return self._indptr, self._indices

    @property
    def nnz(self) -> int:
        """Number of (element, input) dependencies."""
        if self._indices is None:
            return int(self.row_sizes().sum())
        return int(self._indices.size)

    def row_sizes(self) -> np.ndarray:
        """Number of dependencies of each element (int64)."""
        if self._indptr is None:
            assert self.bits is not None
            return packed.popcount_rows(self.bits)
        return np.diff(self._indptr)

    def packed_bits(self) -> np.ndarray:
        """The structure packed as bits (:mod:`sparsejac.primitives.packed`)."""
        if self.bits is None:
            self.bits = packed.from_csr(self.indptr, self.indices, self.shape[1])
        return self.bits

    def tocsr(self) -> sp.csr_array:
        """The structure as a boolean ``scipy.sparse.csr_array`` (sharing the index arrays)."""
        out = sp.csr_array((np.ones(self.indices.size, dtype=bool), self.indices, self.indptr),
                           shape=self.shape)
        out.has_sorted_indices = True
        return out

    def toarray(self) -> np.ndarray:
        """The structure as a dense boolean array (for tests and small examples)."""
        return np.asarray(self.tocsr().toarray())

    @staticmethod
    def of(m: sp.sparray | sp.spmatrix) -> DepSet:
        """The structure of a scipy sparse matrix (nonzeros, canonical)."""
        c = sp.csr_array(m, dtype=bool)
        c.eliminate_zeros()
        c.sort_indices()
        c.sum_duplicates()
        return DepSet(c.indices.astype(np.int64), c.indptr.astype(np.int64),
                      (c.shape[0], c.shape[1]))

    def __repr__(self) -> str:
        return f"DepSet(shape={self.shape}, nnz={self.nnz})"


def _pack_result(pairs: int, rows: int, n: int) -> bool:
    """Whether a result of up to ``pairs`` dependencies over ``rows × n`` is built packed."""
    return (pairs >= packed.PACKED_MIN
            and rows * packed.words(n) * packed.PACKED_GAIN <= pairs)


def _packed(bits: np.ndarray, shape: tuple[int, int]) -> DepSet:
    return DepSet(None, None, shape, bits)


Deps: TypeAlias = DepSet


def _csr(indices: np.ndarray, indptr: np.ndarray, shape: tuple[int, int]) -> Deps:
    return DepSet(indices, indptr, shape)


def empty(rows: int, n: int) -> Deps:
    """A ``rows × n`` matrix with no dependencies."""
    return _csr(np.zeros(0, np.int64), np.zeros(rows + 1, np.int64), (rows, n))


def identity(n: int) -> Deps:
    """Element ``k`` of the input depends on input ``k``."""
    return _csr(np.arange(n, dtype=np.int64), np.arange(n + 1, dtype=np.int64), (n, n))


@kernel()
def _take_rows_kernel(indptr, indices, rows):  # type: ignore[no-untyped-def]  # pragma: no cover
    m = rows.size
    out_ptr = np.empty(m + 1, np.int64)
    out_ptr[0] = 0
    for i in range(m):
        r = rows[i]
        c = indptr[r + 1] - indptr[r] if r >= 0 else 0
        out_ptr[i + 1] = out_ptr[i] + c
    out_idx = np.empty(out_ptr[m], np.int64)
    for i in range(m):
        r = rows[i]
        if r >= 0:
            s = indptr[r]
            o = out_ptr[i]
            for k in range(indptr[r + 1] - s):
                out_idx[o + k] = indices[s + k]
    return out_ptr, out_idx


@kernel()
def _union2_kernel(ap, ai, bp, bi):  # type: ignore[no-untyped-def]  # pragma: no cover
    m = ap.size - 1
    out_ptr = np.empty(m + 1, np.int64)
    out_idx = np.empty(ai.size + bi.size, np.int64)
    o = 0
    for r in range(m):
        out_ptr[r] = o
        i, ie = ap[r], ap[r + 1]
        j, je = bp[r], bp[r + 1]
        while i < ie and j < je:
            a = ai[i]
            b = bi[j]
            if a < b:
                out_idx[o] = a
                i += 1
            elif b < a:
                out_idx[o] = b
                j += 1
            else:
                out_idx[o] = a
                i += 1
                j += 1
            o += 1
        while i < ie:
            out_idx[o] = ai[i]
            i += 1
            o += 1
        while j < je:
            out_idx[o] = bi[j]
            j += 1
            o += 1
    out_ptr[m] = o
    return out_ptr, out_idx[:o]


def _numpy_path(*sizes: int) -> bool:
    """Whether these inputs take the numpy paths (:func:`sparsejac.kernels.use_fallback`).

    Small inputs of a process's first Jacobians do (identical results): a small first
    Jacobian in a fresh process then never imports numba.
    """
    return kernels.use_fallback(sum(sizes))


def _take_rows_numpy(indptr: np.ndarray, indices: np.ndarray, rows: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_take_rows_kernel` with numpy (the same arrays)."""
    valid = rows >= 0
    if indptr.size > 1:
        r = np.where(valid, rows, 0)
        counts = np.where(valid, indptr[r + 1] - indptr[r], 0)
    else:
        r, counts = np.zeros_like(rows), np.zeros_like(rows)
    ptr = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    src = np.repeat(indptr[r] - ptr[:-1], counts) + np.arange(ptr[-1], dtype=np.int64)
    return ptr, np.ascontiguousarray(indices[src], dtype=np.int64)


def _union2_numpy(ap: np.ndarray, ai: np.ndarray, bp: np.ndarray, bi: np.ndarray, n: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_union2_kernel` with numpy (the same arrays)."""
    m = ap.size - 1
    n = max(int(n), 1)
    row = np.arange(m, dtype=np.int64)
    keys = sorted_unique(np.concatenate([np.repeat(row, np.diff(ap)) * n + ai,
                                     np.repeat(row, np.diff(bp)) * n + bi]))
    ptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys // n, minlength=m), out=ptr[1:])
    return ptr, keys % n


def take_rows(d: Deps, rows: np.ndarray) -> Deps:
    """Row ``i`` of the result is row ``rows[i]`` of ``d`` (empty where ``rows[i] < 0``)."""
    rows = np.ascontiguousarray(rows, dtype=np.int64).ravel()
    if isinstance(d, DepSet) and d.bits is not None and d._indices is None:
        return _packed(packed.gather(d.bits, rows), (rows.size, d.shape[1]))
    if isinstance(d, DepSet) and rows.size > 1 and d.nnz >= packed.PACKED_MIN // 64:
        sizes = d.row_sizes()
        pairs = int(np.where(rows >= 0, sizes[np.maximum(rows, 0)], 0).sum())
        if _pack_result(pairs, rows.size, d.shape[1]):  # a broadcast of large sets
            return _packed(packed.gather(d.packed_bits(), rows), (rows.size, d.shape[1]))
    if rows.size == 1:  # one element (x[i] in a Python loop): a slice of one row
        r = int(rows[0])
        if r < 0:
            return empty(1, d.shape[1])
        a, b = int(d.indptr[r]), int(d.indptr[r + 1])
        return _csr(np.array(d.indices[a:b], dtype=np.int64),
                    np.array([0, b - a], dtype=np.int64), (1, d.shape[1]))
    if _numpy_path(d.indices.size, rows.size):
        ptr, idx = _take_rows_numpy(d.indptr, d.indices, rows)
    else:
        ptr, idx = _take_rows_kernel(d.indptr, d.indices, rows)
    return _csr(idx, ptr, (rows.size, d.shape[1]))


def keep_rows(d: Deps, keep: np.ndarray) -> Deps:
    """Empty the rows of ``d`` where ``keep`` is False."""
    keep = np.asarray(keep, dtype=bool).ravel()
    if keep.all():
        return d
    rows = np.where(keep, np.arange(d.shape[0], dtype=np.int64), -1)
    return take_rows(d, rows)


def union(terms: Sequence[Deps]) -> Deps | None:
    """Elementwise union (logical or) of same-shape dependency matrices."""
    terms = [t for t in terms if t is not None]
    if not terms:
        return None
    if len(terms) == 1:
        return terms[0]
    if all(isinstance(t, DepSet) for t in terms) and (
            any(t.bits is not None and t._indices is None for t in terms)
            or _pack_result(sum(t.nnz for t in terms), terms[0].shape[0], terms[0].shape[1])):
        bits = terms[0].packed_bits().copy()
        for t in terms[1:]:
            np.bitwise_or(bits, t.packed_bits(), out=bits)
        return _packed(bits, terms[0].shape)
    out = terms[0]
    for t in terms[1:]:
        if _numpy_path(out.indices.size, t.indices.size, out.shape[0]):
            ptr, idx = _union2_numpy(out.indptr, out.indices, t.indptr, t.indices,
                                     out.shape[1])
        else:
            ptr, idx = _union2_kernel(out.indptr, out.indices, t.indptr, t.indices)
        out = _csr(idx, ptr, out.shape)
    return out


def broadcast_rows(in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> np.ndarray | None:
    """For each output element, the input element numpy broadcasting reads (None: identity)."""
    if tuple(in_shape) == tuple(out_shape):
        return None
    size = int(np.prod(in_shape, dtype=np.int64))
    pos = np.arange(size, dtype=np.int64).reshape(in_shape)
    return np.ascontiguousarray(np.broadcast_to(pos, out_shape)).ravel()


#: :func:`apply_linear` takes its sort path up to this many (entry of R, dependency) pairs
SMALL_LINEAR = 1 << 14


def apply_linear(r: sp.csr_array, d: Deps) -> Deps:
    """``R @ d`` for a structural 0/1 matrix ``R`` (out_size × in_size).

    Small products (a 2 × 2 matrix times a vector in a loop over elements) are a gather of
    ``d``'s rows and one sort: scipy's product and its checks cost half a millisecond.
    """
    rb = r if r.dtype == bool else (r != 0)
    if isinstance(d, DepSet) and (d.bits is not None or d.nnz >= packed.PACKED_MIN // 64):
        keep = np.asarray(rb.data, dtype=bool)
        pairs = int(d.row_sizes()[rb.indices[keep]].sum())
        if (d.bits is not None and d._indices is None) or _pack_result(
                pairs, int(r.shape[0]), int(d.shape[1])):
            if not keep.all():
                rb = sp.csr_array(rb)
                rb.eliminate_zeros()
            bits = packed.or_rows(d.packed_bits(), rb.indptr.astype(np.int64),
                                  rb.indices.astype(np.int64))
            return _packed(bits, (int(r.shape[0]), int(d.shape[1])))
    if r.nnz * max(int(np.diff(d.indptr).max(initial=0)), 1) > SMALL_LINEAR:
        return DepSet.of(sp.csr_array(rb @ d.tocsr()))
    keep = np.asarray(rb.data, dtype=bool)
    m, n = int(r.shape[0]), max(int(d.shape[1]), 1)
    rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(rb.indptr))[keep]
    ptr, idx = _take_rows_numpy(d.indptr, d.indices, rb.indices[keep].astype(np.int64))
    keys = sorted_unique(np.repeat(rows, np.diff(ptr)) * n + idx)
    out_ptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys // n, minlength=m), out=out_ptr[1:])
    return DepSet(keys % n, out_ptr, (m, int(d.shape[1])))


def vstack(blocks: Sequence[Deps]) -> Deps:
    """The blocks' rows one after the other (same number of columns)."""
    n = blocks[0].shape[1]
    if any(isinstance(b, DepSet) and b.bits is not None and b._indices is None
           for b in blocks):
        return _packed(np.concatenate([b.packed_bits() if isinstance(b, DepSet) else
                                       packed.from_csr(b.indptr, b.indices, n) for b in blocks]),
                       (int(sum(b.shape[0] for b in blocks)), n))
    sizes = np.array([b.nnz for b in blocks], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    indptr = np.concatenate([[0]] + [b.indptr[1:] + off for b, off in zip(blocks, offsets,
                                                                         strict=True)])
    indices = np.concatenate([b.indices for b in blocks]) if blocks else np.zeros(0, np.int64)
    return DepSet(indices.astype(np.int64, copy=False), indptr.astype(np.int64, copy=False),
                  (int(sum(b.shape[0] for b in blocks)), n))

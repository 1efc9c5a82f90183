"""Dependency sets as one boolean CSR matrix per array, and the vectorised operations on them.

An array of shape ``s`` carries its dependencies as a ``scipy.sparse.csr_array`` of ``bool``
with shape ``(prod(s), n)``: row ``k`` lists the inputs that element ``k`` (C order) depends
on. Every pattern rule is one of the operations below, so no rule loops over elements:

* :func:`take_rows` – data movement (gather by position, ``-1`` for "no source");
* :func:`union` – elementwise operations (after broadcasting each operand's rows);
* :func:`apply_linear` – reductions, contractions, scatter-add: ``R @ deps`` for a 0/1 matrix R.

All matrices are canonical (sorted indices, no duplicates) and hold only ``True``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

__all__ = [
    "apply_linear",
    "broadcast_rows",
    "empty",
    "identity",
    "keep_rows",
    "take_rows",
    "union",
]

Deps = sp.csr_array


def _csr(indices: np.ndarray, indptr: np.ndarray, shape: tuple[int, int]) -> Deps:
    out = sp.csr_array((np.ones(indices.size, dtype=bool), indices, indptr), shape=shape)
    out.has_sorted_indices = True
    return out


def empty(rows: int, n: int) -> Deps:
    """A ``rows × n`` matrix with no dependencies."""
    return _csr(np.zeros(0, np.int64), np.zeros(rows + 1, np.int64), (rows, n))


def identity(n: int) -> Deps:
    """Element ``k`` of the input depends on input ``k``."""
    return _csr(np.arange(n, dtype=np.int64), np.arange(n + 1, dtype=np.int64), (n, n))


def take_rows(d: Deps, rows: np.ndarray) -> Deps:
    """Row ``i`` of the result is row ``rows[i]`` of ``d`` (empty where ``rows[i] < 0``)."""
    rows = np.asarray(rows, dtype=np.int64).ravel()
    valid = rows >= 0
    r = np.where(valid, rows, 0)
    indptr_in = d.indptr.astype(np.int64, copy=False)
    starts = indptr_in[r]
    counts = np.where(valid, indptr_in[r + 1] - starts, 0)
    indptr = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    total = int(indptr[-1])
    pos = np.arange(total, dtype=np.int64) - np.repeat(indptr[:-1] - starts, counts)
    return _csr(d.indices[pos], indptr, (rows.size, d.shape[1]))


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
    out = terms[0]
    for t in terms[1:]:
        out = out + t  # scipy's sorted merge; on bool data + is logical or
    return out


def broadcast_rows(in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> np.ndarray | None:
    """For each output element, the input element numpy broadcasting reads (None: identity)."""
    if tuple(in_shape) == tuple(out_shape):
        return None
    size = int(np.prod(in_shape, dtype=np.int64))
    pos = np.arange(size, dtype=np.int64).reshape(in_shape)
    return np.ascontiguousarray(np.broadcast_to(pos, out_shape)).ravel()


def apply_linear(r: sp.csr_array, d: Deps) -> Deps:
    """``R @ d`` for a structural 0/1 matrix ``R`` (out_size × in_size)."""
    rb = r if r.dtype == bool else (r != 0)
    out = sp.csr_array(rb @ d)
    if out.dtype != bool:
        out = out.astype(bool)
    out.sort_indices()
    out.eliminate_zeros()
    return out

"""Cotangents of a recorded reverse sweep kept as sparse maps of traced parts: :class:`Scattered`.

A Hessian's gradient program is the reverse sweep of ``f`` replayed on traced values
(:mod:`sparsejac.ad.second_order`). Recorded node by node, an element loop makes it grow with
the loop's length times the vector it reads or writes: each read ``x[i]`` pulls back to a
cotangent of the whole of ``x``, and each write ``out[k:k + 2] = ...`` passes a cotangent of
the whole buffer on. A :class:`Scattered` cotangent is instead ``M @ concat(parts)``: a few
traced vectors or scalars (the parts, each once) and a constant sparse map ``M`` kept as
entries. Contributions add by joining their entries; a constant linear step (a gather, a
write into a buffer) maps the entries (:meth:`Scattered.mapped`), recording nothing; the
sum is recorded as one stack, one concatenation and one linear map only where a step needs
the cotangent's value (:meth:`Scattered.value`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.primitives.linear import apply_sparse_map
from sparsejac.tracing.tracer import Tracer

__all__ = ["GROWTH", "Scattered", "value"]

#: a constant step maps the entries only while that keeps them within this factor of the
#: entries and the result's size (else the value is recorded: a dense constant map would
#: multiply the entries where recording it costs its own size)
GROWTH = 4


class Scattered:
    """A cotangent ``M @ concat(parts)`` of ``shape``, not recorded yet.

    ``pull_back`` sums contributions with ``+``, which extends the entries in place (the sum
    it replaces is the only reference to it).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.ad.cotangents import Scattered
    >>> from sparsejac.tracing import trace
    >>> def f(x):
    ...     a = Scattered(x[0], np.array([2]), np.array([0]), np.array([3.0]), (4,))
    ...     b = Scattered(x[1:3], np.array([0, 2]), np.array([0, 1]), np.ones(2), (4,))
    ...     return (a + b).value()           # 3 x[0] at 2, x[1] at 0, x[2] at 2
    >>> prog = trace(f, np.array([1.0, 2.0, 5.0]))
    >>> prog.out.value
    array([2., 0., 8., 0.])
    """

    __slots__ = ("const", "index", "parts", "pos", "rows", "shape", "vals", "which")

    def __init__(self, part: Any, rows: np.ndarray, pos: np.ndarray, vals: np.ndarray,
                 shape: tuple[int, ...]) -> None:
        self.shape = shape
        self.parts: list[Any] = []
        self.index: dict[int, int] = {}
        self.rows: list[np.ndarray] = []
        self.which: list[np.ndarray] = []
        self.pos: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []
        self.const: Any = None
        self._join(part, rows, pos, vals)

    def _part(self, part: Any) -> int:
        """The index of ``part`` (a flat Tracer), each traced variable once."""
        key = id(part._var)
        got = self.index.get(key)
        if got is None:
            got = self.index[key] = len(self.parts)
            self.parts.append(part)
        return got

    def _join(self, part: Any, rows: np.ndarray, pos: np.ndarray, vals: np.ndarray) -> None:
        k = self._part(part)
        self.rows.append(np.asarray(rows, dtype=np.int64))
        self.which.append(np.full(np.size(rows), k, dtype=np.int64))
        self.pos.append(np.asarray(pos, dtype=np.int64))
        self.vals.append(np.asarray(vals, dtype=np.float64))

    def __add__(self, other: Any) -> Scattered:
        if isinstance(other, Scattered):
            remap = np.array([self._part(p) for p in other.parts], dtype=np.int64)
            for rows, which, pos, vals in zip(other.rows, other.which, other.pos, other.vals,
                                              strict=True):
                self.rows.append(rows)
                self.which.append(remap[which] if which.size else which)
                self.pos.append(pos)
                self.vals.append(vals)
            if other.const is not None:
                self._add_const(other.const)
        elif isinstance(other, Tracer):
            flat = other if other.ndim <= 1 else other.reshape(-1)
            every = np.arange(max(int(np.prod(flat.shape)), 1), dtype=np.int64)
            self._join(flat, every, every, np.ones(every.size))
        else:
            self._add_const(other)
        return self

    __radd__ = __add__
    __array_ufunc__ = None  # ``array + self`` and ``tracer + self`` come to __radd__

    def _add_const(self, c: Any) -> None:
        c = np.broadcast_to(np.asarray(c, dtype=np.float64), self.shape)
        self.const = c.copy() if self.const is None else self.const + c

    def _matrix(self) -> tuple[sp.csr_array, np.ndarray]:
        """``M`` as a CSR matrix over the parts laid end to end, and each part's offset."""
        sizes = np.array([max(int(np.prod(p.shape)), 1) for p in self.parts], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        cols = np.concatenate([offsets[w] + p for w, p in zip(self.which, self.pos,
                                                               strict=True)])
        m = sp.csr_array((np.concatenate(self.vals), (np.concatenate(self.rows), cols)),
                         shape=(int(np.prod(self.shape)), int(sizes.sum())))
        return m, offsets

    def mapped(self, lj: Any, shape: tuple[int, ...]) -> Scattered | None:
        """``R^T @ self`` for a constant step whose local Jacobian ``R`` is ``lj``.

        ``lj`` holds ``R``'s CSR arrays ``const``, ``indices`` and ``indptr`` (its rows are
        the step's outputs). Each entry at output ``i`` becomes one entry per nonzero of row
        ``i`` of ``R`` (numpy alone: no matrix is built). None where the entries would grow
        beyond :data:`GROWTH` times those and the result's size (the caller records the
        value).
        """
        if self.const is not None:
            return None
        rows = np.concatenate(self.rows)
        indptr = np.asarray(lj.indptr, dtype=np.int64)
        counts = (indptr[1:] - indptr[:-1])[rows]
        total = int(counts.sum())
        size = int(np.prod(shape))
        if total > GROWTH * (rows.size + size):
            return None
        rep = np.repeat(np.arange(rows.size), counts)
        e = np.repeat(indptr[rows] - (np.cumsum(counts) - counts), counts) + np.arange(total)
        const = np.broadcast_to(np.asarray(lj.const, dtype=np.float64), (int(indptr[-1]),))
        out = Scattered.__new__(Scattered)
        out.shape = shape
        out.parts = list(self.parts)
        out.index = dict(self.index)
        out.rows = [np.asarray(lj.indices, dtype=np.int64)[e]]
        out.which = [np.concatenate(self.which)[rep]]
        out.pos = [np.concatenate(self.pos)[rep]]
        out.vals = [np.concatenate(self.vals)[rep] * const[e]]
        out.const = None
        if total > 2 * size + 64:  # the same entries by several paths: summed now
            out._compact()
        return out

    def _compact(self) -> None:
        """Sum the entries with the same output and part position (one array each)."""
        m, offsets = self._matrix()
        coo = m.tocoo()  # (CSR construction summed the duplicates)
        which = np.searchsorted(offsets, coo.col, side="right") - 1
        self.rows = [coo.row.astype(np.int64)]
        self.which = [which.astype(np.int64)]
        self.pos = [coo.col.astype(np.int64) - offsets[which]]
        self.vals = [coo.data.astype(np.float64)]

    def value(self) -> Any:
        """The sum, recorded: one stack of the scalar parts, one concatenation, one map.

        A vector part of which at most half the positions are read contributes those alone
        (a gather): an element of a buffer read in a loop does not concatenate the buffer.
        """
        which = np.concatenate(self.which)
        pos = np.concatenate(self.pos)
        col = np.zeros(which.size, dtype=np.int64)  # each entry's position in the whole
        scalars: list[Any] = []
        vectors: list[tuple[Any, np.ndarray, np.ndarray]] = []  # (piece, entries, columns)
        # each part's entries by one sort (a scan per part grows with parts times entries)
        by_part = np.argsort(which, kind="stable")
        bounds = np.searchsorted(which[by_part], np.arange(len(self.parts) + 1))
        for k, part in enumerate(self.parts):
            mine = by_part[bounds[k]:bounds[k + 1]]
            if mine.size == 0:
                continue
            if part.ndim == 0:
                col[mine] = len(scalars)
                scalars.append(part)
                continue
            used, at = np.unique(pos[mine], return_inverse=True)
            if 2 * used.size <= part.shape[0]:
                vectors.append((part[used], mine, at))
            else:
                vectors.append((part, mine, pos[mine]))
        offset = len(scalars)
        for piece, mine, at in vectors:
            col[mine] = offset + at
            offset += int(piece.shape[0])
        pieces = ([np.stack(scalars)] if scalars else []) + [v[0] for v in vectors]
        if not pieces:  # every contribution mapped away (a value overwritten before a read)
            return np.zeros(self.shape) if self.const is None else self.const.copy()
        whole = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
        mat = sp.csr_array((np.concatenate(self.vals), (np.concatenate(self.rows), col)),
                           shape=(int(np.prod(self.shape)), offset))
        g = apply_sparse_map([whole], [mat], self.shape)
        return g if self.const is None else g + self.const


def value(ct: Any) -> Any:
    """A cotangent as a value (a :class:`Scattered` one recorded now)."""
    return ct.value() if isinstance(ct, Scattered) else ct

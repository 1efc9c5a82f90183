"""The entry algebra of the prepared engine: Jacobians kept as sorted entry lists.

The Jacobian of one variable with respect to the *sources* (``x`` and a few materialised
intermediates) is a list of entries ``(row, source, col)`` with a constant part folded at
preparation and, for value-dependent entries, a slot recomputed at each evaluation
(:class:`Entries`). One int64 key per entry (:class:`KeyCodec`) orders them, and
:func:`union_keys` merges the key lists of a node's operands (the structure of the sparse
chain rule). :class:`SpreadPlan` says how an entry list is added into a compressed block.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sparsejac.ad.kernels import (
    keys_are_pattern,
    merge2,
    merge_many,
    merge_rows,
    move_rows,
    positions_in,
    union_size,
)
from sparsejac.numeric import is_arange, shared_arange

__all__ = ["Entries", "KeyCodec", "SpreadPlan", "is_arange", "is_identity_of_source",
           "union_keys"]


def _increasing(a: np.ndarray) -> bool:
    return a.size < 2 or bool(np.all(a[1:] > a[:-1]))


def union_keys(keys: list[np.ndarray], low: int | None = None,
               joined: np.ndarray | None = None) -> tuple[np.ndarray, list[np.ndarray]]:
    """Sorted unique union of key arrays and, per array, the positions of its keys in it.

    ``low``: where the row field of bit-field keys begins (None: keys of another layout);
    ``joined``: the arrays one after the other in one buffer, when they are its views.
    """
    full = [k for k in keys if k.size]
    if (len(full) > 1 and all(a[-1] < b[0] for a, b in itertools.pairwise(full))
            and all(_increasing(k) for k in full)):
        # ordered disjoint blocks (a concatenation): the union is the blocks in a row
        starts = np.cumsum([0] + [k.size for k in keys])
        return (np.concatenate(keys) if joined is None else joined), [
            shared_arange(int(starts[1])) if i == 0 else  # (read-only, shared)
            np.arange(starts[i], starts[i + 1], dtype=np.int64) for i in range(len(keys))]
    if len(keys) > 2:  # one merge of every run (a deferred linear combination's terms)
        many = _merge_runs(keys, low, joined)
        if many is not None:
            return many
    if all(_increasing(k) for k in keys):  # linear merges (elementwise ops, gathers)
        u = keys[0]
        if len(keys) == 1:
            return u, [shared_arange(u.size)]  # (read-only, shared: positions in order)
        u, iu, ik = _merge(u, keys[1])
        invs = [iu, ik]  # the first operand's positions are iu itself: no identity to compose
        for k in keys[2:]:
            u, iu, ik = _merge(u, k)
            invs = [iu if v is None else v if iu is None else iu[v] for v in invs]
            invs.append(ik)
        return u, [shared_arange(u.size) if v is None else v for v in invs]
    allk = np.concatenate(keys)
    order = np.argsort(allk, kind="stable")
    sk = allk[order]
    first = np.ones(sk.size, dtype=bool)
    first[1:] = sk[1:] != sk[:-1]
    inverse = np.empty(allk.size, dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    bounds = np.cumsum([0] + [k.size for k in keys])
    return sk[first], [inverse[bounds[i]:bounds[i + 1]] for i in range(len(keys))]


def _merge_runs(keys: list[np.ndarray], low: int | None, joined: np.ndarray | None = None
                ) -> tuple[np.ndarray, list[np.ndarray]] | None:
    """:func:`union_keys` by one merge of all the arrays; None if one is not increasing.

    A row at a time (:func:`~sparsejac.ad.kernels.merge_rows`) for bit-field keys of a few
    entries per row, else through a heap of the arrays' heads.
    """
    bounds = np.cumsum([0] + [k.size for k in keys])
    allk = np.concatenate(keys) if joined is None else joined
    # positions as int32 where they fit: the kernels' index type (half the memory traffic)
    inv = np.empty(allk.size, np.int32 if allk.size < np.iinfo(np.int32).max else np.int64)
    u = np.empty(allk.size, np.int64)
    size = -2 if low is None else int(merge_rows(allk, bounds, low, u, inv))
    if size == -2:  # (a row of more than 64 entries)
        size = int(merge_many(allk, bounds, u, inv))
    if size < 0:
        return None
    del allk
    u.resize(size, refcheck=False)  # (in place: the allocator gives the tail back)
    return u, [inv[bounds[i]:bounds[i + 1]] for i in range(len(keys))]


def _rows_between(indptr: np.ndarray, start: int, stop: int) -> np.ndarray:
    """The row of each nonzero ``start .. stop - 1`` of a CSR pattern, from its pointer."""
    first = int(np.searchsorted(indptr, start, side="right")) - 1
    last = int(np.searchsorted(indptr, stop - 1, side="right")) - 1 if stop > start else first
    bounds = np.clip(np.asarray(indptr[first:last + 2], dtype=np.int64), start, stop)
    return np.repeat(np.arange(first, last + 1, dtype=np.int64), np.diff(bounds))


def _merge(a: np.ndarray, b: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Union of two strictly increasing key arrays and each one's positions in it.

    A position map is None where it is the identity: when one array holds the other (an
    operand whose entries the other operand's include, as a stencil's diagonal), the union is
    that array itself and only the other's positions are made.
    """
    k = union_size(a, b)
    if k == a.size:
        return a, None, _positions_in(a, b)
    if k == b.size:
        return b, _positions_in(b, a), None
    # the outputs are numpy's (huge pages for large arrays; see merge2)
    u, ia, ib = np.empty(k, np.int64), np.empty(a.size, np.int64), np.empty(b.size, np.int64)
    merge2(a, b, u, ia, ib)
    return u, ia, ib


def _positions_in(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.empty(b.size, np.int64)
    positions_in(a, b, out)
    return out


class _Decoded:
    """One of an :class:`Entries`' index arrays, decoded from its keys on first read."""

    def __init__(self, index: int, doc: str) -> None:
        self.index = index
        self.__doc__ = doc

    def __get__(self, obj: Entries | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        if self.index == 0:  # the rows alone (a diagonal local Jacobian's owners)
            return obj._decoded_rows()
        if obj._srcs is not None and obj._cols is not None:  # (rows not built for these)
            return obj._srcs if self.index == 1 else obj._cols
        return obj._decoded()[self.index]


@dataclass
class Entries:
    """The Jacobian of one variable with respect to the sources, entry by entry.

    Entries are sorted by (row, source, col) and unique. The value of entry ``e`` is
    ``const[e]`` (folded at preparation) plus, for ``e = dyn_pos[i]``, the i-th element of the
    evaluation slot ``slot``: only value-dependent entries are ever recomputed.
    """

    size: int  # number of rows (elements of the variable)
    _rows: np.ndarray | None
    _srcs: np.ndarray | None
    _cols: np.ndarray | None
    const: np.ndarray
    slot: int | None = None
    dyn_pos: np.ndarray | None = None  # sorted entry positions with a dynamic part
    _ptr: np.ndarray | None = field(default=None, repr=False)
    _spread: SpreadPlan | None = field(default=None, repr=False)
    _groups: list[tuple[int, np.ndarray | None, np.ndarray, np.ndarray]] | None = field(
        default=None, repr=False)
    #: the entries' keys and their codec, when built from keys (rows, sources and columns are
    #: decoded on first use: a chain of elementwise operations never needs them)
    _keys: np.ndarray | None = field(default=None, repr=False)
    _codec: KeyCodec | None = field(default=None, repr=False)
    _const_any: bool | None = field(default=None, repr=False)
    #: the CSR arrays :meth:`is_x_pattern` last found equal to the entries
    _matched: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    @classmethod
    def from_keys(cls, size: int, keys: np.ndarray, codec: KeyCodec, const: np.ndarray,
                  slot: int | None = None, dyn_pos: np.ndarray | None = None) -> Entries:
        """Entries given by their sorted unique ``keys`` (decoded when first needed)."""
        return cls(size, None, None, None, const, slot, dyn_pos, _keys=keys, _codec=codec)

    def _decoded(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._srcs is None or self._cols is None:
            assert self._codec is not None
            assert self._keys is not None
            rows, self._srcs, self._cols = self._codec.decode(self._keys,
                                                              rows=self._rows is None)
            if self._rows is None:
                self._rows = rows
        return self._decoded_rows(), self._srcs, self._cols

    def _decoded_rows(self) -> np.ndarray:
        if self._rows is None:
            if self._keys is None:  # a pattern's nonzeros (set_pattern): from its pointer
                assert self._ptr is not None
                assert self._cols is not None
                self._rows = _rows_between(self._ptr, 0, int(self._cols.size))
            else:
                assert self._codec is not None
                self._rows = self._codec.decode_rows(self._keys)
        return self._rows

    rows = _Decoded(0, "The row (output element) of every entry.")
    srcs = _Decoded(1, "The source of every entry.")
    cols = _Decoded(2, "The column (element of its source) of every entry.")

    def set_pattern(self, indptr: np.ndarray, cols: np.ndarray) -> None:
        """Take a pattern's CSR arrays as the index arrays (equal to the entries'); no keys.

        The source of every entry is 0 (a broadcast zero); the rows are rebuilt from the
        row pointer only by a path that reads them (8 bytes per entry not kept otherwise).
        """
        self._ptr = np.asarray(indptr, dtype=np.int64)
        self._rows, self._srcs, self._cols = None, np.broadcast_to(np.int64(0), cols.shape), cols
        self._keys = self._codec = None

    def keys(self, codec: KeyCodec) -> np.ndarray:
        """The entries' keys under ``codec`` (the stored ones where the layouts agree)."""
        old = self._codec
        if self._keys is not None and old is not None:
            if old.layout == codec.layout:
                return self._keys
            if old.bits and codec.bits and old.bc == codec.bc and old.bs <= codec.bs:
                # a codec of more sources (a wider source field): the fields below the row
                # keep their values, the row moves up (one pass, nothing decoded)
                low = old.bs + old.bc
                moved: np.ndarray = np.left_shift(np.right_shift(self._keys, low),
                                                  codec.bs + codec.bc)
                moved |= self._keys & ((1 << low) - 1)
                return moved
        return codec.encode(self.rows, self.srcs, self.cols)

    def is_x_pattern(self, indptr: np.ndarray, cols: np.ndarray) -> bool:
        """Whether the entries are exactly a pattern's nonzeros, from source 0, in CSR order.

        ``indptr`` and ``cols`` are the pattern's CSR arrays (``self.size + 1`` row pointers).
        Compared through the keys, a chunk at a time, when the entries have them: neither
        decoded index arrays (24 bytes per entry) nor the pattern's rows are made.
        """
        if self.nnz != cols.size or indptr.size != self.size + 1:
            return False
        if self._matched is not None and self._matched[0] is indptr and self._matched[1] is cols:
            return True  # (checked already: the pipeline asks before sharing the pattern)
        same = self._same_pattern(indptr, cols)
        if same:
            self._matched = (indptr, cols)
        return same

    def _same_pattern(self, indptr: np.ndarray, cols: np.ndarray) -> bool:
        step = 1 << 20
        if self._keys is None or self._codec is None:
            return ((not self.nnz or int(self.srcs.max()) == 0)
                    and bool(np.array_equal(self.ptr, indptr))
                    and bool(np.array_equal(self.cols, cols)))
        keys, codec = self._keys, self._codec
        if codec.bits:  # one compiled pass
            return bool(keys_are_pattern(keys, indptr, cols, codec.bs + codec.bc))
        zero = np.zeros(1, dtype=np.int64)  # the source of every entry (broadcast)
        return all(np.array_equal(keys[s:s + step], codec.encode(
            _rows_between(indptr, s, min(s + step, cols.size)), zero, cols[s:s + step]))
            for s in range(0, cols.size, step))

    def drop_keys(self) -> None:
        """Keep the decoded arrays only (8 bytes per entry less)."""
        self._decoded()
        self._keys = self._codec = None

    @property
    def spread(self) -> SpreadPlan:
        """Precomputed spreading plan (see :class:`SpreadPlan`)."""
        if self._spread is None:
            self._spread = SpreadPlan.of(self)
        return self._spread

    @property
    def nnz(self) -> int:
        """Number of entries."""
        if self._rows is None and self._keys is not None:
            return int(self._keys.size)
        if self._rows is None and self._cols is not None:
            return int(self._cols.size)
        return int(self.rows.size)

    @property
    def ptr(self) -> np.ndarray:
        """Row pointer (CSR over rows)."""
        if self._ptr is None:
            codec = self._codec
            if self._rows is None and self._keys is not None and codec is not None and codec.bits:
                # sorted keys with the row in the high bits: where each row's keys begin
                rows = np.arange(self.size + 1, dtype=np.int64)
                self._ptr = np.searchsorted(self._keys, rows << (codec.bs + codec.bc))
                return self._ptr
            ptr = np.zeros(self.size + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.rows, minlength=self.size), out=ptr[1:])
            self._ptr = ptr
        return self._ptr

    @property
    def by_source(self) -> list[tuple[int, np.ndarray | None, np.ndarray, np.ndarray]]:
        """``(source, selection, rows, cols)`` per source present (selection None: all)."""
        if self._groups is None:
            if self.nnz == 0:
                self._groups = []
            elif bool(np.all(self.srcs == self.srcs[0])):
                self._groups = [(int(self.srcs[0]), None, self.rows, self.cols)]
            else:
                present = np.flatnonzero(np.bincount(self.srcs))
                self._groups = []
                for s in present:
                    sel = np.flatnonzero(self.srcs == s)
                    self._groups.append((int(s), sel, self.rows[sel], self.cols[sel]))
        return self._groups

    @property
    def all_dynamic(self) -> bool:
        """Whether every entry has a dynamic part (``dyn_pos`` is ``0 .. nnz-1``)."""
        return self.dyn_pos is not None and self.dyn_pos.size == self.nnz

    @property
    def const_any(self) -> bool:
        """Whether any constant part is nonzero (else products with it fold to nothing)."""
        if self._const_any is None:
            self._const_any = bool(np.any(self.const))
        return self._const_any

    def dyn_index(self) -> np.ndarray:
        """For every entry, its index in the dynamic part (-1: constant entry).

        Read-only when every entry is dynamic (one shared ``arange``, no allocation).
        """
        if self.all_dynamic:
            return shared_arange(self.nnz)
        idx = np.full(self.nnz, -1, dtype=np.int64)
        if self.dyn_pos is not None:
            idx[self.dyn_pos] = np.arange(self.dyn_pos.size, dtype=np.int64)
        return idx

    @staticmethod
    def identity(size: int, src: int) -> Entries:
        """The entries of a source itself: the identity."""
        ar = np.arange(size, dtype=np.int64)
        return Entries(size, ar, np.full(size, src, dtype=np.int64), ar.copy(), np.ones(size))


@dataclass
class SpreadPlan:
    """How to add an entry set into a block: constant x-part once per seed, the rest per call."""

    const0: tuple[np.ndarray, np.ndarray, np.ndarray]  # rows, cols, values of x-source entries
    dyn0: tuple[np.ndarray, np.ndarray, np.ndarray] | None  # rows, cols, index into dyn values
    others: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]  # source, rows, cols, positions

    @staticmethod
    def of(e: Entries) -> SpreadPlan:
        """The spreading plan of ``e``."""
        x0 = e.srcs == 0
        const0 = (e.rows[x0], e.cols[x0], e.const[x0])
        dyn0 = None
        if e.dyn_pos is not None:
            d = e.dyn_pos[x0[e.dyn_pos]]
            idx = np.flatnonzero(x0[e.dyn_pos])
            if d.size:
                dyn0 = (e.rows[d], e.cols[d], idx)
        others = []
        for src in np.flatnonzero(np.bincount(e.srcs[~x0])) if (~x0).any() else ():
            pos = np.flatnonzero(e.srcs == src)
            others.append((int(src), e.rows[pos], e.cols[pos], pos))
        return SpreadPlan(const0, dyn0, others)


class KeyCodec:
    """One int64 key per (row, source, column) entry, ordered as the triples are.

    Bit fields (``row << (bs + bc) | source << bc | column``) when they fit in 62 bits, so
    that decoding is shifts and masks; otherwise the mixed-radix number
    ``(row * n_sources + source) * n_columns + column`` (the same order, decoded by division).
    """

    def __init__(self, n_rows: int, n_sources: int, n_columns: int) -> None:
        self.bc = (max(n_columns, 1) - 1).bit_length()
        self.bs = (max(n_sources, 1) - 1).bit_length()
        br = (max(n_rows, 1) - 1).bit_length()
        self.bits = br + self.bs + self.bc <= 62
        self.n_sources, self.n_columns = n_sources, max(n_columns, 1)
        #: keys of two codecs with the same layout are the same numbers (the row count only
        #: decides whether bit fields fit)
        self.layout = (True, self.bs, self.bc) if self.bits else (False, n_sources,
                                                                  self.n_columns)

    def encode(self, rows: np.ndarray, srcs: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """The keys of the triples ``(rows[i], srcs[i], cols[i])``."""
        rows = rows.astype(np.int64, copy=False)
        keys: np.ndarray
        if self.bits:
            keys = (np.left_shift(rows, self.bs + self.bc) | np.left_shift(srcs, self.bc)
                    | cols)
        else:
            keys = (rows * self.n_sources + srcs) * self.n_columns + cols
        return keys

    def map_rows(self, keys: np.ndarray, shift: int, stride: int,
                 out: np.ndarray | None = None) -> np.ndarray:
        """The keys with every row ``r`` moved to ``shift + stride r`` (order kept).

        Written into ``out`` when given (as long as ``keys``), else a new array (``keys``
        itself when nothing moves).
        """
        if shift == 0 and stride == 1:
            if out is None:
                return keys
            out[...] = keys
            return out
        if self.bits:
            if out is None:
                out = np.empty(keys.size, np.int64)
            move_rows(keys, self.bs + self.bc, shift, stride, out)  # (one compiled pass)
            return out
        span = self.n_sources * self.n_columns
        rows = keys // span
        moved: np.ndarray = (rows * stride + shift) * span + (keys - rows * span)
        if out is None:
            return moved
        out[...] = moved
        return out

    def decode(self, keys: np.ndarray, rows: bool = True
               ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """``(rows, srcs, cols)`` of ``keys`` (rows None when ``rows`` is false)."""
        if self.bits:
            return (self.decode_rows(keys) if rows else None,
                    np.right_shift(keys, self.bc) & ((1 << self.bs) - 1),
                    keys & ((1 << self.bc) - 1))
        span = self.n_sources * self.n_columns
        r = keys // span
        rem = keys - r * span
        srcs = rem // self.n_columns
        return (r if rows else None), srcs, rem - srcs * self.n_columns

    def decode_rows(self, keys: np.ndarray) -> np.ndarray:
        """The rows of ``keys``."""
        if self.bits:
            out: np.ndarray = np.right_shift(keys, self.bs + self.bc)
            return out
        return keys // (self.n_sources * self.n_columns)


def is_identity_of_source(e: Entries) -> bool:
    """Whether ``e`` is the identity on one source (a variable that is a source itself)."""
    return (
        e.slot is None and e.nnz == e.size and bool(np.all(e.srcs == e.srcs[0] if e.nnz else True))
        and is_arange(e.rows, e.size) and is_arange(e.cols, e.size) and bool(np.all(e.const == 1))
    )

"""The symbolic sparse chain rule of the prepared engine, and its value steps.

At preparation, :func:`chain` turns one node's local Jacobians (``LocalJac``: fixed structure,
constant or value-dependent values) and the entries of its inputs into the entries of its
output, ``J_out = sum_k R_k @ J_k``: the structure and every index map are computed once,
constant products are folded, and what depends on values becomes a :class:`ValueStep` — a list
of :class:`Contribution` ``acc[target] += r[r_idx] * j[j_idx] * scale`` over precomputed
index arrays. At evaluation :func:`apply_contributions` recomputes only those.

Values live in numbered *slots* (:class:`Slots`): the values of a node's value-dependent
local Jacobians and the dynamic part of its entries. A slot that is only a gather and/or a
constant scaling of another (reshape, slicing, ``-x``, ``x / 2``) is *virtual*: nothing is
computed, readers read through it (:meth:`Slots.resolve`).

Every contribution goes through one compiled kernel (:func:`sparsejac.ad.kernels.contribute`),
with the convention of :func:`sparsejac.numeric.mul0`: a zero factor gives zero even against
inf or nan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sparsejac.ad.entries import Entries, KeyCodec, is_arange, union_keys
from sparsejac.ad.kernels import contribute, expand_ranges, gather_keys, rank_marked
from sparsejac.numeric import mul0, shared_arange
from sparsejac.tracing import Node

__all__ = ["Contribution", "Slots", "ValueStep", "apply_contributions", "chain"]

_INDEX_DTYPE = np.dtype(np.int32)
_NO_INDEX = np.empty(0, dtype=_INDEX_DTYPE)
_INT32_MAX = int(np.iinfo(np.int32).max)


def _compact(idx: np.ndarray | None) -> np.ndarray:
    """An index array of the kernels: int32 (half the memory traffic); empty = identity."""
    if idx is None:
        return _NO_INDEX
    if idx.size and int(idx.max()) >= np.iinfo(np.int32).max:  # pragma: no cover - > 2**31
        raise ValueError("prepared programs support fewer than 2**31 entries per variable")
    return np.ascontiguousarray(idx, dtype=_INDEX_DTYPE).ravel()


def _flat(a: Any) -> np.ndarray:
    """``a`` as a 1-D float64 array (a scalar as one element), without a copy when it is one."""
    return np.ascontiguousarray(a, dtype=np.float64).reshape(-1)


@dataclass
class Contribution:
    """``acc[target] += r[r_idx] * j[j_idx] * scale`` over the dynamic pairs of one input.

    ``r`` is the local Jacobian's value: the constant ``r_const`` or slot ``r_slot``; ``j``
    the constant ``j_const`` or slot ``j_slot`` (the dynamic part of the input's entries).
    Index arrays are int32; an empty one means "all, in order"; a one-element ``r``/``j`` is
    a scalar. ``target`` empty: the pairs are the accumulator's positions in order.
    """

    r_const: np.ndarray | None
    r_slot: int | None
    r_idx: np.ndarray
    j_const: np.ndarray | None
    j_slot: int | None
    j_idx: np.ndarray
    target: np.ndarray
    scale: float = 1.0


@dataclass
class ValueStep:
    """Recompute the dynamic values of one node: its local Jacobian values and entries."""

    node: Node | None  # (None: a linear combination, see combine)
    local_slots: list[tuple[int, Any]]  # (slot, LocalJac) of value-dependent local Jacobians
    slot: int  # slot of the node's dynamic entry values
    size: int  # number of dynamic entries
    contributions: list[Contribution]


@dataclass
class Slots:
    """Slot numbering, sizes and virtual slots of a prepared program."""

    count: int = 0
    sizes: dict[int, int] = field(default_factory=dict)
    #: slot -> (base slot, index into it or None, scale)
    virtual: dict[int, tuple[int, np.ndarray | None, float]] = field(default_factory=dict)

    def new(self, size: int) -> int:
        """A fresh slot of ``size`` values."""
        self.count += 1
        self.sizes[self.count - 1] = int(size)
        return self.count - 1

    def resolve(self, slot: int, idx: np.ndarray | None) -> tuple[int, np.ndarray | None, float]:
        """A computed slot, an index into it and a scale equal to ``slot[idx]``."""
        scale = 1.0
        while slot in self.virtual:
            base, vidx, vscale = self.virtual[slot]
            if vidx is not None:
                idx = vidx if idx is None else vidx[idx]
            scale *= vscale
            slot = base
        if idx is not None and is_arange(idx, self.sizes.get(slot, -1)):
            idx = None
        return slot, idx, scale

    def value(self, values: list[Any], slot: int) -> np.ndarray:
        """Values of a slot, computed or virtual, from the per-call ``values``."""
        if slot not in self.virtual:
            return np.asarray(values[slot])
        base, idx, scale = self.resolve(slot, None)
        v = values[base] if idx is None else np.asarray(values[base])[idx]
        return np.asarray(v * scale if scale != 1.0 else v)


def chain(node: Node | None, ljs: Sequence[Any], operands: Sequence[Entries | None],
          n_sources: int, max_source: int, slots: Slots, size: int | None = None
          ) -> tuple[Entries, ValueStep | None]:
    """Symbolic ``J_out = sum_k R_k @ J_k``: structure, index maps, constant folding.

    Parameters
    ----------
    node : Node or None
        The node; ``ljs[k]`` is its local Jacobian with respect to input ``k`` (None: none).
        None for a linear combination of terms (:func:`combine`), whose ``size`` is given.
    operands : sequence of Entries
        The entries of each input with a local Jacobian (``operands[k]`` for ``ljs[k]``).
    n_sources, max_source : int
        Number of sources and the largest source size (the key codec's ranges).
    slots : Slots
        Where new value slots are allocated.

    Returns
    -------
    tuple
        The output's entries, and the value step that recomputes their dynamic part
        (None when every value is constant or only reads another slot).
    """
    if size is None:
        assert node is not None
        size = node.out.size
    codec = KeyCodec(size, n_sources, max(max_source, 1))
    local_slots: list[tuple[int, Any]] = []
    parts, uniq, inverses = _structure(ljs, operands, codec, size, slots, local_slots)
    if not parts:
        z = np.zeros(0, np.int64)
        return Entries(size, z, z, z, np.zeros(0)), None
    n_out = int(uniq.size)
    base = np.zeros(n_out)
    # dynamic terms: (r_const, r_slot, r_idx, j_const, j_slot, j_idx, out positions, scale)
    terms: list[tuple[Any, ...]] = []
    for (lj, jk, owner, pos, r_slot), out_pos in zip(parts, inverses, strict=True):
        if owner is None and (r_slot is not None or np.ndim(lj.const) != 0):
            owner = jk.rows  # the local entry of each J_k entry: its row (diagonal)
        r_c = None if r_slot is not None else (
            lj.const if np.ndim(lj.const) == 0 else np.asarray(lj.const)[owner])
        if jk.const_any:  # (a J_k with only dynamic values has nothing to fold)
            jconst = jk.const if pos is None else jk.const[pos]
            if r_slot is None:  # constant local Jacobian: fold its product with const J
                # base[out_pos] += r_c * jconst in one compiled pass (mul0's zero convention);
                # positions in order (one operand's entries, kept) are the identity target
                target = _NO_INDEX if is_arange(out_pos, n_out) else out_pos
                contribute(base, target, _flat(r_c), _NO_INDEX, _flat(jconst), _NO_INDEX,
                           out_pos.size, False, 1.0)
            else:  # dynamic local Jacobian times the constant part of J
                nzj = np.flatnonzero(jconst != 0)
                if nzj.size:
                    assert owner is not None
                    terms.append((None, r_slot, owner[nzj], jconst[nzj], None, None,
                                  out_pos[nzj], 1.0))
        if jk.slot is not None:  # anything times the dynamic part of J
            if jk.all_dynamic:  # every entry: the dynamic index is the entry's own
                if not out_pos.size:
                    continue
                sel, didx = None, (None if pos is None else pos)
            elif pos is None:  # J_k's entries in order: its dynamic ones are dyn_pos
                sel, didx = jk.dyn_pos, None
                if sel is None or not sel.size:
                    continue
            else:
                didx = jk.dyn_index()[pos]
                sel = np.flatnonzero(didx >= 0)
                if not sel.size:
                    continue
                didx = didx[sel]
            # read through virtual slots: a gather or a scaling of another slot
            j_slot, j_idx, scale = slots.resolve(jk.slot, didx)
            rc = r_c if (r_c is None or np.ndim(r_c) == 0 or sel is None) else r_c[sel]
            if rc is not None:
                rc, scale = rc * scale, 1.0
            r_idx = None if owner is None or r_slot is None else (
                owner if sel is None else owner[sel])
            terms.append((rc, r_slot, r_idx, None, j_slot, j_idx,
                          out_pos if sel is None else out_pos[sel], scale))
    if not terms:
        return Entries.from_keys(size, uniq, codec, base), None
    dyn_pos, rank = _dynamic_positions([t[6] for t in terms], n_out)
    contributions = []
    for r_const, r_slot, r_idx, j_const, j_slot, j_idx, out_pos, scale in terms:
        if rank is None:
            target = out_pos
        else:
            target = rank[out_pos]
            target -= 1  # (in place: one nnz-sized temporary less)
        in_order = is_arange(target, dyn_pos.size)
        r_size = None if r_slot is None else slots.sizes.get(r_slot)
        j_size = None if j_slot is None else slots.sizes.get(j_slot)
        contributions.append(Contribution(
            r_const=None if r_const is None else _flat(r_const),
            r_slot=r_slot,
            r_idx=_compact(None if r_size is not None and is_arange(r_idx, r_size) else r_idx),
            j_const=None if j_const is None else _flat(j_const),
            j_slot=j_slot,
            j_idx=_compact(None if j_size is not None and is_arange(j_idx, j_size) else j_idx),
            target=_compact(None if in_order else target),
            scale=float(scale),
        ))
    slot = slots.new(int(dyn_pos.size))
    c0 = contributions[0]
    if (len(contributions) == 1 and c0.r_slot is None and c0.r_const is not None
            and c0.r_const.size == 1 and c0.target.size == 0 and c0.j_slot is not None):
        # a gather and/or a constant scaling of another slot (reshape, slicing, x - const,
        # -x, x / 2): nothing to compute; consumers read through it (Slots.resolve)
        slots.virtual[slot] = (c0.j_slot, c0.j_idx if c0.j_idx.size else None,
                               float(c0.r_const[0]) * c0.scale)
        step = None
    else:
        step = ValueStep(node, local_slots, slot, int(dyn_pos.size), contributions)
    return Entries.from_keys(size, uniq, codec, base, slot, dyn_pos), step


def _structure(ljs: Sequence[Any], operands: Sequence[Entries | None], codec: KeyCodec,
               size: int, slots: Slots, local_slots: list[tuple[int, Any]]
               ) -> tuple[list[tuple[Any, ...]], np.ndarray, list[np.ndarray]]:
    """Each operand's part (its entries' positions and owners) and the union of their keys."""
    parts = []
    keys = []  # each operand's entries' keys in the output's codec
    # a linear combination's keys are written into one buffer, the merge's input (no copy)
    joined = (np.empty(sum(lj.nnz for lj in ljs), np.int64)
              if len(ljs) > 2 and all(isinstance(lj, _Scaled) for lj in ljs) else None)
    at = 0
    for k, lj in enumerate(ljs):
        if lj is None:
            continue
        jk = operands[k]
        assert jk is not None
        r_slot = None
        if lj.dyn is not None:
            r_slot = slots.new(lj.nnz)
            local_slots.append((r_slot, lj))
        pos: np.ndarray | None
        owner: np.ndarray | None
        strided = _strided_diagonal(lj, jk.size, size)
        if strided is not None:  # elementwise, or one operand of a concatenation/interleave
            owner, pos = None, None  # owner: jk.rows, decoded only if needed
            out = None if joined is None else joined[at:at + lj.nnz]
            key = codec.map_rows(jk.keys(codec), *strided, out=out)
            at += lj.nnz
        else:
            ptr = jk.ptr
            total = int(np.sum(ptr[lj.cols + 1] - ptr[lj.cols]))
            pos = np.empty(total, np.int64)
            low_in = _selection_keys(lj, jk, codec, size)
            if low_in is not None:  # output row i takes operand row cols[i]: keys fused
                owner, key = None, np.empty(total, np.int64)
                gather_keys(ptr, lj.cols, jk._keys, low_in, codec.bs + codec.bc, key, pos)
            else:
                owner = np.empty(total, np.int64)
                expand_ranges(ptr, lj.cols, owner, pos)
                key = codec.encode(lj.rows[owner], jk.srcs[pos], jk.cols[pos])
        parts.append((lj, jk, owner, pos, r_slot))
        keys.append(key)
    if not parts:
        return parts, np.zeros(0, np.int64), []
    uniq, inverses = union_keys(keys, codec.bs + codec.bc if codec.bits else None, joined)
    return parts, uniq, inverses


def _selection_keys(lj: Any, jk: Entries, codec: KeyCodec, n_out: int) -> int | None:
    """Where the row field of ``J_k``'s keys begins, when ``lj`` selects one row per row.

    A gather (``x[idx]``, ``np.roll``, a slice of a buffer) whose output row ``i`` is operand
    row ``cols[i]`` times the constant 1: its entries are those rows' entries, keys rewritten
    in one pass (:func:`~sparsejac.ad.kernels.gather_keys`). ``J_k``'s keys may come from an
    earlier codec with fewer sources (a narrower source field): the fields below the row keep
    their values. None for any other local Jacobian, for keys that are not bit fields, and for
    an operand without keys.
    """
    if (lj.dyn is not None or np.ndim(lj.const) != 0 or float(lj.const) != 1.0
            or not codec.bits or lj.nnz != n_out or not is_arange(lj.rows, n_out)):
        return None
    old = jk._codec
    if jk._keys is None or old is None or not old.bits or old.bc != codec.bc or old.bs > codec.bs:
        return None
    return old.bs + old.bc


def _dynamic_positions(targets: list[np.ndarray], n_out: int
                       ) -> tuple[np.ndarray, np.ndarray | None]:
    """The sorted positions some target reaches, and each position's rank among them.

    The rank map (``rank[p] - 1`` for a reached ``p``) is None when every position is
    reached (the rank is the position; the positions are then one shared read-only
    ``arange``). One byte per position marks them: no concatenation of the targets and no
    counts.
    """
    mark = np.zeros(n_out, dtype=bool)
    for t in targets:
        mark[t] = True
    count = int(np.count_nonzero(mark))
    if count == n_out:
        return shared_arange(n_out), None
    dyn_pos = np.empty(count, dtype=np.int64)
    # rank + 1 of every reached position: 4 bytes each (the targets are int32 anyway)
    rank = np.empty(n_out, dtype=np.int32 if count < _INT32_MAX else np.int64)
    rank_marked(mark, dyn_pos, rank)  # (both in one pass)
    return dyn_pos, rank


def _strided_diagonal(lj: Any, n_in: int, n_out: int) -> tuple[int, int] | None:
    """``(s, t)`` if a local Jacobian's entry ``i`` is ``(s + t i, i)`` for every input ``i``.

    The diagonal of an elementwise operation (``s, t = 0, 1``), or one operand of a
    concatenation (``t = 1``) or of an interleave (``np.stack(..., axis=-1)``): J_k's
    entries keep their order and move to rows ``s + t r``. None for any other local Jacobian.
    """
    if isinstance(lj, _Scaled):
        return lj.start, lj.step
    if lj.nnz != n_in or not n_in or not is_arange(lj.cols, n_in):
        return None
    if lj.rows is lj.cols:
        return (0, 1) if n_in <= n_out else None
    s = int(lj.rows[0])
    t = int(lj.rows[1]) - s if n_in > 1 else 1
    if s < 0 or t < 1 or s + t * (n_in - 1) >= n_out:
        return None
    if not np.array_equal(lj.rows, s + t * np.arange(n_in, dtype=np.int64)):
        return None
    return s, t


def apply_contributions(step: ValueStep, values: list[Any], out: np.ndarray) -> np.ndarray:
    """The dynamic entry values of ``step`` into ``out`` (``step.size`` float64s).

    ``values`` holds the per-call slot values. Each contribution is one call of the fused
    kernel: no temporaries, the zero-times-inf convention of :func:`~sparsejac.numeric.mul0`.
    """
    for i, c in enumerate(step.contributions):
        # the first contribution writes when it covers every position in order, else zero first
        assign = i == 0 and c.target.size == 0
        if i == 0 and not assign:
            out.fill(0.0)
        r = c.r_const if c.r_slot is None else _flat(values[c.r_slot])
        j = c.j_const if c.j_slot is None else _flat(values[c.j_slot])
        assert r is not None
        assert j is not None
        n = c.target.size if c.target.size else out.size
        # the kernel does not check bounds: a rule whose values have the wrong size is a bug
        # that must raise, never read past an array
        if (r.size != 1 and not c.r_idx.size and r.size != n) or (
                j.size != 1 and not c.j_idx.size and j.size != n):
            raise AssertionError(
                f"linearize rule of {_name(step)!r} gave {r.size} and {j.size} values "
                f"for {n} pairs")
        contribute(out, c.target, r, c.r_idx, j, c.j_idx, n, assign, c.scale)
    return out


def _name(step: ValueStep) -> str:
    return "a linear combination" if step.node is None else step.node.prim.name


# -- deferred linear combinations ------------------------------------------------------------

#: A linear combination keeps at most this many terms; a node that would make more merges its
#: operands first (``s = s + s`` in a loop doubles them).
MAX_TERMS = 32
#: ... and at most this many of its terms' entries per output element: terms of one structure
#: summed in turn (an accumulation of stages) would otherwise all stay alive until merged,
#: where merging as they come keeps one (the Brusselator's interleave of its two species
#: holds 8 per element).
MAX_TERM_ENTRIES = 16


@dataclass(frozen=True)
class Term:
    """``scale`` times an entry set whose row ``r`` is output row ``start + step * r``."""

    entries: Entries
    scale: float
    start: int = 0
    step: int = 1


@dataclass(frozen=True)
class _Scaled:
    """The local Jacobian of one :class:`Term`: a strided diagonal of one constant."""

    nnz: int
    const: float
    start: int
    step: int
    dyn: None = None


def linear_terms(node: Node, ljs: Sequence[Any], terms_of: Any) -> list[Term] | None:
    """The output of a node that adds constant multiples of its operands, as terms.

    Elementwise ``+``, ``-``, a product by a constant scalar, a concatenation or interleave
    (``np.stack(..., axis=-1)``): every local Jacobian a constant scalar on a strided
    diagonal. ``terms_of(var)`` gives an operand's own terms (one, ``1 *`` its entries, for a
    variable that is not a combination). None for any other node, and when the combination
    would hold more than :data:`MAX_TERMS` terms or :data:`MAX_TERM_ENTRIES` of their entries
    per output element. Merging the entries of a chain of such
    nodes once, at its end (:func:`combine`), instead of at every node, turns a stencil's
    ``a + b + c + d - 4 e`` from four merges of growing key arrays into one.
    """
    size = node.out.size
    out: list[Term] = []
    for k, lj in enumerate(ljs):
        if lj is None:
            continue
        if lj.dyn is not None or np.ndim(lj.const) != 0 or np.iscomplexobj(lj.const):
            return None
        v = node.inputs[k]
        stride = _strided_diagonal(lj, v.size, size)
        if stride is None:
            return None
        s, t = stride
        c = float(lj.const)
        for term in terms_of(v):
            out.append(Term(term.entries, float(mul0(c, term.scale)), s + t * term.start,
                            t * term.step))
        if len(out) > MAX_TERMS:
            return None
    if sum(t.entries.nnz for t in out) > MAX_TERM_ENTRIES * max(size, 1):
        return None
    return out or None


def combine(terms: Sequence[Term], size: int, n_sources: int, max_source: int, slots: Slots
            ) -> tuple[Entries, ValueStep | None]:
    """The entries of a linear combination (:func:`linear_terms`): one :func:`chain` step."""
    ljs = [_Scaled(t.entries.nnz, t.scale, t.start, t.step) for t in terms]
    return chain(None, ljs, [t.entries for t in terms], n_sources, max_source, slots, size)

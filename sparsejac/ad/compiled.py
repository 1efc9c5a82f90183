"""Prepared compressed evaluation: a recorded program linearised once, replayed many times.

A prepared Jacobian evaluates ``B = J(x) @ S`` (forward) or ``C = W @ J(x)`` (reverse) for
fixed colour seeds at every Newton step, so everything that does not depend on ``x`` is done
once, here, at preparation (Griewank and Walther, *Evaluating Derivatives*, 2nd ed., ch. 9–10,
"preaccumulation of local Jacobians"):

1. Each node's local Jacobian (:meth:`Primitive.linearize`) is a sparse matrix of fixed
   structure whose values are constants or functions of the primal values.
2. Walking the program, the Jacobian of every active variable with respect to the *sources*
   (``x`` and a few materialised intermediates) is kept symbolically as entries
   ``(row, source, col)``: the structure and every index map of the sparse chain rule are
   computed now; constant values (``np.roll``, a stencil's coefficients, ``3 * x``) are
   folded now. At evaluation only value-dependent entries are recomputed, by gathers,
   products and bincounts over precomputed index arrays.
3. A variable is *materialised* as a dense tangent block ``(size, p)`` when its entries would
   outnumber the block (``nnz > size · p``) or when a primitive without ``linearize`` needs it.
4. Seeds from a colouring are 0/1 with one nonzero per row of ``S`` (column of ``W``), so
   spreading entries into ``B`` costs one addition per entry, not ``p``.

The forward sweep fills ``B`` (``m × p``); the reverse sweep fills ``C`` (``q × n``) by walking
the sources backwards. Decompression then reads the Jacobian out of ``B``/``C``.

Only programs recorded without reading values (``Program.value_dependent`` is False) can be
prepared: the structure must hold for every x.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np

from sparsejac.primitives.core import LocalJac
from sparsejac.primitives.elementwise import mul0
from sparsejac.tracing import Node, Program

__all__ = ["PreparedProgram"]

#: An intermediate becomes a dense tangent block when its entries outnumber this fraction of
#: the block (size × width).
_DENSE_FACTOR = 1.0


# ---------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------


@numba.njit(cache=True)
def _spread_onehot(rows, cols, vals, groups, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``out[rows[e], groups[cols[e]]] += vals[e]`` (entries with a negative group skipped)."""
    for e in range(rows.size):
        g = groups[cols[e]]
        if g >= 0:
            out[rows[e], g] += vals[e]


@numba.njit(cache=True)
def _spread_dense(rows, cols, vals, src, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``out[rows[e], :] += vals[e] * src[cols[e], :]``."""
    p = out.shape[1]
    for e in range(rows.size):
        v = vals[e]
        if v == 0.0:  # a zero derivative contributes nothing, even times inf or nan
            continue
        r = rows[e]
        c = cols[e]
        for j in range(p):
            out[r, j] += v * src[c, j]


@numba.njit(cache=True)
def _contribute(acc, target, r, r_idx, j, j_idx, n, assign, scale):  # type: ignore[no-untyped-def]  # pragma: no cover
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


@numba.njit(cache=True)
def _expand_ranges(ptr, keys):  # type: ignore[no-untyped-def]  # pragma: no cover
    """For each ``keys[i]``, the positions ``ptr[keys[i]] .. ptr[keys[i]+1]-1``.

    Returns ``(owner, pos)``: ``owner[t]`` is the i that produced position ``pos[t]``.
    """
    total = 0
    for i in range(keys.size):
        total += ptr[keys[i] + 1] - ptr[keys[i]]
    owner = np.empty(total, np.int64)
    pos = np.empty(total, np.int64)
    t = 0
    for i in range(keys.size):
        for q in range(ptr[keys[i]], ptr[keys[i] + 1]):
            owner[t] = i
            pos[t] = q
            t += 1
    return owner, pos


@numba.njit(cache=True)
def _merge2(a, b):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Union of two strictly increasing key arrays, with each input's positions in it."""
    u = np.empty(a.size + b.size, np.int64)
    ia = np.empty(a.size, np.int64)
    ib = np.empty(b.size, np.int64)
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
    return u[:k], ia, ib


def _increasing(a: np.ndarray) -> bool:
    return a.size < 2 or bool(np.all(a[1:] > a[:-1]))


def _union_keys(keys: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Sorted unique union of key arrays and, per array, the positions of its keys in it."""
    if all(_increasing(k) for k in keys):  # linear merges (elementwise ops, gathers)
        u = keys[0]
        invs = [np.arange(u.size, dtype=np.int64)]
        for k in keys[1:]:
            u, iu, ik = _merge2(u, k)
            invs = [iu[v] for v in invs]
            invs.append(ik)
        return u, invs
    allk = np.concatenate(keys)
    order = np.argsort(allk, kind="stable")
    sk = allk[order]
    first = np.ones(sk.size, dtype=bool)
    first[1:] = sk[1:] != sk[:-1]
    inverse = np.empty(allk.size, dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    bounds = np.cumsum([0] + [k.size for k in keys])
    return sk[first], [inverse[bounds[i]:bounds[i + 1]] for i in range(len(keys))]


# ---------------------------------------------------------------------------------------
# symbolic Jacobians
# ---------------------------------------------------------------------------------------


def _is_arange(a: np.ndarray | None, n: int) -> bool:
    return a is not None and a.size == n and bool(np.array_equal(a, np.arange(n)))


@dataclass
class _Entries:
    """The Jacobian of one variable with respect to the sources, entry by entry.

    Entries are sorted by (row, source, col) and unique. The value of entry ``e`` is
    ``const[e]`` (folded at preparation) plus, for ``e = dyn_pos[i]``, the i-th element of the
    evaluation slot ``slot``: only value-dependent entries are ever recomputed.
    """

    size: int  # number of rows (elements of the variable)
    rows: np.ndarray
    srcs: np.ndarray
    cols: np.ndarray
    const: np.ndarray
    slot: int | None = None
    dyn_pos: np.ndarray | None = None  # sorted entry positions with a dynamic part
    _ptr: np.ndarray | None = field(default=None, repr=False)
    _spread: _SpreadPlan | None = field(default=None, repr=False)

    @property
    def spread(self) -> _SpreadPlan:
        """Precomputed spreading plan (see :class:`_SpreadPlan`)."""
        if self._spread is None:
            self._spread = _SpreadPlan.of(self)
        return self._spread
    _groups: list[tuple[int, np.ndarray | None, np.ndarray, np.ndarray]] | None = field(
        default=None, repr=False)

    @property
    def nnz(self) -> int:
        """Number of entries."""
        return int(self.rows.size)

    @property
    def ptr(self) -> np.ndarray:
        """Row pointer (CSR over rows)."""
        if self._ptr is None:
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

    def dyn_index(self) -> np.ndarray:
        """For every entry, its index in the dynamic part (-1: constant entry)."""
        idx = np.full(self.nnz, -1, dtype=np.int64)
        if self.dyn_pos is not None:
            idx[self.dyn_pos] = np.arange(self.dyn_pos.size, dtype=np.int64)
        return idx

    @staticmethod
    def identity(size: int, src: int) -> _Entries:
        ar = np.arange(size, dtype=np.int64)
        return _Entries(size, ar, np.full(size, src, dtype=np.int64), ar.copy(), np.ones(size))


@dataclass
class _Contribution:
    """``acc[target] += r * j`` over the dynamic pairs of one input.

    ``r`` is the local Jacobian value (``r_const`` or slot ``r_slot``, gathered by ``r_idx``);
    ``j`` is either a constant array over the pairs (``j_const``) or the dynamic part of the
    input's entries (slot ``j_slot`` gathered by ``j_idx``). Index arrays may be None (all,
    in order).
    """

    r_const: Any
    r_slot: int | None
    r_idx: np.ndarray | None
    j_const: Any
    j_slot: int | None
    j_idx: np.ndarray | None
    target: np.ndarray | None
    target_unique: bool
    scale: float = 1.0  # a constant factor of j (from a virtual slot)


@dataclass
class _ValueStep:
    """Recompute the dynamic values of one node: its local Jacobian values and entries."""

    node: Node
    local_slots: list[tuple[int, LocalJac]]  # dyn local Jacobians to evaluate, into slots
    slot: int  # slot of the node's dynamic entry values
    size: int  # number of dynamic entries
    contributions: list[_Contribution]
    #: reused between calls (no allocation, no page faults); a prepared program is therefore
    #: not safe to call from two threads at once
    buffer: np.ndarray | None = None


@dataclass
class _SpreadPlan:
    """How to add an entry set into a block: constant x-part once per seed, the rest per call."""

    const0: tuple[np.ndarray, np.ndarray, np.ndarray]  # rows, cols, values of x-source entries
    dyn0: tuple[np.ndarray, np.ndarray, np.ndarray] | None  # rows, cols, index into dyn values
    others: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]  # source, rows, cols, positions

    @staticmethod
    def of(e: _Entries) -> _SpreadPlan:
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
        return _SpreadPlan(const0, dyn0, others)


@dataclass
class _Source:
    """A materialised variable: its tangent block is computed densely."""

    index: int
    size: int
    shape: tuple[int, ...]
    entries: _Entries | None  # linear combination of earlier sources (None: x or opaque)
    node: Node | None = None  # opaque node producing it
    inputs: list[int | None] = field(default_factory=list)  # sources of the opaque inputs


class _KeyCodec:
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

    def decode(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(rows, srcs, cols)`` of ``keys``."""
        if self.bits:
            return (np.right_shift(keys, self.bs + self.bc),
                    np.right_shift(keys, self.bc) & ((1 << self.bs) - 1),
                    keys & ((1 << self.bc) - 1))
        span = self.n_sources * self.n_columns
        rows = keys // span
        rem = keys - rows * span
        srcs = rem // self.n_columns
        return rows, srcs, rem - srcs * self.n_columns


class PreparedProgram:
    """A program prepared for repeated compressed Jacobian evaluation.

    Parameters
    ----------
    prog : Program
        Recorded in global mode (not value-dependent).
    width : int
        Number of seed directions expected (sets when an intermediate is cheaper to carry as a
        dense block than as entries).

    Notes
    -----
    After preparation, :meth:`forward` and :meth:`reverse` do no tracing, no colouring and
    no index computation.
    """

    def __init__(self, prog: Program, *, width: int = 1) -> None:
        if prog.value_dependent:
            raise ValueError(
                "a program recorded in local mode (it read values) cannot be prepared for "
                "other points"
            )
        self.prog = prog
        self.width = max(int(width), 1)
        self.sources: list[_Source] = []
        self.steps: list[Any] = []  # _ValueStep | ("materialize", src) | ("opaque", src)
        self.n_slots = 0
        self._seed_cache: dict[Any, Any] = {}
        self._slot_sizes: dict[int, int] = {}
        self._virtual: dict[int, tuple[int, np.ndarray | None, float]] = {}
        self._build()

    # -- preparation ------------------------------------------------------------------------

    def _new_slot(self) -> int:
        self.n_slots += 1
        return self.n_slots - 1

    def _new_source(self, size: int, shape: tuple[int, ...], entries: _Entries | None,
                    node: Node | None = None) -> _Source:
        src = _Source(len(self.sources), size, shape, entries, node)
        self.sources.append(src)
        return src

    def _build(self) -> None:
        prog = self.prog
        x_src = self._new_source(prog.n_in, prog.x.shape, None)
        ent: dict[int, _Entries] = {prog.x.id: _Entries.identity(prog.n_in, x_src.index)}
        last_use: dict[int, int] = {}
        for i, node in enumerate(prog.nodes):
            for v in node.inputs:
                last_use[v.id] = i
        self._node_steps: dict[int, list[Any]] = {}
        for i, node in enumerate(prog.nodes):
            if not node.out.active:
                continue
            ljs = node.prim.linearize(node)
            steps: list[Any] = []
            if ljs is None:
                self._opaque(node, ent, steps)
            else:
                e_out = self._chain(node, ljs, ent, steps)
                ent[node.out.id] = e_out
                dense = e_out.nnz > node.out.size * self.width * _DENSE_FACTOR
                if dense and node.out.id != prog.out.id:
                    src = self._new_source(node.out.size, node.out.shape, e_out)
                    steps.append(("materialize", src))
                    ent[node.out.id] = _Entries.identity(node.out.size, src.index)
            self._node_steps[id(node)] = steps
            for v in node.inputs:
                if last_use.get(v.id) == i and v.id != prog.out.id and v.id != prog.x.id:
                    ent.pop(v.id, None)
        out = prog.out
        self.out_entries: _Entries | None = ent.get(out.id) if out.active else None
        if out.active and out.id == prog.x.id:
            self.out_entries = ent[prog.x.id]

    def _opaque(self, node: Node, ent: dict[int, _Entries], steps: list[Any]) -> None:
        """A node without local Jacobians: materialise its inputs, use its jvp/vjp rules."""
        inputs: list[int | None] = []
        for v in node.inputs:
            if not v.active:
                inputs.append(None)
                continue
            e = ent[v.id]
            if _is_identity_of_source(e):
                inputs.append(int(e.srcs[0]))
                continue
            src = self._new_source(v.size, v.shape, e)
            steps.append(("materialize", src))
            ent[v.id] = _Entries.identity(v.size, src.index)
            inputs.append(src.index)
        out_src = self._new_source(node.out.size, node.out.shape, None, node)
        out_src.inputs = inputs
        steps.append(("opaque", out_src))
        ent[node.out.id] = _Entries.identity(node.out.size, out_src.index)

    def _chain(self, node: Node, ljs: Sequence[LocalJac | None], ent: dict[int, _Entries],
               steps: list[Any]) -> _Entries:
        """Symbolic ``J_out = sum_k R_k @ J_k``: structure, index maps, constant folding."""
        size = node.out.size
        codec = _KeyCodec(size, len(self.sources), max(max(s.size for s in self.sources), 1))
        parts = []
        local_slots: list[tuple[int, LocalJac]] = []
        for k, lj in enumerate(ljs):
            if lj is None:
                continue
            jk = ent[node.inputs[k].id]
            owner, pos = _expand_ranges(jk.ptr, lj.cols)
            r_slot = None
            if lj.dyn is not None:
                r_slot = self._new_slot()
                self._slot_sizes[r_slot] = lj.nnz
                local_slots.append((r_slot, lj))
            key = codec.encode(lj.rows[owner], jk.srcs[pos], jk.cols[pos])
            parts.append((lj, jk, owner, pos, key, r_slot))
        if not parts:
            z = np.zeros(0, np.int64)
            return _Entries(size, z, z, z, np.zeros(0))
        uniq, inverses = _union_keys([p[4] for p in parts])
        rows, srcs, cols = codec.decode(uniq)
        n_out = int(uniq.size)
        base = np.zeros(n_out)
        # dynamic terms: (r_const, r_slot, r_idx, j_const, j_slot, j_idx, out positions, scale)
        terms: list[tuple[Any, ...]] = []
        for (lj, jk, owner, pos, _, r_slot), out_pos in zip(parts, inverses, strict=True):
            jconst = jk.const[pos]
            r_c = None if r_slot is not None else (
                lj.const if np.ndim(lj.const) == 0 else np.asarray(lj.const)[owner])
            if r_slot is None:  # constant local Jacobian: fold its product with const J
                if out_pos.size == n_out and _is_arange(out_pos, n_out):
                    base += mul0(r_c, jconst)
                else:
                    base += np.bincount(out_pos, weights=np.broadcast_to(mul0(r_c, jconst),
                                                                         out_pos.shape),
                                        minlength=n_out)
            else:  # dynamic local Jacobian times the constant part of J
                nzj = np.flatnonzero(jconst != 0)
                if nzj.size:
                    terms.append((None, r_slot, owner[nzj], jconst[nzj], None, None,
                                  out_pos[nzj], 1.0))
            if jk.slot is not None:  # anything times the dynamic part of J
                didx = jk.dyn_index()[pos]
                sel = np.flatnonzero(didx >= 0)
                if sel.size:
                    # read through virtual slots: a gather or a scaling of another slot
                    j_slot, j_idx, scale = self._resolve(jk.slot, didx[sel])
                    rc = r_c if (r_c is None or np.ndim(r_c) == 0) else r_c[sel]
                    if rc is not None:
                        rc, scale = rc * scale, 1.0
                    terms.append((rc, r_slot, owner[sel] if r_slot is not None else None,
                                  None, j_slot, j_idx, out_pos[sel], scale))
        if not terms:
            return _Entries(size, rows, srcs, cols, base)
        dyn_pos = np.flatnonzero(np.bincount(np.concatenate([t[6] for t in terms]),
                                             minlength=n_out))
        where = np.full(n_out, -1, dtype=np.int64)
        where[dyn_pos] = np.arange(dyn_pos.size, dtype=np.int64)
        contributions = []
        for r_const, r_slot, r_idx, j_const, j_slot, j_idx, out_pos, scale in terms:
            target = where[out_pos]
            unique = bool(np.bincount(target, minlength=dyn_pos.size).max() <= 1)
            r_size = None if r_slot is None else self._slot_sizes.get(r_slot)
            j_size = None if j_slot is None else self._slot_sizes.get(j_slot)
            contributions.append(_Contribution(
                r_const=r_const, r_slot=r_slot,
                r_idx=None if r_size is not None and _is_arange(r_idx, r_size) else _compact(r_idx),
                j_const=j_const, j_slot=j_slot,
                j_idx=None if j_size is not None and _is_arange(j_idx, j_size) else _compact(j_idx),
                target=None if (unique and _is_arange(target, dyn_pos.size)) else _compact(target),
                target_unique=unique,
                scale=scale,
            ))
        slot = self._new_slot()
        self._slot_sizes[slot] = int(dyn_pos.size)
        c0 = contributions[0]
        if (len(contributions) == 1 and c0.r_slot is None and np.ndim(c0.r_const) == 0
                and c0.target is None and c0.j_slot is not None):
            # a gather and/or a constant scaling of another slot (reshape, slicing, x - const,
            # -x, x / 2): nothing to compute; consumers read through it (see _resolve)
            self._virtual[slot] = (c0.j_slot, c0.j_idx, float(c0.r_const))
        else:
            steps.append(_ValueStep(node, local_slots, slot, int(dyn_pos.size), contributions))
        return _Entries(size, rows, srcs, cols, base, slot, dyn_pos)

    def _resolve(self, slot: int, idx: np.ndarray | None) -> tuple[int, np.ndarray | None,
                                                                   float]:
        """A computed slot, an index into it and a scale equal to ``slot[idx]``."""
        scale = 1.0
        while slot in self._virtual:
            base, vidx, vscale = self._virtual[slot]
            if vidx is not None:
                idx = vidx if idx is None else vidx[idx]
            scale *= vscale
            slot = base
        if idx is not None and _is_arange(idx, self._slot_sizes.get(slot, -1)):
            idx = None
        return slot, idx, scale

    def _slot_value(self, slots: list[Any], slot: int) -> np.ndarray:
        """Values of a slot, computed or virtual."""
        if slot not in self._virtual:
            return np.asarray(slots[slot])
        base, idx, scale = self._resolve(slot, None)
        v = slots[base] if idx is None else slots[base][idx]
        return np.asarray(v * scale if scale != 1.0 else v)

    # -- evaluation -----------------------------------------------------------------------

    def _values(self, x: np.ndarray, params: Sequence[Any] | None
                ) -> tuple[dict[int, Any], list[Any]]:
        """Primal replay plus every dynamic value slot."""
        prog = self.prog
        vals: dict[int, Any] = {prog.x.id: x}
        pvals = params if params is not None else [p.value for p in prog.params]
        for var, val in zip(prog.params, pvals, strict=True):
            vals[var.id] = np.asarray(val)
        slots: list[Any] = [None] * self.n_slots
        for node in prog.nodes:
            args = [vals.get(v.id, v.value) for v in node.inputs]
            out = node.prim.impl(*args, **node.params)
            vals[node.out.id] = out
            for step in self._node_steps.get(id(node), ()):
                if isinstance(step, _ValueStep):
                    for s, lj in step.local_slots:
                        assert lj.dyn is not None
                        slots[s] = lj.dyn(args, out)
                    slots[step.slot] = _apply_contributions(step, slots)
        return vals, slots

    def _entry_values(self, e: _Entries, slots: list[Any]) -> np.ndarray:
        """Full values of the entries (constant part plus dynamic part)."""
        if e.slot is None:
            return e.const
        v = e.const.copy()
        v[e.dyn_pos] += self._slot_value(slots, e.slot)
        return v

    def _const_block(self, e: _Entries, groups: np.ndarray, p: int, transpose: bool
                     ) -> np.ndarray:
        """Constant x-part of an entry set spread with ``groups`` (cached per seed)."""
        key = (id(e), transpose, id(groups), p)
        hit = self._seed_cache.get(key)
        blk = hit[1] if hit is not None and hit[0] is groups else None
        if blk is None:
            rows, cols, vals = e.spread.const0
            if transpose:  # reverse: rows of the block are x elements, seed groups on outputs
                blk = np.zeros((self.prog.n_in, p))
                _spread_onehot(cols, rows, vals, groups, blk)
            else:
                blk = np.zeros((e.size, p))
                _spread_onehot(rows, cols, vals, groups, blk)
            if len(self._seed_cache) > 64:  # a few seeds in use at a time
                self._seed_cache.clear()
            self._seed_cache[key] = (groups, blk)
        return blk

    def _fill(self, e: _Entries, slots: list[Any], out: np.ndarray, groups: np.ndarray,
              blocks: list[np.ndarray | None]) -> None:
        """``out += J_e @ S`` except the constant x-part (added by the caller)."""
        plan = e.spread
        if plan.dyn0 is not None:
            assert e.slot is not None
            rows, cols, idx = plan.dyn0
            _spread_onehot(rows, cols, self._slot_value(slots, e.slot)[idx], groups, out)
        if plan.others:
            full = self._entry_values(e, slots)
            for s, rows, cols, pos in plan.others:
                block = blocks[s]
                if block is not None:
                    _spread_dense(rows, cols, full[pos], block, out)

    def forward(self, x: np.ndarray, groups: np.ndarray, p: int,
                params: Sequence[Any] | None = None) -> tuple[Any, np.ndarray]:
        """``(f(x), B)`` with ``B = J(x) @ S`` for the 0/1 seed ``S[j, groups[j]] = 1``."""
        vals, slots = self._values(x, params)
        return self._forward(vals, slots, groups, p)

    def reverse(self, x: np.ndarray, groups: np.ndarray, q: int,
                params: Sequence[Any] | None = None) -> tuple[Any, np.ndarray]:
        """``(f(x), C)`` with ``C = W @ J(x)`` for the 0/1 seed ``W[groups[i], i] = 1``."""
        vals, slots = self._values(x, params)
        return self._reverse(vals, slots, groups, q)

    def mixed(self, x: np.ndarray, col_groups: np.ndarray, p: int, row_groups: np.ndarray,
              q: int, params: Sequence[Any] | None = None
              ) -> tuple[Any, np.ndarray, np.ndarray]:
        """``(f(x), B, C)`` for a bicolouring: one primal replay, both sweeps.

        Columns (rows) with group -1 are not seeded.
        """
        vals, slots = self._values(x, params)
        out, b = self._forward(vals, slots, col_groups, p)
        _, c = self._reverse(vals, slots, row_groups, q)
        return out, b, c

    def _forward(self, vals: dict[int, Any], slots: list[Any], groups: np.ndarray, p: int
                 ) -> tuple[Any, np.ndarray]:
        blocks: list[np.ndarray | None] = [None] * len(self.sources)
        m = self.prog.n_out
        for node in self.prog.nodes:
            for step in self._node_steps.get(id(node), ()):
                if isinstance(step, _ValueStep):
                    continue
                kind, src = step
                if kind == "materialize":
                    blk = self._const_block(src.entries, groups, p, False).copy()
                    self._fill(src.entries, slots, blk, groups, blocks)
                    blocks[src.index] = blk
                else:  # opaque: the primitive's own jvp rule on dense blocks
                    nd = src.node
                    args = [vals.get(v.id, v.value) for v in nd.inputs]
                    ts = [None if s is None else _block_as_tangent(blocks, s, v.shape, p, groups)
                          for s, v in zip(src.inputs, nd.inputs, strict=True)]
                    t = nd.prim.jvp(nd, args, ts, vals[nd.out.id])
                    blocks[src.index] = (np.zeros((src.size, p)) if t is None
                                         else np.ascontiguousarray(t.reshape(p, -1).T))
        out_val = vals.get(self.prog.out.id, self.prog.out.value)
        if self.out_entries is None:
            return out_val, np.zeros((m, p))
        b = self._const_block(self.out_entries, groups, p, False).copy()
        self._fill(self.out_entries, slots, b, groups, blocks)
        return out_val, b

    def _reverse(self, vals: dict[int, Any], slots: list[Any], groups: np.ndarray, q: int
                 ) -> tuple[Any, np.ndarray]:
        n = self.prog.n_in
        cts: list[np.ndarray | None] = [None] * len(self.sources)  # (size, q) blocks
        out_val = vals.get(self.prog.out.id, self.prog.out.value)
        e = self.out_entries
        if e is None:
            return out_val, np.zeros((q, n))
        cts[0] = self._const_block(e, groups, q, True).copy()
        plan = e.spread
        if plan.dyn0 is not None:
            assert e.slot is not None
            rows, cols, idx = plan.dyn0
            _spread_onehot(cols, rows, self._slot_value(slots, e.slot)[idx], groups, cts[0])
        if plan.others:
            full = self._entry_values(e, slots)
            for s, rows, cols, pos in plan.others:
                blk = cts[s]
                if blk is None:
                    blk = cts[s] = np.zeros((self.sources[s].size, q))
                _spread_onehot(cols, rows, full[pos], groups, blk)
        for src in reversed(self.sources[1:]):
            ct = cts[src.index]
            if ct is None:
                continue
            if src.entries is not None:
                ent = src.entries
                v = self._entry_values(ent, slots)
                for s, sel, rows, cols in ent.by_source:
                    blk = cts[s]
                    if blk is None:
                        blk = cts[s] = np.zeros((self.sources[s].size, q))
                    _spread_dense(cols, rows, v if sel is None else v[sel], ct, blk)
            else:
                nd = src.node
                assert nd is not None
                args = [vals.get(vv.id, vv.value) for vv in nd.inputs]
                g_out = np.ascontiguousarray(ct.T).reshape((q, *src.shape))
                grads = nd.prim.vjp(nd, args, vals[nd.out.id], g_out)
                for s_in, g in zip(src.inputs, grads, strict=True):
                    if s_in is None or g is None:
                        continue
                    g2 = np.asarray(g).reshape(q, -1).T
                    blk = cts[s_in]
                    cts[s_in] = g2.copy() if blk is None else blk + g2
        c = cts[0]
        assert c is not None
        return out_val, c.T  # (q, n), Fortran-ordered: decompression reads either order

    # -- introspection --------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Sizes of the prepared program (entries, sources, dynamic steps)."""
        n_dyn = sum(1 for steps in self._node_steps.values() for s in steps
                    if isinstance(s, _ValueStep))
        return {
            "nodes": len(self.prog.nodes),
            "dense_blocks": len(self.sources) - 1,
            "dynamic_steps": n_dyn,
            "output_entries": 0 if self.out_entries is None else self.out_entries.nnz,
        }


def _is_identity_of_source(e: _Entries) -> bool:
    return (
        e.slot is None and e.nnz == e.size and bool(np.all(e.srcs == e.srcs[0] if e.nnz else True))
        and _is_arange(e.rows, e.size) and _is_arange(e.cols, e.size) and bool(np.all(e.const == 1))
    )


def _block_as_tangent(blocks: list[np.ndarray | None], s: int, shape: tuple[int, ...], p: int,
                      groups: np.ndarray) -> np.ndarray:
    """Tangent block ``(p, *shape)`` of source ``s`` (the seed itself for x)."""
    if s == 0:
        seed = np.zeros((groups.size, p))
        ok = groups >= 0
        seed[np.flatnonzero(ok), groups[ok]] = 1.0
        return np.ascontiguousarray(seed.T).reshape((p, *shape))
    blk = blocks[s]
    assert blk is not None
    return np.ascontiguousarray(blk.T).reshape((p, *shape))


def _apply_contributions(step: _ValueStep, slots: list[Any]) -> np.ndarray:
    acc = step.buffer
    if acc is None:
        acc = step.buffer = np.empty(step.size)
    for i, c in enumerate(step.contributions):
        # the first contribution writes when it covers every position in order, else zero first
        assign = i == 0 and c.target is None
        if i == 0 and not assign:
            acc.fill(0.0)
        if _fused(c, slots, acc, assign):
            continue
        if c.r_slot is not None:
            r = slots[c.r_slot]
            if np.ndim(r) and c.r_idx is not None:
                r = r[c.r_idx]
        else:
            r = c.r_const
        j = c.j_const if c.j_slot is None else slots[c.j_slot]
        if c.j_slot is not None and c.j_idx is not None:
            j = j[c.j_idx]
        term = mul0(r, j)
        if c.scale != 1.0:
            term = term * c.scale
        if assign:
            acc[...] = term
        elif c.target is None:
            acc += term
        elif c.target_unique:
            acc[c.target] += term
        else:
            acc += np.bincount(c.target, weights=np.broadcast_to(term, c.target.shape),
                               minlength=acc.size)
    return acc


#: Contributions with at least this many pairs go through the fused kernel (below it, numpy's
#: per-call overhead is smaller than numba's dispatch).
_FUSE_MIN = 2048
_INDEX_DTYPE = np.dtype(np.int32)
_NO_INDEX = np.empty(0, dtype=_INDEX_DTYPE)


def _flat_f64(a: Any) -> np.ndarray | None:
    """Return ``a`` as a 1-D float64 array without copying, or None if it is not one."""
    if isinstance(a, np.ndarray):
        if a.dtype != np.float64 or (a.ndim != 1 and a.size != 1):
            return None
        return a.reshape(-1) if a.ndim != 1 else a
    if isinstance(a, (float, int, np.floating, np.integer)):
        return np.full(1, float(a))
    return None


def _index(idx: np.ndarray | None, n: int) -> np.ndarray | None:
    if idx is None:
        return _NO_INDEX
    if idx.dtype != _INDEX_DTYPE or idx.ndim != 1 or idx.size != n:
        return None
    return idx


def _compact(idx: np.ndarray | None) -> np.ndarray | None:
    """Index arrays of the evaluation kernels as int32: half the memory traffic."""
    if idx is None:
        return None
    if idx.size and int(idx.max()) >= np.iinfo(np.int32).max:  # pragma: no cover - > 2**31
        raise ValueError("prepared programs support fewer than 2**31 entries per variable")
    return np.ascontiguousarray(idx, dtype=_INDEX_DTYPE)


def _fused(c: _Contribution, slots: list[Any], acc: np.ndarray, assign: bool) -> bool:
    """Apply contribution ``c`` with :func:`_contribute` when its operands allow; else False."""
    # as in the numpy path: index arrays apply to slot values only (constants are per pair)
    r_raw = slots[c.r_slot] if c.r_slot is not None else c.r_const
    r_gathered = c.r_slot is not None and c.r_idx is not None and np.ndim(r_raw) > 0
    j_gathered = c.j_slot is not None and c.j_idx is not None
    r = _flat_f64(r_raw)
    j = _flat_f64(slots[c.j_slot] if c.j_slot is not None else c.j_const)
    if r is None or j is None:
        return False
    if c.target is not None:
        n = c.target.size
    elif j_gathered and c.j_idx is not None:
        n = c.j_idx.size
    elif r_gathered and c.r_idx is not None:
        n = c.r_idx.size
    else:
        n = max(r.size, j.size)
    if n < _FUSE_MIN:
        return False
    # sizes must be what the numpy path would broadcast: pairs, or scalars
    if c.target is None and n != acc.size:
        return False
    r_idx = _index(c.r_idx if r_gathered else None, n)
    j_idx = _index(c.j_idx if j_gathered else None, n)
    target = _index(c.target, n)
    if r_idx is None or j_idx is None or target is None:
        return False
    if (r.size > 1 and r_idx.size == 0 and r.size != n) or (
            j.size > 1 and j_idx.size == 0 and j.size != n):
        return False
    _contribute(acc, target, r, r_idx, j, j_idx, n, assign, c.scale)
    return True

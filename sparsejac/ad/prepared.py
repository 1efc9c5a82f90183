"""Prepared compressed evaluation: a recorded program linearised once, replayed many times.

A prepared Jacobian evaluates ``B = J(x) @ S`` (forward) or ``C = W @ J(x)`` (reverse) for
fixed colour seeds at every Newton step, so everything that does not depend on ``x`` is done
once, here, at preparation (Griewank and Walther, *Evaluating Derivatives*, 2nd ed., ch. 9–10,
"preaccumulation of local Jacobians"):

1. Each node's local Jacobian (``linearize``) is a sparse matrix of fixed structure whose
   values are constants or functions of the primal values.
2. Walking the program, the Jacobian of every active variable with respect to the *sources*
   (``x`` and a few materialised intermediates) is kept symbolically as entries
   (:mod:`sparsejac.ad.entries`) by the sparse chain rule of :mod:`sparsejac.ad.chain`:
   constant values are folded now, value-dependent ones become :class:`~.chain.ValueStep` s.
3. A variable is *materialised* as a dense tangent block ``(size, p)`` when its entries would
   outnumber the block (``nnz > size · p``) or when a primitive without ``linearize`` needs it
   (an *opaque* node, evaluated by its own jvp/vjp rules).
4. Seeds from a colouring are 0/1 with one nonzero per row of ``S`` (column of ``W``), so
   spreading entries into ``B`` costs one addition per entry, not ``p``.

The program is a list of typed steps per node (:class:`~.chain.ValueStep`,
:class:`Materialize`, :class:`Opaque`). The forward sweep fills ``B`` (``m × p``); the reverse
sweep fills ``C`` (``q × n``) by walking the sources backwards. Every call allocates its own
buffers, so one prepared program may be evaluated from several threads at once.

Only programs recorded without reading values (``Program.value_dependent`` is False) can be
prepared: the structure must hold for every x.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.ad.chain import (
    Slots,
    Term,
    ValueStep,
    apply_contributions,
    chain,
    combine,
    linear_terms,
)
from sparsejac.ad.entries import Entries, is_identity_of_source
from sparsejac.ad.kernels import spread_dense, spread_onehot
from sparsejac.tracing import Node, Program, Var
from sparsejac.tracing.walk import Values, dead_after

__all__ = ["DenseSeed", "Linearization", "Materialize", "Opaque", "PreparedProgram", "Source"]

#: An intermediate becomes a dense tangent block when its entries outnumber this fraction of
#: the block (size × width).
DENSE_FACTOR = 1.0


@dataclass
class Source:
    """A materialised variable: its tangent block is computed densely."""

    index: int
    size: int
    shape: tuple[int, ...]
    entries: Entries | None  # linear combination of earlier sources (None: x or opaque)
    node: Node | None = None  # opaque node producing it
    inputs: list[int | None] = field(default_factory=list)  # sources of the opaque inputs


@dataclass
class Materialize:
    """Compute the dense block of ``source`` from its entries."""

    source: Source


@dataclass
class Opaque:
    """Compute the dense block of ``source`` by its node's own jvp (vjp in reverse) rule."""

    source: Source


Step = ValueStep | Materialize | Opaque


@dataclass(frozen=True)
class DenseSeed:
    """A general seed matrix, as opposed to a colouring's one-hot ``groups``.

    ``s`` is ``S`` (``n × p``) for a forward sweep and ``Wᵀ`` (``m × q``) for a reverse one:
    rows indexed like the seeded variable, one column per direction (C-contiguous float64).
    ``mats`` holds, per entry set (by ``id``), its x-part at the linearisation point as a
    ``csr_array`` (constant and value-dependent entries summed): a sparse product with it
    replaces the entry-by-entry spread.
    """

    s: np.ndarray
    mats: dict[int, sp.csr_array]


@dataclass(frozen=True)
class _XStructure:
    """The x-part of an entry set as a CSR structure, with where each entry's value goes."""

    indptr: np.ndarray
    indices: np.ndarray
    base: np.ndarray  # the constant entries, summed per position
    dyn_pos: np.ndarray | None  # position of each value-dependent entry
    shape: tuple[int, int]

    @staticmethod
    def of(e: Entries, n_in: int) -> _XStructure:
        rows0, cols0, v0 = e.spread.const0
        dyn0 = e.spread.dyn0
        rows, cols = rows0, cols0
        if dyn0 is not None:
            rows = np.concatenate([rows0, dyn0[0]])
            cols = np.concatenate([cols0, dyn0[1]])
        key = rows.astype(np.int64) * n_in + cols.astype(np.int64)
        uniq, inv = np.unique(key, return_inverse=True)
        nnz = uniq.size
        indptr = np.zeros(e.size + 1, dtype=np.int64)
        np.cumsum(np.bincount(uniq // n_in, minlength=e.size), out=indptr[1:])
        base = np.bincount(inv[:rows0.size], v0, minlength=nnz).astype(np.float64)
        return _XStructure(indptr, uniq % n_in, base,
                           None if dyn0 is None else inv[rows0.size:], (e.size, n_in))

    def matrix(self, dyn: np.ndarray | None) -> sp.csr_array:
        data = self.base if self.dyn_pos is None or dyn is None else (
            self.base + np.bincount(self.dyn_pos, dyn, minlength=self.base.size))
        return sp.csr_array((data, self.indices, self.indptr), shape=self.shape)


#: The seed of a sweep: a colouring's groups (one-hot) or a dense matrix.
Seed = np.ndarray | DenseSeed


def _spread(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, seed: Seed,
            out: np.ndarray) -> None:
    """``out[rows[e], :] += vals[e] * seed[cols[e], :]`` for either kind of seed."""
    if isinstance(seed, DenseSeed):
        spread_dense(rows, cols, vals, seed.s, out)
    else:
        spread_onehot(rows, cols, vals, seed, out)


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

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.tracing import trace
    >>> from sparsejac.ad import PreparedProgram
    >>> prog = trace(lambda x: x[1:] * x[:-1], np.ones(4))
    >>> pp = PreparedProgram(prog, width=2)
    >>> out, B = pp.forward(np.arange(4.0), np.array([0, 1, 0, 1]), 2)   # B = J @ S
    >>> out, B
    (array([0., 2., 6.]), array([[1., 0.],
           [2., 1.],
           [2., 3.]]))
    """

    def __init__(self, prog: Program, *, width: int = 1) -> None:
        if prog.value_dependent:
            raise ValueError(
                "a program recorded in local mode (it read values) cannot be prepared for "
                "other points"
            )
        self.prog = prog
        self.width = max(int(width), 1)
        self.sources: list[Source] = []
        self.slots = Slots()
        #: per node of ``prog``, its steps (value steps first, then materialise/opaque)
        self.steps: list[list[Step]] = []
        self._seed_cache: dict[Any, Any] = {}
        self._xstructs: dict[int, _XStructure] = {}
        #: why the compiled tape was not taken where it was requested (empty otherwise)
        self.not_taped = ""
        self._build()
        self.sweep: list[Materialize | Opaque] = [
            s for steps in self.steps for s in steps if not isinstance(s, ValueStep)]

    # -- preparation ------------------------------------------------------------------------

    def _new_source(self, size: int, shape: tuple[int, ...], entries: Entries | None,
                    node: Node | None = None) -> Source:
        src = Source(len(self.sources), size, shape, entries, node)
        self.sources.append(src)
        return src

    def _build(self) -> None:
        prog = self.prog
        x_src = self._new_source(prog.n_in, prog.x.shape, None)
        ent: dict[int, Entries] = {prog.x.id: Entries.identity(prog.n_in, x_src.index)}
        #: variables kept as a linear combination of earlier entry sets, merged only when a
        #: node other than another such combination reads them (chain.linear_terms)
        lazy: dict[int, list[Term]] = {}
        # a combination read by more than one node is merged once, when first read: its
        # terms are never merged twice
        reads = Counter(v.id for node in prog.nodes for v in node.inputs)
        steps: list[Step] = []

        def terms_of(v: Var) -> list[Term]:
            if v.id in lazy and reads[v.id] > 1:
                self._merge(v, lazy.pop(v.id), ent, steps)
            return lazy[v.id] if v.id in lazy else [Term(ent[v.id], 1.0)]

        for node, dead in zip(prog.nodes, dead_after(prog), strict=True):
            steps = []
            if node.out.active and _is_reshape(node):  # the operand's entries, unchanged
                if node.inputs[0].id in lazy:
                    lazy[node.out.id] = lazy[node.inputs[0].id]
                else:
                    ent[node.out.id] = ent[node.inputs[0].id]
            elif node.out.active:
                ljs = node.prim.linearize(node)
                terms = None if ljs is None else linear_terms(node, ljs, terms_of)
                if terms is not None:
                    lazy[node.out.id] = terms
                else:
                    for v in node.inputs:  # its operands' entries, merged
                        if v.id in lazy:
                            self._merge(v, lazy.pop(v.id), ent, steps)
                    if ljs is None:
                        self._opaque(node, ent, steps)
                    else:
                        e_out, vstep = chain(node, ljs, [
                            None if lj is None else ent[v.id]
                            for v, lj in zip(node.inputs, ljs, strict=True)],
                            len(self.sources), max(s.size for s in self.sources), self.slots)
                        self._add(node.out, e_out, vstep, ent, steps)
            self.steps.append(steps)
            for vid in dead:
                ent.pop(vid, None)
                lazy.pop(vid, None)
        out = prog.out
        if out.id in lazy:  # merged after the last node (every term is computed by then)
            self._merge(out, lazy.pop(out.id), ent, self.steps[-1])
        # kept as keys (8 bytes per entry): decoded only by a path that needs the indices
        # (see decode_output); output entries in a pattern's order never are
        self.out_entries: Entries | None = ent.get(out.id) if out.active else None

    def _merge(self, v: Var, terms: list[Term], ent: dict[int, Entries],
               steps: list[Step]) -> None:
        """A linear combination's entries, merged once (see :func:`~.chain.combine`)."""
        t = terms[0]
        if (len(terms) == 1 and t.scale == 1.0 and t.start == 0 and t.step == 1
                and t.entries.size == v.size):
            ent[v.id] = t.entries  # (a reshape of a variable with entries)
            return
        e_out, vstep = combine(terms, v.size, len(self.sources),
                               max(s.size for s in self.sources), self.slots)
        self._add(v, e_out, vstep, ent, steps)

    def _add(self, v: Var, e_out: Entries, vstep: ValueStep | None, ent: dict[int, Entries],
             steps: list[Step]) -> None:
        """A variable's new entries and value step; a dense block where entries outnumber it."""
        if vstep is not None:
            steps.append(vstep)
        ent[v.id] = e_out
        dense = e_out.nnz > v.size * self.width * DENSE_FACTOR
        if dense and v.id != self.prog.out.id:
            src = self._new_source(v.size, v.shape, e_out)
            steps.append(Materialize(src))
            ent[v.id] = Entries.identity(v.size, src.index)

    def _opaque(self, node: Node, ent: dict[int, Entries], steps: list[Step]) -> None:
        """A node without local Jacobians: materialise its inputs, use its jvp/vjp rules."""
        inputs: list[int | None] = []
        for v in node.inputs:
            if not v.active:
                inputs.append(None)
                continue
            e = ent[v.id]
            if is_identity_of_source(e):
                inputs.append(int(e.srcs[0]))
                continue
            src = self._new_source(v.size, v.shape, e)
            steps.append(Materialize(src))
            ent[v.id] = Entries.identity(v.size, src.index)
            inputs.append(src.index)
        out_src = self._new_source(node.out.size, node.out.shape, None, node)
        out_src.inputs = inputs
        steps.append(Opaque(out_src))
        ent[node.out.id] = Entries.identity(node.out.size, out_src.index)

    # -- evaluation -----------------------------------------------------------------------

    def _values(self, x: np.ndarray, params: Sequence[Any] | None) -> tuple[Values, list[Any]]:
        """Primal replay plus every dynamic value slot."""
        vals = Values(self.prog, x, params if params is not None else
                      [p.value for p in self.prog.params])
        slots: list[Any] = [None] * self.slots.count
        steps = self.steps
        # f's own evaluation warned (or not, under its np.errstate) when the user ran it; the
        # replay is sparsejac's, and its warnings would point at sparsejac's files
        with np.errstate(all="ignore"):
            for i, (_, args, out) in enumerate(vals.run()):
                for step in steps[i]:
                    if isinstance(step, ValueStep):
                        for s, lj in step.local_slots:
                            slots[s] = lj.dyn(args, out)
                        slots[step.slot] = apply_contributions(step, slots,
                                                               np.empty(step.size))
        return vals, slots

    def _entry_values(self, e: Entries, slots: list[Any]) -> np.ndarray:
        """Full values of the entries (constant part plus dynamic part)."""
        if e.slot is None:
            return e.const
        v = e.const.copy()
        v[e.dyn_pos] += self.slots.value(slots, e.slot)
        return v

    def _const_block(self, e: Entries, groups: Seed, p: int, transpose: bool
                     ) -> np.ndarray:
        """Constant x-part of an entry set spread with ``groups`` (cached per seed; a copy)."""
        if isinstance(groups, DenseSeed):  # the whole x-part (constant and dynamic) at once
            k = groups.mats[id(e)]
            return np.ascontiguousarray((k.T if transpose else k) @ groups.s)
        key = (id(e), transpose, id(groups), p)
        hit = self._seed_cache.get(key)
        blk = hit[1] if hit is not None and hit[0] is groups else None
        if blk is None:
            rows, cols, vals = e.spread.const0
            if transpose:  # reverse: rows of the block are x elements, seed groups on outputs
                blk = np.zeros((self.prog.n_in, p))
                spread_onehot(cols, rows, vals, groups, blk)
            else:
                blk = np.zeros((e.size, p))
                spread_onehot(rows, cols, vals, groups, blk)
            if len(self._seed_cache) > 64:  # a few seeds in use at a time
                self._seed_cache.clear()
            self._seed_cache[key] = (groups, blk)
        return blk.copy()

    def _fill(self, e: Entries, slots: list[Any], out: np.ndarray, groups: Seed,
              blocks: list[np.ndarray | None]) -> None:
        """``out += J_e @ S`` except the constant x-part (added by the caller)."""
        plan = e.spread
        if plan.dyn0 is not None and not isinstance(groups, DenseSeed):
            assert e.slot is not None
            rows, cols, idx = plan.dyn0
            _spread(rows, cols, self.slots.value(slots, e.slot)[idx], groups, out)
        if plan.others:
            full = self._entry_values(e, slots)
            for s, rows, cols, pos in plan.others:
                block = blocks[s]
                if block is not None:
                    spread_dense(rows, cols, full[pos], block, out)

    def linearize(self, x: np.ndarray, params: Sequence[Any] | None = None) -> Linearization:
        """The primal replay at ``x`` done once, for any number of seeded products there.

        Examples
        --------
        >>> import numpy as np
        >>> from sparsejac.tracing import trace
        >>> from sparsejac.ad import PreparedProgram
        >>> pp = PreparedProgram(trace(lambda x: x[1:] * x[:-1], np.ones(3)))
        >>> lin = pp.linearize(np.array([1.0, 2.0, 3.0]))
        >>> lin.jvp(np.eye(3))                       # J @ I
        array([[2., 1., 0.],
               [0., 3., 2.]])
        >>> lin.vjp(np.array([[1.0, 1.0]]))          # 1ᵀ J
        array([[2., 4., 2.]])
        """
        vals, slots = self._values(x, params)
        mats: dict[int, sp.csr_array] = {}
        for e in self._x_entry_sets():
            st = self._xstructs.get(id(e))
            if st is None:
                st = self._xstructs[id(e)] = _XStructure.of(e, self.prog.n_in)
            dyn = None
            if e.spread.dyn0 is not None:
                assert e.slot is not None
                dyn = self.slots.value(slots, e.slot)[e.spread.dyn0[2]]
            mats[id(e)] = st.matrix(dyn)
        return Linearization(self, vals, slots, mats)

    def _x_entry_sets(self) -> list[Entries]:
        """The entry sets a sweep spreads from x: the materialised sources' and the output's."""
        sets = [s.source.entries for s in self.sweep
                if isinstance(s, Materialize) and s.source.entries is not None]
        return sets + ([self.out_entries] if self.out_entries is not None else [])

    def direct_positions(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray | None:
        """Where each output entry sits among a pattern's nonzeros (given in CSR order).

        None unless every output entry is a derivative with respect to ``x`` itself (no
        dense block in the program) and lies in the pattern: then :meth:`direct` gives the
        Jacobian's values without seeds, compression or decompression.
        """
        e = self.out_entries
        if e is None or len(self.sources) != 1 or (e.nnz and int(e.srcs.max()) != 0):
            return None
        n = max(self.prog.n_in, 1)
        keys = rows.astype(np.int64) * n + cols
        want = e.rows.astype(np.int64) * n + e.cols
        pos: np.ndarray = np.searchsorted(keys, want)
        if pos.size and (int(pos.max()) >= keys.size or not np.array_equal(keys[pos], want)):
            return None
        return pos

    def in_pattern_order(self, indptr: np.ndarray, cols: np.ndarray) -> bool:
        """Whether the output entries are exactly a pattern's nonzeros, in CSR order.

        All of them must be derivatives with respect to ``x``: :meth:`direct` then gives J's
        values in the pattern's order (no positions needed; two comparisons instead of
        :meth:`direct_positions`' search).
        """
        e = self.out_entries
        return e is not None and len(self.sources) == 1 and e.is_x_pattern(indptr, cols)

    def decode_output(self) -> None:
        """Keep the output entries as decoded index arrays, their keys dropped.

        The seeded and the direct-positions paths read the indices at every call.
        """
        if self.out_entries is not None:
            self.out_entries.drop_keys()

    def share_pattern(self, indptr: np.ndarray, cols: np.ndarray) -> None:
        """Let the output entries use a pattern's index arrays (the same, in CSR order).

        Only when :meth:`in_pattern_order` found the output entries to be exactly the
        pattern's nonzeros, in order: their columns are then the pattern's, their rows
        rebuilt from its row pointer only by a path that reads them, and their single source
        (``x``) a broadcast zero, 24 bytes per nonzero less than decoded index arrays.
        """
        e = self.out_entries
        if e is None or not e.is_x_pattern(indptr, cols):
            raise RuntimeError("share_pattern: the output entries are not the pattern's "
                               "nonzeros in CSR order")  # pragma: no cover - internal misuse
        e.set_pattern(indptr, cols)

    def direct(self, x: np.ndarray, params: Sequence[Any] | None = None
               ) -> tuple[Any, np.ndarray]:
        """``(f(x), values)``: the output entries' values (see :meth:`direct_positions`)."""
        e = self.out_entries
        assert e is not None
        vals, slots = self._values(x, params)
        values = self._entry_values(e, slots)
        return vals[self.prog.out], (values.copy() if e.slot is None else values)

    def value(self, x: np.ndarray, params: Sequence[Any] | None = None) -> Any:
        """``f(x)`` by replaying the program (no derivatives)."""
        vals = Values(self.prog, x, params if params is not None else
                      [p.value for p in self.prog.params]).complete()
        return vals[self.prog.out]

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

    def _forward(self, vals: Values, slots: list[Any], groups: Seed, p: int
                 ) -> tuple[Any, np.ndarray]:
        blocks: list[np.ndarray | None] = [None] * len(self.sources)
        m = self.prog.n_out
        for step in self.sweep:
            src = step.source
            if isinstance(step, Materialize):
                assert src.entries is not None
                blk = self._const_block(src.entries, groups, p, False)
                self._fill(src.entries, slots, blk, groups, blocks)
                blocks[src.index] = blk
            else:  # opaque: the primitive's own jvp rule on dense blocks
                nd = src.node
                assert nd is not None
                ts = [None if s is None else _block_as_tangent(blocks, s, v.shape, p, groups)
                      for s, v in zip(src.inputs, nd.inputs, strict=True)]
                t = nd.prim.jvp(nd, vals.args(nd), ts, vals[nd.out])
                blocks[src.index] = (np.zeros((src.size, p)) if t is None
                                     else np.ascontiguousarray(t.reshape(p, -1).T))
        out_val = vals[self.prog.out]
        if self.out_entries is None:
            return out_val, np.zeros((m, p))
        b = self._const_block(self.out_entries, groups, p, False)
        self._fill(self.out_entries, slots, b, groups, blocks)
        return out_val, b

    def _reverse(self, vals: Values, slots: list[Any], groups: Seed, q: int
                 ) -> tuple[Any, np.ndarray]:
        n = self.prog.n_in
        cts: list[np.ndarray | None] = [None] * len(self.sources)  # (size, q) blocks
        out_val = vals[self.prog.out]
        e = self.out_entries
        if e is None:
            return out_val, np.zeros((q, n))
        cts[0] = c0 = self._const_block(e, groups, q, True)
        plan = e.spread
        if plan.dyn0 is not None and not isinstance(groups, DenseSeed):
            assert e.slot is not None
            rows, cols, idx = plan.dyn0
            _spread(cols, rows, self.slots.value(slots, e.slot)[idx], groups, c0)
        if plan.others:
            full = self._entry_values(e, slots)
            for s, rows, cols, pos in plan.others:
                blk = cts[s]
                if blk is None:
                    blk = cts[s] = np.zeros((self.sources[s].size, q))
                _spread(cols, rows, full[pos], groups, blk)
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
                    spread_dense(cols, rows, v if sel is None else v[sel], ct, blk)
            else:
                nd = src.node
                assert nd is not None
                g_out = np.ascontiguousarray(ct.T).reshape((q, *src.shape))
                grads = nd.prim.vjp(nd, vals.args(nd), vals[nd.out], g_out)
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
        return {
            "engine": "chain",
            "nodes": len(self.prog.nodes),
            "dense_blocks": len(self.sources) - 1,
            "dynamic_steps": sum(isinstance(s, ValueStep) for st in self.steps for s in st),
            "output_entries": 0 if self.out_entries is None else self.out_entries.nnz,
            **({"not_taped": self.not_taped} if self.not_taped else {}),
        }


def _block_as_tangent(blocks: list[np.ndarray | None], s: int, shape: tuple[int, ...], p: int,
                      groups: Seed) -> np.ndarray:
    """Tangent block ``(p, *shape)`` of source ``s`` (the seed itself for x)."""
    if s == 0 and isinstance(groups, DenseSeed):
        return np.ascontiguousarray(groups.s.T).reshape((p, *shape))
    if s == 0:
        assert isinstance(groups, np.ndarray)
        seed = np.zeros((groups.size, p))
        ok = groups >= 0
        seed[np.flatnonzero(ok), groups[ok]] = 1.0
        return np.ascontiguousarray(seed.T).reshape((p, *shape))
    blk = blocks[s]
    assert blk is not None
    return np.ascontiguousarray(blk.T).reshape((p, *shape))


class Linearization:
    """A prepared program linearised at one point: ``J(x) @ S`` and ``W @ J(x)`` for any seeds.

    Made by :meth:`PreparedProgram.linearize`: the primal values and every value-dependent
    local derivative are computed once; each product is then one forward (reverse) sweep of
    the prepared steps with a dense seed matrix, with no tracing and no replay of ``f``.
    Products are independent and may run from several threads at once.

    Attributes
    ----------
    value : object
        ``f(x)``, replayed.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.tracing import trace
    >>> from sparsejac.ad import PreparedProgram
    >>> lin = PreparedProgram(trace(lambda x: np.sin(x) * x[::-1], np.ones(2))).linearize(
    ...     np.array([0.0, 1.0]))
    >>> lin.value
    array([0., 0.])
    >>> lin.jvp(np.array([[1.0], [0.0]]))             # first column of J
    array([[1.        ],
           [0.84147098]])
    """

    def __init__(self, program: PreparedProgram, vals: Values, slots: list[Any],
                 mats: dict[int, sp.csr_array]) -> None:
        self._pp = program
        self._vals = vals
        self._slots = slots
        self._mats = mats
        self.value = vals[program.prog.out]

    def jvp(self, s: np.ndarray) -> np.ndarray:
        """``J(x) @ S`` for ``S`` of shape ``(n, p)``; returns ``(m, p)``."""
        seed = np.ascontiguousarray(s, dtype=np.float64)
        return self._pp._forward(self._vals, self._slots, DenseSeed(seed, self._mats),
                                 seed.shape[1])[1]

    def vjp(self, w: np.ndarray) -> np.ndarray:
        """``W @ J(x)`` for ``W`` of shape ``(q, m)``; returns ``(q, n)``."""
        seed = np.ascontiguousarray(np.asarray(w, dtype=np.float64).T)
        return np.ascontiguousarray(
            self._pp._reverse(self._vals, self._slots, DenseSeed(seed, self._mats),
                              seed.shape[1])[1])


def _is_reshape(node: Node) -> bool:
    """Whether ``node`` only reshapes its one active operand (same elements, same order)."""
    plan = node.params.get("plan")
    return (node.prim.name == "gather" and getattr(plan, "identity", False) is True
            and len(node.inputs) == 1
            and node.inputs[0].active and node.inputs[0].size == node.out.size)

"""A compiled tape: a recorded program as an instruction table run by one numba loop.

The chain engine (:mod:`sparsejac.ad.prepared`) walks the program in Python, one numpy call
per node; that walk costs microseconds per node, which dominates programs of many small
nodes: a stiff kinetics right-hand side written element by element, a Python loop over
scalars. The tape encodes such a program once, at preparation, as rows of integers over one
float64 buffer (:mod:`sparsejac.ad._tape`), and evaluates values, compressed forward products
``B = J S`` and reverse products ``C = W J`` in compiled loops: no Python per node.

What the tape encodes (anything else leaves the program to the chain engine):

* elementwise operations whose partials it knows (``+ - * / **``, ``negative``, ``abs``,
  ``sqrt``, ``square``, ``reciprocal``, ``exp``, ``exp2``, ``expm1``, ``log``, ``log2``,
  ``log10``, ``log1p``, the trigonometric and hyperbolic functions and their inverses,
  ``arctan2``, ``hypot``, ``remainder``, ``maximum``, ``minimum`` and scipy's ``erf``,
  ``erfc`` and ``expit``), with broadcasting spelled out as slot indices;
* comparisons and logical operations (as 1.0 or 0.0), ``astype(float)`` and ``np.sign``
  (those a Hessian's recorded gradient makes of ``abs``, ``maximum``, ``clip``; ``f``'s own
  equalities and signs refuse ties at every call, on the chain engine) and ``np.where``,
  whose condition may move with x or a parameter (a forcing switched on in ``t``, an upwind
  direction): the operand chosen at each call, values and tangents alike;
* gathers (indexing, ``setitem`` into a buffer, concatenation, reshapes) as slot copies;
* contractions of two operands that both move (``R @ t`` of small traced matrices,
  ``np.outer``, ``np.einsum``) as sums of products over pairs of slots, up to
  :data:`MAX_PAIRS` products;
* ``np.linalg.solve`` of small systems (up to :data:`MAX_SOLVE` unknowns, batched; a mass
  matrix of a multibody right-hand side) by its own LU with partial pivoting;
* the linear primitives (:data:`LINEAR_PRIMITIVES`: sparse linear maps, sums, cumulative
  sums, contractions with constant other operands) as an affine map ``out = c + R in`` whose
  constant part ``c`` is the operation evaluated with its active inputs at zero.

Its partial derivatives are those of :mod:`sparsejac.primitives.partials`: the table
:data:`OPS` names, for each ufunc, the partials it mirrors, and a program whose primitive
has other partials is not encoded. Tests compare the tape with the chain engine on the
registry's rows and cases.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.special as sc

from sparsejac.ad import _tape as k
from sparsejac.ad import native
from sparsejac.ad._tape_numpy import jacobian_packed_numpy
from sparsejac.ad._tape_python import terms
from sparsejac.ad.fused import Fused, Loaded, NativeSlot, packed0_numpy
from sparsejac.ad.prepared import PreparedProgram
from sparsejac.ad.tape_ops import (
    LINEAR_PRIMITIVES,
    MAX_PAIRS,
    MAX_SOLVE,
    SOLVE_UNITS,
)
from sparsejac.ad.tape_ops import Unsupported as _Unsupported
from sparsejac.ad.tape_ops import affine as _affine
from sparsejac.ad.tape_ops import bilinear as _bilinear
from sparsejac.ad.tape_ops import cat as _cat
from sparsejac.ad.tape_ops import float_value as _float_value
from sparsejac.ad.tape_ops import solve_slots as _solve_slots
from sparsejac.kernels import LazyKernel
from sparsejac.numeric import shared_arange
from sparsejac.primitives import partials as dp
from sparsejac.primitives.dense_linalg import Solve
from sparsejac.primitives.depsets import broadcast_rows
from sparsejac.primitives.elementwise import ABS_POWER, WHERE, AsType, Elementwise
from sparsejac.primitives.movement import Gather, GatherPlan
from sparsejac.tracing import Node, Program
from sparsejac.tracing.program import GuardChecked, TieChecked

_NO_POINT = np.zeros(0)

__all__ = ["LINEAR_PRIMITIVES", "MAX_PAIRS", "MAX_SOLVE", "OPS", "Fused", "Tape",
           "elements_per_pass"]

#: ufunc -> (opcode, the partials the compiled opcode mirrors)
OPS: dict[Any, tuple[int, tuple[Any, ...]]] = {
    np.negative: (k.NEG, (dp.minus_one,)),
    np.positive: (k.POS, (dp.one,)),
    np.absolute: (k.ABS, (dp.sign,)),
    np.fabs: (k.ABS, (dp.sign,)),
    np.sqrt: (k.SQRT, (dp.sqrt,)),
    np.square: (k.SQUARE, (dp.square,)),
    np.reciprocal: (k.RECIP, (dp.reciprocal,)),
    np.exp: (k.EXP, (dp.exp,)),
    np.expm1: (k.EXPM1, (dp.expm1,)),
    np.log: (k.LOG, (dp.log,)),
    np.log1p: (k.LOG1P, (dp.log1p,)),
    np.sin: (k.SIN, (dp.sin,)),
    np.cos: (k.COS, (dp.cos,)),
    np.tan: (k.TAN, (dp.tan,)),
    np.sinh: (k.SINH, (dp.sinh,)),
    np.cosh: (k.COSH, (dp.cosh,)),
    np.tanh: (k.TANH, (dp.tanh,)),
    np.arctan: (k.ARCTAN, (dp.arctan,)),
    np.add: (k.ADD, (dp.one, dp.one)),
    np.subtract: (k.SUB, (dp.one, dp.minus_one)),
    np.multiply: (k.MUL, (dp.b, dp.a)),
    np.true_divide: (k.DIV, (dp.div_a, dp.div_b)),
    np.power: (k.POW, (dp.pow_a, dp.pow_b)),
    np.float_power: (k.POW, (dp.pow_a, dp.pow_b)),
    np.arctan2: (k.ARCTAN2, (dp.arctan2_a, dp.arctan2_b)),  # (angle wrapping in pose graphs)
    np.remainder: (k.REMAINDER, (dp.one, dp.remainder_b)),
    np.hypot: (k.HYPOT, (dp.hypot_a, dp.hypot_b)),
    np.log2: (k.LOG2, (dp.log2,)),
    np.log10: (k.LOG10, (dp.log10,)),
    np.exp2: (k.EXP2, (dp.exp2,)),
    np.arcsin: (k.ARCSIN, (dp.arcsin,)),
    np.arccos: (k.ARCCOS, (dp.arccos,)),
    np.arcsinh: (k.ARCSINH, (dp.arcsinh,)),
    np.arccosh: (k.ARCCOSH, (dp.arccosh,)),
    np.arctanh: (k.ARCTANH, (dp.arctanh,)),
    sc.erf: (k.ERF, (dp.erf,)),
    sc.erfc: (k.ERFC, (dp.erfc,)),
    sc.expit: (k.EXPIT, (dp.expit,)),  # (gating variables, logistic growth)
    np.maximum: (k.MAXIMUM, (dp.ge, dp.lt)),  # (limiters, positivity fixes, np.clip)
    np.minimum: (k.MINIMUM, (dp.le, dp.gt)),
    # comparisons and logical operations, 1.0 or 0.0 in the buffer: the conditions of
    # np.where (a forcing switched on in t, an upwind direction)
    np.less: (k.LESS, (None, None)),
    np.less_equal: (k.LESS_EQUAL, (None, None)),
    np.greater: (k.GREATER, (None, None)),
    np.greater_equal: (k.GREATER_EQUAL, (None, None)),
    np.equal: (k.EQUAL, (None, None)),
    np.not_equal: (k.NOT_EQUAL, (None, None)),
    np.logical_and: (k.AND, (None, None)),
    np.logical_or: (k.OR, (None, None)),
    np.logical_xor: (k.XOR, (None, None)),
    np.logical_not: (k.NOT, (None,)),
    np.sign: (k.SIGN, (None,)),  # (abs's partial: a Hessian's recorded gradient)
    np.invert: (k.NOT, (None,)),  # (of booleans only: ~mask, a & b, a | b, a ^ b)
    np.bitwise_and: (k.AND, (None, None)),
    np.bitwise_or: (k.OR, (None, None)),
    np.bitwise_xor: (k.XOR, (None, None)),
}


_NO_SAVE = np.empty(0)

#: Tangent or cotangent blocks above this many entries (slots × directions, 256 MB) are not
#: taped. The chain engine that takes such a program walks its nodes in Python at every call:
#: for a loop over 16,000 elements (Broyden's banded function, 8 · 10⁵ slots, 8 directions)
#: the tape prepares in 14 s and computes a Jacobian in 0.06 s with a peak of 1.1 GB, the
#: chain 40 s and 3.2 s with 1.4 GB (when the limit was 4 · 10⁶ entries).
MAX_BLOCK = 32_000_000



class Tape:
    """A program compiled to an instruction table (see the module docstring).

    Build it with :meth:`build`, which returns None for a program the tape does not encode.
    The methods mirror :class:`~sparsejac.ad.prepared.PreparedProgram`'s, so that either
    serves a prepared Jacobian.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.tracing import trace
    >>> from sparsejac.ad.tape import Tape
    >>> tape = Tape.build(trace(lambda x: x[1:] * x[:-1], np.ones(4)))
    >>> out, B = tape.forward(np.arange(4.0), np.array([0, 1, 0, 1]), 2)   # B = J @ S
    >>> out, B
    (array([0., 2., 6.]), array([[1., 0.],
           [2., 1.],
           [2., 3.]]))
    >>> Tape.build(trace(lambda x: np.max(x), np.ones(3))) is None   # not encoded
    True
    """

    def __init__(self, prog: Program, template: np.ndarray, table: tuple[np.ndarray, ...],
                 slots: dict[int, int], n_saved: int = 0) -> None:
        self.prog = prog
        #: values overwritten by shared-slot gathers, kept for a reverse pass
        self.n_saved = n_saved
        self._fallback: dict[int, PreparedProgram] = {}
        #: per colouring (by id, the colouring kept): :meth:`fused_call`'s tuple
        self._fused: dict[int, tuple[Any, Any]] = {}
        self._out_shape = prog.out.shape
        self._param_sizes = tuple(int(v.size) for v in prog.params)
        self.template = template
        self.table = table
        self.x_slot = slots[prog.x.id]
        self.out_slot = slots[prog.out.id]
        self.param_slots = [slots.get(v.id, -1) for v in prog.params]

    # -- encoding ---------------------------------------------------------------------------

    @classmethod
    def build(cls, prog: Program) -> Tape | None:
        """Encode ``prog``; None when a node is outside the tape's operations."""
        return cls.build_or_reason(prog)[0]

    @classmethod
    def build_or_reason(cls, prog: Program) -> tuple[Tape | None, str]:
        """:meth:`build`, and why the program is not encoded (empty when it is)."""
        if prog.value_dependent:
            return None, "its trace consulted values of x (local detection)"
        if not prog.out.active:
            return None, "f(x) does not depend on x"
        try:
            return cls._encode(prog), ""
        except _Unsupported as exc:
            return None, str(exc)

    @classmethod
    def _encode(cls, prog: Program) -> Tape:
        slots: dict[int, int] = {}
        consts: list[tuple[int, np.ndarray]] = []
        size = 0

        def slot(var: Any) -> int:
            nonlocal size
            s = slots.get(var.id)
            if s is None:
                s = slots[var.id] = size
                size += var.size
                if var.kind == "const" or (var.kind == "node" and var.sources == 0):
                    consts.append((s, _float_value(var.value)))
            return s

        if prog.x.dtype != np.float64:
            raise _Unsupported("x is not float64")
        slot(prog.x)
        for v in prog.params:
            _float_value(v.value)
            slot(v)
        code: list[list[int]] = []
        idx: list[np.ndarray] = []
        n_idx = 0
        ptr: list[np.ndarray] = []
        n_ptr = 0
        n_ent = 0
        cols: list[np.ndarray] = []
        vals: list[np.ndarray] = []
        last = _last_readers(prog)
        n_saved = 0

        def indices(a: np.ndarray) -> int:
            nonlocal n_idx
            start = n_idx
            idx.append(a)
            n_idx += a.size
            return start

        def const_block(values: np.ndarray) -> int:
            nonlocal size
            start = size
            size += values.size
            consts.append((start, values))
            return start

        for i, node in enumerate(prog.nodes):
            out = node.out
            if out.kind == "node" and out.sources == 0:
                slot(out)  # a constant: its recorded value
                continue
            op = _elementwise_op(node)
            if out.dtype != np.float64 and not (out.dtype == bool and op is not None):
                raise _Unsupported(f"`{node.prim.name}` gives {out.dtype} values")
            ins = [slot(v) for v in node.inputs]
            if isinstance(node.prim, Gather):
                plan: GatherPlan = node.params["plan"]
                src = _gather_sources(plan, ins, const_block)
                rows = shared_arange(out.size)  # (read-only: selections copy it)
                base = _shared_base(prog, node, i, src, ins, last)
                shared = 0
                if base is not None:  # write into the buffer's own slots
                    slots[out.id] = ins[base]
                    keep = src != ins[base] + rows
                    src, rows = src[keep], rows[keep]
                    shared = n_saved + 1  # where the overwritten values are kept (+1)
                    n_saved += int(src.size)
                o = slot(out)
                if src.size:
                    code.append([k.GATHER, o, int(src.size), indices(src), indices(rows),
                                 shared])
                continue
            if node.prim is WHERE and node.inputs[0].sources == 0:
                # a selection by a constant condition (the pow rule's b == 0, a mask): a copy
                # of the chosen operand's slots, values and tangents alike
                cond = np.broadcast_to(np.asarray(node.inputs[0].value, dtype=bool),
                                       out.shape).reshape(-1)
                picks = []
                for j in (1, 2):
                    bc = broadcast_rows(node.inputs[j].shape, out.shape)
                    picks.append(ins[j] + (shared_arange(out.size) if bc is None else bc))
                src = np.where(cond, picks[0], picks[1]).astype(np.int64)
                o = slot(out)
                if out.size:
                    code.append([k.GATHER, o, out.size, indices(src),
                                 indices(shared_arange(out.size)), 0])
                continue
            o = slot(out)
            if isinstance(node.prim, Solve):
                code.append([k.SOLVE, o, out.size, indices(_solve_slots(node, ins)), 0,
                             sum(1 << j for j, v in enumerate(node.inputs)
                                 if v.active and out.active)])
                continue
            if node.prim is WHERE:  # a condition moving with x or a parameter: chosen per call
                act = sum(1 << j for j, v in enumerate(node.inputs[1:]) if v.active)
                parts = []
                for j in range(3):
                    bc = broadcast_rows(node.inputs[j].shape, out.shape)
                    parts.append(ins[j] + (shared_arange(out.size) if bc is None else bc))
                if out.size:
                    code.append([k.SELECT, o, out.size, indices(np.concatenate(parts)), 0,
                                 act])
                continue
            if op is not None:
                # (abs_power: |u| and p, whose tangents carry u's; its third operand is u)
                operands = node.inputs[:2] if node.prim is ABS_POWER else node.inputs
                act = sum(1 << j for j, v in enumerate(operands) if v.active and out.active)
                row = [op, o, out.size, 0, 0, act]
                for j, v in enumerate(operands):
                    bc = broadcast_rows(v.shape, out.shape)
                    pos = shared_arange(out.size) if bc is None else bc
                    row[3 + j] = indices(ins[j] + pos)
                code.append(row)
                continue
            pairs = _bilinear(node, ins)
            if pairs is None:
                offset, r_ptr, r_col, r_val = _affine(node, ins)
                consts.append((o, offset))
                row = [k.LINEAR, o, out.size, n_ptr, 0, 0]
            else:
                r_ptr, r_col, r_val = pairs
                act = sum(1 << j for j, v in enumerate(node.inputs) if v.active and out.active)
                row = [k.BILINEAR, o, out.size, n_ptr, 0, act]
            ptr.append(r_ptr + n_ent)  # this instruction's own size + 1 pointers
            code.append(row)
            n_ptr += out.size + 1
            n_ent += r_col.size
            cols.append(r_col)
            vals.append(r_val)
        slot(prog.out)
        template = np.zeros(size)
        for start, values in consts:
            template[start:start + values.size] = values
        table = (np.array(code, dtype=np.int64).reshape(-1, 6),
                 _cat(idx, np.int64), _cat(ptr, np.int64), _cat(cols, np.int64),
                 _cat(vals, np.float64))
        return cls(prog, template, table, slots, n_saved)

    # -- evaluation -------------------------------------------------------------------------

    def _buffer(self, x: np.ndarray, params: Sequence[Any] | None) -> np.ndarray:
        buf = self.template.copy()
        n = self.prog.n_in
        buf[self.x_slot:self.x_slot + n] = np.asarray(x, dtype=np.float64).ravel()
        if params is not None:
            if len(params) != len(self.prog.params):
                raise ValueError(f"the program has {len(self.prog.params)} parameters but "
                                 f"{len(params)} values were given")
            for var, s, val in zip(self.prog.params, self.param_slots, params, strict=True):
                v = np.asarray(val, dtype=np.float64).ravel()
                if v.size != var.size:
                    raise ValueError(f"a parameter of size {var.size} was given {v.size} "
                                     "values")
                if s >= 0:  # a parameter the program reads
                    buf[s:s + var.size] = v
        return buf

    def _run_forward(self, buf: np.ndarray, tb: np.ndarray,
                     saved: np.ndarray | None = None) -> None:
        code, idx, ptr, col, val = self.table
        k.run_forward(code, idx, ptr, col, val, buf, tb,
                      _NO_SAVE if saved is None else saved)

    def _out(self, buf: np.ndarray) -> np.ndarray:
        out = self.prog.out
        return buf[self.out_slot:self.out_slot + out.size].reshape(out.shape).copy()

    def value(self, x: np.ndarray, params: Sequence[Any] | None = None) -> np.ndarray:
        """``f(x)`` by the tape (no derivatives)."""
        buf = self._buffer(x, params)
        self._run_forward(buf, np.zeros((buf.size, 0)))
        return self._out(buf)

    def forward(self, x: np.ndarray, groups: np.ndarray, p: int,
                params: Sequence[Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(f(x), B)`` with ``B = J(x) @ S`` for the 0/1 seed ``S[j, groups[j]] = 1``."""
        buf = self._buffer(x, params)
        tb = np.zeros((buf.size, p))
        k.seed_rows(tb, self.x_slot, np.asarray(groups, dtype=np.int64))
        self._run_forward(buf, tb)
        if not np.isfinite(buf).all():
            return self._chain(p).forward(x, groups, p, params)
        m = self.prog.n_out
        return self._out(buf), tb[self.out_slot:self.out_slot + m].copy()

    def _chain(self, width: int) -> PreparedProgram:
        """The chain engine for the same program, for points where a value is not finite.

        Sums of infinite terms depend on their order (``inf - inf`` is NaN); there the
        chain engine's order for the same number of directions is used, as the other
        engines would.
        """
        hit = self._fallback.get(width)
        if hit is None:
            hit = self._fallback[width] = PreparedProgram(self.prog, width=width)
        return hit

    def reverse(self, x: np.ndarray, groups: np.ndarray, q: int,
                params: Sequence[Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(f(x), C)`` with ``C = W @ J(x)`` for the 0/1 seed ``W[groups[i], i] = 1``."""
        buf = self._buffer(x, params)
        saved = np.empty(max(self.n_saved, 1))
        self._run_forward(buf, np.zeros((buf.size, 0)), saved)
        if not np.isfinite(buf).all():
            return self._chain(q).reverse(x, groups, q, params)
        return self._out(buf), self._reverse(buf, groups, q, saved)

    def _reverse(self, buf: np.ndarray, groups: np.ndarray, q: int, saved: np.ndarray
                 ) -> np.ndarray:
        cb = np.zeros((buf.size, q))
        k.seed_rows(cb, self.out_slot, np.asarray(groups, dtype=np.int64))
        code, idx, ptr, col, val = self.table
        k.run_reverse(code, idx, ptr, col, val, buf, cb, saved)
        n = self.prog.n_in
        return cb[self.x_slot:self.x_slot + n].T.copy()

    def mixed(self, x: np.ndarray, col_groups: np.ndarray, p: int, row_groups: np.ndarray,
              q: int, params: Sequence[Any] | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(f(x), B, C)`` for a bicolouring: one forward pass, one reverse pass."""
        buf = self._buffer(x, params)
        tb = np.zeros((buf.size, p))
        k.seed_rows(tb, self.x_slot, np.asarray(col_groups, dtype=np.int64))
        saved = np.empty(max(self.n_saved, 1))
        self._run_forward(buf, tb, saved)
        if not np.isfinite(buf).all():
            return self._chain(p + q).mixed(x, col_groups, p, row_groups, q, params)
        m = self.prog.n_out
        return (self._out(buf), tb[self.out_slot:self.out_slot + m].copy(),
                self._reverse(buf, row_groups, q, saved))

    def jacobian_data(self, x: np.ndarray, c: Any, params: Sequence[Any] | None = None,
                      out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
        """``(J's nonzeros in CSR order, f(x))`` for colouring ``c``, in one compiled call.

        The sweeps of :meth:`forward`/:meth:`reverse`/:meth:`mixed` and the colouring's
        decompression fused (no compressed block leaves the kernel). None where a value is
        not finite, or parameters do not fit: the caller then takes those methods, which fall
        back to the chain engine or say what is wrong.
        """
        call = self.fused_call(c)
        if call is None:
            return None
        kernel, _, ints, floats, nnz, _, _, work = call
        if isinstance(kernel, Fused):
            kernel = kernel.pick(work)
        pv = self.param_vector(params)
        if pv is None:
            return None
        data = np.empty(nnz) if out is None else out
        fx = np.empty(self._out_shape)
        xf = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
        if kernel(ints, floats, xf, pv, _NO_POINT, data, fx.reshape(-1), _NO_POINT):
            return data, fx
        return None

    def param_vector(self, params: Sequence[Any] | None) -> np.ndarray | None:
        """The parameters' values as one float64 vector (the program's sizes), or None.

        None when they do not fit; :meth:`_buffer` then says how.
        """
        sizes = self._param_sizes
        if params is None or not sizes:
            return _NO_POINT if not params or len(params) == len(sizes) else None
        if len(params) != len(sizes):
            return None
        if sizes == (1,) and type(params[0]) is float:
            return np.array(params, dtype=np.float64)  # the usual case: a time t
        try:
            parts = [np.asarray(p, dtype=np.float64).reshape(-1) for p in params]
        except (TypeError, ValueError):
            return None
        if any(a.size != s for a, s in zip(parts, sizes, strict=True)):
            return None
        return np.concatenate(parts)

    def fused_call(self, c: Any) -> tuple[Any, Any, np.ndarray, np.ndarray, int, int,
                                          tuple[int, ...], int] | None:
        """``(kernel, kernel0, ints, floats, nnz, m, parameter sizes, work)``, per colouring.

        ``kernel(ints, floats, x, pv, y, data, fx, fy)`` computes J's nonzeros into ``data``
        and ``f(x)`` into ``fx`` for a flat float64 ``x`` and the parameters' values ``pv``
        (:meth:`param_vector`), and the program's value at ``y`` into ``fy`` unless ``y`` is
        empty; it returns False where a value is not finite. ``kernel0(ints, floats, x, data,
        fx)`` is the same without parameters and second point. None for a colouring whose
        decompression is not one gather (symmetric: a Hessian's star or acyclic colouring),
        which the engine decompresses itself.

        Before numba is loaded, ``kernel`` and ``kernel0`` are :class:`Fused`: a call takes
        ``kernel.pick(work)`` (``work``: the tape's element operations per call), which runs
        the kernel's numpy twin, its own code in the interpreter, or straight-line Python
        generated from the tape once calls have paid for it (the same values bit for bit;
        a fresh process then does not wait for numba's import: :mod:`sparsejac.ad.fused`).
        """
        if c.partition not in ("column", "row", "bidirectional"):
            return None
        hit = self._fused.get(id(c))
        if hit is not None and hit[0] is c:
            kept: tuple[Any, Any, np.ndarray, np.ndarray, int, int, tuple[int, ...],
                        int] = hit[1]
            return kept
        call = self._fuse(c)
        if len(self._fused) >= 4:
            self._fused.clear()
        self._fused[id(c)] = (c, call)
        return call

    def _fuse(self, c: Any) -> tuple[Any, Any, np.ndarray, np.ndarray, int, int,
                                     tuple[int, ...], int]:
        """Seeds and gather indices of colouring ``c``, packed for the kernels."""
        pat = c.pattern
        rows, cols = pat.rows, pat.indices
        cg, p, rg, q = c._seed_groups
        none = np.zeros(0, dtype=np.int64)
        b = (self.out_slot + rows) * p + cg[cols] if p else none
        r = ~((self.x_slot + cols) * q + rg[rows]) if q else none
        if c.partition == "column":
            gather, rg, q = b, none, 0
        elif c.partition == "row":
            gather, cg, p = r, none, 0
        elif p and q:
            gather = np.where(c._from_b, b, r)
        else:
            gather = b if p else r
        meta = np.array([self.x_slot, self.out_slot, self.prog.n_out, self.n_saved, p, q],
                        dtype=np.int64)
        sizes = self._param_sizes
        pslots = np.array([v for pair in zip(self.param_slots, sizes, strict=True)
                           for v in pair], dtype=np.int64)
        code, idx, ptr, col, val = self.table
        ints, floats = k.pack(meta, code, idx, ptr, col, val, self.template, cg, rg, gather,
                              pslots)
        # numba's own dispatchers once loaded; before, the lazy kernels with their numpy
        # twin, which a call picks with :meth:`Fused.pick`
        kernel: Any = k.jacobian_packed
        kernel0: Any = k.jacobian_packed0
        n_code = int(code.shape[0])
        n_x = self.prog.n_in
        slot = NativeSlot(ints, floats, n_x) if terms(ints) <= native.MAX_TERMS else None
        kernel = _fused(kernel, jacobian_packed_numpy, n_code, ints, floats, n_x, False, slot)
        kernel0 = _fused(kernel0, packed0_numpy, n_code, ints, floats, n_x, True, slot)
        work = (int(self.template.size) + SOLVE_UNITS * self._solve_work()) * (p + q + 1)
        return kernel, kernel0, ints, floats, int(gather.size), self.prog.n_out, sizes, work

    def _solve_work(self) -> int:
        """The multiply-adds of the tape's ``SOLVE`` instructions (LU and substitutions)."""
        code, idx = self.table[0], self.table[1]
        total = 0
        for ia in code[code[:, 0] == k.SOLVE, 3].tolist():
            n, rhs, batch = (int(v) for v in idx[ia:ia + 3])
            total += batch * n * n * (n + rhs)
        return total

    def stats(self) -> dict[str, Any]:
        """Sizes of the tape."""
        return {"engine": "tape", "nodes": len(self.prog.nodes),
                "instructions": int(self.table[0].shape[0]), "slots": int(self.template.size),
                "output_entries": None}

    def fits(self, width: int) -> bool:
        """Whether tangent blocks of ``width`` directions stay within :data:`MAX_BLOCK`."""
        return self.template.size * max(width, 1) <= MAX_BLOCK


def _last_readers(prog: Program) -> dict[int, int]:
    """For each variable, the index of the last node reading it (the output: never)."""
    last: dict[int, int] = {}
    for i, node in enumerate(prog.nodes):
        for v in node.inputs:
            last[v.id] = i
    last[prog.out.id] = len(prog.nodes)
    return last


def elements_per_pass(prog: Program) -> int:
    """About how many elements one pass of the tape over ``prog`` writes: the nodes' sizes.

    A write into a buffer (``r[3 * k:3 * k + 2] = ...``: a gather whose operand has its size)
    counts its written elements only, since the tape lets the new buffer share the old one's
    slots; a loop filling a buffer of m elements slice by slice costs per slice, not m.
    """
    total = 0
    for nd in prog.nodes:
        size = nd.out.size
        if isinstance(nd.prim, Gather) and len(nd.inputs) > 1:
            same = [v.size == size for v in nd.inputs]
            if sum(same) == 1:
                size = 1 + sum(v.size for v, s in zip(nd.inputs, same, strict=True) if not s)
        total += size
    return total


def _gather_sources(plan: GatherPlan, ins: list[int], const_block: Any) -> np.ndarray:
    """The slot each output element of a gather copies (fill values get constant slots)."""
    if len(plan.sizes) == 1 and plan.fill_mask is None:  # one operand, no fill (x[i]): shift
        return np.asarray(plan.index, dtype=np.int64) + ins[0]
    index = np.asarray(plan.index, dtype=np.int64)
    bounds = np.cumsum(np.asarray(plan.sizes, dtype=np.int64))
    which = np.searchsorted(bounds, index, side="right")
    starts = np.concatenate(([0], bounds[:-1]))
    src = np.empty(index.size, dtype=np.int64)
    got = index >= 0
    w = which[got]
    src[got] = np.asarray(ins, dtype=np.int64)[w] + index[got] - starts[w]
    fill = ~got
    if fill.any():
        values = np.broadcast_to(_float_value(plan.fill_values), (int(fill.sum()),))
        src[fill] = const_block(np.array(values)) + np.arange(values.size, dtype=np.int64)
    return src


def _shared_base(prog: Program, node: Node, i: int, src: np.ndarray, ins: list[int],
                 last: dict[int, int]) -> int | None:
    """The operand whose slots a gather may write into (``out[i] = ...`` on a buffer).

    Allowed when the operand has the output's size, no node reads it afterwards, it is not
    an input of the program, and no element the gather writes is read from it (the copy is
    then order-free). The operand keeping most elements in place is chosen.
    """
    best, kept = None, 0
    size = node.out.size
    rows = shared_arange(size)
    for j, v in enumerate(node.inputs):
        if (v.size != size or last.get(v.id, -1) != i or v.kind in ("input", "param")
                or v.id == prog.out.id):
            continue
        same = src == ins[j] + rows
        n_same = int(same.sum())
        if n_same <= kept:
            continue
        moved = src[~same]
        if np.any((moved >= ins[j]) & (moved < ins[j] + size)):
            continue
        best, kept = j, n_same
    return best


#: bitwise operations, encoded as logical ones on booleans only
_BITWISE = (np.invert, np.bitwise_and, np.bitwise_or, np.bitwise_xor)


def _elementwise_op(node: Node) -> int | None:
    prim = node.prim
    if isinstance(prim, TieChecked) and not isinstance(prim, GuardChecked):
        # np.sign of one element (an element loop's): NaN at a tie, which declines the call
        inner = prim._prim
        if (isinstance(inner, Elementwise) and inner.fn is np.sign and not node.params
                and node.out.size == 1 and node.out.dtype == np.float64
                and node.inputs[0].dtype == np.float64):
            return k.SIGN_TIE
        return None
    if prim is ABS_POWER and not node.params:  # |u| ** p: the power of |u| (first order)
        return k.POW
    if isinstance(prim, AsType) and not prim.zero_derivative and \
            node.out.dtype == np.float64 and node.inputs[0].dtype in (np.float64, bool):
        return k.POS  # a copy (a bool's 1.0 or 0.0: max and min's partials in a gradient)
    if not isinstance(prim, Elementwise) or node.params:
        return None
    entry = OPS.get(prim.fn)
    if entry is None or tuple(prim.partials) != entry[1] or len(node.inputs) != len(entry[1]):
        return None
    logical = k.LESS <= entry[0] <= k.XOR or entry[0] == k.NOT  # 1.0 or 0.0
    if logical and (node.out.dtype != bool or (prim.fn in _BITWISE and any(
            v.dtype != bool for v in node.inputs))):
        return None
    return entry[0]


def _fused(kernel: Any, twin: Any, n_code: int, ints: np.ndarray, floats: np.ndarray,
           n_x: int, packed0: bool, slot: NativeSlot | None) -> Any:
    """The tape kernel as :meth:`Tape.fused_call` hands it out.

    numba's dispatcher itself where nothing is left to pick, else a :class:`Fused` that picks
    at each call (before numba is loaded; or the tape's generated code, once built).
    """
    lazy = kernel if isinstance(kernel, LazyKernel) else Loaded(kernel)  # (numba's, bound)
    if lazy._compiled is not None and slot is None:
        return lazy._compiled
    return Fused(lazy, twin, n_code, ints, floats, n_x, packed0, slot)

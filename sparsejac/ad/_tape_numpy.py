"""The tape's fused Jacobian kernel with vectorised numpy: :func:`jacobian_packed_numpy`.

Before numba is loaded, a tape's Jacobian runs either its kernel's own code in the
interpreter (a loop over every slot and seed direction) or this twin, which walks the same
instructions but does each one's rows at once: the same floating-point operations in the same
order, so the same values bit for bit. Arithmetic (``+ - * /``, square, reciprocal, square
root, absolute value) is IEEE in numpy as in compiled code; the C library's functions
(``exp``, ``log``, ``sin`` ..., ``**``) are applied element by element with Python's
``math``, as the interpreted kernel does, since numpy's vectorised versions may round their
last bit differently. Where the interpreter would raise (``math.exp`` overflowing) the
caller takes the compiled kernel instead (:meth:`~sparsejac.kernels.LazyKernel.interpreted`'s
rule).

Per instruction the twin costs a few numpy calls (microseconds) and per element tens of
nanoseconds; the interpreter costs about half a microsecond per element and seed direction.
:func:`cheaper_than_interpreting` picks between them from the tape's sizes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sparsejac.ad import _tape as k
from sparsejac.ad import _tape_solve

__all__ = ["cheaper_than_interpreting", "jacobian_packed_numpy"]

_ARITH_UNARY = {k.NEG, k.POS, k.ABS, k.SQRT, k.SQUARE, k.RECIP}

#: budget units (about 10 ns) of one instruction, and of one element and direction (8 to 15 µs
#: an instruction measured on HIRES, POLLU, a kinetics loop and the 2-D Brusselator)
INSTRUCTION_UNITS, ELEMENT_UNITS = 1000, 4


def twin_units(n_instructions: int, work: int) -> int:
    """The twin's cost in budget units for a tape of ``n_instructions`` and ``work``."""
    return INSTRUCTION_UNITS * n_instructions + ELEMENT_UNITS * work


def cheaper_than_interpreting(n_instructions: int, work: int, weight: int) -> bool:
    """Whether the twin beats the interpreted kernel (``weight`` units per unit of ``work``).

    Examples
    --------
    >>> from sparsejac.ad._tape_numpy import cheaper_than_interpreting
    >>> cheaper_than_interpreting(12, 4000, 40), cheaper_than_interpreting(60, 100, 40)
    (True, False)
    """
    return twin_units(n_instructions, work) < weight * work


def _scalar(fn: Any) -> Any:
    """A scalar function of :mod:`sparsejac.ad._tape`, callable from Python.

    Interpreted before numba is loaded, numba's dispatcher once it is (the same values).
    """
    return getattr(fn, "python", fn)


def _each(fn: Any, *arrays: np.ndarray) -> np.ndarray:
    """``fn`` (a scalar function of the interpreted kernel) element by element."""
    lists = [a.tolist() for a in arrays]
    return np.array([fn(*v) for v in zip(*lists, strict=True)], dtype=np.float64)


#: comparisons and logical operations (1.0 or 0.0 in the tape's buffer)
_COMPARE = {k.LESS: np.less, k.LESS_EQUAL: np.less_equal, k.GREATER: np.greater,
            k.GREATER_EQUAL: np.greater_equal, k.EQUAL: np.equal, k.NOT_EQUAL: np.not_equal,
            k.AND: np.logical_and, k.OR: np.logical_or, k.XOR: np.logical_xor}


def _unary(op: int, a: np.ndarray) -> Any:
    if op == k.NOT:
        return (a == 0.0).astype(np.float64)
    if op == k.SIGN:
        return np.sign(a)
    if op == k.SIGN_TIE:  # NaN at a tie: the call declines (see the kernel's)
        return np.where(a == 0.0, np.nan, np.sign(a))
    if op == k.NEG:
        return -a
    if op == k.POS:
        return a.copy()
    if op == k.ABS:
        return np.abs(a)
    if op == k.SQRT:
        return np.where(a >= 0.0, np.sqrt(a), np.nan)
    if op == k.SQUARE:
        return a * a
    if op == k.RECIP:
        return 1.0 / a  # IEEE: 1/±0 = ±inf, as the kernel's copysign
    scalar = _scalar(k._unary)
    return _each(lambda v: scalar(op, v), a)


def _sign(a: np.ndarray) -> Any:
    return np.where(a > 0.0, 1.0, np.where(a < 0.0, -1.0, a))


def _dunary(op: int, a: np.ndarray, out: np.ndarray) -> Any:
    if op in (k.NOT, k.SIGN, k.SIGN_TIE):
        return np.zeros(a.shape)
    if op == k.NEG:
        return np.full(a.shape, -1.0)
    if op == k.POS:
        return np.ones(a.shape)
    if op == k.ABS:
        return _sign(a)
    if op == k.SQRT:
        return 0.5 / (out + 0.0)
    if op == k.SQUARE:
        return 2.0 * a
    if op == k.RECIP:
        return -out * out
    if op == k.EXP:
        return out.copy()
    if op == k.LOG:
        return 1.0 / (a + 0.0)
    if op == k.LOG1P:
        return 1.0 / (1.0 + a)
    if op == k.TAN:
        return 1.0 + out * out
    if op == k.ARCTAN:
        return 1.0 / (1.0 + a * a)
    scalar = _scalar(k._dunary)  # sin, cos, sinh, cosh, tanh, expm1: the C library's
    return _each(lambda v, w: scalar(op, v, w), a, out)


def _binary(op: int, a: np.ndarray, b: np.ndarray) -> Any:
    if op == k.ADD:
        return a + b
    if op == k.SUB:
        return a - b
    if op == k.MUL:
        return a * b
    if op == k.DIV:
        return a / b  # IEEE division is the kernel's _div
    if op == k.MAXIMUM:
        return np.maximum(a, b)
    if op == k.MINIMUM:
        return np.minimum(a, b)
    if op in _COMPARE:
        return _COMPARE[op](a, b).astype(np.float64)
    scalar = _scalar(k._binary)
    return _each(lambda v, w: scalar(op, v, w), a, b)


def _dbinary(op: int, a: np.ndarray, b: np.ndarray, out: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    if op == k.ADD:
        return np.ones(a.shape), np.ones(a.shape)
    if op == k.SUB:
        return np.ones(a.shape), np.full(a.shape, -1.0)
    if op == k.MUL:
        return b.copy(), a.copy()
    if op == k.DIV:
        return 1.0 / b, -(out / b)
    if op in (k.MAXIMUM, k.MINIMUM):  # the chosen operand's; halves at a tie
        tie = 0.5 * (a == b)
        first = (a > b) if op == k.MAXIMUM else (a < b)
        second = (b > a) if op == k.MAXIMUM else (b < a)
        return first + tie, second + tie
    if op in _COMPARE:
        return np.zeros(a.shape), np.zeros(a.shape)
    scalar = _scalar(k._dbinary)
    pairs = [scalar(op, *v) for v in zip(a.tolist(), b.tolist(), out.tolist(), strict=True)]
    both = np.array(pairs, dtype=np.float64).reshape(-1, 2)
    return both[:, 0].copy(), both[:, 1].copy()


def _chosen(buf: np.ndarray, idx: np.ndarray, ia: int, n: int) -> np.ndarray:
    """A select instruction's source slots: the first operand's where the condition holds."""
    cond = buf[idx[ia:ia + n]] != 0.0
    return np.where(cond, idx[ia + n:ia + 2 * n], idx[ia + 2 * n:ia + 3 * n])


def _gather(buf: np.ndarray, tb: np.ndarray, src: np.ndarray, dst: np.ndarray) -> None:
    """``buf[dst] = buf[src]`` (and the tangent rows) in the kernel's row order."""
    if src.size and dst.size and src.min() <= dst.max() and dst.min() <= src.max() \
            and np.intersect1d(src, dst).size:
        for s, d in zip(src.tolist(), dst.tolist(), strict=True):  # overlapping: one by one
            buf[d] = buf[s]
            tb[d] = tb[s]
        return
    buf[dst] = buf[src]
    if tb.shape[1]:
        tb[dst] = tb[src]


def _linear(buf: np.ndarray, tb: np.ndarray, o: int, n: int, ptr: np.ndarray,
            col: np.ndarray, val: np.ndarray) -> None:
    """Rows ``o .. o + n``: the constant preloaded plus each entry's product, in entry order.

    ``np.add.at`` adds repeated indices one after another in index order, as the kernel's
    loop does; tangent terms the kernel skips (a zero coefficient or tangent) are left out,
    not added as ``0.0``.
    """
    rows = np.repeat(np.arange(n), np.diff(ptr))
    e = np.arange(ptr[0], ptr[-1])
    c = val[e]
    s = col[e]
    acc = buf[o:o + n].copy()
    np.add.at(acc, rows, c * buf[s])
    buf[o:o + n] = acc
    if tb.shape[1]:
        t = tb[s]
        ii, jj = np.nonzero((c != 0.0)[:, None] & (t != 0.0))
        tacc = tb[o:o + n].copy()
        np.add.at(tacc, (rows[ii], jj), c[ii] * t[ii, jj])
        tb[o:o + n] = tacc


def _pairs(buf: np.ndarray, ptr: np.ndarray, col: np.ndarray, val: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A bilinear instruction's pairs: their rows, slots and partials (as the kernel's)."""
    e = np.arange(ptr[0], ptr[-1], 2)
    rows = np.repeat(np.arange(ptr.size - 1), np.diff(ptr) // 2)
    sa, sb = col[e], col[e + 1]
    return rows, sa, sb, val[e] * buf[sb], val[e] * buf[sa]


def _bilinear(buf: np.ndarray, tb: np.ndarray, o: int, n: int, ptr: np.ndarray,
              col: np.ndarray, val: np.ndarray, act: int) -> None:
    """Rows ``o .. o + n`` of a bilinear instruction: products added in pair order."""
    rows, sa, sb, da, db = _pairs(buf, ptr, col, val)
    e = np.arange(ptr[0], ptr[-1], 2)
    acc = buf[o:o + n].copy()
    np.add.at(acc, rows, val[e] * buf[sa] * buf[sb])
    buf[o:o + n] = acc
    p = tb.shape[1]
    if not (p and act):
        return
    ta, tb_ = tb[sa], tb[sb]
    use_a = bool(act & 1) & (da != 0.0)[:, None] & (ta != 0.0)
    use_b = bool(act & 2) & (db != 0.0)[:, None] & (tb_ != 0.0)
    rows2 = np.repeat(rows, 2)  # per pair: a's term, then b's
    terms = np.stack([ta * da[:, None], tb_ * db[:, None]], axis=1).reshape(-1, p)
    use = np.stack([use_a, use_b], axis=1).reshape(-1, p)
    ii, jj = np.nonzero(use)
    tacc = tb[o:o + n].copy()
    np.add.at(tacc, (rows2[ii], jj), terms[ii, jj])
    tb[o:o + n] = tacc


def run_forward_numpy(code: np.ndarray, idx: np.ndarray, ptr: np.ndarray, col: np.ndarray,
                      val: np.ndarray, buf: np.ndarray, tb: np.ndarray,
                      saved: np.ndarray) -> None:
    """:func:`sparsejac.ad._tape.run_forward`, one instruction's rows at a time."""
    p = tb.shape[1]
    keep = saved.size > 0
    for op, o, n, ia, ib, act in code.tolist():
        if op == k.GATHER:
            dst = o + idx[ib:ib + n]
            if keep and act > 0:
                saved[act - 1:act - 1 + n] = buf[dst]
            _gather(buf, tb, idx[ia:ia + n], dst)
        elif op == k.SELECT:
            src = _chosen(buf, idx, ia, n)
            buf[o:o + n] = buf[src]
            if act and p:
                tb[o:o + n] = tb[src]
        elif op == k.LINEAR:
            _linear(buf, tb, o, n, ptr[ia:ia + n + 1], col, val)
        elif op == k.BILINEAR:
            _bilinear(buf, tb, o, n, ptr[ia:ia + n + 1], col, val, act)
        elif op == k.SOLVE:  # (small systems: the kernel's own loops, interpreted)
            _scalar(_tape_solve.solve_forward)(idx, ia, o, buf, tb, act if p else 0)
        elif op < k.BINARY:
            s = idx[ia:ia + n]
            a = buf[s]
            out = _unary(op, a)
            buf[o:o + n] = out
            if p and act & 1:
                d = _dunary(op, a, out)
                t = tb[s]
                use = (d != 0.0)[:, None] & (t != 0.0)
                tb[o:o + n] = np.where(use, t * d[:, None], tb[o:o + n])
        else:
            sa = idx[ia:ia + n]
            sb = idx[ib:ib + n]
            a = buf[sa]
            b = buf[sb]
            out = _binary(op, a, b)
            buf[o:o + n] = out
            if p and act:
                da, db = _dbinary(op, a, b, out)
                acc = np.zeros((n, p))
                if act & 1:
                    t = tb[sa]
                    acc = np.where((da != 0.0)[:, None] & (t != 0.0), acc + t * da[:, None],
                                   acc)
                if act & 2:
                    t = tb[sb]
                    acc = np.where((db != 0.0)[:, None] & (t != 0.0), acc + t * db[:, None],
                                   acc)
                tb[o:o + n] = acc


def run_reverse_numpy(code: np.ndarray, idx: np.ndarray, ptr: np.ndarray, col: np.ndarray,
                      val: np.ndarray, buf: np.ndarray, cb: np.ndarray,
                      saved: np.ndarray) -> None:
    """:func:`sparsejac.ad._tape.run_reverse`, one instruction's rows at a time.

    Cotangents add into shared slots in the kernel's order: within an instruction, rows
    adding into the same slot are applied one row index after another (``np.add.at`` adds
    repeated indices in order).
    """
    q = cb.shape[1]
    for op, o, n, ia, ib, act in reversed(code.tolist()):
        if op == k.GATHER:
            src = idx[ia:ia + n]
            dst = o + idx[ib:ib + n]
            if np.intersect1d(src, dst).size:
                for s, d in zip(src.tolist(), dst.tolist(), strict=True):
                    g = cb[d].copy()
                    cb[d] = 0.0
                    cb[s] += g
            else:
                g = cb[dst].copy()
                cb[dst] = 0.0
                np.add.at(cb, src, g)
            if act > 0:
                buf[dst] = saved[act - 1:act - 1 + n]
        elif op == k.SELECT:
            first = buf[idx[ia:ia + n]] != 0.0
            src = _chosen(buf, idx, ia, n)
            g = cb[o:o + n]
            chosen_active = np.where(first, bool(act & 1), bool(act & 2))
            use = chosen_active[:, None] & (g != 0.0)
            _add_in_order(cb, src, np.where(use, g, 0.0), use)
        elif op == k.SOLVE:
            if act:
                _scalar(_tape_solve.solve_reverse)(idx, ia, o, buf, cb, act)
        elif op == k.BILINEAR:
            if not act:
                continue
            rows, sa, sb, da, db = _pairs(buf, ptr[ia:ia + n + 1], col, val)
            g = cb[o + rows]
            use_a = bool(act & 1) & (da != 0.0)[:, None] & (g != 0.0)
            use_b = bool(act & 2) & (db != 0.0)[:, None] & (g != 0.0)
            slots = np.stack([sa, sb], axis=1).reshape(-1)  # per pair: a's term, then b's
            terms = np.stack([g * da[:, None], g * db[:, None]], axis=1).reshape(-1, q)
            use = np.stack([use_a, use_b], axis=1).reshape(-1, q)
            _add_in_order(cb, slots, np.where(use, terms, 0.0), use)
        elif op == k.LINEAR:
            rows = np.repeat(np.arange(n), np.diff(ptr[ia:ia + n + 1]))
            e = np.arange(ptr[ia], ptr[ia + n])
            c = val[e]
            g = cb[o + rows]
            use = (c != 0.0)[:, None] & (g != 0.0)
            terms = np.where(use, c[:, None] * g, 0.0)
            _add_in_order(cb, col[e], terms, use)
        elif op < k.BINARY:
            if not act & 1:
                continue
            s = idx[ia:ia + n]
            d = _dunary(op, buf[s], buf[o:o + n])
            g = cb[o:o + n]
            use = (d != 0.0)[:, None] & (g != 0.0)
            _add_in_order(cb, s, np.where(use, g * d[:, None], 0.0), use)
        else:
            if not act:
                continue
            sa = idx[ia:ia + n]
            sb = idx[ib:ib + n]
            da, db = _dbinary(op, buf[sa], buf[sb], buf[o:o + n])
            g = cb[o:o + n]
            ua = (da != 0.0)[:, None] & (g != 0.0) if act & 1 else None
            ub = (db != 0.0)[:, None] & (g != 0.0) if act & 2 else None
            if ua is not None and ub is not None:  # per row: a's term, then b's
                slots = np.stack([sa, sb], axis=1).reshape(-1)
                terms = np.stack([g * da[:, None], g * db[:, None]], axis=1).reshape(-1, q)
                use = np.stack([ua, ub], axis=1).reshape(-1, q)
                _add_in_order(cb, slots, np.where(use, terms, 0.0), use)
            elif ua is not None:
                _add_in_order(cb, sa, np.where(ua, g * da[:, None], 0.0), ua)
            elif ub is not None:
                _add_in_order(cb, sb, np.where(ub, g * db[:, None], 0.0), ub)


def _add_in_order(cb: np.ndarray, slots: np.ndarray, terms: np.ndarray,
                  use: np.ndarray) -> None:
    """``cb[slots[i], j] += terms[i, j]`` where ``use[i, j]``, for each ``i`` in order.

    ``np.add.at`` adds repeated indices one after another in index order; the unused terms
    are left out (``+= 0.0`` would turn a ``-0.0`` into ``+0.0``).
    """
    ii, jj = np.nonzero(use)
    if ii.size:
        np.add.at(cb, (slots[ii], jj), terms[ii, jj])


def jacobian_packed_numpy(ints: np.ndarray, floats: np.ndarray, x: np.ndarray,
                          pv: np.ndarray, y: np.ndarray, data: np.ndarray, fx: np.ndarray,
                          fy: np.ndarray) -> bool:
    """:func:`sparsejac.ad._tape.jacobian_packed` with the numpy passes above."""
    h = 6

    def part(i: int) -> np.ndarray:
        return ints[ints[h + i]:ints[h + i] + ints[h + i + 1]]

    code = part(0).reshape((-1, 6))
    idx, ptr, col, cg, rg, gather, pslots = (part(i) for i in range(2, 16, 2))
    split = int(ints[h + 16])
    val = floats[split:]
    base = floats[:split].copy()
    kk = 0
    for i in range(0, pslots.size, 2):
        size = int(pslots[i + 1])
        if pslots[i] >= 0:
            base[pslots[i]:pslots[i] + size] = pv[kk:kk + size]
        kk += size
    if y.size:
        buf = base.copy()
        buf[ints[0]:ints[0] + y.size] = y
        run_forward_numpy(code, idx, ptr, col, val, buf, np.zeros((buf.size, 0)), np.empty(0))
        fy[:] = buf[ints[1]:ints[1] + fy.size]
    x_slot, out_slot, m, n_saved, p, q = (int(v) for v in ints[:h])
    buf = base
    buf[x_slot:x_slot + x.size] = x
    saved = np.empty(n_saved if q > 0 else 0)
    tb = np.zeros((buf.size, p))
    seeded = np.flatnonzero(cg >= 0)
    tb[x_slot + seeded, cg[seeded]] = 1.0
    run_forward_numpy(code, idx, ptr, col, val, buf, tb, saved)
    if not np.isfinite(buf).all():
        return False
    fx[:m] = buf[out_slot:out_slot + m]
    cb = np.zeros((buf.size, q))
    if q > 0:
        seeded = np.flatnonzero(rg >= 0)
        cb[out_slot + seeded, rg[seeded]] = 1.0
        run_reverse_numpy(code, idx, ptr, col, val, buf, cb, saved)
    tf = tb.reshape(-1)
    cf = cb.reshape(-1)
    fwd = gather >= 0
    data[fwd] = tf[gather[fwd]]
    data[~fwd] = cf[~gather[~fwd]]
    return bool(np.isfinite(data).all())  # (False: as the kernel, a singular point)
